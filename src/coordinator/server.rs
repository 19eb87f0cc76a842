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

//!
//! The server is split by concern: [`app`](self) state and limits, the verb handler, the
//! routes, the body guard and error envelope, probes, `/metrics`, the OpenAPI document, and
//! listening; this file only names what is public.

mod app;
mod counters;
mod guard;
mod handler;
mod listen;
mod metrics;
mod openapi;
mod probes;
mod reads;
mod routes;
mod watchers;

pub use self::app::{
    CLAIMS_PER_SOURCE, CLAIMS_WAITING_PER_SOURCE, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS, MAX_BODY,
    MAX_LONG_POLL, PROBE_MAX_CONNECTIONS, REQUEST_TIME_LIMIT, ServeOptions,
};
pub use self::listen::{LISTEN_BACKLOG, MAX_HEAD_BYTES, ServeError, serve};
pub use self::openapi::openapi;
pub use self::probes::READY_TIMEOUT;
pub use self::routes::{route_table, router};
pub use super::wire::REQUEST_ID_HEADER;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::http::{HeaderMap, StatusCode, header};
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
                    // What any request meets (a bad name or body, a wrong method, a body too
                    // large, a busy store); 401 where a token is taken; each verb's own
                    // codes' statuses beside (`Verb::ERRORS`).
                    for status in ["400", "405", "413", "500", "503"] {
                        assert!(op["responses"].get(status).is_some(), "{method} {path}: {status}");
                    }
                    if op.get("security").is_some() {
                        assert!(op["responses"].get("401").is_some(), "{method} {path}: 401");
                    }
                }
            }
        }
        let statuses = |path: &str, method: &str| -> Vec<String> {
            doc["paths"][path][method]["responses"].as_object().unwrap().keys().cloned().collect()
        };
        // A read anyone may make names no credential, conflict or rate; a master claim does.
        let status = statuses("/v1/projects/{project}/master", "get");
        assert_eq!(status, ["200", "400", "405", "408", "413", "431", "500", "503"], "{status:?}");
        let claim = statuses("/v1/projects/{project}/master/claim", "post");
        assert!(["401", "404", "409", "429"].iter().all(|s| claim.contains(&s.to_string())), "{claim:?}");
    }
}
