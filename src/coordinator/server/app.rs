//! What a running server holds ([`App`]), how it is set up ([`ServeOptions`]), and its
//! limits.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::counters::Metrics;
use super::watchers::{RECHECK, Versioned, Watchers};
use crate::claim::Coordinator;
use crate::claim::engine::RequestCtx;
use crate::claim::refusals::REFUSAL_INTERVAL;
use crate::claim::retention::Retention;
use crate::coordinator::budget::{Argon2Budget, MAX_WAITING, SeatRates, argon2_permits};
use crate::coordinator::limits::{ConnGate, SourceSlots};
use crate::coordinator::memory::{MemoryBudget, MemoryGuard};
use crate::coordinator::verb::{Caller, Origin, Verb};
use crate::coordinator::verbs::master::Watch;
use crate::coordinator::wire::{ProjectPath, WatchQuery, WatchResp};

/// Largest request body accepted.
pub const MAX_BODY: usize = 64 * 1024;
/// Longest a request may run (a long-poll waits at most [`MAX_LONG_POLL`], a slowed
/// operator at most 60 s).
pub const REQUEST_TIME_LIMIT: Duration = Duration::from_secs(100);
/// Longest an inbox long-poll is held open.
pub const MAX_LONG_POLL: Duration = Duration::from_secs(30);

/// Default `--header-timeout-seconds`: how long a connection may take to send a complete
/// request head, counted from when the server starts waiting for one — on a new connection
/// and again after each answer on a kept-alive one, so it is also the idle keep-alive
/// timeout (hyper runs one timer for both). A real client sends its head within
/// milliseconds of connecting or reusing a connection; 10 s leaves room for a congested
/// link, while a connection that sends nothing (or a byte at a time) gives its slot back
/// within 10 s instead of holding it forever (issue 19).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Default `--max-connections`: open connections served at once; one more is refused (a 503
/// envelope on plain HTTP, closed under TLS) and counted. Each CLI command opens one
/// short-lived connection, so a coordinator for a few hundred controllers sees tens at
/// once; 1024 leaves a wide margin, costs little memory when idle, and stays under a
/// default hard open-file limit of 4096 or more. Always lowered below the soft open-file
/// limit (see `limits::connection_cap`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How the server runs.
pub struct ServeOptions {
    /// Where to listen (port 0 picks one; the bound address is reported).
    pub listen: SocketAddr,
    /// The coordinator over its store.
    pub coordinator: Coordinator,
    /// SHA-256 of the admin token (`--admin-token-file`); None refuses admin calls.
    pub admin_token_hash: Option<String>,
    /// PEM certificate chain and key for TLS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// How often the background sweeper releases work claims whose TTL ran out; None: no
    /// sweeper (a cron job runs `writerctl claim sweep` instead).
    pub sweep_every: Option<Duration>,
    /// Open connections served at once (already lowered below the open-file limit).
    pub max_connections: usize,
    /// Header-read and idle keep-alive timeout ([`DEFAULT_HEADER_TIMEOUT`]).
    pub header_timeout: Duration,
    /// What to keep, and how often to prune the rest; None: never prune.
    pub retention: Option<(Retention, Duration)>,
    /// Open connections one source address (IPv4, or IPv6 /64) may hold
    /// ([`crate::coordinator::limits::DEFAULT_MAX_CONNECTIONS_PER_SOURCE`]).
    pub max_connections_per_source: usize,
    /// How long a request body may take to arrive after its head
    /// ([`crate::coordinator::limits::DEFAULT_BODY_TIMEOUT`]).
    pub body_timeout: Duration,
    /// A second listener serving only `/livez`, `/readyz` and `/metrics`, with its own
    /// connection cap ([`PROBE_MAX_CONNECTIONS`]), for orchestrator probes.
    pub probe_listen: Option<SocketAddr>,
    /// The memory budget: sizes the argon2 permits and the resident size past which
    /// requests are refused (`--memory-budget`, see [`crate::coordinator::memory`]).
    pub memory_budget: MemoryBudget,
}

/// Open connections the probe listener (`--probe-listen`) serves at once: a kubelet and a
/// Prometheus scraper need a few.
pub const PROBE_MAX_CONNECTIONS: usize = 16;

/// Verbs by result, latency histograms and the sweeper's counters, for `/metrics`.
pub(super) struct App {
    pub(super) coord: Coordinator,
    pub(super) admin_token_hash: Option<String>,
    pub(super) metrics: Mutex<Metrics>,
    /// argon2 verifications running at once (one per core, as the memory budget's hashing
    /// share allows, each with its own argon2 memory), on the blocking pool every verb
    /// shares: bounding them keeps a flood of guesses from starving heartbeats and
    /// handoffs. Held only while a password is hashed, never while an answer is held back.
    /// Waiters are served by tier and round robin per source (issue 28 point 4, see
    /// [`Argon2Budget`]): a source and an operator id with no recent refused attempt go
    /// before sources that were refused, so a correct claim keeps its latency under a
    /// flood from many addresses.
    pub(super) verifications: Arc<Argon2Budget>,
    /// Per-seat write rates (issue 28 point 4, see [`SeatRates`]).
    pub(super) seat_rates: SeatRates,
    /// `master claim` requests per source address, including a wrong password's held-back
    /// answer: one address runs at most [`CLAIMS_PER_SOURCE`] at a time (more wait, up to
    /// [`CLAIMS_WAITING_PER_SOURCE`], then are refused), each wrong one held for the
    /// operator's back-off, while other addresses are not held up by it.
    pub(super) claim_sources: Arc<SourceSlots>,
    /// The connection cap (None for a router driven without a socket).
    pub(super) connections: Option<Arc<ConnGate>>,
    /// `master claim` requests refused because their source had too many in flight.
    pub(super) claims_refused_per_source: std::sync::atomic::AtomicU64,
    /// One readiness probe at a time (see [`probe_readiness`](super::probes::probe_readiness)).
    pub(super) probe: Arc<tokio::sync::Mutex<()>>,
    /// How long a request body may take to arrive (see [`body_guard`](super::guard::body_guard)).
    pub(super) body_timeout: Duration,
    /// `master status --watch`: what each watched project's watchers wait for.
    pub(super) watchers: Arc<Watchers<WatchResp>>,
    /// The memory budget, checked before each request (issue 39 point 1, see
    /// [`memory_guard`](super::guard::memory_guard)).
    pub(super) memory: MemoryGuard,
    /// Reads of the audit log in flight, per source and in all (issue 39 point 6).
    pub(super) reads: super::reads::ReadGate,
    /// What `/metrics` last read of the store, and when it is out of date (issue 39 point 6).
    pub(super) store_series: super::counters::StoreSeries,
}

/// How many `master claim` requests of one source address run at once.
pub const CLAIMS_PER_SOURCE: usize = 2;
/// How many more of one source address may wait for those (an operator's script racing a
/// few claims); past that they answer `coordinator_unavailable` at once.
pub const CLAIMS_WAITING_PER_SOURCE: usize = 8;
/// Longest a claim waits for an argon2 slot before answering `coordinator_unavailable`.
pub(super) const VERIFICATION_QUEUE_LIMIT: Duration = Duration::from_secs(20);

/// The state every handler shares.
pub(super) type Shared = Arc<App>;

/// A server's state over `coordinator`, with the refusal flusher started.
pub(super) fn new_app(
    coordinator: Coordinator,
    admin_token_hash: Option<String>,
    connections: Option<Arc<ConnGate>>,
    body_timeout: Duration,
    memory_budget: MemoryBudget,
) -> Shared {
    let watchers = master_watchers(&coordinator);
    let app = Arc::new(App {
        body_timeout,
        coord: coordinator,
        admin_token_hash,
        metrics: Mutex::new(Metrics::default()),
        verifications: Arc::new(Argon2Budget::new(argon2_permits(memory_budget.hashing_bytes()), MAX_WAITING)),
        seat_rates: SeatRates::default(),
        claim_sources: Arc::new(SourceSlots::new(CLAIMS_PER_SOURCE, CLAIMS_WAITING_PER_SOURCE)),
        connections,
        claims_refused_per_source: std::sync::atomic::AtomicU64::new(0),
        probe: Arc::new(tokio::sync::Mutex::new(())),
        watchers,
        memory: MemoryGuard::new(memory_budget),
        reads: super::reads::ReadGate::default(),
        store_series: super::counters::StoreSeries::default(),
    });
    flush_refusals_periodically(&app);
    app
}

/// The registry `master status --watch` waits on (see [`Watchers`]): each reading is the
/// `master.watch` verb itself ([`Watch`]) run on `coordinator` for the project, so what a
/// pushed answer holds is what the verb answers in-process.
fn master_watchers(coordinator: &Coordinator) -> Arc<Watchers<WatchResp>> {
    let c = coordinator.for_request(RequestCtx::default());
    let caller = Caller { bearer: None, origin: Origin::Http, admin: false };
    Watchers::new(
        Arc::new(move |project: &str| Watch::apply(&c, ProjectPath::of(project), WatchQuery::default(), &caller)),
        RECHECK,
    )
}

/// Writes the summary rows of closed refusal windows every [`REFUSAL_INTERVAL`], so a
/// flood that stopped still gets its count written without a scrape or a new refusal.
/// Runs while the app lives (it holds only a weak reference); needs a runtime (a router
/// built outside one flushes on scrapes, audit reads and refusals only).
fn flush_refusals_periodically(app: &Shared) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
    let weak = Arc::downgrade(app);
    rt.spawn(async move {
        loop {
            tokio::time::sleep(REFUSAL_INTERVAL).await;
            let Some(app) = weak.upgrade() else { return };
            let _ = tokio::task::spawn_blocking(move || app.coord.flush_refusals(false)).await;
        }
    });
}

impl App {
    /// Records how long a verb waited before it ran (see [`Metrics::queue`]).
    pub(super) fn observe_queue(&self, verb: &str, waited: Duration) {
        let mut m = self.metrics.lock().unwrap_or_else(|p| p.into_inner());
        m.queue.entry(verb.to_string()).or_default().observe(waited);
    }

    /// Counts a verb's result and records how long it ran.
    pub(super) fn observe(&self, verb: &str, result: &str, elapsed: Duration) {
        let mut m = self.metrics.lock().unwrap_or_else(|p| p.into_inner());
        *m.verbs.entry((verb.to_string(), result.to_string())).or_default() += 1;
        m.latency.entry(verb.to_string()).or_default().observe(elapsed);
    }
}

impl Versioned for WatchResp {
    fn version(&self) -> &str {
        &self.version
    }
}
