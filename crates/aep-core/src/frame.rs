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

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::event::{Event, EventParseError};
use crate::level::Capture;
use crate::resume::{Position, ResumePosition};

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

// ---------------------------------------------------------------------------
// Decoding one WebSocket text message
// ---------------------------------------------------------------------------

/// One WebSocket text message: an event or a frame (AEP-0003 §2).
///
/// ```
/// use aep_core::frame::{decode, Message};
/// let m = decode(r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#)?;
/// assert!(matches!(m, Message::Event(_)));
/// # Ok::<(), aep_core::frame::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// An AEP event (its `type` contains a dot).
    Event(Event),
    /// A connection-scoped frame (its `type` contains no dot).
    Frame(Frame),
}

impl Message {
    /// The compact JSON text of this message.
    ///
    /// ```
    /// use aep_core::frame::{Frame, Message};
    /// assert_eq!(Message::Frame(Frame::ping(5)).to_json(), r#"{"type":"ping","t":5}"#);
    /// ```
    pub fn to_json(&self) -> String {
        match self {
            Message::Event(e) => e.to_json(),
            Message::Frame(f) => f.to_json(),
        }
    }
}

/// Why a WebSocket text message could not be read.
///
/// ```
/// use aep_core::frame::{decode, DecodeError};
/// assert!(matches!(decode("{not json"), Err(DecodeError::Json(_))));
/// assert!(matches!(decode("[1,2]"), Err(DecodeError::NotAnObject)));
/// assert!(matches!(decode(r#"{"id":"x"}"#), Err(DecodeError::NoType)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The text is not JSON (the reference relay answers this with `bad-json`).
    #[error("WebSocket message is not JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// The JSON is not an object; every AEP message is one (AEP-0003 §2).
    #[error("WebSocket message must be a JSON object (AEP-0003 §2)")]
    NotAnObject,
    /// The object has no string `type`, so it is neither an event nor a frame.
    #[error(
        "WebSocket message has no string `type` member: neither an event nor a frame (AEP-0003 §2)"
    )]
    NoType,
    /// The `type` names an event (it contains a dot) but the envelope is unreadable.
    #[error(transparent)]
    Event(#[from] EventParseError),
    /// The `type` names a known frame whose members are malformed.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

/// A known frame with a malformed member.
///
/// ```
/// use aep_core::frame::{decode, DecodeError};
/// let Err(DecodeError::Frame(e)) = decode(r#"{"type":"subscribe","id":"s1","from":{}}"#) else {
///     panic!("want a frame error");
/// };
/// assert_eq!(e.frame_type(), "subscribe");
/// assert_eq!(e.member(), "from");
/// assert_eq!(e.id(), Some("s1")); // so the endpoint can answer `invalid-filter` in-band
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{frame_type}` frame: member `{member}` {problem}")]
pub struct FrameError {
    frame_type: String,
    id: Option<String>,
    member: String,
    problem: String,
}

impl FrameError {
    /// The frame's `type`.
    pub fn frame_type(&self) -> &str {
        &self.frame_type
    }

    /// The frame's `id` when it was a readable string: the correlation an in-band
    /// refusal echoes (AEP-0003 §6.5).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The path of the offending member, e.g. `from[2].seq`.
    pub fn member(&self) -> &str {
        &self.member
    }
}

/// Reads one WebSocket text message as an event or a frame (AEP-0003 §2).
///
/// The message is an event when its `type` contains a dot; it is then read with
/// [`Event`]'s byte-preserving reader. Otherwise it is a frame; unknown frame types read
/// as [`Frame::Unknown`]. Never panics, whatever the input.
///
/// ```
/// use aep_core::frame::{decode, Frame, Message};
/// let m = decode(r#"{"type":"zigzag","note":"from the future"}"#)?;
/// let Message::Frame(Frame::Unknown(u)) = m else { panic!() };
/// assert_eq!(u.frame_type, "zigzag");
/// # Ok::<(), aep_core::frame::DecodeError>(())
/// ```
pub fn decode(text: &str) -> Result<Message, DecodeError> {
    // Events are the hot path (every fanned-out event crosses here), so the envelope
    // reader goes first and an event costs one parse. The substring test only spares
    // frames a doomed envelope parse: every envelope has an `aep` member, and one
    // spelled with escapes still reads as an event through the classification below.
    if text.contains(r#""aep""#) {
        match text.parse::<Event>() {
            Ok(event) if is_event_type(event.event_type()) => return Ok(Message::Event(event)),
            Ok(_) => return decode_frame(text),
            Err(err) => {
                if let Peeked::Event = peek_type(text)? {
                    return Err(DecodeError::Event(err));
                }
                return decode_frame(text);
            }
        }
    }
    match peek_type(text)? {
        Peeked::Event => Ok(Message::Event(text.parse::<Event>()?)),
        Peeked::Frame => decode_frame(text),
    }
}

fn decode_frame(text: &str) -> Result<Message, DecodeError> {
    let map: Map<String, Value> = serde_json::from_str(text).map_err(DecodeError::Json)?;
    Ok(Message::Frame(Frame::from_map(map)?))
}

/// [`decode`] over bytes (a WebSocket text payload is UTF-8).
///
/// ```
/// assert!(aep_core::frame::decode_slice(br#"{"type":"pong","t":1}"#).is_ok());
/// assert!(aep_core::frame::decode_slice(b"\xff").is_err());
/// ```
pub fn decode_slice(bytes: &[u8]) -> Result<Message, DecodeError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        DecodeError::Json(<serde_json::Error as de::Error>::custom(format_args!(
            "not UTF-8: {e}"
        )))
    })?;
    decode(text)
}

/// Whether a `type` string names an event rather than a frame (AEP-0003 §2).
///
/// ```
/// assert!(aep_core::frame::is_event_type("run.started"));
/// assert!(!aep_core::frame::is_event_type("hello"));
/// ```
pub fn is_event_type(ty: &str) -> bool {
    ty.contains('.')
}

enum Peeked {
    Event,
    Frame,
}

/// One pass over the message that reads only `type`, allocating nothing: tells a frame
/// from an event whose envelope did not parse, and non-messages from both.
fn peek_type(text: &str) -> Result<Peeked, DecodeError> {
    enum Found {
        NotObject,
        Type(Option<bool>),
    }
    struct TypeKey;
    impl<'de> DeserializeSeed<'de> for TypeKey {
        type Value = bool;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            d.deserialize_str(self)
        }
    }
    impl Visitor<'_> for TypeKey {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a member name")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
            Ok(v == "type")
        }
    }
    /// `Some(is_event)` for a string `type`, `None` for any other JSON value.
    struct TypeValue;
    impl<'de> Deserialize<'de> for TypeValueOut {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(TypeValue)
        }
    }
    struct TypeValueOut(Option<bool>);
    impl<'de> Visitor<'de> for TypeValue {
        type Value = TypeValueOut;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<TypeValueOut, E> {
            Ok(TypeValueOut(Some(is_event_type(v))))
        }
        fn visit_bool<E>(self, _: bool) -> Result<TypeValueOut, E> {
            Ok(TypeValueOut(None))
        }
        fn visit_i64<E>(self, _: i64) -> Result<TypeValueOut, E> {
            Ok(TypeValueOut(None))
        }
        fn visit_u64<E>(self, _: u64) -> Result<TypeValueOut, E> {
            Ok(TypeValueOut(None))
        }
        fn visit_f64<E>(self, _: f64) -> Result<TypeValueOut, E> {
            Ok(TypeValueOut(None))
        }
        fn visit_unit<E>(self) -> Result<TypeValueOut, E> {
            Ok(TypeValueOut(None))
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<TypeValueOut, A::Error> {
            while a.next_element::<IgnoredAny>()?.is_some() {}
            Ok(TypeValueOut(None))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<TypeValueOut, A::Error> {
            while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(TypeValueOut(None))
        }
    }
    struct Top;
    impl<'de> Visitor<'de> for Top {
        type Value = Found;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Found, A::Error> {
            // The last `type` wins, as in JSON.parse.
            let mut ty = None;
            while let Some(is_type) = a.next_key_seed(TypeKey)? {
                if is_type {
                    ty = Some(a.next_value::<TypeValueOut>()?.0);
                } else {
                    a.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Found::Type(ty.flatten()))
        }
        fn visit_str<E>(self, _: &str) -> Result<Found, E> {
            Ok(Found::NotObject)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Found, E> {
            Ok(Found::NotObject)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Found, E> {
            Ok(Found::NotObject)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Found, E> {
            Ok(Found::NotObject)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Found, E> {
            Ok(Found::NotObject)
        }
        fn visit_unit<E>(self) -> Result<Found, E> {
            Ok(Found::NotObject)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Found, A::Error> {
            while a.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Found::NotObject)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let found = de.deserialize_any(Top).map_err(DecodeError::Json)?;
    de.end().map_err(DecodeError::Json)?;
    match found {
        Found::NotObject => Err(DecodeError::NotAnObject),
        Found::Type(None) => Err(DecodeError::NoType),
        Found::Type(Some(true)) => Ok(Peeked::Event),
        Found::Type(Some(false)) => Ok(Peeked::Frame),
    }
}

// ---------------------------------------------------------------------------
// Reading members
// ---------------------------------------------------------------------------

/// An object being read member by member; what is left over becomes `extra`.
struct Members<'a> {
    frame_type: &'a str,
    id: Option<String>,
    path: String,
    map: Map<String, Value>,
}

impl<'a> Members<'a> {
    fn new(frame_type: &'a str, map: Map<String, Value>) -> Members<'a> {
        let id = map.get("id").and_then(Value::as_str).map(str::to_owned);
        Members {
            frame_type,
            id,
            path: String::new(),
            map,
        }
    }

    fn nested(&self, path: String, map: Map<String, Value>) -> Members<'a> {
        Members {
            frame_type: self.frame_type,
            id: self.id.clone(),
            path,
            map,
        }
    }

    fn err(&self, key: &str, problem: impl Into<String>) -> FrameError {
        let member = if self.path.is_empty() {
            key.to_owned()
        } else if key.is_empty() {
            self.path.clone()
        } else {
            format!("{}.{key}", self.path)
        };
        FrameError {
            frame_type: self.frame_type.to_owned(),
            id: self.id.clone(),
            member,
            problem: problem.into(),
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        match self.map.shift_remove(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    fn opt_str(&mut self, key: &str) -> Result<Option<String>, FrameError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "must be a string")),
        }
    }

    fn req_str(&mut self, key: &str) -> Result<String, FrameError> {
        self.opt_str(key)?
            .ok_or_else(|| self.err(key, "is missing (a string is required)"))
    }

    fn opt_u64(&mut self, key: &str) -> Result<Option<u64>, FrameError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.err(key, "must be a non-negative integer")),
        }
    }

    fn req_u64(&mut self, key: &str) -> Result<u64, FrameError> {
        self.opt_u64(key)?
            .ok_or_else(|| self.err(key, "is missing (a non-negative integer is required)"))
    }

    fn opt_strings(&mut self, key: &str) -> Result<Option<Vec<String>>, FrameError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => strings(v)
                .map(Some)
                .ok_or_else(|| self.err(key, "must be an array of strings")),
        }
    }

    fn opt_object(&mut self, key: &str) -> Result<Option<Map<String, Value>>, FrameError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.err(key, "must be an object")),
        }
    }

    fn rest(self) -> Map<String, Value> {
        self.map
    }
}

fn strings(v: Value) -> Option<Vec<String>> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// Writes an optional member; absent members are omitted, never `null`.
fn put<M: SerializeMap, T: Serialize>(
    m: &mut M,
    key: &str,
    value: Option<&T>,
) -> Result<(), M::Error> {
    match value {
        Some(v) => m.serialize_entry(key, v),
        None => Ok(()),
    }
}

/// Writes `extra` members after the known ones.
fn write_extra<M: SerializeMap>(m: &mut M, extra: &Map<String, Value>) -> Result<(), M::Error> {
    for (k, v) in extra {
        m.serialize_entry(k, v)?;
    }
    Ok(())
}

/// Serializes a value through its `write_members`, as one JSON object.
macro_rules! object_serialize {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(None)?;
                self.write_members(&mut m)?;
                m.end()
            }
        }
    };
}

// ---------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------

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
pub struct UnknownFrame {
    /// The frame's `type`.
    pub frame_type: String,
    /// Every other member, in wire order.
    pub members: Map<String, Value>,
}

/// The party roles of `hello` (AEP-0003 §4 rule 2) and of the discovery document (§3.4).
///
/// ```
/// use aep_core::frame::Role;
/// assert_eq!("both".parse::<Role>().unwrap(), Role::Both);
/// assert_eq!("relay".parse::<Role>().unwrap(), Role::Other("relay".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    /// Sends events.
    Emitter,
    /// Receives events.
    Consumer,
    /// Both.
    Both,
    /// The discovery document's role of an ingesting endpoint (AEP-0003 §3.4).
    Collector,
    /// A role outside the 0.1 vocabulary, kept as sent.
    Other(String),
}

impl Role {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Role::Emitter => "emitter",
            Role::Consumer => "consumer",
            Role::Both => "both",
            Role::Collector => "collector",
            Role::Other(s) => s,
        }
    }

    /// Whether this party may emit events (`emitter` or `both`).
    ///
    /// ```
    /// assert!(aep_core::frame::Role::Both.emits());
    /// ```
    pub fn emits(&self) -> bool {
        matches!(self, Role::Emitter | Role::Both)
    }

    /// Whether this party may watch (`consumer` or `both`): the roles that may ask for
    /// a `roster` or `subscribe` (AEP-0003 §4.1 rule 2).
    ///
    /// ```
    /// assert!(!aep_core::frame::Role::Emitter.watches());
    /// ```
    pub fn watches(&self) -> bool {
        matches!(self, Role::Consumer | Role::Both)
    }
}

impl Role {
    fn from_wire(s: String) -> Role {
        match Role::from_str(&s) {
            Ok(Role::Other(_)) => Role::Other(s),
            Ok(known) => known,
            Err(never) => match never {},
        }
    }
}

impl FromStr for Role {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "emitter" => Role::Emitter,
            "consumer" => Role::Consumer,
            "both" => Role::Both,
            "collector" => Role::Collector,
            other => Role::Other(other.to_owned()),
        })
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Role::from_wire(String::deserialize(d)?))
    }
}

/// The `hello` frame (AEP-0003 §4).
///
/// ```
/// use aep_core::frame::{Capabilities, Hello, Identity, Role};
///
/// let mut caps = Capabilities::default();
/// caps.control = Some(aep_core::frame::ControlCapability::accepting(["control.cancel"]));
/// let hello = Hello::new(Role::Emitter)
///     .with_identity(Identity::new("claude-code").with_instance("host-a/7c1f"))
///     .with_capabilities(caps);
/// assert_eq!(
///     aep_core::frame::Frame::from(hello).to_json(),
///     r#"{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"claude-code","instance":"host-a/7c1f"},"capabilities":{"control":{"accepts":["control.cancel"]}}}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Hello {
    /// Versions in order of preference, newest first; a responder's has exactly one
    /// (AEP-0003 §4 rule 1). Absent on the wire reads as empty.
    pub versions: Vec<String>,
    /// The sender's role (AEP-0003 §4 rule 2). The reference relay reads an absent role
    /// as `both`.
    pub role: Option<Role>,
    /// Who is speaking (AEP-0003 §4 rule 3).
    pub identity: Option<Identity>,
    /// Declared capabilities (AEP-0003 §4 rules 4-6).
    pub capabilities: Option<Capabilities>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Hello {
    /// A `hello` offering version `0.1` in `role`.
    pub fn new(role: Role) -> Hello {
        Hello {
            versions: vec![crate::AEP_VERSION.to_owned()],
            role: Some(role),
            identity: None,
            capabilities: None,
            extra: Map::new(),
        }
    }

    /// Sets `identity`.
    pub fn with_identity(mut self, identity: Identity) -> Hello {
        self.identity = Some(identity);
        self
    }

    /// Sets `capabilities`.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Hello {
        self.capabilities = Some(capabilities);
        self
    }

    /// Sets `versions` (newest first).
    pub fn with_versions<I, S>(mut self, versions: I) -> Hello
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// The version a responder selects: the peer's most preferred version among
    /// `supported`, or `None`, which the responder answers with a
    /// `version-unsupported` error and close (AEP-0003 §4 rule 1).
    ///
    /// ```
    /// use aep_core::frame::{Hello, Role};
    /// let peer = Hello::new(Role::Consumer).with_versions(["0.2", "0.1"]);
    /// assert_eq!(peer.select_version(&["0.1"]), Some("0.1"));
    /// assert_eq!(peer.select_version(&["9.9"]), None);
    /// ```
    pub fn select_version<'a>(&self, supported: &[&'a str]) -> Option<&'a str> {
        self.versions
            .iter()
            .find_map(|v| supported.iter().find(|s| **s == v.as_str()).copied())
    }

    /// The declared capabilities, or the empty set when none were sent.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities.clone().unwrap_or_default()
    }

    fn read(m: &mut Members<'_>) -> Result<Hello, FrameError> {
        let versions = m.opt_strings("versions")?.unwrap_or_default();
        let role = m.opt_str("role")?.map(Role::from_wire);
        let identity = match m.opt_object("identity")? {
            None => None,
            Some(map) => {
                let mut n = m.nested("identity".to_owned(), map);
                Some(Identity::read(&mut n)?)
            }
        };
        let capabilities = m.opt_object("capabilities")?.map(Capabilities::from_map);
        Ok(Hello {
            versions,
            role,
            identity,
            capabilities,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("versions", &self.versions)?;
        put(m, "role", self.role.as_ref())?;
        put(m, "identity", self.identity.as_ref())?;
        put(m, "capabilities", self.capabilities.as_ref())?;
        write_extra(m, &self.extra)
    }
}

/// `hello.identity` (AEP-0003 §4 rule 3, §8.2).
///
/// ```
/// let id = aep_core::frame::Identity::new("claude-code");
/// assert_eq!(serde_json::to_string(&id).unwrap(), r#"{"agent":"claude-code"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Identity {
    /// REQUIRED for emitters: the envelope `agent` of the events it sends.
    pub agent: Option<String>,
    /// Disambiguates processes of one agent.
    pub instance: Option<String>,
    /// The JWS identity document (§8.3), kept as sent; `null` stays `null`.
    pub card: Option<Value>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Identity {
    /// An identity naming `agent`.
    pub fn new(agent: impl Into<String>) -> Identity {
        Identity {
            agent: Some(agent.into()),
            ..Identity::default()
        }
    }

    /// Sets `instance`.
    pub fn with_instance(mut self, instance: impl Into<String>) -> Identity {
        self.instance = Some(instance.into());
        self
    }

    fn read(m: &mut Members<'_>) -> Result<Identity, FrameError> {
        let agent = m.opt_str("agent")?;
        let instance = m.opt_str("instance")?;
        // `card: null` is the spec's own example; keep it distinct from absent.
        let card = m.map.shift_remove("card");
        Ok(Identity {
            agent,
            instance,
            card,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "agent", self.agent.as_ref())?;
        put(m, "instance", self.instance.as_ref())?;
        put(m, "card", self.card.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(Identity);

/// Declared capabilities: `hello.capabilities` (AEP-0003 §4) and the discovery
/// document's `capabilities` (§3.4), which reuses the shape.
///
/// Reading never fails on content: unknown keys, and known keys whose value this crate
/// cannot read, land in [`extra`](Self::extra) verbatim (AEP-0003 §4 rule 4).
///
/// ```
/// use aep_core::frame::Capabilities;
/// let caps: Capabilities = serde_json::from_str(
///     r#"{"filters":["attr-match"],"roster":{},"futurecap":{"enabled":true},"control":{"accepts":["control.pause"]}}"#,
/// )?;
/// assert!(caps.supports_roster());
/// assert!(caps.accepts("control.pause"));
/// assert!(caps.extra.contains_key("futurecap"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Capabilities {
    /// Event categories the party emits (routing hints, AEP-0003 §4 rule 5).
    pub emits: Option<Vec<String>>,
    /// Capture levels offered.
    pub capture: Option<Vec<Capture>>,
    /// The control declaration; its `accepts` is authoritative (AEP-0004 §4.2).
    pub control: Option<ControlCapability>,
    /// Replay buffer facts (AEP-0003 §5).
    pub replay: Option<ReplayCapability>,
    /// Filter dialects (AEP-0003 §6).
    pub filters: Option<Vec<String>>,
    /// Present when the party answers `roster` frames (AEP-0003 §4.1 rule 1).
    pub roster: Option<Map<String, Value>>,
    /// The graduation namespace (AEP-0003 §4 rule 6).
    pub experimental: Option<Map<String, Value>>,
    /// Keys outside the 0.1 vocabulary, or known keys in an unreadable shape: kept and
    /// ignored.
    pub extra: Map<String, Value>,
}

impl Capabilities {
    /// Whether the party declared the `roster` frame (AEP-0003 §4.1 rule 1).
    ///
    /// ```
    /// use aep_core::frame::{decode, Frame, Message};
    /// let Message::Frame(Frame::Hello(h)) = decode(r#"{"type":"hello","versions":["0.1"],"role":"emitter","capabilities":{"roster":{}}}"#)? else { panic!() };
    /// assert!(h.capabilities().supports_roster());
    /// # Ok::<(), aep_core::frame::DecodeError>(())
    /// ```
    pub fn supports_roster(&self) -> bool {
        self.roster.is_some()
    }

    /// Whether `command_type` is in the declared `control.accepts` (AEP-0004 §4.2).
    pub fn accepts(&self, command_type: &str) -> bool {
        self.control
            .as_ref()
            .is_some_and(|c| c.accepts(command_type))
    }

    fn from_map(map: Map<String, Value>) -> Capabilities {
        let mut caps = Capabilities::default();
        for (k, v) in map {
            let kept = match k.as_str() {
                "emits" => strings(v.clone()).map(|s| caps.emits = Some(s)),
                "capture" => serde_json::from_value(v.clone())
                    .ok()
                    .map(|c| caps.capture = Some(c)),
                "control" => match &v {
                    Value::Object(o) => {
                        ControlCapability::from_map(o.clone()).map(|c| caps.control = Some(c))
                    }
                    _ => None,
                },
                "replay" => match &v {
                    Value::Object(o) => {
                        ReplayCapability::from_map(o.clone()).map(|r| caps.replay = Some(r))
                    }
                    _ => None,
                },
                "filters" => strings(v.clone()).map(|s| caps.filters = Some(s)),
                "roster" => match &v {
                    Value::Object(o) => {
                        caps.roster = Some(o.clone());
                        Some(())
                    }
                    _ => None,
                },
                "experimental" => match &v {
                    Value::Object(o) => {
                        caps.experimental = Some(o.clone());
                        Some(())
                    }
                    _ => None,
                },
                _ => None,
            };
            if kept.is_none() {
                caps.extra.insert(k, v);
            }
        }
        caps
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "emits", self.emits.as_ref())?;
        put(m, "capture", self.capture.as_ref())?;
        put(m, "control", self.control.as_ref())?;
        put(m, "replay", self.replay.as_ref())?;
        put(m, "filters", self.filters.as_ref())?;
        put(m, "roster", self.roster.as_ref())?;
        put(m, "experimental", self.experimental.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(Capabilities);

impl<'de> Deserialize<'de> for Capabilities {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Capabilities::from_map(Map::deserialize(d)?))
    }
}

/// `capabilities.control` (AEP-0003 §4, AEP-0004 §3-4).
///
/// ```
/// use aep_core::frame::{ControlCapability, DEFAULT_ACK_WINDOW};
/// let c = ControlCapability::accepting(["control.cancel"]);
/// assert!(c.accepts("control.cancel") && !c.accepts("control.pause"));
/// assert_eq!(c.ack_window(), DEFAULT_ACK_WINDOW);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ControlCapability {
    /// Command types the target accepts; anything else is nacked `unsupported`.
    pub accepts: Option<Vec<String>>,
    /// The ack window in milliseconds (default 10 000, AEP-0004 §3).
    pub ack_window_ms: Option<u64>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl ControlCapability {
    /// A declaration accepting exactly these command types.
    pub fn accepting<I, S>(types: I) -> ControlCapability
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ControlCapability {
            accepts: Some(types.into_iter().map(Into::into).collect()),
            ..ControlCapability::default()
        }
    }

    /// Sets `ack_window_ms`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aep_core::frame::ControlCapability;
    /// let c = ControlCapability::accepting(["control.pause"]).with_ack_window(Duration::from_secs(3));
    /// assert_eq!(c.ack_window(), Duration::from_secs(3));
    /// assert!(c.accepts("control.pause") && !c.accepts("control.cancel"));
    /// ```
    pub fn with_ack_window(mut self, window: Duration) -> ControlCapability {
        self.ack_window_ms = Some(u64::try_from(window.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Whether `command_type` is listed in `accepts`.
    pub fn accepts(&self, command_type: &str) -> bool {
        self.accepts
            .as_ref()
            .is_some_and(|a| a.iter().any(|t| t == command_type))
    }

    /// The declared ack window, or the 10 s default (AEP-0004 §3).
    pub fn ack_window(&self) -> Duration {
        self.ack_window_ms
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_ACK_WINDOW)
    }

    /// `None` when a known member has an unreadable shape.
    fn from_map(mut map: Map<String, Value>) -> Option<ControlCapability> {
        let accepts = match map.shift_remove("accepts") {
            None => None,
            Some(v) => Some(strings(v)?),
        };
        let ack_window_ms = match map.shift_remove("ack_window_ms") {
            None => None,
            Some(v) => Some(v.as_u64()?),
        };
        Some(ControlCapability {
            accepts,
            ack_window_ms,
            extra: map,
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "accepts", self.accepts.as_ref())?;
        put(m, "ack_window_ms", self.ack_window_ms.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(ControlCapability);

/// `capabilities.replay` (AEP-0003 §5).
///
/// ```
/// let r = aep_core::frame::ReplayCapability::new(10_000, true);
/// assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"buffer":10000,"all":true}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ReplayCapability {
    /// Buffer depth (events per session or global; the endpoint documents which).
    pub buffer: Option<u64>,
    /// Whether `from: "all"` (replay-all) is implemented.
    pub all: Option<bool>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl ReplayCapability {
    /// A declaration of `buffer` depth and replay-all support.
    pub fn new(buffer: u64, all: bool) -> ReplayCapability {
        ReplayCapability {
            buffer: Some(buffer),
            all: Some(all),
            extra: Map::new(),
        }
    }

    fn from_map(mut map: Map<String, Value>) -> Option<ReplayCapability> {
        let buffer = match map.shift_remove("buffer") {
            None => None,
            Some(v) => Some(v.as_u64()?),
        };
        let all = match map.shift_remove("all") {
            None => None,
            Some(v) => Some(v.as_bool()?),
        };
        Some(ReplayCapability {
            buffer,
            all,
            extra: map,
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "buffer", self.buffer.as_ref())?;
        put(m, "all", self.all.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(ReplayCapability);

/// A frame whose only member is `id`: `subscribed`, `unsubscribe`, `unsubscribed` and
/// the `roster` request.
///
/// ```
/// use aep_core::frame::{Frame, IdFrame};
/// assert_eq!(Frame::Unsubscribe(IdFrame::new("sub-1")).to_json(), r#"{"type":"unsubscribe","id":"sub-1"}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IdFrame {
    /// The subscription or request id.
    pub id: String,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl IdFrame {
    /// A frame carrying `id`.
    pub fn new(id: impl Into<String>) -> IdFrame {
        IdFrame {
            id: id.into(),
            extra: Map::new(),
        }
    }

    fn read(m: &mut Members<'_>) -> Result<IdFrame, FrameError> {
        Ok(IdFrame {
            id: m.req_str("id")?,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("id", &self.id)?;
        write_extra(m, &self.extra)
    }
}

/// The `subscribe` frame (AEP-0003 §6.5).
///
/// `filter` is the attr-match filter as sent; validate it with the `filter` module and
/// answer `invalid-filter` when it fails (fail closed, AEP-0003 §6.2). An absent
/// filter is the empty filter, which matches every event (§6.1).
///
/// ```
/// use aep_core::frame::{Frame, ReplayFrom, Subscribe};
/// use aep_core::resume::ResumePosition;
/// use aep_core::Capture;
/// use serde_json::json;
///
/// let s = Subscribe::new("sub-1", json!({"session": "s_8f2c"}))
///     .with_from(ReplayFrom::Positions(vec![ResumePosition::new("s_8f2c", 3, 187)]))
///     .with_capture(Capture::Metadata);
/// assert_eq!(
///     Frame::Subscribe(s).to_json(),
///     r#"{"type":"subscribe","id":"sub-1","filter":{"session":"s_8f2c"},"from":[{"session":"s_8f2c","epoch":3,"seq":187}],"capture":"metadata"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Subscribe {
    /// The subscription id, echoed by `subscribed` / `error`.
    pub id: String,
    /// The attr-match filter, unvalidated.
    pub filter: Option<Value>,
    /// Replay before live delivery (AEP-0003 §5, §6.5).
    pub from: Option<ReplayFrom>,
    /// The capture ceiling (AEP-0003 §6.4).
    pub capture: Option<Capture>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Subscribe {
    /// A subscription `id` over `filter`.
    pub fn new(id: impl Into<String>, filter: Value) -> Subscribe {
        Subscribe {
            id: id.into(),
            filter: Some(filter),
            from: None,
            capture: None,
            extra: Map::new(),
        }
    }

    /// Sets `from`.
    ///
    /// ```
    /// use aep_core::frame::{Frame, ReplayFrom, Subscribe};
    /// use aep_core::Capture;
    /// let sub = Subscribe::new("sub-1", serde_json::json!({"type": "tool.*"}))
    ///     .with_from(ReplayFrom::All)
    ///     .with_capture(Capture::Metadata);
    /// assert_eq!(Frame::from(sub).to_json(), r#"{"type":"subscribe","id":"sub-1","filter":{"type":"tool.*"},"from":"all","capture":"metadata"}"#);
    /// ```
    pub fn with_from(mut self, from: ReplayFrom) -> Subscribe {
        self.from = Some(from);
        self
    }

    /// Sets the capture ceiling.
    pub fn with_capture(mut self, capture: Capture) -> Subscribe {
        self.capture = Some(capture);
        self
    }

    fn read(m: &mut Members<'_>) -> Result<Subscribe, FrameError> {
        let id = m.req_str("id")?;
        let filter = m.take("filter");
        let from = match m.take("from") {
            None => None,
            Some(Value::String(s)) if s == "all" => Some(ReplayFrom::All),
            Some(Value::Array(items)) => {
                let mut positions = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let Value::Object(map) = item else {
                        return Err(m.err(
                            &format!("from[{i}]"),
                            "must be a {session, epoch, seq} object",
                        ));
                    };
                    let mut n = m.nested(format!("from[{i}]"), map);
                    positions.push(read_position(&mut n)?);
                }
                Some(ReplayFrom::Positions(positions))
            }
            Some(_) => {
                return Err(m.err(
                    "from",
                    "must be an array of {session, epoch, seq} positions or the string \"all\" (AEP-0003 §6.5)",
                ))
            }
        };
        let capture = match m.opt_str("capture")? {
            None => None,
            Some(c) => Some(
                c.parse::<Capture>()
                    .map_err(|e| m.err("capture", format!("{e}")))?,
            ),
        };
        Ok(Subscribe {
            id,
            filter,
            from,
            capture,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("id", &self.id)?;
        put(m, "filter", self.filter.as_ref())?;
        match &self.from {
            None => {}
            Some(ReplayFrom::All) => m.serialize_entry("from", "all")?,
            Some(ReplayFrom::Positions(p)) => m.serialize_entry("from", p)?,
        }
        put(m, "capture", self.capture.as_ref())?;
        write_extra(m, &self.extra)
    }
}

/// Where a subscription's replay starts (AEP-0003 §5, §6.5).
///
/// ```
/// use aep_core::frame::ReplayFrom;
/// assert!(matches!(ReplayFrom::All, ReplayFrom::All));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayFrom {
    /// After each of these positions, per session (the resume module's tokens).
    Positions(Vec<ResumePosition>),
    /// Every held session from its earliest held position (`"all"`).
    All,
}

/// Reads one `from` entry `{session, epoch, seq}` (AEP-0003 §6.5); an absent `epoch`
/// reads as 0.
fn read_position(m: &mut Members<'_>) -> Result<ResumePosition, FrameError> {
    let session = m.req_str("session")?;
    let epoch = m.opt_u64("epoch")?.unwrap_or(0);
    let seq = m.req_u64("seq")?;
    Ok(ResumePosition::new(session, epoch, seq))
}

/// The `roster` reply (AEP-0003 §4.1).
///
/// ```
/// use aep_core::frame::{decode, Frame, Message};
/// let m = decode(r#"{"type":"roster","id":"r-1","entries":[{"session":"s_8f2c","agent":"claude-code","control":{"accepts":["control.attention.respond"],"ack_window_ms":10000}}]}"#)?;
/// let Message::Frame(Frame::Roster(r)) = m else { panic!() };
/// assert!(r.entries[0].control.as_ref().unwrap().accepts("control.attention.respond"));
/// # Ok::<(), aep_core::frame::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RosterReply {
    /// The request's `id`, echoed.
    pub id: String,
    /// One entry per live claim; a repeated `session` is the multi-claimant state.
    pub entries: Vec<RosterEntry>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl RosterReply {
    /// A reply to request `id`.
    pub fn new(id: impl Into<String>, entries: Vec<RosterEntry>) -> RosterReply {
        RosterReply {
            id: id.into(),
            entries,
            extra: Map::new(),
        }
    }

    fn read(m: &mut Members<'_>) -> Result<RosterReply, FrameError> {
        let id = m.req_str("id")?;
        let entries = match m.take("entries") {
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let Value::Object(map) = item else {
                        return Err(m.err(&format!("entries[{i}]"), "must be an object"));
                    };
                    let mut n = m.nested(format!("entries[{i}]"), map);
                    out.push(RosterEntry::read(&mut n)?);
                }
                out
            }
            _ => return Err(m.err("entries", "must be an array of entries")),
        };
        Ok(RosterReply {
            id,
            entries,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("entries", &self.entries)?;
        write_extra(m, &self.extra)
    }
}

/// One live emitter claim in a `roster` reply: declarations relayed verbatim
/// (AEP-0003 §4.1 rule 4).
///
/// ```
/// let e = aep_core::frame::RosterEntry::new("s_8f2c");
/// assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"session":"s_8f2c"}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RosterEntry {
    /// The claimed session.
    pub session: String,
    /// `hello.identity.agent` of the claiming connection.
    pub agent: Option<String>,
    /// `hello.identity.instance` of the claiming connection.
    pub instance: Option<String>,
    /// That connection's declared `capabilities.control`.
    pub control: Option<ControlCapability>,
    /// That connection's declared `capabilities.emits`.
    pub emits: Option<Vec<String>>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl RosterEntry {
    /// An entry for `session` with nothing declared.
    pub fn new(session: impl Into<String>) -> RosterEntry {
        RosterEntry {
            session: session.into(),
            agent: None,
            instance: None,
            control: None,
            emits: None,
            extra: Map::new(),
        }
    }

    fn read(m: &mut Members<'_>) -> Result<RosterEntry, FrameError> {
        let session = m.req_str("session")?;
        let agent = m.opt_str("agent")?;
        let instance = m.opt_str("instance")?;
        let control = match m.opt_object("control")? {
            None => None,
            Some(o) => Some(
                ControlCapability::from_map(o)
                    .ok_or_else(|| m.err("control", "must be a control declaration"))?,
            ),
        };
        let emits = m.opt_strings("emits")?;
        Ok(RosterEntry {
            session,
            agent,
            instance,
            control,
            emits,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("session", &self.session)?;
        put(m, "agent", self.agent.as_ref())?;
        put(m, "instance", self.instance.as_ref())?;
        put(m, "control", self.control.as_ref())?;
        put(m, "emits", self.emits.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(RosterEntry);

/// The `code` of an `error` frame.
///
/// The spec defines closed sets per situation: the subscribe refusals of AEP-0003 §6.5
/// ([`is_subscribe_code`](Self::is_subscribe_code)), the command-path refusals of
/// AEP-0004 §4.2 ([`is_command_code`](Self::is_command_code)), and the connection
/// refusals of AEP-0003 §3.5 and §4. Codes outside them (the reference relay's
/// `bad-json`, `invalid-event`, `binary-unsupported`, or a future code) read as
/// [`ErrorCode::Other`], never as an error. Parsing a known code always yields its
/// variant, never `Other`.
///
/// ```
/// use aep_core::frame::ErrorCode;
/// assert_eq!(ErrorCode::from("no-route"), ErrorCode::NoRoute);
/// assert_eq!(ErrorCode::from("bad-json"), ErrorCode::Other("bad-json".into()));
/// assert!(ErrorCode::LimitExceeded.is_subscribe_code());
/// assert!(ErrorCode::Ambiguous.is_command_code());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The first frame was not `hello` (AEP-0003 §3.5 rule 1).
    HelloRequired,
    /// No version in common; the frame lists `versions` (AEP-0003 §4 rule 1).
    VersionUnsupported,
    /// A malformed `filter` or `from`, or an illegal filter key (AEP-0003 §6.5).
    InvalidFilter,
    /// The subscription needs an undeclared filter dialect (AEP-0003 §6.5).
    UnknownDialect,
    /// This connection may not do this: subscribe, roster, or command (AEP-0003 §6.5,
    /// §4.1; AEP-0004 §4.2).
    Unauthorized,
    /// An endpoint resource limit (AEP-0003 §6.5).
    LimitExceeded,
    /// The target does not accept the command type; refused on its behalf
    /// (AEP-0004 §4.2).
    Unsupported,
    /// More than one live claimant of the addressed session (AEP-0004 §4.5).
    Ambiguous,
    /// No connected emitter owns the addressed session (AEP-0004 §4.2).
    NoRoute,
    /// Any other code, kept as sent.
    Other(String),
}

impl ErrorCode {
    /// The wire spelling.
    ///
    /// ```
    /// assert_eq!(aep_core::frame::ErrorCode::HelloRequired.as_str(), "hello-required");
    /// ```
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::HelloRequired => "hello-required",
            ErrorCode::VersionUnsupported => "version-unsupported",
            ErrorCode::InvalidFilter => "invalid-filter",
            ErrorCode::UnknownDialect => "unknown-dialect",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::LimitExceeded => "limit-exceeded",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::Ambiguous => "ambiguous",
            ErrorCode::NoRoute => "no-route",
            ErrorCode::Other(s) => s,
        }
    }

    /// Whether the code is in the closed subscribe-refusal set of AEP-0003 §6.5.
    ///
    /// ```
    /// use aep_core::frame::ErrorCode;
    /// assert!(ErrorCode::InvalidFilter.is_subscribe_code());
    /// assert!(!ErrorCode::NoRoute.is_subscribe_code());
    /// assert!(!ErrorCode::Other("teapot".into()).is_subscribe_code());
    /// ```
    pub fn is_subscribe_code(&self) -> bool {
        self.subscribe_refusal().is_some()
    }

    /// Whether the code is one of the command-path codes of AEP-0004 §4.2.
    ///
    /// ```
    /// use aep_core::frame::ErrorCode;
    /// assert!(ErrorCode::NoRoute.is_command_code() && ErrorCode::Unauthorized.is_command_code());
    /// assert!(!ErrorCode::HelloRequired.is_command_code());
    /// ```
    pub fn is_command_code(&self) -> bool {
        self.command_refusal().is_some()
    }

    /// The code as a member of the closed subscribe-refusal set, if it is one.
    ///
    /// ```
    /// use aep_core::frame::{ErrorCode, SubscribeRefusal};
    /// assert_eq!(ErrorCode::LimitExceeded.subscribe_refusal(), Some(SubscribeRefusal::LimitExceeded));
    /// assert_eq!(ErrorCode::NoRoute.subscribe_refusal(), None);
    /// ```
    pub fn subscribe_refusal(&self) -> Option<SubscribeRefusal> {
        SubscribeRefusal::ALL
            .into_iter()
            .find(|r| ErrorCode::from(*r) == *self)
    }

    /// The code as a member of the command-path set, if it is one.
    ///
    /// ```
    /// use aep_core::frame::{CommandRefusal, ErrorCode};
    /// assert_eq!(ErrorCode::Ambiguous.command_refusal(), Some(CommandRefusal::Ambiguous));
    /// ```
    pub fn command_refusal(&self) -> Option<CommandRefusal> {
        CommandRefusal::ALL
            .into_iter()
            .find(|r| ErrorCode::from(*r) == *self)
    }
}

/// The closed set of codes refusing a `subscribe` (AEP-0003 §6.5); a `roster` request
/// from an emitter is refused with its `unauthorized` too (§4.1 rule 2). An endpoint
/// that builds refusals from this type cannot step outside the set.
///
/// ```
/// use aep_core::frame::{ErrorFrame, Frame, SubscribeRefusal};
/// let f = ErrorFrame::subscribe_refusal("sub-1", SubscribeRefusal::InvalidFilter);
/// assert_eq!(Frame::from(f.with_detail("filter must be a JSON object")).to_json(),
///     r#"{"type":"error","id":"sub-1","code":"invalid-filter","detail":"filter must be a JSON object"}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubscribeRefusal {
    /// `invalid-filter`: a malformed `filter` or `from`, or an illegal filter key.
    InvalidFilter,
    /// `unknown-dialect`: a filter dialect the endpoint did not advertise.
    UnknownDialect,
    /// `unauthorized`: this connection may not subscribe (or ask for a roster).
    Unauthorized,
    /// `limit-exceeded`: an endpoint resource limit; `detail` should name it.
    LimitExceeded,
}

impl SubscribeRefusal {
    /// The whole set.
    ///
    /// ```
    /// use aep_core::frame::{ErrorCode, SubscribeRefusal};
    /// assert!(SubscribeRefusal::ALL.iter().all(|r| ErrorCode::from(*r).is_subscribe_code()));
    /// ```
    pub const ALL: [SubscribeRefusal; 4] = [
        SubscribeRefusal::InvalidFilter,
        SubscribeRefusal::UnknownDialect,
        SubscribeRefusal::Unauthorized,
        SubscribeRefusal::LimitExceeded,
    ];
}

impl From<SubscribeRefusal> for ErrorCode {
    fn from(r: SubscribeRefusal) -> ErrorCode {
        match r {
            SubscribeRefusal::InvalidFilter => ErrorCode::InvalidFilter,
            SubscribeRefusal::UnknownDialect => ErrorCode::UnknownDialect,
            SubscribeRefusal::Unauthorized => ErrorCode::Unauthorized,
            SubscribeRefusal::LimitExceeded => ErrorCode::LimitExceeded,
        }
    }
}

/// The command-path codes a relay refuses a command with, toward the sender
/// (AEP-0004 §4.2, §4.5).
///
/// ```
/// use aep_core::frame::{CommandRefusal, ErrorFrame, Frame};
/// let f = ErrorFrame::command_refusal("01JCMD", CommandRefusal::NoRoute);
/// assert_eq!(Frame::from(f).to_json(), r#"{"type":"error","code":"no-route","cause":"01JCMD"}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandRefusal {
    /// `unauthorized`: unauthenticated binding, or a policy denial.
    Unauthorized,
    /// `unsupported`: outside the target's declared `accepts`.
    Unsupported,
    /// `ambiguous`: more than one live claimant of the session.
    Ambiguous,
    /// `no-route`: no connected emitter owns the session.
    NoRoute,
}

impl CommandRefusal {
    /// The whole set.
    ///
    /// ```
    /// use aep_core::frame::{CommandRefusal, ErrorCode};
    /// assert!(CommandRefusal::ALL.iter().all(|r| ErrorCode::from(*r).is_command_code()));
    /// ```
    pub const ALL: [CommandRefusal; 4] = [
        CommandRefusal::Unauthorized,
        CommandRefusal::Unsupported,
        CommandRefusal::Ambiguous,
        CommandRefusal::NoRoute,
    ];
}

impl From<CommandRefusal> for ErrorCode {
    fn from(r: CommandRefusal) -> ErrorCode {
        match r {
            CommandRefusal::Unauthorized => ErrorCode::Unauthorized,
            CommandRefusal::Unsupported => ErrorCode::Unsupported,
            CommandRefusal::Ambiguous => ErrorCode::Ambiguous,
            CommandRefusal::NoRoute => ErrorCode::NoRoute,
        }
    }
}

impl From<&str> for ErrorCode {
    fn from(s: &str) -> ErrorCode {
        match s {
            "hello-required" => ErrorCode::HelloRequired,
            "version-unsupported" => ErrorCode::VersionUnsupported,
            "invalid-filter" => ErrorCode::InvalidFilter,
            "unknown-dialect" => ErrorCode::UnknownDialect,
            "unauthorized" => ErrorCode::Unauthorized,
            "limit-exceeded" => ErrorCode::LimitExceeded,
            "unsupported" => ErrorCode::Unsupported,
            "ambiguous" => ErrorCode::Ambiguous,
            "no-route" => ErrorCode::NoRoute,
            other => ErrorCode::Other(other.to_owned()),
        }
    }
}

impl From<String> for ErrorCode {
    fn from(s: String) -> ErrorCode {
        match ErrorCode::from(s.as_str()) {
            ErrorCode::Other(_) => ErrorCode::Other(s),
            known => known,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ErrorCode::from(String::deserialize(d)?))
    }
}

/// The `error` frame: a connection-scoped refusal, never an event, never persisted.
///
/// `id` correlates it with a `subscribe` or `roster` request (AEP-0003 §6.5, §4.1);
/// `cause` with a command the relay refused on the target's behalf (AEP-0004 §4.2).
///
/// ```
/// use aep_core::frame::{decode, ErrorCode, Frame, Message};
/// let Message::Frame(Frame::Error(e)) = decode(r#"{"type":"error","id":"sub-1","code":"invalid-filter","detail":"filter must be a JSON object"}"#)? else { panic!() };
/// assert_eq!(e.code, ErrorCode::InvalidFilter);
/// assert_eq!(e.id.as_deref(), Some("sub-1"));
/// # Ok::<(), aep_core::frame::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ErrorFrame {
    /// What was refused.
    pub code: ErrorCode,
    /// The refused request's `id` (subscribe, roster).
    pub id: Option<String>,
    /// The refused command's `id` (AEP-0004 §4.2).
    pub cause: Option<String>,
    /// Human-readable detail.
    pub detail: Option<String>,
    /// The supported versions, on `version-unsupported` (AEP-0003 §4 rule 1).
    pub versions: Option<Vec<String>>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl ErrorFrame {
    /// An error frame with `code` and nothing else.
    pub fn new(code: ErrorCode) -> ErrorFrame {
        ErrorFrame {
            code,
            id: None,
            cause: None,
            detail: None,
            versions: None,
            extra: Map::new(),
        }
    }

    /// The in-band refusal of the `subscribe` (or `roster`) request `id`
    /// (AEP-0003 §6.5): the connection survives it.
    pub fn subscribe_refusal(id: impl Into<String>, code: SubscribeRefusal) -> ErrorFrame {
        ErrorFrame::new(code.into()).with_id(id)
    }

    /// A relay's refusal of the command `cause`, sent to the sender's connection
    /// (AEP-0004 §4.2); never an event, never in the session's history.
    pub fn command_refusal(cause: impl Into<String>, code: CommandRefusal) -> ErrorFrame {
        ErrorFrame::new(code.into()).with_cause(cause)
    }

    /// Sets `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> ErrorFrame {
        self.id = Some(id.into());
        self
    }

    /// Sets `cause`.
    pub fn with_cause(mut self, cause: impl Into<String>) -> ErrorFrame {
        self.cause = Some(cause.into());
        self
    }

    /// Sets `detail`.
    pub fn with_detail(mut self, detail: impl Into<String>) -> ErrorFrame {
        self.detail = Some(detail.into());
        self
    }

    /// Sets `versions`.
    pub fn with_versions<I, S>(mut self, versions: I) -> ErrorFrame
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.versions = Some(versions.into_iter().map(Into::into).collect());
        self
    }

    fn read(m: &mut Members<'_>) -> Result<ErrorFrame, FrameError> {
        let code = ErrorCode::from(m.req_str("code")?);
        let id = m.opt_str("id")?;
        let cause = m.opt_str("cause")?;
        let detail = match m.take("detail") {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => Some(other.to_string()),
        };
        let versions = m.opt_strings("versions")?;
        Ok(ErrorFrame {
            code,
            id,
            cause,
            detail,
            versions,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "id", self.id.as_ref())?;
        m.serialize_entry("code", &self.code)?;
        put(m, "cause", self.cause.as_ref())?;
        put(m, "detail", self.detail.as_ref())?;
        put(m, "versions", self.versions.as_ref())?;
        write_extra(m, &self.extra)
    }
}

/// The `replay-exhausted` frame: a resume position predates the buffer; delivery
/// continues from `earliest` (AEP-0003 §5).
///
/// ```
/// use aep_core::frame::{Frame, ReplayExhausted};
/// let f = Frame::ReplayExhausted(ReplayExhausted::new("sub-1", "s", 0, 42));
/// assert_eq!(f.to_json(), r#"{"type":"replay-exhausted","sub":"sub-1","session":"s","earliest":{"epoch":0,"seq":42}}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplayExhausted {
    /// The subscription id.
    pub sub: String,
    /// The session whose position predates the buffer.
    pub session: String,
    /// The earliest held `(epoch, seq)`.
    pub earliest: Position,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl ReplayExhausted {
    /// The marker for subscription `sub`, session `session`, earliest `(epoch, seq)`.
    pub fn new(
        sub: impl Into<String>,
        session: impl Into<String>,
        epoch: u64,
        seq: u64,
    ) -> ReplayExhausted {
        ReplayExhausted {
            sub: sub.into(),
            session: session.into(),
            earliest: Position::new(epoch, seq),
            extra: Map::new(),
        }
    }

    fn read(m: &mut Members<'_>) -> Result<ReplayExhausted, FrameError> {
        let sub = m.req_str("sub")?;
        let session = m.req_str("session")?;
        let Some(map) = m.opt_object("earliest")? else {
            return Err(m.err(
                "earliest",
                "is missing (an {epoch, seq} object is required)",
            ));
        };
        let mut n = m.nested("earliest".to_owned(), map);
        let epoch = n.opt_u64("epoch")?.unwrap_or(0);
        let earliest = Position::new(epoch, n.req_u64("seq")?);
        Ok(ReplayExhausted {
            sub,
            session,
            earliest,
            extra: std::mem::take(&mut m.map),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("sub", &self.sub)?;
        m.serialize_entry("session", &self.session)?;
        m.serialize_entry("earliest", &self.earliest)?;
        write_extra(m, &self.extra)
    }
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
/// let d = aep_core::frame::Delivered { sub: "sub-1".into(), session: "s".into(), epoch: 0, seq: 9 };
/// assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"sub":"sub-1","session":"s","epoch":0,"seq":9}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
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

// ---------------------------------------------------------------------------
// Discovery document
// ---------------------------------------------------------------------------

/// The HTTP discovery document served at `GET {base}/events` and `/.well-known/aep`
/// (AEP-0003 §3.4). Unknown members are kept in `extra` and otherwise ignored.
///
/// ```
/// use aep_core::frame::Discovery;
/// let doc: Discovery = serde_json::from_str(r#"{
///   "aep": ["0.1"], "role": "collector",
///   "endpoints": { "events": "/events", "stream": "/stream", "socket": "/socket" },
///   "capabilities": { "filters": ["attr-match"], "replay": { "buffer": 10000, "all": true } }
/// }"#)?;
/// assert_eq!(doc.endpoints.socket.as_deref(), Some("/socket"));
/// assert_eq!(doc.capabilities().replay.unwrap().all, Some(true));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Discovery {
    /// Supported versions.
    pub aep: Vec<String>,
    /// The endpoint's role (the reference relay says `collector`).
    pub role: Option<Role>,
    /// Binding paths.
    pub endpoints: Endpoints,
    /// Capabilities, in the `hello` shape.
    pub capabilities: Option<Capabilities>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Discovery {
    /// A document for version `0.1` with the given endpoints.
    ///
    /// ```
    /// use aep_core::frame::{Discovery, Endpoints};
    /// let d = Discovery::new(Endpoints::standard());
    /// assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"aep":["0.1"],"endpoints":{"events":"/events","stream":"/stream","socket":"/socket"}}"#);
    /// ```
    pub fn new(endpoints: Endpoints) -> Discovery {
        Discovery {
            aep: vec![crate::AEP_VERSION.to_owned()],
            role: None,
            endpoints,
            capabilities: None,
            extra: Map::new(),
        }
    }

    /// The declared capabilities, or the empty set.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities.clone().unwrap_or_default()
    }

    fn from_map(map: Map<String, Value>) -> Result<Discovery, FrameError> {
        let mut m = Members::new("discovery", map);
        m.id = None;
        let aep = m
            .opt_strings("aep")?
            .ok_or_else(|| m.err("aep", "is missing (an array of versions is required)"))?;
        let role = m.opt_str("role")?.map(Role::from_wire);
        let Some(ep) = m.opt_object("endpoints")? else {
            return Err(m.err("endpoints", "is missing (an object is required)"));
        };
        let mut n = m.nested("endpoints".to_owned(), ep);
        let endpoints = Endpoints {
            events: n.opt_str("events")?,
            stream: n.opt_str("stream")?,
            socket: n.opt_str("socket")?,
            extra: n.rest(),
        };
        let capabilities = match m.take("capabilities") {
            None => None,
            Some(Value::Object(o)) => Some(Capabilities::from_map(o)),
            Some(_) => return Err(m.err("capabilities", "must be an object")),
        };
        Ok(Discovery {
            aep,
            role,
            endpoints,
            capabilities,
            extra: m.rest(),
        })
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("aep", &self.aep)?;
        put(m, "role", self.role.as_ref())?;
        m.serialize_entry("endpoints", &self.endpoints)?;
        put(m, "capabilities", self.capabilities.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(Discovery);

impl<'de> Deserialize<'de> for Discovery {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Discovery::from_map(Map::deserialize(d)?).map_err(de::Error::custom)
    }
}

/// `endpoints` of the discovery document: paths relative to the base URL.
///
/// ```
/// let e = aep_core::frame::Endpoints::standard();
/// assert_eq!(e.stream.as_deref(), Some("/stream"));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Endpoints {
    /// HTTP emit (and this document).
    pub events: Option<String>,
    /// SSE consume.
    pub stream: Option<String>,
    /// WebSocket duplex; absent when the endpoint has none.
    pub socket: Option<String>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Endpoints {
    /// The paths of §3.4's example: `/events`, `/stream`, `/socket`.
    pub fn standard() -> Endpoints {
        Endpoints {
            events: Some("/events".to_owned()),
            stream: Some("/stream".to_owned()),
            socket: Some("/socket".to_owned()),
            extra: Map::new(),
        }
    }

    fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "events", self.events.as_ref())?;
        put(m, "stream", self.stream.as_ref())?;
        put(m, "socket", self.socket.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(Endpoints);
