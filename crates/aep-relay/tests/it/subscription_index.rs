//! Subscriptions that scale (issue 32, point 4): fan-out offers an event only to the
//! subscriptions filed under what it carries, and loses nothing by it; a relay-wide
//! bound on live subscriptions refuses each binding the protocol's way.

use crate::common;

use aep_core::filter::Filter;
use aep_core::Event;
use common::*;
use serde_json::{json, Value};

/// Every stream gets exactly the events its filter takes, in the order they were
/// posted, whatever its filter pins (a session, several, an agent, a type category)
/// or pins nothing; with the session-only streams alone (events kept as bytes) and with
/// every kind at once (events kept parsed).
#[tokio::test]
async fn every_subscription_gets_what_its_filter_takes_in_order_whatever_it_pins() {
    let relay = relay().await;
    let (s1, s2, s3) = (session(), session(), session());
    let session_only = [json!({ "session": s1 }), json!({ "session": s2 })];
    let mixed = [
        json!({ "session": [s1, s3] }),
        json!({ "session": s2, "type": "tool.*" }),
        json!({ "agent": "b" }),
        json!({ "agent": ["a", "c"], "severity": { "gte": "notice" } }),
        json!({ "type": ["tool.*", "attention.requested"] }),
        json!({ "type": "x.acme.*" }),
        json!({ "severity": "error" }),
        json!({}),
    ];
    let types = [
        "tool.called",
        "attention.requested",
        "progress.status",
        "x.acme.synced",
    ];
    let severities = ["info", "notice", "error"];
    let mut seq = [0u64; 3];
    let mut batch = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| {
                let at = i % 3;
                let s = [&s1, &s2, &s3][at];
                let event = ev(types[i % types.len()], s, seq[at]);
                seq[at] += 1;
                let event = with(event, "agent", json!(["a", "b", "c"][i % 3 / 2 + i % 2]));
                with(event, "severity", json!(severities[i % severities.len()]))
            })
            .collect()
    };
    for filters in [&session_only[..], &[&session_only[..], &mixed[..]].concat()] {
        let mut streams = Vec::new();
        for filter in filters {
            let stream = Sse::open(&relay, &format!("filter={}", q(filter))).await;
            streams.push((Filter::from_value(filter).unwrap(), stream));
        }
        let events = batch(36);
        assert_eq!(post_ndjson(&relay, &events).await.status(), 202);
        for (filter, stream) in &mut streams {
            let want: Vec<&Value> = events
                .iter()
                .filter(|e| filter.matches(&Event::from_value(e).unwrap()))
                .map(|e| &e["id"])
                .collect();
            assert!(
                !want.is_empty(),
                "{filter}: the batch holds events it takes"
            );
            let mut got = Vec::new();
            while got.len() < want.len() {
                let message = stream.next_event().await;
                let message = message.unwrap_or_else(|| panic!("{filter}: got only {got:?}"));
                got.push(message.json()["id"].clone());
            }
            assert_eq!(got.iter().collect::<Vec<_>>(), want, "{filter}");
        }
    }
    relay.shutdown().await.unwrap();
}

/// Past `--max-relay-subscriptions`, every binding's next live subscription is refused
/// its way (a `subscribe` with `limit-exceeded`, a `subscription.requested` rejected
/// with it, `GET /stream` with `503` and `Retry-After`), each counted in `/healthz`;
/// a replay-only stream and a `subscribe` re-using an id still go through, what is held
/// still delivers, and one freed is one more allowed.
#[tokio::test]
async fn the_relay_wide_bound_refuses_each_binding_its_way_and_counts_it() {
    let config = config().with_max_relay_subscriptions(3);
    let relay = builder().config(config).start().await.unwrap();
    let s = session();
    let mut sse = Sse::open(&relay, &only(&s)).await;
    let mut ws = Ws::hello(&relay, "consumer", json!({})).await;
    let subscribe =
        |id: &str, filter: Value| json!({ "type": "subscribe", "id": id, "filter": filter });
    ws.send(&subscribe("a", json!({ "type": "x.*" }))).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "subscribed");
    ws.send(&subscribe("b", json!({ "agent": "a" }))).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "subscribed");

    // the relay holds 3: each binding is refused its way
    ws.send(&subscribe("c", json!({}))).await;
    let refusal = ws.recv().await.unwrap();
    assert_eq!(
        (&refusal["type"], &refusal["code"], &refusal["id"]),
        (&json!("error"), &json!("limit-exceeded"), &json!("c")),
        "{refusal}"
    );
    let detail = refusal["detail"].as_str().unwrap();
    assert!(detail.contains("AEP_MAX_RELAY_SUBSCRIPTIONS=3"), "{detail}");
    let request = json!({ "type": "subscription.requested", "payload": { "types": ["x.*"] } });
    ws.send(&request).await;
    let rejected = ws.recv().await.unwrap();
    assert_eq!(rejected["type"], "subscription.rejected", "{rejected}");
    assert_eq!(rejected["payload"]["error"]["code"], "limit-exceeded");
    let stream = get(relay.url(), &format!("/stream?{}", only(&s))).await;
    assert_eq!(stream.status(), 503);
    assert!(stream.headers().contains_key("retry-after"));
    let answer = body(stream).await;
    assert_eq!(answer["error"], "limit-exceeded", "{answer}");
    assert!(answer["detail"]
        .as_str()
        .unwrap()
        .contains("AEP_MAX_RELAY_SUBSCRIPTIONS=3"));
    let health = get_json(relay.url(), "/healthz").await;
    assert_eq!(
        (
            &health["refused_subscriptions"],
            &health["max_subscriptions"],
            &health["subscribers"]
        ),
        (&json!(3), &json!(3), &json!(3)),
        "{health}"
    );

    // a replay holds no live subscription; re-using an id replaces, adding none
    assert!(data(&replay(&relay, &from(&s)).await).is_empty());
    ws.send(&subscribe("a", json!({ "type": "x.*" }))).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "subscribed");

    // what is held still delivers: the stream once, the socket once per subscription
    assert_eq!(
        post_json(&relay, &ev("x.happened", &s, 0)).await.status(),
        202
    );
    assert_eq!(sse.next_event().await.unwrap().json()["type"], "x.happened");
    for _ in 0..2 {
        assert_eq!(ws.recv().await.unwrap()["type"], "x.happened");
    }

    // one freed is one more allowed
    ws.send(&json!({ "type": "unsubscribe", "id": "b" })).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "unsubscribed");
    ws.send(&subscribe("c", json!({}))).await;
    assert_eq!(ws.recv().await.unwrap()["type"], "subscribed");
    relay.shutdown().await.unwrap();
}
