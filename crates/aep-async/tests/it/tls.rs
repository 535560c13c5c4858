//! The SDK's clients over HTTPS and WSS (issue 31 §2): the embedded relay serving a
//! certificate that a private CA of the test's own signed (made at run time), and
//! clients trusting that CA with `Client::tls_ca_pem`: a subscription over each
//! transport receiving an event the HTTP sink emitted, and a control round trip. A
//! client without the CA is told the certificate is not trusted, and the fix.
#![cfg(all(feature = "rustls", feature = "http", feature = "sse", feature = "ws"))]
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::control::{ControlOptions, ControlTarget, SendOptions};
use aep_async::subscribe::Notice;
use aep_async::{
    Client, Emitter, HttpSinkOptions, SubscribeOptions, Subscription, Transport, WsSinkOptions,
};
use aep_test_support::disk::TempDir;
use aep_test_support::tls::TestCa;
use futures::StreamExt;
use serde_json::json;

const TOKEN: &str = "t0ken";
const WAIT: Duration = Duration::from_secs(20);

/// The embedded relay over TLS with a certificate of `ca`'s, wanting [`TOKEN`]; the
/// directory holding its files lives as long as the relay is used.
async fn tls_relay(ca: &TestCa, dir: &TempDir) -> aep_relay::RelayHandle {
    let paths = ca.write(dir.path(), "");
    let relay = aep_relay::Relay::builder()
        .token(TOKEN)
        .tls(&paths.cert, &paths.key)
        .start()
        .await
        .unwrap();
    assert!(relay.url().starts_with("https://"), "{}", relay.url());
    relay
}

/// A client of `url` trusting `ca`, reconnecting fast.
fn trusting(url: &str, ca: &TestCa) -> Client {
    Client::new(url)
        .tls_ca_pem(ca.pem())
        .unwrap()
        .token(TOKEN)
        .connect_timeout(Duration::from_secs(10))
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
}

/// A live subscription to `session` over `transport`, once the relay has it.
async fn subscribed(client: &Client, session: &str, transport: Transport) -> Subscription {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let sub = client.subscribe(
        SubscribeOptions::new()
            .filter(json!({ "session": session }))
            .transport(transport)
            .on_notice(move |n| {
                if matches!(n, Notice::Connected { .. }) {
                    let _ = tx.send(());
                }
            }),
    );
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("the subscription connected within 20 s");
    sub
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_an_http_emit_and_a_control_round_trip_over_tls() {
    let dir = TempDir::new("async-tls");
    let ca = TestCa::new("aep-async tls test");
    let relay = tls_relay(&ca, &dir).await;
    let client = trusting(relay.url(), &ca);

    // An HTTP-sink emit, read by an SSE and a WebSocket subscription.
    let mut sse = subscribed(&client, "s-tls", Transport::Sse).await;
    let mut ws = subscribed(&client, "s-tls", Transport::WebSocket).await;
    let emitter = Emitter::new(
        "tls-agent",
        "host",
        client.http_sink(HttpSinkOptions::new()).unwrap(),
    );
    let sent = emitter
        .session("s-tls")
        .emit("session.started", json!({}))
        .unwrap();
    emitter.flush().await;
    assert_eq!(emitter.stats().delivered, 1);
    for sub in [&mut sse, &mut ws] {
        let got = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("the event within 20 s")
            .unwrap();
        assert_eq!(got.id(), sent.id());
    }

    // Control: a console -> the relay -> an agent's target, over wss both ways.
    let target = ControlTarget::builder(["control.pause"]).handler(|cmd| async move {
        cmd.accept().unwrap();
    });
    let sink = client
        .ws_sink(WsSinkOptions::new("tls-agent", "host/1").command_hook(target.clone()))
        .unwrap();
    let agent = Emitter::new("tls-agent", "host", sink);
    let session = target.attach(agent.session("s-ctl"));
    session.emit("session.started", json!({})).unwrap();
    agent.flush().await;
    let console = client.control(ControlOptions::new()).await.unwrap();
    crate::common::wait_claimed(&console, "s-ctl").await;
    let ack = console
        .send("control.pause", "s-ctl", SendOptions::new())
        .await
        .unwrap();
    assert_eq!(ack.event_type(), "control.accepted");

    console.close().await;
    agent.close().await;
    emitter.close().await;
    relay.shutdown().await.unwrap();
}

/// The text every untrusted connection must carry: what is wrong, and the fix.
fn says_untrusted(text: &str) {
    assert!(text.contains("certificate is not trusted"), "{text}");
    assert!(text.contains("Client::tls_ca_pem"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_ca_is_told_the_certificate_is_not_trusted() {
    let dir = TempDir::new("async-tls-untrusted");
    let ca = TestCa::new("aep-async tls test");
    let relay = tls_relay(&ca, &dir).await;
    // Another CA's root is no help: still untrusted.
    let stranger = TestCa::new("a stranger");
    for client in [Client::new(relay.url()), trusting(relay.url(), &stranger)] {
        let client = client.token(TOKEN).connect_timeout(Duration::from_secs(10));

        // The WebSocket side (control).
        let e = client.control(ControlOptions::new()).await.unwrap_err();
        says_untrusted(&e.to_string());

        // The HTTP side (an SSE subscription reports each failed connect).
        let errors = Arc::new(Mutex::new(Vec::new()));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let seen = errors.clone();
        let _sub = client.subscribe(SubscribeOptions::new().on_notice(move |n| {
            if let Notice::Error(e) = n {
                seen.lock().unwrap().push(e.to_string());
                let _ = tx.send(());
            }
        }));
        tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("a connect error within 20 s");
        says_untrusted(&errors.lock().unwrap()[0]);
    }
    relay.shutdown().await.unwrap();
}
