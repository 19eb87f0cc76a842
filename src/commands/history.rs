//! `writerctl history`: the lock-file handoffs of a runtime directory, with reasons; and
//! the one place the lock-file commands record a history line ([`note`]).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::lockfile::LockError;
use writerctl::lockfile::acquire::check_runtime_dir;
use writerctl::lockfile::history::{HistoryEvent, Query, read, record};
use writerctl::lockfile::paths::LOCK_SUBDIR;
use writerctl::lockfile::sys::Dir;

use super::args::SessionArgs;
use super::output::{Output, clean, log_event};
use super::session::runtime_dir;

/// List the lock-file handoffs of a runtime directory (acquire, reclaim, seal, takeover,
/// release, recover, give back), with epoch, host, pid, pod and reason.
///
/// Every lock-file command that changes a lock appends one line to a history kept beside
/// the locks (R/tmp/writerctl-history/, a sibling of the lock directory: invisible to qwen-code
/// and to `status`) after the step has happened, with the --reason it was given. The history is
/// advisory: nothing ever reads it to decide anything, a failure to write it is only a
/// warning, and a crash can lose the last line. It is bounded: at 1 MiB the file is rotated
/// to history.jsonl.1, and one older generation is kept (about 2 MiB in all).
///
/// Events are listed oldest first, in the order they were written; --limit keeps the newest
/// N after the other filters (like `audit`). A torn last line (a crash mid-append) or a
/// line that is not an event is skipped and counted (skipped_lines), never an error. A
/// history directory or file others could write is skipped with a warning, never followed.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// --session keeps one session's events; --lock reads the history beside that lock's
    /// directory (a lock kept outside R) instead of the one beside R/tmp/session-writer-locks.
    #[command(flatten)]
    pub session: SessionArgs,

    /// Only events at or after this time (RFC 3339, e.g. 2026-12-01T09:00:00Z).
    #[arg(long, value_name = "RFC3339", value_parser = super::coord::parse_time)]
    pub since: Option<i64>,

    /// The newest N events (after --session and --since).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub limit: u64,
}

#[derive(Serialize)]
struct HistoryJson<'a> {
    events: &'a [HistoryEvent],
    /// Lines that were not an event (a torn last line, garbage).
    skipped_lines: usize,
    /// Generations or directories not read, and why.
    warnings: &'a [String],
}

/// Records `event` in the history of the lock directory `dir`, after the step it describes
/// happened. A failure is a warning on stderr (one structured line, also with --json), never
/// a failure of the command.
pub fn note(dir: &Dir, event: &HistoryEvent) {
    if let Err(e) = record(dir, event) {
        log_event(
            "history_not_recorded",
            &[("session", event.session_id.clone()), ("event", event.event.as_str().into()), ("reason", e.to_string())],
        );
    }
}

/// Runs `history`.
pub fn run(args: HistoryArgs, out: Output) -> Result<()> {
    // The history lives beside the locks: in the standard lock directory, or beside --lock.
    if args.session.transcript_key.is_some() || args.session.project_root.is_some() {
        return Err(super::usage(
            "history lists lock events; --transcript-key and --project-root name a transcript",
            "drop them (--session ID filters by session)",
        ));
    }
    let lock_dir: PathBuf = match &args.session.lock {
        Some(lock) => {
            let lock = std::path::absolute(lock)
                .map_err(|e| LockError::InvalidArgument(format!("--lock {}: {e}", lock.display())))?;
            lock.parent().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"))
        }
        None => {
            // A typo in R is an error, as for `status`; a runtime directory without a
            // history is an empty one.
            let rt = runtime_dir(&args.session)?;
            check_runtime_dir(&rt)?;
            rt.join(LOCK_SUBDIR)
        }
    };
    let query = Query {
        session: args.session.session.clone(),
        since: args
            .since
            .and_then(|ms| time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()),
        limit: Some(usize::try_from(args.limit).unwrap_or(usize::MAX)),
    };
    let found = read(&lock_dir, &query);
    if out.json {
        out.json(&HistoryJson {
            events: &found.events,
            skipped_lines: found.skipped_lines,
            warnings: &found.warnings,
        })?;
        return Ok(());
    }
    for w in &found.warnings {
        out.note(&format!("warning: {w}"));
    }
    if found.skipped_lines > 0 {
        out.note(&format!(
            "note: {} line(s) of the history were not events (a torn last line after a crash, or damage) and were skipped",
            found.skipped_lines
        ));
    }
    if found.events.is_empty() {
        return Ok(out.line("no history events")?);
    }
    let mut table = super::output::table(&["at", "session", "event", "epoch", "host", "pid", "pod", "reason"]);
    for e in &found.events {
        let event = match (&e.rule, &e.previous) {
            (Some(rule), _) => format!("{} ({rule})", e.event.as_str()),
            (None, Some(p)) => format!("{} (from pid {} on {})", e.event.as_str(), p.pid, clean(&p.host)),
            (None, None) => e.event.as_str().to_owned(),
        };
        table.add_row([
            clean(&e.at).into_owned(),
            clean(&e.session_id).into_owned(),
            event,
            e.epoch.map_or(String::new(), |n| n.to_string()),
            clean(&e.host).into_owned(),
            e.pid.to_string(),
            e.pod.as_deref().map(|p| clean(p).into_owned()).unwrap_or_default(),
            e.reason.as_ref().map(|r| clean(r.as_str()).into_owned()).unwrap_or_default(),
        ]);
    }
    Ok(out.line(&table.to_string())?)
}
