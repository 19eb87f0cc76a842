//! `writerctl session register|heartbeat|deregister`: controller rows in the coordinator.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use writerctl::claim::ClaimError;
use writerctl::claim::masters::RegisterRequest;
use writerctl::claim::secret::{Secret, is_machine_secret};
use writerctl::coordinator::verbs::master::{Deregister, Heartbeat, Register};
use writerctl::coordinator::wire::{NoBody, ProjectPath, SessionPath};

use super::coord::{ProjectWriteArgs, optional_secret, read_secret_file, rfc3339, session_token};
use super::output::Output;
use super::session::TokenFile;

/// Controller sessions: register, heartbeat, deregister.
#[derive(Debug, Subcommand)]
pub enum SessionCmd {
    /// Register a controller (UPSERT on project, identity, surface, machine) and print its
    /// session id and token; the first one registered with no master becomes master.
    ///
    /// The caller proves the identity: with its key (`writerctl identity add`), or, for a
    /// restarted controller, with its row's current token. Otherwise `unauthorized` (6),
    /// unless the server runs --open-registration and nobody enrolled the identity (such a
    /// session, `open-...`, ends when the project's first identity, or this one, is enrolled,
    /// and is refused by a server started without the flag). An identity that reads like an
    /// existing one (TR39 skeleton, case folded) is refused with `name_confusable` (2). If
    /// the token file cannot be written after the registration applied: `answer_not_delivered`
    /// (75), with the request id and the command that recovers the token.
    Register(RegisterArgs),
    /// Renew a session's heartbeat (targets must be fresh to receive mastership).
    Heartbeat(SessionRefArgs),
    /// Remove a session's row; a master that leaves empties the master slot.
    Deregister(SessionRefArgs),
}

/// `session register`.
#[derive(Debug, Args)]
pub struct RegisterArgs {
    #[command(flatten)]
    pub at: ProjectWriteArgs,
    /// Controller identity (who it is).
    #[arg(long, value_name = "I")]
    pub identity: String,
    /// Surface within the machine (cli, ide, daemon, ...).
    #[arg(long, value_name = "S", default_value = "cli")]
    pub surface: String,
    /// Machine id [default: /etc/machine-id, else the hostname].
    #[arg(long, value_name = "M")]
    pub machine: Option<String>,
    /// Write the session token to this file (0600) instead of printing it. A new path is
    /// created; an existing file must hold this controller's current token (a restart): it
    /// proves the row and is replaced by the new token. Anything else there is refused.
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
    /// The token this controller had before a restart [default: env WRITERCTL_SESSION_TOKEN]:
    /// it proves the row it re-registers, and re-registering a row that is still live
    /// (heartbeat within the freshness threshold) needs it.
    #[arg(long, value_name = "F")]
    pub previous_token_file: Option<PathBuf>,
    /// The identity's key from `writerctl identity add` [default: env WRITERCTL_IDENTITY_KEY].
    /// A registration proves the identity with it, or with --previous-token-file.
    #[arg(long, value_name = "F")]
    pub identity_key_file: Option<PathBuf>,
}

/// A session addressed by id, authenticated by its token.
#[derive(Debug, Args)]
pub struct SessionRefArgs {
    #[command(flatten)]
    pub at: ProjectWriteArgs,
    /// The session id `register` printed.
    #[arg(long, value_name = "SID")]
    pub session: String,
    /// Read the session token from this file [default: env WRITERCTL_SESSION_TOKEN].
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
}

/// The session token an existing `--token-file` holds (a restarted controller's), or None
/// when the path does not exist. Anything else there (a symlink, a directory, a file that
/// is not a session token) is refused before anything changes: it is never overwritten.
fn held_token(path: &Path) -> Result<Option<Secret>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ClaimError::invalid("--token-file", format!("token file {}: {e}", path.display())).into()),
    };
    let refuse = || {
        ClaimError::invalid(
            "--token-file",
            format!(
                "{} exists and does not hold a session token; pass a new path to --token-file (nothing was changed)",
                path.display()
            ),
        )
    };
    if !meta.file_type().is_file() {
        return Err(refuse().into());
    }
    let token = read_secret_file(path, "session token")?;
    let t = token.expose().trim();
    if !is_machine_secret(t) {
        return Err(refuse().into());
    }
    Ok(Some(token))
}

/// Where a replacement token is written before it is renamed over `path`.
fn sibling(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".new-{}", std::process::id()));
    path.with_file_name(name)
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
            let at = SessionPath::of(&a.at.project, &a.session);
            let row = a.at.write.open()?.call::<Heartbeat>(at, NoBody {}, Some(&token))?;
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
            let at = SessionPath::of(&a.at.project, &a.session);
            let gone = a.at.write.open()?.call::<Deregister>(at, NoBody {}, Some(&token))?;
            let (was_master, epoch) = (gone.was_master, gone.epoch);
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
                        a.at.project
                    ));
                }
            }
            Ok(())
        }
    }
}

fn register(a: RegisterArgs, out: Output) -> Result<()> {
    // The token file is reserved (a new file, 0600) before the verb: a path we cannot write
    // must fail before a row exists (or an existing row's token is rotated) whose token
    // nobody could then read. An existing --token-file is this controller's own from before
    // a restart: it is read as the row's current token and replaced by the new one.
    let (mut token_out, held) = match &a.token_file {
        Some(f) => match held_token(f)? {
            Some(t) => {
                (Some(TokenFile::create(&sibling(f)).map_err(|m| ClaimError::invalid("--token-file", m))?), Some(t))
            }
            None => (Some(TokenFile::create(f).map_err(|m| ClaimError::invalid("--token-file", m))?), None),
        },
        None => (None, None),
    };
    let held_was_read = held.is_some();
    let previous = match held {
        Some(t) => Some(t),
        None => optional_secret(a.previous_token_file.as_deref(), "WRITERCTL_SESSION_TOKEN", "session token")?,
    };
    let identity_key = optional_secret(a.identity_key_file.as_deref(), "WRITERCTL_IDENTITY_KEY", "identity key")?;
    let body = RegisterRequest {
        identity: a.identity.clone(),
        surface: a.surface.clone(),
        machine_id: a.machine.clone().unwrap_or_else(default_machine_id),
        previous_token: previous.map(|t| t.expose().trim().to_string()),
        identity_key: identity_key.map(|k| k.expose().trim().to_string()),
        // What the command has no flag for keeps its default.
        ..RegisterRequest::default()
    };
    let (request, request_id) = a.at.write.request.pinned()?;
    let at = ProjectPath::of(&a.at.project);
    let reg = match a.at.write.coord.open_write(&request).and_then(|c| Ok(c.call::<Register>(at, body, None)?)) {
        Ok(r) => r,
        Err(e) => {
            if let Some(t) = token_out.take() {
                t.discard();
            }
            return Err(e);
        }
    };
    if let (Some(mut t), Some(dest)) = (token_out, &a.token_file) {
        if let Err(e) = t.write(&reg.token) {
            let path = t.path().to_path_buf();
            t.discard();
            // A re-registration read the old token from the file: the retry must present it
            // again (the request id answers only the same request).
            let extra = match (held_was_read, &a.previous_token_file) {
                (true, _) => vec!["--previous-token-file".to_string(), dest.display().to_string()],
                _ => Vec::new(),
            };
            return Err(super::coord::answer_not_delivered(
                "session token",
                &path,
                "--token-file",
                &request_id,
                &e,
                &extra,
                "register again with the identity's key (--identity-key-file); the token issued here is lost and \
                 the row is taken over once it stops heartbeating",
            ));
        }
        if t.path() != dest.as_path() {
            // The old token stopped working with this registration: the rename puts the new
            // one in its place in one step (never a half-written file).
            std::fs::rename(t.path(), dest).with_context(|| {
                format!("cannot replace token file {}; the new token is in {}", dest.display(), t.path().display())
            })?;
        }
    }
    let c = &reg.controller;
    if out.json {
        out.json(&RegisterJson {
            session_id: &c.session_id,
            token: a.token_file.is_none().then_some(reg.token.as_str()),
            is_master: c.is_master,
            epoch: reg.epoch,
            project: &a.at.project,
            identity: &c.identity,
            surface: &c.surface,
            machine_id: &c.machine_id,
            token_file: a.token_file.as_ref().map(|p| p.display().to_string()),
        })?;
    } else {
        out.line(&format!("session_id {}", c.session_id))?;
        match &a.token_file {
            Some(f) => out.note(&format!("token written to {}", f.display())),
            None => out.line(&format!("token {}", reg.token))?,
        }
        if c.is_master {
            out.note(&format!("{} is master of project {} (epoch {})", c.identity, a.at.project, reg.epoch));
        }
    }
    Ok(())
}
