//! Delivery modes and the delivery wrapper.

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::event::Event;
use crate::names::{self, display_as_str};

/// A delivery guarantee, ordered weakest first: `best_effort < at_least_once <
/// replayable`. A producer may downgrade a requested mode to one it can honor, never
/// upgrade it.
///
/// Exhaustive: the lifecycle model defines these three guarantees, and a producer
/// must honor each one it accepts in its own way, so a fourth would change every
/// producer.
///
/// ```
/// use aep_core::subscription::DeliveryMode;
/// assert!(DeliveryMode::BestEffort < DeliveryMode::Replayable);
/// assert_eq!("at_least_once".parse::<DeliveryMode>()?, DeliveryMode::AtLeastOnce);
/// assert_eq!(DeliveryMode::Replayable.downgrade_to(DeliveryMode::AtLeastOnce), DeliveryMode::AtLeastOnce);
/// assert_eq!(DeliveryMode::BestEffort.downgrade_to(DeliveryMode::Replayable), DeliveryMode::BestEffort);
/// # Ok::<(), aep_core::subscription::UnknownDeliveryMode>(())
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryMode {
    /// At most once; may be dropped (transient UI updates, progress).
    #[default]
    BestEffort,
    /// Durable; may deliver duplicates (task results, memory updates).
    AtLeastOnce,
    /// Cursor-based replay supported (late joiners, recovery).
    Replayable,
}

/// A `delivery_mode` string naming no mode.
///
/// ```
/// let err = "exactly_once".parse::<aep_core::subscription::DeliveryMode>().unwrap_err();
/// assert!(err.to_string().starts_with("`delivery_mode` `exactly_once`"));
/// assert_eq!(err.value(), "exactly_once");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`delivery_mode` `{0}` is not a delivery mode: expected best_effort, at_least_once or replayable")]
pub struct UnknownDeliveryMode(String);

impl UnknownDeliveryMode {
    /// The string that named no mode.
    pub fn value(&self) -> &str {
        &self.0
    }
}

impl DeliveryMode {
    /// Every mode, weakest first.
    pub const ALL: [DeliveryMode; 3] = [
        DeliveryMode::BestEffort,
        DeliveryMode::AtLeastOnce,
        DeliveryMode::Replayable,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryMode::BestEffort => "best_effort",
            DeliveryMode::AtLeastOnce => "at_least_once",
            DeliveryMode::Replayable => "replayable",
        }
    }

    /// The mode a producer honoring at most `supported` delivers for this request: the
    /// weaker of the two (downgrade, never upgrade).
    #[must_use]
    pub fn downgrade_to(self, supported: DeliveryMode) -> DeliveryMode {
        self.min(supported)
    }
}

display_as_str!(DeliveryMode);

impl FromStr for DeliveryMode {
    type Err = UnknownDeliveryMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        names::find(&DeliveryMode::ALL, DeliveryMode::as_str, s)
            .ok_or_else(|| UnknownDeliveryMode(s.to_owned()))
    }
}

/// One delivered event: the AEP envelope untouched, wrapped with the subscription it
/// was routed for and the effective delivery mode under `delivery.mode`.
///
/// The envelope stays AEP-0001-valid (the mode is not an extension attribute: §5.4
/// allows only scalar values there), and its bytes are written as they arrived.
///
/// JSON: `{"subscription_id":"sub_0001","delivery":{"mode":"at_least_once"},"event":{…}}`.
///
/// ```
/// use aep_core::subscription::{DeliveredEvent, DeliveryMode};
/// let event: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"tool.completed","time":"t","source":"s","agent":"a"}"#.parse()?;
/// let d = DeliveredEvent::new("sub_0001", DeliveryMode::AtLeastOnce, event);
/// let json = d.to_json();
/// assert_eq!(json, r#"{"subscription_id":"sub_0001","delivery":{"mode":"at_least_once"},"event":{"aep":"0.1","id":"1","type":"tool.completed","time":"t","source":"s","agent":"a"}}"#);
/// assert_eq!(DeliveredEvent::from_json(&json)?, d);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveredEvent {
    subscription_id: String,
    mode: DeliveryMode,
    event: Event,
}

/// A delivery wrapper that could not be read.
///
/// ```
/// assert!(aep_core::subscription::DeliveredEvent::from_json(r#"{"event":{}}"#).is_err());
/// ```
#[derive(Debug, thiserror::Error)]
#[error("not a subscription delivery: {0}")]
pub struct DeliveryParseError(String);

#[derive(Serialize, Deserialize)]
struct DeliveryMeta {
    mode: DeliveryMode,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeliveryWire<'a> {
    subscription_id: String,
    delivery: DeliveryMeta,
    #[serde(borrow)]
    event: &'a RawValue,
}

impl DeliveredEvent {
    /// Wraps an event routed for `subscription_id` at the effective `mode`.
    pub fn new(
        subscription_id: impl Into<String>,
        mode: DeliveryMode,
        event: Event,
    ) -> DeliveredEvent {
        DeliveredEvent {
            subscription_id: subscription_id.into(),
            mode,
            event,
        }
    }

    /// The subscription the event was routed for.
    pub fn subscription_id(&self) -> &str {
        &self.subscription_id
    }

    /// The effective delivery mode (`delivery.mode`).
    pub fn mode(&self) -> DeliveryMode {
        self.mode
    }

    /// The envelope.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The envelope, unwrapped.
    pub fn into_event(self) -> Event {
        self.event
    }

    /// The compact JSON of the wrapper, the envelope's bytes as they arrived.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"{\"subscription_id\":");
        // Writing a string into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &self.subscription_id);
        out.extend_from_slice(b",\"delivery\":{\"mode\":\"");
        out.extend_from_slice(self.mode.as_str().as_bytes());
        out.extend_from_slice(b"\"},\"event\":");
        self.event.write_json(&mut out);
        out.push(b'}');
        String::from_utf8(out).unwrap_or_default()
    }

    /// The wrapper as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.to_json()).unwrap_or(Value::Null)
    }

    /// Reads a wrapper.
    pub fn from_json(text: &str) -> Result<DeliveredEvent, DeliveryParseError> {
        let wire: DeliveryWire<'_> =
            serde_json::from_str(text).map_err(|e| DeliveryParseError(e.to_string()))?;
        let event = Event::from_slice(wire.event.get().as_bytes())
            .map_err(|e| DeliveryParseError(format!("`event`: {e}")))?;
        Ok(DeliveredEvent {
            subscription_id: wire.subscription_id,
            mode: wire.delivery.mode,
            event,
        })
    }
}
