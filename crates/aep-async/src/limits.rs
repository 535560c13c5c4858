//! What a reader takes from a relay before it gives up on the connection:
//! [`ReadLimits`], and [`LimitExceeded`], the error that names the bound a peer passed.
//!
//! The peer decides how long a line, an event and a message are and when it writes: a
//! reader that trusted it would grow without bound on an endless line, or wait forever
//! on a relay that sent its headers and went silent. Every reader of this crate (the
//! SSE and WebSocket subscriptions, the lifecycle connection, the control client and
//! `Duplex`, the WebSocket sink's reading side) takes its bounds from one `ReadLimits`.

use std::fmt;
use std::time::Duration;

use aep_core::liveness::{self, IDLE_TIMEOUT};
use aep_core::sse::{DEFAULT_MAX_EVENT, DEFAULT_MAX_LINE};

/// The bounds of a reader, with their defaults:
///
/// | bound | default | past it |
/// |---|---|---|
/// | `max_line` | 16 MiB + 1 KiB | an SSE line longer than this ends the connection |
/// | `max_event` | 16 MiB | an SSE message whose data passes this ends the connection |
/// | `max_frame` | 16 MiB + 1 KiB | a WebSocket message (one event or frame, AEP-0003 §3.5 rule 2) or frame larger than this ends the connection |
/// | `idle_timeout` | 90 s | a connection that brought nothing for this long is dead |
///
/// 16 MiB is the largest body a relay takes by default (`--max-body`), so every event
/// a relay accepted with its defaults is read. A bound passed is a
/// [`TransportError`](crate::TransportError) whose
/// [`limit_exceeded`](crate::TransportError::limit_exceeded) names it; the reader
/// reconnects on its backoff and resumes, as after any network failure.
///
/// The idle timeout is three of the relay's heartbeats (AEP-0003 §3.3 rule 4 and §3.5
/// rule 5: a `: ping` or `ping` at least every 30 s): set [`ReadLimits::heartbeat`] to
/// a relay's own interval (`aep-relay --heartbeat-ms`, 25 s by default) when it is
/// longer. A WebSocket reader also sends a `ping` after a third of it in silence, which
/// any endpoint answers, so a quiet endpoint that does not ping on its own stays up.
/// A timed-out connection is a [`TransportError::is_timeout`](crate::TransportError::is_timeout)
/// error; the reader reconnects and resumes.
///
/// ```
/// use std::time::Duration;
/// use aep_async::{Client, ReadLimits};
///
/// let limits = ReadLimits::new()
///     .max_event(1 << 20)
///     .max_line((1 << 20) + 1024)
///     .heartbeat(Duration::from_secs(60));
/// assert_eq!(limits, ReadLimits::new().max_event(1 << 20).max_line((1 << 20) + 1024)
///     .idle_timeout(Duration::from_secs(180)));
/// let client = Client::new("http://127.0.0.1:8787").read_limits(limits);
/// # let _ = client;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "limits do nothing until given to a client (`Client::read_limits`)"]
pub struct ReadLimits {
    max_line: usize,
    max_event: usize,
    max_frame: usize,
    idle_timeout: Duration,
}

/// The default bound on one WebSocket message: an event of [`DEFAULT_MAX_EVENT`] bytes
/// with room for a frame around it.
const DEFAULT_MAX_FRAME: usize = DEFAULT_MAX_LINE;

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_line: DEFAULT_MAX_LINE,
            max_event: DEFAULT_MAX_EVENT,
            max_frame: DEFAULT_MAX_FRAME,
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

impl ReadLimits {
    /// The defaults in the table above.
    pub fn new() -> Self {
        Self::default()
    }

    aep_core::setters! {
        /// The longest SSE line, in bytes (its line break not counted).
        pub fn max_line(bytes: usize) => max_line = bytes;

        /// The largest event an SSE message carries (its `data:` lines joined), in bytes.
        pub fn max_event(bytes: usize) => max_event = bytes;

        /// The largest WebSocket message or frame, in bytes.
        pub fn max_frame(bytes: usize) => max_frame = bytes;

        /// How long a connection may bring nothing (not even a heartbeat) before it is
        /// dead. `Duration::MAX` never times out.
        pub fn idle_timeout(timeout: Duration) => idle_timeout = timeout;
    }

    /// The idle timeout for a relay whose heartbeat comes every `interval`: three of
    /// them ([`aep_core::liveness::idle_timeout_for`]).
    pub fn heartbeat(self, interval: Duration) -> Self {
        self.idle_timeout(liveness::idle_timeout_for(interval))
    }
}

// What the readers compiled in read: SSE the line and event bounds, WebSocket the frame.
#[cfg_attr(not(all(feature = "sse", feature = "ws")), allow(dead_code))]
impl ReadLimits {
    pub(crate) fn line(&self) -> usize {
        self.max_line
    }

    pub(crate) fn event(&self) -> usize {
        self.max_event
    }

    pub(crate) fn frame(&self) -> usize {
        self.max_frame
    }

    pub(crate) fn idle(&self) -> Duration {
        self.idle_timeout
    }
}

/// Which bound of [`ReadLimits`] a peer passed.
///
/// ```
/// use aep_async::Limit;
/// assert_eq!(Limit::Line.to_string(), "max_line");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// `max_line`: an SSE line.
    Line,
    /// `max_event`: an SSE message's data.
    Event,
    /// `max_frame`: a WebSocket message or frame.
    Frame,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::Line => "max_line",
            Limit::Event => "max_event",
            Limit::Frame => "max_frame",
        })
    }
}

/// A peer sent more than a bound of [`ReadLimits`] allows: the reader dropped the
/// connection before keeping the bytes past it.
///
/// ```
/// use aep_async::{Limit, LimitExceeded};
/// let e = LimitExceeded::new(Limit::Event, 1024);
/// assert_eq!((e.limit(), e.max()), (Limit::Event, 1024));
/// assert!(e.to_string().contains("max_event bound of 1024 bytes"), "{e}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the relay sent {what} past the {limit} bound of {max} bytes; the connection was dropped \
     (raise {limit} in ReadLimits if the relay's events are that large)",
    what = self.what()
)]
pub struct LimitExceeded {
    limit: Limit,
    max: usize,
}

impl LimitExceeded {
    /// `limit` of `max` bytes was passed.
    pub fn new(limit: Limit, max: usize) -> Self {
        LimitExceeded { limit, max }
    }

    /// Which bound.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Its value, in bytes.
    pub fn max(&self) -> usize {
        self.max
    }

    fn what(&self) -> &'static str {
        match self.limit {
            Limit::Line => "an SSE line",
            Limit::Event => "an SSE event",
            Limit::Frame => "a WebSocket message",
        }
    }
}

impl From<aep_core::sse::SseError> for LimitExceeded {
    fn from(e: aep_core::sse::SseError) -> Self {
        match e {
            aep_core::sse::SseError::LineTooLong { max } => LimitExceeded::new(Limit::Line, max),
            _ => LimitExceeded::new(Limit::Event, e.max()),
        }
    }
}
