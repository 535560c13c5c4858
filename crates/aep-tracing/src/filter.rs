//! The per-layer filter: spans that no name, operation or session can map, and events
//! below `ERROR`, never reach the layer, so they cost it nothing past one look at
//! their callsite (cached by `tracing` as the callsite's interest).

use std::sync::Arc;

use tracing_core::subscriber::Interest;
use tracing_core::Metadata;
use tracing_subscriber::layer::{Context, Filter};

use crate::mapping::Mapping;

/// The filter of an [`AepLayer`](crate::AepLayer): what the layer's mapping could turn
/// into events, and `ERROR` events (which fail the span they happen in). A per-layer
/// filter, so the spans and events it leaves out still reach every other layer.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let emitter = aep_async::Emitter::new("agent", "host", aep_testing::MemorySink::new());
/// let layer = aep_tracing::AepLayer::builder(emitter).build();
/// let _subscriber = tracing_subscriber::registry().with(layer);
/// ```
#[derive(Debug, Clone)]
pub struct SpanFilter {
    pub(crate) mapping: Arc<Mapping>,
}

impl<S> Filter<S> for SpanFilter {
    fn enabled(&self, meta: &Metadata<'_>, _cx: &Context<'_, S>) -> bool {
        self.mapping.may_map(meta)
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        if self.mapping.may_map(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }
}
