//! `writerctl audit`: the coordinator's audit log (every verb, who, what, result, epoch).

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::coord::{CoordArgs, rfc3339};
use super::output::Output;

/// Show the coordinator's audit log, oldest first: every verb with who ran it, what it
/// targeted, its result (ok or the error code) and the master epoch. Never a secret.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  writerctl audit --project web --limit 20")]
pub struct AuditArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    /// Only this project [default: every project, and operator administration].
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// The newest N rows.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub limit: u64,
}

/// Runs `audit`.
pub fn run(a: AuditArgs, out: Output) -> Result<()> {
    let rows = a.coord.open()?.audit_log(a.project.as_deref(), usize::try_from(a.limit).unwrap_or(usize::MAX))?;
    if out.json {
        let list: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({"at": rfc3339(r.at), "project": r.project, "verb": r.verb, "actor": r.actor,
                       "target": r.target, "result": r.result, "epoch": r.epoch, "detail": r.detail})
            })
            .collect();
        out.json(&json!({"entries": list}))?;
        return Ok(());
    }
    let mut table = super::output::table(&["at", "project", "verb", "actor", "target", "result", "epoch"]);
    for r in &rows {
        table.add_row([
            rfc3339(r.at),
            r.project.clone(),
            r.verb.clone(),
            r.actor.clone(),
            r.target.clone().unwrap_or_default(),
            r.result.clone(),
            r.epoch.map_or(String::new(), |e| e.to_string()),
        ]);
    }
    Ok(out.line(&table.to_string())?)
}
