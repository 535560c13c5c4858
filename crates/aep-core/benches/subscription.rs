//! Criterion benchmarks of the AEP Subscription Model (PERFORMANCE.md, aep-core): matching a
//! 10-pattern filter, and routing one event through registries of 100, 1,000 and 10,000
//! subscriptions.
//!
//! `cargo bench -p aep-sdk-core --bench subscription -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used)] // bench setup: a broken fixture should fail loudly

use std::hint::black_box;
use std::time::UNIX_EPOCH;

use aep_core::subscription::{
    DeliveryMode, SubscriptionFilter, SubscriptionRegistry, SubscriptionRegistryConfig,
    SubscriptionRequested,
};
use aep_core::types::CATEGORIES;
use aep_core::Event;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;

const TEN: [&str; 10] = [
    "memory.*",
    "context.*",
    "session.*",
    "x.acme.*",
    "attention.*.resolved",
    "error.*",
    "state.changed",
    "run.started",
    "tool.call.*",
    "tool.*.progress",
];

fn event(ty: &str) -> Event {
    Event::new(
        "01J",
        ty,
        "2026-07-09T10:00:00.000Z",
        "aep://h/agent/a/session/s",
        "a",
    )
    .with_session("s0")
    .with_seq(1)
}

fn matching(c: &mut Criterion) {
    let filter = SubscriptionFilter::new().with_types(TEN).unwrap();
    let mut g = c.benchmark_group("subscription-match");
    for (name, ty) in [
        ("10-patterns/hit-last", "tool.call.progress"),
        ("10-patterns/hit-first", "memory.fact.added"),
        ("10-patterns/miss", "run.completed"),
    ] {
        let e = event(ty);
        g.bench_function(name, |b| {
            b.iter(|| black_box(&filter).matches(black_box(&e)))
        });
    }
    g.finish();
}

/// A registry of `n` subscriptions, each also scoped to one of 7 sessions (`s0`..`s6`).
/// `spread`: each subscription's patterns start with a segment of its own, so none but the 10 on `tool` can match a `tool.*` event (the
/// index makes the rest free). `categories`: first segments cycle through the 13 AEP
/// categories, so about n/13 share the event's bucket and must be checked.
fn registry(n: usize, spread: bool) -> SubscriptionRegistry {
    let mut reg = SubscriptionRegistry::new(
        SubscriptionRegistryConfig::new().with_max_delivery(DeliveryMode::AtLeastOnce),
    );
    let now = UNIX_EPOCH;
    for i in 0..n {
        let first = if i < 10 {
            "tool".to_owned()
        } else if spread {
            format!("seg{i}")
        } else {
            CATEGORIES[i % CATEGORIES.len()].to_owned()
        };
        let payload = json!({
            "types": [format!("{first}.*.progress"), format!("{first}.call.*")],
            "session_id": format!("s{}", i % 7),
            "delivery_mode": "at_least_once",
        });
        let session = format!("conn{}", i % 50);
        reg.handle_request(&session, &SubscriptionRequested::from_payload(payload), now)
            .unwrap();
    }
    reg
}

fn routing(c: &mut Criterion) {
    let e = event("tool.call.progress");
    let mut g = c.benchmark_group("route");
    for spread in [true, false] {
        for n in [100usize, 1_000, 10_000] {
            let reg = registry(n, spread);
            // Sanity: the subscriptions on `tool` in session scope s0 are found.
            assert!(reg.route(&e).count() >= 2);
            let label = if spread { "spread" } else { "categories" };
            g.bench_with_input(BenchmarkId::new(label, n), &reg, |b, reg| {
                b.iter(|| reg.route(black_box(&e)).count())
            });
        }
    }
    g.finish();
}

criterion_group!(benches, matching, routing);
criterion_main!(benches);
