//! The subscription lifecycle model for synchronous code, as [`aep_async::lifecycle`]:
//! [`Hub`] in process, and [`LifecycleConnection`] (feature `ws`,
//! [`Client::lifecycle`](crate::Client::lifecycle)) against a relay that serves it. Each
//! subscription is a [`Receiver`] of deliveries: `recv`, `try_recv`, `recv_timeout`,
//! or iterate.
//!
//! The rules (validation, ids, the delivery mode's downgrade, cancellation, routing,
//! cursors) are the async crate's, and through it aep-core's; this module only waits.
//!
//! ```
//! use aep_blocking::lifecycle::Hub;
//! use aep_core::subscription::SubscriptionFilter;
//! use aep_core::Event;
//!
//! let hub = Hub::new()?;
//! let session = hub.session();
//! let mut sub = session.subscribe(&SubscriptionFilter::new().with_types("tool.*")?)?;
//! let event = Event::new("1", "tool.called", "2026-01-01T00:00:00Z", "aep://h/agent/a", "a")
//!     .with_session("s")
//!     .with_seq(0);
//! assert_eq!(hub.publish(event)?, 1);
//! assert_eq!(sub.recv()?.event().id(), "1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "ws")]
pub use aep_async::lifecycle::SubscribeError;
pub use aep_async::lifecycle::{Ended, HubConfig, Rejected};
use aep_core::subscription::{
    DeliveryMode, SubscriptionCancelled, SubscriptionCreated, SubscriptionFilter,
    SubscriptionRequested,
};
use aep_core::Event;

use crate::error::Error;
use crate::runtime::Runtime;
pub use crate::subscribe::Receiver;

/// An in-process producer of the lifecycle model: the blocking face of
/// [`aep_async::lifecycle::Hub`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Hub {
    inner: aep_async::lifecycle::Hub,
    runtime: Runtime,
}

impl Hub {
    /// A hub with the default [`HubConfig`], waiting on the [shared](Runtime::shared)
    /// runtime; fails only when that runtime has to be started and cannot be.
    pub fn new() -> Result<Hub, Error> {
        Ok(Hub::on(&Runtime::shared()?, HubConfig::new()))
    }

    /// A hub with `config`, waiting on `runtime`.
    ///
    /// ```
    /// let rt = aep_blocking::Runtime::new()?;
    /// let hub = aep_blocking::lifecycle::Hub::on(&rt, aep_blocking::lifecycle::HubConfig::new().with_capacity(16));
    /// assert!(hub.is_empty());
    /// # Ok::<(), aep_blocking::Error>(())
    /// ```
    pub fn on(runtime: &Runtime, config: HubConfig) -> Hub {
        Hub {
            inner: aep_async::lifecycle::Hub::with_config(config),
            runtime: runtime.clone(),
        }
    }

    /// A consumer session, to request subscriptions on.
    pub fn session(&self) -> HubSession {
        HubSession {
            inner: self.inner.session(),
            runtime: self.runtime.clone(),
        }
    }

    /// How many subscriptions are live.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether no subscription is live.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Delivers `event` to every matching subscription and returns how many it was
    /// routed to: [`aep_async::lifecycle::Hub::publish`], blocking while an
    /// `at_least_once` or `replayable` subscriber's queue is full.
    pub fn publish(&self, event: Event) -> Result<usize, Error> {
        self.runtime.poll_here(self.inner.publish(event))
    }

    /// The async hub underneath.
    pub fn as_async(&self) -> &aep_async::lifecycle::Hub {
        &self.inner
    }
}

/// A consumer session of a [`Hub`]; dropping it (or [`HubSession::close`]) cancels its
/// subscriptions.
#[derive(Debug)]
pub struct HubSession {
    inner: aep_async::lifecycle::HubSession,
    runtime: Runtime,
}

impl HubSession {
    /// Requests a subscription with `filter`; [`Rejected`] says why not.
    pub fn subscribe(&self, filter: &SubscriptionFilter) -> Result<Subscriber, Rejected> {
        self.read(self.inner.subscribe(filter))
    }

    /// Answers a `subscription.requested` message as the hub would.
    pub fn request(&self, request: &SubscriptionRequested) -> Result<Subscriber, Rejected> {
        self.read(self.inner.request(request))
    }

    /// A created subscription, read on the session's runtime.
    fn read(
        &self,
        created: Result<aep_async::lifecycle::Subscriber, Rejected>,
    ) -> Result<Subscriber, Rejected> {
        created.map(|inner| Receiver::new(inner, self.runtime.clone()))
    }

    /// Ends the session and every subscription on it.
    pub fn close(self) {
        self.inner.close();
    }
}

/// One subscription of a [`Hub`]: a [`Receiver`] of deliveries, ending after a cancel,
/// an expiry or its session's close.
pub type Subscriber = Receiver<aep_async::lifecycle::Subscriber>;

impl Receiver<aep_async::lifecycle::Subscriber> {
    /// The subscription's id.
    pub fn id(&self) -> &str {
        self.as_async().id()
    }
    /// The `subscription.created` answer.
    pub fn created(&self) -> &SubscriptionCreated {
        self.as_async().created()
    }
    /// The effective delivery mode.
    pub fn mode(&self) -> DeliveryMode {
        self.as_async().mode()
    }
    /// Deliveries dropped for this `best_effort` subscriber.
    pub fn dropped(&self) -> u64 {
        self.as_async().dropped()
    }
    /// Why the subscription ended, once it has.
    pub fn ended(&self) -> Option<Ended> {
        self.as_async().ended()
    }
    /// Cancels the subscription (`None` when it had already ended).
    pub fn cancel(&mut self) -> Option<SubscriptionCancelled> {
        self.inner_mut().cancel()
    }
}

/// A WebSocket connection to a relay speaking the subscription lifecycle: the blocking
/// face of [`aep_async::lifecycle::LifecycleConnection`], opened with
/// [`Client::lifecycle`](crate::Client::lifecycle). Feature `ws`.
///
/// ```no_run
/// use aep_blocking::Client;
/// use aep_core::subscription::SubscriptionFilter;
///
/// let conn = Client::new("http://127.0.0.1:8787").token("t").lifecycle()?;
/// let sub = conn.subscribe(&SubscriptionFilter::new().with_types("tool.*")?)?;
/// for delivery in sub.take(10) {
///     println!("{} at {}", delivery.event().id(), delivery.mode());
/// }
/// conn.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
#[derive(Debug)]
#[must_use = "dropping the connection cancels its subscriptions"]
pub struct LifecycleConnection {
    inner: aep_async::lifecycle::LifecycleConnection,
    runtime: Runtime,
}

#[cfg(feature = "ws")]
impl LifecycleConnection {
    pub(crate) fn new(inner: aep_async::lifecycle::LifecycleConnection, runtime: Runtime) -> Self {
        LifecycleConnection { inner, runtime }
    }

    /// Sends `subscription.requested` with `filter` and blocks for the answer; a
    /// refusal is [`Error::Lifecycle`].
    pub fn subscribe(&self, filter: &SubscriptionFilter) -> Result<RemoteSubscriber, Error> {
        let inner = self.runtime.poll_here(self.inner.subscribe(filter))??;
        Ok(Receiver::new(inner, self.runtime.clone()))
    }

    /// Closes the connection in order, ending every subscription on it. Idempotent.
    /// Waits for the close, except inside a tokio runtime, where it only starts it.
    pub fn close(&self) {
        let _ = self.runtime.block_on(self.inner.close());
    }
}

/// One subscription created by the relay: a [`Receiver`] of deliveries, ending after a
/// cancel, an expiry or the connection's close. Feature `ws`.
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub type RemoteSubscriber = Receiver<aep_async::lifecycle::RemoteSubscriber>;

#[cfg(feature = "ws")]
impl Receiver<aep_async::lifecycle::RemoteSubscriber> {
    /// The relay-assigned id.
    pub fn id(&self) -> &str {
        self.as_async().id()
    }
    /// The `subscription.created` answer.
    pub fn created(&self) -> &SubscriptionCreated {
        self.as_async().created()
    }
    /// Why the subscription ended, once it has.
    pub fn ended(&self) -> Option<Ended> {
        self.as_async().ended()
    }
    /// Sends `subscription.cancelled` and blocks for the relay's confirmation (`None`
    /// when the subscription had already ended).
    pub fn cancel(&mut self) -> Result<Option<SubscriptionCancelled>, Error> {
        let runtime = self.runtime().clone();
        runtime.poll_here(self.inner_mut().cancel())
    }
}
