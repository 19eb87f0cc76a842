//! The bound on reads of the audit log over HTTP (issue 39 point 6): `master history` needs
//! no credential, and with a million audit rows four connections looping on it put a
//! handoff's p50 from 2.6 to 781 ms and `/readyz` to 503. Three bounds now hold whatever
//! arrives:
//!
//! * per call: at most
//!   [`MAX_ROWS_PER_CALL`](crate::coordinator::verbs::history::MAX_ROWS_PER_CALL) rows,
//!   whatever `limit` asks (applied by the verbs), each read walking an index to its
//!   `LIMIT`;
//! * per source address: at most [`READS_PER_SOURCE`] of these reads in flight; one more is
//!   refused at once ([`ReadGate::try_enter`]);
//! * in all: at most [`READS_IN_FLIGHT`], so many addresses together hold at most that many
//!   threads of the blocking pool every verb shares, and never a writer's lock (SQLite
//!   reads them on a connection of their own).
//!
//! A refused read touches nothing: no store, no thread, no audit row. It answers
//! `coordinator_unavailable` (503 in the envelope, exit 75 in the CLI) with `Retry-After`.
//! A slot is held until the store read ends, even when the client hangs up first: otherwise
//! a client could drop each slow read and start another, past every bound.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::claim::ClaimError;
use crate::coordinator::budget::{SourceSlot, SourceSlots};

/// Reads of the audit log one source address (IPv4, or IPv6 /64) may have in flight.
pub const READS_PER_SOURCE: usize = 2;

/// Reads of the audit log in flight over every source: the SQLite store serves them one at
/// a time on its read connection anyway; a few let a Postgres read overlap a drain.
pub const READS_IN_FLIGHT: usize = 4;

/// What `Retry-After` says to a refused read, in seconds: an indexed read of at most
/// `MAX_ROWS_PER_CALL` rows takes milliseconds.
pub const READ_RETRY_AFTER_SECONDS: u64 = 1;

/// The per-source and global bounds on audit-log reads (see the module documentation).
#[derive(Debug)]
pub struct ReadGate {
    per_source: Arc<SourceSlots>,
    all: Arc<Semaphore>,
    refused: AtomicU64,
}

/// One admitted read; its places are given back on drop.
#[derive(Debug)]
pub struct ReadSlot {
    _all: OwnedSemaphorePermit,
    _source: SourceSlot,
}

impl Default for ReadGate {
    fn default() -> ReadGate {
        ReadGate::new(READS_PER_SOURCE, READS_IN_FLIGHT)
    }
}

impl ReadGate {
    /// At most `per_source` reads of one source in flight and `in_all` over every source.
    pub fn new(per_source: usize, in_all: usize) -> ReadGate {
        // No waiting room: a read over the bound is refused, never queued (a queue would
        // hold a connection and a task per waiter).
        ReadGate {
            per_source: Arc::new(SourceSlots::new(per_source, 0)),
            all: Arc::new(Semaphore::new(in_all)),
            refused: AtomicU64::new(0),
        }
    }

    /// A place for one read of `source`, or `coordinator_unavailable` at once when the
    /// source or the server has as many in flight as it may.
    pub async fn try_enter(&self, source: IpAddr) -> Result<ReadSlot, ClaimError> {
        let refuse = |why: String| {
            self.refused.fetch_add(1, Ordering::Relaxed);
            Err(ClaimError::Unavailable(format!("{why}; retry in {READ_RETRY_AFTER_SECONDS} s")))
        };
        let Some(ticket) = self.per_source.try_join(source) else {
            return refuse(format!("{source} already has {READS_PER_SOURCE} audit-log reads in flight"));
        };
        let Ok(all) = self.all.clone().try_acquire_owned() else {
            return refuse(format!("the server already has {READS_IN_FLIGHT} audit-log reads in flight"));
        };
        // Without a waiting room a ticket is one of at most `per_source`: a permit is free.
        let source = ticket.enter().await;
        Ok(ReadSlot { _all: all, _source: source })
    }

    /// Reads refused at a bound since the server started (for `/metrics`).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    /// Issue 39 point 6: one source gets `per_source` reads in flight, every source together
    /// `in_all`; a place comes back when its read ends, and a refusal is counted.
    #[tokio::test]
    async fn reads_are_bounded_per_source_and_in_all() {
        let gate = ReadGate::new(2, 3);
        let a1 = gate.try_enter(ip(1)).await.unwrap();
        let a2 = gate.try_enter(ip(1)).await.unwrap();
        let e = gate.try_enter(ip(1)).await.unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::CoordinatorUnavailable);
        assert!(e.to_string().contains("127.0.0.1 already has 2"), "{e}");
        let b1 = gate.try_enter(ip(2)).await.unwrap();
        let e = gate.try_enter(ip(3)).await.unwrap_err();
        assert!(e.to_string().contains("the server already has"), "{e}");
        assert_eq!(gate.refused(), 2);
        drop(a1);
        let c1 = gate.try_enter(ip(3)).await.expect("a place came back");
        drop((a2, b1, c1));
        for _ in 0..2 {
            gate.try_enter(ip(1)).await.expect("every place came back");
        }
    }

    const MAX_ROWS_PER_CALL_FOR_TESTS: usize = crate::coordinator::verbs::history::MAX_ROWS_PER_CALL;

    /// Issue 39 point 6 at the HTTP edge, on a router over an SQLite store holding 1,201
    /// changes of master: `master history` answers at most 1000 whatever `limit` asks; a
    /// request without a credential (or with another project's session token) gets every
    /// key with actor and reason null and `"redacted": true`; a session token of the
    /// project, or the admin token, gets them. `audit` and an `audit export` page are
    /// capped the same way.
    #[tokio::test]
    async fn history_over_http_is_capped_and_shows_who_and_why_only_to_a_part_in_the_project() {
        use crate::claim::clock::ManualClock;
        use crate::claim::engine::{Coordinator, DEFAULT_FRESHNESS};
        use crate::claim::masters::ControllerKey;
        use crate::claim::masters::RegisterRequest;
        use crate::claim::model::{AuditEntry, MASTER_CHANGE};
        use crate::claim::secret::{Secret, token_hash};
        use crate::claim::stores::Store;
        use crate::claim::stores::sqlite::SqliteStore;
        use axum::http::{Request, StatusCode};
        use serde_json::{Value, json};
        use tower::ServiceExt;

        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("c.sqlite")).unwrap());
        let clock = Arc::new(ManualClock::at(1_700_000_000_000));
        let c = Coordinator::new(store.clone(), clock, DEFAULT_FRESHNESS).with_open_registration(true);
        let key =
            |identity: &str| ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: "m".into() };
        let alice = c.register("p", &RegisterRequest::of(&key("alice"), None, None)).unwrap();
        let olga = c.register("other", &RegisterRequest::of(&key("olga"), None, None)).unwrap();
        for epoch in 2..=1201 {
            store
                .append_audit(&AuditEntry {
                    at: 1_700_000_000_000 + epoch as i64,
                    project: "p".into(),
                    verb: "master.claim".into(),
                    actor: "operator:ops".into(),
                    target: None,
                    result: "ok".into(),
                    epoch: Some(epoch),
                    request: None,
                    detail: json!({MASTER_CHANGE: {"from": null, "to": null}}),
                    reason: Some("night shift".into()),
                })
                .unwrap();
        }
        let admin = Secret::new("an-admin-token-long-enough-to-be-one-0123456789".into());
        let router = crate::coordinator::server::router(c, Some(token_hash(&admin)));
        let get = |uri: String, bearer: Option<String>| {
            let router = router.clone();
            async move {
                let mut req = Request::get(uri);
                if let Some(b) = bearer {
                    req = req.header("authorization", format!("Bearer {b}"));
                }
                let resp = router.oneshot(req.body(axum::body::Body::empty()).unwrap()).await.unwrap();
                let status = resp.status();
                let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
                (status, serde_json::from_slice::<Value>(&bytes).unwrap())
            }
        };
        let history = "/v1/projects/p/master/history";

        let (status, doc) = get(format!("{history}?limit=5000"), None).await;
        assert_eq!(status, StatusCode::OK, "{doc}");
        let changes = doc["changes"].as_array().unwrap();
        assert_eq!(changes.len(), MAX_ROWS_PER_CALL_FOR_TESTS, "capped whatever limit asks");
        assert_eq!(changes.last().unwrap()["epoch"], json!(1201), "the newest");
        assert_eq!(doc["redacted"], json!(true));
        for ch in changes {
            let mut keys: Vec<&str> = ch.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(keys, ["actor", "at", "epoch", "from", "reason", "to", "verb"], "every key stays: {ch}");
            assert_eq!((&ch["actor"], &ch["reason"]), (&Value::Null, &Value::Null), "{ch}");
        }

        for (who, bearer, in_full) in [
            ("another project's session", olga.token.expose().to_string(), false),
            ("a wrong token", "not-a-token".to_string(), false),
            ("a session of the project", alice.token.expose().to_string(), true),
            ("the admin token", admin.expose().to_string(), true),
        ] {
            let (status, doc) = get(format!("{history}?limit=3"), Some(bearer)).await;
            assert_eq!(status, StatusCode::OK, "{who}: {doc}");
            assert_eq!(doc["redacted"], json!(!in_full), "{who}: {doc}");
            let newest = &doc["changes"][2];
            let shown = (newest["actor"].as_str(), newest["reason"].as_str());
            let expected = if in_full { (Some("operator:ops"), Some("night shift")) } else { (None, None) };
            assert_eq!(shown, expected, "{who}: {doc}");
        }

        let (status, doc) = get("/v1/audit?limit=5000".into(), Some(admin.expose().to_string())).await;
        assert_eq!(status, StatusCode::OK, "{doc}");
        assert_eq!(doc["entries"].as_array().unwrap().len(), MAX_ROWS_PER_CALL_FOR_TESTS);
        let (status, doc) = get("/v1/audit/export?since=0&limit=5000".into(), Some(admin.expose().to_string())).await;
        assert_eq!(status, StatusCode::OK, "{doc}");
        assert_eq!(doc["rows"].as_array().unwrap().len(), MAX_ROWS_PER_CALL_FOR_TESTS);
        let (status, _) = get("/v1/audit?limit=5".into(), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "audit stays administrative");
    }
}
