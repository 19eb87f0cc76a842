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
//!
//! # Bounds (issue 39 point 2)
//!
//! Watching needs no credential, and a checker was started for every distinct project
//! name asked for (6,500 checkers from 30 KB names took the server from 16 to 498 MiB).
//! Now:
//!
//! * at most [`MAX_WATCHED_PROJECTS`] projects have a checker at once; a watch of another
//!   project while that many are watched gets no receiver ([`Watchers::subscribe`] returns
//!   None) and is answered at once with one read ([`Watchers::read_now`]), as `master
//!   status` would be;
//! * a checker ends as soon as its last watcher has gone (at most [`MIN_GAP`] after its
//!   last read), so a project nobody watches, one that does not exist included, costs
//!   nothing once its watchers are answered: reading a status writes nothing;
//! * how many watches are held open at once is bounded by the server's long-poll pool
//!   (`limits::ConnGate::hold_long_poll`); a watch that gets no place there is answered
//!   at once without subscribing.

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

/// The most projects with a checker at once. A checker is a task and the project's latest
/// status; the long-poll pool holds at most a quarter of `--max-connections` watches (256
/// by default), each on one project, so 1024 is never reached by real watchers, while a
/// flood of distinct names (each checker lingering up to [`MIN_GAP`] after its watcher
/// left) stops here.
pub const MAX_WATCHED_PROJECTS: usize = 1024;

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
    /// The most projects with a checker at once ([`MAX_WATCHED_PROJECTS`]).
    max_projects: usize,
    reads: AtomicU64,
    /// Set when the server shuts down: every waiting watcher is answered at once, so a
    /// graceful shutdown is not held up by long polls (the watchers then see the server
    /// gone, say so, and retry).
    closing: watch::Sender<bool>,
}

impl<T: Versioned> Watchers<T> {
    /// A registry reading projects with `read`, re-read every `recheck` while watched.
    pub fn new(read: Reader<T>, recheck: Duration) -> Arc<Watchers<T>> {
        Watchers::with_cap(read, recheck, MAX_WATCHED_PROJECTS)
    }

    /// [`Watchers::new`] with at most `max_projects` projects watched at once.
    pub fn with_cap(read: Reader<T>, recheck: Duration, max_projects: usize) -> Arc<Watchers<T>> {
        let closing = watch::Sender::new(false);
        Arc::new(Watchers {
            projects: Mutex::default(),
            read,
            recheck,
            max_projects,
            reads: AtomicU64::new(0),
            closing,
        })
    }

    /// A receiver of `project`'s readings, starting its checker for the first watcher;
    /// None when [`MAX_WATCHED_PROJECTS`] other projects are watched (issue 39 point 2: the
    /// caller answers at once with [`Watchers::read_now`]). Needs a tokio runtime. The
    /// first reading is `None` until the checker's first read.
    pub fn subscribe(self: &Arc<Self>, project: &str) -> Option<watch::Receiver<Option<Reading<T>>>> {
        let mut projects = self.projects.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = projects.get(project) {
            return Some(p.latest.subscribe());
        }
        if projects.len() >= self.max_projects {
            return None;
        }
        let (latest, rx) = watch::channel(None);
        let p = Arc::new(Project { poke: Notify::new(), latest });
        projects.insert(project.to_string(), p.clone());
        tokio::spawn(check(Arc::downgrade(self), project.to_string(), p));
        Some(rx)
    }

    /// `project`'s state now, for a watch that is answered at once (no place in the
    /// long-poll pool, or no checker to spare): the checker's latest reading if the project
    /// is watched, else one read of the store (on the blocking pool, counted in
    /// [`Watchers::reads`]), which leaves nothing behind.
    pub async fn read_now(&self, project: &str) -> Reading<T> {
        let latest = {
            let projects = self.projects.lock().unwrap_or_else(|p| p.into_inner());
            projects.get(project).and_then(|p| p.latest.borrow().clone())
        };
        if let Some(r) = latest {
            return r;
        }
        let (read, name) = (self.read.clone(), project.to_string());
        self.reads.fetch_add(1, Ordering::Relaxed);
        match tokio::task::spawn_blocking(move || read(&name)).await {
            Ok(r) => r,
            Err(e) => Err(ClaimError::store_because("watch read failed", e)),
        }
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
            Err(e) => Err(ClaimError::store_because("watch read failed", e)),
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
        // The last watcher leaving ends the wait too: a project nobody watches keeps no
        // checker (issue 39 point 2).
        tokio::select! {
            () = p.poke.notified() => {}
            () = tokio::time::sleep(recheck) => {}
            () = p.latest.closed() => {}
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
        let mut rx = w.subscribe("p").unwrap();
        let first = w.next_reading(&mut rx, None, Duration::from_secs(5)).await.unwrap().unwrap();
        assert_eq!(first, V("1".into()));
        // Nothing changed: the wait runs out and answers the same version.
        let same = w.next_reading(&mut rx, Some("1"), Duration::from_secs(30)).await.unwrap().unwrap();
        assert_eq!(same, V("1".into()));
        let reads_before = w.reads();
        let waiter = {
            let (mut rx, w) = (w.subscribe("p").unwrap(), w.clone());
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
            let (mut rx, w) = (w.subscribe("p").unwrap(), w.clone());
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
        let mut rx = w.subscribe("p").unwrap();
        let _ = w.next_reading(&mut rx, None, Duration::from_secs(5)).await;
        state.store(3, Ordering::SeqCst); // another replica's write: no poke here
        let got = w.next_reading(&mut rx, Some("1"), Duration::from_secs(30)).await.unwrap().unwrap();
        assert_eq!(got, V("3".into()));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_checker_ends_when_the_last_watcher_leaves() {
        let (w, _state) = counting(Duration::from_secs(2));
        let mut rx = w.subscribe("p").unwrap();
        let _ = w.next_reading(&mut rx, None, Duration::from_secs(5)).await;
        assert_eq!(w.projects(), 1);
        drop(rx);
        // The checker notices at once (at most MIN_GAP after its read), removes the project
        // and returns.
        tokio::time::sleep(MIN_GAP * 2).await;
        assert_eq!(w.projects(), 0, "a project nobody watches kept its checker");
        let reads = w.reads();
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(w.reads(), reads, "the checker kept reading after it was retired");
        // Watching again starts a new checker.
        let mut rx = w.subscribe("p").unwrap();
        assert!(w.next_reading(&mut rx, None, Duration::from_secs(5)).await.is_some());
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn closing_answers_every_waiter_at_once() {
        let (w, _state) = counting(Duration::from_secs(3600));
        let mut rx = w.subscribe("p").unwrap();
        let _ = w.next_reading(&mut rx, None, Duration::from_secs(5)).await;
        let waiter = {
            let (mut rx, w) = (w.subscribe("p").unwrap(), w.clone());
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
        let mut rx = w.subscribe("p").unwrap();
        let got = w.next_reading(&mut rx, None, Duration::ZERO).await;
        assert_eq!(got.unwrap().unwrap(), V("1".into()));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_burst_of_writes_costs_one_read_per_gap() {
        let (w, state) = counting(Duration::from_secs(3600));
        let mut rx = w.subscribe("p").unwrap();
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

    /// Issue 39 point 2: distinct project names cannot start more than the cap's worth of
    /// checkers; past it a watch gets no receiver (and is answered with one read that
    /// leaves nothing), and a project nobody watches any more (one that does not exist
    /// included) is gone at most MIN_GAP later, making room again.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn watched_projects_are_bounded_and_nothing_lasts() {
        let read: Reader<V> = Arc::new(|p: &str| Ok(V(format!("{p}:0"))));
        let w = Watchers::with_cap(read, Duration::from_secs(3600), 8);
        let mut held = Vec::new();
        for i in 0..1000 {
            match w.subscribe(&format!("p{i}")) {
                Some(rx) => held.push(rx),
                None => {
                    let now = w.read_now(&format!("p{i}")).await.unwrap();
                    assert_eq!(now, V(format!("p{i}:0")));
                }
            }
            assert!(w.projects() <= 8, "{} projects watched", w.projects());
        }
        assert_eq!(held.len(), 8);
        // A watched project's state is answered from its checker, without a store read.
        while w.projects() == 8 && held[0].borrow().is_none() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let reads = w.reads();
        assert_eq!(w.read_now("p0").await.unwrap(), V("p0:0".into()));
        assert_eq!(w.reads(), reads);
        drop(held);
        tokio::time::sleep(MIN_GAP * 2).await;
        assert_eq!(w.projects(), 0, "checkers outlived their watchers");
        assert!(w.subscribe("q").is_some(), "room again");
    }
}
