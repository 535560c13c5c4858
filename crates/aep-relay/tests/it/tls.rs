//! HTTPS and WSS served by the relay (issue 31 point 2): certificates made at run time
//! by a private CA of the test's own. The client side of TLS is tested here too, with
//! the crates the SDK's clients are built on: `reqwest` and `tokio-tungstenite` over
//! rustls, trusting the test's CA and refusing a stranger's. The SDK's own clients
//! over TLS (`Client::tls_ca_pem`) are aep-async's (`crates/aep-async/tests/it/tls.rs`);
//! `aep relay --tls-cert` and `aep --tls-ca` are aep-cli's
//! (`crates/aep-cli/tests/it/{relay,tls}.rs`).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use aep_test_support::disk::TempDir;
use aep_test_support::process::RelayProcess;
use aep_test_support::tls::{TestCa, TlsPaths};
use common::*;
use futures::{SinkExt, StreamExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

/// An HTTP client that trusts `ca` (and nothing else of this test's).
fn https_client(ca: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .build()
        .unwrap()
}

/// A WebSocket connection to `url` (`wss://`) from a client that trusts `ca`.
async fn wss(
    url: &str,
    ca: &str,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    tokio_tungstenite::tungstenite::Error,
> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_tungstenite::Connector::Rustls(Arc::new(config));
    tokio_tungstenite::connect_async_tls_with_config(url, None, false, Some(connector))
        .await
        .map(|(ws, _)| ws)
}

async fn post_over(client: &reqwest::Client, base: &str, event: &serde_json::Value) -> u16 {
    client
        .post(format!("{base}/events"))
        .bearer_auth(TOKEN)
        .header("aep-version", "0.1")
        .header("content-type", "application/json")
        .body(event.to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// `url` is a `scheme://` address on the loopback interface, as the relay names it.
fn assert_loopback(scheme: &str, url: &str) {
    assert!(url.starts_with(&format!("{scheme}://127.0.0.1:")), "{url}");
}

/// An SSE stream over `client`, read until an event arrives (its `data`).
async fn next_data(response: &mut reqwest::Response) -> Option<String> {
    let mut buf = String::new();
    loop {
        let chunk = tokio::time::timeout(WAIT, response.chunk())
            .await
            .ok()?
            .ok()??;
        buf.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(m) = aep_test_support::sse::take_messages(&mut buf)
            .into_iter()
            .find(|m| m.data.is_some())
        {
            return m.data;
        }
    }
}

async fn open_stream(client: &reqwest::Client, base: &str) -> reqwest::Response {
    let r = client
        .get(format!("{base}/stream"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r
}

/// Over TLS the relay serves what it serves in clear: an SSE stream, an ingest and a
/// WebSocket, with the URLs its handle gives (`https://`, `wss://`).
#[tokio::test]
async fn a_relay_serves_https_and_wss() {
    let dir = TempDir::new("relay-tls");
    let ca = TestCa::new("relay tls test");
    let paths = ca.write(dir.path(), "");
    let relay = builder()
        .tls(&paths.cert, &paths.key)
        .start()
        .await
        .unwrap();
    assert_loopback("https", relay.url());
    assert_loopback("wss", &relay.socket_url());

    let client = https_client(ca.pem());
    let mut stream = open_stream(&client, relay.url()).await;
    let mut ws = wss(
        &format!("{}?access_token={TOKEN}", relay.socket_url()),
        ca.pem(),
    )
    .await
    .unwrap();
    let hello = json!({ "type": "hello", "versions": ["0.1"], "role": "consumer" });
    ws.send(Message::Text(hello.to_string().into()))
        .await
        .unwrap();
    let subscribe = json!({ "type": "subscribe", "id": "s", "filter": {} });
    ws.send(Message::Text(subscribe.to_string().into()))
        .await
        .unwrap();
    let mut frames = Vec::new();
    while frames.len() < 2 {
        if let Some(Ok(Message::Text(t))) = ws.next().await {
            frames.push(serde_json::from_str::<serde_json::Value>(&t).unwrap()["type"].clone());
        }
    }
    assert_eq!(frames, ["hello", "subscribed"]);

    let s = session();
    assert_eq!(
        post_over(&client, relay.url(), &ev("session.started", &s, 0)).await,
        202
    );
    let delivered = next_data(&mut stream).await.expect("the event over SSE");
    assert!(delivered.contains(&s), "{delivered}");
    let over_ws = loop {
        match tokio::time::timeout(WAIT, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) if t.contains(&s) => break t,
            Ok(Some(Ok(_))) => continue,
            other => panic!("no event over WSS: {other:?}"),
        }
    };
    assert!(over_ws.contains("session.started"));
    relay.shutdown().await.unwrap();
}

/// A client that does not trust the relay's CA cannot connect: its TLS says why.
#[tokio::test]
async fn a_client_that_does_not_trust_the_ca_cannot_connect() {
    let dir = TempDir::new("relay-tls-untrusted");
    let paths = TestCa::new("relay tls test").write(dir.path(), "");
    let relay = builder()
        .tls(&paths.cert, &paths.key)
        .start()
        .await
        .unwrap();
    let stranger = TestCa::new("another CA");
    let e = https_client(stranger.pem())
        .get(format!("{}/healthz", relay.url()))
        .send()
        .await
        .unwrap_err();
    let chain = format!("{:?}", e);
    assert!(chain.contains("UnknownIssuer"), "{chain}");
    let e = wss(&relay.socket_url(), stranger.pem()).await.unwrap_err();
    assert!(e.to_string().contains("UnknownIssuer"), "{e}");
    // plain HTTP on the TLS port gets no answer, and the relay goes on
    assert!(post(
        &relay.url().replace("https", "http"),
        "0.1",
        "application/json",
        "{}".to_owned()
    )
    .await
    .is_none());
    let ok = https_client(&std::fs::read_to_string(&paths.ca).unwrap())
        .get(format!("{}/healthz", relay.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    relay.shutdown().await.unwrap();
}

/// Files a relay cannot serve with refuse its start, the reason on stderr: a key that
/// is not the certificate's, a file it cannot read, one flag of the two.
#[test]
fn unusable_tls_files_refuse_the_start() {
    let dir = TempDir::new("relay-tls-refused");
    let one = TestCa::new("one").write(dir.path(), "one-");
    let two = TestCa::new("two").write(dir.path(), "two-");
    let (cert, other_key) = (one.cert.to_str().unwrap(), two.key.to_str().unwrap());
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--tls-cert", cert, "--tls-key", other_key],
            "is not the private key of the certificate",
        ),
        (
            vec!["--tls-cert", missing, "--tls-key", other_key],
            "cannot read the TLS certificate",
        ),
        (vec!["--tls-cert", cert], "needs --tls-key"),
    ] {
        match common::RelayProcess::try_start(&args) {
            Ok(relay) => panic!("started with {args:?}: {}", relay.first_line),
            Err((status, err)) => {
                assert!(status.is_some_and(|s| !s.success()), "{status:?}");
                assert!(err.contains(says), "{says:?} not in {err}");
            }
        }
    }
}

fn relay_with_tls(paths: &TlsPaths) -> RelayProcess {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aep-relay"));
    command
        .args(["--port", "0", "--token", TOKEN, "--tls-cert"])
        .arg(&paths.cert)
        .arg("--tls-key")
        .arg(&paths.key)
        .env("RUST_LOG", "info")
        .env_remove("AEP_HOST");
    RelayProcess::spawn(command).unwrap()
}

/// The binary names its `https://` address first; on `SIGHUP` it reads the files again:
/// a new connection gets the new certificate, a stream opened before keeps its
/// connection and goes on delivering.
#[tokio::test]
async fn sighup_reads_the_certificate_again_and_keeps_open_connections() {
    let dir = TempDir::new("relay-tls-sighup");
    let first = TestCa::new("first");
    let paths = first.write(dir.path(), "");
    let relay = relay_with_tls(&paths);
    assert_loopback("https", relay.url());
    let old = https_client(first.pem());
    let mut held = open_stream(&old, relay.url()).await;

    // renewed by another CA: the files replaced, then SIGHUP
    let second = TestCa::new("second");
    let renewed = second.write(dir.path(), "");
    assert_eq!(
        (renewed.cert.clone(), renewed.key.clone()),
        (paths.cert.clone(), paths.key.clone())
    );
    relay.hangup();
    let new = https_client(second.pem());
    let deadline = tokio::time::Instant::now() + aep_test_support::wait::PATIENCE;
    loop {
        if let Ok(r) = new.get(format!("{}/healthz", relay.url())).send().await {
            assert_eq!(r.status(), 200);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new certificate is not served: {}",
            relay.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(relay.log().contains("read again"), "{}", relay.log());
    // a fresh client of the old CA is refused now...
    let fresh_old = https_client(first.pem());
    assert!(fresh_old
        .get(format!("{}/healthz", relay.url()))
        .send()
        .await
        .is_err());
    // ...while the stream it opened before goes on
    let s = session();
    assert_eq!(
        post_over(&new, relay.url(), &ev("session.started", &s, 0)).await,
        202
    );
    let delivered = next_data(&mut held)
        .await
        .expect("the held stream still delivers");
    assert!(delivered.contains(&s), "{delivered}");

    // files that cannot be used: logged, the certificate served stays
    std::fs::write(&paths.key, "not a key").unwrap();
    relay.hangup();
    aep_test_support::wait::until("the failed reload logged", || {
        relay
            .log()
            .contains("still serving the certificate read before")
    })
    .await;
    let again = https_client(second.pem());
    assert_eq!(
        again
            .get(format!("{}/healthz", relay.url()))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}
