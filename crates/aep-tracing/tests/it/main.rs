//! aep-tracing's integration tests: hand-made spans (`hand_made`), an OpenTelemetry
//! layer beside it (`otel`), and a real agent loop of rig against an OpenAI-compatible
//! mock server (`rig_agent`).
#![allow(clippy::unwrap_used)]

mod hand_made;
mod otel;
mod rig_agent;

use aep_async::Emitter;
use aep_core::validate::validate_stream;
use aep_core::Event;
use aep_testing::MemorySink;
use aep_tracing::{AepLayer, Builder, LayerStats};
use tracing_subscriber::layer::SubscriberExt;

/// Runs `f` under a subscriber holding the layer `configure` builds over an emitter
/// (agent `agent`, host `host-t`, ceiling `capture`), and returns what it emitted.
pub fn traced<R>(
    capture: aep_core::Capture,
    configure: impl FnOnce(Builder) -> Builder,
    f: impl FnOnce() -> R,
) -> (Vec<Event>, LayerStats, R) {
    let sink = MemorySink::new();
    let emitter = Emitter::builder("agent", "host-t")
        .capture(capture)
        .build(sink.clone());
    let layer = configure(AepLayer::builder(emitter)).build();
    let stats = layer.inner().stats_handle();
    let out = tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), f);
    (sink.events(), stats.stats(), out)
}

/// Every event validates alone and as a stream (AEP-0001, AEP-0002 payload schemas and
/// capture rule, terminal exclusivity, positions).
pub fn assert_valid(events: &[Event]) {
    let issues = validate_stream(events, false);
    assert!(
        issues.is_empty(),
        "issues: {issues:#?}\nevents:\n{}",
        events
            .iter()
            .map(Event::to_json)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A run with one tool call in it that completed, as the layer emits it.
pub const ONE_TOOL_RUN: [&str; 4] = [
    "run.started",
    "tool.requested",
    "tool.completed",
    "run.finished",
];

/// [`assert_valid`], and the events' types are `expected`, in order.
pub fn assert_stream(events: &[Event], expected: &[&str]) {
    assert_valid(events);
    assert_eq!(types(events), expected);
}

/// The events' types, in order.
pub fn types(events: &[Event]) -> Vec<&str> {
    events.iter().map(Event::event_type).collect()
}

/// A member of an event's `data`.
pub fn data(event: &Event, pointer: &str) -> Option<serde_json::Value> {
    event.data()?.pointer(pointer).cloned()
}
