//! The only module that performs raw filesystem and process syscalls for the lock engine.
//!
//! Every operation on a lock directory goes through a [`Dir`]: an `O_DIRECTORY|O_NOFOLLOW`
//! descriptor opened once, with every later call made *relative to that descriptor*
//! (`openat`, `linkat`, `renameat`, `unlinkat`, `fstatat(AT_SYMLINK_NOFOLLOW)`). Why: a
//! lock directory swapped for a symlink after we opened it cannot redirect a link or an
//! unlink into another directory; [`Dir::sync`] then notices the swap (QWEN_FORMAT §5.9)
//! and the operation fails closed instead of claiming durability it does not have.
//!
//! Nothing here interprets record contents; callers decide what bytes mean.
//!
//! Why one file of over 1,000 lines: the code is under 900; the rest is its unit tests, which
//! stay beside the private functions they pin.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;

pub mod history_log;
mod small_file;
mod transcript_io;
pub use small_file::{SmallFileError, read_small_regular};
pub use transcript_io::{
    AlignedBuf, Beneath, DIRECT_ALIGN, Fingerprint, ReadMode, fingerprint, fingerprint_for, fingerprint_synced,
    identity_beneath, open_beneath, open_dir_beneath, open_root, pread_full, pread_mode, read_mode_for, revalidate_fd,
    same_mount, transcript_read_flags,
};

/// Largest lock record writerctl will read. qwen records are ~400 bytes; anything far
/// larger is not a record, and refusing it keeps a hostile file from costing memory.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

#[cfg(any(test, feature = "counters"))]
pub mod counters {
    //! Test-only syscall counters (feature `counters`); absent from release builds.
    //! Per thread, so tests running in parallel do not see each other's calls.
    use std::cell::Cell;
    thread_local! {
        static FSYNCS: Cell<u64> = const { Cell::new(0) };
    }
    /// File and directory fsyncs issued by this thread so far.
    pub fn fsyncs() -> u64 {
        FSYNCS.with(Cell::get)
    }
    pub(crate) fn bump() {
        FSYNCS.with(|c| c.set(c.get() + 1));
    }
}

#[inline]
fn count_fsync() {
    #[cfg(any(test, feature = "counters"))]
    counters::bump();
}

/// Runs a mutating syscall through the test-only fault seam; in release builds this is the
/// call itself.
#[inline]
fn faulty(op: &'static str, target: &OsStr, call: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    #[cfg(any(test, debug_assertions, feature = "failpoints"))]
    if let Some((when, err)) = super::failpoint::syscall_fault(op, target) {
        if when == super::failpoint::When::After {
            call()?;
        }
        return Err(err);
    }
    let _ = (op, target);
    call()
}

/// The metadata writerctl compares: identity, type and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta {
    /// Device number (exact 64-bit).
    pub dev: u64,
    /// Inode number (exact 64-bit); 0 means the filesystem cannot number inodes.
    pub ino: u64,
    /// File type.
    pub kind: Kind,
    /// Size in bytes.
    pub size: u64,
    /// Full `st_mode`.
    pub mode: u32,
    /// Link count.
    pub nlink: u64,
    /// Owner (`st_uid`): who may rename and unlink in a directory (issue 22).
    pub uid: u32,
    /// Group (`st_gid`): whose members may, when the directory is group-writable (issue 29).
    pub gid: u32,
}

/// File type as seen by `lstat`/`fstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// A FIFO.
    Fifo,
    /// A socket.
    Socket,
    /// A block or character device, or anything else.
    Other,
}

impl Kind {
    /// Human name for diagnostics.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Regular => "regular file",
            Kind::Directory => "directory",
            Kind::Symlink => "symlink",
            Kind::Fifo => "fifo",
            Kind::Socket => "socket",
            Kind::Other => "device or other special file",
        }
    }
}

impl FileMeta {
    fn from_stat(st: &rfs::Stat) -> FileMeta {
        let kind = Kind::of_mode(st.st_mode);
        FileMeta {
            dev: st.st_dev,
            ino: st.st_ino,
            kind,
            size: st.st_size as u64,
            mode: st.st_mode,
            nlink: st.st_nlink,
            uid: st.st_uid,
            gid: st.st_gid,
        }
    }

    /// Same dev and same non-zero inode.
    pub fn same_identity(&self, other: &FileMeta) -> bool {
        self.dev == other.dev && self.ino == other.ino && self.ino != 0
    }
}

/// Result of reading a file that must be a regular, non-symlink file.
#[derive(Debug)]
pub enum ReadRegular {
    /// The bytes, and the metadata of the descriptor they were read through.
    Regular(Vec<u8>, FileMeta),
    /// Nothing at that name (`ENOENT`).
    Missing,
    /// Something that is not a regular file (a symlink is reported as such, never followed).
    NotRegular(Kind),
    /// Larger than [`MAX_RECORD_BYTES`].
    TooLarge(u64),
    /// Any other error (`EACCES`, `EIO`, …).
    Error(io::Error),
}

fn errno_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// Is this error `ENOENT`?
pub fn is_enoent(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::NOENT.raw_os_error())
}

/// Is this error `EEXIST`?
pub fn is_eexist(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::EXIST.raw_os_error())
}

/// An open lock directory; every operation is relative to its descriptor.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    meta: FileMeta,
    /// True when lookups here are the truth (a local filesystem, by `fstatfs` magic): an
    /// `ENOENT` is then proof of absence. False on network and FUSE filesystems, where it may
    /// be a cached guess ([`Dir::listed_by_server`]).
    authoritative: bool,
}

/// Why a directory could not be synced durably.
#[derive(Debug)]
pub enum DirSyncError {
    /// The path no longer names the directory we opened (it was swapped or removed).
    Changed,
    /// `fsync` or `stat` failed.
    Io(io::Error),
}

impl Dir {
    /// Opens `path` as a directory without following a symlink at its last component.
    ///
    /// Why `O_NOFOLLOW`: QWEN_FORMAT §1.1 requires `lstat(lockDir)` to be a real directory;
    /// opening with `O_NOFOLLOW|O_DIRECTORY` gives that check and the handle in one step, so
    /// there is no window between checking and opening.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd =
            rfs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
                .map_err(errno_io)?;
        let meta = FileMeta::from_stat(&rfs::fstat(&fd).map_err(errno_io)?);
        // One fstatfs: the only cost the local-disk path pays for knowing it is local.
        // A failing fstatfs (a sandbox refusing it) proves nothing: every defence stays on.
        let authoritative = super::filesystem::magic_of(&fd).is_ok_and(super::filesystem::magic_is_local);
        Ok(Dir { fd, path: path.to_path_buf(), meta, authoritative })
    }

    /// True when a lookup's `ENOENT` here is proof of absence (a local filesystem).
    pub fn lookups_authoritative(&self) -> bool {
        self.authoritative
    }

    /// Test seam: treat this directory as if it were on a network filesystem, so the
    /// server-arbitrated paths run on a local test directory too.
    #[cfg(test)]
    pub(crate) fn assume_network(&mut self) {
        self.authoritative = false;
    }

    /// The filesystem this directory is on (`fstatfs`, plus its mountinfo line when it is not
    /// a known local type).
    pub fn filesystem(&self) -> io::Result<super::filesystem::Filesystem> {
        super::filesystem::of_fd(&self.fd)
    }

    /// Is `name` in this directory, by the file server's word?
    ///
    /// Why (issue 27, reproduction 4): on NFS a lookup that says `ENOENT` may come from a
    /// negative dentry the client keeps while the directory's cached attributes look fresh (up
    /// to `acdirmax`, 60 s by default); on FUSE from a negative entry kept for
    /// `negative_timeout`. Another host's transition claim is then invisible to `lstat`. Two
    /// steps the client must take to the server:
    ///
    /// 1. `statx(AT_STATX_FORCE_SYNC)` of the directory: NFS sends a GETATTR, and when the
    ///    directory's change attribute moved, the client drops its cached listing and stops
    ///    trusting every negative dentry in it (`nfs_check_verifier`); FUSE sends a GETATTR.
    /// 2. a fresh `opendir` and a full `getdents`: NFS reads the listing from the server
    ///    after step 1; FUSE sends READDIR to its daemon (only a daemon that opts into
    ///    `cache_readdir` would answer from the kernel's cache, and none we allow does).
    ///
    /// Cost: the whole listing, every time (measured in the report of issue 27: see the
    /// docs page "Filesystems and orchestrators"). Only called where
    /// [`Dir::lookups_authoritative`] is false.
    pub fn listed_by_server(&self, name: &OsStr) -> io::Result<bool> {
        self.revalidate_by_server()?;
        // A fresh descriptor: its first getdents starts from the server's listing.
        let fd = rfs::openat(&self.fd, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(errno_io)?;
        let want = <OsStr as std::os::unix::ffi::OsStrExt>::as_bytes(name);
        for entry in rfs::Dir::read_from(&fd).map_err(errno_io)? {
            if entry.map_err(errno_io)?.file_name().to_bytes() == want {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Step 1 of [`Dir::listed_by_server`]: make the client fetch this directory's attributes
    /// from the server, which invalidates its cached listing and negative entries when the
    /// directory changed. `EINVAL` (a kernel or filesystem without the flag) is ignored: the
    /// listing itself still goes to the server on FUSE, and on NFS the open does.
    pub fn revalidate_by_server(&self) -> io::Result<()> {
        revalidate_fd(&self.fd)
    }

    /// The link count of `name` as the server has it (`statx(AT_STATX_FORCE_SYNC)`), without
    /// following a symlink.
    ///
    /// Why: the open(2) man page's recipe for NFS lock files. A `link` whose reply was lost
    /// is retried by the client and answered `EEXIST` although it took effect; the temp we
    /// linked then has two links on the server. Its attributes in the client's cache may
    /// still say one, hence the forced sync.
    pub fn nlink_by_server(&self, name: &OsStr) -> io::Result<u64> {
        rfs::statx(
            &self.fd,
            name,
            AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_FORCE_SYNC,
            rfs::StatxFlags::NLINK | rfs::StatxFlags::INO,
        )
        .map(|st| u64::from(st.stx_nlink))
        .map_err(errno_io)
    }

    /// The metadata of the directory as opened (owner and mode for the trust check).
    pub fn meta(&self) -> &FileMeta {
        &self.meta
    }

    /// The path this directory was opened at (for messages only; never used for I/O).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `fstatat(AT_SYMLINK_NOFOLLOW)`.
    pub fn lstat(&self, name: &OsStr) -> io::Result<FileMeta> {
        // Unit tests stand in for a network client's cache here: an injected `ENOENT` is the
        // answer of a negative entry the client kept (issue 27, reproduction 4).
        #[cfg(test)]
        if let Some((_, e)) = super::failpoint::syscall_fault("lstat", name) {
            return Err(e);
        }
        rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).map(|st| FileMeta::from_stat(&st)).map_err(errno_io)
    }

    /// Creates `name` exclusively (mode 0600), writes `bytes`, fsyncs and closes it.
    ///
    /// Why exclusive and synced: this is the temp half of install (QWEN_FORMAT §5.1 steps
    /// 2–3). `O_EXCL` means two installers never share a temp; the fsync before the link
    /// means a record that becomes visible under its final name is never a torn write after
    /// a power loss.
    ///
    /// Returns the new file's metadata: after a successful `link` the target shares this
    /// inode, which lets callers prove that what sits at the target is the file they made.
    pub fn create_new_synced(&self, name: &OsStr, bytes: &[u8]) -> io::Result<FileMeta> {
        self.create_new_synced_mode(name, bytes, None)
    }

    /// [`Dir::create_new_synced`], then, with `mode`, `fchmod` to exactly that mode before
    /// the data is written (so the umask cannot narrow a file other users must read, such
    /// as a metrics file node_exporter reads as its own user).
    pub fn create_new_synced_mode(&self, name: &OsStr, bytes: &[u8], mode: Option<u32>) -> io::Result<FileMeta> {
        let fd = rfs::openat(
            &self.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(errno_io)?;
        if let Some(m) = mode {
            rfs::fchmod(&fd, Mode::from_raw_mode(m)).map_err(errno_io)?;
        }
        write_all(&fd, bytes)?;
        count_fsync();
        rfs::fsync(&fd).map_err(errno_io)?;
        Ok(FileMeta::from_stat(&rfs::fstat(&fd).map_err(errno_io)?))
    }

    /// The modification time of `name` (`fstatat(AT_SYMLINK_NOFOLLOW)`: a symlink's own).
    ///
    /// Used for the age of a transition claim: qwen and writerctl install `L.claim` by linking
    /// a freshly written temp file, and a link does not change the inode's mtime, so it is the
    /// time the transition claim's bytes were written, within the filesystem's timestamp
    /// granularity. A clock step on the writing host moves it.
    pub fn modified(&self, name: &OsStr) -> io::Result<std::time::SystemTime> {
        let st = rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(errno_io)?;
        let since = std::time::Duration::new(st.st_mtime.unsigned_abs(), st.st_mtime_nsec as u32);
        Ok(if st.st_mtime >= 0 {
            std::time::UNIX_EPOCH + since
        } else {
            std::time::UNIX_EPOCH.checked_sub(since).unwrap_or(std::time::UNIX_EPOCH)
        })
    }

    /// `linkat(from, to)` without following symlinks; never replaces an existing `to`.
    pub fn link(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        faulty("link", to, || rfs::linkat(&self.fd, from, &self.fd, to, AtFlags::empty()).map_err(errno_io))
    }

    /// `renameat(from, to)` within this directory.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        faulty("rename", to, || rfs::renameat(&self.fd, from, &self.fd, to).map_err(errno_io))
    }

    /// `renameat2(from, to, RENAME_NOREPLACE)`: fails with `EEXIST` instead of replacing.
    ///
    /// Why: a transition moves the primary to an owner-unique retired name that was checked
    /// absent just before; NOREPLACE closes the window in which a file created there could
    /// be silently overwritten. Where the filesystem refuses the flag (`EINVAL`: NFS, most
    /// FUSE filesystems), [`move_noreplace`]'s link-then-unlink fallback keeps the same
    /// guarantee: checking absence and then renaming would not (the check may read a cached
    /// negative entry, and the rename replaces whatever the server has).
    pub fn rename_noreplace(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        move_noreplace(&self.fd, from, &self.fd, to)
    }

    /// `unlinkat(name)` (files only).
    pub fn unlink(&self, name: &OsStr) -> io::Result<()> {
        faulty("unlink", name, || rfs::unlinkat(&self.fd, name, AtFlags::empty()).map_err(errno_io))
    }

    /// Reads `name` through an `O_NOFOLLOW|O_NONBLOCK` descriptor, regular files only.
    ///
    /// Why these flags: a symlink at a record path must never be followed (QWEN_FORMAT
    /// §5.3), and a FIFO planted at a record path must not hang the reader. The type is
    /// checked on the descriptor, so a swap between a `stat` and the open cannot fool it.
    pub fn read_regular(&self, name: &OsStr) -> ReadRegular {
        let fd = match rfs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return ReadRegular::Missing,
            Err(Errno::LOOP) => return ReadRegular::NotRegular(Kind::Symlink),
            Err(e) => {
                // EISDIR/ENXIO (socket) and friends: report the type when we can see it.
                if let Ok(meta) = self.lstat(name)
                    && meta.kind != Kind::Regular
                {
                    return ReadRegular::NotRegular(meta.kind);
                }
                return ReadRegular::Error(errno_io(e));
            }
        };
        let meta = match rfs::fstat(&fd) {
            Ok(st) => FileMeta::from_stat(&st),
            Err(e) => return ReadRegular::Error(errno_io(e)),
        };
        if meta.kind != Kind::Regular {
            return ReadRegular::NotRegular(meta.kind);
        }
        if meta.size > MAX_RECORD_BYTES as u64 {
            return ReadRegular::TooLarge(meta.size);
        }
        // Sized from fstat, plus one byte to see the end, and grown if the file grows while
        // it is read: a directory scan reads every record, and allocated and zeroed a
        // 64 KiB buffer for each of them.
        let mut buf = vec![0u8; (meta.size as usize).min(MAX_RECORD_BYTES) + 1];
        let mut len = 0;
        loop {
            if len == buf.len() {
                buf.resize((buf.len() * 2).min(MAX_RECORD_BYTES + 1), 0);
            }
            match rustix::io::read(&fd, &mut buf[len..]) {
                Ok(0) => break,
                Ok(n) => {
                    len += n;
                    if len > MAX_RECORD_BYTES {
                        return ReadRegular::TooLarge(len as u64);
                    }
                }
                Err(Errno::INTR) => continue,
                Err(e) => return ReadRegular::Error(errno_io(e)),
            }
        }
        buf.truncate(len);
        ReadRegular::Regular(buf, meta)
    }

    /// Names in this directory (without `.` and `..`, and without the placeholders an NFS or
    /// FUSE client keeps for files unlinked while open: see
    /// [`super::filesystem::is_silly_rename`]), unsorted.
    pub fn list(&self) -> io::Result<Vec<OsString>> {
        let fd = rfs::openat(&self.fd, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(errno_io)?;
        let mut out = Vec::new();
        let dir = rfs::Dir::read_from(&fd).map_err(errno_io)?;
        for entry in dir {
            let entry = entry.map_err(errno_io)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." || super::filesystem::is_silly_rename(name) {
                continue;
            }
            out.push(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name).to_os_string());
        }
        Ok(out)
    }

    /// Makes every link, rename and unlink done in this directory durable.
    ///
    /// Why the identity checks on both sides of the fsync (QWEN_FORMAT §5.9): if the path
    /// was swapped for another directory or a symlink, syncing our descriptor says nothing
    /// about the directory other processes now see at that path, so we report `Changed`
    /// instead of success. qwen does this only on release; writerctl also does it after
    /// every install and removal that matters (DESIGN.md "Beyond qwen").
    pub fn sync(&self) -> Result<(), DirSyncError> {
        self.check_identity()?;
        count_fsync();
        rfs::fsync(&self.fd).map_err(|e| DirSyncError::Io(errno_io(e)))?;
        self.check_identity()
    }

    /// A second handle on the same open directory (`F_DUPFD_CLOEXEC`: no lookup, no I/O on
    /// the filesystem), for a thread that must own one: `run`'s lock checks run on a worker
    /// that may block forever on a hung mount, so it cannot borrow the supervisor's.
    pub fn try_clone(&self) -> io::Result<Dir> {
        let fd = rustix::io::fcntl_dupfd_cloexec(&self.fd, 0).map_err(errno_io)?;
        Ok(Dir { fd, path: self.path.clone(), meta: self.meta, authoritative: self.authoritative })
    }

    /// Read-only: whether the path still names the directory we hold (`Changed` when it was
    /// moved, removed or replaced). `run` checks it between lock checks (issue 27 item 3):
    /// records read through the held descriptor cannot see a directory moved away.
    pub fn check_still_at_path(&self) -> Result<(), DirSyncError> {
        self.check_identity()
    }

    fn check_identity(&self) -> Result<(), DirSyncError> {
        let held = FileMeta::from_stat(&rfs::fstat(&self.fd).map_err(|e| DirSyncError::Io(errno_io(e)))?);
        let seen = match rfs::stat(&self.path) {
            Ok(st) => FileMeta::from_stat(&st),
            Err(Errno::NOENT) | Err(Errno::NOTDIR) => return Err(DirSyncError::Changed),
            Err(e) => return Err(DirSyncError::Io(errno_io(e))),
        };
        // A directory on a filesystem without inode numbers is compared by dev alone,
        // provided it is consistently 0 (QWEN_FORMAT §4.3).
        let same = held.kind == Kind::Directory
            && seen.kind == Kind::Directory
            && held.dev == self.meta.dev
            && seen.dev == self.meta.dev
            && held.ino == self.meta.ino
            && seen.ino == self.meta.ino;
        if same { Ok(()) } else { Err(DirSyncError::Changed) }
    }
}

/// `write(2)` until all of `rest` is written (a short write is not an error; EINTR retries).
pub(crate) fn write_all(fd: &OwnedFd, mut rest: &[u8]) -> io::Result<()> {
    while !rest.is_empty() {
        match rustix::io::write(fd, rest) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => rest = &rest[n..],
            Err(Errno::INTR) => continue,
            Err(e) => return Err(errno_io(e)),
        }
    }
    Ok(())
}

/// `lstat` of an absolute or relative path (used for the runtime directory check).
pub fn lstat_path(path: &Path) -> io::Result<FileMeta> {
    rfs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW).map(|st| FileMeta::from_stat(&st)).map_err(errno_io)
}

/// `fstatat(AT_SYMLINK_NOFOLLOW)` of `name` in any directory descriptor.
pub fn lstat_at(dir: &OwnedFd, name: &OsStr) -> io::Result<FileMeta> {
    rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map(|st| FileMeta::from_stat(&st)).map_err(errno_io)
}

/// `stat` (following symlinks) of a path.
pub fn stat_path(path: &Path) -> io::Result<FileMeta> {
    rfs::stat(path).map(|st| FileMeta::from_stat(&st)).map_err(errno_io)
}

/// Creates one directory with mode 0700 (minus umask); `EEXIST` is not an error.
///
/// Why 0700: the lock directory holds owner diagnostics; QWEN_FORMAT §1.1 creates it
/// owner-only. Whatever is there afterwards is verified by [`Dir::open`].
pub fn mkdir_0700(path: &Path) -> io::Result<()> {
    mkdir_0700_created(path).map(|_| ())
}

/// [`mkdir_0700`], saying whether this call created the directory (`false`: it existed).
pub fn mkdir_0700_created(path: &Path) -> io::Result<bool> {
    match rfs::mkdirat(CWD, path, Mode::from_raw_mode(0o700)) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(errno_io(e)),
    }
}

/// Removes a directory only if it is empty (`rmdir(2)` refuses anything else): used to
/// take back a directory this process created when the operation it was made for is
/// refused, so a refusal leaves nothing behind.
pub fn rmdir_if_empty(path: &Path) -> io::Result<()> {
    rfs::unlinkat(CWD, path, AtFlags::REMOVEDIR).map_err(errno_io)
}

/// What `kill(pid, 0)` said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal0 {
    /// The signal could be delivered: a process with that pid exists.
    Delivered,
    /// `ESRCH`: no such process.
    NoSuchProcess,
    /// Any other outcome (EPERM, EIO, or a pid outside `pid_t`): treated as alive.
    Indeterminate,
}

/// `kill(pid, 0)`, with pids outside `1..=i32::MAX` answered as [`Signal0::Indeterminate`].
///
/// Why not truncate: QWEN_FORMAT §3.3 — Node rejects such pids with a non-ESRCH error, so
/// qwen treats them as alive; truncating to `pid_t` could probe an unrelated process.
pub fn signal0(pid: u64) -> Signal0 {
    let Ok(raw) = i32::try_from(pid) else { return Signal0::Indeterminate };
    let Some(pid) = rustix::process::Pid::from_raw(raw) else { return Signal0::Indeterminate };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => Signal0::Delivered,
        Err(Errno::SRCH) => Signal0::NoSuchProcess,
        Err(_) => Signal0::Indeterminate,
    }
}

/// This process's pid.
pub fn own_pid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get() as u32
}

/// The parent process's pid, if it has one.
pub fn parent_pid() -> Option<u32> {
    rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32)
}

/// `uname().nodename`, which is what Node's `os.hostname()` returns on Linux.
pub fn hostname() -> String {
    String::from_utf8_lossy(rustix::system::uname().nodename().to_bytes()).into_owned()
}

/// The gid of the group `name` in the system's group database — whatever `getent group`
/// consults (NSS: `/etc/group`, LDAP, sssd) — or `Ok(None)` when there is no such group.
///
/// `unsafe` because neither rustix nor std wraps `getgrnam_r(3)`, and reading `/etc/group`
/// by hand would miss every group NSS serves from elsewhere. `libc` is already a dependency
/// (see [`super::exclusive`]).
#[allow(unsafe_code)]
pub fn group_id_by_name(name: &str) -> io::Result<Option<u32>> {
    let Ok(c_name) = std::ffi::CString::new(name) else { return Ok(None) };
    let mut len = 1024;
    loop {
        let mut buf = vec![0 as libc::c_char; len];
        // SAFETY: `group` is plain data (integers and pointers); all-zero is a valid value.
        let mut group: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and `buf` is `len` bytes long; only the
        // gid is read afterwards, never the strings the entry points to inside `buf`.
        let rc = unsafe { libc::getgrnam_r(c_name.as_ptr(), &mut group, buf.as_mut_ptr(), len, &mut found) };
        match rc {
            0 if found.is_null() => return Ok(None),
            0 => return Ok(Some(group.gr_gid)),
            // POSIX lets an implementation report "no such group" as an error too.
            libc::ENOENT | libc::ESRCH => return Ok(None),
            libc::ERANGE if len < 1 << 20 => len *= 4,
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

impl Kind {
    /// The file type encoded in an `st_mode`.
    pub fn of_mode(mode: u32) -> Kind {
        match FileType::from_raw_mode(mode) {
            FileType::RegularFile => Kind::Regular,
            FileType::Directory => Kind::Directory,
            FileType::Symlink => Kind::Symlink,
            FileType::Fifo => Kind::Fifo,
            FileType::Socket => Kind::Socket,
            _ => Kind::Other,
        }
    }
}

/// `fstat` of any descriptor as [`FileMeta`].
pub fn meta_of(fd: &OwnedFd) -> io::Result<FileMeta> {
    rfs::fstat(fd).map(|st| FileMeta::from_stat(&st)).map_err(errno_io)
}

/// `renameat2(RENAME_NOREPLACE)` from this directory into another directory descriptor.
///
/// Why NOREPLACE: `recover` moves residue into a fresh folder and must never overwrite a
/// file there, even if two recoveries race. Where the flag is refused (NFS, FUSE) the
/// fallback of [`move_noreplace`] keeps that guarantee (issue 27, reproduction 3: `recover`
/// used to report success with nothing moved).
pub fn move_into(from: &Dir, name: &OsStr, to: &OwnedFd, new_name: &OsStr) -> io::Result<()> {
    move_noreplace(&from.fd, name, to, new_name)
}

/// Moves `from_dir/from` to `to_dir/to` without ever replacing an existing `to`.
///
/// `renameat2(RENAME_NOREPLACE)` where the filesystem has it. Where it answers `EINVAL`
/// (NFS, FUSE; `ENOSYS` on old kernels), [`move_by_link`]: `link` never replaces and its
/// `EEXIST` is the server's word.
pub fn move_noreplace(from_dir: &OwnedFd, from: &OsStr, to_dir: &OwnedFd, to: &OsStr) -> io::Result<()> {
    let renamed = faulty("rename", to, || {
        rfs::renameat_with(from_dir, from, to_dir, to, rfs::RenameFlags::NOREPLACE).map_err(errno_io)
    });
    match renamed {
        Err(e) if matches!(e.raw_os_error(), Some(c) if c == Errno::INVAL.raw_os_error() || c == Errno::NOSYS.raw_os_error()) => {
            move_by_link(from_dir, from, to_dir, to)
        }
        other => other,
    }
}

/// The no-replace move without `RENAME_NOREPLACE`.
///
/// * anything but a directory: `link(from, to)`, then prove `to` is the inode `from` named
///   (an `EEXIST` after a lost reply is then recognised as our own link, not a file that was
///   there), then `unlink(from)` — after checking that `from` still names that inode.
/// * a directory (which cannot be linked): `mkdir(to)` exclusively, then a plain rename
///   over that empty directory of ours; rename replaces an empty directory and fails on a
///   non-empty one, so nothing of anyone else's is replaced.
///
/// A crash between the two steps leaves both names on one inode (or an empty `to`
/// directory): nothing is lost, and the operation can be repeated.
pub fn move_by_link(from_dir: &OwnedFd, from: &OsStr, to_dir: &OwnedFd, to: &OsStr) -> io::Result<()> {
    let src = lstat_at(from_dir, from)?;
    if src.kind == Kind::Directory {
        rfs::mkdirat(to_dir, to, Mode::from_raw_mode(0o700)).map_err(errno_io)?;
        return faulty("rename", to, || rfs::renameat(from_dir, from, to_dir, to).map_err(errno_io));
    }
    let same_at = |dir: &OwnedFd, name: &OsStr| match lstat_at(dir, name) {
        Ok(meta) => Ok(meta.same_identity(&src)),
        Err(e) if is_enoent(&e) => Ok(false),
        Err(e) => Err(e),
    };
    if let Err(e) = faulty("link", to, || rfs::linkat(from_dir, from, to_dir, to, AtFlags::empty()).map_err(errno_io)) {
        // Error after effect (a lost reply retried: EEXIST) or a real refusal?
        if !same_at(to_dir, to)? {
            return Err(e);
        }
    }
    if !same_at(from_dir, from)? {
        // `from` was replaced (or removed) meanwhile: leave whatever is there now alone.
        return Err(io::Error::other("the source was replaced while it was moved"));
    }
    match faulty("unlink", from, || rfs::unlinkat(from_dir, from, AtFlags::empty()).map_err(errno_io)) {
        Ok(()) => Ok(()),
        Err(e) if is_enoent(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

impl Dir {
    /// Creates a subdirectory (0700) and opens it.
    pub fn create_subdir(&self, name: &OsStr) -> io::Result<OwnedFd> {
        match rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(errno_io(e)),
        }
        rfs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno_io)
    }

    /// Opens `name` for appending (created 0600): the recovery audit log.
    ///
    /// Why the checks: the log lives in a directory others can write to; a FIFO planted
    /// there must not hang `recover` (`O_NONBLOCK`), and a symlink or an extra hard link must
    /// not redirect audit lines into another file.
    pub fn open_log(&self, name: &OsStr) -> io::Result<OwnedFd> {
        let fd = rfs::openat(
            &self.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(errno_io)?;
        let meta = FileMeta::from_stat(&rfs::fstat(&fd).map_err(errno_io)?);
        if meta.kind != Kind::Regular || meta.nlink != 1 {
            return Err(io::Error::other("the audit log is not a plain regular file"));
        }
        Ok(fd)
    }
}

/// Appends one line to an open log and fsyncs it.
pub fn append_line(fd: &OwnedFd, line: &str) -> io::Result<()> {
    write_all(fd, format!("{line}\n").as_bytes())?;
    count_fsync();
    rfs::fsync(fd).map_err(errno_io)
}

/// fsync an arbitrary directory descriptor (the recovery folder after moves into it).
pub fn fsync_fd(fd: &OwnedFd) -> io::Result<()> {
    count_fsync();
    rfs::fsync(fd).map_err(errno_io)
}

/// The directory's descriptor, for the holder lock's `openat` (`holder_lock.rs`, issue 27),
/// which keeps its own syscalls beside the evidence rule they serve.
impl std::os::fd::AsFd for Dir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A scratch directory and its open [`Dir`], for unit tests.
#[cfg(test)]
pub(crate) fn scratch_dir() -> (tempfile::TempDir, Dir) {
    let t = tempfile::tempdir().unwrap();
    let d = Dir::open(t.path()).unwrap();
    (t, d)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::scratch_dir as dir;

    #[test]
    fn create_new_synced_is_exclusive_and_0600() {
        let (t, d) = dir();
        d.create_new_synced(OsStr::new("a"), b"x").unwrap();
        let e = d.create_new_synced(OsStr::new("a"), b"y").unwrap_err();
        assert!(is_eexist(&e));
        assert_eq!(std::fs::read(t.path().join("a")).unwrap(), b"x");
        let mode = std::fs::metadata(t.path().join("a")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn create_new_synced_mode_sets_the_exact_mode_whatever_the_umask() {
        let (t, d) = dir();
        // The file is opened 0600, so 0644 afterwards can only come from the fchmod, which
        // the umask does not filter. (The umask itself is process-wide; not touched here.)
        d.create_new_synced_mode(OsStr::new("m"), b"x", Some(0o644)).unwrap();
        let mode = std::fs::metadata(t.path().join("m")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        assert!(is_eexist(&d.create_new_synced_mode(OsStr::new("m"), b"y", Some(0o644)).unwrap_err()));
        assert_eq!(std::fs::read(t.path().join("m")).unwrap(), b"x");
    }

    #[test]
    fn modified_is_the_entry_own_mtime_without_following_symlinks() {
        let (t, d) = dir();
        std::fs::write(t.path().join("f"), b"x").unwrap();
        let f = std::fs::File::options().write(true).open(t.path().join("f")).unwrap();
        let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        f.set_modified(past).unwrap();
        assert_eq!(d.modified(OsStr::new("f")).unwrap(), past);
        // A symlink reports its own time, not its target's.
        std::os::unix::fs::symlink(t.path().join("f"), t.path().join("l")).unwrap();
        assert_ne!(d.modified(OsStr::new("l")).unwrap(), past);
        assert!(is_enoent(&d.modified(OsStr::new("absent")).unwrap_err()));
    }

    #[test]
    fn link_never_replaces() {
        let (t, d) = dir();
        std::fs::write(t.path().join("a"), b"a").unwrap();
        std::fs::write(t.path().join("b"), b"b").unwrap();
        assert!(is_eexist(&d.link(OsStr::new("a"), OsStr::new("b")).unwrap_err()));
        assert_eq!(std::fs::read(t.path().join("b")).unwrap(), b"b");
    }

    #[test]
    fn read_regular_refuses_symlink_dir_fifo_and_reports_missing() {
        let (t, d) = dir();
        std::fs::write(t.path().join("target"), b"{}").unwrap();
        std::os::unix::fs::symlink(t.path().join("target"), t.path().join("link")).unwrap();
        std::fs::create_dir(t.path().join("sub")).unwrap();
        rustix::fs::mknodat(CWD, t.path().join("fifo"), FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(matches!(d.read_regular(OsStr::new("link")), ReadRegular::NotRegular(Kind::Symlink)));
        assert!(matches!(d.read_regular(OsStr::new("sub")), ReadRegular::NotRegular(Kind::Directory)));
        assert!(matches!(d.read_regular(OsStr::new("fifo")), ReadRegular::NotRegular(Kind::Fifo)));
        assert!(matches!(d.read_regular(OsStr::new("nope")), ReadRegular::Missing));
        match d.read_regular(OsStr::new("target")) {
            ReadRegular::Regular(b, m) => {
                assert_eq!(b, b"{}");
                assert_eq!(m.kind, Kind::Regular);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn read_regular_refuses_oversized_files() {
        let (t, d) = dir();
        std::fs::write(t.path().join("big"), vec![b' '; MAX_RECORD_BYTES + 1]).unwrap();
        assert!(matches!(d.read_regular(OsStr::new("big")), ReadRegular::TooLarge(_)));
    }

    #[test]
    fn open_refuses_a_symlinked_directory() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("real")).unwrap();
        std::os::unix::fs::symlink(t.path().join("real"), t.path().join("alias")).unwrap();
        assert!(Dir::open(&t.path().join("alias")).is_err());
        assert!(Dir::open(&t.path().join("real")).is_ok());
    }

    #[test]
    fn sync_detects_a_swapped_directory() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("locks");
        std::fs::create_dir(&p).unwrap();
        let d = Dir::open(&p).unwrap();
        d.sync().unwrap();
        std::fs::rename(&p, t.path().join("moved")).unwrap();
        std::fs::create_dir(&p).unwrap();
        assert!(matches!(d.sync(), Err(DirSyncError::Changed)));
        std::fs::remove_dir(&p).unwrap();
        std::os::unix::fs::symlink(t.path().join("moved"), &p).unwrap();
        // The symlink resolves to the very directory we hold, which is fine: it is the same
        // directory. A symlink to another directory is a change.
        d.sync().unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(t.path(), &p).unwrap();
        assert!(matches!(d.sync(), Err(DirSyncError::Changed)));
    }

    #[test]
    fn signal0_classifies_pids() {
        assert_eq!(signal0(own_pid() as u64), Signal0::Delivered);
        assert_eq!(signal0(i32::MAX as u64 + 1), Signal0::Indeterminate);
        assert_eq!(signal0(u64::MAX), Signal0::Indeterminate);
        // pid_max is at most 2^22 on Linux, so i32::MAX is reliably unused (qwen's tests use it).
        assert_eq!(signal0(i32::MAX as u64), Signal0::NoSuchProcess);
    }

    #[test]
    fn list_names_entries() {
        let (t, d) = dir();
        std::fs::write(t.path().join("x"), b"").unwrap();
        let names = d.list().unwrap();
        assert_eq!(names, vec![OsString::from("x")]);
    }

    fn einval() -> i32 {
        Errno::INVAL.raw_os_error()
    }

    #[test]
    fn rename_noreplace_without_the_flag_moves_by_link_and_never_replaces() {
        use crate::lockfile::failpoint::{When, clear_hooks, inject_syscall};
        let (t, d) = dir();
        std::fs::write(t.path().join("a"), b"a").unwrap();
        let ino = std::fs::metadata(t.path().join("a")).unwrap().ino();
        // The filesystem refuses RENAME_NOREPLACE (NFS, FUSE): the fallback moves it.
        inject_syscall("rename", "b", When::Before, einval(), 1);
        d.rename_noreplace(OsStr::new("a"), OsStr::new("b")).unwrap();
        assert!(t.path().join("a").symlink_metadata().is_err());
        assert_eq!(std::fs::metadata(t.path().join("b")).unwrap().ino(), ino, "the same inode, moved");
        assert_eq!(std::fs::metadata(t.path().join("b")).unwrap().nlink(), 1);
        // Onto an existing name: EEXIST, both files untouched.
        std::fs::write(t.path().join("c"), b"c").unwrap();
        inject_syscall("rename", "b", When::Before, einval(), 1);
        let e = d.rename_noreplace(OsStr::new("c"), OsStr::new("b")).unwrap_err();
        assert!(is_eexist(&e), "{e}");
        assert_eq!(std::fs::read(t.path().join("b")).unwrap(), b"a");
        assert_eq!(std::fs::read(t.path().join("c")).unwrap(), b"c");
        clear_hooks();
    }

    #[test]
    fn the_link_fallback_recognises_its_own_link_after_a_lost_reply() {
        use crate::lockfile::failpoint::{When, clear_hooks, inject_syscall};
        let (t, d) = dir();
        std::fs::write(t.path().join("a"), b"a").unwrap();
        // NFSv3: the link took effect, its reply was lost, the retry answered EEXIST.
        inject_syscall("rename", "b", When::Before, einval(), 1);
        inject_syscall("link", "b", When::After, Errno::EXIST.raw_os_error(), 1);
        d.rename_noreplace(OsStr::new("a"), OsStr::new("b")).unwrap();
        assert!(t.path().join("a").symlink_metadata().is_err());
        assert_eq!(std::fs::read(t.path().join("b")).unwrap(), b"a");
        // A real failure of the link leaves the source where it was.
        std::fs::write(t.path().join("x"), b"x").unwrap();
        inject_syscall("rename", "y", When::Before, einval(), 1);
        inject_syscall("link", "y", When::Before, Errno::IO.raw_os_error(), 1);
        assert!(d.rename_noreplace(OsStr::new("x"), OsStr::new("y")).is_err());
        assert_eq!(std::fs::read(t.path().join("x")).unwrap(), b"x");
        assert!(t.path().join("y").symlink_metadata().is_err());
        clear_hooks();
    }

    #[test]
    fn move_into_without_the_flag_moves_files_symlinks_and_directories() {
        use crate::lockfile::failpoint::{When, clear_hooks, inject_syscall};
        let (t, d) = dir();
        let dest = d.create_subdir(OsStr::new("folder")).unwrap();
        std::fs::write(t.path().join("f"), b"f").unwrap();
        std::os::unix::fs::symlink("/nonexistent", t.path().join("s")).unwrap();
        std::fs::create_dir(t.path().join("sub")).unwrap();
        std::fs::write(t.path().join("sub/inner"), b"i").unwrap();
        for name in ["f", "s", "sub"] {
            inject_syscall("rename", name, When::Before, einval(), 1);
            move_into(&d, OsStr::new(name), &dest, OsStr::new(name)).unwrap();
            assert!(t.path().join(name).symlink_metadata().is_err(), "{name} left behind");
        }
        assert_eq!(std::fs::read(t.path().join("folder/f")).unwrap(), b"f");
        assert!(t.path().join("folder/s").symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(t.path().join("folder/sub/inner")).unwrap(), b"i");
        // Never over something already in the folder, file or directory.
        std::fs::write(t.path().join("f"), b"again").unwrap();
        inject_syscall("rename", "f", When::Before, einval(), 1);
        assert!(is_eexist(&move_into(&d, OsStr::new("f"), &dest, OsStr::new("f")).unwrap_err()));
        std::fs::create_dir(t.path().join("sub")).unwrap();
        inject_syscall("rename", "sub", When::Before, einval(), 1);
        assert!(is_eexist(&move_into(&d, OsStr::new("sub"), &dest, OsStr::new("sub")).unwrap_err()));
        assert_eq!(std::fs::read(t.path().join("folder/f")).unwrap(), b"f");
        assert_eq!(std::fs::read(t.path().join("f")).unwrap(), b"again");
        clear_hooks();
    }

    #[test]
    fn listed_by_server_reads_the_listing_and_skips_silly_renames() {
        let (t, d) = dir();
        assert!(d.lookups_authoritative(), "the test directory is on a local disk");
        std::fs::write(t.path().join("L.claim"), b"").unwrap();
        std::fs::write(t.path().join(".nfs000000000012d68700000001"), b"").unwrap();
        assert!(d.listed_by_server(OsStr::new("L.claim")).unwrap());
        assert!(!d.listed_by_server(OsStr::new("L")).unwrap());
        assert_eq!(d.list().unwrap(), vec![OsString::from("L.claim")]);
        std::fs::write(t.path().join("f"), b"").unwrap();
        assert_eq!(d.nlink_by_server(OsStr::new("f")).unwrap(), 1);
        std::fs::hard_link(t.path().join("f"), t.path().join("g")).unwrap();
        assert_eq!(d.nlink_by_server(OsStr::new("f")).unwrap(), 2);
    }

    #[test]
    fn a_local_directory_is_read_from_the_cache_and_answers_by_lookup() {
        let (t, d) = dir();
        std::fs::write(t.path().join("f"), b"x").unwrap();
        let fd = rfs::open(t.path().join("f"), OFlags::RDONLY, Mode::empty()).unwrap();
        assert_eq!(read_mode_for(&fd).unwrap(), ReadMode::Cached);
        assert!(d.lookups_authoritative());
        assert_eq!(d.filesystem().unwrap().family, crate::lockfile::filesystem::Family::Local);
    }
}
