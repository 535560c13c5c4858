//! Sinks for synchronous code: the async crate's network sinks started on a
//! [`Runtime`] by [`Client::http_sink`](crate::Client::http_sink) and
//! [`Client::ws_sink`](crate::Client::ws_sink) (they deliver from a background task),
//! and [`JsonlSink`] as is.
//!
//! Each network sink keeps its runtime alive for as long as it exists, so an emitter
//! never outlives the task that delivers its events.

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use aep_async::HttpSinkOptions;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use aep_async::{CommandHook, WsSinkOptions};
pub use aep_async::{DeliveryReport, DeliveryStats, JsonlSink, ReserveFuture, Sink, SinkFuture};
use aep_core::Event;

use crate::runtime::Runtime;

/// A network sink of the async crate running on a [`Runtime`]; used as [`HttpSink`]
/// and [`WsSink`]. It is a [`Sink`]: hand it to [`Emitter`](crate::Emitter).
#[derive(Debug)]
pub struct NetSink<S> {
    inner: S,
    runtime: Runtime,
}

impl<S> NetSink<S> {
    /// A sink of the async crate delivering on `runtime`.
    #[cfg_attr(not(any(feature = "http", feature = "ws")), allow(dead_code))]
    pub(crate) fn new(inner: S, runtime: Runtime) -> Self {
        NetSink { inner, runtime }
    }
    /// The runtime delivering for this sink.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
    /// The async sink underneath.
    pub fn as_async(&self) -> &S {
        &self.inner
    }
}

impl<S: Sink> Sink for NetSink<S> {
    fn accept(&self, event: &Event) -> Result<(), aep_async::EmitError> {
        self.inner.accept(event)
    }
    fn reserve(&self) -> ReserveFuture<'_> {
        self.inner.reserve()
    }
    fn accept_reserved(&self, event: &Event) -> Result<(), aep_async::EmitError> {
        self.inner.accept_reserved(event)
    }
    fn release(&self) {
        self.inner.release();
    }
    fn flush(&self) -> SinkFuture<'_> {
        self.inner.flush()
    }
    fn close(&self) -> SinkFuture<'_> {
        self.inner.close()
    }
    fn stats(&self) -> DeliveryStats {
        self.inner.stats()
    }
}

/// Delivers events to `POST {base}/events` in NDJSON batches (AEP-0003 §3.2): the
/// async crate's [`aep_async::HttpSink`], running on a [`Runtime`]; started with
/// [`Client::http_sink`](crate::Client::http_sink).
///
/// ```no_run
/// use aep_blocking::{Client, Emitter, HttpSinkOptions};
///
/// let sink = Client::new("http://127.0.0.1:8787").http_sink(HttpSinkOptions::new())?;
/// let emitter = Emitter::new("coder", "host-a", sink);
/// emitter.session("s1").emit("session.started", serde_json::json!({}))?;
/// emitter.close()?; // delivered, or reported through the handler
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "http")]
pub type HttpSink = NetSink<aep_async::HttpSink>;

#[cfg(feature = "http")]
impl NetSink<aep_async::HttpSink> {
    /// The ingest URL requests go to (of the first relay, given several).
    pub fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
}

/// Emits over the WebSocket binding (AEP-0003 §3.5): the async crate's
/// [`aep_async::WsSink`], running on a [`Runtime`]; started with
/// [`Client::ws_sink`](crate::Client::ws_sink).
///
/// ```no_run
/// use aep_blocking::{Client, Emitter, WsSinkOptions};
/// let sink = Client::new("http://127.0.0.1:8787").ws_sink(WsSinkOptions::new("coder", "host-a/1"))?;
/// let emitter = Emitter::new("coder", "host-a", sink);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "ws")]
pub type WsSink = NetSink<aep_async::WsSink>;
