//! The OCSF JSONL writer: the security-signal channel of AEP-0005 §4 as one OCSF
//! record per line, to a file or any `AsyncWrite` (a SIEM's file tailer, a pipe).

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use aep_async::{Client, SubscribeOptions};
use aep_core::Event;
use futures::{FutureExt, Stream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::Mutex;

use super::{Books, Count, ExportError, ExportReport, ExportStats, Opaque};
use crate::ocsf::{to_ocsf, OcsfOptions};
use crate::CaptureLimit;

type Sink = Box<dyn AsyncWrite + Send + Unpin>;

/// Writes the OCSF projection of events as JSON lines. Events outside the three
/// families are counted as skipped (§4.1); a refused event as unmapped. The output is
/// flushed whenever the stream has nothing ready, so a reader sees each record soon.
///
/// A write that fails (a full disk, a closed pipe) ends the run with
/// [`ExportError::Io`]. A record counts as exported once the writer has flushed it;
/// the records written but not flushed when the failure came count as failed.
///
/// ```
/// use aep_bridge::export::OcsfWriter;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = std::env::temp_dir().join(format!("ocsf-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let writer = OcsfWriter::to_path(dir.join("ocsf.jsonl")).await?;
/// let started = aep_core::Event::new("1", "session.started", "2026-07-03T10:14:00Z", "aep://h/agent/a", "a").with_session("s");
/// let progress = aep_core::Event::new("2", "progress.status", "2026-07-03T10:14:01Z", "aep://h/agent/a", "a");
/// let stats = writer.run(futures::stream::iter([started, progress])).await?;
/// assert_eq!((stats.records, stats.skipped), (1, 1));
/// let text = std::fs::read_to_string(dir.join("ocsf.jsonl"))?;
/// assert!(text.starts_with(r#"{"class_uid":3002,"#) && text.ends_with("}\n"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(()) })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct OcsfWriter {
    out: Opaque<Mutex<BufWriter<Sink>>>,
    options: OcsfOptions,
    books: Books,
}

impl OcsfWriter {
    /// A writer to `out`, with `max_capture` `metadata` (§4.6).
    ///
    /// ```
    /// let w = aep_bridge::export::OcsfWriter::new(tokio::io::sink());
    /// # let _ = w;
    /// ```
    pub fn new(out: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        OcsfWriter {
            out: Opaque(Mutex::new(BufWriter::new(Box::new(out)))),
            options: OcsfOptions::default(),
            books: Books::new(None),
        }
    }

    /// A writer appending to the file at `path` (created if missing).
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// let w = aep_bridge::export::OcsfWriter::to_path("/var/log/aep/ocsf.jsonl").await?;
    /// # let _ = w; Ok(()) }
    /// ```
    pub async fn to_path(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await?;
        Ok(Self::new(file))
    }

    aep_core::setters! {
        /// The capture ceiling (§4.6).
        ///
        /// ```
        /// let w = aep_bridge::export::OcsfWriter::new(tokio::io::sink())
        ///     .capture(aep_bridge::CaptureLimit::new(aep_core::Capture::None));
        /// # let _ = w;
        /// ```
        pub fn capture(limit: CaptureLimit) => options = OcsfOptions::new().capture(limit);
    }

    /// Where [`ExportReport`]s go (default: `tracing`).
    ///
    /// ```
    /// let w = aep_bridge::export::OcsfWriter::new(tokio::io::sink()).on_report(|r| eprintln!("{r}"));
    /// # let _ = w;
    /// ```
    pub fn on_report(mut self, f: impl Fn(ExportReport) + Send + Sync + 'static) -> Self {
        let counters = self.books.counters.clone();
        self.books = Books::new(Some(Arc::new(f)));
        self.books.counters = counters;
        self
    }

    /// What the writer did so far.
    ///
    /// ```
    /// assert_eq!(aep_bridge::export::OcsfWriter::new(tokio::io::sink()).stats().records, 0);
    /// ```
    pub fn stats(&self) -> ExportStats {
        self.books.stats()
    }

    /// Writes the records of every event of `events` until the stream ends.
    ///
    /// ```no_run
    /// # async fn run(w: aep_bridge::export::OcsfWriter, events: Vec<aep_core::Event>) -> Result<(), aep_bridge::export::ExportError> {
    /// let stats = w.run(futures::stream::iter(events)).await?;
    /// # let _ = stats; Ok(()) }
    /// ```
    pub async fn run(
        &self,
        events: impl Stream<Item = Event> + Send,
    ) -> Result<ExportStats, ExportError> {
        self.run_until(events, std::future::pending::<()>()).await
    }

    /// [`OcsfWriter::run`] until `shutdown` resolves or the stream ends.
    ///
    /// ```no_run
    /// # async fn run(w: aep_bridge::export::OcsfWriter, events: Vec<aep_core::Event>) -> Result<(), aep_bridge::export::ExportError> {
    /// let stats = w.run_until(futures::stream::iter(events), tokio::signal::ctrl_c()).await?;
    /// # let _ = stats; Ok(()) }
    /// ```
    pub async fn run_until(
        &self,
        events: impl Stream<Item = Event> + Send,
        shutdown: impl Future<Output = impl Sized> + Send,
    ) -> Result<ExportStats, ExportError> {
        let mut events = std::pin::pin!(events.fuse());
        let mut shutdown = std::pin::pin!(shutdown.fuse());
        let mut out = self.out.0.lock().await;
        let mut line = Vec::with_capacity(1024);
        let mut unflushed = 0u64;
        loop {
            let next = match events.next().now_or_never() {
                Some(next) => next,
                None => {
                    self.flush(&mut out, &mut unflushed).await?;
                    tokio::select! {
                        biased;
                        _ = &mut shutdown => break,
                        next = events.next() => next,
                    }
                }
            };
            let Some(event) = next else { break };
            self.books.add(Count::Events, 1);
            match to_ocsf(&event, &self.options) {
                Ok(Some(record)) => {
                    self.books.add(Count::Records, 1);
                    line.clear();
                    serde_json::to_writer(&mut line, record.as_map())
                        .map_err(std::io::Error::from)?;
                    line.push(b'\n');
                    unflushed += 1;
                    if let Err(e) = out.write_all(&line).await {
                        self.books.add(Count::Failed, unflushed);
                        return Err(e.into());
                    }
                }
                Ok(None) => self.books.add(Count::Skipped, 1),
                Err(error) => self.books.unmapped(&event, error),
            }
        }
        self.flush(&mut out, &mut unflushed).await?;
        Ok(self.stats())
    }

    /// Flushes, settling the records written since the last flush.
    async fn flush(&self, out: &mut BufWriter<Sink>, unflushed: &mut u64) -> std::io::Result<()> {
        let n = std::mem::take(unflushed);
        match out.flush().await {
            Ok(()) => {
                self.books.add(Count::Exported, n);
                Ok(())
            }
            Err(e) => {
                self.books.add(Count::Failed, n);
                Err(e)
            }
        }
    }

    /// Subscribes to `relay` with `options` and writes until `shutdown`
    /// resolves (the notice handler on `options` is replaced; payloads that are not
    /// events are counted as unmapped).
    ///
    /// ```no_run
    /// # async fn run(w: aep_bridge::export::OcsfWriter) -> Result<(), aep_bridge::export::ExportError> {
    /// let families = serde_json::json!({"type": ["session.*", "tool.*", "attention.*"]});
    /// let options = aep_async::SubscribeOptions::new().filter(families);
    /// w.run_relay(&aep_async::Client::new("http://127.0.0.1:8787"), options, tokio::signal::ctrl_c()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn run_relay(
        &self,
        relay: &Client,
        options: SubscribeOptions,
        shutdown: impl Future<Output = impl Sized> + Send,
    ) -> Result<ExportStats, ExportError> {
        let subscription = self.books.subscribe(relay, options);
        self.run_until(subscription, shutdown).await
    }
}
