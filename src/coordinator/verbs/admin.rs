//! Identities, inboxes and the audit log.

use crate::claim::verb_names;
use crate::coordinator::verb::{answers, json_input, query_input, verb};
use crate::coordinator::wire::*;

json_input!(IdentityReq);
query_input!(InboxQuery, AuditQuery);
answers!(InboxResp, IssuedKeyResp, IdentitiesResp, AuditResp, crate::claim::identities::Removed);

verb! {
    /// Inbox events after a cursor, for a holder of one of the identity's session tokens (a long poll over HTTP).
    Inbox = verb_names::INBOX_READ, as "inbox": Get "/v1/projects/{project}/inbox/{identity}", auth Seat, write false;
    (IdentityPath, InboxQuery) -> InboxResp;
    errors [InboxCursorTrimmed];
    apply |c, path, q, caller| {
        let limit = q.limit.unwrap_or(1000).clamp(1, 100_000);
        Ok(InboxResp { events: c.inbox(&path.project, &path.identity, q.after, limit, caller.bearer.as_ref())? })
    }
    const GATE: crate::coordinator::verb::Gate = crate::coordinator::verb::Gate::LongPoll;
    fn hold_open(q: &InboxQuery) -> std::time::Duration {
        std::time::Duration::from_millis(q.wait_ms)
    }
    fn worth_answering(_q: &InboxQuery, r: &InboxResp) -> bool {
        !r.events.is_empty()
    }
    fn client_timeout(q: &InboxQuery) -> std::time::Duration {
        crate::coordinator::client::REQUEST_TIMEOUT + std::time::Duration::from_millis(q.wait_ms)
    }
}

verb! {
    /// Enroll an identity and issue its key, shown in this answer only (`identity add`).
    AddIdentity = verb_names::IDENTITY_ADD, as "addIdentity": Post "/v1/projects/{project}/identities", auth Admin, write true;
    (ProjectPath, IdentityReq) -> IssuedKeyResp;
    errors [NameConfusable, AnswerNotKept, IdentityExists];
    apply |c, path, r, _| {
        let k = c.enroll_identity(&path.project, &r.identity)?;
        Ok(IssuedKeyResp::from(&k))
    }
    const CREATED: bool = true;
    fn names(r: &IdentityReq) -> Vec<(&'static str, &str)> {
        vec![("identity", &r.identity)]
    }
    fn admin_scope(path: &ProjectPath, r: &IdentityReq) -> (String, Option<String>) {
        (path.project.clone(), Some(format!("identity:{}", r.identity)))
    }
}

verb! {
    /// The identities enrolled in a project: names and times, never keys (`identity list`).
    ListIdentities = verb_names::IDENTITY_LIST, as "listIdentities": Get "/v1/projects/{project}/identities", auth Admin, write false;
    (ProjectPath, NoBody) -> IdentitiesResp;
    errors [];
    apply |c, path, _, _| {
        Ok(IdentitiesResp { identities: c.identities(&path.project)?.iter().map(IdentityOut::from).collect() })
    }
}

verb! {
    /// Issue a new key for an enrolled identity; the old key is refused at once (`identity rotate`).
    RotateIdentity = verb_names::IDENTITY_ROTATE, as "rotateIdentity": Post "/v1/projects/{project}/identities/{identity}/rotate", auth Admin, write true;
    (IdentityPath, NoBody) -> IssuedKeyResp;
    errors [NotFound, AnswerNotKept];
    apply |c, path, _, _| {
        let k = c.rotate_identity(&path.project, &path.identity)?;
        Ok(IssuedKeyResp::from(&k))
    }
}

verb! {
    /// Remove an identity: its key is refused and its sessions deregistered (`identity remove`).
    RemoveIdentity = verb_names::IDENTITY_REMOVE, as "removeIdentity": Post "/v1/projects/{project}/identities/{identity}/remove", auth Admin, write true;
    (IdentityPath, NoBody) -> crate::claim::identities::Removed;
    errors [NotFound];
    apply |c, path, _, _| { c.remove_identity(&path.project, &path.identity) }
}

verb! {
    /// The newest audit rows, oldest first (`audit`).
    Audit = verb_names::AUDIT_READ, as "audit": Get "/v1/audit", auth Admin, write false;
    (NoPath, AuditQuery) -> AuditResp;
    errors [];
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
