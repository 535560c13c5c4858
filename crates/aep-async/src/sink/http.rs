//! The HTTP ingest sink (AEP-0003 §3.2): batched NDJSON `POST {base}/events`.

use std::sync::Arc;
use std::time::Duration;

use aep_core::Event;
use tokio::time::Instant;
use tracing::Instrument;

use super::{
    default_handler, AbandonGuard, Batch, DeliveryReport, DeliveryStats, Outbox, ReportHandler,
    ReserveFuture, Sink, SinkFuture,
};
use crate::error::{EmitError, TransportError};
use crate::relays::Relays;
use crate::transport::{BackoffPolicy, Failover};

/// Configuration of an [`HttpSink`]; every value has a default.
///
/// ```
/// use aep_async::HttpSink;
/// use std::time::Duration;
///
/// let builder = HttpSink::builder("http://127.0.0.1:8787")
///     .token("secret")
///     .max_batch(500)
///     .linger(Duration::from_millis(2))
///     .request_timeout(Duration::from_secs(5))
///     .on_report(|report| eprintln!("{report}"));
/// # let _ = builder;
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `build`"]
pub struct HttpSinkBuilder {
    relays: Relays,
    token: Option<String>,
    max_batch: usize,
    max_batch_bytes: usize,
    linger: Duration,
    queue_capacity: usize,
    request_timeout: Duration,
    retry: BackoffPolicy,
    give_up_after: Option<Duration>,
    report: ReportHandler,
    client: Option<reqwest::Client>,
}

impl std::fmt::Debug for HttpSinkBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSinkBuilder")
            .field("relays", &self.relays)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_batch", &self.max_batch)
            .field("max_batch_bytes", &self.max_batch_bytes)
            .field("linger", &self.linger)
            .field("queue_capacity", &self.queue_capacity)
            .field("request_timeout", &self.request_timeout)
            .field("give_up_after", &self.give_up_after)
            .finish()
    }
}

impl HttpSinkBuilder {
    /// Bearer token sent as `Authorization: Bearer` (AEP-0003 §8.1).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }
    /// Most events per request (default 1000).
    pub fn max_batch(mut self, n: usize) -> Self {
        self.max_batch = n.max(1);
        self
    }
    /// Most bytes per request body (default 1 MiB; a single larger event still goes).
    pub fn max_batch_bytes(mut self, n: usize) -> Self {
        self.max_batch_bytes = n.max(1);
        self
    }
    /// How long a partial batch waits for company before it is sent (default 5 ms).
    pub fn linger(mut self, d: Duration) -> Self {
        self.linger = d;
        self
    }
    /// Bound of the queue in events (default 10 000). When it is full, `accept` (and
    /// `emit`) drops `debug`/`info` first (AEP-0003 §8.4), while
    /// [`reserve`](Sink::reserve) (and `emit_wait`) waits for room.
    pub fn queue_capacity(mut self, n: usize) -> Self {
        self.queue_capacity = n.max(1);
        self
    }
    /// Deadline of each request, connect to response (default 10 s); expiry is a
    /// network failure and is retried.
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.request_timeout = d;
        self
    }
    /// Retry delays: first and ceiling (defaults 100 ms and 5 s, doubling). With several
    /// relays, a failed batch goes to the next relay at once, and these delays apply
    /// once every relay has failed it.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.retry = BackoffPolicy::new(initial, max);
        self
    }
    /// How long one batch keeps being retried before it is given up and reported
    /// (default 60 s; `None` retries until it succeeds). This also bounds how long
    /// `close()` can wait on a relay that never comes back, and how long the waiting
    /// path ([`reserve`](Sink::reserve), `emit_wait`) waits on a full queue while
    /// nothing is delivered: past it, the relay counts as gone and the wait fails with
    /// [`EmitError::Stalled`] (with `None`, it waits for as long as the sink retries).
    pub fn give_up_after(mut self, d: Option<Duration>) -> Self {
        self.give_up_after = d;
        self
    }
    /// Where [`DeliveryReport`]s go (default: `tracing` at `warn`).
    pub fn on_report(mut self, f: impl Fn(DeliveryReport) + Send + Sync + 'static) -> Self {
        self.report = Arc::new(f);
        self
    }
    /// A preconfigured `reqwest::Client` (proxies, TLS roots); the per-request timeout
    /// is still applied.
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Starts the delivery task on the current tokio runtime.
    ///
    /// Fails with [`TransportError`] (kind `Network`) when called outside a runtime
    /// or when the HTTP client cannot be built (TLS backend initialisation).
    pub fn build(self) -> Result<HttpSink, TransportError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| TransportError::network("HttpSink::build needs a tokio runtime", e))?;
        let client = match self.client.clone() {
            Some(c) => c,
            None => reqwest::Client::builder()
                .build()
                .map_err(|e| TransportError::network("building the HTTP client", e))?,
        };
        let outbox = Arc::new(
            Outbox::new(self.queue_capacity, self.report.clone())
                .wake_at(self.max_batch, self.max_batch_bytes)
                .patience(self.give_up_after),
        );
        let Some(first) = self.relays.first() else {
            return Err(TransportError::network_msg(
                "HttpSink was given no relay URL",
            ));
        };
        let endpoint = ingest_url(first);
        let worker = Worker {
            outbox: outbox.clone(),
            client,
            failover: Failover::new(self.relays.clone(), self.retry),
            config: self,
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
///   sends batches of up to `max_batch` events (or `max_batch_bytes`), after at most
///   `linger`, one request at a time, so order is preserved.
/// - Network failures (timeouts included) and 5xx are retried with the same bytes, so
///   the same ids, with exponential backoff; a 4xx is final. Given several relays of a
///   cluster ([`Relays`]), the retry goes to the next relay at once, and the sink stays
///   on the one that took it: the cluster stores each `(source, id)` once, whichever
///   relay it reached. Both are reported to the
///   handler ([`DeliveryReport`]); the emitting call never fails because of them.
/// - When the queue is full, `accept` drops `debug`/`info` events first, every drop
///   counted ([`DeliveryStats::dropped`]) and reported, one report per burst (AEP-0003
///   §8.4); [`reserve`](Sink::reserve) (what `emit_wait` uses) waits for room instead,
///   and fails with [`EmitError::Stalled`] once nothing has been delivered for
///   `give_up_after` (see [`HttpSinkBuilder::give_up_after`]).
///
/// **Drop:** dropping the last handle closes the sink; the background task keeps
/// delivering what was accepted (with retries, up to `give_up_after`) for as long as the
/// runtime runs. If the runtime shuts down first, the undelivered events are reported
/// as [`DeliveryReport::Abandoned`]. Call [`Sink::close`] (or
/// [`Emitter::close`](crate::Emitter::close)) to wait for delivery instead.
///
/// ```no_run
/// use aep_async::{Emitter, HttpSink};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let sink = HttpSink::builder("http://127.0.0.1:8787").token("secret").build()?;
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
    /// Defaults for the relay at `base` (e.g. `http://127.0.0.1:8787`), or for the
    /// relays of a cluster ([`Relays`]).
    pub fn builder(base: impl Into<Relays>) -> HttpSinkBuilder {
        HttpSinkBuilder {
            relays: base.into(),
            token: None,
            max_batch: 1000,
            max_batch_bytes: 1 << 20,
            linger: Duration::from_millis(5),
            queue_capacity: 10_000,
            request_timeout: Duration::from_secs(10),
            retry: BackoffPolicy::new(Duration::from_millis(100), Duration::from_secs(5)),
            give_up_after: Some(Duration::from_secs(60)),
            report: default_handler(),
            client: None,
        }
    }

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
    client: reqwest::Client,
    /// The relay batches go to, among the sink's relays.
    failover: Failover,
    config: HttpSinkBuilder,
}

/// `{base}/events` (AEP-0003 §3.2).
fn ingest_url(base: &str) -> String {
    format!("{}/events", base.trim_end_matches('/'))
}

impl Worker {
    async fn run(mut self) {
        let _abandon = AbandonGuard(self.outbox.clone());
        loop {
            let cfg = &self.config;
            self.outbox.wait_for_work().await;
            let (live, bytes, closed, urgent) = self.outbox.level();
            if live == 0 && closed {
                break;
            }
            if !closed && !urgent && live < cfg.max_batch && bytes < cfg.max_batch_bytes {
                // Linger for company; wake early when more arrives and the batch is full.
                let deadline = Instant::now() + cfg.linger;
                loop {
                    let notified = self.outbox.notified();
                    let (live, bytes, closed, urgent) = self.outbox.level();
                    if closed || urgent || live >= cfg.max_batch || bytes >= cfg.max_batch_bytes {
                        break;
                    }
                    if tokio::time::timeout_at(deadline, notified).await.is_err() {
                        break;
                    }
                }
            }
            let batch = self.outbox.take(cfg.max_batch, cfg.max_batch_bytes);
            if !batch.is_empty() {
                self.deliver(batch).await;
            }
        }
        tracing::debug!("http sink closed");
    }

    async fn deliver(&mut self, batch: Batch) {
        let events = batch.len();
        let (body, content_type) = encode(batch);
        let started = Instant::now();
        let mut attempt = 0u32;
        // Each batch starts the retry schedule over, on the relay that took the last one.
        self.failover.succeeded();
        loop {
            attempt += 1;
            let error = match self.post(body.clone(), content_type).await {
                Ok(()) => {
                    self.failover.succeeded();
                    self.outbox.settle(events as u64, 0);
                    return;
                }
                Err(e) => e,
            };
            let cfg = &self.config;
            if !error.is_retryable() {
                tracing::warn!(%error, events, "batch rejected");
                // Report before settling, so a flush that returns has seen the report.
                (self.outbox.report)(DeliveryReport::Rejected { error, events });
                self.outbox.settle(0, events as u64);
                return;
            }
            // the same bytes, so the same ids, to the next relay (or this one again)
            let delay = self.failover.failed();
            if cfg
                .give_up_after
                .is_some_and(|limit| started.elapsed() + delay > limit)
            {
                tracing::warn!(%error, events, attempt, "giving up on batch");
                (self.outbox.report)(DeliveryReport::GaveUp { error, events });
                self.outbox.give_up(events as u64);
                return;
            }
            tracing::info!(%error, events, attempt, ?delay, "batch failed; retrying with the same ids");
            (self.outbox.report)(DeliveryReport::Retrying {
                error,
                events,
                attempt,
            });
            tokio::time::sleep(delay).await;
        }
    }

    async fn post(
        &self,
        body: bytes::Bytes,
        content_type: &'static str,
    ) -> Result<(), TransportError> {
        let endpoint = ingest_url(self.failover.current().unwrap_or_default());
        let mut req = self
            .client
            .post(&endpoint)
            .header("AEP-Version", aep_core::AEP_VERSION)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body);
        if let Some(token) = &self.config.token {
            req = req.bearer_auth(token);
        }
        let timeout = self.config.request_timeout;
        let send = async {
            let res = req
                .send()
                .await
                .map_err(|e| TransportError::from_reqwest("ingest", e))?;
            let status = res.status();
            // Read the body so the connection can be reused.
            let _ = res.bytes().await;
            if status.is_success() {
                Ok(())
            } else {
                Err(TransportError::http(
                    status.as_u16(),
                    format!("ingest refused: {status}"),
                ))
            }
        };
        match tokio::time::timeout(timeout, send).await {
            Ok(r) => r,
            Err(_) => Err(TransportError::timeout(format!(
                "ingest timeout after {} ms",
                timeout.as_millis()
            ))),
        }
    }
}

fn encode(batch: Batch) -> (bytes::Bytes, &'static str) {
    match batch.lines().next() {
        Some(one) if batch.len() == 1 => (one, "application/json"),
        _ => (batch.ndjson(), "application/x-ndjson"),
    }
}
