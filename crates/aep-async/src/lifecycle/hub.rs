//! The in-process producer of the subscription lifecycle model: see the module docs
//! of [`crate::lifecycle`].

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use aep_core::subscription::{
    Cursor, DeliveredEvent, DeliveryMode, SubscriptionCancelled, SubscriptionCreated,
    SubscriptionFilter, SubscriptionRegistry, SubscriptionRegistryConfig, SubscriptionRejected,
    SubscriptionRequested,
};
use aep_core::Event;
use futures::Stream;
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

/// What a [`Hub`] honors and how much it holds.
///
/// ```
/// use std::time::Duration;
/// use aep_async::lifecycle::HubConfig;
/// use aep_core::subscription::DeliveryMode;
/// let config = HubConfig::new()
///     .with_max_delivery(DeliveryMode::Replayable)
///     .with_ttl(Duration::from_secs(60))
///     .with_capacity(64)
///     .with_replay_buffer(1000);
/// assert_eq!(config.capacity(), 64);
/// ```
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct HubConfig {
    registry: SubscriptionRegistryConfig,
    capacity: usize,
    replay: usize,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            registry: SubscriptionRegistryConfig::new().with_max_delivery(DeliveryMode::Replayable),
            capacity: 256,
            replay: 1024,
        }
    }
}

impl HubConfig {
    /// Every mode up to `replayable`, no expiry, 256 queued deliveries per subscriber,
    /// 1024 events kept for replay.
    pub fn new() -> Self {
        HubConfig::default()
    }

    /// The strongest delivery mode honored; requests for more are downgraded.
    pub fn with_max_delivery(mut self, mode: DeliveryMode) -> Self {
        self.registry = self.registry.with_max_delivery(mode);
        self
    }

    /// How long a subscription lives before it expires.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.registry = self.registry.with_ttl(ttl);
        self
    }

    aep_core::setters! {
        /// Deliveries queued per subscriber (at least 1).
        pub fn with_capacity(deliveries: usize) => capacity = deliveries.max(1);

        /// Events kept for `from_cursor` replay (sequenced events only: they have a
        /// position), oldest dropped first. A cursor older than what is kept replays what
        /// is left; the hub does not signal the gap (the relay does, with
        /// `replay-exhausted`).
        pub fn with_replay_buffer(events: usize) => replay = events;
    }

    /// Deliveries queued per subscriber.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// Why a subscriber's stream ended.
///
/// ```
/// use aep_async::lifecycle::Ended;
/// assert_ne!(Ended::Cancelled, Ended::Expired);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// Cancelled by its subscriber (`subscription.cancelled`).
    Cancelled,
    /// Reached its expiry (`subscription.expired`).
    Expired,
    /// Its session was closed.
    SessionClosed,
}

/// A request that was refused: the `subscription.rejected` answer, as an error (its
/// message names the field at fault).
///
/// ```
/// use aep_async::lifecycle::Hub;
/// use aep_core::subscription::SubscriptionFilter;
/// let err = Hub::new().session().subscribe(&SubscriptionFilter::new()).unwrap_err();
/// assert_eq!(err.to_string(), "subscription rejected: subscription must include at least one filter criterion");
/// assert_eq!(err.code(), "subscription_rejected");
/// assert_eq!(err.rejection().message(), err.message());
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("subscription rejected: {}", .0.message())]
pub struct Rejected(SubscriptionRejected);

impl Rejected {
    pub(crate) fn new(rejected: SubscriptionRejected) -> Self {
        Rejected(rejected)
    }
    /// The `subscription.rejected` message as answered.
    pub fn rejection(&self) -> &SubscriptionRejected {
        &self.0
    }
    /// The `subscription.rejected` message, owned.
    pub fn into_rejection(self) -> SubscriptionRejected {
        self.0
    }
    /// The rejection's code (`subscription_rejected`).
    pub fn code(&self) -> &str {
        self.0.code()
    }
    /// What was wrong, naming the field at fault.
    pub fn message(&self) -> &str {
        self.0.message()
    }
}

/// Wall time that follows tokio's clock, so a paused test clock drives expiry.
#[derive(Debug)]
struct Clock {
    wall: SystemTime,
    at: Instant,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            wall: SystemTime::now(),
            at: Instant::now(),
        }
    }

    fn now(&self) -> SystemTime {
        self.wall + self.at.elapsed()
    }

    fn instant(&self, t: SystemTime) -> Instant {
        self.at + t.duration_since(self.wall).unwrap_or_default()
    }
}

#[derive(Debug, Default)]
struct Shared {
    dropped: AtomicU64,
    ended: Mutex<Option<Ended>>,
}

impl Shared {
    fn end(&self, how: Ended) {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        ended.get_or_insert(how);
    }
}

#[derive(Debug, Clone)]
struct Target {
    tx: mpsc::Sender<DeliveredEvent>,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct State {
    registry: SubscriptionRegistry,
    targets: HashMap<(String, String), Target>,
    replay: VecDeque<Event>,
    sessions: u64,
}

impl State {
    fn end(&mut self, session: &str, id: &str, how: Ended) {
        if let Some(target) = self.targets.remove(&(session.to_owned(), id.to_owned())) {
            target.shared.end(how);
        }
    }

    fn expire_due(&mut self, now: SystemTime) {
        for (session, expired) in self.registry.handle_timeout(now) {
            self.end(&session, expired.subscription_id(), Ended::Expired);
        }
    }
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    clock: Clock,
    config: HubConfig,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The hub: producers [`publish`](Hub::publish), consumers open a [`HubSession`] and
/// subscribe with a [`SubscriptionFilter`]. Cloning is cheap; clones share the hub.
///
/// ```
/// use aep_async::lifecycle::Hub;
/// use aep_core::subscription::{DeliveryMode, SubscriptionFilter};
/// use aep_core::Event;
/// use futures::StreamExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let hub = Hub::new();
/// let session = hub.session();
/// let filter = SubscriptionFilter::new()
///     .with_types("tool.*.progress")?
///     .with_delivery_mode(DeliveryMode::AtLeastOnce);
/// let mut sub = session.subscribe(&filter)?;
/// assert_eq!(sub.id(), "sub_0001");
///
/// hub.publish(Event::new("1", "tool.call.progress", "2026-07-09T10:00:00Z", "agent:a", "a")).await;
/// hub.publish(Event::new("2", "tool.call.started", "2026-07-09T10:00:01Z", "agent:a", "a")).await;
/// let delivery = sub.next().await.unwrap();
/// assert_eq!((delivery.event().id(), delivery.mode()), ("1", DeliveryMode::AtLeastOnce));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub")
            .field("config", &self.inner.config)
            .field("subscriptions", &self.inner.lock().registry.len())
            .finish()
    }
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    /// A hub with [`HubConfig::new`].
    pub fn new() -> Hub {
        Hub::with_config(HubConfig::new())
    }

    /// A hub honoring `config`.
    pub fn with_config(config: HubConfig) -> Hub {
        Hub {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    registry: SubscriptionRegistry::new(config.registry),
                    targets: HashMap::new(),
                    replay: VecDeque::new(),
                    sessions: 0,
                }),
                clock: Clock::new(),
                config,
            }),
        }
    }

    /// Opens a consumer session; subscription ids are unique within it, and closing
    /// (or dropping) it cancels every subscription it created.
    pub fn session(&self) -> HubSession {
        let key = {
            let mut st = self.inner.lock();
            st.sessions += 1;
            format!("session-{}", st.sessions)
        };
        HubSession {
            inner: self.inner.clone(),
            key,
        }
    }

    /// How many subscriptions are live.
    pub fn len(&self) -> usize {
        self.inner.lock().registry.len()
    }

    /// Whether no subscription is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Delivers `event` to every matching subscription at its effective mode and
    /// returns how many subscriptions it was routed to. Waits for room in the queues
    /// of `at_least_once` and `replayable` subscribers; a full `best_effort` queue
    /// drops it for that subscriber.
    pub async fn publish(&self, event: Event) -> usize {
        let targets: Vec<(Target, DeliveredEvent)> = {
            let mut st = self.inner.lock();
            st.expire_due(self.inner.clock.now());
            let routed: Vec<_> = st
                .registry
                .route(&event)
                .map(|r| {
                    let key = (r.session.to_owned(), r.subscription_id.to_owned());
                    (key, r.deliver(event.clone()))
                })
                .collect();
            let targets = routed
                .into_iter()
                .filter_map(|(key, d)| st.targets.get(&key).map(|t| (t.clone(), d)))
                .collect();
            let keep = self.inner.config.replay;
            if keep > 0 && event.session().is_some() && event.seq().is_some() {
                if st.replay.len() >= keep {
                    st.replay.pop_front();
                }
                st.replay.push_back(event);
            }
            targets
        };
        let routed = targets.len();
        for (target, delivery) in targets {
            match delivery.mode() {
                DeliveryMode::BestEffort => {
                    if let Err(mpsc::error::TrySendError::Full(_)) = target.tx.try_send(delivery) {
                        target.shared.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // a subscriber gone meanwhile is not a drop: it no longer wants events
                DeliveryMode::AtLeastOnce | DeliveryMode::Replayable => {
                    let _ = target.tx.send(delivery).await;
                }
            }
        }
        routed
    }
}

/// A consumer session of a [`Hub`]: it requests subscriptions; dropping it (or
/// [`HubSession::close`]) cancels all of them.
///
/// ```
/// use aep_async::lifecycle::{Ended, Hub};
/// use aep_core::subscription::{Field, SubscriptionFilter};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let hub = Hub::new();
/// let session = hub.session();
/// let sub = session.subscribe(&SubscriptionFilter::new().with(Field::Source, "memory:main")?)?;
/// session.close();
/// assert_eq!(sub.ended(), Some(Ended::SessionClosed));
/// # Ok(()) }
/// ```
pub struct HubSession {
    inner: Arc<Inner>,
    key: String,
}

impl fmt::Debug for HubSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HubSession")
            .field("key", &self.key)
            .finish()
    }
}

impl HubSession {
    /// Requests a subscription for `filter`.
    pub fn subscribe(&self, filter: &SubscriptionFilter) -> Result<Subscriber, Rejected> {
        self.request(&SubscriptionRequested::new(filter))
    }

    /// Handles a `subscription.requested` as it arrived (any JSON payload): a
    /// [`Subscriber`] for `subscription.created`, or the `subscription.rejected` whose
    /// message names the field at fault.
    ///
    /// ```
    /// use aep_async::lifecycle::Hub;
    /// use aep_core::subscription::SubscriptionRequested;
    /// let hub = Hub::new();
    /// let req = SubscriptionRequested::from_payload(serde_json::json!({"types": []}));
    /// let rejected = hub.session().request(&req).unwrap_err();
    /// assert!(rejected.message().contains("types"));
    /// ```
    pub fn request(&self, request: &SubscriptionRequested) -> Result<Subscriber, Rejected> {
        let now = self.inner.clock.now();
        let mut st = self.inner.lock();
        st.expire_due(now);
        let created = st
            .registry
            .handle_request(&self.key, request, now)
            .map_err(Rejected::new)?;
        let id = created.subscription_id().to_owned();
        let Some(sub) = st.registry.get(&self.key, &id) else {
            // just registered under this lock: unreachable, but never a panic
            return Err(Rejected::new(SubscriptionRejected::new(
                Some(id),
                request.payload().clone(),
                &aep_core::subscription::SubscriptionError::NoCriterion,
            )));
        };
        let mode = sub.mode();
        let expires_at = sub.expires_at().map(|t| self.inner.clock.instant(t));
        // The replay is taken under the lock that routing takes too, so every event is
        // either replayed or delivered live, never both or neither.
        let replay = sub
            .from_cursor()
            .map(|from| replay_after(&st.replay, from, sub.filter(), &id, mode))
            .unwrap_or_default();
        let (tx, rx) = mpsc::channel(self.inner.config.capacity);
        let shared = Arc::new(Shared::default());
        st.targets.insert(
            (self.key.clone(), id),
            Target {
                tx,
                shared: shared.clone(),
            },
        );
        Ok(Subscriber {
            inner: self.inner.clone(),
            session: self.key.clone(),
            created,
            mode,
            replay,
            rx,
            shared,
            expires_at,
            sleep: None,
        })
    }

    /// Closes the session: every subscription it created ends ([`Ended::SessionClosed`]).
    pub fn close(self) {}
}

impl Drop for HubSession {
    fn drop(&mut self) {
        let mut st = self.inner.lock();
        for id in st.registry.close_session(&self.key) {
            st.end(&self.key, &id, Ended::SessionClosed);
        }
    }
}

fn replay_after(
    buffer: &VecDeque<Event>,
    from: &Cursor,
    filter: &SubscriptionFilter,
    id: &str,
    mode: DeliveryMode,
) -> VecDeque<DeliveredEvent> {
    buffer
        .iter()
        .filter(|e| {
            e.session() == Some(from.session())
                && e.seq()
                    .is_some_and(|seq| (e.epoch(), seq) > (from.epoch(), from.seq()))
                && filter.matches(e)
        })
        .map(|e| DeliveredEvent::new(id, mode, e.clone()))
        .collect()
}

/// One subscription of a [`HubSession`]: a [`Stream`] of [`DeliveredEvent`]s, each carrying
/// the effective mode. The stream ends after a cancel, an expiry or the session's
/// close; [`Subscriber::ended`] says which. Dropping it cancels the subscription.
///
/// ```
/// use aep_async::lifecycle::{Ended, Hub};
/// use aep_core::subscription::SubscriptionFilter;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let hub = Hub::new();
/// let session = hub.session();
/// let mut sub = session.subscribe(&SubscriptionFilter::new().with_types("*")?)?;
/// let confirmed = sub.cancel().unwrap();
/// assert_eq!(confirmed.subscription_id(), "sub_0001");
/// assert_eq!(sub.ended(), Some(Ended::Cancelled));
/// assert!(hub.is_empty());
/// # Ok(()) }
/// ```
#[must_use = "a subscriber is cancelled when dropped"]
pub struct Subscriber {
    inner: Arc<Inner>,
    session: String,
    created: SubscriptionCreated,
    mode: DeliveryMode,
    replay: VecDeque<DeliveredEvent>,
    rx: mpsc::Receiver<DeliveredEvent>,
    shared: Arc<Shared>,
    expires_at: Option<Instant>,
    // Created on first poll: a timer needs the runtime, the constructor does not.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber")
            .field("session", &self.session)
            .field("id", &self.id())
            .field("mode", &self.mode)
            .field("ended", &self.ended())
            .finish()
    }
}

impl Subscriber {
    /// The producer-assigned id, unique within the session.
    pub fn id(&self) -> &str {
        self.created.subscription_id()
    }

    /// The `subscription.created` confirmation.
    pub fn created(&self) -> &SubscriptionCreated {
        &self.created
    }

    /// The effective delivery mode (downgraded from the request, never upgraded).
    pub fn mode(&self) -> DeliveryMode {
        self.mode
    }

    /// Deliveries dropped for this `best_effort` subscriber because its queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Why the subscription ended, once it has.
    pub fn ended(&self) -> Option<Ended> {
        *self.shared.ended.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cancels the subscription and returns the confirmation (`None` when it had
    /// already ended). Deliveries already queued are still yielded.
    pub fn cancel(&mut self) -> Option<SubscriptionCancelled> {
        let mut st = self.inner.lock();
        let confirmed = st
            .registry
            .cancel(&self.session, self.created.subscription_id())?;
        st.end(&self.session, confirmed.subscription_id(), Ended::Cancelled);
        Some(confirmed)
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.cancel();
    }
}

impl Stream for Subscriber {
    type Item = DeliveredEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<DeliveredEvent>> {
        let this = self.get_mut();
        if let Some(d) = this.replay.pop_front() {
            return Poll::Ready(Some(d));
        }
        loop {
            match this.rx.poll_recv(cx) {
                Poll::Ready(item) => return Poll::Ready(item),
                Poll::Pending => {}
            }
            let Some(deadline) = this.expires_at else {
                return Poll::Pending;
            };
            let sleep = this
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
            this.expires_at = None;
            this.inner.lock().expire_due(this.inner.clock.now());
        }
    }
}
