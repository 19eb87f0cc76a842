//! Holding the line between checks (issue 27 item 3): while the writer runs *and while it
//! drains*, the supervisor re-checks that the lock is still its own, and a lock it cannot
//! verify for too long counts as lost.
//!
//! # What a check proves
//!
//! [`check`] asks two things, cheapest first:
//!
//! 1. Does the lock directory's path still name the directory we hold open? A directory
//!    moved aside (or replaced by another) keeps our record readable through our descriptor
//!    while every other process looks at a different directory — where anyone may acquire.
//! 2. Is `L` still our exact record, on the inode we installed? (A `recover` elsewhere, an
//!    operator's copy or edit.)
//!
//! A "no" is a loss. An I/O error proves nothing either way ([`Check::Unverified`]): it is
//! tolerated for up to `--max-unverified`, then treated as a loss ([`Watch`]), because a
//! network volume that stays unreadable may just as well have let another host in.

use std::time::{Duration, Instant};

use crate::lockfile::release::read_owned;
use crate::lockfile::sys::DirSyncError;
use crate::lockfile::{Lease, LockError, LockSite};

/// What one check found.
#[derive(Debug)]
pub enum Check {
    /// Still ours.
    Held,
    /// Proven lost.
    Lost(LockError),
    /// Could not be checked (why).
    Unverified(String),
}

/// Checks the lock directory's identity, then our record (see the module docs).
pub fn check(site: &LockSite, lease: &Lease) -> Check {
    match site.dir.check_still_at_path() {
        Ok(()) => {}
        Err(DirSyncError::Changed) => {
            return Check::Lost(LockError::NotOwner {
                path: site.lock_path(),
                reason: "the lock directory was moved or replaced (its path names another directory than the one held)"
                    .into(),
            });
        }
        Err(DirSyncError::Io(e)) => return Check::Unverified(format!("cannot stat the lock directory: {e}")),
    }
    match read_owned(site, |r| r.raw == lease.record.raw) {
        Ok((_, meta)) if meta.same_identity(&lease.meta) => Check::Held,
        Ok(_) => Check::Lost(LockError::NotOwner {
            path: site.lock_path(),
            reason: "the lock was replaced by a copy (another inode)".into(),
        }),
        Err(e @ LockError::NotOwner { .. }) => Check::Lost(e),
        Err(e) => Check::Unverified(e.to_string()),
    }
}

/// Bounds how long the lock may stay unverifiable before it counts as lost.
#[derive(Debug)]
pub struct Watch {
    max_unverified: Duration,
    since: Option<Instant>,
}

impl Watch {
    /// A watch that tolerates `max_unverified` of failed checks in a row.
    pub fn new(max_unverified: Duration) -> Watch {
        Watch { max_unverified, since: None }
    }

    /// Folds one check made at `now` in: `Some` when the lock must be treated as lost.
    pub fn observe(&mut self, check: Check, now: Instant, lock_path: &std::path::Path) -> Option<LockError> {
        match check {
            Check::Held => {
                self.since = None;
                None
            }
            Check::Lost(e) => Some(e),
            Check::Unverified(why) => {
                let since = *self.since.get_or_insert(now);
                let for_how_long = now.saturating_duration_since(since);
                (for_how_long >= self.max_unverified).then(|| LockError::NotOwner {
                    path: lock_path.to_path_buf(),
                    reason: format!(
                        "the lock could not be verified for {}s (--max-unverified {}s; last error: {why}), so it is treated as lost",
                        for_how_long.as_secs(),
                        self.max_unverified.as_secs()
                    ),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn unverified_checks_count_as_lost_only_past_the_bound_and_a_good_check_resets() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let p = Path::new("/l");
        let mut w = Watch::new(s(30));
        let unverified = || Check::Unverified("EIO".into());
        assert!(w.observe(unverified(), t0, p).is_none());
        assert!(w.observe(unverified(), t0 + s(29), p).is_none());
        // A good check in between starts the count again.
        assert!(w.observe(Check::Held, t0 + s(29), p).is_none());
        assert!(w.observe(unverified(), t0 + s(40), p).is_none());
        assert!(w.observe(unverified(), t0 + s(69), p).is_none());
        let lost = w.observe(unverified(), t0 + s(70), p).expect("30 s unverified");
        assert!(lost.to_string().contains("could not be verified for 30s"), "{lost}");
        assert!(lost.to_string().contains("EIO"), "{lost}");
    }

    #[test]
    fn a_proven_loss_is_lost_at_once() {
        let mut w = Watch::new(Duration::from_secs(3600));
        let e = LockError::NotOwner { path: "/l".into(), reason: "moved".into() };
        assert!(w.observe(Check::Lost(e), Instant::now(), Path::new("/l")).is_some());
    }
}
