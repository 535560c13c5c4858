//! The waiting emit path against the embedded relay and misbehaving servers: a producer
//! faster than the network loses nothing when it waits, over HTTP and WebSocket, from
//! several tasks at once; and a wait ends with a typed error, not a hang, once the sink
//! is closed or the relay is gone for good.
#![cfg(all(feature = "http", feature = "sse", feature = "ws"))]
#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::{
    Client, DeliveryReport, EmitError, EmitOptions, Emitter, HttpSink, HttpSinkOptions,
    SessionEmitter, SubscribeOptions, WsSinkOptions,
};
use aep_core::Severity;
use common::Silent;
use futures::StreamExt;
use serde_json::json;

/// A hang guard, not a timing claim: only a broken implementation waits this long.
const PATIENCE: Duration = Duration::from_secs(30);

/// A queue far smaller than the burst, so that the producer outruns delivery at once.
const QUEUE: usize = 16;

/// Every `DeliveryReport` as text.
fn reports() -> (
    Arc<Mutex<Vec<String>>>,
    impl Fn(DeliveryReport) + Send + Sync + 'static,
) {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink_log = log.clone();
    (log, move |r: DeliveryReport| {
        sink_log.lock().unwrap().push(r.to_string())
    })
}

/// The first `n` events the relay holds, in order: its history, then live ones (for
/// events a WebSocket sink presumed taken from a relay slow to answer its `ping`).
async fn stored(url: &str, n: u64) -> Vec<u64> {
    let mut sub = Client::new(url).subscribe(SubscribeOptions::new().from_all());
    let mut seqs = Vec::new();
    while (seqs.len() as u64) < n {
        match tokio::time::timeout(PATIENCE, sub.next()).await {
            Ok(Some(e)) => seqs.extend(e.seq()),
            _ => break,
        }
    }
    seqs
}

/// `n` `info` events (the severity the drop path sheds first) through `emit_wait`.
async fn emit_waiting(session: &SessionEmitter, n: u64) {
    for i in 0..n {
        session
            .emit_wait("tool.called", json!({"tool": "bash", "i": i}))
            .await
            .unwrap();
    }
}

async fn assert_all_delivered(emitter: &Emitter, url: &str, n: u64, log: &Mutex<Vec<String>>) {
    tokio::time::timeout(PATIENCE, emitter.close())
        .await
        .expect("close");
    let stats = emitter.stats();
    assert_eq!(
        (stats.accepted, stats.delivered, stats.dropped),
        (n, n, 0),
        "{:?}",
        log.lock().unwrap()
    );
    let seqs = stored(url, n).await;
    let first_wrong = seqs.iter().zip(0..).position(|(&s, i)| s != i);
    assert!(
        seqs.len() as u64 == n && first_wrong.is_none(),
        "{} of {n} events stored; first out of place at {first_wrong:?}",
        seqs.len()
    );
}

/// An HTTP sink to `url` with the small queue, sending batches of at most `max_batch`.
fn waiting_http_sink(
    url: &str,
    max_batch: usize,
    on_report: impl Fn(DeliveryReport) + Send + Sync + 'static,
) -> HttpSink {
    Client::new(url)
        .http_sink(
            HttpSinkOptions::new()
                .batch(|b| b.max_items(max_batch))
                .queue_capacity(QUEUE)
                .on_report(on_report),
        )
        .unwrap()
}

/// 5,000 events `emit_wait`ed into `sink` on `relay`: every one is delivered and stored,
/// in order.
async fn loses_nothing_when_it_waits(
    relay: aep_relay::RelayHandle,
    sink: impl aep_async::Sink,
    log: &Mutex<Vec<String>>,
) {
    let emitter = Emitter::new("a", "h", sink);
    emit_waiting(&emitter.session("s"), 5_000).await;
    assert_all_delivered(&emitter, relay.url(), 5_000, log).await;
    relay.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_faster_than_http_loses_nothing_when_it_waits() {
    let relay = aep_relay::Relay::builder().start().await.unwrap();
    let (log, on_report) = reports();
    let sink = waiting_http_sink(relay.url(), 4, on_report);
    loses_nothing_when_it_waits(relay, sink, &log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_faster_than_a_websocket_loses_nothing_when_it_waits() {
    let relay = aep_relay::Relay::builder().start().await.unwrap();
    let (log, on_report) = reports();
    let sink = Client::new(relay.url())
        .ws_sink(
            WsSinkOptions::new("a", "h/1")
                .queue_capacity(QUEUE)
                .on_report(on_report),
        )
        .unwrap();
    loses_nothing_when_it_waits(relay, sink, &log).await;
}

/// Several tasks waiting on one session: every event lands once, `seq` without a gap,
/// and permits used with options or dropped unused keep the count right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sharing_a_session_wait_in_turn_and_lose_nothing() {
    let relay = aep_relay::Relay::builder().start().await.unwrap();
    let (log, on_report) = reports();
    let sink = waiting_http_sink(relay.url(), 8, on_report);
    let emitter = Emitter::new("a", "h", sink);
    let session = Arc::new(emitter.session("s"));
    let tasks: Vec<_> = (0..4)
        .map(|t| {
            let session = session.clone();
            tokio::spawn(async move {
                for i in 0..500 {
                    // one permit in ten goes back unused: its place is not lost
                    if i % 10 == 0 {
                        drop(session.reserve().await.unwrap());
                    }
                    let opts = EmitOptions::new()
                        .severity(Severity::Debug)
                        .subject(t.to_string());
                    session
                        .reserve()
                        .await
                        .unwrap()
                        .emit_with("tool.called", json!({"i": i}), opts)
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    }
    assert_all_delivered(&emitter, relay.url(), 2_000, &log).await;
    relay.shutdown().await.unwrap();
}

/// A refusal before the event reaches the sink gives its place back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_event_gives_its_place_back() {
    let silent = Silent::start().await;
    let sink = Client::new(&silent.url)
        .http_sink(HttpSinkOptions::new().queue_capacity(1).on_report(|_| {}))
        .unwrap();
    let emitter = Emitter::new("a", "h", sink);
    let session = emitter.session("s");
    for _ in 0..3 {
        let err = session
            .emit_wait("Not A Type", json!({}))
            .await
            .unwrap_err();
        assert!(matches!(err, EmitError::Type(_)), "{err}");
        let err = emitter
            .emit_wait("tool.called", json!({}))
            .await
            .unwrap_err();
        assert!(matches!(err, EmitError::Scope { .. }), "{err}");
    }
    // the one place is still free, and no seq was taken
    let e = tokio::time::timeout(PATIENCE, session.emit_wait("tool.called", json!({})))
        .await
        .expect("the place was given back")
        .unwrap();
    assert_eq!(e.seq(), Some(0));
}

/// A producer waiting on a full queue when the sink is closed gets `Closed`, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_sink_ends_a_wait_with_closed() {
    let silent = Silent::start().await;
    // Retrying for ever: only the close can end the wait.
    let sink = Client::new(&silent.url)
        .http_sink(
            HttpSinkOptions::new()
                .queue_capacity(1)
                .request_timeout(Duration::from_millis(200))
                .on_report(|_| {})
                .retry(|r| r.give_up_after(None)),
        )
        .unwrap();
    let emitter = Emitter::new("a", "h", sink);
    let waiting = tokio::spawn({
        let emitter = emitter.clone();
        async move {
            let session = emitter.session("s");
            loop {
                if let Err(e) = session.emit_wait("tool.called", json!({})).await {
                    return e;
                }
            }
        }
    });
    // The producer is waiting once the queue is full and stays full.
    while emitter.stats().accepted < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let closing = tokio::spawn({
        let emitter = emitter.clone();
        async move { emitter.close().await }
    });
    let err = tokio::time::timeout(PATIENCE, waiting)
        .await
        .expect("the wait ended")
        .unwrap();
    assert!(matches!(err, EmitError::Closed), "{err}");
    // (the close itself waits on a server that never answers, for ever)
    closing.abort();
}

/// The relay goes away for good: once the sink has delivered nothing for its
/// `give_up_after`, waiting fails with `Stalled`, and at once after that.
async fn gone_relay_stalls_waits(emitter: Emitter, relay: aep_relay::RelayHandle) {
    let session = emitter.session("s");
    session.emit_wait("tool.called", json!({})).await.unwrap();
    tokio::time::timeout(PATIENCE, emitter.flush())
        .await
        .unwrap();
    assert_eq!(emitter.stats().delivered, 1);
    relay.shutdown().await.unwrap();
    let err = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Err(e) = session.emit_wait("tool.called", json!({})).await {
                return e;
            }
        }
    })
    .await
    .expect("a typed error, not a hang");
    let EmitError::Stalled { idle } = err else {
        panic!("{err}");
    };
    assert!(idle >= Duration::from_millis(300), "{idle:?}");
    assert!(err.to_string().contains("delivered nothing"), "{err}");
    let again = tokio::time::timeout(
        Duration::from_secs(5),
        session.emit_wait("tool.called", json!({})),
    )
    .await
    .expect("at once while nothing is delivered");
    assert!(matches!(again, Err(EmitError::Stalled { .. })), "{again:?}");
    // the plain path still queues (and drops, debug/info first)
    session.emit("tool.called", json!({})).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_relay_gone_for_good_ends_a_wait_with_stalled() {
    let relay = aep_relay::Relay::builder().start().await.unwrap();
    let options = HttpSinkOptions::new()
        .queue_capacity(4)
        .batch(|b| b.max_items(1))
        // the first event must go: a slow request on a busy machine is no give-up
        .request_timeout(Duration::from_secs(2))
        .retry(|r| {
            r.backoff(Duration::from_millis(20), Duration::from_millis(50))
                .give_up_after(Some(Duration::from_secs(3)))
        })
        .on_report(|_| {});
    let sink = Client::new(relay.url()).http_sink(options).unwrap();
    gone_relay_stalls_waits(Emitter::new("a", "h", sink), relay).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_relay_gone_for_good_ends_a_wait_with_stalled() {
    let relay = aep_relay::Relay::builder().start().await.unwrap();
    let sink = Client::new(relay.url())
        .backoff(Duration::from_millis(20), Duration::from_millis(50))
        .connect_timeout(Duration::from_millis(200))
        .ws_sink(
            WsSinkOptions::new("a", "h/1")
                .queue_capacity(4)
                .give_up_after(Some(Duration::from_millis(300)))
                .on_report(|_| {}),
        )
        .unwrap();
    gone_relay_stalls_waits(Emitter::new("a", "h", sink), relay).await;
}
