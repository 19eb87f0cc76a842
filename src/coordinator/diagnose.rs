//! `writerctl doctor --coordinator URL`: can this machine reach the coordinator, and is it
//! in a state to serve verbs?
//!
//! # What is asked
//!
//! ```text
//! GET /readyz   reachability (the transport's own per-kind messages), readiness and the
//!               degraded audit plane, open registration, the clock (the `Date` header)
//! GET /healthz  the store: every plane answers (Postgres included)
//! TLS handshake for https: the server certificate's expiry, read even when it is expired
//! ```
//!
//! Nothing is written and no credential is sent: both paths are the unauthenticated probes
//! orchestrators use. For the embedded store (`sqlite:PATH`) there is no server; the file's
//! presence, type and mode are judged by the rule the store applies when it opens it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::client::{HttpCoordinator, cleartext_remote_host};
use crate::claim::ClaimError;
use crate::doctor::{Check, Verdict};
use crate::tls::{self, CertCheck};

/// Above this clock offset to the coordinator, warn: RFC 3339 times the CLI computes
/// (`--as-of`, `--until`) and the times shown beside the server's drift apart, and the
/// `Date` header's one-second resolution plus a round trip stay well below it.
pub const CLOCK_WARN: Duration = Duration::from_secs(5);

/// Warn when the server certificate expires within this long.
pub const CERT_WARN: Duration = Duration::from_secs(14 * 86_400);

/// Every check of the server at `url` (`http(s)://`); `ca_pem` as for the other commands
/// (`WRITERCTL_COORDINATOR_CA`).
pub fn diagnose_server(url: &str, ca_pem: Option<&[u8]>) -> Vec<Check> {
    let mut checks = Vec::new();
    checks.push(match cleartext_remote_host(url) {
        Some(host) => Check::with(
            "coordinator.transport",
            Verdict::Warn,
            format!("{url} is clear-text http:// to {host}, another machine"),
            "serve it with --tls-cert/--tls-key and use https://; other commands refuse this address without --allow-insecure-http",
        ),
        None => Check::ok("coordinator.transport", url.to_string()),
    });
    let client = match HttpCoordinator::new(url, ca_pem, None) {
        Ok(c) => c,
        Err(e) => {
            checks.push(from_claim_error("coordinator.reachable", &e));
            return checks;
        }
    };
    let sent = SystemTime::now();
    match client.probe("/readyz") {
        Err(e) => checks.push(from_claim_error("coordinator.reachable", &e)),
        Ok(answer) => {
            let received = SystemTime::now();
            let rtt = received.duration_since(sent).unwrap_or_default();
            checks.push(Check::ok(
                "coordinator.reachable",
                format!("{url} answered /readyz with HTTP {} in {} ms", answer.status, rtt.as_millis()),
            ));
            let doc: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
            checks.push(readiness(answer.status, &doc));
            checks.push(open_registration(&doc));
            checks.push(clock(answer.date.as_deref(), sent + rtt / 2));
            checks.push(store(&client));
        }
    }
    if url.starts_with("https://") {
        checks.push(certificate(url, SystemTime::now()));
    }
    checks
}

/// A check that failed with a coordinator error: its message and hint.
fn from_claim_error(name: &str, e: &ClaimError) -> Check {
    Check {
        name: name.into(),
        verdict: Verdict::Fail,
        detail: format!("{e} ({})", e.code()),
        hint: e.hint().or_else(|| Some("check --coordinator / WRITERCTL_COORDINATOR and the server's logs".into())),
    }
}

/// `/readyz`: 200 and not degraded is ok; 200 and degraded (the audit plane failing or
/// behind: verbs still work) warns; anything else fails with the server's own reason.
fn readiness(status: u16, doc: &serde_json::Value) -> Check {
    const NAME: &str = "coordinator.ready";
    if status != 200 || doc["ready"] != serde_json::json!(true) {
        let why = doc["error"]["message"].as_str().unwrap_or("no reason given");
        return Check::with(
            NAME,
            Verdict::Fail,
            format!("not ready (HTTP {status}): {why}"),
            "verbs fail until the authoritative store (SQLite file, or Redis) answers; see the server's log and `/readyz`",
        );
    }
    let depth = doc["queue_depth"].as_u64().unwrap_or(0);
    if doc["degraded"] == serde_json::json!(true) {
        let age = doc["oldest_queue_age_seconds"].as_f64().map(|a| format!(", oldest {a:.0} s")).unwrap_or_default();
        return Check::with(
            NAME,
            Verdict::Warn,
            format!("ready but degraded: the audit plane (Postgres) is failing or behind; {depth} writes queued{age}"),
            "verbs still work and the queue drains when Postgres answers; check Postgres and `writerctl_audit_retry_queue_depth`",
        );
    }
    Check::ok(NAME, format!("ready, not degraded ({depth} audit writes queued)"))
}

/// `--open-registration` (read from `/readyz`): a lab setting, under which identities nobody
/// enrolled register without a key.
fn open_registration(doc: &serde_json::Value) -> Check {
    const NAME: &str = "coordinator.open_registration";
    match doc["open_registration"].as_bool() {
        Some(false) => Check::ok(NAME, "off: every registration proves an enrolled identity"),
        Some(true) => Check::with(
            NAME,
            Verdict::Warn,
            "on: identities nobody enrolled register without a key (serve --open-registration)",
            "a lab setting: restart `writerctl coordinator serve` without --open-registration and enroll identities with `writerctl identity add`",
        ),
        None => Check::with(
            NAME,
            Verdict::Warn,
            "unknown: this server's /readyz does not say (a writerctl older than this client)",
            "upgrade the server, or read the writerctl_open_registration gauge on its /metrics",
        ),
    }
}

/// The offset of the server's clock to ours, from the `Date` header (second resolution),
/// measured against the middle of the round trip.
fn clock(date: Option<&str>, midpoint: SystemTime) -> Check {
    const NAME: &str = "coordinator.clock";
    let Some(server) = date.and_then(parse_http_date) else {
        return Check::with(
            NAME,
            Verdict::Warn,
            format!("cannot tell: the answer carried no readable Date header ({date:?})"),
            "compare the clocks by hand (`date -u` on both machines); keep both on NTP",
        );
    };
    let (ahead, offset) = match server.duration_since(midpoint) {
        Ok(d) => (true, d),
        Err(e) => (false, e.duration()),
    };
    let detail = format!(
        "the coordinator's clock is {:.1} s {} this machine's (±1 s: the Date header counts whole seconds)",
        offset.as_secs_f64(),
        if ahead { "ahead of" } else { "behind" }
    );
    if offset > CLOCK_WARN {
        return Check::with(
            NAME,
            Verdict::Warn,
            detail,
            format!(
                "more than {} s apart: times given to the coordinator (--as-of, --until) and times it shows drift from this machine's; sync both with NTP (`chronyc tracking`, `timedatectl`)",
                CLOCK_WARN.as_secs()
            ),
        );
    }
    Check::ok(NAME, detail)
}

/// An HTTP `Date` (IMF-fixdate, RFC 9110 §5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`), which is
/// RFC 2822's date with the `GMT` zone.
fn parse_http_date(s: &str) -> Option<SystemTime> {
    let t = time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc2822).ok()?;
    Some(SystemTime::from(t))
}

/// `/healthz`: every plane of the store answers (Postgres included, unlike `/readyz`).
fn store(client: &HttpCoordinator) -> Check {
    const NAME: &str = "coordinator.store";
    match client.probe("/healthz") {
        Ok(a) if a.status == 200 => Check::ok(NAME, "every plane of the store answers (/healthz)"),
        Ok(a) => {
            let doc: serde_json::Value = serde_json::from_str(&a.body).unwrap_or_default();
            let why = doc["error"]["message"].as_str().unwrap_or("no reason given").to_string();
            Check::with(
                NAME,
                Verdict::Fail,
                format!("/healthz answered HTTP {}: {why}", a.status),
                doc["error"]["hint"]
                    .as_str()
                    .unwrap_or(
                        "check the store the server names (Redis, Postgres or the SQLite file) and the server's log",
                    )
                    .to_string(),
            )
        }
        Err(e) => from_claim_error(NAME, &e),
    }
}

/// The server certificate's validity, read from a TLS handshake of its own.
fn certificate(url: &str, now: SystemTime) -> Check {
    match peer_certificate_validity(url) {
        Ok((not_before, not_after)) => validity(not_before, not_after, now),
        Err(e) => Check::with(
            CERT_CHECK,
            Verdict::Fail,
            format!("cannot read the server certificate: {e}"),
            "check that the address speaks TLS (serve --tls-cert/--tls-key)",
        ),
    }
}

const CERT_CHECK: &str = "coordinator.tls_certificate";

/// A certificate valid from `not_before` to `not_after`, judged at `now`: failed once
/// expired or before it is valid, a warning within [`CERT_WARN`] of its end.
fn validity(not_before: SystemTime, not_after: SystemTime, now: SystemTime) -> Check {
    const NAME: &str = CERT_CHECK;
    let days = |d: Duration| d.as_secs() / 86_400;
    let after = time::OffsetDateTime::from(not_after);
    match not_after.duration_since(now) {
        Err(e) => Check::with(
            NAME,
            Verdict::Fail,
            format!("expired {after} ({} days ago)", days(e.duration())),
            "every https client refuses it: renew the certificate, then restart `writerctl coordinator serve` with the new --tls-cert/--tls-key",
        ),
        Ok(_) if now < not_before => Check::with(
            NAME,
            Verdict::Fail,
            format!("not valid before {}", time::OffsetDateTime::from(not_before)),
            "the certificate is not valid yet: check the clocks of this machine and of the one that issued it",
        ),
        Ok(left) if left < CERT_WARN => Check::with(
            NAME,
            Verdict::Warn,
            format!("expires {after}, in {} days", days(left)),
            format!("renew it within {} days, then restart the server with the new --tls-cert/--tls-key", days(left)),
        ),
        Ok(left) => Check::ok(NAME, format!("valid until {after} ({} days)", days(left))),
    }
}

/// (notBefore, notAfter) of the certificate the server at `url` presents.
///
/// Why a handshake of our own: the HTTP client validates the chain and answers only "the
/// handshake failed" for an expired certificate, and gives no access to the certificate
/// itself. This handshake accepts any certificate *only to read it*: nothing else is sent
/// on the connection (no request, no credential), and it is closed right after. Its
/// signatures are still checked, so the certificate is the one whose key the peer holds.
fn peer_certificate_validity(url: &str) -> Result<(SystemTime, SystemTime), String> {
    use std::net::ToSocketAddrs;
    let at = super::transport::address(url);
    let host = super::transport::host(&at).to_string();
    let addr = at.to_socket_addrs().map_err(|e| format!("{at}: {e}"))?.next().ok_or(format!("{at}: no address"))?;
    let mut sock =
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3)).map_err(|e| format!("{at}: {e}"))?;
    sock.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
    sock.set_write_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = tls::client_config(provider, CertCheck::Nothing).map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::try_from(host).map_err(|e| e.to_string())?;
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).map_err(|e| format!("TLS handshake with {at}: {e}"))?;
    }
    let der = conn.peer_certificates().and_then(|chain| chain.first()).ok_or("no certificate presented")?.to_vec();
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    validity_of(&der)
}

/// (notBefore, notAfter) of a DER certificate.
fn validity_of(der: &[u8]) -> Result<(SystemTime, SystemTime), String> {
    use x509_cert::der::Decode;
    let cert = x509_cert::Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
    let v = &cert.tbs_certificate.validity;
    Ok((v.not_before.to_system_time(), v.not_after.to_system_time()))
}

/// The embedded store at `path`: present, a regular file, and private (the rule
/// [`crate::claim::stores::sqlite`] applies when it opens the file).
pub fn diagnose_sqlite(path: &Path) -> Vec<Check> {
    const NAME: &str = "coordinator.store_file";
    use std::os::unix::fs::MetadataExt;
    let check = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Check::with(
            NAME,
            Verdict::Warn,
            format!("the embedded store {} does not exist yet", path.display()),
            "it is created (mode 0600) by the first coordinator command that uses it; if one already ran, check the path given with --coordinator sqlite:PATH",
        ),
        Err(e) => Check::with(
            NAME,
            Verdict::Fail,
            format!("cannot stat the embedded store {}: {e}", path.display()),
            "check the path and the permissions of its directory",
        ),
        Ok(m) if !m.file_type().is_file() => Check::with(
            NAME,
            Verdict::Fail,
            format!("the embedded store {} is not a regular file", path.display()),
            "point --coordinator sqlite:PATH at the store file itself (not a symlink or a directory)",
        ),
        Ok(m) => match crate::claim::stores::sqlite::private_mode_problem(path, m.mode()) {
            Some(problem) => Check::with(NAME, Verdict::Fail, problem, format!("`chmod 600 {}`", path.display())),
            None if m.uid() != crate::lockfile::trust::caller_uid() => Check::with(
                NAME,
                Verdict::Warn,
                format!("the embedded store {} is owned by uid {}, not this user", path.display(), m.uid()),
                "run coordinator commands as the user that owns it, or the store cannot be written",
            ),
            None => Check::ok(
                NAME,
                format!(
                    "the embedded store {} is a private file (mode {:04o}, {} bytes)",
                    path.display(),
                    m.mode() & 0o7777,
                    m.len()
                ),
            ),
        },
    };
    vec![check]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_parse_and_offsets_warn_above_the_bound() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(), 784_111_777);
        assert_eq!(parse_http_date("yesterday"), None);
        let mid = t + Duration::from_secs(2);
        let c = clock(Some("Sun, 06 Nov 1994 08:49:37 GMT"), mid);
        assert_eq!(c.verdict, Verdict::Ok, "{c:?}");
        assert!(c.detail.contains("2.0 s behind"), "{}", c.detail);
        let c = clock(Some("Sun, 06 Nov 1994 08:49:37 GMT"), t - Duration::from_secs(30));
        assert_eq!(c.verdict, Verdict::Warn, "{c:?}");
        assert!(c.detail.contains("30.0 s ahead of"), "{}", c.detail);
        assert_eq!(clock(None, mid).verdict, Verdict::Warn);
    }

    #[test]
    fn a_certificate_fails_once_expired_or_not_yet_valid_and_warns_near_its_end() {
        let day = Duration::from_secs(86_400);
        let now = SystemTime::UNIX_EPOCH + 1000 * day;
        let c = validity(now - 90 * day, now - 2 * day, now);
        assert_eq!(c.verdict, Verdict::Fail, "{c:?}");
        assert!(c.detail.contains("(2 days ago)"), "{c:?}");
        assert_eq!(validity(now + day, now + 90 * day, now).verdict, Verdict::Fail);
        let c = validity(now - day, now + 13 * day, now);
        assert_eq!(c.verdict, Verdict::Warn, "{c:?}");
        assert!(c.detail.contains("in 13 days"), "{c:?}");
        assert_eq!(validity(now - day, now + 15 * day, now).verdict, Verdict::Ok);
    }

    #[test]
    fn the_validity_is_read_from_the_certificates_der() {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.not_before = time::OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        params.not_after = time::OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let cert = params.self_signed(&rcgen::KeyPair::generate().unwrap()).unwrap();
        let (from, to) = validity_of(cert.der()).unwrap();
        let secs = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        assert_eq!((secs(from), secs(to)), (1_700_000_000, 1_800_000_000));
        assert!(validity_of(b"not a certificate").is_err());
    }

    #[test]
    fn readiness_open_registration_and_degraded_states() {
        use serde_json::json;
        let ok = json!({"ready": true, "degraded": false, "queue_depth": 0, "open_registration": false});
        assert_eq!(readiness(200, &ok).verdict, Verdict::Ok);
        assert_eq!(open_registration(&ok).verdict, Verdict::Ok);
        let degraded = json!({"ready": true, "degraded": true, "queue_depth": 7, "oldest_queue_age_seconds": 12.0});
        let c = readiness(200, &degraded);
        assert_eq!(c.verdict, Verdict::Warn);
        assert!(c.detail.contains("7 writes queued, oldest 12 s"), "{}", c.detail);
        assert_eq!(open_registration(&degraded).verdict, Verdict::Warn, "absent: unknown");
        assert_eq!(open_registration(&json!({"open_registration": true})).verdict, Verdict::Warn);
        let down = json!({"ready": false, "error": {"code": "coordinator_unavailable", "message": "redis down"}});
        let c = readiness(503, &down);
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(c.detail.contains("redis down"), "{}", c.detail);
    }
}
