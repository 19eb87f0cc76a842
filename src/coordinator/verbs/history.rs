//! What happened, read back (issue 30): every change of master, and the audit log exported
//! page by page with a resume cursor.
//!
//! Reads of the audit log cost what they return (issue 39 point 6): over HTTP each answers
//! at most [`MAX_ROWS_PER_CALL`] rows whatever `limit` asks ([`rows_for`]), and each passes
//! the server's per-source and global bound on such reads first
//! ([`Gate::BoundedRead`]).

use crate::claim::verb_names;
use crate::coordinator::verb::{Caller, Gate, Origin, answers, query_input, verb};
use crate::coordinator::wire::*;

query_input!(HistoryQuery, ExportQuery);
answers!(HistoryResp, ExportResp);

/// Default page of `audit export` over HTTP.
const EXPORT_PAGE: usize = 1000;

/// Most rows one read of the audit log answers over HTTP (`master history`, `audit`, one
/// page of `audit export`), whatever its `limit` asks. An export pages on with its cursor;
/// `audit --limit N` beyond it shows the newest 1000 (read more with `audit export`).
/// In-process the engine's own bound applies
/// ([`MAX_PAGE`](crate::claim::engine::MAX_PAGE); the store file's user pays for it).
pub const MAX_ROWS_PER_CALL: usize = 1000;

/// The rows a read may answer: `asked` (or `default`), and over HTTP at most
/// [`MAX_ROWS_PER_CALL`].
pub fn rows_for(caller: &Caller, asked: Option<usize>, default: usize) -> usize {
    let asked = asked.unwrap_or(default);
    match caller.origin {
        Origin::Http => asked.min(MAX_ROWS_PER_CALL),
        Origin::Local => asked,
    }
}

verb! {
    /// Every change of master of a project, oldest first, with verb, actor and reason (`master history`); actor and reason only for a session token of the project or the admin token.
    MasterHistory = verb_names::MASTER_HISTORY, as "masterHistory": Get "/v1/projects/{project}/master/history", auth None, write false;
    (ProjectPath, HistoryQuery) -> HistoryResp;
    errors [];
    apply |c, path, q, caller| {
        // The same visibility as `master status` for anyone; who and why only for a reader
        // who proves a part in the project (issue 39 point 6).
        let in_full = caller.trusted() || c.reads_history_in_full(&path.project, caller.bearer.as_ref())?;
        let changes = c.master_history(&path.project, rows_for(caller, q.limit, 50))?;
        let changes = if in_full { changes } else { changes.into_iter().map(|m| m.withheld()).collect() };
        Ok(HistoryResp { changes, redacted: !in_full })
    }
    const GATE: Gate = Gate::BoundedRead;
}

verb! {
    /// One page of audit rows since a time, after a cursor, in order (`audit export`).
    AuditExport = verb_names::AUDIT_EXPORT, as "auditExport": Get "/v1/audit/export", auth Admin, write false;
    (NoPath, ExportQuery) -> ExportResp;
    errors [AuditCursorUnknown];
    apply |c, _, q, caller| {
        // The reader sees every refusal counted so far, as `audit` does.
        c.flush_refusals(true);
        let page = c.audit_export(q.project.as_deref(), q.since, q.after, rows_for(caller, q.limit, EXPORT_PAGE))?;
        Ok(ExportResp { rows: page.rows.into_iter().map(|(cursor, entry)| ExportRow { cursor, entry }).collect() })
    }
    const GATE: Gate = Gate::BoundedRead;
    fn admin_scope(_path: &NoPath, q: &ExportQuery) -> (String, Option<String>) {
        (String::new(), q.project.clone())
    }
}
