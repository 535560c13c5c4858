//! Where finished events go: the [`Sink`] trait and its implementations.
//!
//! - [`JsonlSink`]: one atomic `write` per line (AEP-0003 §3.1).
//! - `HttpSink` (feature `http`): batched NDJSON `POST {base}/events` (AEP-0003 §3.2).
//! - `WsSink` (feature `ws`): the WebSocket binding as an emitter (AEP-0003 §3.5).
//!
//! The network sinks share one outbox: a bounded queue that, when full, drops `debug`
//! and `info` events first and counts every drop (AEP-0003 §8.4).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use aep_core::{Event, Severity};

use crate::error::{EmitError, TransportError};

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub mod jsonl;
#[cfg(any(feature = "http", feature = "ws"))]
mod outbox;
#[cfg(feature = "http")]
pub(crate) use outbox::Batch;
#[cfg(feature = "ws")]
pub(crate) use outbox::Claim;
#[cfg(any(feature = "http", feature = "ws"))]
pub(crate) use outbox::{default_handler, AbandonGuard, Outbox};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub mod ws;

/// A boxed future returned by [`Sink`] methods.
pub type SinkFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Destination of finished events.
///
/// `accept` must not wait for the network: network sinks queue the event and deliver
/// it from a background task. It fails only for local reasons (a closed sink, a file
/// that cannot be written), never because a relay is down.
///
/// ```
/// use aep_async::{DeliveryStats, Sink, SinkFuture};
/// use aep_core::Event;
/// use std::sync::Mutex;
///
/// #[derive(Debug, Default)]
/// struct Collect(Mutex<Vec<String>>);
///
/// impl Sink for Collect {
///     fn accept(&self, event: &Event) -> Result<(), aep_async::EmitError> {
///         self.0.lock().unwrap().push(event.to_json());
///         Ok(())
///     }
///     fn flush(&self) -> SinkFuture<'_> { Box::pin(async {}) }
///     fn close(&self) -> SinkFuture<'_> { Box::pin(async {}) }
/// }
/// let emitter = aep_async::Emitter::new("a", "h", Collect::default());
/// emitter.emit("agent.heartbeat", None::<()>)?;
/// assert_eq!(emitter.stats(), DeliveryStats::default());
/// # Ok::<(), aep_async::EmitError>(())
/// ```
pub trait Sink: Send + Sync + fmt::Debug + 'static {
    /// Takes one finished event.
    fn accept(&self, event: &Event) -> Result<(), EmitError>;
    /// Resolves once every event accepted before the call is delivered or finally
    /// reported (rejected, dropped, given up).
    fn flush(&self) -> SinkFuture<'_>;
    /// Stops accepting, then resolves like [`Sink::flush`].
    fn close(&self) -> SinkFuture<'_>;
    /// Counters for what happened to accepted events (zero for sinks that keep none).
    fn stats(&self) -> DeliveryStats {
        DeliveryStats::default()
    }
}

/// What a sink did with the events it accepted.
///
/// ```
/// let s = aep_async::DeliveryStats::default();
/// assert_eq!(s.pending(), 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeliveryStats {
    /// Events taken by `accept`.
    pub accepted: u64,
    /// Events the endpoint acknowledged (HTTP 2xx, or written to the socket/file).
    pub delivered: u64,
    /// Events refused for good (a 4xx, or retries given up).
    pub rejected: u64,
    /// Events dropped by the bounded queue under pressure (AEP-0003 §8.4).
    pub dropped: u64,
}

impl DeliveryStats {
    /// Accepted events not yet settled one way or another.
    pub fn pending(&self) -> u64 {
        self.accepted
            .saturating_sub(self.delivered + self.rejected + self.dropped)
    }
}

/// A delivery problem, reported to the sink's handler; the emitting call never sees it.
///
/// ```
/// use aep_async::DeliveryReport;
/// let r = DeliveryReport::Dropped { severity: aep_core::Severity::Debug, total: 1 };
/// assert!(r.to_string().contains("dropped"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DeliveryReport {
    /// A batch failed with a network error or a 5xx and will be sent again, same ids.
    Retrying {
        /// What went wrong.
        error: TransportError,
        /// Events in the batch.
        events: usize,
        /// The attempt that failed (1 for the first).
        attempt: u32,
    },
    /// The endpoint refused a batch with a 4xx: final, the events are lost.
    Rejected {
        /// The refusal.
        error: TransportError,
        /// Events in the batch.
        events: usize,
    },
    /// Retries ran out of their time budget: the events are lost.
    GaveUp {
        /// The last failure.
        error: TransportError,
        /// Events in the batch.
        events: usize,
    },
    /// The bounded queue dropped an event under pressure (AEP-0003 §8.4).
    Dropped {
        /// Severity of the dropped event (`debug`/`info` go first).
        severity: Severity,
        /// Drops so far on this sink.
        total: u64,
    },
    /// The runtime shut down with events still queued.
    Abandoned {
        /// Events that were never delivered.
        events: u64,
    },
    /// Something the endpoint sent could not be used (a WebSocket error frame, an
    /// undecodable frame); nothing was lost.
    Endpoint {
        /// What arrived.
        error: TransportError,
    },
}

impl fmt::Display for DeliveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliveryReport::Retrying {
                error,
                events,
                attempt,
            } => write!(
                f,
                "attempt {attempt} for {events} events failed ({error}); retrying"
            ),
            DeliveryReport::Rejected { error, events } => {
                write!(f, "{events} events rejected ({error})")
            }
            DeliveryReport::GaveUp { error, events } => {
                write!(f, "gave up on {events} events ({error})")
            }
            DeliveryReport::Dropped { severity, total } => {
                write!(
                    f,
                    "queue full: dropped a {severity} event ({total} dropped so far)"
                )
            }
            DeliveryReport::Abandoned { events } => {
                write!(f, "runtime shut down with {events} events undelivered")
            }
            DeliveryReport::Endpoint { error } => write!(f, "endpoint: {error}"),
        }
    }
}

/// The handler that receives [`DeliveryReport`]s. The default logs them through
/// `tracing` at `warn` level.
pub type ReportHandler = Arc<dyn Fn(DeliveryReport) + Send + Sync>;

pub use jsonl::JsonlSink;
