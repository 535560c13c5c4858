//! # aep-tracing: an instrumented agent's spans as AEP events
//!
//! Rust agents are instrumented with [`tracing`](https://docs.rs/tracing), and agent
//! frameworks such as rig describe each agent run, model call and tool call as a span
//! that follows the OpenTelemetry GenAI semantic conventions. [`AepLayer`] is a
//! `tracing_subscriber::Layer` that turns those spans into AEP events on an
//! [`aep_async::Emitter`], with no change to the agent's code:
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let sink = aep_testing::MemorySink::new(); // an HttpSink or WsSink in production
//! let emitter = aep_async::Emitter::new("my-agent", "host-a", sink.clone());
//! let subscriber = tracing_subscriber::registry().with(aep_tracing::layer(emitter));
//! tracing::subscriber::with_default(subscriber, || {
//!     let run = tracing::info_span!(
//!         "invoke_agent",
//!         gen_ai.operation.name = "invoke_agent",
//!         gen_ai.conversation.id = "conv-42",
//!     );
//!     run.in_scope(|| {
//!         tracing::info_span!("execute_tool", gen_ai.operation.name = "execute_tool",
//!             gen_ai.tool.name = "search", gen_ai.tool.call.id = "c1")
//!             .in_scope(|| { /* the tool runs */ });
//!     });
//! });
//! let events = sink.events();
//! let types: Vec<_> = events.iter().map(|e| e.event_type()).collect();
//! assert_eq!(types, ["run.started", "tool.requested", "tool.completed", "run.finished"]);
//! assert!(events.iter().all(|e| e.session() == Some("conv-42") && e.run() == events[0].run()));
//! ```
//!
//! ## Layout
//!
//! - [`AepLayer`], its [`Builder`] and [`LayerStats`] (`layer`): the span state kept in
//!   the span's extensions, the events sent when a span opens and closes.
//! - [`SpanKind`], [`Attr`] (`mapping`): which spans count and what their fields mean.
//! - [`SpanFilter`] (`filter`): the per-layer filter that keeps spans the mapping
//!   cannot use away from the layer.
//! - `record`: the `field::Visit` that reads a span's fields; `events`: the payloads,
//!   aep-core's registered types; `sessions`: one session emitter per conversation.
//! - `otel` (feature `otel`): `traceparent` from a `tracing_opentelemetry` layer's
//!   context.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod events;
mod filter;
mod layer;
mod mapping;
#[cfg(feature = "otel")]
mod otel;
mod record;
mod sessions;

pub use filter::SpanFilter;
pub use layer::{
    layer, AepLayer, Builder, LayerStats, StatsHandle, TracingLayer, DEFAULT_MAX_CONTENT_BYTES,
    DEFAULT_MAX_SESSIONS,
};
pub use mapping::{Attr, SpanKind};
