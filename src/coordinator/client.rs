//! The HTTP client the commands use with `--coordinator http(s)://HOST:PORT`: every verb
//! ([`Verb`]) as one request to `writerctl coordinator serve`, with the server's
//! error codes relayed unchanged, so output and exit codes match the embedded store.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::transport::transport;
use super::verb::{Auth, Method, Verb, check_names};
use super::wire::REQUEST_ID_HEADER;
use crate::claim::ClaimError;
use crate::claim::error::StoreError;
use crate::claim::requests::RequestId;
use crate::claim::secret::Secret;
use crate::error::ErrorCode;
use crate::lockfile::paths::encode_uri_component as enc;

pub use super::verb::REQUEST_TIMEOUT;

/// A remote coordinator.
pub struct HttpCoordinator {
    base: String,
    agent: ureq::Agent,
    admin_token: Option<Secret>,
    /// Sent with every write (`Idempotency-Key`); see [`HttpCoordinator::with_request`].
    request: Option<RequestId>,
}

impl std::fmt::Debug for HttpCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCoordinator").field("base", &self.base).finish_non_exhaustive()
    }
}

/// An answer to [`HttpCoordinator::probe`].
#[derive(Debug, Clone)]
pub struct Probed {
    /// HTTP status.
    pub status: u16,
    /// The `Date` header, as sent.
    pub date: Option<String>,
    /// The body.
    pub body: String,
}

/// Whether `url` names a server (`http://` or `https://`) rather than an embedded store.
pub fn is_http_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// The host of `url` when it is clear-text `http://` to a host that is not this machine,
/// where bearer tokens and operator passwords would cross a network unencrypted (issue 15);
/// None for `https://` and for loopback. Loopback is the name `localhost` (or a name under
/// `.localhost`, which RFC 6761 reserves for loopback) or a loopback address (127.0.0.0/8,
/// ::1), decided from the text alone before any connection is attempted: what a name
/// resolves to is not known before connecting, and may change.
pub fn cleartext_remote_host(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match hostport.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => hostport.split(':').next().unwrap_or_default(),
    };
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    let loopback = name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    (!loopback).then(|| host.to_string())
}

impl HttpCoordinator {
    /// A client for `base` (`http://host:port` or `https://...`). `ca_pem` adds trusted
    /// roots (a private CA or a self-signed server certificate); `admin_token` authorizes
    /// administrative calls (`operator add`, `audit`).
    pub fn new(base: &str, ca_pem: Option<&[u8]>, admin_token: Option<Secret>) -> Result<HttpCoordinator, ClaimError> {
        let base = base.trim_end_matches('/').to_string();
        if !is_http_url(&base) {
            return Err(ClaimError::invalid("coordinator address", format!("{base}: expected http(s)://HOST:PORT")));
        }
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(3)))
            .user_agent(format!("writerctl/{}", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = ca_pem {
            let certs: Vec<_> = ureq::tls::parse_pem(pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(ClaimError::invalid("coordinator CA", "the CA file holds no PEM certificate"));
            }
            let tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::new_with_certs(&certs)).build();
            config = config.tls_config(tls);
        }
        Ok(HttpCoordinator { base, agent: config.build().into(), admin_token, request: None })
    }

    /// This client with `id` on every write it sends: the server keeps each write's answer
    /// under it, and a write whose reply was lost can be retried with the same id to get
    /// that answer without acting twice.
    pub fn with_request(mut self, id: Option<RequestId>) -> HttpCoordinator {
        self.request = id;
        self
    }

    /// A write that got no answer may have been applied: say so, and name the id that
    /// recovers its answer (issue 20: exit 75 hid a claim that had been taken).
    fn outcome_unknown(&self, e: ClaimError) -> ClaimError {
        if e.details().is_some_and(|d| d["applied"] == serde_json::json!(false)) {
            return e;
        }
        match &self.request {
            Some(id) if e.code() == ErrorCode::CoordinatorUnavailable => ClaimError::Remote {
                code: ErrorCode::CoordinatorUnavailable,
                message: format!("{e}; the outcome is unknown: the write may have been applied (request id {id})"),
                hint: Some(format!(
                    "retry with the same request id, --request-id {id}: the retry returns the first answer and acts once"
                )),
                details: Some(
                    serde_json::json!({"request_id": id.as_str(), "outcome": "unknown", "applied": "unknown"}),
                ),
            },
            _ => e,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Reads an answer: the body on 2xx, the relayed error otherwise.
    fn answer<T: DeserializeOwned>(
        &self,
        resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<T, ClaimError> {
        let mut resp = resp.map_err(|e| transport(e, &self.base))?;
        let status = resp.status();
        let text =
            resp.body_mut().with_config().limit(16 << 20).read_to_string().map_err(|e| transport(e, &self.base))?;
        if status.is_success() {
            return serde_json::from_str(&text)
                .map_err(|e| StoreError::new(format!("{}: unexpected answer ({e})", self.base)).with_source(e).into());
        }
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        if status == ureq::http::StatusCode::PAYLOAD_TOO_LARGE {
            return Err(ClaimError::invalid("request body", format!("{}: the request is too large", self.base)));
        }
        Err(ClaimError::from_json(&doc).unwrap_or_else(|| {
            let msg = format!("{}: HTTP {status} without a writerctl error", self.base);
            if status.is_server_error() { ClaimError::Unavailable(msg) } else { ClaimError::store(msg) }
        }))
    }

    /// Sends `V` with `bearer` as the caller's token (the admin token for
    /// [`Auth::Admin`] verbs) and reads its answer. The names the request carries are
    /// checked by the engine's rules first ([`check_names`]).
    pub fn call<V: Verb>(
        &self,
        path: &V::Path,
        input: &V::Input,
        bearer: Option<&Secret>,
    ) -> Result<V::Answer, ClaimError> {
        check_names::<V>(path, input)?;
        let url = self.url(&fill(V::PATH, path)?);
        let bearer = match V::AUTH {
            Auth::Admin => Some(self.admin()?),
            _ => bearer,
        };
        let timeout = V::client_timeout(input);
        match V::METHOD {
            Method::Post => {
                let mut req = self.agent.post(url).config().timeout_global(Some(timeout)).build();
                if let Some(t) = bearer {
                    req = req.header("Authorization", format!("Bearer {}", t.expose().trim()));
                }
                if let Some(id) = &self.request {
                    req = req.header(REQUEST_ID_HEADER, id.as_str());
                }
                self.answer(req.send_json(input)).map_err(|e| self.outcome_unknown(e))
            }
            Method::Get => {
                let mut req = self.agent.get(url).config().timeout_global(Some(timeout)).build();
                for (k, v) in query_pairs(input)? {
                    req = req.query(k, v);
                }
                if let Some(t) = bearer {
                    req = req.header("Authorization", format!("Bearer {}", t.expose().trim()));
                }
                self.answer(req.call())
            }
        }
    }

    /// GETs a fixed, unauthenticated path (`/readyz`, `/healthz`) for `writerctl doctor`:
    /// (status, the `Date` header, body), with the transport's per-kind messages when it
    /// cannot be reached. Sends no credential.
    pub fn probe(&self, path: &str) -> Result<Probed, ClaimError> {
        let req = self.agent.get(self.url(path)).config().timeout_global(Some(Duration::from_secs(5))).build();
        let mut resp = req.call().map_err(|e| transport(e, &self.base))?;
        let date = resp.headers().get("date").and_then(|v| v.to_str().ok()).map(str::to_string);
        let status = resp.status().as_u16();
        let body =
            resp.body_mut().with_config().limit(1 << 20).read_to_string().map_err(|e| transport(e, &self.base))?;
        Ok(Probed { status, date, body })
    }

    fn admin(&self) -> Result<&Secret, ClaimError> {
        // Issue 28 point 6: the same `unauthorized` (6) the server answers, whichever side
        // notices the missing token (README, CLI.md).
        self.admin_token.as_ref().ok_or(ClaimError::AdminRequired)
    }
}

/// `template` with each `{name}` replaced by the path parameter of that name,
/// percent-encoded (the names are checked first, by [`check_names`]).
fn fill(template: &str, path: &impl Serialize) -> Result<String, ClaimError> {
    let mut out = template.to_string();
    for (name, value) in fields(path)? {
        out = out.replace(&format!("{{{name}}}"), &enc(value.as_str().unwrap_or_default()));
    }
    Ok(out)
}

/// A request's parameters (a path or a query struct) as JSON fields, in declaration order.
fn fields(v: &impl Serialize) -> Result<serde_json::Map<String, serde_json::Value>, ClaimError> {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(other) => Err(ClaimError::store(format!("request parameters are not an object: {other}"))),
        Err(e) => Err(ClaimError::store_because("request parameters", e)),
    }
}

/// A query's fields as `key=value` pairs; absent (null) ones are left out.
fn query_pairs(q: &impl Serialize) -> Result<Vec<(String, String)>, ClaimError> {
    Ok(fields(q)?
        .into_iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some((k, s)),
            other => Some((k, other.to_string())),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::cleartext_remote_host;

    #[test]
    fn only_http_off_this_machine_is_cleartext_remote() {
        for local in [
            "https://db.example:7700",
            "http://localhost:7700",
            "http://LOCALHOST.:7700/x",
            "http://api.localhost:1",
            "http://127.0.0.1:7700",
            "http://127.8.9.10",
            "http://[::1]:7700",
            "http://user@127.0.0.1:1/path",
        ] {
            assert_eq!(cleartext_remote_host(local), None, "{local}");
        }
        for (remote, host) in [
            ("http://coord.example:7700", "coord.example"),
            ("http://10.0.0.5:7700", "10.0.0.5"),
            ("http://[fe80::1]:7700", "fe80::1"),
            ("http://localhost.example.com", "localhost.example.com"),
            ("http://127.0.0.1.evil.example/", "127.0.0.1.evil.example"),
            ("http://127.0.0.1@evil.example/", "evil.example"),
            ("http://0.0.0.0:7700", "0.0.0.0"),
        ] {
            assert_eq!(cleartext_remote_host(remote).as_deref(), Some(host), "{remote}");
        }
    }
}
