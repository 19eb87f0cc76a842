//! The protocol's building blocks (QWEN_FORMAT §5.1 and its helpers), each one small
//! function over a [`Dir`]. Callers compose them into acquire, reclaim and release.
//!
//! # Crash residue
//!
//! * [`install`] can leave `<target>.<owner>.tmp` if the process dies between the create and
//!   the final unlink; the target itself is either absent or complete (the temp is fsynced
//!   before it is linked, and `link` is atomic).
//! * [`remove_exact`] and [`remove_owned`] leave the file in place if they die before the
//!   unlink; they never remove bytes they did not verify.

use std::ffi::OsStr;
use std::thread::sleep;
use std::time::Duration;

use super::error::{LockError, Unavailable};
use super::identity::{LocalDomain, ProcessProbe, decide};
use super::liveness::Liveness;
use super::paths::install_temp;
use super::record::{LockRecord, Malformed, parse_record};
use super::sys::{Dir, FileMeta, Kind, ReadRegular, is_eexist, is_enoent};

/// `MALFORMED_RETRY_COUNT`: reads of a record before it is declared malformed.
pub const MALFORMED_RETRY_COUNT: u32 = 3;
/// `MALFORMED_RETRY_DELAY_MS`.
pub const MALFORMED_RETRY_DELAY: Duration = Duration::from_millis(50);

fn os(name: &str) -> &OsStr {
    OsStr::new(name)
}

/// Installs `raw` at `target` without ever replacing an existing file (QWEN_FORMAT §5.1).
///
/// Sequence: exclusive-create `<target>.<owner_id>.tmp` (0600), write, fsync, close;
/// `link(tmp, target)`; unlink the temp. Returns `Ok(Some(meta))` when `target` now holds
/// exactly our bytes — `meta` is the identity of the inode we linked (or, after an
/// error-after-effect, of the exact file found) — and `Ok(None)` when something else is there.
///
/// Why link and not rename: `link` fails with `EEXIST` instead of replacing, so a racing
/// installer can never overwrite another's record. Why the exact-bytes reconciliation: on
/// network filesystems `link` can report an error after it took effect (a lost reply
/// retried by the client); the bytes at `target` tell us which happened.
///
/// No directory fsync here: callers sync once after the whole step they make durable, so
/// the acquire fast path costs two fsyncs (this temp, then the directory).
pub fn install(dir: &Dir, target: &str, raw: &[u8], owner_id: &str) -> Result<Option<FileMeta>, LockError> {
    let temp = install_temp(target, owner_id);
    let made = match dir.create_new_synced(os(&temp), raw) {
        Ok(meta) => meta,
        Err(e) if is_eexist(&e) => {
            return Err(LockError::Unavailable { reason: Unavailable::TempExists, detail: None, source: Some(e) });
        }
        Err(e) => {
            // The create may have succeeded before the write or fsync failed.
            let _ = dir.unlink(os(&temp));
            return Err(LockError::io("write install temp", e));
        }
    };
    if let Err(e) = install_failpoint_after_temp() {
        let _ = dir.unlink(os(&temp));
        return Err(e);
    }
    let result = match dir.link(os(&temp), os(target)) {
        Ok(()) => {
            // Only a crash is meaningful here: an "error" after a link that took effect is
            // reconciled as installed, exactly as a real error-after-effect is.
            let _ = install_failpoint_after_link();
            Ok(Some(made))
        }
        Err(e) if link_unsupported(&e) && matches!(inspect_exact(dir, target, raw), ExactState::Missing) => {
            // Issue 27: a filesystem without hard links answers every install this way;
            // "retry later" would make `run` loop forever.
            Err(no_links_error(dir, &e))
        }
        // On a network filesystem a lost reply makes the client retry a link that took
        // effect and report EEXIST, while its cache may still say the target is missing:
        // the server's link count of our temp decides (open(2)'s NFS lock-file recipe).
        Err(e) if !dir.lookups_authoritative() && linked_by_server(dir, &temp) => {
            let _ = e;
            Ok(Some(made))
        }
        // Error after effect? Only if the target is *our inode* (the temp is still linked, so
        // its inode cannot have been reused). Equal bytes are not enough: two seals by one
        // owner in the same millisecond write identical transition claims and candidates.
        Err(e) => match (inspect_exact(dir, target, raw), dir.lstat(os(target))) {
            (ExactState::Exact, Ok(found)) if found.same_identity(&made) => Ok(Some(found)),
            (ExactState::Exact, Ok(_)) => Ok(None),
            (ExactState::Exact, Err(le)) => Err(LockError::io("lstat installed record", le)),
            _ if is_eexist(&e) => Ok(None),
            (ExactState::Other, _) => Ok(None),
            (ExactState::Missing | ExactState::Unknown(_), _) => Err(LockError::io("link record", e)),
        },
    };
    let _ = dir.unlink(os(&temp));
    result
}

/// `link(2)` answers these where the filesystem has no hard links (vfat, exFAT, SMB
/// without unix extensions, some FUSE filesystems): `EPERM` (the documented answer of a
/// filesystem that does not support links), `EOPNOTSUPP`, or `EMLINK` for a file that has
/// only its own link. The source is a file we just created and own, so neither
/// `protected_hardlinks` nor a link limit explains them.
fn link_unsupported(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    matches!(e.raw_os_error(), Some(c) if [Errno::PERM, Errno::OPNOTSUPP, Errno::MLINK].iter().any(|x| x.raw_os_error() == c))
}

fn no_links_error(dir: &Dir, e: &std::io::Error) -> LockError {
    let why = format!("link(2) answered {e}");
    match dir.filesystem() {
        Ok(fs) => super::filesystem::unsupported(&fs, dir.path(), super::filesystem::no_hard_links(&why)),
        Err(_) => LockError::FilesystemUnsupported {
            path: dir.path().to_path_buf(),
            fs_type: "unknown".into(),
            lacks: super::filesystem::no_hard_links(&why).lacks,
            allowable: false,
        },
    }
}

/// Did our `link(temp, target)` take effect on the server although it reported an error?
/// Yes when the temp has two links there (it had one, and nothing else links it).
fn linked_by_server(dir: &Dir, temp: &str) -> bool {
    matches!(dir.nlink_by_server(os(temp)), Ok(2))
}

// The seams inside `install` (which must always unlink its temp, so they report instead of
// returning early from it).
fn install_failpoint_after_temp() -> Result<(), LockError> {
    crate::failpoint!("install.after_temp");
    Ok(())
}

fn install_failpoint_after_link() -> Result<(), LockError> {
    crate::failpoint!("install.after_link");
    Ok(())
}

/// What [`inspect_exact`] found.
#[derive(Debug)]
pub enum ExactState {
    /// A regular, non-symlink file holding exactly the expected bytes.
    Exact,
    /// Nothing there.
    Missing,
    /// A different file, or not a regular file.
    Other,
    /// Could not be read.
    Unknown(std::io::Error),
}

/// Compares the file at `name` with `raw` without following symlinks.
pub fn inspect_exact(dir: &Dir, name: &str, raw: &[u8]) -> ExactState {
    match dir.read_regular(os(name)) {
        ReadRegular::Regular(bytes, _) if bytes == raw => ExactState::Exact,
        ReadRegular::Regular(..) | ReadRegular::NotRegular(_) | ReadRegular::TooLarge(_) => ExactState::Other,
        ReadRegular::Missing => ExactState::Missing,
        ReadRegular::Error(e) => ExactState::Unknown(e),
    }
}

/// Why a removal did not happen.
#[derive(Debug)]
pub enum RemoveError {
    /// The file holds other bytes: someone else's record. It was left alone.
    Lost,
    /// The file could not be read or unlinked.
    Io(std::io::Error),
}

/// Removes `name` only if it holds exactly `raw` (QWEN_FORMAT §5.1 "remove exact").
/// A missing file counts as removed.
///
/// The check and the unlink are two steps; between them only a process that already
/// misbehaves (deleting a record it did not write) can change the file, and every side file
/// this is used on has an owner-unique name.
pub fn remove_exact(dir: &Dir, name: &str, raw: &[u8]) -> Result<(), RemoveError> {
    match inspect_exact(dir, name, raw) {
        ExactState::Missing => return Ok(()),
        ExactState::Other => return Err(RemoveError::Lost),
        ExactState::Unknown(e) => return Err(RemoveError::Io(e)),
        ExactState::Exact => {}
    }
    match dir.unlink(os(name)) {
        Ok(()) => Ok(()),
        Err(e) if is_enoent(&e) => Ok(()),
        Err(e) => Err(RemoveError::Io(e)),
    }
}

/// Removes `name` only if it parses as an active record with `owner_id` (QWEN_FORMAT §5.1
/// "remove owned lock"); used to clean up our own `L` or reclaim guard.
pub fn remove_owned(dir: &Dir, name: &str, owner_id: &str) -> Result<(), RemoveError> {
    let bytes = match dir.read_regular(os(name)) {
        ReadRegular::Regular(b, _) => b,
        ReadRegular::Missing => return Ok(()),
        ReadRegular::NotRegular(_) | ReadRegular::TooLarge(_) => return Err(RemoveError::Lost),
        ReadRegular::Error(e) => return Err(RemoveError::Io(e)),
    };
    match parse_record(&bytes) {
        Ok(r) if r.is_active() && r.owner_id == owner_id => {}
        _ => return Err(RemoveError::Lost),
    }
    match dir.unlink(os(name)) {
        Ok(()) => Ok(()),
        Err(e) if is_enoent(&e) => Ok(()),
        Err(e) => Err(RemoveError::Io(e)),
    }
}

/// The transition claim check (QWEN_FORMAT §5.2 step 2.1): `lstat(L.claim)` must say `ENOENT` —
/// and, on a network or FUSE filesystem, the server's listing must not name it either.
///
/// Why any file type counts: a transition claim is a fence, not a record to validate. A
/// directory, a symlink or garbage at the transition claim path means someone is (or was)
/// mid-transition, and the primary path may be in a deliberate gap; installing into it would
/// create two owners.
///
/// Why the listing (issue 27, reproduction 4): an `ENOENT` from a network client may be a
/// negative entry it cached before another host created the transition claim; acquiring on that
/// guess put a second writer into a transition's gap. [`Dir::listed_by_server`] asks the
/// server. A local disk keeps the one `lstat` (its answer is the kernel's own).
pub fn check_transition_claim(dir: &Dir, claim: &str) -> Result<(), LockError> {
    let unreadable = |e: std::io::Error| LockError::Unavailable {
        reason: Unavailable::TransitionClaimUnreadable,
        detail: None,
        source: Some(e),
    };
    match dir.lstat(os(claim)) {
        Err(e) if is_enoent(&e) && dir.lookups_authoritative() => Ok(()),
        Err(e) if is_enoent(&e) => match dir.listed_by_server(os(claim)) {
            Ok(false) => Ok(()),
            Ok(true) => Err(LockError::unavailable(Unavailable::TransitionClaimPresent)),
            Err(e) => Err(unreadable(e)),
        },
        Err(e) => Err(unreadable(e)),
        Ok(_) => Err(LockError::unavailable(Unavailable::TransitionClaimPresent)),
    }
}

/// A transition's owner-unique side file (`L.handoff.<o>`, `L.sealed.<o>.<n>`) must not exist
/// before the transition starts (QWEN_FORMAT §5.6 step 6, §5.10 step 9): a leftover means an
/// earlier attempt crashed, and its contents are not ours to overwrite.
pub fn require_absent(dir: &Dir, name: &str, what: &str) -> Result<(), LockError> {
    match dir.lstat(os(name)) {
        Err(e) if is_enoent(&e) => Ok(()),
        Err(e) => Err(LockError::io(format!("inspect {what}"), e)),
        Ok(_) => Err(LockError::Unavailable {
            reason: Unavailable::TransitionFileExists,
            detail: Some(what.to_owned()),
            source: None,
        }),
    }
}

/// What is at a lock path (QWEN_FORMAT §2.2 "inspect existing lock").
#[derive(Debug)]
pub enum Inspection {
    /// Nothing.
    Missing,
    /// A valid active record for this session, with its liveness.
    Active(LockRecord, Liveness),
    /// A valid sealed record for this session.
    Sealed(LockRecord),
    /// A valid record for another session.
    OtherSession(LockRecord),
    /// Invalid after [`MALFORMED_RETRY_COUNT`] reads.
    Malformed(Malformed),
    /// Not a regular file (symlinks are never followed).
    NotRegular(Kind),
    /// Unreadable.
    Error(std::io::Error),
}

/// Reads and classifies the record at `name`, retrying an invalid read up to three times
/// 50 ms apart.
///
/// Why retry: a record is never torn by writerctl or qwen (it appears by `link`), but other
/// tools copying lock directories can expose a half-written file briefly; three reads
/// keep such a glitch from being reported as corruption.
pub fn inspect_record(
    dir: &Dir,
    name: &str,
    session_id: &str,
    local: &LocalDomain,
    probe: &dyn ProcessProbe,
) -> Inspection {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match inspect_once(dir, name, session_id, local, probe) {
            Read::Done(found) => return found,
            Read::Invalid(m) if attempt >= MALFORMED_RETRY_COUNT => return Inspection::Malformed(m),
            Read::Invalid(_) => sleep(MALFORMED_RETRY_DELAY),
        }
    }
}

/// One read of a record: a final answer, or an invalid record worth reading again.
#[allow(clippy::large_enum_variant)] // lives for one match; boxing would allocate per read
enum Read {
    Done(Inspection),
    Invalid(Malformed),
}

fn inspect_once(dir: &Dir, name: &str, session_id: &str, local: &LocalDomain, probe: &dyn ProcessProbe) -> Read {
    classify_read(dir, dir.read_regular(os(name)), session_id, local, probe)
}

/// `dir` is where the record was read: its holder-lock file, if it names one, is there.
fn classify_read(
    dir: &Dir,
    read: ReadRegular,
    session_id: &str,
    local: &LocalDomain,
    probe: &dyn ProcessProbe,
) -> Read {
    let bytes = match read {
        ReadRegular::Regular(b, _) => b,
        ReadRegular::Missing => return Read::Done(Inspection::Missing),
        ReadRegular::NotRegular(k) => return Read::Done(Inspection::NotRegular(k)),
        ReadRegular::TooLarge(n) => {
            return Read::Done(Inspection::Malformed(Malformed(format!(
                "{n} bytes is far too large for a lock record"
            ))));
        }
        ReadRegular::Error(e) => return Read::Done(Inspection::Error(e)),
    };
    Read::Done(match parse_record(&bytes) {
        Ok(r) if r.session_id != session_id => Inspection::OtherSession(r),
        Ok(r) if r.is_active() => {
            let l = decide(&r.owner, local, probe, dir);
            Inspection::Active(r, l)
        }
        Ok(r) => Inspection::Sealed(r),
        Err(m) => return Read::Invalid(m),
    })
}

#[cfg(test)]
thread_local! {
    /// Pauses taken by [`inspect_records`] on this thread (tests count them instead of timing).
    static BATCH_PAUSES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// [`inspect_record`] for many records of one directory (a `status` or `recover` scan),
/// `(file name, session id)` each, answers in the same order.
///
/// Why not call [`inspect_record`] in a loop: its pause is per record, so a directory of N
/// invalid records would sleep N × 100 ms one after another (10,000 malformed locks: over
/// 16 minutes). The pause exists to let a copy in progress finish, and one pause gives
/// every record in the batch that chance at once: read all, collect the invalid ones, pause
/// once, read those again. A record still invalid then is reported malformed with the
/// reason of its last read. A batch of one pays what a single inspection pays at most.
pub fn inspect_records(
    dir: &Dir,
    records: &[(&str, &str)],
    local: &LocalDomain,
    probe: &dyn ProcessProbe,
) -> Vec<Inspection> {
    let with_reads: Vec<(&str, &str, Option<ReadRegular>)> = records.iter().map(|&(n, s)| (n, s, None)).collect();
    inspect_records_read(dir, with_reads, local, probe)
}

/// [`inspect_records`] where a scan has already read some records: `(name, session, first
/// read)`, the first read standing for the first attempt (a directory scan reads every
/// entry once to learn which lock it belongs to, and reading each primary again would
/// double the scan's syscalls). A record invalid on that read is read again from disk
/// after the one pause, exactly as in [`inspect_records`].
pub fn inspect_records_read(
    dir: &Dir,
    records: Vec<(&str, &str, Option<ReadRegular>)>,
    local: &LocalDomain,
    probe: &dyn ProcessProbe,
) -> Vec<Inspection> {
    let mut out = Vec::with_capacity(records.len());
    let mut suspicious = Vec::new();
    let records: Vec<(&str, &str)> = records
        .into_iter()
        .enumerate()
        .map(|(i, (name, session, first))| {
            let read = match first {
                Some(r) => classify_read(dir, r, session, local, probe),
                None => inspect_once(dir, name, session, local, probe),
            };
            match read {
                Read::Done(found) => out.push(found),
                Read::Invalid(m) => {
                    suspicious.push(i);
                    out.push(Inspection::Malformed(m));
                }
            }
            (name, session)
        })
        .collect();
    if !suspicious.is_empty() {
        #[cfg(test)]
        BATCH_PAUSES.with(|n| n.set(n.get() + 1));
        sleep(MALFORMED_RETRY_DELAY);
        for i in suspicious {
            let (name, session) = records[i];
            out[i] = match inspect_once(dir, name, session, local, probe) {
                Read::Done(found) => found,
                Read::Invalid(m) => Inspection::Malformed(m),
            };
        }
    }
    out
}

/// The metadata of `name` must be a regular file with the identity `expected`.
pub fn same_regular(dir: &Dir, name: &str, expected: &FileMeta) -> Result<bool, std::io::Error> {
    match dir.lstat(os(name)) {
        Ok(m) => Ok(m.kind == Kind::Regular && m.same_identity(expected)),
        Err(e) if is_enoent(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use crate::lockfile::identity::SystemProbe;
    use crate::lockfile::sys::scratch_dir as dir;

    fn names(t: &tempfile::TempDir) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }

    /// The directory holds `L` with `bytes`, and nothing else (no temp file left behind).
    fn assert_only_l(t: &tempfile::TempDir, bytes: &[u8]) {
        assert_eq!(std::fs::read(t.path().join("L")).unwrap(), bytes);
        assert_eq!(names(t), vec!["L"]);
    }

    #[test]
    fn install_links_and_cleans_its_temp() {
        let (t, d) = dir();
        assert!(install(&d, "L", b"rec", "o").unwrap().is_some());
        assert_only_l(&t, b"rec");
    }

    #[test]
    fn install_never_replaces_and_reports_not_installed() {
        let (t, d) = dir();
        std::fs::write(t.path().join("L"), b"theirs").unwrap();
        assert!(install(&d, "L", b"ours", "o").unwrap().is_none());
        assert_only_l(&t, b"theirs");
    }

    #[test]
    fn install_reconciles_an_error_after_effect_by_inode() {
        // link() takes effect, then reports an error: the target is our inode.
        let (t, d) = dir();
        crate::lockfile::failpoint::inject_syscall("link", "L", crate::lockfile::failpoint::When::After, 5, 1);
        let got = install(&d, "L", b"ours", "o").unwrap();
        crate::lockfile::failpoint::clear_hooks();
        assert!(got.is_some());
        assert_only_l(&t, b"ours");
    }

    #[test]
    fn install_on_a_filesystem_without_hard_links_is_filesystem_unsupported() {
        // vfat, exFAT, SMB without unix extensions: link(2) answers EPERM (or EOPNOTSUPP,
        // EMLINK). That is no transient state: exit 2, never "retry later" (issue 27).
        use crate::lockfile::failpoint::{When, clear_hooks, inject_syscall};
        for errno in [rustix::io::Errno::PERM, rustix::io::Errno::OPNOTSUPP, rustix::io::Errno::MLINK] {
            let (t, d) = dir();
            inject_syscall("link", "L", When::Before, errno.raw_os_error(), 1);
            let e = install(&d, "L", b"ours", "o").unwrap_err();
            clear_hooks();
            assert_eq!(e.code().as_str(), "filesystem_unsupported", "{errno:?}: {e:?}");
            assert_eq!(e.code().exit_code(), 2);
            assert!(e.to_string().contains("hard links") && e.to_string().contains("ext4"), "{e}");
            assert!(!e.hint().unwrap().contains("WRITERCTL_ALLOW_FILESYSTEM="), "nothing can allow it");
            assert!(names(&t).is_empty(), "the temp is removed: {:?}", names(&t));
        }
    }

    #[test]
    fn install_on_a_network_filesystem_trusts_the_servers_link_count_after_eexist() {
        // NFSv3: the link took effect, the reply was lost, the retry said EEXIST, and this
        // client's cache still says the target is missing. The temp's link count on the
        // server (two) proves the link was ours.
        use crate::lockfile::failpoint::{When, clear_hooks, inject_syscall};
        let (t, mut d) = dir();
        d.assume_network();
        inject_syscall("link", "L", When::After, rustix::io::Errno::EXIST.raw_os_error(), 1);
        let got = install(&d, "L", b"ours", "o").unwrap();
        clear_hooks();
        assert!(got.is_some());
        assert_only_l(&t, b"ours");
        // A real EEXIST (someone else's file) is still "not installed".
        std::fs::write(t.path().join("M"), b"theirs").unwrap();
        assert!(install(&d, "M", b"ours", "o").unwrap().is_none());
        assert_eq!(std::fs::read(t.path().join("M")).unwrap(), b"theirs");
    }

    #[test]
    fn transition_claim_check_on_a_network_filesystem_asks_the_listing_not_the_cache() {
        // Issue 27, reproduction 4: this client cached "no such file" for the transition claim
        // another host has since created (the injected ENOENT plays the negative entry).
        use crate::lockfile::failpoint::{When, clear_hooks, inject_syscall};
        let (t, mut d) = dir();
        std::fs::write(t.path().join("L.claim"), b"claim").unwrap();
        inject_syscall("lstat", "L.claim", When::Before, rustix::io::Errno::NOENT.raw_os_error(), 1);
        assert!(check_transition_claim(&d, "L.claim").is_ok(), "a local disk trusts its lookup (the hole, staged)");
        d.assume_network();
        inject_syscall("lstat", "L.claim", When::Before, rustix::io::Errno::NOENT.raw_os_error(), 1);
        assert!(matches!(
            check_transition_claim(&d, "L.claim"),
            Err(LockError::Unavailable { reason: Unavailable::TransitionClaimPresent, .. })
        ));
        clear_hooks();
        std::fs::remove_file(t.path().join("L.claim")).unwrap();
        check_transition_claim(&d, "L.claim").unwrap();
    }

    #[test]
    fn install_never_claims_someone_elses_identical_bytes() {
        // Another installer's file with byte-identical content (a concurrent seal by the
        // same owner) is not ours.
        let (t, d) = dir();
        std::fs::write(t.path().join("L"), b"ours").unwrap();
        assert!(install(&d, "L", b"ours", "o").unwrap().is_none());
    }

    #[test]
    fn install_refuses_an_existing_temp_and_leaves_it() {
        let (t, d) = dir();
        std::fs::write(t.path().join("L.o.tmp"), b"x").unwrap();
        let e = install(&d, "L", b"ours", "o").unwrap_err();
        assert!(matches!(e, LockError::Unavailable { reason: Unavailable::TempExists, .. }));
        assert_eq!(names(&t), vec!["L.o.tmp"]);
    }

    #[test]
    fn install_into_a_directory_target_is_not_installed() {
        let (t, d) = dir();
        std::fs::create_dir(t.path().join("L")).unwrap();
        assert!(install(&d, "L", b"ours", "o").unwrap().is_none());
    }

    #[test]
    fn remove_exact_only_removes_matching_bytes() {
        let (t, d) = dir();
        std::fs::write(t.path().join("f"), b"ours").unwrap();
        assert!(matches!(remove_exact(&d, "f", b"other"), Err(RemoveError::Lost)));
        assert!(t.path().join("f").exists());
        remove_exact(&d, "f", b"ours").unwrap();
        assert!(!t.path().join("f").exists());
        remove_exact(&d, "f", b"ours").unwrap();
    }

    #[test]
    fn remove_exact_never_follows_a_symlink() {
        let (t, d) = dir();
        std::fs::write(t.path().join("target"), b"ours").unwrap();
        std::os::unix::fs::symlink(t.path().join("target"), t.path().join("f")).unwrap();
        assert!(matches!(remove_exact(&d, "f", b"ours"), Err(RemoveError::Lost)));
        assert!(t.path().join("f").symlink_metadata().is_ok());
        assert!(t.path().join("target").exists());
    }

    #[test]
    fn remove_owned_checks_the_owner_id() {
        let (t, d) = dir();
        let rec = br#"{"schema_version":2,"state":"active","session_id":"s","owner_id":"me","pid":1,"hostname":"h","process_kind":"unknown","acquired_at":"2026-07-28T00:00:00.000Z","qwen_version":null}"#;
        std::fs::write(t.path().join("L"), rec).unwrap();
        assert!(matches!(remove_owned(&d, "L", "you"), Err(RemoveError::Lost)));
        assert!(t.path().join("L").exists());
        remove_owned(&d, "L", "me").unwrap();
        assert!(!t.path().join("L").exists());
    }

    #[test]
    fn transition_claim_check_refuses_any_file_type() {
        let (t, d) = dir();
        check_transition_claim(&d, "L.claim").unwrap();
        std::fs::create_dir(t.path().join("L.claim")).unwrap();
        assert!(matches!(
            check_transition_claim(&d, "L.claim"),
            Err(LockError::Unavailable { reason: Unavailable::TransitionClaimPresent, .. })
        ));
        std::fs::remove_dir(t.path().join("L.claim")).unwrap();
        std::os::unix::fs::symlink("/nonexistent", t.path().join("L.claim")).unwrap();
        assert!(check_transition_claim(&d, "L.claim").is_err(), "a dangling symlink is a claim too");
    }

    #[test]
    fn a_batch_of_malformed_records_pauses_once_and_reports_each_with_its_reason() {
        let (t, d) = dir();
        let local = LocalDomain::current();
        let valid = br#"{"schema_version":2,"state":"sealed","session_id":"ok","owner_id":"o","pid":1,"hostname":"h","process_kind":"unknown","acquired_at":"2026-07-28T00:00:00.000Z","qwen_version":null,"sealed_at":"2026-07-28T00:00:01.000Z","transcript":{"relative_path":"chats/ok.jsonl","exists":false,"byte_length":0,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}"#;
        std::fs::write(t.path().join("ok.lock"), valid).unwrap();
        let mut names = Vec::new();
        for i in 0..50 {
            let name = format!("m{i}.lock");
            // Alternate two kinds of damage, so each reason is the record's own.
            let body: &[u8] = if i % 2 == 0 { b"not-json" } else { br#"{"schema_version":2,"state":"active"}"# };
            std::fs::write(t.path().join(&name), body).unwrap();
            names.push((name, format!("m{i}")));
        }
        let mut batch: Vec<(&str, &str)> = names.iter().map(|(n, s)| (n.as_str(), s.as_str())).collect();
        batch.push(("ok.lock", "ok"));
        batch.push(("gone.lock", "gone"));
        BATCH_PAUSES.with(|n| n.set(0));
        let found = inspect_records(&d, &batch, &local, &SystemProbe);
        assert_eq!(BATCH_PAUSES.with(|n| n.get()), 1, "one pause for the whole batch");
        assert_eq!(found.len(), 52);
        let mut reasons = std::collections::BTreeSet::new();
        for (i, f) in found[..50].iter().enumerate() {
            match f {
                Inspection::Malformed(m) => {
                    assert!(!m.0.is_empty(), "record {i} has a reason");
                    reasons.insert(m.0.clone());
                }
                other => panic!("record {i}: {other:?}"),
            }
        }
        assert!(reasons.len() >= 2, "each record's own reason is kept: {reasons:?}");
        assert!(matches!(found[50], Inspection::Sealed(_)));
        assert!(matches!(found[51], Inspection::Missing));

        // Nothing invalid: no pause at all.
        BATCH_PAUSES.with(|n| n.set(0));
        let found = inspect_records(&d, &[("ok.lock", "ok")], &local, &SystemProbe);
        assert!(matches!(found[0], Inspection::Sealed(_)));
        assert_eq!(BATCH_PAUSES.with(|n| n.get()), 0);
    }

    #[test]
    fn inspect_classifies_missing_malformed_other_session_and_non_regular() {
        let (t, d) = dir();
        let local = LocalDomain::current();
        assert!(matches!(inspect_record(&d, "L", "s", &local, &SystemProbe), Inspection::Missing));
        std::fs::write(t.path().join("L"), b"not-json").unwrap();
        let start = std::time::Instant::now();
        assert!(matches!(inspect_record(&d, "L", "s", &local, &SystemProbe), Inspection::Malformed(_)));
        assert!(start.elapsed() >= MALFORMED_RETRY_DELAY * 2, "malformed reads are retried");
        let rec = br#"{"schema_version":2,"state":"active","session_id":"other","owner_id":"me","pid":1,"hostname":"h","process_kind":"unknown","acquired_at":"2026-07-28T00:00:00.000Z","qwen_version":null}"#;
        std::fs::write(t.path().join("L"), rec).unwrap();
        assert!(matches!(inspect_record(&d, "L", "s", &local, &SystemProbe), Inspection::OtherSession(_)));
        std::fs::remove_file(t.path().join("L")).unwrap();
        std::fs::create_dir(t.path().join("L")).unwrap();
        assert!(matches!(inspect_record(&d, "L", "s", &local, &SystemProbe), Inspection::NotRegular(Kind::Directory)));
    }
}
