//! `traceparent` from the OpenTelemetry context of a `tracing_opentelemetry` layer in
//! the same subscriber (feature `otel`).

use aep_core::Capture;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing::info_span;
use tracing_subscriber::layer::SubscriberExt;

use crate::{assert_stream, ONE_TOOL_RUN};

fn tool_inside_run() {
    info_span!("invoke_agent", gen_ai.operation.name = "invoke_agent").in_scope(|| {
        info_span!(
            "execute_tool",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = "search"
        )
        .in_scope(|| {});
    });
}

/// Runs `tool_inside_run` with the OpenTelemetry layer before or after the AEP layer;
/// returns the AEP events and the exported spans.
fn run(
    otel_first: bool,
) -> (
    Vec<aep_core::Event>,
    Vec<opentelemetry_sdk::trace::SpanData>,
) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("aep-tracing-test");
    let sink = aep_testing::MemorySink::new();
    let emitter = aep_async::Emitter::builder("a", "h")
        .capture(Capture::Metadata)
        .build(sink.clone());
    // Each order is its own subscriber type, so each builds its own layers.
    if otel_first {
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(tracer))
            .with(aep_tracing::layer(emitter));
        tracing::subscriber::with_default(subscriber, tool_inside_run);
    } else {
        let subscriber = tracing_subscriber::registry()
            .with(aep_tracing::layer(emitter))
            .with(tracing_opentelemetry::layer().with_tracer(tracer));
        tracing::subscriber::with_default(subscriber, tool_inside_run);
    }
    provider.force_flush().unwrap();
    (sink.events(), exporter.get_finished_spans().unwrap())
}

#[test]
fn events_carry_their_spans_opentelemetry_context_whichever_layer_comes_first() {
    for otel_first in [true, false] {
        let (events, spans) = run(otel_first);
        assert_stream(&events, &ONE_TOOL_RUN);
        let traceparent = |name: &str| {
            let span = spans.iter().find(|s| s.name == name).unwrap();
            let sc = &span.span_context;
            format!("00-{}-{}-01", sc.trace_id(), sc.span_id())
        };
        let (run, tool) = (traceparent("invoke_agent"), traceparent("execute_tool"));
        let got: Vec<_> = events.iter().map(|e| e.traceparent().unwrap()).collect();
        assert_eq!(got, [&run, &tool, &tool, &run], "otel first: {otel_first}");
        assert_eq!(run[3..35], tool[3..35], "one trace");
    }
}
