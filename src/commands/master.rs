//! `writerctl master status|handoff|claim|history` (seed 000, issue 30).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::json;
use writerctl::claim::engine::{MasterChange, Status};
use writerctl::claim::masters::{HandoffRequest, MasterClaimRequest, MasterOutcome};
use writerctl::claim::model::{Controller, MasterRef};
use writerctl::claim::secret::Secret;
use writerctl::coordinator::api::Endpoint;
use writerctl::coordinator::verbs::history::MasterHistory;
use writerctl::coordinator::verbs::master::{Handoff, MasterClaim, Target, Watch};
use writerctl::coordinator::wire::{HistoryQuery, NoBody, ProjectPath, TargetQuery, WatchQuery};

use super::ExitStatus;
use super::coord::{
    PasswordArgs, ProjectArgs, WriteArgs, age, confirm, interactive, optional_secret, rfc3339, session_token,
};
use super::output::Output;
use super::watch::{exit_on_signal, print_json_state, print_text_state, say, seconds};
use writerctl::error::ErrorCode;

/// The master slot: show it, hand it off, or claim it for a named target.
#[derive(Debug, Subcommand)]
pub enum MasterCmd {
    /// Show the master, its epoch, and every controller with its freshness.
    ///
    /// With --watch it keeps running: the status now, then again each time it changes
    /// (another master, another epoch, a controller registered, gone, or turned stale; a
    /// heartbeat alone changes nothing shown), until SIGINT or SIGTERM (exit 0). A server
    /// pushes each change (a long poll it holds open; it reads the project once per change
    /// for all its watchers); the embedded store has no server, so it is read again every
    /// --interval. With --json, one JSON document per line (the one `master status --json`
    /// prints) with an "at" time. When the server cannot be reached, stderr says so
    /// ("lost the coordinator at URL ...; retrying") and says when it is back; the watch
    /// retries with a growing pause (up to 4 s) and never exits on its own.
    Status(StatusArgs),
    /// Cooperative transfer: the current master hands mastership to a named identity.
    ///
    /// On a terminal it shows the topology and the resolved target and asks to confirm
    /// (unless --yes); with --json or without a terminal it never asks.
    ///
    /// --dry-run makes every check the real handoff makes (token, epoch, not_master, target)
    /// and changes nothing: it prints the plan and exits as the real command would.
    Handoff(HandoffArgs),
    /// Operator-authorized preempt: promote the named target (never the caller), proving
    /// authority with an operator id and password.
    ///
    /// --dry-run verifies the password (a wrong one counts towards the back-off, as on a
    /// real claim), the epoch and the target, changes nothing, and prints who would lose
    /// mastership, the new epoch and what would be preempted.
    Claim(ClaimArgs),
    /// Every change of master of a project, oldest first: when, the epoch after it, from
    /// and to (identity and session), the verb, who ran it and the reason given.
    ///
    /// Read from the audit log, where each change is recorded in the same transaction as
    /// the change itself: it survives restarts and is kept as long as the audit log
    /// (`coordinator serve --audit-retention-days`). `from` or `to` is null when the slot
    /// was empty before (the first registration) or is emptied (the master deregistered or
    /// its identity was removed).
    ///
    /// Over HTTP, who ran each change (actor) and why (reason) are shown only to a caller
    /// that proves a part in the project: a session token of a controller registered there
    /// (--token-file F, or WRITERCTL_SESSION_TOKEN) or the admin token
    /// (WRITERCTL_ADMIN_TOKEN). Anyone else gets the same changes with actor and reason
    /// null, "redacted": true in JSON, and a note on stderr. A server answers at most 1000
    /// changes, whatever --limit asks.
    History(HistoryArgs),
}

/// `master status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub at: ProjectArgs,
    /// Keep running and print the status again each time it changes (see above).
    #[arg(long)]
    pub watch: bool,
    /// With --watch on the embedded store: read it again this often [default: 2]. A
    /// server pushes changes and needs no interval.
    #[arg(long, value_name = "SECONDS", requires = "watch", value_parser = super::parse_seconds_positive)]
    pub interval: Option<Duration>,
}

/// Target and epoch, shared by handoff and claim.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Project id.
    #[arg(long, value_name = "P")]
    pub project: String,
    /// Identity to make master.
    #[arg(long, value_name = "IDENTITY")]
    pub to: String,
    /// The exact controller row to promote (disambiguates several fresh rows).
    #[arg(long, value_name = "SID")]
    pub to_session: Option<String>,
    /// Epoch the decision was made from; `stale_master` if the master changed since
    /// [default: read from `master status` just before].
    #[arg(long, value_name = "N")]
    pub expect_epoch: Option<u64>,
    /// Do not ask for confirmation on a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Why, recorded on the audit row and in `master history` (at most 512 bytes, no
    /// control characters).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Make every check, change nothing, print the plan; exit as the real command would.
    #[arg(long)]
    pub dry_run: bool,
}

/// `master history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub at: ProjectArgs,
    /// The newest N changes (a server answers at most 1000).
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub limit: u64,
    /// Read a session token of a controller registered in the project from this file, to
    /// see who ran each change and why [default: env WRITERCTL_SESSION_TOKEN, then
    /// WRITERCTL_ADMIN_TOKEN].
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
}

/// `master handoff`.
#[derive(Debug, Args)]
pub struct HandoffArgs {
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The caller's session id (it must be master).
    #[arg(long, value_name = "CALLER_SID")]
    pub session: String,
    /// Read the caller's session token from this file [default: env WRITERCTL_SESSION_TOKEN].
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
}

/// `master claim`.
#[derive(Debug, Args)]
pub struct ClaimArgs {
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Operator id (see `writerctl operator add`).
    #[arg(long, value_name = "OP")]
    pub operator: String,
    #[command(flatten)]
    pub password: PasswordArgs,
}

/// Runs a `master` subcommand.
pub fn run(cmd: MasterCmd, out: Output) -> Result<()> {
    match cmd {
        MasterCmd::Status(a) if a.watch => watch(&a, out),
        MasterCmd::Status(a) => {
            let st = status(&a.at.coord.open()?, &a.at.project)?;
            print_status(&a.at.project, &st, out)
        }
        MasterCmd::Handoff(a) => {
            let token = session_token(a.token_file.as_deref())?;
            let c = a.write.open()?;
            let Some(expect_epoch) = prepare(&c, &a.target, out, "Hand master")? else { return aborted(out) };
            let t = &a.target;
            let req = HandoffRequest {
                session_id: a.session.clone(),
                to: t.to.clone(),
                to_session: t.to_session.clone(),
                expect_epoch,
                reason: t.reason.clone(),
                dry_run: t.dry_run,
                // What the command has no flag for keeps its default.
                ..HandoffRequest::default()
            };
            let outcome = c.call::<Handoff>(ProjectPath::of(&t.project), req, Some(&token))?;
            print_outcome(&t.project, &outcome, None, out)
        }
        MasterCmd::Claim(a) => {
            let c = a.write.open()?;
            let Some(expect_epoch) = prepare(&c, &a.target, out, "Preempt master")? else { return aborted(out) };
            let password = a.password.read(&format!("Password for operator {}: ", a.operator), false, out.json)?;
            let t = &a.target;
            let req = MasterClaimRequest {
                to: t.to.clone(),
                to_session: t.to_session.clone(),
                expect_epoch,
                operator: a.operator.clone(),
                password: password.expose().to_string(),
                reason: t.reason.clone(),
                dry_run: t.dry_run,
                // What the command has no flag for keeps its default.
                ..MasterClaimRequest::default()
            };
            let outcome = c.call::<MasterClaim>(ProjectPath::of(&t.project), req, None)?;
            print_outcome(&t.project, &outcome, Some(&a.operator), out)
        }
        MasterCmd::History(a) => {
            // Issue 39 point 6: the server shows who and why only to a caller with a part in
            // the project, so send the best credential at hand.
            let token =
                optional_secret(a.token_file.as_deref(), "WRITERCTL_SESSION_TOKEN", "session token")?.or_else(|| {
                    std::env::var("WRITERCTL_ADMIN_TOKEN").ok().filter(|t| !t.trim().is_empty()).map(Secret::new)
                });
            let limit = usize::try_from(a.limit).unwrap_or(usize::MAX);
            let q = HistoryQuery { limit: Some(limit) };
            let h = a.at.coord.open()?.call::<MasterHistory>(ProjectPath::of(&a.at.project), q, token.as_ref())?;
            if h.redacted {
                out.note(
                    "actor and reason withheld: pass a session token of a controller registered in the project \
                     (--token-file F or WRITERCTL_SESSION_TOKEN) or the admin token (WRITERCTL_ADMIN_TOKEN)",
                );
            }
            print_history(&a.at.project, &h.changes, h.redacted, out)
        }
    }
}

fn aborted(out: Output) -> Result<()> {
    out.note("aborted: nothing changed");
    Err(ExitStatus(1).into())
}

/// `master status` through `c`.
fn status(c: &Endpoint, project: &str) -> Result<Status> {
    Ok(c.call::<writerctl::coordinator::verbs::master::Status>(ProjectPath::of(project), NoBody {}, None)?.into())
}

/// The expected epoch, filled from a status read (Patroni's switchover: the decision is
/// made against what the operator saw), after showing topology and target on a terminal
/// and asking. None when the operator declines.
fn prepare(c: &Endpoint, t: &TargetArgs, out: Output, verb: &str) -> Result<Option<u64>> {
    // A dry run changes nothing: nothing to confirm.
    let ask = !t.yes && !t.dry_run && !out.json && interactive();
    let (expect_epoch, status) = match (t.expect_epoch, ask) {
        (Some(e), false) => (e, None),
        _ => {
            let st = status(c, &t.project)?;
            (t.expect_epoch.unwrap_or(st.slot.epoch), Some(st))
        }
    };
    if let (true, Some(st)) = (ask, status) {
        print_status(&t.project, &st, out)?;
        let q = TargetQuery { to: t.to.clone(), to_session: t.to_session.clone() };
        let target: Controller = c.call::<Target>(ProjectPath::of(&t.project), q, None)?.into();
        let from = st.slot.master.as_ref().map_or("nobody".to_string(), describe);
        let to = target.reference();
        let question = if st.slot.master.as_ref() == Some(&to) {
            format!(
                "\n{} already is master of {} (epoch {expect_epoch}); nothing will change. Go on?",
                describe(&to),
                t.project
            )
        } else {
            format!(
                "\n{verb} of project {} from {from} to {} (epoch {expect_epoch} -> {})?",
                t.project,
                describe(&to),
                expect_epoch + 1
            )
        };
        if !confirm(&question)? {
            return Ok(None);
        }
    }
    Ok(Some(expect_epoch))
}

fn describe(m: &MasterRef) -> String {
    format!("{} ({})", m.identity, m.session_id)
}

/// How long one `master status --watch` request asks the server to wait for a change (the
/// server caps it at 30 s; the request is then simply made again).
const WATCH_WAIT: Duration = Duration::from_secs(25);
/// How often `master status --watch` reads the embedded store.
const WATCH_INTERVAL: Duration = Duration::from_secs(2);
/// The pause before the first retry of a lost coordinator, doubled up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(250);
const RETRY_MAX: Duration = Duration::from_secs(4);

/// `master status --watch`: the status now, then each time its version changes, until
/// SIGINT/SIGTERM. Against a server each request is a long poll answered when the state
/// differs from the version last shown; against the embedded store, a read every interval.
fn watch(a: &StatusArgs, out: Output) -> Result<()> {
    exit_on_signal()?;
    let target = a.at.coord.target()?;
    let name = super::coord::coordinator_name(&target);
    let remote = matches!(target, super::coord::Target::Http(_));
    if remote && a.interval.is_some() {
        return Err(super::usage(
            "--interval applies to the embedded store: a server pushes each change",
            "leave --interval out with --coordinator http(s)://...",
        ));
    }
    let c = a.at.coord.open()?;
    let interval = a.interval.unwrap_or(WATCH_INTERVAL);
    if remote {
        say(&format!("watching project {} at {name} (pushed by the coordinator)", a.at.project));
    } else {
        say(&format!(
            "watching project {} in {name} (polling every {}: the embedded store has no server to push changes)",
            a.at.project,
            seconds(interval)
        ));
    }
    let mut shown: Option<String> = None;
    let mut retry: Option<Duration> = None;
    loop {
        // After a loss the first request must not wait: its answer is what says the
        // coordinator is back (a long poll would answer only at the next change).
        let wait = if remote && retry.is_none() { WATCH_WAIT } else { Duration::ZERO };
        let q = WatchQuery { after: shown.clone(), wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX) };
        match c.call::<Watch>(ProjectPath::of(&a.at.project), q, None) {
            Ok(w) => {
                if retry.take().is_some() {
                    say(&format!("coordinator at {name} is back"));
                }
                if shown.as_deref() != Some(w.version.as_str()) {
                    let st: Status = w.status.into();
                    if out.json {
                        print_json_state(&status_json(&a.at.project, &st))?;
                    } else {
                        print_text_state(&status_text(&a.at.project, &st))?;
                    }
                    shown = Some(w.version);
                }
                if !remote {
                    std::thread::sleep(interval);
                }
            }
            Err(e) if e.code() == ErrorCode::CoordinatorUnavailable => {
                let pause = match retry {
                    None => {
                        say(&format!("lost the coordinator at {name} ({e}); retrying"));
                        RETRY_FIRST
                    }
                    Some(p) => (p * 2).min(RETRY_MAX),
                };
                retry = Some(pause);
                std::thread::sleep(pause);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// `master status --json`'s document.
fn status_json(project: &str, st: &Status) -> serde_json::Value {
    let master = match &st.slot.master {
        Some(m) => json!({"identity": m.identity, "session_id": m.session_id, "epoch": st.slot.epoch}),
        None => json!({"identity": null, "session_id": null, "epoch": st.slot.epoch}),
    };
    let controllers: Vec<_> = st
        .controllers
        .iter()
        .map(|v| {
            let c = &v.controller;
            json!({
                "session_id": c.session_id, "identity": c.identity, "surface": c.surface,
                "machine_id": c.machine_id, "is_master": c.is_master, "fresh": v.fresh,
                "last_heartbeat": rfc3339(c.last_heartbeat), "registered_at": rfc3339(c.registered_at),
            })
        })
        .collect();
    json!({
        "project": project, "master": master, "controllers": controllers,
        "freshness_seconds": st.freshness.as_secs(), "read_at": rfc3339(st.now),
        "paused": super::pause::paused_json(st.paused.as_ref()),
    })
}

/// `master status`'s text report.
fn status_text(project: &str, st: &Status) -> String {
    let mut text = match &st.paused {
        Some(p) => format!("{}\n", super::pause::paused_line(project, p)),
        None => String::new(),
    };
    text.push_str(&match &st.slot.master {
        Some(m) => format!("project {project}: master {} epoch {}", describe(m), st.slot.epoch),
        None => format!("project {project}: no master (epoch {})", st.slot.epoch),
    });
    if st.controllers.is_empty() {
        text.push_str("\nno controllers registered");
        return text;
    }
    let mut table =
        super::output::table(&["session", "identity", "surface", "machine", "master", "fresh", "last heartbeat"]);
    for v in &st.controllers {
        let c = &v.controller;
        table.add_row([
            c.session_id.clone(),
            c.identity.clone(),
            c.surface.clone(),
            c.machine_id.clone(),
            if c.is_master { "yes" } else { "" }.to_string(),
            if v.fresh { "yes".to_string() } else { "stale".to_string() },
            age(st.now, c.last_heartbeat),
        ]);
    }
    text.push_str(&format!("\n{table}\n(fresh: a heartbeat within {} s)", st.freshness.as_secs()));
    text
}

fn print_status(project: &str, st: &Status, out: Output) -> Result<()> {
    if out.json {
        return Ok(out.json(&status_json(project, st))?);
    }
    Ok(out.line(&status_text(project, st))?)
}

fn print_outcome(project: &str, o: &MasterOutcome, by_operator: Option<&str>, out: Output) -> Result<()> {
    if o.dry_run {
        return print_plan(project, o, out);
    }
    if out.json {
        let mut doc = json!({
            "ok": true,
            "project": project,
            "previous_master": o.previous_master,
            "new_master": o.new_master,
            "epoch": o.epoch,
            "changed": o.changed,
        });
        if let Some(op) = by_operator {
            doc["preempted"] = json!(o.preempted);
            doc["by_operator"] = json!(op);
        }
        out.json(&doc)?;
        return Ok(());
    }
    if !o.changed {
        return Ok(out.line(&format!(
            "{} already is master of {project} (epoch {}); nothing changed",
            describe(&o.new_master),
            o.epoch
        ))?);
    }
    let from = o.previous_master.as_ref().map_or("nobody".to_string(), describe);
    out.line(&format!("master of {project}: {from} -> {} (epoch {})", describe(&o.new_master), o.epoch))?;
    if o.previous_master.is_some() {
        out.note("MasterPreempted was sent to the previous master's inbox");
    }
    Ok(())
}

/// A dry run's plan: the real answer's keys, `epoch` as `new_epoch`, and `dry_run: true`.
fn print_plan(project: &str, o: &MasterOutcome, out: Output) -> Result<()> {
    if out.json {
        out.json(&json!({
            "dry_run": true,
            "project": project,
            "previous_master": o.previous_master,
            "new_master": o.new_master,
            "new_epoch": o.epoch,
            "preempted": o.preempted,
            "changed": o.changed,
        }))?;
        return Ok(());
    }
    if !o.changed {
        out.line(&format!(
            "dry run: {} already is master of {project} (epoch {}); nothing would change",
            describe(&o.new_master),
            o.epoch
        ))?;
    } else {
        let from = o.previous_master.as_ref().map_or("nobody".to_string(), describe);
        out.line(&format!(
            "dry run: master of {project} would go from {from} to {} (epoch {})",
            describe(&o.new_master),
            o.epoch
        ))?;
        for p in &o.preempted {
            out.line(&format!("  would preempt {}", describe(p)))?;
        }
    }
    out.note("dry run: nothing changed");
    Ok(())
}

/// `master history`'s answer: JSON {"changes":[...]}, or a table.
/// When `redacted`, actor and reason are null (JSON) or `-` (table): withheld, not absent.
fn print_history(project: &str, changes: &[MasterChange], redacted: bool, out: Output) -> Result<()> {
    if out.json {
        let list: Vec<_> = changes
            .iter()
            .map(|c| {
                json!({"at": rfc3339(c.at), "epoch": c.epoch, "from": c.from, "to": c.to, "verb": c.verb,
                       "actor": c.actor, "reason": c.reason})
            })
            .collect();
        let mut doc = json!({"changes": list});
        if redacted {
            doc["redacted"] = json!(true);
        }
        out.json(&doc)?;
        return Ok(());
    }
    if changes.is_empty() {
        return Ok(out.line(&format!("project {project}: no change of master in the audit log"))?);
    }
    let side = |m: &Option<MasterRef>| m.as_ref().map_or("-".to_string(), describe);
    let mut table = super::output::table(&["at", "epoch", "from", "to", "verb", "actor", "reason"]);
    for c in changes {
        table.add_row([
            rfc3339(c.at),
            c.epoch.to_string(),
            side(&c.from),
            side(&c.to),
            c.verb.clone(),
            c.actor.clone().unwrap_or_else(|| "-".into()),
            if redacted { "-".into() } else { c.reason.clone().unwrap_or_default() },
        ]);
    }
    Ok(out.line(&table.to_string())?)
}
