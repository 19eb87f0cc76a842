//! What stands around every handler: the body guard (size, time and rate limits while a
//! body arrives) and the envelope every error answer is put into, whoever made it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::app::{MAX_BODY, REQUEST_TIME_LIMIT, Shared};
use crate::claim::ClaimError;
use crate::coordinator::limits::{BODY_RATE_GRACE, ConnEvent, ConnGate, ConnState, MIN_BODY_RATE, Phase};
use crate::error::ErrorCode;

/// An error envelope with an explicit code, message and hint.
pub(super) fn coded(code: ErrorCode, message: String, hint: &str) -> ClaimError {
    ClaimError::Remote { code, message, hint: Some(hint.to_string()), details: None }
}

pub(super) async fn not_found() -> Response {
    let e = coded(ErrorCode::NotFound, "no such endpoint".into(), "GET /openapi.json lists the endpoints");
    (StatusCode::NOT_FOUND, axum::Json(e.to_json())).into_response()
}

/// Rewrites every error answer that is not already the JSON envelope into it, keeping its
/// status (issue 19: "no answer leaves the envelope"). Those are the answers axum and
/// tower-http make before or around a handler: a body over [`MAX_BODY`] (413), a query or
/// path parameter that does not parse (400), a wrong method (405, its `Allow` header kept),
/// the request time limit (503, empty).
pub(super) async fn envelope(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, 16 * 1024).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
        Err(_) => String::new(),
    };
    let said = |fallback: &str| if text.is_empty() { fallback.to_string() } else { text.clone() };
    let e = match status {
        StatusCode::NOT_FOUND => {
            coded(ErrorCode::NotFound, said("no such endpoint"), "GET /openapi.json lists the endpoints")
        }
        StatusCode::METHOD_NOT_ALLOWED => coded(
            ErrorCode::InvalidArgument,
            format!(
                "method not allowed on this path{}",
                match parts.headers.get(header::ALLOW) {
                    Some(a) => format!(" (allowed: {})", a.to_str().unwrap_or("?")),
                    None => String::new(),
                }
            ),
            "GET /openapi.json lists each endpoint's method",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => coded(
            ErrorCode::InvalidArgument,
            format!("request body larger than {MAX_BODY} bytes"),
            "send a smaller body",
        ),
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT | StatusCode::REQUEST_TIMEOUT => {
            ClaimError::Unavailable(format!(
                "the request ran past the server's time limit ({} s)",
                REQUEST_TIME_LIMIT.as_secs()
            ))
        }
        s if s.is_client_error() => coded(
            ErrorCode::InvalidArgument,
            said(s.canonical_reason().unwrap_or("bad request")),
            "GET /openapi.json describes each endpoint's parameters",
        ),
        _ => ClaimError::store(said("internal error")),
    };
    let mut out = (status, axum::Json(e.to_json())).into_response();
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        out.headers_mut().insert(header::ALLOW, allow.clone());
    }
    out
}

/// Why a request body was not read.
enum BodyRefusal {
    /// Larger than [`MAX_BODY`] (by its Content-Length, or as it arrived).
    TooLarge,
    /// Not complete within the body timeout, or slower than [`MIN_BODY_RATE`].
    TooSlow,
    /// The connection was evicted for a newer one of its source (see `limits`).
    Evicted,
    /// The client broke the body off (or sent a malformed chunked body).
    Broken,
}

/// Reads a request body whole, within `deadline` and at no less than [`MIN_BODY_RATE`]
/// after [`BODY_RATE_GRACE`], and at most [`MAX_BODY`] bytes; gives up at once when `conn`
/// is evicted. Issue 28 point 1: a client that sends a head with a large Content-Length and
/// then a byte every few seconds holds its connection for at most the grace (or the
/// deadline), not for the whole request time limit.
async fn read_body(
    mut body: axum::body::Body,
    deadline: Duration,
    conn: Option<&ConnState>,
) -> Result<Bytes, BodyRefusal> {
    use axum::body::HttpBody;
    let started = tokio::time::Instant::now();
    let mut got: Vec<u8> = Vec::new();
    let evicted = async {
        match conn {
            Some(c) => c.evicted().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(evicted);
    loop {
        let elapsed = started.elapsed();
        if elapsed >= BODY_RATE_GRACE && (got.len() as u64) < MIN_BODY_RATE * elapsed.as_secs() {
            return Err(BodyRefusal::TooSlow);
        }
        // Wake at the deadline, or at the next rate check (every second after the grace).
        let next_check = started + BODY_RATE_GRACE.max(Duration::from_secs(elapsed.as_secs() + 1));
        let wake = next_check.min(started + deadline);
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx));
        tokio::select! {
            f = frame => match f {
                None => return Ok(Bytes::from(got)),
                Some(Err(_)) => return Err(BodyRefusal::Broken),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if got.len() + data.len() > MAX_BODY {
                            return Err(BodyRefusal::TooLarge);
                        }
                        got.extend_from_slice(&data);
                    }
                }
            },
            _ = tokio::time::sleep_until(wake) => {
                if started.elapsed() >= deadline {
                    return Err(BodyRefusal::TooSlow);
                }
            }
            _ = &mut evicted => return Err(BodyRefusal::Evicted),
        }
    }
}

/// An envelope answer that closes its connection (its body may be unread).
fn closing(status: StatusCode, e: &ClaimError) -> Response {
    close_after((status, axum::Json(e.to_json())).into_response())
}

/// `resp` with `Connection: close`: the connection ends once it is written (its body may
/// be unread, or it was evicted while its request waited).
pub(super) fn close_after(mut resp: Response) -> Response {
    resp.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    resp
}

/// Runs before every handler: refuses a Content-Length over [`MAX_BODY`] at once (413,
/// without reading the body), reads the body within the body timeout ([`read_body`]; 408
/// past it, counted and logged per source), and tells the connection's state what it is
/// doing (waiting on the client while the body arrives, busy while handled, answered once
/// the handler returns) so that only connections waiting on their client are evicted. The
/// connection's state goes to the handler in the request's extensions: a long-poll holds
/// it in [`Phase::Held`], and a request whose credential was accepted marks it proven.
pub(super) async fn body_guard(
    State((app, gate)): State<(Shared, Option<Arc<ConnGate>>)>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    let conn = gate.as_ref().zip(peer).and_then(|(g, p)| g.conn(p));
    let set = |p: Phase| {
        if let Some(c) = &conn {
            c.set_phase(p)
        }
    };
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        closing(
            StatusCode::PAYLOAD_TOO_LARGE,
            &coded(
                ErrorCode::InvalidArgument,
                format!("request body larger than {MAX_BODY} bytes"),
                "send a smaller body",
            ),
        )
    };
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        set(Phase::Answered);
        return too_large();
    }
    set(Phase::Body);
    if let Some(c) = &conn {
        // The handler marks a connection proven (issue 39 point 3) and holds long-polls in
        // the pool (issue 39 point 2) through its state.
        req.extensions_mut().insert(c.clone());
    }
    let (parts, body) = req.into_parts();
    let read = read_body(body, app.body_timeout, conn.as_deref()).await;
    let bytes = match read {
        Ok(b) => b,
        Err(why) => {
            set(Phase::Answered);
            return match why {
                BodyRefusal::TooLarge => too_large(),
                BodyRefusal::TooSlow => {
                    if let (Some(g), Some(p)) = (&gate, peer) {
                        g.note(p.ip(), ConnEvent::BodyTimeout);
                    }
                    closing(
                        StatusCode::REQUEST_TIMEOUT,
                        &coded(
                            ErrorCode::CoordinatorUnavailable,
                            format!(
                                "the request body did not arrive within {} s (or came slower than {MIN_BODY_RATE} bytes/s)",
                                app.body_timeout.as_secs_f64()
                            ),
                            "send the body with the request head, then retry",
                        ),
                    )
                }
                BodyRefusal::Evicted => closing(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &coded(
                        ErrorCode::CoordinatorUnavailable,
                        "too many open connections from this source: this one waited longest for its body".into(),
                        "retry later",
                    ),
                ),
                BodyRefusal::Broken => closing(
                    StatusCode::BAD_REQUEST,
                    &coded(
                        ErrorCode::InvalidArgument,
                        "the request body was cut off or malformed".into(),
                        "send the whole body",
                    ),
                ),
            };
        }
    };
    set(Phase::Busy);
    let resp = next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await;
    set(Phase::Answered);
    resp
}

/// Refuses a request at once, before its body is read, while the resident set is above the
/// memory budget's high-water mark (issue 39 point 1: "refusing work before it exceeds the
/// budget"): 503 `coordinator_unavailable` in the envelope, and the connection is closed
/// (its buffers go with it). `/livez` and `/readyz` are always served, so an orchestrator
/// sees a live process that is shedding load rather than a dead one; the probe listener has
/// no such guard.
pub(super) async fn memory_guard(
    State(app): State<Shared>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let probe = matches!(req.uri().path(), "/livez" | "/readyz");
    if !probe && let Some(rss) = app.memory.over() {
        const MIB: u64 = 1024 * 1024;
        let budget = app.memory.budget();
        return closing(
            StatusCode::SERVICE_UNAVAILABLE,
            &coded(
                ErrorCode::CoordinatorUnavailable,
                format!(
                    "the server is near its memory budget ({} MiB resident, refusing work above {} MiB of {} MiB)",
                    rss / MIB,
                    budget.high_water() / MIB,
                    budget.bytes / MIB
                ),
                "retry later; if this lasts, raise --memory-budget (or the memory limit it is derived from)",
            ),
        );
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tower::ServiceExt;

    use super::super::app::new_app;
    use super::super::routes::routes;
    use crate::claim::Coordinator;
    use crate::claim::clock::SystemClock;
    use crate::claim::stores::sqlite::SqliteStore;
    use crate::coordinator::limits::DEFAULT_BODY_TIMEOUT;
    use crate::coordinator::memory::MemoryBudget;

    /// Issue 39 point 1: with the resident set above the budget's high-water mark, every
    /// request but `/livez` and `/readyz` is refused at once: 503 `coordinator_unavailable`
    /// in the envelope, its connection closed, counted on `/metrics` (probe listener).
    #[test]
    fn over_the_memory_budget_requests_are_refused_and_probes_still_answer() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("c.sqlite")).unwrap());
        let coordinator = Coordinator::new(store, Arc::new(SystemClock), Duration::from_secs(30));
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        rt.block_on(async {
            // 1 MiB: any process is above 90% of it (the flag's floor does not apply here).
            let app = new_app(coordinator, None, None, DEFAULT_BODY_TIMEOUT, MemoryBudget::derive(Some(1 << 20), None));
            let router = routes(app.clone());
            let send = |method: &str, path: &str| {
                let req = axum::http::Request::builder()
                    .method(method)
                    .uri(path)
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from("{}"))
                    .unwrap();
                router.clone().oneshot(req)
            };
            for (method, path) in [("POST", "/v1/projects/p/sessions"), ("GET", "/openapi.json"), ("GET", "/metrics")] {
                let resp = send(method, path).await.unwrap();
                assert_eq!(resp.status(), 503, "{method} {path}");
                assert_eq!(resp.headers()["connection"], "close");
                let body = axum::body::to_bytes(resp.into_body(), 1 << 16).await.unwrap();
                let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(doc["error"]["code"], "coordinator_unavailable", "{doc}");
                assert!(doc["error"]["message"].as_str().unwrap().contains("memory budget"), "{doc}");
                assert!(doc["error"]["hint"].as_str().unwrap().contains("--memory-budget"), "{doc}");
            }
            for path in ["/livez", "/readyz"] {
                assert_eq!(send("GET", path).await.unwrap().status(), 200, "{path}");
            }
            assert_eq!(app.memory.refused(), 3);
        });
    }
}
