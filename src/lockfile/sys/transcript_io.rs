//! The calls that read a transcript for its proof: its identity ([`Fingerprint`]), paths
//! opened beneath the runtime directory without following a symlink ([`open_beneath`]),
//! reads that bypass or drop the page cache on filesystems whose cache may be stale
//! ([`ReadMode`], [`pread_mode`]), and the mount check against bind-mounted files
//! ([`same_mount`]). Split from [`super`] (the lock directory's calls) along that seam;
//! the rules of the parent's header hold here too.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::{Kind, errno_io, meta_of};

/// Full transcript metadata compared before and after a proof read (QWEN_FORMAT §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Full `st_mode`.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count (an extra hard link is a change).
    pub nlink: u64,
    /// Size.
    pub size: u64,
    /// Modification time (sec, nsec).
    pub mtime: (i64, u64),
    /// Change time (sec, nsec).
    pub ctime: (i64, u64),
}

impl Fingerprint {
    fn from_stat(st: &rfs::Stat) -> Fingerprint {
        Fingerprint {
            dev: st.st_dev,
            ino: st.st_ino,
            mode: st.st_mode,
            uid: st.st_uid,
            gid: st.st_gid,
            nlink: st.st_nlink,
            size: st.st_size as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }

    /// The file type encoded in `mode`.
    pub fn kind(&self) -> Kind {
        Kind::of_mode(self.mode)
    }
}

/// `fstat` as a [`Fingerprint`].
pub fn fingerprint(fd: &OwnedFd) -> io::Result<Fingerprint> {
    rfs::fstat(fd).map(|st| Fingerprint::from_stat(&st)).map_err(errno_io)
}

/// Opens a directory (following a symlink at `path` itself: the runtime directory is the
/// operator's choice, as in qwen, which never resolves it).
pub fn open_root(path: &Path) -> io::Result<OwnedFd> {
    rfs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(errno_io)
}

/// How a path beneath a root resolved.
#[derive(Debug)]
pub enum Beneath {
    /// Opened.
    Opened(OwnedFd),
    /// Nothing there: some component does not exist. A dangling symlink is *not* this.
    Absent,
    /// A symlink somewhere on the way, a non-directory where a directory was needed, or an
    /// escape from the root.
    Unsafe(&'static str),
}

/// Opens `key` (a normalized relative path) beneath `root` without following any symlink
/// in any component.
///
/// Why: the transcript proof must be about the file the key names inside the runtime
/// directory, never about whatever a symlink planted by someone else points at (seed 001
/// "Transcript paths must be absent or resolve to the same regular file"). `openat2` with
/// `RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS` does the whole check in the kernel, atomically;
/// where it is unavailable (old kernels, seccomp) a component-wise `O_NOFOLLOW` walk gives
/// the same answer, one `openat` per component. `flags` should include `O_NONBLOCK` so a
/// FIFO cannot hang the open.
pub fn open_beneath(root: &OwnedFd, key: &str, flags: OFlags, force_walk: bool) -> io::Result<Beneath> {
    if !force_walk {
        let how = rfs::ResolveFlags::BENEATH | rfs::ResolveFlags::NO_SYMLINKS;
        match rfs::openat2(root, key, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty(), how) {
            Ok(fd) => return Ok(Beneath::Opened(fd)),
            Err(Errno::NOENT) => return Ok(Beneath::Absent),
            Err(Errno::LOOP) => return Ok(Beneath::Unsafe("a symlink in the transcript path")),
            Err(Errno::XDEV) => return Ok(Beneath::Unsafe("the transcript path escapes the runtime directory")),
            Err(Errno::NOTDIR) => return Ok(Beneath::Unsafe("a non-directory in the transcript path")),
            Err(Errno::NXIO) => return Ok(Beneath::Unsafe("the transcript is a socket")),
            // No openat2 (ENOSYS), or a sandbox refusing it (EPERM): walk instead.
            Err(Errno::NOSYS) | Err(Errno::PERM) | Err(Errno::INVAL) => {}
            Err(e) => return Err(errno_io(e)),
        }
    }
    walk_beneath(root, key, flags)
}

fn walk_beneath(root: &OwnedFd, key: &str, flags: OFlags) -> io::Result<Beneath> {
    let parts: Vec<&str> = key.split('/').collect();
    let (last, dirs) = parts.split_last().expect("a normalized key has a component");
    let mut cur: Option<OwnedFd> = None;
    for d in dirs {
        let base = cur.as_ref().unwrap_or(root);
        match rfs::openat(
            base,
            *d,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => cur = Some(fd),
            Err(Errno::NOENT) => return Ok(Beneath::Absent),
            Err(Errno::LOOP) => return Ok(Beneath::Unsafe("a symlink in the transcript path")),
            Err(Errno::NOTDIR) => return Ok(Beneath::Unsafe("a non-directory in the transcript path")),
            Err(e) => return Err(errno_io(e)),
        }
    }
    let base = cur.as_ref().unwrap_or(root);
    match rfs::openat(base, *last, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => Ok(Beneath::Opened(fd)),
        Err(Errno::NOENT) => Ok(Beneath::Absent),
        Err(Errno::LOOP) => Ok(Beneath::Unsafe("a symlink in the transcript path")),
        Err(Errno::NOTDIR) => Ok(Beneath::Unsafe("a non-directory in the transcript path")),
        Err(Errno::NXIO) => Ok(Beneath::Unsafe("the transcript is a socket")),
        Err(e) => Err(errno_io(e)),
    }
}

/// `O_PATH|O_NOFOLLOW` re-resolution of `key` beneath `root`: the identity the path names now.
pub fn identity_beneath(root: &OwnedFd, key: &str, force_walk: bool) -> io::Result<Option<Fingerprint>> {
    match open_beneath(root, key, OFlags::PATH, force_walk)? {
        Beneath::Opened(fd) => Ok(Some(fingerprint(&fd)?)),
        Beneath::Absent => Ok(None),
        Beneath::Unsafe(_) => Err(io::Error::from_raw_os_error(Errno::LOOP.raw_os_error())),
    }
}

/// Flags for a transcript proof open.
pub fn transcript_read_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NONBLOCK
}

/// How a transcript is read (issue 27 item 4, reproduction 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// A local filesystem: the page cache is the file.
    Cached,
    /// `O_DIRECT`: every read goes to the file server, past this client's page cache.
    Direct,
    /// `O_DIRECT` was refused; the cached pages of the range are dropped
    /// (`POSIX_FADV_DONTNEED`) before every read so the next read fetches them. Weaker: a
    /// page this host has mapped or dirtied stays.
    DropPages,
}

/// Chooses how to read `fd` past the client cache, and prepares it.
///
/// Why `O_DIRECT` and not a lock: NFS revalidates its page cache when a POSIX lock is
/// taken, but FUSE does not, and a lock needs a lock the server arbitrates
/// (`local_lock=none`); `O_DIRECT` reads go to the server on NFS, CephFS, SMB and FUSE
/// alike. Set with `F_SETFL` on the descriptor already opened and checked, so no second
/// open can reach another file. A local filesystem keeps [`ReadMode::Cached`]: its page cache
/// is the truth, and the 1 GiB seal/takeover benchmark must not get slower.
pub fn read_mode_for(fd: &OwnedFd) -> io::Result<ReadMode> {
    if crate::lockfile::filesystem::magic_of(fd).is_ok_and(crate::lockfile::filesystem::magic_is_local) {
        return Ok(ReadMode::Cached);
    }
    let flags = rfs::fcntl_getfl(fd).map_err(errno_io)?;
    match rfs::fcntl_setfl(fd, flags | OFlags::DIRECT) {
        Ok(()) => Ok(ReadMode::Direct),
        Err(Errno::INVAL) | Err(Errno::OPNOTSUPP) | Err(Errno::PERM) => Ok(ReadMode::DropPages),
        Err(e) => Err(errno_io(e)),
    }
}

/// `fstat` after forcing the attributes from the server (`statx(AT_STATX_FORCE_SYNC)`):
/// NFS sends a GETATTR, FUSE a GETATTR to its daemon, so the size and times compared are
/// the server's, not attributes cached for up to `acmax` (or FUSE's `attr_timeout`).
pub fn fingerprint_synced(fd: &OwnedFd) -> io::Result<Fingerprint> {
    revalidate_fd(fd)?;
    fingerprint(fd)
}

/// [`fingerprint`] for a descriptor read in `mode`: forced from the server unless local.
pub fn fingerprint_for(fd: &OwnedFd, mode: ReadMode) -> io::Result<Fingerprint> {
    if mode == ReadMode::Cached { fingerprint(fd) } else { fingerprint_synced(fd) }
}

/// `statx(AT_STATX_FORCE_SYNC)` of a descriptor, result discarded: the client fetches the
/// file's or directory's attributes from the server (see [`super::Dir::listed_by_server`] for what
/// that invalidates). `EINVAL`/`ENOSYS` (no such flag) are ignored.
pub fn revalidate_fd(fd: &OwnedFd) -> io::Result<()> {
    match rfs::statx(fd, "", AtFlags::EMPTY_PATH | AtFlags::STATX_FORCE_SYNC, rfs::StatxFlags::BASIC_STATS) {
        Ok(_) | Err(Errno::INVAL) | Err(Errno::NOSYS) => Ok(()),
        Err(e) => Err(errno_io(e)),
    }
}

/// Alignment of `O_DIRECT` buffers, offsets and lengths: the largest logical block size in
/// common use (NFS and FUSE need none; a block-backed filesystem may need up to this).
pub const DIRECT_ALIGN: usize = 4096;

/// A zeroed buffer of `len` bytes whose start is aligned to [`DIRECT_ALIGN`], without
/// `unsafe`: an over-allocated vector and the offset of its first aligned byte.
///
/// Two users: `O_DIRECT` bounce reads, which the filesystem may refuse unaligned, and the
/// proof read's hash buffer on every filesystem, because a page-cache copy into a buffer
/// that starts a few bytes past a page boundary runs 3x slower (4K aliasing; see
/// `transcript::hash_buffer`). The slack page costs address space, not memory: a large
/// zeroed vector is a fresh mapping whose untouched pages are never resident.
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` bytes (rounded up to the alignment).
    pub fn new(len: usize) -> AlignedBuf {
        let len = len.div_ceil(DIRECT_ALIGN).max(1) * DIRECT_ALIGN;
        let raw = vec![0u8; len + DIRECT_ALIGN];
        let start = raw.as_ptr().align_offset(DIRECT_ALIGN);
        AlignedBuf { raw, start, len }
    }

    /// The aligned bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

/// Reads `buf.len()` bytes at `offset` (fewer at end of file) in `mode`. `Direct` reads go
/// through an aligned bounce buffer covering the aligned range, so any offset and length
/// work on filesystems that require alignment; `scratch` is reused between calls.
pub fn pread_mode(
    fd: &OwnedFd,
    mode: ReadMode,
    buf: &mut [u8],
    offset: u64,
    scratch: &mut Option<AlignedBuf>,
) -> io::Result<usize> {
    match mode {
        ReadMode::Cached => pread_full(fd, buf, offset),
        ReadMode::DropPages => {
            let len = std::num::NonZeroU64::new(buf.len() as u64);
            let _ = rfs::fadvise(fd, offset, len, rfs::Advice::DontNeed);
            pread_full(fd, buf, offset)
        }
        ReadMode::Direct => {
            let align = DIRECT_ALIGN as u64;
            let start = offset / align * align;
            let end = (offset + buf.len() as u64).div_ceil(align) * align;
            let span = (end - start) as usize;
            if scratch.as_ref().is_none_or(|b| b.len < span) {
                *scratch = Some(AlignedBuf::new(span));
            }
            let bounce = scratch.as_mut().expect("just allocated").as_mut_slice();
            let got = pread_full(fd, &mut bounce[..span], start)?;
            let skip = (offset - start) as usize;
            let n = got.saturating_sub(skip).min(buf.len());
            buf[..n].copy_from_slice(&bounce[skip..skip + n]);
            Ok(n)
        }
    }
}

/// `pread` until `buf` is full or end of file; returns the bytes read.
pub fn pread_full(fd: &OwnedFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match rustix::io::pread(fd, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(errno_io(e)),
        }
    }
    Ok(done)
}

/// Opens the directory `key` names beneath `root` (`"."` for `root` itself) without
/// following any symlink, for an `fstat` of its owner and mount.
pub fn open_dir_beneath(root: &OwnedFd, key: &str) -> io::Result<Beneath> {
    if key == "." {
        return rfs::openat(root, ".", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map(Beneath::Opened)
            .map_err(errno_io);
    }
    open_beneath(root, key, OFlags::PATH | OFlags::DIRECTORY, false)
}

/// Are `file` and `dir` on the same mount?
///
/// Why (issue 22): a file bind-mounted over the transcript path (a procfs file, a device
/// node's content, another filesystem's file) is reached without any symlink, yet its size
/// need not describe its bytes. A bind mount makes the file a mount point of its own, so its
/// `statx` mount id differs from its directory's even when both come from one filesystem;
/// the device number catches the cross-filesystem case on kernels without `STATX_MNT_ID`
/// (before Linux 5.8), where a same-filesystem bind mount goes unnoticed.
pub fn same_mount(file: &OwnedFd, dir: &OwnedFd) -> io::Result<bool> {
    let flags = AtFlags::EMPTY_PATH;
    let want = rfs::StatxFlags::BASIC_STATS | rfs::StatxFlags::MNT_ID;
    let (f, d) = match (rfs::statx(file, "", flags, want), rfs::statx(dir, "", flags, want)) {
        (Ok(f), Ok(d)) => (f, d),
        // No statx (old kernel, seccomp): compare devices only.
        (Err(Errno::NOSYS), _) | (_, Err(Errno::NOSYS)) | (Err(Errno::PERM), _) | (_, Err(Errno::PERM)) => {
            return Ok(meta_of(file)?.dev == meta_of(dir)?.dev);
        }
        (Err(e), _) | (_, Err(e)) => return Err(errno_io(e)),
    };
    if (f.stx_dev_major, f.stx_dev_minor) != (d.stx_dev_major, d.stx_dev_minor) {
        return Ok(false);
    }
    let mnt = rfs::StatxFlags::MNT_ID.bits();
    if f.stx_mask & mnt != 0 && d.stx_mask & mnt != 0 {
        return Ok(f.stx_mnt_id == d.stx_mnt_id);
    }
    Ok(true)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use crate::lockfile::sys::scratch_dir as dir;

    #[test]
    fn direct_reads_return_the_same_bytes_at_any_offset() {
        let (t, _d) = dir();
        let body: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(t.path().join("f"), &body).unwrap();
        let plain = rfs::open(t.path().join("f"), OFlags::RDONLY, Mode::empty()).unwrap();
        let fd = rfs::open(t.path().join("f"), OFlags::RDONLY, Mode::empty()).unwrap();
        let flags = rfs::fcntl_getfl(&fd).unwrap();
        // ext4 and xfs take O_DIRECT and need aligned reads; tmpfs refuses it, and then the
        // bounce buffer is exercised without the flag, which is still a valid read.
        let direct = rfs::fcntl_setfl(&fd, flags | OFlags::DIRECT).is_ok();
        let mut scratch = None;
        for (off, len) in [(0u64, 1usize), (1, 4095), (4095, 2), (8191, 5000), (19_999, 10), (20_000, 1), (0, 20_000)] {
            for (mode, fd) in [(ReadMode::Direct, &fd), (ReadMode::DropPages, &plain)] {
                let mut buf = vec![0u8; len];
                let n = pread_mode(fd, mode, &mut buf, off, &mut scratch).unwrap();
                let want = &body[(off as usize).min(body.len())..(off as usize + len).min(body.len())];
                assert_eq!(&buf[..n], want, "{mode:?} at {off}+{len} (O_DIRECT set: {direct})");
            }
        }
        let mut b = AlignedBuf::new(10);
        assert_eq!(b.as_mut_slice().as_ptr() as usize % DIRECT_ALIGN, 0);
        assert_eq!(b.as_mut_slice().len(), DIRECT_ALIGN);
    }

    #[test]
    fn a_file_and_its_directory_share_a_mount() {
        let (t, d) = dir();
        std::fs::write(t.path().join("f"), b"x").unwrap();
        let f = rfs::open(t.path().join("f"), OFlags::RDONLY, Mode::empty()).unwrap();
        assert!(same_mount(&f, &d.fd).unwrap());
        let proc = rfs::open("/proc/version", OFlags::RDONLY, Mode::empty()).unwrap();
        assert!(!same_mount(&proc, &d.fd).unwrap());
    }
}
