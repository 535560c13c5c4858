//! The one HTTP delivery worker under every batching POST client: the HTTP sink
//! (`POST {base}/events`, AEP-0003 §3.2) and the bridge's exporters (OTLP/HTTP,
//! CloudEvents) each hand it one encoded batch at a time and it sends it: within a
//! timeout, the answer read no further than it needs, retried with the same bytes on
//! one [`RetryPolicy`] while [`Retryable`] calls the refusal transient, and over several
//! relays of a cluster, failed over the way every client of this crate fails over.
//!
//! [`BatchOptions`] are the one set of batching options the sink and the exporters
//! share; each starts from its own defaults (see where each is documented), and a
//! caller changes what it wants with a closure over them.
//!
//! ```
//! use std::time::Duration;
//! use aep_async::delivery::{BatchOptions, RetryPolicy};
//!
//! let batch = BatchOptions::new(1000, 1 << 20, Duration::from_millis(5)).max_items(500);
//! assert_eq!((batch.items(), batch.bytes()), (500, 1 << 20));
//! let retry = RetryPolicy::new().give_up_after(Some(Duration::from_secs(10)));
//! // a `Retry-After` within the ceiling replaces a shorter delay; a longer one does not
//! let d = Duration::from_millis;
//! assert_eq!(retry.wait(d(100), Some(Duration::from_secs(2))), Duration::from_secs(2));
//! assert_eq!(retry.wait(d(100), Some(Duration::from_secs(60))), d(100));
//! ```

use std::fmt;
use std::time::Duration;

use aep_core::frame::IngestRefusal;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use tokio::time::Instant;

use crate::error::TransportError;
use crate::relays::Relays;
use crate::transport::{BackoffPolicy, Failover};

/// How items are gathered into one request: at most `max_items` of them (events for the
/// HTTP sink, records for an exporter) and at most `max_bytes` of body, sent at the
/// latest `linger` after the first one. A single item larger than `max_bytes` still
/// goes, alone.
///
/// ```
/// use std::time::Duration;
/// let b = aep_async::delivery::BatchOptions::new(512, 4 << 20, Duration::from_secs(1))
///     .linger(Duration::ZERO)
///     .max_items(0);
/// assert_eq!(b.items(), 1); // at least one
/// assert_eq!(b.lingers(), Duration::ZERO);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct BatchOptions {
    max_items: usize,
    max_bytes: usize,
    linger: Duration,
}

impl BatchOptions {
    /// These bounds (each at least 1).
    pub const fn new(max_items: usize, max_bytes: usize, linger: Duration) -> Self {
        BatchOptions {
            max_items: if max_items == 0 { 1 } else { max_items },
            max_bytes: if max_bytes == 0 { 1 } else { max_bytes },
            linger,
        }
    }
    aep_core::setters! {
        /// Most items in one request (at least 1).
        pub fn max_items(n: usize) => max_items = n.max(1);
        /// Most bytes in one request body (at least 1; a larger single item still goes).
        pub fn max_bytes(n: usize) => max_bytes = n.max(1);
        /// How long a partial batch waits for company after its first item.
        pub fn linger(d: Duration) => linger = d;
    }
    /// The most items in one request.
    pub fn items(&self) -> usize {
        self.max_items
    }
    /// The most bytes in one request body.
    pub fn bytes(&self) -> usize {
        self.max_bytes
    }
    /// How long a partial batch waits.
    pub fn lingers(&self) -> Duration {
        self.linger
    }
}

/// When and for how long a request that failed is sent again, the same bytes each time:
/// `initial` doubling to `max` between attempts (the next relay at once, given several
/// that have not all failed), for at most `give_up_after` per request (`None`: until it
/// succeeds). A `Retry-After` (in seconds) of at most `max` replaces a shorter delay; a
/// longer one, or one given as an HTTP date, is not waited for.
///
/// Default: 100 ms doubling to 5 s, given up after 60 s. What is retried at all is
/// [`Retryable`]'s.
///
/// ```
/// use std::time::Duration;
/// use aep_async::delivery::RetryPolicy;
/// let p = RetryPolicy::new().backoff(Duration::from_millis(50), Duration::from_secs(1)).give_up_after(None);
/// assert_eq!(p.gives_up_after(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct RetryPolicy {
    backoff: BackoffPolicy,
    give_up_after: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new()
    }
}

impl RetryPolicy {
    /// The defaults above.
    pub const fn new() -> Self {
        RetryPolicy {
            backoff: BackoffPolicy::new(Duration::from_millis(100), Duration::from_secs(5)),
            give_up_after: Some(Duration::from_secs(60)),
        }
    }
    /// The first delay and the ceiling (a ceiling below the first delay is the first
    /// delay).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = BackoffPolicy::new(initial, max);
        self
    }
    aep_core::setters! {
        /// How long one request keeps being retried before it is given up (`None`: until it
        /// succeeds).
        pub fn give_up_after(d: Option<Duration>) => give_up_after = d;
    }
    /// How long one request is retried, if bounded.
    pub fn gives_up_after(&self) -> Option<Duration> {
        self.give_up_after
    }
    /// What to wait before the next attempt: `delay` (the backoff's), or the endpoint's
    /// `Retry-After` when it is longer and within the ceiling.
    pub fn wait(&self, delay: Duration, retry_after: Option<Duration>) -> Duration {
        retry_after
            .filter(|r| *r <= self.backoff.max())
            .map_or(delay, |r| r.max(delay))
    }
}

/// Which refusals are worth sending the same request again for: network failures
/// (timeouts included) always, and the statuses of the protocol spoken.
///
/// ```
/// use aep_async::delivery::Retryable;
/// assert!(Retryable::Ingest.status(503) && !Retryable::Ingest.status(429));
/// assert!(Retryable::Otlp.status(429) && !Retryable::Otlp.status(500));
/// assert!(Retryable::Http.status(408) && !Retryable::Http.status(404));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Retryable {
    /// AEP ingest: a `5xx` is the endpoint's failure, any other refusal the request's
    /// (AEP-0003 §3.2 rules 3 and 4, [`IngestRefusal`]).
    Ingest,
    /// OTLP/HTTP: `429`, `502`, `503`, `504`; every other refusal is final.
    Otlp,
    /// Any HTTP receiver: `408`, `429` and every `5xx`.
    Http,
}

impl Retryable {
    /// Whether a refusal with `status` is retried.
    pub fn status(self, status: u16) -> bool {
        match self {
            Retryable::Ingest => IngestRefusal::of_status(status).is_transient(),
            Retryable::Otlp => matches!(status, 429 | 502 | 503 | 504),
            Retryable::Http => matches!(status, 408 | 429 | 500..=599),
        }
    }

    /// Whether `error` is retried: a status as [`Retryable::status`] says, a network
    /// failure always, anything else never.
    pub fn error(self, error: &TransportError) -> bool {
        match error.status() {
            Some(status) => self.status(status),
            None => error.is_network(),
        }
    }
}

/// Where a [`Request`] goes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// A path under the base of the relay the worker is on (`/events`): the request
    /// fails over with the worker's relays.
    Relay(&'static str),
    /// A whole URL (an exporter's endpoint).
    Url(reqwest::Url),
}

/// One encoded batch for [`HttpDelivery::deliver`].
#[derive(Debug, Clone)]
pub struct Request {
    /// Where it goes.
    pub target: Target,
    /// The body, sent the same on every attempt.
    pub body: Bytes,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Headers of this request only, beside the worker's.
    pub headers: HeaderMap,
}

impl Request {
    /// A request of `body` as `content_type` to `target`, with no headers of its own.
    ///
    /// ```
    /// use aep_async::delivery::{Request, Target};
    /// let r = Request::new(Target::Relay("/events"), "{}", "application/json");
    /// assert_eq!(r.body.len(), 2);
    /// ```
    pub fn new(target: Target, body: impl Into<Bytes>, content_type: &'static str) -> Self {
        Request {
            target,
            body: body.into(),
            content_type,
            headers: HeaderMap::new(),
        }
    }
}

/// Why a request was not delivered: the two ends of [`HttpDelivery::deliver`] other
/// than delivery.
#[derive(Debug)]
pub enum Undelivered {
    /// The endpoint refused it for good ([`Retryable`] says the refusal is final).
    Rejected(TransportError),
    /// Its retries ran out of [`RetryPolicy::give_up_after`]; the last failure.
    GaveUp(TransportError),
}

/// The most of an answer's body that is read: an OTLP partial success, or the start of
/// a refusal's text, fits many times over.
pub const ANSWER_LIMIT: usize = 64 * 1024;

/// The worker: sends one [`Request`] at a time to its target and retries it until it is
/// delivered, refused for good or given up. Requests to [`Target::Relay`] go to the
/// relay the worker is on; a failure moves it to the next of its relays at once, and
/// once every one has failed it waits the [`RetryPolicy`]'s backoff, as every client of
/// this crate does; each request starts the schedule over on the relay that took the
/// last one.
///
/// Each attempt is bounded by the timeout, from sending to the end of the answer. A
/// timeout before the status is a network failure (retried), so an endpoint that never
/// answers cannot stall delivery; an answer's body is read to [`ANSWER_LIMIT`] at most,
/// and only as far as it comes within the timeout, so the status decides and a lying
/// endpoint's endless body holds neither memory nor the worker.
///
/// ```no_run
/// use std::time::Duration;
/// use aep_async::delivery::{HttpDelivery, Request, Retryable, RetryPolicy, Target};
///
/// # async fn run() {
/// let mut worker = HttpDelivery::new(reqwest::Client::new(), Retryable::Http)
///     .timeout(Duration::from_secs(5))
///     .retry(RetryPolicy::new());
/// let url = reqwest::Url::parse("http://127.0.0.1:8080/ce").unwrap();
/// let request = Request::new(Target::Url(url), "[]", "application/cloudevents-batch+json");
/// match worker.deliver(&request, |error, attempt| eprintln!("attempt {attempt}: {error}")).await {
///     Ok(answer) => println!("delivered ({} bytes of answer)", answer.len()),
///     Err(e) => println!("not delivered: {e:?}"),
/// }
/// # }
/// ```
pub struct HttpDelivery {
    client: reqwest::Client,
    failover: Failover,
    headers: HeaderMap,
    timeout: Duration,
    retry: RetryPolicy,
    retryable: Retryable,
}

impl fmt::Debug for HttpDelivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // header values may be secrets: their names only
        let names: Vec<&str> = self.headers.keys().map(|k| k.as_str()).collect();
        f.debug_struct("HttpDelivery")
            .field("relays", self.failover.relays())
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("retryable", &self.retryable)
            .finish()
    }
}

impl HttpDelivery {
    /// A worker on `client` retrying what `retryable` says, with no relays, no headers,
    /// a 10 s timeout and the default [`RetryPolicy`].
    pub fn new(client: reqwest::Client, retryable: Retryable) -> Self {
        HttpDelivery {
            client,
            failover: Failover::new(
                Relays::new(Vec::<String>::new()),
                RetryPolicy::new().backoff,
            ),
            headers: HeaderMap::new(),
            timeout: Duration::from_secs(10),
            retry: RetryPolicy::new(),
            retryable,
        }
    }
    /// The relays [`Target::Relay`] requests go to, in order of preference.
    pub fn relays(mut self, relays: Relays) -> Self {
        self.failover = Failover::new(relays, self.retry.backoff);
        self
    }
    aep_core::setters! {
        /// Headers of every request (authorization, a version header).
        pub fn headers(headers: HeaderMap) => headers = headers;
        /// The bound on one attempt, from sending to the end of the answer (default 10 s).
        pub fn timeout(timeout: Duration) => timeout = timeout;
    }
    /// The retry schedule and budget.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self.failover = Failover::new(self.failover.relays().clone(), retry.backoff);
        self
    }

    /// Sends `request` until it is delivered (`Ok` with the answer's body, up to
    /// [`ANSWER_LIMIT`]), refused for good, or given up; `retrying` hears of each failed
    /// attempt that will be followed by another (its error and its number, 1 for the
    /// first).
    pub async fn deliver(
        &mut self,
        request: &Request,
        mut retrying: impl FnMut(TransportError, u32),
    ) -> Result<Bytes, Undelivered> {
        let started = Instant::now();
        // Each request starts the schedule over, on the relay that took the last one.
        self.failover.succeeded();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let (error, retry_after) = match self.post(request).await {
                Ok(answer) => {
                    self.failover.succeeded();
                    return Ok(answer);
                }
                Err(failure) => failure,
            };
            if !self.retryable.error(&error) {
                return Err(Undelivered::Rejected(error));
            }
            // the same bytes, so the same ids, to the next relay (or this one again)
            let wait = self.retry.wait(self.failover.failed(), retry_after);
            // Saturating: a delay or a `Retry-After` near `Duration::MAX` must end in a
            // give-up, not in an overflow.
            if self
                .retry
                .give_up_after
                .is_some_and(|limit| started.elapsed().saturating_add(wait) > limit)
            {
                return Err(Undelivered::GaveUp(error));
            }
            tracing::debug!(%error, attempt, ?wait, "request failed; sending it again");
            retrying(error, attempt);
            tokio::time::sleep(wait).await;
        }
    }

    /// One attempt: the answer's body of a `2xx`, or the failure and a `Retry-After`.
    async fn post(&self, request: &Request) -> Result<Bytes, (TransportError, Option<Duration>)> {
        let url = match &request.target {
            Target::Url(url) => url.clone(),
            Target::Relay(path) => {
                let Some(base) = self.failover.current() else {
                    let error = TransportError::network_msg("the client was given no relay URL");
                    return Err((error, None));
                };
                let url = aep_core::binding::url(base, path);
                reqwest::Url::parse(&url).map_err(|e| {
                    (
                        TransportError::network(format!("bad relay URL `{base}`"), e),
                        None,
                    )
                })?
            }
        };
        let mut headers = self.headers.clone();
        headers.extend(request.headers.clone());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(request.content_type));
        let send = self
            .client
            .post(url.clone())
            .headers(headers)
            .body(request.body.clone())
            .send();
        let deadline = Instant::now() + self.timeout;
        let context = || format!("POST {}", url.path());
        let response = match tokio::time::timeout_at(deadline, send).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err((TransportError::from_reqwest(&context(), e), None)),
            Err(_) => {
                let why = format!(
                    "{}: timeout, no answer within {} ms",
                    context(),
                    self.timeout.as_millis()
                );
                return Err((TransportError::timeout(why), None));
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        // The status is the answer: the body only adds a partial success or a refusal's
        // text. One that breaks off or outlasts the timeout is read as far as it came, so
        // a 2xx is not sent again (the endpoint has the items) and a final refusal is not
        // retried.
        let mut body = Vec::new();
        let _ = tokio::time::timeout_at(deadline, answer_prefix(response, &mut body)).await;
        if status.is_success() {
            return Ok(Bytes::from(body));
        }
        let text = String::from_utf8_lossy(&body);
        let detail: String = text.chars().take(200).collect();
        let error =
            TransportError::http(status.as_u16(), format!("{} refused: {detail}", context()));
        Err((error, retry_after))
    }
}

/// Reads into `body` the first [`ANSWER_LIMIT`] bytes of a response's body, or as much
/// as comes before it ends or breaks off. The rest is not read.
async fn answer_prefix(mut response: reqwest::Response, body: &mut Vec<u8>) {
    while body.len() < ANSWER_LIMIT {
        let Ok(Some(chunk)) = response.chunk().await else {
            break;
        };
        let room = ANSWER_LIMIT - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn retry_after_counts_up_to_the_ceiling() {
        let p = RetryPolicy::new().backoff(MS(100), MS(1000));
        assert_eq!(p.wait(MS(100), None), MS(100));
        assert_eq!(p.wait(MS(100), Some(MS(1000))), MS(1000));
        assert_eq!(p.wait(MS(400), Some(MS(200))), MS(400));
        assert_eq!(p.wait(MS(100), Some(MS(1001))), MS(100));
        assert_eq!(p.wait(MS(100), Some(Duration::MAX)), MS(100));
    }

    #[test]
    fn statuses_by_protocol() {
        for s in [500, 502, 503, 507] {
            assert!(Retryable::Ingest.status(s), "{s}");
        }
        for s in [400, 401, 408, 413, 429] {
            assert!(!Retryable::Ingest.status(s), "{s}");
        }
        assert!(Retryable::Otlp.status(503) && !Retryable::Otlp.status(400));
        assert!(Retryable::Http.status(599) && !Retryable::Http.status(413));
        let net = TransportError::network_msg("reset");
        let parse = TransportError::parse("x", std::fmt::Error);
        for r in [Retryable::Ingest, Retryable::Otlp, Retryable::Http] {
            assert!(r.error(&net) && !r.error(&parse));
        }
    }

    #[test]
    fn batch_bounds_are_at_least_one() {
        let b = BatchOptions::new(0, 0, MS(1));
        assert_eq!((b.items(), b.bytes()), (1, 1));
        assert_eq!(b.max_bytes(0).bytes(), 1);
    }
}
