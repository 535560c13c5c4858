//! `project_state` over 100,000 events in 1,000 sessions, and incremental `apply` of the
//! same stream. Each runs twice: wall time (`projection/`) and on-CPU time of the
//! benchmark thread (`projection-oncpu/`, Linux), which is the one-core figure on a
//! shared, loaded machine.

use aep_core::projection::{project_state, StateProjection};
use criterion::measurement::Measurement;
use criterion::{black_box, BenchmarkGroup, Criterion, Throughput};

mod shape;

fn benches<M: Measurement>(mut group: BenchmarkGroup<'_, M>, events: &[aep_core::Event]) {
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(10);
    group.bench_function("project_state_100k_events_1k_sessions", |b| {
        b.iter(|| black_box(project_state(black_box(events))))
    });
    group.bench_function("apply_100k_events_1k_sessions", |b| {
        b.iter(|| {
            let mut p = StateProjection::new();
            for e in black_box(events) {
                p.apply(e);
            }
            black_box(p.session_count())
        })
    });
    group.bench_function("apply_then_state_100k_events_1k_sessions", |b| {
        b.iter(|| {
            let mut p = StateProjection::new();
            p.extend(black_box(events));
            black_box(p.state())
        })
    });
    group.finish();
}

fn projection(c: &mut Criterion) {
    let events = shape::events();
    let check = project_state(&events);
    assert_eq!(check.sessions().len(), shape::SESSIONS);
    assert!(
        check.violations().is_empty(),
        "{:?}",
        &check.violations()[..1]
    );
    benches(c.benchmark_group("projection"), &events);
}

fn projection_oncpu(c: &mut Criterion<shape::oncpu::OnCpu>) {
    if shape::oncpu::available() {
        benches(c.benchmark_group("projection-oncpu"), &shape::events());
    }
}

shape::wall_and_oncpu_main!(projection, projection_oncpu);
