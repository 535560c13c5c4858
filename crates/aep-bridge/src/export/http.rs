//! Sending batches over HTTP: the options every HTTP exporter shares, and the bounded
//! queue in front of aep-async's one HTTP delivery worker
//! ([`HttpDelivery`]), which posts, retries and reads the answer; this module
//! compresses, counts and reads OTLP's partial success.

use std::fmt;
use std::io::Write;
use std::time::Duration;

use aep_async::delivery::{self, HttpDelivery, RetryPolicy, Retryable, Target, Undelivered};
use aep_async::TransportError;
use prost::Message;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_ENCODING};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Books, Count, ExportError, ExportReport, Opaque};
use crate::proto::collector::logs::v1::ExportLogsServiceResponse;
use crate::proto::collector::trace::v1::ExportTraceServiceResponse;

/// How an HTTP exporter talks to its endpoint. Defaults:
///
/// | option | default |
/// |---|---|
/// | headers | none (add `Authorization` with [`HttpOptions::bearer`]) |
/// | gzip | on (`Content-Encoding: gzip`) |
/// | timeout | 10 s per request, response included |
/// | retry | [`RetryPolicy`]'s: 100 ms doubling to 5 s, a `Retry-After` up to 5 s honoured, given up after 60 s |
/// | queue | 16 batches waiting to be sent; a full queue makes the exporter wait |
/// | drop when full | off: wait for room rather than drop |
///
/// ```
/// use aep_bridge::export::HttpOptions;
/// use std::time::Duration;
/// let opts = HttpOptions::new()
///     .bearer("secret")
///     .header("x-scope", "agents")
///     .gzip(false)
///     .timeout(Duration::from_secs(5))
///     .retry(|r| {
///         r.backoff(Duration::from_millis(100), Duration::from_secs(2))
///             .give_up_after(Some(Duration::from_secs(10)))
///     })
///     .queue(4);
/// assert!(!format!("{opts:?}").contains("secret"));
/// ```
#[derive(Clone, Debug)]
pub struct HttpOptions {
    pub(crate) headers: Headers,
    pub(crate) gzip: bool,
    pub(crate) timeout: Duration,
    pub(crate) retry: RetryPolicy,
    pub(crate) queue: usize,
    pub(crate) drop_when_full: bool,
    pub(crate) client: Option<Opaque<reqwest::Client>>,
}

/// The headers every request carries; `Debug` shows their names only, never a value (a
/// bearer token, an API key).
#[derive(Clone, Default)]
pub(crate) struct Headers(Vec<(String, String)>);

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            headers: Headers::default(),
            gzip: true,
            timeout: Duration::from_secs(10),
            retry: RetryPolicy::new(),
            queue: 16,
            drop_when_full: false,
            client: None,
        }
    }
}

impl HttpOptions {
    /// The defaults above.
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new();
    /// # let _ = o;
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// A header sent with every request (a backend's API key, a tenant id). Checked
    /// when the exporter is built.
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new().header("x-honeycomb-team", "key");
    /// # let _ = o;
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.0.push((name.into(), value.into()));
        self
    }

    /// `Authorization: Bearer {token}` (never logged: `Debug` shows header names only).
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new().bearer("t0k3n");
    /// # let _ = o;
    /// ```
    pub fn bearer(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref());
        self.header("authorization", value)
    }

    aep_core::setters! {
        /// Whether bodies are gzip-compressed.
        ///
        /// ```
        /// let o = aep_bridge::export::HttpOptions::new().gzip(false);
        /// # let _ = o;
        /// ```
        pub fn gzip(on: bool) => gzip = on;

        /// The bound on one request, from sending to the end of the response. Expiry
        /// before the status is a network failure, retried (an endpoint that never answers
        /// cannot stall export); a body still coming at expiry is read no further, and the
        /// status decides.
        ///
        /// ```
        /// let o = aep_bridge::export::HttpOptions::new().timeout(std::time::Duration::from_secs(2));
        /// # let _ = o;
        /// ```
        pub fn timeout(d: Duration) => timeout = d;
    }

    /// The retries, changed from the defaults by `f`: the delays between attempts (the
    /// first and the ceiling, doubling in between; a `Retry-After` of at most the
    /// ceiling replaces the delay it exceeds) and how long one batch may be retried
    /// before it is given up and counted as failed. The same [`RetryPolicy`] as the
    /// HTTP sink's; which statuses are retried is the exporter's protocol's
    /// ([`Retryable`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let o = aep_bridge::export::HttpOptions::new()
    ///     .retry(|r| r.backoff(Duration::from_millis(50), Duration::from_secs(1)).give_up_after(Some(Duration::from_secs(60))));
    /// # let _ = o;
    /// ```
    pub fn retry(mut self, f: impl FnOnce(RetryPolicy) -> RetryPolicy) -> Self {
        self.retry = f(self.retry);
        self
    }

    aep_core::setters! {
        /// Most batches waiting to be sent (at least 1). While they are, the exporter
        /// reads no further events (or drops, with [`HttpOptions::drop_when_full`]):
        /// nothing is held without bound.
        ///
        /// ```
        /// let o = aep_bridge::export::HttpOptions::new().queue(64);
        /// # let _ = o;
        /// ```
        pub fn queue(batches: usize) => queue = batches.max(1);

        /// Whether a batch that finds the queue full is dropped (counted and reported)
        /// instead of waiting for room: for a deployment where the subscription must never
        /// wait on the endpoint, at the price of losing batches while it is slow or down.
        ///
        /// ```
        /// let o = aep_bridge::export::HttpOptions::new().drop_when_full(true);
        /// # let _ = o;
        /// ```
        pub fn drop_when_full(drop: bool) => drop_when_full = drop;

        /// A `reqwest::Client` of the caller's (proxies, custom TLS roots).
        ///
        /// ```
        /// let o = aep_bridge::export::HttpOptions::new().client(reqwest::Client::new());
        /// # let _ = o;
        /// ```
        pub fn client(client: reqwest::Client) => client = Some(Opaque(client));
    }

    /// The checked form: headers parsed (with `Content-Encoding` when compressing), the
    /// client built.
    pub(crate) fn prepare(&self) -> Result<Prepared, ExportError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers.0 {
            let n = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ExportError::Header(name.clone()))?;
            let v = HeaderValue::from_str(value).map_err(|_| ExportError::Header(name.clone()))?;
            headers.append(n, v);
        }
        if self.gzip {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        let client = match &self.client {
            Some(Opaque(c)) => c.clone(),
            None => reqwest::Client::builder()
                .build()
                .map_err(|e| ExportError::Client(e.to_string()))?,
        };
        Ok(Prepared {
            options: self.clone(),
            headers,
            client,
        })
    }
}

/// [`HttpOptions`] checked and ready.
#[derive(Clone)]
pub(crate) struct Prepared {
    options: HttpOptions,
    headers: HeaderMap,
    client: reqwest::Client,
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.options.fmt(f)
    }
}

impl Prepared {
    /// The delivery worker these options describe, retrying what `retryable` says.
    fn delivery(&self, retryable: Retryable) -> HttpDelivery {
        HttpDelivery::new(self.client.clone(), retryable)
            .headers(self.headers.clone())
            .timeout(self.options.timeout)
            .retry(self.options.retry)
    }
}

/// Checks an endpoint: an absolute `http://` or `https://` URL.
pub(crate) fn endpoint(url: &str) -> Result<reqwest::Url, ExportError> {
    let bad = |why: String| ExportError::Url {
        url: url.to_owned(),
        why,
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(bad(format!("the scheme is `{other}`"))),
    }
}

/// How a 2xx response body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The body is not looked at.
    Plain,
    /// An `ExportLogsServiceResponse`, whose partial success counts rejected records.
    OtlpLogs,
    /// An `ExportTraceServiceResponse`, likewise.
    OtlpTraces,
}

/// One request to send: a batch, encoded.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) url: reqwest::Url,
    pub(crate) body: Vec<u8>,
    pub(crate) content_type: &'static str,
    /// Headers of this request only (CloudEvents binary mode).
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) records: u64,
    pub(crate) answer: Answer,
}

/// The bounded queue of requests and the task that hands them, in order, to the one
/// delivery worker.
#[derive(Debug)]
pub(crate) struct Dispatcher {
    tx: mpsc::Sender<Request>,
    worker: JoinHandle<()>,
    books: Books,
    drop_when_full: bool,
}

impl Dispatcher {
    /// Starts the worker on the current runtime; it retries what `retryable` says (the
    /// exporter's protocol's statuses).
    pub(crate) fn start(http: &Prepared, books: Books, retryable: Retryable) -> Self {
        let (tx, rx) = mpsc::channel(http.options.queue.max(1));
        let worker = Worker {
            delivery: http.delivery(retryable),
            gzip: http.options.gzip,
            books: books.clone(),
        };
        Dispatcher {
            tx,
            worker: tokio::spawn(worker.run(rx)),
            books,
            drop_when_full: http.options.drop_when_full,
        }
    }

    /// Queues a request, waiting for room (or, dropping when full, dropping it: counted
    /// and reported).
    pub(crate) async fn send(&self, request: Request) {
        let refused = if self.drop_when_full {
            self.tx.try_send(request).err().map(|e| match e {
                mpsc::error::TrySendError::Full(r) | mpsc::error::TrySendError::Closed(r) => r,
            })
        } else {
            self.tx.send(request).await.err().map(|e| e.0)
        };
        if let Some(request) = refused {
            let records = request.records;
            self.books.add(Count::Dropped, records);
            self.books.report(ExportReport::Dropped { records });
        }
    }

    /// Stops taking requests and waits until the queued ones are settled.
    pub(crate) async fn close(self) {
        drop(self.tx);
        if let Err(e) = self.worker.await {
            tracing::error!(error = %e, "aep-bridge: the export worker stopped");
        }
    }
}

struct Worker {
    delivery: HttpDelivery,
    gzip: bool,
    books: Books,
}

impl Worker {
    async fn run(mut self, mut rx: mpsc::Receiver<Request>) {
        while let Some(request) = rx.recv().await {
            self.deliver(request).await;
        }
    }

    async fn deliver(&mut self, request: Request) {
        let records = request.records;
        let body = match self.gzip {
            true => gzip(&request.body),
            false => request.body,
        };
        let mut post = delivery::Request::new(Target::Url(request.url), body, request.content_type);
        for (name, value) in &request.headers {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                post.headers.append(n, v);
            }
        }
        let books = &self.books;
        let retrying = |error, attempt| {
            books.report(ExportReport::Retrying {
                error,
                records,
                attempt,
            });
        };
        match self.delivery.deliver(&post, retrying).await {
            Ok(answer) => {
                let (rejected, message) = partial_success(request.answer, &answer);
                self.books
                    .add(Count::Exported, records.saturating_sub(rejected));
                if rejected > 0 {
                    self.books.add(Count::Rejected, rejected);
                    self.books.report(ExportReport::Rejected {
                        error: TransportError::http(200, message),
                        records: rejected,
                    });
                }
            }
            Err(Undelivered::Rejected(error)) => {
                self.books.add(Count::Rejected, records);
                self.books.report(ExportReport::Rejected { error, records });
            }
            Err(Undelivered::GaveUp(error)) => {
                self.books.add(Count::Failed, records);
                self.books.report(ExportReport::GaveUp { error, records });
            }
        }
    }
}

/// The records an OTLP endpoint reports rejecting in a 2xx answer (partial success),
/// and its message; an empty or unreadable body rejects nothing.
fn partial_success(answer: Answer, body: &[u8]) -> (u64, String) {
    let (rejected, message) = match answer {
        Answer::Plain => (0, String::new()),
        Answer::OtlpLogs => ExportLogsServiceResponse::decode(body)
            .ok()
            .and_then(|r| r.partial_success)
            .map_or((0, String::new()), |p| {
                (p.rejected_log_records, p.error_message)
            }),
        Answer::OtlpTraces => ExportTraceServiceResponse::decode(body)
            .ok()
            .and_then(|r| r.partial_success)
            .map_or((0, String::new()), |p| (p.rejected_spans, p.error_message)),
    };
    (
        u64::try_from(rejected).unwrap_or(0),
        format!("partial success: {message}"),
    )
}

/// Gzip at the default level.
fn gzip(body: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4 + 64),
        flate2::Compression::default(),
    );
    // Writing into a `Vec` cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let body = b"aep".repeat(1000);
        let packed = gzip(&body);
        assert!(packed.len() < body.len());
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&packed[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body);
    }

    #[test]
    fn debug_shows_header_names_never_values() {
        let client = reqwest::Client::builder()
            .default_headers(HeaderMap::from_iter([(
                reqwest::header::AUTHORIZATION,
                HeaderValue::from_static("Bearer client-secret"),
            )]))
            .build()
            .unwrap();
        let opts = HttpOptions::new().bearer("secret").client(client);
        let shown = format!("{opts:?}");
        assert!(shown.contains(r#"headers: ["authorization"]"#), "{shown}");
        assert!(shown.contains("client: Some(..)"), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
    }

    #[test]
    fn endpoints() {
        assert!(endpoint("http://127.0.0.1:4318/v1/logs").is_ok());
        assert!(endpoint("ftp://h/x").is_err());
        assert!(endpoint("/v1/logs").is_err());
    }

    #[test]
    fn partial_success_is_read() {
        use crate::proto::collector::logs::v1::ExportLogsPartialSuccess;
        let answer = ExportLogsServiceResponse {
            partial_success: Some(ExportLogsPartialSuccess {
                rejected_log_records: 2,
                error_message: "too old".into(),
            }),
        };
        let (n, msg) = partial_success(Answer::OtlpLogs, &answer.encode_to_vec());
        assert_eq!(n, 2);
        assert!(msg.contains("too old"));
        assert_eq!(partial_success(Answer::OtlpLogs, b"").0, 0);
        assert_eq!(partial_success(Answer::OtlpLogs, b"\xff\xff").0, 0);
    }
}
