//! Redis and Postgres failures as [`ClaimError`]s (which are transient, which mean a broken
//! connection), and the small conversions every file of this store shares.

use std::sync::{Mutex, MutexGuard};

use redis::{ErrorKind, RedisError, ServerErrorKind};

use crate::claim::error::{ClaimError, StoreError};

pub(super) fn redis_err(e: RedisError) -> ClaimError {
    let transient = e.is_io_error()
        || e.is_timeout()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || matches!(
            e.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ReadOnly
            )
        )
        // A script of someone else's running too long.
        || e.code() == Some("BUSY");
    if transient { ClaimError::Unavailable(format!("redis: {e}")) } else { ClaimError::store_because("redis", e) }
}

/// Whether a Redis error means the connection itself is suspect (drop it, and its siblings).
/// READONLY counts: the node was demoted (a Sentinel failover), and only a new connection
/// asks the Sentinels where the master went.
pub(super) fn redis_conn_broken(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_unrecoverable_error()
        || matches!(e.kind(), ErrorKind::Server(ServerErrorKind::ReadOnly))
}

pub(super) fn pg_err(e: postgres::Error) -> ClaimError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        // 08 connection exception, 53 insufficient resources, 57 operator intervention
        // (shutdown, statement timeout), 58 system error, 40 rollback (serialization,
        // deadlock), 55P03 lock not available: retrying later can succeed.
        let transient = ["08", "53", "57", "58", "40"].iter().any(|c| code.starts_with(c)) || code == "55P03";
        let msg = format!("postgres: {} ({code})", db.message());
        return if transient { ClaimError::Unavailable(msg) } else { StoreError::new(msg).with_source(e).into() };
    }
    // Connect, I/O and closed-connection errors carry an io::Error or say so; the client's
    // own timeout has neither, only its message.
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    if io || e.is_closed() || e.to_string().contains("timeout") {
        ClaimError::Unavailable(format!("postgres: {e}"))
    } else {
        ClaimError::store_because("postgres", e)
    }
}

/// Whether a Postgres failure is the entry's own fault (bad data, a violated constraint),
/// so retrying it can never succeed and it must not block the entries behind it.
pub(super) fn pg_rejects_entry(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| c.code().starts_with("22") || c.code().starts_with("23"))
}

pub(super) fn to_u64(what: &str, v: i64) -> Result<u64, ClaimError> {
    u64::try_from(v).map_err(|e| StoreError::new(format!("stored {what} {v} is negative")).with_source(e).into())
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
