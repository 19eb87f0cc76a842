//! What `/metrics` counts: verbs by result, latency and queue histograms, and the
//! background jobs' results.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::claim::ClaimError;
use crate::claim::retention::{Pruned, Sizes};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Default, Clone)]
pub(super) struct Metrics {
    pub(super) verbs: BTreeMap<(String, String), u64>,
    pub(super) latency: BTreeMap<String, Histogram>,
    /// Background sweeps by result (`ok` or the first error's code).
    pub(super) sweep_runs: BTreeMap<String, u64>,
    /// Claims the background sweeper released (to a deputy or to open).
    pub(super) sweep_released: u64,
    /// Due claims an owner wrote to during a background sweep (kept).
    pub(super) sweep_conflicts: u64,
    /// Background prunes by result (`ok` or the error code).
    pub(super) retention_runs: BTreeMap<String, u64>,
    /// What background prunes removed, summed.
    pub(super) retention_pruned: Pruned,
    /// Time a verb waited before it ran, by verb (`master.claim`: its source slot and its
    /// argon2 permit), kept apart from the duration histogram (issue 28 point 5).
    pub(super) queue: BTreeMap<String, Histogram>,
}

/// What one background sweep returned.
pub(super) type SweepAll = Result<crate::claim::engine::SweepAll, ClaimError>;

/// Latency buckets in seconds (Prometheus convention: cumulative `le`).
pub(super) const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Default, Clone)]
pub(super) struct Histogram {
    pub(super) counts: [u64; BUCKETS.len()],
    pub(super) count: u64,
    pub(super) sum: f64,
}
impl Histogram {
    /// Counts one duration.
    pub(super) fn observe(&mut self, elapsed: Duration) {
        let s = elapsed.as_secs_f64();
        for (i, le) in BUCKETS.iter().enumerate() {
            if s <= *le {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += s;
    }
}

/// Longest `/metrics` answers the store's series (sizes, projects without a master, paused
/// projects) from its last read of them while nothing this replica did changed the store.
/// A count reads every row (SQLite's `COUNT(*)`, Postgres's `count(*)`, a scan of Redis's
/// inbox keys): `/metrics` needs no credential, so a loop of scrapes from many addresses
/// must not become a loop of full scans (issue 39 point 6). Every credentialed change this
/// replica answers (a write verb or an admin verb that succeeded, a prune or a sweep that
/// changed something) makes the next scrape read again; refusals and anonymous reads do
/// not, or they would be the way around the bound.
pub const STORE_SERIES_MAX_AGE: Duration = Duration::from_secs(10);

/// The store's series as `/metrics` last read them (see [`STORE_SERIES_MAX_AGE`]). One read
/// at a time: scrapes that arrive while one reads wait for its answer and share it.
#[derive(Debug, Default)]
pub(super) struct StoreSeries {
    /// Bumped by [`StoreSeries::touched`].
    generation: AtomicU64,
    last: tokio::sync::Mutex<Option<StoreReading>>,
    /// Store reads made for `/metrics` (a test and `/metrics` itself can tell a cached
    /// answer from a fresh one).
    pub(super) reads: AtomicU64,
}

/// One read of the store's series; an `Err` is the message of the read that failed.
#[derive(Debug, Clone)]
pub(super) struct StoreReading {
    generation: u64,
    at: Instant,
    pub(super) sizes: Result<Sizes, String>,
    pub(super) without_master: Result<u64, String>,
    pub(super) paused: Result<u64, String>,
}

impl StoreSeries {
    /// Something this replica did may have changed the store: the next scrape reads it.
    pub(super) fn touched(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// The series, read again (by `read`, on the blocking pool) only when the last reading
    /// is older than [`STORE_SERIES_MAX_AGE`] or the store was touched since it began.
    pub(super) async fn get<F>(&self, read: F) -> StoreReading
    where
        F: FnOnce() -> (Result<Sizes, String>, Result<u64, String>, Result<u64, String>) + Send + 'static,
    {
        let mut last = self.last.lock().await;
        let generation = self.generation.load(Ordering::Relaxed);
        if let Some(r) = last.as_ref()
            && r.generation == generation
            && r.at.elapsed() < STORE_SERIES_MAX_AGE
        {
            return r.clone();
        }
        self.reads.fetch_add(1, Ordering::Relaxed);
        let (sizes, without_master, paused) = tokio::task::spawn_blocking(read).await.unwrap_or_else(|e| {
            let why = format!("store series: {e}");
            (Err(why.clone()), Err(why.clone()), Err(why))
        });
        let reading = StoreReading { generation, at: Instant::now(), sizes, without_master, paused };
        *last = Some(reading.clone());
        reading
    }
}
