//! The TLS clients whose certificate check is writerctl's own rather than rustls's default:
//! Postgres's libpq `sslmode` levels and `doctor` reading a certificate that may have
//! expired. Whatever a client checks of the certificate, the handshake signatures are
//! always verified, so the peer holds the key of the certificate it presented.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};

/// How much of the server's certificate a client checks.
#[derive(Debug)]
pub(crate) enum CertCheck {
    /// Nothing: any certificate is accepted (libpq's `require` without a root file; `doctor`
    /// reading an expired certificate's dates).
    Nothing,
    /// The chain, not the name (libpq's `verify-ca`).
    Chain(Arc<WebPkiServerVerifier>),
    /// The chain and that the certificate names the host (libpq's `verify-full`).
    ChainAndName(Arc<WebPkiServerVerifier>),
}

/// A client configuration on `provider` (its safe default protocol versions, no client
/// certificate) that checks the server's certificate as `check` says.
pub(crate) fn client_config(provider: Arc<CryptoProvider>, check: CertCheck) -> Result<ClientConfig, rustls::Error> {
    let verifier = Verifier { check, algorithms: provider.signature_verification_algorithms };
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

#[derive(Debug)]
struct Verifier {
    check: CertCheck,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let (webpki, check_name) = match &self.check {
            CertCheck::Nothing => return Ok(ServerCertVerified::assertion()),
            CertCheck::Chain(webpki) => (webpki, false),
            CertCheck::ChainAndName(webpki) => (webpki, true),
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            // WebPKI checks the chain before the name: a name error means the chain held,
            // which is all `Chain` asks.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
