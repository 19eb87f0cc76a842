//! The routes: every verb of [`for_each_verb`](crate::for_each_verb), served by the
//! generic handler, and the fixed ones (probes, metrics, the document), with the layers
//! around them.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{MethodRouter, get};

use super::app::{MAX_BODY, REQUEST_TIME_LIMIT, Shared, new_app};
use super::{guard, handler, metrics, openapi, probes};
use crate::claim::Coordinator;
use crate::coordinator::limits::{ConnGate, DEFAULT_BODY_TIMEOUT};
use crate::coordinator::memory::MemoryBudget;
use crate::coordinator::verb::{Method, Verb};

/// The router (public so tests can drive it without a socket).
pub fn router(coordinator: Coordinator, admin_token_hash: Option<String>) -> Router {
    routes(new_app(coordinator, admin_token_hash, None, DEFAULT_BODY_TIMEOUT, MemoryBudget::fallback()))
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

pub(super) fn routes(app: Shared) -> Router {
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
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard::memory_guard))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, REQUEST_TIME_LIMIT))
        .layer(axum::middleware::map_response(guard::envelope))
        .with_state(app)
}

/// The probe listener's routes (`--probe-listen`): `/livez`, `/readyz` and `/metrics`
/// only; anything else is 404 in the envelope.
pub(super) fn probe_routes(app: Shared, gate: Arc<ConnGate>) -> Router {
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
