//! The limits an operator expects of a relay: each refuses with the protocol's error
//! (AEP-0003 §6.5 `limit-exceeded`, §3.5 `hello-required`) and leaves everyone else be.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod common;

use common::*;
use serde_json::json;

/// A `hello` whose role is none of the three of AEP-0003 §4 rule 2 is refused in-band
/// and the socket closed, as a malformed `hello` is.
#[tokio::test]
async fn a_hello_with_an_unknown_role_is_refused_and_closed() {
    let relay = relay().await;
    for role in ["admin", "collector"] {
        let mut ws = Ws::connect(&relay).await;
        ws.send(&json!({ "type": "hello", "versions": ["0.1"], "role": role }))
            .await;
        let refusal = ws.recv().await.unwrap();
        assert_eq!(refusal["type"], "error");
        assert_eq!(refusal["code"], "hello-required");
        assert!(
            refusal["detail"].as_str().unwrap().contains(role),
            "{refusal}"
        );
        assert_eq!(ws.close_code().await, Some(1002));
    }
    // an absent role reads as `both`, as the reference relay reads it
    let mut ws = Ws::connect(&relay).await;
    ws.send(&json!({ "type": "hello", "versions": ["0.1"] }))
        .await;
    assert_eq!(ws.recv().await.unwrap()["type"], "hello");
    relay.shutdown().await.unwrap();
}

/// A `hello` larger than `--max-hello` is refused (`limit-exceeded`) and the socket
/// closed with 1009 before it is read; one within the bound is answered.
#[tokio::test]
async fn a_hello_past_its_bound_is_refused_before_it_is_read() {
    let config = aep_relay::RelayConfig::default()
        .with_token(TOKEN)
        .with_max_hello(4096);
    let relay = builder().config(config).start().await.unwrap();
    let hello = |n: usize| {
        json!({
            "type": "hello", "versions": ["0.1"], "role": "emitter",
            "capabilities": { "emits": vec!["x.y"; n] },
        })
    };
    let mut ws = Ws::connect(&relay).await;
    ws.send(&hello(10)).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "hello");
    let mut ws = Ws::connect(&relay).await;
    ws.send(&hello(1000)).await;
    let refusal = ws.recv().await.unwrap();
    assert_eq!(refusal["code"], "limit-exceeded");
    assert!(
        refusal["detail"].as_str().unwrap().contains("4096"),
        "{refusal}"
    );
    assert_eq!(ws.close_code().await, Some(1009));
    relay.shutdown().await.unwrap();
}
