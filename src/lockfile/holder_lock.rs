//! The holder lock: kernel evidence of whether a lock's holder — with every process it
//! handed the lock's descriptor to — is gone (issue 27 items 1 and 2).
//!
//! # Why
//!
//! The pid rule (QWEN_FORMAT §3.3) can only judge a record written in our own pid namespace,
//! and even there it sees one process: a supervisor SIGKILLed while the writer's escaped
//! descendants keep appending is "gone" to it. Pod labels (`WRITERCTL_POD_*`) are claims any
//! sidecar or debug container can copy. What neither can fake is a lock the kernel holds for
//! an open file: it is dropped only when the *last* descriptor of that open file description
//! is closed, however many processes share it through `fork` and `exec`, and whatever pid
//! namespace each runs in.
//!
//! # Calling sequence
//!
//! ```text
//! acquire:  create_holder_lock(dir, L) ─► the new record names it (`writerctl_holder_lock`)
//!           ─► install ─► the Lease keeps the descriptor (run: a dup inherited by the writer)
//! release / seal: remove the record ─► remove_holder_file
//! reclaim:  evidence said Released ─► replace the record ─► remove the predecessor's file
//! readers:  holder_lock_state(dir, name) ─► Held | Released | Unverifiable(why)
//! ```
//!
//! # Why `flock(2)` and not `fcntl` locks
//!
//! `rustix::fs::fcntl_lock` issues `F_SETLK`: a *process-associated* POSIX lock, dropped as
//! soon as the process closes any descriptor of the file and never inherited by a child —
//! exactly wrong here. Open-file-description locks (`F_OFD_SETLK`) have the right semantics
//! but no safe rustix call, and the engine keeps `unsafe` to the one call no safe API has
//! ([`super::exclusive`]'s lease). `flock(2)` locks belong to the
//! open file description just as OFD locks do: "the lock is released either by an explicit
//! LOCK_UN operation on any of these duplicate file descriptors, or when all such file
//! descriptors have been closed" (flock(2)); a descriptor inherited across `fork` and `exec`
//! keeps it, and a second `open` of the same file (even in the same process) conflicts with
//! it. On NFS, Linux emulates `flock` with a whole-file byte-range lock that the server
//! arbitrates (local to the client with `local_lock=flock|all`); either way one kernel
//! answers every question asked within one boot, which is all this evidence is used for.
//!
//! # When the evidence counts
//!
//! Only when the holder and the reader ask the same kernel: the record was written in our
//! boot (its start identity's boot id is ours), whatever pid namespace either runs in; the
//! caller ([`super::identity::decide`]) checks that. Across boots or hosts never: an NFS
//! server frees the locks of a client whose lease expired — a partitioned client that may
//! still be writing. On FUSE and other filesystems that do not arbitrate locks for every client
//! ([`lock_evidence_supported`]) two mounts of one filesystem
//! (two pods on one node) may each keep their own lock table, so a free lock proves nothing.
//!
//! # What a crash leaves
//!
//! `L.holder.<uuid>`, an empty 0600 file: held while any process of the holder's tree lives,
//! free afterwards. A free one that no record names is residue (`status` lists it, `recover`
//! may move it aside). Errors never name an owner id (the file name carries none).

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{self as rfs, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::liveness::Unverifiable;
use super::sys::{Dir, Kind};

/// The record key naming the holder lock file (qwen ignores unknown keys).
pub const HOLDER_LOCK_KEY: &str = "writerctl_holder_lock";

/// A holder lock we created and hold: the file's name in the lock directory and the
/// descriptor whose open file description carries the lock.
#[derive(Debug)]
pub struct HolderLock {
    name: String,
    fd: OwnedFd,
}

impl HolderLock {
    /// The file's name in the lock directory (what the record names).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The descriptor holding the lock.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// A duplicate of the locked descriptor *without* `FD_CLOEXEC`, for a child to inherit
    /// (`run` gives it to its writer, so the writer's whole tree holds the lock). It shares
    /// the open file description, hence the lock. The caller closes its copy once the child
    /// is started; until then any child started by this process inherits it too, which can
    /// only make the holder look alive longer (fail closed).
    pub fn inheritable_dup(&self) -> std::io::Result<OwnedFd> {
        // rustix's `dup` is dup(2): the new descriptor never has FD_CLOEXEC.
        rustix::io::dup(&self.fd).map_err(std::io::Error::from)
    }
}

/// What the kernel says about a recorded holder lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HolderLockState {
    /// Another open file description holds the lock: some process of the holder's tree is
    /// alive (and may be writing).
    Held,
    /// The lock was free: every descriptor of the holder's tree is closed.
    Released,
    /// No verdict: why.
    Unverifiable(Unverifiable),
}

/// `<lock name>.holder.<uuid>`: a plain file name (no `/`, no NUL), the suffix a UUID.
///
/// Why check: the name comes from a record anyone may have written, and it is opened
/// relative to the lock directory; a name with a `/` could point anywhere.
pub fn is_holder_lock_name(name: &str) -> bool {
    match name.rsplit_once(".holder.") {
        Some((lock, id)) => {
            !lock.is_empty()
                && !name.contains('/')
                && !name.contains('\0')
                && id.len() == 36
                && uuid::Uuid::parse_str(id).is_ok()
        }
        None => false,
    }
}

/// Creates `<lock_name>.holder.<uuid>` exclusively (0600, `O_NOFOLLOW`) and takes its lock.
///
/// Why a fresh file per acquisition: the lock must be ours alone from the start, so that
/// "free" can only ever mean "every descriptor of *our* holder's tree is closed". A new
/// name (`O_EXCL`) is never shared with a predecessor, whose tree may still hold its own.
/// No directory fsync here: the acquisition's own fsync after installing the record covers
/// this entry too, and after a power loss the boot id changes, which voids the evidence.
pub fn create_holder_lock(dir: &Dir, lock_name: &str) -> std::io::Result<HolderLock> {
    let name = format!("{lock_name}.holder.{}", uuid::Uuid::new_v4());
    let fd = rfs::openat(
        dir,
        OsStr::new(&name),
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    if let Err(e) = rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        let _ = dir.unlink(OsStr::new(&name));
        return Err(e.into());
    }
    Ok(HolderLock { name, fd })
}

/// Removes a holder-lock file the caller no longer needs (after the record naming it was
/// removed or replaced). A missing file or an invalid name is nothing to do.
pub fn remove_holder_file(dir: &Dir, name: &str) {
    if is_holder_lock_name(name) {
        let _ = dir.unlink(OsStr::new(name));
    }
}

/// Puts back the holder-lock file `name` of a record whose lock was proven released (a
/// predecessor that [`super::give_back`] restores): an empty, unlocked file — exactly the
/// evidence there was when the reclaim judged it ("released"). An existing file is left as
/// it is.
pub fn recreate_released_holder_file(dir: &Dir, name: &str) -> std::io::Result<()> {
    if !is_holder_lock_name(name) {
        return Err(std::io::Error::other("not a holder-lock file name"));
    }
    match rfs::openat(
        dir,
        OsStr::new(name),
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    ) {
        Ok(_) | Err(Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Can a free holder lock in `dir` be trusted to mean "released" for every mount of it that
/// a holder may use? Only where the filesystem arbitrates locks for every client
/// ([`super::filesystem::Filesystem::locks_arbitrated`]): a local disk (the kernel's own
/// table), NFS with `local_lock=none`, CephFS, SMB. Not on FUSE — a FUSE filesystem that
/// does not implement locking gets locks the kernel keeps per mount, and two pods on one
/// node each mount their own — nor on NFS with `local_lock`, nor on a type we do not know.
pub fn lock_evidence_supported(dir: &Dir) -> Result<(), String> {
    let fs = dir.filesystem().map_err(|e| format!("statfs of the lock directory failed: {e}"))?;
    if fs.locks_arbitrated() {
        Ok(())
    } else {
        Err(format!("the lock directory is on {}, whose locks are not proven arbitrated for every mount", fs.fs_type))
    }
}

/// Probes the holder lock `name` in `dir` without waiting: open it (`O_RDWR|O_NOFOLLOW|
/// O_NONBLOCK`), require a regular file with one link, try the lock.
///
/// * another open file description holds it (`EWOULDBLOCK`) → [`HolderLockState::Held`];
/// * we got it → [`HolderLockState::Released`] (dropped again at once by closing);
/// * anything else → [`HolderLockState::Unverifiable`].
///
/// Taking the lock for a moment is harmless: a holder never locks again (its lock is taken
/// once, at creation), and a concurrent prober that meets ours answers Held — fail closed.
/// Validity (same boot) is the caller's to check.
pub fn holder_lock_state(dir: &Dir, name: &str) -> HolderLockState {
    use HolderLockState::Unverifiable as No;
    if !is_holder_lock_name(name) {
        return No(Unverifiable::BadName);
    }
    if lock_evidence_supported(dir).is_err() {
        return No(Unverifiable::LocksNotArbitrated);
    }
    let fd = match rfs::openat(
        dir,
        OsStr::new(name),
        OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return No(Unverifiable::Missing),
        Err(Errno::LOOP) => return No(Unverifiable::NotPlainFile),
        Err(_) => return No(Unverifiable::OpenFailed),
    };
    match rfs::fstat(&fd) {
        Ok(st) if Kind::of_mode(st.st_mode) == Kind::Regular && st.st_nlink == 1 => {}
        Ok(_) => return No(Unverifiable::NotPlainFile),
        Err(_) => return No(Unverifiable::OpenFailed),
    }
    match rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        // Closing `fd` (end of scope) drops our lock.
        Ok(()) => HolderLockState::Released,
        Err(Errno::WOULDBLOCK) => HolderLockState::Held,
        Err(_) => No(Unverifiable::LockFailed),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use crate::lockfile::sys::scratch_dir;

    fn held_by_another_description(dir: &tempfile::TempDir, name: &str) -> std::fs::File {
        let f = std::fs::OpenOptions::new().read(true).write(true).open(dir.path().join(name)).unwrap();
        rfs::flock(&f, FlockOperation::NonBlockingLockExclusive).unwrap();
        f
    }

    #[test]
    fn a_lock_held_through_another_open_file_description_is_held_and_free_once_closed() {
        let (t, d) = scratch_dir();
        let name = format!("s.lock.holder.{}", uuid::Uuid::new_v4());
        std::fs::write(t.path().join(&name), b"").unwrap();
        let other = held_by_another_description(&t, &name);
        assert_eq!(holder_lock_state(&d, &name), HolderLockState::Held);
        assert_eq!(holder_lock_state(&d, &name), HolderLockState::Held, "probing does not disturb it");
        drop(other);
        assert_eq!(holder_lock_state(&d, &name), HolderLockState::Released);
        assert_eq!(holder_lock_state(&d, &name), HolderLockState::Released, "the probe let go again");
    }

    #[test]
    fn our_own_holder_lock_is_held_until_every_duplicate_is_closed() {
        let (_t, d) = scratch_dir();
        let lock = create_holder_lock(&d, "s.lock").unwrap();
        assert!(is_holder_lock_name(lock.name()));
        assert_eq!(holder_lock_state(&d, lock.name()), HolderLockState::Held);
        let name = lock.name().to_owned();
        let dup = lock.inheritable_dup().unwrap();
        let flags = rustix::io::fcntl_getfd(&dup).unwrap();
        assert!(!flags.contains(rustix::io::FdFlags::CLOEXEC), "a child must inherit the duplicate");
        drop(lock);
        assert_eq!(holder_lock_state(&d, &name), HolderLockState::Held, "the duplicate shares the lock");
        drop(dup);
        assert_eq!(holder_lock_state(&d, &name), HolderLockState::Released);
        remove_holder_file(&d, &name);
        assert_eq!(holder_lock_state(&d, &name), HolderLockState::Unverifiable(Unverifiable::Missing));
        recreate_released_holder_file(&d, &name).unwrap();
        assert_eq!(holder_lock_state(&d, &name), HolderLockState::Released);
        recreate_released_holder_file(&d, &name).unwrap();
        assert!(recreate_released_holder_file(&d, "s.lock.holder.x").is_err());
    }

    #[test]
    fn a_symlink_a_hard_link_a_fifo_a_missing_file_or_a_bad_name_is_unverifiable() {
        let (t, d) = scratch_dir();
        let id = uuid::Uuid::new_v4();
        let target = t.path().join("target");
        std::fs::write(&target, b"").unwrap();
        let sym = format!("s.lock.holder.{id}");
        std::os::unix::fs::symlink(&target, t.path().join(&sym)).unwrap();
        assert_eq!(holder_lock_state(&d, &sym), HolderLockState::Unverifiable(Unverifiable::NotPlainFile));
        let hard = format!("h.lock.holder.{id}");
        std::fs::hard_link(&target, t.path().join(&hard)).unwrap();
        assert_eq!(holder_lock_state(&d, &hard), HolderLockState::Unverifiable(Unverifiable::NotPlainFile));
        let fifo = format!("f.lock.holder.{id}");
        rfs::mknodat(&d, OsStr::new(&fifo), rfs::FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert_eq!(holder_lock_state(&d, &fifo), HolderLockState::Unverifiable(Unverifiable::NotPlainFile));
        let missing = format!("m.lock.holder.{id}");
        assert_eq!(holder_lock_state(&d, &missing), HolderLockState::Unverifiable(Unverifiable::Missing));
        for bad in ["target", "s.lock.holder.x", "../s.lock.holder.0", &format!("a/s.lock.holder.{id}")] {
            assert_eq!(holder_lock_state(&d, bad), HolderLockState::Unverifiable(Unverifiable::BadName), "{bad}");
        }
    }

    #[test]
    fn a_local_filesystem_supports_the_evidence() {
        let (_t, d) = scratch_dir();
        assert_eq!(lock_evidence_supported(&d), Ok(()));
    }
}
