//! `pause` and `resume` (issue 30 point 3): administrative verbs, like `channel create` —
//! over HTTP the server checks the admin token first; in-process, having the store file is
//! the authority (audited as `local`). Each reads the project's pause record, decides with
//! [`work_claims::pause`], writes by compare-and-set on the record's version and audits the
//! outcome, success or not. The sweep reads the record (see `work.rs`).

use serde_json::json;

use super::Coordinator;
use crate::claim::error::ClaimError;
use crate::claim::model::{AuditEntry, Millis};
use crate::claim::names::validate_name;
use crate::claim::stores::{Commit, MAX_CAS_ATTEMPTS};
use crate::claim::work_claims::{self, PauseOutcome, PauseState, Paused, ResumeOutcome};

impl Coordinator {
    /// `pause`: from now (until `until`, or until `resume`) no TTL release and no deputy
    /// handoff in `project`. A paused project's reason and `until` are replaced (the answer
    /// names the pause it replaced).
    pub fn pause_project(
        &self,
        project: &str,
        reason: &str,
        until: Option<Millis>,
        actor: &str,
    ) -> Result<PauseOutcome, ClaimError> {
        validate_name("project", project)?;
        let audit = self.audit(project, "project.pause", actor.into(), None);
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
    pub fn resume_project(&self, project: &str, actor: &str) -> Result<ResumeOutcome, ClaimError> {
        validate_name("project", project)?;
        let audit = self.audit(project, "project.resume", actor.into(), None);
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
