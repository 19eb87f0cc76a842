//! `writerctl pause|resume` (issue 30 point 3): a maintenance window for a project's work
//! claims. Administrative, like `channel create`: over HTTP each needs the admin token.
//! Flags and output only; the decisions are the coordinator's.

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};
use writerctl::claim::model::Millis;
use writerctl::claim::work_claims::{HeldBack, PauseRequest, Paused};
use writerctl::coordinator::verbs::pause::{Pause, Resume};
use writerctl::coordinator::wire::{NoBody, ProjectPath};

use super::coord::{ProjectWriteArgs, rfc3339};
use super::output::Output;

/// Pause a project: no TTL release and no deputy handoff until `resume` (or --until).
///
/// For a maintenance window, a provider outage that silences every seat at once, or an
/// incident under investigation: while a project is paused, `claim sweep` and the server's
/// own sweeper release nothing and hand nothing to a deputy; each sweep reports the due
/// claims it held back (JSON "held_back", with why "project_paused"). Everything a person
/// does goes on: `claim take|touch|release`, `focus`, `master handoff` and `master claim`.
/// After `resume`, or once --until passes, the next sweep releases what is due.
///
/// --reason is required (at most 512 bytes, one line, no control characters); it is shown
/// by `master status`, `claim list`, `steward report` and `claim sweep`, and audited with
/// the actor (`admin` over HTTP, `local` on the embedded store). --until must be in the
/// future. Pausing a paused project replaces its reason and --until and keeps its start
/// (JSON "replaced": the pause it replaced). Over HTTP this needs the admin token
/// (WRITERCTL_ADMIN_TOKEN; without it `unauthorized`, 6). The pause is stored with the
/// project and survives coordinator restarts; `/metrics` counts paused projects
/// (`writerctl_project_paused`).
///
/// JSON: {"project","paused":{"reason","since","until"},"replaced":null|{"reason","since","until"}}
#[derive(Debug, Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub at: ProjectWriteArgs,
    /// Why the project is paused (shown in `master status` and audited).
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// End the pause by itself at this moment (RFC 3339, in the future) [default: at `resume`].
    #[arg(long, value_name = "RFC3339", value_parser = super::coord::parse_time)]
    pub until: Option<Millis>,
}

/// End a project's pause: the next sweep releases what is due.
///
/// Resuming a project that is not paused (never paused, resumed already, or its --until
/// passed) is not an error: it answers "was_paused": false and changes nothing. Audited
/// either way. Over HTTP this needs the admin token (WRITERCTL_ADMIN_TOKEN).
///
/// JSON: {"project","was_paused","previous":null|{"reason","since","until"},"resumed_at"}
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub at: ProjectWriteArgs,
}

/// A pause as CLI.md's `"paused"` spells it: null, or {"reason","since","until"}.
pub fn paused_json(p: Option<&Paused>) -> Value {
    p.map_or(Value::Null, |p| json!({"reason": p.reason, "since": rfc3339(p.since), "until": p.until.map(rfc3339)}))
}

/// One line for humans: what a pause means and until when.
pub fn paused_line(project: &str, p: &Paused) -> String {
    let until = p.until.map_or("until `writerctl resume`".to_string(), |u| format!("until {}", rfc3339(u)));
    format!(
        "project {project} is paused since {} {until}: {} (no TTL release, no deputy handoff; manual moves still work)",
        rfc3339(p.since),
        p.reason
    )
}

/// A sweep's held-back claims as JSON.
pub fn held_back_json(held: &[HeldBack]) -> Value {
    held.iter()
        .map(|h| {
            json!({"channel": h.channel, "task": h.task, "owner": h.owner, "to": h.to,
                   "due_at": rfc3339(h.due_at), "why": h.why})
        })
        .collect()
}

/// Runs `pause`.
pub fn run_pause(a: PauseArgs, out: Output) -> Result<()> {
    let body = PauseRequest { reason: a.reason.clone(), until: a.until };
    let o = a.at.write.open()?.call::<Pause>(ProjectPath::of(&a.at.project), body, None)?;
    if out.json {
        return Ok(out.json(&json!({"project": o.project, "paused": paused_json(Some(&o.paused)),
                                   "replaced": paused_json(o.replaced.as_ref())}))?);
    }
    out.line(&paused_line(&o.project, &o.paused))?;
    if let Some(r) = &o.replaced {
        out.note(&format!("note: this replaced the pause in force (reason: {})", r.reason));
    }
    Ok(())
}

/// Runs `resume`.
pub fn run_resume(a: ResumeArgs, out: Output) -> Result<()> {
    let o = a.at.write.open()?.call::<Resume>(ProjectPath::of(&a.at.project), NoBody {}, None)?;
    if out.json {
        return Ok(out.json(&json!({"project": o.project, "was_paused": o.was_paused,
                                   "previous": paused_json(o.previous.as_ref()),
                                   "resumed_at": rfc3339(o.resumed_at)}))?);
    }
    match &o.previous {
        Some(p) => Ok(out.line(&format!(
            "project {} resumed (paused since {}: {}); the next sweep releases what is due",
            o.project,
            rfc3339(p.since),
            p.reason
        ))?),
        None => Ok(out.line(&format!("project {} was not paused; nothing changed", o.project))?),
    }
}
