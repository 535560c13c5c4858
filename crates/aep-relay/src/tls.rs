//! HTTPS and WSS served by the relay itself (rustls, HTTP/1.1 as over plain TCP): the
//! certificate and key files ([`TlsFiles`]), read and checked when the relay opens (a
//! file that cannot be read, holds no PEM item of its kind, or a key that is not the
//! certificate's, refuses the start with the reason), and read again on demand
//! ([`TlsReloader`], on `SIGHUP` in the binaries) without dropping a connection: each
//! handshake takes the identity held at that moment, so the connections open before a
//! reload keep the certificate they were made with.
//!
//! The provider is rustls's `ring`, the one the rest of the dependency graph (reqwest,
//! tokio-tungstenite, async-nats) already builds on, named explicitly so that a program
//! that also compiles another provider still starts.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

/// The PEM files a relay serves HTTPS with: its certificate chain (the leaf first, then
/// any intermediates) and the leaf's private key (PKCS#8, PKCS#1 or SEC1). The option
/// of [`RelayConfig::with_tls`](crate::RelayConfig::with_tls) and of `--tls-cert` /
/// `--tls-key` (`AEP_TLS_CERT` / `AEP_TLS_KEY`).
///
/// ```
/// let files = aep_relay::TlsFiles::new("/etc/aep/cert.pem", "/etc/aep/key.pem");
/// assert_eq!(files.key(), std::path::Path::new("/etc/aep/key.pem"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

impl TlsFiles {
    /// The certificate chain in `cert` and its key in `key`.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsFiles {
        TlsFiles {
            cert: cert.into(),
            key: key.into(),
        }
    }

    /// The certificate chain's file.
    pub fn cert(&self) -> &Path {
        &self.cert
    }

    /// The private key's file.
    pub fn key(&self) -> &Path {
        &self.key
    }

    /// Neither file named (what clearing both flags leaves).
    pub(crate) fn is_empty(&self) -> bool {
        self.cert.as_os_str().is_empty() && self.key.as_os_str().is_empty()
    }
}

/// A start refused: what is wrong with the TLS files and what to do.
fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads and checks `files`: the chain, the key, and that the key is the leaf's.
fn load(files: &TlsFiles) -> io::Result<Arc<CertifiedKey>> {
    match (
        files.cert.as_os_str().is_empty(),
        files.key.as_os_str().is_empty(),
    ) {
        (true, _) => {
            return Err(refused(
                "--tls-key needs --tls-cert FILE (AEP_TLS_CERT): the certificate chain the key belongs to".into(),
            ));
        }
        (_, true) => {
            return Err(refused(
                "--tls-cert needs --tls-key FILE (AEP_TLS_KEY): the certificate's private key"
                    .into(),
            ));
        }
        _ => {}
    }
    let cert = files.cert.display();
    let key = files.key.display();
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|items| items.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            refused(format!(
                "cannot read the TLS certificate {cert}: {}",
                pem_reason(e)
            ))
        })?;
    if chain.is_empty() {
        return Err(refused(format!(
            "the TLS certificate file {cert} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        )));
    }
    let private = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        refused(format!(
            "cannot read the TLS key {key}: {} (a PKCS#8, PKCS#1 or SEC1 PEM private key)",
            pem_reason(e)
        ))
    })?;
    let certified = CertifiedKey::from_der(chain, private, &provider()).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => refused(format!(
            "the TLS key {key} is not the private key of the certificate {cert}: give the key the certificate was issued for"
        )),
        e => refused(format!(
            "the TLS key {key} or certificate {cert} cannot be used: {e}"
        )),
    })?;
    Ok(Arc::new(certified))
}

fn pem_reason(e: rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(e) => e.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "no PEM item of that kind in it".into(),
        e => format!("not PEM: {e}"),
    }
}

/// The identity handshakes take: replaced whole by a reload, read once per handshake.
struct Identity {
    files: TlsFiles,
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for Identity {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

/// The relay's TLS: the acceptor every connection is handshaken by, and its identity.
#[derive(Clone, Debug)]
pub(crate) struct Tls {
    config: Arc<rustls::ServerConfig>,
    identity: Arc<Identity>,
}

impl Tls {
    /// Reads and checks `files` (see the module documentation); the start is refused
    /// with the reason when they cannot be used.
    pub(crate) fn open(files: &TlsFiles) -> io::Result<Tls> {
        let identity = Arc::new(Identity {
            files: files.clone(),
            current: RwLock::new(load(files)?),
        });
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| io::Error::other(format!("TLS: {e}")))?
            .with_no_client_auth()
            .with_cert_resolver(identity.clone());
        // HTTP/1.1 only, as over plain TCP (the WebSocket upgrade is HTTP/1.1's)
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls {
            config: Arc::new(config),
            identity,
        })
    }

    /// The acceptor a connection is handshaken by.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.config.clone())
    }

    /// The handle that reads the files again.
    pub(crate) fn reloader(&self) -> TlsReloader {
        TlsReloader {
            identity: self.identity.clone(),
        }
    }
}

/// Reads a serving relay's certificate and key again (see
/// [`Server::tls_reloader`](crate::Server::tls_reloader)): the handshakes after it take
/// the new identity, the connections open before keep theirs. Files that cannot be
/// used leave the identity served as it was, and the error says why.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// let config = aep_relay::RelayConfig::default()
///     .with_token("t")
///     .with_tls("/etc/aep/cert.pem", "/etc/aep/key.pem");
/// let server = aep_relay::Server::open(config)?;
/// let reloader = server.tls_reloader().expect("served over TLS");
/// // after the files were renewed:
/// reloader.reload()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct TlsReloader {
    identity: Arc<Identity>,
}

impl TlsReloader {
    /// Reads the files again and serves what they hold from the next handshake on;
    /// on an error the identity served is unchanged.
    pub fn reload(&self) -> io::Result<()> {
        let fresh = load(&self.identity.files)?;
        *self
            .identity
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner) = fresh;
        Ok(())
    }

    /// The files it reads.
    pub fn files(&self) -> &TlsFiles {
        &self.identity.files
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use aep_test_support::disk::TempDir;

    /// A certificate for `localhost` and its key, as PEM (a fresh CA's each time).
    fn self_signed() -> (String, String) {
        let leaf = aep_test_support::tls::TestCa::new("unit").leaf(&["localhost"]);
        (leaf.cert_pem, leaf.key_pem)
    }

    fn files(dir: &TempDir, cert: &str, key: &str) -> TlsFiles {
        let (c, k) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&c, cert).unwrap();
        std::fs::write(&k, key).unwrap();
        TlsFiles::new(c, k)
    }

    fn refusal(files: &TlsFiles) -> String {
        Tls::open(files).unwrap_err().to_string()
    }

    /// What cannot be served is refused at start, each reason named: a missing file, a
    /// file without PEM, a key that is not the certificate's, one file of the two.
    #[test]
    fn unusable_files_are_refused_with_the_reason() {
        let dir = TempDir::new("tls-refused");
        let (cert, key) = self_signed();
        let (_, other_key) = self_signed();
        assert!(Tls::open(&files(&dir, &cert, &key)).is_ok());

        let mismatched = files(&dir, &cert, &other_key);
        let e = refusal(&mismatched);
        assert!(
            e.contains("is not the private key of the certificate"),
            "{e}"
        );

        let missing = TlsFiles::new(dir.path().join("nope.pem"), dir.path().join("key.pem"));
        let e = refusal(&missing);
        assert!(
            e.contains("cannot read the TLS certificate") && e.contains("nope.pem"),
            "{e}"
        );

        let e = refusal(&files(&dir, "not pem at all\n", &key));
        assert!(e.contains("holds no PEM certificate"), "{e}");
        let e = refusal(&files(&dir, &cert, "not pem at all\n"));
        assert!(e.contains("cannot read the TLS key"), "{e}");
        // a certificate where the key should be
        let e = refusal(&files(&dir, &cert, &cert));
        assert!(e.contains("cannot read the TLS key"), "{e}");

        let e = refusal(&TlsFiles::new(dir.path().join("cert.pem"), ""));
        assert!(e.contains("needs --tls-key"), "{e}");
        let e = refusal(&TlsFiles::new("", dir.path().join("key.pem")));
        assert!(e.contains("needs --tls-cert"), "{e}");
    }

    /// A reload serves the new identity; files that cannot be used leave the old one.
    #[test]
    fn a_reload_replaces_the_identity_or_keeps_it() {
        let dir = TempDir::new("tls-reload");
        let (cert, key) = self_signed();
        let files = files(&dir, &cert, &key);
        let tls = Tls::open(&files).unwrap();
        let served = || {
            tls.identity
                .current
                .read()
                .unwrap()
                .end_entity_cert()
                .unwrap()
                .to_vec()
        };
        let before = served();
        let (cert2, key2) = self_signed();
        std::fs::write(files.cert(), &cert2).unwrap();
        std::fs::write(files.key(), &key2).unwrap();
        tls.reloader().reload().unwrap();
        let after = served();
        assert_ne!(before, after);
        // half renewed: the key of another certificate
        std::fs::write(files.key(), &key).unwrap();
        let e = tls.reloader().reload().unwrap_err().to_string();
        assert!(e.contains("is not the private key"), "{e}");
        assert_eq!(served(), after);
    }
}
