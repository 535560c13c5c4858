//! The CloudEvents HTTP sink: every event as a CloudEvent (AEP-0005 §1), posted to any
//! CE receiver in structured, binary or batched mode (CloudEvents HTTP binding §3).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use aep_async::delivery::{BatchOptions, Retryable};
use aep_async::{Client, SubscribeOptions};
use aep_core::{Capture, Event};
use futures::Stream;
use tokio::time::Instant;

use super::http::{endpoint, Answer, Dispatcher, HttpOptions, Prepared, Request};
use super::{
    drive, Batch, Books, Count, ExportError, ExportReport, ExportStats, Opaque, Pump, ReportHandler,
};
use crate::ce::{to_cloudevent, CloudEvent};

/// How CloudEvents ride HTTP (CloudEvents HTTP binding §3).
///
/// ```
/// assert_eq!(aep_bridge::export::CeMode::default(), aep_bridge::export::CeMode::Structured);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CeMode {
    /// One event per request, the whole event as `application/cloudevents+json`.
    #[default]
    Structured,
    /// One event per request, attributes as `ce-*` headers and `data` as the body.
    Binary,
    /// Several events per request, a JSON array as `application/cloudevents-batch+json`.
    Batched,
}

/// Options of a [`CeSink`]. Defaults: structured mode; no capture ceiling (the CE
/// mapping is lossless, and a relay subscription's `capture` can lower what arrives);
/// batches (batched mode) of at most 100 events, sent at the latest 1 s after their
/// first; the [`HttpOptions`] defaults. Any HTTP receiver's transient statuses are
/// retried (`408`, `429`, `5xx`).
///
/// ```
/// use aep_bridge::export::{CeMode, CeSink};
/// let sink = CeSink::builder("http://127.0.0.1:8080/events")
///     .mode(CeMode::Binary)
///     .capture(aep_core::Capture::Metadata)
///     .build()?;
/// # let _ = sink;
/// # Ok::<(), aep_bridge::export::ExportError>(())
/// ```
#[derive(Debug)]
pub struct CeSinkBuilder {
    url: String,
    mode: CeMode,
    capture: Option<Capture>,
    batch: BatchOptions,
    http: HttpOptions,
    report: Option<Opaque<ReportHandler>>,
}

impl CeSinkBuilder {
    aep_core::setters! {
        /// The content mode.
        ///
        /// ```
        /// let b = aep_bridge::export::CeSink::builder("http://h/ce").mode(aep_bridge::export::CeMode::Batched);
        /// # let _ = b;
        /// ```
        pub fn mode(mode: CeMode) => mode = mode;

        /// A capture ceiling: the sink is a re-emitting hop, so events above it are
        /// down-leveled (AEP-0001 §8.2, AEP-0005 §6) before they are forwarded.
        ///
        /// ```
        /// let b = aep_bridge::export::CeSink::builder("http://h/ce").capture(aep_core::Capture::None);
        /// # let _ = b;
        /// ```
        pub fn capture(ceiling: Capture) => capture = Some(ceiling);
    }

    /// The batches of batched mode, changed from the defaults (100 events, 1 s) by
    /// `f`: most events in one request, and how long a batch waits for company after
    /// its first event. The same [`BatchOptions`] as the HTTP sink's.
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = aep_bridge::export::CeSink::builder("http://h/ce")
    ///     .batch(|b| b.max_items(10).linger(Duration::from_millis(50)));
    /// # let _ = b;
    /// ```
    pub fn batch(mut self, f: impl FnOnce(BatchOptions) -> BatchOptions) -> Self {
        self.batch = f(self.batch);
        self
    }

    aep_core::setters! {
        /// How requests are sent.
        ///
        /// ```
        /// let b = aep_bridge::export::CeSink::builder("http://h/ce").http(aep_bridge::export::HttpOptions::new().gzip(false));
        /// # let _ = b;
        /// ```
        pub fn http(options: HttpOptions) => http = options;

        /// Where [`ExportReport`]s go (default: `tracing`).
        ///
        /// ```
        /// let b = aep_bridge::export::CeSink::builder("http://h/ce").on_report(|r| eprintln!("{r}"));
        /// # let _ = b;
        /// ```
        pub fn on_report(f: impl Fn(ExportReport) + Send + Sync + 'static) =>
            report = Some(Opaque(Arc::new(f)));
    }

    /// Checks the URL and headers and builds the client.
    ///
    /// ```
    /// assert!(aep_bridge::export::CeSink::builder("mailto:x@y").build().is_err());
    /// ```
    pub fn build(self) -> Result<CeSink, ExportError> {
        Ok(CeSink {
            url: endpoint(&self.url)?,
            mode: self.mode,
            capture: self.capture,
            batch: self.batch,
            http: self.http.prepare()?,
            books: Books::new(self.report.map(|r| r.0)),
        })
    }
}

/// Forwards AEP events to a CloudEvents HTTP receiver. See the [module docs](super).
///
/// ```no_run
/// use aep_bridge::export::CeSink;
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let sink = CeSink::builder("http://127.0.0.1:8080/events").build()?;
/// let stats = sink
///     .run_relay(&aep_async::Client::new("http://127.0.0.1:8787"), aep_async::SubscribeOptions::new(), tokio::signal::ctrl_c())
///     .await;
/// println!("{} forwarded", stats.exported);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct CeSink {
    url: reqwest::Url,
    mode: CeMode,
    capture: Option<Capture>,
    batch: BatchOptions,
    http: Prepared,
    books: Books,
}

impl CeSink {
    /// A builder for the receiver at `url`.
    ///
    /// ```
    /// let sink = aep_bridge::export::CeSink::builder("http://127.0.0.1:8080/").build()?;
    /// # let _ = sink;
    /// # Ok::<(), aep_bridge::export::ExportError>(())
    /// ```
    pub fn builder(url: impl Into<String>) -> CeSinkBuilder {
        CeSinkBuilder {
            url: url.into(),
            mode: CeMode::Structured,
            capture: None,
            batch: BatchOptions::new(100, 4 << 20, Duration::from_secs(1)),
            http: HttpOptions::new(),
            report: None,
        }
    }

    /// What the sink did so far, over every run.
    ///
    /// ```
    /// let sink = aep_bridge::export::CeSink::builder("http://127.0.0.1:8080/").build()?;
    /// assert_eq!(sink.stats().records, 0);
    /// # Ok::<(), aep_bridge::export::ExportError>(())
    /// ```
    pub fn stats(&self) -> ExportStats {
        self.books.stats()
    }

    /// Forwards every event of `events` until the stream ends; returns the counters.
    ///
    /// ```no_run
    /// # async fn run(sink: aep_bridge::export::CeSink, events: Vec<aep_core::Event>) {
    /// let stats = sink.run(futures::stream::iter(events)).await;
    /// # let _ = stats; }
    /// ```
    pub async fn run(&self, events: impl Stream<Item = Event> + Send) -> ExportStats {
        self.run_until(events, std::future::pending::<()>()).await
    }

    /// [`CeSink::run`] until `shutdown` resolves or the stream ends.
    ///
    /// ```no_run
    /// # async fn run(sink: aep_bridge::export::CeSink, events: Vec<aep_core::Event>) {
    /// let stats = sink.run_until(futures::stream::iter(events), tokio::signal::ctrl_c()).await;
    /// # let _ = stats; }
    /// ```
    pub async fn run_until(
        &self,
        events: impl Stream<Item = Event> + Send,
        shutdown: impl Future<Output = impl Sized> + Send,
    ) -> ExportStats {
        let max = match self.mode {
            CeMode::Batched => self.batch.items(),
            CeMode::Structured | CeMode::Binary => 1,
        };
        let pump = CePump {
            sink: self,
            dispatcher: Dispatcher::start(&self.http, self.books.clone(), Retryable::Http),
            batch: Batch::new(max, self.batch.lingers()),
        };
        drive(pump, events, async {
            shutdown.await;
        })
        .await;
        self.stats()
    }

    /// Subscribes to `relay` with `options` and forwards until `shutdown`
    /// resolves; payloads that are not events are counted as unmapped (the notice
    /// handler on `options` is replaced).
    ///
    /// ```no_run
    /// # async fn run(sink: aep_bridge::export::CeSink) {
    /// let stats = sink.run_relay(&aep_async::Client::new("http://127.0.0.1:8787"), aep_async::SubscribeOptions::new(), tokio::signal::ctrl_c()).await;
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

    fn request(&self, mut batch: Vec<CloudEvent>) -> Request {
        let records = batch.len() as u64;
        let request = |body: Vec<u8>, content_type, headers| Request {
            url: self.url.clone(),
            body,
            content_type,
            headers,
            records,
            answer: Answer::Plain,
        };
        match (self.mode, batch.len()) {
            (CeMode::Binary, 1) => {
                let (headers, body) = batch.remove(0).to_http_binary();
                // `to_cloudevent` writes `datacontenttype: application/json` whenever
                // there is data, which is what the request's content type says.
                let headers = headers
                    .into_iter()
                    .filter(|(k, _)| k != "content-type")
                    .collect();
                request(body.unwrap_or_default(), "application/json", headers)
            }
            (CeMode::Structured, 1) => request(
                batch.remove(0).to_json().into_bytes(),
                "application/cloudevents+json",
                Vec::new(),
            ),
            _ => request(
                serde_json::to_vec(&batch).unwrap_or_default(),
                "application/cloudevents-batch+json",
                Vec::new(),
            ),
        }
    }
}

/// One run of a [`CeSink`].
struct CePump<'a> {
    sink: &'a CeSink,
    dispatcher: Dispatcher,
    batch: Batch<CloudEvent>,
}

impl Pump for CePump<'_> {
    async fn event(&mut self, event: Event) {
        let books = &self.sink.books;
        books.add(Count::Events, 1);
        let event = match self.sink.capture {
            Some(ceiling) => aep_core::capture::downlevel(&event, ceiling),
            None => event,
        };
        match to_cloudevent(&event) {
            Ok(ce) => {
                books.add(Count::Records, 1);
                if let Some(full) = self.batch.push(ce) {
                    self.dispatcher.send(self.sink.request(full)).await;
                }
            }
            Err(error) => {
                books.add(Count::Unmapped, 1);
                books.report(ExportReport::NotMappable {
                    id: event.id().to_owned(),
                    error,
                });
            }
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.batch.deadline()
    }

    async fn due(&mut self, now: Instant) {
        if let Some(batch) = self.batch.due(now) {
            self.dispatcher.send(self.sink.request(batch)).await;
        }
    }

    async fn finish(mut self) {
        let rest = self.batch.take();
        if !rest.is_empty() {
            self.dispatcher.send(self.sink.request(rest)).await;
        }
        self.dispatcher.close().await;
    }
}
