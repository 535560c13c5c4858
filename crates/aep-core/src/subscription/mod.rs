//! The subscription lifecycle model: filters with dotted type patterns, the
//! `subscription.*` lifecycle (requested -> created | rejected, then cancelled or
//! expired), delivery modes, cursors, and a producer-side registry.
//!
//! The model is a draft document of the protocol, the AEP Subscription Model, beside the
//! numbered AEPs (AEP-0001 to AEP-0009 say nothing of it), offered here as a typed layer
//! that runs over any AEP relay. It is richer than AEP-0003 §6 attr-match in its type
//! patterns ([`TypePattern`]: `*` as one segment anywhere, `*` alone) and stricter in what
//! it accepts (an empty filter matches nothing; a request needs one of `types`, `source`,
//! `target`, `topic`).
//!
//! - [`SubscriptionFilter`]: the filter's fields, JSON shape, validation and matching.
//!   A filter [lowers](SubscriptionFilter::lower) to an attr-match wire filter plus a
//!   local residual, so the reference relay can serve it too.
//! - Envelope mapping: `types` -> `type`, `source` -> `source`, `session_id` ->
//!   `session`; `target` -> [`TARGET_ATTR`], `topic` -> [`TOPIC_ATTR`],
//!   `conversation_id` -> [`CONVERSATION_ATTR`], `task_id` -> [`TASK_ATTR`] (extension
//!   attributes, AEP-0001 §5.4).
//! - [`LifecycleMessage`]: `subscription.requested` / `created` / `rejected` /
//!   `cancelled` / `expired` with the document's JSON.
//! - [`SubscriptionRegistry`]: the producer side as a sans-IO state machine; time is an argument.
//! - [`DeliveryMode`] and the [`DeliveredEvent`] wrapper carrying `delivery.mode`.
//! - [`Cursor`]: `from_cursor` as `{session}:{epoch}:{seq}`, the SSE `id` of AEP-0003
//!   §3.3.
//!
//! ```
//! use aep_core::subscription::{Field, SubscriptionFilter, TARGET_ATTR};
//! use aep_core::Event;
//!
//! let filter = SubscriptionFilter::new()
//!     .with_types(["memory.*", "context.*"])?
//!     .with(Field::Target, "agent:researcher")?;
//! let mut event = Event::new("01J", "memory.fact.added", "2026-07-09T10:00:00.000Z", "memory:main", "memory");
//! event.set_extension(TARGET_ATTR, "agent:researcher".into())?;
//! assert!(filter.matches(&event));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cursor;
mod delivery;
mod filter;
mod message;
mod pattern;
mod registry;

pub use cursor::{Cursor, CursorError};
pub use delivery::{DeliveredEvent, DeliveryMode, DeliveryParseError, UnknownDeliveryMode};
pub use filter::{Field, Lowered, Residual, SubscriptionError, SubscriptionFilter, Values};
pub use message::{
    LifecycleMessage, MessageError, SubscriptionCancelled, SubscriptionCreated,
    SubscriptionExpired, SubscriptionRejected, SubscriptionRequested, REJECTED_CODE,
};
pub use pattern::{PatternError, TypePattern};
pub use registry::{Route, Subscription, SubscriptionRegistry, SubscriptionRegistryConfig};

/// `Serialize` and `Deserialize` through the type's JSON value form (`to_value`,
/// `from_value`), which is where its rules are read and written.
macro_rules! serde_via_value {
    ($t:ty) => {
        impl ::serde::Serialize for $t {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                ::serde::Serialize::serialize(&self.to_value(), s)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = <::serde_json::Value as ::serde::Deserialize>::deserialize(d)?;
                <$t>::from_value(&value).map_err(::serde::de::Error::custom)
            }
        }
    };
}
use serde_via_value;

/// The extension attribute carrying a subscription's `target` (the event's target
/// identity), e.g. `"agent:researcher"`.
pub const TARGET_ATTR: &str = "aeptarget";
/// The extension attribute carrying a subscription's `topic` (routing topic).
pub const TOPIC_ATTR: &str = "aeptopic";
/// The extension attribute carrying a subscription's `conversation_id`.
pub const CONVERSATION_ATTR: &str = "aepconversationid";
/// The extension attribute carrying a subscription's `task_id`.
pub const TASK_ATTR: &str = "aeptaskid";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::check_extension_name;

    #[test]
    fn mapped_names_are_legal_extension_names() {
        for name in [TARGET_ATTR, TOPIC_ATTR, CONVERSATION_ATTR, TASK_ATTR] {
            check_extension_name(name).unwrap();
        }
    }
}
