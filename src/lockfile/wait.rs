//! Waiting for a session to become available, as `flock -w` does (issue 18 item 6).
//!
//! # Calling sequence
//!
//! ```text
//! loop: acquire ─► ok: the lease
//!               └► a refusal that waiting may clear (a live holder, a transition claim)
//!                  and time left: pause (jittered back-off, never past the deadline), again
//!               └► anything else, or the deadline reached: that refusal, unchanged
//! ```
//!
//! What waiting may clear is decided by [`LockError::may_clear_by_waiting`]: a live owner may
//! seal or release, a holder's tree or a stray write descriptor may close, a transition
//! finishes by itself. A refusal that only a person can clear ([`LockError::needs_person`]:
//! the kernel cannot prove the old holder gone — another host or boot, missing or
//! unverifiable evidence, a record without a holder lock that managed acquisition may not
//! reclaim) is returned at once, once, with the command that clears it in its hint (issue 38
//! item 2): a pod waiting out `--wait` for it would only hide the answer. A seal this caller
//! may not take over, a malformed record or a changed transcript never change by waiting
//! either.
//!
//! The back-off starts at 50 ms and doubles up to 1 s, each pause drawn uniformly from its
//! upper half, so a fleet of waiters does not retry in lockstep; the last pause is cut to end
//! exactly at the deadline, where one last attempt is made.

use std::time::{Duration, Instant};

use super::acquire::{AcquireOptions, Lease, LockSite, acquire};
use super::error::{LockError, Unavailable};
use super::identity::ProcessProbe;
use super::liveness::Liveness;

/// The first pause.
const FIRST_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause.
const MAX_PAUSE: Duration = Duration::from_secs(1);

impl LockError {
    /// True when the condition may clear by itself while the caller waits: a live owner
    /// (it may seal or release), a holder's tree or a write descriptor that is still open
    /// (it closes when they exit), or a transition in progress (it finishes by itself).
    pub fn may_clear_by_waiting(&self) -> bool {
        match self {
            LockError::Conflict { sealed: false, managed_refused_stale: false, holder, .. } => {
                !matches!(holder.liveness, Some(Liveness::Live(r)) if !r.ends_by_itself())
            }
            LockError::TranscriptBusy { .. } => true,
            LockError::Unavailable { reason: Unavailable::TransitionClaimPresent, .. } => true,
            _ => false,
        }
    }

    /// True when only a person can clear the refusal: an active record nothing here can
    /// prove gone (another host or boot, missing or unverifiable evidence, a record without
    /// a holder lock that managed acquisition may not reclaim). The hint names the command.
    pub fn needs_person(&self) -> bool {
        match self {
            LockError::Conflict { sealed: false, managed_refused_stale: true, .. } => true,
            LockError::Conflict { sealed: false, holder, .. } => {
                matches!(holder.liveness, Some(Liveness::Live(r)) if !r.ends_by_itself())
            }
            _ => false,
        }
    }
}

/// `pause` in `[pause/2, pause]`, from the kernel's random source (a fixed midpoint if that
/// is unavailable, which only costs the de-synchronisation). Also the coordinator's
/// Postgres writer's back-off, so replicas retrying one outage do not retry in step.
pub fn jittered(pause: Duration) -> Duration {
    let mut b = [0u8; 4];
    let r = match rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty()) {
        Ok(4) => u32::from_ne_bytes(b),
        _ => u32::MAX / 2,
    };
    let half = pause / 2;
    half + half.mul_f64(f64::from(r) / f64::from(u32::MAX))
}

/// Acquires, retrying refusals that waiting may clear until `wait` has passed. `pause(d, e)`
/// is called with each pause and the refusal that caused it; it sleeps (a supervisor waits
/// on its signal queue instead) and may abort the wait with its own error.
pub fn acquire_waiting<E: From<LockError>>(
    site: &LockSite,
    opts: &AcquireOptions,
    probe: &dyn ProcessProbe,
    wait: Duration,
    pause: &mut dyn FnMut(Duration, &LockError) -> Result<(), E>,
) -> Result<Lease, E> {
    let deadline = Instant::now() + wait;
    let mut next = FIRST_PAUSE;
    loop {
        let e = match acquire(site, opts, probe) {
            Ok(lease) => return Ok(lease),
            Err(e) => e,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if !e.may_clear_by_waiting() || left.is_zero() {
            return Err(e.into());
        }
        pause(jittered(next).min(left), &e)?;
        next = (next * 2).min(MAX_PAUSE);
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage files by hand
mod tests {
    use super::*;
    use crate::lockfile::acquire::{DirMode, ReclaimPolicy, open_site};
    use crate::lockfile::identity::{SystemProbe, holder};
    use crate::lockfile::paths::LockPaths;
    use crate::lockfile::release::release;
    use crate::lockfile::sys::own_pid;

    fn opts() -> AcquireOptions {
        AcquireOptions {
            holder: holder(own_pid()),
            process_kind: "unknown".into(),
            reclaim: ReclaimPolicy::Never,
            transcript: None,
            certified: None,
            holder_lock: false,
        }
    }

    #[test]
    fn jitter_stays_in_the_upper_half() {
        for _ in 0..200 {
            let j = jittered(Duration::from_millis(400));
            assert!(j >= Duration::from_millis(200) && j <= Duration::from_millis(400), "{j:?}");
        }
    }

    #[test]
    fn a_live_holder_is_waited_for_until_it_releases() {
        let t = tempfile::tempdir().unwrap();
        let site = open_site(t.path(), LockPaths::for_session(t.path(), "s"), "s", DirMode::Create).unwrap();
        let held = acquire(&site, &opts(), &SystemProbe).unwrap();
        let mut pauses = Vec::new();
        let mut released = false;
        let lease = acquire_waiting::<LockError>(&site, &opts(), &SystemProbe, Duration::from_secs(60), &mut |d, e| {
            assert!(e.may_clear_by_waiting(), "{e:?}");
            pauses.push(d);
            if pauses.len() == 3 && !released {
                release(&site, &held.owner).unwrap();
                released = true;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(pauses.len(), 3);
        assert!(pauses[0] <= FIRST_PAUSE && pauses[1] <= FIRST_PAUSE * 2 && pauses[2] <= FIRST_PAUSE * 4, "{pauses:?}");
        release(&site, &lease.owner).unwrap();
    }

    #[test]
    fn the_deadline_is_kept_and_the_last_refusal_returned() {
        let t = tempfile::tempdir().unwrap();
        let site = open_site(t.path(), LockPaths::for_session(t.path(), "s"), "s", DirMode::Create).unwrap();
        let _held = acquire(&site, &opts(), &SystemProbe).unwrap();
        let mut slept = Duration::ZERO;
        let e = acquire_waiting::<LockError>(&site, &opts(), &SystemProbe, Duration::from_millis(300), &mut |d, _| {
            slept += d;
            std::thread::sleep(d);
            Ok(())
        })
        .unwrap_err();
        assert!(matches!(e, LockError::Conflict { sealed: false, .. }), "{e:?}");
        assert!(slept <= Duration::from_millis(300), "paused past the deadline: {slept:?}");
        // Without waiting: one attempt, no pause.
        let e = acquire_waiting::<LockError>(&site, &opts(), &SystemProbe, Duration::ZERO, &mut |_, _| {
            panic!("no pause without --wait")
        })
        .unwrap_err();
        assert!(matches!(e, LockError::Conflict { .. }));
    }

    #[test]
    fn refusals_that_waiting_cannot_clear_return_at_once() {
        let t = tempfile::tempdir().unwrap();
        let site = open_site(t.path(), LockPaths::for_session(t.path(), "s"), "s", DirMode::Create).unwrap();
        std::fs::write(site.lock_path(), b"not a record").unwrap();
        let e = acquire_waiting::<LockError>(&site, &opts(), &SystemProbe, Duration::from_secs(60), &mut |_, e| {
            panic!("waited on {e:?}")
        })
        .unwrap_err();
        assert!(matches!(e, LockError::Malformed { .. }), "{e:?}");
    }
}
