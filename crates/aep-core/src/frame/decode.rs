//! Reading one WebSocket text message as an event or a frame (AEP-0003 §2).

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::members::FrameError;
use super::Frame;
use crate::event::{Event, EventParseError};

/// One WebSocket text message: an event or a frame (AEP-0003 §2). Exhaustive: a message
/// whose `type` holds a dot is an event, any other is a frame.
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
