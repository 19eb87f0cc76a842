//! `writerctl seal`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::config::Settings;
use writerctl::lockfile::record::TranscriptProof;
use writerctl::lockfile::seal::seal;
use writerctl::lockfile::transcript::ProofOptions;
use writerctl::lockfile::{DirMode, LockError, open_site};

use std::time::Duration;
use writerctl::error::ErrorCode;
use writerctl::supervisor::control::{ControlError, default_socket, request_seal};

use super::Coded;
use super::output::{Output, hash_progress, log_event};
use super::session::{read_token, resolve, transcript_key};
use crate::cli::SessionArgs;

/// Seal the lock you own for handoff (managed shutdown), after the writer has drained.
///
/// Hashes the transcript through one kept-open descriptor and replaces the active lock with
/// a sealed record carrying its key, existence, length and SHA-256, in one claimed
/// transition. On any failure the active lock stays. Needs experimental.session_writer_lease.
#[derive(Debug, Args)]
pub struct SealArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// Read the owner token from this file [default: env WRITERCTL_OWNER_TOKEN]. Without a
    /// token, ask the `writerctl run` supervising this session to drain its writer and seal
    /// (the Kubernetes preStop path), and wait for the result.
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,

    /// The supervisor's control socket [default: derived from the runtime directory and
    /// session, as `writerctl run` derives it].
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,

    /// Seconds to wait for a supervisor to finish draining and sealing.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub timeout: u64,
}

#[derive(Serialize)]
struct SealJson<'a> {
    session_id: &'a str,
    state: &'static str,
    sealed_at: &'a str,
    transcript: &'a TranscriptProof,
}

/// Runs `seal`.
pub fn run(args: SealArgs, out: Output, settings: Settings) -> Result<()> {
    if !settings.session_writer_lease {
        return Err(LockError::FeatureDisabled.into());
    }
    let r = resolve(&args.session)?;
    if args.token_file.is_none() && std::env::var_os("WRITERCTL_OWNER_TOKEN").is_none() {
        return seal_via_supervisor(&args, &r.runtime_dir, &r.session_id, out);
    }
    let key = transcript_key(&args.session, &r.session_id)?;
    let token = read_token(args.token_file.as_deref())?;
    let site = open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Existing)?;
    let progress = hash_progress(out);
    let sealed = seal(&site, &r.runtime_dir, &key, &token, ProofOptions::default(), &mut |d, t| progress(d, t))?;
    log_event(
        "seal",
        &[
            ("session", r.session_id.clone()),
            ("host", sealed.holder.hostname.clone()),
            ("pid", sealed.holder.pid.to_string()),
            ("sealed_at", sealed.sealed_at.clone()),
        ],
    );
    if !sealed.durable {
        out.note("warning: the lock directory could not be fsynced; the seal may not survive a crash");
    }
    print_sealed(out, &r.session_id, &sealed.sealed_at, &sealed.proof)
}

fn print_sealed(out: Output, session_id: &str, sealed_at: &str, p: &TranscriptProof) -> Result<()> {
    if out.json {
        out.json(&SealJson { session_id, state: "sealed", sealed_at, transcript: p })?;
    } else {
        out.line(&format!(
            "sealed session {session_id} at {sealed_at}: {} ({}, {} bytes, sha256 {})",
            p.relative_path,
            if p.exists { "exists" } else { "absent" },
            p.byte_length,
            p.sha256
        ))?;
    }
    Ok(())
}

/// The preStop path: the supervisor drains its writer, seals, and answers; we exit with its
/// result, only once the seal is on disk.
fn seal_via_supervisor(args: &SealArgs, runtime_dir: &std::path::Path, session: &str, out: Output) -> Result<()> {
    let socket = args.control_socket.clone().unwrap_or_else(|| default_socket(runtime_dir, session));
    let reply = request_seal(&socket, session, Duration::from_secs(args.timeout)).map_err(|e| match e {
        ControlError::NoSupervisor(_) => anyhow::Error::new(LockError::InvalidArgument(format!(
            "no owner token (--token-file or WRITERCTL_OWNER_TOKEN), and {e}"
        ))),
        other => anyhow::Error::new(other),
    })?;
    match (reply.ok, reply.state.as_deref(), reply.sealed_at, reply.transcript, reply.error) {
        (true, Some("sealed"), Some(at), Some(t), _) => print_sealed(out, session, &at, &t),
        (true, Some(state), _, _, _) => {
            if out.json {
                out.json(&serde_json::json!({"session_id": session, "state": state}))?;
            } else {
                out.line(&format!("session {session}: the supervisor stopped its writer and {state} the lock"))?;
            }
            Ok(())
        }
        (_, _, _, _, Some(e)) => Err(Coded {
            code: ErrorCode::parse(&e.code).unwrap_or(ErrorCode::Internal),
            message: e.message,
            hint: e.hint,
        }
        .into()),
        _ => Err(anyhow::anyhow!("the supervisor sent an incomplete answer")),
    }
}
