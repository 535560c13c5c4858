//! Sending batches over HTTP: the options every HTTP exporter shares, and the bounded
//! queue with one worker that posts, compresses, retries and counts.

use std::fmt;
use std::io::Write;
use std::time::Duration;

use aep_async::TransportError;
use prost::Message;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_ENCODING, CONTENT_TYPE};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Books, Count, ExportError, ExportReport};
use crate::proto::collector::logs::v1::ExportLogsServiceResponse;
use crate::proto::collector::trace::v1::ExportTraceServiceResponse;

/// How an HTTP exporter talks to its endpoint. Defaults:
///
/// | option | default |
/// |---|---|
/// | headers | none (add `Authorization` with [`HttpOptions::bearer`]) |
/// | gzip | on (`Content-Encoding: gzip`) |
/// | timeout | 10 s per request, response included |
/// | retry backoff | 500 ms doubling to 5 s |
/// | give up after | 30 s of retries for one batch |
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
///     .backoff(Duration::from_millis(100), Duration::from_secs(2))
///     .give_up_after(Duration::from_secs(10))
///     .queue(4);
/// assert!(!format!("{opts:?}").contains("secret"));
/// ```
#[derive(Clone)]
pub struct HttpOptions {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) gzip: bool,
    pub(crate) timeout: Duration,
    pub(crate) retry_initial: Duration,
    pub(crate) retry_max: Duration,
    pub(crate) give_up_after: Duration,
    pub(crate) queue: usize,
    pub(crate) drop_when_full: bool,
    pub(crate) client: Option<reqwest::Client>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            headers: Vec::new(),
            gzip: true,
            timeout: Duration::from_secs(10),
            retry_initial: Duration::from_millis(500),
            retry_max: Duration::from_secs(5),
            give_up_after: Duration::from_secs(30),
            queue: 16,
            drop_when_full: false,
            client: None,
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpOptions")
            .field("headers", &names)
            .field("gzip", &self.gzip)
            .field("timeout", &self.timeout)
            .field("retry_initial", &self.retry_initial)
            .field("retry_max", &self.retry_max)
            .field("give_up_after", &self.give_up_after)
            .field("queue", &self.queue)
            .field("drop_when_full", &self.drop_when_full)
            .finish()
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
        self.headers.push((name.into(), value.into()));
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

    /// Whether bodies are gzip-compressed.
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new().gzip(false);
    /// # let _ = o;
    /// ```
    pub fn gzip(mut self, on: bool) -> Self {
        self.gzip = on;
        self
    }

    /// The bound on one request, from sending to the end of the response. Expiry
    /// before the status is a network failure, retried (an endpoint that never answers
    /// cannot stall export); a body still coming at expiry is read no further, and the
    /// status decides.
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new().timeout(std::time::Duration::from_secs(2));
    /// # let _ = o;
    /// ```
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }

    /// Delays between attempts: the first and the ceiling, doubling in between. A
    /// `Retry-After` of at most the ceiling replaces the delay it exceeds; a longer one
    /// is not waited for (the delay stands), nor is one given as an HTTP date.
    ///
    /// ```
    /// use std::time::Duration;
    /// let o = aep_bridge::export::HttpOptions::new().backoff(Duration::from_millis(50), Duration::from_secs(1));
    /// # let _ = o;
    /// ```
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.retry_initial = initial;
        self.retry_max = max.max(initial);
        self
    }

    /// How long one batch may be retried before it is given up (and counted as
    /// failed).
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new().give_up_after(std::time::Duration::from_secs(60));
    /// # let _ = o;
    /// ```
    pub fn give_up_after(mut self, d: Duration) -> Self {
        self.give_up_after = d;
        self
    }

    /// Most batches waiting to be sent (at least 1). While they are, the exporter
    /// reads no further events (or drops, with [`HttpOptions::drop_when_full`]):
    /// nothing is held without bound.
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new().queue(64);
    /// # let _ = o;
    /// ```
    pub fn queue(mut self, batches: usize) -> Self {
        self.queue = batches.max(1);
        self
    }

    /// Whether a batch that finds the queue full is dropped (counted and reported)
    /// instead of waiting for room: for a deployment where the subscription must never
    /// wait on the endpoint, at the price of losing batches while it is slow or down.
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new().drop_when_full(true);
    /// # let _ = o;
    /// ```
    pub fn drop_when_full(mut self, drop: bool) -> Self {
        self.drop_when_full = drop;
        self
    }

    /// A `reqwest::Client` of the caller's (proxies, custom TLS roots).
    ///
    /// ```
    /// let o = aep_bridge::export::HttpOptions::new().client(reqwest::Client::new());
    /// # let _ = o;
    /// ```
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// The checked form: headers parsed, the client built.
    pub(crate) fn prepare(&self) -> Result<Prepared, ExportError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let n = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ExportError::Header(name.clone()))?;
            let v = HeaderValue::from_str(value).map_err(|_| ExportError::Header(name.clone()))?;
            headers.append(n, v);
        }
        let client = match &self.client {
            Some(c) => c.clone(),
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

/// Which statuses are worth sending the same request again for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// OTLP/HTTP: 429, 502, 503, 504; every other refusal is final.
    Otlp,
    /// Any HTTP receiver: 408, 429 and every 5xx.
    Http,
}

impl Retry {
    fn retryable(self, status: u16) -> bool {
        match self {
            Retry::Otlp => matches!(status, 429 | 502 | 503 | 504),
            Retry::Http => matches!(status, 408 | 429 | 500..=599),
        }
    }
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
    pub(crate) retry: Retry,
}

/// The bounded queue of requests and the worker that sends them, in order.
#[derive(Debug)]
pub(crate) struct Dispatcher {
    tx: mpsc::Sender<Request>,
    worker: JoinHandle<()>,
    books: Books,
    drop_when_full: bool,
}

impl Dispatcher {
    /// Starts the worker on the current runtime.
    pub(crate) fn start(http: &Prepared, books: Books) -> Self {
        let (tx, rx) = mpsc::channel(http.options.queue.max(1));
        let worker = Worker {
            http: http.clone(),
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
    http: Prepared,
    books: Books,
}

impl Worker {
    async fn run(self, mut rx: mpsc::Receiver<Request>) {
        while let Some(request) = rx.recv().await {
            self.deliver(request).await;
        }
    }

    async fn deliver(&self, request: Request) {
        let options = &self.http.options;
        let records = request.records;
        let body = match options.gzip {
            true => gzip(&request.body),
            false => request.body.clone(),
        };
        let started = Instant::now();
        let mut delay = options.retry_initial;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let (error, retry_after) = match self.post(&request, body.clone()).await {
                Ok(rejected) => {
                    self.books
                        .add(Count::Exported, records.saturating_sub(rejected.0));
                    if rejected.0 > 0 {
                        self.books.add(Count::Rejected, rejected.0);
                        self.books.report(ExportReport::Rejected {
                            error: TransportError::http(200, rejected.1),
                            records: rejected.0,
                        });
                    }
                    return;
                }
                Err(failure) => failure,
            };
            let retryable = match error.status() {
                Some(status) => request.retry.retryable(status),
                None => error.is_network(),
            };
            if !retryable {
                self.books.add(Count::Rejected, records);
                self.books.report(ExportReport::Rejected { error, records });
                return;
            }
            let wait = retry_after
                .filter(|r| *r <= options.retry_max)
                .map_or(delay, |r| r.max(delay));
            // Saturating: a `Retry-After` or a ceiling near `Duration::MAX` must end in
            // a give-up, not in an overflow that stops the worker.
            if started.elapsed().saturating_add(wait) > options.give_up_after {
                self.books.add(Count::Failed, records);
                self.books.report(ExportReport::GaveUp { error, records });
                return;
            }
            self.books.report(ExportReport::Retrying {
                error,
                records,
                attempt,
            });
            tokio::time::sleep(wait).await;
            delay = delay.saturating_mul(2).min(options.retry_max);
        }
    }

    /// One attempt. `Ok` carries the records the endpoint said it rejected (OTLP
    /// partial success) and its message; `Err` the failure and a `Retry-After`.
    async fn post(
        &self,
        request: &Request,
        body: Vec<u8>,
    ) -> Result<(u64, String), (TransportError, Option<Duration>)> {
        let options = &self.http.options;
        let mut req = self
            .http
            .client
            .post(request.url.clone())
            .headers(self.http.headers.clone())
            .header(CONTENT_TYPE, request.content_type)
            .body(body);
        if options.gzip {
            req = req.header(CONTENT_ENCODING, "gzip");
        }
        for (name, value) in &request.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        let url = request.url.as_str();
        let deadline = Instant::now() + options.timeout;
        let response = match tokio::time::timeout_at(deadline, req.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err((TransportError::network(format!("POST {url}"), e), None)),
            Err(_) => {
                return Err((
                    TransportError::network_msg(format!(
                        "POST {url}: no answer within {} ms",
                        options.timeout.as_millis()
                    )),
                    None,
                ))
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        // The status is the answer: the body only adds a partial success or a refusal's
        // text. One that breaks off or outlasts the timeout is read as far as it came,
        // so a 2xx is not sent again (the endpoint has the records) and a final refusal
        // is not retried.
        let mut bytes = Vec::new();
        let _ = tokio::time::timeout_at(deadline, answer_prefix(response, &mut bytes)).await;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            let detail: String = text.chars().take(200).collect();
            return Err((
                TransportError::http(status.as_u16(), format!("POST {url}: {detail}")),
                retry_after,
            ));
        }
        Ok(partial_success(request.answer, &bytes))
    }
}

/// The most of an answer's body that is read: an OTLP partial success, or the start of
/// a refusal's text, fits many times over.
const ANSWER_LIMIT: usize = 64 * 1024;

/// Reads into `body` the first [`ANSWER_LIMIT`] bytes of a response's body, or as much
/// as comes before it ends or breaks off. The rest is not read: a lying endpoint's
/// endless body holds neither memory nor the worker.
async fn answer_prefix(mut response: reqwest::Response, body: &mut Vec<u8>) {
    while body.len() < ANSWER_LIMIT {
        let Ok(Some(chunk)) = response.chunk().await else {
            break;
        };
        let room = ANSWER_LIMIT - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
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
    fn retry_policies() {
        assert!(Retry::Otlp.retryable(503) && Retry::Otlp.retryable(429));
        assert!(!Retry::Otlp.retryable(500) && !Retry::Otlp.retryable(400));
        assert!(Retry::Http.retryable(500) && !Retry::Http.retryable(404));
    }

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
