//! Bounded `(source, id)` dedupe: inserting a stream of new keys (past capacity, so
//! every insert also evicts), redelivered keys, and lookups. Wall time (`dedupe/`) and
//! on-CPU time of the benchmark thread (`dedupe-oncpu/`, Linux).

use aep_core::dedupe::Dedupe;
use criterion::measurement::Measurement;
use criterion::{black_box, BenchmarkGroup, Criterion, Throughput};

mod shape;

fn benches<M: Measurement>(mut group: BenchmarkGroup<'_, M>, keys: &[(&str, &str)]) {
    group.sample_size(10);
    group.throughput(Throughput::Elements(keys.len() as u64));
    group.bench_function("insert_new_100k_capacity_50k", |b| {
        b.iter(|| {
            let mut d = Dedupe::new();
            let mut new = 0;
            for (s, id) in black_box(keys) {
                new += usize::from(d.insert(s, id));
            }
            assert_eq!(new, keys.len());
            new
        })
    });

    // Warm set: the most recent 50,000 keys are held.
    let mut warm = Dedupe::new();
    for (s, id) in keys {
        warm.insert(s, id);
    }
    let recent = &keys[keys.len() - Dedupe::DEFAULT_CAPACITY..];
    let old = &keys[..Dedupe::DEFAULT_CAPACITY];
    group.throughput(Throughput::Elements(recent.len() as u64));
    group.bench_function("insert_redelivered_50k", |b| {
        b.iter(|| {
            let mut new = 0;
            for (s, id) in black_box(recent) {
                new += usize::from(warm.insert(s, id));
            }
            assert_eq!(new, 0);
        })
    });
    group.bench_function("contains_hit_50k", |b| {
        b.iter(|| recent.iter().filter(|(s, id)| warm.contains(s, id)).count())
    });
    group.bench_function("contains_miss_50k", |b| {
        b.iter(|| old.iter().filter(|(s, id)| warm.contains(s, id)).count())
    });
    group.finish();
}

fn dedupe(c: &mut Criterion) {
    let events = shape::events();
    let keys: Vec<(&str, &str)> = events.iter().map(|e| (e.source(), e.id())).collect();
    benches(c.benchmark_group("dedupe"), &keys);
}

fn dedupe_oncpu(c: &mut Criterion<shape::oncpu::OnCpu>) {
    if shape::oncpu::available() {
        let events = shape::events();
        let keys: Vec<(&str, &str)> = events.iter().map(|e| (e.source(), e.id())).collect();
        benches(c.benchmark_group("dedupe-oncpu"), &keys);
    }
}

shape::wall_and_oncpu_main!(dedupe, dedupe_oncpu);
