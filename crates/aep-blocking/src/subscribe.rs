//! Consuming from synchronous code: [`subscribe()`] returns a [`Subscription`] with the
//! receive methods of `std::sync::mpsc` (`recv`, `try_recv`, `recv_timeout`) and an
//! [`Iterator`].
//!
//! Connecting, resuming, dedupe and reconnects are the async crate's
//! ([`aep_async::Subscription`]), running on the [`Runtime`]; the caller's thread only
//! takes events, so [`Subscription::positions`] reflects exactly what the caller took.

use std::fmt;
use std::time::Duration;

// Without a transport only the docs name these.
#[cfg_attr(not(any(feature = "sse", feature = "ws")), allow(unused_imports))]
use aep_async::SubscribeOptions;
use aep_core::resume::ResumePosition;
use aep_core::Event;
use futures::{FutureExt, StreamExt};

#[cfg_attr(not(any(feature = "sse", feature = "ws")), allow(unused_imports))]
use crate::error::Error;
use crate::runtime::Runtime;

/// Why [`Subscription::recv`] returned no event.
///
/// ```
/// let e = aep_blocking::RecvError::Closed;
/// assert!(e.to_string().contains("ended"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecvError {
    /// The subscription ended: closed, a `live=false` history pass finished, or it
    /// failed for good (the reason went to the notice handler).
    #[error("the subscription ended")]
    Closed,
    /// Called from inside a tokio runtime: see [`Error::InsideRuntime`].
    #[error("recv called from inside a tokio runtime; use aep_async there")]
    InsideRuntime,
}

/// Why [`Subscription::try_recv`] returned no event.
///
/// ```
/// assert_ne!(aep_blocking::TryRecvError::Empty, aep_blocking::TryRecvError::Closed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TryRecvError {
    /// No event is ready now.
    #[error("no event ready")]
    Empty,
    /// The subscription ended.
    #[error("the subscription ended")]
    Closed,
}

/// Why [`Subscription::recv_timeout`] returned no event.
///
/// ```
/// let e = aep_blocking::RecvTimeoutError::Timeout;
/// assert!(e.to_string().contains("timed out"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecvTimeoutError {
    /// No event arrived in time; the subscription goes on.
    #[error("timed out waiting for an event")]
    Timeout,
    /// The subscription ended.
    #[error("the subscription ended")]
    Closed,
    /// Called from inside a tokio runtime: see [`Error::InsideRuntime`].
    #[error("recv_timeout called from inside a tokio runtime; use aep_async there")]
    InsideRuntime,
}

/// A live or history subscription for synchronous code: deduplicated events in
/// delivery order, as [`aep_async::Subscription`].
///
/// Nothing that goes wrong ends it early: network failures are retried (resuming
/// exactly), and problems go to [`SubscribeOptions::on_notice`]. Iterating ends when
/// the subscription does, or at once (with nothing received) when called inside a tokio
/// runtime; `recv` says which. Dropping it closes it; no runtime needed.
///
/// ```no_run
/// use aep_blocking::{subscribe, SubscribeOptions};
///
/// let mut sub = subscribe("http://127.0.0.1:8787", SubscribeOptions::new())?;
/// for event in sub.by_ref().take(10) {
///     println!("{} {}", event.event_type(), event.id());
/// }
/// let resume_from = sub.positions(); // persist; pass back with from_positions(..)
/// sub.close();
/// # let _ = resume_from;
/// # Ok::<(), aep_blocking::Error>(())
/// ```
#[must_use = "a subscription is closed when dropped: keep it and read it"]
pub struct Subscription {
    inner: aep_async::Subscription,
    runtime: Runtime,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("inner", &self.inner)
            .field("runtime", &self.runtime)
            .finish()
    }
}

/// Subscribes to the relay at `url` (or the first reachable of several relays of one
/// cluster, [`Relays`](crate::Relays), failing over between them) on the
/// [shared](Runtime::shared) runtime.
#[cfg(any(feature = "sse", feature = "ws"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sse", feature = "ws"))))]
///
/// Returns at once; connecting happens in the background. Fails only when the shared
/// runtime has to be started and cannot be.
pub fn subscribe(
    url: impl Into<crate::Relays>,
    options: SubscribeOptions,
) -> Result<Subscription, Error> {
    subscribe_on(&Runtime::shared()?, url, options)
}

/// [`subscribe()`] on a given runtime.
#[cfg(any(feature = "sse", feature = "ws"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sse", feature = "ws"))))]
///
/// ```no_run
/// let rt = aep_blocking::Runtime::new()?;
/// let sub = aep_blocking::subscribe_on(&rt, "http://127.0.0.1:8787", Default::default())?;
/// # Ok::<(), aep_blocking::Error>(())
/// ```
pub fn subscribe_on(
    runtime: &Runtime,
    url: impl Into<crate::Relays>,
    options: SubscribeOptions,
) -> Result<Subscription, Error> {
    let url = url.into();
    let inner = runtime.enter(|| aep_async::subscribe(url, options));
    Ok(Subscription {
        inner,
        runtime: runtime.clone(),
    })
}

impl Subscription {
    /// Blocks for the next event.
    pub fn recv(&mut self) -> Result<Event, RecvError> {
        match self.runtime.poll_here(self.inner.next()) {
            Ok(Some(event)) => Ok(event),
            Ok(None) => Err(RecvError::Closed),
            Err(_) => Err(RecvError::InsideRuntime),
        }
    }

    /// The next event if one is ready now; never blocks (and works anywhere, a tokio
    /// runtime included).
    pub fn try_recv(&mut self) -> Result<Event, TryRecvError> {
        match self.inner.next().now_or_never() {
            Some(Some(event)) => Ok(event),
            Some(None) => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Blocks for the next event, at most `timeout`. A timeout loses nothing: the
    /// subscription goes on and the next call sees what arrives.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Event, RecvTimeoutError> {
        // Waiting on the stream is cancel-safe: an event not yet returned stays queued.
        // Built inside the poll, where the runtime's timer is in context.
        let next = async { tokio::time::timeout(timeout, self.inner.next()).await };
        match self.runtime.poll_here(next) {
            Ok(Ok(Some(event))) => Ok(event),
            Ok(Ok(None)) => Err(RecvTimeoutError::Closed),
            Ok(Err(_)) => Err(RecvTimeoutError::Timeout),
            Err(_) => Err(RecvTimeoutError::InsideRuntime),
        }
    }

    /// The latest `(session, epoch, seq)` per session among the events taken so far;
    /// persist it and resume with [`SubscribeOptions::from_positions`].
    pub fn positions(&self) -> Vec<ResumePosition> {
        self.inner.positions()
    }

    /// Stops the subscription; events already buffered can still be taken. Idempotent.
    pub fn close(&mut self) {
        self.inner.close();
    }

    /// Whether [`Subscription::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The async subscription underneath.
    pub fn into_async(self) -> aep_async::Subscription {
        self.inner
    }
}

impl Iterator for Subscription {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        self.recv().ok()
    }
}
