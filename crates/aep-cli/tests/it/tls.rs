//! `aep --tls-ca FILE` (issue 31 §2): `aep emit` and `aep tail` against an HTTPS
//! `aep relay` whose certificate a private CA of the test's own signed; without the
//! CA, `aep` says the certificate is not trusted and how to trust it.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::time::Duration;

use common::{line, run, run_with, AepRelay, TOKEN};
use serde_json::{json, Value};

#[test]
fn emit_and_tail_trust_the_ca_given_with_tls_ca() {
    let dir = aep_test_support::disk::TempDir::new("aep-cli-tls");
    let paths = aep_test_support::tls::TestCa::new("aep cli tls test").write(dir.path(), "");
    let (cert, key, ca) = (
        paths.cert.to_str().unwrap(),
        paths.key.to_str().unwrap(),
        paths.ca.to_str().unwrap(),
    );
    let relay = AepRelay::start(
        &["--tls-cert", cert, "--tls-key", key],
        &[("AEP_TOKEN", TOKEN)],
    );
    assert!(relay.url.starts_with("https://"), "{}", relay.url);
    let event = line("tls-1", "session.started", "s-tls", 0, json!({}));

    // Without the CA: refused, saying why and what to do.
    let r = run_with(
        &["emit", "--url", &relay.url, "--token", TOKEN],
        format!("{event}\n").as_bytes(),
        Duration::from_secs(60),
    );
    assert_ne!(r.code(), 0);
    r.stderr_has("not trusted").stderr_has("--tls-ca");

    // With it: delivered, and read back over SSE with the flag from the environment; the roster over WSS.
    let r = run_with(
        &[
            "emit", "--url", &relay.url, "--token", TOKEN, "--tls-ca", ca,
        ],
        format!("{event}\n").as_bytes(),
        Duration::from_secs(60),
    );
    r.expect(0);
    let summary: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(summary["delivered"], 1);

    let mut tail = common::aep();
    tail.args([
        "tail",
        "--url",
        &relay.url,
        "--token",
        TOKEN,
        "--format",
        "json",
        "--from",
        "all",
        "--history",
        "--no-resume",
    ])
    .env("AEP_TLS_CA", ca);
    let r = common::finish(common::spawn(tail), b"", Duration::from_secs(60));
    r.expect(0);
    assert_eq!(common::event_ids(&r.stdout), vec!["tls-1".to_owned()]);

    // WSS: `aep roster` asks over the control WebSocket.
    let r = run(&[
        "roster", "--url", &relay.url, "--token", TOKEN, "--tls-ca", ca,
    ]);
    r.expect(0);
    let r = run(&["roster", "--url", &relay.url, "--token", TOKEN]);
    assert_ne!(r.code(), 0);
    r.stderr_has("not trusted").stderr_has("--tls-ca");

    // A file that holds no certificate is a usage error naming it.
    run(&["emit", "--url", &relay.url, "--tls-ca", key])
        .expect(2)
        .stderr_has(key);
}
