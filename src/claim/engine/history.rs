//! What happened, read back (issue 30): `master history` (every change of master) and
//! `audit export` (every audit row since a time, page by page, with a resume cursor).
//!
//! Both read the audit log; neither keeps a record of its own. A change of master is
//! marked in the audit row the verb writes in the same transaction (Redis+Postgres: the
//! same queue entry) as the change itself ([`MASTER_CHANGE`], added by
//! [`Coordinator::run_audited`](super::Coordinator) for every verb that moves the epoch), so
//! the history is exactly as complete and as durable as the audit log: it survives restarts,
//! and it is trimmed by the same retention (`serve --audit-retention-days`). On the
//! two-plane store it is read from Postgres after a best-effort drain, like `audit`.
//!
//! Who sees what (issue 39 point 6: the history listed operator ids and free-text reasons
//! to anyone). A change's time, epoch, verb and the masters before and after are what
//! `master status` already shows anyone (identities and session ids); who made it
//! (`actor`: an operator id, a session, `admin`) and why (`reason`) are for a reader who
//! proves a part in the project ([`Coordinator::reads_history_in_full`]); anyone else gets
//! the same changes with both withheld ([`MasterChange::withheld`]). Every read is bounded
//! by [`MAX_PAGE`] here, and over HTTP by the server's own, smaller bound.

use serde::{Deserialize, Serialize};

use super::Coordinator;
use crate::claim::error::ClaimError;
use crate::claim::masters;
use crate::claim::model::{AuditEntry, MASTER_CHANGE, MasterRef, Millis};
use crate::claim::names;
use crate::claim::secret::{self, Secret};
use crate::claim::stores::AuditPage;

/// Most rows one export page (or one history read) returns.
pub const MAX_PAGE: usize = 10_000;

/// One change of master (`master history`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MasterChange {
    /// When it was committed.
    #[schema(value_type = i64)]
    pub at: Millis,
    /// The epoch after it.
    pub epoch: u64,
    /// The master before (None: the slot was empty).
    #[schema(required = true)]
    pub from: Option<MasterRef>,
    /// The master after (None: the slot was emptied, by a deregistration or a removal).
    #[schema(required = true)]
    pub to: Option<MasterRef>,
    /// The verb that made it (`session.register`, `master.handoff`, `master.claim`,
    /// `session.deregister`, `identity.add`, `identity.remove`).
    pub verb: String,
    /// Who ran it (`session:<id>`, `operator:<id>`, `identity:<name>`, `admin`, `local`);
    /// None when withheld from the reader ([`MasterChange::withheld`]).
    #[schema(required = true)]
    pub actor: Option<String>,
    /// The caller's `--reason`, if given (None too when withheld from the reader).
    #[schema(required = true)]
    pub reason: Option<String>,
}

impl MasterChange {
    /// The change an audit row records, if it records one.
    pub fn from_audit(row: &AuditEntry) -> Option<MasterChange> {
        let moved = row.detail.get(MASTER_CHANGE)?;
        let side = |k: &str| serde_json::from_value::<Option<MasterRef>>(moved.get(k)?.clone()).ok().flatten();
        Some(MasterChange {
            at: row.at,
            epoch: row.epoch?,
            from: side("from"),
            to: side("to"),
            verb: row.verb.clone(),
            actor: Some(row.actor.clone()),
            reason: row.reason.clone(),
        })
    }

    /// The change as a reader who proved no part in the project sees it: who made it and
    /// why withheld (None), the rest as `master status` would show it.
    pub fn withheld(self) -> MasterChange {
        MasterChange { actor: None, reason: None, ..self }
    }
}

/// One page of `audit export`: rows after the request's cursor, each with its own cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPage {
    /// The rows, oldest first, each with the cursor to resume after it.
    pub rows: Vec<(u64, AuditEntry)>,
}

impl Coordinator {
    /// `master history`: the newest `limit` changes of master of `project`, oldest first.
    pub fn master_history(&self, project: &str, limit: usize) -> Result<Vec<MasterChange>, ClaimError> {
        names::validate_name("project", project)?;
        let page = AuditPage {
            project: Some(project),
            since: Millis::MIN,
            after: 0,
            limit: limit.clamp(1, MAX_PAGE),
            master_changes: true,
            newest_first: true,
        };
        let mut changes: Vec<MasterChange> =
            self.store.audit_page(&page)?.iter().filter_map(|(_, row)| MasterChange::from_audit(row)).collect();
        changes.reverse();
        Ok(changes)
    }

    /// Whether `token` proves a part in `project`: it is the session token of a controller
    /// registered there (one `--open-registration` created counts only while the server
    /// runs with the flag, as for every other proof). Such a reader sees who made each
    /// change of master and why ([`MasterChange::actor`], [`MasterChange::reason`]); the
    /// admin token and the embedded store's own user are trusted by their callers, not
    /// here. Read from the store's read connection, never behind a write (issue 39 point
    /// 6); every row is compared, match or not, so the time taken says nothing of which.
    pub fn reads_history_in_full(&self, project: &str, token: Option<&Secret>) -> Result<bool, ClaimError> {
        names::validate_name("project", project)?;
        let Some(token) = token else { return Ok(false) };
        let presented = secret::token_hash(token);
        let snap = self.store.read_snapshot(project)?;
        let snap = masters::visible(&snap, self.open_registration);
        Ok(snap
            .controllers
            .iter()
            .fold(false, |found, c| secret::token_hash_matches(&c.token_hash, &presented) | found))
    }

    /// One page of `audit export`: up to `limit` rows written at or after `since`, after
    /// `cursor` (None: from the first row), oldest first. A cursor the log does not hold
    /// (removed by retention, or never handed out) is refused with `audit_cursor_unknown`,
    /// naming the oldest cursor held: resuming from it could skip rows unseen.
    pub fn audit_export(
        &self,
        project: Option<&str>,
        since: Millis,
        cursor: Option<u64>,
        limit: usize,
    ) -> Result<ExportPage, ClaimError> {
        if let Some(p) = project {
            names::validate_name("project", p)?;
        }
        if let Some(c) = cursor {
            super::validate_cursor(c)?;
            let (held, oldest) = self.store.audit_cursor(c)?;
            if !held {
                return Err(ClaimError::AuditCursorUnknown { cursor: c, oldest });
            }
        }
        let page = AuditPage {
            project,
            since,
            after: cursor.unwrap_or(0),
            limit: limit.clamp(1, MAX_PAGE),
            master_changes: false,
            newest_first: false,
        };
        Ok(ExportPage { rows: self.store.audit_page(&page)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::engine::RequestCtx;
    use crate::claim::engine::tests::{coordinator, master_claim, operator};
    use crate::claim::masters::{ControllerKey, HandoffRequest, RegisterRequest};
    use crate::claim::retention::Retention;
    use crate::claim::secret::Secret;

    fn key(identity: &str) -> ControllerKey {
        crate::claim::engine::tests::key(identity, "m")
    }

    fn req(to: &str, epoch: u64) -> crate::claim::masters::MasterClaimRequest {
        master_claim(to, epoch, "ops", "pw")
    }

    /// Every verb that moves the epoch leaves one history entry, with its reason; verbs that
    /// do not (a second registration, a heartbeat, a claim of the current master) none.
    #[test]
    fn every_change_of_master_is_in_the_history_with_its_reason() {
        let (_d, _clock, c) = coordinator();
        c.add_operator(&operator("ops", "pw")).unwrap();
        let a = c.register("p", &RegisterRequest::of(&key("alice"), None, None)).unwrap();
        let b = c.register("p", &RegisterRequest::of(&key("bob"), None, None)).unwrap();
        c.heartbeat("p", &b.controller.session_id, &b.token).unwrap();
        let why = HandoffRequest {
            session_id: a.controller.session_id.clone(),
            to: "bob".into(),
            expect_epoch: 1,
            reason: Some("maintenance window".into()),
            ..HandoffRequest::default()
        };
        c.handoff("p", &why, &a.token).unwrap();
        c.master_claim("p", &req("alice", 2)).unwrap();
        c.master_claim("p", &req("alice", 3)).unwrap(); // already master
        c.deregister("p", &a.controller.session_id, &a.token).unwrap();
        let h = c.master_history("p", 100).unwrap();
        let seen: Vec<(u64, &str, Option<&str>, Option<&str>)> = h
            .iter()
            .map(|m| {
                (
                    m.epoch,
                    m.verb.as_str(),
                    m.from.as_ref().map(|r| r.identity.as_str()),
                    m.to.as_ref().map(|r| r.identity.as_str()),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (1, "session.register", None, Some("alice")),
                (2, "master.handoff", Some("alice"), Some("bob")),
                (3, "master.claim", Some("bob"), Some("alice")),
                (4, "session.deregister", Some("alice"), None),
            ]
        );
        assert_eq!(h[1].reason.as_deref(), Some("maintenance window"));
        assert_eq!(h[1].actor, Some(format!("session:{}", a.controller.session_id)));
        assert_eq!(h[2].actor.as_deref(), Some("operator:ops"));
        assert_eq!(c.master_history("p", 2).unwrap(), h[2..], "the newest N, oldest first");
        assert!(c.master_history("other", 10).unwrap().is_empty());
    }

    /// Issue 39 point 6: only a session token of a controller registered in the project
    /// proves a part in it; none, a wrong one, another project's, or an open-registration
    /// row's once the server runs without the flag, prove nothing.
    #[test]
    fn only_a_session_of_the_project_reads_the_history_in_full() {
        let (_d, _clock, c) = coordinator();
        let a = c.register("p", &RegisterRequest::of(&key("alice"), None, None)).unwrap();
        let o = c.register("other", &RegisterRequest::of(&key("olga"), None, None)).unwrap();
        assert!(c.reads_history_in_full("p", Some(&a.token)).unwrap());
        assert!(!c.reads_history_in_full("p", None).unwrap());
        assert!(!c.reads_history_in_full("p", Some(&Secret::new("not-a-token".into()))).unwrap());
        assert!(!c.reads_history_in_full("p", Some(&o.token)).unwrap(), "another project's session");
        assert!(!c.reads_history_in_full("nobody-here", Some(&a.token)).unwrap());
        assert!(
            !c.for_request(RequestCtx::default())
                .with_open_registration(false)
                .reads_history_in_full("p", Some(&a.token))
                .unwrap(),
            "a row open registration made proves nothing once the flag is off"
        );
        let full = c.master_history("p", 10).unwrap();
        assert!(full[0].actor.is_some());
        let withheld: Vec<_> = full.iter().cloned().map(MasterChange::withheld).collect();
        assert!(withheld.iter().all(|m| m.actor.is_none() && m.reason.is_none()));
        assert_eq!((withheld[0].epoch, &withheld[0].to), (full[0].epoch, &full[0].to), "the rest is kept");
    }

    /// `claim take|release --reason` lands on the claim write's own audit row.
    #[test]
    fn a_claim_write_records_its_reason() {
        use crate::claim::work_claims::{ChannelRequest, ReleaseRequest, TakeRequest, TaskAddress};
        let (_d, _clock, c) = coordinator();
        let a = c.register("p", &RegisterRequest::of(&key("alice"), None, None)).unwrap();
        let channel = ChannelRequest { channel: "merges".into(), steward: "alice".into(), ..ChannelRequest::default() };
        c.create_channel("p", &channel).unwrap();
        let at = TaskAddress::new("p", "merges", "PR-1");
        let take = TakeRequest { seat: "alice".into(), reason: Some("on call".into()), ..TakeRequest::default() };
        c.take_work_claim(&at, &take, Some(&a.token)).unwrap();
        let release =
            ReleaseRequest { seat: "alice".into(), reason: Some("handing back".into()), ..ReleaseRequest::default() };
        c.release_work_claim(&at, &release, Some(&a.token)).unwrap();
        let rows: Vec<(String, Option<String>)> = c
            .audit_log(Some("p"), 10)
            .unwrap()
            .into_iter()
            .filter(|r| r.verb.starts_with("claim."))
            .map(|r| (r.verb, r.reason))
            .collect();
        assert_eq!(
            rows,
            [
                ("claim.take".to_string(), Some("on call".to_string())),
                ("claim.release".to_string(), Some("handing back".to_string()))
            ]
        );
    }

    #[test]
    fn a_reason_is_validated_before_anything_runs() {
        let (_d, _clock, c) = coordinator();
        for bad in ["", "a\nb", &"x".repeat(513)] {
            assert_eq!(
                RequestCtx::default().planned(Some(bad.to_string()), false).err().map(|e| e.code()),
                Some(crate::error::ErrorCode::InvalidArgument)
            );
        }
        assert!(RequestCtx::default().planned(None, false).is_ok());
        let bad = master_claim("bob", 0, "ops", "pw");
        let refused =
            c.master_claim("p", &crate::claim::masters::MasterClaimRequest { reason: Some("a\nb".into()), ..bad });
        assert_eq!(refused.err().map(|e| e.code()), Some(crate::error::ErrorCode::InvalidArgument));
    }

    /// A dry run decides on the same path as the real verb and writes nothing; its refusals
    /// are the real verb's.
    #[test]
    fn a_dry_run_claim_plans_and_changes_nothing() {
        let (_d, _clock, c) = coordinator();
        c.add_operator(&operator("ops", "pw")).unwrap();
        c.register("p", &RegisterRequest::of(&key("alice"), None, None)).unwrap();
        c.register("p", &RegisterRequest::of(&key("bob"), None, None)).unwrap();
        let rows_before = c.audit_log(None, 1000).unwrap().len();
        let dry = |to: &str, epoch: u64, password: &str| {
            let req =
                crate::claim::masters::MasterClaimRequest { dry_run: true, ..master_claim(to, epoch, "ops", password) };
            c.master_claim("p", &req)
        };
        let plan = dry("bob", 1, "pw").unwrap();
        assert!(plan.dry_run && plan.changed);
        assert_eq!((plan.epoch, plan.new_master.identity.as_str()), (2, "bob"));
        assert_eq!(plan.previous_master.as_ref().map(|m| m.identity.as_str()), Some("alice"));
        let st = c.status("p").unwrap();
        assert_eq!((st.slot.epoch, st.slot.master.unwrap().identity.as_str()), (1, "alice"), "epoch unchanged");
        assert_eq!(c.audit_log(None, 1000).unwrap().len(), rows_before, "no audit row of a change");
        assert!(c.store().inbox("p", "alice", 0, 10).unwrap().is_empty(), "no MasterPreempted");
        assert!(matches!(dry("bob", 0, "pw"), Err(ClaimError::StaleMaster { expected: 0, actual: 1 })));
        assert!(matches!(dry("bob", 1, "nope"), Err(ClaimError::InvalidOperatorCredentials { .. })));
        let refusals = c.audit_log(None, 1000).unwrap();
        assert!(refusals[rows_before..].iter().all(|r| r.result != "ok" && r.detail["dry_run"] == true));
        // The real claim does what the plan said.
        let real = c.master_claim("p", &req("bob", 1)).unwrap();
        assert_eq!(
            (real.epoch, real.new_master, real.preempted, real.dry_run),
            (plan.epoch, plan.new_master, plan.preempted, false)
        );
    }

    #[test]
    fn an_export_pages_with_cursors_and_refuses_one_it_does_not_hold() {
        let (_d, clock, c) = coordinator();
        for i in 0..5 {
            c.register("p", &RegisterRequest::of(&key(&format!("s{i}")), None, None)).unwrap();
            clock.advance(1000);
        }
        let since = c.now() - 3000; // the last three registrations
        let first = c.audit_export(Some("p"), since, None, 2).unwrap();
        assert_eq!(first.rows.len(), 2);
        let last = first.rows[1].0;
        let second = c.audit_export(Some("p"), since, Some(last), 2).unwrap();
        assert_eq!(second.rows.len(), 1);
        assert!(second.rows[0].0 > last);
        let all: Vec<u64> = c.audit_export(None, 0, None, 100).unwrap().rows.iter().map(|r| r.0).collect();
        assert_eq!(all.len(), 5);
        match c.audit_export(None, 0, Some(9999), 10) {
            Err(ClaimError::AuditCursorUnknown { cursor: 9999, oldest }) => assert_eq!(oldest, Some(all[0])),
            other => panic!("{other:?}"),
        }
        // Behind the retention trim: the cursor's row is gone.
        clock.advance(4 * 24 * 3600 * 1000);
        c.prune(&Retention::from_flags(3, 0, 0), "test").unwrap();
        let e = c.audit_export(None, 0, Some(all[0]), 10).unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::AuditCursorUnknown);
    }
}
