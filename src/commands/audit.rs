//! `writerctl audit`: the coordinator's audit log (every verb, who, what, result, epoch,
//! reason), `audit export` (every row since a time, streamed page by page with a resume
//! cursor), and `audit prune` for the embedded store (a server prunes by itself).

use std::io::Write;

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use writerctl::claim::model::{AuditEntry, Millis};
use writerctl::claim::retention::Retention;
use writerctl::coordinator::verbs::admin::Audit;
use writerctl::coordinator::verbs::history::AuditExport;
use writerctl::coordinator::wire::{AuditQuery, ExportQuery, NoPath};

use super::coord::{CoordArgs, DEFAULT_FRESHNESS_SECONDS, Target, open_sqlite, rfc3339};
use super::output::Output;

/// Coordinator: show the audit log (every verb, who, what, result, epoch).
///
/// Shows the coordinator's audit log, oldest first: every verb with who ran it, what it
/// targeted, its result (ok or the error code) and the master epoch. Never a secret.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// `audit prune`; without it, show the log.
    #[command(subcommand)]
    pub cmd: Option<AuditCmd>,
    #[command(flatten)]
    pub scope: AuditScopeArgs,
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
    Prune(PruneArgs),
    /// Every audit row written since a time, oldest first, as JSON lines or CSV, streamed
    /// page by page (the log is never read whole), with a cursor to resume from.
    ///
    /// Each row carries its cursor (the `cursor` key in JSON lines, the first CSV column;
    /// CSV has a header row and RFC 4180 quoting). At the end, stderr says how to resume:
    /// `writerctl: next --cursor C`; run the same command with that --cursor to get only
    /// the rows written since. A cursor the log no longer holds (removed by retention) or
    /// never handed out is refused with audit_cursor_unknown, naming the oldest cursor
    /// held: rows may have been lost, so nothing is skipped silently. Over HTTP it needs
    /// the admin token, like `audit`.
    Export(ExportArgs),
}

/// Which audit rows `audit` and `audit export` read: the coordinator's, of every project or
/// of one.
#[derive(Debug, Args)]
pub struct AuditScopeArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    /// Only this project [default: every project, and operator administration].
    #[arg(long, value_name = "P")]
    pub project: Option<String>,
}

/// `audit export`'s output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated values with a header row (RFC 4180 quoting).
    Csv,
}

/// `audit export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub scope: AuditScopeArgs,
    /// Only rows written at or after this time (RFC 3339).
    #[arg(long, value_name = "RFC3339", value_parser = super::coord::parse_time)]
    pub since: Millis,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// Resume after this row (the cursor the previous export ended with).
    #[arg(long, value_name = "C")]
    pub cursor: Option<u64>,
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

/// Rows read per request: one page in memory at a time.
const EXPORT_PAGE: usize = 1000;

/// The CSV header of `audit export`.
const CSV_COLUMNS: [&str; 10] =
    ["cursor", "at", "project", "verb", "actor", "target", "result", "epoch", "reason", "detail"];

/// One audit row as `audit --json` and `audit export` print it.
fn row_json(r: &AuditEntry) -> Value {
    json!({"at": rfc3339(r.at), "project": r.project, "verb": r.verb, "actor": r.actor,
           "target": r.target, "result": r.result, "epoch": r.epoch, "reason": r.reason, "detail": r.detail})
}

/// One audit row's fields as the `audit` table and the CSV export show them: at, project,
/// verb, actor, target, result, epoch, reason.
fn row_fields(r: &AuditEntry) -> [String; 8] {
    [
        rfc3339(r.at),
        r.project.clone(),
        r.verb.clone(),
        r.actor.clone(),
        r.target.clone().unwrap_or_default(),
        r.result.clone(),
        r.epoch.map_or(String::new(), |e| e.to_string()),
        r.reason.clone().unwrap_or_default(),
    ]
}

/// One CSV field, quoted per RFC 4180 when it holds a comma, a quote or a line break (and
/// when it starts or ends with a space, which some readers trim): the field in double
/// quotes, each quote doubled. Anything else is written as is.
fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    let needs = s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ');
    if needs {
        std::borrow::Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// One CSV record and its line break (CRLF, as RFC 4180 says).
fn csv_record<'a>(fields: impl IntoIterator<Item = &'a str>) -> String {
    let mut line = fields.into_iter().map(csv_field).collect::<Vec<_>>().join(",");
    line.push_str("\r\n");
    line
}

/// Writes one exported row in `format`.
fn write_row(w: &mut impl Write, format: ExportFormat, cursor: u64, r: &AuditEntry) -> std::io::Result<()> {
    match format {
        ExportFormat::Jsonl => {
            let mut doc = row_json(r);
            doc["cursor"] = json!(cursor);
            serde_json::to_writer(&mut *w, &doc)?;
            writeln!(w)
        }
        ExportFormat::Csv => {
            let (cursor, detail) = (cursor.to_string(), r.detail.to_string());
            let fields =
                std::iter::once(cursor).chain(row_fields(r)).chain(std::iter::once(detail)).collect::<Vec<_>>();
            w.write_all(csv_record(fields.iter().map(String::as_str)).as_bytes())
        }
    }
}

/// Runs `audit export`: page after page until a short one, each written and flushed before
/// the next is read; then the resume cursor on stderr.
fn export(a: ExportArgs) -> Result<()> {
    let c = a.scope.coord.open()?;
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    if a.format == ExportFormat::Csv {
        stdout.write_all(csv_record(CSV_COLUMNS).as_bytes())?;
    }
    let mut cursor = a.cursor;
    loop {
        let query =
            ExportQuery { project: a.scope.project.clone(), since: a.since, after: cursor, limit: Some(EXPORT_PAGE) };
        let page = c.call::<AuditExport>(NoPath {}, query, None)?;
        for r in &page.rows {
            write_row(&mut stdout, a.format, r.cursor, &r.entry)?;
        }
        stdout.flush()?;
        cursor = page.rows.last().map(|r| r.cursor).or(cursor);
        if page.rows.len() < EXPORT_PAGE {
            break;
        }
    }
    // The resume hint goes to stderr in every mode: stdout is the export itself.
    let mut err = std::io::stderr().lock();
    match cursor {
        Some(c) => writeln!(err, "writerctl: next --cursor {c}")?,
        None => writeln!(err, "writerctl: no audit rows since {}; next: the same command again", rfc3339(a.since))?,
    }
    Ok(())
}

/// Runs `audit`.
pub fn run(a: AuditArgs, out: Output) -> Result<()> {
    match a.cmd {
        Some(AuditCmd::Prune(p)) => return prune(p, out),
        Some(AuditCmd::Export(e)) => return export(e),
        None => {}
    }
    let q =
        AuditQuery { limit: Some(usize::try_from(a.limit).unwrap_or(usize::MAX)), project: a.scope.project.clone() };
    let rows = a.scope.coord.open()?.call::<Audit>(NoPath {}, q, None)?.entries;
    if out.json {
        let list: Vec<_> = rows.iter().map(row_json).collect();
        out.json(&json!({"entries": list}))?;
        return Ok(());
    }
    let mut table = super::output::table(&["at", "project", "verb", "actor", "target", "result", "epoch", "reason"]);
    for r in &rows {
        table.add_row(row_fields(r));
    }
    Ok(out.line(&table.to_string())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_they_must_be() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field(""), "");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("cr\r"), "\"cr\r\"");
        assert_eq!(csv_field(" padded"), "\" padded\"");
        assert_eq!(csv_record(["1", "a,b", "{\"k\":\"v\"}"]), "1,\"a,b\",\"{\"\"k\"\":\"\"v\"\"}\"\r\n");
    }
}
