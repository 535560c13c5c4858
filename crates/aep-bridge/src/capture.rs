//! What may leave through a bridge: the exporter's `max_capture` (AEP-0005 §3.3, §4.6,
//! and §6: bridges are the egress boundary of the capture model).
//!
//! Two policies, because the spec's text and its conformance pins disagree:
//!
//! - §3.3 says an event above `max_capture` is *down-leveled* (AEP-0001 §8.2) before
//!   export: the fields at or below the ceiling survive.
//! - The pins (`conformance/fixtures/otlp`, `ocsf`), which the protocol's runner checks,
//!   drop *all* of `data` for such an event: the reference exporters have no schema
//!   annotations at hand. [`CapturePolicy::DropData`] matches the pins and is the
//!   default, so this crate projects exactly what the conformance corpus pins.
//!
//! [`CapturePolicy::Downlevel`] runs `aep_core::capture::downlevel` (the annotations are
//! compiled into aep-core) for an operator who wants the metadata fields of a
//! `redacted` event, such as a failed tool's error type, in the backend. Either way an
//! event at `capture: none` exports no payload (§3.3), and nothing above the ceiling
//! leaves.

use std::borrow::Cow;

use aep_core::{Capture, Event};
use serde_json::Value;

/// How an event above the ceiling is lowered. See the [module docs](self).
///
/// ```
/// use aep_bridge::CapturePolicy;
/// assert_eq!(CapturePolicy::default(), CapturePolicy::DropData);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CapturePolicy {
    /// Drop the whole `data` of an event above the ceiling; the envelope is unchanged
    /// (what the AEP-0005 conformance pins assert).
    #[default]
    DropData,
    /// Down-level the event per AEP-0001 §8.2 with the schema's `x-aep-capture`
    /// annotations: fields at or below the ceiling survive, and `capture` is rewritten
    /// to the level honored (AEP-0005 §3.3's text).
    Downlevel,
}

/// An exporter's capture ceiling: `max_capture` and how it is enforced. The default is
/// `metadata` with [`CapturePolicy::DropData`] (AEP-0005 §3.3).
///
/// ```
/// use aep_bridge::{CaptureLimit, CapturePolicy};
/// use aep_core::{Capture, Event};
///
/// let event: Event = r#"{"aep":"0.1","id":"1","type":"tool.failed","time":"2026-07-03T10:00:00Z","source":"s","agent":"a","capture":"redacted","data":{"tool":{"name":"Bash"},"error":{"type":"Exit","message":"in /home/u"}}}"#.parse()?;
/// assert_eq!(CaptureLimit::default().apply(&event).data(), None);
///
/// let lowered = CaptureLimit::new(Capture::Metadata).policy(CapturePolicy::Downlevel);
/// let out = lowered.apply(&event);
/// assert_eq!(out.event().capture(), Capture::Metadata);
/// assert_eq!(out.data(), Some(&serde_json::json!({"tool": {"name": "Bash"}, "error": {"type": "Exit"}})));
/// # Ok::<(), aep_core::EventParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CaptureLimit {
    max: Capture,
    policy: CapturePolicy,
}

impl Default for CaptureLimit {
    fn default() -> Self {
        CaptureLimit::new(Capture::Metadata)
    }
}

impl CaptureLimit {
    /// A ceiling of `max`, enforced with [`CapturePolicy::DropData`].
    ///
    /// ```
    /// let limit = aep_bridge::CaptureLimit::new(aep_core::Capture::Full);
    /// assert_eq!(limit.max(), aep_core::Capture::Full);
    /// ```
    pub fn new(max: Capture) -> Self {
        CaptureLimit {
            max,
            policy: CapturePolicy::DropData,
        }
    }

    aep_core::setters! {
        /// Sets the policy.
        ///
        /// ```
        /// use aep_bridge::{CaptureLimit, CapturePolicy};
        /// let limit = CaptureLimit::default().policy(CapturePolicy::Downlevel);
        /// assert_eq!(limit.get_policy(), CapturePolicy::Downlevel);
        /// ```
        pub fn policy(policy: CapturePolicy) => policy = policy;
    }

    /// The ceiling.
    ///
    /// ```
    /// assert_eq!(aep_bridge::CaptureLimit::default().max(), aep_core::Capture::Metadata);
    /// ```
    pub fn max(&self) -> Capture {
        self.max
    }

    /// The policy.
    ///
    /// ```
    /// use aep_bridge::{CaptureLimit, CapturePolicy};
    /// assert_eq!(CaptureLimit::default().get_policy(), CapturePolicy::DropData);
    /// ```
    pub fn get_policy(&self) -> CapturePolicy {
        self.policy
    }

    /// The event as it may leave, and its surviving payload.
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_data(serde_json::json!({"trigger": "user"}));
    /// assert_eq!(aep_bridge::CaptureLimit::default().apply(&e).data(), Some(&serde_json::json!({"trigger": "user"})));
    /// ```
    pub fn apply<'e>(&self, event: &'e Event) -> Egress<'e> {
        let above = event.capture() > self.max;
        let event = match (above, self.policy) {
            (true, CapturePolicy::Downlevel) => {
                Cow::Owned(aep_core::capture::downlevel(event, self.max))
            }
            _ => Cow::Borrowed(event),
        };
        let keep =
            event.capture() > Capture::None && !(above && self.policy == CapturePolicy::DropData);
        let data = if keep { event.data() } else { None };
        Egress { event, data }
    }
}

/// An event past the capture ceiling: the envelope to project and the payload that
/// survived (`None` when nothing did).
///
/// ```
/// let e = aep_core::Event::new("1", "agent.idle", "t", "s", "a");
/// let out = aep_bridge::CaptureLimit::default().apply(&e);
/// assert_eq!(out.event().id(), "1");
/// assert!(out.data().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Egress<'e> {
    event: Cow<'e, Event>,
    data: Option<Value>,
}

impl Egress<'_> {
    /// The envelope (down-leveled under [`CapturePolicy::Downlevel`]).
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "agent.idle", "t", "s", "a");
    /// assert_eq!(aep_bridge::CaptureLimit::default().apply(&e).event().agent(), "a");
    /// ```
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The surviving payload.
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "agent.idle", "t", "s", "a").with_capture(aep_core::Capture::None);
    /// assert!(aep_bridge::CaptureLimit::default().apply(&e).data().is_none());
    /// ```
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// The surviving payload's members, when it is an object with at least one.
    pub(crate) fn members(&self) -> Option<&serde_json::Map<String, Value>> {
        self.data
            .as_ref()
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
    }
}
