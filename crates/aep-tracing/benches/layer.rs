//! The layer's cost per span and per event, beside `tracing-opentelemetry` (an SDK
//! tracer with a simple processor into the in-memory exporter) in the same run, and
//! the bare registry both sit on.
//!
//! ```text
//! cargo bench -p aep-tracing --bench layer
//! ```
//!
//! Each case runs under three subscribers: `registry` (no layer: what `tracing` and
//! the registry cost by themselves), `aep` (the registry and the AEP layer, its
//! emitter into a sink that drops every event), `otel` (the registry and
//! `tracing_opentelemetry`'s layer). A layer's own cost is its line minus the
//! `registry` line. Cases:
//!
//! - `unmapped_span`: a span with two fields that no GenAI mapping uses (most of an
//!   instrumented program's spans): the AEP filter leaves it out, OpenTelemetry
//!   exports it.
//! - `tool_span`: an `execute_tool` span with name and call id (what rig records by
//!   default): two AEP events (`tool.requested`, `tool.completed`), one OpenTelemetry
//!   span. `tool_span/emitter_only` is the floor: the same two events from the emitter
//!   alone, no `tracing`.
//! - `tool_span_args`: the same with its arguments (rig with content telemetry on):
//!   the AEP layer also digests them (`args_digest`, AEP-0003 §9.3).
//! - `agent_turn`: an `invoke_agent` span holding a `chat`, an `execute_tool` and a
//!   second `chat` span, as `tool_span`: four spans, eight AEP events.
//! - `info_event` / `error_event`: one event inside an open tool span (per event; the
//!   span is opened and closed every 1,000 events, outside the timing).

use std::hint::black_box;
use std::time::{Duration, Instant};

use aep_async::{EmitError, Emitter, Sink, SinkFuture};
use aep_core::Event;
use criterion::{criterion_group, criterion_main, Criterion};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing::{info_span, Dispatch, Span};
use tracing_subscriber::layer::SubscriberExt;

/// A sink that takes every event and keeps none: the layer's and the emitter's cost,
/// without a transport's.
#[derive(Debug)]
struct Discard;

impl Sink for Discard {
    fn accept(&self, event: &Event) -> Result<(), EmitError> {
        black_box(event);
        Ok(())
    }
    fn flush(&self) -> SinkFuture<'_> {
        Box::pin(async {})
    }
    fn close(&self) -> SinkFuture<'_> {
        Box::pin(async {})
    }
}

/// The three subscribers, and the exporter to empty between batches (it keeps every
/// span it is given).
struct Subjects {
    registry: Dispatch,
    aep: Dispatch,
    otel: Dispatch,
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
}

fn subjects() -> Subjects {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let emitter = Emitter::new("bench-agent", "bench-host", Discard);
    Subjects {
        registry: Dispatch::new(tracing_subscriber::registry()),
        aep: Dispatch::new(
            tracing_subscriber::registry().with(
                aep_tracing::AepLayer::builder(emitter)
                    .session("bench")
                    .build(),
            ),
        ),
        otel: Dispatch::new(
            tracing_subscriber::registry()
                .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("bench"))),
        ),
        exporter,
        _provider: provider,
    }
}

const ARGS: &str = r#"{"path":"src/main.rs","pattern":"fn main"}"#;

fn unmapped_span() {
    info_span!("handle_request", user = 42u64, route = "/v1/items").in_scope(|| {});
}

fn tool_span() {
    info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = "grep",
        gen_ai.tool.call.id = "call-1",
    )
    .in_scope(|| {});
}

fn tool_span_args() {
    info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = "grep",
        gen_ai.tool.call.id = "call-1",
        gen_ai.tool.call.arguments = ARGS,
    )
    .in_scope(|| {});
}

fn chat_span() {
    info_span!(
        "chat",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = "model-1",
        gen_ai.usage.input_tokens = 120u64,
        gen_ai.usage.output_tokens = 30u64,
    )
    .in_scope(|| {});
}

fn agent_turn() {
    info_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "bench-agent",
    )
    .in_scope(|| {
        chat_span();
        tool_span();
        chat_span();
    });
}

/// Times `iters` calls of `f` under `dispatch` in batches of 1,000, each batch inside
/// the span `around` makes (entered outside the timing), emptying the exporter between
/// batches.
fn timed(
    dispatch: &Dispatch,
    exporter: &InMemorySpanExporter,
    iters: u64,
    (around, f): (fn() -> Span, fn()),
) -> Duration {
    tracing::dispatcher::with_default(dispatch, || {
        let mut total = Duration::ZERO;
        let mut left = iters;
        while left > 0 {
            let n = left.min(1_000);
            let span = around();
            let entered = span.enter();
            let start = Instant::now();
            for _ in 0..n {
                f();
            }
            total += start.elapsed();
            drop(entered);
            drop(span);
            left -= n;
            exporter.reset();
        }
        total
    })
}

/// The open tool span the event cases run in.
fn open_tool() -> Span {
    info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = "grep",
    )
}

fn info_event() {
    tracing::info!(matched = 3u64, "grep found matches");
}

fn error_event() {
    tracing::error!(error.type = "io", "grep could not read a file");
}

/// The floor under `tool_span`: its two events built by the emitter alone into the
/// same discarding sink, no `tracing` at all (what any producer of those events pays).
fn emitter_only(c: &mut Criterion) {
    use aep_core::payload::{ToolCompleted, ToolCompletedTool, ToolRequested, ToolRequestedTool};
    let session = Emitter::new("bench-agent", "bench-host", Discard).session("bench");
    let mut group = c.benchmark_group("tool_span");
    group.bench_function("emitter_only", |b| {
        b.iter(|| {
            let requested = ToolRequested {
                tool: ToolRequestedTool {
                    name: "grep".to_owned(),
                    call_id: Some("call-1".to_owned()),
                    ..ToolRequestedTool::default()
                },
                ..ToolRequested::default()
            };
            let opts = aep_async::EmitOptions::new().subject("grep");
            let cause = session
                .emit_with("tool.requested", requested, opts.clone())
                .map(|e| e.id().to_owned())
                .unwrap_or_default();
            let completed = ToolCompleted {
                tool: ToolCompletedTool {
                    name: "grep".to_owned(),
                    call_id: Some("call-1".to_owned()),
                    ..ToolCompletedTool::default()
                },
                duration_ms: Some(0),
                ..ToolCompleted::default()
            };
            black_box(session.emit_with("tool.completed", completed, opts.cause(cause)))
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    emitter_only(c);
    let s = subjects();
    let subjects = [
        ("registry", &s.registry),
        ("aep", &s.aep),
        ("otel", &s.otel),
    ];
    let spans: [(&str, fn()); 4] = [
        ("unmapped_span", unmapped_span),
        ("tool_span", tool_span),
        ("tool_span_args", tool_span_args),
        ("agent_turn", agent_turn),
    ];
    for (case, f) in spans {
        let mut group = c.benchmark_group(case);
        for (name, dispatch) in subjects {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| timed(dispatch, &s.exporter, iters, (Span::none, f)))
            });
        }
        group.finish();
    }
    let events: [(&str, fn()); 2] = [("info_event", info_event), ("error_event", error_event)];
    for (case, f) in events {
        let mut group = c.benchmark_group(case);
        for (name, dispatch) in subjects {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| timed(dispatch, &s.exporter, iters, (open_tool, f)))
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    // A shared machine: short, repeated samples; the median and its spread are what
    // PERFORMANCE.md reports.
    config = Criterion::default()
        .sample_size(40)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
