//! A project's maintenance pause (issue 30 point 3): `pause` and `resume` are
//! administrative (the admin token over HTTP, like `channel create`; in-process the store
//! file is the authority, audited as `local`); the pause state is readable by anyone who
//! can read `master status`.

use crate::claim::verb_names;
use crate::claim::work_claims::{PauseOutcome, PauseRequest, PauseState, ResumeOutcome};
use crate::coordinator::verb::{answers, json_input, verb};
use crate::coordinator::wire::{NoBody, ProjectPath};

json_input!(PauseRequest);
answers!(PauseOutcome, ResumeOutcome, PauseState);

verb! {
    /// Pause a project: no TTL release and no deputy handoff until `resume` or `until`; owner writes and master verbs go on (`pause`).
    Pause = verb_names::PROJECT_PAUSE, as "pauseProject": Post "/v1/projects/{project}/pause", auth Admin, write true;
    (ProjectPath, PauseRequest) -> PauseOutcome;
    errors [];
    apply |c, path, r, _| { c.pause_project(&path.project, &r) }
}

verb! {
    /// End a project's pause; the next sweep releases what is due (`resume`). Not paused: `was_paused` false, nothing changed.
    Resume = verb_names::PROJECT_RESUME, as "resumeProject": Post "/v1/projects/{project}/resume", auth Admin, write true;
    (ProjectPath, NoBody) -> ResumeOutcome;
    errors [];
    apply |c, path, _, _| { c.resume_project(&path.project) }
}

verb! {
    /// Whether a project is paused now, with the pause's reason, start and end.
    ShowPause = verb_names::PROJECT_PAUSE_STATE, as "pauseState": Get "/v1/projects/{project}/pause", auth None, write false;
    (ProjectPath, NoBody) -> PauseState;
    errors [];
    apply |c, path, _, _| { c.pause_state(&path.project) }
}
