//! Sinks for synchronous code: the async crate's network sinks started on a
//! [`Runtime`] (they deliver from a background task), and [`JsonlSink`] as is.
//!
//! Each network sink keeps its runtime alive for as long as it exists, so an emitter
//! never outlives the task that delivers its events.

#[cfg(any(feature = "http", feature = "ws"))]
use std::time::Duration;

pub use aep_async::{DeliveryReport, DeliveryStats, JsonlSink, Sink, SinkFuture};
#[cfg(any(feature = "http", feature = "ws"))]
use aep_core::Event;

#[cfg(any(feature = "http", feature = "ws"))]
use crate::error::Error;
#[cfg(any(feature = "http", feature = "ws"))]
use crate::runtime::Runtime;

/// Implements the async `Sink` trait for a wrapper by delegating to its `inner` sink.
#[cfg(any(feature = "http", feature = "ws"))]
macro_rules! delegate_sink {
    ($ty:ty) => {
        impl Sink for $ty {
            fn accept(&self, event: &Event) -> Result<(), aep_async::EmitError> {
                self.inner.accept(event)
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
    };
}

/// Configuration of an [`HttpSink`]: the options of [`aep_async::HttpSinkBuilder`],
/// plus the runtime to deliver on.
///
/// ```
/// use std::time::Duration;
/// let builder = aep_blocking::HttpSink::builder("http://127.0.0.1:8787")
///     .token("secret")
///     .max_batch(500)
///     .linger(Duration::from_millis(2))
///     .configure(|b| b.request_timeout(Duration::from_secs(5)));
/// # let _ = builder;
/// ```
#[cfg(feature = "http")]
#[derive(Debug, Clone)]
pub struct HttpSinkBuilder {
    inner: aep_async::HttpSinkBuilder,
    runtime: Option<Runtime>,
}

#[cfg(feature = "http")]
impl HttpSinkBuilder {
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
    /// How long one batch is retried before it is given up (default 60 s).
    pub fn give_up_after(self, d: Option<Duration>) -> Self {
        self.configure(|b| b.give_up_after(d))
    }
    /// Where [`DeliveryReport`]s go (default: `tracing` at `warn`). Called on the
    /// runtime's thread.
    pub fn on_report(self, f: impl Fn(DeliveryReport) + Send + Sync + 'static) -> Self {
        self.configure(|b| b.on_report(f))
    }
    /// Any other option of the async builder.
    pub fn configure(
        mut self,
        f: impl FnOnce(aep_async::HttpSinkBuilder) -> aep_async::HttpSinkBuilder,
    ) -> Self {
        self.inner = f(self.inner);
        self
    }
    /// The runtime that delivers (default: [`Runtime::shared`]).
    pub fn runtime(mut self, runtime: &Runtime) -> Self {
        self.runtime = Some(runtime.clone());
        self
    }
    /// Starts the delivery task; fails when the runtime or the HTTP client cannot be
    /// created.
    pub fn build(self) -> Result<HttpSink, Error> {
        let runtime = match self.runtime {
            Some(rt) => rt,
            None => Runtime::shared()?,
        };
        let inner = runtime.enter(|| self.inner.build())?;
        Ok(HttpSink { inner, runtime })
    }
}

/// Delivers events to `POST {base}/events` in NDJSON batches (AEP-0003 §3.2): the
/// async crate's [`aep_async::HttpSink`], running on a [`Runtime`].
///
/// ```no_run
/// use aep_blocking::{Emitter, HttpSink};
///
/// let emitter = Emitter::new("coder", "host-a", HttpSink::builder("http://127.0.0.1:8787").build()?)?;
/// emitter.session("s1").emit("session.started", serde_json::json!({}))?;
/// emitter.close()?; // delivered, or reported through the handler
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "http")]
#[derive(Debug)]
pub struct HttpSink {
    inner: aep_async::HttpSink,
    runtime: Runtime,
}

#[cfg(feature = "http")]
impl HttpSink {
    /// Defaults for the relay at `base` (e.g. `http://127.0.0.1:8787`).
    pub fn builder(base: impl Into<String>) -> HttpSinkBuilder {
        HttpSinkBuilder {
            inner: aep_async::HttpSink::builder(base),
            runtime: None,
        }
    }
    /// The ingest URL requests go to.
    pub fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
    /// The runtime delivering for this sink.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

#[cfg(feature = "http")]
delegate_sink!(HttpSink);

/// Configuration of a [`WsSink`]: the options of [`aep_async::WsSinkBuilder`], plus the
/// runtime to deliver on.
///
/// ```
/// let builder = aep_blocking::WsSink::builder("http://127.0.0.1:8787", "coder", "host-a/1").token("secret");
/// # let _ = builder;
/// ```
#[cfg(feature = "ws")]
#[derive(Debug, Clone)]
pub struct WsSinkBuilder {
    inner: aep_async::WsSinkBuilder,
    runtime: Option<Runtime>,
}

#[cfg(feature = "ws")]
impl WsSinkBuilder {
    /// Bearer token sent with the upgrade request.
    pub fn token(self, token: impl Into<String>) -> Self {
        self.configure(|b| b.token(token))
    }
    /// Bound on the handshake and `hello` exchange (default 10 s).
    pub fn connect_timeout(self, d: Duration) -> Self {
        self.configure(|b| b.connect_timeout(d))
    }
    /// Where inbound control commands go (AEP-0004); called on the runtime's thread.
    pub fn command_hook(self, hook: impl aep_async::CommandHook) -> Self {
        self.configure(|b| b.command_hook(hook))
    }
    /// Where [`DeliveryReport`]s go (default: `tracing` at `warn`).
    pub fn on_report(self, f: impl Fn(DeliveryReport) + Send + Sync + 'static) -> Self {
        self.configure(|b| b.on_report(f))
    }
    /// Any other option of the async builder.
    pub fn configure(
        mut self,
        f: impl FnOnce(aep_async::WsSinkBuilder) -> aep_async::WsSinkBuilder,
    ) -> Self {
        self.inner = f(self.inner);
        self
    }
    /// The runtime that delivers (default: [`Runtime::shared`]).
    pub fn runtime(mut self, runtime: &Runtime) -> Self {
        self.runtime = Some(runtime.clone());
        self
    }
    /// Starts the connection task.
    pub fn build(self) -> Result<WsSink, Error> {
        let runtime = match self.runtime {
            Some(rt) => rt,
            None => Runtime::shared()?,
        };
        let inner = runtime.enter(|| self.inner.build())?;
        Ok(WsSink { inner, runtime })
    }
}

/// Emits over the WebSocket binding (AEP-0003 §3.5): the async crate's
/// [`aep_async::WsSink`], running on a [`Runtime`].
///
/// ```no_run
/// let sink = aep_blocking::WsSink::builder("http://127.0.0.1:8787", "coder", "host-a/1").build()?;
/// let emitter = aep_blocking::Emitter::new("coder", "host-a", sink)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "ws")]
#[derive(Debug)]
pub struct WsSink {
    inner: aep_async::WsSink,
    runtime: Runtime,
}

#[cfg(feature = "ws")]
impl WsSink {
    /// Defaults for the relay at `base`, saying `hello` as `agent` / `instance`.
    pub fn builder(
        base: impl Into<String>,
        agent: impl Into<String>,
        instance: impl Into<String>,
    ) -> WsSinkBuilder {
        WsSinkBuilder {
            inner: aep_async::WsSink::builder(base, agent, instance),
            runtime: None,
        }
    }
    /// The runtime delivering for this sink.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

#[cfg(feature = "ws")]
delegate_sink!(WsSink);
