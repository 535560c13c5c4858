//! The errors of blocking calls.

use std::time::Duration;

use aep_async::control::{AskError, ControlError, InstructionsError, Nack};
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

    /// Whether the call timed out.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(aep_blocking::Error::Timeout(Duration::from_secs(1)).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Timeout(_) => true,
            Error::Ask(e) => e.is_timeout(),
            _ => false,
        }
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Error>();
};
