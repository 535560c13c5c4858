//! The CloudEvents sink and the OCSF writer on the golden corpus: what reaches the
//! receiver (or the file) maps back to the events that were sent, or matches the pins.
#![cfg(feature = "export")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use aep_bridge::ce::{from_cloudevent, CloudEvent};
use aep_bridge::export::{CeMode, CeSink, HttpOptions, OcsfWriter};
use aep_core::Event;
use common::{fixtures, golden, gunzip, Answer, Endpoint, Received};
use futures::stream;
use serde_json::Value;

/// The CloudEvents a request carries, in order.
fn cloudevents(mode: CeMode, r: &Received) -> Vec<CloudEvent> {
    let body = match r.header("content-encoding") {
        Some("gzip") => gunzip(&r.body),
        _ => r.body.clone(),
    };
    match mode {
        CeMode::Structured => {
            assert_eq!(
                r.header("content-type"),
                Some("application/cloudevents+json")
            );
            vec![CloudEvent::from_json(&body).unwrap()]
        }
        CeMode::Binary => {
            let headers = r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            vec![CloudEvent::from_http_binary(headers, &body).unwrap()]
        }
        CeMode::Batched => {
            assert_eq!(
                r.header("content-type"),
                Some("application/cloudevents-batch+json")
            );
            CloudEvent::from_json_batch(&body).unwrap()
        }
    }
}

async fn round_trip(mode: CeMode, gzip: bool) {
    let mut endpoint = Endpoint::start(|_| Answer::Status(202)).await;
    let sink = CeSink::builder(format!("{}/ce", endpoint.url))
        .mode(mode)
        .batch(|b| b.max_items(25).linger(Duration::from_millis(20)))
        .http(HttpOptions::new().gzip(gzip).bearer("ce-token"))
        .build()
        .unwrap();
    let events = golden();
    let stats = sink.run(stream::iter(events.clone())).await;
    assert_eq!(
        (stats.records, stats.exported, stats.pending()),
        (64, 64, 0)
    );
    let requests = endpoint.drain();
    let expected_requests = if mode == CeMode::Batched { 3 } else { 64 };
    assert_eq!(requests.len(), expected_requests);
    assert!(requests
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer ce-token") && r.path == "/ce"));
    let back: Vec<Event> = requests
        .iter()
        .flat_map(|r| cloudevents(mode, r))
        .map(|ce| {
            let inverse = from_cloudevent(&ce).unwrap();
            assert!(inverse.dropped.is_empty());
            inverse.event
        })
        .collect();
    for (sent, got) in events.iter().zip(&back) {
        // Modulo member order (AEP-0005 §2 rule 1). Binary mode carries extension
        // values as text (CE HTTP binding §3.1.3): the corpus's only one is a string.
        assert_eq!(got.to_value(), sent.to_value());
        let same_bytes = got.data_raw().map(|d| d.get()) == sent.data_raw().map(|d| d.get());
        assert!(same_bytes, "data changed for {}", sent.id());
    }
}

#[tokio::test]
async fn structured_mode_carries_the_corpus_bit_for_bit() {
    round_trip(CeMode::Structured, false).await;
}

#[tokio::test]
async fn binary_mode_carries_the_corpus() {
    round_trip(CeMode::Binary, true).await;
}

#[tokio::test]
async fn batched_mode_carries_the_corpus_in_three_requests() {
    round_trip(CeMode::Batched, true).await;
}

#[tokio::test]
async fn a_capture_ceiling_down_levels_before_forwarding() {
    let mut endpoint = Endpoint::start(|_| Answer::Status(200)).await;
    let sink = CeSink::builder(&endpoint.url)
        .capture(aep_core::Capture::Metadata)
        .http(HttpOptions::new().gzip(false))
        .build()
        .unwrap();
    let events = golden();
    let failed = events[15].clone(); // tool.failed at capture redacted
    assert_eq!(failed.capture(), aep_core::Capture::Redacted);
    sink.run(stream::iter([failed.clone()])).await;
    let ce = CloudEvent::from_json(&endpoint.drain()[0].body).unwrap();
    let back = from_cloudevent(&ce).unwrap().event;
    assert_eq!(
        back,
        aep_core::capture::downlevel(&failed, aep_core::Capture::Metadata)
    );
    assert_eq!(back.capture(), aep_core::Capture::Metadata);
}

#[tokio::test]
async fn the_ocsf_writer_writes_the_pinned_records_and_skips_the_rest() {
    let dir = std::env::temp_dir().join(format!("aep-bridge-ocsf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ocsf.jsonl");
    let writer = OcsfWriter::to_path(&path).await.unwrap();
    let events = golden();
    let stats = writer.run(stream::iter(events.clone())).await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let in_scope = events
        .iter()
        .filter(|e| aep_bridge::ocsf::class_of(e.event_type()).is_some())
        .count();
    assert_eq!(records.len(), in_scope);
    assert_eq!(
        (stats.records, stats.exported),
        (in_scope as u64, in_scope as u64)
    );
    assert_eq!(stats.skipped, (events.len() - in_scope) as u64);
    let pins: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("ocsf/ocsf-expected.json")).unwrap(),
    )
    .unwrap();
    for (i, pin) in pins.as_object().unwrap() {
        let id = events[i.parse::<usize>().unwrap()].id();
        let record = records
            .iter()
            .find(|r| r["metadata"]["uid"] == id)
            .unwrap_or_else(|| panic!("no record for golden[{i}]"));
        assert_eq!(record, pin, "golden[{i}]");
    }
}
