//! The HTTP sink against scripted servers: batching, order, retry with the same ids,
//! 4xx final, bounded queue under pressure.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::{Client, EmitOptions, Emitter, HttpSink, HttpSinkOptions};
use aep_core::{Event, Severity};
use common::{status_response, Scripted, Silent};
use serde_json::json;

fn bodies(server: &Scripted) -> Vec<(String, Vec<Event>)> {
    server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| {
            let (head, body) = r.split_once("\r\n\r\n").unwrap();
            let events = body
                .lines()
                .filter(|l| !l.is_empty())
                .map(|l| l.parse().unwrap())
                .collect();
            (head.to_owned(), events)
        })
        .collect()
}

/// An emitter (agent `a`, host `h`) on an HTTP sink to `url`.
fn emitter_to(url: &str, options: HttpSinkOptions) -> Emitter {
    Emitter::new("a", "h", Client::new(url).http_sink(options).unwrap())
}

/// Emits `n` events in one session through `sink` and flushes: every one is delivered.
async fn deliver(sink: HttpSink, n: u64) {
    let emitter = Emitter::new("a", "h", sink);
    let s = emitter.session("s");
    for _ in 0..n {
        s.emit("tool.called", json!({})).unwrap();
    }
    emitter.flush().await;
    assert_eq!(emitter.stats().delivered, n);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_ndjson_in_order_with_version_and_token() {
    let server = Scripted::start(|_| status_response(202)).await;
    let sink = Client::new(&server.url)
        .token("sesame")
        .http_sink(
            HttpSinkOptions::new().batch(|b| b.max_items(40).linger(Duration::from_millis(50))),
        )
        .unwrap();
    deliver(sink, 100).await;
    let reqs = bodies(&server);
    let all: Vec<u64> = reqs
        .iter()
        .flat_map(|(_, evs)| evs.iter().filter_map(Event::seq))
        .collect();
    assert_eq!(
        all,
        (0..100).collect::<Vec<_>>(),
        "order preserved across batches"
    );
    assert!(reqs.iter().all(|(_, evs)| evs.len() <= 40));
    assert!(reqs.len() < 100, "batched, not one request per event");
    let head = reqs[0].0.to_ascii_lowercase();
    assert!(head.starts_with("post /events "));
    assert!(head.contains("aep-version: 0.1"));
    assert!(head.contains("authorization: bearer sesame"));
    assert!(head.contains("content-type: application/x-ndjson"));
}

/// A batch of one is sent as a JSON body, not NDJSON (AEP-0003 §3.2): the line as
/// serialized, with no trailing newline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_event_goes_as_one_json_body() {
    let server = Scripted::start(|_| status_response(202)).await;
    let emitter = emitter_to(&server.url, HttpSinkOptions::new());
    let event = emitter
        .session("s")
        .emit("tool.called", json!({"tool": "ls"}))
        .unwrap();
    emitter.flush().await;
    assert_eq!(emitter.stats().delivered, 1);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let (head, body) = requests[0].split_once("\r\n\r\n").unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    assert_eq!(body, event.to_json());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_5xx_with_the_same_ids_then_succeeds() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let server = Scripted::start(move |_| {
        if c.fetch_add(1, Ordering::SeqCst) < 2 {
            status_response(503)
        } else {
            status_response(202)
        }
    })
    .await;
    let reports = Arc::new(Mutex::new(Vec::new()));
    let log = reports.clone();
    let options = HttpSinkOptions::new()
        // one batch, sent by the flush: no pause mid-emit splits it
        .batch(|b| b.linger(Duration::from_secs(30)))
        .retry(|r| r.backoff(Duration::from_millis(10), Duration::from_millis(20)))
        .on_report(move |r| log.lock().unwrap().push(r.to_string()));
    let sink = Client::new(&server.url).http_sink(options).unwrap();
    deliver(sink, 3).await;
    let reqs = bodies(&server);
    assert_eq!(reqs.len(), 3);
    let ids = |i: usize| {
        reqs[i]
            .1
            .iter()
            .map(|e| e.id().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(0), ids(1));
    assert_eq!(ids(1), ids(2));
    assert_eq!(
        reports
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.contains("503"))
            .count(),
        2
    );
}

/// The sink's retries are the one delivery worker's: a `503` with `Retry-After: 1`
/// (within the backoff's 2 s ceiling) is sent again no sooner than a second later, the
/// same bytes; a `429` is final for AEP ingest (AEP-0003 §3.2 rule 4: only a `5xx`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_within_the_ceiling_is_waited_for() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let server = Scripted::start(move |_| match c.fetch_add(1, Ordering::SeqCst) {
        0 => b"HTTP/1.1 503 X\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            .to_vec(),
        _ => status_response(202),
    })
    .await;
    let options = HttpSinkOptions::new()
        .batch(|b| b.linger(Duration::from_secs(30)))
        .retry(|r| r.backoff(Duration::from_millis(10), Duration::from_secs(2)));
    let sink = Client::new(&server.url).http_sink(options).unwrap();
    let started = std::time::Instant::now();
    deliver(sink, 2).await;
    assert!(started.elapsed() >= Duration::from_secs(1));
    let reqs = bodies(&server);
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].1, reqs[1].1);

    let server = Scripted::start(|_| status_response(429)).await;
    let emitter = emitter_to(&server.url, HttpSinkOptions::new().on_report(|_| {}));
    emitter.session("s").emit("tool.called", json!({})).unwrap();
    emitter.flush().await;
    assert_eq!(emitter.stats().rejected, 1);
    assert_eq!(bodies(&server).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_refusal_is_final_and_reported() {
    let server = Scripted::start(|_| status_response(400)).await;
    let reports = Arc::new(Mutex::new(Vec::new()));
    let log = reports.clone();
    let options =
        HttpSinkOptions::new().on_report(move |r| log.lock().unwrap().push(r.to_string()));
    let emitter = emitter_to(&server.url, options);
    emitter.session("s").emit("tool.called", json!({})).unwrap();
    emitter.close().await;
    assert_eq!(emitter.stats().rejected, 1);
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "no retry of a 4xx"
    );
    assert!(reports.lock().unwrap()[0].contains("HTTP 400"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_queue_drops_debug_and_info_first_under_pressure() {
    let silent = Silent::start().await;
    let dropped = Arc::new(Mutex::new(Vec::new()));
    let log = dropped.clone();
    let sink = Client::new(&silent.url)
        .http_sink(
            HttpSinkOptions::new()
                .batch(|b| b.max_items(1))
                .queue_capacity(10)
                .request_timeout(Duration::from_millis(100))
                .on_report(move |r| {
                    if let aep_async::DeliveryReport::Dropped {
                        events,
                        most_severe,
                        ..
                    } = r
                    {
                        log.lock().unwrap().push((events, most_severe));
                    }
                })
                .retry(|r| r.give_up_after(Some(Duration::from_millis(300)))),
        )
        .unwrap();
    let emitter = Emitter::new("a", "h", sink);
    let s = emitter.session("s");
    for i in 0..30 {
        let sev = if i % 3 == 0 {
            Severity::Error
        } else {
            Severity::Info
        };
        s.emit_with("tool.called", json!({}), EmitOptions::new().severity(sev))
            .unwrap();
    }
    let stats = emitter.stats();
    assert_eq!(stats.accepted, 30);
    assert!(stats.dropped >= 19, "{stats:?}");
    emitter.close().await;
    // Reported per burst (one a second at most), by the close at the latest, with counts
    // that add up to every drop.
    let d = dropped.lock().unwrap().clone();
    assert!(!d.is_empty() && (d.len() as u64) < stats.dropped, "{d:?}");
    assert_eq!(d.iter().map(|(n, _)| n).sum::<u64>(), stats.dropped);
    assert!(
        d.iter().all(|(_, s)| *s == Severity::Info),
        "only info dropped while info was queued: {d:?}"
    );
    let stats = emitter.stats();
    assert_eq!(stats.pending(), 0, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_emitter_still_delivers_in_the_background() {
    let server = Scripted::start(|_| status_response(202)).await;
    {
        let emitter = emitter_to(&server.url, HttpSinkOptions::new());
        emitter.session("s").emit("tool.called", json!({})).unwrap();
    }
    for _ in 0..400 {
        if !server.requests.lock().unwrap().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the accepted event was never sent after drop");
}
