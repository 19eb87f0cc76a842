//! Repairing a torn transcript tail (issue 38, reproduction 7 and item 6).
//!
//! A writer killed in the middle of an append leaves a transcript whose last line is
//! incomplete. Nothing may append after it — the next record would be glued to the broken
//! one into a line no reader can parse — so acquisition refuses such a transcript
//! ([`super::transcript::check_shape`]). This module is the way back: the incomplete line's
//! bytes move to a side file beside the transcript, then the transcript is cut at the end of
//! its last complete line. Nothing is deleted: the cut bytes keep a home an operator (or
//! the writer) can read and replay.
//!
//! # Calling sequence
//!
//! ```text
//! let torn = tail_repair::find(R, &key)?;                 // Option<TornTail>; changes nothing
//! // recover plans it only when no lock holder can write the transcript, then:
//! let name = tail_repair::side_file_name(&key, now, pid);
//! let done = tail_repair::repair(&torn, &name)?;          // Repaired, or why not
//! let kept = tail_repair::kept_cut_files(R, &key)?;       // what `status` lists
//! ```
//!
//! # The sequence, and why each step
//!
//! 1. Reopen the transcript beneath R (no symlink in any component, trusted directories,
//!    on its directory's mount: [`open_tail`]) and require what the plan saw: the same
//!    device and inode, the same length, torn at the same offset. Anything else means the
//!    file changed since the plan; nothing is done.
//! 2. Ask the kernel whether any open file description anywhere can write it (a momentary
//!    read lease, [`exclusive::prove`]). A writer still holding it could append after the
//!    cut, or have its next write land past the new end: refuse, nothing done.
//! 3. Create the side file in the transcript's directory (`O_CREAT|O_EXCL|O_NOFOLLOW`,
//!    0600: it never replaces or follows anything, and only the owner reads it), copy the cut
//!    bytes into it in bounded chunks through the descriptor step 1 checked, fsync the file,
//!    then the directory: the bytes are durable in their new home before they leave the old.
//! 4. Prove again (the copy took time), and only then open the transcript for writing,
//!    through the directory descriptor: the lease must come first, since our own write
//!    descriptor would make the kernel refuse it. That descriptor must reach the very inode
//!    of step 1, still of the planned length and torn at the planned offset.
//! 5. `ftruncate` to the last complete line through that descriptor, fsync it, and read the
//!    length back.
//!
//! If step 4 refuses, the copy made in step 3 is removed again (it is ours, made moments
//! before with `O_EXCL`, and the transcript still holds every byte of it), so a side file
//! that exists always means "these bytes were cut".
//!
//! # What a crash leaves
//!
//! Before step 3 ends: the transcript untouched, perhaps a partial side file beside it
//! (`status` lists it). Between 3 and 5: a complete copy and the transcript still torn;
//! `recover` plans the repair again and the next side file gets another name. After 5:
//! repaired. No state loses a byte.
//!
//! # The window left
//!
//! Between the lease of step 4 and the truncate, a process that opens the transcript *by
//! path* for writing could append. It is the window the seal's exclusivity proof leaves
//! too, for the same reason it is acceptable: a writable description can only appear
//! through a new `open` — every writer takes the session's lock first, acquisition refuses
//! a torn transcript, and `recover --writers-fenced` is the operator's word about the rest.
//! Step 5 truncates only a file still of the planned length, read through `fstat` after
//! the write descriptor was opened.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use time::OffsetDateTime;

use super::error::LockError;
use super::exclusive::{self, OpenForWriting};
use super::sys::{self, Beneath, Fingerprint};
use super::transcript::{OpenedTail, Tail, TranscriptKey, open_tail, tail_at};

/// The infix of a side file's name: `<transcript file name>.torn-<UTC>-<pid>`.
pub const SIDE_INFIX: &str = ".torn-";

/// Copy size for the cut bytes: memory stays fixed whatever the torn line's length.
const COPY_CHUNK_BYTES: usize = 64 << 10;

/// A torn transcript as found: where, which file, and where its last complete line ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Runtime directory R.
    pub runtime_dir: PathBuf,
    /// The transcript's key beneath R.
    pub key: TranscriptKey,
    /// Device of the transcript when found.
    pub dev: u64,
    /// Inode of the transcript when found.
    pub ino: u64,
    /// Offset just past the last `\n` (0 when the file holds none).
    pub complete: u64,
    /// The transcript's length.
    pub length: u64,
}

impl TornTail {
    /// How many bytes a repair moves to the side file.
    pub fn cut_bytes(&self) -> u64 {
        self.length - self.complete
    }
}

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// The side file, as a key beneath R (`chats/s.jsonl.torn-…`).
    pub side_file: String,
    /// Bytes moved into it.
    pub cut_bytes: u64,
    /// The transcript's length now (the planned `complete`).
    pub length: u64,
}

/// Why a repair did not happen (or did not finish).
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// The transcript is not what the plan saw; nothing was changed.
    #[error("the transcript changed since the plan ({0}); nothing was changed")]
    Changed(String),
    /// The kernel says something can still write the transcript; nothing was changed.
    #[error("{0}; nothing was changed")]
    OpenForWriting(OpenForWriting),
    /// The side file could not be made durable; the transcript was not touched.
    #[error("the cut bytes could not be kept in {side_file} ({source}); the transcript was not touched")]
    SideFile {
        /// The side file's key.
        side_file: String,
        /// What failed.
        #[source]
        source: io::Error,
    },
    /// A refusal after the copy, whose copy could not be removed again.
    #[error("{refusal}; the copy in {side_file} could not be removed ({source})")]
    CopyLeft {
        /// Why the repair stopped.
        refusal: Box<RepairError>,
        /// The side file left behind.
        side_file: String,
        /// Why it could not be removed.
        #[source]
        source: io::Error,
    },
    /// The truncate itself (or its fsync) failed; the cut bytes are kept in the side file.
    #[error("the transcript could not be truncated ({source}); the cut bytes are kept in {side_file}")]
    Truncate {
        /// The side file's key.
        side_file: String,
        /// What failed.
        #[source]
        source: io::Error,
    },
    /// Opening or reading the transcript failed.
    #[error("{0}")]
    Lock(#[from] LockError),
}

/// The transcript at `key` beneath `runtime_dir`, if it is torn. Reads the tail only
/// (see [`super::transcript::tail_at`]); changes nothing.
pub fn find(runtime_dir: &Path, key: &TranscriptKey) -> Result<Option<TornTail>, LockError> {
    let Some(opened) = open_tail(runtime_dir, key)? else { return Ok(None) };
    Ok(match opened.tail {
        Tail::Clean => None,
        Tail::Torn { complete, length } => Some(TornTail {
            runtime_dir: runtime_dir.to_path_buf(),
            key: key.clone(),
            dev: opened.fingerprint.dev,
            ino: opened.fingerprint.ino,
            complete,
            length,
        }),
    })
}

/// The side file's name for a repair at `now` by process `pid`:
/// `<transcript file name>.torn-<yyyymmddThhmmssZ>-<pid>` (the recovery folder's time
/// format). It does not end in `.jsonl`, so nothing that lists transcripts takes it for one.
pub fn side_file_name(key: &TranscriptKey, now: OffsetDateTime, pid: u32) -> String {
    format!("{}{SIDE_INFIX}{}-{pid}", file_name_of(key), super::record::compact_timestamp(now))
}

/// The side files a repair left beside the transcript at `key` (as keys beneath R, sorted):
/// the cut bytes `recover` kept. An absent transcript directory has none.
pub fn kept_cut_files(runtime_dir: &Path, key: &TranscriptKey) -> Result<Vec<String>, LockError> {
    let root = sys::open_root(runtime_dir).map_err(|e| LockError::io("open runtime directory", e))?;
    let Some(dir) = open_parent(&root, key)? else { return Ok(Vec::new()) };
    let prefix = format!("{}{SIDE_INFIX}", file_name_of(key));
    let listing = rfs::Dir::read_from(&dir).map_err(|e| LockError::io("list transcript directory", e.into()))?;
    let mut out = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|e| LockError::io("list transcript directory", e.into()))?;
        if let Ok(name) = std::str::from_utf8(entry.file_name().to_bytes())
            && name.starts_with(&prefix)
        {
            out.push(side_file_key(key, name));
        }
    }
    out.sort();
    Ok(out)
}

/// Carries out the repair of `torn` (see the module docs for the sequence), keeping the cut
/// bytes in `side_name` beside the transcript.
pub fn repair(torn: &TornTail, side_name: &str) -> Result<Repaired, RepairError> {
    let side_file = side_file_key(&torn.key, side_name);
    // 1. The file the plan saw, as the plan saw it.
    let opened = open_tail(&torn.runtime_dir, &torn.key)?
        .ok_or_else(|| RepairError::Changed("the transcript was deleted".into()))?;
    as_planned(torn, &opened.fingerprint, opened.tail)?;
    let path = torn.runtime_dir.join(torn.key.as_str());
    // 2. Nothing can write it.
    no_writer(&path)?;
    let dir = open_parent(&opened.root, &torn.key)?
        .ok_or_else(|| RepairError::Changed("the transcript's directory is gone".into()))?;
    // 3. The cut bytes, durable beside it.
    let side = create_side_file(&dir, side_name)
        .map_err(|source| RepairError::SideFile { side_file: side_file.clone(), source })?;
    if let Err(source) = copy_range(&opened, &side, torn.complete, torn.length)
        .and_then(|()| sys::fsync_fd(&side))
        .and_then(|()| sys::fsync_fd(&dir))
    {
        let refusal = RepairError::SideFile { side_file: side_file.clone(), source };
        return Err(discard_copy(&dir, side_name, &side, refusal, &side_file));
    }
    // 4. Still nothing can write it, and the write descriptor reaches the same file.
    let writable = match no_writer(&path).and_then(|()| open_same_for_truncate(&dir, torn, &opened)) {
        Ok(fd) => fd,
        Err(refusal) => return Err(discard_copy(&dir, side_name, &side, refusal, &side_file)),
    };
    // 5. Cut.
    truncate_durably(&writable, torn.complete)
        .map_err(|source| RepairError::Truncate { side_file: side_file.clone(), source })?;
    Ok(Repaired { side_file, cut_bytes: torn.cut_bytes(), length: torn.complete })
}

/// Step 1 and step 4's identity rule: the same inode, the same length, torn at the same
/// offset. Why all three: a replaced file (rename over the key), an append that completed
/// the line (or added more), or a truncation by someone else each make the planned cut
/// wrong — it would drop bytes that are no longer an incomplete line.
fn as_planned(torn: &TornTail, now: &Fingerprint, tail: Tail) -> Result<(), RepairError> {
    if (now.dev, now.ino) != (torn.dev, torn.ino) {
        return Err(RepairError::Changed("it was replaced by another file".into()));
    }
    if now.size != torn.length {
        return Err(RepairError::Changed(format!("length {} bytes, planned {} bytes", now.size, torn.length)));
    }
    match tail {
        Tail::Torn { complete, length } if (complete, length) == (torn.complete, torn.length) => Ok(()),
        Tail::Torn { complete, .. } => Err(RepairError::Changed(format!(
            "its last complete line ends at byte {complete}, planned {}",
            torn.complete
        ))),
        Tail::Clean => Err(RepairError::Changed("it now ends with a complete line".into())),
    }
}

/// The kernel's word that no open file description can write `path`
/// ([`exclusive::prove`]). Where no lease can be had (NFS, FUSE, another owner), the
/// operator's `--writers-fenced` stands, as for the seal; only a refusal stops the repair.
fn no_writer(path: &Path) -> Result<(), RepairError> {
    exclusive::prove(path).map(|_| ()).map_err(RepairError::OpenForWriting)
}

/// Step 4: opens the transcript for writing through its directory (no symlink: the
/// directory was reached beneath R without one, and `O_NOFOLLOW` covers the last
/// component) and requires it to be the very file step 1 checked, as planned. The length
/// is read from the new descriptor and the tail again through the checked one, after the
/// open, so a write that raced the lease is seen here.
fn open_same_for_truncate(dir: &OwnedFd, torn: &TornTail, opened: &OpenedTail) -> Result<OwnedFd, RepairError> {
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rfs::openat(dir, file_name_of(&torn.key), flags, Mode::empty())
        .map_err(|e| LockError::io("open the transcript for truncation", e.into()))?;
    let now = sys::fingerprint_for(&fd, opened.mode).map_err(|e| LockError::io("fstat transcript", e))?;
    let tail = tail_at(&opened.fd, opened.mode, now.size)?;
    as_planned(torn, &now, tail)?;
    Ok(fd)
}

/// Opens the directory that holds the transcript, beneath `root` without following a
/// symlink, readable (so it can be listed and fsynced). `None` when it does not exist.
fn open_parent(root: &OwnedFd, key: &TranscriptKey) -> Result<Option<OwnedFd>, LockError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY;
    let opened = match key.as_str().rsplit_once('/') {
        Some((parent, _)) => sys::open_beneath(root, parent, flags, false),
        None => rfs::openat(root, ".", flags | OFlags::CLOEXEC, Mode::empty()).map(Beneath::Opened).map_err(Into::into),
    };
    match opened.map_err(|e| LockError::io("open transcript directory", e))? {
        Beneath::Opened(fd) => Ok(Some(fd)),
        Beneath::Absent => Ok(None),
        Beneath::Unsafe(why) => Err(LockError::TranscriptUnsafe { reason: why.into() }),
    }
}

/// Creates the side file: never an existing name (`O_EXCL`), never through a symlink
/// (`O_NOFOLLOW`, and `O_EXCL` refuses a dangling one), never a FIFO wait (`O_NONBLOCK`),
/// readable by its owner only — it holds transcript bytes.
fn create_side_file(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    let flags = OFlags::WRONLY
        | OFlags::CREATE
        | OFlags::EXCL
        | OFlags::NOFOLLOW
        | OFlags::NONBLOCK
        | OFlags::CLOEXEC
        | OFlags::NOCTTY;
    Ok(rfs::openat(dir, name, flags, Mode::from_raw_mode(0o600))?)
}

/// Copies bytes `from..to` of the checked transcript into `side`, one fixed buffer at a
/// time. A short read means the transcript shrank under us.
fn copy_range(opened: &OpenedTail, side: &OwnedFd, from: u64, to: u64) -> io::Result<()> {
    let mut buf = vec![0u8; COPY_CHUNK_BYTES.min((to - from).max(1) as usize)];
    let mut scratch: Option<sys::AlignedBuf> = None;
    let mut at = from;
    while at < to {
        let want = buf.len().min((to - at) as usize);
        let n = sys::pread_mode(&opened.fd, opened.mode, &mut buf[..want], at, &mut scratch)?;
        if n != want {
            return Err(io::Error::other("the transcript shrank while its tail was copied"));
        }
        sys::write_all(side, &buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

/// Step 5: cut at `complete`, make it durable, and read the length back (a filesystem that
/// answered success without cutting is not "repaired").
fn truncate_durably(fd: &OwnedFd, complete: u64) -> io::Result<()> {
    rfs::ftruncate(fd, complete)?;
    sys::fsync_fd(fd)?;
    let now = sys::fingerprint(fd)?;
    if now.size != complete {
        return Err(io::Error::other(format!("the transcript is {} bytes after the cut, not {complete}", now.size)));
    }
    Ok(())
}

/// Removes the copy this repair made when it stops before the cut: the transcript still
/// holds every byte, and a side file must mean "cut". Only the very inode we created goes
/// (the name is checked against our descriptor first); the directory is fsynced after.
fn discard_copy(dir: &OwnedFd, name: &str, ours: &OwnedFd, refusal: RepairError, side_file: &str) -> RepairError {
    let removed = (|| -> io::Result<()> {
        let mine = rfs::fstat(ours)?;
        let there = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
        if (there.st_dev, there.st_ino) != (mine.st_dev, mine.st_ino) {
            return Err(io::Error::other("another file now has its name"));
        }
        rfs::unlinkat(dir, name, AtFlags::empty())?;
        sys::fsync_fd(dir)
    })();
    match removed {
        Ok(()) => refusal,
        Err(source) => RepairError::CopyLeft { refusal: Box::new(refusal), side_file: side_file.to_owned(), source },
    }
}

/// The last component of a key (the transcript's file name).
fn file_name_of(key: &TranscriptKey) -> &str {
    key.as_str().rsplit_once('/').map_or(key.as_str(), |(_, name)| name)
}

/// `name` in the transcript's directory, as a key beneath R (how a side file is named in
/// plans, audit lines and `status`).
pub fn side_file_key(key: &TranscriptKey, name: &str) -> String {
    match key.as_str().rsplit_once('/') {
        Some((parent, _)) => format!("{parent}/{name}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage and mutate files by hand
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    const BODY: &[u8] = b"{\"a\":1}\n{\"b\":2}\n{\"torn\":";

    fn setup(key: &str, body: &[u8]) -> (tempfile::TempDir, TranscriptKey) {
        let t = tempfile::tempdir().unwrap();
        let k = TranscriptKey::parse(key).unwrap();
        let path = t.path().join(k.as_str());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
        (t, k)
    }

    fn name(k: &TranscriptKey) -> String {
        side_file_name(k, OffsetDateTime::now_utc(), sys::own_pid())
    }

    fn transcript(t: &tempfile::TempDir, k: &TranscriptKey) -> Vec<u8> {
        std::fs::read(t.path().join(k.as_str())).unwrap()
    }

    #[test]
    fn the_cut_bytes_are_kept_exactly_and_the_transcript_cut_exactly() {
        for key in ["chats/s.jsonl", "s.jsonl", "projects/-r/chats/x y.jsonl"] {
            let (t, k) = setup(key, BODY);
            let torn = find(t.path(), &k).unwrap().expect("torn");
            assert_eq!((torn.complete, torn.length, torn.cut_bytes()), (16, BODY.len() as u64, 8));
            let side = name(&k);
            let done = repair(&torn, &side).unwrap();
            assert_eq!(done, Repaired { side_file: side_file_key(&k, &side), cut_bytes: 8, length: 16 });
            assert_eq!(transcript(&t, &k), &BODY[..16], "{key}: cut at the last complete line");
            let kept = t.path().join(&done.side_file);
            assert_eq!(std::fs::read(&kept).unwrap(), &BODY[16..], "{key}: the cut bytes, exactly");
            assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(kept_cut_files(t.path(), &k).unwrap(), vec![done.side_file.clone()]);
            assert_eq!(find(t.path(), &k).unwrap(), None, "{key}: clean now");
        }
        // A transcript with no newline at all is cut to empty, every byte kept.
        let (t, k) = setup("chats/s.jsonl", b"{\"only\":");
        let torn = find(t.path(), &k).unwrap().unwrap();
        let done = repair(&torn, &name(&k)).unwrap();
        assert_eq!(transcript(&t, &k), b"");
        assert_eq!(std::fs::read(t.path().join(done.side_file)).unwrap(), b"{\"only\":");
    }

    #[test]
    fn the_side_file_is_named_by_time_and_pid_and_listed_by_its_transcript_only() {
        let k = TranscriptKey::parse("chats/s.jsonl").unwrap();
        let at = time::macros::datetime!(2026-01-02 03:04:05 UTC);
        assert_eq!(side_file_name(&k, at, 42), "s.jsonl.torn-20260102T030405Z-42");
        assert_eq!(side_file_key(&k, "s.jsonl.torn-x"), "chats/s.jsonl.torn-x");
        let (t, k) = setup("chats/s.jsonl", b"x\n");
        assert!(kept_cut_files(t.path(), &TranscriptKey::parse("nodir/s.jsonl").unwrap()).unwrap().is_empty());
        std::fs::write(t.path().join("chats/s.jsonl.torn-1"), b"a").unwrap();
        std::fs::write(t.path().join("chats/s2.jsonl.torn-1"), b"b").unwrap();
        std::fs::write(t.path().join("chats/s.jsonl"), b"x\n").unwrap();
        assert_eq!(kept_cut_files(t.path(), &k).unwrap(), vec!["chats/s.jsonl.torn-1".to_owned()]);
    }

    #[test]
    fn a_transcript_open_for_writing_is_refused_and_nothing_changes() {
        let (t, k) = setup("chats/s.jsonl", BODY);
        let torn = find(t.path(), &k).unwrap().unwrap();
        // A writer that survived (or a descriptor handed out of its tree) still has it open.
        let mut writer = std::fs::OpenOptions::new().append(true).open(t.path().join(k.as_str())).unwrap();
        let e = repair(&torn, &name(&k)).unwrap_err();
        assert!(matches!(e, RepairError::OpenForWriting(_)), "{e:?}");
        assert!(e.to_string().contains("open file description can still write"), "{e}");
        assert_eq!(transcript(&t, &k), BODY);
        assert!(kept_cut_files(t.path(), &k).unwrap().is_empty(), "no side file from a refused repair");
        // Once it is closed, the same plan goes through.
        writer.flush().unwrap();
        drop(writer);
        repair(&torn, &name(&k)).unwrap();
        assert_eq!(transcript(&t, &k), &BODY[..16]);
    }

    #[test]
    fn a_transcript_changed_since_the_plan_is_refused_and_nothing_changes() {
        type Mutate = fn(&Path);
        let cases: [(&str, Mutate); 5] = [
            ("the line was completed", |p| {
                std::fs::OpenOptions::new().append(true).open(p).unwrap().write_all(b"1}\n").unwrap()
            }),
            ("more torn bytes", |p| std::fs::OpenOptions::new().append(true).open(p).unwrap().write_all(b"1").unwrap()),
            ("truncated by someone else", |p| {
                std::fs::OpenOptions::new().write(true).open(p).unwrap().set_len(16).unwrap()
            }),
            ("same length, torn elsewhere", |p| std::fs::write(p, b"{\"a\":1}\n{\"b\":2}{\"torn\"\n{").unwrap()),
            ("replaced", |p| {
                let tmp = p.with_extension("new");
                std::fs::write(&tmp, BODY).unwrap();
                std::fs::rename(&tmp, p).unwrap();
            }),
        ];
        for (what, mutate) in cases {
            let (t, k) = setup("chats/s.jsonl", BODY);
            let torn = find(t.path(), &k).unwrap().unwrap();
            let path = t.path().join(k.as_str());
            mutate(&path);
            let before = std::fs::read(&path).unwrap();
            let e = repair(&torn, &name(&k)).unwrap_err();
            assert!(matches!(e, RepairError::Changed(_)), "{what}: {e:?}");
            assert_eq!(std::fs::read(&path).unwrap(), before, "{what}: untouched");
            assert!(kept_cut_files(t.path(), &k).unwrap().is_empty(), "{what}: no side file");
        }
        let (t, k) = setup("chats/s.jsonl", BODY);
        let torn = find(t.path(), &k).unwrap().unwrap();
        std::fs::remove_file(t.path().join(k.as_str())).unwrap();
        assert!(matches!(repair(&torn, &name(&k)), Err(RepairError::Changed(_))), "deleted");
    }

    #[test]
    fn an_existing_side_file_or_a_symlink_at_its_name_is_never_replaced_or_followed() {
        let (t, k) = setup("chats/s.jsonl", BODY);
        let torn = find(t.path(), &k).unwrap().unwrap();
        let side = name(&k);
        std::fs::write(t.path().join("chats").join(&side), b"earlier").unwrap();
        let e = repair(&torn, &side).unwrap_err();
        assert!(matches!(e, RepairError::SideFile { .. }), "{e:?}");
        assert_eq!(std::fs::read(t.path().join("chats").join(&side)).unwrap(), b"earlier");
        assert_eq!(transcript(&t, &k), BODY, "the transcript is not touched");
        let target = t.path().join("elsewhere");
        let link = format!("{side}-link");
        std::os::unix::fs::symlink(&target, t.path().join("chats").join(&link)).unwrap();
        assert!(matches!(repair(&torn, &link), Err(RepairError::SideFile { .. })));
        assert!(!target.exists(), "a dangling symlink is not followed");
        assert_eq!(transcript(&t, &k), BODY);
    }

    #[test]
    fn a_symlinked_transcript_or_directory_is_unsafe_not_repaired() {
        let (t, _) = setup("real/s.jsonl", BODY);
        std::os::unix::fs::symlink(t.path().join("real"), t.path().join("chats")).unwrap();
        let k = TranscriptKey::parse("chats/s.jsonl").unwrap();
        assert!(matches!(find(t.path(), &k), Err(LockError::TranscriptUnsafe { .. })));
        assert!(matches!(kept_cut_files(t.path(), &k), Err(LockError::TranscriptUnsafe { .. })));
    }
}
