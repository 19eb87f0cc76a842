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
//! acquire:  create_holder_lock(dir, L): create a private temp, lock it, link it to
//!           L.holder.<uuid> ─► the new record names it and its identity
//!           (`writerctl_holder_lock`, `writerctl_holder_lock_id`) ─► install ─► the Lease
//!           keeps the descriptor (run: a dup inherited by the writer)
//! release / seal: remove the record ─► remove_holder_file
//! reclaim:  evidence said Released ─► replace the record ─► once the lease is in use
//!           (`acquire::settle`), remove the predecessor's file
//! readers:  holder_lock_state(dir, name, id) ─► Held | Released | Unverifiable(why)
//! ```
//!
//! # Why a file of its own and not the transcript's lock (issue 38 item 3)
//!
//! The transcript's own inode does carry a lock now ([`super::transcript_lock`]: one
//! transcript, one writer), and it would survive a replaced holder file. It is not the
//! holder evidence because a reader must be able to judge a record *without* the transcript:
//! `status` over a whole directory, `recover` for a session whose transcript key it does not
//! know, a record whose transcript does not exist yet or was moved. The holder file sits
//! beside the record it proves, and its identity in the record closes the gap a replaced
//! file opened (reproduction 4). A reclaim asks both questions anyway: this lock for "is
//! the holder's tree gone", the transcript's read lease for "can anything still write".
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
/// The record key naming which file the holder lock is ([`HolderFileId`], issue 38).
pub const HOLDER_LOCK_ID_KEY: &str = "writerctl_holder_lock_id";

/// A holder lock we created and hold: the file's name in the lock directory and the
/// descriptor whose open file description carries the lock.
#[derive(Debug)]
pub struct HolderLock {
    name: String,
    fd: OwnedFd,
    id: HolderFileId,
}

impl HolderLock {
    /// The file's name in the lock directory (what the record names).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's identity, for the record (`writerctl_holder_lock_id`).
    pub fn id(&self) -> HolderFileId {
        self.id
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

/// Creates `<lock_name>.holder.<uuid>` holding its lock from the moment its name exists.
///
/// Why a fresh file per acquisition: the lock must be ours alone from the start, so that
/// "free" can only ever mean "every descriptor of *our* holder's tree is closed". A new
/// name is never shared with a predecessor, whose tree may still hold its own.
///
/// Why lock first, then link (issue 38, reproduction 3): creating the final name with
/// `O_EXCL` and locking it afterwards left a moment in which the name existed unlocked; a
/// `status`, `recover` or `doctor` probe landing there took the lock first, and the record
/// went out naming a lock its holder never held. Here the file is created under a private
/// install-temp name (`<name>.<uuid>.tmp`: random, named by no record, never probed), locked,
/// and only then hard-linked to its final name, so no reader can ever open the final name
/// unlocked; the temp name is removed again (one link: what the probe requires).
///
/// The identity returned with it ([`HolderLock::id`]) is taken after the link and unlink,
/// and goes into the record: a file removed and recreated under the same name (a backup
/// tool, an operator) is another file, whose free lock proves nothing about our tree
/// (reproduction 4).
///
/// No directory fsync here: the acquisition's own fsync after installing the record covers
/// this entry too, and after a power loss the boot id changes, which voids the evidence.
pub fn create_holder_lock(dir: &Dir, lock_name: &str) -> std::io::Result<HolderLock> {
    let name = format!("{lock_name}.holder.{}", uuid::Uuid::new_v4());
    let private = super::paths::install_temp(&name, &uuid::Uuid::new_v4().to_string());
    let fd = rfs::openat(
        dir,
        OsStr::new(&private),
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    let published = rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive)
        .map_err(std::io::Error::from)
        .and_then(|()| dir.link(OsStr::new(&private), OsStr::new(&name)));
    let _ = dir.unlink(OsStr::new(&private));
    published?;
    // Still two links (the temp unlink failed) would make every probe answer "not a plain
    // file": give up rather than hand out evidence nobody can read.
    let id = match rfs::fstat(&fd) {
        Ok(st) if st.st_nlink == 1 => HolderFileId::of(&st),
        Ok(_) => {
            let _ = dir.unlink(OsStr::new(&name));
            return Err(std::io::Error::other("the holder-lock file kept its private install name"));
        }
        Err(e) => {
            let _ = dir.unlink(OsStr::new(&name));
            return Err(e.into());
        }
    };
    Ok(HolderLock { name, fd, id })
}

/// Which file a holder-lock name must be for its lock to count: inode number and change
/// time (seconds and nanoseconds), recorded as `"<ino>:<sec>.<nsec>"` in
/// `writerctl_holder_lock_id`.
///
/// Why the change time too: a filesystem may give a recreated file the inode number the
/// removed one had (ext4 does), and the change time of a new inode is the moment it was
/// made. Nothing writerctl does to a published holder file changes it (the lock and the
/// probes' opens do not); a hard link by a backup tool does — which also fails closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HolderFileId {
    ino: u64,
    ctime: (i64, u64),
}

impl HolderFileId {
    fn of(st: &rfs::Stat) -> HolderFileId {
        HolderFileId { ino: st.st_ino, ctime: (st.st_ctime, st.st_ctime_nsec) }
    }

    /// The recorded form.
    pub fn encode(&self) -> String {
        format!("{}:{}.{:09}", self.ino, self.ctime.0, self.ctime.1)
    }

    /// Parses the recorded form; `None` for anything else.
    pub fn decode(s: &str) -> Option<HolderFileId> {
        let (ino, rest) = s.split_once(':')?;
        let (sec, nsec) = rest.split_once('.')?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'-');
        if !digits(ino) || !digits(sec) || !digits(nsec) || nsec.len() != 9 {
            return None;
        }
        Some(HolderFileId { ino: ino.parse().ok()?, ctime: (sec.parse().ok()?, nsec.parse().ok()?) })
    }
}

/// Removes a holder-lock file the caller no longer needs (after the record naming it was
/// removed or replaced). A missing file or an invalid name is nothing to do.
pub fn remove_holder_file(dir: &Dir, name: &str) {
    if is_holder_lock_name(name) {
        let _ = dir.unlink(OsStr::new(name));
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
/// O_NONBLOCK`), require a regular file with one link that is the very file the record
/// names (`id`, see [`HolderFileId`]), try the lock.
///
/// * another open file description holds it (`EWOULDBLOCK`) → [`HolderLockState::Held`];
/// * we got it → [`HolderLockState::Released`] (dropped again at once by closing);
/// * anything else → [`HolderLockState::Unverifiable`]: a record without an identity
///   (older writerctl) or with one that does not match ([`Unverifiable::Replaced`]) says
///   nothing about its holder's tree, whatever the lock.
///
/// Taking the lock for a moment is harmless: a holder never locks again (its lock is taken
/// once, before its name exists), and a concurrent prober that meets ours answers Held —
/// fail closed. Validity (same boot) is the caller's to check.
pub fn holder_lock_state(dir: &Dir, name: &str, id: Option<&str>) -> HolderLockState {
    use HolderLockState::Unverifiable as No;
    if !is_holder_lock_name(name) {
        return No(Unverifiable::BadName);
    }
    if lock_evidence_supported(dir).is_err() {
        return No(Unverifiable::LocksNotArbitrated);
    }
    let Some(expected) = id.and_then(HolderFileId::decode) else { return No(Unverifiable::NoIdentity) };
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
        Ok(st) if Kind::of_mode(st.st_mode) == Kind::Regular && st.st_nlink == 1 => {
            if expected != HolderFileId::of(&st) {
                return No(Unverifiable::Replaced);
            }
        }
        Ok(_) => return No(Unverifiable::NotPlainFile),
        Err(_) => return No(Unverifiable::OpenFailed),
    }
    probe_lock(&fd)
}

/// The lock itself, on a descriptor already proven to be the recorded file: free (we got it
/// and drop it at once by closing) or held by another open file description.
fn probe_lock(fd: &OwnedFd) -> HolderLockState {
    match rfs::flock(fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => HolderLockState::Released,
        Err(Errno::WOULDBLOCK) => HolderLockState::Held,
        Err(_) => HolderLockState::Unverifiable(Unverifiable::LockFailed),
    }
}

/// A holder-lock file that no record names (residue, or a holder between publishing its
/// file and installing its record): is some open file description still holding it? Any
/// answer but "free" counts as held. No identity to check: nothing claims this file.
pub fn residue_is_free(dir: &Dir, name: &str) -> bool {
    if !is_holder_lock_name(name) || lock_evidence_supported(dir).is_err() {
        return false;
    }
    match rfs::openat(
        dir,
        OsStr::new(name),
        OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => probe_lock(&fd) == HolderLockState::Released,
        Err(_) => false,
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

    /// A file staged by hand and its recorded identity.
    fn staged(t: &tempfile::TempDir, name: &str) -> String {
        std::fs::write(t.path().join(name), b"").unwrap();
        HolderFileId::of(&rfs::stat(t.path().join(name)).unwrap()).encode()
    }

    #[test]
    fn a_lock_held_through_another_open_file_description_is_held_and_free_once_closed() {
        let (t, d) = scratch_dir();
        let name = format!("s.lock.holder.{}", uuid::Uuid::new_v4());
        let id = staged(&t, &name);
        let other = held_by_another_description(&t, &name);
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Held);
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Held, "probing does not disturb it");
        assert!(!residue_is_free(&d, &name));
        drop(other);
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Released);
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Released, "the probe let go again");
        assert!(residue_is_free(&d, &name));
    }

    #[test]
    fn our_own_holder_lock_is_held_until_every_duplicate_is_closed() {
        let (t, d) = scratch_dir();
        let lock = create_holder_lock(&d, "s.lock").unwrap();
        assert!(is_holder_lock_name(lock.name()));
        let id = lock.id().encode();
        assert_eq!(HolderFileId::decode(&id), Some(lock.id()));
        assert_eq!(holder_lock_state(&d, lock.name(), Some(&id)), HolderLockState::Held);
        let name = lock.name().to_owned();
        let dup = lock.inheritable_dup().unwrap();
        let flags = rustix::io::fcntl_getfd(&dup).unwrap();
        assert!(!flags.contains(rustix::io::FdFlags::CLOEXEC), "a child must inherit the duplicate");
        drop(lock);
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Held, "the duplicate shares the lock");
        drop(dup);
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Released);
        let left: Vec<_> = std::fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from(&name)], "no private install name is left behind");
        remove_holder_file(&d, &name);
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Unverifiable(Unverifiable::Missing));
    }

    #[test]
    fn the_published_name_is_never_unlocked_even_for_a_prober_racing_its_creation() {
        // Issue 38, reproduction 3: a probe between `O_EXCL` and `flock` took the lock first
        // and the record went out without one. Probe every name as it appears, from another
        // thread, while holder locks are created: each creation must still hold its lock.
        let (t, d) = scratch_dir();
        let dir = t.path().to_owned();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let prober = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let d = crate::lockfile::sys::Dir::open(&dir).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for e in std::fs::read_dir(&dir).unwrap().flatten() {
                        let n = e.file_name().to_string_lossy().into_owned();
                        // What a residue probe does: open and try the lock, on any name.
                        if let Ok(fd) = rfs::openat(&d, OsStr::new(&n), OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()) {
                            let _ = rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive);
                        }
                    }
                }
            })
        };
        let mut created = 0;
        for _ in 0..300 {
            // An Err: the prober held the private file's lock at the moment we took it —
            // refused, never published unlocked.
            if let Ok(lock) = create_holder_lock(&d, "s.lock") {
                created += 1;
                let id = lock.id().encode();
                // Another open file description (the prober's, or ours now) must find it held.
                let fd =
                    rfs::openat(&d, OsStr::new(lock.name()), OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).unwrap();
                assert_eq!(probe_lock(&fd), HolderLockState::Held, "a published holder lock was not ours");
                drop(fd);
                assert!(matches!(holder_lock_state(&d, lock.name(), Some(&id)), HolderLockState::Held));
                remove_holder_file(&d, lock.name());
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        prober.join().unwrap();
        assert!(created > 0);
    }

    #[test]
    fn a_replaced_file_a_missing_or_odd_identity_is_unverifiable_never_released() {
        // Issue 38, reproduction 4: removed and recreated under the same name, a free lock on
        // the new file says nothing about the recorded holder's tree.
        let (t, d) = scratch_dir();
        let lock = create_holder_lock(&d, "s.lock").unwrap();
        let (name, id) = (lock.name().to_owned(), lock.id().encode());
        std::fs::remove_file(t.path().join(&name)).unwrap();
        std::fs::write(t.path().join(&name), b"").unwrap();
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Unverifiable(Unverifiable::Replaced));
        drop(lock);
        assert_eq!(holder_lock_state(&d, &name, Some(&id)), HolderLockState::Unverifiable(Unverifiable::Replaced));
        for odd in [None, Some(""), Some("12"), Some("x:1.000000000"), Some("1:2.3")] {
            assert_eq!(
                holder_lock_state(&d, &name, odd),
                HolderLockState::Unverifiable(Unverifiable::NoIdentity),
                "{odd:?}"
            );
        }
    }

    #[test]
    fn a_symlink_a_hard_link_a_fifo_a_missing_file_or_a_bad_name_is_unverifiable() {
        let (t, d) = scratch_dir();
        let id = uuid::Uuid::new_v4();
        let target = t.path().join("target");
        let rec = staged(&t, "target");
        let sym = format!("s.lock.holder.{id}");
        std::os::unix::fs::symlink(&target, t.path().join(&sym)).unwrap();
        let probe = |n: &str| holder_lock_state(&d, n, Some(&rec));
        assert_eq!(probe(&sym), HolderLockState::Unverifiable(Unverifiable::NotPlainFile));
        let hard = format!("h.lock.holder.{id}");
        std::fs::hard_link(&target, t.path().join(&hard)).unwrap();
        assert_eq!(probe(&hard), HolderLockState::Unverifiable(Unverifiable::NotPlainFile));
        let fifo = format!("f.lock.holder.{id}");
        rfs::mknodat(&d, OsStr::new(&fifo), rfs::FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert_eq!(probe(&fifo), HolderLockState::Unverifiable(Unverifiable::NotPlainFile));
        let missing = format!("m.lock.holder.{id}");
        assert_eq!(probe(&missing), HolderLockState::Unverifiable(Unverifiable::Missing));
        for bad in ["target", "s.lock.holder.x", "../s.lock.holder.0", &format!("a/s.lock.holder.{id}")] {
            assert_eq!(probe(bad), HolderLockState::Unverifiable(Unverifiable::BadName), "{bad}");
            assert!(!residue_is_free(&d, bad));
        }
    }

    #[test]
    fn a_local_filesystem_supports_the_evidence() {
        let (_t, d) = scratch_dir();
        assert_eq!(lock_evidence_supported(&d), Ok(()));
    }
}
