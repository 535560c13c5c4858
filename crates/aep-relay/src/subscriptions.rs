//! The subscription model's lifecycle on `/socket`, beside the AEP-0003 frames (the
//! wire surface is described in the crate docs).
//!
//! Validation, ids, the downgrade of the requested mode, expiry and matching are
//! [`aep_core::subscription::SubscriptionRegistry`]'s and [`SubscriptionFilter`]'s: one registry per
//! connection, the connection being the session. Each created subscription becomes a
//! relay hub subscription on its lowered attr-match filter (so replay and live delivery
//! keep the hub's exactly-once handover) with a private, never-dropping queue; a
//! forwarding task checks the whole filter, wraps each event in a [`DeliveredEvent`] and
//! offers it to the connection's queue with the effective mode's drop policy.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime};

use aep_core::resume::ResumePosition;
use aep_core::subscription::{
    DeliveredEvent, DeliveryMode, LifecycleMessage, SubscriptionFilter, SubscriptionRegistry,
    SubscriptionRegistryConfig, SubscriptionRejected,
};
use aep_core::{Event, Severity};
use bytes::Bytes;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::encoded::Binding;
use crate::hub::{Full, Hub, SubscribeRequest};
use crate::outbox::{Bounds, Delivery as Offer, Drain, Outbox, Piece};
use crate::proto;

/// The registry's session key: one registry per connection, so one session.
const SESSION: &str = "ws";

/// What a connection's subscriptions are given of the configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Subscriptions one connection may hold, `subscribe` frames and the lifecycle's
    /// together.
    pub(crate) max: usize,
    /// How long a lifecycle subscription lives; none: until cancelled.
    pub(crate) ttl: Option<Duration>,
}

/// The lifecycle state of one WebSocket connection; dropping it (the connection ended)
/// cancels every subscription it holds.
pub(crate) struct Lifecycle {
    limits: Limits,
    conn: Option<Arc<Conn>>,
}

impl fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let live = self.conn.as_ref().map_or(0, |c| c.lock().registry.len());
        f.debug_struct("Lifecycle").field("live", &live).finish()
    }
}

struct Conn {
    hub: Arc<Hub>,
    outbox: Arc<Outbox>,
    state: Mutex<State>,
}

struct State {
    registry: SubscriptionRegistry,
    running: HashMap<String, Running>,
}

/// A subscription's hub registration and the task forwarding its deliveries.
struct Running {
    hub_id: u64,
    task: JoinHandle<()>,
}

impl Conn {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn send(&self, message: &LifecycleMessage) {
        self.outbox.push_frame(Bytes::from(message.to_json()));
    }

    fn stop(&self, running: Running) {
        self.hub.unsubscribe(running.hub_id);
        running.task.abort();
    }

    /// Expires what is due, each with `subscription.expired`.
    fn expire_due(&self) {
        let mut st = self.lock();
        for (_, expired) in st.registry.handle_timeout(SystemTime::now()) {
            if let Some(running) = st.running.remove(expired.subscription_id()) {
                self.stop(running);
            }
            self.send(&expired.into());
        }
    }
}

impl Lifecycle {
    /// No subscription yet, within `limits`.
    pub(crate) fn new(limits: Limits) -> Lifecycle {
        Lifecycle { limits, conn: None }
    }

    /// Subscriptions this connection holds through the lifecycle.
    pub(crate) fn live(&self) -> usize {
        self.conn.as_ref().map_or(0, |c| c.lock().running.len())
    }

    /// Answers one lifecycle message (its `type` already checked). `others`: the
    /// AEP-0003 subscriptions the connection holds besides, which count toward the same
    /// cap.
    pub(crate) fn on_message(
        &mut self,
        hub: &Arc<Hub>,
        outbox: &Arc<Outbox>,
        message: &Value,
        others: usize,
    ) {
        let limits = self.limits;
        let conn = self
            .conn
            .get_or_insert_with(|| {
                let config =
                    SubscriptionRegistryConfig::new().with_max_delivery(DeliveryMode::Replayable);
                let config = match limits.ttl {
                    Some(ttl) => config.with_ttl(ttl),
                    None => config,
                };
                Arc::new(Conn {
                    hub: hub.clone(),
                    outbox: outbox.clone(),
                    state: Mutex::new(State {
                        registry: SubscriptionRegistry::new(config),
                        running: HashMap::new(),
                    }),
                })
            })
            .clone();
        conn.expire_due();
        let message = match LifecycleMessage::from_value(message) {
            Ok(m) => m,
            // a consumer's message is answered, malformed too (a request always parses:
            // its payload is checked by the registry and rejected by field), not fatal
            Err(e)
                if message
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(LifecycleMessage::is_consumer_type) =>
            {
                let frame = proto::error_frame(
                    aep_core::frame::ErrorCode::from("invalid-message"),
                    None,
                    None,
                    Some(&e.to_string()),
                );
                outbox.push_frame(Bytes::from(frame));
                return;
            }
            // what only a producer sends is ignored, like an unknown frame (AEP-0003 §2)
            Err(_) => return,
        };
        let mut st = conn.lock();
        let max = limits.max;
        if let LifecycleMessage::Requested(request) = &message {
            let held = st.running.len() + others;
            if held >= max {
                // a resource limit, refused as AEP-0003 §6.5 refuses a `subscribe`
                let detail = format!(
                    "this connection holds {held} subscriptions, the most this relay serves on one (AEP_MAX_SUBSCRIPTIONS={max})"
                );
                let rejected =
                    SubscriptionRejected::limit_exceeded(request.payload().clone(), detail);
                conn.send(&LifecycleMessage::Rejected(rejected));
                return;
            }
        }
        let Some(answer) = st
            .registry
            .handle_message(SESSION, &message, SystemTime::now())
        else {
            return;
        };
        match &answer {
            LifecycleMessage::Created(created) => {
                let id = created.subscription_id().to_owned();
                match start(&conn, &st.registry, &id) {
                    // confirmed before anything is delivered for it: the forwarder
                    // starts once `created` is queued
                    Some(Ok(registered)) => {
                        conn.send(&answer);
                        st.running.insert(id, registered.run(&conn));
                    }
                    Some(Err(full)) => {
                        // the relay-wide bound: refused as the per-connection cap is
                        st.registry.cancel(SESSION, &id);
                        if let LifecycleMessage::Requested(request) = &message {
                            let rejected = SubscriptionRejected::limit_exceeded(
                                request.payload().clone(),
                                full.detail(),
                            );
                            conn.send(&LifecycleMessage::Rejected(rejected));
                        }
                    }
                    None => conn.send(&answer),
                }
            }
            LifecycleMessage::Cancelled(c) => {
                if let Some(running) = st.running.remove(c.subscription_id()) {
                    conn.stop(running);
                }
                conn.send(&answer);
            }
            _ => conn.send(&answer),
        }
    }
}

impl Drop for Lifecycle {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let mut st = conn.lock();
        st.registry.close_session(SESSION);
        for (_, running) in st.running.drain() {
            conn.stop(running);
        }
    }
}

/// Registers a created subscription with the relay's hub (its lowered attr-match filter,
/// its replay from the cursor), within the relay-wide bound; [`Registered::run`] then
/// starts forwarding.
fn start(
    conn: &Arc<Conn>,
    registry: &SubscriptionRegistry,
    id: &str,
) -> Option<Result<Registered, Full>> {
    let sub = registry.get(SESSION, id)?;
    let filter = sub.filter().clone();
    let mode = sub.mode();
    let expires_at = sub.expires_at();
    let mut request = SubscribeRequest::new(Binding::Ws, filter.lower().wire().clone());
    if let Some(from) = sub.from_cursor() {
        let after = ResumePosition::new(from.session(), from.epoch(), from.seq());
        request.replay.positions.push(after.into());
    }
    request.sub = Some(id.to_owned());
    // This queue never lags or drops: the forwarder empties it at once and applies
    // the subscription's own mode toward the connection.
    let (private, rx) = Outbox::new(Bounds::UNBOUNDED, CancellationToken::new());
    let hub_id = match conn.hub.subscribe_bounded(&private, request) {
        Ok(hub_id) => hub_id,
        Err(full) => return Some(Err(full)),
    };
    // The heartbeat of this internal queue is never written anywhere.
    let drain = Drain::new(rx, private, Duration::from_secs(3600));
    let forward = Forward {
        id: id.to_owned(),
        filter,
        mode,
        expires_at,
    };
    Some(Ok(Registered {
        hub_id,
        drain,
        forward,
    }))
}

/// A subscription the hub has registered, its forwarder not started yet.
struct Registered {
    hub_id: u64,
    drain: Drain,
    forward: Forward,
}

impl Registered {
    fn run(self, conn: &Arc<Conn>) -> Running {
        let task = tokio::spawn(forward(Arc::downgrade(conn), self.drain, self.forward));
        Running {
            hub_id: self.hub_id,
            task,
        }
    }
}

struct Forward {
    id: String,
    filter: SubscriptionFilter,
    mode: DeliveryMode,
    expires_at: Option<SystemTime>,
}

async fn forward(conn: Weak<Conn>, mut drain: Drain, sub: Forward) {
    let expiry = async {
        match sub.expires_at {
            Some(at) => {
                let wait = at.duration_since(SystemTime::now()).unwrap_or_default();
                tokio::time::sleep(wait).await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::pin!(expiry);
    loop {
        let piece = tokio::select! {
            piece = drain.next() => piece,
            () = &mut expiry => {
                if let Some(conn) = conn.upgrade() {
                    conn.expire_due();
                }
                return;
            }
        };
        let Some(conn) = conn.upgrade() else { return };
        let bytes = match piece {
            Some(Piece::Data(bytes)) => bytes,
            Some(Piece::Heartbeat) => continue,
            Some(Piece::End(_)) | None => return,
        };
        let Ok(event) = Event::from_slice(&bytes) else {
            // not an event: the replay-exhausted frame of this subscription
            conn.outbox.push_frame(bytes);
            continue;
        };
        // the wire half let a superset through; the whole filter decides
        if !sub.filter.matches(&event) {
            continue;
        }
        let severity = match sub.mode {
            DeliveryMode::BestEffort => event.severity(),
            // a severity the outbox never drops: deliver, or disconnect past the bound
            DeliveryMode::AtLeastOnce | DeliveryMode::Replayable => {
                event.severity().max(Severity::Notice)
            }
        };
        let wrapped = DeliveredEvent::new(sub.id.as_str(), sub.mode, event).to_json();
        if conn.outbox.deliver(Bytes::from(wrapped), severity).await == Offer::Closed {
            return;
        }
    }
}
