//! Subscribing with a subscription-model filter (`SubscribeOptions::subscription_filter`)
//! against real relays, over SSE and WebSocket: the lowered attr-match half goes on the
//! wire, the residual is applied locally, and the stream holds exactly what the filter
//! matches. Runs against the reference relay (Node, started on a free port and killed
//! after) and against the Rust relay.
#![cfg(all(feature = "sse", feature = "ws"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use aep_async::{Client, SubscribeOptions, Transport};
use aep_core::subscription::{Field, SubscriptionFilter, TOPIC_ATTR};
use aep_test_support::events::{json_event, with};
use aep_test_support::http::post_ndjson;
use common::{ReferenceRelay, Relay, RelayConfig};
use futures::StreamExt;
use serde_json::{json, Value};

const TOKEN: &str = "t";
const PATIENCE: Duration = Duration::from_secs(30);

fn event(id: &str, ty: &str, session: &str, seq: u64, topic: Option<&str>) -> Value {
    let e = with(json_event(ty, session, seq), "id", json!(id));
    match topic {
        Some(topic) => with(e, TOPIC_ATTR, json!(topic)),
        None => e,
    }
}

/// `tool.*.progress` or `run.*`, on topic `tasks.t1`: an inner `*` the wire cannot say,
/// a trailing `.*` it can, and an extension-mapped field.
fn filter() -> SubscriptionFilter {
    SubscriptionFilter::new()
        .with_types(["tool.*.progress", "run.*"])
        .unwrap()
        .with(Field::Topic, "tasks.t1")
        .unwrap()
}

fn events(session: &str) -> Vec<Value> {
    let t1 = Some("tasks.t1");
    vec![
        event("e1", "tool.call.progress", session, 1, t1),
        event("e2", "tool.call.started", session, 2, t1),
        event("e3", "tool.any.progress", session, 3, Some("tasks.t2")),
        event("e4", "run.started", session, 4, t1),
        event("e5", "tool.progress", session, 5, t1),
        event("e6", "run.step.completed", session, 6, t1),
        event("e7", "tool.call.progress", session, 7, None),
        event("e8", "tool.x.y.progress", session, 8, t1),
        event("e9", "run.completed", session, 9, t1),
    ]
}

/// The embedded Rust relay with the test's token.
async fn rust_relay() -> aep_relay::RelayHandle {
    common::token_relay(TOKEN).await
}

const EXPECTED: [&str; 4] = ["e1", "e4", "e6", "e9"];

async fn post(url: &str, events: &[Value]) {
    let status = post_ndjson(url, TOKEN, events).await.status();
    assert!(status.is_success(), "ingest refused: {status}");
}

/// Emits the first half of the mix, subscribes from the start of the session (a
/// `from_cursor`, so nothing is lost to the race with the subscription's start), and once
/// the first match has arrived emits the rest live. Returns the ids the stream yields up
/// to the last expected one.
async fn run(url: &str, transport: Transport, session: &str) -> Vec<String> {
    let all = events(session);
    let (history, live) = all.split_at(4);
    post(url, history).await;
    let options = SubscribeOptions::new()
        .transport(transport)
        .subscription_filter(&filter().with_from_cursor(format!("{session}:0:0")))
        .unwrap();
    let mut sub = Client::new(url).token(TOKEN).subscribe(options);
    let mut got = Vec::new();
    while got.last().map(String::as_str) != EXPECTED.last().copied() {
        let e = tokio::time::timeout(PATIENCE, sub.next())
            .await
            .expect("the next matching event")
            .expect("stream open");
        if got.is_empty() {
            post(url, live).await;
        }
        got.push(e.id().to_owned());
    }
    sub.close();
    got
}

#[test]
fn the_expected_set_is_the_filters_own_verdict() {
    let matched: Vec<String> = events("s")
        .iter()
        .map(|v| aep_core::Event::from_value(v).unwrap())
        .filter(|e| filter().matches(e))
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(matched, EXPECTED);
    // and the residual is really needed: the wire half alone lets more through
    let lowered = filter().lower();
    assert!(!lowered.residual().is_trivial());
    assert_eq!(
        lowered.wire().to_value(),
        json!({ "type": ["tool.*", "run.*"], TOPIC_ATTR: "tasks.t1" })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_the_reference_relay_over_sse_and_websocket() {
    if ReferenceRelay::skip() {
        return;
    }
    let relay = ReferenceRelay::start(RelayConfig {
        token: Some(TOKEN.into()),
        ..RelayConfig::default()
    })
    .await;
    let url = relay.url();
    assert_eq!(run(&url, Transport::Sse, "s-ref-sse").await, EXPECTED);
    assert_eq!(run(&url, Transport::WebSocket, "s-ref-ws").await, EXPECTED);
    // a from_cursor becomes the resume position: the rest of the history after e4
    for transport in [Transport::Sse, Transport::WebSocket] {
        let f = filter().with_from_cursor("s-ref-sse:0:4");
        let opts = SubscribeOptions::new()
            .transport(transport)
            .subscription_filter(&f)
            .unwrap();
        let mut sub = Client::new(&url).token(TOKEN).subscribe(opts);
        for want in ["e6", "e9"] {
            let e = tokio::time::timeout(PATIENCE, sub.next())
                .await
                .expect("a replayed event")
                .unwrap();
            assert_eq!(e.id(), want);
        }
    }
    // an attr-match filter set afterwards drops the residual
    let opts = SubscribeOptions::new()
        .subscription_filter(&filter())
        .unwrap()
        .filter(json!({ "session": "s-ref-sse" }))
        .from_positions(vec![aep_async::ResumePosition::new("s-ref-sse", 0, 0)]);
    let mut sub = Client::new(&url).token(TOKEN).subscribe(opts);
    for want in ["e1", "e2", "e3"] {
        let e = tokio::time::timeout(PATIENCE, sub.next())
            .await
            .expect("a replayed event")
            .unwrap();
        assert_eq!(e.id(), want);
    }
    drop(relay);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_the_rust_relay_over_sse_and_websocket() {
    let relay = rust_relay().await;
    let url = relay.url().to_owned();
    assert_eq!(run(&url, Transport::Sse, "s-rust-sse").await, EXPECTED);
    assert_eq!(run(&url, Transport::WebSocket, "s-rust-ws").await, EXPECTED);
    relay.shutdown().await.unwrap();
}

/// The Rust relay's lifecycle surface from the consumer side: the same filter, answered
/// with `subscription.created`, deliveries with the effective mode, a rejection naming
/// the field, `from_cursor` replay, and a confirmed cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_the_rust_relays_lifecycle_surface() {
    use aep_async::lifecycle::Ended;
    use aep_async::lifecycle::SubscribeError;
    use aep_core::subscription::DeliveryMode;

    let relay = rust_relay().await;
    let url = relay.url().to_owned();
    let conn = Client::new(&url).token(TOKEN).lifecycle().await.unwrap();

    let rejected = conn
        .subscribe(
            &SubscriptionFilter::new()
                .with(Field::SessionId, "s")
                .unwrap(),
        )
        .await
        .unwrap_err();
    let SubscribeError::Rejected(rejected) = rejected else {
        panic!("{rejected}")
    };
    assert!(
        rejected.message().contains("types"),
        "{}",
        rejected.message()
    );

    let mut sub = conn
        .subscribe(&filter().with_delivery_mode(DeliveryMode::AtLeastOnce))
        .await
        .unwrap();
    assert_eq!(sub.id(), "sub_0002");
    post(&url, &events("s-life")).await;
    let mut got = Vec::new();
    while got.len() < EXPECTED.len() {
        let d = tokio::time::timeout(PATIENCE, sub.next())
            .await
            .expect("a delivery")
            .expect("stream open");
        assert_eq!(d.mode(), DeliveryMode::AtLeastOnce);
        assert_eq!(d.subscription_id(), "sub_0002");
        got.push(d.event().id().to_owned());
    }
    assert_eq!(got, EXPECTED);

    // replay from the cursor of e4: the rest of the matching history, then live
    let mut replay = conn
        .subscribe(
            &filter()
                .with_from_cursor("s-life:0:4")
                .with_delivery_mode(DeliveryMode::Replayable),
        )
        .await
        .unwrap();
    for want in ["e6", "e9"] {
        let d = tokio::time::timeout(PATIENCE, replay.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((d.event().id(), d.mode()), (want, DeliveryMode::Replayable));
    }

    let confirmed = sub.cancel().await.unwrap();
    assert_eq!(confirmed.subscription_id(), "sub_0002");
    assert!(sub.next().await.is_none());
    assert_eq!(sub.ended(), Some(Ended::Cancelled));
    // closing the connection (the session) ends the rest
    drop(conn);
    assert!(replay.next().await.is_none());
    assert_eq!(replay.ended(), Some(Ended::SessionClosed));
    relay.shutdown().await.unwrap();
}

/// An expiry on the relay ends the remote subscriber with `Ended::Expired`, and a
/// cancel after it has nothing to confirm.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_expiry_ends_the_remote_subscriber() {
    use aep_async::lifecycle::Ended;

    let config = aep_relay::RelayConfig::default()
        .with_token(TOKEN)
        .with_subscription_ttl(Duration::from_millis(200));
    let relay = aep_relay::Relay::builder()
        .config(config)
        .start()
        .await
        .unwrap();
    let conn = Client::new(relay.url())
        .token(TOKEN)
        .lifecycle()
        .await
        .unwrap();
    let mut sub = conn.subscribe(&filter()).await.unwrap();
    assert!(sub.created().expires_at().is_some());
    let end = tokio::time::timeout(PATIENCE, sub.next()).await.unwrap();
    assert!(end.is_none());
    assert_eq!(sub.ended(), Some(Ended::Expired));
    assert!(sub.cancel().await.is_none());
    drop(conn);
    relay.shutdown().await.unwrap();
}
