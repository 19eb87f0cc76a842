//! A project's maintenance pause (issue 30 point 3): `pause` and `resume` are
//! administrative (the admin token over HTTP, like `channel create`; in-process the store
//! file is the authority, audited as `local`); the pause state is readable by anyone who
//! can read `master status`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::claim::model::Millis;
use crate::claim::work_claims::{PauseOutcome, PauseState, ResumeOutcome};
use crate::coordinator::verb::{answers, json_input, verb};
use crate::coordinator::wire::{NoBody, ProjectPath};

/// `POST /v1/projects/{project}/pause`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PauseReq {
    /// Why (at most 512 bytes, no control characters): shown in `master status` and audited.
    pub reason: String,
    /// When the pause ends by itself (ms since the epoch, in the future); absent: at `resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub until: Option<Millis>,
}

json_input!(PauseReq);
answers!(PauseOutcome, ResumeOutcome, PauseState);

verb! {
    /// Pause a project: no TTL release and no deputy handoff until `resume` or `until`; owner writes and master verbs go on (`pause`).
    Pause = "project.pause" as "pauseProject": Post "/v1/projects/{project}/pause", auth Admin, write true;
    (ProjectPath, PauseReq) -> PauseOutcome;
    apply |c, path, r, caller| {
        caller.as_admin(c, |c| c.pause_project(&path.project, &r.reason, r.until, caller.actor()))
    }
    fn admin_scope(path: &ProjectPath, _r: &PauseReq) -> (String, Option<String>) {
        (path.project.clone(), None)
    }
}

verb! {
    /// End a project's pause; the next sweep releases what is due (`resume`). Not paused: `was_paused` false, nothing changed.
    Resume = "project.resume" as "resumeProject": Post "/v1/projects/{project}/resume", auth Admin, write true;
    (ProjectPath, NoBody) -> ResumeOutcome;
    apply |c, path, _, caller| { caller.as_admin(c, |c| c.resume_project(&path.project, caller.actor())) }
    fn admin_scope(path: &ProjectPath, _b: &NoBody) -> (String, Option<String>) {
        (path.project.clone(), None)
    }
}

verb! {
    /// Whether a project is paused now, with the pause's reason, start and end.
    ShowPause = "project.pause_state" as "pauseState": Get "/v1/projects/{project}/pause", auth None, write false;
    (ProjectPath, NoBody) -> PauseState;
    apply |c, path, _, _| { c.pause_state(&path.project) }
}
