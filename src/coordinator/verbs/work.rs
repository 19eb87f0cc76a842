//! Work claims (seed 002): channels, claims, sweeps, focus leases, the steward report.

use crate::claim::work_claims::{
    Channel, ClaimOutcome, ClaimRow, ClaimStep, FocusLease, FocusOutcome, StewardReport, SweepReport,
};
use crate::coordinator::verb::{Rate, answers, json_input, query_input, verb};
use crate::coordinator::wire::*;

json_input!(ChannelReq, TakeReq, TouchReq, ReleaseReq, FocusStartReq);
query_input!(AsOfQuery);
answers!(Channel, ClaimRow, ClaimOutcome, SweepReport, FocusLease, FocusOutcome, StewardReport);
answers!(list ClaimRow, ClaimStep);
answers!(optional FocusLease);

impl crate::coordinator::verb::Input for SweepReq {
    /// Everything is optional: no body at all sweeps now.
    fn read(body: &[u8]) -> Result<SweepReq, crate::claim::ClaimError> {
        if body.is_empty() {
            return Ok(SweepReq::default());
        }
        serde_json::from_slice(body)
            .map_err(|e| crate::claim::ClaimError::InvalidArgument(format!("request body: {e}")))
    }
    fn body_schema(
        c: &mut crate::coordinator::verb::Components,
    ) -> Option<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>> {
        Some(crate::coordinator::verb::named::<SweepReq>(c))
    }
}

verb! {
    /// Create a channel with its steward and SLA (`channel create`; administrative: it names who every doorbell rings).
    CreateChannel = "channel.create" as "createChannel": Post "/v1/projects/{project}/channels", auth Admin, write true;
    (ProjectPath, ChannelReq) -> Channel;
    apply |c, path, r, caller| {
        c.create_channel(&path.project, &r.channel, &r.steward, r.sla_minutes, r.ttl_floor_minutes, caller.actor())
    }
    const CREATED: bool = true;
    fn names(r: &ChannelReq) -> Vec<(&'static str, &str)> {
        vec![("channel", &r.channel), ("steward", &r.steward)]
    }
    fn admin_scope(path: &ProjectPath, r: &ChannelReq) -> (String, Option<String>) {
        (path.project.clone(), Some(r.channel.clone()))
    }
}

verb! {
    /// Show a channel (`channel show`).
    ShowChannel = "channel.show" as "showChannel": Get "/v1/projects/{project}/channels/{channel}", auth None, write false;
    (ChannelPath, NoBody) -> Channel;
    apply |c, path, _, _| { c.show_channel(&path.project, &path.channel) }
}

verb! {
    /// Every claim in a channel (`claim list`).
    ListClaims = "claim.list" as "listClaims": Get "/v1/projects/{project}/channels/{channel}/claims", auth None, write false;
    (ChannelPath, NoBody) -> Vec<ClaimRow>;
    apply |c, path, _, _| { c.list_claims(&path.project, &path.channel) }
}

verb! {
    /// Show one claim (`claim show`).
    ShowClaim = "claim.show" as "showClaim": Get "/v1/projects/{project}/channels/{channel}/claims/{task}", auth None, write false;
    (TaskPath, NoBody) -> ClaimRow;
    apply |c, path, _, _| { c.show_claim(&path.project, &path.channel, &path.task) }
}

verb! {
    /// Every step of one claim, oldest first (`claim history`).
    ClaimHistory = "claim.history" as "claimHistory": Get "/v1/projects/{project}/channels/{channel}/claims/{task}/history", auth None, write false;
    (TaskPath, NoBody) -> Vec<ClaimStep>;
    apply |c, path, _, _| { c.claim_history(&path.project, &path.channel, &path.task) }
}

verb! {
    /// Take a task: open a claim, or take a released one (`claim take`).
    TakeClaim = "claim.take" as "takeClaim": Post "/v1/projects/{project}/channels/{channel}/claims/{task}/take", auth Seat, write true;
    (TaskPath, TakeReq) -> ClaimOutcome;
    apply |c, path, r, caller| {
        let c = c.with_reason(r.reason.clone())?;
        c.take(&r.into_request(path.into()), caller.bearer.as_ref())
    }
    const RATE: Rate = Rate::SeatInBody;
    fn names(r: &TakeReq) -> Vec<(&'static str, &str)> {
        vec![("seat", &r.seat), ("deputy", r.deputy.as_deref().unwrap_or("-"))]
    }
}

verb! {
    /// The owner's write: resets the TTL clock; may change deputy, TTL and next step (`claim touch`).
    TouchClaim = "claim.touch" as "touchClaim": Post "/v1/projects/{project}/channels/{channel}/claims/{task}/touch", auth Seat, write true;
    (TaskPath, TouchReq) -> ClaimOutcome;
    apply |c, path, r, caller| { c.touch(&r.into_request(path.into())?, caller.bearer.as_ref()) }
    const RATE: Rate = Rate::SeatInBody;
    fn names(r: &TouchReq) -> Vec<(&'static str, &str)> {
        vec![("seat", &r.seat), ("deputy", r.deputy.as_deref().unwrap_or("-"))]
    }
}

verb! {
    /// The owner opens the task again, or closes it with `done` (`claim release`).
    ReleaseClaim = "claim.release" as "releaseClaim": Post "/v1/projects/{project}/channels/{channel}/claims/{task}/release", auth Seat, write true;
    (TaskPath, ReleaseReq) -> ClaimRow;
    apply |c, path, r, caller| {
        let c = c.with_reason(r.reason.clone())?;
        c.release_claim(&r.into_request(path.into()), caller.bearer.as_ref())
    }
    const RATE: Rate = Rate::SeatInBody;
    fn names(r: &ReleaseReq) -> Vec<(&'static str, &str)> {
        vec![("seat", &r.seat)]
    }
}

verb! {
    /// Live claims older than the channel's SLA that carry no TTL (`steward report`).
    Steward = "steward.report" as "stewardReport": Get "/v1/projects/{project}/channels/{channel}/steward-report", auth None, write false;
    (ChannelPath, AsOfQuery) -> StewardReport;
    apply |c, path, q, _| { c.steward_report(&path.project, &path.channel, q.as_of) }
}

verb! {
    /// Release every claim of a project whose TTL ran out, or preview it (`claim sweep`).
    Sweep = "claim.sweep" as "sweep": Post "/v1/projects/{project}/sweep", auth None, write false;
    (ProjectPath, SweepReq) -> SweepReport;
    apply |c, path, r, _| { c.sweep(&path.project, r.as_of, r.dry_run) }
}

verb! {
    /// The seat's focus lease if it holds one now (`focus show`).
    ShowFocus = "focus.show" as "showFocus": Get "/v1/projects/{project}/focus/{seat}", auth None, write false;
    (SeatPath, NoBody) -> Option<FocusLease>;
    apply |c, path, _, _| { c.focus_show(&path.project, &path.seat) }
}

verb! {
    /// Start (or restart) a focus lease, capped at 240 minutes (`focus start`).
    StartFocus = "focus.start" as "startFocus": Post "/v1/projects/{project}/focus/{seat}/start", auth Seat, write true;
    (SeatPath, FocusStartReq) -> FocusOutcome;
    apply |c, path, r, caller| { c.focus_start(&path.project, &path.seat, r.minutes, caller.bearer.as_ref()) }
    const RATE: Rate = Rate::SeatInPath;
}

verb! {
    /// End the seat's focus lease now (`focus end`).
    EndFocus = "focus.end" as "endFocus": Post "/v1/projects/{project}/focus/{seat}/end", auth Seat, write true;
    (SeatPath, NoBody) -> FocusLease;
    apply |c, path, _, caller| { c.focus_end(&path.project, &path.seat, caller.bearer.as_ref()) }
    const RATE: Rate = Rate::SeatInPath;
}
