//! `project_state` over 100,000 events in 1,000 sessions, and incremental `apply` of the
//! same stream.

use aep_core::projection::{project_state, StateProjection};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

mod shape;

fn projection(c: &mut Criterion) {
    let events = shape::events();
    let check = project_state(&events);
    assert_eq!(check.sessions().len(), shape::SESSIONS);
    assert!(check.violations().is_empty(), "{:?}", &check.violations()[..1]);

    let mut group = c.benchmark_group("projection");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(20);
    group.bench_function("project_state_100k_events_1k_sessions", |b| {
        b.iter(|| black_box(project_state(black_box(&events))))
    });
    group.bench_function("apply_100k_events_1k_sessions", |b| {
        b.iter(|| {
            let mut p = StateProjection::new();
            for e in black_box(&events) {
                p.apply(e);
            }
            black_box(p.session_count())
        })
    });
    group.bench_function("apply_then_state_100k_events_1k_sessions", |b| {
        b.iter(|| {
            let mut p = StateProjection::new();
            p.extend(black_box(&events));
            black_box(p.state())
        })
    });
    group.finish();
}

criterion_group!(benches, projection);
criterion_main!(benches);
