//! Where finished events go: the [`Sink`] trait and its implementations.
//!
//! - [`JsonlSink`]: one atomic `write` per line (AEP-0003 §3.1).
//! - `HttpSink` (feature `http`): batched NDJSON `POST {base}/events` (AEP-0003 §3.2).
//! - `WsSink` (feature `ws`): the WebSocket binding as an emitter (AEP-0003 §3.5).
//!
//! The network sinks share one outbox: a bounded queue with the two policies AEP-0003
//! §8.4 allows an emitter's buffer.
//!
//! - **Drop** (the default, [`Sink::accept`], what `emit` uses): never waits; when the
//!   queue is full, `debug` and `info` events go first, every drop is counted at once in
//!   [`DeliveryStats::dropped`] and reported coalesced, one
//!   [`DeliveryReport::Dropped`] per burst with its count.
//! - **Wait** ([`Sink::reserve`], what `emit_wait` and `reserve` on the emitters use):
//!   waits for a place in the queue, so a producer faster than the network is slowed to
//!   its pace and loses nothing. It fails with [`EmitError::Closed`] once the sink is
//!   closed and with [`EmitError::Stalled`] once the sink has delivered nothing for as
//!   long as its retry policy allows (`give_up_after`), instead of waiting for ever.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use aep_core::{Event, Severity};

use crate::error::{EmitError, TransportError};

#[cfg(feature = "ws")]
mod confirm;
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

/// The boxed future of [`Sink::reserve`]: `Ok` once a place is held.
pub type ReserveFuture<'a> = Pin<Box<dyn Future<Output = Result<(), EmitError>> + Send + 'a>>;

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
    /// Waits until the sink can take one more event without dropping any, and holds
    /// that place (AEP-0003 §8.4's "block" rather than "drop"). Each `Ok` must be
    /// followed by exactly one [`accept_reserved`](Sink::accept_reserved) or
    /// [`release`](Sink::release): the emitters' [`EmitPermit`](crate::EmitPermit)
    /// does this, so call those instead. Dropping the future before it resolves holds
    /// nothing.
    ///
    /// Fails with [`EmitError::Closed`] once the sink is closed, and, for the network
    /// sinks, with [`EmitError::Stalled`] once they have delivered nothing for their
    /// `give_up_after` while events wait. The default, for sinks that never drop (JSONL,
    /// test sinks), resolves at once.
    fn reserve(&self) -> ReserveFuture<'_> {
        Box::pin(std::future::ready(Ok(())))
    }
    /// [`accept`](Sink::accept) into the place [`reserve`](Sink::reserve) held, which
    /// it uses up whatever the outcome. Defaults to `accept`.
    fn accept_reserved(&self, event: &Event) -> Result<(), EmitError> {
        self.accept(event)
    }
    /// Gives back a place [`reserve`](Sink::reserve) held and nothing used. Defaults to
    /// nothing.
    fn release(&self) {}
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
    /// Events the endpoint acknowledged: an HTTP 2xx; over WebSocket, the relay's
    /// `pong` to a `ping` written after them (or, from a relay that answers none within
    /// the connect timeout, written); for a file, written.
    pub delivered: u64,
    /// Events refused for good (a 4xx or a WebSocket `error` frame refusing the event,
    /// or retries given up).
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
/// use aep_async::{DeliveryReport, TransportError};
/// let r = DeliveryReport::GaveUp { error: TransportError::network_msg("refused"), events: 3 };
/// assert_eq!(r.to_string(), "gave up on 3 events (network: refused)");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DeliveryReport {
    /// A batch failed with a network error or a 5xx (over WebSocket, the relay refused
    /// an event for now: `limit-exceeded`) and will be sent again, same ids.
    Retrying {
        /// What went wrong.
        error: TransportError,
        /// Events in the batch.
        events: usize,
        /// The attempt that failed (1 for the first).
        attempt: u32,
    },
    /// The endpoint refused a batch with a 4xx (over WebSocket, an `error` frame such as
    /// `invalid-event` naming the event): final, the events are lost.
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
    /// The bounded queue dropped events under pressure (AEP-0003 §8.4). Drops are
    /// counted at once in [`DeliveryStats::dropped`] and reported coalesced: one report
    /// per burst, at most one a second, and any left when the sink is flushed, closed or
    /// idle (the end of the burst). The `events` of all reports add up to `dropped`.
    #[non_exhaustive]
    Dropped {
        /// Events dropped since the previous report.
        events: u64,
        /// The most severe of them (`debug`/`info` go first; anything above means the
        /// queue held nothing droppable).
        most_severe: Severity,
        /// Drops so far on this sink.
        total: u64,
    },
    /// The runtime shut down with events still queued.
    Abandoned {
        /// Events that were never delivered.
        events: u64,
    },
    /// Something the endpoint sent could not be used (a WebSocket error frame that
    /// names no event waiting for confirmation, an undecodable frame); nothing was lost.
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
            DeliveryReport::Dropped {
                events,
                most_severe,
                total,
            } => {
                let s = if *events == 1 { "" } else { "s" };
                write!(
                    f,
                    "queue full: dropped {events} event{s}, the most severe {most_severe} \
                     ({total} dropped so far; emit_wait waits for room instead)"
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
