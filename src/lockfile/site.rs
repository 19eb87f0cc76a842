//! The lock site: one session's lock directory held open, and how engine modules share it.
//!
//! # Calling sequence
//!
//! ```text
//! open_site(R, paths, session, Create | Existing) ─► LockSite ─► acquire / release / seal /
//!                                                                 takeover / verify / recover
//! ```
//!
//! Every operation on a session's lock starts from a [`LockSite`]: the lock directory opened
//! once (never through a symlink, QWEN_FORMAT §1.1), the names of `L` and its side files,
//! the session id records must carry, and the identity domain liveness is judged in. The
//! helpers every engine module shares live here too — mapping a directory fsync failure
//! (`sync_error`) and the malformed-record pause (`retry_pause`) — so that the modules
//! depend on this one and never on each other's internals: `acquire` uses `release` and
//! `transition`, and neither of those uses `acquire`.
//!
//! # States a crash can leave
//!
//! Only [`open_site`] with [`DirMode::Create`] writes: it may leave `R/tmp` and
//! `R/tmp/session-writer-locks` (0700, empty). Nothing else here changes the disk.
//!
//! # Errors
//!
//! A lock directory on a filesystem that cannot carry the protocol is
//! `filesystem_unsupported`, judged before anything is created ([`super::filesystem`]).
//! A missing runtime directory is `runtime_dir_missing`; a lock directory that is a symlink
//! or not a directory is `session_writer_unavailable`; opening an existing site whose lock
//! directory is absent is `session_not_owner` (there is no lock to own).

use std::path::{Path, PathBuf};
use std::thread::sleep;

use super::error::{LockError, Unavailable};
use super::identity::LocalDomain;
use super::paths::{LOCK_SUBDIR, LockPaths};
use super::primitives::MALFORMED_RETRY_DELAY;
use super::sys::{self, Dir, DirSyncError, Kind, is_enoent, mkdir_0700_created};
use super::transcript::TranscriptKey;

/// Whether opening a site may create the lock directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirMode {
    /// Create `R/tmp/session-writer-locks` (0700) if missing; `R` itself must exist.
    Create,
    /// Never create anything (status, release).
    Existing,
}

/// One session's lock, with its directory held open.
#[derive(Debug)]
pub struct LockSite {
    /// Names of `L` and its side files.
    pub paths: LockPaths,
    /// The open lock directory.
    pub dir: Dir,
    /// The session id records must carry.
    pub session_id: String,
    /// The identity domain liveness is judged in.
    pub local: LocalDomain,
}

impl LockSite {
    /// Full path of `L`.
    pub fn lock_path(&self) -> PathBuf {
        self.paths.lock_path()
    }
}

/// Checks that the runtime directory exists and is a directory (following a symlink at `R`
/// itself, as qwen does: only the lock directory must not be a symlink).
pub fn check_runtime_dir(runtime_dir: &Path) -> Result<(), LockError> {
    match sys::stat_path(runtime_dir) {
        Ok(m) if m.kind == Kind::Directory => Ok(()),
        Ok(_) => {
            Err(LockError::InvalidArgument(format!("runtime directory {} is not a directory", runtime_dir.display())))
        }
        Err(e) if is_enoent(&e) => Err(LockError::RuntimeDirMissing(runtime_dir.to_path_buf())),
        Err(e) => Err(LockError::io(format!("stat runtime directory {}", runtime_dir.display()), e)),
    }
}

/// Opens the lock directory of `paths` (QWEN_FORMAT §1.1): with [`DirMode::Create`] it makes
/// the standard `R/tmp/session-writer-locks` (0700) first. The directory must not be a
/// symlink; anything else is `session_writer_unavailable`.
pub fn open_site(runtime_dir: &Path, paths: LockPaths, session_id: &str, mode: DirMode) -> Result<LockSite, LockError> {
    if session_id.is_empty() {
        return Err(LockError::InvalidArgument("session id must not be empty".into()));
    }
    check_runtime_dir(runtime_dir)?;
    // Issue 27: judge the filesystem first — before the trust check (whose `chmod` hint
    // cannot work on exFAT) and before anything is created (a refused filesystem is left as
    // it was). The lock directory may not exist yet: its nearest existing ancestor is on
    // the filesystem it will be created on, unless a mount point sits in between, which
    // the check of the opened directory below catches.
    super::filesystem::require_supported_path(&paths.dir)?;
    if paths.dir == runtime_dir.join(LOCK_SUBDIR) {
        // Issue 22: whoever can write R/tmp can plant the lock directory; judge it first.
        super::trust::require_trusted_path("runtime tmp directory", &runtime_dir.join("tmp"))?;
    }
    let mut created = Vec::new();
    if mode == DirMode::Create && paths.dir == runtime_dir.join(LOCK_SUBDIR) {
        for p in [runtime_dir.join("tmp"), runtime_dir.join(LOCK_SUBDIR)] {
            if mkdir_0700_created(&p).map_err(|e| LockError::io(format!("create {}", p.display()), e))? {
                created.push(p);
            }
        }
    }
    let opened = open_lock_dir(&paths.dir);
    if opened.is_err() {
        // Refused (an untrusted mode on a filesystem that fixes modes at mount time, such
        // as exFAT; a filesystem refused once its mountinfo line is read): take back the
        // empty directories this call made, so a refusal changes nothing (issue 27).
        for p in created.iter().rev() {
            let _ = sys::rmdir_if_empty(p);
        }
    }
    let dir = match opened {
        // Without a lock directory there is no lock: for release that is "not the owner",
        // not a transient failure worth retrying.
        Err(LockError::Unavailable { source: Some(e), .. }) if mode == DirMode::Existing && is_enoent(&e) => {
            return Err(LockError::NotOwner {
                path: paths.lock_path(),
                reason: super::error::NOT_OWNER_NO_LOCK_DIR.into(),
            });
        }
        other => other?,
    };
    Ok(LockSite { paths, dir, session_id: session_id.to_owned(), local: LocalDomain::current() })
}

/// Opens a lock directory, mapping "not a real directory" to its own reason.
/// The directory must also be one only the caller (or root) can change (issue 22,
/// [`super::trust`]): judged on the descriptor just opened, before anything is written.
pub fn open_lock_dir(path: &Path) -> Result<Dir, LockError> {
    let dir = Dir::open(path).map_err(|e| {
        let not_dir = matches!(
            e.raw_os_error(),
            Some(code) if code == rustix::io::Errno::LOOP.raw_os_error()
                || code == rustix::io::Errno::NOTDIR.raw_os_error()
        );
        if !not_dir {
            return LockError::io(format!("open lock directory {}", path.display()), e);
        }
        LockError::Unavailable {
            reason: Unavailable::LockDirNotDirectory,
            detail: Some(path.display().to_string()),
            source: Some(e),
        }
    })?;
    let mut keeps_modes = true;
    if !dir.lookups_authoritative() {
        // Not a known local type: read its mountinfo line and judge it (a local disk pays
        // only the fstatfs `Dir::open` made).
        let fs = dir.filesystem().map_err(|e| LockError::io(format!("statfs {}", path.display()), e))?;
        super::filesystem::require_supported(&fs, path)?;
        keeps_modes = false;
    }
    super::trust::require_trusted_on("lock directory", path, dir.meta(), keeps_modes)?;
    Ok(dir)
}

/// Maps a directory sync failure to the engine's error.
pub(crate) fn sync_error(e: DirSyncError) -> LockError {
    match e {
        DirSyncError::Changed => LockError::unavailable(Unavailable::LockDirChanged),
        DirSyncError::Io(e) => LockError::io("fsync lock directory", e),
    }
}

/// Where a session's transcript is: a key beneath the runtime directory.
#[derive(Debug, Clone)]
pub struct TranscriptRef {
    /// Runtime directory R (the transcript is opened beneath it).
    pub runtime_dir: PathBuf,
    /// The transcript key.
    pub key: TranscriptKey,
}

/// Waits `MALFORMED_RETRY_DELAY` (used by retry loops elsewhere in the engine).
pub(crate) fn retry_pause() {
    sleep(MALFORMED_RETRY_DELAY);
}
