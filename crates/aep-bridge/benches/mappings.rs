//! Each AEP-0005 mapping over the golden corpus (64 events), in events per second on
//! one core, beside a `serde_json::Value` round trip of the same events (parse the line,
//! write it back): the cost of looking at every event once as JSON.
//!
//! Every mapping starts from parsed `Event`s and ends at its wire bytes: the CE forward
//! mapping writes structured-mode JSON, the inverse reads it back to `Event`s, the OTLP
//! mappings encode one protobuf export request for the corpus, OCSF writes JSON lines.
//!
//! `cargo bench -p aep-bridge --bench mappings -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use aep_bridge::ce::{from_cloudevent, to_cloudevent, CloudEvent};
use aep_bridge::ocsf::{to_ocsf, OcsfOptions};
use aep_bridge::otlp::{logs_request, to_log_record, OtlpOptions};
use aep_bridge::spans::{traces_request, SpanAssembler, SpanOptions};
use aep_core::Event;
use aep_test_support::golden::lines;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message;

fn bench(c: &mut Criterion) {
    let lines = lines();
    let events: Vec<Event> = lines.iter().map(|l| l.parse().expect("golden")).collect();
    let ce_lines: Vec<String> = events
        .iter()
        .map(|e| to_cloudevent(e).expect("maps").to_json())
        .collect();
    let mut group = c.benchmark_group("bridge_mappings");
    group.throughput(Throughput::Elements(events.len() as u64));

    group.bench_function("anchor_value_round_trip", |b| {
        b.iter(|| {
            for line in &lines {
                let v: serde_json::Value = serde_json::from_str(black_box(line)).expect("json");
                black_box(v.to_string());
            }
        })
    });
    group.bench_function("ce_forward_to_json", |b| {
        b.iter(|| {
            for e in &events {
                black_box(to_cloudevent(black_box(e)).expect("maps").to_json());
            }
        })
    });
    group.bench_function("ce_inverse_from_json", |b| {
        b.iter(|| {
            for line in &ce_lines {
                let ce = CloudEvent::from_json(black_box(line.as_bytes())).expect("reads");
                black_box(from_cloudevent(&ce).expect("maps"));
            }
        })
    });
    let otlp = OtlpOptions::default();
    group.bench_function("otlp_logs_to_protobuf", |b| {
        b.iter(|| {
            let records: Vec<_> = events
                .iter()
                .map(|e| to_log_record(black_box(e), &otlp).expect("maps"))
                .collect();
            black_box(logs_request(&records).encode_to_vec())
        })
    });
    group.bench_function("otlp_spans_to_protobuf", |b| {
        b.iter(|| {
            let mut assembler = SpanAssembler::new(SpanOptions::default());
            let mut spans = Vec::new();
            for e in &events {
                spans.extend(assembler.push(black_box(e)).expect("maps"));
            }
            black_box(traces_request(&spans).encode_to_vec())
        })
    });
    let ocsf = OcsfOptions::default();
    group.bench_function("ocsf_to_json", |b| {
        b.iter(|| {
            for e in &events {
                if let Some(r) = to_ocsf(black_box(e), &ocsf).expect("maps") {
                    black_box(r.to_json());
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
