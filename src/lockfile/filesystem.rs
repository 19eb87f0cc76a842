//! Which filesystem a lock directory lives on, and whether it can carry the protocol
//! (issue 27 item 4).
//!
//! # Why the engine asks
//!
//! The lock protocol rests on a few things only the filesystem gives: `link(2)` that never
//! replaces and answers `EEXIST` from the one place that decides (the local kernel, or the
//! file server), inode numbers that name one file whatever path reaches it, and lookups
//! that tell the truth. A local disk gives all three. A network or FUSE filesystem gives
//! the first two when its server does, but its *client* caches lookups (NFS negative
//! dentries and attributes up to `acdirmax`; FUSE entry, negative and attribute timeouts)
//! and file pages, so a `stat` that says "no such file" or a `read` may describe the past.
//! The engine then proves absence and reads bytes past the cache (see
//! [`super::sys::Dir::listed_by_server`] and [`super::transcript`]), which costs a directory
//! listing per check and uncached reads: only where [`Filesystem::authoritative_lookups`]
//! is false.
//!
//! # Calling sequence
//!
//! ```text
//! require_supported_path(nearest existing ancestor)   // before anything is created
//! Dir::open(lock dir) ─► dir.filesystem() ─► require_supported(&fs, path)
//! ```
//!
//! Detection is `fstatfs(2)`'s `f_type` (one syscall; a known local type stops there) and,
//! for everything else, the descriptor's line in `/proc/self/mountinfo` (found by the
//! `statx` mount id): its type (`nfs4`, `fuse.sshfs`, …) and mount and super options.
//!
//! # What is refused (`filesystem_unsupported`, exit 2)
//!
//! * no hard links (vfat, msdos, exFAT; and any type where `link` answers `EPERM`,
//!   `EOPNOTSUPP` or `EMLINK` on install, e.g. SMB without unix extensions): never
//!   allowed, no setting can make `link` work;
//! * NFS mounted `soft`/`softerr` (a timed-out call returns an error while the server may
//!   still apply it), `nocto` (opening a file no longer revalidates it, so bytes and sizes
//!   may be the client's), or `local_lock=` other than `none` (locks arbitrated by this
//!   client only);
//! * FUSE (`fuse`, `fuseblk`, `fuse.*`, `virtiofs`): not proven safe. sshfs in particular
//!   gives each path its own inode number, so a linked lock never shares the inode of the
//!   file that was linked and every install reads as replaced.
//!
//! `WRITERCTL_ALLOW_FILESYSTEM=TYPE[,TYPE]` (types as mountinfo names them) runs on a
//! refused type anyway, with every defence on — except a missing `link`.

use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, StatxFlags};

use super::error::LockError;

/// The environment variable naming filesystem types to run on although they are refused.
pub const ALLOW_ENV: &str = "WRITERCTL_ALLOW_FILESYSTEM";

/// `statfs` magic numbers (linux/magic.h) of filesystems whose lookups and page cache are
/// the kernel's own: what `stat` says is the truth, nothing else can change the directory
/// behind the kernel's back.
const LOCAL_MAGICS: &[(u64, &str)] = &[
    (0xEF53, "ext4"),
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0x0102_1994, "tmpfs"),
    (0x8584_58F6, "ramfs"),
    (0x794C_7630, "overlay"),
    (0x2FC1_2FC1, "zfs"),
    (0xF2F5_2010, "f2fs"),
    (0xCA45_1A4E, "bcachefs"),
    (0x5265_4973, "reiserfs"),
    (0x3153_464A, "jfs"),
    (0x3434, "nilfs2"),
    (0x7366_746E, "ntfs3"),
    (0x1501_3346, "udf"),
    (0x482B, "hfsplus"),
];

/// Filesystems without hard links.
const NO_LINK_MAGICS: &[(u64, &str)] = &[(0x4D44, "vfat"), (0x2011_BAB0, "exfat")];

const NFS_MAGIC: u64 = 0x6969;
const FUSE_MAGIC: u64 = 0x6573_5546;
const CEPH_MAGIC: u64 = 0x00C3_6400;
const SMB_MAGICS: &[u64] = &[0x517B, 0xFF53_4D42, 0xFE53_4D42];

/// The family a filesystem belongs to, as far as the protocol cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// A local disk or memory filesystem: lookups and pages are the kernel's own.
    Local,
    /// No hard links at all (FAT, exFAT).
    NoHardLinks,
    /// NFS (v3 or v4.x; EFS and most RWX volumes are NFSv4.1).
    Nfs,
    /// SMB/CIFS.
    Smb,
    /// CephFS (kernel client).
    Ceph,
    /// Any FUSE filesystem (sshfs, JuiceFS, gcsfuse, s3fs, bindfs, virtiofs, …).
    Fuse,
    /// A type not known here: treated as a network filesystem (every defence on).
    Other,
}

/// A lock directory's filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filesystem {
    /// The type as mountinfo names it (`ext4`, `nfs4`, `fuse.sshfs`), or, without a
    /// mountinfo line, the name the magic number is known by (`f_type 0x…` if none).
    pub fs_type: String,
    /// `statfs` `f_type`.
    pub magic: u64,
    /// Mount and super options from mountinfo (empty for a known local type: not read).
    pub options: Vec<String>,
    /// Where it is mounted, when mountinfo was read.
    pub mount_point: Option<PathBuf>,
    /// The family.
    pub family: Family,
}

/// Why a filesystem cannot carry the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What it lacks, in words for the message.
    pub lacks: String,
    /// False when no setting can help (no hard links).
    pub allowable: bool,
}

impl Filesystem {
    /// True when a lookup's answer is the truth: only a local filesystem. Everywhere else an
    /// `ENOENT` may be a cached guess and absence must be proven by the server.
    pub fn authoritative_lookups(&self) -> bool {
        self.family == Family::Local
    }

    /// True for a filesystem whose client may hold cached pages and attributes that another
    /// host has since changed (reads must go past the cache).
    pub fn network(&self) -> bool {
        !matches!(self.family, Family::Local | Family::NoHardLinks)
    }

    /// True when byte-range locks are arbitrated for every client (the kernel's own, NFS with
    /// `local_lock=none`, CephFS, SMB). FUSE passes locks to its daemon, which may keep them
    /// local; an unknown type proves nothing.
    pub fn locks_arbitrated(&self) -> bool {
        match self.family {
            Family::Local | Family::Ceph | Family::Smb => true,
            Family::Nfs => self.option_value("local_lock").is_none_or(|v| v == "none"),
            Family::NoHardLinks | Family::Fuse | Family::Other => false,
        }
    }

    /// The value of option `key=value`, if present.
    pub fn option_value(&self, key: &str) -> Option<&str> {
        self.options.iter().find_map(|o| o.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
    }

    fn has_option(&self, flag: &str) -> bool {
        self.options.iter().any(|o| o == flag)
    }

    /// Why this filesystem cannot carry the protocol, or `None` when it can.
    pub fn refusal(&self) -> Option<Refusal> {
        let allowable = |lacks: String| Some(Refusal { lacks, allowable: true });
        match self.family {
            Family::Local | Family::Ceph | Family::Smb | Family::Other => None,
            Family::NoHardLinks => Some(no_hard_links("it has no hard links")),
            Family::Nfs => {
                if self.has_option("soft") || self.has_option("softerr") {
                    return allowable(
                        "a hard mount: it is mounted `soft`, so a call that timed out reports an error while the server may still carry it out (remount with `hard`)"
                            .into(),
                    );
                }
                if self.has_option("nocto") {
                    return allowable(
                        "close-to-open consistency: it is mounted `nocto`, so opening a file does not revalidate it and reads may return what this client cached (remount without `nocto`)"
                            .into(),
                    );
                }
                match self.option_value("local_lock") {
                    Some(v) if v != "none" => allowable(format!(
                        "server-arbitrated locks: it is mounted `local_lock={v}`, so locks taken here are invisible to other hosts (remount with `local_lock=none`)"
                    )),
                    _ => None,
                }
            }
            Family::Fuse if self.fs_type == "fuse.sshfs" => allowable(
                "stable inode numbers: sshfs gives each path its own inode number, so a hard-linked lock never shares the inode of the file that was linked, and every acquisition would read as \"lock replaced right after install\""
                    .into(),
            ),
            Family::Fuse => allowable(
                "a proof that it is safe: FUSE filesystems may cache lookups, attributes and pages, and may not implement link(2), rename flags or inode numbers as the protocol needs; none is proven for this type"
                    .into(),
            ),
        }
    }
}

/// The refusal of a filesystem whose `link(2)` cannot work.
pub fn no_hard_links(why: &str) -> Refusal {
    Refusal {
        lacks: format!(
            "hard links ({why}): every lock is installed by link(2), which never replaces a file, and nothing else gives that guarantee"
        ),
        allowable: false,
    }
}

/// The `filesystem_unsupported` error of a lock that reads back with another inode number
/// than the file that was linked: the filesystem gives each name its own number (sshfs),
/// so no installed record can be proven to be ours. Never allowable: every acquisition
/// would fail the same way.
pub fn inode_numbers_unstable(path: &Path, fs: Option<Filesystem>) -> LockError {
    let fs_type = fs.map_or_else(|| "unknown".into(), |f| f.fs_type);
    LockError::FilesystemUnsupported {
        path: path.to_path_buf(),
        fs_type,
        lacks: "stable inode numbers: the lock just installed by link(2) reads back with another inode number than the file that was linked, so it cannot be proven to be ours".into(),
        allowable: false,
    }
}

/// One line of `/proc/self/mountinfo`, the fields used here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// Mount id (field 1; what `statx` `STATX_MNT_ID` reports).
    pub mount_id: u64,
    /// `major:minor` (field 3).
    pub dev: (u32, u32),
    /// Mount point (octal escapes decoded).
    pub mount_point: PathBuf,
    /// Filesystem type (after the ` - ` separator).
    pub fs_type: String,
    /// Per-mount options followed by the superblock options.
    pub options: Vec<String>,
}

fn unescape(field: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo.
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
            && let Ok(v) = u8::from_str_radix(&field[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses one mountinfo line (proc(5)); `None` for a line that does not have its shape.
pub fn parse_mountinfo_line(line: &str) -> Option<MountEntry> {
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    let r: Vec<&str> = right.split(' ').collect();
    if l.len() < 6 || r.len() < 3 {
        return None;
    }
    let (maj, min) = l[2].split_once(':')?;
    let mut options: Vec<String> = l[5].split(',').map(str::to_owned).collect();
    options.extend(r[2].split(',').map(str::to_owned));
    Some(MountEntry {
        mount_id: l[0].parse().ok()?,
        dev: (maj.parse().ok()?, min.parse().ok()?),
        mount_point: PathBuf::from(unescape(l[4])),
        fs_type: unescape(r[0]),
        options,
    })
}

/// Classifies from the magic number and, when read, the mountinfo line (pure).
pub fn classify(magic: u64, entry: Option<&MountEntry>) -> Filesystem {
    let known = |table: &[(u64, &str)]| table.iter().find(|(m, _)| *m == magic).map(|(_, n)| (*n).to_owned());
    let family = if LOCAL_MAGICS.iter().any(|(m, _)| *m == magic) {
        Family::Local
    } else if NO_LINK_MAGICS.iter().any(|(m, _)| *m == magic) {
        Family::NoHardLinks
    } else if magic == NFS_MAGIC {
        Family::Nfs
    } else if magic == FUSE_MAGIC {
        Family::Fuse
    } else if magic == CEPH_MAGIC {
        Family::Ceph
    } else if SMB_MAGICS.contains(&magic) {
        Family::Smb
    } else {
        match entry.map(|e| e.fs_type.as_str()) {
            Some("vfat" | "msdos" | "exfat") => Family::NoHardLinks,
            _ => Family::Other,
        }
    };
    let fs_type = entry
        .map(|e| e.fs_type.clone())
        .or_else(|| known(LOCAL_MAGICS))
        .or_else(|| known(NO_LINK_MAGICS))
        .unwrap_or_else(|| format!("f_type {magic:#x}"));
    Filesystem {
        fs_type,
        magic,
        options: entry.map(|e| e.options.clone()).unwrap_or_default(),
        mount_point: entry.map(|e| e.mount_point.clone()),
        family,
    }
}

/// `fstatfs` `f_type` of a descriptor.
pub fn magic_of(fd: impl AsFd) -> io::Result<u64> {
    let st = rfs::fstatfs(fd).map_err(|e| io::Error::from_raw_os_error(e.raw_os_error()))?;
    // f_type is a signed word on some targets; the magic numbers are unsigned 32-bit.
    Ok(st.f_type as u64 & 0xFFFF_FFFF)
}

/// True when `magic` is a local filesystem whose lookups are authoritative (one table
/// lookup: the cheap test every [`super::sys::Dir`] makes when it is opened).
pub fn magic_is_local(magic: u64) -> bool {
    LOCAL_MAGICS.iter().any(|(m, _)| *m == magic)
}

/// Detects the filesystem of an open descriptor. A known local type costs one `fstatfs`;
/// anything else also reads the descriptor's mountinfo line for its type and options.
pub fn of_fd(fd: impl AsFd) -> io::Result<Filesystem> {
    let fd = fd.as_fd();
    let magic = magic_of(fd)?;
    if magic_is_local(magic) {
        return Ok(classify(magic, None));
    }
    let entry = mount_entry_of(fd).unwrap_or(None);
    Ok(classify(magic, entry.as_ref()))
}

/// The mountinfo line of the mount `fd` is on: by `statx` mount id, or (kernels before 5.8)
/// by device number, the last such line (the one mounted on top).
fn mount_entry_of(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<Option<MountEntry>> {
    let stx = rfs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::BASIC_STATS | StatxFlags::MNT_ID)
        .map_err(|e| io::Error::from_raw_os_error(e.raw_os_error()))?;
    let text = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mut entries = text.lines().filter_map(parse_mountinfo_line);
    if stx.stx_mask & StatxFlags::MNT_ID.bits() != 0 {
        return Ok(entries.find(|e| e.mount_id == stx.stx_mnt_id));
    }
    Ok(entries.rfind(|e| e.dev == (stx.stx_dev_major, stx.stx_dev_minor)))
}

/// Is `name` a client's placeholder for a file unlinked while still open — NFS's silly
/// rename (`.nfs` + 24 hex digits, `nfs_sillyrename`) or libfuse's hidden file
/// (`.fuse_hidden` + 16 hex digits, `hard_remove` unset)? The client removes it itself when
/// the last descriptor closes; it is nobody's lock record and never residue, and moving or
/// deleting it would only make the client recreate or lose track of it.
pub fn is_silly_rename(name: &[u8]) -> bool {
    let hex_tail = |rest: &[u8], len: usize| rest.len() == len && rest.iter().all(u8::is_ascii_hexdigit);
    if let Some(rest) = name.strip_prefix(b".nfs") {
        return hex_tail(rest, 24);
    }
    if let Some(rest) = name.strip_prefix(b".fuse_hidden") {
        return hex_tail(rest, 16);
    }
    false
}

/// What one create-and-link probe in a directory found ([`link_probe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkProbe {
    /// A file was created, hard-linked and both names removed.
    Works,
    /// No file could be created there (read-only, no permission: the errno).
    CannotCreate(rustix::io::Errno),
    /// The file was created but `link(2)` failed the way a filesystem without hard links
    /// fails (`EPERM`, `EOPNOTSUPP`, `EMLINK`).
    NoHardLinks(rustix::io::Errno),
    /// `link(2)` failed otherwise.
    LinkFailed(rustix::io::Errno),
}

/// Creates a fresh `O_EXCL` file with a random name in `dir`, links it to a second name,
/// and removes both: whether the protocol's one indispensable call, `link(2)`, works there
/// for this user. Nothing is left behind whatever the outcome (a crash between the calls
/// leaves a `.writerctl-link-probe.*` file, which nothing reads).
///
/// Why a probe (issue 27): a FUSE filesystem (exfat-fuse shows as `fuseblk`, with nothing in
/// mountinfo saying it is exFAT), an SMB share without unix extensions (Azure Files over
/// SMB) and an unknown type give no other sign, and finding out at the first install used
/// to leave the lock directory behind and tell an orchestrator to retry forever.
pub fn link_probe(dir: &Path) -> LinkProbe {
    use rustix::io::Errno;
    let d = match rfs::open(dir, rfs::OFlags::RDONLY | rfs::OFlags::DIRECTORY | rfs::OFlags::CLOEXEC, rfs::Mode::empty()) {
        Ok(d) => d,
        Err(e) => return LinkProbe::CannotCreate(e),
    };
    let name = format!(".writerctl-link-probe.{}", uuid::Uuid::new_v4());
    let linked = format!("{name}.link");
    let flags =
        rfs::OFlags::WRONLY | rfs::OFlags::CREATE | rfs::OFlags::EXCL | rfs::OFlags::NOFOLLOW | rfs::OFlags::CLOEXEC;
    match rfs::openat(&d, &name, flags, rfs::Mode::from_raw_mode(0o600)) {
        Ok(f) => drop(f),
        Err(e) => return LinkProbe::CannotCreate(e),
    }
    let result = rfs::linkat(&d, &name, &d, &linked, AtFlags::empty());
    let _ = rfs::unlinkat(&d, &name, AtFlags::empty());
    match result {
        Ok(()) => {
            let _ = rfs::unlinkat(&d, &linked, AtFlags::empty());
            LinkProbe::Works
        }
        Err(e @ (Errno::PERM | Errno::OPNOTSUPP | Errno::MLINK)) => LinkProbe::NoHardLinks(e),
        Err(e) => LinkProbe::LinkFailed(e),
    }
}

/// Does `link(2)` fail in directory `dir` the way a filesystem without hard links fails
/// (`EPERM`, `EOPNOTSUPP`, `EMLINK`)? The errno when it does ([`link_probe`]). A probe that
/// cannot even create its file (read-only, no permission) says nothing here: the real
/// operation reports that error itself.
pub fn refuses_hard_links(dir: &Path) -> Option<rustix::io::Errno> {
    match link_probe(dir) {
        LinkProbe::NoHardLinks(e) => Some(e),
        LinkProbe::Works | LinkProbe::CannotCreate(_) | LinkProbe::LinkFailed(_) => None,
    }
}

/// The types `WRITERCTL_ALLOW_FILESYSTEM` names.
pub fn allowed_types() -> Vec<String> {
    std::env::var(ALLOW_ENV)
        .map(|v| v.split(',').map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect())
        .unwrap_or_default()
}

/// Refuses a filesystem that cannot carry the protocol, unless `allow` names its type and
/// what it lacks is something the defences can make up for.
pub fn judge(fs: &Filesystem, path: &Path, allow: &[String]) -> Result<(), LockError> {
    let Some(refusal) = fs.refusal() else { return Ok(()) };
    if refusal.allowable && allow.contains(&fs.fs_type) {
        return Ok(());
    }
    Err(unsupported(fs, path, refusal))
}

/// The `filesystem_unsupported` error for `fs` at `path`.
pub fn unsupported(fs: &Filesystem, path: &Path, refusal: Refusal) -> LockError {
    LockError::FilesystemUnsupported {
        path: path.to_path_buf(),
        fs_type: fs.fs_type.clone(),
        lacks: refusal.lacks,
        allowable: refusal.allowable,
    }
}

/// [`judge`] with the types from the environment, for the filesystem `path` is on.
pub fn require_supported(fs: &Filesystem, path: &Path) -> Result<(), LockError> {
    judge(fs, path, &allowed_types())
}

/// [`require_supported`] for the nearest existing ancestor of `path` (itself included):
/// judged before anything is created beneath it, so a refused filesystem is left exactly
/// as it was (issue 27: exFAT used to keep an empty lock directory behind).
pub fn require_supported_path(path: &Path) -> Result<(), LockError> {
    let Some((p, fs)) = of_nearest_existing(path)? else { return Ok(()) };
    // Only where directories are about to be created: the probe then runs in an ancestor,
    // never inside a lock directory that scans read; an existing lock directory's install
    // reports a missing link(2) itself.
    if p != path
        && matches!(fs.family, Family::Fuse | Family::Smb | Family::Other)
        && let Some(errno) = refuses_hard_links(&p)
    {
        let why = format!("link(2) answered {errno} in {}", p.display());
        return Err(unsupported(&fs, path, no_hard_links(&why)));
    }
    require_supported(&fs, path)
}

/// The filesystem of `path`, or of its nearest existing ancestor when it does not exist
/// yet (that ancestor is where it would be created), with the path that was judged. Reads
/// only (`O_PATH` open, `fstatfs`, mountinfo): `doctor` reports with it, and
/// [`require_supported_path`] judges with it. `None` when not even `/` opens.
pub fn of_nearest_existing(path: &Path) -> Result<Option<(std::path::PathBuf, Filesystem)>, LockError> {
    let mut cur = Some(path);
    while let Some(p) = cur {
        match rfs::open(p, rfs::OFlags::PATH | rfs::OFlags::CLOEXEC, rfs::Mode::empty()) {
            Ok(fd) => {
                let fs = of_fd(&fd).map_err(|e| LockError::io(format!("statfs {}", p.display()), e))?;
                return Ok(Some((p.to_path_buf(), fs)));
            }
            Err(rustix::io::Errno::NOENT) => cur = p.parent(),
            Err(e) => {
                return Err(LockError::io(
                    format!("open {}", p.display()),
                    io::Error::from_raw_os_error(e.raw_os_error()),
                ));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod probe_tests {
    use super::*;

    #[test]
    fn a_missing_path_is_judged_at_its_nearest_existing_ancestor_and_nothing_is_created() {
        let t = tempfile::tempdir().unwrap();
        let missing = t.path().join("tmp/session-writer-locks");
        let (judged, fs) = of_nearest_existing(&missing).unwrap().unwrap();
        assert_eq!(judged, t.path());
        assert!(!fs.fs_type.is_empty());
        assert!(!t.path().join("tmp").exists());
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
        let (judged, _) = of_nearest_existing(t.path()).unwrap().unwrap();
        assert_eq!(judged, t.path());
    }

    #[test]
    fn the_hard_link_probe_passes_on_a_local_disk_and_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(refuses_hard_links(t.path()), None);
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0, "the probe left files behind");
        // A directory the probe cannot write to says nothing (the real operation reports it).
        assert_eq!(refuses_hard_links(Path::new("/proc/self")), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(line: &str) -> MountEntry {
        parse_mountinfo_line(line).unwrap()
    }

    #[test]
    fn parses_mountinfo_lines_with_optional_fields_and_escapes() {
        let e = entry(
            "36 35 98:0 / /mnt/my\\040dir rw,noatime master:1 shared:2 - nfs4 srv:/x rw,vers=4.2,hard,local_lock=none",
        );
        assert_eq!(e.mount_id, 36);
        assert_eq!(e.dev, (98, 0));
        assert_eq!(e.mount_point, PathBuf::from("/mnt/my dir"));
        assert_eq!(e.fs_type, "nfs4");
        assert!(e.options.contains(&"noatime".to_owned()));
        assert!(e.options.contains(&"vers=4.2".to_owned()));
        assert!(parse_mountinfo_line("garbage").is_none());
    }

    #[test]
    fn local_types_are_authoritative_and_supported() {
        for magic in [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0x794C_7630] {
            let fs = classify(magic, None);
            assert!(fs.authoritative_lookups(), "{fs:?}");
            assert!(!fs.network());
            assert!(fs.refusal().is_none());
        }
        assert_eq!(classify(0xEF53, None).fs_type, "ext4");
    }

    #[test]
    fn nfs_is_supported_only_hard_with_cto_and_server_locks() {
        let nfs = |opts: &str| {
            classify(NFS_MAGIC, Some(&entry(&format!("40 1 0:50 / /n rw,relatime - nfs4 s:/e rw,{opts}"))))
        };
        let ok = nfs("vers=4.1,hard,proto=tcp,local_lock=none");
        assert!(ok.refusal().is_none());
        assert!(ok.network() && !ok.authoritative_lookups() && ok.locks_arbitrated());
        for (opts, word) in
            [("soft", "soft"), ("softerr", "soft"), ("hard,nocto", "nocto"), ("local_lock=all", "local_lock=all")]
        {
            let r = nfs(opts).refusal().unwrap();
            assert!(r.allowable && r.lacks.contains(word), "{opts}: {r:?}");
        }
        assert!(!nfs("local_lock=flock").locks_arbitrated());
    }

    #[test]
    fn fuse_is_refused_unless_allowed_and_sshfs_says_why() {
        let fuse = |t: &str| classify(FUSE_MAGIC, Some(&entry(&format!("50 1 0:60 / /f rw - {t} src rw,user_id=0"))));
        let sshfs = fuse("fuse.sshfs");
        let r = sshfs.refusal().unwrap();
        assert!(r.lacks.contains("inode number"), "{r:?}");
        let p = Path::new("/f/x");
        let e = judge(&sshfs, p, &[]).unwrap_err();
        assert_eq!(e.code().as_str(), "filesystem_unsupported");
        assert_eq!(e.code().exit_code(), 2);
        assert!(e.to_string().contains("fuse.sshfs"), "{e}");
        assert!(e.hint().unwrap().contains("WRITERCTL_ALLOW_FILESYSTEM=fuse.sshfs"), "{:?}", e.hint());
        assert!(judge(&sshfs, p, &["fuse.sshfs".into()]).is_ok());
        assert!(judge(&fuse("fuse.bindfs"), p, &["fuse.sshfs".into()]).is_err(), "each type is named");
        assert!(judge(&fuse("fuse.bindfs"), p, &["fuse.bindfs".into()]).is_ok());
        assert!(!fuse("fuse.bindfs").authoritative_lookups());
    }

    #[test]
    fn no_hard_links_can_never_be_allowed() {
        let exfat = classify(0x2011_BAB0, None);
        assert_eq!(exfat.fs_type, "exfat");
        let e = judge(&exfat, Path::new("/media/x"), &["exfat".into()]).unwrap_err();
        assert!(e.to_string().contains("exfat") && e.to_string().contains("hard links"), "{e}");
        let hint = e.hint().unwrap();
        assert!(!hint.contains("WRITERCTL_ALLOW_FILESYSTEM="), "{hint}");
        assert!(!hint.contains("chmod"), "{hint}");
        assert!(!e.to_string().contains("retry") && !hint.contains("retry"));
        // Known by its mountinfo type even when the magic is not in the table.
        let vfat = classify(0x1234, Some(&entry("1 1 8:1 / /m rw - vfat /dev/sdb1 rw")));
        assert_eq!(vfat.family, Family::NoHardLinks);
    }

    #[test]
    fn silly_renamed_files_are_recognised_and_nothing_else() {
        assert!(is_silly_rename(b".nfs000000000012d68700000001"));
        assert!(is_silly_rename(b".fuse_hidden0000000300000001"));
        for name in
            [&b".nfs"[..], b".nfs0000", b".nfs000000000012d68700000001x", b"s.lock", b".nfsx00000000012d68700000001"]
        {
            assert!(!is_silly_rename(name), "{}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn an_unknown_type_runs_with_every_defence_on() {
        let fs = classify(0x1234_5678, None);
        assert_eq!(fs.fs_type, "f_type 0x12345678");
        assert!(fs.refusal().is_none());
        assert!(!fs.authoritative_lookups() && fs.network() && !fs.locks_arbitrated());
    }

    #[test]
    fn detects_the_filesystem_of_a_real_directory() {
        let t = tempfile::tempdir().unwrap();
        let fd = rfs::open(t.path(), rfs::OFlags::RDONLY | rfs::OFlags::DIRECTORY, rfs::Mode::empty()).unwrap();
        let fs = of_fd(&fd).unwrap();
        assert!(!fs.fs_type.is_empty());
        // /proc is neither local-disk nor refused: proc's magic is not in any table.
        let proc = rfs::open("/proc", rfs::OFlags::RDONLY | rfs::OFlags::DIRECTORY, rfs::Mode::empty()).unwrap();
        let p = of_fd(&proc).unwrap();
        assert_eq!(p.fs_type, "proc", "read from mountinfo: {p:?}");
        assert_eq!(p.family, Family::Other);
        // Judging a path that does not exist yet judges its nearest existing ancestor.
        require_supported_path(&t.path().join("a/b/c")).unwrap();
    }
}
