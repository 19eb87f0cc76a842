//! `writerctl recover`.

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::lockfile::LockError;
use writerctl::lockfile::acquire::{TranscriptRef, check_runtime_dir, open_lock_dir};
use writerctl::lockfile::error::Unavailable;
use writerctl::lockfile::history::HistoryEvent;
use writerctl::lockfile::identity::LocalDomain;
use writerctl::lockfile::paths::{LOCK_SUBDIR, SideKind};
use writerctl::lockfile::primitives::Inspection;
use writerctl::lockfile::recover::{Action, Done, Plan, execute, plan, plan_from};
use writerctl::lockfile::status::{open_existing, scan_directory};
use writerctl::lockfile::transcript::TranscriptKey;

use super::ExitStatus;
use super::session::transcript_key;
use writerctl::lockfile::{DirMode, LockPaths, LockSite, SystemProbe, open_site};

use super::args::SessionArgs;
use super::output::{Output, clean};
use super::session::{resolve, runtime_dir};

/// Plan, and with --writers-fenced --yes carry out, moving residue of crashed writers
/// aside (never deleting).
///
/// Run it only after every writer is fenced. Prints a plan and changes nothing unless both
/// --writers-fenced and --yes are given. Then it restores the one exact predecessor of a crashed
/// transition when the primary is missing, moves every residual claim, retired, candidate, stale,
/// guard and temp file (and a malformed or fenced primary) into a dated folder beside the locks —
/// never deleting — and appends an audit line per action to writerctl-recovery.log there. A sealed
/// primary, a running owner and a stale active record (plain acquire reclaims it) are left alone.
///
/// A transcript that ends in an incomplete line (a writer killed mid-append) is repaired when no
/// lock holder can write it: its incomplete line is kept in a side file beside it
/// (<name>.torn-<UTC time>-<pid>, mode 0600, fsynced), then it is truncated at its last complete
/// line — refused if the kernel says something still has it open for writing.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// State that every writer that can reach this storage (processes, containers, other
    /// hosts) is stopped or fenced.
    #[arg(long)]
    pub writers_fenced: bool,

    /// Carry the plan out (with --writers-fenced).
    #[arg(long)]
    pub yes: bool,

    #[command(flatten)]
    pub reason: super::args::ReasonArgs,
}

#[derive(Serialize)]
struct SessionJson {
    session_id: String,
    dry_run: bool,
    blocked: Option<String>,
    folder: Option<String>,
    actions: Vec<serde_json::Value>,
}

#[derive(Serialize)]
struct AllJson {
    dry_run: bool,
    sessions: Vec<SessionJson>,
}

/// One session's site (`None`: its lock directory does not exist), its transcript (`None`:
/// not known for this session), and, from a directory scan, its side files and primary
/// already read.
type Target = (String, Option<LockSite>, Option<TranscriptRef>, Option<(Vec<(String, SideKind)>, Inspection)>);

fn one_session(args: &RecoverArgs) -> bool {
    args.session.session.is_some() || args.session.lock.is_some()
}

fn targets(args: &RecoverArgs) -> Result<Vec<Target>> {
    if one_session(args) {
        let r = resolve(&args.session)?;
        check_runtime_dir(&r.runtime_dir)?;
        let transcript =
            TranscriptRef { runtime_dir: r.runtime_dir.clone(), key: transcript_key(&args.session, &r.session_id)? };
        let site = match open_existing(&r.paths.dir)? {
            None => None,
            Some(_) => Some(open_site(&r.runtime_dir, r.paths, &r.session_id, DirMode::Existing)?),
        };
        return Ok(vec![(r.session_id, site, Some(transcript), None)]);
    }
    // Over a directory, one key cannot name every session's transcript.
    if args.session.transcript_key.is_some() {
        return Err(super::usage(
            "--transcript-key names one session's transcript; recover over a whole directory cannot use it",
            "add --session ID, or use --project-root DIR (it names each session's transcript)",
        ));
    }
    let rt = runtime_dir(&args.session)?;
    check_runtime_dir(&rt)?;
    let dir_path = rt.join(LOCK_SUBDIR);
    let Some(dir) = open_existing(&dir_path)? else { return Ok(Vec::new()) };
    // One listing, one read per entry, one batch inspection of every primary (one
    // malformed-record pause for the whole directory), then each session plans from its own
    // group: nothing here is per (session × entry).
    let scanned = scan_directory(&dir, &SystemProbe)?;
    let local = LocalDomain::current();
    let mut out = Vec::with_capacity(scanned.sessions.len());
    for (g, primary) in scanned.sessions {
        let paths = LockPaths { dir: dir_path.clone(), lock_name: g.lock_name };
        let key = match &args.session.project_root {
            // An id qwen could not use as a file name has no transcript under the project:
            // a seal of it is judged by nothing here (kept), never moved on a guess.
            Some(_) => transcript_key(&args.session, &g.session_id).ok(),
            None => TranscriptKey::default_for(&g.session_id).ok(),
        };
        let transcript = key.map(|key| TranscriptRef { runtime_dir: rt.clone(), key });
        let site =
            LockSite { dir: open_lock_dir(&paths.dir)?, paths, session_id: g.session_id.clone(), local: local.clone() };
        out.push((g.session_id, Some(site), transcript, Some((g.side_files, primary))));
    }
    Ok(out)
}

fn describe(a: &Action) -> (&'static str, &str, &str) {
    match a {
        Action::Restore { file, reason, .. } => ("restore", file, reason),
        Action::MoveAside { file, reason, .. } => ("move aside", file, reason),
        Action::Keep { file, reason } => ("keep", file, reason),
        Action::RepairTail { file, reason, .. } => ("repair tail", file, reason),
    }
}

/// What a recovery did, in words, for the history line (file names redacted as in the plan).
fn summary(done: &[Done], folder: &str) -> String {
    let count = |verb: &str, ok: bool| {
        done.iter().filter(|d| describe(&d.action).0 == verb && d.result.starts_with("ok") == ok).count()
    };
    let failed = count("restore", false) + count("move aside", false) + count("repair tail", false);
    let mut said = format!(
        "{} predecessor(s) restored, {} file(s) moved aside into {folder}",
        count("restore", true),
        count("move aside", true)
    );
    // A tail repair says where the cut bytes went (issue 38).
    for d in done.iter().filter(|d| d.result.starts_with("ok")) {
        if let Action::RepairTail { file, complete_bytes, side_file, .. } = &d.action {
            said.push_str(&format!(", {file} truncated at byte {complete_bytes} (cut bytes kept in {side_file})"));
        }
    }
    format!("{said}, {failed} failed")
}

/// Runs `recover`.
pub fn run(args: RecoverArgs, out: Output) -> Result<()> {
    let act = args.writers_fenced && args.yes;
    let reason = args.reason.parse()?;
    let mut results = Vec::new();
    for (session_id, site, transcript, scanned) in targets(&args)? {
        let Some(site) = site else {
            let p = Plan { session_id, actions: Vec::new(), blocked: None };
            results.push((p, Vec::new(), None));
            continue;
        };
        let p: Plan = match scanned {
            Some((side, primary)) => plan_from(&site, side, primary, transcript.as_ref(), &SystemProbe)?,
            None => plan(&site, transcript.as_ref(), &SystemProbe)?,
        };
        let (done, folder): (Vec<Done>, Option<String>) = if act && p.blocked.is_none() {
            let (done, folder) = execute(&site, &p)?;
            if let Some(f) = &folder {
                let event = HistoryEvent::of_recover(&site.session_id, summary(&done, f), reason.as_ref());
                super::history::note(&site.dir, &event);
            }
            (done, folder)
        } else {
            (p.actions.iter().map(|a| Done { action: a.clone(), result: "planned".into() }).collect(), None)
        };
        results.push((p, done, folder));
    }
    // Asked to act but a running writer blocked it: the report says why; the exit status
    // tells scripts that nothing was done (3, as for any conflict with a live writer).
    let blocked = act && results.iter().any(|(p, _, _)| p.blocked.is_some());
    // Every result was re-read by the engine before it said "ok"; a failed action means the
    // session is not where the plan meant to leave it, and that is never exit 0 (issue 27).
    let failed: Vec<String> = results
        .iter()
        .flat_map(|(p, done, _)| {
            done.iter().filter(|d| d.result.starts_with("failed")).map(move |d| {
                let (verb, file, _) = describe(&d.action);
                format!("session {}: {verb} {file}: {}", clean(&p.session_id), d.result)
            })
        })
        .collect();
    report(&args, out, act, results)?;
    if blocked {
        return Err(ExitStatus(3).into());
    }
    if !failed.is_empty() {
        return Err(LockError::Unavailable {
            reason: Unavailable::Io,
            detail: Some(format!(
                "recover did not complete ({}); writerctl-recovery.log beside the locks says what was done",
                failed.join("; ")
            )),
            source: None,
        }
        .into());
    }
    Ok(())
}

fn report(args: &RecoverArgs, out: Output, act: bool, results: Vec<(Plan, Vec<Done>, Option<String>)>) -> Result<()> {
    if out.json {
        let sessions: Vec<SessionJson> = results
            .into_iter()
            .map(|(p, done, folder)| SessionJson {
                session_id: p.session_id,
                dry_run: !act,
                blocked: p.blocked,
                folder,
                actions: done.iter().map(|d| serde_json::to_value(d).expect("serializes")).collect(),
            })
            .collect();
        if one_session(args) && sessions.len() == 1 {
            out.json(&sessions[0])?;
        } else {
            out.json(&AllJson { dry_run: !act, sessions })?;
        }
        return Ok(());
    }
    if results.is_empty() {
        out.line("nothing to recover: no lock files")?;
    }
    for (p, done, folder) in &results {
        let mode = if act { "" } else { " (plan only, nothing changed)" };
        out.line(&format!("session {}{mode}", clean(&p.session_id)))?;
        if let Some(b) = &p.blocked {
            out.line(&format!("  blocked: {}", clean(&b.to_string())))?;
        }
        for d in done {
            let (verb, file, reason) = describe(&d.action);
            let result = if act { format!(" [{}]", d.result) } else { String::new() };
            out.line(&format!("  {verb:<10} {}{result}\n             {}", clean(file), clean(reason)))?;
        }
        if let Some(f) = folder {
            out.line(&format!("  moved files are in {f}/ beside the locks; audit lines in writerctl-recovery.log"))?;
        }
    }
    if !act && results.iter().any(|(p, _, _)| p.changes_anything()) {
        out.line("to carry this out: stop or fence every writer that can reach this storage (other hosts, containers, detached ACP children), back up the lock directory and transcript, then run again with --writers-fenced --yes")?;
    }
    Ok(())
}
