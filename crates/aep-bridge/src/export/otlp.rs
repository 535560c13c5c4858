//! The OTLP/HTTP exporter (AEP-0005 §3.5): LogRecords to `/v1/logs`, and in span mode
//! GenAI spans to `/v1/traces`, as protobuf.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use aep_async::delivery::{BatchOptions, Retryable};
use aep_async::{Client, SubscribeOptions};
use aep_core::Event;
use futures::Stream;
use prost::Message;
use tokio::time::Instant;

use super::http::{endpoint, Answer, Dispatcher, HttpOptions, Prepared, Request};
use super::{
    drive, earliest, Batch, Books, Count, ExportError, ExportReport, ExportStats, Opaque, Pump,
    ReportHandler,
};
use crate::otlp::{logs_request, to_log_record, LogRecord, OtlpOptions};
use crate::spans::{traces_request, Span, SpanAssembler, SpanOptions};
use crate::CaptureLimit;

/// Which OTLP signals an exporter writes.
///
/// ```
/// use aep_bridge::export::Signals;
/// assert_eq!(Signals::default(), Signals::Logs);
/// assert!(Signals::LogsAndSpans.spans());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Signals {
    /// LogRecords, one per event (AEP-0005 §3.1).
    #[default]
    Logs,
    /// Spans only: sessions, runs and tool calls (see [`crate::spans`]).
    Spans,
    /// Both.
    LogsAndSpans,
}

impl Signals {
    /// Whether LogRecords are written.
    ///
    /// ```
    /// assert!(!aep_bridge::export::Signals::Spans.logs());
    /// ```
    pub fn logs(self) -> bool {
        matches!(self, Signals::Logs | Signals::LogsAndSpans)
    }

    /// Whether spans are written.
    ///
    /// ```
    /// assert!(!aep_bridge::export::Signals::Logs.spans());
    /// ```
    pub fn spans(self) -> bool {
        matches!(self, Signals::Spans | Signals::LogsAndSpans)
    }
}

/// Options of an [`OtlpExporter`]. Defaults: LogRecords only; `max_capture` `metadata`
/// with [`crate::CapturePolicy::DropData`] (AEP-0005 §3.3); `service.name` from each
/// event's `agent`; batches of at most 512 records, sent at the latest 1 s after their
/// first record; the [`HttpOptions`] defaults (gzip on). OTLP/HTTP's statuses are
/// retried (`429`, `502`, `503`, `504`).
///
/// ```
/// use aep_bridge::export::{HttpOptions, OtlpExporter, Signals};
/// use std::time::Duration;
/// let exporter = OtlpExporter::builder("http://127.0.0.1:4318")
///     .signals(Signals::LogsAndSpans)
///     .batch(|b| b.max_items(128).linger(Duration::from_millis(200)))
///     .http(HttpOptions::new().bearer("token"))
///     .build()?;
/// # let _ = exporter;
/// # Ok::<(), aep_bridge::export::ExportError>(())
/// ```
#[derive(Debug)]
pub struct OtlpExporterBuilder {
    base: String,
    logs_url: Option<String>,
    traces_url: Option<String>,
    signals: Signals,
    /// The log records' capture ceiling and `service.name`, the spans' too.
    projection: OtlpOptions,
    batch: BatchOptions,
    max_open_spans: usize,
    http: HttpOptions,
    report: Option<Opaque<ReportHandler>>,
}

impl OtlpExporterBuilder {
    aep_core::setters! {
        /// LogRecords, spans, or both.
        ///
        /// ```
        /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318").signals(aep_bridge::export::Signals::Spans);
        /// # let _ = b;
        /// ```
        pub fn signals(signals: Signals) => signals = signals;

        /// The capture ceiling (AEP-0005 §3.3): nothing above it leaves.
        ///
        /// ```
        /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318")
        ///     .capture(aep_bridge::CaptureLimit::new(aep_core::Capture::None));
        /// # let _ = b;
        /// ```
        pub fn capture(limit: CaptureLimit) => projection.capture = limit;

        /// One `service.name` for every resource (a relay shared by many agents).
        ///
        /// ```
        /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318").service_name("agents");
        /// # let _ = b;
        /// ```
        pub fn service_name(name: impl Into<String>) => projection.service_name = Some(name.into());

        /// The full URL for logs, instead of `{endpoint}/v1/logs`.
        ///
        /// ```
        /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318").logs_endpoint("http://h:4318/custom/logs");
        /// # let _ = b;
        /// ```
        pub fn logs_endpoint(url: impl Into<String>) => logs_url = Some(url.into());

        /// The full URL for traces, instead of `{endpoint}/v1/traces`.
        ///
        /// ```
        /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318").traces_endpoint("http://h:4318/custom/traces");
        /// # let _ = b;
        /// ```
        pub fn traces_endpoint(url: impl Into<String>) => traces_url = Some(url.into());
    }

    /// The batches, changed from the defaults (512 records, 1 s) by `f`: most records
    /// in one request, and how long a batch waits for company after its first record.
    /// The same [`BatchOptions`] as the HTTP sink's; a request's body is bounded by
    /// its records (`max_bytes` is the sink's).
    ///
    /// ```
    /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318")
    ///     .batch(|b| b.max_items(64).linger(std::time::Duration::ZERO));
    /// # let _ = b;
    /// ```
    pub fn batch(mut self, f: impl FnOnce(BatchOptions) -> BatchOptions) -> Self {
        self.batch = f(self.batch);
        self
    }

    aep_core::setters! {
        /// Most spans waiting for their finish event (span mode; default 10 000).
        ///
        /// ```
        /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318").max_open_spans(1000);
        /// # let _ = b;
        /// ```
        pub fn max_open_spans(n: usize) => max_open_spans = n;

        /// How requests are sent (headers, gzip, timeout, retries, queue).
        ///
        /// ```
        /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318")
        ///     .http(aep_bridge::export::HttpOptions::new().header("x-tenant", "a"));
        /// # let _ = b;
        /// ```
        pub fn http(options: HttpOptions) => http = options;

        /// Where [`ExportReport`]s go (default: `tracing`).
        ///
        /// ```
        /// let b = aep_bridge::export::OtlpExporter::builder("http://h:4318").on_report(|r| eprintln!("{r}"));
        /// # let _ = b;
        /// ```
        pub fn on_report(f: impl Fn(ExportReport) + Send + Sync + 'static) =>
            report = Some(Opaque(Arc::new(f)));
    }

    /// Checks the endpoints and headers and builds the HTTP client.
    ///
    /// ```
    /// use aep_bridge::export::{ExportError, HttpOptions, OtlpExporter};
    /// let bad = OtlpExporter::builder("http://h:4318").http(HttpOptions::new().header("bad header", "x")).build();
    /// assert!(matches!(bad, Err(ExportError::Header(_))));
    /// ```
    pub fn build(self) -> Result<OtlpExporter, ExportError> {
        let base = self.base.trim_end_matches('/');
        // A signal's own URL if one was given, else `{base}` and the signal's path.
        let url = |given: &Option<String>, path: &str| match given {
            Some(url) => endpoint(url),
            None => endpoint(&format!("{base}{path}")),
        };
        let logs = url(&self.logs_url, "/v1/logs")?;
        let traces = url(&self.traces_url, "/v1/traces")?;
        endpoint(&self.base)?;
        let span_options = SpanOptions::new()
            .projection(self.projection.clone())
            .max_open(self.max_open_spans);
        Ok(OtlpExporter {
            logs,
            traces,
            signals: self.signals,
            logs_options: self.projection,
            span_options,
            batch: self.batch,
            http: self.http.prepare()?,
            books: Books::new(self.report.map(|r| r.0)),
        })
    }
}

/// Exports AEP events to an OTLP/HTTP endpoint (a collector, or a backend's OTLP
/// intake): [`to_log_record`] for each event, and in span mode the [`SpanAssembler`]'s
/// spans; protobuf, gzip, batched, retried. See the [module docs](super).
///
/// One exporter can run several times (its counters add up); [`OtlpExporter::stats`]
/// reads them at any time.
///
/// ```no_run
/// use aep_bridge::export::OtlpExporter;
/// use aep_async::SubscribeOptions;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let exporter = OtlpExporter::builder("http://127.0.0.1:4318").build()?;
/// let options = SubscribeOptions::new().filter(serde_json::json!({"type": ["tool.*", "run.*"]}));
/// let stats = exporter.run_relay(&aep_async::Client::new("http://127.0.0.1:8787"), options, tokio::signal::ctrl_c()).await;
/// assert_eq!(stats.pending(), 0);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct OtlpExporter {
    logs: reqwest::Url,
    traces: reqwest::Url,
    signals: Signals,
    logs_options: OtlpOptions,
    span_options: SpanOptions,
    batch: BatchOptions,
    http: Prepared,
    books: Books,
}

impl OtlpExporter {
    /// A builder for the endpoint at `base` (e.g. `http://127.0.0.1:4318`; requests go
    /// to `{base}/v1/logs` and `{base}/v1/traces`).
    ///
    /// ```
    /// let exporter = aep_bridge::export::OtlpExporter::builder("http://127.0.0.1:4318").build()?;
    /// assert_eq!(exporter.stats().events, 0);
    /// # Ok::<(), aep_bridge::export::ExportError>(())
    /// ```
    pub fn builder(base: impl Into<String>) -> OtlpExporterBuilder {
        OtlpExporterBuilder {
            base: base.into(),
            logs_url: None,
            traces_url: None,
            signals: Signals::Logs,
            projection: OtlpOptions::new(),
            batch: BatchOptions::new(512, 4 << 20, Duration::from_secs(1)),
            max_open_spans: 10_000,
            http: HttpOptions::new(),
            report: None,
        }
    }

    /// What the exporter did so far, over every run.
    ///
    /// ```
    /// let exporter = aep_bridge::export::OtlpExporter::builder("http://127.0.0.1:4318").build()?;
    /// assert_eq!(exporter.stats(), Default::default());
    /// # Ok::<(), aep_bridge::export::ExportError>(())
    /// ```
    pub fn stats(&self) -> ExportStats {
        self.books.stats()
    }

    /// Exports every event of `events` until the stream ends, then sends what is
    /// pending and waits for it to settle. Returns the counters.
    ///
    /// ```no_run
    /// # async fn run(exporter: aep_bridge::export::OtlpExporter, events: Vec<aep_core::Event>) {
    /// let stats = exporter.run(futures::stream::iter(events)).await;
    /// # let _ = stats; }
    /// ```
    pub async fn run(&self, events: impl Stream<Item = Event> + Send) -> ExportStats {
        self.run_until(events, std::future::pending::<()>()).await
    }

    /// [`OtlpExporter::run`] until `shutdown` resolves or the stream ends. Spans still
    /// open at the end are counted as abandoned.
    ///
    /// ```no_run
    /// # async fn run(exporter: aep_bridge::export::OtlpExporter, events: Vec<aep_core::Event>) {
    /// let stats = exporter.run_until(futures::stream::iter(events), tokio::time::sleep(std::time::Duration::from_secs(5))).await;
    /// # let _ = stats; }
    /// ```
    pub async fn run_until(
        &self,
        events: impl Stream<Item = Event> + Send,
        shutdown: impl Future<Output = impl Sized> + Send,
    ) -> ExportStats {
        let pump = OtlpPump {
            exporter: self,
            dispatcher: Dispatcher::start(&self.http, self.books.clone(), Retryable::Otlp),
            logs: Batch::new(self.batch.items(), self.batch.lingers()),
            spans: Batch::new(self.batch.items(), self.batch.lingers()),
            assembler: self
                .signals
                .spans()
                .then(|| SpanAssembler::new(self.span_options.clone())),
        };
        drive(pump, events, async {
            shutdown.await;
        })
        .await;
        self.stats()
    }

    /// Subscribes to `relay` with `options` (its attr-match filter, token,
    /// resume position, transport) and exports until `shutdown` resolves. Payloads the
    /// relay sends that are not events are counted as unmapped; the subscription's
    /// notice handler is the exporter's (one set on `options` is replaced).
    ///
    /// ```no_run
    /// # async fn run(exporter: aep_bridge::export::OtlpExporter) {
    /// let relay = aep_async::Client::new("http://127.0.0.1:8787").token("relay-token");
    /// let options = aep_async::SubscribeOptions::new().from_all();
    /// let stats = exporter.run_relay(&relay, options, tokio::signal::ctrl_c()).await;
    /// # let _ = stats; }
    /// ```
    pub async fn run_relay(
        &self,
        relay: &Client,
        options: SubscribeOptions,
        shutdown: impl Future<Output = impl Sized> + Send,
    ) -> ExportStats {
        let subscription = self.books.subscribe(relay, options);
        self.run_until(subscription, shutdown).await
    }

    fn logs_request(&self, records: Vec<LogRecord>) -> Request {
        let body = logs_request(&records).encode_to_vec();
        otlp_request(&self.logs, body, records.len(), Answer::OtlpLogs)
    }

    fn traces_request(&self, spans: Vec<Span>) -> Request {
        let body = traces_request(&spans).encode_to_vec();
        otlp_request(&self.traces, body, spans.len(), Answer::OtlpTraces)
    }
}

/// An OTLP/HTTP export request (§3.5: protobuf, OTLP's retry rules) of `records`
/// records to `url`.
fn otlp_request(url: &reqwest::Url, body: Vec<u8>, records: usize, answer: Answer) -> Request {
    Request {
        url: url.clone(),
        body,
        content_type: "application/x-protobuf",
        headers: Vec::new(),
        records: records as u64,
        answer,
    }
}

/// One run of an [`OtlpExporter`].
struct OtlpPump<'a> {
    exporter: &'a OtlpExporter,
    dispatcher: Dispatcher,
    logs: Batch<LogRecord>,
    spans: Batch<Span>,
    assembler: Option<SpanAssembler>,
}

impl OtlpPump<'_> {
    async fn send_logs(&self, batch: Vec<LogRecord>) {
        if !batch.is_empty() {
            self.dispatcher
                .send(self.exporter.logs_request(batch))
                .await;
        }
    }

    async fn send_spans(&self, batch: Vec<Span>) {
        if !batch.is_empty() {
            self.dispatcher
                .send(self.exporter.traces_request(batch))
                .await;
        }
    }

    /// Counts spans the assembler gave up since the last look.
    fn count_abandoned(&self, before: u64) {
        if let Some(a) = &self.assembler {
            let books = &self.exporter.books;
            books.add(Count::Abandoned, a.abandoned().saturating_sub(before));
        }
    }
}

impl Pump for OtlpPump<'_> {
    async fn event(&mut self, event: Event) {
        let books = self.exporter.books.clone();
        books.add(Count::Events, 1);
        if self.exporter.signals.logs() {
            match to_log_record(&event, &self.exporter.logs_options) {
                Ok(record) => {
                    books.add(Count::Records, 1);
                    if let Some(full) = self.logs.push(record) {
                        self.send_logs(full).await;
                    }
                }
                Err(error) => return books.unmapped(&event, error),
            }
        }
        let Some(assembler) = &mut self.assembler else {
            return;
        };
        let before = assembler.abandoned();
        let finished = match assembler.push(&event) {
            Ok(spans) => spans,
            Err(error) => {
                // In logs-and-spans mode the log mapping has refused (and counted) it.
                if !self.exporter.signals.logs() {
                    books.unmapped(&event, error);
                }
                Vec::new()
            }
        };
        self.count_abandoned(before);
        for span in finished {
            books.add(Count::Records, 1);
            if let Some(full) = self.spans.push(span) {
                self.send_spans(full).await;
            }
        }
    }

    fn deadline(&self) -> Option<Instant> {
        earliest(self.logs.deadline(), self.spans.deadline())
    }

    async fn due(&mut self, now: Instant) {
        if let Some(batch) = self.logs.due(now) {
            self.send_logs(batch).await;
        }
        if let Some(batch) = self.spans.due(now) {
            self.send_spans(batch).await;
        }
    }

    async fn finish(mut self) {
        let logs = self.logs.take();
        self.send_logs(logs).await;
        let spans = self.spans.take();
        self.send_spans(spans).await;
        if let Some(a) = &self.assembler {
            self.exporter.books.add(Count::Abandoned, a.open() as u64);
        }
        self.dispatcher.close().await;
    }
}
