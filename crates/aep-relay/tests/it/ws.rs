//! `/socket` (AEP-0003 §3.5, §4, §6.5): hello first, version selection, subscribe with
//! `from` and capture ceilings, in-band refusals, unsubscribe, roster, ping/pong, unknown
//! frames, binary frames.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn first_frame_must_be_hello() {
    let relay = relay().await;
    let mut ws = Ws::connect(&relay).await;
    ws.send(&ev("session.started", "s", 0)).await;
    let err = ws.recv().await.unwrap();
    assert_eq!(err, json!({ "type": "error", "code": "hello-required" }));
    assert_eq!(ws.close_code().await, Some(1002));
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn hello_without_a_common_version_is_refused_with_versions() {
    let relay = relay().await;
    let mut ws = Ws::connect(&relay).await;
    ws.send(&json!({ "type": "hello", "versions": ["9.9"], "role": "consumer" }))
        .await;
    let err = ws.recv().await.unwrap();
    assert_eq!(err["code"], "version-unsupported");
    assert_eq!(err["versions"], json!(["0.1"]));
    assert_eq!(ws.close_code().await, Some(1002));
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn hello_reply_selects_exactly_one_version() {
    let relay = relay().await;
    let mut ws = Ws::connect(&relay).await;
    ws.send(&json!({ "type": "hello", "versions": ["1.0", "0.1"], "role": "consumer" }))
        .await;
    let hello = ws.recv().await.unwrap();
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["versions"], json!(["0.1"]));
    assert_eq!(hello["role"], "both");
    assert_eq!(hello["capabilities"]["replay"]["buffer"], 8);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn subscribe_replays_from_with_exhaustion_then_delivers_live() {
    let (relay, s, batch) = relay_holding(10).await;
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    ws.send(
        &json!({ "type": "subscribe", "id": "sub-1", "filter": { "session": s },
        "from": [{ "session": s, "epoch": 0, "seq": 0 }] }),
    )
    .await;
    ws.assert_next(json!({ "type": "subscribed", "id": "sub-1" }))
        .await;
    ws.assert_next(json!({ "type": "replay-exhausted", "sub": "sub-1", "session": s, "earliest": { "epoch": 0, "seq": 2 } })).await;
    for expected in &batch[2..] {
        let text = ws.recv_text().await.unwrap();
        assert_eq!(text, expected.to_string(), "byte-identical replay");
    }
    let live = ev("progress.status", &s, 10);
    post_json(&relay, &live).await;
    assert_eq!(ws.recv_text().await.unwrap(), live.to_string());
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn subscribe_from_all_replays_without_markers() {
    let (relay, _, _) = relay_holding(10).await;
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    ws.send(&json!({ "type": "subscribe", "id": "seven", "from": "all" }))
        .await;
    let got = ws.recv_until(|f| f["seq"] == 9).await;
    assert_eq!(got[0], json!({ "type": "subscribed", "id": "seven" }));
    assert!(got.iter().all(|f| f["type"] != "replay-exhausted"));
    assert_eq!(got.len(), 1 + 8);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn subscribe_capture_ceiling_applies_live_and_on_replay() {
    let relay = relay().await;
    let s = session();
    let secret = with(
        with(ev("run.started", &s, 0), "capture", json!("full")),
        "data",
        json!({ "trigger": "user", "prompt": "CANARY" }),
    );
    post_json(&relay, &secret).await;
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    ws.send(
        &json!({ "type": "subscribe", "id": "c", "capture": "redacted",
        "filter": { "session": s }, "from": "all" }),
    )
    .await;
    let got = ws.recv_until(|f| f.get("aep").is_some()).await;
    let replayed = got.last().unwrap();
    // a mechanical hop never mints `redacted`: full lands on metadata (AEP-0003 §6.4)
    assert_eq!(replayed["capture"], "metadata");
    assert!(!replayed.to_string().contains("CANARY"));
    post_json(&relay, &with(secret.clone(), "seq", json!(1))).await;
    let live = ws.recv().await.unwrap();
    assert_eq!(live["capture"], "metadata");
    assert!(!live.to_string().contains("CANARY"));
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn subscribe_refusals_are_in_band_and_the_connection_survives() {
    let relay = builder().max_from(4).start().await.unwrap();
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    let many: Vec<Value> = (0..5)
        .map(|i| json!({ "session": format!("s{i}"), "seq": 0 }))
        .collect();
    for (frame, code) in [
        (
            json!({ "type": "subscribe", "id": "a", "filter": { "time": "x" } }),
            "invalid-filter",
        ),
        (
            json!({ "type": "subscribe", "id": "b", "filter": [] }),
            "invalid-filter",
        ),
        (
            json!({ "type": "subscribe", "id": "c", "from": {} }),
            "invalid-filter",
        ),
        (
            json!({ "type": "subscribe", "id": "d", "from": [{ "seq": 1 }] }),
            "invalid-filter",
        ),
        (
            json!({ "type": "subscribe", "id": "e", "capture": "everything" }),
            "invalid-filter",
        ),
        (
            json!({ "type": "subscribe", "id": "f", "from": many }),
            "limit-exceeded",
        ),
    ] {
        ws.send(&frame).await;
        let err = ws.recv().await.unwrap();
        assert_eq!(err["type"], "error", "{frame}");
        assert_eq!(err["id"], frame["id"]);
        assert_eq!(err["code"], code, "{frame}");
        assert!(err["detail"].is_string());
    }
    ws.send(&json!({ "type": "subscribe", "id": "ok", "filter": { "type": "agent.*" } }))
        .await;
    ws.assert_next(json!({ "type": "subscribed", "id": "ok" }))
        .await;
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn unsubscribe_stops_delivery() {
    let relay = relay().await;
    let s = session();
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    ws.send(&json!({ "type": "subscribe", "id": "u", "filter": { "session": s } }))
        .await;
    ws.recv().await.unwrap();
    ws.send(&json!({ "type": "unsubscribe", "id": "u" })).await;
    ws.assert_next(json!({ "type": "unsubscribed", "id": "u" }))
        .await;
    post_json(&relay, &ev("session.started", &s, 0)).await;
    ws.assert_pong_next("nothing was delivered after the unsubscribe")
        .await;
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn events_sent_on_the_socket_are_ingested_and_refused_in_band_when_invalid() {
    let relay = relay().await;
    let s = session();
    let mut sse = Sse::open(&relay, &only(&s)).await;
    let mut ws = Ws::hello(&relay, "emitter", json!({})).await;
    let good = ev("session.started", &s, 0);
    ws.send(&good).await;
    assert_eq!(sse.next_event().await.unwrap().data, Some(good.to_string()));
    let mut bad = ev("session.started", &s, 1);
    bad.as_object_mut().unwrap().remove("time");
    ws.send(&bad).await;
    let err = ws.recv().await.unwrap();
    assert_eq!(err["code"], "invalid-event");
    assert_eq!(err["cause"], bad["id"]);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_session_with_a_line_break_is_refused_on_the_socket_too() {
    // Its id: line would be forged in every SSE reader's stream (AEP-0003 §3.3).
    let relay = relay().await;
    let mut ws = Ws::hello(&relay, "emitter", json!({})).await;
    let forged = "a\nid: evil:9:9\n\nevent: x";
    let bad = with(
        ev("session.started", forged, 0),
        "source",
        json!("aep://test/agent/a"),
    );
    ws.send(&bad).await;
    let err = ws.recv().await.unwrap();
    assert_eq!(err["code"], "invalid-event");
    assert_eq!(err["cause"], bad["id"]);
    assert!(
        err["detail"].as_str().unwrap().contains("CR, LF or NUL"),
        "{err}"
    );
    // nothing was stored: a full replay is only its end marker
    assert_nothing_held(&relay).await;
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn roster_relays_claims_verbatim_and_refuses_emitters_in_band() {
    let relay = relay().await;
    let s = session();
    let control = json!({ "accepts": ["control.attention.respond"], "ack_window_ms": 10000 });
    let mut emitter = Ws::hello(
        &relay,
        "emitter",
        json!({ "emits": ["session"], "control": control }),
    )
    .await;
    emitter.send(&ev("session.started", &s, 0)).await;
    let mut consumer = Ws::hello(&relay, "consumer", json!({})).await;
    let mut entry = Value::Null;
    for _ in 0..50 {
        consumer
            .send(&json!({ "type": "roster", "id": "r-1" }))
            .await;
        let reply = consumer.recv().await.unwrap();
        assert_eq!(reply["type"], "roster");
        assert_eq!(reply["id"], "r-1");
        if let Some(e) = about(&reply["entries"], &s).next() {
            entry = e.clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        entry,
        json!({ "session": s, "agent": "agent-emitter", "instance": "i-1", "control": control, "emits": ["session"] })
    );
    emitter
        .send(&json!({ "type": "roster", "id": "r-2" }))
        .await;
    let err = emitter.recv().await.unwrap();
    assert_eq!(err["code"], "unauthorized");
    assert_eq!(err["id"], "r-2");
    emitter.send(&json!({ "type": "ping" })).await;
    assert_eq!(
        emitter.recv().await.unwrap(),
        json!({ "type": "pong" }),
        "connection survived"
    );
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn ping_is_answered_and_unknown_frames_are_ignored() {
    let relay = relay().await;
    let mut ws = Ws::connect(&relay).await;
    ws.send(
        &json!({ "type": "hello", "versions": ["0.1"], "role": "consumer",
        "capabilities": { "futurecap": { "enabled": true } } }),
    )
    .await;
    assert_eq!(ws.recv().await.unwrap()["type"], "hello");
    ws.send(&json!({ "type": "zigzag" })).await;
    ws.send(&json!({ "type": "pong", "t": 5 })).await;
    ws.send(&json!({ "type": "ping", "t": "abc" })).await;
    ws.assert_next(json!({ "type": "pong", "t": "abc" })).await;
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_json_is_answered_and_the_connection_survives() {
    let relay = relay().await;
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    ws.send_text("{nope").await;
    let err = ws.recv().await.unwrap();
    assert_eq!(
        (&err["type"], &err["code"]),
        (&json!("error"), &json!("bad-json"))
    );
    // the reason, with where in the message it was found
    let detail = err["detail"].as_str().unwrap();
    assert!(detail.contains("line 1 column 2"), "{detail}");
    // after hello too, for an event whose string holds a raw line break
    let s = session();
    let broken = ev("session.started", &s, 0)
        .to_string()
        .replace(&format!("\"{s}\""), &format!("\"{s}\n\""));
    ws.send_text(&broken).await;
    let err = ws.recv().await.unwrap();
    assert_eq!(err["code"], "bad-json");
    let detail = err["detail"].as_str().unwrap();
    assert!(detail.contains("control character"), "{detail}");
    ws.assert_pong_next("the connection survives").await;
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn binary_frames_are_refused_and_closed_1003() {
    let relay = relay().await;
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    use futures::SinkExt;
    ws.stream
        .send(tokio_tungstenite::tungstenite::Message::Binary(
            vec![1u8, 2, 3].into(),
        ))
        .await
        .unwrap();
    ws.assert_next(json!({ "type": "error", "code": "binary-unsupported" }))
        .await;
    assert_eq!(ws.close_code().await, Some(1003));
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn idle_sockets_get_ping_frames() {
    let relay = builder()
        .heartbeat(std::time::Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    let ping = ws.recv().await.unwrap();
    assert_eq!(ping["type"], "ping");
    assert!(ping["t"].is_u64());
    relay.shutdown().await.unwrap();
}

/// A text frame that is not UTF-8, or a message past the relay's size cap, ends that
/// connection with the RFC 6455 §7.4.1 code for it (the WebSocket layer refuses both
/// before any AEP reading), and nothing else: the relay serves other connections on.
#[tokio::test]
async fn a_broken_or_oversized_frame_ends_its_connection_only() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::Message;
    let relay = builder().max_body(4096).start().await.unwrap();
    let not_utf8 = Message::Frame(Frame::message(
        vec![b'{', 0xff, b'}'],
        OpCode::Data(Data::Text),
        true,
    ));
    let oversized = Message::text(format!("{{\"pad\":\"{}\"}}", "x".repeat(8192)));
    for (what, message, code) in [
        ("not UTF-8", not_utf8, 1007),
        ("oversized", oversized, 1009),
    ] {
        let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
        let _ = ws.stream.send(message).await;
        assert_eq!(ws.close_code().await, Some(code), "{what}");
        let mut other = Ws::hello(&relay, "consumer", json!({})).await;
        other.assert_pong_next(what).await;
    }
    relay.shutdown().await.unwrap();
}
