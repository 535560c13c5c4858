//! Validation cost: one golden line, as a parsed `Event` and as a JSON value, and the
//! cross-event rules over the whole golden stream.
//!
//! `cargo bench -p aep-sdk-core --bench validate -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used)] // a bench: a panic is the failure report

use std::hint::black_box;

use aep_core::validate::{validate_event, validate_payload, validate_value, StreamValidator};
use aep_core::Event;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::Value;

const GOLDEN: &str = include_str!("../../../fixtures/conformance/golden/golden.jsonl");

fn lines() -> Vec<&'static str> {
    GOLDEN.lines().filter(|l| !l.trim().is_empty()).collect()
}

fn bench(c: &mut Criterion) {
    let lines = lines();
    // golden[3]: tool.completed with a payload, the common shape of a busy stream.
    let line = lines[3];
    let event: Event = line.parse().unwrap();
    let value: Value = serde_json::from_str(line).unwrap();
    assert!(validate_event(&event).is_empty());

    let mut g = c.benchmark_group("validate");
    g.throughput(Throughput::Elements(1));
    g.bench_function("event golden[3] tool.completed", |b| {
        b.iter(|| validate_event(black_box(&event)))
    });
    g.bench_function("value golden[3] tool.completed", |b| {
        b.iter(|| validate_value(black_box(&value)))
    });
    let data = value["data"].clone();
    g.bench_function("payload golden[3] tool.completed", |b| {
        b.iter(|| validate_payload(black_box("tool.completed"), black_box(&data)))
    });
    let minimal: Event = lines[25].parse().unwrap();
    g.bench_function("event golden[25] progress.status (no data)", |b| {
        b.iter(|| validate_event(black_box(&minimal)))
    });
    g.bench_function("parse+validate golden[3]", |b| {
        b.iter(|| {
            let e: Event = black_box(line).parse().unwrap();
            validate_event(&e)
        })
    });
    g.finish();

    let events: Vec<Event> = lines.iter().map(|l| l.parse().unwrap()).collect();
    let mut g = c.benchmark_group("stream");
    g.throughput(Throughput::Elements(events.len() as u64));
    g.bench_function("push golden (64 events)", |b| {
        b.iter(|| {
            let mut v = StreamValidator::new().require_acks(true);
            for e in &events {
                black_box(v.push(e));
            }
            v.finish()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
