//! How a run fails: [`RunError`], each case with its stable code and what to do next.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use crate::error::ErrorCode;
use crate::lockfile::LockError;

use super::control;
use super::descendants::DrainError;

/// A failure of the run itself.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A lock-file engine error (acquire, seal, release).
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The writer did not exit within the grace period and was killed; the lock was kept.
    #[error("the writer did not stop within {0:?} and was killed; the active lock was kept (fail closed)")]
    DrainTimeout(Duration),
    /// The writer could not be started.
    #[error("cannot start the writer `{command}`: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A stop signal arrived while waiting to acquire; nothing was taken.
    #[error("stopped by signal {0} before the lock was acquired; nothing was changed")]
    Interrupted(i32),
    /// The writer exited non-zero or died of a signal (a crash, an OOM kill, a stop signal
    /// it did not handle): it did not drain, so the lock was kept.
    #[error("{0}; it did not drain, so the active lock was kept (fail closed)")]
    WriterCrashed(WriterEnd),
    /// The writer exited, but a process it left behind could not be stopped, or proven
    /// gone; the lock was kept.
    #[error("the writer exited, but {0}; the active lock was kept (fail closed)")]
    DescendantsLeft(DrainError),
    /// The writer stopped, but the handoff failed; the active lock was kept.
    #[error("the writer stopped, but the handoff failed: {0}")]
    HandoffFailed(LockError),
    /// The control socket could not be set up.
    #[error(transparent)]
    Control(#[from] control::ControlError),
    /// The lock stopped naming this supervisor while its writer ran; the writer was
    /// stopped and nothing was sealed or released.
    #[error("the lock was lost while the writer ran ({0}); the writer was stopped and nothing was sealed or released")]
    LockLost(LockError),
    /// `--pid-namespace require`, and the kernel would not give the writer one; the writer
    /// was not started and the session was handed back.
    #[error("the writer cannot get a pid namespace of its own ({0}); it was not started")]
    PidNamespaceRefused(String),
    /// Every process of the writer's tree is gone, yet an open file description outside it
    /// can still write the transcript (one passed over a unix socket, say): no seal; the
    /// active lock was kept.
    #[error("the writer stopped, but {0}; nothing was sealed and the active lock was kept (fail closed)")]
    TranscriptOpenElsewhere(crate::lockfile::exclusive::OpenForWriting),
}

impl RunError {
    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            RunError::Lock(e) => e.code(),
            RunError::DrainTimeout(_) => ErrorCode::DrainTimeout,
            RunError::Spawn { .. } => ErrorCode::InvalidArgument,
            RunError::Interrupted(_) => ErrorCode::Interrupted,
            RunError::Control(_) => ErrorCode::InvalidArgument,
            RunError::WriterCrashed(_) => ErrorCode::WriterCrashed,
            RunError::DescendantsLeft(_) => ErrorCode::DrainTimeout,
            RunError::LockLost(_) => ErrorCode::SessionNotOwner,
            RunError::HandoffFailed(e) => e.code(),
            RunError::PidNamespaceRefused(_) => ErrorCode::InvalidArgument,
            RunError::TranscriptOpenElsewhere(_) => ErrorCode::SessionWriterUnavailable,
        }
    }

    /// What to do next.
    pub fn hint(&self) -> Option<String> {
        match self {
            RunError::Lock(e) => e.hint(),
            RunError::DrainTimeout(_) => Some(
                "the writer may have stopped mid-append, so the lock was kept active, not sealed; `writerctl status` shows it. Once its tree is gone and nothing has the transcript open, the next `writerctl run` on this host takes the session by the kernel's proof and is told the transcript's tail (issue 38)".into(),
            ),
            RunError::Spawn { .. } => Some("check the command after `--`".into()),
            RunError::Interrupted(_) => None,
            RunError::Control(e) => Some(e.hint()),
            RunError::WriterCrashed(_) => Some(
                "the writer may have lost accepted work, so the lock was kept active and nothing certifies the transcript; the next `writerctl run` on this host takes the session by the kernel's proof once the writer's tree is gone, and is told the transcript's tail. A writer that should hand over must handle SIGTERM: drain, then exit 0".into(),
            ),
            RunError::LockLost(_) => Some(
                "someone else changed the lock under this writer (a `writerctl recover`, an operator, another writer after a forced recovery), or its directory stopped answering (a hung network or FUSE mount: the lock was kept as it is); `writerctl status` shows who holds it now".into(),
            ),
            RunError::DescendantsLeft(_) => Some(
                "a process of the writer's tree may still write to the transcript; find it (ps, the pod's cgroup), stop it, then `writerctl recover` or a plain `writerctl acquire`".into(),
            ),
            RunError::HandoffFailed(_) => Some(
                "the active lock was kept (fail closed); `writerctl status` shows why. Fix the transcript or storage problem, then a plain `writerctl acquire` or `writerctl recover` after fencing".into(),
            ),
            RunError::TranscriptOpenElsewhere(_) => Some(
                "a process outside the writer's tree holds the transcript open for writing (a descriptor passed over a unix socket, a helper started through a daemon); find it (`fuser -v TRANSCRIPT`, `ls -l /proc/*/fd`), stop it, then seal again or `writerctl recover`".into(),
            ),
            RunError::PidNamespaceRefused(_) => Some(
                "allow namespaces here (root or CAP_SYS_ADMIN for CLONE_NEWPID; unprivileged user namespaces otherwise; a seccomp profile that permits unshare), or pass --pid-namespace auto (WRITERCTL_PID_NAMESPACE=auto) to run in the shared namespace, where the inherited holder lock marks survivors".into(),
            ),
        }
    }
}

/// How the writer ended, for the `writer_crashed` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterEnd {
    /// Its wait status.
    pub status: ExitStatus,
    /// Whether a stop had been requested (signal or preStop) before it exited.
    pub stop_requested: bool,
}

impl std::fmt::Display for WriterEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => write!(f, "the writer exited with status {code}")?,
            (None, Some(sig)) => write!(f, "the writer died of signal {sig}")?,
            (None, None) => write!(f, "the writer ended abnormally")?,
        }
        f.write_str(if self.stop_requested { " after it was asked to stop" } else { " without being asked to stop" })
    }
}
