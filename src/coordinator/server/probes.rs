//! `/livez`, `/readyz` and `/healthz`: what orchestrators probe.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::app::Shared;
use super::handler::error_response;
use crate::claim::ClaimError;
use crate::claim::error::StoreError;
use crate::claim::stores::Backlog;
use std::time::Duration;

/// `/livez`: the process serves HTTP. Touches no store, so a store outage never gets a
/// replica restarted (restarting cannot fix Redis or Postgres).
pub(super) async fn livez() -> Response {
    (StatusCode::OK, axum::Json(serde_json::json!({"ok": true}))).into_response()
}

/// How long `/readyz` waits for the store: well under a probe's usual 1 s timeout.
pub const READY_TIMEOUT: Duration = Duration::from_millis(800);

/// The store's readiness, within [`READY_TIMEOUT`] whatever the store does. One probe at a
/// time: a probe that timed out keeps the guard until its blocking call returns (Redis's
/// own 2 s I/O timeout), so a frozen Redis never piles up blocked threads; probes arriving
/// meanwhile wait for the guard within their own deadline and answer not ready.
pub(super) async fn probe_readiness(app: &Shared) -> Result<Backlog, ClaimError> {
    let probe = async {
        let guard = app.probe.clone().lock_owned().await;
        let app2 = app.clone();
        tokio::task::spawn_blocking(move || {
            let _guard = guard;
            app2.coord.store().readiness()
        })
        .await
        .map_err(|e| ClaimError::store_because("readiness probe failed", e))?
    };
    match tokio::time::timeout(READY_TIMEOUT, probe).await {
        Ok(r) => r,
        Err(_) => {
            Err(ClaimError::Unavailable(format!("the store did not answer within {} ms", READY_TIMEOUT.as_millis())))
        }
    }
}

/// `/readyz`: this replica can serve verbs (the authoritative plane answers), within 1 s.
/// 200 with the audit plane's backlog and whether `--open-registration` is on (`degraded` while Postgres is failing or behind:
/// verbs still work, so a readiness probe must not take the fleet out); 503 otherwise.
pub(super) async fn readyz(State(app): State<Shared>) -> Response {
    match probe_readiness(&app).await {
        Ok(b) => (
            StatusCode::OK,
            axum::Json(serde_json::json!({
                "ready": true,
                "degraded": b.degraded,
                "queue_depth": b.queue_depth,
                "oldest_queue_age_seconds": b.oldest_age_seconds,
                // Read-only here so `writerctl doctor` can warn about a lab setting left on
                // in production (also the writerctl_open_registration gauge).
                "open_registration": app.coord.open_registration(),
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
pub(super) async fn healthz(State(app): State<Shared>) -> Response {
    let app2 = app.clone();
    match tokio::task::spawn_blocking(move || app2.coord.store().health()).await {
        Ok(Ok(())) => (StatusCode::OK, axum::Json(serde_json::json!({"ok": true}))).into_response(),
        Ok(Err(e)) => error_response(&e),
        Err(e) => error_response(&StoreError::new(e.to_string()).with_source(e).into()),
    }
}
