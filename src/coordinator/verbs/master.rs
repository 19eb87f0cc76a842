//! Controller sessions, the master slot and operators (seed 000).

use std::time::Duration;

use crate::claim::engine::{Credentials, MasterRequest};
use crate::claim::masters::{ControllerKey, MasterOutcome};
use crate::claim::secret::Secret;
use crate::coordinator::verb::{Origin, Rate, answers, json_input, query_input, verb};
use crate::coordinator::wire::*;

json_input!(RegisterReq, HandoffReq, ClaimReq, OperatorReq);
query_input!(TargetQuery, WatchQuery);
answers!(RegisterResp, ControllerOut, DeregisterResp, StatusResp, MasterOutcome, OperatorResp, WatchResp);

verb! {
    /// Register a controller (`session register`), proven by the identity's key or the row's current token.
    Register = "session.register" as "register": Post "/v1/projects/{project}/sessions", auth None, write true;
    (ProjectPath, RegisterReq) -> RegisterResp;
    apply |c, path, r, _| {
        let key = ControllerKey { identity: r.identity, surface: r.surface, machine_id: r.machine_id };
        let (token, identity_key) = (r.previous_token.map(Secret::new), r.identity_key.map(Secret::new));
        let credentials = Credentials { identity_key: identity_key.as_ref(), token: token.as_ref() };
        let reg = c.register(&path.project, &key, credentials)?;
        Ok(RegisterResp { controller: (&reg.controller).into(), token: reg.token.expose().to_string(), epoch: reg.epoch })
    }
    fn names(r: &RegisterReq) -> Vec<(&'static str, &str)> {
        vec![("identity", &r.identity), ("surface", &r.surface), ("machine id", &r.machine_id)]
    }
}

verb! {
    /// Renew a session's heartbeat (`session heartbeat`).
    Heartbeat = "session.heartbeat" as "heartbeat": Post "/v1/projects/{project}/sessions/{sid}/heartbeat", auth Session, write true;
    (SessionPath, NoBody) -> ControllerOut;
    apply |c, path, _, caller| {
        Ok(ControllerOut::from(&c.heartbeat(&path.project, &path.sid, caller.session_token()?)?))
    }
    const RATE: Rate = Rate::Session;
}

verb! {
    /// Remove a session's row (`session deregister`); a master that leaves empties the slot.
    Deregister = "session.deregister" as "deregister": Post "/v1/projects/{project}/sessions/{sid}/deregister", auth Session, write true;
    (SessionPath, NoBody) -> DeregisterResp;
    apply |c, path, _, caller| {
        let (was_master, epoch) = c.deregister(&path.project, &path.sid, caller.session_token()?)?;
        Ok(DeregisterResp { was_master, epoch })
    }
}

verb! {
    /// The master, its epoch, and every controller with its freshness (`master status`).
    Status = "master.status" as "status": Get "/v1/projects/{project}/master", auth None, write false;
    (ProjectPath, NoBody) -> StatusResp;
    apply |c, path, _, _| { Ok(StatusResp::from(&c.status(&path.project)?)) }
}

verb! {
    /// Resolves a handoff or claim target without changing anything.
    Target = "master.target" as "target": Get "/v1/projects/{project}/master/target", auth None, write false;
    (ProjectPath, TargetQuery) -> ControllerOut;
    apply |c, path, q, _| { Ok(ControllerOut::from(&c.preview_target(&path.project, &q.to, q.to_session.as_deref())?)) }
    fn names(q: &TargetQuery) -> Vec<(&'static str, &str)> {
        vec![("identity", &q.to), ("session id", q.to_session.as_deref().unwrap_or("-"))]
    }
}

verb! {
    /// Cooperative transfer: the master hands mastership to a named identity (`master handoff`).
    Handoff = "master.handoff" as "handoff": Post "/v1/projects/{project}/master/handoff", auth Session, write true;
    (ProjectPath, HandoffReq) -> MasterOutcome;
    apply |c, path, r, caller| {
        let token = caller.session_token()?;
        let c = c.with_reason(r.reason)?.with_dry_run(r.dry_run);
        let req = MasterRequest { project: path.project, to_identity: r.to, to_session: r.to_session, expect_epoch: r.expect_epoch };
        c.handoff(&req, &r.session_id, token)
    }
    fn names(r: &HandoffReq) -> Vec<(&'static str, &str)> {
        vec![("identity", &r.to), ("session id", &r.session_id), ("session id", r.to_session.as_deref().unwrap_or("-"))]
    }
}

verb! {
    /// Operator-authorized preempt of a named target (`master claim`).
    MasterClaim = "master.claim" as "claim": Post "/v1/projects/{project}/master/claim", auth Operator, write true;
    (ProjectPath, ClaimReq) -> MasterOutcome;
    apply |c, path, r, caller| {
        let c = c.with_reason(r.reason)?.with_dry_run(r.dry_run);
        let req = MasterRequest { project: path.project, to_identity: r.to, to_session: r.to_session, expect_epoch: r.expect_epoch };
        let password = Secret::new(r.password);
        match caller.origin {
            Origin::Local => c.claim(&req, &r.operator, &password),
            // The server holds a wrong password's answer back itself, on no thread.
            Origin::Http => c.claim_unheld(&req, &r.operator, &password),
        }
    }
    const GATE: crate::coordinator::verb::Gate = crate::coordinator::verb::Gate::OperatorVerification;
    fn names(r: &ClaimReq) -> Vec<(&'static str, &str)> {
        vec![("identity", &r.to), ("operator id", &r.operator), ("session id", r.to_session.as_deref().unwrap_or("-"))]
    }
    fn operator(r: &ClaimReq) -> Option<String> {
        Some(r.operator.clone())
    }
    fn client_timeout(_r: &ClaimReq) -> Duration {
        // A slowed-down operator waits up to 60 s server-side before verification.
        crate::coordinator::client::REQUEST_TIMEOUT + Duration::from_secs(60)
    }
}

verb! {
    /// Add an operator (`operator add`); an existing one is never overwritten.
    AddOperator = "operator.add" as "addOperator": Post "/v1/operators", auth Admin, write true;
    (NoPath, OperatorReq) -> OperatorResp;
    apply |c, _, r, caller| {
        c.add_operator_as(&r.operator_id, &Secret::new(r.password), caller.actor())?;
        Ok(OperatorResp { operator_id: r.operator_id, created: true })
    }
    fn names(r: &OperatorReq) -> Vec<(&'static str, &str)> {
        vec![("operator id", &r.operator_id)]
    }
    fn admin_scope(_path: &NoPath, r: &OperatorReq) -> (String, Option<String>) {
        (String::new(), Some(format!("operator:{}", r.operator_id)))
    }
}

verb! {
    /// The master status once it differs from the version the caller saw, pushed by the server (a long poll; `master status --watch`).
    Watch = "master.watch" as "watch": Get "/v1/projects/{project}/master/watch", auth None, write false;
    (ProjectPath, WatchQuery) -> WatchResp;
    // In-process (the embedded store) there is nobody to wait for: the state now.
    apply |c, path, _, _| { Ok(WatchResp::of(StatusResp::from(&c.status(&path.project)?))) }
    const GATE: crate::coordinator::verb::Gate = crate::coordinator::verb::Gate::Pushed;
    fn hold_open(q: &WatchQuery) -> Duration {
        Duration::from_millis(q.wait_ms)
    }
    fn client_timeout(q: &WatchQuery) -> Duration {
        crate::coordinator::client::REQUEST_TIMEOUT + Duration::from_millis(q.wait_ms)
    }
}
