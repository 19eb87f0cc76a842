//! The HTTP client the commands use with `--coordinator http(s)://HOST:PORT`: every verb of
//! [`CoordinatorApi`] as one request to `writerctl coordinator serve`, with the server's
//! error codes relayed unchanged, so output and exit codes match the embedded store.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::transport::transport;
use super::wire::*;
use crate::claim::ClaimError;
use crate::claim::api::CoordinatorApi;
use crate::claim::engine::{Credentials, IssuedKey, MasterRequest, Registered, Status};
use crate::claim::master::{ControllerKey, MasterOutcome, Removed};
use crate::claim::model::{AuditEntry, Controller, EnrolledIdentity, Event, Millis};
use crate::claim::request::RequestId;
use crate::claim::secret::Secret;
use crate::claim::work::{
    Channel, ClaimOutcome, ClaimRow, ClaimStep, FocusLease, FocusOutcome, ReleaseRequest, StewardReport, SweepReport,
    TakeRequest, TouchRequest,
};
use crate::coordinator::server::REQUEST_ID_HEADER;
use crate::error::ErrorCode;
use crate::lockfile::paths::encode_uri_component as enc;

/// How long one request may take before the coordinator counts as unavailable (a long-poll
/// adds its own wait on top). Longer than a server's own wait for a busy store (30 s), so a
/// verb the server still commits is not reported as failed.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(45);

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
            return Err(ClaimError::InvalidArgument(format!("{base}: expected http(s)://HOST:PORT")));
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
                return Err(ClaimError::InvalidArgument("the CA file holds no PEM certificate".into()));
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
                .map_err(|e| ClaimError::Store(format!("{}: unexpected answer ({e})", self.base)));
        }
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        if status == ureq::http::StatusCode::PAYLOAD_TOO_LARGE {
            return Err(ClaimError::InvalidArgument(format!("{}: the request is too large", self.base)));
        }
        Err(ClaimError::from_json(&doc).unwrap_or_else(|| {
            let msg = format!("{}: HTTP {status} without a writerctl error", self.base);
            if status.is_server_error() { ClaimError::Unavailable(msg) } else { ClaimError::Store(msg) }
        }))
    }

    fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        bearer: Option<&Secret>,
        body: &B,
        timeout: Duration,
    ) -> Result<T, ClaimError> {
        let mut req = self.agent.post(self.url(path)).config().timeout_global(Some(timeout)).build();
        if let Some(t) = bearer {
            req = req.header("Authorization", format!("Bearer {}", t.expose().trim()));
        }
        if let Some(id) = &self.request {
            req = req.header(REQUEST_ID_HEADER, id.as_str());
        }
        self.answer(req.send_json(body)).map_err(|e| self.outcome_unknown(e))
    }

    fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        bearer: Option<&Secret>,
        query: &[(&str, String)],
        timeout: Duration,
    ) -> Result<T, ClaimError> {
        let mut req = self.agent.get(self.url(path)).config().timeout_global(Some(timeout)).build();
        for (k, v) in query {
            req = req.query(*k, v);
        }
        if let Some(t) = bearer {
            req = req.header("Authorization", format!("Bearer {}", t.expose().trim()));
        }
        self.answer(req.call())
    }

    fn admin(&self) -> Result<&Secret, ClaimError> {
        // Issue 28 point 6: the same `unauthorized` (6) the server answers, whichever side
        // notices the missing token (README, CLI.md).
        self.admin_token.as_ref().ok_or(ClaimError::AdminRequired)
    }
}

/// The engine's name rules, checked before sending: a bad name fails the same way (and
/// with the same code) as in-process, instead of as an oversized request or URL.
fn names(items: &[(&str, &str)]) -> Result<(), ClaimError> {
    items.iter().try_for_each(|(what, v)| crate::claim::engine::validate_name(what, v))
}

/// `/v1/projects/{project}/channels/{channel}`.
fn channel_path(project: &str, channel: &str) -> Result<String, ClaimError> {
    names(&[("project", project), ("channel", channel)])?;
    Ok(format!("/v1/projects/{}/channels/{}", enc(project), enc(channel)))
}

/// `/v1/projects/{project}/channels/{channel}/claims/{task}`.
fn claim_path(project: &str, channel: &str, task: &str) -> Result<String, ClaimError> {
    names(&[("task", task)])?;
    Ok(format!("{}/claims/{}", channel_path(project, channel)?, enc(task)))
}

/// `/v1/projects/{project}/identities/{identity}`.
fn identity_path(project: &str, identity: &str) -> Result<String, ClaimError> {
    names(&[("project", project), ("identity", identity)])?;
    Ok(format!("/v1/projects/{}/identities/{}", enc(project), enc(identity)))
}

/// An enrollment as the server describes it (never with its key hash).
fn enrolled(i: IdentityOut, key_hash: String) -> EnrolledIdentity {
    EnrolledIdentity { identity: i.identity, key_hash, enrolled_at: i.enrolled_at, key_issued_at: i.key_issued_at }
}

fn issued(r: IssuedKeyResp) -> IssuedKey {
    IssuedKey { identity: enrolled(r.identity, String::new()), key: Secret::new(r.key) }
}

/// `/v1/projects/{project}/focus/{seat}`.
fn focus_path(project: &str, seat: &str) -> Result<String, ClaimError> {
    names(&[("project", project), ("seat", seat)])?;
    Ok(format!("/v1/projects/{}/focus/{}", enc(project), enc(seat)))
}

impl CoordinatorApi for HttpCoordinator {
    fn register(
        &self,
        project: &str,
        key: &ControllerKey,
        credentials: Credentials<'_>,
    ) -> Result<Registered, ClaimError> {
        names(&[
            ("project", project),
            ("identity", &key.identity),
            ("surface", &key.surface),
            ("machine id", &key.machine_id),
        ])?;
        let body = RegisterReq {
            identity: key.identity.clone(),
            surface: key.surface.clone(),
            machine_id: key.machine_id.clone(),
            previous_token: credentials.token.map(|t| t.expose().trim().to_string()),
            identity_key: credentials.identity_key.map(|k| k.expose().trim().to_string()),
        };
        let r: RegisterResp =
            self.post(&format!("/v1/projects/{}/sessions", enc(project)), None, &body, REQUEST_TIMEOUT)?;
        Ok(Registered { controller: r.controller.into(), token: Secret::new(r.token), epoch: r.epoch })
    }

    fn heartbeat(&self, project: &str, session_id: &str, token: &Secret) -> Result<Controller, ClaimError> {
        names(&[("project", project), ("session id", session_id)])?;
        let path = format!("/v1/projects/{}/sessions/{}/heartbeat", enc(project), enc(session_id));
        let r: ControllerOut = self.post(&path, Some(token), &serde_json::json!({}), REQUEST_TIMEOUT)?;
        Ok(r.into())
    }

    fn deregister(&self, project: &str, session_id: &str, token: &Secret) -> Result<(bool, u64), ClaimError> {
        names(&[("project", project), ("session id", session_id)])?;
        let path = format!("/v1/projects/{}/sessions/{}/deregister", enc(project), enc(session_id));
        let r: DeregisterResp = self.post(&path, Some(token), &serde_json::json!({}), REQUEST_TIMEOUT)?;
        Ok((r.was_master, r.epoch))
    }

    fn status(&self, project: &str) -> Result<Status, ClaimError> {
        names(&[("project", project)])?;
        let r: StatusResp = self.get(&format!("/v1/projects/{}/master", enc(project)), None, &[], REQUEST_TIMEOUT)?;
        Ok(r.into())
    }

    fn preview_target(
        &self,
        project: &str,
        to_identity: &str,
        to_session: Option<&str>,
    ) -> Result<Controller, ClaimError> {
        names(&[("project", project), ("identity", to_identity), ("session id", to_session.unwrap_or("-"))])?;
        let mut q = vec![("to", to_identity.to_string())];
        if let Some(s) = to_session {
            q.push(("to_session", s.to_string()));
        }
        let r: ControllerOut =
            self.get(&format!("/v1/projects/{}/master/target", enc(project)), None, &q, REQUEST_TIMEOUT)?;
        Ok(r.into())
    }

    fn handoff(&self, req: &MasterRequest, caller: &str, token: &Secret) -> Result<MasterOutcome, ClaimError> {
        names(&[("project", &req.project), ("identity", &req.to_identity), ("session id", caller)])?;
        names(&[("session id", req.to_session.as_deref().unwrap_or("-"))])?;
        let body = HandoffReq {
            session_id: caller.to_string(),
            to: req.to_identity.clone(),
            to_session: req.to_session.clone(),
            expect_epoch: req.expect_epoch,
        };
        self.post(&format!("/v1/projects/{}/master/handoff", enc(&req.project)), Some(token), &body, REQUEST_TIMEOUT)
    }

    fn claim(&self, req: &MasterRequest, operator_id: &str, password: &Secret) -> Result<MasterOutcome, ClaimError> {
        names(&[("project", &req.project), ("identity", &req.to_identity), ("operator id", operator_id)])?;
        names(&[("session id", req.to_session.as_deref().unwrap_or("-"))])?;
        let body = ClaimReq {
            to: req.to_identity.clone(),
            to_session: req.to_session.clone(),
            expect_epoch: req.expect_epoch,
            operator: operator_id.to_string(),
            password: password.expose().to_string(),
        };
        // A slowed-down operator waits up to 60 s server-side before verification.
        self.post(
            &format!("/v1/projects/{}/master/claim", enc(&req.project)),
            None,
            &body,
            REQUEST_TIMEOUT + Duration::from_secs(60),
        )
    }

    fn add_operator(&self, operator_id: &str, password: &Secret) -> Result<(), ClaimError> {
        names(&[("operator id", operator_id)])?;
        let body = OperatorReq { operator_id: operator_id.to_string(), password: password.expose().to_string() };
        let _: serde_json::Value = self.post("/v1/operators", Some(self.admin()?), &body, REQUEST_TIMEOUT)?;
        Ok(())
    }

    fn inbox(
        &self,
        project: &str,
        identity: &str,
        after: u64,
        limit: usize,
        wait: Duration,
        token: Option<&Secret>,
    ) -> Result<Vec<Event>, ClaimError> {
        names(&[("project", project), ("identity", identity)])?;
        let q = [("after", after.to_string()), ("limit", limit.to_string()), ("wait_ms", wait.as_millis().to_string())];
        let path = format!("/v1/projects/{}/inbox/{}", enc(project), enc(identity));
        let r: InboxResp = self.get(&path, token, &q, REQUEST_TIMEOUT + wait)?;
        Ok(r.events)
    }

    fn enroll_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
        names(&[("project", project), ("identity", identity)])?;
        let body = IdentityReq { identity: identity.to_string() };
        let path = format!("/v1/projects/{}/identities", enc(project));
        Ok(issued(self.post(&path, Some(self.admin()?), &body, REQUEST_TIMEOUT)?))
    }

    fn rotate_identity(&self, project: &str, identity: &str) -> Result<IssuedKey, ClaimError> {
        let path = format!("{}/rotate", identity_path(project, identity)?);
        Ok(issued(self.post(&path, Some(self.admin()?), &serde_json::json!({}), REQUEST_TIMEOUT)?))
    }

    fn remove_identity(&self, project: &str, identity: &str) -> Result<Removed, ClaimError> {
        let path = format!("{}/remove", identity_path(project, identity)?);
        self.post(&path, Some(self.admin()?), &serde_json::json!({}), REQUEST_TIMEOUT)
    }

    fn identities(&self, project: &str) -> Result<Vec<EnrolledIdentity>, ClaimError> {
        names(&[("project", project)])?;
        let path = format!("/v1/projects/{}/identities", enc(project));
        let r: IdentitiesResp = self.get(&path, Some(self.admin()?), &[], REQUEST_TIMEOUT)?;
        // The server never sends key hashes; the list carries names and times only.
        Ok(r.identities.into_iter().map(|i| enrolled(i, String::new())).collect())
    }

    fn audit_log(&self, project: Option<&str>, limit: usize) -> Result<Vec<AuditEntry>, ClaimError> {
        let mut q = vec![("limit", limit.to_string())];
        if let Some(p) = project {
            q.push(("project", p.to_string()));
        }
        let r: AuditResp = self.get("/v1/audit", Some(self.admin()?), &q, REQUEST_TIMEOUT)?;
        Ok(r.entries)
    }

    fn create_channel(
        &self,
        project: &str,
        channel: &str,
        steward: &str,
        sla_minutes: Option<u32>,
        ttl_floor_minutes: Option<u32>,
    ) -> Result<Channel, ClaimError> {
        names(&[("project", project), ("channel", channel), ("steward", steward)])?;
        let body =
            ChannelReq { channel: channel.to_string(), steward: steward.to_string(), sla_minutes, ttl_floor_minutes };
        self.post(&format!("/v1/projects/{}/channels", enc(project)), Some(self.admin()?), &body, REQUEST_TIMEOUT)
    }

    fn show_channel(&self, project: &str, channel: &str) -> Result<Channel, ClaimError> {
        self.get(&channel_path(project, channel)?, None, &[], REQUEST_TIMEOUT)
    }

    fn take(&self, req: &TakeRequest, token: Option<&Secret>) -> Result<ClaimOutcome, ClaimError> {
        names(&[("seat", &req.seat), ("deputy", req.deputy.as_deref().unwrap_or("-"))])?;
        let path = format!("{}/take", claim_path(&req.project, &req.channel, &req.task)?);
        self.post(&path, token, &TakeReq::of(req), REQUEST_TIMEOUT)
    }

    fn touch(&self, req: &TouchRequest, token: Option<&Secret>) -> Result<ClaimOutcome, ClaimError> {
        names(&[("seat", &req.seat), ("deputy", req.deputy.as_ref().and_then(|d| d.as_deref()).unwrap_or("-"))])?;
        let path = format!("{}/touch", claim_path(&req.project, &req.channel, &req.task)?);
        self.post(&path, token, &TouchReq::of(req), REQUEST_TIMEOUT)
    }

    fn release_claim(&self, req: &ReleaseRequest, token: Option<&Secret>) -> Result<ClaimRow, ClaimError> {
        names(&[("seat", &req.seat)])?;
        let path = format!("{}/release", claim_path(&req.project, &req.channel, &req.task)?);
        self.post(&path, token, &ReleaseReq::of(req), REQUEST_TIMEOUT)
    }

    fn show_claim(&self, project: &str, channel: &str, task: &str) -> Result<ClaimRow, ClaimError> {
        self.get(&claim_path(project, channel, task)?, None, &[], REQUEST_TIMEOUT)
    }

    fn claim_history(&self, project: &str, channel: &str, task: &str) -> Result<Vec<ClaimStep>, ClaimError> {
        let path = format!("{}/history", claim_path(project, channel, task)?);
        self.get(&path, None, &[], REQUEST_TIMEOUT)
    }

    fn list_claims(&self, project: &str, channel: &str) -> Result<Vec<ClaimRow>, ClaimError> {
        let path = format!("{}/claims", channel_path(project, channel)?);
        self.get(&path, None, &[], REQUEST_TIMEOUT)
    }

    fn sweep(&self, project: &str, as_of: Option<Millis>, dry_run: bool) -> Result<SweepReport, ClaimError> {
        names(&[("project", project)])?;
        let path = format!("/v1/projects/{}/sweep", enc(project));
        self.post(&path, None, &SweepReq { as_of, dry_run }, REQUEST_TIMEOUT)
    }

    fn focus_start(
        &self,
        project: &str,
        seat: &str,
        minutes: u32,
        token: Option<&Secret>,
    ) -> Result<FocusOutcome, ClaimError> {
        let path = format!("{}/start", focus_path(project, seat)?);
        self.post(&path, token, &FocusStartReq { minutes }, REQUEST_TIMEOUT)
    }

    fn focus_end(&self, project: &str, seat: &str, token: Option<&Secret>) -> Result<FocusLease, ClaimError> {
        let path = format!("{}/end", focus_path(project, seat)?);
        self.post(&path, token, &serde_json::json!({}), REQUEST_TIMEOUT)
    }

    fn focus_show(&self, project: &str, seat: &str) -> Result<Option<FocusLease>, ClaimError> {
        self.get(&focus_path(project, seat)?, None, &[], REQUEST_TIMEOUT)
    }

    fn steward_report(&self, project: &str, channel: &str, as_of: Option<Millis>) -> Result<StewardReport, ClaimError> {
        let path = format!("{}/steward-report", channel_path(project, channel)?);
        let q: Vec<(&str, String)> = as_of.map(|t| ("as_of", t.to_string())).into_iter().collect();
        self.get(&path, None, &q, REQUEST_TIMEOUT)
    }
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
