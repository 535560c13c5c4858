//! Durable replay (`--data-dir`): a session's buffer survives a restart.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test
mod common;

use common::*;
use serde_json::{json, Value};

struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!("aep-relay-test-{}", id()));
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn resume_after_a_restart_loses_nothing_that_fit_in_the_buffer() {
    let dir = TempDir::new();
    let (a, b) = (session(), session());
    let batch: Vec<Value> = (0..12).map(|i| ev("progress.status", &a, i)).collect();
    {
        let relay = builder().data_dir(&dir.0).start().await.unwrap();
        post_ndjson(&relay, &batch).await;
        post_json(&relay, &ev("session.started", &b, 0)).await;
        post_json(&relay, &batch[11]).await; // a duplicate: admitted once
        relay.shutdown().await.unwrap();
    }
    let relay = builder().data_dir(&dir.0).start().await.unwrap();
    let got = replay(&relay, "from=all").await;
    let lines: Vec<String> = got.iter().filter_map(|m| m.data.clone()).collect();
    let session_of = |l: &String| serde_json::from_str::<Value>(l).unwrap()["session"].clone();
    let of_a: Vec<String> = lines
        .iter()
        .filter(|l| session_of(l) == json!(a))
        .cloned()
        .collect();
    let of_b: Vec<String> = lines
        .iter()
        .filter(|l| session_of(l) == json!(b))
        .cloned()
        .collect();
    let expected: Vec<String> = batch[4..].iter().map(Value::to_string).collect();
    assert_eq!(of_a, expected, "a's buffer, byte-identical, deduped");
    assert_eq!(of_b.len(), 1);
    // exhaustion is declared against what survived
    let from = q(&json!([{ "session": a, "epoch": 0, "seq": 0 }]));
    let got = replay(&relay, &format!("from={from}")).await;
    assert_eq!(got[0].comments, vec![format!("replay-exhausted {a} 0:4")]);
    // and the log keeps growing after the restart
    post_json(&relay, &ev("progress.status", &a, 12)).await;
    relay.shutdown().await.unwrap();
    let relay = builder().data_dir(&dir.0).start().await.unwrap();
    let from = q(&json!([{ "session": a, "epoch": 0, "seq": 11 }]));
    let got = replay(&relay, &format!("from={from}")).await;
    let seqs: Vec<u64> = got
        .iter()
        .filter(|m| m.data.is_some())
        .map(|m| m.json()["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![12]);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_evicted_session_does_not_come_back() {
    let dir = TempDir::new();
    let (a, b) = (session(), session());
    {
        let relay = builder()
            .max_sessions(1)
            .data_dir(&dir.0)
            .start()
            .await
            .unwrap();
        post_json(&relay, &ev("session.started", &a, 0)).await;
        post_json(&relay, &ev("session.started", &b, 0)).await; // evicts a
        relay.shutdown().await.unwrap();
    }
    let relay = builder()
        .max_sessions(1)
        .data_dir(&dir.0)
        .start()
        .await
        .unwrap();
    let got = replay(&relay, "from=all").await;
    let sessions: Vec<Value> = got
        .iter()
        .filter(|m| m.data.is_some())
        .map(|m| m.json()["session"].clone())
        .collect();
    assert_eq!(sessions, vec![json!(b)]);
    relay.shutdown().await.unwrap();
}

/// Events that arrive over a WebSocket are journaled as the HTTP ones are, whichever way
/// the relay read them: in place, parsed for an escape, or with line breaks between
/// tokens (which are dropped from what is stored, AEP-0003 §3.3).
#[tokio::test]
async fn events_ingested_over_a_websocket_survive_a_restart_as_stored() {
    let dir = TempDir::new();
    let s = session();
    let plain = ev("session.started", &s, 0).to_string();
    // an escape in an envelope attribute: the in-place reading hands it to the parse
    let with_escape = ev("progress.status", &s, 1)
        .to_string()
        .replace("\"agent\":\"a\"", "\"agent\":\"\\u0061\"");
    assert!(with_escape.contains(r#""agent":"\u0061""#));
    let broken = ev("progress.status", &s, 2)
        .to_string()
        .replacen(',', ",\r\n", 2);
    let stored = [
        plain.clone(),
        with_escape.clone(),
        broken.replace("\r\n", ""),
    ];
    let held =
        |got: &[SseMessage]| -> Vec<String> { got.iter().filter_map(|m| m.data.clone()).collect() };
    let from = format!("from={}", q(&json!([{ "session": s }])));
    {
        let relay = builder().data_dir(&dir.0).start().await.unwrap();
        let mut producer = Ws::hello(&relay, "emitter", json!({})).await;
        for text in [&plain, &with_escape, &broken] {
            producer.send_text(text).await;
        }
        let mut got = Vec::new();
        for _ in 0..200 {
            got = held(&replay(&relay, &from).await);
            if got.len() == stored.len() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(got, stored, "held as stored before the restart");
        relay.shutdown().await.unwrap();
    }
    let relay = builder().data_dir(&dir.0).start().await.unwrap();
    assert_eq!(
        held(&replay(&relay, &from).await),
        stored,
        "and replayed byte-identically after it"
    );
    relay.shutdown().await.unwrap();
}
