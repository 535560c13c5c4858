//! Criterion benchmarks of the envelope and attr-match hot paths (PERFORMANCE.md, aep-core):
//! parse, validate, write back, read a type, evaluate filters.
//!
//! Goals: parsing a line into `Event` costs at most 1.5x `serde_json::Value` on the same
//! bytes (both measured here, same run); attr-match evaluation on a parsed event under
//! 50 ns for the corpus filters.
//!
//! `cargo bench -p aep-sdk-core --bench core -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used)] // test code: a broken fixture should fail loudly

use std::hint::black_box;

use aep_core::filter::Filter;
use aep_core::Event;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::Value;

const GOLDEN: &str = include_str!("../../../fixtures/conformance/golden/golden.jsonl");
const CASES: &str = include_str!("../../../fixtures/conformance/attr-match/cases.json");

fn golden_lines() -> Vec<&'static str> {
    GOLDEN.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// A mid-sized golden line with `data` (the typical event), and the longest one.
fn sample_lines() -> [(&'static str, &'static str); 2] {
    let lines = golden_lines();
    let typical = lines
        .iter()
        .copied()
        .find(|l| l.contains("\"tool.completed\""))
        .unwrap_or(lines[0]);
    let longest = lines
        .iter()
        .copied()
        .max_by_key(|l| l.len())
        .unwrap_or(lines[0]);
    [("typical", typical), ("longest", longest)]
}

fn parse(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse");
    for (name, line) in sample_lines() {
        g.throughput(Throughput::Bytes(line.len() as u64));
        g.bench_function(format!("event/{name}"), |b| {
            b.iter(|| Event::from_slice(black_box(line.as_bytes())).unwrap())
        });
        g.bench_function(format!("value/{name}"), |b| {
            b.iter(|| serde_json::from_slice::<Value>(black_box(line.as_bytes())).unwrap())
        });
    }
    let all = golden_lines();
    let bytes: usize = all.iter().map(|l| l.len()).sum();
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("event/golden-64", |b| {
        b.iter(|| {
            for l in &all {
                black_box(Event::from_slice(black_box(l.as_bytes())).unwrap());
            }
        })
    });
    g.bench_function("value/golden-64", |b| {
        b.iter(|| {
            for l in &all {
                black_box(serde_json::from_slice::<Value>(black_box(l.as_bytes())).unwrap());
            }
        })
    });
    g.finish();
}

fn validate(c: &mut Criterion) {
    let mut g = c.benchmark_group("validate");
    for (name, line) in sample_lines() {
        let event = Event::from_slice(line.as_bytes()).unwrap();
        assert!(
            aep_core::validate::validate_event(&event).is_empty(),
            "{name}"
        );
        g.bench_function(format!("event/{name}"), |b| {
            b.iter(|| aep_core::validate::validate_event(black_box(&event)))
        });
    }
    g.finish();
}

fn write(c: &mut Criterion) {
    let mut g = c.benchmark_group("write");
    for (name, line) in sample_lines() {
        let event = Event::from_slice(line.as_bytes()).unwrap();
        let value: Value = serde_json::from_str(line).unwrap();
        g.throughput(Throughput::Bytes(line.len() as u64));
        let mut out = Vec::with_capacity(4096);
        g.bench_function(format!("event/{name}"), |b| {
            b.iter(|| {
                out.clear();
                black_box(&event).write_json(&mut out);
                black_box(out.len())
            })
        });
        g.bench_function(format!("value/{name}"), |b| {
            b.iter(|| {
                out.clear();
                serde_json::to_writer(&mut out, black_box(&value)).unwrap();
                black_box(out.len())
            })
        });
    }
    g.finish();
}

/// Fills the attributes an `Event` requires that a corpus case leaves out.
fn corpus_event(case: &Value) -> Event {
    let mut obj = case["event"].as_object().unwrap().clone();
    for (k, v) in [
        ("aep", "0.1"),
        ("id", "01J0000000000000000000000"),
        ("time", "2026-07-03T10:00:00.000Z"),
        ("source", "aep://h/agent/a"),
        ("agent", "placeholder"),
    ] {
        obj.entry(k).or_insert_with(|| v.into());
    }
    Event::from_value(&Value::Object(obj)).unwrap()
}

fn attr_match(c: &mut Criterion) {
    let cases: Value = serde_json::from_str(CASES).unwrap();
    let mut g = c.benchmark_group("attr-match");
    let compiled: Vec<(String, Filter, Event)> = cases["match"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            (
                case["name"].as_str().unwrap().to_owned(),
                Filter::from_value(&case["filter"]).unwrap(),
                corpus_event(case),
            )
        })
        .collect();
    for (name, filter, event) in &compiled {
        g.bench_function(name.as_str(), |b| {
            b.iter(|| black_box(filter).matches(black_box(event)))
        });
    }
    g.bench_function("all-14-cases", |b| {
        b.iter(|| {
            compiled
                .iter()
                .filter(|(_, f, e)| black_box(f).matches(black_box(e)))
                .count()
        })
    });
    // The extension case's lookup alone, to tell the matcher's cost from the event's.
    if let Some((_, _, event)) = compiled.iter().find(|(n, _, _)| n.contains("extension")) {
        g.bench_function("extension-lookup", |b| {
            b.iter(|| black_box(event).extension_str(black_box("acmeregion")))
        });
    }
    let text = r#"{"type":["attention.*","error.*"],"severity":{"gte":"notice"}}"#;
    g.bench_function("parse-filter", |b| {
        b.iter(|| Filter::from_json(black_box(text)).unwrap())
    });
    g.finish();
}

/// `EventType::parse`: a relay reads every event's type, and a command and its ack have
/// theirs read about a dozen times between console and agent.
fn event_type(c: &mut Criterion) {
    let mut g = c.benchmark_group("type");
    for raw in [
        "control.accepted",
        "tool.completed",
        "x.acme.control.restart",
    ] {
        g.bench_function(format!("parse/{raw}"), |b| {
            b.iter(|| aep_core::types::EventType::parse(black_box(raw)).is_ok())
        });
    }
    g.finish();
}

criterion_group!(benches, parse, validate, write, event_type, attr_match);
criterion_main!(benches);
