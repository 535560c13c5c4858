//! Sinks for synchronous code: the async crate's network sinks started on a
//! [`Runtime`] (they deliver from a background task), and [`JsonlSink`] as is.
//!
//! Each network sink keeps its runtime alive for as long as it exists, so an emitter
//! never outlives the task that delivers its events.

use std::fmt;
#[cfg(any(feature = "http", feature = "ws"))]
use std::time::Duration;

pub use aep_async::{DeliveryReport, DeliveryStats, JsonlSink, ReserveFuture, Sink, SinkFuture};
use aep_core::Event;

use crate::error::Error;
use crate::runtime::Runtime;

mod sealed {
    pub trait Sealed {}
}

/// An async sink builder that the blocking layer starts on a [`Runtime`]:
/// [`aep_async::HttpSinkBuilder`] and [`aep_async::WsSinkBuilder`]. Sealed.
pub trait AsyncSinkBuilder: sealed::Sealed + Clone + fmt::Debug {
    /// The sink it builds.
    type Sink: Sink;
    /// Builds the sink; called inside the runtime's context (it spawns its task there).
    fn start(self) -> Result<Self::Sink, aep_async::TransportError>;
}

#[cfg(feature = "http")]
impl sealed::Sealed for aep_async::HttpSinkBuilder {}
#[cfg(feature = "http")]
impl AsyncSinkBuilder for aep_async::HttpSinkBuilder {
    type Sink = aep_async::HttpSink;
    fn start(self) -> Result<Self::Sink, aep_async::TransportError> {
        self.build()
    }
}

#[cfg(feature = "ws")]
impl sealed::Sealed for aep_async::WsSinkBuilder {}
#[cfg(feature = "ws")]
impl AsyncSinkBuilder for aep_async::WsSinkBuilder {
    type Sink = aep_async::WsSink;
    fn start(self) -> Result<Self::Sink, aep_async::TransportError> {
        self.build()
    }
}

/// Configuration of a network sink: the async builder's options plus the runtime to
/// deliver on. Used as [`HttpSinkBuilder`] and [`WsSinkBuilder`].
///
/// ```
/// use std::time::Duration;
/// let builder = aep_blocking::HttpSink::builder("http://127.0.0.1:8787")
///     .token("secret")
///     .configure(|b| b.request_timeout(Duration::from_secs(5)));
/// # let _ = builder;
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build`"]
pub struct SinkBuilder<B> {
    inner: B,
}

impl<B: AsyncSinkBuilder> SinkBuilder<B> {
    /// Starts from an async builder configured elsewhere.
    pub fn from_async(inner: B) -> Self {
        SinkBuilder { inner }
    }
    /// Any option of the async builder.
    pub fn configure(mut self, f: impl FnOnce(B) -> B) -> Self {
        self.inner = f(self.inner);
        self
    }
    /// Starts the delivery task on the [shared](Runtime::shared) runtime; fails when
    /// the runtime or the client cannot be created.
    pub fn build(self) -> Result<NetSink<B::Sink>, Error> {
        self.build_on(&Runtime::shared()?)
    }
    /// [`SinkBuilder::build`] delivering on `runtime` instead.
    pub fn build_on(self, runtime: &Runtime) -> Result<NetSink<B::Sink>, Error> {
        let inner = runtime.enter(|| self.inner.start())?;
        Ok(NetSink {
            inner,
            runtime: runtime.clone(),
        })
    }
}

/// A network sink of the async crate running on a [`Runtime`]; used as [`HttpSink`]
/// and [`WsSink`]. It is a [`Sink`]: hand it to [`Emitter`](crate::Emitter).
#[derive(Debug)]
pub struct NetSink<S> {
    inner: S,
    runtime: Runtime,
}

impl<S> NetSink<S> {
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

/// Configuration of an [`HttpSink`]: the options of [`aep_async::HttpSinkBuilder`]
/// (common ones here, the rest through [`SinkBuilder::configure`]).
#[cfg(feature = "http")]
pub type HttpSinkBuilder = SinkBuilder<aep_async::HttpSinkBuilder>;

/// Delivers events to `POST {base}/events` in NDJSON batches (AEP-0003 §3.2): the
/// async crate's [`aep_async::HttpSink`], running on a [`Runtime`].
///
/// ```no_run
/// use aep_blocking::{Emitter, HttpSink};
///
/// let emitter = Emitter::new("coder", "host-a", HttpSink::builder("http://127.0.0.1:8787").build()?);
/// emitter.session("s1").emit("session.started", serde_json::json!({}))?;
/// emitter.close()?; // delivered, or reported through the handler
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "http")]
pub type HttpSink = NetSink<aep_async::HttpSink>;

#[cfg(feature = "http")]
impl NetSink<aep_async::HttpSink> {
    /// Defaults for the relay at `base` (e.g. `http://127.0.0.1:8787`), or for the
    /// relays of a cluster ([`Relays`](crate::Relays)).
    pub fn builder(base: impl Into<crate::Relays>) -> HttpSinkBuilder {
        SinkBuilder::from_async(aep_async::HttpSink::builder(base))
    }
    /// The ingest URL requests go to (of the first relay, given several).
    pub fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
}

#[cfg(feature = "http")]
impl SinkBuilder<aep_async::HttpSinkBuilder> {
    /// Bearer token sent as `Authorization: Bearer` (AEP-0003 §8.1).
    pub fn token(self, token: impl Into<String>) -> Self {
        self.configure(|b| b.token(token))
    }
    /// Most events per request (default 1000).
    pub fn max_batch(self, n: usize) -> Self {
        self.configure(|b| b.max_batch(n))
    }
    /// How long a partial batch waits for company (default 5 ms).
    pub fn linger(self, d: Duration) -> Self {
        self.configure(|b| b.linger(d))
    }
    /// Bound of the queue in events (default 10 000; `debug`/`info` dropped first).
    pub fn queue_capacity(self, n: usize) -> Self {
        self.configure(|b| b.queue_capacity(n))
    }
    /// How long one batch is retried before it is given up (default 60 s); also how
    /// long `emit_wait` blocks on a full queue while nothing is delivered before it
    /// fails with [`EmitError::Stalled`](aep_async::EmitError::Stalled).
    pub fn give_up_after(self, d: Option<Duration>) -> Self {
        self.configure(|b| b.give_up_after(d))
    }
    /// Where [`DeliveryReport`]s go (default: `tracing` at `warn`). Called on the
    /// runtime's thread.
    pub fn on_report(self, f: impl Fn(DeliveryReport) + Send + Sync + 'static) -> Self {
        self.configure(|b| b.on_report(f))
    }
}

/// Configuration of a [`WsSink`]: the options of [`aep_async::WsSinkBuilder`].
///
/// ```
/// let builder = aep_blocking::WsSink::builder("http://127.0.0.1:8787", "coder", "host-a/1").token("secret");
/// # let _ = builder;
/// ```
#[cfg(feature = "ws")]
pub type WsSinkBuilder = SinkBuilder<aep_async::WsSinkBuilder>;

/// Emits over the WebSocket binding (AEP-0003 §3.5): the async crate's
/// [`aep_async::WsSink`], running on a [`Runtime`].
///
/// ```no_run
/// let sink = aep_blocking::WsSink::builder("http://127.0.0.1:8787", "coder", "host-a/1").build()?;
/// let emitter = aep_blocking::Emitter::new("coder", "host-a", sink);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "ws")]
pub type WsSink = NetSink<aep_async::WsSink>;

#[cfg(feature = "ws")]
impl NetSink<aep_async::WsSink> {
    /// Defaults for the relay at `base` (or the relays of a cluster,
    /// [`Relays`](crate::Relays)), saying `hello` as `agent` / `instance`.
    pub fn builder(
        base: impl Into<crate::Relays>,
        agent: impl Into<String>,
        instance: impl Into<String>,
    ) -> WsSinkBuilder {
        SinkBuilder::from_async(aep_async::WsSink::builder(base, agent, instance))
    }
}

#[cfg(feature = "ws")]
impl SinkBuilder<aep_async::WsSinkBuilder> {
    /// Bearer token sent with the upgrade request.
    pub fn token(self, token: impl Into<String>) -> Self {
        self.configure(|b| b.token(token))
    }
    /// Bound on the handshake and `hello` exchange (default 10 s); also how long `close`
    /// waits for the relay's confirmation, see [`aep_async::WsSinkBuilder::connect_timeout`].
    pub fn connect_timeout(self, d: Duration) -> Self {
        self.configure(|b| b.connect_timeout(d))
    }
    /// How long `emit_wait` blocks on a full queue while nothing is delivered before it
    /// fails with [`EmitError::Stalled`](aep_async::EmitError::Stalled) (default 60 s;
    /// `None` blocks for as long as it takes); see
    /// [`aep_async::WsSinkBuilder::give_up_after`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let builder = aep_blocking::WsSink::builder("http://127.0.0.1:8787", "coder", "host-a/1")
    ///     .give_up_after(Some(Duration::from_secs(5)));
    /// assert!(format!("{builder:?}").contains("give_up_after: Some(5s)"));
    /// ```
    pub fn give_up_after(self, d: Option<Duration>) -> Self {
        self.configure(|b| b.give_up_after(d))
    }
    /// Where inbound control commands go (AEP-0004); called on the runtime's thread.
    pub fn command_hook(self, hook: impl aep_async::CommandHook) -> Self {
        self.configure(|b| b.command_hook(hook))
    }
    /// Where [`DeliveryReport`]s go (default: `tracing` at `warn`).
    pub fn on_report(self, f: impl Fn(DeliveryReport) + Send + Sync + 'static) -> Self {
        self.configure(|b| b.on_report(f))
    }
}
