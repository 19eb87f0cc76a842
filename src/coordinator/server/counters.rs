//! What `/metrics` counts: verbs by result, latency and queue histograms, and the
//! background jobs' results.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::claim::ClaimError;
use crate::claim::retention::Pruned;

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
