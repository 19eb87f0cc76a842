//! `writerctl coordinator serve`: the coordinator verbs as a versioned JSON API over HTTP
//! (axum), with `/livez`, `/readyz`, `/healthz`, `/metrics` (Prometheus text),
//! `/openapi.json`, body-size and time limits, graceful shutdown and optional TLS;
//! optionally a background sweeper that releases work claims whose TTL ran out ([`serve`]).
//!
//! No decision is made from in-process state: every verb runs the engine against the store
//! (one transaction or one compare-and-set), so any number of replicas over one Redis +
//! Postgres stay correct. The engine is synchronous, so verbs run on tokio's blocking pool.
//! The same holds for the sweeper: replicas may sweep at once, and each release is a
//! compare-and-set on the claim's version, so a claim is released once.

mod guard;
mod handler;
mod listen;
mod metrics;
mod openapi;
mod probes;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{MethodRouter, get};

pub use self::listen::{LISTEN_BACKLOG, ServeError, serve};
use self::metrics::Metrics;
pub use self::openapi::openapi;
pub use self::probes::READY_TIMEOUT;
use super::budget::{Argon2Budget, MAX_WAITING, SeatRates, argon2_permits};
use super::limits::{ConnGate, DEFAULT_BODY_TIMEOUT, SourceSlots};
pub use super::wire::REQUEST_ID_HEADER;
use crate::claim::Coordinator;
use crate::claim::refusals::REFUSAL_INTERVAL;
use crate::claim::retention::Retention;
use crate::coordinator::verb::{Method, Verb};

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
    /// ([`super::limits::DEFAULT_MAX_CONNECTIONS_PER_SOURCE`]).
    pub max_connections_per_source: usize,
    /// How long a request body may take to arrive after its head
    /// ([`super::limits::DEFAULT_BODY_TIMEOUT`]).
    pub body_timeout: Duration,
    /// A second listener serving only `/livez`, `/readyz` and `/metrics`, with its own
    /// connection cap ([`PROBE_MAX_CONNECTIONS`]), for orchestrator probes.
    pub probe_listen: Option<SocketAddr>,
}

/// Open connections the probe listener (`--probe-listen`) serves at once: a kubelet and a
/// Prometheus scraper need a few.
pub const PROBE_MAX_CONNECTIONS: usize = 16;

/// Verbs by result, latency histograms and the sweeper's counters, for `/metrics`.
struct App {
    coord: Coordinator,
    admin_token_hash: Option<String>,
    metrics: Mutex<Metrics>,
    /// argon2 verifications running at once (one per core), on the blocking pool every verb
    /// shares: bounding them keeps a flood of guesses from starving heartbeats and
    /// handoffs. Held only while a password is hashed, never while an answer is held back.
    /// Waiters are served by tier and round robin per source (issue 28 point 4, see
    /// [`Argon2Budget`]): a source and an operator id with no recent refused attempt go
    /// before sources that were refused, so a correct claim keeps its latency under a
    /// flood from many addresses.
    verifications: Arc<Argon2Budget>,
    /// Per-seat write rates (issue 28 point 4, see [`SeatRates`]).
    seat_rates: SeatRates,
    /// `master claim` requests per source address, including a wrong password's held-back
    /// answer: one address runs at most [`CLAIMS_PER_SOURCE`] at a time (more wait, up to
    /// [`CLAIMS_WAITING_PER_SOURCE`], then are refused), each wrong one held for the
    /// operator's back-off, while other addresses are not held up by it.
    claim_sources: Arc<SourceSlots>,
    /// The connection cap (None for a router driven without a socket).
    connections: Option<Arc<ConnGate>>,
    /// `master claim` requests refused because their source had too many in flight.
    claims_refused_per_source: std::sync::atomic::AtomicU64,
    /// One readiness probe at a time (see [`probe_readiness`]).
    probe: Arc<tokio::sync::Mutex<()>>,
    /// How long a request body may take to arrive (see [`body_guard`]).
    body_timeout: Duration,
}

/// How many `master claim` requests of one source address run at once.
pub const CLAIMS_PER_SOURCE: usize = 2;
/// How many more of one source address may wait for those (an operator's script racing a
/// few claims); past that they answer `coordinator_unavailable` at once.
pub const CLAIMS_WAITING_PER_SOURCE: usize = 8;
/// Longest a claim waits for an argon2 slot before answering `coordinator_unavailable`.
const VERIFICATION_QUEUE_LIMIT: Duration = Duration::from_secs(20);

type Shared = Arc<App>;
fn new_app(
    coordinator: Coordinator,
    admin_token_hash: Option<String>,
    connections: Option<Arc<ConnGate>>,
    body_timeout: Duration,
) -> Shared {
    let app = Arc::new(App {
        body_timeout,
        coord: coordinator,
        admin_token_hash,
        metrics: Mutex::new(Metrics::default()),
        verifications: Arc::new(Argon2Budget::new(argon2_permits(), MAX_WAITING)),
        seat_rates: SeatRates::default(),
        claim_sources: Arc::new(SourceSlots::new(CLAIMS_PER_SOURCE, CLAIMS_WAITING_PER_SOURCE)),
        connections,
        claims_refused_per_source: std::sync::atomic::AtomicU64::new(0),
        probe: Arc::new(tokio::sync::Mutex::new(())),
    });
    flush_refusals_periodically(&app);
    app
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

/// The router (public so tests can drive it without a socket).
pub fn router(coordinator: Coordinator, admin_token_hash: Option<String>) -> Router {
    routes(new_app(coordinator, admin_token_hash, None, DEFAULT_BODY_TIMEOUT))
}

/// The routes that are not verbs: probes, metrics and the document.
fn fixed_routes() -> Vec<(&'static str, &'static str, MethodRouter<Shared>)> {
    vec![
        ("get", "/livez", get(probes::livez)),
        ("get", "/readyz", get(probes::readyz)),
        ("get", "/healthz", get(probes::healthz)),
        ("get", "/metrics", get(metrics::metrics)),
        ("get", "/openapi.json", get(openapi::openapi_doc)),
    ]
}

/// Every route the server answers, as (method, path): each verb's (from
/// [`for_each_verb`](crate::for_each_verb)), then the fixed ones. The router is built from
/// the same two lists, and the OpenAPI document must describe exactly these.
pub fn route_table() -> Vec<(&'static str, &'static str)> {
    let mut table = Vec::new();
    macro_rules! add {
        ($v:ty) => {
            table.push((
                match <$v as Verb>::METHOD {
                    Method::Get => "get",
                    Method::Post => "post",
                },
                <$v as Verb>::PATH,
            ))
        };
    }
    crate::for_each_verb!(add);
    table.extend(fixed_routes().into_iter().map(|(m, p, _)| (m, p)));
    table
}

fn routes(app: Shared) -> Router {
    let mut router = Router::new();
    macro_rules! add {
        ($v:ty) => {
            router = handler::route::<$v>(router)
        };
    }
    crate::for_each_verb!(add);
    for (_, path, method_router) in fixed_routes() {
        router = router.route(path, method_router);
    }
    router
        .fallback(guard::not_found)
        .layer(axum::middleware::from_fn(handler::peer))
        .layer(axum::middleware::from_fn_with_state((app.clone(), app.connections.clone()), guard::body_guard))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, REQUEST_TIME_LIMIT))
        .layer(axum::middleware::map_response(guard::envelope))
        .with_state(app)
}

/// The probe listener's routes (`--probe-listen`): `/livez`, `/readyz` and `/metrics`
/// only; anything else is 404 in the envelope.
fn probe_routes(app: Shared, gate: Arc<ConnGate>) -> Router {
    Router::new()
        .route("/livez", get(probes::livez))
        .route("/readyz", get(probes::readyz))
        .route("/metrics", get(metrics::metrics))
        .fallback(guard::not_found)
        .layer(axum::middleware::from_fn_with_state((app.clone(), Some(gate)), guard::body_guard))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, REQUEST_TIME_LIMIT))
        .layer(axum::middleware::map_response(guard::envelope))
        .with_state(app)
}

/// The listen backlog asked for (the kernel caps it at `net.core.somaxconn`, 4096 on
/// current kernels). Issue 28's abuse bench: under a reconnect flood from one address the
/// default of 128 (std's, and axum-server's `bind`) overflowed (`TcpExtListenOverflows`);
/// the kernel then drops a SYN, and the client retries it only after 1 s, so a kubelet

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, header};
    use axum::response::{IntoResponse, Response};
    use std::net::IpAddr;

    use super::guard::envelope;
    use super::handler::{PEER_HEADER, error_response, source_of};
    use super::listen::listen_socket;
    use super::*;
    use crate::claim::ClaimError;
    use crate::error::ErrorCode;

    /// Issue 28: a burst of connections the server has not accepted yet waits in the
    /// kernel's accept queue instead of having its SYNs dropped (a dropped SYN is retried
    /// after 1 s: a probe's whole deadline). Fails with std's backlog of 128: the 130th
    /// connect is never completed while nothing accepts.
    #[test]
    fn the_listen_backlog_holds_a_burst_of_connections_not_yet_accepted() {
        let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let n = 400.min(somaxconn.saturating_sub(8));
        if n <= 200 {
            eprintln!("SKIPPED: net.core.somaxconn is {somaxconn}; the kernel caps every backlog below 200 here");
            return;
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        let listener = rt.block_on(async { listen_socket("127.0.0.1:0".parse().unwrap()) }).unwrap();
        let addr = listener.local_addr().unwrap();
        // Nothing accepts: every connection below waits in the accept queue.
        let held: Vec<std::net::TcpStream> = (0..n)
            .map(|i| {
                std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                    .unwrap_or_else(|e| panic!("connection {i} of {n} was not completed: {e}"))
            })
            .collect();
        assert_eq!(held.len(), n);
    }

    fn rewrite(resp: Response) -> (StatusCode, Option<String>, serde_json::Value) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let out = envelope(resp).await;
            let status = out.status();
            let allow = out.headers().get(header::ALLOW).map(|v| v.to_str().unwrap().to_string());
            let body = axum::body::to_bytes(out.into_body(), 1 << 20).await.unwrap();
            (status, allow, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
        })
    }

    /// Issue 28 point 4: a seat over its rate is answered 429 with `Retry-After` in whole
    /// seconds (rounded up) and the exact wait in the envelope.
    #[test]
    fn rate_limited_is_429_with_retry_after() {
        let e = ClaimError::RateLimited { what: "seat alice".into(), retry_after_ms: 1500 };
        let resp = error_response(&e);
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers().get(header::RETRY_AFTER).unwrap(), "2");
        assert_eq!(e.to_json()["error"]["hint"], "retry after 1500 ms");
        assert_eq!((e.code().as_str(), e.code().exit_code()), ("rate_limited", 75));
        // The source handlers read is the one the `peer` layer wrote (it removes a client's first).
        let mut h = HeaderMap::new();
        assert_eq!(source_of(&h), None);
        h.insert(PEER_HEADER, header::HeaderValue::from_static("127.0.0.9"));
        assert_eq!(source_of(&h), Some(IpAddr::from([127, 0, 0, 9])));
    }

    #[test]
    fn answers_outside_the_envelope_are_put_into_it() {
        // The request time limit: tower-http answers 503 with an empty body.
        let (status, _, doc) = rewrite(StatusCode::SERVICE_UNAVAILABLE.into_response());
        assert_eq!(
            (status, doc["error"]["code"].as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, Some("coordinator_unavailable"))
        );
        assert!(doc["error"]["message"].as_str().unwrap().contains("time limit"), "{doc}");
        // A wrong method: 405 with an empty body and an Allow header, which is kept.
        let resp = (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET,HEAD")]).into_response();
        let (status, allow, doc) = rewrite(resp);
        assert_eq!((status, allow.as_deref()), (StatusCode::METHOD_NOT_ALLOWED, Some("GET,HEAD")));
        assert_eq!(doc["error"]["code"], "invalid_argument");
        // A rejection in text/plain keeps its text as the message.
        let (status, _, doc) = rewrite((StatusCode::BAD_REQUEST, "Failed to deserialize query string").into_response());
        assert_eq!(
            (status, &doc["error"]["message"]),
            (StatusCode::BAD_REQUEST, &serde_json::json!("Failed to deserialize query string"))
        );
        let (status, _, doc) = rewrite(StatusCode::PAYLOAD_TOO_LARGE.into_response());
        assert_eq!((status, doc["error"]["code"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("invalid_argument")));
        let (_, _, doc) = rewrite(StatusCode::NOT_FOUND.into_response());
        assert_eq!(doc["error"]["code"], "not_found");
        // Envelopes and successes pass unchanged.
        let already = error_response(&ClaimError::NotFound("channel ch".into()));
        let (status, _, doc) = rewrite(already);
        assert_eq!((status, &doc["error"]["message"]), (StatusCode::NOT_FOUND, &serde_json::json!("channel ch")));
        let (status, _, doc) = rewrite((StatusCode::OK, axum::Json(serde_json::json!({"ok": true}))).into_response());
        assert_eq!((status, doc), (StatusCode::OK, serde_json::json!({"ok": true})));
    }

    #[test]
    fn the_document_lists_every_error_code_and_status() {
        let doc = openapi();
        let codes = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"].clone();
        assert_eq!(codes.as_array().unwrap().len(), ErrorCode::ALL.len());
        for (path, ops) in doc["paths"].as_object().unwrap() {
            for (method, op) in ops.as_object().unwrap() {
                if path.starts_with("/v1/") {
                    for status in ["400", "401", "404", "405", "413", "503"] {
                        assert!(op["responses"].get(status).is_some(), "{method} {path}: {status}");
                    }
                }
            }
        }
    }
}
