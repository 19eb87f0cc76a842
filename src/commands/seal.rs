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
use writerctl::lockfile::SystemProbe;
use writerctl::lockfile::error::Unavailable;
use writerctl::lockfile::status::{LockState, status_one};
use writerctl::supervisor::control::{ControlError, candidate_sockets, request_seal};

use super::session::Resolved;

use super::Coded;
use super::args::SessionArgs;
use super::output::{Output, hash_progress, log_event};
use super::session::{read_token, resolve, transcript_key};

/// Seal the lock you own for handoff: certify the drained transcript so a replacement
/// can take over (needs experimental.session_writer_lease).
///
/// Run it after the writer has drained (managed shutdown). Hashes the transcript through one
/// kept-open descriptor and replaces the active lock with a sealed record carrying its key,
/// existence, length and SHA-256, in one claimed transition. On any failure the active lock stays.
/// Needs experimental.session_writer_lease.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  writerctl seal --session \"$SID\" --token-file owner.token --json\n  writerctl seal --session \"$SID\"        # preStop: asks the local `writerctl run`"
)]
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
}

/// How long the preStop path waits for a supervisor by default.
const DEFAULT_SUPERVISOR_TIMEOUT_SECONDS: u64 = 3600;

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
    // Without a token this is the preStop path: the supervisor decides (it seals with the
    // gate on and releases with it off, by its own configuration).
    if args.token_file.is_none() && std::env::var_os("WRITERCTL_OWNER_TOKEN").is_none() {
        // The supervisor seals the transcript it was started with; the request carries no
        // key, so a key given here would be dropped without a word.
        if args.session.transcript_key.is_some() || args.session.project_root.is_some() {
            return Err(super::usage(
                "without a token, seal asks the `writerctl run` supervisor, which seals the transcript it was \
                 started with: --transcript-key and --project-root cannot apply",
                "give those flags to `writerctl run` instead, or seal directly with --token-file F",
            ));
        }
        return seal_via_supervisor(&args, &r, out);
    }
    // With a token nothing talks to a supervisor: its flags would be ignored.
    if args.control_socket.is_some() || args.timeout.is_some() {
        return Err(super::usage(
            "--control-socket and --timeout apply only when seal asks a `writerctl run` supervisor (no token)",
            "drop them, or drop --token-file (and WRITERCTL_OWNER_TOKEN) to ask the supervisor",
        ));
    }
    if !settings.session_writer_lease {
        return Err(LockError::FeatureDisabled.into());
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

/// The preStop path: the supervisor drains its writer, seals, and answers; we exit with its
/// result, only once the seal is on disk.
fn seal_via_supervisor(args: &SealArgs, r: &Resolved, out: Output) -> Result<()> {
    let lock_path = r.paths.lock_path();
    let sockets = match &args.control_socket {
        Some(s) => vec![s.clone()],
        None => candidate_sockets(&lock_path),
    };
    let timeout = Duration::from_secs(args.timeout.unwrap_or(DEFAULT_SUPERVISOR_TIMEOUT_SECONDS));
    for socket in &sockets {
        match request_seal(socket, &r.session_id, timeout) {
            Ok(reply) => return print_reply(out, &r.session_id, reply),
            Err(ControlError::NoSupervisor(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    // Nobody listens. A supervisor stops listening when its writer exits, before it seals:
    // if the lock is held by a live local process, that supervisor is mid-handoff — wait for
    // the outcome instead of failing a preStop hook that is merely late.
    wait_for_handoff(r, timeout, out).unwrap_or_else(|| {
        Err(LockError::InvalidArgument(format!(
            "no owner token (--token-file or WRITERCTL_OWNER_TOKEN), and no `writerctl run` supervises this session here (tried {})",
            sockets.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")
        ))
        .into())
    })
}

/// Polls the lock while a live local holder finishes its handoff: `Some(result)` once it is
/// sealed or released; `None` when no live holder is handing off.
fn wait_for_handoff(r: &Resolved, timeout: Duration, out: Output) -> Option<Result<()>> {
    let deadline = std::time::Instant::now() + timeout;
    let mut saw_live_holder = false;
    loop {
        let st = status_one(&r.runtime_dir, &r.paths, &r.session_id, None, &SystemProbe).ok()?;
        match (st.state, st.liveness.as_ref().map(|l| l.code)) {
            (LockState::Sealed, _) => {
                let p = st.proof?;
                return Some(print_sealed(out, &r.session_id, &p.sealed_at, &p.transcript, p.exclusive.as_deref()));
            }
            (LockState::Missing, _) if saw_live_holder => {
                return Some(print_state(out, &r.session_id, "released"));
            }
            (LockState::Active, Some("running")) | (LockState::InTransition, _)
                if st.owner.as_ref().is_some_and(|o| is_writerctl_process(o.pid)) =>
            {
                saw_live_holder = true;
            }
            _ => return None,
        }
        if std::time::Instant::now() >= deadline {
            return Some(Err(LockError::Unavailable {
                reason: Unavailable::Io,
                detail: Some("the supervisor did not finish its handoff within --timeout".into()),
                source: None,
            }
            .into()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Is `pid` a writerctl process (a `run` supervisor is the holder of its lock; a lock from
/// plain `acquire` names the caller instead)?
fn is_writerctl_process(pid: u64) -> bool {
    let (Ok(me), Ok(them)) = (std::env::current_exe(), std::fs::read_link(format!("/proc/{pid}/exe"))) else {
        return false;
    };
    me == them
}

fn print_state(out: Output, session: &str, state: &str) -> Result<()> {
    if out.json {
        out.json(&serde_json::json!({"session_id": session, "state": state}))?;
    } else {
        out.line(&format!("session {session}: the supervisor stopped its writer and {state} the lock"))?;
    }
    Ok(())
}

fn print_reply(out: Output, session: &str, reply: writerctl::supervisor::control::Reply) -> Result<()> {
    let exclusive = reply.exclusive;
    match (reply.ok, reply.state.as_deref(), reply.sealed_at, reply.transcript, reply.error) {
        (true, Some("sealed"), Some(at), Some(t), _) => print_sealed(out, session, &at, &t, exclusive.as_deref()),
        (true, Some(state), _, _, _) => print_state(out, session, state),
        (_, _, _, _, Some(e)) => Err(Coded {
            code: ErrorCode::parse(&e.code).unwrap_or(ErrorCode::Internal),
            message: e.message,
            hint: e.hint,
        }
        .into()),
        _ => Err(anyhow::anyhow!("the supervisor sent an incomplete answer")),
    }
}
