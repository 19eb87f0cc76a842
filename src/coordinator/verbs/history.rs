//! What happened, read back (issue 30): every change of master, and the audit log exported
//! page by page with a resume cursor.

use crate::coordinator::verb::{answers, query_input, verb};
use crate::coordinator::wire::*;

query_input!(HistoryQuery, ExportQuery);
answers!(HistoryResp, ExportResp);

/// Default page of `audit export` over HTTP.
const EXPORT_PAGE: usize = 1000;

verb! {
    /// Every change of master of a project, oldest first, with verb, actor and reason (`master history`).
    MasterHistory = "master.history" as "masterHistory": Get "/v1/projects/{project}/master/history", auth None, write false;
    (ProjectPath, HistoryQuery) -> HistoryResp;
    apply |c, path, q, _| { Ok(HistoryResp { changes: c.master_history(&path.project, q.limit.unwrap_or(50))? }) }
}

verb! {
    /// One page of audit rows since a time, after a cursor, in order (`audit export`).
    AuditExport = "audit.export" as "auditExport": Get "/v1/audit/export", auth Admin, write false;
    (NoPath, ExportQuery) -> ExportResp;
    apply |c, _, q, _| {
        // The reader sees every refusal counted so far, as `audit` does.
        c.flush_refusals(true);
        let page = c.audit_export(q.project.as_deref(), q.since, q.after, q.limit.unwrap_or(EXPORT_PAGE))?;
        Ok(ExportResp { rows: page.rows.into_iter().map(|(cursor, entry)| ExportRow { cursor, entry }).collect() })
    }
    fn admin_scope(_path: &NoPath, q: &ExportQuery) -> (String, Option<String>) {
        (String::new(), q.project.clone())
    }
}
