//! The seal's exclusivity proof: before `run` seals, no open file description anywhere may
//! still be able to write the transcript (issue 27 item 3).
//!
//! # Why the drain is not enough
//!
//! `run` proves that no process of the writer's tree is left. A descriptor is not a process:
//! the writer can pass its transcript descriptor over a unix socket (`SCM_RIGHTS`) to a
//! process outside the tree, or leave it in flight in a socket buffer, and exit. That
//! description survives the drain and can append after the seal.
//!
//! # The proof: a momentary lease
//!
//! The kernel grants a read lease (`fcntl(F_SETLEASE, F_RDLCK)`) on a descriptor opened
//! read-only only when no open file description of the inode is open for writing
//! (`inode_is_open_for_write`: every writable `open`, every `dup`/`SCM_RIGHTS` copy of one
//! and every shared writable mapping keeps the count up, in any process, any namespace).
//! `EAGAIN` is the kernel's word that a writer exists. A read lease and not a write lease
//! (`F_WRLCK`), because a write lease is also refused while anyone merely *reads* the file
//! (a log shipper tailing the transcript would block every seal), and readers cannot write.
//!
//! The lease is released at once. Momentary is enough: a writable description can only come
//! into existence through a new `open` by path (a process the protocol does not cover and no
//! lock could stop) or by copying one that exists — and at the moment of the lease none
//! existed. Holding it would only make the kernel send us SIGIO (a lease break) when such an
//! `open` happens, which nothing here would act on.
//!
//! # Before a new writer (issue 38)
//!
//! The same question guards the other side of a handoff: before an acquisition, a reclaim,
//! a takeover or `recover` gives the transcript a new writer, [`prove_beneath`] asks it of
//! the transcript the key names beneath the runtime directory (no symlink followed). A
//! refusal there means a writer outside the protocol — a descriptor passed out of a crashed
//! holder's tree, a sidecar — can still append, and no process evidence may overrule it.
//!
//! # Where it cannot be had
//!
//! NFS, FUSE and other filesystems without leases (`EINVAL`), a caller that neither owns the
//! transcript nor has `CAP_LEASE` (`EACCES`), `fs.leases-enable = 0` (`EINVAL`), `ENOLCK`:
//! the seal goes on, and the record says so (`writerctl_exclusive: "unproven: <why>"`).

use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// Key of writerctl's extension to a sealed record: the exclusivity proof.
pub const EXCLUSIVE_KEY: &str = "writerctl_exclusive";

/// The value when the lease was granted.
pub const PROVEN: &str = "read_lease";

/// What the proof found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusive {
    /// The kernel granted a read lease: no open file description could write.
    Proven,
    /// No transcript at the path: nothing to write through.
    NoTranscript,
    /// No proof can be had here (and why).
    Unproven(String),
}

impl Exclusive {
    /// The value of [`EXCLUSIVE_KEY`] in the sealed record.
    pub fn record_value(&self) -> String {
        match self {
            Exclusive::Proven => PROVEN.into(),
            Exclusive::NoTranscript => "no_transcript".into(),
            Exclusive::Unproven(why) => format!("unproven: {why}"),
        }
    }
}

/// Another open file description can still write the transcript: a seal must not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("another open file description can still write the transcript (the kernel refused a read lease)")]
pub struct OpenForWriting;

/// Proves, at this moment, that no open file description can write `path` (see the module
/// docs). `Err` only when the kernel says one exists.
pub fn prove(path: &Path) -> Result<Exclusive, OpenForWriting> {
    // O_NONBLOCK: a FIFO at the path must not block us (the seal's proof read rejects it).
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(Exclusive::NoTranscript),
        Err(e) => return Ok(Exclusive::Unproven(format!("cannot open the transcript for a lease: {}", errno_name(e)))),
    };
    lease_verdict(&fd)
}

/// [`prove`] for the transcript `key` beneath `runtime_dir`, opened the way every proof read
/// opens it: beneath the root, no symlink in any component, `O_NONBLOCK` (a FIFO does not
/// hang us). An unsafe path or an unreadable root is "unproven" here: the proof read that
/// follows refuses it with its own error.
pub fn prove_beneath(runtime_dir: &Path, key: &str) -> Result<Exclusive, OpenForWriting> {
    use super::sys::{Beneath, open_beneath, open_root};
    let root = match open_root(runtime_dir) {
        Ok(r) => r,
        Err(e) => return Ok(Exclusive::Unproven(format!("cannot open the runtime directory: {e}"))),
    };
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
    match open_beneath(&root, key, flags, false) {
        Ok(Beneath::Opened(fd)) => lease_verdict(&fd),
        Ok(Beneath::Absent) => Ok(Exclusive::NoTranscript),
        Ok(Beneath::Unsafe(why)) => Ok(Exclusive::Unproven(why.into())),
        Err(e) => Ok(Exclusive::Unproven(format!("cannot open the transcript for a lease: {e}"))),
    }
}

/// The kernel's answer on an open read-only descriptor.
///
/// `EAGAIN` is the word "a writer exists" only where the lease is the local kernel's own
/// (`generic_setlease`): a local disk, tmpfs, or FUSE, whose inodes this kernel counts. A
/// network filesystem answers leases from its delegations or oplocks — NFSv4 refuses with
/// `EAGAIN` whenever the client holds no read delegation, SMB without an oplock — so there
/// it proves nothing either way: unproven, never "a writer exists" (which would fence every
/// seal and every new writer on such a volume).
fn lease_verdict(fd: &std::os::fd::OwnedFd) -> Result<Exclusive, OpenForWriting> {
    match read_lease_once(fd) {
        Ok(()) => Ok(Exclusive::Proven),
        Err(Errno::AGAIN) if !lease_is_local(fd) => Ok(Exclusive::Unproven(
            "a network filesystem answers leases from its delegations, so the kernel's refusal proves nothing here"
                .into(),
        )),
        Err(Errno::AGAIN) => Err(OpenForWriting),
        Err(e) => Ok(Exclusive::Unproven(format!("no lease on this filesystem or for this user ({})", errno_name(e)))),
    }
}

impl Exclusive {
    /// The evidence name recorded in `writerctl_recovered_from.evidence`, when the kernel
    /// proved that nothing can write the transcript.
    pub fn evidence(&self) -> Option<&'static str> {
        match self {
            Exclusive::Proven => Some(PROVEN),
            Exclusive::NoTranscript => Some("no_transcript"),
            Exclusive::Unproven(_) => None,
        }
    }
}

/// Whether this kernel arbitrates leases on `fd`'s filesystem itself (see [`lease_verdict`]).
/// Unknown counts as local: a refusal is then taken at its word (fail closed).
fn lease_is_local(fd: &std::os::fd::OwnedFd) -> bool {
    use super::filesystem::Family;
    match super::filesystem::of_fd(fd) {
        Ok(fs) => !matches!(fs.family, Family::Nfs | Family::Smb | Family::Ceph),
        Err(_) => true,
    }
}

fn errno_name(e: Errno) -> String {
    std::io::Error::from(e).to_string()
}

/// Takes a read lease on `fd` and releases it at once.
///
/// `unsafe` because neither rustix nor std exposes `F_SETLEASE`; `fcntl` with an integer
/// argument on a descriptor we own has no memory-safety concern.
#[allow(unsafe_code)]
fn read_lease_once(fd: &std::os::fd::OwnedFd) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    let raw = fd.as_raw_fd();
    // SAFETY: `raw` is open for the duration (borrowed from `fd`); the third argument is
    // an int, as F_SETLEASE expects.
    let r = unsafe { libc::fcntl(raw, libc::F_SETLEASE, libc::F_RDLCK) };
    if r == -1 {
        return Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::INVAL));
    }
    // SAFETY: as above.
    let _ = unsafe { libc::fcntl(raw, libc::F_SETLEASE, libc::F_UNLCK) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_nobody_writes_is_proven_even_with_readers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, b"{}\n").unwrap();
        let _reader = std::fs::File::open(&p).unwrap();
        assert_eq!(prove(&p), Ok(Exclusive::Proven));
    }

    #[test]
    fn an_open_writer_anywhere_refuses_and_closing_it_proves() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let mut w = std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap();
        w.write_all(b"{}\n").unwrap();
        assert_eq!(prove(&p), Err(OpenForWriting));
        // A duplicate (what SCM_RIGHTS delivers) is the same description: still refused.
        let dup = w.try_clone().unwrap();
        drop(w);
        assert_eq!(prove(&p), Err(OpenForWriting));
        drop(dup);
        assert_eq!(prove(&p), Ok(Exclusive::Proven));
    }

    #[test]
    fn beneath_the_runtime_directory_the_same_answers_and_no_symlink_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("chats")).unwrap();
        let p = dir.path().join("chats/t.jsonl");
        assert_eq!(prove_beneath(dir.path(), "chats/t.jsonl"), Ok(Exclusive::NoTranscript));
        let w = std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap();
        assert_eq!(prove_beneath(dir.path(), "chats/t.jsonl"), Err(OpenForWriting));
        drop(w);
        assert_eq!(prove_beneath(dir.path(), "chats/t.jsonl"), Ok(Exclusive::Proven));
        assert_eq!(Exclusive::Proven.evidence(), Some("read_lease"));
        std::os::unix::fs::symlink(dir.path().join("chats"), dir.path().join("link")).unwrap();
        let _w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        assert!(
            matches!(prove_beneath(dir.path(), "link/t.jsonl"), Ok(Exclusive::Unproven(_))),
            "a symlinked path is not judged through the link"
        );
        assert_eq!(Exclusive::Unproven("x".into()).evidence(), None);
    }

    #[test]
    fn no_transcript_and_a_symlink_are_said_as_such() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(prove(&dir.path().join("absent")), Ok(Exclusive::NoTranscript));
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link")).unwrap();
        assert!(matches!(prove(&dir.path().join("link")), Ok(Exclusive::Unproven(_))));
        assert_eq!(Exclusive::Unproven("x".into()).record_value(), "unproven: x");
        assert_eq!(Exclusive::Proven.record_value(), PROVEN);
    }
}
