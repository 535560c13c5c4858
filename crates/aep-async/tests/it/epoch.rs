//! Epoch continuity (AEP-0001 §7.2): emitters that take each session's epoch from an
//! `EpochStore` never write at a position an earlier run used, read back from a relay.
#![cfg(all(feature = "http", feature = "sse"))]

use crate::common;

use std::time::Duration;

use aep_async::emit::EpochStore;
use aep_async::{Client, Emitter, HttpSinkOptions, SubscribeOptions};
use aep_core::Event;
use aep_test_support::disk::TempDir;
use futures::StreamExt;
use serde_json::json;

/// One run of a producer: a fresh emitter on `store`, `n` events into `session`.
async fn run(url: &str, store: &EpochStore, session: &str, n: usize) -> Vec<Event> {
    let sink = Client::new(url)
        .token("t")
        .http_sink(HttpSinkOptions::new())
        .unwrap();
    let emitter = Emitter::builder("restarted", "host")
        .epoch_store(store.clone())
        .build(sink);
    let s = emitter.session(session);
    let events = (0..n)
        .map(|i| s.emit("progress.status", json!({"i": i})).unwrap())
        .collect();
    emitter.close().await;
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_producer_writes_after_every_earlier_position() {
    let relay = common::token_relay("t").await;
    let dir = TempDir::new("epoch-restart");
    let store = EpochStore::at(dir.path().join("epochs.json"));
    let first = run(relay.url(), &store, "same", 3).await;
    let second = run(relay.url(), &store, "same", 2).await;
    let pos = |e: &Event| (e.epoch(), e.seq().unwrap());
    let last_of_first = first.iter().map(pos).max().unwrap();
    assert!(
        second.iter().all(|e| pos(e) > last_of_first),
        "{:?} then {:?}",
        first.iter().map(pos).collect::<Vec<_>>(),
        second.iter().map(pos).collect::<Vec<_>>()
    );
    assert_eq!(second[0].seq(), Some(0), "a new epoch starts seq over");

    // What the relay holds, in its (epoch, seq) order, is the first run then the second.
    let options = SubscribeOptions::new()
        .from_all()
        .history_only()
        .filter(json!({"session": "same"}));
    let held: Vec<Event> = tokio::time::timeout(
        Duration::from_secs(20),
        Client::new(relay.url())
            .token("t")
            .subscribe(options)
            .collect(),
    )
    .await
    .unwrap();
    let ids: Vec<&str> = held.iter().map(Event::id).collect();
    let expected: Vec<&str> = first.iter().chain(&second).map(Event::id).collect();
    assert_eq!(ids, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_be_written_leaves_the_timestamp_seed() {
    // A directory where the store's file should be: nothing can be written there.
    let dir = TempDir::new("epoch-unwritable");
    let path = dir.path().join("epochs.json");
    std::fs::create_dir_all(path.join("in-the-way")).unwrap();
    let store = EpochStore::at(&path);
    assert!(store.next_epoch("a", "s").is_err());
    let out = dir.path().join("out.jsonl");
    let emitter = Emitter::builder("a", "h")
        .epoch_store(store)
        .build(aep_async::JsonlSink::open(&out).unwrap());
    let one = emitter.session("s");
    let two = emitter.session("s");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(one.epoch() > now_ms - 60_000 && one.epoch() <= now_ms);
    assert!(two.epoch() > one.epoch(), "increasing within the process");
    one.emit("session.started", json!({})).unwrap();
    emitter.close().await;
}
