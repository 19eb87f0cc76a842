//! Work claims (seed 002): channels, claims, sweeps, focus leases, the steward report.

use crate::claim::verb_names;
use crate::claim::work_claims::{
    Channel, FocusLease, FocusOutcome, StewardReport, SweepReport, WorkClaim, WorkClaimOutcome, WorkClaimStep,
};
use crate::coordinator::verb::{Rate, answers, json_input, query_input, verb};
use crate::coordinator::wire::*;

json_input!(ChannelRequest, FocusRequest);
json_input!(seat TakeRequest, TouchRequest, ReleaseRequest);
query_input!(AsOfQuery);
answers!(Channel, WorkClaim, WorkClaimOutcome, SweepReport, FocusLease, FocusOutcome, StewardReport);
answers!(list WorkClaim, WorkClaimStep);
answers!(optional FocusLease);

impl crate::coordinator::verb::Input for SweepRequest {
    /// Everything is optional: no body at all sweeps now.
    fn read(body: &[u8]) -> Result<SweepRequest, crate::claim::ClaimError> {
        if body.is_empty() {
            return Ok(SweepRequest::default());
        }
        serde_json::from_slice(body)
            .map_err(|e| crate::claim::ClaimError::invalid("request body", format!("request body: {e}")))
    }
    fn body_schema(
        c: &mut crate::coordinator::verb::Components,
    ) -> Option<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>> {
        Some(crate::coordinator::verb::named::<SweepRequest>(c))
    }
}

verb! {
    /// Create a channel with its steward and SLA (`channel create`; administrative: it names who every doorbell rings).
    CreateChannel = verb_names::CHANNEL_CREATE, as "createChannel": Post "/v1/projects/{project}/channels", auth Admin, write true;
    (ProjectPath, ChannelRequest) -> Channel;
    errors [NameConfusable, ChannelExists];
    apply |c, path, r, _| { c.create_channel(&path.project, &r) }
    const CREATED: bool = true;
    fn names(r: &ChannelRequest) -> Vec<(&'static str, &str)> {
        vec![("channel", &r.channel), ("steward", &r.steward)]
    }
    fn admin_scope(path: &ProjectPath, r: &ChannelRequest) -> (String, Option<String>) {
        (path.project.clone(), Some(r.channel.clone()))
    }
}

verb! {
    /// Show a channel (`channel show`).
    ShowChannel = verb_names::CHANNEL_SHOW, as "showChannel": Get "/v1/projects/{project}/channels/{channel}", auth None, write false;
    (ChannelPath, NoBody) -> Channel;
    errors [NotFound];
    apply |c, path, _, _| { c.show_channel(&path.project, &path.channel) }
}

verb! {
    /// Every claim in a channel (`claim list`).
    ListClaims = verb_names::CLAIM_LIST, as "listClaims": Get "/v1/projects/{project}/channels/{channel}/claims", auth None, write false;
    (ChannelPath, NoBody) -> Vec<WorkClaim>;
    errors [NotFound];
    apply |c, path, _, _| { c.list_work_claims(&path.project, &path.channel) }
}

verb! {
    /// Show one claim (`claim show`).
    ShowClaim = verb_names::CLAIM_SHOW, as "showClaim": Get "/v1/projects/{project}/channels/{channel}/claims/{task}", auth None, write false;
    (TaskPath, NoBody) -> WorkClaim;
    errors [NotFound];
    apply |c, path, _, _| { c.show_work_claim(&path.project, &path.channel, &path.task) }
}

verb! {
    /// Every step of one claim, oldest first (`claim history`).
    ClaimHistory = verb_names::CLAIM_HISTORY, as "claimHistory": Get "/v1/projects/{project}/channels/{channel}/claims/{task}/history", auth None, write false;
    (TaskPath, NoBody) -> Vec<WorkClaimStep>;
    errors [NotFound];
    apply |c, path, _, _| { c.work_claim_history(&path.project, &path.channel, &path.task) }
}

verb! {
    /// Take a task: open a claim, or take a released one (`claim take`).
    TakeClaim = verb_names::CLAIM_TAKE, as "takeClaim": Post "/v1/projects/{project}/channels/{channel}/claims/{task}/take", auth Seat, write true;
    (TaskPath, TakeRequest) -> WorkClaimOutcome;
    errors [ClaimTaken, VersionConflict, NextStepRequired, NotClaimOwner, NotFound];
    apply |c, path, r, caller| { c.take_work_claim(&path.into(), &r, caller.bearer.as_ref()) }
    const RATE: Rate = Rate::SeatInBody;
    fn names(r: &TakeRequest) -> Vec<(&'static str, &str)> {
        vec![("seat", &r.seat), ("deputy", r.deputy.as_deref().unwrap_or("-"))]
    }
}

verb! {
    /// The owner's write: resets the TTL clock; may change deputy, TTL and next step (`claim touch`).
    TouchClaim = verb_names::CLAIM_TOUCH, as "touchClaim": Post "/v1/projects/{project}/channels/{channel}/claims/{task}/touch", auth Seat, write true;
    (TaskPath, TouchRequest) -> WorkClaimOutcome;
    errors [ClaimTaken, VersionConflict, NextStepRequired, NotClaimOwner, NotFound];
    apply |c, path, r, caller| { c.touch_work_claim(&path.into(), &r, caller.bearer.as_ref()) }
    const RATE: Rate = Rate::SeatInBody;
    fn names(r: &TouchRequest) -> Vec<(&'static str, &str)> {
        vec![("seat", &r.seat), ("deputy", r.deputy.as_deref().unwrap_or("-"))]
    }
}

verb! {
    /// The owner opens the task again, or closes it with `done` (`claim release`).
    ReleaseClaim = verb_names::CLAIM_RELEASE, as "releaseClaim": Post "/v1/projects/{project}/channels/{channel}/claims/{task}/release", auth Seat, write true;
    (TaskPath, ReleaseRequest) -> WorkClaim;
    errors [ClaimTaken, VersionConflict, NextStepRequired, NotClaimOwner, NotFound];
    apply |c, path, r, caller| { c.release_work_claim(&path.into(), &r, caller.bearer.as_ref()) }
    const RATE: Rate = Rate::SeatInBody;
    fn names(r: &ReleaseRequest) -> Vec<(&'static str, &str)> {
        vec![("seat", &r.seat)]
    }
}

verb! {
    /// Live claims older than the channel's SLA that carry no TTL (`steward report`).
    Steward = verb_names::STEWARD_REPORT, as "stewardReport": Get "/v1/projects/{project}/channels/{channel}/steward-report", auth None, write false;
    (ChannelPath, AsOfQuery) -> StewardReport;
    errors [NotFound];
    apply |c, path, q, _| { c.steward_report(&path.project, &path.channel, q.as_of) }
}

verb! {
    /// Release every claim of a project whose TTL ran out, or preview it (`claim sweep`).
    Sweep = verb_names::CLAIM_SWEEP, as "sweep": Post "/v1/projects/{project}/sweep", auth None, write false;
    (ProjectPath, SweepRequest) -> SweepReport;
    errors [NotFound];
    apply |c, path, r, _| { c.sweep(&path.project, &r) }
}

verb! {
    /// The seat's focus lease if it holds one now (`focus show`).
    ShowFocus = verb_names::FOCUS_SHOW, as "showFocus": Get "/v1/projects/{project}/focus/{seat}", auth None, write false;
    (SeatPath, NoBody) -> Option<FocusLease>;
    errors [NotFound];
    apply |c, path, _, _| { c.focus_show(&path.project, &path.seat) }
}

verb! {
    /// Start (or restart) a focus lease, capped at 240 minutes (`focus start`).
    StartFocus = verb_names::FOCUS_START, as "startFocus": Post "/v1/projects/{project}/focus/{seat}/start", auth Seat, write true;
    (SeatPath, FocusRequest) -> FocusOutcome;
    errors [NotFound];
    apply |c, path, r, caller| { c.focus_start(&path.project, &path.seat, &r, caller.bearer.as_ref()) }
    const RATE: Rate = Rate::SeatInPath;
}

verb! {
    /// End the seat's focus lease now (`focus end`).
    EndFocus = verb_names::FOCUS_END, as "endFocus": Post "/v1/projects/{project}/focus/{seat}/end", auth Seat, write true;
    (SeatPath, NoBody) -> FocusLease;
    errors [NotFound];
    apply |c, path, _, caller| { c.focus_end(&path.project, &path.seat, caller.bearer.as_ref()) }
    const RATE: Rate = Rate::SeatInPath;
}
