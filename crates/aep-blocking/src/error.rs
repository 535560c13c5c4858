//! The errors of blocking calls.

use std::time::Duration;

use aep_async::control::{AskError, ControlError, InstructionsError, Nack};
#[cfg(feature = "ws")]
use aep_async::lifecycle::SubscribeError;
use aep_async::{EmitError, TransportError};

/// What a blocking call can fail with.
///
/// Protocol and transport errors are the async crate's own types, wrapped; the rest is
/// about the blocking layer itself.
///
/// ```
/// let e = aep_blocking::Error::InsideRuntime;
/// assert!(e.to_string().contains("inside a tokio runtime"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A blocking call was made on a thread inside a tokio runtime's context, where it
    /// could stall every task on that runtime. Use `aep_async` there, or make the call
    /// from a plain thread (`std::thread::spawn`). Tokio's `spawn_blocking` threads
    /// carry the runtime's context and count as inside.
    #[error(
        "aep_blocking called from inside a tokio runtime, where blocking could stall it: \
         use aep_async in async code, or call from a plain std::thread"
    )]
    InsideRuntime,
    /// A background thread (the runtime's, or a control target's handler thread) could
    /// not be started.
    #[error("starting an aep-blocking thread: {0}")]
    Runtime(#[source] std::io::Error),
    /// The runtime shut down before the call finished (its last user dropped it, or the
    /// caller-provided runtime stopped).
    #[error("the runtime stopped before the call finished")]
    RuntimeGone,
    /// The call did not finish in the time it was given.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// Building or emitting an event failed (see [`EmitError`]).
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// A transport failed (see [`TransportError`]).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A control call did not produce its answer: a nack, a refused command, a closed
    /// client (see [`ControlError`]).
    #[error(transparent)]
    Control(#[from] ControlError),
    /// An attention request got no answer: refused before it was emitted, not emitted,
    /// or timed out (see [`AskError`]).
    #[error(transparent)]
    Ask(#[from] AskError),
    /// A session's instruction stream could not be opened (see [`InstructionsError`]).
    #[error(transparent)]
    Instructions(#[from] InstructionsError),
    /// A lifecycle subscription was not created: the relay rejected it, or the
    /// connection closed first (see [`SubscribeError`]). Feature `ws`.
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    #[error(transparent)]
    Lifecycle(#[from] SubscribeError),
}

impl Error {
    /// Whether the call was refused because it ran inside an async runtime.
    ///
    /// ```
    /// assert!(aep_blocking::Error::InsideRuntime.is_inside_runtime());
    /// ```
    pub fn is_inside_runtime(&self) -> bool {
        matches!(self, Error::InsideRuntime)
    }

    /// The nack, when a command was answered with one (or timed out waiting for one,
    /// AEP-0004 §3).
    ///
    /// ```
    /// use aep_async::control::{ControlError, Nack, NackReason};
    /// let e = aep_blocking::Error::from(ControlError::from(Nack::timeout("no ack")));
    /// assert_eq!(e.nack().map(|n| n.reason()), Some(NackReason::Timeout));
    /// ```
    pub fn nack(&self) -> Option<&Nack> {
        match self {
            Error::Control(e) => e.nack(),
            _ => None,
        }
    }

    /// The transport failure underneath, when there is one, however wrapped (directly,
    /// or inside a control error): what the `is_*` checks below look through to.
    ///
    /// ```
    /// use aep_async::control::ControlError;
    /// use aep_async::TransportError;
    /// let e = aep_blocking::Error::from(ControlError::from(TransportError::http(401, "refused")));
    /// assert_eq!(e.transport().and_then(|t| t.status()), Some(401));
    /// ```
    pub fn transport(&self) -> Option<&TransportError> {
        match self {
            Error::Transport(e) => Some(e),
            Error::Control(e) => e.transport(),
            _ => None,
        }
    }

    /// Whether a deadline passed: the call's own ([`Error::Timeout`]), or one inside
    /// what it wraps (a connect or request timeout, the synthesized `timeout` nack of a
    /// command, AEP-0004 §3).
    ///
    /// ```
    /// use std::time::Duration;
    /// use aep_async::TransportError;
    /// assert!(aep_blocking::Error::Timeout(Duration::from_secs(1)).is_timeout());
    /// assert!(aep_blocking::Error::from(TransportError::timeout("no hello")).is_timeout());
    /// assert!(!aep_blocking::Error::from(TransportError::network_msg("reset")).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Timeout(_) => true,
            Error::Control(e) => e.is_timeout(),
            Error::Ask(e) => e.is_timeout(),
            other => other.transport().is_some_and(TransportError::is_timeout),
        }
    }

    /// Whether a transport failed below the protocol (timeouts included), however
    /// wrapped.
    ///
    /// ```
    /// use aep_async::TransportError;
    /// assert!(aep_blocking::Error::from(TransportError::network_msg("reset")).is_network());
    /// assert!(!aep_blocking::Error::InsideRuntime.is_network());
    /// ```
    pub fn is_network(&self) -> bool {
        self.transport().is_some_and(TransportError::is_network)
    }

    /// Whether a connection could not be established, however wrapped.
    pub fn is_connect(&self) -> bool {
        self.transport().is_some_and(TransportError::is_connect)
    }

    /// The HTTP status of a refusal, however wrapped (401 for a wrong token).
    ///
    /// ```
    /// use aep_async::TransportError;
    /// assert_eq!(aep_blocking::Error::from(TransportError::http(503, "ingest")).status(), Some(503));
    /// ```
    pub fn status(&self) -> Option<u16> {
        self.transport().and_then(TransportError::status)
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Error>();
};
