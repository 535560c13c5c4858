//! Consuming from synchronous code: [`Client::subscribe`](crate::Client::subscribe)
//! returns a [`Subscription`], a [`Receiver`] with the receive methods of
//! `std::sync::mpsc` (`recv`, `try_recv`, `recv_timeout`) and an [`Iterator`];
//! [`Client::ws_connection`](crate::Client::ws_connection) a [`WsConnection`] that
//! carries several.
//!
//! Connecting, resuming, dedupe and reconnects are the async crate's
//! ([`aep_async::Subscription`]), running on the [`Runtime`]; the caller's thread only
//! takes events, so [`Subscription::positions`] reflects exactly what the caller took.

use std::fmt;
use std::time::Duration;

pub use aep_async::{Notice, StartFrom, SubscribeOptions, Transport};
use aep_core::resume::ResumePosition;
use futures::{FutureExt, Stream, StreamExt};

use crate::runtime::Runtime;

/// Why [`Receiver::recv`] returned no item.
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
    /// Called from inside a tokio runtime: see [`Error::InsideRuntime`](crate::Error::InsideRuntime).
    #[error("recv called from inside a tokio runtime; use aep_async there")]
    InsideRuntime,
}

/// Why [`Receiver::try_recv`] returned no item.
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

/// Why [`Receiver::recv_timeout`] returned no item.
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
    /// Called from inside a tokio runtime: see [`Error::InsideRuntime`](crate::Error::InsideRuntime).
    #[error("recv_timeout called from inside a tokio runtime; use aep_async there")]
    InsideRuntime,
}

/// A stream of the async crate read from synchronous code: [`recv`](Receiver::recv)
/// blocks for the next item, [`try_recv`](Receiver::try_recv) never blocks,
/// [`recv_timeout`](Receiver::recv_timeout) blocks at most so long, and iterating
/// takes items until the stream ends. The blocking face of every stream of this crate:
/// [`Subscription`], and the lifecycle model's
/// [`Subscriber`](crate::lifecycle::Subscriber) and
/// [`RemoteSubscriber`](crate::lifecycle::RemoteSubscriber).
///
/// Waiting is done on the [`Runtime`] the stream was opened on; called inside a tokio
/// runtime, `recv` and `recv_timeout` refuse instead of blocking it, and iterating
/// ends at once. Dropping it drops the async stream: no runtime needed.
#[must_use = "a stream is closed when dropped: keep it and read it"]
pub struct Receiver<S> {
    inner: S,
    runtime: Runtime,
}

impl<S: fmt::Debug> fmt::Debug for Receiver<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("inner", &self.inner)
            .field("runtime", &self.runtime)
            .finish()
    }
}

impl<S> Receiver<S> {
    /// Reads `inner` on `runtime`.
    pub(crate) fn new(inner: S, runtime: Runtime) -> Self {
        Receiver { inner, runtime }
    }

    /// The async stream underneath.
    pub fn as_async(&self) -> &S {
        &self.inner
    }

    /// The async stream underneath, to read from async code.
    pub fn into_async(self) -> S {
        self.inner
    }

    pub(crate) fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The runtime it waits on.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

impl<S: Stream + Unpin> Receiver<S> {
    /// Blocks for the next item.
    pub fn recv(&mut self) -> Result<S::Item, RecvError> {
        match self.runtime.poll_here(self.inner.next()) {
            Ok(Some(item)) => Ok(item),
            Ok(None) => Err(RecvError::Closed),
            Err(_) => Err(RecvError::InsideRuntime),
        }
    }

    /// The next item if one is ready now; never blocks (and works anywhere, a tokio
    /// runtime included).
    pub fn try_recv(&mut self) -> Result<S::Item, TryRecvError> {
        match self.inner.next().now_or_never() {
            Some(Some(item)) => Ok(item),
            Some(None) => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Blocks for the next item, at most `timeout`. A timeout loses nothing: the stream
    /// goes on and the next call sees what arrives.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<S::Item, RecvTimeoutError> {
        // Waiting on the stream is cancel-safe: an item not yet returned stays queued.
        // Built inside the poll, where the runtime's timer is in context.
        let next = async { tokio::time::timeout(timeout, self.inner.next()).await };
        match self.runtime.poll_here(next) {
            Ok(Ok(Some(item))) => Ok(item),
            Ok(Ok(None)) => Err(RecvTimeoutError::Closed),
            Ok(Err(_)) => Err(RecvTimeoutError::Timeout),
            Err(_) => Err(RecvTimeoutError::InsideRuntime),
        }
    }
}

impl<S: Stream + Unpin> Iterator for Receiver<S> {
    type Item = S::Item;

    fn next(&mut self) -> Option<S::Item> {
        self.recv().ok()
    }
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
/// use aep_blocking::{Client, SubscribeOptions};
///
/// let mut sub = Client::new("http://127.0.0.1:8787").subscribe(SubscribeOptions::new())?;
/// for event in sub.by_ref().take(10) {
///     println!("{} {}", event.event_type(), event.id());
/// }
/// let resume_from = sub.positions(); // persist; pass back with from_positions(..)
/// sub.close();
/// # let _ = resume_from;
/// # Ok::<(), aep_blocking::Error>(())
/// ```
pub type Subscription = Receiver<aep_async::Subscription>;

impl Receiver<aep_async::Subscription> {
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
}

/// One WebSocket connection carrying any number of subscriptions (AEP-0003 §6.5): the
/// blocking face of [`aep_async::subscribe::ws::WsConnection`], opened with
/// [`Client::ws_connection`](crate::Client::ws_connection). Feature `ws`.
///
/// ```no_run
/// use aep_blocking::{Client, SubscribeOptions};
/// use serde_json::json;
///
/// let conn = Client::new("http://127.0.0.1:8787").ws_connection()?;
/// let attention = conn.subscribe(SubscribeOptions::new().filter(json!({"type": "attention.*"})));
/// let errors = conn.subscribe(SubscribeOptions::new().filter(json!({"type": "error.*"})));
/// # let _ = (attention, errors);
/// # Ok::<(), aep_blocking::Error>(())
/// ```
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
#[derive(Debug, Clone)]
#[must_use = "the connection ends when its last handle and subscription are dropped"]
pub struct WsConnection {
    inner: aep_async::subscribe::ws::WsConnection,
    runtime: Runtime,
}

#[cfg(feature = "ws")]
impl WsConnection {
    pub(crate) fn new(inner: aep_async::subscribe::ws::WsConnection, runtime: Runtime) -> Self {
        WsConnection { inner, runtime }
    }

    /// Adds a subscription on this connection (its `transport` is the connection's).
    pub fn subscribe(&self, options: SubscribeOptions) -> Subscription {
        let inner = self.runtime.enter(|| self.inner.subscribe(options));
        Receiver::new(inner, self.runtime.clone())
    }
}
