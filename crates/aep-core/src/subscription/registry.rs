//! The producer side: a sans-IO registry of subscriptions.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::cursor::Cursor;
use super::delivery::{DeliveredEvent, DeliveryMode};
use super::filter::{SubscriptionError, SubscriptionFilter};
use super::message::{
    LifecycleMessage, SubscriptionCancelled, SubscriptionCreated, SubscriptionExpired,
    SubscriptionRejected,
};
use crate::envelope::rfc3339_millis;
use crate::event::Event;

/// What a producer can honor.
///
/// ```
/// use std::time::Duration;
/// use aep_core::subscription::{DeliveryMode, SubscriptionRegistryConfig};
/// let config = SubscriptionRegistryConfig::new()
///     .with_max_delivery(DeliveryMode::AtLeastOnce)
///     .with_ttl(Duration::from_secs(3600));
/// assert!(!config.supports_replay());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[must_use = "a configuration does nothing until passed to `SubscriptionRegistry::new`"]
pub struct SubscriptionRegistryConfig {
    max_delivery: DeliveryMode,
    ttl: Option<Duration>,
}

impl SubscriptionRegistryConfig {
    /// `best_effort` only, no replay, no expiry.
    pub fn new() -> Self {
        SubscriptionRegistryConfig::default()
    }

    crate::setters! {
        /// The strongest mode the producer honors (it honors every weaker one too).
        /// `replayable` means the producer serves `from_cursor`.
        pub fn with_max_delivery(mode: DeliveryMode) => max_delivery = mode;

        /// How long a subscription lives before `subscription.expired` (none by default).
        pub fn with_ttl(ttl: Duration) => ttl = Some(ttl);
    }

    /// The strongest mode honored.
    pub fn max_delivery(&self) -> DeliveryMode {
        self.max_delivery
    }

    /// Whether `from_cursor` replay is served.
    pub fn supports_replay(&self) -> bool {
        self.max_delivery == DeliveryMode::Replayable
    }
}

/// One live subscription as the registry holds it.
///
/// ```
/// use std::time::UNIX_EPOCH;
/// use aep_core::subscription::{DeliveryMode, SubscriptionRegistry, SubscriptionRegistryConfig, SubscriptionRequested};
/// let mut reg = SubscriptionRegistry::new(SubscriptionRegistryConfig::new());
/// let req = SubscriptionRequested::from_payload(serde_json::json!({"source": "memory:main"}));
/// let id = reg.handle_request("c", &req, UNIX_EPOCH).unwrap().subscription_id().to_owned();
/// let sub = reg.get("c", &id).unwrap();
/// assert_eq!((sub.session(), sub.mode()), ("c", DeliveryMode::BestEffort));
/// ```
#[derive(Debug, Clone)]
pub struct Subscription {
    session: String,
    id: String,
    filter: SubscriptionFilter,
    mode: DeliveryMode,
    from: Option<Cursor>,
    expires_at: Option<SystemTime>,
    generation: u64,
    keys: Keys,
}

#[derive(Debug, Clone)]
enum Keys {
    /// Indexed under these literal first type segments.
    First(Box<[Box<str>]>),
    /// May match any type: checked for every event.
    Unindexed,
}

impl Subscription {
    /// The consumer session that created it.
    pub fn session(&self) -> &str {
        &self.session
    }
    /// Its id, unique within the session.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// Its filter.
    pub fn filter(&self) -> &SubscriptionFilter {
        &self.filter
    }
    /// The effective delivery mode (the request's, downgraded to what the producer
    /// honors; `best_effort` when the request named none).
    pub fn mode(&self) -> DeliveryMode {
        self.mode
    }
    /// Where replay starts, when requested: the events after this position.
    pub fn from_cursor(&self) -> Option<&Cursor> {
        self.from.as_ref()
    }
    /// When it expires.
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.expires_at
    }
}

/// One routing decision: deliver the event to this subscription at this mode.
///
/// ```
/// use std::time::UNIX_EPOCH;
/// use aep_core::subscription::{DeliveryMode, SubscriptionRegistry, SubscriptionRegistryConfig, SubscriptionRequested};
/// let mut reg = SubscriptionRegistry::new(SubscriptionRegistryConfig::new().with_max_delivery(DeliveryMode::AtLeastOnce));
/// let req = SubscriptionRequested::from_payload(serde_json::json!({"types": "tool.*", "delivery_mode": "at_least_once"}));
/// reg.handle_request("c", &req, UNIX_EPOCH).unwrap();
/// let event = aep_core::Event::new("1", "tool.completed", "t", "s", "a");
/// let route = reg.route(&event).next().unwrap();
/// assert_eq!((route.session, route.subscription_id), ("c", "sub_0001"));
/// assert_eq!(route.deliver(event.clone()).mode(), DeliveryMode::AtLeastOnce);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Route<'a> {
    /// The consumer session.
    pub session: &'a str,
    /// The subscription.
    pub subscription_id: &'a str,
    /// The effective delivery mode, to put under `delivery.mode`.
    pub mode: DeliveryMode,
}

impl Route<'_> {
    /// Wraps the event for this route.
    pub fn deliver(&self, event: Event) -> DeliveredEvent {
        DeliveredEvent::new(self.subscription_id, self.mode, event)
    }
}

#[derive(Debug, Default)]
struct SessionState {
    issued: u64,
    slots: Vec<usize>,
}

/// The producer-side subscription registry: a state machine with no IO and no clock.
///
/// Drive it with:
/// - [`SubscriptionRegistry::handle_request`] / [`SubscriptionRegistry::handle_message`] for what consumers send
///   (`subscription.requested` -> `created` or `rejected`; `subscription.cancelled` ->
///   a confirmation);
/// - [`SubscriptionRegistry::close_session`] when a consumer's session (its connection) ends: every
///   subscription it created is cancelled;
/// - [`SubscriptionRegistry::handle_timeout`] with the current time whenever
///   [`SubscriptionRegistry::poll_timeout`]'s deadline passes, and before routing, to expire
///   subscriptions (`subscription.expired` for each);
/// - [`SubscriptionRegistry::route`] for each event to deliver.
///
/// Subscriptions are indexed by the literal first segment of their type patterns, so an
/// event only visits subscriptions that could match its type plus those whose patterns
/// start with `*` or that have no `types`.
///
/// Cancellation takes effect for the next [`SubscriptionRegistry::route`]; events already routed
/// (in flight) may still arrive, and consumers must tolerate them.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use aep_core::subscription::{DeliveryMode, SubscriptionRegistry, SubscriptionRegistryConfig, SubscriptionRequested};
/// use serde_json::json;
///
/// let mut reg = SubscriptionRegistry::new(SubscriptionRegistryConfig::new().with_max_delivery(DeliveryMode::AtLeastOnce));
/// let now = UNIX_EPOCH + Duration::from_secs(1_783_073_704);
/// let req = SubscriptionRequested::from_payload(json!({"types": ["tool.*"], "delivery_mode": "replayable"}));
/// let created = reg.handle_request("conn-1", &req, now).unwrap();
/// assert_eq!(created.subscription_id(), "sub_0001");
///
/// let event: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"tool.completed","time":"t","source":"s","agent":"a"}"#.parse()?;
/// let routes: Vec<_> = reg.route(&event).collect();
/// assert_eq!(routes.len(), 1);
/// assert_eq!(routes[0].mode, DeliveryMode::AtLeastOnce); // downgraded, never upgraded
///
/// let rejected = reg.handle_request("conn-1", &SubscriptionRequested::from_payload(json!({})), now).unwrap_err();
/// assert_eq!(rejected.message(), "subscription must include at least one filter criterion");
/// # Ok::<(), aep_core::EventParseError>(())
/// ```
#[derive(Debug, Default)]
pub struct SubscriptionRegistry {
    config: SubscriptionRegistryConfig,
    slots: Vec<Option<Subscription>>,
    free: Vec<usize>,
    sessions: HashMap<String, SessionState>,
    by_first: HashMap<Box<str>, Vec<usize>>,
    unindexed: Vec<usize>,
    expiries: BinaryHeap<Reverse<(SystemTime, usize, u64)>>,
    generation: u64,
    live: usize,
}

impl SubscriptionRegistry {
    /// An empty registry for a producer honoring `config`.
    pub fn new(config: SubscriptionRegistryConfig) -> SubscriptionRegistry {
        SubscriptionRegistry {
            config,
            ..SubscriptionRegistry::default()
        }
    }

    /// The producer's declared capabilities.
    pub fn config(&self) -> &SubscriptionRegistryConfig {
        &self.config
    }

    /// How many subscriptions are live.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no subscription is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Checks a request without registering it: the filter parses, has a primary
    /// criterion, and its `from_cursor` is servable and well-formed. Returns the filter
    /// with its effective mode and cursor.
    ///
    /// ```
    /// use aep_core::subscription::{SubscriptionRegistry, SubscriptionRegistryConfig, SubscriptionError};
    /// let reg = SubscriptionRegistry::new(SubscriptionRegistryConfig::new());
    /// let err = reg.validate(&serde_json::json!({"types": "a.*", "from_cursor": "s:0:1"})).unwrap_err();
    /// assert_eq!(err, SubscriptionError::ReplayNotSupported);
    /// ```
    pub fn validate(
        &self,
        payload: &Value,
    ) -> Result<(SubscriptionFilter, DeliveryMode, Option<Cursor>), SubscriptionError> {
        let filter = SubscriptionFilter::from_value(payload)?;
        filter.validate()?;
        let from = match filter.from_cursor() {
            None => None,
            Some(_) if !self.config.supports_replay() => {
                return Err(SubscriptionError::ReplayNotSupported)
            }
            Some(text) => Some(Cursor::parse(text)?),
        };
        let mode = filter
            .delivery_mode()
            .unwrap_or_default()
            .downgrade_to(self.config.max_delivery);
        Ok((filter, mode, from))
    }

    fn next_id(&mut self, session: &str) -> String {
        let state = self.sessions.entry(session.to_owned()).or_default();
        state.issued += 1;
        format!("sub_{:04}", state.issued)
    }

    /// Handles `subscription.requested` from `session` at time `now`: registers the
    /// subscription and confirms it, or rejects it with a message naming the field at
    /// fault. Either way the request gets an id unique within the session.
    pub fn handle_request(
        &mut self,
        session: &str,
        request: &super::message::SubscriptionRequested,
        now: SystemTime,
    ) -> Result<SubscriptionCreated, SubscriptionRejected> {
        let id = self.next_id(session);
        let (filter, mode, from) = match self.validate(request.payload()) {
            Ok(ok) => ok,
            Err(reason) => {
                return Err(SubscriptionRejected::new(
                    Some(id),
                    request.payload().clone(),
                    &reason,
                ))
            }
        };
        let expires_at = self.config.ttl.and_then(|ttl| now.checked_add(ttl));
        let keys = index_keys(&filter);
        self.generation += 1;
        let sub = Subscription {
            session: session.to_owned(),
            id: id.clone(),
            filter: filter.clone(),
            mode,
            from,
            expires_at,
            generation: self.generation,
            keys,
        };
        let slot = self.insert(sub);
        if let Some(at) = expires_at {
            self.expiries.push(Reverse((at, slot, self.generation)));
        }
        Ok(SubscriptionCreated::new(
            id,
            filter,
            rfc3339_millis(now),
            expires_at.map(rfc3339_millis),
        ))
    }

    fn insert(&mut self, sub: Subscription) -> usize {
        let slot = self.free.pop().unwrap_or(self.slots.len());
        match &sub.keys {
            Keys::First(firsts) => {
                for first in firsts.iter() {
                    self.by_first.entry(first.clone()).or_default().push(slot);
                }
            }
            Keys::Unindexed => self.unindexed.push(slot),
        }
        self.sessions
            .entry(sub.session.clone())
            .or_default()
            .slots
            .push(slot);
        match self.slots.get_mut(slot) {
            Some(s) => *s = Some(sub),
            None => self.slots.push(Some(sub)),
        }
        self.live += 1;
        slot
    }

    fn remove(&mut self, slot: usize) -> Option<Subscription> {
        let sub = self.slots.get_mut(slot)?.take()?;
        match &sub.keys {
            Keys::First(firsts) => {
                for first in firsts.iter() {
                    if let Some(bucket) = self.by_first.get_mut(first) {
                        bucket.retain(|s| *s != slot);
                        if bucket.is_empty() {
                            self.by_first.remove(first);
                        }
                    }
                }
            }
            Keys::Unindexed => self.unindexed.retain(|s| *s != slot),
        }
        if let Some(state) = self.sessions.get_mut(&sub.session) {
            state.slots.retain(|s| *s != slot);
        }
        self.free.push(slot);
        self.live -= 1;
        Some(sub)
    }

    fn find(&self, session: &str, id: &str) -> Option<usize> {
        self.sessions
            .get(session)?
            .slots
            .iter()
            .copied()
            .find(|&s| {
                self.slots
                    .get(s)
                    .and_then(Option::as_ref)
                    .is_some_and(|sub| sub.id == id)
            })
    }

    /// A live subscription.
    pub fn get(&self, session: &str, id: &str) -> Option<&Subscription> {
        self.slots.get(self.find(session, id)?)?.as_ref()
    }

    /// Handles `subscription.cancelled` from `session`: stops routing to it and returns
    /// the confirmation, or `None` for an id the session does not hold (already
    /// cancelled, expired, or never created).
    pub fn cancel(&mut self, session: &str, id: &str) -> Option<SubscriptionCancelled> {
        let slot = self.find(session, id)?;
        self.remove(slot)
            .map(|sub| SubscriptionCancelled::new(sub.id))
    }

    /// Ends a consumer session: cancels every subscription it created and returns their
    /// ids. Its id counter is forgotten, so session keys must not be reused for a
    /// different consumer while one is open.
    pub fn close_session(&mut self, session: &str) -> Vec<String> {
        let Some(state) = self.sessions.remove(session) else {
            return Vec::new();
        };
        state
            .slots
            .into_iter()
            .filter_map(|slot| self.remove(slot).map(|sub| sub.id))
            .collect()
    }

    /// Handles one lifecycle message from `session`: `requested` is answered with
    /// `created` or `rejected`, `cancelled` with its confirmation (`None` when the id is
    /// unknown); messages a consumer does not send are ignored.
    #[must_use = "the reply (created, rejected, or the cancel confirmation) goes back to the consumer"]
    pub fn handle_message(
        &mut self,
        session: &str,
        message: &LifecycleMessage,
        now: SystemTime,
    ) -> Option<LifecycleMessage> {
        match message {
            LifecycleMessage::Requested(req) => {
                Some(match self.handle_request(session, req, now) {
                    Ok(created) => created.into(),
                    Err(rejected) => rejected.into(),
                })
            }
            LifecycleMessage::Cancelled(c) => {
                self.cancel(session, c.subscription_id()).map(Into::into)
            }
            _ => None,
        }
    }

    /// The next expiry deadline, if any subscription has one.
    pub fn poll_timeout(&mut self) -> Option<SystemTime> {
        while let Some(Reverse((at, slot, generation))) = self.expiries.peek().copied() {
            if self.is_current(slot, generation) {
                return Some(at);
            }
            self.expiries.pop();
        }
        None
    }

    fn is_current(&self, slot: usize, generation: u64) -> bool {
        self.slots
            .get(slot)
            .and_then(Option::as_ref)
            .is_some_and(|s| s.generation == generation)
    }

    /// Expires every subscription whose expiry is at or before `now`; returns, per
    /// consumer session, the `subscription.expired` to send.
    #[must_use = "each expired subscription's consumer is owed its subscription.expired"]
    pub fn handle_timeout(&mut self, now: SystemTime) -> Vec<(String, SubscriptionExpired)> {
        let mut expired = Vec::new();
        while let Some(Reverse((at, slot, generation))) = self.expiries.peek().copied() {
            if at > now {
                break;
            }
            self.expiries.pop();
            if self.is_current(slot, generation) {
                if let Some(sub) = self.remove(slot) {
                    expired.push((sub.session, SubscriptionExpired::new(sub.id)));
                }
            }
        }
        expired
    }

    /// The subscriptions `event` must be delivered to, each with its effective mode.
    /// Visits only subscriptions indexed under the event type's first segment and the
    /// unindexed ones; allocates nothing.
    pub fn route<'a>(&'a self, event: &'a Event) -> impl Iterator<Item = Route<'a>> + 'a {
        let first = event.event_type().split('.').next().unwrap_or_default();
        let indexed = self.by_first.get(first).map_or(&[][..], Vec::as_slice);
        indexed
            .iter()
            .chain(self.unindexed.iter())
            .filter_map(move |&slot| {
                let sub = self.slots.get(slot)?.as_ref()?;
                sub.filter.matches(event).then_some(Route {
                    session: &sub.session,
                    subscription_id: &sub.id,
                    mode: sub.mode,
                })
            })
    }
}

/// Where a subscription goes in the index: under each literal first segment of its
/// type patterns, or unindexed when some pattern (or the absence of `types`) lets any
/// first segment through.
fn index_keys(filter: &SubscriptionFilter) -> Keys {
    let Some(patterns) = filter.types() else {
        return Keys::Unindexed;
    };
    let mut firsts: Vec<Box<str>> = Vec::new();
    for p in patterns {
        match p.first_segment() {
            None => return Keys::Unindexed,
            Some(f) if !firsts.iter().any(|x| **x == *f) => firsts.push(f.into()),
            Some(_) => {}
        }
    }
    Keys::First(firsts.into_boxed_slice())
}
