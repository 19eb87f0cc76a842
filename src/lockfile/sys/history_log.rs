//! The history log's syscalls (issue 30): append one line, rotate at a size, read back.
//!
//! Split from [`super`] because the log is not part of the lock protocol: nothing here ever
//! opens, links, renames or removes a lock record. Everything happens inside the history
//! directory (`R/tmp/writerctl-history/`, beside the lock directory), opened through its
//! parent's descriptor with `O_NOFOLLOW`, and every call below is relative to that
//! descriptor.
//!
//! # Guarantees, and what they rest on
//!
//! * One line is one `write(2)` on an `O_APPEND` descriptor. On a local filesystem Linux
//!   takes the inode's lock for the whole write and moves to the end inside it, so two
//!   appenders never interleave their bytes (POSIX asks this of `O_APPEND`; `PIPE_BUF` is
//!   about pipes and does not apply). NFS emulates `O_APPEND` on the client: two hosts
//!   appending at once can overwrite each other's line. The reader skips a line that does
//!   not parse, so the cost is a lost line, never a wrong one.
//! * Nothing is fsynced: the log is advisory (never used for a decision), and a lost tail
//!   after a power cut costs lines, not safety. A crash mid-write leaves a torn last line;
//!   the next append starts on a fresh line ([`append_rotating`]), and readers skip it.
//! * A symlink, FIFO, device, directory or a file with a second hard link at the log's name
//!   is never written: `O_NOFOLLOW`, `O_NONBLOCK`, then the type and link count checked on
//!   the open descriptor. (A hard link could point the append at a lock record.)
//! * Disk use is bounded: a log that would pass the limit is renamed to the `.1` generation
//!   (replacing the older one) before the line goes to a fresh file, so at most two
//!   generations of about the limit each exist, whatever runs.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::{FileMeta, Kind, errno_io, lstat_at, meta_of};

/// The current generation's file name inside the history directory.
pub const CURRENT: &str = "history.jsonl";
/// The previous generation (one is kept).
pub const PREVIOUS: &str = "history.jsonl.1";

/// Why a line was not appended.
#[derive(Debug)]
pub enum AppendError {
    /// The file at the log's name is not one to write into (the text says why).
    Untrusted(String),
    /// A syscall failed (what was being done).
    Io(&'static str, io::Error),
}

impl std::fmt::Display for AppendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppendError::Untrusted(why) => f.write_str(why),
            AppendError::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

/// What [`append_rotating`] did besides appending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// This call moved a full generation to [`PREVIOUS`].
    pub rotated: bool,
}

/// Opens the directory at `path` (the lock directory's parent, `R/tmp`), following a
/// symlink there as the trust check of `R/tmp` does (the operator may have made it one):
/// `Ok(None)` when absent. The caller judges it on the returned metadata.
pub fn open_dir_path(path: &Path) -> io::Result<Option<(OwnedFd, FileMeta)>> {
    match rfs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => {
            let meta = meta_of(&fd)?;
            Ok(Some((fd, meta)))
        }
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(errno_io(e)),
    }
}

/// Opens the subdirectory `name` of `parent` (creating it 0700 first with `create`), never
/// through a symlink: `O_DIRECTORY|O_NOFOLLOW` makes the type check and the open one step.
/// `Ok(None)`: absent and not created. The caller judges its owner and mode on the returned
/// metadata (the fstat of this very descriptor).
pub fn open_subdir(parent: &OwnedFd, name: &OsStr, create: bool) -> io::Result<Option<(OwnedFd, FileMeta)>> {
    if create {
        match rfs::mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(errno_io(e)),
        }
    }
    let fd = match rfs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) if !create => return Ok(None),
        Err(e) => return Err(errno_io(e)),
    };
    let meta = meta_of(&fd)?;
    Ok(Some((fd, meta)))
}

/// Appends `line` (one complete line, ending in `\n`) to [`CURRENT`] in `dir`, rotating
/// first when the file would pass `rotate_at` bytes. `check` judges the open file's owner
/// and mode (the caller's trust rule); a refusal writes nothing.
///
/// The sequence, and why each step:
///
/// 1. `openat(CURRENT, O_RDWR|O_APPEND|O_CREAT|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, 0600)`:
///    never through a symlink, never blocking on a FIFO; created owner-only.
/// 2. `fstat` the descriptor: a regular file with one link, judged by `check`. Checked on
///    the descriptor, so a swap after the open cannot pass a check made on another file.
/// 3. Small enough (or empty): one `write(2)` of the whole line, prefixed with `\n` when the
///    file does not end in one (a torn line from a crash must not swallow ours). Done.
///    (The size read may fall inside another writer's line still being copied in; the
///    prefix then makes an empty line, which readers ignore. It never splits a line: each
///    `write(2)` is whole.) A file with no link left was rotated away and replaced since
///    the open: it is opened again, so the line is not written where nobody reads it.
/// 4. Too large: rotate. `flock(LOCK_EX|LOCK_NB)` on the full file elects one rotator among
///    writers that saw it full at once; a writer that loses just appends to it (a bounded
///    overshoot, never a wait on another process). The winner renames [`CURRENT`] over
///    [`PREVIOUS`] only if the name still is the inode it holds (`fstatat` identity):
///    otherwise someone rotated already, and renaming again would throw away the generation
///    they just kept. Then back to step 1, which creates a fresh file.
///
/// A writer that opened the old file before the rename appends to it after: its line lands
/// in [`PREVIOUS`], which readers read too. Nothing is lost on a local filesystem.
pub fn append_rotating(
    dir: &OwnedFd,
    line: &[u8],
    rotate_at: u64,
    check: &dyn Fn(&FileMeta) -> Result<(), String>,
) -> Result<Appended, AppendError> {
    let mut rotated = false;
    // Two rounds suffice (rotate, then append to the fresh file); a third covers a file
    // another writer filled in between. Past that, append where we are: bounded anyway.
    for round in 0..3 {
        let fd = rfs::openat(
            dir,
            CURRENT,
            OFlags::RDWR | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| match e {
            Errno::LOOP => AppendError::Untrusted(format!("{CURRENT} is a symlink; it is never followed")),
            e => AppendError::Io("open the history log", errno_io(e)),
        })?;
        let meta = meta_of(&fd).map_err(|e| AppendError::Io("fstat the history log", e))?;
        if meta.kind == Kind::Regular && meta.nlink == 0 {
            // Rotated to PREVIOUS and replaced by the next rotation between our open and
            // our fstat: a line written here would be lost. Open the current one again.
            continue;
        }
        if meta.kind != Kind::Regular || meta.nlink != 1 {
            return Err(AppendError::Untrusted(format!(
                "{CURRENT} is a {} with {} link(s), not a plain regular file",
                meta.kind.describe(),
                meta.nlink
            )));
        }
        check(&meta).map_err(AppendError::Untrusted)?;
        let fits = meta.size == 0 || meta.size + line.len() as u64 <= rotate_at;
        if fits || round == 2 {
            write_line(&fd, &meta, line)?;
            return Ok(Appended { rotated });
        }
        match rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            // Another writer is rotating this file right now: append to it and go.
            Err(Errno::WOULDBLOCK) => {
                write_line(&fd, &meta, line)?;
                return Ok(Appended { rotated });
            }
            // No lock manager (NFS without lockd): rotate on the identity check alone.
            Err(_) => {}
        }
        match lstat_at(dir, OsStr::new(CURRENT)) {
            Ok(now) if now.same_identity(&meta) => {
                rfs::renameat(dir, CURRENT, dir, PREVIOUS)
                    .map_err(|e| AppendError::Io("rotate the history log", errno_io(e)))?;
                rotated = true;
            }
            // Rotated (or removed) by someone else since our open: just reopen.
            Ok(_) => {}
            Err(e) if super::is_enoent(&e) => {}
            Err(e) => return Err(AppendError::Io("fstatat the history log", e)),
        }
        drop(fd);
    }
    Err(AppendError::Io("append to the history log", io::Error::other("the log was rotated away at every attempt")))
}

/// Step 3 of [`append_rotating`]: one `write(2)`. A short write leaves a torn line, which
/// readers skip and the next append starts after; it is reported, never retried (a second
/// write could land after another writer's line and make two torn ones).
fn write_line(fd: &OwnedFd, meta: &FileMeta, line: &[u8]) -> Result<(), AppendError> {
    let mut last = [0u8; 1];
    let torn = meta.size > 0 && matches!(rustix::io::pread(fd, &mut last, meta.size - 1), Ok(1) if last[0] != b'\n');
    let owned;
    let bytes = if torn {
        owned = [b"\n".as_slice(), line].concat();
        &owned[..]
    } else {
        line
    };
    loop {
        match rustix::io::write(fd, bytes) {
            Ok(n) if n == bytes.len() => return Ok(()),
            Ok(n) => {
                return Err(AppendError::Io(
                    "append to the history log",
                    io::Error::other(format!("short write: {n} of {} bytes", bytes.len())),
                ));
            }
            Err(Errno::INTR) => continue,
            Err(e) => return Err(AppendError::Io("append to the history log", errno_io(e))),
        }
    }
}

/// Reads `name` in `dir` (a generation of the log): `Ok(None)` when absent. At most the
/// last `cap` bytes are read; the flag says whether the start was cut (its first line is
/// then partial). Never through a symlink, never blocking on a FIFO; `check` judges the
/// open file, and a refusal is an `Untrusted` error naming why.
pub fn read_generation(
    dir: &OwnedFd,
    name: &str,
    cap: u64,
    check: &dyn Fn(&FileMeta) -> Result<(), String>,
) -> Result<Option<(Vec<u8>, bool)>, AppendError> {
    let fd = match rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => return Err(AppendError::Untrusted(format!("{name} is a symlink; it is never followed"))),
        Err(e) => {
            if let Ok(m) = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                && Kind::of_mode(m.st_mode) != Kind::Regular
            {
                return Err(AppendError::Untrusted(format!("{name} is a {}", Kind::of_mode(m.st_mode).describe())));
            }
            return Err(AppendError::Io("open the history log", errno_io(e)));
        }
    };
    let meta = meta_of(&fd).map_err(|e| AppendError::Io("fstat the history log", e))?;
    if meta.kind != Kind::Regular {
        return Err(AppendError::Untrusted(format!("{name} is a {}, not a regular file", meta.kind.describe())));
    }
    check(&meta).map_err(AppendError::Untrusted)?;
    let start = meta.size.saturating_sub(cap);
    let mut buf = vec![0u8; (meta.size - start) as usize];
    let mut len = 0;
    while len < buf.len() {
        match rustix::io::pread(&fd, &mut buf[len..], start + len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(AppendError::Io("read the history log", errno_io(e))),
        }
    }
    buf.truncate(len);
    Ok(Some((buf, start > 0)))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn history() -> (tempfile::TempDir, OwnedFd, OwnedFd) {
        let t = tempfile::tempdir().unwrap();
        let (parent, _) = open_dir_path(t.path()).unwrap().unwrap();
        let (fd, _) = open_subdir(&parent, OsStr::new("h"), true).unwrap().unwrap();
        (t, parent, fd)
    }

    fn ok(_: &FileMeta) -> Result<(), String> {
        Ok(())
    }

    fn lines(t: &tempfile::TempDir, name: &str) -> Vec<String> {
        match std::fs::read_to_string(t.path().join("h").join(name)) {
            Ok(s) => s.lines().map(str::to_owned).collect(),
            Err(_) => Vec::new(),
        }
    }

    #[test]
    fn appends_whole_lines_to_a_0600_file() {
        let (t, _d, h) = history();
        append_rotating(&h, b"one\n", 1 << 20, &ok).unwrap();
        append_rotating(&h, b"two\n", 1 << 20, &ok).unwrap();
        assert_eq!(lines(&t, CURRENT), ["one", "two"]);
        let mode = std::fs::metadata(t.path().join("h").join(CURRENT)).unwrap().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_torn_last_line_does_not_swallow_the_next_one() {
        let (t, _d, h) = history();
        std::fs::write(t.path().join("h").join(CURRENT), b"{\"at\":\"2026-").unwrap();
        append_rotating(&h, b"next\n", 1 << 20, &ok).unwrap();
        assert_eq!(lines(&t, CURRENT), ["{\"at\":\"2026-", "next"]);
    }

    #[test]
    fn rotates_at_the_boundary_and_keeps_one_old_generation() {
        let (t, _d, h) = history();
        let line = b"0123456789\n"; // 11 bytes
        // 33 bytes fit exactly three lines; the fourth rotates.
        for _ in 0..3 {
            assert!(!append_rotating(&h, line, 33, &ok).unwrap().rotated);
        }
        assert_eq!(lines(&t, CURRENT).len(), 3);
        assert!(append_rotating(&h, line, 33, &ok).unwrap().rotated);
        assert_eq!(lines(&t, PREVIOUS).len(), 3);
        assert_eq!(lines(&t, CURRENT).len(), 1);
        // The next full generation replaces the old one: two generations at most.
        for _ in 0..3 {
            append_rotating(&h, line, 33, &ok).unwrap();
        }
        assert_eq!(lines(&t, PREVIOUS).len(), 3);
        assert_eq!(lines(&t, CURRENT).len(), 1);
        let names: Vec<_> = std::fs::read_dir(t.path().join("h")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_line_larger_than_the_limit_still_goes_in_alone() {
        let (t, _d, h) = history();
        append_rotating(&h, b"a-long-line\n", 4, &ok).unwrap();
        append_rotating(&h, b"b\n", 4, &ok).unwrap();
        assert_eq!(lines(&t, PREVIOUS), ["a-long-line"]);
        assert_eq!(lines(&t, CURRENT), ["b"]);
    }

    #[test]
    fn a_symlink_fifo_or_hard_link_is_never_written() {
        let (t, _d, h) = history();
        let hd = t.path().join("h");
        let victim = t.path().join("victim.lock");
        std::fs::write(&victim, b"{}").unwrap();
        std::os::unix::fs::symlink(&victim, hd.join(CURRENT)).unwrap();
        let e = append_rotating(&h, b"x\n", 1 << 20, &ok).unwrap_err();
        assert!(matches!(e, AppendError::Untrusted(ref w) if w.contains("symlink")), "{e}");
        std::fs::remove_file(hd.join(CURRENT)).unwrap();
        std::fs::hard_link(&victim, hd.join(CURRENT)).unwrap();
        let e = append_rotating(&h, b"x\n", 1 << 20, &ok).unwrap_err();
        assert!(matches!(e, AppendError::Untrusted(ref w) if w.contains("2 link")), "{e}");
        std::fs::remove_file(hd.join(CURRENT)).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            hd.join(CURRENT),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(append_rotating(&h, b"x\n", 1 << 20, &ok).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"{}", "the lock record is untouched");
        // Reading refuses them the same way.
        std::fs::remove_file(hd.join(CURRENT)).unwrap();
        std::os::unix::fs::symlink(&victim, hd.join(CURRENT)).unwrap();
        assert!(matches!(read_generation(&h, CURRENT, 1 << 20, &ok), Err(AppendError::Untrusted(_))));
    }

    #[test]
    fn the_check_refuses_before_anything_is_written() {
        let (t, _d, h) = history();
        std::fs::write(t.path().join("h").join(CURRENT), b"").unwrap();
        let refuse = |_: &FileMeta| Err("not ours".to_owned());
        assert!(matches!(append_rotating(&h, b"x\n", 1 << 20, &refuse), Err(AppendError::Untrusted(_))));
        assert!(lines(&t, CURRENT).is_empty());
    }

    #[test]
    fn a_symlinked_history_directory_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let (d, _) = open_dir_path(t.path()).unwrap().unwrap();
        std::fs::create_dir(t.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(t.path().join("elsewhere"), t.path().join("h")).unwrap();
        assert!(open_subdir(&d, OsStr::new("h"), true).is_err());
        assert!(open_subdir(&d, OsStr::new("h"), false).is_err());
        assert!(open_subdir(&d, OsStr::new("absent"), false).unwrap().is_none());
        assert!(open_dir_path(&t.path().join("absent")).unwrap().is_none());
    }

    #[test]
    fn reading_takes_the_tail_of_a_large_file() {
        let (t, _d, h) = history();
        std::fs::write(t.path().join("h").join(CURRENT), b"aaaa\nbbbb\ncccc\n").unwrap();
        let (all, cut) = read_generation(&h, CURRENT, 1 << 20, &ok).unwrap().unwrap();
        assert_eq!((all.as_slice(), cut), (b"aaaa\nbbbb\ncccc\n".as_slice(), false));
        let (tail, cut) = read_generation(&h, CURRENT, 7, &ok).unwrap().unwrap();
        assert_eq!((tail.as_slice(), cut), (b"b\ncccc\n".as_slice(), true));
        assert!(read_generation(&h, PREVIOUS, 7, &ok).unwrap().is_none());
    }

    #[test]
    fn concurrent_appenders_across_rotations_keep_every_line_whole() {
        let (t, _d, h) = history();
        let h = std::sync::Arc::new(h);
        const THREADS: usize = 8;
        const PER: usize = 200;
        // A limit far above the total keeps every line (no generation is dropped), while a
        // small one would drop generations by design; see the rotation test for that.
        std::thread::scope(|s| {
            for n in 0..THREADS {
                let h = h.clone();
                s.spawn(move || {
                    for i in 0..PER {
                        let line = format!("{{\"thread\":{n},\"i\":{i},\"pad\":\"{}\"}}\n", "x".repeat(100 + n));
                        append_rotating(&h, line.as_bytes(), 1 << 30, &ok).unwrap();
                    }
                });
            }
        });
        // A writer that read the size while another's line was being copied in starts its
        // line with a newline (an empty line, ignored by readers); no line is ever split.
        let all: Vec<String> = lines(&t, CURRENT).into_iter().filter(|l| !l.is_empty()).collect();
        assert_eq!(all.len(), THREADS * PER);
        for l in &all {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("torn line {l:?}: {e}"));
            assert!(v["thread"].is_u64());
        }
    }

    #[test]
    fn concurrent_rotations_never_tear_a_line_and_stay_bounded() {
        let (t, _d, h) = history();
        let h = std::sync::Arc::new(h);
        const LIMIT: u64 = 4096;
        std::thread::scope(|s| {
            for n in 0..8 {
                let h = h.clone();
                s.spawn(move || {
                    for i in 0..300 {
                        let line = format!("{{\"thread\":{n},\"i\":{i}}}\n");
                        append_rotating(&h, line.as_bytes(), LIMIT, &ok).unwrap();
                    }
                });
            }
        });
        for name in [CURRENT, PREVIOUS] {
            let size = std::fs::metadata(t.path().join("h").join(name)).unwrap().len();
            // A loser of the rotation election appends past the limit: one line per writer.
            assert!(size <= LIMIT + 8 * 64, "{name}: {size} bytes");
            for l in lines(&t, name).into_iter().filter(|l| !l.is_empty()) {
                serde_json::from_str::<serde_json::Value>(&l).unwrap_or_else(|e| panic!("torn line {l:?}: {e}"));
            }
        }
    }
}
