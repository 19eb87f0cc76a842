//! The thread that checks the lock, so that nothing else ever waits on the lock directory
//! (issue 38, reproduction 6).
//!
//! A check ([`watch::check`]) is a `stat` of the lock directory's path and a small read of
//! `L`. On a hard NFS mount whose server went away, or a FUSE volume whose server is stopped,
//! either may sleep in the kernel until the server answers — for ever, as far as the
//! supervisor can tell. So checks run here, one at a time, on a thread of their own that owns
//! everything it touches (a duplicate of the lock directory's descriptor, a copy of our
//! record) and reports each answer as a message in the supervisor's queue. The supervisor
//! never joins it, never waits for it, and exits while it is stuck: the exit's SIGKILL ends
//! a `hard` NFS call, and a FUSE request the server has not taken yet. (A FUSE request the
//! server took and never answers holds the thread, and so the process's exit, until the
//! server answers or its connection is aborted: nothing in user space can end that.)
//! How long the lock has gone without an answer is the supervisor's own clock's business
//! ([`watch::Clock`]); [`Watchdog`] pairs the two for the supervisor's loop.
//!
//! The thread blocks every signal: a signal the kernel hands to a thread asleep in a
//! filesystem request would stay pending there, and a SIGTERM meant for the writer would
//! never reach the supervisor's loop.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use crate::lockfile::{Lease, LockError, LockSite};

use super::watch::{self, Ours};
use super::{Msg, RunConfig};

/// The handle the supervisor asks for checks through.
struct Checker {
    requests: Sender<Instant>,
}

impl Checker {
    /// Starts the thread, with its own handle on `site`'s directory (a descriptor duplicate:
    /// nothing here touches the filesystem).
    fn spawn(site: &LockSite, ours: Ours, answers: Sender<Msg>) -> std::io::Result<Checker> {
        let site = LockSite {
            paths: site.paths.clone(),
            dir: site.dir.try_clone()?,
            session_id: site.session_id.clone(),
            local: site.local.clone(),
        };
        let (requests, queue) = mpsc::channel::<Instant>();
        std::thread::Builder::new().name("writerctl-lock-check".into()).spawn(move || {
            block_all_signals();
            // Ends when the supervisor drops its handle or its queue (it returned).
            for started in queue {
                let check = watch::check(&site, &ours);
                if answers.send(Msg::Checked { started, check }).is_err() {
                    break;
                }
            }
        })?;
        Ok(Checker { requests })
    }

    /// Asks for a check, stamped `started`. A thread that is gone (it panicked) cannot
    /// answer: the clock then runs out as for a check stuck in the kernel (fail closed).
    fn start(&self, started: Instant) {
        let _ = self.requests.send(started);
    }
}

/// The lock checks of a running supervisor: a [`watch::Clock`] on this thread, the checks
/// themselves on the checker thread. Nothing here ever waits on the lock directory.
pub(super) struct Watchdog {
    pub(super) clock: watch::Clock,
    /// `None` when the thread could not be started: no check can answer, so the clock runs
    /// out and the lock counts as lost (fail closed).
    checker: Option<Checker>,
}

impl Watchdog {
    pub(super) fn start(cfg: &RunConfig, lease: &Lease, tx: &Sender<Msg>) -> Watchdog {
        let now = Instant::now();
        let mut clock = watch::Clock::new(now, cfg.check_interval, cfg.max_unverified);
        let checker = match Checker::spawn(&cfg.site, watch::Ours::of(lease), tx.clone()) {
            Ok(c) => Some(c),
            Err(e) => {
                clock.started(now);
                let why = watch::Check::Unverified(format!("cannot start the lock checker: {e}"));
                let _ = clock.answered(now, why, now, &cfg.site.lock_path());
                None
            }
        };
        Watchdog { clock, checker }
    }

    /// At `now`: `Some` when the lock counts as lost for want of an answer; otherwise starts
    /// the check that is due, if any.
    pub(super) fn tick(&mut self, now: Instant, lock_path: &Path) -> Option<LockError> {
        if let Some(e) = self.clock.expired(now, lock_path) {
            return Some(e);
        }
        if self.clock.due(now) {
            self.clock.started(now);
            if let Some(c) = &self.checker {
                c.start(now);
            }
        }
        None
    }

    /// Waits until a check that started at or after `since` says the lock is still ours —
    /// or until the clock says it is lost (a check stuck on a hung lock directory, checks
    /// that keep failing), whichever comes first. Other messages go to `other`.
    pub(super) fn verify_since(
        &mut self,
        since: Instant,
        rx: &Receiver<Msg>,
        lock_path: &Path,
        other: &mut dyn FnMut(Msg),
    ) -> Result<(), LockError> {
        self.clock.hurry(since);
        loop {
            if self.clock.verified_since(since) {
                return Ok(());
            }
            let now = Instant::now();
            if let Some(e) = self.tick(now, lock_path) {
                return Err(e);
            }
            match rx.recv_timeout(self.clock.next_wake().saturating_duration_since(now)) {
                Ok(Msg::Checked { started, check }) => {
                    if let Some(e) = self.clock.answered(started, check, Instant::now(), lock_path) {
                        return Err(e);
                    }
                    // That check began before `since`: the one that counts starts now.
                    if started < since {
                        self.clock.hurry(Instant::now());
                    }
                }
                Ok(m) => other(m),
                Err(RecvTimeoutError::Timeout) => {}
                // Not while the supervisor holds a sender; never spin if it happens.
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(self.clock.next_wake().saturating_duration_since(Instant::now()))
                }
            }
        }
    }
}

/// Blocks every signal on the calling thread, so the kernel hands process-directed signals
/// (SIGTERM, SIGINT, SIGHUP) to a thread that can act on them.
#[allow(unsafe_code)]
fn block_all_signals() {
    // SAFETY: `set` is a plain C struct that sigfillset initialises in full before it is
    // read; pthread_sigmask only changes this thread's mask and reads `set`. Neither keeps a
    // pointer. Failure (EINVAL cannot happen with SIG_BLOCK) would leave the mask as it was.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stop signals are blocked on the checker thread, so the kernel never leaves one
    /// pending on a thread asleep in a filesystem request.
    #[test]
    fn the_checker_thread_blocks_the_stop_signals() {
        let status = std::thread::spawn(|| {
            block_all_signals();
            std::fs::read_to_string("/proc/thread-self/status").unwrap()
        })
        .join()
        .unwrap();
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
            .expect("SigBlk in /proc/thread-self/status");
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            assert_ne!(mask & (1u64 << (sig - 1)), 0, "signal {sig} is not blocked: SigBlk {mask:x}");
        }
    }
}
