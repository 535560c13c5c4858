//! Reading and writing frame members: what every frame type shares, and
//! [`FrameError`], a member that does not read.

use serde::ser::SerializeMap;
use serde::Serialize;
use serde_json::{Map, Value};

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
    pub(super) frame_type: String,
    pub(super) id: Option<String>,
    pub(super) member: String,
    pub(super) problem: String,
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

/// An object being read member by member; what is left over becomes `extra`.
pub(super) struct Members<'a> {
    pub(super) frame_type: &'a str,
    pub(super) id: Option<String>,
    pub(super) path: String,
    pub(super) map: Map<String, Value>,
}

impl<'a> Members<'a> {
    pub(super) fn new(frame_type: &'a str, map: Map<String, Value>) -> Members<'a> {
        let id = map.get("id").and_then(Value::as_str).map(str::to_owned);
        Members {
            frame_type,
            id,
            path: String::new(),
            map,
        }
    }

    pub(super) fn nested(&self, path: String, map: Map<String, Value>) -> Members<'a> {
        Members {
            frame_type: self.frame_type,
            id: self.id.clone(),
            path,
            map,
        }
    }

    pub(super) fn err(&self, key: &str, problem: impl Into<String>) -> FrameError {
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

    pub(super) fn take(&mut self, key: &str) -> Option<Value> {
        match self.map.shift_remove(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    pub(super) fn opt_str(&mut self, key: &str) -> Result<Option<String>, FrameError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "must be a string")),
        }
    }

    pub(super) fn req_str(&mut self, key: &str) -> Result<String, FrameError> {
        self.opt_str(key)?
            .ok_or_else(|| self.err(key, "is missing (a string is required)"))
    }

    pub(super) fn opt_u64(&mut self, key: &str) -> Result<Option<u64>, FrameError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.err(key, "must be a non-negative integer")),
        }
    }

    pub(super) fn req_u64(&mut self, key: &str) -> Result<u64, FrameError> {
        self.opt_u64(key)?
            .ok_or_else(|| self.err(key, "is missing (a non-negative integer is required)"))
    }

    pub(super) fn opt_strings(&mut self, key: &str) -> Result<Option<Vec<String>>, FrameError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => strings(v)
                .map(Some)
                .ok_or_else(|| self.err(key, "must be an array of strings")),
        }
    }

    pub(super) fn opt_object(
        &mut self,
        key: &str,
    ) -> Result<Option<Map<String, Value>>, FrameError> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.err(key, "must be an object")),
        }
    }

    pub(super) fn rest(self) -> Map<String, Value> {
        self.map
    }
}

pub(super) fn strings(v: Value) -> Option<Vec<String>> {
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
pub(super) fn put<M: SerializeMap, T: Serialize>(
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
pub(super) fn write_extra<M: SerializeMap>(
    m: &mut M,
    extra: &Map<String, Value>,
) -> Result<(), M::Error> {
    for (k, v) in extra {
        m.serialize_entry(k, v)?;
    }
    Ok(())
}

/// Serializes a value through its `write_members`, as one JSON object.
macro_rules! object_serialize {
    ($ty:ty) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap as _;
                let mut m = s.serialize_map(None)?;
                self.write_members(&mut m)?;
                m.end()
            }
        }
    };
}
pub(super) use object_serialize;
