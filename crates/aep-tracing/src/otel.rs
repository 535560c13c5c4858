//! `traceparent` from the OpenTelemetry context a `tracing_opentelemetry` layer keeps
//! for a span (feature `otel`): AEP events then land on the span's trace (AEP-0005
//! §3.2, `traceparent` to `trace_id`/`span_id`/`flags`).

use opentelemetry::trace::TraceContextExt;
use tracing_core::{span, Dispatch};

/// The W3C `traceparent` of the span's OpenTelemetry context, or `None` when no
/// OpenTelemetry layer tracks the span (or its context is not a valid one).
///
/// Locks the span's extensions: the caller must hold none of them.
pub(crate) fn traceparent(id: &span::Id, dispatch: &Dispatch) -> Option<String> {
    let cx = tracing_opentelemetry::get_otel_context(id, dispatch)?;
    let span = cx.span();
    let sc = span.span_context();
    if !sc.is_valid() {
        return None;
    }
    Some(format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    ))
}
