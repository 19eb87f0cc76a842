//! `writerctl status`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::error::ErrorCode;
use writerctl::lockfile::metrics::{LockDirMetrics, publish_atomically};
use writerctl::lockfile::paths::{LOCK_SUBDIR, SideKind};
use writerctl::lockfile::status::{LockState, SessionStatus};
use writerctl::lockfile::watch::{ChangeFeed, ChangeSource};
use writerctl::lockfile::{LockPaths, SystemProbe, status_all, status_one};

use super::Coded;
use super::args::SessionArgs;
use super::output::{Output, clean};
use super::session::{runtime_dir, transcript_key};
use super::watch::{exit_on_signal, print_json_state, print_text_state, say, seconds};
use writerctl::lockfile::acquire::TranscriptRef;

/// Show what is on disk for one session, or for every session under the runtime
/// directory, with the next safe step.
///
/// Reports the state (missing, active, sealed, malformed, in_transition), the owner's
/// diagnostics (never the owner token), whether an active owner counts as live and why,
/// every side file with its meaning, and the next safe step. Changes nothing.
///
/// A lock taken by `writerctl run` names a holder lock: a file whose kernel lock the
/// writer's process tree keeps. Its liveness is judged by that lock (`holder_lock_held`,
/// `holder_lock_released`), from any pid namespace of the same boot, so a writer running in
/// another container is never called gone while its tree lives. Pod variables
/// (WRITERCTL_POD_*) are shown as labels and never prove a holder gone alone
/// (`pod_rule_needs_evidence`). The epoch counts replacements since the lock was last
/// created; it is not a fencing token across a release or a recovery.
///
/// With --format prometheus, prints counts in the Prometheus text format instead (locks by
/// state, side files by kind, the oldest sealed record's and transition claim's ages, the
/// scan's duration and time), labelled only by state, kind and runtime directory, never by
/// a session or owner id. --output F writes them atomically for node_exporter's textfile
/// collector.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// Output format (for JSON, pass --json).
    #[arg(long, value_enum, default_value_t = StatusFormat::Text)]
    pub format: StatusFormat,

    /// With --format prometheus: write to F atomically (temp file, fsync, rename, mode 0644)
    /// instead of stdout; F's directory must exist.
    #[arg(long, value_name = "F")]
    pub output: Option<PathBuf>,

    /// Keep running: print the state now, then again each time it changes, until SIGINT
    /// or SIGTERM (exit 0). With --json, one JSON document per line (the one `status --json`
    /// prints) with an "at" time. Changes are seen through inotify on a local filesystem
    /// and by reading again every --interval on a network filesystem (NFS, CephFS, SMB,
    /// FUSE: inotify there sees only this host's changes); stderr says which, once.
    #[arg(long)]
    pub watch: bool,

    /// With --watch: read the state again at least this often [default: 2]. On a network
    /// filesystem this is the polling interval; under inotify it is how soon a holder that
    /// died (which changes no file) is shown as stale.
    #[arg(long, value_name = "SECONDS", requires = "watch", value_parser = super::parse_seconds_positive)]
    pub interval: Option<Duration>,

    /// With --watch: poll at --interval even on a local filesystem (a directory other hosts
    /// change behind the kernel's back, e.g. a block device two hosts mount).
    #[arg(long, requires = "watch")]
    pub poll: bool,
}

/// What `status` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFormat {
    /// A table (every session) or a report (one session).
    Text,
    /// The Prometheus text exposition format (0.0.4).
    Prometheus,
}

#[derive(Serialize)]
struct AllJson<'a> {
    runtime_dir: String,
    sessions: &'a [SessionStatus],
}

fn state_word(s: &SessionStatus) -> String {
    let base = match s.state {
        LockState::Missing => "missing",
        LockState::Active => match s.live {
            Some(false) => "active (stale)",
            _ => "active (live)",
        },
        LockState::Sealed => "sealed",
        LockState::Malformed => "malformed",
        LockState::InTransition => "in transition",
    };
    if s.managed_schema { format!("{base}, schema 3") } else { base.to_owned() }
}

fn holder_word(s: &SessionStatus) -> String {
    match &s.owner {
        Some(o) => format!("pid {} on {}", o.holder.pid, o.holder.hostname),
        None => "-".into(),
    }
}

/// Refuses flag combinations that would print something else than asked.
fn check_format(args: &StatusArgs, out: Output) -> Result<()> {
    let refuse = |message: &str| -> Result<()> {
        Err(Coded { code: ErrorCode::InvalidArgument, message: message.into(), hint: None }.into())
    };
    if args.output.is_some() && args.format != StatusFormat::Prometheus {
        return refuse("--output needs --format prometheus");
    }
    if out.json && args.format == StatusFormat::Prometheus && args.output.is_none() {
        return refuse(
            "--json and --format prometheus are two different outputs on stdout; pass one, or add --output F",
        );
    }
    Ok(())
}

/// `--format prometheus`: one read-only scan (every session, or the one named), counted and
/// rendered; printed, or published atomically to `--output`. Transcripts are not hashed.
///
/// With `--output` and `--json`, errors are JSON and success prints `{"output": F}`.
fn run_prometheus(args: &StatusArgs, rt: &Path, one: bool, out: Output) -> Result<()> {
    let started = Instant::now();
    let sessions = if one {
        let r = super::session::resolve(&args.session)?;
        vec![status_one(rt, &r.paths, &r.session_id, None, &SystemProbe)?]
    } else {
        status_all(rt, &SystemProbe)?
    };
    let text = LockDirMetrics::summarize(&sessions, started.elapsed(), SystemTime::now()).render(rt);
    match &args.output {
        Some(path) => {
            publish_atomically(path, text.as_bytes())?;
            if out.json {
                out.json(&serde_json::json!({"output": path.display().to_string()}))?;
            }
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
        }
    }
    Ok(())
}

/// What one read of the state shows: the JSON document (`--json`) or the text report.
#[derive(Debug, PartialEq)]
enum Shown {
    Json(serde_json::Value),
    Text(String),
}

impl Shown {
    fn print(&self, out: Output) -> Result<()> {
        match self {
            Shown::Json(v) => out.json(v)?,
            Shown::Text(t) => out.line(t)?,
        }
        Ok(())
    }
}

/// Runs `status`.
pub fn run(args: StatusArgs, out: Output) -> Result<()> {
    if args.watch && args.format == StatusFormat::Prometheus {
        return Err(super::usage(
            "--watch prints status reports, not Prometheus counts",
            "for a textfile collector, run `writerctl status --format prometheus --output F` from a timer",
        ));
    }
    check_format(&args, out)?;
    let rt = runtime_dir(&args.session)?;
    let one = args.session.session.is_some() || args.session.lock.is_some();
    if !one && (args.session.transcript_key.is_some() || args.session.project_root.is_some()) {
        // The directory view checks no proof, so a transcript flag would change nothing:
        // refuse it rather than let a script believe its seals were checked.
        return Err(super::usage(
            "--transcript-key and --project-root apply to one session; status of every session checks no proof",
            "add --session ID to check that session's sealed proof against its transcript",
        ));
    }
    if args.format == StatusFormat::Prometheus {
        return run_prometheus(&args, &rt, one, out);
    }
    if args.watch {
        return watch(&args, &rt, one, out);
    }
    report(&args, &rt, one, out)?.print(out)
}

/// How often `status --watch` reads the state again without being told of a change.
const WATCH_INTERVAL: Duration = Duration::from_secs(2);
/// After a wake, how long the directory must stay quiet before it is read (a handoff is
/// several renames and links in a few milliseconds: shown once, as it ends), and the most
/// a stream of changes may delay a read.
const SETTLE: Duration = Duration::from_millis(20);
const SETTLE_MAX: Duration = Duration::from_millis(250);

/// `status --watch`: the state now, then each time it changes, until SIGINT/SIGTERM.
///
/// Change detection is [`ChangeFeed`]'s (inotify on a local filesystem, nothing on a
/// network one). Either way the state is also read every `--interval`: on a network
/// filesystem that is the polling that sees other hosts' changes, and under inotify it is
/// what notices a holder that died (its record does not change, only the liveness verdict
/// does) — without it a dead holder would be shown as live until something else changed.
fn watch(args: &StatusArgs, rt: &Path, one: bool, out: Output) -> Result<()> {
    exit_on_signal()?;
    let interval = args.interval.unwrap_or(WATCH_INTERVAL);
    let mut dirs = Vec::new();
    if one {
        let r = super::session::resolve(&args.session)?;
        dirs.push(r.paths.dir.clone());
        // A sealed record's proof is checked against the transcript: its directory too.
        let key = transcript_key(&args.session, &r.session_id)?;
        if let Some(parent) = rt.join(key.as_str()).parent() {
            dirs.push(parent.to_path_buf());
        }
    } else {
        dirs.push(rt.join(LOCK_SUBDIR));
    }
    let feed = ChangeFeed::open(&dirs, args.poll)?;
    let watched = dirs[0].display().to_string();
    match feed.source() {
        ChangeSource::Inotify => {
            say(&format!("watching {watched} (inotify; read again every {} for holder liveness)", seconds(interval)))
        }
        ChangeSource::Polling { why } => {
            say(&format!("watching {watched} (polling every {}: {why})", seconds(interval)))
        }
    }
    let mut last: Option<Shown> = None;
    loop {
        let shown = report(args, rt, one, out)?;
        if last.as_ref() != Some(&shown) {
            match &shown {
                Shown::Json(v) => print_json_state(v)?,
                Shown::Text(t) => print_text_state(t)?,
            }
            last = Some(shown);
        }
        if feed.wait(interval) {
            let settle_until = Instant::now() + SETTLE_MAX;
            while Instant::now() < settle_until && feed.wait(SETTLE) {}
        }
    }
}

/// One read of the state, as `status` shows it.
fn report(args: &StatusArgs, rt: &Path, one: bool, out: Output) -> Result<Shown> {
    if !one {
        let all = status_all(rt, &SystemProbe)?;
        if out.json {
            let doc = AllJson { runtime_dir: rt.display().to_string(), sessions: &all };
            return Ok(Shown::Json(serde_json::to_value(&doc)?));
        }
        if all.is_empty() {
            return Ok(Shown::Text(format!("no session locks under {}", rt.display())));
        }
        let mut table = super::output::table(&["session", "state", "holder", "why", "side files"]);
        for s in &all {
            let why = s
                .liveness
                .as_ref()
                .map(|l| l.code.to_string())
                .or_else(|| s.problem.clone())
                .unwrap_or_else(|| "-".into());
            // Every cell may come from a file someone else wrote (issue 22): escaped.
            let cells = [s.session_id.clone(), state_word(s), holder_word(s), why, s.side_files.len().to_string()];
            table.add_row(cells.iter().map(|c| clean(c).into_owned()).collect::<Vec<_>>());
        }
        return Ok(Shown::Text(format!(
            "{table}\nrun `writerctl status --session ID` for details and the next safe step"
        )));
    }
    let r = super::session::resolve(&args.session)?;
    let paths: LockPaths = r.paths;
    let transcript =
        TranscriptRef { runtime_dir: rt.to_path_buf(), key: transcript_key(&args.session, &r.session_id)? };
    let s = status_one(rt, &paths, &r.session_id, Some(&transcript), &SystemProbe)?;
    if out.json {
        return Ok(Shown::Json(serde_json::to_value(&s)?));
    }
    let mut lines = vec![
        format!("session:   {}", s.session_id),
        format!("lock:      {}", s.lock_path.display()),
        format!("state:     {}", state_word(&s)),
    ];
    if let Some(o) = &s.owner {
        lines.push(format!(
            "holder:    pid {} on host {} ({}, schema {}, acquired {})",
            o.holder.pid, o.holder.hostname, o.holder.process_kind, o.schema_version, o.holder.acquired_at
        ));
        // Not a fencing token: it starts again at 1 after a release or a recovery.
        lines.push(format!("epoch:     {} (replacements since the lock was last created)", o.holder.epoch));
        if let Some(h) = &o.holder.holder_lock {
            lines.push(format!("evidence:  holder lock {h} (kept by the holder's process tree)"));
        }
        if let Some(p) = &o.holder.pod {
            lines.push(format!("pod:       {}/{} (uid {}), container {}", p.namespace, p.name, p.uid, p.container));
        }
        if let Some(f) = &o.holder.recovered_from {
            lines.push(format!("recovered: by {}", f.describe()));
        }
    }
    if let Some(l) = &s.liveness {
        lines.push(format!("liveness:  {} — {}", l.code, l.description));
    }
    if let Some(p) = &s.proof {
        lines.push(format!(
            "proof:     sealed {} · {} · exists={} · {} bytes · sha256 {}",
            p.sealed_at, p.transcript.relative_path, p.transcript.exists, p.transcript.byte_length, p.transcript.sha256
        ));
        match (p.matches, &p.mismatch) {
            (Some(true), _) => lines.push("check:     the transcript matches the proof".into()),
            (Some(false), Some(why)) => lines.push(format!("check:     DOES NOT MATCH — {why}")),
            _ => {}
        }
    }
    if let Some(c) = &s.transition_claim {
        let who = c
            .owner
            .as_ref()
            .map(|o| format!(" held by pid {} on {}", o.holder.pid, o.holder.hostname))
            .unwrap_or_default();
        lines.push(format!("claim:     {} ({}){who}", s.lock_path.display().to_string() + ".claim", c.file_type));
    }
    if let Some(p) = &s.problem {
        lines.push(format!("problem:   {p}"));
    }
    for f in &s.side_files {
        // A holder lock is the live holder's evidence, residue only once free and unnamed.
        let label = if f.kind == SideKind::HolderLock { "side file:" } else { "residue:  " };
        lines.push(format!("{label} {} — {}", f.name, f.meaning));
    }
    if let Some(t) = &s.transcript_tail {
        if t.state != "clean" {
            lines.push(format!(
                "transcript: {} — ends in an incomplete line at byte {} (last complete line ends at byte {})",
                t.state, t.length, t.complete_bytes
            ));
        }
        for f in &t.kept_cut_files {
            lines.push(format!("cut bytes: {f} — cut bytes kept by recover (the transcript's incomplete last line)"));
        }
    }
    lines.push(format!("next step: {}", s.next_step));
    // Each entry is one line of our layout; a CR, LF or ESC inside a field (a hostname from
    // the record, a side-file name) is escaped so it cannot forge another line (issue 22).
    let lines: Vec<String> = lines.iter().map(|l| clean(l).into_owned()).collect();
    Ok(Shown::Text(lines.join("\n")))
}
