//! `writerctl status`.

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::lockfile::status::{LockState, SessionStatus};
use writerctl::lockfile::{LockPaths, SystemProbe, status_all, status_one};

use super::output::Output;
use super::session::{runtime_dir, transcript_key};
use crate::cli::SessionArgs;
use writerctl::lockfile::acquire::TranscriptRef;

/// Show what is on disk for one session (--session), or for every session under R.
///
/// Reports the state (missing, active, sealed, malformed, in_transition), the owner's
/// diagnostics (never the owner token), whether an active owner counts as live and why,
/// every side file with its meaning, and the next safe step. Changes nothing.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  writerctl status                      # every session under the runtime directory\n  writerctl status --session \"$SID\" --json"
)]
pub struct StatusArgs {
    #[command(flatten)]
    pub session: SessionArgs,
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
        Some(o) => format!("pid {} on {}", o.pid, o.hostname),
        None => "-".into(),
    }
}

/// Runs `status`.
pub fn run(args: StatusArgs, out: Output) -> Result<()> {
    let rt = runtime_dir(&args.session)?;
    if args.session.session.is_none() && args.session.lock.is_none() {
        // The directory view checks no proof, so a transcript flag would change nothing:
        // refuse it rather than let a script believe its seals were checked.
        if args.session.transcript_key.is_some() || args.session.project_root.is_some() {
            return Err(super::usage(
                "--transcript-key and --project-root apply to one session; status of every session checks no proof",
                "add --session ID to check that session's sealed proof against its transcript",
            ));
        }
        let all = status_all(&rt, &SystemProbe)?;
        if out.json {
            out.json(&AllJson { runtime_dir: rt.display().to_string(), sessions: &all })?;
            return Ok(());
        }
        if all.is_empty() {
            out.line(&format!("no session locks under {}", rt.display()))?;
            return Ok(());
        }
        let mut table = super::output::table(&["session", "state", "holder", "why", "side files"]);
        for s in &all {
            let why = s
                .liveness
                .as_ref()
                .map(|l| l.code.to_string())
                .or_else(|| s.problem.clone())
                .unwrap_or_else(|| "-".into());
            table.add_row(vec![
                s.session_id.clone(),
                state_word(s),
                holder_word(s),
                why,
                s.side_files.len().to_string(),
            ]);
        }
        out.line(&table.to_string())?;
        out.line("run `writerctl status --session ID` for details and the next safe step")?;
        return Ok(());
    }
    let r = super::session::resolve(&args.session)?;
    let paths: LockPaths = r.paths;
    let transcript = TranscriptRef { runtime_dir: rt.clone(), key: transcript_key(&args.session, &r.session_id)? };
    let s = status_one(&rt, &paths, &r.session_id, Some(&transcript), &SystemProbe)?;
    if out.json {
        out.json(&s)?;
        return Ok(());
    }
    let mut lines = vec![
        format!("session:   {}", s.session_id),
        format!("lock:      {}", s.lock_path.display()),
        format!("state:     {}", state_word(&s)),
    ];
    if let Some(o) = &s.owner {
        lines.push(format!(
            "holder:    pid {} on host {} ({}, schema {}, acquired {})",
            o.pid, o.hostname, o.process_kind, o.schema_version, o.acquired_at
        ));
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
    if let Some(c) = &s.claim {
        let who = c.owner.as_ref().map(|o| format!(" held by pid {} on {}", o.pid, o.hostname)).unwrap_or_default();
        lines.push(format!("claim:     {} ({}){who}", s.lock_path.display().to_string() + ".claim", c.file_type));
    }
    if let Some(p) = &s.problem {
        lines.push(format!("problem:   {p}"));
    }
    for f in &s.side_files {
        lines.push(format!("residue:   {} — {}", f.name, f.meaning));
    }
    lines.push(format!("next step: {}", s.next_step));
    out.line(&lines.join("\n"))?;
    Ok(())
}
