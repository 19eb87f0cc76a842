//! Identities, inboxes and the audit log.

use crate::coordinator::verb::{answers, json_input, query_input, verb};
use crate::coordinator::wire::*;

json_input!(IdentityReq);
query_input!(InboxQuery, AuditQuery);
answers!(InboxResp, IssuedKeyResp, IdentitiesResp, AuditResp, crate::claim::identities::Removed);

/// Where a refused admin token for an identity verb is audited.
fn scope(project: &str, identity: &str) -> (String, Option<String>) {
    (project.to_string(), Some(format!("identity:{identity}")))
}

verb! {
    /// Inbox events after a cursor, for a holder of one of the identity's session tokens (a long poll over HTTP).
    Inbox = "inbox.read" as "inbox": Get "/v1/projects/{project}/inbox/{identity}", auth Seat, write false;
    (IdentityPath, InboxQuery) -> InboxResp;
    apply |c, path, q, caller| {
        let limit = q.limit.unwrap_or(1000).clamp(1, 100_000);
        Ok(InboxResp { events: c.inbox(&path.project, &path.identity, q.after, limit, caller.bearer.as_ref())? })
    }
    const GATE: crate::coordinator::verb::Gate = crate::coordinator::verb::Gate::LongPoll;
    fn hold_open(q: &InboxQuery) -> std::time::Duration {
        std::time::Duration::from_millis(q.wait_ms)
    }
    fn worth_answering(r: &InboxResp) -> bool {
        !r.events.is_empty()
    }
    fn client_timeout(q: &InboxQuery) -> std::time::Duration {
        crate::coordinator::client::REQUEST_TIMEOUT + std::time::Duration::from_millis(q.wait_ms)
    }
}

verb! {
    /// Enroll an identity and issue its key, shown in this answer only (`identity add`).
    AddIdentity = "identity.add" as "addIdentity": Post "/v1/projects/{project}/identities", auth Admin, write true;
    (ProjectPath, IdentityReq) -> IssuedKeyResp;
    apply |c, path, r, caller| {
        let k = caller.as_admin(c, |c| c.enroll_identity(&path.project, &r.identity, caller.actor()))?;
        Ok(IssuedKeyResp::from(&k))
    }
    const CREATED: bool = true;
    fn names(r: &IdentityReq) -> Vec<(&'static str, &str)> {
        vec![("identity", &r.identity)]
    }
    fn admin_scope(path: &ProjectPath, r: &IdentityReq) -> (String, Option<String>) {
        scope(&path.project, &r.identity)
    }
}

verb! {
    /// The identities enrolled in a project: names and times, never keys (`identity list`).
    ListIdentities = "identity.list" as "listIdentities": Get "/v1/projects/{project}/identities", auth Admin, write false;
    (ProjectPath, NoBody) -> IdentitiesResp;
    apply |c, path, _, _| {
        Ok(IdentitiesResp { identities: c.identities(&path.project)?.iter().map(IdentityOut::from).collect() })
    }
    fn admin_scope(path: &ProjectPath, _q: &NoBody) -> (String, Option<String>) {
        (path.project.clone(), None)
    }
}

verb! {
    /// Issue a new key for an enrolled identity; the old key is refused at once (`identity rotate`).
    RotateIdentity = "identity.rotate" as "rotateIdentity": Post "/v1/projects/{project}/identities/{identity}/rotate", auth Admin, write true;
    (IdentityPath, NoBody) -> IssuedKeyResp;
    apply |c, path, _, caller| {
        let k = caller.as_admin(c, |c| c.rotate_identity(&path.project, &path.identity, caller.actor()))?;
        Ok(IssuedKeyResp::from(&k))
    }
    fn admin_scope(path: &IdentityPath, _b: &NoBody) -> (String, Option<String>) {
        scope(&path.project, &path.identity)
    }
}

verb! {
    /// Remove an identity: its key is refused and its sessions deregistered (`identity remove`).
    RemoveIdentity = "identity.remove" as "removeIdentity": Post "/v1/projects/{project}/identities/{identity}/remove", auth Admin, write true;
    (IdentityPath, NoBody) -> crate::claim::identities::Removed;
    apply |c, path, _, caller| { caller.as_admin(c, |c| c.remove_identity(&path.project, &path.identity, caller.actor())) }
    fn admin_scope(path: &IdentityPath, _b: &NoBody) -> (String, Option<String>) {
        scope(&path.project, &path.identity)
    }
}

verb! {
    /// The newest audit rows, oldest first (`audit`).
    Audit = "audit.read" as "audit": Get "/v1/audit", auth Admin, write false;
    (NoPath, AuditQuery) -> AuditResp;
    apply |c, _, q, caller| {
        // The reader sees every refusal counted so far (issue 28 point 4: summary rows).
        c.flush_refusals(true);
        // Over HTTP at most MAX_ROWS_PER_CALL rows, and a bounded read (issue 39 point 6).
        let limit = super::history::rows_for(caller, q.limit, 50).clamp(1, 1_000_000);
        Ok(AuditResp { entries: c.audit_log(q.project.as_deref(), limit)? })
    }
    const GATE: crate::coordinator::verb::Gate = crate::coordinator::verb::Gate::BoundedRead;
    fn admin_scope(_path: &NoPath, q: &AuditQuery) -> (String, Option<String>) {
        (String::new(), q.project.clone())
    }
}
