//! `writerctl seal`: parse, ask the engine which way the seal goes
//! ([`writerctl::supervisor::seal_route`]), carry it out, print.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use writerctl::config::Settings;
use writerctl::error::ErrorCode;
use writerctl::lockfile::history::HistoryEvent;
use writerctl::lockfile::record::TranscriptProof;
use writerctl::lockfile::seal::seal;
use writerctl::lockfile::transcript::ProofOptions;
use writerctl::lockfile::{DirMode, LockError, open_site};
use writerctl::supervisor::seal_route::{
    AskError, RouteError, SealAnswer, SealRequest, SealRoute, ask_supervisor, route,
};

use super::Coded;
use super::args::SessionArgs;
use super::output::{Output, hash_progress, log_event};
use super::session::{Resolved, read_token, resolve, transcript_key};

/// Seal the lock you own for handoff: certify the drained transcript so a replacement
/// can take over (needs experimental.session_writer_lease).
///
/// Run it after the writer has drained (managed shutdown). Hashes the transcript through one
/// kept-open descriptor and replaces the active lock with a sealed record carrying its key,
/// existence, length and SHA-256, in one claimed transition. On any failure the active lock stays.
/// Needs experimental.session_writer_lease.
#[derive(Debug, Args)]
#[command(mut_arg("session", super::args::session_from_env))]
pub struct SealArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// Read the owner token from this file (a regular file, not a symlink, FIFO or device)
    /// [default: env WRITERCTL_OWNER_TOKEN]. Without a
    /// token, ask the `writerctl run` supervising this session to drain its writer and seal
    /// (the Kubernetes preStop path), and wait for the result.
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,

    /// The supervisor's control socket [default: derived from the runtime directory and
    /// session, as `writerctl run` derives it].
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,

    /// Seconds to wait for a supervisor to finish draining and sealing [default: 3600].
    /// Only without a token (the supervisor path).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,

    /// Without a token, the supervisor records the seal with this reason (an older
    /// supervisor ignores it and records its own).
    #[command(flatten)]
    pub reason: super::args::ReasonArgs,
}

#[derive(Serialize)]
struct SealJson<'a> {
    session_id: &'a str,
    state: &'static str,
    sealed_at: &'a str,
    transcript: &'a TranscriptProof,
    /// `writerctl_exclusive`: how the sealer proved no other open file description could
    /// write the transcript (`read_lease`, `no_transcript`, `unproven: <why>`); null when
    /// the seal does not say (a direct seal by the writer).
    exclusive: Option<&'a str>,
}

/// Runs `seal`.
pub fn run(args: SealArgs, out: Output, settings: Settings) -> Result<()> {
    let r = resolve(&args.session)?;
    let request = SealRequest {
        token: args.token_file.is_some() || std::env::var_os("WRITERCTL_OWNER_TOKEN").is_some(),
        transcript_named: args.session.transcript_key.is_some() || args.session.project_root.is_some(),
        control_socket: args.control_socket.as_deref(),
        timeout: args.timeout.map(Duration::from_secs),
        gate: settings.session_writer_lease,
    };
    match route(&request, &r.paths.lock_path()) {
        Ok(SealRoute::Direct) => seal_directly(&args, &r, out),
        Ok(SealRoute::Supervisor { sockets, timeout }) => {
            let reason = args.reason.parse()?;
            let reason = reason.as_ref().map(|r| r.as_str());
            match ask_supervisor(&sockets, timeout, &r.runtime_dir, &r.paths, &r.session_id, reason) {
                Ok(answer) => print_answer(out, &r.session_id, answer),
                Err(AskError::Control(e)) => Err(e.into()),
                Err(AskError::Lock(e)) => Err(e.into()),
                Err(AskError::Refused(e)) => Err(Coded {
                    code: ErrorCode::parse(&e.code).unwrap_or(ErrorCode::Internal),
                    message: e.message,
                    hint: e.hint,
                }
                .into()),
                Err(e @ AskError::Incomplete) => Err(anyhow::anyhow!("{e}")),
            }
        }
        Err(RouteError::TranscriptWithoutToken) => Err(super::usage(
            "without a token, seal asks the `writerctl run` supervisor, which seals the transcript it was \
             started with: --transcript-key and --project-root cannot apply",
            "give those flags to `writerctl run` instead, or seal directly with --token-file F",
        )),
        Err(RouteError::SupervisorOptionsWithToken) => Err(super::usage(
            "--control-socket and --timeout apply only when seal asks a `writerctl run` supervisor (no token)",
            "drop them, or drop --token-file (and WRITERCTL_OWNER_TOKEN) to ask the supervisor",
        )),
        Err(RouteError::FeatureDisabled) => Err(LockError::FeatureDisabled.into()),
    }
}

/// The writer (or its operator) seals with the owner token.
fn seal_directly(args: &SealArgs, r: &Resolved, out: Output) -> Result<()> {
    let key = transcript_key(&args.session, &r.session_id)?;
    let token = read_token(args.token_file.as_deref())?;
    let reason = args.reason.parse()?;
    let site = open_site(&r.runtime_dir, r.paths.clone(), &r.session_id, DirMode::Existing)?;
    let progress = hash_progress(out);
    let sealed = seal(&site, &r.runtime_dir, &key, &token, ProofOptions::default(), &mut |d, t| progress(d, t))?;
    super::history::note(&site.dir, &HistoryEvent::of_seal(&r.session_id, &sealed, reason.as_ref()));
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
    let exclusive = sealed.record.seal().and_then(|s| s.exclusive.clone());
    print_sealed(out, &r.session_id, &sealed.sealed_at, &sealed.proof, exclusive.as_deref())
}

fn print_sealed(
    out: Output,
    session_id: &str,
    sealed_at: &str,
    p: &TranscriptProof,
    exclusive: Option<&str>,
) -> Result<()> {
    if out.json {
        out.json(&SealJson { session_id, state: "sealed", sealed_at, transcript: p, exclusive })?;
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

fn print_state(out: Output, session: &str, state: &str) -> Result<()> {
    if out.json {
        out.json(&serde_json::json!({"session_id": session, "state": state}))?;
    } else {
        out.line(&format!("session {session}: the supervisor stopped its writer and {state} the lock"))?;
    }
    Ok(())
}

fn print_answer(out: Output, session: &str, answer: SealAnswer) -> Result<()> {
    match answer {
        SealAnswer::Sealed { sealed_at, transcript, exclusive } => {
            print_sealed(out, session, &sealed_at, &transcript, exclusive.as_deref())
        }
        // Issue 38 item 7: a preStop seal that could only release is not a success. The
        // writer did stop and the lock is free, but nothing certifies the transcript for the
        // next writer, and a hook that exits 0 would hide that from everyone.
        SealAnswer::Stopped(state) if state == "released" => Err(Coded {
            code: ErrorCode::FeatureDisabled,
            message: format!(
                "session {session} was released, not sealed: its `writerctl run` supervisor runs with the feature gate off, so it stopped its writer and released the lock; no certified handoff was made"
            ),
            hint: Some(
                "set WRITERCTL_SESSION_WRITER_LEASE=1 (or `session_writer_lease = true` under [experimental] in the config file) for the `writerctl run` container; it reads the gate once at start".into(),
            ),
        }
        .into()),
        SealAnswer::Stopped(state) => print_state(out, session, &state),
    }
}
