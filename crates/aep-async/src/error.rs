//! Errors: the transport taxonomy shared by every sink and subscription, and the
//! refusals of the emitting boundary.

use std::error::Error as StdError;
use std::fmt;

use crate::limits::LimitExceeded;

/// What went wrong below the protocol: the exchange with the relay did not complete.
///
/// The three kinds are the Python and TypeScript SDKs' taxonomy. A timeout is of kind
/// [`TransportErrorKind::Network`] (retried like any network failure), and
/// [`TransportError::is_timeout`] tells it apart; [`TransportError::is_connect`] tells
/// a failure to establish the connection (TCP, TLS, the upgrade, the `hello` exchange)
/// from one on an established connection, as reqwest's error does.
///
/// ```
/// use aep_async::{TransportError, TransportErrorKind};
///
/// let e = TransportError::http(401, "SSE request refused");
/// assert_eq!(e.kind(), TransportErrorKind::Http { status: 401 });
/// assert_eq!(e.status(), Some(401));
/// assert!(!e.is_network());
/// let t = TransportError::timeout("no hello within 30000 ms");
/// assert!(t.is_network() && t.is_timeout());
/// ```
#[derive(Debug)]
pub struct TransportError {
    kind: TransportErrorKind,
    detail: Detail,
    message: String,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

/// What a `Network` error was, beyond its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Nothing more is known.
    Other,
    /// A deadline passed.
    Timeout,
    /// The connection could not be established.
    Connect,
    /// The peer passed a bound of the reader's [`ReadLimits`](crate::ReadLimits).
    Limit(LimitExceeded),
}

/// The class of a [`TransportError`].
///
/// ```
/// use aep_async::TransportErrorKind;
/// assert_ne!(TransportErrorKind::Network, TransportErrorKind::Parse);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// Connect, TLS, read or write failed, the connection dropped, a WebSocket
    /// handshake misbehaved, or a deadline passed (connect or per-request timeout).
    Network,
    /// The endpoint answered with a refusing HTTP status (non-2xx ingest or stream,
    /// non-101 upgrade).
    Http {
        /// The status code the endpoint sent.
        status: u16,
    },
    /// A payload arrived but is not a decodable event or frame. The payload is dropped
    /// and reported; the stream goes on.
    Parse,
    /// The endpoint refused, in-band on an open connection, an event written to it (a
    /// WebSocket `error` frame whose `cause` names the event).
    Refused {
        /// Whether the same event may be taken if sent again
        /// ([`IngestRefusal`](aep_core::frame::IngestRefusal)).
        transient: bool,
    },
}

impl TransportError {
    /// A network failure with the underlying cause kept as the source.
    ///
    /// ```
    /// let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    /// let e = aep_async::TransportError::network("connect to relay", io);
    /// assert!(e.is_network());
    /// assert!(std::error::Error::source(&e).is_some());
    /// ```
    pub fn network(
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        TransportError::of_kind(TransportErrorKind::Network, message).caused_by(source)
    }

    /// A network failure without an underlying error value (a stream that ended
    /// early, a socket closed by the endpoint).
    ///
    /// ```
    /// let e = aep_async::TransportError::network_msg("socket closed by the endpoint");
    /// assert!(e.is_network() && !e.is_timeout());
    /// ```
    pub fn network_msg(message: impl Into<String>) -> Self {
        TransportError::of_kind(TransportErrorKind::Network, message)
    }

    /// A deadline that passed (a connect, `hello` or request timeout): a `Network`
    /// error for which [`TransportError::is_timeout`] holds.
    ///
    /// ```
    /// let e = aep_async::TransportError::timeout("connect timeout after 30000 ms");
    /// assert!(e.is_timeout() && e.is_retryable());
    /// ```
    pub fn timeout(message: impl Into<String>) -> Self {
        TransportError {
            detail: Detail::Timeout,
            ..TransportError::network_msg(message)
        }
    }

    /// The peer passed a bound of the reader's [`ReadLimits`](crate::ReadLimits): a
    /// `Network` error (the reader drops the connection, then reconnects on its backoff)
    /// for which [`TransportError::limit_exceeded`] names the bound.
    ///
    /// ```
    /// use aep_async::{Limit, LimitExceeded, TransportError};
    /// let e = TransportError::limit(LimitExceeded::new(Limit::Line, 4096));
    /// assert!(e.is_network() && e.is_retryable() && !e.is_timeout());
    /// assert_eq!(e.limit_exceeded().map(|l| l.limit()), Some(Limit::Line));
    /// assert!(e.to_string().contains("max_line bound of 4096 bytes"), "{e}");
    /// ```
    pub fn limit(exceeded: LimitExceeded) -> Self {
        TransportError {
            detail: Detail::Limit(exceeded),
            ..TransportError::network_msg(exceeded.to_string())
        }
    }

    /// Marks a `Network` error as one that happened while establishing the connection
    /// ([`TransportError::is_connect`]). A timeout stays a timeout.
    #[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
    pub(crate) fn while_connecting(mut self) -> Self {
        if self.kind == TransportErrorKind::Network && self.detail == Detail::Other {
            self.detail = Detail::Connect;
        }
        self
    }

    /// A refusing HTTP status.
    ///
    /// ```
    /// assert_eq!(aep_async::TransportError::http(503, "ingest").status(), Some(503));
    /// ```
    pub fn http(status: u16, message: impl Into<String>) -> Self {
        TransportError::of_kind(TransportErrorKind::Http { status }, message)
    }

    /// An endpoint's in-band refusal of an event written to it, by the `error` frame's
    /// `code`: retryable as [`IngestRefusal::of_code`](aep_core::frame::IngestRefusal::of_code)
    /// says.
    ///
    /// ```
    /// use aep_core::frame::ErrorCode;
    /// let full = aep_async::TransportError::refused(&ErrorCode::LimitExceeded, "disk full");
    /// assert!(full.is_retryable());
    /// let bad = aep_async::TransportError::refused(&ErrorCode::from("invalid-event"), "no time");
    /// assert!(!bad.is_retryable());
    /// ```
    pub fn refused(code: &aep_core::frame::ErrorCode, message: impl Into<String>) -> Self {
        let transient = aep_core::frame::IngestRefusal::of_code(code).is_transient();
        TransportError::of_kind(TransportErrorKind::Refused { transient }, message)
    }

    /// An undecodable payload, with the decoder's error kept as the source.
    ///
    /// ```
    /// let bad = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
    /// let e = aep_async::TransportError::parse("undecodable SSE payload", bad);
    /// assert_eq!(e.kind(), aep_async::TransportErrorKind::Parse);
    /// ```
    pub fn parse(
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        TransportError::of_kind(TransportErrorKind::Parse, message).caused_by(source)
    }

    /// An error of `kind` with no further detail and no source. A URL in the message
    /// loses its userinfo and credential-named query values (`?token=`) here, so that
    /// neither `Display` nor `Debug` ever shows them.
    fn of_kind(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        let message = message.into();
        let message = match aep_core::redact::redact_urls(&message) {
            std::borrow::Cow::Borrowed(_) => message,
            std::borrow::Cow::Owned(redacted) => redacted,
        };
        TransportError {
            kind,
            detail: Detail::Other,
            message,
            source: None,
        }
    }

    aep_core::setters! {
        /// The same error, with `source` kept as its cause.
        fn caused_by(source: impl StdError + Send + Sync + 'static) => source = Some(Box::new(source));
    }

    /// The class of failure.
    pub fn kind(&self) -> TransportErrorKind {
        self.kind
    }

    /// The HTTP status, for [`TransportErrorKind::Http`].
    pub fn status(&self) -> Option<u16> {
        match self.kind {
            TransportErrorKind::Http { status } => Some(status),
            _ => None,
        }
    }

    /// Whether this is a network failure (timeouts included).
    pub fn is_network(&self) -> bool {
        self.kind == TransportErrorKind::Network
    }

    /// Whether a deadline passed (connect, `hello`, request): a `Network` error.
    ///
    /// ```
    /// assert!(!aep_async::TransportError::network_msg("reset").is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        self.detail == Detail::Timeout
    }

    /// Whether the connection could not be established (TCP connect, TLS, the
    /// WebSocket upgrade or the `hello` exchange failed for a network reason); a
    /// refused upgrade is [`TransportErrorKind::Http`] instead, and a deadline
    /// [`TransportError::is_timeout`].
    ///
    /// ```
    /// assert!(!aep_async::TransportError::network_msg("reset").is_connect());
    /// ```
    pub fn is_connect(&self) -> bool {
        self.detail == Detail::Connect
    }

    /// The bound of the reader's [`ReadLimits`](crate::ReadLimits) the peer passed, for
    /// an error made by [`TransportError::limit`].
    ///
    /// ```
    /// assert!(aep_async::TransportError::network_msg("reset").limit_exceeded().is_none());
    /// ```
    pub fn limit_exceeded(&self) -> Option<LimitExceeded> {
        match self.detail {
            Detail::Limit(l) => Some(l),
            _ => None,
        }
    }

    /// A copy for fan-out to several receivers: kind, status, timeout and connect
    /// marks and message kept; the source is kept only in the message.
    #[cfg(feature = "ws")]
    pub(crate) fn copy(&self) -> TransportError {
        let message = match &self.source {
            Some(source) => format!("{}: {source}", self.message),
            None => self.message.clone(),
        };
        TransportError {
            detail: self.detail,
            ..TransportError::of_kind(self.kind, message)
        }
    }

    /// Whether the endpoint answered with a 4xx: the request itself was refused, and
    /// sending it again unchanged will be refused again.
    ///
    /// ```
    /// assert!(aep_async::TransportError::http(413, "ingest").is_client_refusal());
    /// assert!(!aep_async::TransportError::http(502, "ingest").is_client_refusal());
    /// ```
    pub fn is_client_refusal(&self) -> bool {
        matches!(self.status(), Some(400..=499))
    }

    /// Whether sending the same request again may succeed: network failures, and
    /// refusals [`IngestRefusal`](aep_core::frame::IngestRefusal) calls transient (a
    /// 5xx, `limit-exceeded`).
    pub fn is_retryable(&self) -> bool {
        use aep_core::frame::IngestRefusal;
        match self.kind {
            TransportErrorKind::Network => true,
            TransportErrorKind::Http { status } => IngestRefusal::of_status(status).is_transient(),
            TransportErrorKind::Refused { transient } => transient,
            TransportErrorKind::Parse => false,
        }
    }

    #[cfg(any(feature = "http", feature = "sse"))]
    pub(crate) fn from_reqwest(context: &str, e: reqwest::Error) -> Self {
        // reqwest's error writes the request's URL, which may carry a credential; the
        // caller's context names the relay, redacted.
        let e = e.without_url();
        #[cfg(feature = "rustls")]
        if let Some(text) = crate::tls::untrusted(&e) {
            return TransportError::network(format!("{context}: {text}"), e).while_connecting();
        }
        match e.status() {
            Some(status) => {
                TransportError::http(status.as_u16(), format!("{context}: HTTP {status}"))
            }
            None if e.is_timeout() => TransportError {
                detail: Detail::Timeout,
                ..TransportError::network(format!("{context}: timed out"), e)
            },
            None if e.is_connect() => {
                TransportError::network(format!("{context}: {e}"), e).while_connecting()
            }
            None => TransportError::network(format!("{context}: {e}"), e),
        }
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TransportErrorKind::Network => write!(f, "network: {}", self.message),
            TransportErrorKind::Http { status } => write!(f, "HTTP {status}: {}", self.message),
            TransportErrorKind::Parse => write!(f, "parse: {}", self.message),
            TransportErrorKind::Refused { .. } => write!(f, "refused: {}", self.message),
        }
    }
}

impl StdError for TransportError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

/// A refusal at the emitting boundary: the event was never built or never accepted.
///
/// Delivery failures are never an `EmitError`: they go to the sink's error handler
/// (see [`DeliveryReport`](crate::DeliveryReport)), so a relay being down never fails
/// the emitting call.
///
/// ```
/// use aep_async::{EmitError, EmitOptions, Emitter, JsonlSink};
///
/// let dir = std::env::temp_dir().join(format!("aep-emit-error-{}", std::process::id()));
/// let emitter = Emitter::new("a", "h", JsonlSink::open(&dir.with_extension("jsonl"))?);
/// let err = emitter
///     .emit_with("agent.heartbeat", None::<()>, EmitOptions::new().extension("session", "x"))
///     .unwrap_err();
/// assert!(matches!(err, EmitError::Extension(_)));
/// # std::fs::remove_file(dir.with_extension("jsonl")).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmitError {
    /// An extension attribute breaks AEP-0001 §5.4.
    #[error(transparent)]
    Extension(#[from] aep_core::ExtensionError),
    /// The `type` is not a well-formed event type (AEP-0002 §2).
    #[error("event type `{0}` is malformed (AEP-0002 §2); use `category.verb` or `x.vendor.name`")]
    Type(String),
    /// The type's scope does not fit the emitter (core's
    /// [`EventType::emit_scope`](aep_core::EventType::emit_scope), AEP-0001 §5.2,
    /// AEP-0004 §2): agent-scoped types (`agent.*`) go through
    /// [`Emitter::emit`](crate::Emitter::emit) and carry no session, run, step or seq;
    /// session-scoped types go through a [`SessionEmitter`](crate::SessionEmitter);
    /// commands (`control.*`, `x.{vendor}.control.*`) are sent by a control sender, and
    /// `attention.routed` by a consumer, never by an emitter.
    ///
    /// ```
    /// use aep_async::{EmitError, Emitter, JsonlSink};
    /// use aep_core::types::EmitScope;
    /// # let path = std::env::temp_dir().join(format!("aep-scope-doc-{}.jsonl", std::process::id()));
    /// let session = Emitter::new("a", "h", JsonlSink::open(&path)?).session("s");
    /// let err = session.emit("control.pause", serde_json::json!({})).unwrap_err();
    /// assert!(matches!(err, EmitError::Scope { scope: EmitScope::Command, .. }));
    /// assert!(err.to_string().contains("ControlClient"));
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[error("`{event_type}` {reason}")]
    Scope {
        /// The type that was refused.
        event_type: String,
        /// The type's scope.
        scope: aep_core::types::EmitScope,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// The payload could not be serialized to JSON.
    #[error("payload for `{event_type}` does not serialize to JSON: {source}")]
    Payload {
        /// The type whose payload failed.
        event_type: String,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// A local sink (JSONL) could not write: a capture file that cannot be written is
    /// broken at the producing boundary, so this one is loud.
    #[error("writing the event failed: {0}")]
    Io(#[from] std::io::Error),
    /// The sink was closed; the event was not accepted.
    #[error("the sink is closed; build a new one to emit again")]
    Closed,
    /// A waiting emit ([`emit_wait`](crate::SessionEmitter::emit_wait),
    /// [`reserve`](crate::SessionEmitter::reserve)) found the queue full while the sink
    /// had delivered nothing for `idle`, as long as its retry policy allows
    /// (`give_up_after` of the HTTP and WebSocket sinks): the relay is down or not
    /// reading. The event was not accepted; what was queued before stays queued.
    #[error(
        "the sink's queue is full and it has delivered nothing for {idle:?}: the relay is \
         down or not reading; the event was not accepted (try again later, emit without \
         waiting to queue it with debug/info dropped first, or raise give_up_after)"
    )]
    Stalled {
        /// How long the sink had delivered nothing.
        idle: std::time::Duration,
    },
}
