//! Down-leveling cost (AEP-0001 §8.2): a `full` event lowered to `metadata`, the work a
//! relay does per event for each metadata-ceiling subscriber.
//!
//! The golden corpus has no `full` event, so its two content-richest lines (a
//! `kind: form` attention request, which exercises the `[metadata*]` degradation, and a
//! rerank with per-document annotations) are relabeled `capture: full`.
//! `cargo bench -p aep-sdk-core --bench capture -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::path::PathBuf;

use aep_core::capture::{downlevel, downlevel_in_place};
use aep_core::{Capture, Event};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

fn golden_line(n: usize) -> Event {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/golden/golden.jsonl");
    let text = std::fs::read_to_string(path).expect("golden corpus");
    let line = text.lines().nth(n).expect("golden line");
    let mut event: Event = line.parse().expect("golden event");
    event.set_capture(Some(Capture::Full));
    event
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("downlevel_full_to_metadata");
    for (name, line) in [
        ("attention.requested_form", 26),
        ("resource.retrieval.reranked", 61),
    ] {
        let event = golden_line(line);
        group.bench_function(name, |b| {
            b.iter(|| downlevel(black_box(&event), black_box(Capture::Metadata)))
        });
        group.bench_function(format!("{name}/in_place"), |b| {
            b.iter_batched_ref(
                || event.clone(),
                |e| downlevel_in_place(e, black_box(Capture::Metadata)),
                BatchSize::SmallInput,
            )
        });
    }
    // The common case at a fan-out hop: the ceiling is not lower, nothing to do.
    let event = golden_line(26);
    group.bench_function("pass_through_in_place", |b| {
        b.iter_batched_ref(
            || event.clone(),
            |e| downlevel_in_place(e, black_box(Capture::Full)),
            BatchSize::SmallInput,
        )
    });
    // Baseline: decoding and re-encoding the same `data` as a `serde_json::Value`.
    let data = event
        .data_raw()
        .map(|r| r.get().to_owned())
        .unwrap_or_default();
    group.bench_function("baseline_value_parse_and_write", |b| {
        b.iter(|| {
            let v: serde_json::Value = serde_json::from_str(black_box(&data)).expect("json");
            serde_json::to_string(&v).expect("encode")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
