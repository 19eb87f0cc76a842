//! Change notification for `writerctl status --watch`: wakes a caller when a lock directory
//! (or a transcript's directory) may have changed, so it re-reads the state only then.
//!
//! # Calling sequence
//!
//! ```text
//! let feed = ChangeFeed::open(&[lock dir, transcript dir], force_poll)?;
//! feed.source()                       // Inotify, or Polling { why } — say which, once
//! loop {
//!     read the state; show it if it changed;
//!     feed.wait(interval);            // true: something changed; false: the interval passed
//! }
//! ```
//!
//! # What it promises, and what it does not
//!
//! A wake is a hint, never evidence: the caller always reads the state again from the
//! files (through [`super::status`]), and a wake with nothing changed costs one read. What
//! must hold is the other direction — *no change is missed for longer than the interval*:
//!
//! * On a local filesystem ([`super::filesystem::Filesystem::network`] false) the kernel
//!   sees every change to the directory, and inotify reports it. The watch is put on each
//!   directory's nearest existing ancestor (a lock directory that does not exist yet is
//!   created under R/tmp), and put again after every event *before* the wake is sent, so a
//!   change made after the caller's read is always reported (the caller reads after the
//!   wake, the watch is in place before it).
//! * On a network filesystem (NFS, CephFS, SMB, FUSE, anything not known to be local),
//!   inotify reports only what *this* client did; another host's `link(2)` reaches the
//!   server and no notification comes back. There the feed never wakes and the caller
//!   re-reads at its interval ([`ChangeSource::Polling`]), which is the stated bound.
//! * Some state changes without touching any directory: an active holder whose process
//!   dies leaves its record as it was, and only the liveness probe notices. The caller
//!   therefore re-reads at its interval under inotify too (see `status --watch`).
//!
//! If the inotify instance cannot be made (the per-user limit `fs.inotify.max_user_instances`
//! or `max_user_watches` is reached), the feed falls back to polling and says why.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::fs::{Mode, OFlags};

use super::error::LockError;
use super::filesystem;

/// How the feed learns about changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeSource {
    /// The kernel reports every change (a local filesystem).
    Inotify,
    /// Nothing reports changes: the caller re-reads at its interval.
    Polling {
        /// Why (`nfs4 does not report other hosts' changes`), for the operator.
        why: String,
    },
}

/// Wakes its owner when a watched directory may have changed. See the module documentation.
pub struct ChangeFeed {
    source: ChangeSource,
    rx: Receiver<()>,
    /// Kept so that a polling feed's channel stays open (its `wait` then times out instead of
    /// returning at once).
    _tx: Sender<()>,
}

impl ChangeFeed {
    /// Starts watching `dirs` (each may not exist yet). `force_poll` skips inotify (for a
    /// directory that other hosts change behind a filesystem this host believes local, e.g.
    /// a block device mounted by two hosts, and for tests).
    pub fn open(dirs: &[PathBuf], force_poll: bool) -> Result<ChangeFeed, LockError> {
        let (tx, rx) = channel();
        let source = match (force_poll, remote_filesystem(dirs)?) {
            (true, _) => ChangeSource::Polling { why: "asked for with --poll".into() },
            (false, Some(fs_type)) => {
                ChangeSource::Polling { why: format!("{fs_type} does not report other hosts' changes") }
            }
            (false, None) => match start_inotify(dirs.to_vec(), tx.clone()) {
                Ok(()) => ChangeSource::Inotify,
                Err(e) => ChangeSource::Polling { why: format!("inotify is not available here ({e})") },
            },
        };
        Ok(ChangeFeed { source, rx, _tx: tx })
    }

    /// How this feed learns about changes.
    pub fn source(&self) -> &ChangeSource {
        &self.source
    }

    /// Waits at most `timeout` for a change; true when one was reported. Every report that
    /// arrived during the wait is consumed (one wake for a burst of events).
    pub fn wait(&self, timeout: Duration) -> bool {
        match self.rx.recv_timeout(timeout) {
            Ok(()) => {
                while self.rx.try_recv().is_ok() {}
                true
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => false,
        }
    }
}

/// The nearest existing ancestor of `dir` (itself when it exists): where a watch can be put
/// so that the directory's creation is seen.
fn nearest_existing(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|p| !p.as_os_str().is_empty() && p.is_dir())
}

/// The type of the first watched directory that is not on a local filesystem, if any: there
/// inotify cannot see other hosts' changes. Classified as the protocol does
/// ([`filesystem::of_fd`]), on the nearest existing ancestor.
fn remote_filesystem(dirs: &[PathBuf]) -> Result<Option<String>, LockError> {
    for dir in dirs {
        let Some(at) = nearest_existing(dir) else { continue };
        let fd = rustix::fs::open(at, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| LockError::io("open a watched directory", e.into()))?;
        let fs = filesystem::of_fd(&fd).map_err(|e| LockError::io("identify a watched directory's filesystem", e))?;
        if fs.network() {
            return Ok(Some(fs.fs_type));
        }
    }
    Ok(None)
}

/// The events that may change what `status` reports about a directory's entries, and the
/// directory's own removal or move (after which the watch is put on an ancestor again).
fn watch_flags() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::MODIFY
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::ATTRIB
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
}

/// Puts (again) a watch on each directory's nearest existing ancestor. Adding a watch that
/// exists only refreshes its flags, so this is called after every event: a directory that
/// was just created gets its own watch before anyone is woken (see the module
/// documentation for why that order matters).
fn arm(fd: &rustix::fd::OwnedFd, dirs: &[PathBuf]) -> rustix::io::Result<()> {
    for dir in dirs {
        if let Some(at) = nearest_existing(dir) {
            inotify::add_watch(fd, at, watch_flags())?;
        }
    }
    Ok(())
}

/// Creates the inotify instance, arms it, and starts the thread that turns its events into
/// wakes. The thread blocks in `read(2)` and ends when the feed is dropped (its next send
/// fails) or the process exits.
fn start_inotify(dirs: Vec<PathBuf>, tx: Sender<()>) -> rustix::io::Result<()> {
    let fd = inotify::init(CreateFlags::CLOEXEC)?;
    arm(&fd, &dirs)?;
    std::thread::Builder::new()
        .name("inotify".into())
        .spawn(move || {
            let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
            let mut reader = inotify::Reader::new(&fd, &mut buf);
            loop {
                match reader.next() {
                    Ok(_) => {}
                    Err(rustix::io::Errno::INTR) => continue,
                    // The descriptor broke: wake the caller once more and stop; it still
                    // re-reads at its interval.
                    Err(_) => {
                        let _ = tx.send(());
                        return;
                    }
                }
                if reader.is_buffer_empty() {
                    // Re-armed before the wake (see `arm`); a failure leaves the old watches,
                    // and the interval still bounds what could be missed.
                    let _ = arm(&fd, &dirs);
                    if tx.send(()).is_err() {
                        return;
                    }
                }
            }
        })
        .map_err(|e| rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::AGAIN))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_in_a_watched_directory_wakes_the_feed() {
        let tmp = tempfile::tempdir().unwrap();
        let feed = ChangeFeed::open(&[tmp.path().to_path_buf()], false).unwrap();
        assert_eq!(feed.source(), &ChangeSource::Inotify, "tmpfs/ext4 under TMPDIR is local");
        assert!(!feed.wait(Duration::from_millis(50)), "nothing changed yet");
        std::fs::write(tmp.path().join("a.lock"), b"x").unwrap();
        assert!(feed.wait(Duration::from_secs(10)), "the write was not reported");
    }

    #[test]
    fn a_directory_created_later_is_watched_from_its_creation() {
        let tmp = tempfile::tempdir().unwrap();
        let locks = tmp.path().join("tmp/session-writer-locks");
        let feed = ChangeFeed::open(std::slice::from_ref(&locks), false).unwrap();
        std::fs::create_dir(tmp.path().join("tmp")).unwrap();
        assert!(feed.wait(Duration::from_secs(10)), "the ancestor's change was not reported");
        std::fs::create_dir(&locks).unwrap();
        assert!(feed.wait(Duration::from_secs(10)), "the lock directory's creation was not reported");
        // Drain whatever the creation produced, then a file inside the new directory.
        while feed.wait(Duration::from_millis(100)) {}
        std::fs::write(locks.join("s.lock"), b"x").unwrap();
        assert!(feed.wait(Duration::from_secs(10)), "a change inside the new directory was not reported");
    }

    #[test]
    fn a_polling_feed_only_times_out() {
        let tmp = tempfile::tempdir().unwrap();
        let feed = ChangeFeed::open(&[tmp.path().to_path_buf()], true).unwrap();
        assert!(matches!(feed.source(), ChangeSource::Polling { why } if why.contains("--poll")));
        std::fs::write(tmp.path().join("a.lock"), b"x").unwrap();
        assert!(!feed.wait(Duration::from_millis(200)), "a polling feed reported a change");
    }

    #[test]
    fn the_nearest_existing_ancestor_is_found() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        assert_eq!(nearest_existing(&deep), Some(tmp.path()));
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(nearest_existing(&deep), Some(deep.as_path()));
    }
}
