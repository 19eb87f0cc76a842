//! `writerctl session register|heartbeat|deregister`: controller rows in the coordinator.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use writerctl::claim::master::ControllerKey;

use super::coord::{CoordArgs, RequestArgs, rfc3339, session_token};
use super::output::Output;
use super::session::TokenFile;

/// Controller sessions: register, heartbeat, deregister.
#[derive(Debug, Subcommand)]
pub enum SessionCmd {
    /// Register a controller (UPSERT on project, identity, surface, machine) and print its
    /// session id and token; the first one registered with no master becomes master.
    #[command(
        after_help = "Examples:\n  writerctl session register --project web --identity alice --token-file alice.tok\n  writerctl session register --project web --identity bob --machine host-b --json"
    )]
    Register(RegisterArgs),
    /// Renew a session's heartbeat (targets must be fresh to receive mastership).
    #[command(
        after_help = "Examples:\n  writerctl session heartbeat --project web --session SID --token-file alice.tok"
    )]
    Heartbeat(SessionRefArgs),
    /// Remove a session's row; a master that leaves empties the master slot.
    #[command(
        after_help = "Examples:\n  writerctl session deregister --project web --session SID --token-file alice.tok"
    )]
    Deregister(SessionRefArgs),
}

/// `session register`.
#[derive(Debug, Args)]
pub struct RegisterArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Project id.
    #[arg(long, value_name = "P")]
    pub project: String,
    /// Controller identity (who it is).
    #[arg(long, value_name = "I")]
    pub identity: String,
    /// Surface within the machine (cli, ide, daemon, ...).
    #[arg(long, value_name = "S", default_value = "cli")]
    pub surface: String,
    /// Machine id [default: /etc/machine-id, else the hostname].
    #[arg(long, value_name = "M")]
    pub machine: Option<String>,
    /// Write the session token to this new file (0600, never overwritten) instead of
    /// printing it.
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
    /// The token this controller had before a restart: re-registering a key whose session is
    /// still live (heartbeat within the freshness threshold) needs it.
    #[arg(long, value_name = "F")]
    pub previous_token_file: Option<PathBuf>,
}

/// A session addressed by id, authenticated by its token.
#[derive(Debug, Args)]
pub struct SessionRefArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Project id.
    #[arg(long, value_name = "P")]
    pub project: String,
    /// The session id `register` printed.
    #[arg(long, value_name = "SID")]
    pub session: String,
    /// Read the session token from this file [default: env WRITERCTL_SESSION_TOKEN].
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
}

/// This machine's id: /etc/machine-id, else the hostname.
pub fn default_machine_id() -> String {
    std::fs::read_to_string("/etc/machine-id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| rustix::system::uname().nodename().to_string_lossy().into_owned())
}

#[derive(Serialize)]
struct RegisterJson<'a> {
    session_id: &'a str,
    token: Option<&'a str>,
    is_master: bool,
    epoch: u64,
    project: &'a str,
    identity: &'a str,
    surface: &'a str,
    machine_id: &'a str,
    token_file: Option<String>,
}

/// Runs a `session` subcommand.
pub fn run(cmd: SessionCmd, out: Output) -> Result<()> {
    match cmd {
        SessionCmd::Register(a) => register(a, out),
        SessionCmd::Heartbeat(a) => {
            let token = session_token(a.token_file.as_deref())?;
            let row = a.coord.open_write(&a.request)?.heartbeat(&a.project, &a.session, &token)?;
            if out.json {
                out.json(&serde_json::json!({
                    "session_id": row.session_id, "is_master": row.is_master, "last_heartbeat": rfc3339(row.last_heartbeat)
                }))?;
            } else {
                out.line(&format!("heartbeat recorded for {} ({})", row.session_id, row.identity))?;
            }
            Ok(())
        }
        SessionCmd::Deregister(a) => {
            let token = session_token(a.token_file.as_deref())?;
            let (was_master, epoch) = a.coord.open_write(&a.request)?.deregister(&a.project, &a.session, &token)?;
            if out.json {
                out.json(&serde_json::json!({
                    "session_id": a.session, "deregistered": true, "was_master": was_master, "epoch": epoch
                }))?;
            } else {
                out.line(&format!("deregistered {}", a.session))?;
                if was_master {
                    out.note(&format!(
                        "it was master: project {} has no master now (epoch {epoch}); the next controller to register \
                         becomes master, or an operator can `writerctl master claim`",
                        a.project
                    ));
                }
            }
            Ok(())
        }
    }
}

fn register(a: RegisterArgs, out: Output) -> Result<()> {
    let key = ControllerKey {
        identity: a.identity.clone(),
        surface: a.surface.clone(),
        machine_id: a.machine.clone().unwrap_or_else(default_machine_id),
    };
    // The token file is created (empty, 0600, never over an existing file) before the
    // verb: a path we cannot write must fail before a row exists (or an existing row's token
    // is rotated) whose token nobody could then read.
    let mut token_out = match &a.token_file {
        Some(f) => Some(TokenFile::create(f).map_err(writerctl::claim::ClaimError::InvalidArgument)?),
        None => None,
    };
    let previous = match &a.previous_token_file {
        Some(f) => Some(super::coord::session_token(Some(f))?),
        None => None,
    };
    let reg = match a.coord.open_write(&a.request).and_then(|c| Ok(c.register(&a.project, &key, previous.as_ref())?)) {
        Ok(r) => r,
        Err(e) => {
            if let Some(t) = token_out.take() {
                t.discard();
            }
            return Err(e);
        }
    };
    if let Some(mut t) = token_out {
        t.write(reg.token.expose()).with_context(|| format!("cannot write token file {}", t.path().display()))?;
    }
    let c = &reg.controller;
    if out.json {
        out.json(&RegisterJson {
            session_id: &c.session_id,
            token: a.token_file.is_none().then(|| reg.token.expose()),
            is_master: c.is_master,
            epoch: reg.epoch,
            project: &a.project,
            identity: &c.identity,
            surface: &c.surface,
            machine_id: &c.machine_id,
            token_file: a.token_file.as_ref().map(|p| p.display().to_string()),
        })?;
    } else {
        out.line(&format!("session_id {}", c.session_id))?;
        match &a.token_file {
            Some(f) => out.note(&format!("token written to {}", f.display())),
            None => out.line(&format!("token {}", reg.token.expose()))?,
        }
        if c.is_master {
            out.note(&format!("{} is master of project {} (epoch {})", c.identity, a.project, reg.epoch));
        }
    }
    Ok(())
}
