//! The limits an operator expects of a relay: each refuses with the protocol's error
//! (AEP-0003 §6.5 `limit-exceeded`, §3.5 `hello-required`) and leaves everyone else be.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::json;

/// Asserts that `ws` is refused in-band with an `error` of `code` whose detail names
/// `detail`, and then closed with `close`.
async fn assert_refused_and_closed(ws: &mut Ws, code: &str, detail: &str, close: u16) {
    let refusal = ws.recv().await.unwrap();
    assert_eq!(refusal["type"], "error", "{refusal}");
    assert_eq!(refusal["code"], code, "{refusal}");
    assert!(
        refusal["detail"].as_str().unwrap().contains(detail),
        "{refusal}"
    );
    assert_eq!(ws.close_code().await, Some(close));
}

/// A `hello` whose role is none of the three of AEP-0003 §4 rule 2 is refused in-band
/// and the socket closed, as a malformed `hello` is.
#[tokio::test]
async fn a_hello_with_an_unknown_role_is_refused_and_closed() {
    let relay = relay().await;
    for role in ["admin", "collector"] {
        let mut ws = Ws::connect(&relay).await;
        ws.send(&json!({ "type": "hello", "versions": ["0.1"], "role": role }))
            .await;
        assert_refused_and_closed(&mut ws, "hello-required", role, 1002).await;
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
    assert_refused_and_closed(&mut ws, "limit-exceeded", "4096", 1009).await;
    relay.shutdown().await.unwrap();
}

/// Reads what the relay sends on a raw connection until it closes it; `None` when it
/// is still open after `within`.
async fn read_until_closed(tcp: &mut tokio::net::TcpStream, within: Duration) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

async fn healthz(relay: &aep_relay::RelayHandle) -> u16 {
    let r = get_without_token(relay.url(), "/healthz").await;
    r.status().as_u16()
}

/// Past `--max-connections` a connection is answered `503` at once and closed; the ones
/// held keep being served, and a place freed is taken again.
#[tokio::test]
async fn connections_past_the_limit_are_answered_503_at_once() {
    let config = config().with_max_connections(2);
    let relay = builder().config(config).start().await.unwrap();
    let idle = tokio::net::TcpStream::connect(relay.local_addr())
        .await
        .unwrap();
    let mut sse = Sse::open(&relay, "").await;
    let mut third = tokio::net::TcpStream::connect(relay.local_addr())
        .await
        .unwrap();
    let answer = read_until_closed(&mut third, Duration::from_secs(5))
        .await
        .expect("the connection past the limit is closed at once");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    // the stream held under the limit still delivers
    let s = session();
    assert_eq!(
        post_json_once(&relay, &s).await,
        None,
        "a POST past the limit is refused"
    );
    drop(idle);
    // the place freed is taken again, once the relay has seen the close
    let mut answer = None;
    for _ in 0..100 {
        answer = post_json_once(&relay, &s).await;
        if answer.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(answer, Some(202), "the freed place was not taken again");
    assert_eq!(
        sse.next_event().await.unwrap().json()["session"],
        s.as_str()
    );
    relay.shutdown().await.unwrap();
}

/// One POST of one event on a fresh connection; `None` when it got no HTTP answer.
async fn post_json_once(relay: &aep_relay::RelayHandle, s: &str) -> Option<u16> {
    let r = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
        .post(format!("{}/events", relay.url()))
        .bearer_auth(TOKEN)
        .header("aep-version", "0.1")
        .header("content-type", "application/json")
        .body(ev("session.started", s, 0).to_string())
        .send()
        .await;
    match r {
        Ok(r) if r.status() == 503 => None,
        Ok(r) => Some(r.status().as_u16()),
        Err(_) => None,
    }
}

/// A connection that does not finish its headers within `--header-timeout-ms` is
/// closed, and its place under the connection limit given back.
#[tokio::test]
async fn a_connection_that_never_finishes_its_headers_is_closed() {
    use tokio::io::AsyncWriteExt;
    let config = config()
        .with_max_connections(1)
        .with_header_timeout(Duration::from_millis(300));
    let relay = builder().config(config).start().await.unwrap();
    let mut slow = tokio::net::TcpStream::connect(relay.local_addr())
        .await
        .unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: relay\r\n")
        .await
        .unwrap();
    let closed = read_until_closed(&mut slow, Duration::from_secs(10)).await;
    assert!(closed.is_some(), "a connection without headers was held");
    let mut served = false;
    for _ in 0..100 {
        if healthz(&relay).await == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served);
    relay.shutdown().await.unwrap();
}

/// A WebSocket that never says `hello` is answered `hello-required` and closed once
/// `--hello-timeout-ms` passes (AEP-0003 §3.5 rule 1).
#[tokio::test]
async fn a_socket_that_never_says_hello_is_closed() {
    let config = config().with_hello_timeout(Duration::from_millis(300));
    let relay = builder().config(config).start().await.unwrap();
    let mut ws = Ws::connect(&relay).await;
    assert_refused_and_closed(&mut ws, "hello-required", "300 ms", 1002).await;
    relay.shutdown().await.unwrap();
}

/// Past `--max-subscriptions` on one connection, a `subscribe` is refused with
/// `limit-exceeded` and a `subscription.requested` rejected with the same code, both
/// kinds counting toward one cap; re-using an id replaces rather than adds, and the
/// connection and what it holds are untouched (AEP-0003 §6.5).
#[tokio::test]
async fn subscriptions_past_the_cap_are_refused_limit_exceeded() {
    let config = config().with_max_subscriptions(2);
    let relay = builder().config(config).start().await.unwrap();
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    let subscribe =
        |id: &str| json!({ "type": "subscribe", "id": id, "filter": { "type": "x.*" } });
    let request = json!({ "type": "subscription.requested", "payload": { "types": ["x.*"] } });
    ws.send(&subscribe("a")).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "subscribed");
    ws.send(&request).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "subscription.created");
    // the cap: a third of either kind is refused, in-band
    ws.send(&subscribe("b")).await;
    let refusal = ws.recv().await.unwrap();
    assert_eq!(
        (&refusal["type"], &refusal["code"], &refusal["id"]),
        (&json!("error"), &json!("limit-exceeded"), &json!("b"))
    );
    assert!(refusal["detail"]
        .as_str()
        .unwrap()
        .contains("AEP_MAX_SUBSCRIPTIONS=2"));
    ws.send(&request).await;
    let rejected = ws.recv().await.unwrap();
    assert_eq!(rejected["type"], "subscription.rejected");
    assert_eq!(rejected["payload"]["error"]["code"], "limit-exceeded");
    assert_eq!(rejected["payload"]["error"]["retryable"], true);
    // re-using an id replaces that subscription
    ws.send(&subscribe("a")).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "subscribed");
    // one freed is one more allowed
    ws.send(&json!({ "type": "unsubscribe", "id": "a" })).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "unsubscribed");
    ws.send(&subscribe("c")).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "subscribed");
    // what the connection holds still delivers
    let s = session();
    post_json(&relay, &ev("x.happened", &s, 0)).await;
    let mut got = Vec::new();
    while got.len() < 2 {
        let m = ws.recv().await.unwrap();
        if m["type"] == "x.happened" || m["event"]["type"] == "x.happened" {
            got.push(m);
        }
    }
    relay.shutdown().await.unwrap();
}

/// The replay store is bounded in bytes per session and over all, with the count
/// bounds' eviction rules: a session's oldest events first, then the least recently
/// written sessions.
#[tokio::test]
async fn the_replay_store_is_bounded_in_bytes() {
    let config = config()
        .with_buffer(1000)
        .with_max_session_bytes(50 << 10)
        .with_max_store_bytes(80 << 10);
    let relay = builder().config(config).start().await.unwrap();
    let pad = "x".repeat(10 << 10);
    let padded =
        |s: &str, seq: u64| with(ev("progress.status", s, seq), "data", json!({ "pad": pad }));
    let (a, b) = (session(), session());
    let batch: Vec<_> = (0..20).map(|i| padded(&a, i)).collect();
    assert_eq!(post_ndjson(&relay, &batch).await.status(), 202);
    let kept = seqs(&replay(&relay, &from(&a)).await);
    assert!(kept.len() < 5 && kept.last() == Some(&19), "{kept:?}");
    assert_eq!(kept, (20 - kept.len() as u64..20).collect::<Vec<_>>());
    // another session past the total: the least recently written one goes
    let batch: Vec<_> = (0..5).map(|i| padded(&b, i)).collect();
    assert_eq!(post_ndjson(&relay, &batch).await.status(), 202);
    assert!(seqs(&replay(&relay, &from(&a)).await).is_empty());
    assert!(!seqs(&replay(&relay, &from(&b)).await).is_empty());
    let doc = get_json(relay.url(), "/connections").await;
    assert!(
        doc["relay"]["buffered_bytes"].as_u64().unwrap() <= 80 << 10,
        "{doc}"
    );
    relay.shutdown().await.unwrap();
}
