//! Private roots of trust (issue 31 §2): the PEM certificates a [`Client`] trusts
//! besides the public ones, for a relay whose certificate a private CA signed, and the
//! error that says a relay's certificate is not trusted and how to trust it.
//!
//! One parse, at [`Client::tls_ca_pem`]: a bad PEM is a [`TlsCaError`] there, never a
//! connection failure later. The roots then reach both stacks the client opens
//! connections on: reqwest (SSE, the HTTP sink) as `reqwest::Certificate`s, and
//! tokio-tungstenite (every WebSocket) as one rustls `ClientConfig` whose store holds
//! the webpki roots it trusts by default plus these.
//!
//! [`Client`]: crate::Client
//! [`Client::tls_ca_pem`]: crate::Client::tls_ca_pem

// With no binding (no `http`, `sse` nor `ws`), nothing connects to use the roots.
#![cfg_attr(
    not(any(feature = "http", feature = "sse", feature = "ws")),
    allow(dead_code)
)]

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// The fix a relay whose certificate is not trusted calls for, in every such error.
pub(crate) const FIX: &str = "if the relay's certificate comes from a private CA, trust \
its root with `Client::tls_ca_pem` (`aep --tls-ca FILE`, env AEP_TLS_CA)";

/// Why [`Client::tls_ca_pem`](crate::Client::tls_ca_pem) refused a root: the PEM has
/// no `CERTIFICATE` block, a block is not valid PEM, or its certificate cannot be a
/// root of trust. Give the CA's certificate (PEM, one or more `BEGIN CERTIFICATE`
/// blocks), not its key nor the relay's key.
///
/// ```
/// let e = aep_async::Client::new("https://h:8787").tls_ca_pem("not a certificate").unwrap_err();
/// assert!(e.to_string().contains("no PEM `CERTIFICATE` block"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsCaError {
    message: String,
}

impl TlsCaError {
    fn new(message: impl Into<String>) -> TlsCaError {
        TlsCaError {
            message: message.into(),
        }
    }
}

impl fmt::Display for TlsCaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TLS root refused: {}", self.message)
    }
}

impl StdError for TlsCaError {}

/// The roots a client trusts besides the public ones, in both stacks' forms.
#[derive(Clone)]
pub(crate) struct TlsRoots {
    /// Every private root given so far, DER.
    ders: Vec<CertificateDer<'static>>,
    /// The WebSocket side: the webpki roots plus `ders`.
    #[cfg_attr(not(feature = "ws"), allow(dead_code))]
    pub(crate) config: Arc<rustls::ClientConfig>,
}

impl fmt::Debug for TlsRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsRoots")
            .field("private_roots", &self.ders.len())
            .finish()
    }
}

impl TlsRoots {
    /// `previous`'s roots (if any) plus every certificate of `pem`.
    pub(crate) fn with_pem(
        previous: Option<&TlsRoots>,
        pem: &[u8],
    ) -> Result<TlsRoots, TlsCaError> {
        let mut ders: Vec<CertificateDer<'static>> =
            previous.map(|r| r.ders.clone()).unwrap_or_default();
        let before = ders.len();
        for cert in CertificateDer::pem_slice_iter(pem) {
            ders.push(cert.map_err(|e| TlsCaError::new(format!("invalid PEM: {e}")))?);
        }
        if ders.len() == before {
            return Err(TlsCaError::new(
                "no PEM `CERTIFICATE` block (give the CA's certificate, `-----BEGIN CERTIFICATE-----`)",
            ));
        }
        let mut store = rustls::RootCertStore::empty();
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for (i, der) in ders.iter().enumerate() {
            store.add(der.clone()).map_err(|e| {
                TlsCaError::new(format!("certificate {} is not a usable root: {e}", i + 1))
            })?;
        }
        // The provider installed for the process if there is one, else ring: the one
        // this workspace's rustls builds on (never a second one).
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsCaError::new(format!("TLS configuration: {e}")))?
            .with_root_certificates(store)
            .with_no_client_auth();
        Ok(TlsRoots {
            ders,
            config: Arc::new(config),
        })
    }

    /// The private roots as reqwest certificates.
    #[cfg(any(feature = "http", feature = "sse"))]
    pub(crate) fn reqwest_certificates(&self) -> Result<Vec<reqwest::Certificate>, TlsCaError> {
        self.ders
            .iter()
            .map(|d| {
                reqwest::Certificate::from_der(d).map_err(|e| {
                    TlsCaError::new(format!("certificate refused by the HTTP client: {e}"))
                })
            })
            .collect()
    }
}

/// If `error`, or an error under it, is a relay certificate that rustls did not
/// trust (an unknown issuer, a name it is not valid for, expired, ...), what to say
/// of it: `the relay's TLS certificate is not trusted (invalid peer certificate:
/// UnknownIssuer)`. The caller adds the fix its user can apply (the SDK's errors name
/// [`Client::tls_ca_pem`](crate::Client::tls_ca_pem)). `None` for any other error.
///
/// ```
/// use rustls::{CertificateError, Error};
/// let io = std::io::Error::other(Error::InvalidCertificate(CertificateError::UnknownIssuer));
/// let text = aep_async::tls::untrusted_certificate(&io).unwrap();
/// assert!(text.starts_with("the relay's TLS certificate is not trusted"));
/// assert!(aep_async::tls::untrusted_certificate(&std::io::Error::other("reset")).is_none());
/// ```
pub fn untrusted_certificate(error: &(dyn StdError + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(err) = next {
        if let Some(rustls::Error::InvalidCertificate(why)) = err.downcast_ref::<rustls::Error>() {
            return Some(not_trusted(why));
        }
        // io::Error hides what it wraps from `source` (it gives the wrapped error's
        // source), and hyper's connector wraps rustls's io::Error in another: look inside.
        next = match err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => err.source(),
        };
    }
    None
}

/// [`untrusted_certificate`] with the SDK's fix.
pub(crate) fn untrusted(e: &(dyn StdError + 'static)) -> Option<String> {
    untrusted_certificate(e).map(|text| format!("{text}; {FIX}"))
}

/// What one refused certificate is.
fn not_trusted(why: &rustls::CertificateError) -> String {
    format!("the relay's TLS certificate is not trusted ({why})")
}

/// The words for one refused certificate, with the SDK's fix.
// the WebSocket binding's (feature `ws`); the HTTP side reads its error's chain
#[cfg_attr(not(feature = "ws"), allow(dead_code))]
pub(crate) fn describe(why: &rustls::CertificateError) -> String {
    format!("{}; {FIX}", not_trusted(why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_test_support::tls::TestCa;

    #[test]
    fn a_ca_certificate_is_taken_and_roots_add_up() {
        let (a, b) = (TestCa::new("a"), TestCa::new("b"));
        let one = TlsRoots::with_pem(None, a.pem().as_bytes()).unwrap();
        let two = TlsRoots::with_pem(Some(&one), b.pem().as_bytes()).unwrap();
        assert_eq!(two.ders.len(), 2);
        assert_eq!(format!("{two:?}"), "TlsRoots { private_roots: 2 }");
    }

    #[test]
    fn text_without_a_certificate_is_refused_with_what_to_give() {
        let e = TlsRoots::with_pem(None, b"hello").unwrap_err();
        assert!(e.to_string().contains("no PEM `CERTIFICATE` block"), "{e}");
        let key = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert!(TlsRoots::with_pem(None, key).is_err());
    }

    #[test]
    fn a_broken_block_is_refused() {
        let bad = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        let e = TlsRoots::with_pem(None, bad).unwrap_err();
        assert!(e.to_string().starts_with("TLS root refused"), "{e}");
        let junk = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let e = TlsRoots::with_pem(None, junk).unwrap_err();
        assert!(e.to_string().contains("not a usable root"), "{e}");
    }

    #[test]
    fn an_unknown_issuer_behind_an_io_error_is_named_with_the_fix() {
        let inner = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        // As hyper's connector gives it: an io::Error around rustls's io::Error.
        let io = std::io::Error::other(std::io::Error::new(std::io::ErrorKind::InvalidData, inner));
        let text = untrusted(&io).unwrap();
        assert!(
            text.contains("not trusted") && text.contains("Client::tls_ca_pem"),
            "{text}"
        );
        assert!(untrusted(&std::io::Error::other("refused")).is_none());
    }
}
