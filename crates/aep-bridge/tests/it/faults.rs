//! Bad input and bad endpoints: every one ends in a typed error or a counted drop,
//! never a hang or a silent loss.
#![cfg(feature = "export")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::SubscribeOptions;
use aep_bridge::export::{
    CeMode, CeSink, ExportError, ExportReport, ExportStats, HttpOptions, OcsfWriter, OtlpExporter,
    OtlpExporterBuilder,
};
use aep_core::Event;
use common::{golden, Answer, Endpoint};
use futures::stream;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// Fast retries, a short budget.
fn quick() -> HttpOptions {
    HttpOptions::new()
        .timeout(Duration::from_millis(300))
        .retry(|r| {
            r.backoff(Duration::from_millis(20), Duration::from_millis(100))
                .give_up_after(Some(Duration::from_millis(800)))
        })
}

/// Fast retries, a long budget and a patient request, for the tests that count the
/// requests of batches that all go: on a busy machine a request slower than `quick`'s
/// 300 ms would be sent again, or the budget would run out.
fn steady() -> HttpOptions {
    quick()
        .timeout(Duration::from_secs(10))
        .retry(|r| r.give_up_after(Some(Duration::from_secs(30))))
}

fn reports() -> (Arc<Mutex<Vec<String>>>, impl Fn(ExportReport) + Send + Sync) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    (seen, move |r: ExportReport| {
        sink.lock().unwrap().push(r.to_string())
    })
}

/// Exports the first `n` golden events with the exporter `builder` makes, returning its
/// stats and the reports it made on the way.
async fn export(builder: OtlpExporterBuilder, n: usize) -> (ExportStats, Vec<String>) {
    let (seen, handler) = reports();
    let exporter = builder.on_report(handler).build().unwrap();
    let stats = exporter
        .run(stream::iter(golden().into_iter().take(n)))
        .await;
    let seen = seen.lock().unwrap().clone();
    (stats, seen)
}

#[tokio::test]
async fn an_otlp_receiver_answering_500_rejects_the_batch_for_good() {
    let mut endpoint = Endpoint::start(|_| Answer::Status(500)).await;
    let builder = OtlpExporter::builder(&endpoint.url)
        .batch(|b| b.max_items(10))
        .http(quick());
    let (stats, seen) = export(builder, 4).await;
    assert_eq!((stats.records, stats.exported, stats.rejected), (4, 0, 4));
    // OTLP/HTTP: 500 is not retryable; one request, no retry loop.
    assert_eq!(endpoint.drain().len(), 1);
    assert!(seen[0].contains("HTTP 500"), "{seen:?}");
}

#[tokio::test]
async fn a_503_is_retried_with_the_same_batch_until_it_is_taken() {
    let mut endpoint = Endpoint::start(|n| Answer::Status(if n < 2 { 503 } else { 200 })).await;
    let (stats, seen) = export(OtlpExporter::builder(&endpoint.url).http(steady()), 3).await;
    assert_eq!((stats.exported, stats.failed), (3, 0));
    let requests = endpoint.drain();
    assert_eq!(requests.len(), 3);
    assert!(
        requests.windows(2).all(|w| w[0].body == w[1].body),
        "the same bytes each time"
    );
    assert_eq!(requests[0].path, "/v1/logs");
    assert_eq!(requests[0].header("content-encoding"), Some("gzip"));
    assert_eq!(seen.len(), 2, "two retries reported");
}

#[tokio::test]
async fn a_retry_after_past_every_clock_gives_up_instead_of_stopping_the_worker() {
    // A lying endpoint asks, a second into the retries, for a wait no `Duration` sum can
    // hold, of an exporter whose backoff has no ceiling: the batch is given up and
    // counted, not lost with a panicked worker.
    let mut endpoint = Endpoint::start(|n| match n {
        0 => Answer::Status(503),
        _ => Answer::RetryAfter(503, "18446744073709551615"),
    })
    .await;
    let builder = OtlpExporter::builder(&endpoint.url).http(quick().retry(|r| {
        r.backoff(Duration::from_millis(1100), Duration::MAX)
            .give_up_after(Some(Duration::from_secs(5)))
    }));
    let (stats, seen) = export(builder, 2).await;
    assert_eq!(
        (stats.records, stats.failed, stats.pending()),
        (2, 2, 0),
        "{stats:?}"
    );
    assert_eq!(endpoint.drain().len(), 2);
    assert!(seen.last().unwrap().contains("gave up"), "{seen:?}");
}

#[tokio::test]
async fn a_retry_after_within_the_ceiling_is_waited_for_and_one_past_it_is_not() {
    // Within the 2 s ceiling, `Retry-After: 1` replaces the 20 ms delay: the retry
    // waits at least that second.
    let mut endpoint = Endpoint::start(|n| match n {
        0 => Answer::RetryAfter(503, "1"),
        _ => Answer::Status(200),
    })
    .await;
    let http = quick().retry(|r| {
        r.backoff(Duration::from_millis(20), Duration::from_secs(2))
            .give_up_after(Some(Duration::from_secs(10)))
    });
    let started = std::time::Instant::now();
    let (stats, _) = export(OtlpExporter::builder(&endpoint.url).http(http), 2).await;
    assert_eq!((stats.exported, stats.failed), (2, 0), "{stats:?}");
    assert_eq!(endpoint.drain().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the asked second was kept"
    );

    // An hour asked of an exporter whose ceiling is 100 ms and whose budget is 800 ms:
    // it keeps its own schedule, and the batch goes on the next attempt instead of
    // being given up at once.
    let mut endpoint = Endpoint::start(|n| match n {
        0 => Answer::RetryAfter(503, "3600"),
        _ => Answer::Status(200),
    })
    .await;
    let (stats, seen) = export(OtlpExporter::builder(&endpoint.url).http(quick()), 2).await;
    assert_eq!((stats.exported, stats.failed), (2, 0), "{stats:?} {seen:?}");
    assert_eq!(endpoint.drain().len(), 2);
}

#[tokio::test]
async fn an_endpoint_that_is_down_is_retried_then_given_up_and_counted() {
    // A port held for the whole test and never listened on: every attempt is refused
    // at connect, and no other test can take the port meanwhile (a port bound and
    // released could be).
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let closed = format!("http://{}", held.local_addr().unwrap());
    let (stats, seen) = export(OtlpExporter::builder(&closed).http(quick()), 3).await;
    drop(held);
    assert_eq!(
        (stats.records, stats.failed, stats.exported, stats.pending()),
        (3, 3, 0, 0),
        "{stats:?}"
    );
    assert!(seen[0].contains("retrying"), "retried first: {seen:?}");
    assert!(seen.last().unwrap().contains("gave up on 3"), "{seen:?}");
}

#[tokio::test]
async fn a_413_for_an_oversized_batch_is_final_and_the_next_batch_still_goes() {
    let mut endpoint = Endpoint::start(|n| Answer::Status(if n == 0 { 413 } else { 200 })).await;
    let builder = OtlpExporter::builder(&endpoint.url)
        .batch(|b| b.max_items(10))
        .http(steady());
    let (stats, seen) = export(builder, 20).await;
    assert_eq!(
        (
            stats.records,
            stats.rejected,
            stats.exported,
            stats.pending()
        ),
        (20, 10, 10, 0),
        "{stats:?}"
    );
    assert_eq!(
        endpoint.drain().len(),
        2,
        "the refused batch is not sent again"
    );
    assert!(seen[0].contains("HTTP 413"), "{seen:?}");
}

#[tokio::test]
async fn a_cloudevents_receiver_refusing_with_400_is_not_asked_again() {
    let mut endpoint = Endpoint::start(|_| Answer::Status(400)).await;
    let (seen, handler) = reports();
    let sink = CeSink::builder(&endpoint.url)
        .http(quick())
        .on_report(handler)
        .build()
        .unwrap();
    let stats = sink.run(stream::iter(golden().into_iter().take(1))).await;
    assert_eq!((stats.records, stats.rejected, stats.failed), (1, 1, 0));
    assert_eq!(endpoint.drain().len(), 1);
    assert!(seen.lock().unwrap()[0].contains("HTTP 400"), "{seen:?}");
}

#[tokio::test]
async fn an_endless_answer_to_a_taken_batch_is_read_no_further_than_needed() {
    // A 200 whose body never ends: the records were taken, and the exporter neither
    // waits for (nor holds) the rest, nor sends them again. The request timeout is
    // far off: what ends the read is the cap on what is read.
    let mut endpoint = Endpoint::start(|_| Answer::StallAfter(200, 1 << 20)).await;
    let patient = quick().timeout(Duration::from_secs(120));
    let run = export(OtlpExporter::builder(&endpoint.url).http(patient), 2);
    let (stats, _) = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the answer is read no further than the cap");
    assert_eq!(
        (stats.records, stats.exported, stats.failed),
        (2, 2, 0),
        "{stats:?}"
    );
    assert_eq!(endpoint.drain().len(), 1);
}

#[tokio::test]
async fn a_status_whose_body_stalls_decides_the_batch_without_sending_it_again() {
    // The status came, the body stops short of its length: a 2xx took the records, a
    // 400 refused them for good. Neither is a network failure worth a resend.
    for (status, want) in [(200, (2, 0, 0)), (400, (0, 2, 0))] {
        let mut endpoint = Endpoint::start(move |_| Answer::StallAfter(status, 10)).await;
        let (stats, seen) = export(OtlpExporter::builder(&endpoint.url).http(quick()), 2).await;
        assert_eq!(
            (stats.exported, stats.rejected, stats.failed),
            want,
            "{status}: {stats:?} {seen:?}"
        );
        assert_eq!(endpoint.drain().len(), 1, "{status}: sent once");
    }
}

#[tokio::test]
async fn a_receiver_that_never_answers_costs_the_budget_not_a_hang() {
    let endpoint = Endpoint::start(|_| Answer::Never).await;
    let exporter = OtlpExporter::builder(&endpoint.url)
        .http(quick())
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let stats = tokio::time::timeout(
        Duration::from_secs(10),
        exporter.run(stream::iter(golden().into_iter().take(2))),
    )
    .await
    .expect("the run ends within its retry budget");
    assert_eq!((stats.records, stats.failed, stats.exported), (2, 2, 0));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_full_queue_drops_and_counts_when_told_to_rather_than_wait() {
    let endpoint = Endpoint::start(|_| Answer::Never).await;
    let (seen, handler) = reports();
    let exporter = OtlpExporter::builder(&endpoint.url)
        .batch(|b| b.max_items(1).linger(Duration::ZERO))
        .http(quick().queue(1).drop_when_full(true))
        .on_report(handler)
        .build()
        .unwrap();
    let stats = exporter.run(stream::iter(golden())).await;
    assert_eq!(stats.records, 64);
    assert!(stats.dropped > 0, "{stats:?}");
    assert_eq!(
        stats.pending(),
        0,
        "every record is accounted for: {stats:?}"
    );
    assert!(seen.lock().unwrap().iter().any(|r| r.contains("dropped")));
}

#[tokio::test]
async fn an_event_no_mapping_can_read_is_counted_and_the_rest_flows() {
    let mut endpoint = Endpoint::start(|_| Answer::Status(200)).await;
    let (seen, handler) = reports();
    let exporter = OtlpExporter::builder(&endpoint.url)
        .http(HttpOptions::new().gzip(false))
        .on_report(handler)
        .build()
        .unwrap();
    let bad = Event::new(
        "01BAD",
        "agent.idle",
        "the day before",
        "aep://h/agent/a",
        "a",
    );
    let tp = Event::new(
        "01TP",
        "agent.idle",
        "2026-07-03T10:00:00Z",
        "aep://h/agent/a",
        "a",
    )
    .with_traceparent("00-zz-yy-01");
    let good = golden().remove(0);
    let stats = exporter.run(stream::iter([bad, tp, good])).await;
    assert_eq!((stats.events, stats.unmapped, stats.exported), (3, 2, 1));
    let reports = seen.lock().unwrap();
    assert!(
        reports[0].contains("01BAD") && reports[0].contains("RFC 3339"),
        "{reports:?}"
    );
    assert!(reports[1].contains("traceparent"), "{reports:?}");
    assert_eq!(endpoint.drain().len(), 1);
}

#[tokio::test]
async fn a_cloudevents_receiver_answering_500_is_retried_then_given_up() {
    let mut endpoint = Endpoint::start(|_| Answer::Status(500)).await;
    let sink = CeSink::builder(format!("{}/ce", endpoint.url))
        .http(quick())
        .build()
        .unwrap();
    let stats = sink.run(stream::iter(golden().into_iter().take(1))).await;
    assert_eq!((stats.records, stats.failed, stats.exported), (1, 1, 0));
    // An HTTP receiver's 500 may pass: the sink retried before giving up.
    assert!(endpoint.drain().len() >= 2);
}

#[tokio::test]
async fn an_extension_named_like_a_ce_attribute_is_refused_not_mangled() {
    let mut endpoint = Endpoint::start(|_| Answer::Status(202)).await;
    let (seen, handler) = reports();
    let sink = CeSink::builder(&endpoint.url)
        .mode(CeMode::Structured)
        .on_report(handler)
        .build()
        .unwrap();
    let clash: Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","aepsessionid":"s9"}"#.parse().unwrap();
    let stats = sink.run(stream::iter([clash])).await;
    assert_eq!((stats.unmapped, stats.records), (1, 0));
    assert!(seen.lock().unwrap()[0].contains("aepsessionid"));
    assert!(endpoint.drain().is_empty());
}

/// A relay that serves one SSE stream: a payload that is not an event, then a good one.
async fn lying_relay(good: &Event) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let body = format!(
        "data: {{\"aep\":\"0.1\",\"id\": not json\n\ndata: {}\n\n",
        good.to_json()
    );
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut buf).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
                tokio::time::sleep(Duration::from_secs(3600)).await;
            });
        }
    });
    (url, task)
}

#[tokio::test]
async fn a_malformed_relay_event_is_counted_and_the_next_one_exported() {
    let good = golden().remove(0);
    let (relay, task) = lying_relay(&good).await;
    let mut endpoint = Endpoint::start(|_| Answer::Status(200)).await;
    let (seen, handler) = reports();
    let exporter = OtlpExporter::builder(&endpoint.url)
        .batch(|b| b.linger(Duration::ZERO))
        .on_report(handler)
        .build()
        .unwrap();
    let received = tokio::time::timeout(Duration::from_secs(10), endpoint.requests.recv());
    let relay = aep_async::Client::new(&relay);
    let stats = exporter
        .run_relay(&relay, SubscribeOptions::new(), received)
        .await;
    task.abort();
    assert_eq!((stats.unmapped, stats.exported), (1, 1), "{stats:?}");
    assert!(seen.lock().unwrap()[0].contains("non-event"));
}

/// A disk that is full.
struct FullDisk;

impl tokio::io::AsyncWrite for FullDisk {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(Err(std::io::Error::other("no space left on device")))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Err(std::io::Error::other("no space left on device")))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_full_disk_ends_the_ocsf_writer_with_an_io_error() {
    let writer = OcsfWriter::new(FullDisk);
    let result = writer.run(stream::iter(golden())).await;
    assert!(matches!(result, Err(ExportError::Io(_))), "{result:?}");
    let stats = writer.stats();
    assert!(stats.failed >= 1 && stats.exported == 0, "{stats:?}");
    assert_eq!(stats.pending(), 0, "nothing written is unaccounted for");
}

#[test]
fn unbuildable_exporters_say_why() {
    let err = OtlpExporter::builder("ftp://h:4318").build().unwrap_err();
    assert!(err.to_string().contains("ftp"));
    let err = CeSink::builder("http://h/ce")
        .http(HttpOptions::new().header("x", "line\nbreak"))
        .build()
        .unwrap_err();
    assert!(matches!(err, ExportError::Header(name) if name == "x"));
}
