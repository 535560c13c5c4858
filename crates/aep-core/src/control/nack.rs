//! Why a command was not accepted: the reject reasons of AEP-0004 §3 and the nacks a
//! sender settles with.

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Event;
use crate::frame::ErrorFrame;
use crate::names::{self, display_as_str};

/// The `reason` of a `control.rejected` ack: the closed wire set of AEP-0004 §3
/// (`schemas/registry/nack-reasons.json`), so this enum is exhaustive.
///
/// ```
/// use aep_core::control::RejectReason;
/// assert_eq!("busy".parse::<RejectReason>().unwrap(), RejectReason::Busy);
/// assert!("timeout".parse::<RejectReason>().is_err()); // sender-synthesized only
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RejectReason {
    /// The type is not in the target's `accepts` (AEP-0004 §4.2).
    Unsupported,
    /// Deployment policy denies this sender (AEP-0004 §4.3).
    Unauthorized,
    /// The target cannot take it now.
    Busy,
    /// The agent declines: a first-class, non-error outcome (AEP-0004 §2.4).
    Refused,
    /// The command is malformed.
    Invalid,
}

impl RejectReason {
    /// Every wire reason.
    ///
    /// ```
    /// use aep_core::control::RejectReason;
    /// let wire: Vec<&str> = RejectReason::ALL.iter().map(|r| r.as_str()).collect();
    /// assert_eq!(wire, ["unsupported", "unauthorized", "busy", "refused", "invalid"]);
    /// ```
    pub const ALL: [RejectReason; 5] = [
        RejectReason::Unsupported,
        RejectReason::Unauthorized,
        RejectReason::Busy,
        RejectReason::Refused,
        RejectReason::Invalid,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            RejectReason::Unsupported => "unsupported",
            RejectReason::Unauthorized => "unauthorized",
            RejectReason::Busy => "busy",
            RejectReason::Refused => "refused",
            RejectReason::Invalid => "invalid",
        }
    }
}

/// A string outside the closed reject-reason set.
///
/// ```
/// use aep_core::control::RejectReason;
/// let err = "timeout".parse::<RejectReason>().unwrap_err();
/// assert!(err.to_string().contains("unknown reject reason `timeout`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reject reason `{0}`: expected one of unsupported, unauthorized, busy, refused, invalid (AEP-0004 §3)")]
pub struct UnknownReason(String);

impl FromStr for RejectReason {
    type Err = UnknownReason;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        names::find(&RejectReason::ALL, RejectReason::as_str, s)
            .ok_or_else(|| UnknownReason(s.to_owned()))
    }
}

/// Why a command was not accepted, as the sender sees it: a wire reason, or `timeout`,
/// which the sender synthesizes itself when the ack window closes on the last attempt
/// (AEP-0004 §3) and which never appears on the wire.
///
/// Exhaustive: the five wire reasons and `timeout` are all there is; a reason or relay
/// code outside them reads as [`NackReason::Invalid`] (see [`Nack`]).
///
/// ```
/// use aep_core::control::{NackReason, RejectReason};
/// assert_eq!(NackReason::from(RejectReason::Refused), NackReason::Refused);
/// assert_eq!(NackReason::Timeout.as_str(), "timeout");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NackReason {
    /// See [`RejectReason::Unsupported`].
    Unsupported,
    /// See [`RejectReason::Unauthorized`].
    Unauthorized,
    /// See [`RejectReason::Busy`].
    Busy,
    /// See [`RejectReason::Refused`].
    Refused,
    /// See [`RejectReason::Invalid`]; also every unrecognized wire reason or relay code.
    Invalid,
    /// No ack within the window on any attempt; synthesized locally.
    Timeout,
}

impl NackReason {
    /// The spelling the other SDKs use.
    pub const fn as_str(self) -> &'static str {
        match self {
            NackReason::Unsupported => "unsupported",
            NackReason::Unauthorized => "unauthorized",
            NackReason::Busy => "busy",
            NackReason::Refused => "refused",
            NackReason::Invalid => "invalid",
            NackReason::Timeout => "timeout",
        }
    }
}

impl From<RejectReason> for NackReason {
    fn from(r: RejectReason) -> NackReason {
        match r {
            RejectReason::Unsupported => NackReason::Unsupported,
            RejectReason::Unauthorized => NackReason::Unauthorized,
            RejectReason::Busy => NackReason::Busy,
            RejectReason::Refused => NackReason::Refused,
            RejectReason::Invalid => NackReason::Invalid,
        }
    }
}

display_as_str!(RejectReason, NackReason);

/// Where a nack came from.
///
/// ```
/// use aep_core::control::{Nack, NackOrigin};
/// assert_eq!(Nack::timeout("no ack").origin(), &NackOrigin::Synthesized);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NackOrigin {
    /// The target's `control.rejected` ack event.
    Target(Box<Event>),
    /// A relay's `cause`-correlated `error` frame (AEP-0004 §4.2).
    Relay(Box<ErrorFrame>),
    /// The sender itself: the ack window closed on the last attempt, or the connection
    /// was closed with the command pending.
    Synthesized,
}

/// A command that was not accepted (AEP-0004 §3, §4.2).
///
/// Unrecognized wire reasons and relay codes normalize to [`NackReason::Invalid`], with
/// the original spelling kept at the front of the detail (`"no-route: ..."`), as the
/// Python and TypeScript SDKs do.
///
/// ```
/// use aep_core::control::{Nack, NackReason};
/// use aep_core::frame::{ErrorCode, ErrorFrame};
/// let nack = Nack::from_error_frame(&ErrorFrame::new(ErrorCode::NoRoute).with_detail("no emitter owns s1"));
/// assert_eq!(nack.reason(), NackReason::Invalid);
/// assert_eq!(nack.detail(), Some("no-route: no emitter owns s1"));
/// assert_eq!(nack.to_string(), "command nacked: invalid (no-route: no emitter owns s1)");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("command nacked: {reason}{}", detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
pub struct Nack {
    reason: NackReason,
    detail: Option<String>,
    origin: NackOrigin,
}

impl Nack {
    /// The reason.
    pub fn reason(&self) -> NackReason {
        self.reason
    }

    /// The detail, when one was given.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// Where the nack came from.
    pub fn origin(&self) -> &NackOrigin {
        &self.origin
    }

    /// Whether the sender synthesized this nack (never on the wire).
    pub fn is_synthesized(&self) -> bool {
        matches!(self.origin, NackOrigin::Synthesized)
    }

    /// A synthesized `timeout` nack.
    pub fn timeout(detail: impl Into<String>) -> Nack {
        Nack {
            reason: NackReason::Timeout,
            detail: Some(detail.into()),
            origin: NackOrigin::Synthesized,
        }
    }

    /// The nack a `control.rejected` event states. A missing or unknown `reason` reads
    /// as `invalid`.
    ///
    /// ```
    /// use aep_core::control::{Nack, NackReason};
    /// use aep_core::Event;
    /// let ack = Event::new("a", "control.rejected", "t", "s", "a")
    ///     .with_data(serde_json::json!({"reason": "refused", "detail": "not now"}));
    /// let nack = Nack::from_rejected(&ack);
    /// assert_eq!((nack.reason(), nack.detail()), (NackReason::Refused, Some("not now")));
    /// ```
    pub fn from_rejected(ack: &Event) -> Nack {
        #[derive(Deserialize)]
        struct Rejected {
            reason: Option<Value>,
            detail: Option<Value>,
        }
        let body: Option<Rejected> = ack.payload().ok();
        let (raw_reason, detail) = match body {
            Some(b) => (b.reason, b.detail.map(text_of)),
            None => (None, None),
        };
        let raw_reason = raw_reason.map(text_of);
        let (reason, detail) = normalize(raw_reason.as_deref(), detail);
        Nack {
            reason,
            detail,
            origin: NackOrigin::Target(Box::new(ack.clone())),
        }
    }

    /// The nack a relay's `error` frame states (AEP-0004 §4.2): its `code` when that is a
    /// reason, else `invalid` with the code kept in the detail.
    ///
    /// ```
    /// use aep_core::control::{Nack, NackReason};
    /// use aep_core::frame::{ErrorCode, ErrorFrame};
    /// let nack = Nack::from_error_frame(&ErrorFrame::new(ErrorCode::NoRoute).with_cause("c1"));
    /// assert_eq!(nack.reason(), NackReason::Invalid);
    /// assert!(nack.detail().is_some_and(|d| d.starts_with("no-route")));
    /// assert!(!nack.is_synthesized());
    /// ```
    pub fn from_error_frame(frame: &ErrorFrame) -> Nack {
        let (reason, detail) = normalize(Some(frame.code.as_str()), frame.detail.clone());
        Nack {
            reason,
            detail,
            origin: NackOrigin::Relay(Box::new(frame.clone())),
        }
    }
}

fn text_of(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A wire reason or relay code to a [`NackReason`]: the five wire reasons map to
/// themselves; anything else (including a wire `timeout`, which is sender-only) is
/// `invalid`, with the original spelling prefixed to the detail.
fn normalize(raw: Option<&str>, detail: Option<String>) -> (NackReason, Option<String>) {
    match raw.map(RejectReason::from_str) {
        Some(Ok(r)) => (r.into(), detail),
        None => (NackReason::Invalid, detail),
        Some(Err(UnknownReason(code))) => {
            let detail = match detail {
                Some(d) if !d.is_empty() => format!("{code}: {d}"),
                _ => code,
            };
            (NackReason::Invalid, Some(detail))
        }
    }
}
