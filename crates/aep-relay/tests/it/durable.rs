//! Durable replay (`--data-dir`): a session's buffer survives a restart.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test
use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use serde_json::{json, Value};

use aep_test_support::disk::{dev_full_or_skip, TempDir};

#[tokio::test]
async fn resume_after_a_restart_loses_nothing_that_fit_in_the_buffer() {
    let dir = TempDir::new("relay-test");
    let (a, b) = (session(), session());
    let batch: Vec<Value> = (0..12).map(|i| ev("progress.status", &a, i)).collect();
    {
        let relay = builder().data_dir(dir.path()).start().await.unwrap();
        post_ndjson(&relay, &batch).await;
        post_json(&relay, &ev("session.started", &b, 0)).await;
        post_json(&relay, &batch[11]).await; // a duplicate: admitted once
        relay.shutdown().await.unwrap();
    }
    let relay = builder().data_dir(dir.path()).start().await.unwrap();
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
    let got = replay(&relay, &from_after(&a, 0, 0)).await;
    assert_eq!(got[0].comments, vec![format!("replay-exhausted {a} 0:4")]);
    // and the log keeps growing after the restart
    post_json(&relay, &ev("progress.status", &a, 12)).await;
    relay.shutdown().await.unwrap();
    let relay = builder().data_dir(dir.path()).start().await.unwrap();
    let got = replay(&relay, &from_after(&a, 0, 11)).await;
    assert_eq!(seqs(&got), vec![12]);
    relay.shutdown().await.unwrap();
}

/// Sessions `a` then `b` on a relay that holds one session, posted one request each or
/// both in one batch, so that `b` evicts `a`: after a restart only `b` is held.
async fn an_evicted_session_stays_gone(in_one_batch: bool) {
    let dir = TempDir::new("relay-test");
    let (a, b) = (session(), session());
    let start = || builder().max_sessions(1).data_dir(dir.path()).start();
    {
        let relay = start().await.unwrap();
        let batch = [ev("session.started", &a, 0), ev("session.started", &b, 0)];
        if in_one_batch {
            assert_eq!(post_ndjson(&relay, &batch).await.status(), 202);
        } else {
            for event in &batch {
                assert_eq!(post_json(&relay, event).await.status(), 202);
            }
        }
        relay.shutdown().await.unwrap();
    }
    let relay = start().await.unwrap();
    assert_eq!(sessions_held(&relay).await, vec![json!(b)]);
    relay.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_evicted_session_does_not_come_back() {
    an_evicted_session_stays_gone(false).await;
}

/// The session of every event a replay-all serves, in order.
async fn sessions_held(relay: &aep_relay::RelayHandle) -> Vec<Value> {
    replay(relay, "from=all")
        .await
        .iter()
        .filter(|m| m.data.is_some())
        .map(|m| m.json()["session"].clone())
        .collect()
}

/// Events that arrive over a WebSocket are journaled as the HTTP ones are, whichever way
/// the relay read them: in place, parsed for an escape, or with line breaks between
/// tokens (which are dropped from what is stored, AEP-0003 §3.3).
#[tokio::test]
async fn events_ingested_over_a_websocket_survive_a_restart_as_stored() {
    let dir = TempDir::new("relay-test");
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
    let from = from(&s);
    {
        let relay = builder().data_dir(dir.path()).start().await.unwrap();
        let mut producer = Ws::hello(&relay, "emitter", json!({})).await;
        for text in [&plain, &with_escape, &broken] {
            producer.send_text(text).await;
        }
        let mut got = Vec::new();
        for _ in 0..200 {
            got = data(&replay(&relay, &from).await);
            if got.len() == stored.len() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(got, stored, "held as stored before the restart");
        relay.shutdown().await.unwrap();
    }
    let relay = builder().data_dir(dir.path()).start().await.unwrap();
    assert_eq!(
        data(&replay(&relay, &from).await),
        stored,
        "and replayed byte-identically after it"
    );
    relay.shutdown().await.unwrap();
}

/// A journal line cut inside a UTF-8 character, one with an invalid byte, and a last
/// line torn by a crash: the relay skips and reports them, replays the rest, and says
/// it listens only once it can serve. A data directory it cannot use stops it before
/// it says so.
#[tokio::test]
async fn a_damaged_journal_replays_the_rest() {
    let dir = TempDir::new("relay-test");
    std::fs::create_dir_all(dir.path()).unwrap();
    let s = session();
    let lines: Vec<String> = (0..5)
        .map(|i| with(ev("progress.status", &s, i), "data", json!({ "t": "été" })).to_string())
        .collect();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(lines[0].as_bytes());
    bytes.push(b'\n');
    let at = lines[1].find('é').unwrap() + 1;
    bytes.extend_from_slice(&lines[1].as_bytes()[..at]);
    bytes.push(b'\n');
    let mut invalid = lines[2].clone().into_bytes();
    let x = invalid.iter().position(|&b| b == b'a').unwrap();
    invalid[x] = 0xff;
    bytes.extend_from_slice(&invalid);
    bytes.push(b'\n');
    bytes.extend_from_slice(lines[3].as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(&lines[4].as_bytes()[..lines[4].len() - 3]);
    std::fs::write(dir.path().join("written-by-hand.jsonl"), &bytes).unwrap();

    let data_dir = dir.path().display().to_string();
    let relay = RelayProcess::start(&["--data-dir", &data_dir]);
    assert!(
        relay.first_line.contains("listening on"),
        "{}",
        relay.first_line
    );
    let got = data(&replay_at(&relay.url, &from(&s)).await);
    assert_eq!(
        got,
        [lines[0].clone(), lines[3].clone()],
        "the rest, byte for byte"
    );
    let log = relay.stderr();
    assert!(log.contains("skipped journal lines"), "{log}");
    assert!(log.contains("lines=3"), "{log}");
    drop(relay);

    let not_a_dir = dir.path().join("a-file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let refused = RelayProcess::try_start(&["--data-dir", &not_a_dir.display().to_string()]);
    let Err((status, output)) = refused else {
        panic!("a relay without a usable data directory said it listens");
    };
    assert!(status.is_some_and(|s| !s.success()), "{status:?}");
    assert!(!output.contains("listening on"), "{output}");
}

/// On a full disk (Linux's `/dev/full` in place of one session's journal file: every
/// write fails with ENOSPC), a POST is answered `507` with the reason, nothing of it is
/// kept, and every other session goes on; a restart on that disk serves what it reads.
#[cfg(unix)]
#[tokio::test]
async fn on_a_full_disk_2xx_only_for_what_was_stored() {
    if !dev_full_or_skip("the full-disk test") {
        return;
    }
    let dir = TempDir::new("relay-test");
    let data_dir = dir.path().display().to_string();
    let relay = RelayProcess::start(&["--data-dir", &data_dir]);
    let (s, other) = (session(), session());
    let first = ev("session.started", &s, 0);
    let r = post_ndjson_at(&relay.url, std::slice::from_ref(&first))
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    // the session's file now lives on a disk that takes no byte
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("the session's journal file");
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/dev/full", &file).unwrap();
    let batch = [ev("progress.status", &s, 1), ev("progress.status", &s, 2)];
    let r = post_ndjson_at(&relay.url, &batch).await.unwrap();
    assert_eq!(r.status(), 507);
    let why = body(r).await;
    assert_eq!(why["error"], "insufficient-storage");
    assert!(why["detail"].as_str().unwrap().contains("space"), "{why}");
    // nothing of the refused batch is held; the first event still is
    let held = data(&replay_at(&relay.url, &from(&s)).await);
    assert_eq!(held, [first.to_string()]);
    let elsewhere = ev("session.started", &other, 0);
    let r = post_ndjson_at(&relay.url, std::slice::from_ref(&elsewhere))
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "the other sessions go on");
    drop(relay);

    let relay = RelayProcess::start(&["--data-dir", &data_dir]);
    assert_eq!(
        data(&replay_at(&relay.url, &from(&other)).await),
        [elsewhere.to_string()]
    );
}

/// `kill -9` while batches are being acknowledged: after a restart every batch that
/// was answered `202` is there (the answer follows the write, `--fsync batch`).
#[tokio::test]
async fn a_relay_killed_during_ingest_loses_no_acknowledged_batch() {
    for trial in 0..3u64 {
        let dir = TempDir::new("relay-test");
        let data_dir = dir.path().display().to_string();
        let relay = RelayProcess::start(&["--data-dir", &data_dir, "--buffer", "100000"]);
        let s = session();
        let answered = Arc::new(AtomicUsize::new(0));
        let poster = {
            let url = relay.url.clone();
            let s = s.clone();
            let answered = answered.clone();
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                for batch in 0..10_000u64 {
                    let events: Vec<Value> = (0..50)
                        .map(|i| ev("progress.status", &s, batch * 50 + i))
                        .collect();
                    match post_ndjson_at(&url, &events).await {
                        Some(r) if r.status() == 202 => acknowledged.push(batch),
                        _ => break,
                    }
                    answered.fetch_add(1, Ordering::Relaxed);
                }
                acknowledged
            })
        };
        // killed mid-stream, once batches are being acknowledged (a busy machine may
        // take a while to the first), at a different point each trial
        aep_test_support::wait::until("a first acknowledged batch", || {
            answered.load(Ordering::Relaxed) > 0
        })
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(150 * trial)).await;
        relay.kill();
        let acknowledged = poster.await.unwrap();
        assert!(
            !acknowledged.is_empty(),
            "nothing was acknowledged before the kill"
        );
        let relay = RelayProcess::start(&["--data-dir", &data_dir, "--buffer", "100000"]);
        let held: std::collections::HashSet<u64> = seqs(&replay_at(&relay.url, &from(&s)).await)
            .into_iter()
            .collect();
        for batch in &acknowledged {
            for seq in batch * 50..(batch + 1) * 50 {
                assert!(
                    held.contains(&seq),
                    "trial {trial}: acknowledged event {seq} lost"
                );
            }
        }
        eprintln!(
            "trial {trial}: {} batches acknowledged before the kill, all {} events back",
            acknowledged.len(),
            acknowledged.len() * 50
        );
    }
}

/// Session names of any length and alphabet are journaled and come back (one of 250
/// bytes or more made a file name too long: `202`, a warning, nothing journaled).
#[tokio::test]
async fn a_session_name_of_any_length_survives_a_restart() {
    let dir = TempDir::new("relay-test");
    let names = [
        format!("s-{}", "x".repeat(300)),
        format!("../{}/été", "y".repeat(260)),
    ];
    let events: Vec<Value> = names.iter().map(|s| ev("session.started", s, 0)).collect();
    {
        let relay = builder().data_dir(dir.path()).start().await.unwrap();
        for event in &events {
            assert_eq!(post_json(&relay, event).await.status(), 202);
        }
        relay.shutdown().await.unwrap();
    }
    let relay = builder().data_dir(dir.path()).start().await.unwrap();
    for (name, event) in names.iter().zip(&events) {
        assert_eq!(
            data(&replay(&relay, &from(name)).await),
            [event.to_string()],
            "{name}"
        );
    }
    relay.shutdown().await.unwrap();
}

/// A session evicted by a later event of the same batch is not journaled after its file
/// is removed: it does not come back on restart either.
#[tokio::test]
async fn a_session_evicted_within_its_batch_does_not_come_back() {
    an_evicted_session_stays_gone(true).await;
}
