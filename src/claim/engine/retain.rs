//! Retention on the coordinator: one prune at the clock's now, audited when it removed
//! anything (see [`crate::claim::retention`] for what is kept and why).

use serde_json::json;

use super::Coordinator;
use crate::claim::error::ClaimError;
use crate::claim::retention::{Pruned, Retention, Sizes};

impl Coordinator {
    /// Removes what `policy` no longer keeps, as of the clock's now (a `--time-scale` drill
    /// ages everything with the scaled clock). A prune that removed something leaves one
    /// audit row (`retention.prune`, actor `actor`) with the counts and cutoffs, written after
    /// the prune so it is never its own victim.
    pub fn prune(&self, policy: &Retention, actor: &str) -> Result<Pruned, ClaimError> {
        let cutoffs = policy.cutoffs(self.clock.now());
        let mut audit = self.audit("", "retention.prune", actor.into(), None);
        // Expired kept answers go on every prune, whatever the policy keeps: they are dead
        // the moment they expire (best effort: a failure here leaves only unreadable rows).
        let _ = self.store.purge_requests(self.clock.now());
        let result = self.store.prune(&cutoffs);
        match &result {
            Ok(p) if p.is_empty() => {}
            Ok(p) => {
                audit.detail = json!({
                    "audit_rows": p.audit_rows, "history_steps": p.history_steps, "inbox_entries": p.inbox_entries, "attempt_rows": p.attempt_rows,
                    "audit_before": cutoffs.audit_before, "inbox_before": cutoffs.inbox_before,
                    "inbox_keep": cutoffs.inbox_keep,
                });
                // Best effort, like every audit row of a failure: the prune itself happened.
                let _ = self.store.append_audit(&audit);
            }
            Err(e) => self.audit_failure(audit, e, None),
        }
        result
    }

    /// The store's sizes that grow with use (audit rows, inbox events, attempt rows).
    pub fn sizes(&self) -> Result<Sizes, ClaimError> {
        self.store.sizes()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::claim::clock::{Clock, ManualClock};
    use crate::claim::engine::DEFAULT_FRESHNESS;
    use crate::claim::masters::ControllerKey;
    use crate::claim::masters::RegisterRequest;
    use crate::claim::stores::sqlite::SqliteStore;

    const DAY: i64 = 24 * 3600 * 1000;

    fn key(identity: &str) -> ControllerKey {
        ControllerKey { identity: identity.into(), surface: "cli".into(), machine_id: "m".into() }
    }

    #[test]
    fn routine_beats_are_not_audited_a_return_from_stale_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("c.sqlite")).unwrap());
        let clock = Arc::new(ManualClock::at(1_700_000_000_000));
        let c = Coordinator::new(store, clock.clone(), DEFAULT_FRESHNESS).with_open_registration(true);
        let a = c.register("p", &RegisterRequest::of(&key("alice"), None, None)).unwrap();
        let sid = a.controller.session_id.clone();
        for _ in 0..5 {
            clock.advance(10_000);
            c.heartbeat("p", &sid, &a.token).unwrap();
        }
        clock.advance(31_000);
        c.heartbeat("p", &sid, &a.token).unwrap();
        assert!(c.heartbeat("p", &sid, &crate::claim::secret::Secret::new("wrong".into())).is_err());
        let beats: Vec<_> =
            c.audit_log(None, 100).unwrap().into_iter().filter(|r| r.verb == "session.heartbeat").collect();
        assert_eq!(beats.len(), 2, "{beats:?}");
        assert_eq!(beats[0].detail["back_after_stale_ms"], 31_000);
        assert_eq!(beats[1].result, "unauthorized");
        assert_eq!(c.status("p").unwrap().controllers[0].controller.last_heartbeat, clock.now(), "every beat counts");
    }

    #[test]
    fn a_prune_removes_old_audit_rows_and_audits_itself() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("c.sqlite")).unwrap());
        let clock = Arc::new(ManualClock::at(100 * DAY));
        let c = Coordinator::new(store, clock.clone(), DEFAULT_FRESHNESS).with_open_registration(true);
        c.register("p", &RegisterRequest::of(&key("alice"), None, None)).unwrap();
        clock.advance(5 * DAY);
        c.register("p", &RegisterRequest::of(&key("bob"), None, None)).unwrap();
        let policy = Retention::from_flags(3, 0, 0);
        let pruned = c.prune(&policy, "test").unwrap();
        assert_eq!(pruned.audit_rows, 1);
        let verbs: Vec<String> = c.audit_log(None, 10).unwrap().into_iter().map(|r| r.verb).collect();
        assert_eq!(verbs, ["session.register", "retention.prune"]);
        assert!(c.prune(&policy, "test").unwrap().is_empty());
        assert_eq!(c.audit_log(None, 10).unwrap().len(), 2, "an empty prune writes no row");
        assert_eq!(c.sizes().unwrap().audit_rows, 2);
    }
}
