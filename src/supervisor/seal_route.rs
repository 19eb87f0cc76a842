//! Which way a `writerctl seal` goes, and what it waits for on the supervisor's way.
//!
//! ```text
//! route(request) ─► Direct                 the caller has the owner token: it seals itself
//!                │                         (crate::lockfile::seal::seal, gate required)
//!                └► Supervisor{sockets}    no token (the Kubernetes preStop hook): ask the
//!                                          `writerctl run` of this session to drain and seal
//! ask_supervisor(sockets) ─► the supervisor's answer, once the seal is on disk
//!                         └► nobody listens, but the lock's holder is a live writerctl here:
//!                            it is mid-handoff (a supervisor stops listening when its writer
//!                            exits, before it seals) — wait for the lock to be sealed or
//!                            released, at most `timeout`
//! ```
//!
//! Why the supervisor's way needs no gate here: the supervisor decides with its own
//! configuration (it seals with the gate on and releases with it off). Nothing here prints.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::lockfile::SystemProbe;
use crate::lockfile::error::{LockError, Unavailable};
use crate::lockfile::paths::LockPaths;
use crate::lockfile::record::TranscriptProof;
use crate::lockfile::status::{LockState, status_one};

use super::control::{ControlError, Reply, WireError, candidate_sockets, request_seal};

/// How long the preStop path waits for a supervisor when the caller names no timeout.
pub const DEFAULT_SUPERVISOR_TIMEOUT: Duration = Duration::from_secs(3600);

/// How often a late handoff is polled.
const HANDOFF_POLL: Duration = Duration::from_millis(200);

/// What the caller of `seal` gave.
#[derive(Debug, Clone, Copy, Default)]
pub struct SealRequest<'a> {
    /// An owner token is at hand (a token file, or `WRITERCTL_OWNER_TOKEN`).
    pub token: bool,
    /// A transcript was named (`--transcript-key`, `--project-root`).
    pub transcript_named: bool,
    /// The supervisor's control socket, if named.
    pub control_socket: Option<&'a Path>,
    /// How long to wait for a supervisor, if named.
    pub timeout: Option<Duration>,
    /// `experimental.session_writer_lease`.
    pub gate: bool,
}

/// The way a seal goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealRoute {
    /// Seal here with the owner token.
    Direct,
    /// Ask the supervisor listening on one of `sockets` (tried in order), waiting at most
    /// `timeout` for its answer or for a handoff under way.
    Supervisor {
        /// Control sockets to try.
        sockets: Vec<PathBuf>,
        /// The wait.
        timeout: Duration,
    },
}

/// A request that cannot be carried out as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No token, so the supervisor seals — the transcript it was started with: a transcript
    /// named here would be dropped without a word.
    #[error("without a token the supervisor seals the transcript it was started with")]
    TranscriptWithoutToken,
    /// A token, so no supervisor is asked: its socket and timeout would be ignored.
    #[error("with a token no supervisor is asked")]
    SupervisorOptionsWithToken,
    /// A direct seal with the gate off.
    #[error("seal needs experimental.session_writer_lease")]
    FeatureDisabled,
}

/// Decides the way for `request`; `lock_path` derives the supervisor's socket names as
/// `writerctl run` derives them.
pub fn route(request: &SealRequest, lock_path: &Path) -> Result<SealRoute, RouteError> {
    if !request.token {
        if request.transcript_named {
            return Err(RouteError::TranscriptWithoutToken);
        }
        let sockets = match request.control_socket {
            Some(s) => vec![s.to_path_buf()],
            None => candidate_sockets(lock_path),
        };
        return Ok(SealRoute::Supervisor { sockets, timeout: request.timeout.unwrap_or(DEFAULT_SUPERVISOR_TIMEOUT) });
    }
    if request.control_socket.is_some() || request.timeout.is_some() {
        return Err(RouteError::SupervisorOptionsWithToken);
    }
    if !request.gate {
        return Err(RouteError::FeatureDisabled);
    }
    Ok(SealRoute::Direct)
}

/// How the supervisor's way ended well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealAnswer {
    /// Sealed: the proof as recorded.
    Sealed {
        /// `sealed_at`.
        sealed_at: String,
        /// The proof.
        transcript: TranscriptProof,
        /// `writerctl_exclusive`.
        exclusive: Option<String>,
    },
    /// The supervisor stopped its writer and left the lock in this state instead
    /// (`released`: its gate is off).
    Stopped(String),
}

/// Why the supervisor's way failed.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The control socket could not be used.
    #[error(transparent)]
    Control(ControlError),
    /// No supervisor, a handoff that did not finish in time.
    #[error(transparent)]
    Lock(LockError),
    /// The supervisor answered with its own failure (code, message, hint).
    #[error("{}", .0.message)]
    Refused(WireError),
    /// The supervisor's answer lacked what success needs.
    #[error("the supervisor sent an incomplete answer")]
    Incomplete,
}

/// Asks the supervisor of `session_id` to drain its writer and seal; returns once the seal
/// (or the supervisor's other outcome) is on disk.
pub fn ask_supervisor(
    sockets: &[PathBuf],
    timeout: Duration,
    runtime_dir: &Path,
    paths: &LockPaths,
    session_id: &str,
    reason: Option<&str>,
) -> Result<SealAnswer, AskError> {
    for socket in sockets {
        match request_seal(socket, session_id, reason, timeout) {
            Ok(reply) => return answer_of(reply),
            Err(ControlError::NoSupervisor(_)) => continue,
            Err(e) => return Err(AskError::Control(e)),
        }
    }
    match wait_for_handoff(runtime_dir, paths, session_id, timeout) {
        Some(result) => result.map_err(AskError::Lock),
        None => Err(AskError::Lock(LockError::InvalidArgument(format!(
            "no owner token (--token-file or WRITERCTL_OWNER_TOKEN), and no `writerctl run` supervises this session here (tried {})",
            sockets.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")
        )))),
    }
}

/// The supervisor's reply as an outcome.
fn answer_of(reply: Reply) -> Result<SealAnswer, AskError> {
    match (reply.ok, reply.state, reply.sealed_at, reply.transcript, reply.error) {
        (true, Some(state), Some(sealed_at), Some(transcript), _) if state == "sealed" => {
            Ok(SealAnswer::Sealed { sealed_at, transcript, exclusive: reply.exclusive })
        }
        (true, Some(state), _, _, _) => Ok(SealAnswer::Stopped(state)),
        (_, _, _, _, Some(e)) => Err(AskError::Refused(e)),
        _ => Err(AskError::Incomplete),
    }
}

/// Polls the lock while a live local holder finishes its handoff: `Some(result)` once it is
/// sealed or released; `None` when no live holder is handing off.
fn wait_for_handoff(
    runtime_dir: &Path,
    paths: &LockPaths,
    session_id: &str,
    timeout: Duration,
) -> Option<Result<SealAnswer, LockError>> {
    let deadline = Instant::now() + timeout;
    let mut saw_live_holder = false;
    loop {
        let st = status_one(runtime_dir, paths, session_id, None, &SystemProbe).ok()?;
        match (st.state, st.liveness.as_ref().map(|l| l.code)) {
            (LockState::Sealed, _) => {
                let p = st.proof?;
                return Some(Ok(SealAnswer::Sealed {
                    sealed_at: p.sealed_at,
                    transcript: p.transcript,
                    exclusive: p.exclusive,
                }));
            }
            (LockState::Missing, _) if saw_live_holder => return Some(Ok(SealAnswer::Stopped("released".into()))),
            (LockState::Active, Some("running")) | (LockState::InTransition, _)
                if st.owner.as_ref().is_some_and(|o| is_writerctl_process(o.holder.pid)) =>
            {
                saw_live_holder = true;
            }
            _ => return None,
        }
        if Instant::now() >= deadline {
            return Some(Err(LockError::Unavailable {
                reason: Unavailable::Io,
                detail: Some("the supervisor did not finish its handoff within --timeout".into()),
                source: None,
            }));
        }
        std::thread::sleep(HANDOFF_POLL);
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

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = "/r/tmp/session-writer-locks/s.lock";

    fn req() -> SealRequest<'static> {
        SealRequest { gate: true, ..SealRequest::default() }
    }

    #[test]
    fn a_token_seals_directly_and_only_with_the_gate() {
        let with_token = SealRequest { token: true, ..req() };
        assert_eq!(route(&with_token, Path::new(LOCK)), Ok(SealRoute::Direct));
        // A transcript named with a token is the direct seal's own business.
        assert_eq!(
            route(&SealRequest { transcript_named: true, ..with_token }, Path::new(LOCK)),
            Ok(SealRoute::Direct)
        );
        assert_eq!(
            route(&SealRequest { gate: false, ..with_token }, Path::new(LOCK)),
            Err(RouteError::FeatureDisabled)
        );
        let socket = SealRequest { control_socket: Some(Path::new("/run/s.sock")), ..with_token };
        assert_eq!(route(&socket, Path::new(LOCK)), Err(RouteError::SupervisorOptionsWithToken));
        let timeout = SealRequest { timeout: Some(Duration::from_secs(5)), gate: false, ..with_token };
        assert_eq!(route(&timeout, Path::new(LOCK)), Err(RouteError::SupervisorOptionsWithToken));
    }

    #[test]
    fn without_a_token_the_supervisor_is_asked_whatever_the_gate() {
        let Ok(SealRoute::Supervisor { sockets, timeout }) =
            route(&SealRequest { gate: false, ..req() }, Path::new(LOCK))
        else {
            panic!("not the supervisor's way")
        };
        assert_eq!(sockets, candidate_sockets(Path::new(LOCK)));
        assert_eq!(timeout, DEFAULT_SUPERVISOR_TIMEOUT);
        let named = SealRequest {
            control_socket: Some(Path::new("/run/s.sock")),
            timeout: Some(Duration::from_secs(100)),
            ..req()
        };
        assert_eq!(
            route(&named, Path::new(LOCK)),
            Ok(SealRoute::Supervisor { sockets: vec!["/run/s.sock".into()], timeout: Duration::from_secs(100) })
        );
        assert_eq!(
            route(&SealRequest { transcript_named: true, ..req() }, Path::new(LOCK)),
            Err(RouteError::TranscriptWithoutToken)
        );
    }

    fn reply(ok: bool, state: Option<&str>, sealed: bool, error: Option<&str>) -> Reply {
        let proof = TranscriptProof {
            relative_path: "chats/s.jsonl".into(),
            exists: true,
            byte_length: 3,
            sha256: "ab".into(),
        };
        Reply {
            ok,
            state: state.map(Into::into),
            sealed_at: sealed.then(|| "2026-01-01T00:00:00Z".into()),
            transcript: sealed.then_some(proof),
            exclusive: None,
            error: error.map(|c| WireError { code: c.into(), message: "m".into(), hint: None }),
        }
    }

    #[test]
    fn the_supervisors_reply_becomes_an_outcome() {
        assert!(matches!(answer_of(reply(true, Some("sealed"), true, None)), Ok(SealAnswer::Sealed { .. })));
        assert_eq!(
            answer_of(reply(true, Some("released"), false, None)).unwrap(),
            SealAnswer::Stopped("released".into())
        );
        // "sealed" without its proof says only that the writer stopped, as before.
        assert_eq!(answer_of(reply(true, Some("sealed"), false, None)).unwrap(), SealAnswer::Stopped("sealed".into()));
        assert!(
            matches!(answer_of(reply(false, None, false, Some("writer_crashed"))), Err(AskError::Refused(e)) if e.code == "writer_crashed")
        );
        assert!(matches!(answer_of(reply(false, None, false, None)), Err(AskError::Incomplete)));
        assert!(matches!(answer_of(reply(true, None, false, None)), Err(AskError::Incomplete)));
    }
}
