//! `master status --watch` pushed by the server: a per-project registry of what watchers
//! wait for, so that a watcher costs one idle connection — no thread, no store read of its
//! own (issue 30: measured with 1,000 watchers in `benches/watchers.rs`).
//!
//! # How a change reaches a watcher
//!
//! ```text
//! GET /v1/projects/P/master/watch?after=V&wait_ms=W
//!   └─ Watchers::subscribe(P) ── first watcher of P? ──► spawn P's checker task
//!        wait on a tokio::sync::watch receiver (no thread) until the state's version != V,
//!        or W (at most MAX_LONG_POLL) passed: answer the state as it is
//!
//! P's checker (one task per watched project, whatever the number of watchers):
//!   loop { read P's status once (blocking pool); publish it if its version changed;
//!          wait for a poke or RECHECK, and at least MIN_GAP since the read;
//!          stop when P has no watcher left }
//!
//! a write verb on P answered by this server ──► Watchers::poke(P) ──► the checker reads now
//! ```
//!
//! A poke is this replica's own write; a change made through another replica (over the
//! same Redis + Postgres), and a controller turning stale as time passes (no write at all),
//! are seen by the checker's periodic read within [`RECHECK`]. A poke that arrives while the
//! checker reads is kept (`Notify::notify_one` stores a permit), so no write is missed; a
//! burst of pokes costs one more read, not one per poke.
//!
//! The store is read once per project per change (or per [`RECHECK`]), not per watcher:
//! the cost that grows with watchers is their connections and a receiver each.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::claim::ClaimError;

/// How often a watched project is read although nothing poked it: the bound on how late a
/// watcher learns of another replica's write or of a controller that went stale.
pub const RECHECK: Duration = Duration::from_secs(2);

/// The least time between two reads of one project: writes that poke faster (a thousand
/// controllers' heartbeats) are coalesced into one read per gap, so the store reads for
/// watchers stay at most 1/gap per project whatever the write rate.
pub const MIN_GAP: Duration = Duration::from_millis(200);

/// The longest a watcher waits for a newly watched project's first read (a status read
/// takes milliseconds; a store that does not answer is reported after this).
pub const FIRST_READ: Duration = Duration::from_secs(10);

/// A reading a watcher can compare with what it saw.
pub trait Versioned: Clone + Send + Sync + 'static {
    /// A fingerprint of what a watcher shows: equal versions, nothing to show.
    fn version(&self) -> &str;
}

/// One read of a project's state (an error is shown to its watchers as it is).
pub type Reading<T> = Result<T, ClaimError>;

/// How the registry reads a project (blocking: it runs on the blocking pool).
pub type Reader<T> = Arc<dyn Fn(&str) -> Reading<T> + Send + Sync>;

/// One watched project: its checker's wake-up and its latest reading.
struct Project<T> {
    poke: Notify,
    latest: watch::Sender<Option<Reading<T>>>,
}

/// Every watched project of this server. See the module documentation.
pub struct Watchers<T: Versioned> {
    projects: Mutex<HashMap<String, Arc<Project<T>>>>,
    read: Reader<T>,
    recheck: Duration,
    reads: AtomicU64,
    /// Set when the server shuts down: every waiting watcher is answered at once, so a
    /// graceful shutdown is not held up by long polls (the watchers then see the server
    /// gone, say so, and retry).
    closing: watch::Sender<bool>,
}

impl<T: Versioned> Watchers<T> {
    /// A registry reading projects with `read`, re-read every `recheck` while watched.
    pub fn new(read: Reader<T>, recheck: Duration) -> Arc<Watchers<T>> {
        let closing = watch::Sender::new(false);
        Arc::new(Watchers { projects: Mutex::default(), read, recheck, reads: AtomicU64::new(0), closing })
    }

    /// A receiver of `project`'s readings, starting its checker for the first watcher.
    /// Needs a tokio runtime. The first reading is `None` until the checker's first read.
    pub fn subscribe(self: &Arc<Self>, project: &str) -> watch::Receiver<Option<Reading<T>>> {
        let mut projects = self.projects.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = projects.get(project) {
            return p.latest.subscribe();
        }
        let (latest, rx) = watch::channel(None);
        let p = Arc::new(Project { poke: Notify::new(), latest });
        projects.insert(project.to_string(), p.clone());
        tokio::spawn(check(Arc::downgrade(self), project.to_string(), p));
        rx
    }

    /// This server wrote to `project`: its checker (if watched) reads it again now.
    pub fn poke(&self, project: &str) {
        let projects = self.projects.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = projects.get(project) {
            p.poke.notify_one();
        }
    }

    /// Watchers waiting now (every project).
    pub fn watching(&self) -> u64 {
        let projects = self.projects.lock().unwrap_or_else(|p| p.into_inner());
        projects.values().map(|p| p.latest.receiver_count() as u64).sum()
    }

    /// Projects with a checker now.
    pub fn projects(&self) -> usize {
        self.projects.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Store reads the checkers made since the server started.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// The server is shutting down: answer every waiting watcher now, and any later one at
    /// once.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Waits until `rx` holds a reading whose version differs from `after`, `wait` passed,
    /// or the server shuts down; returns the reading then (`None`: the project's first read
    /// did not finish within [`FIRST_READ`]).
    pub async fn next_reading(
        &self,
        rx: &mut watch::Receiver<Option<Reading<T>>>,
        after: Option<&str>,
        wait: Duration,
    ) -> Option<Reading<T>> {
        let news = |r: &Option<Reading<T>>| match r {
            Some(Ok(t)) => after != Some(t.version()),
            Some(Err(_)) => true,
            None => false,
        };
        let mut closing = self.closing.subscribe();
        // A project watched for the first time has no reading until its checker's first
        // read: an answer needs one, whatever `wait` says (a request with no wait, as a
        // client sends to see whether the server is back, still gets the state).
        let first = tokio::select! {
            r = rx.wait_for(Option::is_some) => r.is_ok(),
            () = tokio::time::sleep(FIRST_READ) => false,
            _ = closing.wait_for(|c| *c) => false,
        };
        if !first {
            return rx.borrow().clone();
        }
        let got = tokio::select! {
            r = rx.wait_for(news) => r.ok().map(|r| r.clone()),
            () = tokio::time::sleep(wait) => None,
            _ = closing.wait_for(|c| *c) => None,
        };
        // Timed out, shutting down (or the checker ended): whatever there is now.
        got.unwrap_or_else(|| rx.borrow().clone())
    }

    /// Removes `project` when nobody watches it any more (under the registry's lock, so a
    /// watcher subscribing at the same moment either keeps it or starts a new checker).
    fn retire_if_unwatched(&self, project: &str, p: &Arc<Project<T>>) -> bool {
        let mut projects = self.projects.lock().unwrap_or_else(|p| p.into_inner());
        if p.latest.receiver_count() > 0 {
            return false;
        }
        if projects.get(project).is_some_and(|q| Arc::ptr_eq(q, p)) {
            projects.remove(project);
        }
        true
    }
}

/// A project's checker: one read per poke (at most one per [`MIN_GAP`]) or
/// [`Watchers::recheck`], published when its version (or error) changed; ends when the
/// project has no watcher (or the server is gone).
async fn check<T: Versioned>(registry: std::sync::Weak<Watchers<T>>, project: String, p: Arc<Project<T>>) {
    loop {
        let Some(w) = registry.upgrade() else { return };
        let read_at = tokio::time::Instant::now();
        let (read, name) = (w.read.clone(), project.clone());
        let reading = match tokio::task::spawn_blocking(move || read(&name)).await {
            Ok(r) => r,
            Err(e) => Err(ClaimError::Store(format!("watch read failed: {e}"))),
        };
        w.reads.fetch_add(1, Ordering::Relaxed);
        p.latest.send_if_modified(|latest| {
            let same = match (&*latest, &reading) {
                (Some(Ok(a)), Ok(b)) => a.version() == b.version(),
                (Some(Err(a)), Err(b)) => a == b,
                _ => false,
            };
            if !same {
                *latest = Some(reading);
            }
            !same
        });
        let recheck = w.recheck;
        drop(w);
        tokio::select! {
            () = p.poke.notified() => {}
            () = tokio::time::sleep(recheck) => {}
        }
        tokio::time::sleep_until(read_at + MIN_GAP).await;
        let Some(w) = registry.upgrade() else { return };
        if w.retire_if_unwatched(&project, &p) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct V(String);
    impl Versioned for V {
        fn version(&self) -> &str {
            &self.0
        }
    }

    /// A registry over a counter: each read returns the counter's value as its version.
    fn counting(recheck: Duration) -> (Arc<Watchers<V>>, Arc<AtomicU64>) {
        let state = Arc::new(AtomicU64::new(1));
        let s = state.clone();
        let read: Reader<V> = Arc::new(move |_p: &str| Ok(V(s.load(Ordering::SeqCst).to_string())));
        (Watchers::new(read, recheck), state)
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_waiter_wakes_on_a_poked_write_and_not_before() {
        let (w, state) = counting(Duration::from_secs(3600));
        let mut rx = w.subscribe("p");
        let first = w.next_reading(&mut rx, None, Duration::from_secs(5)).await.unwrap().unwrap();
        assert_eq!(first, V("1".into()));
        // Nothing changed: the wait runs out and answers the same version.
        let same = w.next_reading(&mut rx, Some("1"), Duration::from_secs(30)).await.unwrap().unwrap();
        assert_eq!(same, V("1".into()));
        let reads_before = w.reads();
        let waiter = {
            let (mut rx, w) = (w.subscribe("p"), w.clone());
            tokio::spawn(async move { w.next_reading(&mut rx, Some("1"), Duration::from_secs(3000)).await })
        };
        tokio::task::yield_now().await;
        state.store(2, Ordering::SeqCst);
        w.poke("p");
        let got = waiter.await.unwrap().unwrap().unwrap();
        assert_eq!(got, V("2".into()), "the poke did not reach the waiter");
        assert_eq!(w.reads(), reads_before + 1, "one poke, one read");
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn many_waiters_share_one_read_per_change() {
        let (w, state) = counting(Duration::from_secs(3600));
        let mut waiters = Vec::new();
        for _ in 0..100 {
            let (mut rx, w) = (w.subscribe("p"), w.clone());
            waiters
                .push(tokio::spawn(async move { w.next_reading(&mut rx, Some("1"), Duration::from_secs(3000)).await }));
        }
        // Let the checker's first read (version 1) land: nobody is answered by it.
        while w.reads() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(w.watching(), 100);
        state.store(7, Ordering::SeqCst);
        w.poke("p");
        for h in waiters {
            assert_eq!(h.await.unwrap().unwrap().unwrap(), V("7".into()));
        }
        assert_eq!(w.reads(), 2, "100 waiters, 2 reads (the first, and the one after the poke)");
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_change_nobody_pokes_is_seen_at_the_recheck() {
        let (w, state) = counting(Duration::from_secs(2));
        let mut rx = w.subscribe("p");
        let _ = w.next_reading(&mut rx, None, Duration::from_secs(5)).await;
        state.store(3, Ordering::SeqCst); // another replica's write: no poke here
        let got = w.next_reading(&mut rx, Some("1"), Duration::from_secs(30)).await.unwrap().unwrap();
        assert_eq!(got, V("3".into()));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_checker_ends_when_the_last_watcher_leaves() {
        let (w, _state) = counting(Duration::from_secs(2));
        let mut rx = w.subscribe("p");
        let _ = w.next_reading(&mut rx, None, Duration::from_secs(5)).await;
        assert_eq!(w.projects(), 1);
        drop(rx);
        // The checker notices at its next recheck, removes the project and returns.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(w.projects(), 0, "a project nobody watches kept its checker");
        let reads = w.reads();
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(w.reads(), reads, "the checker kept reading after it was retired");
        // Watching again starts a new checker.
        let mut rx = w.subscribe("p");
        assert!(w.next_reading(&mut rx, None, Duration::from_secs(5)).await.is_some());
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn closing_answers_every_waiter_at_once() {
        let (w, _state) = counting(Duration::from_secs(3600));
        let mut rx = w.subscribe("p");
        let _ = w.next_reading(&mut rx, None, Duration::from_secs(5)).await;
        let waiter = {
            let (mut rx, w) = (w.subscribe("p"), w.clone());
            tokio::spawn(async move { w.next_reading(&mut rx, Some("1"), Duration::from_secs(3000)).await })
        };
        tokio::task::yield_now().await;
        let before = tokio::time::Instant::now();
        w.close();
        let got = waiter.await.unwrap().unwrap().unwrap();
        assert_eq!(got, V("1".into()), "a closing server answers the state as it is");
        assert!(before.elapsed() < Duration::from_secs(3000), "the waiter sat out its whole wait");
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_request_that_does_not_wait_still_gets_the_first_reading() {
        let (w, _state) = counting(Duration::from_secs(3600));
        let mut rx = w.subscribe("p");
        let got = w.next_reading(&mut rx, None, Duration::ZERO).await;
        assert_eq!(got.unwrap().unwrap(), V("1".into()));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_burst_of_writes_costs_one_read_per_gap() {
        let (w, state) = counting(Duration::from_secs(3600));
        let mut rx = w.subscribe("p");
        let _ = w.next_reading(&mut rx, None, Duration::from_secs(5)).await;
        let started = tokio::time::Instant::now();
        // 1,000 pokes over one second (a heartbeat each millisecond).
        for i in 0..1000 {
            state.store(10 + i, Ordering::SeqCst);
            w.poke("p");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let elapsed = started.elapsed();
        let got = w.next_reading(&mut rx, Some("0"), Duration::from_secs(5)).await.unwrap().unwrap();
        assert!(got.0.parse::<u64>().unwrap() >= 10, "the burst was not read at all");
        let most = 2 + (elapsed.as_millis() / MIN_GAP.as_millis()) as u64;
        assert!(w.reads() <= most, "{} reads for 1,000 pokes in {elapsed:?} (at most {most})", w.reads());
    }
}
