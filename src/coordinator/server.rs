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

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::wire::*;
use crate::claim::ClaimError;
use crate::claim::Coordinator;
use crate::claim::engine::MasterRequest;
use crate::claim::master::ControllerKey;
use crate::claim::model::Millis;
use crate::claim::request::RequestId;
use crate::claim::secret::{self, Secret};
use crate::claim::store::Backlog;
use crate::error::ErrorCode;

/// Largest request body accepted.
pub const MAX_BODY: usize = 64 * 1024;
/// Longest a request may run (a long-poll waits at most [`MAX_LONG_POLL`], a slowed
/// operator at most 60 s).
pub const REQUEST_TIME_LIMIT: Duration = Duration::from_secs(100);
/// Longest an inbox long-poll is held open.
pub const MAX_LONG_POLL: Duration = Duration::from_secs(30);

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
}

/// Verbs by result, latency histograms and the sweeper's counters, for `/metrics`.
#[derive(Default, Clone)]
struct Metrics {
    verbs: BTreeMap<(String, String), u64>,
    latency: BTreeMap<String, Histogram>,
    /// Background sweeps by result (`ok` or the first error's code).
    sweep_runs: BTreeMap<String, u64>,
    /// Claims the background sweeper released (to a deputy or to open).
    sweep_released: u64,
    /// Due claims an owner wrote to during a background sweep (kept).
    sweep_conflicts: u64,
}

/// What one background sweep returned.
type SweepAll = Result<crate::claim::engine::SweepAll, ClaimError>;

/// Latency buckets in seconds (Prometheus convention: cumulative `le`).
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

struct App {
    coord: Coordinator,
    admin_token_hash: Option<String>,
    metrics: Mutex<Metrics>,
    /// Operator verifications in flight: each may sleep out a throttle delay (up to 60 s)
    /// and costs an argon2 hash, on the blocking pool every verb shares. Bounding them keeps
    /// a flood of guesses from starving heartbeats and handoffs.
    verifications: tokio::sync::Semaphore,
    /// One readiness probe at a time (see [`probe_readiness`]).
    probe: Arc<tokio::sync::Mutex<()>>,
}

/// How many `master claim` verifications run at once; more answer `coordinator_unavailable`.
pub const MAX_CONCURRENT_CLAIMS: usize = 8;

type Shared = Arc<App>;

/// The HTTP status for an error code: 4xx for the caller's mistakes, 409 for conflicts,
/// 503 (retry) for unavailability.
fn http_status(code: ErrorCode) -> StatusCode {
    match code.exit_code() {
        2 => StatusCode::BAD_REQUEST,
        3 => StatusCode::CONFLICT,
        4 => StatusCode::UNPROCESSABLE_ENTITY,
        5 => StatusCode::NOT_FOUND,
        6 => StatusCode::UNAUTHORIZED,
        7 => StatusCode::FORBIDDEN,
        75 => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn error_response(e: &ClaimError) -> Response {
    (http_status(e.code()), axum::Json(e.to_json())).into_response()
}

fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, ClaimError> {
    serde_json::from_slice(body).map_err(|e| ClaimError::InvalidArgument(format!("request body: {e}")))
}

/// The bearer secret from `Authorization: Bearer ...`.
fn bearer(headers: &HeaderMap) -> Result<Secret, ClaimError> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| Secret::new(t.trim().to_string()))
        .filter(|t| !t.expose().is_empty())
        .ok_or_else(|| ClaimError::InvalidArgument("missing Authorization: Bearer <token>".into()))
}

impl App {
    fn observe(&self, verb: &str, result: &str, elapsed: Duration) {
        let mut m = self.metrics.lock().unwrap_or_else(|p| p.into_inner());
        *m.verbs.entry((verb.to_string(), result.to_string())).or_default() += 1;
        let h = m.latency.entry(verb.to_string()).or_default();
        let s = elapsed.as_secs_f64();
        for (i, le) in BUCKETS.iter().enumerate() {
            if s <= *le {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += s;
    }

    /// Checks the admin token; a refusal is audited like any failed verb.
    fn admin(&self, headers: &HeaderMap, verb: &str, target: Option<String>) -> Result<(), ClaimError> {
        let checked = self.check_admin(headers);
        if let Err(e) = &checked {
            self.coord.audit_refusal("", verb, "admin", target, e);
        }
        checked
    }

    fn check_admin(&self, headers: &HeaderMap) -> Result<(), ClaimError> {
        let expected = self.admin_token_hash.as_ref().ok_or(ClaimError::AdminRequired)?;
        let presented = bearer(headers).map_err(|_| ClaimError::AdminRequired)?;
        if secret::token_hash_matches(expected, &secret::token_hash(&presented)) {
            Ok(())
        } else {
            Err(ClaimError::AdminRequired)
        }
    }
}

/// The header a write verb's request id travels in (`--request-id`; see
/// [`crate::claim::request`]). Optional: a write without it is not kept for retries.
pub const REQUEST_ID_HEADER: &str = "idempotency-key";

/// The coordinator for one write verb: carrying the request id the caller sent, if any.
fn coordinator_for(app: &App, headers: &HeaderMap) -> Result<Coordinator, ClaimError> {
    let id = match headers.get(REQUEST_ID_HEADER) {
        None => None,
        Some(v) => Some(RequestId::parse(
            v.to_str()
                .map_err(|_| ClaimError::InvalidArgument(format!("the {REQUEST_ID_HEADER} header is not ASCII")))?,
        )?),
    };
    Ok(app.coord.with_request(id))
}

/// Failpoint `serve.after_commit`: a write verb has committed and its reply is not sent
/// yet. Tests stop the server here to lose the reply of a write that was applied.
fn after_commit() -> Result<(), ClaimError> {
    #[cfg(any(test, debug_assertions, feature = "failpoints"))]
    crate::lockfile::failpoint::hit("serve.after_commit")
        .map_err(|e| ClaimError::Unavailable(format!("{e}: the reply of an applied write was lost")))?;
    Ok(())
}

/// [`run_as`] for a write verb: `f` runs on the coordinator carrying the request's id.
async fn run_write<T, F>(app: Shared, verb: &'static str, ok: StatusCode, headers: HeaderMap, f: F) -> Response
where
    T: Serialize + Send + 'static,
    F: FnOnce(&App, &Coordinator) -> Result<T, ClaimError> + Send + 'static,
{
    run_as(app, verb, ok, move |a| {
        let answer = f(a, &coordinator_for(a, &headers)?)?;
        after_commit()?;
        Ok(answer)
    })
    .await
}

/// Runs `f` on the blocking pool, records metrics and a log line, and answers with JSON.
async fn run<T, F>(app: Shared, verb: &'static str, f: F) -> Response
where
    T: Serialize + Send + 'static,
    F: FnOnce(&App) -> Result<T, ClaimError> + Send + 'static,
{
    run_as(app, verb, StatusCode::OK, f).await
}

/// [`run`], answering `ok` (200, or 201 for a creation) on success.
async fn run_as<T, F>(app: Shared, verb: &'static str, ok: StatusCode, f: F) -> Response
where
    T: Serialize + Send + 'static,
    F: FnOnce(&App) -> Result<T, ClaimError> + Send + 'static,
{
    let started = Instant::now();
    let app2 = app.clone();
    let result = match tokio::task::spawn_blocking(move || f(&app2)).await {
        Ok(r) => r,
        Err(e) => Err(ClaimError::Store(format!("verb task failed: {e}"))),
    };
    let elapsed = started.elapsed();
    match result {
        Ok(v) => {
            app.observe(verb, "ok", elapsed);
            tracing::info!(verb, result = "ok", elapsed_ms = elapsed.as_secs_f64() * 1e3);
            (ok, axum::Json(v)).into_response()
        }
        Err(e) => {
            let code = e.code().as_str();
            app.observe(verb, code, elapsed);
            tracing::info!(verb, result = code, elapsed_ms = elapsed.as_secs_f64() * 1e3);
            error_response(&e)
        }
    }
}

async fn register(State(app): State<Shared>, Path(project): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    run_write(app, "session.register", StatusCode::OK, headers, move |_, c| {
        let r: RegisterReq = parse(&body)?;
        let key = ControllerKey { identity: r.identity, surface: r.surface, machine_id: r.machine_id };
        let reg = c.register(&project, &key, r.previous_token.map(Secret::new).as_ref())?;
        Ok(RegisterResp {
            controller: (&reg.controller).into(),
            token: reg.token.expose().to_string(),
            epoch: reg.epoch,
        })
    })
    .await
}

async fn heartbeat(
    State(app): State<Shared>,
    Path((project, sid)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let h = headers.clone();
    run_write(app, "session.heartbeat", StatusCode::OK, h, move |_, c| {
        let row = c.heartbeat(&project, &sid, &bearer(&headers)?)?;
        Ok(ControllerOut::from(&row))
    })
    .await
}

async fn deregister(
    State(app): State<Shared>,
    Path((project, sid)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let h = headers.clone();
    run_write(app, "session.deregister", StatusCode::OK, h, move |_, c| {
        let (was_master, epoch) = c.deregister(&project, &sid, &bearer(&headers)?)?;
        Ok(DeregisterResp { was_master, epoch })
    })
    .await
}

async fn status(State(app): State<Shared>, Path(project): Path<String>) -> Response {
    run(app, "master.status", move |a| Ok(StatusResp::from(&a.coord.status(&project)?))).await
}

#[derive(serde::Deserialize)]
struct TargetQuery {
    to: String,
    to_session: Option<String>,
}

async fn target(State(app): State<Shared>, Path(project): Path<String>, Query(q): Query<TargetQuery>) -> Response {
    run(app, "master.target", move |a| {
        Ok(ControllerOut::from(&a.coord.preview_target(&project, &q.to, q.to_session.as_deref())?))
    })
    .await
}

async fn handoff(State(app): State<Shared>, Path(project): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    let h = headers.clone();
    run_write(app, "master.handoff", StatusCode::OK, h, move |_, c| {
        let r: HandoffReq = parse(&body)?;
        let token = bearer(&headers)?;
        let req = MasterRequest { project, to_identity: r.to, to_session: r.to_session, expect_epoch: r.expect_epoch };
        c.handoff(&req, &r.session_id, &token)
    })
    .await
}

async fn claim(State(app): State<Shared>, Path(project): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    let holder = app.clone();
    let Ok(_permit) = holder.verifications.try_acquire() else {
        let e = ClaimError::Unavailable("too many operator verifications in flight".into());
        app.observe("master.claim", e.code().as_str(), Duration::ZERO);
        return error_response(&e);
    };
    run_write(app, "master.claim", StatusCode::OK, headers, move |_, c| {
        let r: ClaimReq = parse(&body)?;
        let req = MasterRequest { project, to_identity: r.to, to_session: r.to_session, expect_epoch: r.expect_epoch };
        c.claim(&req, &r.operator, &Secret::new(r.password))
    })
    .await
}

async fn add_operator(State(app): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let h = headers.clone();
    run_write(app, "operator.add", StatusCode::OK, h, move |a, c| {
        let r: OperatorReq = parse(&body)?;
        a.admin(&headers, "operator.add", Some(format!("operator:{}", r.operator_id)))?;
        c.add_operator_as(&r.operator_id, &Secret::new(r.password), "admin")?;
        Ok(serde_json::json!({"operator_id": r.operator_id, "created": true}))
    })
    .await
}

#[derive(serde::Deserialize)]
struct InboxQuery {
    #[serde(default)]
    after: u64,
    limit: Option<usize>,
    #[serde(default)]
    wait_ms: u64,
}

/// Long poll: answers as soon as there is an event, or after `wait_ms` (capped) with none.
async fn inbox(
    State(app): State<Shared>,
    Path((project, identity)): Path<(String, String)>,
    Query(q): Query<InboxQuery>,
) -> Response {
    let deadline = Instant::now() + Duration::from_millis(q.wait_ms).min(MAX_LONG_POLL);
    let limit = q.limit.unwrap_or(1000).clamp(1, 100_000);
    loop {
        let (p, i) = (project.clone(), identity.clone());
        let app2 = app.clone();
        let read = tokio::task::spawn_blocking(move || app2.coord.inbox(&p, &i, q.after, limit)).await;
        let events = match read {
            Ok(Ok(ev)) => ev,
            Ok(Err(e)) => return error_response(&e),
            Err(e) => return error_response(&ClaimError::Store(e.to_string())),
        };
        if !events.is_empty() || Instant::now() >= deadline {
            return (StatusCode::OK, axum::Json(InboxResp { events })).into_response();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[derive(serde::Deserialize)]
struct AuditQuery {
    project: Option<String>,
    limit: Option<usize>,
}

async fn audit(State(app): State<Shared>, headers: HeaderMap, Query(q): Query<AuditQuery>) -> Response {
    run(app, "audit.read", move |a| {
        a.admin(&headers, "audit.read", q.project.clone())?;
        Ok(AuditResp { entries: a.coord.audit_log(q.project.as_deref(), q.limit.unwrap_or(50).clamp(1, 1_000_000))? })
    })
    .await
}

// ---------------------------------------------------------------------------------------
// work claims (seed 002)
// ---------------------------------------------------------------------------------------

async fn channel_create(
    State(app): State<Shared>,
    Path(project): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    run_write(app, "channel.create", StatusCode::CREATED, headers, move |_, c| {
        let r: ChannelReq = parse(&body)?;
        c.create_channel(&project, &r.channel, &r.steward, r.sla_minutes, r.ttl_floor_minutes, "http")
    })
    .await
}

async fn channel_show(State(app): State<Shared>, Path((project, channel)): Path<(String, String)>) -> Response {
    run(app, "channel.show", move |a| a.coord.show_channel(&project, &channel)).await
}

async fn claim_list(State(app): State<Shared>, Path((project, channel)): Path<(String, String)>) -> Response {
    run(app, "claim.list", move |a| a.coord.list_claims(&project, &channel)).await
}

async fn claim_show(
    State(app): State<Shared>,
    Path((project, channel, task)): Path<(String, String, String)>,
) -> Response {
    run(app, "claim.show", move |a| a.coord.show_claim(&project, &channel, &task)).await
}

async fn claim_history(
    State(app): State<Shared>,
    Path((project, channel, task)): Path<(String, String, String)>,
) -> Response {
    run(app, "claim.history", move |a| a.coord.claim_history(&project, &channel, &task)).await
}

async fn claim_take(
    State(app): State<Shared>,
    Path((project, channel, task)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    run_write(app, "claim.take", StatusCode::OK, headers, move |_, c| {
        let r: TakeReq = parse(&body)?;
        c.take(&r.into_request(project, channel, task))
    })
    .await
}

async fn claim_touch(
    State(app): State<Shared>,
    Path((project, channel, task)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    run_write(app, "claim.touch", StatusCode::OK, headers, move |_, c| {
        let r: TouchReq = parse(&body)?;
        c.touch(&r.into_request(project, channel, task)?)
    })
    .await
}

async fn claim_release(
    State(app): State<Shared>,
    Path((project, channel, task)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    run_write(app, "claim.release", StatusCode::OK, headers, move |_, c| {
        let r: ReleaseReq = parse(&body)?;
        c.release_claim(&r.into_request(project, channel, task))
    })
    .await
}

async fn claim_sweep(State(app): State<Shared>, Path(project): Path<String>, body: Bytes) -> Response {
    run(app, "claim.sweep", move |a| {
        // Everything is optional: no body at all sweeps now.
        let r: SweepReq = if body.is_empty() { SweepReq::default() } else { parse(&body)? };
        a.coord.sweep(&project, r.as_of, r.dry_run)
    })
    .await
}

async fn focus_start(
    State(app): State<Shared>,
    Path((project, seat)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    run_write(app, "focus.start", StatusCode::OK, headers, move |_, c| {
        let r: FocusStartReq = parse(&body)?;
        c.focus_start(&project, &seat, r.minutes)
    })
    .await
}

async fn focus_end(
    State(app): State<Shared>,
    Path((project, seat)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    run_write(app, "focus.end", StatusCode::OK, headers, move |_, c| c.focus_end(&project, &seat)).await
}

async fn focus_show(State(app): State<Shared>, Path((project, seat)): Path<(String, String)>) -> Response {
    run(app, "focus.show", move |a| a.coord.focus_show(&project, &seat)).await
}

#[derive(serde::Deserialize)]
struct AsOfQuery {
    as_of: Option<Millis>,
}

async fn steward_report(
    State(app): State<Shared>,
    Path((project, channel)): Path<(String, String)>,
    q: Result<Query<AsOfQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    run(app, "steward.report", move |a| {
        let Query(q) = q.map_err(|e| ClaimError::InvalidArgument(format!("query: {}", e.body_text())))?;
        a.coord.steward_report(&project, &channel, q.as_of)
    })
    .await
}

// ---------------------------------------------------------------------------------------
// the background sweeper
// ---------------------------------------------------------------------------------------

impl App {
    /// Logs one background sweep (info per project that released something, warn per
    /// failure) and counts it for `/metrics`.
    fn record_sweep(&self, result: &SweepAll, elapsed: Duration) {
        let elapsed_ms = elapsed.as_secs_f64() * 1e3;
        let (mut released, mut conflicts, mut failure) = (0u64, 0u64, None);
        match result {
            Err(e) => {
                tracing::warn!(sweeper = true, result = e.code().as_str(), error = %e, elapsed_ms, "sweep failed");
                failure = Some(e.code());
            }
            Ok(projects) => {
                for (project, r) in projects {
                    match r {
                        Ok(rep) => {
                            released += rep.released.len() as u64;
                            conflicts += rep.conflicts;
                            if rep.released.is_empty() {
                                tracing::debug!(
                                    sweeper = true,
                                    project,
                                    deferred_by_focus = rep.deferred_by_focus,
                                    conflicts = rep.conflicts,
                                    "sweep released nothing"
                                );
                                continue;
                            }
                            tracing::info!(
                                sweeper = true,
                                project,
                                released = rep.released.len(),
                                deferred_by_focus = rep.deferred_by_focus,
                                conflicts = rep.conflicts,
                                as_of = rep.as_of,
                                "sweep released claims whose TTL ran out"
                            );
                            for act in &rep.released {
                                tracing::debug!(
                                    sweeper = true,
                                    project,
                                    channel = %act.channel,
                                    task = %act.task,
                                    from = %act.from,
                                    to = act.to.as_deref().unwrap_or(""),
                                    version = act.version,
                                    due_at = act.due_at,
                                    "claim released"
                                );
                            }
                        }
                        Err(e) => {
                            tracing::warn!(sweeper = true, project, result = e.code().as_str(), error = %e, "sweep failed");
                            failure.get_or_insert(e.code());
                        }
                    }
                }
            }
        }
        let mut m = self.metrics.lock().unwrap_or_else(|p| p.into_inner());
        *m.sweep_runs.entry(failure.map_or("ok", ErrorCode::as_str).to_string()).or_default() += 1;
        m.sweep_released += released;
        m.sweep_conflicts += conflicts;
    }
}

/// One sweep of every project with a due claim, on the blocking pool.
async fn sweep_once(app: &Shared) {
    let started = Instant::now();
    let app2 = app.clone();
    let result = match tokio::task::spawn_blocking(move || app2.coord.sweep_all()).await {
        Ok(r) => r,
        Err(e) => Err(ClaimError::Store(format!("sweep task failed: {e}"))),
    };
    app.record_sweep(&result, started.elapsed());
}

/// Sweeps every `every` until `stop` turns true (or its sender is gone). A sweep that runs
/// longer than `every` delays the next one: sweeps never overlap, and a stop waits for the
/// sweep in flight (one store round per batch) instead of abandoning it.
async fn sweeper(app: Shared, every: Duration, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        tokio::select! {
            biased;
            changed = stop.changed() => if changed.is_err() { return },
            _ = tick.tick() => sweep_once(&app).await,
        }
    }
}

/// `/livez`: the process serves HTTP. Touches no store, so a store outage never gets a
/// replica restarted (restarting cannot fix Redis or Postgres).
async fn livez() -> Response {
    (StatusCode::OK, axum::Json(serde_json::json!({"ok": true}))).into_response()
}

/// How long `/readyz` waits for the store: well under a probe's usual 1 s timeout.
pub const READY_TIMEOUT: Duration = Duration::from_millis(800);

/// The store's readiness, within [`READY_TIMEOUT`] whatever the store does. One probe at a
/// time: a probe that timed out keeps the guard until its blocking call returns (Redis's
/// own 2 s I/O timeout), so a frozen Redis never piles up blocked threads; probes arriving
/// meanwhile wait for the guard within their own deadline and answer not ready.
async fn probe_readiness(app: &Shared) -> Result<Backlog, ClaimError> {
    let probe = async {
        let guard = app.probe.clone().lock_owned().await;
        let app2 = app.clone();
        tokio::task::spawn_blocking(move || {
            let _guard = guard;
            app2.coord.store().readiness()
        })
        .await
        .map_err(|e| ClaimError::Store(format!("readiness probe failed: {e}")))?
    };
    match tokio::time::timeout(READY_TIMEOUT, probe).await {
        Ok(r) => r,
        Err(_) => {
            Err(ClaimError::Unavailable(format!("the store did not answer within {} ms", READY_TIMEOUT.as_millis())))
        }
    }
}

/// `/readyz`: this replica can serve verbs (the authoritative plane answers), within 1 s.
/// 200 with the audit plane's backlog (`degraded` while Postgres is failing or behind:
/// verbs still work, so a readiness probe must not take the fleet out); 503 otherwise.
async fn readyz(State(app): State<Shared>) -> Response {
    match probe_readiness(&app).await {
        Ok(b) => (
            StatusCode::OK,
            axum::Json(serde_json::json!({
                "ready": true,
                "degraded": b.degraded,
                "queue_depth": b.queue_depth,
                "oldest_queue_age_seconds": b.oldest_age_seconds,
            })),
        )
            .into_response(),
        Err(e) => {
            let mut doc = e.to_json();
            doc["ready"] = serde_json::json!(false);
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(doc)).into_response()
        }
    }
}

/// `/healthz` (kept for existing probes and scripts): 200 only when every plane answers,
/// Postgres included, so it fails on every replica at once during a Postgres outage. Use
/// `/readyz` for readiness and `/livez` for liveness.
async fn healthz(State(app): State<Shared>) -> Response {
    let app2 = app.clone();
    match tokio::task::spawn_blocking(move || app2.coord.store().health()).await {
        Ok(Ok(())) => (StatusCode::OK, axum::Json(serde_json::json!({"ok": true}))).into_response(),
        Ok(Err(e)) => error_response(&e),
        Err(e) => error_response(&ClaimError::Store(e.to_string())),
    }
}

async fn metrics(State(app): State<Shared>) -> Response {
    let mut out = String::new();
    let m = app.metrics.lock().unwrap_or_else(|p| p.into_inner()).clone();
    out.push_str("# HELP writerctl_verbs_total Coordinator verbs by result (ok or error code).\n");
    out.push_str("# TYPE writerctl_verbs_total counter\n");
    for ((verb, result), n) in &m.verbs {
        out.push_str(&format!("writerctl_verbs_total{{verb=\"{verb}\",result=\"{result}\"}} {n}\n"));
    }
    out.push_str("# HELP writerctl_verb_duration_seconds Time to answer a verb.\n");
    out.push_str("# TYPE writerctl_verb_duration_seconds histogram\n");
    for (verb, h) in &m.latency {
        for (i, le) in BUCKETS.iter().enumerate() {
            out.push_str(&format!(
                "writerctl_verb_duration_seconds_bucket{{verb=\"{verb}\",le=\"{le}\"}} {}\n",
                h.counts[i]
            ));
        }
        out.push_str(&format!("writerctl_verb_duration_seconds_bucket{{verb=\"{verb}\",le=\"+Inf\"}} {}\n", h.count));
        out.push_str(&format!("writerctl_verb_duration_seconds_sum{{verb=\"{verb}\"}} {}\n", h.sum));
        out.push_str(&format!("writerctl_verb_duration_seconds_count{{verb=\"{verb}\"}} {}\n", h.count));
    }
    out.push_str("# HELP writerctl_sweep_runs_total Background TTL sweeps by result (ok or the first error code).\n");
    out.push_str("# TYPE writerctl_sweep_runs_total counter\n");
    for (result, n) in &m.sweep_runs {
        out.push_str(&format!("writerctl_sweep_runs_total{{result=\"{result}\"}} {n}\n"));
    }
    out.push_str(
        "# HELP writerctl_sweep_released_total Claims the background sweeper released (to a deputy or open).\n",
    );
    out.push_str("# TYPE writerctl_sweep_released_total counter\n");
    out.push_str(&format!("writerctl_sweep_released_total {}\n", m.sweep_released));
    out.push_str(
        "# HELP writerctl_sweep_conflicts_total Due claims the background sweeper did not write: they changed first (an owner write, or another replica's sweep).\n",
    );
    out.push_str("# TYPE writerctl_sweep_conflicts_total counter\n");
    out.push_str(&format!("writerctl_sweep_conflicts_total {}\n", m.sweep_conflicts));
    let app2 = app.clone();
    // A count, never a per-project series: projects are not bounded, labels must be. Left
    // out (like the queue depth) when the store cannot answer, so a scrape still succeeds.
    match tokio::task::spawn_blocking(move || app2.coord.store().projects_without_master()).await {
        Ok(Ok(n)) => {
            out.push_str(
                "# HELP writerctl_projects_without_master Projects with registered controllers and no master.\n",
            );
            out.push_str("# TYPE writerctl_projects_without_master gauge\n");
            out.push_str(&format!("writerctl_projects_without_master {n}\n"));
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "metrics: projects without a master not counted"),
        Err(e) => tracing::warn!(error = %e, "metrics: projects without a master not counted"),
    }
    let app2 = app.clone();
    if let Ok(Some(depth)) = tokio::task::spawn_blocking(move || app2.coord.store().pending_audit_writes()).await {
        out.push_str("# HELP writerctl_audit_retry_queue_depth Writes accepted by Redis, not yet by Postgres.\n");
        out.push_str("# TYPE writerctl_audit_retry_queue_depth gauge\n");
        out.push_str(&format!("writerctl_audit_retry_queue_depth {depth}\n"));
    }
    // What /readyz says, bounded the same way; left out when the store does not answer.
    if let Ok(b) = probe_readiness(&app).await {
        out.push_str("# HELP writerctl_store_degraded 1 while the audit plane (Postgres) is failing or behind; verbs are still served.\n");
        out.push_str("# TYPE writerctl_store_degraded gauge\n");
        out.push_str(&format!("writerctl_store_degraded {}\n", u8::from(b.degraded)));
        out.push_str("# HELP writerctl_audit_retry_queue_oldest_age_seconds How long the oldest write not yet in Postgres has waited (0 when none).\n");
        out.push_str("# TYPE writerctl_audit_retry_queue_oldest_age_seconds gauge\n");
        out.push_str(&format!(
            "writerctl_audit_retry_queue_oldest_age_seconds {}\n",
            b.oldest_age_seconds.unwrap_or(0.0)
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

async fn openapi_doc() -> Response {
    (StatusCode::OK, axum::Json(openapi())).into_response()
}

async fn not_found() -> Response {
    error_response(&ClaimError::InvalidArgument("no such endpoint (see /openapi.json)".into()))
}

fn new_app(coordinator: Coordinator, admin_token_hash: Option<String>) -> Shared {
    Arc::new(App {
        coord: coordinator,
        admin_token_hash,
        metrics: Mutex::new(Metrics::default()),
        verifications: tokio::sync::Semaphore::new(MAX_CONCURRENT_CLAIMS),
        probe: Arc::new(tokio::sync::Mutex::new(())),
    })
}

/// The router (public so tests can drive it without a socket).
pub fn router(coordinator: Coordinator, admin_token_hash: Option<String>) -> Router {
    routes(new_app(coordinator, admin_token_hash))
}

fn routes(app: Shared) -> Router {
    Router::new()
        .route("/v1/projects/{project}/sessions", post(register))
        .route("/v1/projects/{project}/sessions/{sid}/heartbeat", post(heartbeat))
        .route("/v1/projects/{project}/sessions/{sid}/deregister", post(deregister))
        .route("/v1/projects/{project}/master", get(status))
        .route("/v1/projects/{project}/master/target", get(target))
        .route("/v1/projects/{project}/master/handoff", post(handoff))
        .route("/v1/projects/{project}/master/claim", post(claim))
        .route("/v1/projects/{project}/inbox/{identity}", get(inbox))
        .route("/v1/projects/{project}/channels", post(channel_create))
        .route("/v1/projects/{project}/channels/{channel}", get(channel_show))
        .route("/v1/projects/{project}/channels/{channel}/claims", get(claim_list))
        .route("/v1/projects/{project}/channels/{channel}/claims/{task}", get(claim_show))
        .route("/v1/projects/{project}/channels/{channel}/claims/{task}/history", get(claim_history))
        .route("/v1/projects/{project}/channels/{channel}/claims/{task}/take", post(claim_take))
        .route("/v1/projects/{project}/channels/{channel}/claims/{task}/touch", post(claim_touch))
        .route("/v1/projects/{project}/channels/{channel}/claims/{task}/release", post(claim_release))
        .route("/v1/projects/{project}/channels/{channel}/steward-report", get(steward_report))
        .route("/v1/projects/{project}/sweep", post(claim_sweep))
        .route("/v1/projects/{project}/focus/{seat}", get(focus_show))
        .route("/v1/projects/{project}/focus/{seat}/start", post(focus_start))
        .route("/v1/projects/{project}/focus/{seat}/end", post(focus_end))
        .route("/v1/operators", post(add_operator))
        .route("/v1/audit", get(audit))
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi_doc))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, REQUEST_TIME_LIMIT))
        .with_state(app)
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Bad TLS material.
    #[error("TLS: {0}")]
    Tls(String),
    /// Could not bind or serve.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Serves until `shutdown` resolves, then stops accepting and lets in-flight requests
/// finish (up to 10 s). `on_bound` receives the bound address (useful with port 0).
///
/// With `opts.sweep_every`, a background sweeper: once the server listens, every interval
/// it releases the work claims whose TTL ran out in every project
/// ([`Coordinator::sweep_all`] on the blocking pool), never two sweeps at once. It stops
/// when `shutdown` resolves (a sweep in flight finishes first) and is waited for before
/// this returns.
pub async fn serve(
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    on_bound: impl FnOnce(SocketAddr, bool) + Send + 'static,
) -> Result<(), ServeError> {
    let state = new_app(opts.coordinator, opts.admin_token_hash);
    let app = routes(state.clone());
    let handle = axum_server::Handle::new();
    let h2 = handle.clone();
    let tls = opts.tls.is_some();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let stop_on_signal = stop_tx.clone();
    tokio::spawn(async move {
        shutdown.await;
        stop_on_signal.send_replace(true);
        h2.graceful_shutdown(Some(Duration::from_secs(10)));
    });
    let sweeping = opts.sweep_every.filter(|d| !d.is_zero()).map(|every| {
        let (h, mut stop) = (handle.clone(), stop_rx.clone());
        tokio::spawn(async move {
            // Only a server that listens sweeps (a failed bind returns None).
            tokio::select! {
                bound = h.listening() => if bound.is_none() { return },
                _ = stop.wait_for(|s| *s) => return,
            }
            tracing::info!(every_s = every.as_secs_f64(), "sweeper started");
            sweeper(state, every, stop).await;
            tracing::info!("sweeper stopped");
        })
    });
    let h3 = handle.clone();
    tokio::spawn(async move {
        if let Some(addr) = h3.listening().await {
            on_bound(addr, tls);
        }
    });
    let served: Result<(), ServeError> = match opts.tls {
        Some((cert, key)) => {
            let _ = rustls::crypto::ring::default_provider().install_default();
            match axum_server::tls_rustls::RustlsConfig::from_pem_file(&cert, &key).await {
                Ok(config) => axum_server::bind_rustls(opts.listen, config)
                    .handle(handle)
                    .serve(app.into_make_service())
                    .await
                    .map_err(ServeError::from),
                Err(e) => Err(ServeError::Tls(format!("{} / {}: {e}", cert.display(), key.display()))),
            }
        }
        None => {
            axum_server::bind(opts.listen).handle(handle).serve(app.into_make_service()).await.map_err(ServeError::from)
        }
    };
    stop_tx.send_replace(true);
    if let Some(task) = sweeping {
        let _ = task.await;
    }
    served
}

/// OpenAPI: a reference to a component schema.
fn schema_ref(name: &str) -> serde_json::Value {
    serde_json::json!({"$ref": format!("#/components/schemas/{name}")})
}

/// OpenAPI: the error response every route may answer.
fn error_doc() -> serde_json::Value {
    serde_json::json!({"description": "a writerctl error", "content": {"application/json": {"schema": schema_ref("Error")}}})
}

/// OpenAPI: a path parameter holding a name (validated as the engine does).
fn path_param(name: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 256}})
}

/// OpenAPI: a required JSON request body of a component schema.
fn json_body(name: &str) -> serde_json::Value {
    serde_json::json!({"required": true, "content": {"application/json": {"schema": schema_ref(name)}}})
}

/// OpenAPI: an object schema.
fn object(props: serde_json::Value, required: &[&str]) -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": props, "required": required})
}

/// The OpenAPI 3.0 document for `/v1`.
pub fn openapi() -> serde_json::Value {
    use serde_json::json;
    let err = error_doc();
    let ok =
        |schema: &str| json!({"description": "ok", "content": {"application/json": {"schema": schema_ref(schema)}}});
    let responses = |schema: &str| json!({"200": ok(schema), "400": err, "401": err, "404": err, "409": err, "422": err, "503": err, "500": err});
    let p = path_param;
    let q =
        |name: &str, t: &str, req: bool| json!({"name": name, "in": "query", "required": req, "schema": {"type": t}});
    let body = json_body;
    let bearer = json!([{"bearer": []}]);
    let s = object;
    let string = json!({"type": "string"});
    let int = json!({"type": "integer", "minimum": 0});
    let controller = s(
        json!({"session_id": string, "identity": string, "surface": string, "machine_id": string,
               "is_master": {"type": "boolean"}, "registered_at": int, "last_heartbeat": int}),
        &["session_id", "identity", "surface", "machine_id", "is_master", "registered_at", "last_heartbeat"],
    );
    let master_ref = s(json!({"identity": string, "session_id": string}), &["identity", "session_id"]);
    let mut doc = json!({
        "openapi": "3.0.3",
        "info": {"title": "writerctl coordinator", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Master handoff and operator claim (SPEC-082). Errors: {\"error\":{\"code\",\"message\",\"hint\"}} with stable codes."},
        "paths": {
            "/v1/projects/{project}/sessions": {"post": {"operationId": "register", "parameters": [p("project")], "requestBody": body("RegisterReq"), "responses": responses("RegisterResp")}},
            "/v1/projects/{project}/sessions/{sid}/heartbeat": {"post": {"operationId": "heartbeat", "security": bearer, "parameters": [p("project"), p("sid")], "responses": responses("Controller")}},
            "/v1/projects/{project}/sessions/{sid}/deregister": {"post": {"operationId": "deregister", "security": bearer, "parameters": [p("project"), p("sid")], "responses": responses("DeregisterResp")}},
            "/v1/projects/{project}/master": {"get": {"operationId": "status", "parameters": [p("project")], "responses": responses("StatusResp")}},
            "/v1/projects/{project}/master/target": {"get": {"operationId": "target", "parameters": [p("project"), q("to", "string", true), q("to_session", "string", false)], "responses": responses("Controller")}},
            "/v1/projects/{project}/master/handoff": {"post": {"operationId": "handoff", "security": bearer, "parameters": [p("project")], "requestBody": body("HandoffReq"), "responses": responses("MasterOutcome")}},
            "/v1/projects/{project}/master/claim": {"post": {"operationId": "claim", "parameters": [p("project")], "requestBody": body("ClaimReq"), "responses": responses("MasterOutcome")}},
            "/v1/projects/{project}/inbox/{identity}": {"get": {"operationId": "inbox", "parameters": [p("project"), p("identity"), q("after", "integer", false), q("limit", "integer", false), q("wait_ms", "integer", false)], "responses": responses("InboxResp")}},
            "/v1/operators": {"post": {"operationId": "addOperator", "security": bearer, "requestBody": body("OperatorReq"), "responses": responses("OperatorResp")}},
            "/v1/audit": {"get": {"operationId": "audit", "security": bearer, "parameters": [q("project", "string", false), q("limit", "integer", false)], "responses": responses("AuditResp")}},
            "/livez": {"get": {"operationId": "livez", "responses": {"200": {"description": "the process serves (no store is asked)", "content": {"application/json": {"schema": s(json!({"ok": {"type": "boolean"}}), &["ok"])}}}}}},
            "/readyz": {"get": {"operationId": "readyz", "responses": {
                "200": {"description": "verbs can be served (the authoritative plane answers within 1 s); degraded: the audit plane is failing or behind", "content": {"application/json": {"schema": s(json!({
                    "ready": {"type": "boolean"}, "degraded": {"type": "boolean"}, "queue_depth": int,
                    "oldest_queue_age_seconds": {"type": "number", "minimum": 0, "nullable": true}}), &["ready", "degraded", "queue_depth", "oldest_queue_age_seconds"])}}},
                "503": {"description": "not ready: the authoritative plane did not answer within 1 s", "content": {"application/json": {"schema": s(json!({
                    "ready": {"type": "boolean"}, "error": s(json!({"code": string, "message": string, "hint": {"type": "string", "nullable": true}}), &["code", "message"])}), &["ready", "error"])}}}}}},
            "/healthz": {"get": {"operationId": "healthz", "responses": {"200": {"description": "both planes answer (Postgres included: fails during a Postgres outage; probes should use /livez and /readyz)"}, "503": err}}},
            "/metrics": {"get": {"operationId": "metrics", "responses": {"200": {"description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": s(json!({"error": s(json!({"code": string, "message": string, "hint": {"type": "string", "nullable": true}}), &["code", "message"])}), &["error"]),
                "Controller": controller,
                "MasterRef": master_ref,
                "RegisterReq": s(json!({"identity": string, "surface": string, "machine_id": string, "previous_token": string}), &["identity", "surface", "machine_id"]),
                "RegisterResp": s(json!({"controller": {"$ref": "#/components/schemas/Controller"}, "token": string, "epoch": int}), &["controller", "token", "epoch"]),
                "DeregisterResp": s(json!({"was_master": {"type": "boolean"}, "epoch": int}), &["was_master", "epoch"]),
                "StatusResp": s(json!({"master": {"allOf": [{"$ref": "#/components/schemas/MasterRef"}], "nullable": true}, "epoch": int,
                    "controllers": {"type": "array", "items": s(json!({"controller": {"$ref": "#/components/schemas/Controller"}, "fresh": {"type": "boolean"}}), &["controller", "fresh"])},
                    "freshness_ms": int, "now": int}), &["epoch", "controllers", "freshness_ms", "now"]),
                "HandoffReq": s(json!({"session_id": string, "to": string, "to_session": {"type": "string", "nullable": true}, "expect_epoch": int}), &["session_id", "to", "expect_epoch"]),
                "ClaimReq": s(json!({"to": string, "to_session": {"type": "string", "nullable": true}, "expect_epoch": int, "operator": string, "password": string}), &["to", "expect_epoch", "operator", "password"]),
                "MasterOutcome": s(json!({"previous_master": {"allOf": [{"$ref": "#/components/schemas/MasterRef"}], "nullable": true},
                    "new_master": {"$ref": "#/components/schemas/MasterRef"}, "preempted": {"type": "array", "items": {"$ref": "#/components/schemas/MasterRef"}},
                    "epoch": int, "changed": {"type": "boolean"}}), &["new_master", "preempted", "epoch", "changed"]),
                "OperatorReq": s(json!({"operator_id": string, "password": string}), &["operator_id", "password"]),
                "OperatorResp": s(json!({"operator_id": string, "created": {"type": "boolean"}}), &["operator_id", "created"]),
                "InboxResp": s(json!({"events": {"type": "array", "items": {"type": "object"}}}), &["events"]),
                "AuditResp": s(json!({"entries": {"type": "array", "items": {"type": "object"}}}), &["entries"]),
            }
        }
    });
    work_openapi(&mut doc);
    // Every write verb takes a request id (`--request-id` in the CLI).
    let request_id = json!({"name": "Idempotency-Key", "in": "header", "required": false,
        "description": "the write's request id: a retry with the same id and request returns the first answer and acts once (kept 10 minutes)",
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$"}});
    if let Some(paths) = doc["paths"].as_object_mut() {
        for (path, ops) in paths.iter_mut() {
            if path.ends_with("/sweep") {
                continue;
            }
            if let Some(post) = ops.get_mut("post") {
                match post.get_mut("parameters").and_then(|p| p.as_array_mut()) {
                    Some(params) => params.push(request_id.clone()),
                    None => post["parameters"] = json!([request_id]),
                }
            }
        }
    }
    doc
}

/// Seed 002's routes and schemas, added to [`openapi`]'s document.
fn work_openapi(doc: &mut serde_json::Value) {
    use serde_json::json;
    let schema = schema_ref;
    let err = error_doc();
    let responses = |status: &str, body: serde_json::Value| {
        let mut r = json!({"400": err, "404": err, "409": err, "422": err, "503": err, "500": err});
        r[status] = json!({"description": "ok", "content": {"application/json": {"schema": body}}});
        r
    };
    let ok = |body: serde_json::Value| responses("200", body);
    let list = |name: &str| json!({"type": "array", "items": schema(name)});
    let (p, body, s) = (path_param, json_body, object);
    let string = json!({"type": "string"});
    let nstring = json!({"type": "string", "nullable": true});
    let boolean = json!({"type": "boolean"});
    let count = json!({"type": "integer", "minimum": 0});
    let minutes = json!({"type": "integer", "minimum": 1, "maximum": crate::claim::work::MAX_MINUTES});
    let nminutes =
        json!({"type": "integer", "minimum": 1, "maximum": crate::claim::work::MAX_MINUTES, "nullable": true});
    let millis = json!({"type": "integer", "minimum": 0, "maximum": crate::claim::work::MAX_AS_OF});
    let ms = json!({"type": "integer"});
    let nms = json!({"type": "integer", "nullable": true});
    let (project, channel, task, seat) = (p("project"), p("channel"), p("task"), p("seat"));
    let claims = "/v1/projects/{project}/channels/{channel}/claims/{task}";
    let paths = [
        (
            "/v1/projects/{project}/channels".to_string(),
            json!({"post": {"operationId": "createChannel", "parameters": [project], "requestBody": body("ChannelReq"), "responses": responses("201", schema("Channel"))}}),
        ),
        (
            "/v1/projects/{project}/channels/{channel}".into(),
            json!({"get": {"operationId": "showChannel", "parameters": [project, channel], "responses": ok(schema("Channel"))}}),
        ),
        (
            "/v1/projects/{project}/channels/{channel}/claims".into(),
            json!({"get": {"operationId": "listClaims", "parameters": [project, channel], "responses": ok(list("ClaimRow"))}}),
        ),
        (
            claims.into(),
            json!({"get": {"operationId": "showClaim", "parameters": [project, channel, task], "responses": ok(schema("ClaimRow"))}}),
        ),
        (
            format!("{claims}/history"),
            json!({"get": {"operationId": "claimHistory", "parameters": [project, channel, task], "responses": ok(list("ClaimStep"))}}),
        ),
        (
            format!("{claims}/take"),
            json!({"post": {"operationId": "takeClaim", "parameters": [project, channel, task], "requestBody": body("TakeReq"), "responses": ok(schema("ClaimOutcome"))}}),
        ),
        (
            format!("{claims}/touch"),
            json!({"post": {"operationId": "touchClaim", "parameters": [project, channel, task], "requestBody": body("TouchReq"), "responses": ok(schema("ClaimOutcome"))}}),
        ),
        (
            format!("{claims}/release"),
            json!({"post": {"operationId": "releaseClaim", "parameters": [project, channel, task], "requestBody": body("ReleaseReq"), "responses": ok(schema("ClaimRow"))}}),
        ),
        (
            "/v1/projects/{project}/channels/{channel}/steward-report".into(),
            json!({"get": {"operationId": "stewardReport", "parameters": [project, channel, {"name": "as_of", "in": "query", "required": false, "schema": millis}], "responses": ok(schema("StewardReport"))}}),
        ),
        (
            "/v1/projects/{project}/sweep".into(),
            json!({"post": {"operationId": "sweep", "parameters": [project], "requestBody": body("SweepReq"), "responses": ok(schema("SweepReport"))}}),
        ),
        (
            "/v1/projects/{project}/focus/{seat}".into(),
            json!({"get": {"operationId": "showFocus", "parameters": [project, seat], "responses": ok(json!({"allOf": [schema("FocusLease")], "nullable": true}))}}),
        ),
        (
            "/v1/projects/{project}/focus/{seat}/start".into(),
            json!({"post": {"operationId": "startFocus", "parameters": [project, seat], "requestBody": body("FocusStartReq"), "responses": ok(schema("FocusOutcome"))}}),
        ),
        (
            "/v1/projects/{project}/focus/{seat}/end".into(),
            json!({"post": {"operationId": "endFocus", "parameters": [project, seat], "responses": ok(schema("FocusLease"))}}),
        ),
    ];
    for (path, ops) in paths {
        doc["paths"][path] = ops;
    }
    let status = json!({"type": "string", "enum": ["claimed", "released", "done"]});
    let schemas = [
        (
            "Channel",
            s(
                json!({"project": string, "channel": string, "steward": string, "sla_minutes": minutes, "ttl_floor_minutes": minutes, "created_at": ms}),
                &["project", "channel", "steward", "sla_minutes", "ttl_floor_minutes", "created_at"],
            ),
        ),
        (
            "ClaimRow",
            s(
                json!({"project": string, "channel": string, "task": string, "owner": nstring, "status": status, "version": count,
            "deputy": nstring, "ttl_minutes": nminutes, "next_step": nstring, "handoff_from": nstring, "last_owner_touch": nms,
            "owner_since": nms, "claimed_at": nms, "updated_at": ms}),
                &["project", "channel", "task", "status", "version", "updated_at"],
            ),
        ),
        (
            "ClaimStep",
            s(
                json!({"at": ms, "actor": string, "action": string, "claim": schema("ClaimRow")}),
                &["at", "actor", "action", "claim"],
            ),
        ),
        (
            "ClaimOutcome",
            s(
                json!({"claim": schema("ClaimRow"), "ttl_raised_from": {"type": "integer", "nullable": true}}),
                &["claim"],
            ),
        ),
        (
            "SweepAction",
            s(
                json!({"project": string, "channel": string, "task": string, "from": string, "to": nstring, "version": count, "due_at": ms}),
                &["project", "channel", "task", "from", "version", "due_at"],
            ),
        ),
        (
            "SweepReport",
            s(
                json!({"as_of": ms, "dry_run": boolean, "released": list("SweepAction"), "deferred_by_focus": count, "conflicts": count}),
                &["as_of", "dry_run", "released", "deferred_by_focus", "conflicts"],
            ),
        ),
        (
            "FocusLease",
            s(
                json!({"project": string, "seat": string, "started_at": ms, "until": ms, "ended_at": nms}),
                &["project", "seat", "started_at", "until"],
            ),
        ),
        (
            "FocusOutcome",
            s(json!({"lease": schema("FocusLease"), "capped_from": {"type": "integer", "nullable": true}}), &["lease"]),
        ),
        ("StewardItem", s(json!({"claim": schema("ClaimRow"), "age_minutes": ms}), &["claim", "age_minutes"])),
        (
            "StewardReport",
            s(
                json!({"channel": schema("Channel"), "as_of": ms, "overdue": list("StewardItem")}),
                &["channel", "as_of", "overdue"],
            ),
        ),
        (
            "ChannelReq",
            s(
                json!({"channel": string, "steward": string, "sla_minutes": minutes, "ttl_floor_minutes": minutes}),
                &["channel", "steward"],
            ),
        ),
        (
            "TakeReq",
            s(json!({"seat": string, "deputy": string, "ttl_minutes": minutes, "next_step": string}), &["seat"]),
        ),
        (
            "TouchReq",
            s(
                json!({"seat": string, "expect_version": count, "deputy": string, "clear_deputy": boolean, "ttl_minutes": minutes,
            "clear_ttl": boolean, "next_step": string}),
                &["seat"],
            ),
        ),
        (
            "ReleaseReq",
            s(json!({"seat": string, "expect_version": count, "done": boolean, "next_step": string}), &["seat"]),
        ),
        ("SweepReq", json!({"type": "object", "properties": {"as_of": millis, "dry_run": boolean}})),
        ("FocusStartReq", s(json!({"minutes": {"type": "integer", "minimum": 1, "maximum": u32::MAX}}), &["minutes"])),
    ];
    for (name, def) in schemas {
        doc["components"]["schemas"][name] = def;
    }
}
