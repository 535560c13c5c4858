//! # aep-core: the Agent Event Protocol without IO
//!
//! Everything the Agent Event Protocol (AEP 0.1) says about events, filters, capture,
//! ordering and control, as plain Rust values and state machines: no sockets, no clock,
//! no runtime. The async crate, the blocking crate and the relay all drive this code, so
//! every protocol rule lives here once.
//!
//! ```
//! use aep_core::{Event, Severity};
//!
//! let event: Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":3,"severity":"notice"}"#.parse()?;
//! assert_eq!(event.severity(), Severity::Notice);
//! # Ok::<(), aep_core::EventParseError>(())
//! ```
//!
//! ## Layout
//!
//! - [`event`]: the envelope (AEP-0001 §5), byte-preserving; [`Event`].
//! - [`level`]: [`Severity`] and [`Capture`], ordered (AEP-0001 §8).
//! - [`types`]: [`EventType`], the type grammar and the generated registry (AEP-0001 §6,
//!   AEP-0002 §3-4).
//! - [`payload`] / [`schema`]: generated payload types and capture annotations
//!   (AEP-0002 §4-5).
//! - [`envelope`]: ids, times and extension checks for emitters (AEP-0001 §5).
//! - [`validate`]: rule-id validation of events and streams.
//! - [`filter`]: attr-match (AEP-0003 §6): [`Filter`] parsed fail-closed, compiled once,
//!   matched without allocation.
//! - [`capture`]: down-leveling to a capture ceiling (AEP-0001 §8.2, AEP-0002 §5.1, §5.3).
//! - [`ceiling`]: the emitter capture ceiling with overrides (AEP-0003 §9.1).
//! - [`redact`]: the redaction pipeline and content digests (AEP-0003 §9.3, §9.4).
//! - [`gating`]: form-values gating (AEP-0006).
//! - [`projection`]: per-session state and the violations the fold surfaces.
//! - [`dedupe`]: bounded `(source, id)` dedupe (AEP-0001 §7).
//! - [`resume`]: resume positions, SSE ids and the `from` budget split (AEP-0003 §3.3, §5).
//! - [`sse`]: the SSE framing a consumer reads, bounded per line and per event (§3.3).
//! - [`liveness`]: heartbeats and the idle timeout of a connection (§3.3, §3.5).
//! - [`frame`]: the WebSocket frame vocabulary and the discovery document (AEP-0003 §2,
//!   §3.4).
//! - [`binding`]: the bindings' paths, version header and gate, content types and SSE
//!   comments (AEP-0003 §3).
//! - [`source`]: the `source` URI, [`SourceUri`] (AEP-0001 §5.2).
//! - [`control`]: the sender and target state machines of AEP-0004.
//! - [`attention`]: the attention loop, target side (AEP-0002 §7, AEP-0006, AEP-0008):
//!   requests, answers checked against them, the pending requests' state machine.
//! - [`steering`]: instructions sent to an agent (`x.{vendor}.control.instruct`), one
//!   bounded FIFO per session with its delivered and dropped audits.
//! - [`subscription`]: the subscription lifecycle model (the draft AEP Subscription Model):
//!   typed filters with dotted type patterns, the `subscription.*` lifecycle, the
//!   producer [`SubscriptionRegistry`], delivery modes, cursors, lowering to attr-match.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod attention;
pub mod binding;
pub mod capture;
pub mod ceiling;
pub mod control;
pub mod dedupe;
pub mod envelope;
pub mod event;
pub mod filter;
pub mod frame;
pub mod gating;
pub mod level;
pub mod liveness;
mod names;
pub mod payload;
pub mod percent;
pub mod projection;
pub mod redact;
pub mod resume;
pub mod schema;
mod setters;
pub mod source;
pub mod sse;
pub mod steering;
pub mod subscription;
pub mod types;
pub mod validate;

/// The crate's maps keyed by what peers choose (ids, sources, sessions): foldhash with a
/// random seed resists chosen keys as well as dedupe and projection need, at a fraction
/// of SipHash's cost per event.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub use capture::{downlevel, downlevel_in_place, downlevel_redacting};
pub use ceiling::CaptureCeiling;
pub use control::{ControlSender, ControlTarget, Nack, NackReason, RejectReason};
pub use dedupe::Dedupe;
pub use envelope::{Clock, EnvelopeFactory};
pub use event::{EnvelopeView, Event, EventParseError, ExtensionError, AEP_VERSION};
pub use filter::{Filter, FilterError};
pub use frame::{DecodeError, Frame, Message};
pub use gating::gate_form_values;
pub use level::{Capture, Severity};
pub use payload::{Payload, PayloadError, PayloadType};
pub use projection::{project_state, ProjectedState, StateProjection, Violation};
pub use redact::{ContentDigest, RedactOptions, Redactor};
pub use resume::{FromBudget, Position, Positions, ReplayStart, ResumeFrom, ResumePosition};
pub use source::SourceUri;
pub use subscription::{DeliveryMode, SubscriptionFilter, SubscriptionRegistry};
pub use types::EventType;
pub use validate::{
    validate_envelope, validate_envelope_view, validate_event, validate_value, Issue, Rule,
    StreamValidator,
};
