//! `writerctl audit`: the coordinator's audit log (every verb, who, what, result, epoch), and
//! `audit prune` for the embedded store (a server prunes by itself).

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::json;
use writerctl::claim::retention::Retention;

use super::coord::{CoordArgs, DEFAULT_FRESHNESS_SECONDS, Target, open_sqlite, rfc3339};
use super::output::Output;

/// Coordinator: show the audit log (every verb, who, what, result, epoch).
///
/// Shows the coordinator's audit log, oldest first: every verb with who ran it, what it
/// targeted, its result (ok or the error code) and the master epoch. Never a secret.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  writerctl audit --project web --limit 20\n  writerctl audit prune --older-than-days 90"
)]
pub struct AuditArgs {
    /// `audit prune`; without it, show the log.
    #[command(subcommand)]
    pub cmd: Option<AuditCmd>,
    #[command(flatten)]
    pub coord: CoordArgs,
    /// Only this project [default: every project, and operator administration].
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
    /// The newest N rows.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub limit: u64,
}

/// `audit`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum AuditCmd {
    /// Delete audit rows and claim history steps (but each task's newest) older than N days
    /// from the embedded store, and operator-attempt rows idle for a day; optionally trim
    /// inboxes too. A server prunes by itself
    /// (`coordinator serve --audit-retention-days`), so an http(s) --coordinator is refused.
    /// Run it from cron (daily is plenty); the prune leaves one `retention.prune` audit row.
    #[command(
        after_help = "Examples:\n  writerctl audit prune --older-than-days 90\n  writerctl audit prune --older-than-days 90 --inbox-older-than-days 7 --inbox-max-events 1000 --json"
    )]
    Prune(PruneArgs),
}

/// `audit prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    /// Delete audit rows and claim history steps older than this many days (at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub older_than_days: u32,
    /// Also delete inbox events older than this many days; a reader whose cursor falls behind
    /// gets inbox_cursor_trimmed.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub inbox_older_than_days: Option<u32>,
    /// Also keep at most the newest N events per inbox.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub inbox_max_events: Option<u64>,
}

/// Runs `audit prune` on the embedded store.
fn prune(a: PruneArgs, out: Output) -> Result<()> {
    let Target::Sqlite(path) = a.coord.target()? else {
        return Err(super::usage(
            "audit prune works on the embedded store; a server prunes by itself",
            "start the server with `writerctl coordinator serve --audit-retention-days N` (and \
             --inbox-retention-days, --inbox-max-events)",
        ));
    };
    let coord = open_sqlite(&path, a.coord.freshness_seconds.unwrap_or(DEFAULT_FRESHNESS_SECONDS))?;
    let policy = Retention {
        audit_days: Some(a.older_than_days),
        inbox_days: a.inbox_older_than_days,
        inbox_max_events: a.inbox_max_events,
    };
    let before = policy.cutoffs(coord.now()).audit_before.unwrap_or_default();
    let p = coord.prune(&policy, "local")?;
    if out.json {
        out.json(&json!({"pruned": p.audit_rows, "older_than_days": a.older_than_days, "before": rfc3339(before),
                         "history_steps_pruned": p.history_steps, "inbox_entries_pruned": p.inbox_entries, "attempt_rows_pruned": p.attempt_rows}))?;
        return Ok(());
    }
    Ok(out.line(&format!(
        "pruned {} audit rows and {} claim history steps older than {} ({} days), {} inbox events, {} idle \
         operator-attempt rows",
        p.audit_rows,
        p.history_steps,
        rfc3339(before),
        a.older_than_days,
        p.inbox_entries,
        p.attempt_rows
    ))?)
}

/// Runs `audit`.
pub fn run(a: AuditArgs, out: Output) -> Result<()> {
    if let Some(AuditCmd::Prune(p)) = a.cmd {
        return prune(p, out);
    }
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
