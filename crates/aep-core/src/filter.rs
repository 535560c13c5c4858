//! The attr-match filter dialect (AEP-0003 §6): parse fail-closed, match.
//!
//! A [`Filter`] is read from its wire JSON (the `filter` of a `subscribe` frame or of the
//! SSE `filter` parameter). Reading checks every key and predicate against the grammar of
//! §6.1 and the key rules of §6.2 rule 1 and refuses anything else with a
//! [`FilterError`] naming the offending key or predicate: a relay answers it with the
//! `invalid-filter` code and never falls back to "match everything".
//!
//! Reading also compiles the filter once: inclusion arrays become sets, type patterns
//! become prefixes, severity and capture predicates become bitmasks of accepted levels.
//! [`Filter::matches`] then evaluates a parsed [`Event`] without allocating. The wire
//! JSON is kept as read, so a filter writes back exactly what it was read from.
//!
//! ```
//! use aep_core::{filter::Filter, Event};
//!
//! let filter: Filter = r#"{"type":["attention.*","error.*"],"severity":{"gte":"notice"}}"#.parse()?;
//! let event: Event = r#"{"aep":"0.1","id":"1","type":"attention.requested","time":"t","source":"s","agent":"a","session":"s1","seq":4,"severity":"warning"}"#.parse()?;
//! assert!(filter.matches(&event));
//! assert_eq!(filter.to_json(), r#"{"type":["attention.*","error.*"],"severity":{"gte":"notice"}}"#);
//!
//! let err = r#"{"seq":5}"#.parse::<Filter>().unwrap_err();
//! assert_eq!(err.key(), Some("seq"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::event::{check_extension_name, EnvelopeView, Event, ExtensionError};
use crate::level::{Capture, Severity, CAPTURE_NAMES, SEVERITY_NAMES};

mod pin;

pub use pin::{type_category, Pin, PinAttr};

/// The core attributes a filter may name (AEP-0003 §6.2 rule 1), besides extension
/// attribute names.
///
/// ```
/// use aep_core::filter::{Filter, FILTERABLE};
/// for key in FILTERABLE {
///     let value = match key {
///         "epoch" => serde_json::json!(0),
///         "severity" => serde_json::json!("info"),
///         "capture" => serde_json::json!("metadata"),
///         _ => serde_json::json!("v"),
///     };
///     assert!(Filter::from_value(&serde_json::json!({ key: value })).is_ok(), "{key}");
/// }
/// ```
pub const FILTERABLE: [&str; 12] = [
    "id", "type", "subject", "source", "agent", "session", "run", "step", "epoch", "cause",
    "severity", "capture",
];

/// The core attributes a filter must not name (AEP-0003 §6.2 rule 1): positions are the
/// resume mechanism, `time` is display metadata, trace context is pass-through, and
/// routing never parses `data`.
///
/// ```
/// use aep_core::filter::{Filter, NOT_FILTERABLE};
/// for key in NOT_FILTERABLE {
///     assert!(Filter::from_value(&serde_json::json!({ key: "x" })).is_err(), "{key}");
/// }
/// ```
pub const NOT_FILTERABLE: [&str; 5] = ["aep", "time", "seq", "traceparent", "data"];

/// The error code a relay answers a refused filter with (AEP-0003 §6.5).
///
/// ```
/// use aep_core::filter::{Filter, INVALID_FILTER};
/// let err = Filter::from_json(r#"{"seq":1}"#).unwrap_err();
/// assert_eq!(err.code(), INVALID_FILTER);
/// ```
pub const INVALID_FILTER: &str = "invalid-filter";

/// Why a filter was refused (AEP-0003 §6.2 rule 1: fail closed, never match-all).
///
/// Every variant names the offending key, and where it helps the predicate too, so the
/// message tells the sender what to change.
///
/// ```
/// use aep_core::filter::{Filter, FilterError};
/// let err = Filter::from_json(r#"{"type":"*"}"#).unwrap_err();
/// assert_eq!(err, FilterError::BareStar);
/// assert_eq!(err.code(), "invalid-filter");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// The input is not JSON.
    #[error("filter is not valid JSON: {0}")]
    Syntax(String),
    /// The filter is JSON but not an object.
    #[error("a filter must be a JSON object (AEP-0003 §6.1), not {0}")]
    NotAnObject(&'static str),
    /// The same key appears twice; which one a peer would honour is unknowable.
    #[error("filter key `{0}` appears more than once")]
    DuplicateKey(String),
    /// A core attribute that is carried but never filtered (§6.2 rule 1).
    #[error("`{0}` is not filterable (AEP-0003 §6.2 rule 1): filter on id, type, subject, source, agent, session, run, step, epoch, cause, severity, capture or an extension attribute")]
    NotFilterable(String),
    /// Neither a filterable core attribute nor a legal extension attribute name.
    #[error("unknown filter key `{0}`: not a filterable attribute and not a legal extension attribute name ([a-z0-9]{{1,20}}, AEP-0001 §5.4)")]
    UnknownKey(String),
    /// `"*"` on `type`: not a pattern (§6.2 rule 3).
    #[error(
        "`*` alone is not a type pattern (AEP-0003 §6.2 rule 3): omit `type` to match every type"
    )]
    BareStar,
    /// A `type` pattern that is not `prefix.*`.
    #[error("type pattern `{0}` is malformed: the only pattern is a dotted prefix followed by `.*`, e.g. `attention.*` (AEP-0003 §6.1)")]
    BadPattern(String),
    /// A `*` in a predicate on another key than `type`.
    #[error("`{key}` predicate `{value}` contains `*`: patterns are legal only on `type` (AEP-0003 §6.1)")]
    GlobOnNonType {
        /// The filter key.
        key: String,
        /// The offending value.
        value: String,
    },
    /// A severity or capture predicate naming no level of AEP-0001 §8.
    #[error("unknown {key} level `{value}`: expected one of {expected}")]
    BadLevel {
        /// `severity` or `capture`.
        key: &'static str,
        /// The offending value.
        value: String,
        /// The levels that exist.
        expected: &'static str,
    },
    /// A severity comparison with an operator other than `gte` / `lte`.
    #[error(
        "`{0}` is not a severity operator: a comparison takes `gte` and/or `lte` (AEP-0003 §6.1)"
    )]
    BadOperator(String),
    /// `[]` as a predicate: would match nothing, which is never what the sender meant.
    #[error("inclusion array on `{0}` is empty: list at least one value or omit the key (AEP-0003 §6.1)")]
    EmptyInclusion(String),
    /// A predicate of the wrong JSON shape for its key.
    #[error("`{key}` predicate has the wrong shape: expected {expected}")]
    WrongShape {
        /// The filter key.
        key: String,
        /// What the grammar accepts there.
        expected: &'static str,
    },
}

impl FilterError {
    /// The filter key this error is about, when there is one.
    ///
    /// ```
    /// let err = aep_core::filter::Filter::from_json(r#"{"agent":[]}"#).unwrap_err();
    /// assert_eq!(err.key(), Some("agent"));
    /// ```
    pub fn key(&self) -> Option<&str> {
        match self {
            FilterError::Syntax(_) | FilterError::NotAnObject(_) => None,
            FilterError::BareStar | FilterError::BadPattern(_) => Some("type"),
            FilterError::BadOperator(_) => Some("severity"),
            FilterError::BadLevel { key, .. } => Some(key),
            FilterError::DuplicateKey(k)
            | FilterError::NotFilterable(k)
            | FilterError::UnknownKey(k)
            | FilterError::EmptyInclusion(k)
            | FilterError::GlobOnNonType { key: k, .. }
            | FilterError::WrongShape { key: k, .. } => Some(k),
        }
    }

    /// The AEP-0003 §6.5 error code for a refused filter: always [`INVALID_FILTER`].
    ///
    /// ```
    /// let err = aep_core::filter::Filter::from_json(r#"{"type":"*"}"#).unwrap_err();
    /// assert_eq!(err.code(), "invalid-filter");
    /// assert_eq!(err.key(), Some("type"));
    /// ```
    pub fn code(&self) -> &'static str {
        INVALID_FILTER
    }
}

/// An attr-match filter (AEP-0003 §6): validated, compiled, and kept as its wire JSON.
///
/// `{}` ([`Filter::all`]) matches every event. Equality compares JSON values exactly; an
/// inclusion array matches when any element does; a predicate on an attribute the event
/// omits does not match, except on `severity`, `capture` and `epoch`, whose AEP-0001
/// defaults (`info`, `metadata`, `0`) apply first (§6.2).
///
/// Beyond the grammar, a predicate that could never match a conformant event is refused
/// rather than silently matching nothing: `type` and the string attributes take strings,
/// `epoch` takes non-negative integers, `severity` and `capture` take level names.
///
/// ```
/// use aep_core::{filter::Filter, Event};
/// let f = Filter::from_json(r#"{"epoch":0,"acmeregion":"eu-1"}"#)?;
/// let e: Event = r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","acmeregion":"eu-1"}"#.parse()?;
/// assert!(f.matches(&e)); // absent epoch reads as 0
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Filter {
    wire: Map<String, Value>,
    preds: Box<[Pred]>,
}

#[derive(Clone, Debug)]
struct Pred {
    attr: Attr,
    test: Test,
}

/// A filterable attribute, resolved once at parse time.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Attr {
    Id,
    Type,
    Subject,
    Source,
    Agent,
    Session,
    Run,
    Step,
    Cause,
    Epoch,
    Severity,
    Capture,
    Ext(Box<str>),
}

impl Attr {
    /// The attribute's name on the wire.
    fn name(&self) -> &str {
        match self {
            Attr::Id => "id",
            Attr::Type => "type",
            Attr::Subject => "subject",
            Attr::Source => "source",
            Attr::Agent => "agent",
            Attr::Session => "session",
            Attr::Run => "run",
            Attr::Step => "step",
            Attr::Cause => "cause",
            Attr::Epoch => "epoch",
            Attr::Severity => "severity",
            Attr::Capture => "capture",
            Attr::Ext(name) => name,
        }
    }
}

#[derive(Clone, Debug)]
enum Test {
    /// A string core attribute: equality or inclusion.
    Strs(StrSet),
    /// `type`: exact types, and `p.*` patterns stored as `p.` prefixes.
    Type {
        exact: StrSet,
        prefixes: Box<[Box<str>]>,
    },
    /// Accepted levels as a bitmask, bit `i` for the `i`-th level of the total order.
    Levels(u8),
    Epoch(Box<[u64]>),
    Ext {
        strs: StrSet,
        ints: Box<[i128]>,
        /// Bit 0: `false` accepted, bit 1: `true` accepted.
        bools: u8,
    },
}

/// A set of strings: a short list scanned linearly (faster than hashing for the handful
/// of values filters usually carry), a hash set beyond that.
#[derive(Clone, Debug)]
enum StrSet {
    Small(Box<[Box<str>]>),
    Large(HashSet<Box<str>>),
}

const SMALL_SET: usize = 8;

impl StrSet {
    fn new(values: Vec<Box<str>>) -> StrSet {
        if values.len() <= SMALL_SET {
            StrSet::Small(values.into_boxed_slice())
        } else {
            StrSet::Large(values.into_iter().collect())
        }
    }

    #[inline]
    fn contains(&self, s: &str) -> bool {
        match self {
            StrSet::Small(v) => v.iter().any(|x| **x == *s),
            StrSet::Large(set) => set.contains(s),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            StrSet::Small(v) => v.is_empty(),
            StrSet::Large(set) => set.is_empty(),
        }
    }
}

fn severity_rank(s: &str) -> Option<u8> {
    Severity::ALL
        .iter()
        .position(|l| l.as_str() == s)
        .map(|i| i as u8)
}

fn capture_rank(s: &str) -> Option<u8> {
    Capture::ALL
        .iter()
        .position(|l| l.as_str() == s)
        .map(|i| i as u8)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `[a-z0-9_-]+(\.[a-z0-9_-]+)*` followed by `.*`: the one pattern form of §6.1.
/// Returns the prefix with its dot.
fn pattern_prefix(p: &str) -> Option<&str> {
    let prefix = p.strip_suffix('*')?;
    let body = prefix.strip_suffix('.')?;
    is_pattern_body(body).then_some(prefix)
}

/// Whether `body` may stand before `.*` in an attr-match type pattern (AEP-0003 §6.1):
/// dot-separated non-empty `[a-z0-9_-]` segments.
pub(crate) fn is_pattern_body(body: &str) -> bool {
    !body.is_empty()
        && body.split('.').all(|seg| {
            !seg.is_empty()
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        })
}

/// The elements of a scalar-or-array predicate, refusing `[]`.
fn alternatives<'v>(key: &str, pred: &'v Value) -> Result<&'v [Value], FilterError> {
    match pred {
        Value::Array(items) if items.is_empty() => Err(FilterError::EmptyInclusion(key.to_owned())),
        Value::Array(items) => Ok(items),
        other => Ok(std::slice::from_ref(other)),
    }
}

fn strings(key: &str, pred: &Value, expected: &'static str) -> Result<Vec<Box<str>>, FilterError> {
    alternatives(key, pred)?
        .iter()
        .map(|v| match v {
            Value::String(s) if s.contains('*') => Err(FilterError::GlobOnNonType {
                key: key.to_owned(),
                value: s.clone(),
            }),
            Value::String(s) => Ok(s.as_str().into()),
            _ => Err(FilterError::WrongShape {
                key: key.to_owned(),
                expected,
            }),
        })
        .collect()
}

fn level_mask(
    key: &'static str,
    pred: &Value,
    rank: fn(&str) -> Option<u8>,
    expected: &'static str,
) -> Result<u8, FilterError> {
    let level = |v: &Value| match v {
        Value::String(s) => rank(s).ok_or_else(|| FilterError::BadLevel {
            key,
            value: s.clone(),
            expected,
        }),
        other => Err(FilterError::BadLevel {
            key,
            value: other.to_string(),
            expected,
        }),
    };
    if key == "severity" {
        if let Value::Object(cmp) = pred {
            if cmp.is_empty() {
                return Err(FilterError::WrongShape {
                    key: key.to_owned(),
                    expected: "a comparison with `gte` and/or `lte`",
                });
            }
            let (mut lo, mut hi) = (0u8, 7u8);
            for (op, v) in cmp {
                match op.as_str() {
                    "gte" => lo = level(v)?,
                    "lte" => hi = level(v)?,
                    _ => return Err(FilterError::BadOperator(op.clone())),
                }
            }
            return Ok((lo..=hi).fold(0u8, |m, i| if i < 8 { m | 1 << i } else { m }));
        }
    }
    if matches!(pred, Value::Object(_)) {
        return Err(FilterError::WrongShape {
            key: key.to_owned(),
            expected: "a level name or an array of level names",
        });
    }
    alternatives(key, pred)?
        .iter()
        .try_fold(0u8, |mask, v| Ok(mask | 1 << level(v)?))
}

fn compile(key: &str, pred: &Value) -> Result<Pred, FilterError> {
    const STRING: &str = "a string or a non-empty array of strings";
    let string_attr = |attr: Attr| -> Result<Pred, FilterError> {
        Ok(Pred {
            attr,
            test: Test::Strs(StrSet::new(strings(key, pred, STRING)?)),
        })
    };
    match key {
        "id" => string_attr(Attr::Id),
        "subject" => string_attr(Attr::Subject),
        "source" => string_attr(Attr::Source),
        "agent" => string_attr(Attr::Agent),
        "session" => string_attr(Attr::Session),
        "run" => string_attr(Attr::Run),
        "step" => string_attr(Attr::Step),
        "cause" => string_attr(Attr::Cause),
        "type" => {
            let mut exact = Vec::new();
            let mut prefixes = Vec::new();
            for v in alternatives(key, pred)? {
                let Value::String(s) = v else {
                    return Err(FilterError::WrongShape {
                        key: key.to_owned(),
                        expected: "a type or `prefix.*` pattern, or a non-empty array of them",
                    });
                };
                if s == "*" {
                    return Err(FilterError::BareStar);
                }
                if s.contains('*') {
                    let prefix =
                        pattern_prefix(s).ok_or_else(|| FilterError::BadPattern(s.clone()))?;
                    prefixes.push(prefix.into());
                } else {
                    exact.push(s.as_str().into());
                }
            }
            Ok(Pred {
                attr: Attr::Type,
                test: Test::Type {
                    exact: StrSet::new(exact),
                    prefixes: prefixes.into_boxed_slice(),
                },
            })
        }
        "severity" => Ok(Pred {
            attr: Attr::Severity,
            test: Test::Levels(level_mask("severity", pred, severity_rank, SEVERITY_NAMES)?),
        }),
        "capture" => Ok(Pred {
            attr: Attr::Capture,
            test: Test::Levels(level_mask("capture", pred, capture_rank, CAPTURE_NAMES)?),
        }),
        "epoch" => {
            let epochs = alternatives(key, pred)?
                .iter()
                .map(|v| {
                    v.as_u64().ok_or_else(|| FilterError::WrongShape {
                        key: key.to_owned(),
                        expected: "a non-negative integer or a non-empty array of them",
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Pred {
                attr: Attr::Epoch,
                test: Test::Epoch(epochs.into_boxed_slice()),
            })
        }
        _ if NOT_FILTERABLE.contains(&key) => Err(FilterError::NotFilterable(key.to_owned())),
        _ => {
            match check_extension_name(key) {
                Ok(()) => {}
                Err(ExtensionError::CoreName(_)) => {
                    return Err(FilterError::NotFilterable(key.to_owned()))
                }
                Err(_) => return Err(FilterError::UnknownKey(key.to_owned())),
            }
            let mut strs = Vec::new();
            let mut ints = Vec::new();
            let mut bools = 0u8;
            for v in alternatives(key, pred)? {
                match v {
                    Value::String(s) if s.contains('*') => {
                        return Err(FilterError::GlobOnNonType {
                            key: key.to_owned(),
                            value: s.clone(),
                        })
                    }
                    Value::String(s) => strs.push(s.as_str().into()),
                    Value::Bool(b) => bools |= 1 << u8::from(*b),
                    Value::Number(n) if n.is_i64() || n.is_u64() => {
                        ints.push(n.as_i64().map_or_else(
                            || i128::from(n.as_u64().unwrap_or_default()),
                            i128::from,
                        ));
                    }
                    _ => {
                        return Err(FilterError::WrongShape {
                            key: key.to_owned(),
                            expected:
                                "a string, integer or boolean, or a non-empty array of them (AEP-0001 §5.4)",
                        })
                    }
                }
            }
            Ok(Pred {
                attr: Attr::Ext(key.into()),
                test: Test::Ext {
                    strs: StrSet::new(strs),
                    ints: ints.into_boxed_slice(),
                    bools,
                },
            })
        }
    }
}

/// An extension attribute's value as the matcher sees it.
enum ExtValue<'a> {
    Str(Cow<'a, str>),
    Int(i128),
    Bool(bool),
    /// Present, but not a value any predicate can equal.
    Other,
}

/// What the matcher needs from an event, so parsed events and raw JSON objects share
/// one implementation of §6.2. Defaults for `severity`, `capture` and `epoch` are
/// applied by the implementations, so for those three `None` means malformed (raw JSON
/// only); for the other attributes it means absent.
trait Attrs {
    fn text(&self, attr: &Attr) -> Option<&str>;
    fn epoch(&self) -> Option<u64>;
    fn severity_rank(&self) -> Option<u8>;
    fn capture_rank(&self) -> Option<u8>;
    fn ext(&self, name: &str) -> Option<ExtValue<'_>>;
}

/// One body for the types that answer through accessors of the same names: an
/// [`Event`], and an [`EnvelopeView`], which reads the same attributes from the same line
/// (held by `tests/it/event_reader.rs`). `$raw` is the raw JSON text of extension `$name`.
macro_rules! attrs_from_accessors {
    ($ty:ty, |$this:ident, $name:ident| $raw:expr_2021) => {
        impl Attrs for $ty {
            #[inline]
            fn text(&self, attr: &Attr) -> Option<&str> {
                match attr {
                    Attr::Id => Some(self.id()),
                    Attr::Type => Some(self.event_type()),
                    Attr::Subject => self.subject(),
                    Attr::Source => Some(self.source()),
                    Attr::Agent => Some(self.agent()),
                    Attr::Session => self.session(),
                    Attr::Run => self.run(),
                    Attr::Step => self.step(),
                    Attr::Cause => self.cause(),
                    _ => None,
                }
            }
            #[inline]
            fn epoch(&self) -> Option<u64> {
                Some(<$ty>::epoch(self))
            }
            #[inline]
            fn severity_rank(&self) -> Option<u8> {
                Some(self.severity() as u8)
            }
            #[inline]
            fn capture_rank(&self) -> Option<u8> {
                Some(self.capture() as u8)
            }
            #[inline]
            fn ext(&self, $name: &str) -> Option<ExtValue<'_>> {
                let $this = self;
                $raw.map(ext_value)
            }
        }
    };
}

attrs_from_accessors!(Event, |event, name| event
    .extension_raw(name)
    .map(RawValue::get));
attrs_from_accessors!(EnvelopeView<'_>, |view, name| view.extension_raw(name));

/// An extension attribute's value when it is a JSON string, borrowed from the event
/// unless it has escapes to decode.
pub(crate) fn extension_string<'e>(event: &'e Event, name: &str) -> Option<Cow<'e, str>> {
    json_string(event.extension_raw(name)?.get())
}

/// An extension value's raw JSON as a predicate compares it (AEP-0003 §6.2): a string,
/// an integer or a boolean; anything else equals no filter value.
#[inline]
fn ext_value(raw: &str) -> ExtValue<'_> {
    match raw.as_bytes().first() {
        Some(b'"') => json_string(raw).map_or(ExtValue::Other, ExtValue::Str),
        _ if raw == "true" => ExtValue::Bool(true),
        _ if raw == "false" => ExtValue::Bool(false),
        // not an integer spelling (a `Value` holds it as a float): equals no filter value,
        // as on the `Value` path
        _ if raw == "-0" => ExtValue::Other,
        _ => raw.parse::<i128>().map_or(ExtValue::Other, ExtValue::Int),
    }
}

/// A raw JSON string literal's text, borrowed unless it has escapes to decode.
#[inline]
fn json_string(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    // Escapes are rare in extension values; decoding them allocates.
    serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
}

impl Attrs for Map<String, Value> {
    fn text(&self, attr: &Attr) -> Option<&str> {
        match attr {
            Attr::Epoch | Attr::Severity | Attr::Capture | Attr::Ext(_) => None,
            _ => self.get(attr.name())?.as_str(),
        }
    }
    fn epoch(&self) -> Option<u64> {
        self.get("epoch").map_or(Some(0), Value::as_u64)
    }
    fn severity_rank(&self) -> Option<u8> {
        match self.get("severity") {
            None => Some(Severity::Info as u8),
            Some(v) => severity_rank(v.as_str()?),
        }
    }
    fn capture_rank(&self) -> Option<u8> {
        match self.get("capture") {
            None => Some(Capture::Metadata as u8),
            Some(v) => capture_rank(v.as_str()?),
        }
    }
    fn ext(&self, name: &str) -> Option<ExtValue<'_>> {
        Some(match self.get(name)? {
            Value::String(s) => ExtValue::Str(Cow::Borrowed(s)),
            Value::Bool(b) => ExtValue::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => ExtValue::Int(i.into()),
                (_, Some(u)) => ExtValue::Int(u.into()),
                _ => ExtValue::Other,
            },
            _ => ExtValue::Other,
        })
    }
}

impl Pred {
    #[inline]
    fn matches<A: Attrs + ?Sized>(&self, event: &A) -> bool {
        match &self.test {
            Test::Strs(set) => event.text(&self.attr).is_some_and(|v| set.contains(v)),
            Test::Type { exact, prefixes } => event.text(&Attr::Type).is_some_and(|t| {
                (!exact.is_empty() && exact.contains(t))
                    || prefixes.iter().any(|p| t.starts_with(&**p))
            }),
            Test::Levels(mask) => {
                let rank = match self.attr {
                    Attr::Severity => event.severity_rank(),
                    _ => event.capture_rank(),
                };
                rank.is_some_and(|r| r < 8 && mask & (1 << r) != 0)
            }
            Test::Epoch(epochs) => event.epoch().is_some_and(|e| epochs.contains(&e)),
            Test::Ext { strs, ints, bools } => {
                let Attr::Ext(name) = &self.attr else {
                    return false;
                };
                match event.ext(name) {
                    Some(ExtValue::Str(s)) => strs.contains(&s),
                    Some(ExtValue::Int(i)) => ints.contains(&i),
                    Some(ExtValue::Bool(b)) => bools & (1 << u8::from(b)) != 0,
                    Some(ExtValue::Other) | None => false,
                }
            }
        }
    }
}

impl Filter {
    /// The empty filter `{}`: matches every event (AEP-0003 §6.1).
    ///
    /// ```
    /// let f = aep_core::filter::Filter::all();
    /// assert!(f.is_empty());
    /// assert_eq!(f.to_json(), "{}");
    /// ```
    pub fn all() -> Filter {
        Filter {
            wire: Map::new(),
            preds: Box::default(),
        }
    }

    /// Reads a filter from its wire JSON text. Unlike [`Filter::from_value`] this also
    /// refuses duplicate keys, which a JSON value cannot represent.
    ///
    /// ```
    /// use aep_core::filter::{Filter, FilterError};
    /// assert!(Filter::from_json(r#"{"session":"s_8f2c"}"#).is_ok());
    /// assert_eq!(
    ///     Filter::from_json(r#"{"agent":"a","agent":"b"}"#).unwrap_err(),
    ///     FilterError::DuplicateKey("agent".into())
    /// );
    /// ```
    pub fn from_json(text: &str) -> Result<Filter, FilterError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let top = WireTop::deserialize(&mut de).and_then(|t| de.end().map(|()| t));
        match top {
            Ok(WireTop::Map(map)) => Filter::from_map(map),
            Ok(WireTop::Dup(key)) => Err(FilterError::DuplicateKey(key)),
            Ok(WireTop::NotObject(v)) => Err(FilterError::NotAnObject(json_kind(&v))),
            Err(e) => Err(FilterError::Syntax(e.to_string())),
        }
    }

    /// Reads a filter from a JSON value.
    ///
    /// ```
    /// use aep_core::filter::{Filter, FilterError};
    /// use serde_json::json;
    /// assert!(Filter::from_value(&json!({"type": ["tool.*"], "agent": "codex"})).is_ok());
    /// assert_eq!(
    ///     Filter::from_value(&json!({"severity": {"gt": "info"}})).unwrap_err(),
    ///     FilterError::BadOperator("gt".into())
    /// );
    /// assert_eq!(Filter::from_value(&json!([1])).unwrap_err(), FilterError::NotAnObject("an array"));
    /// ```
    pub fn from_value(value: &Value) -> Result<Filter, FilterError> {
        match value {
            Value::Object(map) => Filter::from_map(map.clone()),
            other => Err(FilterError::NotAnObject(json_kind(other))),
        }
    }

    /// Reads a filter from a JSON object, taking ownership of it.
    ///
    /// ```
    /// let mut map = serde_json::Map::new();
    /// map.insert("session".into(), "s1".into());
    /// let f = aep_core::filter::Filter::from_map(map)?;
    /// assert_eq!(f.to_json(), r#"{"session":"s1"}"#);
    /// # Ok::<(), aep_core::filter::FilterError>(())
    /// ```
    pub fn from_map(wire: Map<String, Value>) -> Result<Filter, FilterError> {
        let preds = wire
            .iter()
            .map(|(k, v)| compile(k, v))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Filter {
            wire,
            preds: preds.into_boxed_slice(),
        })
    }

    /// Whether the event matches every predicate (AEP-0003 §6.2). Does not allocate
    /// (except to decode an escaped extension string value).
    ///
    /// ```
    /// use aep_core::{filter::Filter, Event};
    /// let f = Filter::from_json(r#"{"severity":{"gte":"notice"}}"#)?;
    /// let e: Event = r#"{"aep":"0.1","id":"1","type":"tool.completed","time":"t","source":"s","agent":"a"}"#.parse()?;
    /// assert!(!f.matches(&e)); // absent severity reads as info
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn matches(&self, event: &Event) -> bool {
        self.preds.iter().all(|p| p.matches(event))
    }

    /// [`matches`](Self::matches) for an envelope read in place: the same verdict as on
    /// the parsed event (a relay that forwards bytes decides without building one).
    ///
    /// ```
    /// use aep_core::{filter::Filter, EnvelopeView};
    /// let f = Filter::from_json(r#"{"session":"s1","type":["control.accepted"]}"#)?;
    /// let line = r#"{"aep":"0.1","id":"1","type":"control.accepted","time":"t","source":"s","agent":"a","session":"s1","seq":0}"#;
    /// assert!(f.matches_view(&EnvelopeView::read(line).unwrap()));
    /// # Ok::<(), aep_core::filter::FilterError>(())
    /// ```
    #[inline]
    pub fn matches_view(&self, view: &EnvelopeView<'_>) -> bool {
        self.preds.iter().all(|p| p.matches(view))
    }

    /// Whether a raw JSON event matches (for callers that have not parsed into
    /// [`Event`]). A value that is not an object matches nothing; an attribute of the
    /// wrong JSON type matches no predicate on it.
    ///
    /// ```
    /// use aep_core::filter::Filter;
    /// let f = Filter::from_json(r#"{"type":"tool.completed"}"#)?;
    /// assert!(f.matches_value(&serde_json::json!({"type": "tool.completed"})));
    /// # Ok::<(), aep_core::filter::FilterError>(())
    /// ```
    pub fn matches_value(&self, event: &Value) -> bool {
        match event {
            Value::Object(map) => self.preds.iter().all(|p| p.matches(map)),
            _ => false,
        }
    }

    /// Decides the filter straight from an event's JSON bytes, without building an
    /// [`Event`] or a `Value`: `Some(verdict)` for a plain envelope (what
    /// [`EnvelopeView`] reads, as a relay's stored events almost always are), the verdict
    /// [`matches`](Self::matches) gives on the parsed event; `None` for anything else
    /// (escapes in a key or string attribute, say), which a parse decides.
    ///
    /// ```
    /// use aep_core::filter::Filter;
    /// let f = Filter::from_json(r#"{"agent":"a","severity":{"gte":"notice"}}"#)?;
    /// let line = r#"{"aep":"0.1","id":"1","type":"tool.called","time":"t","source":"s","agent":"a","session":"s1","seq":0,"severity":"error","data":{"n":1}}"#;
    /// assert_eq!(f.decide_json(line.as_bytes()), Some(true));
    /// let info = line.replace(r#""severity":"error","#, ""); // absent severity reads as info
    /// assert_eq!(f.decide_json(info.as_bytes()), Some(false));
    /// let escaped = line.replace(r#""agent":"a""#, r#""agent":"\u0061""#);
    /// assert_eq!(f.decide_json(escaped.as_bytes()), None); // parse to decide
    /// # Ok::<(), aep_core::filter::FilterError>(())
    /// ```
    pub fn decide_json(&self, json: &[u8]) -> Option<bool> {
        if self.preds.is_empty() {
            // `{}` matches every event
            return (json.trim_ascii_start().first() == Some(&b'{')).then_some(true);
        }
        let view = EnvelopeView::read(std::str::from_utf8(json).ok()?)?;
        Some(self.matches_view(&view))
    }

    /// Whether this is `{}`, which matches every event.
    ///
    /// ```
    /// use aep_core::filter::Filter;
    /// assert!(Filter::from_json("{}")?.is_empty());
    /// assert!(!Filter::from_json(r#"{"agent":"a"}"#)?.is_empty());
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.wire.is_empty()
    }

    /// The one session this filter names by equality (`"session": "s"`, AEP-0003
    /// §6.2), whatever else it asks: the session a `live=0` pass replays.
    ///
    /// ```
    /// use aep_core::filter::Filter;
    /// assert_eq!(Filter::from_json(r#"{"session":"s1","agent":"a"}"#)?.session(), Some("s1"));
    /// assert_eq!(Filter::from_json(r#"{"session":["s1","s2"]}"#)?.session(), None);
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn session(&self) -> Option<&str> {
        self.wire.get("session").and_then(Value::as_str)
    }

    /// What this filter asks of an event when the session is all it looks at:
    /// `Some(None)` for `{}` (every event), `Some(Some(s))` for `{"session": s}` alone;
    /// `None` when deciding needs the event's other attributes. A relay decides the
    /// first two on a stored event's position without parsing it again.
    ///
    /// ```
    /// use aep_core::filter::Filter;
    /// assert_eq!(Filter::from_json("{}")?.session_only(), Some(None));
    /// assert_eq!(Filter::from_json(r#"{"session":"s1"}"#)?.session_only(), Some(Some("s1")));
    /// assert_eq!(Filter::from_json(r#"{"session":"s1","agent":"a"}"#)?.session_only(), None);
    /// assert_eq!(Filter::from_json(r#"{"session":["s1"]}"#)?.session_only(), None);
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn session_only(&self) -> Option<Option<&str>> {
        match self.wire.len() {
            0 => Some(None),
            1 => self.session().map(Some),
            _ => None,
        }
    }

    /// Decides the filter from an event's session alone, when that is all it looks at
    /// ([`session_only`](Self::session_only)): `Some(verdict)`, or `None` when the
    /// event's other attributes decide. A relay holds each stored event's session in
    /// its framing, so it decides these filters without parsing the event.
    ///
    /// ```
    /// use aep_core::filter::Filter;
    /// let f = Filter::from_json(r#"{"session":"s1"}"#)?;
    /// assert_eq!(f.decide_session(Some("s1")), Some(true));
    /// assert_eq!(f.decide_session(Some("s2")), Some(false));
    /// assert_eq!(f.decide_session(None), Some(false)); // an agent-scoped event
    /// assert_eq!(Filter::all().decide_session(None), Some(true));
    /// assert_eq!(Filter::from_json(r#"{"agent":"a"}"#)?.decide_session(Some("s1")), None);
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn decide_session(&self, session: Option<&str>) -> Option<bool> {
        self.session_only()
            .map(|wanted| wanted.is_none_or(|w| session == Some(w)))
    }

    /// The wire JSON, as read (key order and predicate shapes kept).
    ///
    /// ```
    /// let f = aep_core::filter::Filter::from_json(r#"{"session":"s1","agent":["a","b"]}"#)?;
    /// assert_eq!(f.as_map().keys().collect::<Vec<_>>(), ["session", "agent"]);
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.wire
    }

    /// The wire JSON as a value.
    ///
    /// ```
    /// use serde_json::json;
    /// let wire = json!({"severity": {"gte": "notice"}});
    /// assert_eq!(aep_core::filter::Filter::from_value(&wire)?.to_value(), wire);
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn to_value(&self) -> Value {
        Value::Object(self.wire.clone())
    }

    /// The compact wire JSON text.
    ///
    /// ```
    /// let f: aep_core::filter::Filter = r#"{ "agent" : ["claude-code", "codex"] }"#.parse()?;
    /// assert_eq!(f.to_json(), r#"{"agent":["claude-code","codex"]}"#);
    /// # Ok::<(), aep_core::filter::FilterError>(())
    /// ```
    pub fn to_json(&self) -> String {
        // A map of JSON values with string keys always serializes.
        serde_json::to_string(&self.wire).unwrap_or_default()
    }
}

impl Default for Filter {
    fn default() -> Self {
        Filter::all()
    }
}

/// Two filters are equal when their wire JSON is.
impl PartialEq for Filter {
    fn eq(&self, other: &Self) -> bool {
        self.wire == other.wire
    }
}

impl fmt::Debug for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Filter").field(&self.to_json()).finish()
    }
}

impl fmt::Display for Filter {
    /// The compact wire JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl FromStr for Filter {
    type Err = FilterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Filter::from_json(s)
    }
}

impl TryFrom<&Value> for Filter {
    type Error = FilterError;
    fn try_from(value: &Value) -> Result<Self, Self::Error> {
        Filter::from_value(value)
    }
}

impl Serialize for Filter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.wire.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Filter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match WireTop::deserialize(d)? {
            WireTop::Map(map) => Filter::from_map(map).map_err(de::Error::custom),
            WireTop::Dup(key) => Err(de::Error::custom(FilterError::DuplicateKey(key))),
            WireTop::NotObject(v) => {
                Err(de::Error::custom(FilterError::NotAnObject(json_kind(&v))))
            }
        }
    }
}

/// The top level of a filter as read, before validation: duplicate keys are noticed
/// here because a `Map` would keep only the last one.
enum WireTop {
    Map(Map<String, Value>),
    Dup(String),
    NotObject(Value),
}

impl<'de> Deserialize<'de> for WireTop {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TopVisitor;
        impl<'de> Visitor<'de> for TopVisitor {
            type Value = WireTop;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an attr-match filter (a JSON object)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<WireTop, A::Error> {
                let mut map = Map::new();
                let mut dup = None;
                while let Some(key) = access.next_key::<String>()? {
                    let value: Value = access.next_value()?;
                    if map.contains_key(&key) {
                        dup.get_or_insert(key);
                    } else {
                        map.insert(key, value);
                    }
                }
                Ok(dup.map_or(WireTop::Map(map), WireTop::Dup))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<WireTop, E> {
                Ok(WireTop::NotObject(Value::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<WireTop, E> {
                Ok(WireTop::NotObject(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<WireTop, E> {
                Ok(WireTop::NotObject(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<WireTop, E> {
                Ok(WireTop::NotObject(v.into()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<WireTop, E> {
                Ok(WireTop::NotObject(v.into()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<WireTop, E> {
                Ok(WireTop::NotObject(Value::Null))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<WireTop, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(WireTop::NotObject(Value::Array(Vec::new())))
            }
        }
        d.deserialize_any(TopVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(extra: &str) -> Event {
        format!(
            r#"{{"aep":"0.1","id":"1","type":"tool.completed","time":"t","source":"s","agent":"a"{extra}}}"#
        )
        .parse()
        .unwrap()
    }

    #[test]
    fn errors_name_key_or_predicate() {
        let cases: [(Value, FilterError); 12] = [
            (json!({"seq": 1}), FilterError::NotFilterable("seq".into())),
            (
                json!({"traceparent": "x"}),
                FilterError::NotFilterable("traceparent".into()),
            ),
            (
                json!({"NotAnAttr": 1}),
                FilterError::UnknownKey("NotAnAttr".into()),
            ),
            (
                json!({"abcdefghijklmnopqrstu": 1}),
                FilterError::UnknownKey("abcdefghijklmnopqrstu".into()),
            ),
            (json!({"type": ["tool.*", "*"]}), FilterError::BareStar),
            (
                json!({"type": "tool*"}),
                FilterError::BadPattern("tool*".into()),
            ),
            (
                json!({"type": "tool.*.done"}),
                FilterError::BadPattern("tool.*.done".into()),
            ),
            (json!({"type": ".*"}), FilterError::BadPattern(".*".into())),
            (
                json!({"severity": "loud"}),
                FilterError::BadLevel {
                    key: "severity",
                    value: "loud".into(),
                    expected: SEVERITY_NAMES,
                },
            ),
            (
                json!({"capture": {"gte": "none"}}),
                FilterError::WrongShape {
                    key: "capture".into(),
                    expected: "a level name or an array of level names",
                },
            ),
            (
                json!({"severity": {}}),
                FilterError::WrongShape {
                    key: "severity".into(),
                    expected: "a comparison with `gte` and/or `lte`",
                },
            ),
            (
                json!({"acme": 1.5}),
                FilterError::WrongShape {
                    key: "acme".into(),
                    expected:
                        "a string, integer or boolean, or a non-empty array of them (AEP-0001 §5.4)",
                },
            ),
        ];
        for (filter, expected) in cases {
            let err = Filter::from_value(&filter).unwrap_err();
            assert_eq!(err, expected, "{filter}");
            assert!(!err.to_string().is_empty());
        }
        for bad in [
            json!({"epoch": -1}),
            json!({"epoch": "0"}),
            json!({"session": 5}),
            json!({"type": [1]}),
            json!({"agent": null}),
        ] {
            assert!(
                matches!(
                    Filter::from_value(&bad),
                    Err(FilterError::WrongShape { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            Filter::from_json("{"),
            Err(FilterError::Syntax(_))
        ));
        assert_eq!(
            Filter::from_json("[1,2]").unwrap_err(),
            FilterError::NotAnObject("an array")
        );
        assert_eq!(
            Filter::from_json("null").unwrap_err(),
            FilterError::NotAnObject("null")
        );
    }

    #[test]
    fn levels_and_defaults() {
        let f =
            Filter::from_json(r#"{"severity":["error","critical"],"capture":"metadata"}"#).unwrap();
        assert!(!f.matches(&event("")));
        assert!(f.matches(&event(r#","severity":"error""#)));
        assert!(!f.matches(&event(r#","severity":"error","capture":"full""#)));
        let lte = Filter::from_json(r#"{"severity":{"lte":"info"}}"#).unwrap();
        assert!(lte.matches(&event("")));
        assert!(!lte.matches(&event(r#","severity":"notice""#)));
    }

    #[test]
    fn extension_values_compare_exactly() {
        let f = Filter::from_json(r#"{"acmen":[7,true,"x\"y"]}"#).unwrap();
        assert!(f.matches(&event(r#","acmen":7"#)));
        assert!(f.matches(&event(r#","acmen":true"#)));
        assert!(f.matches(&event(r#","acmen":"x\"y""#)));
        assert!(!f.matches(&event(r#","acmen":"7""#)), "no coercion");
        assert!(!f.matches(&event(r#","acmen":7.0"#)));
        assert!(!f.matches(&event(r#","acmen":false"#)));
        assert!(!f.matches(&event("")));
        assert!(f.matches_value(&json!({"acmen": 7})));
        assert!(!f.matches_value(&json!({"acmen": [7]})));
    }

    #[test]
    fn type_patterns_are_prefixes_with_a_dot() {
        let f = Filter::from_json(r#"{"type":["attention.*","x.acme-co.*"]}"#).unwrap();
        let t = |ty: &str| f.matches_value(&json!({ "type": ty }));
        assert!(t("attention.requested"));
        assert!(t("attention.a.b"));
        assert!(!t("attention"));
        assert!(!t("attentionx.requested"));
        assert!(t("x.acme-co.tool.synced"));
    }

    #[test]
    fn large_inclusion_sets_hash() {
        let many: Vec<String> = (0..40).map(|i| format!("agent{i}")).collect();
        let f = Filter::from_value(&json!({ "agent": many })).unwrap();
        assert!(f.matches_value(&json!({"agent": "agent33"})));
        assert!(!f.matches_value(&json!({"agent": "agent40"})));
    }

    #[test]
    fn writes_back_what_it_read() {
        let text = r#"{"type":"tool.completed","severity":{"lte":"error","gte":"notice"},"acmeregion":["eu-1",3,false],"epoch":[0,1]}"#;
        let f: Filter = text.parse().unwrap();
        assert_eq!(f.to_json(), text);
        assert_eq!(serde_json::to_string(&f).unwrap(), text);
        let back: Filter = serde_json::from_str(text).unwrap();
        assert_eq!(back, f);
        assert!(serde_json::from_str::<Filter>(r#"{"seq":1}"#).is_err());
    }
}
