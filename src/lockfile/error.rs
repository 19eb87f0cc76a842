//! Typed errors of the lock-file engine, each mapped to one stable [`ErrorCode`].
//!
//! Messages are sanitized: they may name a lock path, a host and a pid, never an owner id
//! and never a transcript path (seed 001 "Failure contract").

use std::io;
use std::path::PathBuf;

use rustix::io::Errno;

use crate::error::ErrorCode;

use super::liveness::{LiveReason, Liveness};

/// What a takeover found when there is no lock at all (`session_not_sealed`, issue 27).
pub const NO_LOCK_TO_TAKE_OVER: &str = "no lock to take over";

/// Who holds a lock, for messages: "pid N on host H (running)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderInfo {
    /// Recorded pid.
    pub pid: u64,
    /// Recorded hostname.
    pub hostname: String,
    /// Liveness verdict, if the record is active.
    pub liveness: Option<Liveness>,
}

impl std::fmt::Display for HolderInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} on host {}", self.pid, self.hostname)?;
        match self.liveness {
            Some(Liveness::Live(LiveReason::Running)) => write!(f, " (running)")?,
            Some(Liveness::Live(_)) => write!(f, " (fenced: {})", self.liveness.map(|l| l.describe()).unwrap_or(""))?,
            Some(Liveness::Stale(_)) => write!(f, " (gone)")?,
            None => {}
        }
        Ok(())
    }
}

/// [`LockError::NotOwner`]'s reason when no lock exists at the path.
pub const NOT_OWNER_NO_LOCK: &str = "the lock does not exist";
/// [`LockError::NotOwner`]'s reason when not even the lock directory exists.
pub const NOT_OWNER_NO_LOCK_DIR: &str = "the lock does not exist (the runtime directory has no lock directory)";
/// [`LockError::NotOwner`]'s reason when the lock is sealed.
pub const NOT_OWNER_SEALED: &str = "the lock is sealed, not active";

/// Who already writes a transcript ([`LockError::TranscriptBusy`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranscriptWriter {
    /// The kernel refused a read lease: some open file description can write it.
    OpenForWriting,
    /// Another lock holder keeps the transcript's own lock: the session it names, if its
    /// record is in this lock directory.
    Session(Option<String>),
}

impl std::fmt::Display for TranscriptWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TranscriptWriter::OpenForWriting => {
                write!(f, "is open for writing elsewhere (the kernel refused a read lease on it)")
            }
            TranscriptWriter::Session(Some(s)) => write!(f, "is held by session {s}, whose writer is running"),
            TranscriptWriter::Session(None) => {
                write!(f, "is held by another writer (its lock is not in this lock directory)")
            }
        }
    }
}

/// Why ownership could not be verified (`session_writer_unavailable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// `L.claim` exists (of any file type): a seal or takeover is in progress or crashed.
    TransitionClaimPresent,
    /// The transition claim path could not be inspected.
    TransitionClaimUnreadable,
    /// A live, sealed or malformed reclaim guard blocks stale reclaim.
    GuardHeld,
    /// The reclaim guard budget ran out.
    GuardBudgetExhausted,
    /// The acquire retry budget ran out.
    AcquireBudgetExhausted,
    /// The record is qwen's managed schema 3; writerctl never reclaims or takes it over.
    ManagedSchema,
    /// An install temp file already exists.
    TempExists,
    /// The lock directory is not a real directory (symlink, file) or could not be opened.
    LockDirNotDirectory,
    /// The lock directory path now names another directory than the one we hold.
    LockDirChanged,
    /// A stale record changed between inspection and reclaim.
    ReclaimRaced,
    /// The acquired lock could not be re-verified, and releasing it failed too.
    CleanupFailed,
    /// An I/O error with no more specific meaning.
    Io,
    /// A sealed candidate or a retired path of this transition already exists.
    TransitionFileExists,
    /// The transition claim no longer holds this transition's exact record.
    TransitionClaimLost,
    /// A claim-aware acquisition candidate did not leave the primary path in time.
    CandidateWaitExpired,
    /// Something other than our record or a claim-aware candidate appeared at the primary
    /// path during a transition.
    PrimaryReplaced,
    /// A failed transition could not prove the predecessor restored; the transition claim is
    /// retained.
    TransitionClaimRetained,
    /// qwen's managed seal needs a commit proof writerctl does not have.
    ManagedSealNeedsCommitProof,
    /// The transcript's filesystem does not number inodes (ino 0).
    TranscriptIdentity,
    /// The lock was taken but its owner token could not be delivered (token file or
    /// stdout); the detail says how the lock was given back.
    TokenUndelivered,
}

impl Unavailable {
    fn describe(&self) -> &'static str {
        match self {
            Unavailable::TransitionClaimPresent => "a transition claim exists for this session",
            Unavailable::TransitionClaimUnreadable => "the transition claim could not be inspected",
            Unavailable::GuardHeld => "another reclaimer holds the reclaim guard",
            Unavailable::GuardBudgetExhausted => "the reclaim guard could not be taken",
            Unavailable::AcquireBudgetExhausted => "the lock kept changing; acquire attempts exhausted",
            Unavailable::ManagedSchema => "the lock uses qwen's managed schema 3, which this acquire cannot continue",
            Unavailable::TempExists => "an install temp file already exists",
            Unavailable::LockDirNotDirectory => "the lock directory is not a regular directory",
            Unavailable::LockDirChanged => "the lock directory changed during the operation",
            Unavailable::ReclaimRaced => "the stale lock changed during reclaim",
            Unavailable::CleanupFailed => "acquisition could not be verified and its cleanup failed",
            Unavailable::Io => "an I/O error prevented verifying ownership",
            Unavailable::TransitionFileExists => {
                "a sealed candidate or retired record of this transition already exists"
            }
            Unavailable::TransitionClaimLost => "the transition claim no longer holds this transition's record",
            Unavailable::CandidateWaitExpired => "an acquisition candidate did not release the claimed primary path",
            Unavailable::PrimaryReplaced => "an unknown record appeared at the primary path during the transition",
            Unavailable::TransitionClaimRetained => {
                "the transition failed and the previous primary could not be proven restored; the claim was retained"
            }
            Unavailable::ManagedSealNeedsCommitProof => {
                "a qwen-code managed (schema 3) lock needs a commit proof to seal"
            }
            Unavailable::TranscriptIdentity => {
                "the transcript filesystem does not provide a verifiable inode identity (ino=0)"
            }
            Unavailable::TokenUndelivered => "the owner token could not be delivered",
        }
    }
}

/// What to change for an [`environment_problem`].
fn environment_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(r) if r == Errno::NAMETOOLONG.raw_os_error() => {
            "use a shorter session id, --lock path or --transcript-key; retrying cannot help"
        }
        Some(r) if r == Errno::ROFS.raw_os_error() => {
            "remount the filesystem read-write, or point --runtime-dir at writable storage; retrying cannot help"
        }
        _ => {
            "run as the user that owns the runtime directory and its lock files, or fix their permissions; retrying cannot help"
        }
    }
}

/// What a [`LockError::TranscriptChanged`] found.
///
/// Why two kinds (issue 38, reproduction 7): a transcript that differs from a sealed proof
/// and one that merely ends mid-line (a writer killed while appending, no seal anywhere)
/// share the code `session_transcript_changed`, but not the story or the way out. The
/// second says where the line breaks off and names the repair, instead of a seal that does
/// not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranscriptChange {
    /// Against a proof or an earlier read: what differs, in words (never the path).
    Described(String),
    /// The transcript ends in an incomplete line; no seal is involved.
    Torn {
        /// Where the last complete line ends (the offset just past the last `\n`).
        complete: u64,
        /// The transcript's length.
        length: u64,
    },
}

impl From<&str> for TranscriptChange {
    fn from(s: &str) -> TranscriptChange {
        TranscriptChange::Described(s.to_owned())
    }
}

impl From<String> for TranscriptChange {
    fn from(s: String) -> TranscriptChange {
        TranscriptChange::Described(s)
    }
}

impl std::fmt::Display for TranscriptChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TranscriptChange::Described(s) => f.write_str(s),
            TranscriptChange::Torn { complete, length } => write!(
                f,
                "the transcript ends in an incomplete line at byte {length} (last complete line ends at byte {complete})"
            ),
        }
    }
}

fn transcript_changed_message(reason: &TranscriptChange) -> String {
    match reason {
        TranscriptChange::Described(_) => format!("session transcript changed: {reason}"),
        TranscriptChange::Torn { .. } => format!("session transcript is torn: {reason}"),
    }
}

/// An error of the lock-file engine.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another writer holds the session.
    #[error("session {session_id} is held by {holder}")]
    Conflict {
        /// Session id.
        session_id: String,
        /// Recorded holder.
        holder: HolderInfo,
        /// True when the record is sealed (a handoff waiting for a certified takeover).
        sealed: bool,
        /// True when a stale record was refused because managed mode never reclaims.
        managed_refused_stale: bool,
    },
    /// The transcript already has a writer that this session's lock does not name (issue
    /// 38): an open write description the kernel reports, or another session's transcript
    /// lock. One transcript, one writer: nothing was written.
    #[error("session {session_id}'s transcript {by}")]
    TranscriptBusy {
        /// Session id.
        session_id: String,
        /// Who has it.
        by: TranscriptWriter,
    },
    /// Ownership could not be verified.
    #[error("session writer unavailable: {}{}", .reason.describe(), .detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Unavailable {
        /// Why.
        reason: Unavailable,
        /// Extra sanitized detail (a path, an errno), if any.
        detail: Option<String>,
        /// Underlying I/O error, if any.
        #[source]
        source: Option<io::Error>,
    },
    /// The lock path holds something that is not a valid record for this session.
    #[error("lock {} is malformed: {reason}", .path.display())]
    Malformed {
        /// Lock path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The caller does not own the lock (wrong token, lock gone or replaced).
    #[error("not the owner of {}: {reason}", .path.display())]
    NotOwner {
        /// Lock path.
        path: PathBuf,
        /// What was found.
        reason: String,
    },
    /// The transcript no longer matches (changed, appended, truncated, replaced, re-linked).
    #[error("{}", transcript_changed_message(.reason))]
    TranscriptChanged {
        /// What differs (never the transcript path).
        reason: TranscriptChange,
    },
    /// The transcript path is unsafe: a symlink, not a regular file, outside R.
    #[error("session transcript path is unsafe: {reason}")]
    TranscriptUnsafe {
        /// Why (never the transcript path).
        reason: String,
    },
    /// The lock is not a sealed record.
    #[error("session {session_id} is not sealed (found: {found})")]
    NotSealed {
        /// Session id.
        session_id: String,
        /// What was found instead.
        found: String,
    },
    /// The feature gate is off.
    #[error("seal and certified takeover are disabled (experimental.session_writer_lease is off)")]
    FeatureDisabled,
    /// The runtime directory does not exist.
    #[error("runtime directory {} does not exist", .0.display())]
    RuntimeDirMissing(PathBuf),
    /// An argument is invalid.
    #[error("{0}")]
    InvalidArgument(String),
    /// A directory whose entries the guarantees rest on can be changed by another user: it
    /// is owned by someone other than the caller or root, or group/world-writable without
    /// the sticky bit (issue 22). Nothing was written.
    #[error("{what} {} is not safe to use: {reason}", .path.display())]
    UntrustedDirectory {
        /// Which directory (`lock directory`, `R/tmp`, `transcript directory`).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// What is wrong (owner uid, mode).
        reason: String,
        /// What to run or change.
        fix: String,
    },
    /// The system refuses in a way no retry fixes: a name longer than the filesystem allows,
    /// permission denied, a read-only filesystem (issue 22). The caller must change something.
    #[error("cannot {detail}: {}", environment_problem(.source).unwrap_or("refused by the system"))]
    Environment {
        /// The operation.
        detail: String,
        /// The errno.
        #[source]
        source: io::Error,
    },
    /// The lock directory's filesystem cannot carry the protocol (issue 27): no hard links,
    /// NFS mounted `soft`, `nocto` or with local locks, a FUSE type not proven safe.
    /// Nothing was created or written on it.
    #[error("{} is on a {fs_type} filesystem, which cannot carry the lock protocol: it lacks {lacks}", .path.display())]
    FilesystemUnsupported {
        /// The lock directory (or, before it exists, the path it will have).
        path: PathBuf,
        /// The type as /proc/self/mountinfo names it.
        fs_type: String,
        /// What it lacks.
        lacks: String,
        /// False when no setting can help (no hard links).
        allowable: bool,
    },
}

/// The errnos that describe the environment rather than a transient state, and what each
/// one means. Why a separate class (issue 22): `session_writer_unavailable` tells an
/// operator to retry, and retrying a read-only mount or a permission error only repeats it.
const ENVIRONMENT_ERRNOS: &[(Errno, &str)] = &[
    (Errno::NAMETOOLONG, "a file name is longer than the filesystem allows"),
    (Errno::ACCESS, "permission denied"),
    (Errno::ROFS, "the filesystem is read-only"),
];

/// The errnos that leave an operation unavailable for a cause worth naming in the message
/// itself (not only under `--verbose`): descriptor exhaustion and I/O errors must not read
/// like tampering or like a busy lock.
const NAMED_TRANSIENT_ERRNOS: &[(Errno, &str)] = &[
    (Errno::MFILE, "too many open files in this process (EMFILE)"),
    (Errno::NFILE, "too many open files in the system (ENFILE)"),
    (Errno::IO, "input/output error (EIO)"),
    (Errno::NOSPC, "no space left on the device (ENOSPC)"),
    (Errno::NOMEM, "out of memory (ENOMEM)"),
];

fn errno_words(e: &io::Error, table: &[(Errno, &'static str)]) -> Option<&'static str> {
    let raw = e.raw_os_error()?;
    table.iter().find(|(errno, _)| errno.raw_os_error() == raw).map(|(_, words)| *words)
}

/// What an environment errno (name too long, permission denied, read-only filesystem)
/// means, or `None` for any other error.
pub fn environment_problem(e: &io::Error) -> Option<&'static str> {
    errno_words(e, ENVIRONMENT_ERRNOS)
}

impl LockError {
    /// Convenience constructor for an unavailable error.
    pub fn unavailable(reason: Unavailable) -> LockError {
        LockError::Unavailable { reason, detail: None, source: None }
    }

    /// An I/O failure of an operation `detail` names: [`LockError::Environment`] when the
    /// errno says the environment must change (name too long, permission denied, read-only
    /// filesystem), otherwise unavailable, with the cause in the message when it is one an
    /// operator must act on (descriptors exhausted, EIO, a full disk).
    pub fn io(detail: impl Into<String>, source: io::Error) -> LockError {
        let mut detail = detail.into();
        if environment_problem(&source).is_some() {
            return LockError::Environment { detail, source };
        }
        if let Some(cause) = errno_words(&source, NAMED_TRANSIENT_ERRNOS) {
            detail = format!("{detail}: {cause}");
        }
        LockError::Unavailable { reason: Unavailable::Io, detail: Some(detail), source: Some(source) }
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            LockError::Conflict { .. } | LockError::TranscriptBusy { .. } => ErrorCode::SessionWriterConflict,
            LockError::Unavailable { .. } => ErrorCode::SessionWriterUnavailable,
            LockError::Malformed { .. } => ErrorCode::SessionLockMalformed,
            LockError::NotOwner { .. } => ErrorCode::SessionNotOwner,
            LockError::RuntimeDirMissing(_) => ErrorCode::RuntimeDirMissing,
            LockError::TranscriptChanged { .. } => ErrorCode::SessionTranscriptChanged,
            LockError::TranscriptUnsafe { .. } => ErrorCode::SessionTranscriptUnsafe,
            LockError::NotSealed { .. } => ErrorCode::SessionNotSealed,
            LockError::FeatureDisabled => ErrorCode::FeatureDisabled,
            LockError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            LockError::UntrustedDirectory { .. } | LockError::Environment { .. } => ErrorCode::InvalidArgument,
            LockError::FilesystemUnsupported { .. } => ErrorCode::FilesystemUnsupported,
        }
    }

    /// What to do next, for the `hint:` line.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            LockError::Conflict { sealed: true, .. } => {
                "the session is sealed for handoff; a certified takeover (`writerctl takeover`) can continue it".into()
            }
            LockError::Conflict { managed_refused_stale: true, session_id, .. } => format!(
                "managed acquisition and `writerctl run` reclaim only what the kernel proves free (a released holder lock that is the file the record names, and no open write description on the transcript), and that proof cannot be had here; waiting will not change it. Fence every writer on other hosts, then run `writerctl recover --session {session_id} --writers-fenced --yes`"
            ),
            LockError::TranscriptBusy { by: TranscriptWriter::OpenForWriting, .. } => {
                "a process outside the lock (a descriptor handed out of a writer's tree, a sidecar, a daemon) can still append; find it with `fuser -v <transcript>` or `lsof <transcript>` and stop it. Nothing was changed, and the next attempt proceeds by itself once it is closed".into()
            }
            LockError::TranscriptBusy { by: TranscriptWriter::Session(Some(s)), .. } => format!(
                "one transcript has one writer: stop session {s} first (it hands over with `writerctl seal`), or give this session its own --transcript-key"
            ),
            LockError::TranscriptBusy { .. } => {
                "one transcript has one writer: stop the other writer first, or give this session its own --transcript-key".into()
            }
            LockError::Conflict { holder, session_id, .. } => match holder.liveness {
                Some(Liveness::Live(LiveReason::Running)) => {
                    "wait for the holder to release or seal; a conflict is not proof that it is alive (a PID can be reused)".into()
                }
                Some(Liveness::Live(LiveReason::TranscriptOpenForWriting)) => {
                    "the holder's tree is gone, but a process outside it can still append to the transcript; find it with `fuser -v <transcript>` or `lsof <transcript>` and stop it, and the next attempt proceeds by itself".into()
                }
                Some(Liveness::Live(LiveReason::HolderLockHeld)) => {
                    "a process of the holder's tree still holds its kernel lock, so a write may be in flight: wait for that tree to exit (`writerctl status` shows when the lock is released); never recover it while it is held".into()
                }
                Some(Liveness::Live(r)) if !r.ends_by_itself() => format!(
                    "this record is fenced: nothing here can prove its holder gone, so it is never reclaimed automatically and waiting will not change it. Fence every writer on other hosts, then run `writerctl recover --session {session_id} --writers-fenced --yes`"
                ),
                _ => "wait for the holder to release or seal (`writerctl status` shows what it is waiting for)".into(),
            },
            LockError::Unavailable { reason: Unavailable::TransitionClaimPresent, .. } => {
                "a seal or takeover is in progress or crashed mid-transition; retry shortly, and if it persists run `writerctl status` — never delete the claim unless every writer is fenced".into()
            }
            LockError::Unavailable { reason: Unavailable::GuardHeld, .. } => {
                "another process is reclaiming this lock; retry shortly. A guard that persists needs `writerctl recover`".into()
            }
            LockError::Unavailable { reason: Unavailable::ManagedSchema, .. } => {
                "the lock belongs to a qwen-code managed session; let its managed writer hand it over".into()
            }
            LockError::Unavailable { reason: Unavailable::LockDirNotDirectory, .. } => {
                "make R/tmp/session-writer-locks a real directory (not a symlink) owned by the writer's user".into()
            }
            LockError::Unavailable { reason: Unavailable::TransitionClaimRetained, .. } => {
                "the claim now fences the session on purpose; fence every writer, then `writerctl recover --writers-fenced --yes` restores the provable predecessor".into()
            }
            LockError::Unavailable { .. } => "retry later; retrying never authorizes a bypass. `writerctl status` shows what is on disk".into(),
            LockError::Malformed { .. } => {
                "nothing was changed; inspect the file with `writerctl status`, and move it aside only after fencing every writer (`writerctl recover`)".into()
            }
            // Issue 38 item 7: a hint that fits what was found, not always "use the token".
            LockError::NotOwner { reason, .. } if reason == NOT_OWNER_NO_LOCK => {
                "there is no lock to release or seal: it was released already, or never taken under this path; `writerctl status` shows the session".into()
            }
            LockError::NotOwner { reason, .. } if reason == NOT_OWNER_NO_LOCK_DIR => {
                "nothing was ever locked under this runtime directory: check that --runtime-dir (or WRITERCTL_RUNTIME_DIR / QWEN_RUNTIME_DIR) names the writer's, and --lock if it used one".into()
            }
            LockError::NotOwner { reason, .. } if reason == NOT_OWNER_SEALED => {
                "the session is already sealed for handoff: no owner token can release or seal it again; the next writer continues it with a certified takeover (`writerctl takeover`, or `writerctl run` with the gate on)".into()
            }
            LockError::NotOwner { .. } => {
                "use the owner token printed by `writerctl acquire` (--token-file or WRITERCTL_OWNER_TOKEN)".into()
            }
            LockError::RuntimeDirMissing(_) => {
                "create it, or point --runtime-dir / WRITERCTL_RUNTIME_DIR / QWEN_RUNTIME_DIR at the right directory".into()
            }
            LockError::TranscriptChanged { reason: TranscriptChange::Torn { complete, .. } } => format!(
                "a writer stopped in the middle of a line; this is not a seal. Once no writer can reach the transcript, `writerctl recover --session ID --writers-fenced --yes` keeps the incomplete line in a side file beside the transcript and truncates it at byte {complete}; `writerctl status --session ID` shows both offsets"
            ),
            LockError::TranscriptChanged { .. } => {
                "the sealed proof no longer matches the transcript; nothing was changed. Something appended to or replaced the transcript after the seal: fence every writer, decide which transcript is authoritative, then `writerctl recover`".into()
            }
            LockError::TranscriptUnsafe { .. } => {
                "make the transcript a regular file reached without symlinks inside the runtime directory; nothing was changed".into()
            }
            LockError::NotSealed { found, .. } if found == NO_LOCK_TO_TAKE_OVER => {
                "nothing was changed; takeover only continues a sealed session. To start one, run `writerctl acquire --managed` (or `writerctl run`)".into()
            }
            LockError::NotSealed { .. } => "`writerctl status` shows what the lock holds".into(),
            LockError::FeatureDisabled => {
                "set WRITERCTL_SESSION_WRITER_LEASE=1, or `session_writer_lease = true` under [experimental] in the config file (WRITERCTL_CONFIG, default ~/.config/writerctl/config.toml)".into()
            }
            LockError::InvalidArgument(_) => return None,
            LockError::UntrustedDirectory { fix, .. } => fix.clone(),
            LockError::Environment { source, .. } => environment_hint(source).into(),
            LockError::FilesystemUnsupported { allowable: false, .. } => {
                "no lock was written; no setting can make link(2) work there. Point --runtime-dir (or --lock) at a local disk or a network filesystem with hard links (NFS, CephFS)".into()
            }
            LockError::FilesystemUnsupported { fs_type, .. } => format!(
                "nothing was written. Point --runtime-dir (or --lock) at a local disk or a supported network filesystem; to run on {fs_type} anyway, with every defence on, set WRITERCTL_ALLOW_FILESYSTEM={fs_type}"
            ),
        })
    }
}
