//! The exporters: ordinary AEP consumers (AEP-0005 §3.5) that read a relay through
//! aep-async's [`Client::subscribe`](aep_async::Client::subscribe) (with the operator's attr-match
//! filter), or any `Stream` of events, and feed another ecosystem.
//!
//! | exporter | writes | where |
//! |---|---|---|
//! | [`OtlpExporter`] | OTLP/HTTP protobuf LogRecords (and GenAI spans) | `{endpoint}/v1/logs`, `/v1/traces` |
//! | [`CeSink`] | CloudEvents, structured, binary or batched | any CE HTTP receiver |
//! | [`OcsfWriter`] | OCSF records, one JSON line each | a file or any `AsyncWrite` |
//!
//! The HTTP exporters batch, compress (gzip), send the headers a backend needs (an
//! `Authorization` bearer or any header), and retry with exponential backoff within a
//! time budget. Batches wait in a bounded queue; when it is full the exporter reads no
//! further events until there is room, so a slow endpoint slows the subscription down
//! and the relay's own backpressure applies (AEP-0003 §8.4), or, with
//! [`HttpOptions::drop_when_full`], the newest batch is dropped so that the
//! subscription never waits. Everything that did not arrive is counted
//! ([`ExportStats`]) and reported ([`ExportReport`]): events a mapping refuses, payloads
//! the relay sent that are not events, batches refused, given up or dropped.
//!
//! ```no_run
//! use aep_bridge::export::{HttpOptions, OtlpExporter};
//! use aep_async::{Client, SubscribeOptions};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let exporter = OtlpExporter::builder("http://127.0.0.1:4318")
//!     .http(HttpOptions::new().bearer("backend-token"))
//!     .build()?;
//! let filter = SubscribeOptions::new().filter(json!({"severity": {"gte": "info"}}));
//! let relay = Client::new("http://127.0.0.1:8787").token("relay-token");
//! let stats = exporter.run_relay(&relay, filter, tokio::signal::ctrl_c()).await;
//! println!("{} records exported", stats.exported);
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aep_async::{Notice, TransportError, TransportErrorKind};
use aep_core::Event;
use futures::{Stream, StreamExt};
use tokio::time::Instant;

use crate::MapError;

mod ce;
mod http;
mod ocsf;
mod otlp;

pub use ce::{CeMode, CeSink, CeSinkBuilder};
pub use http::HttpOptions;
pub use ocsf::OcsfWriter;
pub use otlp::{OtlpExporter, OtlpExporterBuilder, Signals};

/// What an exporter did with the events it was given. Counters only grow.
///
/// Every event taken is mapped, skipped or unmapped; every record produced ends up
/// exported, rejected, failed, dropped, or is still pending.
///
/// ```
/// let s = aep_bridge::export::ExportStats::default();
/// assert_eq!(s.pending(), 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Events taken from the stream.
    pub events: u64,
    /// Records produced (LogRecords, spans, CloudEvents, OCSF records).
    pub records: u64,
    /// Events that project to nothing by design (an OCSF family out of scope, §4.1).
    pub skipped: u64,
    /// Events a mapping refused ([`MapError`], [`crate::ce::CeError`]), and payloads the
    /// relay sent that are not events: counted drops of bad input.
    pub unmapped: u64,
    /// Records the endpoint accepted (a 2xx, less any it reported rejecting).
    pub exported: u64,
    /// Records the endpoint refused for good (a final status, or OTLP partial success).
    pub rejected: u64,
    /// Records given up on when retries ran out of their time budget.
    pub failed: u64,
    /// Records dropped because the send queue was full.
    pub dropped: u64,
    /// Spans never finished: evicted past the open-span limit, replaced by a second
    /// start, or still open when the exporter stopped.
    pub abandoned: u64,
}

impl ExportStats {
    /// Records produced and not yet settled one way or another.
    ///
    /// ```
    /// let s = aep_bridge::export::ExportStats { records: 5, exported: 3, dropped: 1, ..Default::default() };
    /// assert_eq!(s.pending(), 1);
    /// ```
    pub fn pending(&self) -> u64 {
        self.records
            .saturating_sub(self.exported + self.rejected + self.failed + self.dropped)
    }
}

/// Something that did not arrive, told to the exporter's report handler as it happens.
///
/// ```
/// use aep_bridge::export::ExportReport;
/// let r = ExportReport::Dropped { records: 3 };
/// assert!(r.to_string().contains("dropped 3"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportReport {
    /// A mapping refused an event (a `time` or `traceparent` that is not one).
    Unmapped {
        /// The event's id.
        id: String,
        /// Why.
        error: MapError,
    },
    /// The CloudEvents mapping refused an event.
    NotMappable {
        /// The event's id.
        id: String,
        /// Why.
        error: crate::ce::CeError,
    },
    /// The relay sent a payload that is not an event (the subscription dropped it).
    Malformed {
        /// The decoder's error.
        error: TransportError,
    },
    /// A batch failed with a retryable error and will be sent again.
    Retrying {
        /// What went wrong.
        error: TransportError,
        /// Records in the batch.
        records: u64,
        /// The attempt that failed (1 for the first).
        attempt: u32,
    },
    /// The endpoint refused records for good.
    Rejected {
        /// The refusal.
        error: TransportError,
        /// Records refused.
        records: u64,
    },
    /// Retries ran out of their time budget.
    GaveUp {
        /// The last failure.
        error: TransportError,
        /// Records lost.
        records: u64,
    },
    /// The send queue was full: the batch was dropped.
    Dropped {
        /// Records lost.
        records: u64,
    },
}

impl fmt::Display for ExportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportReport::Unmapped { id, error } => write!(f, "event {id} not exported: {error}"),
            ExportReport::NotMappable { id, error } => {
                write!(f, "event {id} not forwarded: {error}")
            }
            ExportReport::Malformed { error } => write!(f, "relay sent a non-event: {error}"),
            ExportReport::Retrying {
                error,
                records,
                attempt,
            } => write!(
                f,
                "batch of {records} failed (attempt {attempt}), retrying: {error}"
            ),
            ExportReport::Rejected { error, records } => {
                write!(f, "{records} records rejected: {error}")
            }
            ExportReport::GaveUp { error, records } => {
                write!(f, "gave up on {records} records: {error}")
            }
            ExportReport::Dropped { records } => {
                write!(f, "send queue full: dropped {records} records")
            }
        }
    }
}

/// Where [`ExportReport`]s go.
///
/// ```
/// let handler: aep_bridge::export::ReportHandler = std::sync::Arc::new(|r| eprintln!("{r}"));
/// handler(aep_bridge::export::ExportReport::Dropped { records: 1 });
/// ```
pub type ReportHandler = Arc<dyn Fn(ExportReport) + Send + Sync>;

/// A value `Debug` shows as `..`: a report handler (a closure has no `Debug`), a caller's
/// `reqwest::Client` (whose default headers may hold secrets), a writer.
#[derive(Clone)]
pub(crate) struct Opaque<T>(pub(crate) T);

impl<T> fmt::Debug for Opaque<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("..")
    }
}

/// Why an exporter could not be built, or a writer failed.
///
/// ```
/// let err = aep_bridge::export::OtlpExporter::builder("not a url").build().unwrap_err();
/// assert!(matches!(err, aep_bridge::export::ExportError::Url { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// An endpoint is not an absolute `http://` or `https://` URL.
    #[error("endpoint `{url}` is not an absolute http:// or https:// URL: {why}")]
    Url {
        /// The endpoint given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A header name or value cannot be sent.
    #[error("header `{0}` has a name or value HTTP cannot carry")]
    Header(String),
    /// The HTTP client could not be built (the TLS backend failed to load).
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// Writing the output failed (a full disk, a closed pipe): the run stopped there.
    #[error("writing the output failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The live counters behind [`ExportStats`], shared by an exporter and its tasks.
#[derive(Default)]
pub(crate) struct Counters {
    events: AtomicU64,
    records: AtomicU64,
    skipped: AtomicU64,
    unmapped: AtomicU64,
    exported: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    abandoned: AtomicU64,
}

/// One counter of [`Counters`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Count {
    Events,
    Records,
    Skipped,
    Unmapped,
    Exported,
    Rejected,
    Failed,
    Dropped,
    Abandoned,
}

impl Counters {
    pub(crate) fn add(&self, which: Count, n: u64) {
        let cell = match which {
            Count::Events => &self.events,
            Count::Records => &self.records,
            Count::Skipped => &self.skipped,
            Count::Unmapped => &self.unmapped,
            Count::Exported => &self.exported,
            Count::Rejected => &self.rejected,
            Count::Failed => &self.failed,
            Count::Dropped => &self.dropped,
            Count::Abandoned => &self.abandoned,
        };
        cell.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ExportStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ExportStats {
            events: get(&self.events),
            records: get(&self.records),
            skipped: get(&self.skipped),
            unmapped: get(&self.unmapped),
            exported: get(&self.exported),
            rejected: get(&self.rejected),
            failed: get(&self.failed),
            dropped: get(&self.dropped),
            abandoned: get(&self.abandoned),
        }
    }
}

/// The counters and the report handler of one exporter.
#[derive(Clone)]
pub(crate) struct Books {
    pub(crate) counters: Arc<Counters>,
    report: ReportHandler,
}

impl fmt::Debug for Books {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Books")
            .field(&self.counters.snapshot())
            .finish()
    }
}

impl Books {
    pub(crate) fn new(report: Option<ReportHandler>) -> Self {
        Books {
            counters: Arc::default(),
            report: report.unwrap_or_else(|| Arc::new(log_report)),
        }
    }

    pub(crate) fn add(&self, which: Count, n: u64) {
        self.counters.add(which, n);
    }

    pub(crate) fn report(&self, report: ExportReport) {
        (self.report)(report);
    }

    pub(crate) fn stats(&self) -> ExportStats {
        self.counters.snapshot()
    }

    /// Counts and reports an event a mapping refused.
    pub(crate) fn unmapped(&self, event: &Event, error: MapError) {
        self.add(Count::Unmapped, 1);
        self.report(ExportReport::Unmapped {
            id: event.id().to_owned(),
            error,
        });
    }

    /// A subscription to `relay` whose notices are the exporter's: [`Books::notice_handler`]
    /// replaces the one on `options`.
    pub(crate) fn subscribe(
        &self,
        relay: &aep_async::Client,
        options: aep_async::SubscribeOptions,
    ) -> aep_async::Subscription {
        relay.subscribe(options.on_notice(self.notice_handler()))
    }

    /// A notice handler for a subscription: payloads the relay sent that are not
    /// events are counted as unmapped and reported; everything else goes to `tracing`.
    pub(crate) fn notice_handler(&self) -> impl Fn(Notice) + Send + Sync + 'static + use<> {
        let books = self.clone();
        move |notice| match notice {
            Notice::Error(error) if error.kind() == TransportErrorKind::Parse => {
                books.add(Count::Unmapped, 1);
                books.report(ExportReport::Malformed { error });
            }
            Notice::Error(error) => tracing::warn!(%error, "exporter subscription"),
            other => tracing::debug!(notice = ?other, "exporter subscription"),
        }
    }
}

/// The default report handler: `tracing`, at `warn` for losses.
fn log_report(report: ExportReport) {
    match report {
        ExportReport::Retrying { .. } => tracing::info!(%report, "aep-bridge export"),
        other => tracing::warn!(report = %other, "aep-bridge export"),
    }
}

/// What a run loop feeds: the event-by-event state of one exporter. Sending waits for
/// room in the queue (unless the exporter drops when full), which is how a slow
/// endpoint slows the stream down.
pub(crate) trait Pump {
    /// Takes one event.
    fn event(&mut self, event: Event) -> impl Future<Output = ()> + Send;
    /// When the oldest pending batch must go, if any is pending.
    fn deadline(&self) -> Option<Instant>;
    /// Sends what is due at `now`.
    fn due(&mut self, now: Instant) -> impl Future<Output = ()> + Send;
    /// Sends everything pending, and waits until the queue has drained.
    fn finish(self) -> impl Future<Output = ()> + Send;
}

/// Feeds `events` to `pump` until the stream ends or `shutdown` resolves, then sends
/// what is pending and waits for the queue to drain.
pub(crate) async fn drive<P: Pump + Send>(
    mut pump: P,
    events: impl Stream<Item = Event> + Send,
    shutdown: impl Future<Output = ()> + Send,
) {
    let mut events = std::pin::pin!(events);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let deadline = pump.deadline();
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = sleep_until(deadline) => pump.due(Instant::now()).await,
            next = events.next() => match next {
                Some(event) => pump.event(event).await,
                None => break,
            },
        }
    }
    pump.finish().await;
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Items waiting to be sent together: full at `max`, due `linger` after the first.
#[derive(Debug)]
pub(crate) struct Batch<T> {
    items: Vec<T>,
    since: Option<Instant>,
    max: usize,
    linger: Duration,
}

impl<T> Batch<T> {
    pub(crate) fn new(max: usize, linger: Duration) -> Self {
        Batch {
            items: Vec::new(),
            since: None,
            max: max.max(1),
            linger,
        }
    }

    /// Adds an item; returns the batch when it is full.
    pub(crate) fn push(&mut self, item: T) -> Option<Vec<T>> {
        if self.items.is_empty() {
            self.since = Some(Instant::now());
        }
        self.items.push(item);
        (self.items.len() >= self.max).then(|| self.take())
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.since.map(|s| s + self.linger)
    }

    /// The batch if it is due at `now`.
    pub(crate) fn due(&mut self, now: Instant) -> Option<Vec<T>> {
        self.deadline()
            .filter(|d| *d <= now)
            .map(|_| self.take())
            .filter(|b| !b.is_empty())
    }

    pub(crate) fn take(&mut self) -> Vec<T> {
        self.since = None;
        std::mem::take(&mut self.items)
    }
}

/// The earlier of two deadlines.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
