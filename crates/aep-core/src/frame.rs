//! The WebSocket frame vocabulary (AEP-0003 §2) and the discovery document (§3.4).
//!
//! On the WebSocket binding every text message is one JSON object: an **event** when its
//! `type` contains a dot, otherwise a **frame** (AEP-0003 §2). [`decode`] tells the two
//! apart and reads either; [`Frame::to_json`] writes a frame as the wire spells it.
//!
//! ```
//! use aep_core::frame::{self, Frame, Message};
//!
//! match frame::decode(r#"{"type":"subscribed","id":"sub-1"}"#)? {
//!     Message::Frame(Frame::Subscribed(ack)) => assert_eq!(ack.id, "sub-1"),
//!     other => panic!("unexpected {other:?}"),
//! }
//! # Ok::<(), aep_core::frame::DecodeError>(())
//! ```
//!
//! # Tolerance
//!
//! What this module accepts beyond the letter of the spec, and why:
//!
//! - Unknown frame types read as [`Frame::Unknown`], never an error: AEP-0003 §2 says
//!   they MUST be ignored, so the caller decides to ignore them.
//! - Unknown members of a known frame are kept in its `extra` map and written back after
//!   the known ones; nothing in the spec gives them meaning, so nothing here reads them.
//! - Unknown capability keys, and known capability keys whose value has a shape this
//!   crate cannot read, are kept verbatim in [`Capabilities::extra`]: capabilities are a
//!   discovery surface, never a validation gate (AEP-0003 §4 rule 4).
//! - An optional member given as JSON `null` reads as absent.
//! - A non-string `detail` on an `error` frame reads as its JSON text, so a refusal is
//!   never lost to a peer that sent a structured detail.
//! - A `hello` without `versions` reads as offering none (which negotiates to
//!   `version-unsupported`, AEP-0003 §4 rule 1).
//! - A resume position without `epoch` reads as epoch 0 (the envelope default,
//!   AEP-0001 §7.2).
//!
//! Everything else that is malformed (a missing `id` on a `subscribe`, a `from` that is
//! neither an array of positions nor `"all"`, a `capture` outside the level set) is a
//! [`FrameError`] naming the frame, the member and what was expected. A [`FrameError`]
//! carries the frame's `id` when one was readable, so an endpoint can answer a
//! malformed `subscribe` in-band with `invalid-filter` (AEP-0003 §6.5).
//!
//! The `filter` of a `subscribe` frame stays a [`serde_json::Value`]: the frame layer
//! never fails on a filter, and validating one (fail closed, AEP-0003 §6.2) is the
//! `filter` module's job.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::de;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

mod decode;
mod discovery;
mod error;
mod hello;
mod members;
mod subscribe;

pub use decode::{decode, decode_slice, is_event_type, DecodeError, Message};
pub use discovery::{Discovery, Endpoints};
pub use error::{CommandRefusal, ErrorCode, ErrorFrame, IngestRefusal, SubscribeRefusal};
pub use hello::{
    Acceptance, Capabilities, ControlCapability, Hello, Identity, ReplayCapability, Role,
};
pub use members::FrameError;
pub use subscribe::{IdFrame, ReplayExhausted, ReplayFrom, RosterEntry, RosterReply, Subscribe};

use members::{put, write_extra, Members};

/// The default ack window a target declares when it states none
/// (`hello.capabilities.control.ack_window_ms`, AEP-0004 §3).
///
/// ```
/// use std::time::Duration;
/// use aep_core::frame::{ControlCapability, DEFAULT_ACK_WINDOW};
/// assert_eq!(DEFAULT_ACK_WINDOW, Duration::from_secs(10));
/// assert_eq!(ControlCapability::accepting(["control.pause"]).ack_window(), DEFAULT_ACK_WINDOW);
/// ```
pub const DEFAULT_ACK_WINDOW: Duration = Duration::from_millis(10_000);

/// A connection-scoped WebSocket frame (AEP-0003 §2). Frames are never persisted, never
/// carry `seq`, and never appear on other bindings.
///
/// ```
/// use aep_core::frame::{Frame, Subscribe};
/// use serde_json::json;
///
/// let f = Frame::Subscribe(Subscribe::new("sub-1", json!({"type": ["attention.*"]})));
/// assert_eq!(f.to_json(), r#"{"type":"subscribe","id":"sub-1","filter":{"type":["attention.*"]}}"#);
/// assert_eq!(f.frame_type(), "subscribe");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Frame {
    /// `hello`: the first frame in each direction (AEP-0003 §3.5, §4). Boxed: it is by
    /// far the largest frame and the rarest (one per connection and direction).
    Hello(Box<Hello>),
    /// `subscribe`: open a subscription (AEP-0003 §6.5).
    Subscribe(Subscribe),
    /// `subscribed`: the endpoint honored a `subscribe` with this `id`.
    Subscribed(IdFrame),
    /// `unsubscribe`: close the subscription with this `id`.
    Unsubscribe(IdFrame),
    /// `unsubscribed`: the endpoint closed the subscription with this `id`.
    Unsubscribed(IdFrame),
    /// `roster` without `entries`: ask for the live-claim snapshot (AEP-0003 §4.1).
    RosterRequest(IdFrame),
    /// `roster` with `entries`: the snapshot (AEP-0003 §4.1).
    Roster(RosterReply),
    /// `error`: a connection-scoped refusal (AEP-0003 §3.5, §6.5; AEP-0004 §4.2).
    Error(ErrorFrame),
    /// `replay-exhausted`: a resume position predates the buffer (AEP-0003 §5).
    ReplayExhausted(ReplayExhausted),
    /// `closing`: an orderly close with last-delivered positions (AEP-0003 §3.5).
    Closing(Closing),
    /// `ping`: liveness probe (AEP-0003 §3.5).
    Ping(Heartbeat),
    /// `pong`: the echo of a `ping`'s `t`.
    Pong(Heartbeat),
    /// A frame type this crate does not know; AEP-0003 §2 says to ignore it.
    Unknown(UnknownFrame),
}

impl Frame {
    /// A `ping` carrying `t` (AEP-0003 §3.5).
    ///
    /// ```
    /// assert_eq!(aep_core::frame::Frame::ping(7).to_json(), r#"{"type":"ping","t":7}"#);
    /// ```
    pub fn ping(t: impl Into<Value>) -> Frame {
        Frame::Ping(Heartbeat::new(Some(t.into())))
    }

    /// The `pong` that answers this frame when it is a `ping` (echoing `t`).
    ///
    /// ```
    /// use aep_core::frame::{decode, Message};
    /// let Message::Frame(ping) = decode(r#"{"type":"ping","t":1700000000000}"#)? else { panic!() };
    /// assert_eq!(ping.pong().unwrap().to_json(), r#"{"type":"pong","t":1700000000000}"#);
    /// # Ok::<(), aep_core::frame::DecodeError>(())
    /// ```
    #[must_use = "a ping is answered by sending this pong (AEP-0003 §3.5)"]
    pub fn pong(&self) -> Option<Frame> {
        match self {
            Frame::Ping(p) => Some(Frame::Pong(Heartbeat::new(p.t.clone()))),
            _ => None,
        }
    }

    /// The wire `type` of this frame.
    ///
    /// ```
    /// use aep_core::frame::{Frame, IdFrame};
    /// assert_eq!(Frame::RosterRequest(IdFrame::new("r-1")).frame_type(), "roster");
    /// ```
    pub fn frame_type(&self) -> &str {
        match self {
            Frame::Hello(_) => "hello",
            Frame::Subscribe(_) => "subscribe",
            Frame::Subscribed(_) => "subscribed",
            Frame::Unsubscribe(_) => "unsubscribe",
            Frame::Unsubscribed(_) => "unsubscribed",
            Frame::RosterRequest(_) | Frame::Roster(_) => "roster",
            Frame::Error(_) => "error",
            Frame::ReplayExhausted(_) => "replay-exhausted",
            Frame::Closing(_) => "closing",
            Frame::Ping(_) => "ping",
            Frame::Pong(_) => "pong",
            Frame::Unknown(u) => &u.frame_type,
        }
    }

    /// Reads a frame from a JSON value (an object whose `type` has no dot).
    ///
    /// ```
    /// use aep_core::frame::Frame;
    /// let f = Frame::from_value(serde_json::json!({"type": "unsubscribed", "id": "s"}))?;
    /// assert!(matches!(f, Frame::Unsubscribed(_)));
    /// # Ok::<(), aep_core::frame::DecodeError>(())
    /// ```
    pub fn from_value(value: Value) -> Result<Frame, DecodeError> {
        match value {
            Value::Object(map) => match map.get("type") {
                Some(Value::String(t)) if is_event_type(t) => Err(DecodeError::Frame(FrameError {
                    frame_type: t.clone(),
                    id: None,
                    member: "type".to_owned(),
                    problem: "names an event (it contains a dot, AEP-0003 §2)".to_owned(),
                })),
                Some(Value::String(_)) => Ok(Frame::from_map(map)?),
                _ => Err(DecodeError::NoType),
            },
            _ => Err(DecodeError::NotAnObject),
        }
    }

    /// Reads a frame from an object whose `type` is a string without a dot.
    fn from_map(mut map: Map<String, Value>) -> Result<Frame, FrameError> {
        let ty = match map.shift_remove("type") {
            Some(Value::String(t)) => t,
            _ => {
                return Err(FrameError {
                    frame_type: String::new(),
                    id: None,
                    member: "type".to_owned(),
                    problem: "must be a string".to_owned(),
                })
            }
        };
        let mut m = Members::new(&ty, map);
        let frame = match ty.as_str() {
            "hello" => Frame::Hello(Box::new(Hello::read(&mut m)?)),
            "subscribe" => Frame::Subscribe(Subscribe::read(&mut m)?),
            "subscribed" => Frame::Subscribed(IdFrame::read(&mut m)?),
            "unsubscribe" => Frame::Unsubscribe(IdFrame::read(&mut m)?),
            "unsubscribed" => Frame::Unsubscribed(IdFrame::read(&mut m)?),
            "roster" if m.map.contains_key("entries") => Frame::Roster(RosterReply::read(&mut m)?),
            "roster" => Frame::RosterRequest(IdFrame::read(&mut m)?),
            "error" => Frame::Error(ErrorFrame::read(&mut m)?),
            "replay-exhausted" => Frame::ReplayExhausted(ReplayExhausted::read(&mut m)?),
            "closing" => Frame::Closing(Closing::read(&mut m)?),
            "ping" => Frame::Ping(Heartbeat::read(&mut m)),
            "pong" => Frame::Pong(Heartbeat::read(&mut m)),
            _ => {
                return Ok(Frame::Unknown(UnknownFrame {
                    members: m.rest(),
                    frame_type: ty,
                }))
            }
        };
        Ok(frame)
    }

    /// The compact wire JSON of this frame: `type` first, then the known members in the
    /// order the spec shows them, absent ones omitted, then `extra`.
    ///
    /// ```
    /// use aep_core::frame::{ErrorCode, ErrorFrame, Frame};
    /// let f = Frame::Error(ErrorFrame::new(ErrorCode::NoRoute).with_cause("01J").with_detail("no emitter owns s"));
    /// assert_eq!(f.to_json(), r#"{"type":"error","code":"no-route","cause":"01J","detail":"no emitter owns s"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        // Every key is a string and every value serializable, so this cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// This frame as a JSON value.
    ///
    /// ```
    /// use aep_core::frame::Frame;
    /// assert_eq!(Frame::ping(7).to_value(), serde_json::json!({"type": "ping", "t": 7}));
    /// ```
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

macro_rules! frame_from {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl From<$ty> for Frame {
            fn from(f: $ty) -> Frame {
                Frame::$variant(f.into())
            }
        }
    )*};
}
frame_from!(
    Hello => Hello,
    Subscribe => Subscribe,
    RosterReply => Roster,
    ErrorFrame => Error,
    ReplayExhausted => ReplayExhausted,
    Closing => Closing,
    UnknownFrame => Unknown,
);

impl Serialize for Frame {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", self.frame_type())?;
        match self {
            Frame::Hello(f) => f.write_members(&mut m)?,
            Frame::Subscribe(f) => f.write_members(&mut m)?,
            Frame::Subscribed(f)
            | Frame::Unsubscribe(f)
            | Frame::Unsubscribed(f)
            | Frame::RosterRequest(f) => f.write_members(&mut m)?,
            Frame::Roster(f) => f.write_members(&mut m)?,
            Frame::Error(f) => f.write_members(&mut m)?,
            Frame::ReplayExhausted(f) => f.write_members(&mut m)?,
            Frame::Closing(f) => f.write_members(&mut m)?,
            Frame::Ping(f) | Frame::Pong(f) => f.write_members(&mut m)?,
            Frame::Unknown(f) => write_extra(&mut m, &f.members)?,
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Frame {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Frame::from_value(Value::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl FromStr for Frame {
    type Err = DecodeError;
    /// Reads a frame; an event (a `type` with a dot) is an error here, use [`decode`]
    /// for messages that may be either.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match decode(s)? {
            Message::Frame(f) => Ok(f),
            Message::Event(e) => Err(DecodeError::Frame(FrameError {
                frame_type: e.event_type().to_owned(),
                id: Some(e.id().to_owned()),
                member: "type".to_owned(),
                problem: "names an event (it contains a dot, AEP-0003 §2)".to_owned(),
            })),
        }
    }
}

impl fmt::Display for Frame {
    /// The compact wire JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

/// A frame type this crate does not know, kept whole.
///
/// ```
/// use aep_core::frame::{Frame, Message, decode};
/// let Message::Frame(f) = decode(r#"{"type":"zigzag","n":1}"#)? else { panic!() };
/// assert_eq!(f.to_json(), r#"{"type":"zigzag","n":1}"#);
/// # Ok::<(), aep_core::frame::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnknownFrame {
    /// The frame's `type`.
    pub frame_type: String,
    /// Every other member, in wire order.
    pub members: Map<String, Value>,
}

/// The `closing` frame: an orderly close with the last-delivered position of each
/// subscription (AEP-0003 §3.5 rule 4). Consumers must not depend on receiving it.
///
/// ```
/// use aep_core::frame::{Closing, Frame};
/// assert_eq!(Frame::Closing(Closing::new("backpressure")).to_json(), r#"{"type":"closing","reason":"backpressure","delivered":[]}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Closing {
    /// Why the party is closing.
    pub reason: Option<String>,
    /// Last-delivered positions (absent on the wire reads as empty).
    pub delivered: Vec<Delivered>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Closing {
    /// A `closing` frame with `reason` and no positions.
    pub fn new(reason: impl Into<String>) -> Closing {
        Closing {
            reason: Some(reason.into()),
            delivered: Vec::new(),
            extra: Map::new(),
        }
    }

    fn read(m: &mut Members<'_>) -> Result<Closing, FrameError> {
        let reason = m.opt_str("reason")?;
        let delivered = match m.take("delivered") {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let Value::Object(map) = item else {
                        return Err(m.err(&format!("delivered[{i}]"), "must be an object"));
                    };
                    let mut n = m.nested(format!("delivered[{i}]"), map);
                    out.push(Delivered {
                        sub: n.req_str("sub")?,
                        session: n.req_str("session")?,
                        epoch: n.opt_u64("epoch")?.unwrap_or(0),
                        seq: n.req_u64("seq")?,
                    });
                }
                out
            }
            Some(_) => return Err(m.err("delivered", "must be an array of positions")),
        };
        Ok(Closing {
            reason,
            delivered,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "reason", self.reason.as_ref())?;
        m.serialize_entry("delivered", &self.delivered)?;
        write_extra(m, &self.extra)
    }
}

/// One last-delivered position in a `closing` frame.
///
/// ```
/// let d = aep_core::frame::Delivered::new("sub-1", "s", 0, 9);
/// assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"sub":"sub-1","session":"s","epoch":0,"seq":9}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub struct Delivered {
    /// The subscription id.
    pub sub: String,
    /// The session.
    pub session: String,
    /// Epoch.
    pub epoch: u64,
    /// Last delivered `seq`.
    pub seq: u64,
}

impl Delivered {
    /// The last position delivered on subscription `sub` for `session`.
    ///
    /// ```
    /// use aep_core::frame::{Closing, Delivered, Frame};
    /// let mut closing = Closing::new("shutdown");
    /// closing.delivered.push(Delivered::new("sub-1", "s", 0, 9));
    /// assert_eq!(Frame::from(closing).to_json(), r#"{"type":"closing","reason":"shutdown","delivered":[{"sub":"sub-1","session":"s","epoch":0,"seq":9}]}"#);
    /// ```
    pub fn new(
        sub: impl Into<String>,
        session: impl Into<String>,
        epoch: u64,
        seq: u64,
    ) -> Delivered {
        Delivered {
            sub: sub.into(),
            session: session.into(),
            epoch,
            seq,
        }
    }
}

/// The body of `ping` and `pong` (AEP-0003 §3.5 rule 5): `t` is opaque and echoed.
///
/// ```
/// use aep_core::frame::{Frame, Heartbeat};
/// assert_eq!(Frame::Pong(Heartbeat::new(None)).to_json(), r#"{"type":"pong"}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Heartbeat {
    /// The opaque token, any JSON value.
    pub t: Option<Value>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Heartbeat {
    /// A heartbeat carrying `t`.
    pub fn new(t: Option<Value>) -> Heartbeat {
        Heartbeat {
            t,
            extra: Map::new(),
        }
    }

    fn read(m: &mut Members<'_>) -> Heartbeat {
        Heartbeat {
            t: m.take("t"),
            extra: std::mem::take(&mut m.map),
        }
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "t", self.t.as_ref())?;
        write_extra(m, &self.extra)
    }
}
