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

use super::acquire::{LockSite, retry_pause, sync_error};
use super::error::LockError;
use super::primitives::{ExactState, inspect_exact, same_regular};
use super::record::{LockRecord, OwnerToken, parse_record};
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
}

/// Releases the lock owned by `token`: proves ownership from disk, then removes it.
pub fn release(site: &LockSite, token: &OwnerToken) -> Result<ReleaseOutcome, LockError> {
    let mut attempt = 0;
    let (record, meta) = loop {
        attempt += 1;
        match read_owned(site, |r| r.owner.owner_id == token.expose()) {
            Ok(found) => break found,
            Err(e @ LockError::Unavailable { .. }) if attempt < RELEASE_PRECHECK_ATTEMPTS => {
                let _ = e;
                retry_pause();
            }
            Err(e) => return Err(e),
        }
    };
    release_exact(site, token.expose(), &record, &meta)
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
        ReadRegular::Missing => return Err(not_owner("the lock does not exist")),
        ReadRegular::NotRegular(k) => {
            return Err(LockError::Malformed {
                path,
                reason: format!("not a regular file (found a {})", k.describe()),
            });
        }
        ReadRegular::TooLarge(n) => {
            return Err(LockError::Malformed { path, reason: format!("{n} bytes is far too large for a lock record") });
        }
        ReadRegular::Error(e) => return Err(LockError::io("read lock", e)),
    };
    let stable = |site: &LockSite| same_regular(&site.dir, name, &meta).map_err(|e| LockError::io("lstat lock", e));
    if !stable(site)? {
        return Err(not_owner("the lock was replaced while it was read"));
    }
    let record = parse_record(&bytes).map_err(|m| LockError::Malformed { path: path.clone(), reason: m.0 })?;
    if record.owner.session_id != site.session_id {
        return Err(LockError::Malformed { path, reason: "the record belongs to another session".into() });
    }
    if !record.is_active() {
        return Err(not_owner("the lock is sealed, not active"));
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
fn release_exact(site: &LockSite, owner_id: &str, record: &LockRecord, meta: &FileMeta) -> Result<ReleaseOutcome, LockError> {
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

fn finish_release(site: &LockSite, record: &LockRecord, retired: &str) -> Result<ReleaseOutcome, LockError> {
    let retired_left = site.dir.unlink(OsStr::new(retired)).is_err();
    crate::failpoint!("release.before_dir_sync");
    site.dir.sync().map_err(|e| match sync_error(e) {
        LockError::Unavailable { reason, source, .. } => LockError::Unavailable {
            reason,
            detail: Some("the lock was removed, but the directory could not be made durable".into()),
            source,
        },
        other => other,
    })?;
    Ok(ReleaseOutcome { record: record.clone(), retired_left })
}
