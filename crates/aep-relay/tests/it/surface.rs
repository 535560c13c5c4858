//! Discovery (AEP-0003 §3.4), `/healthz`, `/connections`, CORS, the auth wall, and
//! graceful shutdown.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn discovery_is_served_at_events_and_well_known() {
    let relay = relay().await;
    for path in ["/events", "/.well-known/aep"] {
        let r = get(relay.url(), path).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/json");
        let doc = body(r).await;
        assert_eq!(doc["aep"], json!(["0.1"]));
        assert_eq!(doc["role"], "collector");
        assert_eq!(
            doc["endpoints"],
            json!({ "events": "/events", "stream": "/stream", "socket": "/socket" })
        );
        assert_eq!(
            doc["capabilities"]["replay"],
            json!({ "buffer": 8, "all": true })
        );
        assert_eq!(doc["capabilities"]["filters"], json!(["attr-match"]));
        assert_eq!(doc["capabilities"]["roster"], json!({}));
    }
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn healthz_is_open_and_counts_only_when_authorized() {
    let relay = relay().await;
    let open = body(get_without_token(relay.url(), "/healthz").await).await;
    assert_eq!(open, json!({ "ok": true }));
    post_json(&relay, &ev("session.started", &session(), 0)).await;
    let full = get_json(relay.url(), "/healthz").await;
    assert_eq!(full["ok"], true);
    assert_eq!(full["sessions"], 1);
    assert_eq!(full["subscribers"], 0);
    assert_eq!(full["connections"], 0);
    assert!(full["uptime_s"].is_u64());
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn connections_itemizes_hello_done_sockets() {
    let relay = relay().await;
    let mut emitter = Ws::hello(
        &relay,
        "emitter",
        json!({ "control": { "accepts": ["control.pause"] } }),
    )
    .await;
    let s = session();
    emitter.send(&ev("session.started", &s, 0)).await;
    let _pending = Ws::connect(&relay).await; // no hello yet: counted, not itemized
    let _sse = Sse::open(&relay, "").await;
    // the event reaches the buffer before the claim is read back
    let mut doc = Value::Null;
    for _ in 0..50 {
        let r = get(relay.url(), "/connections").await;
        assert_eq!(r.headers()["access-control-allow-origin"], "*");
        doc = body(r).await;
        if doc["connections"][0]["sessions"] == json!([s]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["relay"]["connections"], 2);
    assert_eq!(doc["relay"]["control"], true);
    assert_eq!(doc["sse_subscribers"], 1);
    let conns = doc["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1);
    assert_eq!(conns[0]["role"], "emitter");
    assert_eq!(conns[0]["accepts"], json!(["control.pause"]));
    assert_eq!(conns[0]["sessions"], json!([s]));
    assert_eq!(conns[0]["subscriptions"], 0);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn cors_preflight_precedes_the_wall_and_refusals_carry_cors() {
    let relay = relay().await;
    for path in ["/stream", "/connections"] {
        let r = client()
            .request(reqwest::Method::OPTIONS, format!("{}{path}", relay.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
        assert_eq!(r.headers()["access-control-allow-origin"], "*");
        assert_eq!(r.headers()["access-control-allow-methods"], "GET, OPTIONS");
        assert!(r.headers()["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("last-event-id"));
        assert_eq!(r.headers()["access-control-max-age"], "86400");
    }
    let r = get_without_token(relay.url(), "/stream").await;
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    let r = get(relay.url(), "/stream?filter=%7Bnope").await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn token_by_header_or_query_wrong_token_refused() {
    let relay = relay().await;
    let url = format!("{}/events", relay.url());
    assert_eq!(client().get(&url).send().await.unwrap().status(), 401);
    for (token, status) in [("test-tokem", 401), ("test-token-", 401), (TOKEN, 200)] {
        let r = client().get(&url).bearer_auth(token).send().await.unwrap();
        assert_eq!(r.status(), status, "{token}");
    }
    let q = format!("{url}?access_token={TOKEN}");
    assert_eq!(client().get(&q).send().await.unwrap().status(), 200);
    // the WebSocket upgrade is behind the same wall
    let refused = tokio_tungstenite::connect_async(relay.socket_url()).await;
    assert!(refused.is_err());
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn without_a_token_everything_is_open() {
    let relay = aep_relay::Relay::builder().start().await.unwrap();
    let r = get_without_token(relay.url(), "/events").await;
    assert_eq!(r.status(), 200);
    let h = body(get_without_token(relay.url(), "/healthz").await).await;
    assert!(h["sessions"].is_u64());
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_surfaces_are_404() {
    let relay = relay().await;
    for (method, path) in [
        ("GET", "/nope"),
        ("DELETE", "/events"),
        ("POST", "/stream"),
        ("GET", "/socket"),
    ] {
        let r = client()
            .request(method.parse().unwrap(), format!("{}{path}", relay.url()))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{method} {path}");
    }
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn graceful_shutdown_tells_sse_and_closes_ws_1001() {
    let relay = relay().await;
    let mut sse = Sse::open(&relay, "").await;
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    let stopping = tokio::spawn(relay.shutdown());
    let all = sse.read_to_end().await;
    assert!(
        all.iter()
            .any(|m| m.comments.iter().any(|c| c == "shutting-down")),
        "{all:?}"
    );
    assert_eq!(ws.close_code().await, Some(1001));
    stopping.await.unwrap().unwrap();
}
