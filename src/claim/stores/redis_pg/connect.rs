//! How the Redis + Postgres store reaches its two services: which Redis is the master
//! (one address, or the one a set of Sentinels names), and how each connection is
//! encrypted (issue 15: managed services require TLS; issue 20: one Redis host must not be
//! a single point of failure).
//!
//! # Redis addresses
//!
//! * `redis://HOST:PORT[/DB]`, `rediss://HOST:PORT[/DB]` (TLS, verified against the system
//!   roots, or only against `--redis-ca-file` when given).
//! * `redis+sentinel://[USER:PASS@]HOST:PORT[,HOST:PORT...]/MASTER_NAME[/DB]`, and
//!   `rediss+sentinel://...` where the Sentinels and the data nodes all speak TLS. The
//!   credentials are the data nodes'; Sentinels are asked without them.
//!
//! Behind Sentinel, every new connection asks the Sentinels (in the order given) which node
//! is the master of `MASTER_NAME` and checks that node answers `ROLE` as a master before it
//! is used. The store's pool drops every connection when one breaks or when a node answers
//! `READONLY` (a demoted master), so the next verb after a failover asks again and lands on
//! the promoted replica. Nothing else is cached: the Lua scripts are sent by EVALSHA with
//! a reload on NOSCRIPT (pipelines lead with `SCRIPT LOAD`), and every verb reads the
//! compare-and-set state (version, epoch, ready marker) from the master it writes to.
//!
//! # Postgres TLS
//!
//! The URL's own `sslmode` and `sslrootcert` parameters, as libpq reads them, on rustls:
//! `disable` (or absent) never encrypts; `require` encrypts, and checks the certificate
//! chain only when `sslrootcert` is given (libpq does the same); `verify-ca` checks the
//! chain against `sslrootcert` (or the system roots); `verify-full` also checks that the
//! certificate names the host. `allow` and `prefer` are refused: each falls back to clear
//! text when the server declines TLS, which is the silent downgrade issue 15 rules out.
//! With any TLS mode, a server that declines TLS, or a certificate that fails the check,
//! is a configuration error (the store does not start), never a reason to retry in clear.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, TlsCertificates, TlsMode};
use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::errors::{lock, pg_err, redis_err};
use crate::claim::error::{ClaimError, StoreError};
use crate::tls::{self, CertCheck};

/// Connect, read and write timeout for both services: a dead service answers
/// `coordinator_unavailable` fast instead of hanging a verb.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// How the store reaches its services beyond the two URLs.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// PEM file of the CA(s) that sign the Redis servers' certificates (`rediss://` and
    /// `rediss+sentinel://` only); without it the system roots are used.
    pub redis_ca_file: Option<PathBuf>,
    /// After each verb's Redis write, wait until this many replicas acknowledged it
    /// (Redis `WAIT`, at most [`MIN_REPLICAS_WAIT`]); fewer fails the verb closed with
    /// `coordinator_unavailable`. 0: no wait (a failover may lose the last writes).
    pub redis_min_replicas: u32,
}

/// How long a write waits for `--redis-min-replicas` acknowledgements: below the
/// connection's read timeout, so a slow replica answers "not enough replicas", never a
/// broken connection.
pub const MIN_REPLICAS_WAIT: Duration = Duration::from_millis(1000);

/// Where Redis connections come from.
pub(super) enum RedisSource {
    /// One address.
    Direct(redis::Client),
    /// The master that the Sentinels name.
    Sentinel {
        /// Asks the Sentinels (needs `&mut`, hence the lock; held only while asking).
        client: Mutex<SentinelClient>,
        /// The master name, for messages.
        name: String,
        /// The last master address connected to, to log each change once.
        last: Mutex<Option<String>>,
    },
}

impl std::fmt::Debug for RedisSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedisSource::Direct(_) => f.write_str("RedisSource::Direct"),
            RedisSource::Sentinel { name, .. } => write!(f, "RedisSource::Sentinel({name})"),
        }
    }
}

/// The process-wide rustls provider: both ring and aws-lc-rs are compiled in (axum-server
/// brings the second), and redis-rs builds its TLS configuration from the process default,
/// which rustls refuses to guess when two are present.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn bad_redis_url(url_kind: &str, why: impl std::fmt::Display) -> ClaimError {
    ClaimError::invalid("redis address", format!("redis address ({url_kind}): {why}"))
}

fn read_pem(what: &'static str, path: &Path) -> Result<Vec<u8>, ClaimError> {
    std::fs::read(path).map_err(|e| ClaimError::invalid(what, format!("cannot read {what} {}: {e}", path.display())))
}

/// Decodes `%XX` escapes (credentials in a URL).
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(|| format!("bad escape in {s:?}"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape %{hex}"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "an escape is not UTF-8".into())
}

/// A parsed `redis+sentinel://` or `rediss+sentinel://` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SentinelUrl {
    pub(super) tls: bool,
    pub(super) sentinels: Vec<(String, u16)>,
    pub(super) master: String,
    pub(super) db: i64,
    pub(super) username: Option<String>,
    pub(super) password: Option<String>,
}

/// The default Sentinel port, when a host has none.
const SENTINEL_PORT: u16 = 26379;

/// Parses `redis+sentinel://[USER[:PASS]@]HOST[:PORT][,HOST[:PORT]...]/MASTER_NAME[/DB]`;
/// None when `url` is not a Sentinel address at all.
pub(super) fn parse_sentinel_url(url: &str) -> Option<Result<SentinelUrl, ClaimError>> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("redis+sentinel://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("rediss+sentinel://") {
        (true, r)
    } else {
        return None;
    };
    Some(parse_sentinel_rest(tls, rest))
}

fn parse_sentinel_rest(tls: bool, rest: &str) -> Result<SentinelUrl, ClaimError> {
    const FORM: &str = "expected redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME[/DB]";
    let bad = |why: String| bad_redis_url("sentinel", format!("{why}; {FORM}"));
    let (authority, path) = rest.split_once('/').ok_or_else(|| bad("no master name".into()))?;
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (username, password) = match userinfo {
        None => (None, None),
        Some(u) => {
            let (user, pass) = match u.split_once(':') {
                Some((user, pass)) => (user, Some(pass)),
                None => (u, None),
            };
            let user = percent_decode(user).map_err(&bad)?;
            let pass = pass.map(percent_decode).transpose().map_err(&bad)?;
            ((!user.is_empty()).then_some(user), pass)
        }
    };
    let mut sentinels = Vec::new();
    for h in hosts.split(',') {
        let (host, port) = if let Some(v6) = h.strip_prefix('[') {
            let (host, tail) = v6.split_once(']').ok_or_else(|| bad(format!("bad host {h:?}")))?;
            (host, tail.strip_prefix(':'))
        } else {
            match h.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (h, None),
            }
        };
        if host.is_empty() {
            return Err(bad(format!("empty host in {hosts:?}")));
        }
        let port = match port {
            None => SENTINEL_PORT,
            Some(p) => p.parse().map_err(|_| bad(format!("bad port {p:?}")))?,
        };
        sentinels.push((host.to_string(), port));
    }
    let mut parts = path.trim_end_matches('/').split('/');
    let master = parts.next().unwrap_or_default();
    if master.is_empty() {
        return Err(bad("no master name".into()));
    }
    let db = match parts.next() {
        None => 0,
        Some(d) => d.parse().map_err(|_| bad(format!("bad database number {d:?}")))?,
    };
    if parts.next().is_some() {
        return Err(bad(format!("unexpected path {path:?}")));
    }
    Ok(SentinelUrl { tls, sentinels, master: percent_decode(master).map_err(bad)?, db, username, password })
}

/// The Redis source `url` names, with the CA of `--redis-ca-file` if any.
pub(super) fn redis_source(url: &str, opts: &ConnectOptions) -> Result<RedisSource, ClaimError> {
    let ca = opts.redis_ca_file.as_deref().map(|f| read_pem("--redis-ca-file", f)).transpose()?;
    let certs = ca.map(|pem| TlsCertificates { client_tls: None, root_cert: Some(pem) });
    if url.starts_with("rediss") {
        install_crypto_provider();
    }
    match parse_sentinel_url(url) {
        Some(parsed) => sentinel_source(parsed?, certs),
        None => {
            let client = match certs {
                None => redis::Client::open(url),
                Some(c) if url.starts_with("rediss://") => redis::Client::build_with_tls(url, c),
                Some(_) => {
                    return Err(ClaimError::invalid(
                        "--redis-ca-file",
                        "--redis-ca-file needs a TLS address (rediss:// or rediss+sentinel://)",
                    ));
                }
            };
            client.map(RedisSource::Direct).map_err(|e| bad_redis_url("url", e))
        }
    }
}

fn sentinel_source(u: SentinelUrl, certs: Option<TlsCertificates>) -> Result<RedisSource, ClaimError> {
    if certs.is_some() && !u.tls {
        return Err(ClaimError::invalid(
            "--redis-ca-file",
            "--redis-ca-file needs a TLS address (rediss:// or rediss+sentinel://)",
        ));
    }
    let addrs = u.sentinels.iter().map(|(host, port)| {
        if u.tls {
            ConnectionAddr::TcpTls { host: host.clone(), port: *port, insecure: false, tls_params: None }
        } else {
            ConnectionAddr::Tcp(host.clone(), *port)
        }
    });
    let bad = |e: redis::RedisError| bad_redis_url("sentinel", e);
    // A dead peer that never answers must not hold a connection (and the lock around the
    // Sentinel client) for the kernel's default of minutes.
    let tcp = redis::io::tcp::TcpSettings::default().set_user_timeout(IO_TIMEOUT);
    let mut b = SentinelClientBuilder::new(addrs, &u.master, SentinelServerType::Master)
        .map_err(bad)?
        .set_client_to_redis_db(u.db)
        .set_client_to_redis_tcp_settings(tcp.clone())
        .set_client_to_sentinel_tcp_settings(tcp);
    if let Some(user) = &u.username {
        b = b.set_client_to_redis_username(user);
    }
    if let Some(pass) = &u.password {
        b = b.set_client_to_redis_password(pass);
    }
    if u.tls {
        b = b.set_client_to_redis_tls_mode(TlsMode::Secure).set_client_to_sentinel_tls_mode(TlsMode::Secure);
        if let Some(c) = certs {
            b = b.set_client_to_redis_certificates(c.clone()).set_client_to_sentinel_certificates(c);
        }
    }
    Ok(RedisSource::Sentinel { client: Mutex::new(b.build().map_err(bad)?), name: u.master, last: Mutex::new(None) })
}

impl RedisSource {
    /// A new connection to the master, with read and write timeouts of `timeout`.
    pub(super) fn open(&self, timeout: Duration) -> Result<redis::Connection, ClaimError> {
        let conn = match self {
            RedisSource::Direct(client) => client.get_connection_with_timeout(timeout).map_err(redis_err)?,
            RedisSource::Sentinel { client, name, last } => {
                // Between a master's death and its replica's promotion no Sentinel names a
                // usable master (they flag it down): that is a wait, not a broken setup.
                let master = lock(client).get_client().map_err(|e| {
                    ClaimError::Unavailable(format!(
                        "redis sentinel: no sentinel names a reachable master {name:?} (a failover in progress, or \
                         a wrong master name): {e}"
                    ))
                })?;
                let addr = master.get_connection_info().addr().to_string();
                let conn = master.get_connection_with_timeout(timeout).map_err(redis_err)?;
                let mut last = lock(last);
                if last.as_deref() != Some(addr.as_str()) {
                    tracing::info!(master = %name, %addr, previous = ?*last, "redis sentinel: connected to the master");
                    *last = Some(addr);
                }
                conn
            }
        };
        conn.set_read_timeout(Some(timeout)).map_err(redis_err)?;
        conn.set_write_timeout(Some(timeout)).map_err(redis_err)?;
        Ok(conn)
    }
}

// ---------------------------------------------------------------------------------------
// Postgres
// ---------------------------------------------------------------------------------------

/// What a Postgres URL's `sslmode` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    Disable,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A Postgres address: the driver's configuration and how to encrypt.
pub(super) struct PgTarget {
    pub(super) config: postgres::Config,
    pub(super) mode: SslMode,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTarget").field("mode", &self.mode).finish_non_exhaustive()
    }
}

/// Takes `sslmode` and `sslrootcert` out of a Postgres URL or key=value string (the driver
/// knows neither `verify-*` nor `sslrootcert`); returns the rest, the mode and the file.
pub(super) fn split_ssl_params(url: &str) -> Result<(String, Option<String>, Option<String>), ClaimError> {
    let mut mode = None;
    let mut root = None;
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else { return Ok((url.to_string(), None, None)) };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = || {
                percent_decode(v)
                    .map_err(|e| ClaimError::invalid("postgres address", format!("postgres address: {k}: {e}")))
            };
            match k {
                "sslmode" => mode = Some(v()?),
                "sslrootcert" => root = Some(v()?),
                _ => kept.push(pair),
            }
        }
        let rest = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
        Ok((rest, mode, root))
    } else {
        let mut kept = Vec::new();
        for word in url.split_whitespace() {
            match word.split_once('=') {
                Some(("sslmode", v)) => mode = Some(v.trim_matches('\'').to_string()),
                Some(("sslrootcert", v)) => root = Some(v.trim_matches('\'').to_string()),
                _ => kept.push(word),
            }
        }
        Ok((kept.join(" "), mode, root))
    }
}

/// Parses a Postgres address (see the module documentation for `sslmode`).
pub(super) fn postgres_target(url: &str) -> Result<PgTarget, ClaimError> {
    let (rest, mode, root) = split_ssl_params(url)?;
    let mode = match mode.as_deref() {
        None | Some("disable") => SslMode::Disable,
        Some("require") => SslMode::Require,
        Some("verify-ca") => SslMode::VerifyCa,
        Some("verify-full") => SslMode::VerifyFull,
        Some(m @ ("allow" | "prefer")) => {
            return Err(ClaimError::invalid(
                "postgres address",
                format!(
                    "postgres address: sslmode={m} falls back to clear text when the server declines TLS; \
                 use sslmode=verify-full (or verify-ca, require), or sslmode=disable on a trusted network"
                ),
            ));
        }
        Some(m) => {
            return Err(ClaimError::invalid(
                "postgres address",
                format!("postgres address: sslmode={m:?} is not one of disable, require, verify-ca, verify-full"),
            ));
        }
    };
    if mode == SslMode::Disable && root.is_some() {
        return Err(ClaimError::invalid(
            "postgres address",
            "postgres address: sslrootcert without sslmode=verify-full|verify-ca|require would not be used",
        ));
    }
    let mut config: postgres::Config =
        rest.parse().map_err(|e| ClaimError::invalid("postgres address", format!("postgres address: {e}")))?;
    let tls = match mode {
        SslMode::Disable => {
            config.ssl_mode(postgres::config::SslMode::Disable);
            None
        }
        _ => {
            config.ssl_mode(postgres::config::SslMode::Require);
            Some(rustls_connector(mode, root.as_deref().map(Path::new))?)
        }
    };
    Ok(PgTarget { config, mode, tls })
}

/// The rustls client for `mode`: roots from `root_file`, else the system's.
fn rustls_connector(
    mode: SslMode,
    root_file: Option<&Path>,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, ClaimError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match (mode, root_file) {
        // libpq: require without a root file encrypts and checks nothing.
        (SslMode::Require, None) => None,
        (_, Some(f)) => {
            let pem = read_pem("sslrootcert", f)?;
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| {
                    ClaimError::invalid(
                        "sslrootcert",
                        format!("sslrootcert {}: not a PEM certificate: {e}", f.display()),
                    )
                })?;
                roots.add(cert).map_err(|e| {
                    ClaimError::invalid(
                        "sslrootcert",
                        format!("sslrootcert {}: unusable certificate: {e}", f.display()),
                    )
                })?;
            }
            if roots.is_empty() {
                return Err(ClaimError::invalid(
                    "sslrootcert",
                    format!("sslrootcert {}: no certificate in it", f.display()),
                ));
            }
            Some(roots)
        }
        (_, None) => {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(ClaimError::invalid(
                    "postgres address",
                    "postgres address: no system CA certificates to verify the server with; set sslrootcert=F",
                ));
            }
            Some(roots)
        }
    };
    let check = match roots {
        None => CertCheck::Nothing,
        Some(r) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(r), provider.clone())
                .build()
                .map_err(|e| ClaimError::invalid("postgres address", format!("postgres TLS roots: {e}")))?;
            match mode {
                SslMode::VerifyFull => CertCheck::ChainAndName(webpki),
                _ => CertCheck::Chain(webpki),
            }
        }
    };
    let config = tls::client_config(provider, check)
        .map_err(|e| ClaimError::invalid("postgres address", format!("postgres TLS: {e}")))?;
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// Why a connection failed on TLS itself (the server declined it, or its certificate
/// failed the check): a configuration error, which retrying will not fix and clear text
/// must not work around.
fn tls_refusal(e: &postgres::Error) -> Option<String> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        // The driver's own refusal is a plain message, not a type to match.
        if s.to_string().contains("does not support TLS") {
            return Some("the server does not accept TLS".into());
        }
        if let Some(r) = s.downcast_ref::<rustls::Error>() {
            return Some(r.to_string());
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && let Some(r) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
        {
            return Some(r.to_string());
        }
        source = s.source();
    }
    None
}

impl PgTarget {
    /// A new connection (the driver tries each host of a multi-host address in turn and,
    /// with `target_session_attrs=read-write`, skips a standby).
    pub(super) fn connect(&self) -> Result<postgres::Client, ClaimError> {
        let result = match &self.tls {
            None => self.config.connect(postgres::NoTls),
            Some(tls) => self.config.connect(tls.clone()),
        };
        result.map_err(|e| match (self.mode, tls_refusal(&e)) {
            (SslMode::Disable, _) | (_, None) => pg_err(e),
            (mode, Some(why)) => StoreError::new(format!(
                "postgres: TLS failed ({why}) with sslmode={}; fix the server or the URL (sslrootcert=F for a \
                 private CA): writerctl never falls back to clear text",
                match mode {
                    SslMode::Require => "require",
                    SslMode::VerifyCa => "verify-ca",
                    _ => "verify-full",
                }
            ))
            .with_source(e)
            .into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_urls_parse_as_cli_md_writes_them() {
        let u = parse_sentinel_url("redis+sentinel://h1:26379,h2:26380/mymaster/3").unwrap().unwrap();
        assert_eq!(
            u,
            SentinelUrl {
                tls: false,
                sentinels: vec![("h1".into(), 26379), ("h2".into(), 26380)],
                master: "mymaster".into(),
                db: 3,
                username: None,
                password: None,
            }
        );
        let u = parse_sentinel_url("rediss+sentinel://u:p%40ss@[::1]:1,h/m").unwrap().unwrap();
        assert!(u.tls);
        assert_eq!(u.sentinels, vec![("::1".to_string(), 1), ("h".to_string(), SENTINEL_PORT)]);
        assert_eq!((u.master.as_str(), u.db), ("m", 0));
        assert_eq!((u.username.as_deref(), u.password.as_deref()), (Some("u"), Some("p@ss")));
        assert!(parse_sentinel_url("redis://h:1/0").is_none());
        for bad in [
            "redis+sentinel://h:1",
            "redis+sentinel://h:1/",
            "redis+sentinel://h:x/m",
            "redis+sentinel://h:1/m/db",
            "redis+sentinel://h:1/m/0/extra",
            "redis+sentinel://,h:1/m",
        ] {
            assert!(matches!(parse_sentinel_url(bad), Some(Err(ClaimError::InvalidArgument(_)))), "{bad}");
        }
    }

    #[test]
    fn postgres_ssl_parameters_are_taken_out_of_both_forms() {
        let (rest, mode, root) = split_ssl_params(
            "postgres://u@h1:5432,h2:5433/db?sslmode=verify-full&target_session_attrs=read-write&sslrootcert=%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write");
        assert_eq!((mode.as_deref(), root.as_deref()), (Some("verify-full"), Some("/ca.pem")));
        let (rest, mode, root) = split_ssl_params("host=h user=u sslmode=require dbname=d").unwrap();
        assert_eq!((rest.as_str(), mode.as_deref(), root), ("host=h user=u dbname=d", Some("require"), None));
    }

    #[test]
    fn postgres_modes_that_could_downgrade_are_refused() {
        for m in ["prefer", "allow", "bogus"] {
            let e = postgres_target(&format!("postgres://u@h/d?sslmode={m}")).unwrap_err();
            assert!(matches!(e, ClaimError::InvalidArgument(_)), "{m}: {e}");
        }
        let e = postgres_target("postgres://u@h/d?sslrootcert=/x.pem").unwrap_err();
        assert!(e.to_string().contains("sslrootcert"), "{e}");
        assert_eq!(postgres_target("postgres://u@h/d").unwrap().mode, SslMode::Disable);
        assert_eq!(postgres_target("postgres://u@h/d?sslmode=require").unwrap().mode, SslMode::Require);
    }

    #[test]
    fn a_ca_file_needs_a_tls_address() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not used").unwrap();
        let opts = ConnectOptions { redis_ca_file: Some(ca), redis_min_replicas: 0 };
        for url in ["redis://127.0.0.1:6379", "redis+sentinel://127.0.0.1:26379/m"] {
            let e = redis_source(url, &opts).unwrap_err();
            assert!(e.to_string().contains("rediss://"), "{url}: {e}");
        }
    }
}
