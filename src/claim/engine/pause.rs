//! `pause` and `resume` (issue 30 point 3): administrative verbs, like `channel create` —
//! over HTTP the server checks the admin token first; in-process, having the store file is
//! the authority (audited as `local`). Each reads the project's pause record, decides with
//! [`work_claims::pause`], writes by compare-and-set on the record's version and audits the
//! outcome, success or not. The sweep reads the record (see `work.rs`).

use crate::claim::verb_names;
use serde_json::json;

use super::Coordinator;
use crate::claim::error::ClaimError;
use crate::claim::model::{AuditEntry, Millis};
use crate::claim::names::validate_name;
use crate::claim::stores::{Commit, MAX_CAS_ATTEMPTS};
use crate::claim::work_claims::{self, PauseOutcome, PauseRequest, PauseState, Paused, ResumeOutcome};

impl Coordinator {
    /// `pause`: from now (until `until`, or until `resume`) no TTL release and no deputy
    /// handoff in `project`. A paused project's reason and `until` are replaced (the answer
    /// names the pause it replaced).
    pub fn pause_project(&self, project: &str, req: &PauseRequest) -> Result<PauseOutcome, ClaimError> {
        let actor = self.ctx.actor.as_str();
        let (reason, until) = (req.reason.as_str(), req.until);
        validate_name("project", project)?;
        // The reason goes on the audit row's own column too, where `audit` and
        // `audit export` show every verb's --reason.
        let audit = AuditEntry {
            reason: Some(reason.to_string()),
            ..self.audit(project, verb_names::PROJECT_PAUSE, actor.into(), None)
        };
        self.write_pause(audit, &json!([reason, until]), |existing, now| {
            let (record, replaced) = work_claims::pause::pause(existing, project, reason, until, actor, now)?;
            let out = PauseOutcome { project: project.into(), paused: record.view(), replaced };
            let detail = json!({"reason": reason, "until": until, "replaced": out.replaced});
            Ok((Some(record), out, detail))
        })
    }

    /// `resume`: ends the project's pause now; the next sweep releases what is due. A
    /// project that is not paused answers `was_paused: false`, writes no record (only its
    /// audit row) and changes nothing.
    pub fn resume_project(&self, project: &str) -> Result<ResumeOutcome, ClaimError> {
        let actor = self.ctx.actor.as_str();
        validate_name("project", project)?;
        let audit = self.audit(project, verb_names::PROJECT_RESUME, actor.into(), None);
        self.write_pause(audit, &json!([]), |existing, now| {
            let record = work_claims::pause::resume(existing, actor, now);
            let previous = record.as_ref().map(|r| r.view());
            let out =
                ResumeOutcome { project: project.into(), was_paused: previous.is_some(), previous, resumed_at: now };
            let detail = json!({"was_paused": out.was_paused, "previous": out.previous});
            Ok((record, out, detail))
        })
    }

    /// Runs one administrative pause write: a kept answer first (sealed under the admin
    /// token over HTTP), then read, decide, compare-and-set, re-deciding on a lost race.
    /// `decide` returns the record to write (None: nothing to write, the audit row alone),
    /// the answer and the audit detail.
    fn write_pause<T: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        mut audit: AuditEntry,
        input: &serde_json::Value,
        decide: impl Fn(
            Option<&work_claims::ProjectPause>,
            Millis,
        ) -> Result<(Option<work_claims::ProjectPause>, T, serde_json::Value), ClaimError>,
    ) -> Result<T, ClaimError> {
        let pending = self.pending(&audit, input, &self.admin_credentials())?;
        if let Some(answer) = self.replay_after_proof(&audit, pending.as_ref(), || ClaimError::AdminRequired)? {
            return Ok(answer);
        }
        let project = audit.project.clone();
        let result = (|| {
            for _ in 0..MAX_CAS_ATTEMPTS {
                let existing = self.store.pause(&project)?;
                let now = self.clock.now();
                let (record, out, detail) = decide(existing.as_ref(), now)?;
                audit.at = now;
                audit.detail = detail;
                let Some(record) = record else {
                    // Nothing changes, so nothing is kept: a retry decides the same again.
                    self.store.append_audit(&audit)?;
                    return Ok(out);
                };
                audit.request = pending.as_ref().map(|p| p.record(&out, now)).transpose()?;
                let expected = existing.map_or(0, |p| p.version);
                if let Commit::Done(_) = self.store.put_pause(&record, expected, &audit)? {
                    return Ok(out);
                }
            }
            Err(ClaimError::Unavailable(format!(
                "project {project}'s pause kept changing ({MAX_CAS_ATTEMPTS} attempts)"
            )))
        })();
        result.inspect_err(|e| self.audit_failure(audit.clone(), e, None))
    }

    /// The project's pause in force at `at`, if any.
    pub(super) fn paused_at(&self, project: &str, at: Millis) -> Result<Option<Paused>, ClaimError> {
        Ok(self.store.pause(project)?.filter(|p| p.active_at(at)).map(|p| p.view()))
    }

    /// Whether the project is paused now (`claim list`, `master status`).
    pub fn pause_state(&self, project: &str) -> Result<PauseState, ClaimError> {
        validate_name("project", project)?;
        Ok(PauseState { project: project.into(), paused: self.paused_at(project, self.clock.now())? })
    }

    /// How many projects are paused now (`/metrics`: a count, never a per-project series,
    /// because projects are not bounded and labels must be).
    pub fn paused_projects(&self) -> Result<u64, ClaimError> {
        let now = self.clock.now();
        Ok(self.store.pauses()?.iter().filter(|p| p.active_at(now)).count() as u64)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::claim::clock::ManualClock;
    use crate::claim::engine::RequestCtx;
    use crate::claim::requests::RequestId;
    use crate::claim::stores::sqlite::SqliteStore;

    const T: Millis = 1_700_000_000_000;

    /// A pause for `reason`, until `until`.
    fn pause(reason: &str, until: Option<Millis>) -> PauseRequest {
        PauseRequest { reason: reason.into(), until }
    }

    fn coordinator() -> (tempfile::TempDir, Arc<ManualClock>, Coordinator) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("c.sqlite")).unwrap());
        let clock = Arc::new(ManualClock::at(T));
        let c = Coordinator::new(store, clock.clone(), super::super::DEFAULT_FRESHNESS);
        (dir, clock, c)
    }

    fn pause_rows(c: &Coordinator) -> Vec<(String, String)> {
        let rows = c.audit_log(Some("p"), 100).unwrap();
        rows.into_iter().filter(|a| a.verb.starts_with("project.")).map(|a| (a.verb, a.result)).collect()
    }

    #[test]
    fn a_retried_pause_returns_the_first_answer_and_acts_once() {
        let (_d, clock, c) = coordinator();
        let once =
            c.for_request(RequestCtx { id: Some(RequestId::parse("window-1").unwrap()), ..RequestCtx::default() });
        let first = once.pause_project("p", &pause("db migration", None)).unwrap();
        clock.advance(1_000);
        let again = once.pause_project("p", &pause("db migration", None)).unwrap();
        assert_eq!(again, first, "the kept answer, not a second pause replacing the first");
        assert_eq!(c.store().pause("p").unwrap().unwrap().version, 1, "written once");
        // The same id with another request is refused, and nothing changes.
        let other = once.pause_project("p", &pause("another reason", None)).unwrap_err();
        assert_eq!(other.code(), crate::error::ErrorCode::InvalidArgument, "{other}");
        assert_eq!(c.store().pause("p").unwrap().unwrap().reason, "db migration");
    }

    #[test]
    fn a_pause_decided_from_a_stale_read_conflicts_and_writes_nothing() {
        let (_d, _clock, c) = coordinator();
        c.pause_project("p", &pause("first", None)).unwrap();
        let stored = c.store().pause("p").unwrap().unwrap();
        // A second writer that read "no pause" (version 0) loses: nothing of it is written,
        // not even its audit row.
        let stale = crate::claim::work_claims::ProjectPause { reason: "stale".into(), ..stored.clone() };
        let audit = c.audit("p", "project.pause", "local".into(), None);
        assert_eq!(c.store().put_pause(&stale, 0, &audit).unwrap(), Commit::Conflict);
        assert_eq!(c.store().pause("p").unwrap().unwrap(), stored);
        assert_eq!(pause_rows(&c), [("project.pause".to_string(), "ok".to_string())]);
    }

    #[test]
    fn resume_ends_the_pause_and_counts_follow_the_clock() {
        let (_d, clock, c) = coordinator();
        assert_eq!(c.paused_projects().unwrap(), 0);
        c.pause_project("p", &pause("window", Some(T + 60_000))).unwrap();
        c.pause_project("q", &pause("incident", None)).unwrap();
        assert_eq!(c.paused_projects().unwrap(), 2);
        clock.advance(60_000);
        assert_eq!(c.paused_projects().unwrap(), 1, "p's window ended by itself");
        assert_eq!(c.pause_state("p").unwrap().paused, None);
        let res = c.resume_project("q").unwrap();
        assert!(res.was_paused);
        assert_eq!(c.paused_projects().unwrap(), 0);
        let stored = c.store().pause("q").unwrap().unwrap();
        assert_eq!(
            (stored.resumed_at, stored.resumed_by.as_deref(), stored.version),
            (Some(T + 60_000), Some("local"), 2)
        );
        // Resuming again writes no record, only its audit row.
        assert!(!c.resume_project("q").unwrap().was_paused);
        assert_eq!(c.store().pause("q").unwrap().unwrap().version, 2);
        assert_eq!(c.store().audit_log(Some("q"), 100).unwrap().len(), 3);
    }
}
