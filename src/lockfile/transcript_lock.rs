//! One transcript, one writer: a lock on the transcript's own inode (issue 38 item 4).
//!
//! # Why
//!
//! The session lock is keyed by session id, and `--lock` may put it anywhere; the danger is
//! keyed by the file. Two sessions whose `--transcript-key`s resolve to one transcript, or
//! one session reached through two lock paths, would each hold "their" lock and both append
//! (reproduction 5). Comparing path strings cannot catch it — symlinked runtime directories,
//! bind mounts and `--project-root` spellings all name one file many ways — but the kernel
//! knows which inode a path names: a `flock(2)` on the transcript itself is one lock
//! whatever path, runtime directory or lock file led to it.
//!
//! # Calling sequence
//!
//! ```text
//! acquire, holder that outlives the call (run, the library):
//!     lock_transcript(R, key, lock dir) ─► Lease::transcript_lock
//!     run: a duplicate goes to the writer (WRITERCTL_TRANSCRIPT_LOCK_FD), so the lock lives
//!          while any process of its tree does; seal or release ─► TranscriptLock::release
//! acquire, takeover from the command line (the process exits at once):
//!     check_transcript_free(R, key, lock dir)   refuse if another holder keeps it
//! ```
//!
//! The lock is taken only on a regular file reached beneath `R` with no symlink. A holder
//! creates an absent transcript (empty, 0600, its directories 0700) so that there is an
//! inode to lock from the start: a seal of a session that wrote nothing then records
//! `exists: true, byte_length: 0`, which any certified takeover validates like any other.
//!
//! # What it does not cover
//!
//! A filesystem that will not `flock` a read-only descriptor — the NFSv4 client emulates
//! `flock` with a byte-range lock, and an exclusive one needs a writable descriptor — or has
//! no lock manager: there the lock is not had, the record names no transcript inode, and a
//! second session is stopped only by the read lease where it answers. A writable descriptor
//! is not an option: every handoff asks the kernel whether one exists.
//!
//! A writer outside the protocol (qwen-code, a plain `qwen --resume`, any program that
//! appends) does not take this lock; the read-lease check ([`super::exclusive`]) is what
//! sees those, while their file is open. A filesystem whose locks are not shared between
//! mounts (FUSE) keeps one lock table per mount.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rustix::fs::{self as rfs, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::error::{LockError, TranscriptWriter};
use super::record::parse_record;
use super::sys::{Beneath, Dir, Kind, ReadRegular, open_beneath, open_root};

/// The record key naming the inode of the transcript whose lock the holder keeps (it belongs
/// to the record format, [`super::record`]).
pub use super::record::TRANSCRIPT_INO_KEY;

/// How often a busy transcript lock is tried again before it counts as held: a concurrent
/// [`check_transcript_free`] holds it for the length of one `flock` call.
const ATTEMPTS: u32 = 50;
const PAUSE: Duration = Duration::from_millis(2);

/// A transcript lock held for a lease: the descriptor whose open file description carries
/// it, until [`TranscriptLock::release`].
#[derive(Debug)]
pub struct TranscriptLock {
    fd: Mutex<Option<OwnedFd>>,
    ino: u64,
    /// What [`lock_transcript`] created, so a refused acquisition leaves R as it found it.
    created: Created,
}

/// The directories (how many of the key's last directory components) and the file that
/// [`open_or_create`] created.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Created {
    runtime_dir: std::path::PathBuf,
    key: String,
    dirs: usize,
    file: bool,
}

impl TranscriptLock {
    /// The transcript's inode number, while the lock is held (recorded as
    /// `writerctl_transcript_ino`); `None` where the filesystem would not lock it.
    pub fn held_ino(&self) -> Option<u64> {
        self.is_held().then_some(self.ino)
    }

    /// A duplicate without `FD_CLOEXEC` for a child to inherit (see
    /// [`super::holder_lock::HolderLock::inheritable_dup`]); `None` once released.
    pub fn inheritable_dup(&self) -> std::io::Result<Option<OwnedFd>> {
        let guard = self.fd.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_ref().map(|fd| rustix::io::dup(fd).map_err(std::io::Error::from)).transpose()
    }

    /// Drops our copy of the lock: the session is sealed or released, and the next writer
    /// must be able to take it. Copies a child inherited are the child's.
    pub fn release(&self) {
        self.fd.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// True while our copy is held.
    pub fn is_held(&self) -> bool {
        self.fd.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// The acquisition failed: remove what [`lock_transcript`] created — the file only if it
    /// is still the empty file we made (same inode, nothing written), then each directory
    /// it made, deepest first, only if empty — so a refusal changes nothing under R.
    pub fn undo_creation(&self) {
        let c = &self.created;
        if !c.file && c.dirs == 0 {
            return;
        }
        let Ok(root) = open_root(&c.runtime_dir) else { return };
        let parts: Vec<&str> = c.key.split('/').collect();
        let (file, dirs) = parts.split_last().expect("a normalized key has a component");
        let mut chain: Vec<OwnedFd> = Vec::new();
        for d in dirs {
            let base = chain.last().unwrap_or(&root);
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match rfs::openat(base, *d, flags, Mode::empty()) {
                Ok(fd) => chain.push(fd),
                Err(_) => return,
            }
        }
        let parent = chain.last().unwrap_or(&root);
        if c.file
            && let Ok(st) = rfs::statat(parent, *file, rfs::AtFlags::SYMLINK_NOFOLLOW)
            && st.st_ino == self.ino
            && st.st_size == 0
        {
            let _ = rfs::unlinkat(parent, *file, rfs::AtFlags::empty());
        }
        for i in (dirs.len() - c.dirs..dirs.len()).rev() {
            let base = if i == 0 { &root } else { &chain[i - 1] };
            let _ = rfs::unlinkat(base, dirs[i], rfs::AtFlags::REMOVEDIR);
        }
    }
}

/// Opens (creating when absent) the transcript `key` beneath `runtime_dir` and takes its
/// lock for a lease. `lock_dir` is where to look for the session that holds it, to name it.
pub fn lock_transcript(
    runtime_dir: &Path,
    key: &str,
    session_id: &str,
    lock_dir: &Dir,
) -> Result<TranscriptLock, LockError> {
    let (fd, created) = open_or_create(runtime_dir, key)?;
    let lock = TranscriptLock { ino: regular_ino(&fd)?, fd: Mutex::new(None), created };
    match take(fd.as_fd())? {
        Take::Taken => {
            *lock.fd.lock().unwrap_or_else(|p| p.into_inner()) = Some(fd);
            Ok(lock)
        }
        // Not held, but still ours to undo: the acquisition goes on without it.
        Take::Unlockable => Ok(lock),
        Take::Busy => {
            drop(fd);
            lock.undo_creation();
            Err(busy(session_id, lock_dir, lock.ino))
        }
    }
}

/// Refuses when another holder keeps the lock of the transcript `key` (an absent
/// transcript has no holder). For callers that exit at once and so cannot keep it.
pub fn check_transcript_free(runtime_dir: &Path, key: &str, session_id: &str, lock_dir: &Dir) -> Result<(), LockError> {
    let root = open_root(runtime_dir).map_err(|e| LockError::io("open runtime directory", e))?;
    let fd = match open_beneath(&root, key, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY, false) {
        Ok(Beneath::Opened(fd)) => fd,
        // Absent: nothing to hold. Unsafe: the shape checks that follow refuse it.
        Ok(Beneath::Absent | Beneath::Unsafe(_)) => return Ok(()),
        Err(e) => return Err(LockError::io("open the transcript", e)),
    };
    let Ok(ino) = regular_ino(&fd) else { return Ok(()) };
    // Got it: dropped again at once when `fd` closes.
    match take(fd.as_fd())? {
        Take::Taken | Take::Unlockable => Ok(()),
        Take::Busy => Err(busy(session_id, lock_dir, ino)),
    }
}

/// What [`take`] got.
enum Take {
    Taken,
    /// Another open file description keeps it.
    Busy,
    /// This filesystem will not lock a read-only descriptor (see [`take`]).
    Unlockable,
}

/// `flock(LOCK_EX|LOCK_NB)`, tried again for a moment while a probe holds it.
///
/// Only where the filesystem arbitrates locks for every mount (the holder lock's rule,
/// [`super::holder_lock::lock_evidence_supported`]): on FUSE each mount keeps its own lock
/// table — or forwards locks to a daemon that may serve them in the same thread as the
/// writer's appends — so a lock there proves nothing across mounts and may stall writes.
fn take(fd: BorrowedFd<'_>) -> Result<Take, LockError> {
    use Take::Unlockable;
    if !super::filesystem::of_fd(fd).is_ok_and(|f| f.locks_arbitrated()) {
        return Ok(Unlockable);
    }
    for _ in 0..ATTEMPTS {
        match rfs::flock(fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(Take::Taken),
            Err(Errno::WOULDBLOCK) => std::thread::sleep(PAUSE),
            // The NFSv4 client emulates `flock` with a byte-range lock and refuses an
            // exclusive one on a read-only descriptor (`EBADF`); a filesystem may have no
            // lock manager (`ENOLCK`) or no locks (`EOPNOTSUPP`, `EINVAL`). A writable
            // descriptor is not an option: it would count as a writer for the read lease
            // every handoff asks for. So there the lock is not had — see the module docs.
            Err(Errno::BADF | Errno::NOLCK | Errno::OPNOTSUPP | Errno::INVAL) => return Ok(Unlockable),
            Err(e) => return Err(LockError::io("lock the transcript", e.into())),
        }
    }
    Ok(Take::Busy)
}

fn regular_ino(fd: &OwnedFd) -> Result<u64, LockError> {
    let st = rfs::fstat(fd).map_err(|e| LockError::io("fstat the transcript", e.into()))?;
    if Kind::of_mode(st.st_mode) != Kind::Regular {
        return Err(LockError::TranscriptUnsafe {
            reason: format!("the transcript is a {}", Kind::of_mode(st.st_mode).describe()),
        });
    }
    Ok(st.st_ino)
}

/// Opens `key` read-only beneath `runtime_dir`, creating what is missing: each directory
/// 0700 and the file 0600, never following a symlink (`O_NOFOLLOW` on every component, as
/// the proof read's walk does). Read-only: this descriptor only carries the lock, and a
/// read-only one never counts as a writer for the read lease ([`super::exclusive`]).
fn open_or_create(runtime_dir: &Path, key: &str) -> Result<(OwnedFd, Created), LockError> {
    let unsafe_path = |why: &str| LockError::TranscriptUnsafe { reason: why.into() };
    let root = open_root(runtime_dir).map_err(|e| LockError::io("open runtime directory", e))?;
    let parts: Vec<&str> = key.split('/').collect();
    let (file, dirs) = parts.split_last().expect("a normalized key has a component");
    let mut created = Created { runtime_dir: runtime_dir.to_owned(), key: key.to_owned(), dirs: 0, file: false };
    let mut cur: Option<OwnedFd> = None;
    for d in dirs {
        let base = cur.as_ref().unwrap_or(&root);
        match rfs::mkdirat(base, *d, Mode::from_raw_mode(0o700)) {
            // Only a run of directories at the end of the path can be new.
            Ok(()) => created.dirs += 1,
            Err(Errno::EXIST) => created.dirs = 0,
            Err(e) => return Err(LockError::io("create the transcript directory", e.into())),
        }
        let dir = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        cur = Some(match rfs::openat(base, *d, dir, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::LOOP | Errno::NOTDIR) => {
                return Err(unsafe_path("a symlink or non-directory in the transcript path"));
            }
            Err(e) => return Err(LockError::io("open the transcript directory", e.into())),
        });
    }
    let base = cur.as_ref().unwrap_or(&root);
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    // Existing first, so that "we created it" is known exactly (O_EXCL), never guessed.
    let opened = match rfs::openat(base, OsStr::new(file), flags, Mode::empty()) {
        Err(Errno::NOENT) => {
            let made =
                rfs::openat(base, OsStr::new(file), flags | OFlags::CREATE | OFlags::EXCL, Mode::from_raw_mode(0o600));
            created.file = made.is_ok();
            match made {
                Err(Errno::EXIST) => rfs::openat(base, OsStr::new(file), flags, Mode::empty()),
                other => other,
            }
        }
        other => other,
    };
    match opened {
        Ok(fd) => Ok((fd, created)),
        Err(Errno::LOOP) => Err(unsafe_path("a symlink in the transcript path")),
        Err(Errno::NXIO) => Err(unsafe_path("the transcript is a socket")),
        Err(e) => Err(LockError::io("open the transcript", e.into())),
    }
}

/// The refusal, naming the session whose record in `lock_dir` says it holds the lock of the
/// transcript numbered `ino`, when one does.
fn busy(session_id: &str, lock_dir: &Dir, ino: u64) -> LockError {
    LockError::TranscriptBusy {
        session_id: session_id.to_owned(),
        by: TranscriptWriter::Session(holder_of(lock_dir, ino)),
    }
}

/// Which session's active record names the transcript inode `ino`, scanning the primaries
/// (`*.lock`) of `lock_dir`. Diagnostics only: the kernel's lock is the refusal.
fn holder_of(lock_dir: &Dir, ino: u64) -> Option<String> {
    for name in lock_dir.list().ok()? {
        let Some(n) = name.to_str() else { continue };
        if !n.ends_with(".lock") {
            continue;
        }
        if let ReadRegular::Regular(bytes, _) = lock_dir.read_regular(OsStr::new(n))
            && let Ok(r) = parse_record(&bytes)
            && r.is_active()
            && r.owner.transcript_ino == Some(ino)
        {
            return Some(r.session_id);
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use crate::lockfile::sys::scratch_dir;

    #[test]
    fn one_inode_one_holder_whatever_path_leads_to_it() {
        let (t, d) = scratch_dir();
        let held = lock_transcript(t.path(), "chats/a.jsonl", "a", &d).unwrap();
        assert!(t.path().join("chats/a.jsonl").is_file(), "an absent transcript is created to carry the lock");
        // A refused holder takes back what it created (here: nothing, all existed).
        assert!(lock_transcript(t.path(), "chats/a.jsonl", "a2", &d).is_err());
        assert!(t.path().join("chats/a.jsonl").is_file());
        // The same file through another path (a hard link stands for a bind mount or a
        // second runtime directory): the kernel's lock is the same.
        std::fs::hard_link(t.path().join("chats/a.jsonl"), t.path().join("chats/b.jsonl")).unwrap();
        let e = lock_transcript(t.path(), "chats/b.jsonl", "b", &d).unwrap_err();
        assert!(matches!(e, LockError::TranscriptBusy { by: TranscriptWriter::Session(None), .. }), "{e:?}");
        assert!(check_transcript_free(t.path(), "chats/b.jsonl", "b", &d).is_err());
        assert!(check_transcript_free(t.path(), "chats/other.jsonl", "o", &d).is_ok(), "absent: free");
        // A duplicate (what the writer inherits) keeps it after our copy is released.
        let dup = held.inheritable_dup().unwrap().unwrap();
        held.release();
        assert!(!held.is_held() && held.inheritable_dup().unwrap().is_none());
        assert!(check_transcript_free(t.path(), "chats/b.jsonl", "b", &d).is_err(), "the duplicate holds it");
        drop(dup);
        check_transcript_free(t.path(), "chats/b.jsonl", "b", &d).unwrap();
        let again = lock_transcript(t.path(), "chats/b.jsonl", "b", &d).unwrap();
        assert_eq!(again.held_ino(), Some(held.ino));
    }

    #[test]
    fn undoing_removes_only_what_was_created_and_is_still_empty() {
        let (t, _d) = scratch_dir();
        let lock = lock_transcript(t.path(), "p/q/s.jsonl", "s", &_d).unwrap();
        assert_eq!(lock.created.dirs, 2);
        lock.undo_creation();
        drop(lock);
        assert!(!t.path().join("p").exists(), "the file and both directories it made are gone");
        std::fs::create_dir(t.path().join("p")).unwrap();
        let lock = lock_transcript(t.path(), "p/q/s.jsonl", "s", &_d).unwrap();
        assert_eq!((lock.created.dirs, lock.created.file), (1, true));
        std::fs::write(t.path().join("p/q/s.jsonl"), b"{}\n").unwrap();
        lock.undo_creation();
        drop(lock);
        assert!(t.path().join("p/q/s.jsonl").exists(), "a file somebody wrote to is kept");
        std::fs::write(t.path().join("p/q/s.jsonl"), b"").unwrap();
        let lock = lock_transcript(t.path(), "p/q/s.jsonl", "s", &_d).unwrap();
        assert_eq!((lock.created.dirs, lock.created.file), (0, false));
        lock.undo_creation();
        assert!(t.path().join("p/q/s.jsonl").exists(), "a file it did not create is kept");
    }

    #[test]
    fn a_symlink_on_the_way_or_a_directory_is_refused() {
        let (t, d) = scratch_dir();
        std::fs::create_dir(t.path().join("real")).unwrap();
        std::os::unix::fs::symlink(t.path().join("real"), t.path().join("chats")).unwrap();
        let e = lock_transcript(t.path(), "chats/s.jsonl", "s", &d).unwrap_err();
        assert!(matches!(e, LockError::TranscriptUnsafe { .. }), "{e:?}");
        assert!(!t.path().join("real/s.jsonl").exists(), "nothing created through the symlink");
        std::fs::create_dir_all(t.path().join("x/s.jsonl")).unwrap();
        assert!(lock_transcript(t.path(), "x/s.jsonl", "s", &d).is_err());
    }
}
