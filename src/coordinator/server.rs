//! `writerctl coordinator serve`: the coordinator verbs as a versioned JSON API over HTTP
//! (axum), with `/healthz`, `/metrics` (Prometheus text), `/openapi.json`, body-size and
//! time limits, graceful shutdown and optional TLS.
//!
//! No decision is made from in-process state: every verb runs the engine against the store
//! (one transaction or one compare-and-set), so any number of replicas over one Redis +
//! Postgres stay correct. The engine is synchronous, so verbs run on tokio's blocking pool.

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
use crate::claim::secret::{self, Secret};
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
}

/// Verbs by result, and latency histograms, for `/metrics`.
#[derive(Default)]
struct Metrics {
    verbs: BTreeMap<(String, String), u64>,
    latency: BTreeMap<String, Histogram>,
}

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

/// Runs `f` on the blocking pool, records metrics and a log line, and answers with JSON.
async fn run<T, F>(app: Shared, verb: &'static str, f: F) -> Response
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
            (StatusCode::OK, axum::Json(v)).into_response()
        }
        Err(e) => {
            let code = e.code().as_str();
            app.observe(verb, code, elapsed);
            tracing::info!(verb, result = code, elapsed_ms = elapsed.as_secs_f64() * 1e3);
            error_response(&e)
        }
    }
}

async fn register(State(app): State<Shared>, Path(project): Path<String>, body: Bytes) -> Response {
    run(app, "session.register", move |a| {
        let r: RegisterReq = parse(&body)?;
        let key = ControllerKey { identity: r.identity, surface: r.surface, machine_id: r.machine_id };
        let reg = a.coord.register(&project, &key, r.previous_token.map(Secret::new).as_ref())?;
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
    run(app, "session.heartbeat", move |a| {
        let row = a.coord.heartbeat(&project, &sid, &bearer(&headers)?)?;
        Ok(ControllerOut::from(&row))
    })
    .await
}

async fn deregister(
    State(app): State<Shared>,
    Path((project, sid)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    run(app, "session.deregister", move |a| {
        let (was_master, epoch) = a.coord.deregister(&project, &sid, &bearer(&headers)?)?;
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
    run(app, "master.handoff", move |a| {
        let r: HandoffReq = parse(&body)?;
        let token = bearer(&headers)?;
        let req = MasterRequest { project, to_identity: r.to, to_session: r.to_session, expect_epoch: r.expect_epoch };
        a.coord.handoff(&req, &r.session_id, &token)
    })
    .await
}

async fn claim(State(app): State<Shared>, Path(project): Path<String>, body: Bytes) -> Response {
    let holder = app.clone();
    let Ok(_permit) = holder.verifications.try_acquire() else {
        let e = ClaimError::Unavailable("too many operator verifications in flight".into());
        app.observe("master.claim", e.code().as_str(), Duration::ZERO);
        return error_response(&e);
    };
    run(app, "master.claim", move |a| {
        let r: ClaimReq = parse(&body)?;
        let req = MasterRequest { project, to_identity: r.to, to_session: r.to_session, expect_epoch: r.expect_epoch };
        a.coord.claim(&req, &r.operator, &Secret::new(r.password))
    })
    .await
}

async fn add_operator(State(app): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    run(app, "operator.add", move |a| {
        let r: OperatorReq = parse(&body)?;
        a.admin(&headers, "operator.add", Some(format!("operator:{}", r.operator_id)))?;
        a.coord.add_operator_as(&r.operator_id, &Secret::new(r.password), "admin")?;
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
    let snapshot = {
        let m = app.metrics.lock().unwrap_or_else(|p| p.into_inner());
        (m.verbs.clone(), m.latency.clone())
    };
    out.push_str("# HELP writerctl_verbs_total Coordinator verbs by result (ok or error code).\n");
    out.push_str("# TYPE writerctl_verbs_total counter\n");
    for ((verb, result), n) in &snapshot.0 {
        out.push_str(&format!("writerctl_verbs_total{{verb=\"{verb}\",result=\"{result}\"}} {n}\n"));
    }
    out.push_str("# HELP writerctl_verb_duration_seconds Time to answer a verb.\n");
    out.push_str("# TYPE writerctl_verb_duration_seconds histogram\n");
    for (verb, h) in &snapshot.1 {
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
    let app2 = app.clone();
    if let Ok(Some(depth)) = tokio::task::spawn_blocking(move || app2.coord.store().pending_audit_writes()).await {
        out.push_str("# HELP writerctl_audit_retry_queue_depth Writes accepted by Redis, not yet by Postgres.\n");
        out.push_str("# TYPE writerctl_audit_retry_queue_depth gauge\n");
        out.push_str(&format!("writerctl_audit_retry_queue_depth {depth}\n"));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

async fn openapi_doc() -> Response {
    (StatusCode::OK, axum::Json(openapi())).into_response()
}

async fn not_found() -> Response {
    error_response(&ClaimError::InvalidArgument("no such endpoint (see /openapi.json)".into()))
}

/// The router (public so tests can drive it without a socket).
pub fn router(coordinator: Coordinator, admin_token_hash: Option<String>) -> Router {
    let app: Shared = Arc::new(App {
        coord: coordinator,
        admin_token_hash,
        metrics: Mutex::new(Metrics::default()),
        verifications: tokio::sync::Semaphore::new(MAX_CONCURRENT_CLAIMS),
    });
    Router::new()
        .route("/v1/projects/{project}/sessions", post(register))
        .route("/v1/projects/{project}/sessions/{sid}/heartbeat", post(heartbeat))
        .route("/v1/projects/{project}/sessions/{sid}/deregister", post(deregister))
        .route("/v1/projects/{project}/master", get(status))
        .route("/v1/projects/{project}/master/target", get(target))
        .route("/v1/projects/{project}/master/handoff", post(handoff))
        .route("/v1/projects/{project}/master/claim", post(claim))
        .route("/v1/projects/{project}/inbox/{identity}", get(inbox))
        .route("/v1/operators", post(add_operator))
        .route("/v1/audit", get(audit))
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
pub async fn serve(
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    on_bound: impl FnOnce(SocketAddr, bool) + Send + 'static,
) -> Result<(), ServeError> {
    let app = router(opts.coordinator, opts.admin_token_hash);
    let handle = axum_server::Handle::new();
    let h2 = handle.clone();
    let tls = opts.tls.is_some();
    tokio::spawn(async move {
        shutdown.await;
        h2.graceful_shutdown(Some(Duration::from_secs(10)));
    });
    let h3 = handle.clone();
    tokio::spawn(async move {
        if let Some(addr) = h3.listening().await {
            on_bound(addr, tls);
        }
    });
    match opts.tls {
        Some((cert, key)) => {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let config = axum_server::tls_rustls::RustlsConfig::from_pem_file(&cert, &key)
                .await
                .map_err(|e| ServeError::Tls(format!("{} / {}: {e}", cert.display(), key.display())))?;
            axum_server::bind_rustls(opts.listen, config).handle(handle).serve(app.into_make_service()).await?;
        }
        None => axum_server::bind(opts.listen).handle(handle).serve(app.into_make_service()).await?,
    }
    Ok(())
}

/// The OpenAPI 3.0 document for `/v1`.
pub fn openapi() -> serde_json::Value {
    use serde_json::json;
    let err = json!({"description": "a writerctl error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
    let ok = |schema: &str| json!({"description": "ok", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}});
    let responses = |schema: &str| json!({"200": ok(schema), "400": err, "401": err, "404": err, "409": err, "422": err, "503": err, "500": err});
    let p = |name: &str| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": 256}});
    let q =
        |name: &str, t: &str, req: bool| json!({"name": name, "in": "query", "required": req, "schema": {"type": t}});
    let body = |schema: &str| json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}});
    let bearer = json!([{"bearer": []}]);
    let s = |props: serde_json::Value, req: &[&str]| json!({"type": "object", "properties": props, "required": req});
    let string = json!({"type": "string"});
    let int = json!({"type": "integer", "minimum": 0});
    let controller = s(
        json!({"session_id": string, "identity": string, "surface": string, "machine_id": string,
               "is_master": {"type": "boolean"}, "registered_at": int, "last_heartbeat": int}),
        &["session_id", "identity", "surface", "machine_id", "is_master", "registered_at", "last_heartbeat"],
    );
    let master_ref = s(json!({"identity": string, "session_id": string}), &["identity", "session_id"]);
    json!({
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
            "/healthz": {"get": {"operationId": "healthz", "responses": {"200": {"description": "both planes answer"}, "503": err}}},
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
    })
}
