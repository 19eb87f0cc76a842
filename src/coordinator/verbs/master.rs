//! Controller sessions, the master slot and operators (seed 000).

use crate::claim::verb_names;
use std::time::Duration;

use crate::claim::masters::MasterOutcome;
use crate::coordinator::verb::{Gate, Origin, Rate, answers, json_input, query_input, verb};
use crate::coordinator::wire::*;

json_input!(RegisterRequest, HandoffRequest, MasterClaimRequest, OperatorRequest);
query_input!(TargetQuery, WatchQuery);
answers!(RegisterResp, ControllerOut, DeregisterResp, StatusResp, MasterOutcome, OperatorResp, WatchResp);

verb! {
    /// Register a controller (`session register`), proven by the identity's key or the row's current token.
    Register = verb_names::SESSION_REGISTER, as "register": Post "/v1/projects/{project}/sessions", auth None, write true;
    (ProjectPath, RegisterRequest) -> RegisterResp;
    errors [Unauthorized, NameConfusable, AnswerNotKept];
    apply |c, path, r, _| {
        let reg = c.register(&path.project, &r)?;
        Ok(RegisterResp { controller: (&reg.controller).into(), token: reg.token.expose().to_string(), epoch: reg.epoch })
    }
    fn names(r: &RegisterRequest) -> Vec<(&'static str, &str)> {
        vec![("identity", &r.identity), ("surface", &r.surface), ("machine id", &r.machine_id)]
    }
}

verb! {
    /// Renew a session's heartbeat (`session heartbeat`).
    Heartbeat = verb_names::SESSION_HEARTBEAT, as "heartbeat": Post "/v1/projects/{project}/sessions/{sid}/heartbeat", auth Session, write true;
    (SessionPath, NoBody) -> ControllerOut;
    errors [];
    apply |c, path, _, caller| {
        Ok(ControllerOut::from(&c.heartbeat(&path.project, &path.sid, caller.session_token()?)?))
    }
    const RATE: Rate = Rate::Session;
}

verb! {
    /// Remove a session's row (`session deregister`); a master that leaves empties the slot.
    Deregister = verb_names::SESSION_DEREGISTER, as "deregister": Post "/v1/projects/{project}/sessions/{sid}/deregister", auth Session, write true;
    (SessionPath, NoBody) -> DeregisterResp;
    errors [];
    apply |c, path, _, caller| {
        let (was_master, epoch) = c.deregister(&path.project, &path.sid, caller.session_token()?)?;
        Ok(DeregisterResp { was_master, epoch })
    }
}

verb! {
    /// The master, its epoch, and every controller with its freshness (`master status`).
    Status = verb_names::MASTER_STATUS, as "status": Get "/v1/projects/{project}/master", auth None, write false;
    (ProjectPath, NoBody) -> StatusResp;
    errors [];
    apply |c, path, _, _| { Ok(StatusResp::from(&c.status(&path.project)?)) }
}

verb! {
    /// Resolves a handoff or claim target without changing anything.
    Target = verb_names::MASTER_TARGET, as "target": Get "/v1/projects/{project}/master/target", auth None, write false;
    (ProjectPath, TargetQuery) -> ControllerOut;
    errors [TargetNotRegistered, TargetStale, TargetAmbiguous];
    apply |c, path, q, _| { Ok(ControllerOut::from(&c.preview_target(&path.project, &q.to, q.to_session.as_deref())?)) }
    fn names(q: &TargetQuery) -> Vec<(&'static str, &str)> {
        vec![("identity", &q.to), ("session id", q.to_session.as_deref().unwrap_or("-"))]
    }
}

verb! {
    /// Cooperative transfer: the master hands mastership to a named identity (`master handoff`).
    Handoff = verb_names::MASTER_HANDOFF, as "handoff": Post "/v1/projects/{project}/master/handoff", auth Session, write true;
    (ProjectPath, HandoffRequest) -> MasterOutcome;
    errors [TargetNotRegistered, TargetStale, TargetAmbiguous, StaleMaster, NotMaster];
    apply |c, path, r, caller| { c.handoff(&path.project, &r, caller.session_token()?) }
    fn names(r: &HandoffRequest) -> Vec<(&'static str, &str)> {
        vec![("identity", &r.to), ("session id", &r.session_id), ("session id", r.to_session.as_deref().unwrap_or("-"))]
    }
}

verb! {
    /// Operator-authorized preempt of a named target (`master claim`).
    MasterClaim = verb_names::MASTER_CLAIM, as "claim": Post "/v1/projects/{project}/master/claim", auth Operator, write true;
    (ProjectPath, MasterClaimRequest) -> MasterOutcome;
    errors [TargetNotRegistered, TargetStale, TargetAmbiguous, StaleMaster, RateLimited, InvalidOperatorCredentials];
    apply |c, path, r, caller| {
        match caller.origin {
            Origin::Local => c.master_claim(&path.project, &r),
            // The server holds a wrong password's answer back itself, on no thread.
            Origin::Http => c.master_claim_unheld(&path.project, &r),
        }
    }
    const GATE: Gate = Gate::OperatorVerification;
    fn names(r: &MasterClaimRequest) -> Vec<(&'static str, &str)> {
        vec![("identity", &r.to), ("operator id", &r.operator), ("session id", r.to_session.as_deref().unwrap_or("-"))]
    }
    fn operator(r: &MasterClaimRequest) -> Option<String> {
        Some(r.operator.clone())
    }
    fn client_timeout(_r: &MasterClaimRequest) -> Duration {
        // A slowed-down operator waits up to 60 s server-side before verification.
        crate::coordinator::client::REQUEST_TIMEOUT + Duration::from_secs(60)
    }
}

verb! {
    /// Add an operator (`operator add`); an existing one is never overwritten.
    AddOperator = verb_names::OPERATOR_ADD, as "addOperator": Post "/v1/operators", auth Admin, write true;
    (NoPath, OperatorRequest) -> OperatorResp;
    errors [OperatorExists];
    apply |c, _, r, _| {
        c.add_operator(&r)?;
        Ok(OperatorResp { operator_id: r.operator_id, created: true })
    }
    fn names(r: &OperatorRequest) -> Vec<(&'static str, &str)> {
        vec![("operator id", &r.operator_id)]
    }
    fn admin_scope(_path: &NoPath, r: &OperatorRequest) -> (String, Option<String>) {
        (String::new(), Some(format!("operator:{}", r.operator_id)))
    }
}

verb! {
    /// The master status once it differs from the version the caller saw, pushed by the server (a long poll; `master status --watch`).
    Watch = verb_names::MASTER_WATCH, as "watch": Get "/v1/projects/{project}/master/watch", auth None, write false;
    (ProjectPath, WatchQuery) -> WatchResp;
    errors [];
    // In-process (the embedded store) there is nobody to wait for: the state now.
    apply |c, path, _, _| { Ok(WatchResp::of(StatusResp::from(&c.status(&path.project)?))) }
    const GATE: Gate = Gate::Pushed;
    fn hold_open(q: &WatchQuery) -> Duration {
        Duration::from_millis(q.wait_ms)
    }
    fn seen_version(q: &WatchQuery) -> Option<&str> {
        q.after.as_deref()
    }
    fn worth_answering(q: &WatchQuery, w: &WatchResp) -> bool {
        q.after.as_deref() != Some(w.version.as_str())
    }
    fn client_timeout(q: &WatchQuery) -> Duration {
        crate::coordinator::client::REQUEST_TIMEOUT + Duration::from_millis(q.wait_ms)
    }
}
