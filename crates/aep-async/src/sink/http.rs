//! The HTTP ingest sink (AEP-0003 §3.2): batched NDJSON `POST {base}/events`.

use std::sync::Arc;
use std::time::Duration;

use aep_core::binding::{self, VERSION_HEADER};
use aep_core::Event;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use tokio::time::Instant;
use tracing::Instrument;

use super::{
    default_handler, AbandonGuard, Batch, DeliveryReport, DeliveryStats, Outbox, ReportHandler,
    ReserveFuture, Sink, SinkFuture,
};
use crate::callback::Callback;
use crate::client::Client;
use crate::delivery::{
    BatchOptions, HttpDelivery, Request, RetryPolicy, Retryable, Target, Undelivered,
};
use crate::error::{EmitError, TransportError};

/// What an [`HttpSink`] does beyond connecting (where, and with what token, is the
/// [`Client`]'s); every value has a default.
///
/// | option | default |
/// |---|---|
/// | batch | 1000 events, 1 MiB, sent at most 5 ms after the first |
/// | queue capacity | 10 000 events |
/// | request timeout | 10 s, connect to answer |
/// | retry | [`RetryPolicy`]'s: 100 ms doubling to 5 s, given up after 60 s |
/// | reports | `tracing` at `warn` |
///
/// ```
/// use aep_async::HttpSinkOptions;
/// use std::time::Duration;
///
/// let options = HttpSinkOptions::new()
///     .batch(|b| b.max_items(500).linger(Duration::from_millis(2)))
///     .request_timeout(Duration::from_secs(5))
///     .retry(|r| r.give_up_after(Some(Duration::from_secs(30))))
///     .on_report(|report| eprintln!("{report}"));
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
#[must_use = "options do nothing until passed to Client::http_sink"]
pub struct HttpSinkOptions {
    batch: BatchOptions,
    queue_capacity: usize,
    request_timeout: Duration,
    retry: RetryPolicy,
    report: Callback<ReportHandler>,
}

impl Default for HttpSinkOptions {
    fn default() -> Self {
        HttpSinkOptions::new()
    }
}

impl HttpSinkOptions {
    /// The defaults above.
    pub fn new() -> Self {
        HttpSinkOptions {
            batch: BatchOptions::new(1000, 1 << 20, Duration::from_millis(5)),
            queue_capacity: 10_000,
            request_timeout: Duration::from_secs(10),
            retry: RetryPolicy::new(),
            report: Callback(default_handler()),
        }
    }
    /// The batches: most events and bytes per request, and how long a partial batch
    /// waits for company, changed from the defaults above by `f`.
    pub fn batch(mut self, f: impl FnOnce(BatchOptions) -> BatchOptions) -> Self {
        self.batch = f(self.batch);
        self
    }
    aep_core::setters! {
        /// Bound of the queue in events (default 10 000). When it is full, `accept` (and
        /// `emit`) drops `debug`/`info` first (AEP-0003 §8.4), while
        /// [`reserve`](Sink::reserve) (and `emit_wait`) waits for room.
        pub fn queue_capacity(n: usize) => queue_capacity = n.max(1);
        /// Deadline of each request, connect to answer (default 10 s); expiry is a
        /// network failure and is retried.
        pub fn request_timeout(d: Duration) => request_timeout = d;
    }
    /// The retries, changed from the defaults by `f`: network failures and `5xx` are
    /// sent again (AEP-0003 §3.2 rule 4); with several relays, a failed batch goes to
    /// the next relay at once, and the backoff applies once every relay has failed it.
    /// `give_up_after` also bounds how long `close()` can wait on a relay that never
    /// comes back, and how long the waiting path ([`reserve`](Sink::reserve),
    /// `emit_wait`) waits on a full queue while nothing is delivered: past it, the relay
    /// counts as gone and the wait fails with [`EmitError::Stalled`] (with `None`, it
    /// waits for as long as the sink retries).
    pub fn retry(mut self, f: impl FnOnce(RetryPolicy) -> RetryPolicy) -> Self {
        self.retry = f(self.retry);
        self
    }
    aep_core::setters! {
        /// Where [`DeliveryReport`]s go (default: `tracing` at `warn`).
        pub fn on_report(f: impl Fn(DeliveryReport) + Send + Sync + 'static) => report = Callback(Arc::new(f));
    }
}

impl Client {
    /// Starts an [`HttpSink`] to the client's relays on the current tokio runtime.
    /// Feature `http`.
    ///
    /// Fails with [`TransportError`] (kind `Network`) when called outside a runtime,
    /// when the client has no relay, or when the HTTP client cannot be built (TLS
    /// backend initialisation).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), aep_async::TransportError> {
    /// use aep_async::{Client, HttpSinkOptions};
    /// let sink = Client::new("http://127.0.0.1:8787").http_sink(HttpSinkOptions::new())?;
    /// # let _ = sink; Ok(()) }
    /// ```
    pub fn http_sink(&self, options: HttpSinkOptions) -> Result<HttpSink, TransportError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| TransportError::network("Client::http_sink needs a tokio runtime", e))?;
        let Some(first) = self.relays().first() else {
            return Err(TransportError::network_msg(
                "the client was given no relay URL",
            ));
        };
        let endpoint = binding::events_url(first);
        let link = self.link(crate::client::Defaults::CONSUMER);
        let mut headers = HeaderMap::new();
        headers.insert(
            VERSION_HEADER,
            HeaderValue::from_static(aep_core::AEP_VERSION),
        );
        if let Some(token) = &link.token {
            let value = HeaderValue::try_from(format!("Bearer {token}"))
                .map_err(|e| TransportError::network("the token is not a valid header value", e))?;
            headers.insert(AUTHORIZATION, value);
        }
        let delivery = HttpDelivery::new(self.http()?, Retryable::Ingest)
            .relays(link.relays)
            .headers(headers)
            .timeout(options.request_timeout)
            .retry(options.retry);
        let outbox = Arc::new(
            Outbox::new(options.queue_capacity, options.report.0.clone())
                .wake_at(options.batch.items(), options.batch.bytes())
                .patience(options.retry.gives_up_after()),
        );
        let worker = Worker {
            outbox: outbox.clone(),
            delivery,
            batch: options.batch,
        };
        let span = tracing::info_span!(
            "aep_http_sink",
            endpoint = %aep_core::redact::redact_urls(&endpoint)
        );
        runtime.spawn(worker.run().instrument(span));
        Ok(HttpSink { outbox, endpoint })
    }
}

/// Delivers events to `POST {base}/events` in NDJSON batches (AEP-0003 §3.2).
///
/// - `accept` serializes the event into a bounded queue and returns; a background task
///   sends batches ([`HttpSinkOptions::batch`]) one request at a time, so order is
///   preserved, through the crate's one HTTP delivery worker
///   ([`crate::delivery::HttpDelivery`]).
/// - Network failures (timeouts included) and 5xx are retried with the same bytes, so
///   the same ids, with exponential backoff (a `Retry-After` within its ceiling
///   honoured); a 4xx is final. Given several relays of a
///   cluster ([`Relays`](crate::Relays)), the retry goes to the next relay at once, and the sink stays
///   on the one that took it: the cluster stores each `(source, id)` once, whichever
///   relay it reached. Both are reported to the
///   handler ([`DeliveryReport`]); the emitting call never fails because of them.
/// - When the queue is full, `accept` drops `debug`/`info` events first, every drop
///   counted ([`DeliveryStats::dropped`]) and reported, one report per burst (AEP-0003
///   §8.4); [`reserve`](Sink::reserve) (what `emit_wait` uses) waits for room instead,
///   and fails with [`EmitError::Stalled`] once nothing has been delivered for
///   `give_up_after` (see [`HttpSinkOptions::retry`]).
///
/// **Drop:** dropping the last handle closes the sink; the background task keeps
/// delivering what was accepted (with retries, up to `give_up_after`) for as long as the
/// runtime runs. If the runtime shuts down first, the undelivered events are reported
/// as [`DeliveryReport::Abandoned`]. Call [`Sink::close`] (or
/// [`Emitter::close`](crate::Emitter::close)) to wait for delivery instead.
///
/// ```no_run
/// use aep_async::{Client, Emitter, HttpSinkOptions};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::new("http://127.0.0.1:8787").token("secret");
/// let sink = client.http_sink(HttpSinkOptions::new())?;
/// let emitter = Emitter::new("coder", "host-a", sink);
/// emitter.session("s1").emit("session.started", serde_json::json!({}))?;
/// emitter.close().await; // delivered, or reported through the handler
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct HttpSink {
    outbox: Arc<Outbox>,
    endpoint: String,
}

impl HttpSink {
    /// The ingest URL requests go to (of the first relay, given several).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for HttpSink {
    fn drop(&mut self) {
        self.outbox.mark_closed();
    }
}

impl Sink for HttpSink {
    fn accept(&self, event: &Event) -> Result<(), EmitError> {
        self.outbox.push(event)
    }
    fn reserve(&self) -> ReserveFuture<'_> {
        Box::pin(self.outbox.reserve())
    }
    fn accept_reserved(&self, event: &Event) -> Result<(), EmitError> {
        self.outbox.push_reserved(event, None)
    }
    fn release(&self) {
        self.outbox.release();
    }
    fn flush(&self) -> SinkFuture<'_> {
        Box::pin(self.outbox.flush())
    }
    fn close(&self) -> SinkFuture<'_> {
        Box::pin(self.outbox.close())
    }
    fn stats(&self) -> DeliveryStats {
        self.outbox.stats()
    }
}

struct Worker {
    outbox: Arc<Outbox>,
    /// Sends each batch, with retries and failover.
    delivery: HttpDelivery,
    batch: BatchOptions,
}

impl Worker {
    async fn run(mut self) {
        let _abandon = AbandonGuard(self.outbox.clone());
        let (max_items, max_bytes) = (self.batch.items(), self.batch.bytes());
        loop {
            self.outbox.wait_for_work().await;
            let (live, bytes, closed, urgent) = self.outbox.level();
            if live == 0 && closed {
                break;
            }
            if !closed && !urgent && live < max_items && bytes < max_bytes {
                // Linger for company; wake early when more arrives and the batch is full.
                let deadline = Instant::now() + self.batch.lingers();
                loop {
                    let notified = self.outbox.notified();
                    let (live, bytes, closed, urgent) = self.outbox.level();
                    if closed || urgent || live >= max_items || bytes >= max_bytes {
                        break;
                    }
                    if tokio::time::timeout_at(deadline, notified).await.is_err() {
                        break;
                    }
                }
            }
            let batch = self.outbox.take(max_items, max_bytes);
            if !batch.is_empty() {
                self.deliver(batch).await;
            }
        }
        tracing::debug!("http sink closed");
    }

    async fn deliver(&mut self, batch: Batch) {
        let events = batch.len();
        let request = encode(batch);
        let report = &self.outbox.report;
        let retrying = |error, attempt| {
            tracing::info!(%error, events, attempt, "batch failed; retrying with the same ids");
            report(DeliveryReport::Retrying {
                error,
                events,
                attempt,
            });
        };
        // Each report before its settling, so a flush that returns has seen the report.
        match self.delivery.deliver(&request, retrying).await {
            Ok(_) => self.outbox.settle(events as u64, 0),
            Err(Undelivered::Rejected(error)) => {
                tracing::warn!(%error, events, "batch rejected");
                report(DeliveryReport::Rejected { error, events });
                self.outbox.settle(0, events as u64);
            }
            Err(Undelivered::GaveUp(error)) => {
                tracing::warn!(%error, events, "giving up on batch");
                report(DeliveryReport::GaveUp { error, events });
                self.outbox.give_up(events as u64);
            }
        }
    }
}

/// One event as JSON, several as NDJSON (AEP-0003 §3.2 rule 1).
fn encode(batch: Batch) -> Request {
    let target = Target::Relay(binding::EVENTS_PATH);
    match batch.lines().next() {
        Some(one) if batch.len() == 1 => Request::new(target, one, binding::JSON_CONTENT_TYPE),
        _ => Request::new(target, batch.ndjson(), binding::NDJSON_CONTENT_TYPE),
    }
}
