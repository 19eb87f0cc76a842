//! A small pool of Redis connections, with timeouts, a ping after idling, and retries for
//! idempotent commands.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::Value;

use super::connect::{self, IO_TIMEOUT, MIN_REPLICAS_WAIT};
use super::errors::{lock, redis_conn_broken, redis_err};
use crate::claim::error::ClaimError;

/// Idle Redis connections kept for reuse.
const MAX_IDLE_REDIS: usize = 8;
/// A pooled Redis connection idle longer than this is pinged before use.
const PING_AFTER_IDLE: Duration = Duration::from_secs(30);

/// A few sync connections reused across threads: one is taken for one command (or one
/// script) and put back, so no two threads ever share a connection.
pub(super) struct RedisPool {
    pub(super) source: connect::RedisSource,
    /// `--redis-min-replicas`: see [`RedisPool::run_write`].
    pub(super) min_replicas: u32,
    pub(super) idle: Mutex<Vec<(redis::Connection, Instant)>>,
}

impl RedisPool {
    pub(super) fn open(&self) -> Result<redis::Connection, ClaimError> {
        self.source.open(IO_TIMEOUT)
    }

    /// A connection: a pooled one (pinged first if it sat idle long enough to have been
    /// dropped by a restarted server or a proxy), else a new one. True when pooled.
    pub(super) fn take(&self) -> Result<(redis::Connection, bool), ClaimError> {
        loop {
            let pooled = lock(&self.idle).pop();
            let Some((mut conn, since)) = pooled else { return Ok((self.open()?, false)) };
            if since.elapsed() < PING_AFTER_IDLE || redis::cmd("PING").query::<Value>(&mut conn).is_ok() {
                return Ok((conn, true));
            }
        }
    }

    pub(super) fn give_back(&self, conn: redis::Connection) {
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE_REDIS {
            idle.push((conn, Instant::now()));
        }
    }

    /// Runs `f` on one connection. A broken connection is dropped together with every idle
    /// one (a server restart breaks them all); the flag says whether it was a pooled one
    /// that broke, which a new connection may well replace.
    pub(super) fn attempt<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> (Result<T, ClaimError>, bool) {
        let (mut conn, pooled) = match self.take() {
            Ok(c) => c,
            Err(e) => return (Err(e), false),
        };
        match f(&mut conn) {
            Ok(v) => {
                self.give_back(conn);
                (Ok(v), false)
            }
            Err(e) => {
                let broken = redis_conn_broken(&e);
                if broken {
                    lock(&self.idle).clear();
                } else {
                    self.give_back(conn);
                }
                (Err(redis_err(e)), broken && pooled)
            }
        }
    }

    /// Runs `f` once. Never retried: a script whose reply was lost may have run, and only
    /// the caller knows whether running it again is safe.
    pub(super) fn run<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, ClaimError> {
        self.attempt(f).0
    }

    /// [`RedisPool::run`] for a verb's write: with `--redis-min-replicas N`, then `WAIT N` on
    /// the same connection (WAIT counts the replicas that hold this connection's writes).
    /// Fewer than N within [`MIN_REPLICAS_WAIT`] fails the verb closed: the write applied on
    /// the master, but a failover now could lose it, and the caller must not take it as
    /// acknowledged.
    pub(super) fn run_write<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, ClaimError> {
        let n = self.min_replicas;
        if n == 0 {
            return self.run(f);
        }
        let wait_ms = u64::try_from(MIN_REPLICAS_WAIT.as_millis()).unwrap_or(u64::MAX);
        let (value, acked) = self.run(|c| {
            let value = f(c)?;
            let acked: i64 = redis::cmd("WAIT").arg(n).arg(wait_ms).query(c)?;
            Ok((value, acked))
        })?;
        if acked < i64::from(n) {
            return Err(ClaimError::Unavailable(format!(
                "redis: the write reached {acked} of the {n} replicas --redis-min-replicas asks for within \
                 {wait_ms} ms; it may have applied (check before retrying), but a failover could lose it"
            )));
        }
        Ok(value)
    }

    /// [`RedisPool::run`] for reads and other idempotent commands: when a pooled connection
    /// turns out broken, tries once more on a new one.
    pub(super) fn run_idempotent<T>(
        &self,
        mut f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, ClaimError> {
        match self.attempt(&mut f) {
            (Err(_), true) => self.run(f),
            (result, _) => result,
        }
    }
}
