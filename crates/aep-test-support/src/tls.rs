//! Certificates made at run time for the TLS tests (rcgen, on `ring`): a private CA, a
//! leaf it signs for `localhost` and `127.0.0.1`, both as PEM and written to files, so no
//! key sits in the repository and none outlives the test.
//!
//! ```
//! let ca = aep_test_support::tls::TestCa::new("doc CA");
//! let leaf = ca.leaf(&["localhost", "127.0.0.1"]);
//! assert!(ca.pem().starts_with("-----BEGIN CERTIFICATE-----"));
//! assert!(leaf.key_pem.contains("PRIVATE KEY"));
//! ```

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A certificate authority of one test: its certificate (what a client trusts) and what
/// signs the leaves.
pub struct TestCa {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

/// A leaf certificate and its private key, as PEM.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// The certificate (the leaf alone: the CA is what the client trusts).
    pub cert_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
}

/// The files a relay serves with and a client trusts.
#[derive(Debug, Clone)]
pub struct TlsPaths {
    /// The CA's certificate (`--tls-ca`, `tls_ca`).
    pub ca: PathBuf,
    /// The leaf's certificate (`--tls-cert`).
    pub cert: PathBuf,
    /// The leaf's key (`--tls-key`).
    pub key: PathBuf,
}

impl TestCa {
    /// A fresh CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA's certificate, as PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A leaf for `names` (DNS names or IP addresses) signed by this CA.
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "aep test relay");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// This CA and a leaf for `localhost` and `127.0.0.1`, written into `dir` as
    /// `{prefix}ca.pem`, `{prefix}cert.pem` and `{prefix}key.pem`.
    pub fn write(&self, dir: &Path, prefix: &str) -> TlsPaths {
        let leaf = self.leaf(&["localhost", "127.0.0.1"]);
        let paths = TlsPaths {
            ca: dir.join(format!("{prefix}ca.pem")),
            cert: dir.join(format!("{prefix}cert.pem")),
            key: dir.join(format!("{prefix}key.pem")),
        };
        std::fs::write(&paths.ca, &self.pem).unwrap();
        std::fs::write(&paths.cert, &leaf.cert_pem).unwrap();
        std::fs::write(&paths.key, &leaf.key_pem).unwrap();
        paths
    }
}
