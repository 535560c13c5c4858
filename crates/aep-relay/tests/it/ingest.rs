//! `POST /events` (AEP-0003 §3.2): the version gate, content types, single and batch
//! ingest, envelope validation, the body and batch caps, batches refused whole.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use std::io::{Read, Write};

use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn version_gate_answers_426_with_versions() {
    let relay = relay().await;
    let event = ev("session.started", "s", 0).to_string();
    let r = post(relay.url(), "9.9", "application/json", event)
        .await
        .unwrap();
    assert_eq!(r.status(), 426);
    let body = body(r).await;
    assert_eq!(body, json!({ "versions": ["0.1"] }));
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn wrong_content_type_is_415() {
    let relay = relay().await;
    let event = ev("session.started", "s", 0).to_string();
    let r = post(relay.url(), "0.1", "text/plain", event).await.unwrap();
    assert_eq!(r.status(), 415);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn single_json_and_ndjson_batch_are_accepted_in_order() {
    let relay = relay().await;
    let s = started_session(&relay).await;
    let batch: Vec<Value> = (1..4).map(|i| ev("progress.status", &s, i)).collect();
    assert_eq!(post_ndjson(&relay, &batch).await.status(), 202);
    let got = replay(&relay, &only(&s)).await;
    assert_eq!(seqs(&got), vec![0, 1, 2, 3]);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn invalid_envelope_refuses_the_batch_whole_with_the_failing_line() {
    let relay = relay().await;
    let s = session();
    let mut bad = ev("progress.status", &s, 1);
    bad.as_object_mut().unwrap().remove("id");
    let r = post_ndjson(&relay, &[ev("progress.status", &s, 0), bad]).await;
    assert_eq!(r.status(), 400);
    let body = body(r).await;
    assert_eq!(body["error"], "invalid-event");
    assert_eq!(body["line"], 1);
    assert!(body["detail"].is_string());
    // nothing of the batch was ingested, not even the valid line before the bad one
    let got = replay(&relay, &only(&s)).await;
    assert!(data(&got).is_empty(), "{got:?}");
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn envelope_rules_are_enforced() {
    let relay = relay().await;
    let s = session();
    for bad in [
        with(ev("progress.status", &s, 0), "aep", json!("9.9")),
        with(ev("Bad.Type", &s, 0), "seq", json!(0)),
        ev("agent.heartbeat", &s, 0),
        with(command("control.pause", &s), "seq", json!(3)),
        with(ev("progress.status", &s, 0), "severity", json!("loud")),
    ] {
        let r = post_json(&relay, &bad).await;
        assert_eq!(r.status(), 400, "{bad}");
        let body = body(r).await;
        assert_eq!(body["error"], "invalid-event", "{bad}");
    }
    let mut no_seq = ev("progress.status", &s, 0);
    no_seq.as_object_mut().unwrap().remove("seq");
    assert_eq!(post_json(&relay, &no_seq).await.status(), 400);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn malformed_json_is_400_invalid_json() {
    let relay = relay().await;
    let r = post(relay.url(), "0.1", "application/x-ndjson", "{\"aep\":\n")
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body = body(r).await;
    assert_eq!(body["error"], "invalid-json");
    relay.shutdown().await.unwrap();
}

/// A line break is whitespace between JSON tokens, and is dropped from what is stored
/// (an SSE `data:` line cannot hold one); inside a string it is not JSON at all.
#[tokio::test]
async fn line_breaks_between_tokens_are_read_and_inside_strings_refused() {
    let relay = relay().await;
    let s = session();
    let pretty = serde_json::to_string_pretty(&ev("session.started", &s, 0)).unwrap();
    assert!(pretty.contains('\n'));
    assert_eq!(post_json_text(&relay, &pretty).await.status(), 202);
    let got = replay(&relay, &only(&s)).await;
    assert_eq!(data(&got), vec![pretty.replace('\n', "")]);

    let broken = ev("progress.status", &s, 1)
        .to_string()
        .replace(&format!("\"{s}\""), &format!("\"{s}\n\""));
    let r = post_json_text(&relay, &broken).await;
    assert_eq!(r.status(), 400);
    let body = body(r).await;
    assert_eq!(body["error"], "invalid-json");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("control character"), "{detail}");
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn batch_cap_refuses_whole_with_413() {
    let relay = builder().max_batch(3).start().await.unwrap();
    let s = session();
    let batch: Vec<Value> = (0..4).map(|i| ev("progress.status", &s, i)).collect();
    let r = post_ndjson(&relay, &batch).await;
    assert_eq!(r.status(), 413);
    let body = body(r).await;
    assert_eq!(
        body,
        json!({ "error": "too-many-events", "max": 3, "count": 4 })
    );
    assert_nothing_held(&relay).await;
    assert_eq!(post_ndjson(&relay, &batch[..3]).await.status(), 202);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn body_cap_is_answered_413_before_the_upload_ends() {
    let relay = builder().max_body(64 * 1024).start().await.unwrap();
    let addr = relay.local_addr();
    // a plain socket that announces 1 MiB, sends a little past the cap and then only
    // reads: the answer must come while the upload is still unfinished
    let status_line = tokio::task::spawn_blocking(move || {
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(WAIT)).unwrap();
        let head = format!(
            "POST /events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\n\
             aep-version: 0.1\r\ncontent-type: application/x-ndjson\r\n\
             transfer-encoding: chunked\r\n\r\n"
        );
        tcp.write_all(head.as_bytes()).unwrap();
        let chunk = vec![b' '; 16 * 1024];
        for _ in 0..5 {
            tcp.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .unwrap();
            tcp.write_all(&chunk).unwrap();
            tcp.write_all(b"\r\n").unwrap();
        }
        let mut answer = vec![0u8; 4096];
        let n = tcp.read(&mut answer).unwrap();
        String::from_utf8_lossy(&answer[..n]).to_string()
    })
    .await
    .unwrap();
    assert!(status_line.starts_with("HTTP/1.1 413"), "{status_line}");
    assert!(status_line.contains("payload-too-large"), "{status_line}");

    // an announced length over the cap is refused without reading the body
    let r = post(
        relay.url(),
        "0.1",
        "application/x-ndjson",
        vec![b' '; 65 * 1024],
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 413);
    let body = body(r).await;
    assert_eq!(
        body,
        json!({ "error": "payload-too-large", "max_bytes": 65536 })
    );
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn ingest_is_behind_the_token() {
    let relay = relay().await;
    let r = client()
        .post(format!("{}/events", relay.url()))
        .header("aep-version", "0.1")
        .header("content-type", "application/json")
        .body(ev("session.started", "s", 0).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    relay.shutdown().await.unwrap();
}

/// A session is written verbatim into the SSE `id:` line; one holding a line break
/// would forge fields (an `id:`, a new message) for every reader of the stream, so the
/// relay refuses it at ingest (`proto::check_envelope`, which the socket path runs too).
#[tokio::test]
async fn a_session_with_a_line_break_is_refused_not_framed() {
    let relay = relay().await;
    for forged in ["a\nid: evil:9:9\n\nevent: x", "a\rb", "a\u{0}b"] {
        let event = with(
            ev("progress.status", forged, 0),
            "source",
            json!("aep://test/agent/a"),
        );
        let r = post_json(&relay, &event).await;
        assert_eq!(r.status(), 400, "{forged:?}");
        let body = body(r).await;
        assert_eq!(body["error"], "invalid-event");
        assert!(
            body["detail"].as_str().unwrap().contains("CR, LF or NUL"),
            "{body}"
        );
    }
    // the relay holds nothing of them: a replay of everything is empty
    assert_nothing_held(&relay).await;
    relay.shutdown().await.unwrap();
}
