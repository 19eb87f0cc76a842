//! Why a request to a coordinator server got no answer, told so that a person can act on it
//! (issue 29): a refused connection, a name that does not resolve, a failed TLS handshake and
//! a timeout each get their own message, naming the address, and a hint of their own. All of
//! them stay `coordinator_unavailable` (75); before, a refused connection said only "retry
//! later", and a name that did not resolve or a TLS handshake that failed said the outcome
//! was unknown, although nothing had been sent.
//!
//! Whether the request can have reached the server decides the rest (issue 28 point 6):
//! failures before any byte of it left this process carry `"applied": false`; after that
//! (a reset, an end of stream, no answer in time) the outcome stays unknown, and the client
//! adds the request id to retry with.

use crate::claim::ClaimError;
use crate::error::ErrorCode;

/// What went wrong on the way to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Nothing listens at the address: the host answered the connection with a reset.
    Refused,
    /// The host name did not resolve (or not in time).
    Dns,
    /// The TLS handshake failed on the server's certificate.
    TlsCertificate,
    /// The TLS handshake failed because the peer does not speak TLS.
    TlsNotTls,
    /// The TLS handshake failed otherwise.
    Tls,
    /// No connection could be set up in time: nothing answered the connection attempt.
    ConnectTimeout,
    /// This machine has no route to the address, or the connection failed without a reason.
    Unreachable,
    /// The request was sent (or may have been), and no complete answer came in time.
    AnswerTimeout,
    /// The connection broke after the request may have left: a reset, an end of stream,
    /// bytes that are not HTTP.
    Broken,
}

impl Kind {
    /// Whether this failure happened before any byte of the request left this process (issue
    /// 28 point 6): the name did not resolve, the connection was refused or never set up, or
    /// the TLS handshake failed. Nothing can have been applied then, so exit 75 must not say
    /// "may have been applied" — that sends an operator to check for a write that cannot
    /// exist. A reset, an end of stream or a timeout after connecting is not in this set: the
    /// server may have read and committed the request, so its outcome stays unknown.
    fn never_sent(self) -> bool {
        !matches!(self, Kind::AnswerTimeout | Kind::Broken)
    }
}

/// The kind of a transport failure; None for errors that are not about reaching the server
/// (a bad URL, a header ureq refuses).
fn kind(e: &ureq::Error) -> Option<Kind> {
    use std::io::ErrorKind;
    Some(match e {
        ureq::Error::HostNotFound => Kind::Dns,
        ureq::Error::ConnectionFailed => Kind::Unreachable,
        ureq::Error::Tls(_) => Kind::Tls,
        ureq::Error::Rustls(r) => tls_kind(r),
        ureq::Error::Timeout(ureq::Timeout::Resolve) => Kind::Dns,
        ureq::Error::Timeout(ureq::Timeout::Connect) => Kind::ConnectTimeout,
        ureq::Error::Timeout(_) => Kind::AnswerTimeout,
        ureq::Error::Io(io) => {
            // ureq hands rustls's handshake failure on as the io::Error rustls wraps it in.
            if let Some(r) = io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                return Some(tls_kind(r));
            }
            match io.kind() {
                ErrorKind::ConnectionRefused => Kind::Refused,
                ErrorKind::AddrNotAvailable
                | ErrorKind::NetworkUnreachable
                | ErrorKind::HostUnreachable
                | ErrorKind::NetworkDown => Kind::Unreachable,
                // std's getaddrinfo failure has no ErrorKind of its own (it is
                // "uncategorized"); its text is fixed in std.
                _ if io.to_string().contains("failed to lookup address information") => Kind::Dns,
                _ => Kind::Broken,
            }
        }
        ureq::Error::Protocol(_) => Kind::Broken,
        _ => return None,
    })
}

/// Which handshake failure a rustls error is. A rustls error ends the handshake in practice:
/// certificates, versions and record framing are all settled before the request is written.
fn tls_kind(r: &rustls::Error) -> Kind {
    match r {
        rustls::Error::InvalidCertificate(_)
        | rustls::Error::NoCertificatesPresented
        | rustls::Error::UnsupportedNameType => Kind::TlsCertificate,
        rustls::Error::InvalidMessage(_)
        | rustls::Error::InappropriateMessage { .. }
        | rustls::Error::InappropriateHandshakeMessage { .. } => Kind::TlsNotTls,
        _ => Kind::Tls,
    }
}

/// `host:port` of `base` (the scheme's port when it names none), without any user info.
pub(crate) fn address(base: &str) -> String {
    let (rest, port) = match base.split_once("://") {
        Some(("https", r)) => (r, "443"),
        Some((_, r)) => (r, "80"),
        None => (base, "80"),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let has_port = match hostport.rsplit_once(']') {
        Some((_, after)) => after.starts_with(':'),
        None => hostport.contains(':'),
    };
    if has_port { hostport.to_string() } else { format!("{hostport}:{port}") }
}

/// The host of a `host:port` from [`address`].
pub(crate) fn host(address: &str) -> &str {
    let h = address.rsplit_once(':').map_or(address, |(h, _)| h);
    h.trim_start_matches('[').trim_end_matches(']')
}

/// The `coordinator_unavailable` (75) error for a request to `base` that failed in transport;
/// an error that is not about reaching the server keeps the code it always had.
pub(crate) fn transport(e: ureq::Error, base: &str) -> ClaimError {
    let Some(k) = kind(&e) else {
        return match e {
            ureq::Error::BadUri(_) | ureq::Error::Http(_) => {
                ClaimError::invalid("coordinator address", format!("{base}: {e}"))
            }
            other => ClaimError::store_because(base, other),
        };
    };
    if k.never_sent() {
        return not_applied(&e, base);
    }
    let at = address(base);
    let (message, hint) = match k {
        Kind::AnswerTimeout => (
            format!("{base}: no answer from {at} in time ({e})"),
            "the server is slow or the network drops packets: check its load and logs; a write may still have \
             been applied, so look (`writerctl master status`, `writerctl claim show`) before repeating one"
                .to_string(),
        ),
        _ => (
            format!("{base}: the connection to {at} broke before the answer ({e})"),
            format!(
                "the server may have restarted, or something between cut the connection{}; a write may still have \
                 been applied, so look (`writerctl master status`, `writerctl claim show`) before repeating one",
                if base.starts_with("http://") {
                    " (a server started with --tls-cert speaks only https://)"
                } else {
                    ""
                }
            ),
        ),
    };
    // No "applied" here: whether a write was applied is unknown, which the client adds
    // together with the request id to retry with.
    ClaimError::Remote { code: ErrorCode::CoordinatorUnavailable, message, hint: Some(hint), details: None }
}

/// `coordinator_unavailable` (75) for a request that was never sent: what failed, at which
/// address, and "nothing was applied", with `"applied": false` in the JSON envelope's error
/// (scripts match on it).
fn not_applied(e: &ureq::Error, base: &str) -> ClaimError {
    let at = address(base);
    let name = host(&at);
    let (what, hint) = match kind(e).unwrap_or(Kind::Unreachable) {
        Kind::Refused => (
            format!("connection refused: nothing listens at {at}"),
            format!(
                "is the coordinator running? Start it (`writerctl coordinator serve --listen {at} ...`), or fix the \
                 port in --coordinator / WRITERCTL_COORDINATOR, then run the same command again"
            ),
        ),
        Kind::Dns => (
            format!("the host name {name} does not resolve ({e})"),
            format!(
                "check the name {name} in --coordinator / WRITERCTL_COORDINATOR (a typo, or a name only another \
                 network's DNS knows), then run the same command again"
            ),
        ),
        Kind::TlsCertificate => (
            format!("the TLS handshake with {at} failed on the server's certificate ({e})"),
            format!(
                "a server with a private CA or a self-signed certificate needs WRITERCTL_COORDINATOR_CA=PEM-file \
                 (the CA, or that certificate); the certificate must name {name} and not be a CA certificate \
                 (basicConstraints CA:FALSE)"
            ),
        ),
        Kind::TlsNotTls => (
            format!("the TLS handshake with {at} failed: the peer does not speak TLS ({e})"),
            "if the server was started without --tls-cert, it speaks http://: use that (to another machine only \
             with --allow-insecure-http, as tokens and passwords then cross the network in clear text); otherwise \
             check the port"
                .to_string(),
        ),
        Kind::Tls => (
            format!("the TLS handshake with {at} failed ({e})"),
            "check the server's TLS setup (--tls-cert, --tls-key) and this client's trust \
             (WRITERCTL_COORDINATOR_CA=PEM-file for a private CA); a server without TLS speaks http:// (to another \
             machine only with --allow-insecure-http)"
                .to_string(),
        ),
        Kind::ConnectTimeout => (
            format!("no connection to {at} in time: nothing answered ({e})"),
            "the host may be down, or a firewall drops the packets, or the address is wrong: check the address in \
             --coordinator / WRITERCTL_COORDINATOR and the network, then run the same command again"
                .to_string(),
        ),
        Kind::Unreachable | Kind::AnswerTimeout | Kind::Broken => (
            format!("{at} cannot be reached ({e})"),
            "check this machine's network and the address in --coordinator / WRITERCTL_COORDINATOR, then run the \
             same command again"
                .to_string(),
        ),
    };
    ClaimError::Remote {
        code: ErrorCode::CoordinatorUnavailable,
        message: format!("{base}: {what}; the request was not sent, so nothing was applied"),
        hint: Some(hint),
        details: Some(serde_json::json!({"applied": false})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never_sent(e: &ureq::Error) -> bool {
        kind(e).is_some_and(Kind::never_sent)
    }

    fn io(kind: std::io::ErrorKind) -> ureq::Error {
        ureq::Error::Io(std::io::Error::from(kind))
    }

    #[test]
    fn addresses_name_host_and_port() {
        assert_eq!(address("https://coord.example"), "coord.example:443");
        assert_eq!(address("http://coord.example/x"), "coord.example:80");
        assert_eq!(address("https://u:p@coord.example:7700/"), "coord.example:7700");
        assert_eq!(address("http://[::1]:7700"), "[::1]:7700");
        assert_eq!(address("https://[fe80::1]"), "[fe80::1]:443");
        assert_eq!(host("[::1]:7700"), "::1");
        assert_eq!(host("coord.example:443"), "coord.example");
    }

    #[test]
    fn each_failure_before_sending_has_its_own_message_and_applied_false() {
        let base = "https://coord.example:7700";
        let cases = [
            (io(std::io::ErrorKind::ConnectionRefused), "connection refused: nothing listens at coord.example:7700"),
            (ureq::Error::HostNotFound, "the host name coord.example does not resolve"),
            (
                ureq::Error::Io(std::io::Error::other(
                    "failed to lookup address information: Name or service not known",
                )),
                "the host name coord.example does not resolve",
            ),
            (ureq::Error::Timeout(ureq::Timeout::Resolve), "the host name coord.example does not resolve"),
            (
                ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
                )),
                "failed on the server's certificate",
            ),
            (
                ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
                )),
                "the peer does not speak TLS",
            ),
            (ureq::Error::Tls("Rustls invalid dns name error"), "the TLS handshake with coord.example:7700 failed"),
            (ureq::Error::Timeout(ureq::Timeout::Connect), "no connection to coord.example:7700 in time"),
            (io(std::io::ErrorKind::NetworkUnreachable), "coord.example:7700 cannot be reached"),
        ];
        let mut hints = std::collections::BTreeSet::new();
        for (e, said) in cases {
            assert!(never_sent(&e), "{e}");
            let c = transport(e, base);
            assert_eq!(c.code(), ErrorCode::CoordinatorUnavailable);
            assert_eq!(c.details(), Some(serde_json::json!({"applied": false})));
            let m = c.to_string();
            assert!(m.starts_with(base) && m.contains(said) && m.ends_with("so nothing was applied"), "{m}");
            hints.insert(c.hint().unwrap());
        }
        // Refused, DNS, three TLS cases, connect timeout, unreachable.
        assert_eq!(hints.len(), 7, "{hints:#?}");
    }

    #[test]
    fn failures_after_sending_leave_the_outcome_open() {
        let base = "http://127.0.0.1:7700";
        for (e, said, hint) in [
            (ureq::Error::Timeout(ureq::Timeout::Global), "no answer from 127.0.0.1:7700 in time", "slow"),
            (ureq::Error::Timeout(ureq::Timeout::RecvResponse), "no answer from 127.0.0.1:7700 in time", "slow"),
            (io(std::io::ErrorKind::ConnectionReset), "the connection to 127.0.0.1:7700 broke", "https://"),
            (io(std::io::ErrorKind::UnexpectedEof), "the connection to 127.0.0.1:7700 broke", "restarted"),
        ] {
            assert!(!never_sent(&e), "{e}");
            let c = transport(e, base);
            assert_eq!(c.code(), ErrorCode::CoordinatorUnavailable);
            assert_eq!(c.details(), None);
            let m = c.to_string();
            assert!(m.contains(said) && !m.contains("nothing was applied"), "{m}");
            assert!(c.hint().unwrap().contains(hint), "{:?}", c.hint());
        }
    }

    #[test]
    fn errors_that_are_not_about_reaching_the_server_keep_their_codes() {
        let c = transport(ureq::Error::BadUri("x".into()), "http://h:1");
        assert_eq!(c.code(), ErrorCode::InvalidArgument);
        let c = transport(ureq::Error::TooManyRedirects, "http://h:1");
        assert_eq!(c.code(), ErrorCode::Internal);
    }
}
