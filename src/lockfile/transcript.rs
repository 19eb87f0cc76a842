//! The transcript proof read (seed 001 "Sealing" step 2, "Certified takeover" step 2;
//! QWEN_FORMAT §2.3, §4).
//!
//! A proof says: the file the key names beneath R is absent, or it is one regular file of
//! `byte_length` bytes ending in a newline whose SHA-256 is `sha256`. The file is opened once
//! without following a symlink in any component, hashed through that descriptor in one
//! streaming pass (constant memory), and its full metadata is compared before and after. The
//! descriptor is kept open so a seal or takeover can [`ProofRead::revalidate`] inside its
//! transition claim that nothing changed — not the inode the path names, not the size, not the
//! timestamps, not the link count.
//!
//! Errors never name the transcript path (seed 001 "Failure contract").

use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use super::error::{LockError, TranscriptChange, Unavailable};
use super::paths::{encode_uri_component, sanitize_cwd};
use super::record::{SealInfo, SealedIdentity, TranscriptProof};
use super::sys::{self, Beneath, Fingerprint, Kind, ReadMode};

/// SHA-256 of empty input: the digest of an absent or empty transcript.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Read size for hashing: each `pread` fills this buffer, then SHA-256 reads it.
///
/// Chosen by measurement (`cargo bench --bench hash_buffer`, which `benches/seal_takeover.sh`
/// runs): 1 GiB warm transcript, 2-core EPYC with SHA-NI and a 1 MiB L2 per core, medians
/// of 5 alternated runs, two runs. Every size from 32 KiB to 4 MiB hashed within 3% of the
/// others (0.57–0.59 s of CPU against openssl's 0.64 s on a quiet machine); 16 KiB paid
/// 3–5% more in syscalls. So the L2 argument (a buffer larger than L2 sends every byte
/// through memory twice: the kernel's copy, then the hash) did not decide it on this
/// machine, though it may elsewhere: 128 KiB is the smallest size without syscall overhead,
/// stays well inside any L2, and keeps the hash's memory constant and small (the old 1 MiB
/// was an eighth of the process's peak RSS budget).
pub const HASH_BUFFER_BYTES: usize = 128 << 10;

/// A transcript path relative to the runtime directory, normalized and `/`-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptKey(String);

impl TranscriptKey {
    /// Validates and normalizes a relative key: no absolute path, no `..`, no empty result.
    /// `.` components and repeated separators are dropped, as `path.relative` would.
    pub fn parse(key: &str) -> Result<TranscriptKey, LockError> {
        let unsafe_key = |why: &str| LockError::TranscriptUnsafe { reason: why.into() };
        let p = Path::new(key);
        let mut parts = Vec::new();
        for c in p.components() {
            match c {
                Component::Normal(s) => {
                    parts.push(s.to_str().ok_or_else(|| unsafe_key("the transcript key is not UTF-8"))?.to_owned())
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(unsafe_key("the transcript key leaves the runtime directory (`..`)"));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(unsafe_key("the transcript key must be relative to the runtime directory"));
                }
            }
        }
        if parts.is_empty() {
            return Err(unsafe_key("the transcript key is empty"));
        }
        Ok(TranscriptKey(parts.join("/")))
    }

    /// writerctl's default: `chats/<enc(session)>.jsonl`.
    ///
    /// The session id is encoded as in the lock file name, so an id containing `/` or `..`
    /// can never point the transcript elsewhere; for the UUID ids qwen-code uses, the
    /// encoding is the identity and the key is qwen's.
    pub fn default_for(session_id: &str) -> Result<TranscriptKey, LockError> {
        TranscriptKey::parse(&format!("chats/{}.jsonl", encode_uri_component(session_id)))
    }

    /// qwen-code's layout: `projects/<sanitizeCwd(project_root)>/chats/<session>.jsonl`.
    ///
    /// Why the raw id: qwen builds this path with ``path.join(projectDir, 'chats',
    /// `${sessionId}.jsonl`)``, no encoding, and a seal must name the file qwen reads (`x y`
    /// is `chats/x y.jsonl`, not `chats/x%20y.jsonl`). Since nothing encodes it, an id that
    /// is not exactly one safe path component is refused here, before anything is touched:
    /// `a/b` would name a file in a subdirectory and `..` (a `...jsonl` to node, but a
    /// component we will not second-guess) is refused with `.`, the empty id and NUL.
    pub fn for_project(project_root: &Path, session_id: &str) -> Result<TranscriptKey, LockError> {
        let root =
            project_root.to_str().ok_or_else(|| LockError::InvalidArgument("--project-root is not UTF-8".into()))?;
        if session_id.is_empty() || session_id == "." || session_id == ".." || session_id.contains(['/', '\0']) {
            return Err(LockError::InvalidArgument(format!(
                "with --project-root the session id is the transcript's file name, as in qwen-code, so it must be \
                 one path component (not empty, `.` or `..`, no `/` or NUL): {session_id:?}"
            )));
        }
        TranscriptKey::parse(&format!("projects/{}/chats/{session_id}.jsonl", sanitize_cwd(root)))
    }

    /// The key as recorded in a sealed proof (`relative_path`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A completed proof read, with the descriptor kept open for revalidation.
#[derive(Debug)]
pub struct ProofRead {
    /// The proof.
    pub proof: TranscriptProof,
    root: OwnedFd,
    /// The kept-open descriptor and its fingerprint; `None` when the transcript is absent.
    held: Option<(OwnedFd, Fingerprint)>,
    force_walk: bool,
    /// How the bytes were read: past the client cache on a network or FUSE filesystem.
    mode: ReadMode,
    /// The file's timestamps were not clearly older than the read (see [`is_racy`]).
    racy: bool,
    /// Whether the racily-clean rule already made a revalidation compare content.
    rehashed: std::cell::Cell<bool>,
}

/// The racily-clean margin for a filesystem whose timestamps prove sub-millisecond
/// granularity: Linux stamps files from a coarse clock (one tick, up to 10 ms), so a write
/// in the same tick as our read can leave mtime and ctime unchanged; 50 ms covers the tick.
const RACY_MARGIN_FINE: std::time::Duration = std::time::Duration::from_millis(50);

/// The racily-clean margin everywhere else: ext4 with 128-byte inodes, ext3, NFSv3 servers
/// and FAT's ctime keep whole seconds, FAT's mtime even seconds. A shorter margin on such a
/// filesystem lets a same-length rewrite within the same second pass as unchanged.
const RACY_MARGIN_COARSE: std::time::Duration = std::time::Duration::from_secs(2);

/// The margin the transcript's own timestamps allow (the filesystem's granularity, measured
/// on the file itself). The kernel truncates every timestamp to a multiple of the
/// filesystem's granularity, and every granularity in use that is not finer than a
/// millisecond is a whole number of milliseconds (exFAT 10 ms, ext3 and 128-byte-inode ext4
/// 1 s, FAT 2 s). So mtime and ctime whose nanoseconds are not whole milliseconds prove a
/// sub-millisecond filesystem. Anything else — including the one-in-a-million exact
/// millisecond on a fine filesystem — gets the coarse margin: it costs at most one more hash
/// pass, never a missed change.
fn racy_margin(fp: &Fingerprint) -> std::time::Duration {
    let sub_ms = |(_, nsec): (i64, u64)| nsec % 1_000_000 != 0;
    if sub_ms(fp.mtime) && sub_ms(fp.ctime) { RACY_MARGIN_FINE } else { RACY_MARGIN_COARSE }
}

/// git's "racily clean" rule: if the file changed within the timestamp granularity of the
/// moment we started reading it, an identical fingerprint later does not prove identical
/// content, so revalidation must rehash. A timestamp in the future (clock skew with a file
/// server) is racy too.
fn is_racy(fp: &Fingerprint, started: std::time::SystemTime) -> bool {
    let newest = fp.mtime.max(fp.ctime);
    let stamp = std::time::UNIX_EPOCH
        + std::time::Duration::from_secs(newest.0.max(0) as u64)
        + std::time::Duration::from_nanos(newest.1);
    stamp + racy_margin(fp) >= started
}

fn changed(why: impl Into<String>) -> LockError {
    LockError::TranscriptChanged { reason: TranscriptChange::Described(why.into()) }
}

/// Proof-read options.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProofOptions {
    /// Use the component-wise `O_NOFOLLOW` walk even where `openat2` exists (tests).
    pub force_walk: bool,
}

/// Reads the proof of the transcript at `key` beneath `runtime_dir`. `progress(done, total)`
/// is called as bytes are hashed (the command layer draws a bar; the engine never prints).
pub fn read_proof(
    runtime_dir: &Path,
    key: &TranscriptKey,
    opts: ProofOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ProofRead, LockError> {
    let started = std::time::SystemTime::now();
    let root = sys::open_root(runtime_dir).map_err(|e| LockError::io("open runtime directory", e))?;
    let fd = match sys::open_beneath(&root, key.as_str(), sys::transcript_read_flags(), opts.force_walk)
        .map_err(|e| LockError::io("open transcript", e))?
    {
        Beneath::Absent => {
            let proof = TranscriptProof {
                relative_path: key.as_str().to_owned(),
                exists: false,
                byte_length: 0,
                sha256: EMPTY_SHA256.to_owned(),
            };
            return Ok(ProofRead {
                proof,
                root,
                held: None,
                force_walk: opts.force_walk,
                mode: ReadMode::Cached,
                racy: false,
                rehashed: false.into(),
            });
        }
        Beneath::Unsafe(why) => return Err(LockError::TranscriptUnsafe { reason: why.into() }),
        Beneath::Opened(fd) => fd,
    };
    // Issue 27, reproduction 5: on a network or FUSE filesystem, size, times and bytes are
    // read from the server (see `sys::read_mode_for`), never from this client's cache.
    let mode = sys::read_mode_for(&fd).map_err(|e| LockError::io("prepare the transcript read", e))?;
    let before = sys::fingerprint_for(&fd, mode).map_err(|e| LockError::io("fstat transcript", e))?;
    if before.kind() != Kind::Regular {
        return Err(LockError::TranscriptUnsafe {
            reason: format!("the transcript is a {}", before.kind().describe()),
        });
    }
    if before.ino == 0 {
        return Err(LockError::unavailable(Unavailable::TranscriptIdentity));
    }
    check_path_identity(&root, key, &before, opts.force_walk, mode)?;
    check_transcript_home(&root, runtime_dir, key, Some(&fd))?;
    check_trailing_newline(&fd, mode, before.size)?;
    let sha256 = hash_exactly(&fd, mode, before.size, progress)?;
    let beyond = bytes_beyond_size(&fd, mode, before.size)?;
    let after = sys::fingerprint_for(&fd, mode).map_err(|e| LockError::io("fstat transcript", e))?;
    if after != before {
        return Err(changed("the transcript changed while it was hashed"));
    }
    if beyond {
        return Err(LockError::TranscriptUnsafe {
            reason: "the transcript yields more bytes than its size says (a procfs, sysfs or device-backed file); its size cannot be certified".into(),
        });
    }
    check_path_identity(&root, key, &before, opts.force_walk, mode)?;
    let proof =
        TranscriptProof { relative_path: key.as_str().to_owned(), exists: true, byte_length: before.size, sha256 };
    // On a network or FUSE filesystem the timestamps are stamped by the server's clock and
    // compared here with ours: a server clock behind ours by more than the margin would make a
    // write during our read look old, and the revalidation inside the transition claim would
    // trust an unchanged fingerprint. No clock is compared there: the content is always hashed
    // again.
    let racy = mode != ReadMode::Cached || is_racy(&before, started);
    Ok(ProofRead {
        proof,
        root,
        held: Some((fd, before)),
        force_walk: opts.force_walk,
        mode,
        racy,
        rehashed: false.into(),
    })
}

/// The cheap acquisition-time check (QWEN_FORMAT §5.3 step 3, without the digest a
/// one-shot CLI would throw away): the transcript is absent, or a regular file reached
/// without symlinks, on a filesystem with inode numbers, whose last line is complete.
///
/// Why at acquisition: a writer that appends after an incomplete last line (left by an
/// interrupted append) would glue two records together; qwen refuses such a transcript with
/// `session_transcript_changed` and gives the lock back, and so do we.
pub fn check_shape(runtime_dir: &Path, key: &TranscriptKey) -> Result<(), LockError> {
    match tail_of(runtime_dir, key)? {
        Tail::Clean => Ok(()),
        // Issue 38, reproduction 7: no seal is involved here, so the error says where the
        // line breaks off (and its hint names the repair), not that a proof stopped matching.
        Tail::Torn { complete, length } => {
            Err(LockError::TranscriptChanged { reason: TranscriptChange::Torn { complete, length } })
        }
    }
}

/// How a transcript ends: absent, empty or ending in `\n` is clean; anything else is torn
/// (a writer died mid-append).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Nothing to repair.
    Clean,
    /// The last line is incomplete.
    Torn {
        /// Where the last complete line ends: the offset just past the last `\n` (0 when
        /// the file holds no `\n` at all). The bytes before it are whole lines.
        complete: u64,
        /// The file's length: bytes `complete..length` are the incomplete line.
        length: u64,
    },
}

impl Tail {
    /// `clean` or `torn` (`WRITERCTL_TRANSCRIPT_TAIL`, `transcript_tail`).
    pub fn as_str(self) -> &'static str {
        match self {
            Tail::Clean => "clean",
            Tail::Torn { .. } => "torn",
        }
    }
}

/// [`check_shape`]'s checks, reporting a torn tail instead of refusing it: a crashed
/// writer's transcript, reclaimed under a pod proof rule (issue 18 item 3), is handed to the
/// next writer as it is — never modified — with its tail reported so the writer can repair.
pub fn tail_of(runtime_dir: &Path, key: &TranscriptKey) -> Result<Tail, LockError> {
    Ok(match open_tail(runtime_dir, key)? {
        Some(opened) => opened.tail,
        None => Tail::Clean,
    })
}

/// A transcript opened for a look at its tail: the descriptor (read-only, beneath `R`
/// without symlinks, on its directory's mount, in trusted directories), how it is read,
/// its identity when opened, and how it ends.
#[derive(Debug)]
pub struct OpenedTail {
    /// The runtime directory's descriptor the transcript was opened beneath.
    pub root: OwnedFd,
    /// The transcript, read-only.
    pub fd: OwnedFd,
    /// How its bytes are read (past the client cache on a network filesystem).
    pub mode: ReadMode,
    /// Its metadata when the tail was read.
    pub fingerprint: Fingerprint,
    /// How it ends.
    pub tail: Tail,
}

/// [`check_shape`]'s checks, keeping the descriptor: `None` when the transcript is absent.
/// `tail_repair` reads the cut bytes and re-checks the identity through this very
/// descriptor, so what it copies and truncates is the file these checks accepted.
pub fn open_tail(runtime_dir: &Path, key: &TranscriptKey) -> Result<Option<OpenedTail>, LockError> {
    let root = sys::open_root(runtime_dir).map_err(|e| LockError::io("open runtime directory", e))?;
    let fd = match sys::open_beneath(&root, key.as_str(), sys::transcript_read_flags(), false)
        .map_err(|e| LockError::io("open transcript", e))?
    {
        Beneath::Absent => return Ok(None),
        Beneath::Unsafe(why) => return Err(LockError::TranscriptUnsafe { reason: why.into() }),
        Beneath::Opened(fd) => fd,
    };
    let mode = sys::read_mode_for(&fd).map_err(|e| LockError::io("prepare the transcript read", e))?;
    let fp = sys::fingerprint_for(&fd, mode).map_err(|e| LockError::io("fstat transcript", e))?;
    if fp.kind() != Kind::Regular {
        return Err(LockError::TranscriptUnsafe { reason: format!("the transcript is a {}", fp.kind().describe()) });
    }
    if fp.ino == 0 {
        return Err(LockError::unavailable(Unavailable::TranscriptIdentity));
    }
    check_transcript_home(&root, runtime_dir, key, Some(&fd))?;
    let tail = tail_at(&fd, mode, fp.size)?;
    Ok(Some(OpenedTail { root, fd, mode, fingerprint: fp, tail }))
}

/// How the first `size` bytes of `fd` end.
pub fn tail_at(fd: &OwnedFd, mode: ReadMode, size: u64) -> Result<Tail, LockError> {
    if ends_clean(fd, mode, size)? {
        return Ok(Tail::Clean);
    }
    Ok(Tail::Torn { complete: last_line_end(fd, mode, size, TAIL_CHUNK_BYTES)?, length: size })
}

/// Read size of the backwards search for the last `\n`. A torn line is usually one
/// record's worth of JSON (a few KiB; a tool's output can make it megabytes): 64 KiB finds
/// most in one `pread` and keeps memory fixed whatever the line's length.
const TAIL_CHUNK_BYTES: usize = 64 << 10;

/// The offset just past the last `\n` among the first `size` bytes of `fd` (0 when there
/// is none), read backwards from `size` in `chunk`-byte reads.
///
/// Why backwards and bounded: a transcript is append-only and may be gigabytes; what is
/// needed is only the incomplete line at its end. The cost is the torn line's length
/// rounded up to one chunk, never the file's, and memory is one chunk. A read that comes
/// back short means the file shrank under us: changed.
fn last_line_end(fd: &OwnedFd, mode: ReadMode, size: u64, chunk: usize) -> Result<u64, LockError> {
    let mut buf = vec![0u8; chunk.min(size.max(1) as usize)];
    let mut scratch = None;
    let mut end = size;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let want = (end - start) as usize;
        let n = sys::pread_mode(fd, mode, &mut buf[..want], start, &mut scratch)
            .map_err(|e| LockError::io("read transcript tail", e))?;
        if n != want {
            return Err(changed("the transcript was truncated"));
        }
        if let Some(i) = buf[..want].iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Issue 22: the directories from `R` down to the transcript must be trusted (see
/// `check_transcript_home`). Acquisition checks this before it writes anything, so an
/// untrusted `R/chats` is refused with nothing written rather than after the lock was
/// installed and removed again.
pub fn check_transcript_dirs(runtime_dir: &Path, key: &TranscriptKey) -> Result<(), LockError> {
    let root = sys::open_root(runtime_dir).map_err(|e| LockError::io("open runtime directory", e))?;
    check_transcript_home(&root, runtime_dir, key, None)
}

/// Issue 22: the transcript's directories and mount.
///
/// * Every directory from `R` (exclusive) down to the transcript must be trusted
///   ([`super::trust`]): whoever can rename in one of them can swap the transcript under a
///   seal. A directory that does not exist yet is fine (nothing is in it).
/// * The transcript must sit on its directory's mount ([`sys::same_mount`]): a file
///   bind-mounted over the transcript path (a procfs file, say) is reached without a
///   symlink, but its size need not describe its bytes, and a seal would certify "0 bytes"
///   for a file that yields 124.
fn check_transcript_home(
    root: &OwnedFd,
    runtime_dir: &Path,
    key: &TranscriptKey,
    file: Option<&OwnedFd>,
) -> Result<(), LockError> {
    let parts: Vec<&str> = key.as_str().split('/').collect();
    let mut parent = None;
    for depth in 1..parts.len() {
        let prefix = parts[..depth].join("/");
        match sys::open_dir_beneath(root, &prefix).map_err(|e| LockError::io("open transcript directory", e))? {
            Beneath::Opened(fd) => {
                let meta = sys::meta_of(&fd).map_err(|e| LockError::io("fstat transcript directory", e))?;
                super::trust::require_trusted("transcript directory", &runtime_dir.join(&prefix), &meta)?;
                parent = Some(fd);
            }
            Beneath::Absent => return Ok(()),
            Beneath::Unsafe(why) => return Err(LockError::TranscriptUnsafe { reason: why.into() }),
        }
    }
    let Some(file) = file else { return Ok(()) };
    let parent = match parent {
        Some(fd) => fd,
        None => match sys::open_dir_beneath(root, ".").map_err(|e| LockError::io("open runtime directory", e))? {
            Beneath::Opened(fd) => fd,
            _ => return Err(LockError::TranscriptUnsafe { reason: "the runtime directory cannot be opened".into() }),
        },
    };
    if !sys::same_mount(file, &parent).map_err(|e| LockError::io("statx transcript", e))? {
        return Err(LockError::TranscriptUnsafe {
            reason: "the transcript is on another mount than its directory (a file bind-mounted over it?)".into(),
        });
    }
    Ok(())
}

/// Issue 22: does the file yield a byte at offset `size`? A regular file that does after
/// its `fstat` said `size` either grew (the fingerprint comparison that follows reports
/// that) or lies about its size (procfs, sysfs): then the proof's length and digest would
/// describe bytes that are not the file's.
fn bytes_beyond_size(fd: &OwnedFd, mode: ReadMode, size: u64) -> Result<bool, LockError> {
    let mut probe = [0u8; 1];
    let n = sys::pread_mode(fd, mode, &mut probe, size, &mut None).map_err(|e| LockError::io("read transcript", e))?;
    Ok(n > 0)
}

impl ProofRead {
    /// Makes the hashed bytes durable before anything certifies them (seed 001 "Sealing":
    /// the writer drains *durably*). Without it, a power loss after a durable seal can leave a
    /// transcript shorter than its proof, and every later takeover fails closed forever.
    /// fsync through the kept-open descriptor: it flushes the file's data whoever wrote it,
    /// and it is the very inode the proof describes.
    pub fn sync(&self) -> Result<(), LockError> {
        let Some((fd, _)) = &self.held else { return Ok(()) };
        crate::failpoint!("transcript.fsync");
        sys::fsync_fd(fd).map_err(|e| LockError::io("fsync transcript", e))
    }

    /// Re-checks that nothing changed since the read: the kept-open descriptor's full metadata
    /// is identical and the key still names that same inode (or is still absent). A
    /// racily-clean read (see `is_racy`) is rehashed the first time only: that pass runs inside
    /// the caller's transition claim, which is where the seed requires the proof to hold; later
    /// checks compare metadata, as for any other read.
    pub fn revalidate(&self) -> Result<(), LockError> {
        let key = TranscriptKey(self.proof.relative_path.clone());
        match &self.held {
            None => match sys::identity_beneath(&self.root, key.as_str(), self.force_walk) {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err(changed("a transcript appeared where none existed")),
                Err(e) => Err(path_recheck_error(e)),
            },
            Some((fd, fp)) => {
                let now = sys::fingerprint_for(fd, self.mode).map_err(|e| LockError::io("fstat transcript", e))?;
                if now != *fp {
                    return Err(changed(describe_difference(fp, &now)));
                }
                check_path_identity(&self.root, &key, fp, self.force_walk, self.mode)?;
                if self.racy && !self.rehashed.get() {
                    // Same metadata proves nothing for a file touched in the same clock tick
                    // as our read: compare the content itself.
                    self.rehashed.set(true);
                    let again = hash_exactly(fd, self.mode, fp.size, &mut |_, _| {})?;
                    if again != self.proof.sha256 {
                        return Err(changed("same length, different content (SHA-256 differs)"));
                    }
                    let after =
                        sys::fingerprint_for(fd, self.mode).map_err(|e| LockError::io("fstat transcript", e))?;
                    if after != *fp {
                        return Err(changed(describe_difference(fp, &after)));
                    }
                }
                Ok(())
            }
        }
    }

    /// How the transcript's bytes were read: [`ReadMode::Direct`] or [`ReadMode::DropPages`]
    /// on a network or FUSE filesystem, [`ReadMode::Cached`] on a local one.
    pub fn read_mode(&self) -> ReadMode {
        self.mode
    }

    /// A line for the operator when the bytes could not be read past the client cache with
    /// `O_DIRECT` (the filesystem refused it) and dropped cached pages had to do.
    pub fn cache_note(&self) -> Option<&'static str> {
        (self.mode == ReadMode::DropPages).then_some(
            "the transcript's filesystem refused O_DIRECT; cached pages were dropped before each read instead, which a page mapped or dirtied on this host survives",
        )
    }

    /// The transcript's hard metadata for writerctl's sealed-record extension.
    pub fn identity(&self) -> Option<SealedIdentity> {
        self.held.as_ref().map(|(_, fp)| SealedIdentity {
            ino: fp.ino,
            mode: fp.mode,
            uid: fp.uid,
            gid: fp.gid,
            nlink: fp.nlink,
        })
    }

    /// Compares the transcript's hard metadata with what a writerctl seal recorded.
    pub fn matches_identity(&self, recorded: &SealedIdentity) -> Result<(), LockError> {
        let Some(now) = self.identity() else { return Err(changed("the transcript was deleted")) };
        if now.ino != recorded.ino {
            return Err(changed("the transcript was replaced since the seal"));
        }
        if now.nlink != recorded.nlink {
            return Err(changed(
                "the transcript's link count changed since the seal (a hard link was added or removed)",
            ));
        }
        if (now.mode, now.uid, now.gid) != (recorded.mode, recorded.uid, recorded.gid) {
            return Err(changed("the transcript's permissions or owner changed since the seal"));
        }
        Ok(())
    }

    /// Checks this read against a sealed record: the four proof fields, plus writerctl's
    /// identity extension when the seal carries one.
    pub fn matches_seal(&self, seal: &SealInfo) -> Result<(), LockError> {
        self.matches(&seal.transcript)?;
        match &seal.identity {
            Some(id) => self.matches_identity(id),
            None => Ok(()),
        }
    }

    /// Compares this proof with a recorded one, field by field (QWEN_FORMAT §2.3).
    pub fn matches(&self, recorded: &TranscriptProof) -> Result<(), LockError> {
        let p = &self.proof;
        if p.relative_path != recorded.relative_path {
            return Err(changed("the sealed proof names another transcript key"));
        }
        if p.exists != recorded.exists {
            return Err(changed(if p.exists {
                "a transcript now exists where none was sealed"
            } else {
                "the transcript was deleted"
            }));
        }
        if p.byte_length != recorded.byte_length {
            return Err(changed(format!("length {} bytes, sealed {} bytes", p.byte_length, recorded.byte_length)));
        }
        if p.sha256 != recorded.sha256 {
            return Err(changed("same length, different content (SHA-256 differs)"));
        }
        Ok(())
    }
}

fn describe_difference(was: &Fingerprint, now: &Fingerprint) -> String {
    if (was.dev, was.ino) != (now.dev, now.ino) {
        "the transcript was replaced".into()
    } else if was.size != now.size {
        format!("the transcript length changed ({} -> {} bytes)", was.size, now.size)
    } else if was.nlink != now.nlink {
        "the transcript's link count changed (a hard link was added or removed)".into()
    } else if (was.mode, was.uid, was.gid) != (now.mode, now.uid, now.gid) {
        "the transcript's permissions or owner changed".into()
    } else {
        "the transcript was modified (timestamps changed)".into()
    }
}

/// The key must still name the inode we hold, as a regular non-symlink file.
fn check_path_identity(
    root: &OwnedFd,
    key: &TranscriptKey,
    held: &Fingerprint,
    force_walk: bool,
    mode: ReadMode,
) -> Result<(), LockError> {
    if mode != ReadMode::Cached {
        revalidate_parent(root, key)?;
    }
    match sys::identity_beneath(root, key.as_str(), force_walk) {
        Ok(Some(now)) if now.dev == held.dev && now.ino == held.ino && now.kind() == Kind::Regular => Ok(()),
        Ok(Some(_)) => Err(changed("the transcript path now names another file")),
        Ok(None) => Err(changed("the transcript was deleted")),
        Err(e) => Err(path_recheck_error(e)),
    }
}

/// On a network filesystem, makes the client fetch the transcript directory's attributes
/// from the server before the key is resolved again: when another host renamed a file into
/// the transcript's name, the directory changed, and NFS then stops trusting its cached
/// name-to-file entries (`nfs_check_verifier`) and looks the name up on the server.
fn revalidate_parent(root: &OwnedFd, key: &TranscriptKey) -> Result<(), LockError> {
    let parent = key.as_str().rsplit_once('/').map_or(".", |(dir, _)| dir);
    match sys::open_dir_beneath(root, parent).map_err(|e| LockError::io("open transcript directory", e))? {
        Beneath::Opened(fd) => sys::revalidate_fd(&fd).map_err(|e| LockError::io("revalidate transcript directory", e)),
        Beneath::Absent => Ok(()),
        Beneath::Unsafe(why) => Err(LockError::TranscriptUnsafe { reason: why.into() }),
    }
}

/// Issue 22: only a symlink (or a non-directory) on the path is evidence of tampering; any
/// other failure of the re-check (descriptors exhausted, EIO) proves nothing about the path
/// and is reported as what it is, unavailable with its cause, or an environment error.
fn path_recheck_error(e: std::io::Error) -> LockError {
    if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        changed("the transcript path now contains a symlink")
    } else {
        LockError::io("re-check the transcript path", e)
    }
}

/// QWEN_FORMAT §4.3: a non-empty transcript must end in `\n`; an incomplete last line
/// means a writer was interrupted mid-append, and such a tail is never certified.
fn check_trailing_newline(fd: &OwnedFd, mode: ReadMode, size: u64) -> Result<(), LockError> {
    if ends_clean(fd, mode, size)? {
        Ok(())
    } else {
        Err(changed("the transcript does not end with a newline (an incomplete last line)"))
    }
}

/// True when the first `size` bytes are empty or end in `\n`; a file shorter than `size`
/// was truncated (changed).
fn ends_clean(fd: &OwnedFd, mode: ReadMode, size: u64) -> Result<bool, LockError> {
    if size == 0 {
        return Ok(true);
    }
    let mut last = [0u8; 1];
    let n = sys::pread_mode(fd, mode, &mut last, size - 1, &mut None)
        .map_err(|e| LockError::io("read transcript tail", e))?;
    if n != 1 {
        return Err(changed("the transcript was truncated"));
    }
    Ok(last[0] == b'\n')
}

/// Complete hashing passes over a transcript in this process (a proof read is one; a
/// racily-clean revalidation adds one). Diagnostics only: `takeover --json` reports it so
/// a benchmark can say how often the second pass happened.
static HASH_PASSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many complete hashing passes this process has made (see `HASH_PASSES`).
pub fn hash_passes() -> u64 {
    HASH_PASSES.load(std::sync::atomic::Ordering::Relaxed)
}

/// The buffer [`hash_exactly`] reads into: [`HASH_BUFFER_BYTES`] (less for a smaller file,
/// in whole pages), starting on a page boundary.
///
/// Why page-aligned, never where the allocator happens to put it (issue 38): a `pread` from
/// the page cache is the kernel copying from page-aligned cache pages into this buffer, and
/// when the buffer starts 1 to 31 bytes past a page boundary every load of that copy lands
/// 4 KiB apart from a store just issued (4K aliasing), and the CPU stalls on the false
/// dependency. glibc serves a 128 KiB request with a fresh `mmap` and returns its address
/// plus 16 — exactly that case — unless its heap history happens to have the space: the
/// same 8,192 reads of a 1 GiB transcript cost 0.5 s of system time that way against 0.1 s
/// on the heap, which made `takeover` 1.3x openssl's time while `seal`, whose heap differed,
/// stayed at 0.9x. A page-aligned buffer (source and destination at the same page offset)
/// takes the fast copy whatever ran before.
fn hash_buffer(size: u64) -> sys::AlignedBuf {
    sys::AlignedBuf::new(HASH_BUFFER_BYTES.min(size.max(1) as usize))
}

/// SHA-256 of exactly bytes `[0, size)` through `fd`, one pass, fixed buffer. A read that
/// ends early means the file shrank: changed.
fn hash_exactly(
    fd: &OwnedFd,
    mode: ReadMode,
    size: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<String, LockError> {
    let mut hasher = Sha256::new();
    let mut aligned = hash_buffer(size);
    let buf = aligned.as_mut_slice();
    // Direct reads go through one aligned buffer, allocated once per pass.
    let mut scratch = None;
    let mut offset = 0u64;
    while offset < size {
        let want = buf.len().min((size - offset) as usize);
        let n = sys::pread_mode(fd, mode, &mut buf[..want], offset, &mut scratch)
            .map_err(|e| LockError::io("read transcript", e))?;
        if n == 0 {
            return Err(changed("the transcript was truncated while it was hashed"));
        }
        hasher.update(&buf[..n]);
        offset += n as u64;
        progress(offset, size);
    }
    HASH_PASSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(hex(&hasher.finalize()))
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use std::io::Write;

    fn setup(content: &[u8]) -> (tempfile::TempDir, TranscriptKey) {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("chats")).unwrap();
        std::fs::write(t.path().join("chats/s.jsonl"), content).unwrap();
        (t, TranscriptKey::parse("chats/s.jsonl").unwrap())
    }

    fn read(t: &tempfile::TempDir, k: &TranscriptKey, walk: bool) -> Result<ProofRead, LockError> {
        read_proof(t.path(), k, ProofOptions { force_walk: walk }, &mut |_, _| {})
    }

    #[test]
    fn key_normalization_and_refusals() {
        assert_eq!(TranscriptKey::parse("chats//./s.jsonl").unwrap().as_str(), "chats/s.jsonl");
        for bad in ["", ".", "/abs/x", "../x", "chats/../../x", "a/.."] {
            assert!(TranscriptKey::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            TranscriptKey::for_project(Path::new("/home/u/repo"), "id").unwrap().as_str(),
            "projects/-home-u-repo/chats/id.jsonl"
        );
        assert!(TranscriptKey::default_for("..").is_ok(), "`...jsonl` is a plain name");
        assert_eq!(TranscriptKey::default_for("../x").unwrap().as_str(), "chats/..%2Fx.jsonl");
        assert_eq!(TranscriptKey::default_for("a/b").unwrap().as_str(), "chats/a%2Fb.jsonl");
    }

    #[test]
    fn project_keys_match_qwen_code() {
        // Each expected key is what qwen-code's `Storage.getProjectDir` plus
        // ``path.join(…, 'chats', `${id}.jsonl`)`` gives for the same root and id (checked
        // with node).
        let cases = [
            ("/home/user/\u{1F600}proj", "s", "projects/-home-user---proj/chats/s.jsonl"),
            ("/src/\u{20000}x", "s", "projects/-src---x/chats/s.jsonl"),
            ("/cafe\u{301}", "s", "projects/-cafe-/chats/s.jsonl"),
            ("/caf\u{E9}", "s", "projects/-caf-/chats/s.jsonl"),
            ("/r", "x y", "projects/-r/chats/x y.jsonl"),
            ("/r", "100%", "projects/-r/chats/100%.jsonl"),
            ("/r", "\u{1F600}", "projects/-r/chats/\u{1F600}.jsonl"),
        ];
        for (root, id, key) in cases {
            assert_eq!(TranscriptKey::for_project(Path::new(root), id).unwrap().as_str(), key, "{root} {id}");
        }
        for bad in ["", ".", "..", "a/b", "/", "a\0b"] {
            assert!(
                matches!(TranscriptKey::for_project(Path::new("/r"), bad), Err(LockError::InvalidArgument(_))),
                "{bad:?}"
            );
        }
        // Without a project root the default key still encodes the id (writerctl's own layout).
        assert_eq!(TranscriptKey::default_for("x y").unwrap().as_str(), "chats/x%20y.jsonl");
    }

    #[test]
    fn digest_matches_an_independent_sha256() {
        let body = b"{\"a\":1}\n{\"b\":2}\n";
        let (t, k) = setup(body);
        for walk in [false, true] {
            let p = read(&t, &k, walk).unwrap();
            assert_eq!(p.proof.byte_length, body.len() as u64);
            assert!(p.proof.exists);
            assert_eq!(p.proof.sha256, hex(&Sha256::digest(body)));
            p.revalidate().unwrap();
        }
    }

    #[test]
    fn multi_buffer_files_hash_in_one_pass() {
        let mut body = vec![b'x'; HASH_BUFFER_BYTES * 2 + 17];
        *body.last_mut().unwrap() = b'\n';
        let (t, k) = setup(&body);
        let mut calls = 0;
        let p = read_proof(t.path(), &k, ProofOptions::default(), &mut |_, _| calls += 1).unwrap();
        assert_eq!(p.proof.sha256, hex(&Sha256::digest(&body)));
        assert_eq!(calls, 3);
    }

    /// Issue 38: the hash buffer starts on a page boundary whatever the allocator would give.
    /// The old `vec![0u8; 128 KiB]` came from a fresh glibc `mmap` at a page + 16 bytes for
    /// a large transcript (this test's 1 GiB size), the placement that made every `pread`
    /// copy 3x slower.
    #[test]
    fn the_hash_buffer_starts_on_a_page_at_every_size() {
        for size in [0u64, 1, 4097, HASH_BUFFER_BYTES as u64 - 1, HASH_BUFFER_BYTES as u64 + 1, 1 << 30] {
            let mut b = hash_buffer(size);
            let s = b.as_mut_slice();
            assert_eq!(s.as_ptr() as usize % 4096, 0, "size {size}");
            assert!(s.len() as u64 >= size.clamp(1, HASH_BUFFER_BYTES as u64), "size {size}: {} bytes", s.len());
            assert!(s.len() <= HASH_BUFFER_BYTES, "size {size}: {} bytes", s.len());
        }
    }

    #[test]
    fn past_the_cache_reads_hash_the_same_bytes_and_a_local_file_stays_cached() {
        // The network paths (O_DIRECT through an aligned bounce buffer, or dropped pages)
        // must certify exactly what the plain path does, tail and newline rules included.
        let mut body: Vec<u8> = (0..(HASH_BUFFER_BYTES * 2 + 4097)).map(|i| b'a' + (i % 26) as u8).collect();
        *body.last_mut().unwrap() = b'\n';
        let (t, k) = setup(&body);
        let want = hex(&Sha256::digest(&body));
        let p = read(&t, &k, false).unwrap();
        assert_eq!(p.read_mode(), ReadMode::Cached, "a local disk keeps the page cache");
        assert!(p.cache_note().is_none());
        let path = t.path().join("chats/s.jsonl");
        let plain = rustix::fs::open(&path, rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        let direct = rustix::fs::open(&path, rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        let fl = rustix::fs::fcntl_getfl(&direct).unwrap();
        let _ = rustix::fs::fcntl_setfl(&direct, fl | rustix::fs::OFlags::DIRECT);
        for (mode, fd) in [(ReadMode::Direct, &direct), (ReadMode::DropPages, &plain), (ReadMode::Cached, &plain)] {
            assert_eq!(hash_exactly(fd, mode, body.len() as u64, &mut |_, _| {}).unwrap(), want, "{mode:?}");
            assert!(ends_clean(fd, mode, body.len() as u64).unwrap(), "{mode:?}");
            assert!(!ends_clean(fd, mode, body.len() as u64 - 1).unwrap(), "{mode:?}");
            assert!(!bytes_beyond_size(fd, mode, body.len() as u64).unwrap(), "{mode:?}");
            assert!(bytes_beyond_size(fd, mode, body.len() as u64 - 1).unwrap(), "{mode:?}");
        }
    }

    #[test]
    fn absent_and_empty() {
        let t = tempfile::tempdir().unwrap();
        let k = TranscriptKey::parse("chats/none.jsonl").unwrap();
        let p = read(&t, &k, false).unwrap();
        assert_eq!((p.proof.exists, p.proof.byte_length, p.proof.sha256.as_str()), (false, 0, EMPTY_SHA256));
        p.revalidate().unwrap();
        std::fs::create_dir_all(t.path().join("chats")).unwrap();
        std::fs::write(t.path().join("chats/none.jsonl"), b"").unwrap();
        assert!(matches!(p.revalidate(), Err(LockError::TranscriptChanged { .. })));
        let e = read(&t, &k, false).unwrap();
        assert_eq!((e.proof.exists, e.proof.sha256.as_str()), (true, EMPTY_SHA256));
    }

    #[test]
    fn trailing_newline_rule() {
        let (t, k) = setup(b"{\"a\":1}\n{\"b\"");
        assert!(matches!(read(&t, &k, false), Err(LockError::TranscriptChanged { .. })));
    }

    /// Issue 38: where the last complete line ends, for every shape of tail. The offset is
    /// the length after a repair: everything before it is whole lines.
    #[test]
    fn a_torn_tail_names_where_the_last_complete_line_ends() {
        let t = tempfile::tempdir().unwrap();
        let k = TranscriptKey::parse("chats/s.jsonl").unwrap();
        assert_eq!(tail_of(t.path(), &k).unwrap(), Tail::Clean, "absent");
        let cases: [(&[u8], Tail); 5] = [
            (b"", Tail::Clean),
            (b"{\"a\":1}\n{\"b\":2}\n", Tail::Clean),
            (b"{\"a\":1}\n{\"b\"", Tail::Torn { complete: 8, length: 12 }),
            (b"{\"no newline at all\"", Tail::Torn { complete: 0, length: 20 }),
            (b"\n\n{", Tail::Torn { complete: 2, length: 3 }),
        ];
        for (body, want) in cases {
            let (t, k) = setup(body);
            assert_eq!(tail_of(t.path(), &k).unwrap(), want, "{:?}", String::from_utf8_lossy(body));
            assert_eq!(want.as_str(), if want == Tail::Clean { "clean" } else { "torn" });
        }
        // The refusal at acquisition says where, and is not about a seal.
        let (t, k) = setup(b"{\"a\":1}\n{\"b\"");
        let e = check_shape(t.path(), &k).unwrap_err();
        assert!(
            matches!(e, LockError::TranscriptChanged { reason: TranscriptChange::Torn { complete: 8, length: 12 } }),
            "{e:?}"
        );
        assert_eq!(e.code().as_str(), "session_transcript_changed");
        assert_eq!(
            e.to_string(),
            "session transcript is torn: the transcript ends in an incomplete line at byte 12 (last complete line ends at byte 8)"
        );
        let hint = e.hint().unwrap();
        assert!(hint.contains("writerctl recover --session ID --writers-fenced --yes"), "{hint}");
        assert!(!hint.contains("sealed proof") && !hint.contains("nothing was changed"), "{hint}");
    }

    /// The backwards search reads only the torn line (rounded up to a chunk), in chunks,
    /// however long the line or the file: a line longer than one chunk, and one with no
    /// newline before it at all, are found across chunk boundaries.
    #[test]
    fn the_last_newline_is_found_across_chunks() {
        let mut body = b"{\"a\":1}\n".to_vec();
        body.extend(std::iter::repeat_n(b'x', TAIL_CHUNK_BYTES * 2 + 5));
        let (t, k) = setup(&body);
        let want = Tail::Torn { complete: 8, length: body.len() as u64 };
        assert_eq!(tail_of(t.path(), &k).unwrap(), want, "a torn line longer than one chunk");
        let fd =
            rustix::fs::open(t.path().join("chats/s.jsonl"), rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty())
                .unwrap();
        let size = body.len() as u64;
        for chunk in [1, 2, 3, 7, 8, 9, 4096] {
            assert_eq!(last_line_end(&fd, ReadMode::Cached, size, chunk).unwrap(), 8, "chunk {chunk}");
            assert_eq!(last_line_end(&fd, ReadMode::Cached, 8, chunk).unwrap(), 8, "ends on the newline");
            assert_eq!(last_line_end(&fd, ReadMode::Cached, 7, chunk).unwrap(), 0, "no newline before");
        }
        let no_newline = vec![b'y'; TAIL_CHUNK_BYTES + 3];
        let (t, k) = setup(&no_newline);
        assert_eq!(tail_of(t.path(), &k).unwrap(), Tail::Torn { complete: 0, length: no_newline.len() as u64 });
        // A file that shrank under the search is a change, never a wrong offset.
        assert!(matches!(last_line_end(&fd, ReadMode::Cached, size + 10, 4), Err(LockError::TranscriptChanged { .. })));
    }

    #[test]
    fn symlinks_anywhere_are_unsafe_and_a_dangling_one_is_not_absent() {
        for walk in [false, true] {
            let (t, _) = setup(b"x\n");
            std::os::unix::fs::symlink(t.path().join("chats/s.jsonl"), t.path().join("chats/link.jsonl")).unwrap();
            std::os::unix::fs::symlink("/nonexistent", t.path().join("chats/dangling.jsonl")).unwrap();
            std::os::unix::fs::symlink(t.path().join("chats"), t.path().join("alias")).unwrap();
            for key in ["chats/link.jsonl", "chats/dangling.jsonl", "alias/s.jsonl"] {
                let k = TranscriptKey::parse(key).unwrap();
                assert!(matches!(read(&t, &k, walk), Err(LockError::TranscriptUnsafe { .. })), "{key} walk={walk}");
            }
        }
    }

    #[test]
    fn fifo_directory_and_socket_are_unsafe_without_hanging() {
        let (t, _) = setup(b"x\n");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            t.path().join("chats/fifo.jsonl"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::fs::create_dir(t.path().join("chats/dir.jsonl")).unwrap();
        let _sock = std::os::unix::net::UnixListener::bind(t.path().join("chats/sock.jsonl")).unwrap();
        for walk in [false, true] {
            for key in ["chats/fifo.jsonl", "chats/dir.jsonl", "chats/sock.jsonl"] {
                let k = TranscriptKey::parse(key).unwrap();
                assert!(matches!(read(&t, &k, walk), Err(LockError::TranscriptUnsafe { .. })), "{key} walk={walk}");
            }
        }
    }

    #[test]
    fn revalidation_catches_append_truncate_replace_link_and_chmod() {
        use std::os::unix::fs::PermissionsExt;
        type Mutate = fn(&Path);
        let cases: [(&str, Mutate); 6] = [
            ("append", |p| std::fs::OpenOptions::new().append(true).open(p).unwrap().write_all(b"y\n").unwrap()),
            ("truncate", |p| std::fs::OpenOptions::new().write(true).open(p).unwrap().set_len(1).unwrap()),
            ("replace", |p| {
                let tmp = p.with_extension("new");
                std::fs::write(&tmp, b"z\n").unwrap();
                std::fs::rename(&tmp, p).unwrap();
            }),
            ("hard link", |p| std::fs::hard_link(p, p.with_extension("extra")).unwrap()),
            ("chmod", |p| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap()),
            ("in-place same length", |p| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                std::fs::write(p, b"X\n").unwrap();
            }),
        ];
        for (name, mutate) in cases {
            let (t, k) = setup(b"x\n");
            std::fs::set_permissions(t.path().join("chats/s.jsonl"), std::fs::Permissions::from_mode(0o600)).unwrap();
            let p = read(&t, &k, false).unwrap();
            mutate(&t.path().join("chats/s.jsonl"));
            assert!(matches!(p.revalidate(), Err(LockError::TranscriptChanged { .. })), "{name}");
        }
    }

    #[test]
    fn a_racily_clean_transcript_is_rehashed_on_revalidation() {
        // A same-tick, same-length rewrite can leave every timestamp equal; for a file
        // written that recently, revalidation compares content. Simulated by making the
        // recorded digest disagree with the content while the metadata stays identical.
        let (t, k) = setup(b"aaaa\n");
        let mut p = read(&t, &k, false).unwrap();
        assert!(p.racy, "written just now");
        p.proof.sha256 = EMPTY_SHA256.into();
        assert!(matches!(p.revalidate(), Err(LockError::TranscriptChanged { .. })));
        p.racy = false;
        p.revalidate().expect("without the racy rule only metadata is compared");
        let old = Fingerprint { mtime: (1, 0), ctime: (1, 0), ..p.held.as_ref().unwrap().1 };
        assert!(!is_racy(&old, std::time::SystemTime::now()));
    }

    /// Issue 21 item 3: on a filesystem with whole-second timestamps (ext4 with 128-byte
    /// inodes, ext3, NFSv3, FAT), a file written 1 s before the read may still be rewritten
    /// within the same second without any timestamp changing: it must count as racy. The
    /// old 50 ms margin did not.
    #[test]
    fn whole_second_timestamps_are_racy_for_two_seconds() {
        let read_at = |secs: i64, nanos: u64| {
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs as u64) + std::time::Duration::from_nanos(nanos)
        };
        let coarse = Fingerprint {
            dev: 1,
            ino: 2,
            mode: 0o100600,
            uid: 0,
            gid: 0,
            nlink: 1,
            size: 5,
            mtime: (1_000, 0),
            ctime: (1_000, 0),
        };
        assert!(is_racy(&coarse, read_at(1_000, 999_000_000)), "same second");
        assert!(is_racy(&coarse, read_at(1_001, 500_000_000)), "1.5 s later, 1 s granularity");
        assert!(is_racy(&coarse, read_at(1_002, 0)), "FAT's 2 s granularity");
        assert!(!is_racy(&coarse, read_at(1_002, 1)), "past any granularity");
        // Timestamps with sub-millisecond digits prove a fine filesystem: the coarse clock's
        // tick is the only window left.
        let fine = Fingerprint { mtime: (1_000, 123_456_789), ctime: (1_000, 123_456_789), ..coarse };
        assert!(is_racy(&fine, read_at(1_000, 150_000_000)));
        assert!(!is_racy(&fine, read_at(1_000, 200_000_000)));
        // Exact milliseconds (exFAT's 10 ms, or chance) prove nothing: coarse margin.
        let ms = Fingerprint { mtime: (1_000, 10_000_000), ctime: (1_000, 123_456_789), ..coarse };
        assert!(is_racy(&ms, read_at(1_001, 0)));
        // A timestamp ahead of our clock (a file server's skew) is racy.
        assert!(is_racy(&fine, read_at(999, 0)));
    }

    #[test]
    fn a_racy_read_is_rehashed_once_and_sync_flushes_the_held_descriptor() {
        let (t, k) = setup(b"aaaa\n");
        let mut p = read(&t, &k, false).unwrap();
        assert!(p.racy && !p.rehashed.get());
        p.sync().unwrap();
        p.revalidate().unwrap();
        assert!(p.rehashed.get(), "inside the claim: content compared");
        // A second revalidation compares metadata only: a wrong digest is no longer seen.
        p.proof.sha256 = EMPTY_SHA256.into();
        p.revalidate().expect("later checks compare metadata only");
        let absent = read(&t, &TranscriptKey::parse("chats/none.jsonl").unwrap(), false).unwrap();
        absent.sync().unwrap();
    }

    #[test]
    fn matches_compares_every_field() {
        let (t, k) = setup(b"x\n");
        let p = read(&t, &k, false).unwrap();
        p.matches(&p.proof.clone()).unwrap();
        let mut other = p.proof.clone();
        other.relative_path = "chats/t.jsonl".into();
        assert!(p.matches(&other).is_err());
        let mut other = p.proof.clone();
        other.byte_length += 1;
        assert!(p.matches(&other).is_err());
        let mut other = p.proof.clone();
        other.sha256 = EMPTY_SHA256.into();
        assert!(p.matches(&other).is_err());
        let mut other = p.proof.clone();
        other.exists = false;
        assert!(p.matches(&other).is_err());
    }

    #[test]
    fn only_a_symlink_on_the_recheck_is_tampering() {
        use rustix::io::Errno;
        let err = |e: Errno| path_recheck_error(std::io::Error::from_raw_os_error(e.raw_os_error()));
        assert!(matches!(err(Errno::LOOP), LockError::TranscriptChanged { .. }));
        for (e, cause) in [(Errno::MFILE, "EMFILE"), (Errno::NFILE, "ENFILE"), (Errno::IO, "EIO")] {
            let got = err(e);
            assert_eq!(got.code().exit_code(), 75, "{got:?}");
            assert!(got.to_string().contains(cause), "{got}");
        }
        for e in [Errno::NAMETOOLONG, Errno::ACCESS, Errno::ROFS] {
            let got = err(e);
            assert!(matches!(got, LockError::Environment { .. }), "{got:?}");
            assert_eq!(got.code().exit_code(), 2);
            assert!(got.hint().unwrap().contains("retrying cannot help"));
        }
    }

    #[test]
    fn a_file_yielding_bytes_beyond_its_size_is_detected() {
        let (t, _) = setup(b"x\n");
        let fd =
            rustix::fs::open(t.path().join("chats/s.jsonl"), rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty())
                .unwrap();
        assert!(!bytes_beyond_size(&fd, ReadMode::Cached, 2).unwrap());
        assert!(bytes_beyond_size(&fd, ReadMode::Cached, 1).unwrap(), "a file longer than the size we hashed");
        // procfs: st_size 0, yet it reads.
        let proc = rustix::fs::open("/proc/version", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        assert_eq!(sys::fingerprint(&proc).unwrap().size, 0);
        assert!(bytes_beyond_size(&proc, ReadMode::Cached, 0).unwrap());
    }

    #[test]
    fn a_transcript_directory_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let (t, k) = setup(b"x\n");
        read(&t, &k, false).unwrap();
        std::fs::set_permissions(t.path().join("chats"), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(read(&t, &k, false), Err(LockError::UntrustedDirectory { what: "transcript directory", .. })));
        assert!(matches!(check_shape(t.path(), &k), Err(LockError::UntrustedDirectory { .. })));
        std::fs::set_permissions(t.path().join("chats"), std::fs::Permissions::from_mode(0o1777)).unwrap();
        read(&t, &k, false).unwrap();
    }
}
