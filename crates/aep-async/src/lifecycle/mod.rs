//! The subscription lifecycle model (`aep_core::subscription`): subscriptions that are
//! requested and answered (`subscription.requested` -> `subscription.created` |
//! `subscription.rejected`, then `subscription.cancelled` or `subscription.expired`),
//! with type patterns, a delivery mode per subscription and cursors. Each subscriber is
//! a `Stream` of deliveries.
//!
//! This is not the event stream of AEP-0003 (for that, see
//! [`Client::subscribe`](crate::Client::subscribe) and [`Subscription`](crate::Subscription), which
//! speak to any relay). Two sides of the model live here:
//!
//! - [`Hub`]: an in-process producer, for a program that fans its own events out to
//!   subscribers inside itself ([`HubSession`], [`Subscriber`]).
//! - `LifecycleConnection` (feature `ws`): the consumer side against a relay's WebSocket
//!   that serves the lifecycle (the Rust relay's; see the `aep-relay` crate docs), each
//!   subscription a `RemoteSubscriber`. Against a relay without it (the reference
//!   relay), lower the filter with
//!   [`SubscribeOptions::subscription_filter`](crate::SubscribeOptions::subscription_filter)
//!   instead.
//!
//! ## The hub
//!
//! The hub drives [`aep_core::subscription::SubscriptionRegistry`]: validation, ids, downgrade of
//! the delivery mode, cancellation, session close and routing are the registry's; the
//! hub adds the channels, a clock (tokio time, so tests run on a paused clock), and a
//! bounded replay buffer for `from_cursor`.
//!
//! Delivery by effective mode:
//! - `best_effort`: a full subscriber queue drops the delivery, counted in
//!   [`Subscriber::dropped`];
//! - `at_least_once` and `replayable`: [`Hub::publish`] waits for room, so nothing is
//!   dropped; a subscriber that never reads holds its producer back;
//! - `replayable`: `from_cursor` (`{session}:{epoch}:{seq}`) first yields the buffered
//!   events of that session after the position, then goes live, with no event twice and
//!   none missing in between.
//!
//! After a cancel, an event that was already routed may still arrive (the document's
//! "events in flight"); then the stream ends.
//!
//! ## Against a relay
//!
//! One connection carries any number of subscriptions; it is the session, so closing it
//! (dropping the `LifecycleConnection`) cancels them all. A slow reader holds the
//! socket back, and the relay applies each subscription's mode to that backpressure.
//! The connection does not reconnect: its subscriptions end with
//! [`Ended::SessionClosed`], and a `replayable` one can be requested again from the
//! cursor of the last event taken.
//!
//! ```
//! use aep_async::lifecycle::Hub;
//! use aep_core::subscription::SubscriptionFilter;
//!
//! let hub = Hub::new();
//! let session = hub.session();
//! let subscriber = session.subscribe(&SubscriptionFilter::new().with_types("tool.*")?)?;
//! assert_eq!(hub.len(), 1);
//! # drop(subscriber);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod hub;
#[cfg(feature = "ws")]
mod remote;

pub use hub::{Ended, Hub, HubConfig, HubSession, Rejected, Subscriber};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use remote::{LifecycleConnection, RemoteSubscriber, SubscribeError};
