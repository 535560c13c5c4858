//! A WebSocket sink counts delivered only what the relay took: an event the relay
//! refused with an `error` frame naming it (its `cause`) is written again, same id, when
//! the refusal is transient (`limit-exceeded`: the relay's disk is full) and counted
//! rejected when it is final (`invalid-event`), though the relay answers the sink's
//! confirming `ping` after it as after any other (AEP-0003 §3.5, §3.2 rule 4).
#![cfg(feature = "ws")]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use aep_async::{Client, Emitter, Sink, SubscribeOptions, WsSink, WsSinkOptions};
use aep_core::Event;
use aep_test_support::disk::{dev_full_or_skip, TempDir};
use aep_test_support::events::session_id;
use aep_test_support::relay::TestRelay;
use aep_test_support::wait::Recorder;
use futures::StreamExt;
use serde_json::json;

const TOKEN: &str = "t";
const MS: fn(u64) -> Duration = Duration::from_millis;

/// The ids of every event `relay` holds, read back with a replay of everything.
async fn held(relay: &str) -> Vec<String> {
    let options = SubscribeOptions::new().from_all().history_only();
    let events: Vec<Event> = Client::new(relay)
        .token(TOKEN)
        .subscribe(options)
        .collect()
        .await;
    events.iter().map(|e| e.id().to_owned()).collect()
}

/// The one session journal file in `dir`.
fn journal_file(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("the session's journal file")
}

fn sink(relay: &TestRelay, reports: &Recorder) -> WsSink {
    Client::new(relay.url())
        .token(TOKEN)
        .backoff(MS(20), MS(100))
        .ws_sink(WsSinkOptions::new("a", "h/1").on_report(reports.handler()))
        .unwrap()
}

/// The relay's disk fills up under one session (Linux's `/dev/full` in place of its
/// journal file: every write fails with ENOSPC), so it answers the next event with
/// `limit-exceeded` naming it, then the `pong`. The sink does not count it delivered:
/// it writes it again, same id, until the disk takes it, and the relay then holds it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_the_relay_could_not_store_is_written_again_until_stored() {
    if !dev_full_or_skip("the full-disk test") {
        return;
    }
    let dir = TempDir::new("ws-refusals");
    let config = aep_relay::RelayConfig::default()
        .with_token(TOKEN)
        .with_data_dir(dir.path());
    let relay = TestRelay::start(config).await.unwrap();
    let reports = Recorder::default();
    let emitter = Emitter::new("a", "h", sink(&relay, &reports));
    let session = emitter.session(session_id());
    let first = session
        .emit("session.started", json!({}))
        .unwrap()
        .id()
        .to_owned();
    emitter.flush().await;
    assert_eq!(emitter.stats().delivered, 1, "{:?}", reports.all());

    // the session's journal now lives on a disk that takes no byte
    let file = journal_file(dir.path());
    let kept = std::fs::read(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/dev/full", &file).unwrap();
    let second = session
        .emit("progress.status", json!({ "n": 1 }))
        .unwrap()
        .id()
        .to_owned();
    reports.wait_for("limit-exceeded").await;
    // written again meanwhile, refused again, and not counted
    tokio::time::sleep(MS(300)).await;
    assert_eq!(emitter.stats().delivered, 1, "{:?}", reports.all());
    assert!(
        reports.any("Retrying") && reports.any(&second),
        "reported as retried, naming the event: {:?}",
        reports.all()
    );

    // the disk is back: the next attempt is stored
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, kept).unwrap();
    tokio::time::timeout(Duration::from_secs(20), emitter.flush())
        .await
        .expect("delivered once the disk takes it");
    let stats = emitter.stats();
    assert_eq!((stats.delivered, stats.rejected), (2, 0), "{stats:?}");
    assert_eq!(held(&relay.url()).await, [first, second]);
    emitter.close().await;
}

/// An event the relay refuses as invalid (`invalid-event` naming it) is counted
/// rejected and reported, never delivered, and not written again; the events around it
/// are delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_the_relay_refuses_as_invalid_is_counted_rejected() {
    let relay = TestRelay::start(aep_relay::RelayConfig::default().with_token(TOKEN))
        .await
        .unwrap();
    let reports = Recorder::default();
    let sink = sink(&relay, &reports);
    let s = session_id();
    let source = format!("aep://h/agent/a/session/{s}");
    let event = |id: &str, time: &str, seq: u64| {
        let mut e = Event::new(id, "progress.status", time, source.as_str(), "a");
        e.set_session(Some(s.clone()));
        e.set_seq(Some(seq));
        e
    };
    let time = "2026-07-03T10:15:05.000Z";
    sink.accept(&event("01JOK1", time, 1)).unwrap();
    sink.accept(&event("01JBAD", "yesterday", 2)).unwrap();
    sink.accept(&event("01JOK2", time, 3)).unwrap();
    tokio::time::timeout(Duration::from_secs(20), sink.flush())
        .await
        .expect("settled");
    let stats = sink.stats();
    assert_eq!(
        (stats.delivered, stats.rejected),
        (2, 1),
        "{stats:?} {:?}",
        reports.all()
    );
    assert!(
        reports.any("Rejected") && reports.any("01JBAD"),
        "{:?}",
        reports.all()
    );
    assert_eq!(held(&relay.url()).await, ["01JOK1", "01JOK2"]);
    sink.close().await;
}
