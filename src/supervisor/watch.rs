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
//! A "no" is a loss. An I/O error proves nothing either way ([`Check::Unverified`]), and
//! neither does a check that never answers: both are tolerated for up to `--max-unverified`,
//! then treated as a loss ([`Clock`]), because a network volume that stays unreadable may just
//! as well have let another host in.
//!
//! # Why the clock never waits for a check (issue 38, reproduction 6)
//!
//! On a hard NFS mount whose server went away, or a FUSE volume whose server is stopped, a
//! `stat` of the lock directory does not fail: it sleeps in the kernel until the server is
//! back. A check made on the supervisor's own thread stopped the watchdog, signal forwarding
//! and the grace kill with it, and the writer ran on under a lock nobody could verify. So a
//! check only ever runs on a worker thread (`supervisor::checker`) that may block for good, and
//! the supervisor's loop measures, from its own clock, how long the lock has gone without an
//! answer of "held": a check still in flight counts from the moment it started, exactly like
//! a failing one. [`Clock`] is that bookkeeping, pure over [`Instant`]s.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::lockfile::release::read_owned;
use crate::lockfile::sys::{DirSyncError, FileMeta};
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

/// What a check compares `L` with: our exact record and the inode we installed. Owned, so
/// the checker thread needs nothing borrowed from the supervisor.
#[derive(Debug, Clone)]
pub struct Ours {
    raw: Vec<u8>,
    meta: FileMeta,
}

impl Ours {
    /// The record and identity of `lease`.
    pub fn of(lease: &Lease) -> Ours {
        Ours { raw: lease.record.raw.clone(), meta: lease.meta }
    }
}

/// Checks the lock directory's identity, then our record (see the module docs). May block
/// for as long as the filesystem does: call it only where nothing waits for the answer.
pub fn check(site: &LockSite, ours: &Ours) -> Check {
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
    match read_owned(site, |r| r.raw == ours.raw) {
        Ok((_, meta)) if meta.same_identity(&ours.meta) => Check::Held,
        Ok(_) => Check::Lost(LockError::NotOwner {
            path: site.lock_path(),
            reason: "the lock was replaced by a copy (another inode)".into(),
        }),
        Err(e @ LockError::NotOwner { .. }) => Check::Lost(e),
        Err(e) => Check::Unverified(e.to_string()),
    }
}

/// When to check, and when the lock counts as lost for want of an answer.
///
/// The lock is *unverified* from the start of the first check that did not answer "held" —
/// one that failed, or one still in flight — until a check answers "held". Unverified for
/// `max_unverified`, it counts as lost ([`Clock::expired`]), whether or not the check in
/// flight ever returns. At most one check is in flight: one stuck in the kernel is not
/// joined by another each interval.
#[derive(Debug)]
pub struct Clock {
    interval: Duration,
    max_unverified: Duration,
    /// When the next check is due (while none is in flight).
    next_due: Instant,
    /// When the check in flight started.
    in_flight: Option<Instant>,
    /// When the first check that answered anything but "held" started (the current streak).
    failing_since: Option<Instant>,
    /// Why the last check of the streak could not verify the lock.
    last_error: Option<String>,
    /// When the last check that answered "held" started: the lock was ours at least then.
    last_held: Option<Instant>,
}

impl Clock {
    /// A clock whose first check is due one `interval` after `now`.
    pub fn new(now: Instant, interval: Duration, max_unverified: Duration) -> Clock {
        Clock {
            interval,
            max_unverified,
            next_due: now + interval,
            in_flight: None,
            failing_since: None,
            last_error: None,
            last_held: None,
        }
    }

    /// Whether a check should start at `now` (none in flight, and one is due).
    pub fn due(&self, now: Instant) -> bool {
        self.in_flight.is_none() && now >= self.next_due
    }

    /// A check is wanted at once (the next one that can start, starts).
    pub fn hurry(&mut self, now: Instant) {
        self.next_due = self.next_due.min(now);
    }

    /// A check started at `now`.
    pub fn started(&mut self, now: Instant) {
        self.in_flight = Some(now);
    }

    /// The check that started at `started` answered `check` at `now`: `Some` when the lock
    /// must be treated as lost (proven, or unverified for too long).
    pub fn answered(&mut self, started: Instant, check: Check, now: Instant, lock_path: &Path) -> Option<LockError> {
        if self.in_flight == Some(started) {
            self.in_flight = None;
        }
        self.next_due = now + self.interval;
        match check {
            Check::Held => {
                self.failing_since = None;
                self.last_error = None;
                self.last_held = Some(self.last_held.map_or(started, |h| h.max(started)));
                None
            }
            Check::Lost(e) => Some(e),
            Check::Unverified(why) => {
                let since = self.failing_since.get_or_insert(started);
                *since = (*since).min(started);
                self.last_error = Some(why);
                self.expired(now, lock_path)
            }
        }
    }

    /// True when a check that started at or after `t` answered "held".
    pub fn verified_since(&self, t: Instant) -> bool {
        self.last_held.is_some_and(|h| h >= t)
    }

    /// Since when the lock has gone unverified: the first failure of the current streak, or
    /// the start of the check in flight, whichever is earlier.
    fn unverified_since(&self) -> Option<Instant> {
        match (self.failing_since, self.in_flight) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// `Some` when, at `now`, the lock has gone unverified for `max_unverified` or longer:
    /// the supervisor must act as if it were lost, without waiting for the check in flight.
    pub fn expired(&self, now: Instant, lock_path: &Path) -> Option<LockError> {
        let since = self.unverified_since()?;
        let for_how_long = now.saturating_duration_since(since);
        if for_how_long < self.max_unverified {
            return None;
        }
        let (secs, max) = (for_how_long.as_secs(), self.max_unverified.as_secs());
        let waiting = self.in_flight.map(|s| now.saturating_duration_since(s));
        let reason = match (&self.last_error, waiting) {
            // Nothing failed: the filesystem simply has not answered (a hung mount).
            (None, _) => format!(
                "the lock directory did not answer for {secs}s (--max-unverified {max}s; a check of the lock is still waiting on it): the lock could not be verified, so it is treated as lost"
            ),
            (Some(why), Some(w)) => format!(
                "the lock could not be verified for {secs}s (--max-unverified {max}s; last error: {why}; the check since has waited {}s for the lock directory), so it is treated as lost",
                w.as_secs()
            ),
            (Some(why), None) => format!(
                "the lock could not be verified for {secs}s (--max-unverified {max}s; last error: {why}), so it is treated as lost"
            ),
        };
        Some(LockError::NotOwner { path: lock_path.to_path_buf(), reason })
    }

    /// The next moment the supervisor must look at the clock: when a check is due (if none
    /// is in flight) or when the lock would count as lost, whichever comes first.
    pub fn next_wake(&self) -> Instant {
        let due = self.in_flight.is_none().then_some(self.next_due);
        let lost = self.unverified_since().map(|s| s + self.max_unverified);
        match (due, lost) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(self.next_due),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "/l";

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn unverified() -> Check {
        Check::Unverified("EIO".into())
    }

    /// Starts a check at `at` and lets it answer `check` at `at + took`.
    fn check_at(c: &mut Clock, at: Instant, took: Duration, check: Check) -> Option<LockError> {
        assert!(c.due(at), "a check is due at {at:?}");
        c.started(at);
        c.answered(at, check, at + took, Path::new(P))
    }

    #[test]
    fn unverified_checks_count_as_lost_only_past_the_bound_and_a_good_check_resets() {
        let t0 = Instant::now();
        let mut c = Clock::new(t0, s(1), s(30));
        assert!(check_at(&mut c, t0 + s(1), Duration::ZERO, unverified()).is_none());
        assert!(check_at(&mut c, t0 + s(30), Duration::ZERO, unverified()).is_none());
        // A good check in between starts the count again.
        assert!(check_at(&mut c, t0 + s(31), Duration::ZERO, Check::Held).is_none());
        assert!(c.expired(t0 + s(100), Path::new(P)).is_none(), "held, and no check in flight");
        assert!(check_at(&mut c, t0 + s(40), Duration::ZERO, unverified()).is_none());
        assert!(check_at(&mut c, t0 + s(69), Duration::ZERO, unverified()).is_none());
        let lost = check_at(&mut c, t0 + s(70), Duration::ZERO, unverified()).expect("30 s unverified");
        assert!(lost.to_string().contains("could not be verified for 30s"), "{lost}");
        assert!(lost.to_string().contains("--max-unverified 30s"), "{lost}");
        assert!(lost.to_string().contains("EIO"), "{lost}");
    }

    #[test]
    fn a_proven_loss_is_lost_at_once() {
        let t0 = Instant::now();
        let mut c = Clock::new(t0, s(1), s(3600));
        let e = LockError::NotOwner { path: P.into(), reason: "moved".into() };
        assert!(check_at(&mut c, t0 + s(1), Duration::ZERO, Check::Lost(e)).is_some());
    }

    /// Issue 38, reproduction 6: a check that never returns counts from the moment it
    /// started, and the clock says so without any answer from it.
    #[test]
    fn a_check_that_never_answers_counts_as_lost_past_the_bound() {
        let t0 = Instant::now();
        let p = Path::new(P);
        let mut c = Clock::new(t0, s(1), s(3));
        assert!(check_at(&mut c, t0 + s(1), Duration::ZERO, Check::Held).is_none());
        let hung = t0 + s(2);
        assert!(c.due(hung));
        c.started(hung);
        // In flight: no second check is started on top of it.
        assert!(!c.due(hung + s(10)));
        assert_eq!(c.next_wake(), hung + s(3), "wake when the bound runs out, not at the next interval");
        assert!(c.expired(hung + s(3) - Duration::from_millis(1), p).is_none());
        let lost = c.expired(hung + s(3), p).expect("3 s without an answer");
        let msg = lost.to_string();
        assert!(msg.contains("did not answer for 3s") && msg.contains("--max-unverified 3s"), "{msg}");
        assert!(c.expired(hung + s(600), p).is_some(), "still lost later");
    }

    /// A failing streak that then hangs counts from the first failure, not from the hang.
    #[test]
    fn a_failure_then_a_hang_counts_from_the_first_failure() {
        let t0 = Instant::now();
        let p = Path::new(P);
        let mut c = Clock::new(t0, s(1), s(10));
        assert!(check_at(&mut c, t0 + s(1), Duration::ZERO, unverified()).is_none());
        c.started(t0 + s(2));
        assert_eq!(c.next_wake(), t0 + s(11));
        assert!(c.expired(t0 + s(10), p).is_none());
        let msg = c.expired(t0 + s(11), p).expect("10 s since the first failure").to_string();
        assert!(
            msg.contains("could not be verified for 10s") && msg.contains("EIO") && msg.contains("waited 9s"),
            "{msg}"
        );
    }

    /// A slow check that does answer "held" is no loss, and resets the count.
    #[test]
    fn a_slow_check_that_answers_held_resets_the_count() {
        let t0 = Instant::now();
        let p = Path::new(P);
        let mut c = Clock::new(t0, s(1), s(3));
        c.started(t0 + s(1));
        assert!(c.answered(t0 + s(1), Check::Held, t0 + s(3), p).is_none());
        assert!(c.expired(t0 + s(60), p).is_none());
        assert!(!c.due(t0 + s(3)) && c.due(t0 + s(4)), "the next check is one interval after the answer");
    }

    /// Before a handoff the supervisor wants a check that started after the drain: one in
    /// flight from before does not count, and its "held" does not either.
    #[test]
    fn only_a_check_started_after_a_moment_verifies_since_it() {
        let t0 = Instant::now();
        let p = Path::new(P);
        let mut c = Clock::new(t0, s(60), s(30));
        c.hurry(t0);
        assert!(c.due(t0));
        c.started(t0);
        let drained = t0 + s(1);
        c.hurry(drained);
        assert!(!c.due(drained), "one check at a time");
        assert!(c.answered(t0, Check::Held, t0 + s(2), p).is_none());
        assert!(!c.verified_since(drained), "that check started before the drain ended");
        c.hurry(t0 + s(2));
        assert!(c.due(t0 + s(2)), "hurried: due at once, not an interval later");
        c.started(t0 + s(2));
        assert!(c.answered(t0 + s(2), Check::Held, t0 + s(3), p).is_none());
        assert!(c.verified_since(drained));
    }

    #[test]
    fn the_first_check_is_due_one_interval_after_the_start() {
        let t0 = Instant::now();
        let c = Clock::new(t0, s(2), s(30));
        assert!(!c.due(t0 + s(1)));
        assert!(c.due(t0 + s(2)));
        assert_eq!(c.next_wake(), t0 + s(2));
    }
}
