//! `GET /stream` (AEP-0003 §3.3): filter, capture, `from` positions and `all`,
//! `Last-Event-ID`, `live=0`, `replay-exhausted`, `id:` lines, heartbeats, `MAX_FROM`.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn live_fan_out_applies_the_filter_and_writes_event_and_id_lines() {
    let relay = relay().await;
    let s = session();
    let filter = json!({ "session": s, "type": ["tool.*", "session.started"] });
    let mut sse = Sse::open(&relay, &format!("filter={}", q(&filter))).await;
    let events = vec![
        ev("session.started", &s, 0),
        ev("progress.status", &s, 1),
        with(ev("tool.completed", &s, 2), "epoch", json!(3)),
        ev("tool.completed", &session(), 0),
    ];
    assert_eq!(post_ndjson(&relay, &events).await.status(), 202);
    let first = sse.next_event().await.unwrap();
    assert_eq!(first.event.as_deref(), Some("session.started"));
    assert_eq!(first.id, Some(format!("{s}:0:0")));
    assert_eq!(first.data.as_deref(), Some(events[0].to_string().as_str()));
    let second = sse.next_event().await.unwrap();
    assert_eq!(second.id, Some(format!("{s}:3:2")));
    assert_eq!(second.json()["id"], events[2]["id"]);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn agent_scoped_events_carry_no_id_line() {
    let relay = relay().await;
    let mut sse = Sse::open(&relay, "").await;
    let mut hb = ev("agent.heartbeat", "x", 0);
    let o = hb.as_object_mut().unwrap();
    o.remove("session");
    o.remove("seq");
    assert_eq!(post_json(&relay, &hb).await.status(), 202);
    let got = sse.next_event().await.unwrap();
    assert_eq!(got.event.as_deref(), Some("agent.heartbeat"));
    assert_eq!(got.id, None);
    // live only: never buffered
    assert_nothing_held(&relay).await;
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_filter_capture_and_from_are_refused_400() {
    let relay = relay().await;
    for (query, why) in [
        ("filter=%7Bnope".to_owned(), "bad filter JSON"),
        (
            format!("filter={}", q(&json!({ "seq": 1 }))),
            "not filterable",
        ),
        (
            format!("filter={}", q(&json!({ "Bad-Key": 1 }))),
            "unknown filter key",
        ),
        (
            format!("filter={}", q(&json!({ "type": "tool*" }))),
            "pattern",
        ),
        ("capture=secret".to_owned(), "capture"),
        ("from=%7B%7D".to_owned(), "bad from JSON"),
        ("from=%5Bnope".to_owned(), "bad from JSON"),
        (
            format!("from={}", q(&json!([{ "epoch": 0 }]))),
            "resume position",
        ),
    ] {
        let r = get(relay.url(), &format!("/stream?{query}")).await;
        assert_eq!(r.status(), 400, "{query}");
        assert_eq!(r.headers()["access-control-allow-origin"], "*");
        let text = r.text().await.unwrap();
        assert!(text.contains(why), "{query}: {text}");
    }
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn max_from_is_enforced() {
    let relay = builder().max_from(2).start().await.unwrap();
    let from: Vec<Value> = (0..3)
        .map(|i| json!({ "session": format!("s{i}"), "epoch": 0, "seq": 0 }))
        .collect();
    let r = get(
        relay.url(),
        &format!("/stream?live=0&from={}", q(&json!(from))),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.text().await.unwrap(), "from too large");
    let ok = replay(&relay, &format!("from={}", q(&json!(from[..2])))).await;
    assert!(ok
        .last()
        .unwrap()
        .comments
        .contains(&"replay-complete".to_owned()));
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn capture_ceiling_down_levels_and_never_up_levels() {
    let relay = relay().await;
    let s = session();
    let mut sse = Sse::open(
        &relay,
        &format!("capture=metadata&filter={}", q(&json!({ "session": s }))),
    )
    .await;
    let secret = with(
        with(ev("run.started", &s, 0), "capture", json!("redacted")),
        "data",
        json!({ "trigger": "user", "prompt": "CANARY do not deliver" }),
    );
    let plain = with(ev("run.started", &s, 1), "capture", json!("none"));
    post_ndjson(&relay, &[secret, plain.clone()]).await;
    let got = sse.next_event().await.unwrap();
    assert!(!got.data.as_ref().unwrap().contains("CANARY"));
    assert_eq!(got.json()["capture"], "metadata");
    let got = sse.next_event().await.unwrap();
    assert_eq!(
        got.data.as_deref(),
        Some(plain.to_string().as_str()),
        "never up-leveled"
    );
    // the ceiling holds on replay too
    let replayed = replay(
        &relay,
        &format!("capture=none&from={}", q(&json!([{ "session": s }]))),
    )
    .await;
    let first = replayed.iter().find(|m| m.data.is_some()).unwrap();
    assert_eq!(first.json()["capture"], "none");
    assert!(first.json().get("data").is_none());
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn from_positions_replay_strictly_after_then_go_live() {
    let relay = relay().await;
    let (a, b) = (session(), session());
    post_ndjson(
        &relay,
        &[
            ev("session.started", &a, 0),
            ev("progress.status", &a, 1),
            ev("session.started", &b, 0),
        ],
    )
    .await;
    let from =
        json!([{ "session": a, "epoch": 0, "seq": 0 }, { "session": b, "epoch": 0, "seq": -1 }]);
    let mut sse = Sse::open(&relay, &format!("from={}", q(&from))).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        ids.push(sse.next_event().await.unwrap().id.unwrap());
    }
    assert_eq!(ids, vec![format!("{a}:0:1"), format!("{b}:0:0")]);
    post_json(&relay, &ev("progress.status", &a, 2)).await;
    assert_eq!(sse.next_event().await.unwrap().id, Some(format!("{a}:0:2")));
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn last_event_id_resumes_and_from_takes_precedence() {
    let (relay, s, _) = relay_holding(4).await;
    let mut sse = Sse::open_with(&relay, "", &[("last-event-id", &format!("{s}:0:2"))]).await;
    assert_eq!(sse.next_event().await.unwrap().id, Some(format!("{s}:0:3")));
    let got = Sse::open_with(
        &relay,
        &format!("live=0&{}", from_after(&s, 0, 0)),
        &[("last-event-id", &format!("{s}:0:2"))],
    )
    .await
    .read_to_end()
    .await;
    assert_eq!(data(&got).len(), 3);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn live_0_ends_with_replay_complete_and_serves_the_filtered_session() {
    let relay = relay().await;
    let s = session();
    post_ndjson(
        &relay,
        &[ev("session.started", &s, 0), ev("progress.status", &s, 1)],
    )
    .await;
    let got = replay(&relay, &only(&s)).await;
    assert_eq!(data(&got).len(), 2);
    assert_eq!(
        got.last().unwrap().comments,
        vec!["replay-complete".to_owned()]
    );
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn eviction_is_declared_with_replay_exhausted_before_delivery() {
    let relay = relay().await; // buffer 8
    let s = session();
    let batch: Vec<Value> = (0..12)
        .map(|i| with(ev("progress.status", &s, i), "epoch", json!(1)))
        .collect();
    post_ndjson(&relay, &batch).await;
    let got = replay(&relay, &from_after(&s, 1, 0)).await;
    assert_eq!(got[0].comments, vec![format!("replay-exhausted {s} 1:4")]);
    assert_eq!(seqs(&got), (4..12).collect::<Vec<_>>());
    // no gap, no marker
    let got = replay(&relay, &from_after(&s, 1, 3)).await;
    assert!(got[0].comments.is_empty());
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn from_all_replays_every_held_session_without_markers() {
    let relay = relay().await;
    let (a, b) = (session(), session());
    let mut batch: Vec<Value> = (0..10).map(|i| ev("progress.status", &a, i)).collect();
    batch.push(ev("session.started", &b, 0));
    post_ndjson(&relay, &batch).await;
    let got = replay(&relay, "from=all").await;
    assert!(got
        .iter()
        .all(|m| !m.comments.iter().any(|c| c.starts_with("replay-exhausted"))));
    let ids: Vec<String> = got.iter().filter_map(|m| m.id.clone()).collect();
    let expected: Vec<String> = (2..10)
        .map(|i| format!("{a}:0:{i}"))
        .chain([format!("{b}:0:0")])
        .collect();
    assert_eq!(ids, expected);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn idle_streams_get_ping_heartbeats() {
    let relay = builder()
        .heartbeat(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let mut sse = Sse::open(&relay, "").await;
    let msg = sse.next().await.unwrap();
    assert_eq!(msg.comments, vec!["ping".to_owned()]);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_reader_that_keeps_up_gets_every_event() {
    // tiny bounds: without the lag grace this reader would lose most info events
    let config = aep_relay::RelayConfig::default()
        .with_token(TOKEN)
        .with_soft_backpressure(8 * 1024)
        .with_hard_backpressure(64 * 1024);
    let relay = aep_relay::Relay::builder()
        .config(config)
        .start()
        .await
        .unwrap();
    let s = session();
    let mut sse = Sse::open(&relay, &only(&s)).await;
    let reader = tokio::spawn(async move {
        let mut n = 0u64;
        while let Some(m) = sse.next_event().await {
            assert_eq!(m.json()["seq"].as_u64(), Some(n));
            n += 1;
            if n == 5000 {
                break;
            }
        }
        n
    });
    for chunk in 0..5u64 {
        let batch: Vec<Value> = (chunk * 1000..(chunk + 1) * 1000)
            .map(|i| ev("progress.status", &s, i))
            .collect();
        assert_eq!(post_ndjson(&relay, &batch).await.status(), 202);
    }
    assert_eq!(reader.await.unwrap(), 5000);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn replay_with_an_attribute_filter_sends_exactly_the_matching_stored_bytes() {
    // The replay decides such a filter on the stored bytes without parsing them
    // (`Filter::decide_json`), or parses them when it cannot: escapes and extension values
    // must still decide right.
    let relay = relay().await;
    let s = session();
    let events = vec![
        with(ev("tool.called", &s, 0), "severity", json!("notice")),
        with(ev("tool.called", &s, 1), "severity", json!("info")),
        with(ev("progress.status", &s, 2), "severity", json!("error")),
        with(ev("tool.completed", &s, 3), "severity", json!("error")),
        with(ev("tool.completed", &s, 4), "acmenote", json!("a\"b")),
        with(
            with(ev("tool.completed", &s, 5), "severity", json!("warning")),
            "acmenote",
            json!("a\"b"),
        ),
    ];
    assert_eq!(post_ndjson(&relay, &events).await.status(), 202);
    let filter = json!({ "session": s, "type": "tool.*", "severity": { "gte": "notice" } });
    let got = replay(&relay, &format!("from=all&filter={}", q(&filter))).await;
    let want: Vec<_> = [0, 3, 5].iter().map(|&i| events[i].to_string()).collect();
    assert_eq!(data(&got), want);
    let by_ext = json!({ "acmenote": "a\"b" });
    let got = replay(&relay, &format!("from=all&filter={}", q(&by_ext))).await;
    assert_eq!(seqs(&got), vec![4, 5]);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn replay_under_an_attribute_filter_keeps_events_only_a_parse_can_decide() {
    // An accepted event's `data` may hold what a JSON value cannot (an exponent past f64,
    // a lone surrogate), and a named attribute may be spelled with escapes: the replay
    // must send the same events as live delivery would, decided on the parsed event.
    let relay = relay().await;
    let s = session();
    let line = |seq: u64, agent: &str, data: &str| {
        format!(
            r#"{{"aep":"0.1","id":"{}","type":"tool.called","time":"2026-07-03T10:15:04.221Z","source":"aep://test/agent/a/session/{s}","agent":"{agent}","session":"{s}","seq":{seq},"data":{data}}}"#,
            id()
        )
    };
    let body = [
        line(0, "a", r#"{"n":1}"#),
        line(1, "a", r#"{"n":1e400}"#),
        line(2, r"\u0061", r#"{"n":1}"#),
        line(3, r"\u0061", r#"{"n":1e400}"#),
        line(4, r"\u0061", r#"{"t":"\udcff"}"#),
        line(5, "b", r#"{"n":1}"#),
    ]
    .join("\n");
    let res = post(relay.url(), "0.1", "application/x-ndjson", body).await;
    assert_eq!(res.unwrap().status(), 202);
    let filter = json!({ "session": s, "agent": "a" });
    let got = replay(&relay, &format!("from=all&filter={}", q(&filter))).await;
    let seqs: Vec<_> = got
        .iter()
        .filter_map(|m| m.data.as_deref())
        .map(|d| {
            let at = d.find(r#""seq":"#).unwrap() + 6;
            d[at..].split(',').next().unwrap().parse::<u64>().unwrap()
        })
        .collect();
    assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
    relay.shutdown().await.unwrap();
}
