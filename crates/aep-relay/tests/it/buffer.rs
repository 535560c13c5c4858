//! Per-session replay buffers (AEP-0003 §5): `(source, id)` admission dedupe while live
//! fan-out forwards as received, LRU session eviction.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use common::*;
use serde_json::json;

#[tokio::test]
async fn admission_dedupes_but_live_fan_out_forwards_as_received() {
    let relay = relay().await;
    let s = session();
    let mut sse = Sse::open(&relay, &only(&s)).await;
    let event = ev("session.started", &s, 0);
    post_json(&relay, &event).await;
    post_json(&relay, &event).await;
    assert_eq!(sse.next_event().await.unwrap().json()["id"], event["id"]);
    assert_eq!(sse.next_event().await.unwrap().json()["id"], event["id"]);
    assert_eq!(data(&replay(&relay, &from(&s)).await).len(), 1);
    // the same id from another source is another event (AEP-0001 §7.4)
    let other = with(event.clone(), "source", json!("aep://elsewhere/agent/b"));
    post_json(&relay, &with(other, "seq", json!(1))).await;
    assert_eq!(data(&replay(&relay, &from(&s)).await).len(), 2);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn least_recently_written_session_is_evicted() {
    let relay = builder().max_sessions(2).start().await.unwrap();
    let (a, b, c) = (session(), session(), session());
    post_json(&relay, &ev("session.started", &a, 0)).await;
    post_json(&relay, &ev("session.started", &b, 0)).await;
    post_json(&relay, &ev("progress.status", &a, 1)).await; // a is now the most recent
    post_json(&relay, &ev("session.started", &c, 0)).await; // evicts b
    let all = replay(&relay, "from=all").await;
    let sessions: Vec<String> = all
        .iter()
        .filter(|m| m.data.is_some())
        .map(|m| m.json()["session"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sessions, vec![a.clone(), a, c]);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn out_of_order_events_replay_in_position_order() {
    let relay = relay().await;
    let s = session();
    let shuffled = [2, 0, 1].map(|seq| ev("progress.status", &s, seq));
    post_ndjson(&relay, &shuffled).await;
    assert_eq!(seqs(&replay(&relay, &from(&s)).await), vec![0, 1, 2]);
    relay.shutdown().await.unwrap();
}
