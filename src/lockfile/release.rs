//! Release (QWEN_FORMAT §5.5): the ordinary close of an active lock, with exact-owner cleanup.
//!
//! # Calling sequence
//!
//! ```text
//! read_owned (≤3 tries) ─► rename L → L.released.<o> ─► verify moved bytes+inode
//!     ─► unlink L.released.<o> ─► fsync directory
//! ```
//!
//! Why rename first instead of unlinking `L`: an unlink acts on whatever the name points to
//! at that instant, so a record installed between our ownership check and the unlink would
//! be destroyed. After the rename we hold the moved file under an owner-unique name and can
//! prove it is ours before removing it; if it is not (the holder died and another process
//! reclaimed in between), we link it straight back and report `session_not_owner`.
//!
//! # What a crash leaves
//!
//! `L.released.<o>` holding our own record, with `L` missing — a safe, released state that
//! `status` reports and `recover` moves aside.

use std::ffi::OsStr;

use super::error::LockError;
use super::holder_lock::remove_holder_file;
use super::primitives::{ExactState, inspect_exact, same_regular};
use super::record::{LockRecord, OwnerToken, parse_record};
use super::site::{LockSite, retry_pause, sync_error};
use super::sys::{FileMeta, ReadRegular, is_eexist};

/// `RELEASE_PRECHECK_ATTEMPTS`.
pub const RELEASE_PRECHECK_ATTEMPTS: u32 = 3;

/// What a release did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseOutcome {
    /// The record that was released (owner diagnostics for output; never print `owner_id`).
    pub record: LockRecord,
    /// True when the retired file `L.released.<o>` could not be unlinked and remains.
    pub retired_left: bool,
    /// False when the directory fsync after the removal failed (see `finish_release`).
    pub durable: bool,
}

/// Releases the lock owned by `token`: proves ownership from disk ([`plan_release`]), then
/// removes it.
pub fn release(site: &LockSite, token: &OwnerToken) -> Result<ReleaseOutcome, LockError> {
    let (record, meta) = owned_by(site, token)?;
    release_exact(site, token.expose(), &record, &meta)
}

/// `release --dry-run`: the ownership proof [`release`] makes first (the exact active
/// record `token` owns, for this session, on a stable inode), and nothing else: the record
/// that would be removed, or the error the release would give.
pub fn plan_release(site: &LockSite, token: &OwnerToken) -> Result<LockRecord, LockError> {
    owned_by(site, token).map(|(record, _)| record)
}

fn owned_by(site: &LockSite, token: &OwnerToken) -> Result<(LockRecord, FileMeta), LockError> {
    read_owned_retrying(site, |r| r.owner_id == token.expose())
}

/// [`read_owned`] with qwen's ownership precheck retry (§5.5 step 3): only `unavailable`
/// answers are retried, 50 ms apart; a lost ownership is final at once.
pub fn read_owned_retrying(
    site: &LockSite,
    is_ours: impl Fn(&LockRecord) -> bool,
) -> Result<(LockRecord, FileMeta), LockError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match read_owned(site, &is_ours) {
            Err(LockError::Unavailable { .. }) if attempt < RELEASE_PRECHECK_ATTEMPTS => retry_pause(),
            other => return other,
        }
    }
}

/// Releases our own freshly installed record (acquisition cleanup): `raw` must be exactly
/// what is at `L`.
pub(crate) fn release_lease(site: &LockSite, owner: &OwnerToken, raw: &[u8]) -> Result<ReleaseOutcome, LockError> {
    let (record, meta) = read_owned(site, |r| r.raw == raw)?;
    release_exact(site, owner.expose(), &record, &meta)
}

/// §5.3 step 4 "readOwnedLock": `L` is a regular file whose inode the path names before and
/// after the read, holding a valid active record for this session that `is_ours` accepts.
pub fn read_owned(site: &LockSite, is_ours: impl Fn(&LockRecord) -> bool) -> Result<(LockRecord, FileMeta), LockError> {
    let name = site.paths.lock_name.as_str();
    let path = site.lock_path();
    let not_owner = |reason: &str| LockError::NotOwner { path: path.clone(), reason: reason.into() };
    let (bytes, meta) = match site.dir.read_regular(OsStr::new(name)) {
        ReadRegular::Regular(b, m) => (b, m),
        ReadRegular::Missing => return Err(not_owner(super::error::NOT_OWNER_NO_LOCK)),
        // §5.3 step 4: anything but our exact active record at L means ownership is lost.
        ReadRegular::NotRegular(k) => {
            return Err(not_owner(&format!("the lock path is not a regular file (found a {})", k.describe())));
        }
        ReadRegular::TooLarge(_) => return Err(not_owner("the lock path holds no valid record")),
        ReadRegular::Error(e) => return Err(LockError::io("read lock", e)),
    };
    if meta.ino == 0 {
        // Ownership cannot be proved by identity on such a filesystem (QWEN_FORMAT §4.3).
        return Err(LockError::Unavailable {
            reason: super::error::Unavailable::Io,
            detail: Some("the lock filesystem does not provide a verifiable inode identity (ino=0)".into()),
            source: None,
        });
    }
    let stable = |site: &LockSite| same_regular(&site.dir, name, &meta).map_err(|e| LockError::io("lstat lock", e));
    if !stable(site)? {
        return Err(not_owner("the lock was replaced while it was read"));
    }
    let record = parse_record(&bytes).map_err(|m| not_owner(&format!("the lock holds no valid record ({m})")))?;
    if record.session_id != site.session_id {
        return Err(not_owner("the record belongs to another session"));
    }
    if !record.is_active() {
        return Err(not_owner(super::error::NOT_OWNER_SEALED));
    }
    if !is_ours(&record) {
        return Err(not_owner("the lock is held by a different owner"));
    }
    if !stable(site)? {
        return Err(not_owner("the lock was replaced while it was read"));
    }
    Ok((record, meta))
}

/// Steps 4–8 of §5.5 for a record proven ours by [`read_owned`].
fn release_exact(
    site: &LockSite,
    owner_id: &str,
    record: &LockRecord,
    meta: &FileMeta,
) -> Result<ReleaseOutcome, LockError> {
    let lock = site.paths.lock_name.as_str();
    let retired = site.paths.released(owner_id);
    let path = site.lock_path();
    crate::failpoint!("release.before_rename");
    if let Err(e) = site.dir.rename(OsStr::new(lock), OsStr::new(&retired)) {
        // The rename may have taken effect before reporting an error (network filesystems).
        let at_lock = inspect_exact(&site.dir, lock, &record.raw);
        let at_retired = inspect_exact(&site.dir, &retired, &record.raw);
        return match (at_lock, at_retired) {
            (ExactState::Missing | ExactState::Other, ExactState::Exact) => finish_release(site, record, &retired),
            (ExactState::Missing | ExactState::Other, _) => {
                Err(LockError::NotOwner { path, reason: "the lock disappeared during release".into() })
            }
            _ => Err(LockError::io("move lock aside for release", e)),
        };
    }
    crate::failpoint!("release.after_rename");
    // Prove that what we moved is the very record we checked: same bytes, same inode.
    let moved_is_ours = matches!(inspect_exact(&site.dir, &retired, &record.raw), ExactState::Exact)
        && same_regular(&site.dir, &retired, meta).unwrap_or(false);
    if !moved_is_ours {
        // Someone replaced L between our check and the rename. Put their record back.
        let reason = match site.dir.link(OsStr::new(&retired), OsStr::new(lock)) {
            Ok(()) => {
                let _ = site.dir.unlink(OsStr::new(&retired));
                let _ = site.dir.sync();
                "the lock was replaced by another owner during release; it was put back untouched"
            }
            Err(e) if is_eexist(&e) => {
                "the lock was replaced during release and a newer lock appeared; the moved record was left at its released name"
            }
            Err(_) => "the lock was replaced during release and could not be put back; see `writerctl status`",
        };
        return Err(LockError::NotOwner { path, reason: reason.into() });
    }
    finish_release(site, record, &retired)
}

/// Unlinks the retired copy and the holder-lock file the record named (after the record,
/// so no reader ever finds a record whose holder lock is missing while its holder lives),
/// then fsyncs the directory.
///
/// Why a failed fsync is not an error: the lock is already gone, so a retry would find no
/// lock and answer `session_not_owner`, never repairing anything (qwen keeps the lease in
/// "durability pending" in memory, which a one-shot CLI cannot). The outcome says the
/// release may not survive a crash; if it does not, the old record reappears after a reboot,
/// where it is from another boot and therefore fenced — a fail-closed outcome.
fn finish_release(site: &LockSite, record: &LockRecord, retired: &str) -> Result<ReleaseOutcome, LockError> {
    let retired_left = site.dir.unlink(OsStr::new(retired)).is_err();
    if let Some(name) = &record.owner.holder_lock {
        remove_holder_file(&site.dir, name);
    }
    let durable = sync_released(site).is_ok();
    Ok(ReleaseOutcome { record: record.clone(), retired_left, durable })
}

fn sync_released(site: &LockSite) -> Result<(), LockError> {
    crate::failpoint!("release.before_dir_sync");
    site.dir.sync().map_err(sync_error)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use crate::lockfile::acquire::{AcquireOptions, DirMode, ReclaimPolicy, acquire, open_site};
    use crate::lockfile::failpoint::{clear_hooks, set_hook};
    use crate::lockfile::identity::{SystemProbe, holder};
    use crate::lockfile::paths::LockPaths;
    use crate::lockfile::sys::own_pid;

    fn setup() -> (tempfile::TempDir, LockSite, crate::lockfile::Lease) {
        let t = tempfile::tempdir().unwrap();
        let s = open_site(t.path(), LockPaths::for_session(t.path(), "s"), "s", DirMode::Create).unwrap();
        let opts = AcquireOptions {
            holder: holder(own_pid()),
            process_kind: "unknown".into(),
            reclaim: ReclaimPolicy::Local,
            transcript: None,
            certified: None,
            holder_lock: false,
        };
        let lease = acquire(&s, &opts, &SystemProbe).unwrap();
        (t, s, lease)
    }

    #[test]
    fn a_lock_replaced_between_check_and_rename_is_put_back_untouched() {
        // The holder died and another process reclaimed between our ownership check and our
        // rename: we moved *their* record. It must go straight back, and we are not the owner.
        let (_t, s, lease) = setup();
        let theirs = String::from_utf8(lease.record.raw.clone())
            .unwrap()
            .replace(lease.owner.expose(), "11111111-2222-4333-8444-555555555555");
        let l = s.lock_path();
        let staged = theirs.clone();
        set_hook("release.before_rename", move || {
            std::fs::remove_file(&l)?;
            std::fs::write(&l, staged.as_bytes())
        });
        let e = release(&s, &lease.owner).unwrap_err();
        clear_hooks();
        assert!(matches!(e, LockError::NotOwner { .. }), "{e:?}");
        assert_eq!(std::fs::read_to_string(s.lock_path()).unwrap(), theirs);
        let names: Vec<String> =
            std::fs::read_dir(&s.paths.dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert_eq!(names, vec!["s.lock".to_string()]);
    }

    #[test]
    fn a_failed_directory_fsync_still_releases_and_says_so() {
        let (_t, s, lease) = setup();
        set_hook("release.before_dir_sync", || Err(std::io::Error::other("injected")));
        let out = release(&s, &lease.owner).unwrap();
        clear_hooks();
        assert!(!out.durable);
        assert!(!s.lock_path().exists());
    }

    #[test]
    fn release_refuses_a_sealed_or_foreign_record() {
        let (_t, s, lease) = setup();
        let other = OwnerToken::generate();
        assert!(matches!(release(&s, &other), Err(LockError::NotOwner { .. })));
        let sealed =
            String::from_utf8(lease.record.raw.clone()).unwrap().replace(r#""state":"active""#, r#""state":"sealed""#);
        let sealed = format!(
            r#"{},"sealed_at":"2026-07-28T00:00:01.000Z","transcript":{{"relative_path":"chats/s.jsonl","exists":false,"byte_length":0,"sha256":"{}"}}}}"#,
            sealed.trim_end_matches('}'),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        std::fs::remove_file(s.lock_path()).unwrap();
        std::fs::write(s.lock_path(), &sealed).unwrap();
        assert!(matches!(release(&s, &lease.owner), Err(LockError::NotOwner { .. })));
        assert_eq!(std::fs::read_to_string(s.lock_path()).unwrap(), sealed);
    }
}
