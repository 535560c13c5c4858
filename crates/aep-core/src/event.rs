//! The AEP-0001 §5 envelope as a Rust value.
//!
//! [`Event`] keeps everything a relay must forward unchanged (AEP-0004 §4.4, AEP-0001
//! §5.4): the order of the attributes as they arrived, extension attributes, and the
//! exact bytes of `data` (number spellings such as `0.5510` included). Reading a compact
//! JSON line and writing it back gives the same bytes.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::level::{Capture, Severity};

mod scan;
mod view;

pub use view::EnvelopeView;

/// The envelope version this crate writes (AEP-0001 §5.1 #1).
///
/// ```
/// assert_eq!(aep_core::Event::new("1", "agent.idle", "t", "s", "a").aep(), aep_core::AEP_VERSION);
/// ```
pub const AEP_VERSION: &str = "0.1";

/// The sixteen core context attribute names, in AEP-0001 §5.1 table order, followed by
/// `data`. Extension attributes may use none of these names (§5.4).
///
/// ```
/// use aep_core::event::{check_extension_name, CORE_ATTRIBUTES};
/// assert_eq!(CORE_ATTRIBUTES.len(), 17);
/// assert!(CORE_ATTRIBUTES.iter().all(|name| check_extension_name(name).is_err()));
/// ```
pub const CORE_ATTRIBUTES: [&str; 17] = [
    "aep",
    "id",
    "type",
    "subject",
    "time",
    "source",
    "agent",
    "session",
    "run",
    "step",
    "seq",
    "epoch",
    "cause",
    "traceparent",
    "severity",
    "capture",
    "data",
];

/// Where an attribute sits in the wire order. Core attributes are indexed as in
/// [`CORE_ATTRIBUTES`] (named in [`slot`]); `EXT` stands for "the next extension
/// attribute".
pub(crate) type Slot = u8;
const DATA: Slot = 16;
const EXT: Slot = 17;

/// The core attributes' slots, by name: the reader, the writer, the setters and the
/// envelope rules all address attributes by these.
pub(crate) mod slot {
    use super::Slot;
    pub(crate) const AEP: Slot = 0;
    pub(crate) const ID: Slot = 1;
    pub(crate) const TYPE: Slot = 2;
    pub(crate) const SUBJECT: Slot = 3;
    pub(crate) const TIME: Slot = 4;
    pub(crate) const SOURCE: Slot = 5;
    pub(crate) const AGENT: Slot = 6;
    pub(crate) const SESSION: Slot = 7;
    pub(crate) const RUN: Slot = 8;
    pub(crate) const STEP: Slot = 9;
    pub(crate) const SEQ: Slot = 10;
    pub(crate) const EPOCH: Slot = 11;
    pub(crate) const CAUSE: Slot = 12;
    pub(crate) const TRACEPARENT: Slot = 13;
    pub(crate) const SEVERITY: Slot = 14;
    pub(crate) const CAPTURE: Slot = 15;
}

/// One AEP event: the envelope of AEP-0001 §5.
///
/// Build one with [`Event::new`] and the `with_*` methods, or read one with
/// [`Event::from_slice`] / [`str::parse`]. Accessors apply the defaults of §5.1
/// (`epoch` 0, `severity` info, `capture` metadata); absent optional attributes are never
/// written as `null`.
///
/// ```
/// use aep_core::{Event, Severity};
///
/// let line = r#"{"aep":"0.1","id":"01J","type":"run.started","time":"2026-07-03T10:14:01.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":1,"data":{"trigger":"user"}}"#;
/// let event: Event = line.parse()?;
/// assert_eq!(event.event_type(), "run.started");
/// assert_eq!(event.seq(), Some(1));
/// assert_eq!(event.epoch(), 0); // default applied
/// assert_eq!(event.severity(), Severity::Info);
/// assert_eq!(event.to_json(), line); // byte-identical round trip
/// # Ok::<(), aep_core::EventParseError>(())
/// ```
#[derive(Clone)]
pub struct Event {
    /// The text of the twelve string attributes (`aep` through `step`, `cause`,
    /// `traceparent`), back to back;
    /// [`Span`]s say where each one is. One allocation holds them all: a control round
    /// trip builds or parses an event six times (AEP-0004 §3), and one allocation per
    /// long attribute (ids, `source`, `cause`) was a fifth of the allocator's work.
    text: String,
    spans: [Span; STRING_SLOTS],
    seq: Option<u64>,
    epoch: Option<u64>,
    severity: Option<Severity>,
    capture: Option<Capture>,
    data: Option<Box<RawValue>>,
    extensions: Vec<(String, Box<RawValue>)>,
    /// The wire order of the attributes when it differs from the canonical one (core
    /// attributes in §5.1 order, then extensions, then `data`); `None` otherwise, so
    /// the common case costs no allocation.
    order: Option<Box<[Slot]>>,
}

/// How many core attributes are strings: slots `aep`..`step`, `cause`, `traceparent`.
const STRING_SLOTS: usize = 12;

/// Where a string attribute's text sits in [`Event::text`]; [`Span::ABSENT`] when the
/// attribute is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    const ABSENT: Span = Span {
        start: u32::MAX,
        end: u32::MAX,
    };

    /// The text this span addresses in `text`; `None` for [`Span::ABSENT`], which lies
    /// past the end of any text.
    #[inline]
    fn text(self, text: &str) -> Option<&str> {
        text.get(self.start as usize..self.end as usize)
    }
}

/// The index in [`Event::spans`] of a string attribute's slot; `None` for every other
/// slot (`seq`, `epoch`, `severity`, `capture`, `data`, extensions), so that a string
/// access through a wrong slot finds nothing instead of another attribute's text.
const fn span_index(slot: Slot) -> Option<usize> {
    match slot {
        slot::AEP..=slot::STEP => Some(slot as usize),
        slot::CAUSE | slot::TRACEPARENT => Some(slot as usize - 2),
        _ => None,
    }
}

// The span table covers the string slots exactly, each at its own index: checked when
// compiling, as a renumbered slot would otherwise read as absent, and be dropped when
// written, without a panic or a failing test.
const _: () = {
    let mut seen = [false; STRING_SLOTS];
    let mut strings = 0;
    let mut s: Slot = 0;
    while s <= EXT {
        if let Some(i) = span_index(s) {
            assert!(i < STRING_SLOTS && !seen[i]);
            seen[i] = true;
            strings += 1;
        }
        s += 1;
    }
    assert!(strings == STRING_SLOTS);
    let mut others = [
        slot::SEQ,
        slot::EPOCH,
        slot::SEVERITY,
        slot::CAPTURE,
        DATA,
        EXT,
    ];
    let mut k = 0;
    while k < others.len() {
        assert!(span_index(others[k]).is_none());
        others[k] = 0;
        k += 1;
    }
};

/// A line or value that is not an AEP envelope this crate can represent: not a JSON
/// object, a required attribute missing, an attribute of the wrong JSON type, a duplicate
/// attribute, or malformed JSON.
///
/// For a report of *every* problem with stable rule ids, validate the JSON value instead
/// (the `validate` module).
///
/// ```
/// let err = aep_core::Event::from_slice(br#"{"aep":"0.1"}"#).unwrap_err();
/// assert!(!err.is_syntax()); // JSON, but not an envelope
/// assert!(err.to_string().contains("id"));
/// ```
#[derive(Debug, thiserror::Error)]
#[error("not a valid AEP event: {source}")]
pub struct EventParseError {
    #[from]
    source: serde_json::Error,
}

impl EventParseError {
    /// The 1-based line of the input where parsing stopped (0 when unknown).
    ///
    /// ```
    /// let err = aep_core::Event::from_slice(b"{\n  \"aep\": }").unwrap_err();
    /// assert_eq!(err.line(), 2);
    /// ```
    pub fn line(&self) -> usize {
        self.source.line()
    }

    /// The 1-based column of the input where parsing stopped (0 when unknown).
    ///
    /// ```
    /// let err = aep_core::Event::from_slice(b"{,}").unwrap_err();
    /// assert_eq!(err.column(), 2);
    /// ```
    pub fn column(&self) -> usize {
        self.source.column()
    }

    /// Whether the input was not JSON at all (as opposed to JSON that is not an envelope).
    ///
    /// ```
    /// assert!(aep_core::Event::from_slice(b"{\"aep\":").unwrap_err().is_syntax());
    /// assert!(!aep_core::Event::from_slice(b"[]").unwrap_err().is_syntax());
    /// ```
    pub fn is_syntax(&self) -> bool {
        matches!(
            self.source.classify(),
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof
        )
    }
}

/// A refused extension attribute (AEP-0001 §5.4): the emitting library must refuse it
/// rather than emit a non-conformant envelope.
///
/// ```
/// use aep_core::{Event, ExtensionError};
/// let mut e = Event::new("1", "agent.idle", "t", "s", "a");
/// assert_eq!(e.set_extension("seq", 1.into()), Err(ExtensionError::CoreName("seq".into())));
/// assert_eq!(e.set_extension("acme_x", 1.into()), Err(ExtensionError::BadName("acme_x".into())));
/// assert_eq!(e.set_extension("acmex", 1.5.into()), Err(ExtensionError::NonScalar("acmex".into())));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtensionError {
    /// The name collides with a core attribute; on the wire it would be
    /// indistinguishable from the attribute itself.
    #[error("extension attribute `{0}` collides with a core attribute name (AEP-0001 §5.4); pick a vendor-prefixed name")]
    CoreName(String),
    /// The name does not match `[a-z0-9]{{1,20}}`.
    #[error("extension attribute name `{0}` must be 1 to 20 lowercase ASCII letters or digits (AEP-0001 §5.4)")]
    BadName(String),
    /// The value is not a JSON string, integer or boolean.
    #[error(
        "extension attribute `{0}` must carry a string, integer or boolean value (AEP-0001 §5.4)"
    )]
    NonScalar(String),
}

/// Checks an extension attribute name against AEP-0001 §5.4.
///
/// ```
/// use aep_core::event::check_extension_name;
/// assert!(check_extension_name("acmeregion").is_ok());
/// assert!(check_extension_name("session").is_err()); // core name
/// assert!(check_extension_name("Acme-Region").is_err()); // ill-formed
/// ```
pub fn check_extension_name(name: &str) -> Result<(), ExtensionError> {
    if CORE_ATTRIBUTES.contains(&name) {
        return Err(ExtensionError::CoreName(name.to_owned()));
    }
    let well_formed = (1..=20).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if well_formed {
        Ok(())
    } else {
        Err(ExtensionError::BadName(name.to_owned()))
    }
}

/// Checks an extension attribute value against AEP-0001 §5.4 (string, integer or
/// boolean).
///
/// ```
/// use aep_core::event::is_extension_value;
/// use serde_json::json;
/// assert!(is_extension_value(&json!("eu-1")) && is_extension_value(&json!(-3)) && is_extension_value(&json!(true)));
/// assert!(!is_extension_value(&json!(0.5)) && !is_extension_value(&json!(null)) && !is_extension_value(&json!({})));
/// ```
pub fn is_extension_value(value: &Value) -> bool {
    match value {
        Value::String(_) | Value::Bool(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

fn raw(value: &Value) -> Box<RawValue> {
    // Serializing a `Value` cannot fail: its map keys are always strings.
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| null_raw())
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).unwrap_or_else(|_| unreachable_raw())
}

#[cold]
fn unreachable_raw() -> Box<RawValue> {
    // "null" is valid JSON; this arm exists only so no path in this module can panic.
    Box::default()
}

impl Event {
    /// A new event with the five required attributes besides `aep` (which is
    /// [`AEP_VERSION`]). Everything else is absent until set.
    ///
    /// An event's string attributes share one buffer addressed by 32-bit offsets: text
    /// past 4 GiB in all cannot be held, and an attribute that would end past it reads
    /// as empty (no relay accepts a line that large).
    ///
    /// ```
    /// use aep_core::Event;
    /// let e = Event::new("01J", "agent.heartbeat", "2026-07-03T10:00:00.000Z", "aep://h/agent/a", "a");
    /// assert_eq!(e.session(), None);
    /// assert_eq!(e.to_json(), r#"{"aep":"0.1","id":"01J","type":"agent.heartbeat","time":"2026-07-03T10:00:00.000Z","source":"aep://h/agent/a","agent":"a"}"#);
    /// ```
    pub fn new(
        id: impl AsRef<str>,
        event_type: impl AsRef<str>,
        time: impl AsRef<str>,
        source: impl AsRef<str>,
        agent: impl AsRef<str>,
    ) -> Event {
        Event::from_strs(
            id.as_ref(),
            event_type.as_ref(),
            time.as_ref(),
            source.as_ref(),
            agent.as_ref(),
        )
    }

    /// [`new`](Self::new) from borrowed text.
    pub(crate) fn from_strs(
        id: &str,
        event_type: &str,
        time: &str,
        source: &str,
        agent: &str,
    ) -> Event {
        // Room for the attributes a builder usually adds next (`session`, `cause`, ...),
        // so that they do not grow the text again.
        const ROOM: usize = 64;
        let len = AEP_VERSION.len() + id.len() + event_type.len() + time.len();
        let mut event = Event::with_capacity(len + source.len() + agent.len() + ROOM);
        event.append(slot::AEP, AEP_VERSION);
        event.append(slot::ID, id);
        event.append(slot::TYPE, event_type);
        event.append(slot::TIME, time);
        event.append(slot::SOURCE, source);
        event.append(slot::AGENT, agent);
        event
    }

    /// An event with no attribute at all yet (not a valid envelope until the required
    /// ones are put), its text sized for `capacity` bytes.
    fn with_capacity(capacity: usize) -> Event {
        Event {
            text: String::with_capacity(capacity),
            spans: [Span::ABSENT; STRING_SLOTS],
            seq: None,
            epoch: None,
            severity: None,
            capture: None,
            data: None,
            extensions: Vec::new(),
            order: None,
        }
    }

    /// The text of string attribute `slot`, `None` when absent.
    #[inline]
    fn str_at(&self, slot: Slot) -> Option<&str> {
        self.text_of(*self.spans.get(span_index(slot)?)?)
    }

    /// The text `span` addresses in this event.
    #[inline]
    fn text_of(&self, span: Span) -> Option<&str> {
        span.text(&self.text)
    }

    /// A required string attribute's text: empty only while it is unset (an event
    /// being read, a command being built) or when it is empty.
    #[inline]
    fn required(&self, slot: Slot) -> &str {
        self.str_at(slot).unwrap_or_default()
    }

    /// Sets string attribute `slot` to `value` (`None`: absent), appending its text.
    /// The old value's text stays behind unless it was the last in the text; once such
    /// leftovers outweigh the live text, the text is rebuilt, so that an event set over
    /// and over does not grow without bound.
    fn put(&mut self, slot: Slot, value: Option<&str>) {
        let Some(at) = span_index(slot) else {
            return;
        };
        let old = self.spans.get(at).copied();
        let replaced = match old {
            Some(old) if old != Span::ABSENT => {
                if old.end as usize == self.text.len() {
                    self.text.truncate(old.start as usize);
                }
                true
            }
            _ => false,
        };
        match value {
            Some(v) => self.append(slot, v),
            None => {
                if let Some(cell) = self.spans.get_mut(at) {
                    *cell = Span::ABSENT;
                }
            }
        }
        // Only a replaced or removed value can leave text behind; checking there keeps
        // the text within twice the live text (plus a little) at all times.
        if replaced && self.text.len() > 2 * self.live_len() + 64 {
            self.compact();
        }
    }

    /// Appends `value` as string attribute `slot`'s text, whatever it was before.
    #[inline]
    fn append(&mut self, slot: Slot, value: &str) {
        if let Some(at) = span_index(slot) {
            self.push_span(at, value);
        }
    }

    /// Appends `value` to the text as the span at index `at`.
    #[inline]
    fn push_span(&mut self, at: usize, value: &str) {
        let start = self.text.len();
        let span = match (u32::try_from(start), u32::try_from(start + value.len())) {
            // Empty text sits at 0, not at the end, where truncating the last value
            // would leave it past the end.
            _ if value.is_empty() => Span { start: 0, end: 0 },
            (Ok(start), Ok(end)) if end != u32::MAX => {
                self.text.push_str(value);
                Span { start, end }
            }
            // Attribute text past 4 GiB cannot be addressed: the attribute reads as
            // empty instead of panicking (no line that large is ever read).
            _ => Span { start: 0, end: 0 },
        };
        if let Some(cell) = self.spans.get_mut(at) {
            *cell = span;
        }
    }

    /// How many bytes of the text belong to present attributes.
    fn live_len(&self) -> usize {
        self.spans
            .iter()
            .filter(|s| **s != Span::ABSENT)
            .map(|s| s.end.saturating_sub(s.start) as usize)
            .sum()
    }

    /// Rebuilds the text with only the present attributes' text.
    #[cold]
    fn compact(&mut self) {
        let live = self.live_len();
        let old = std::mem::replace(&mut self.text, String::with_capacity(live));
        let spans = std::mem::replace(&mut self.spans, [Span::ABSENT; STRING_SLOTS]);
        for (at, span) in spans.into_iter().enumerate() {
            if let Some(v) = span.text(&old) {
                self.push_span(at, v);
            }
        }
    }

    /// Reads one event from JSON bytes.
    ///
    /// ```
    /// let e = aep_core::Event::from_slice(br#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#)?;
    /// assert_eq!(e.id(), "1");
    /// assert!(aep_core::Event::from_slice(b"[1]").is_err());
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Event, EventParseError> {
        // Checking UTF-8 once for the whole line is far cheaper than serde_json's
        // per-string check on a slice; only invalid input takes the slice path, for its
        // error position.
        match std::str::from_utf8(bytes) {
            Ok(text) => text.parse(),
            Err(_) => Ok(serde_json::from_slice(bytes)?),
        }
    }

    /// Reads one event from a JSON value (which loses nothing but the original number
    /// spellings inside `data`).
    ///
    /// ```
    /// let v = serde_json::json!({"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{"n":0.5510}});
    /// let e = aep_core::Event::from_value(&v)?;
    /// assert_eq!(e.to_value(), v);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn from_value(value: &Value) -> Result<Event, EventParseError> {
        // Through text, because `RawValue` only deserializes from serde_json's own reader.
        let text = serde_json::to_string(value)?;
        Ok(serde_json::from_str(&text)?)
    }

    /// The compact JSON line of this event, attributes in the order they arrived.
    ///
    /// ```
    /// let line = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#;
    /// let e: aep_core::Event = line.parse()?;
    /// assert_eq!(e.to_json(), line);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256);
        self.write_json(&mut out);
        // The writer only emits UTF-8 (strings come from `String`, raw values were
        // validated JSON text).
        String::from_utf8(out).unwrap_or_default()
    }

    /// Appends the compact JSON of this event to `out`.
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "agent.idle", "t", "s", "a");
    /// let mut out = Vec::new();
    /// e.write_json(&mut out);
    /// assert_eq!(out, e.to_json().into_bytes());
    /// ```
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        let mut first = true;
        let _ = self.walk(|name, core, value| -> Result<(), ()> {
            if !first {
                out.push(b',');
            }
            first = false;
            if core {
                out.push(b'"');
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":");
            } else {
                write_json_str(out, name);
                out.push(b':');
            }
            match value {
                Attr::Str(v) => write_json_str(out, v),
                Attr::Number(v) => out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
                Attr::Raw(v) => out.extend_from_slice(v.get().as_bytes()),
            }
            Ok(())
        });
        out.push(b'}');
    }

    /// This event as a JSON value.
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "agent.idle", "t", "s", "a");
    /// assert_eq!(e.to_value()["type"], "agent.idle");
    /// ```
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// `aep`: the envelope version.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.aep(), "0.1");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn aep(&self) -> &str {
        self.required(slot::AEP)
    }
    /// `id`: unique per `source`; consumers dedupe on `(source, id)` (AEP-0001 §7).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.id(), "01J");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn id(&self) -> &str {
        self.required(slot::ID)
    }
    /// `type`, e.g. `tool.completed` or `x.acme.tool.synced`.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.event_type(), "tool.completed");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn event_type(&self) -> &str {
        self.required(slot::TYPE)
    }
    /// `subject`: the acted-upon entity.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.subject(), Some("t_91"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.subject(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn subject(&self) -> Option<&str> {
        self.str_at(slot::SUBJECT)
    }
    /// `time`: RFC 3339; display metadata only, never ordering authority.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.time(), "2026-07-03T10:15:04.221Z");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn time(&self) -> &str {
        self.required(slot::TIME)
    }
    /// `source`: the emitting agent or session, as a URI.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.source(), "aep://h/agent/a/session/s");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn source(&self) -> &str {
        self.required(slot::SOURCE)
    }
    /// `agent`: the stable logical identity of the emitter.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.agent(), "a");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn agent(&self) -> &str {
        self.required(slot::AGENT)
    }
    /// `session`, absent on agent-scoped events.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.session(), Some("s"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.session(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn session(&self) -> Option<&str> {
        self.str_at(slot::SESSION)
    }
    /// `run`.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.run(), Some("r1"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.run(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn run(&self) -> Option<&str> {
        self.str_at(slot::RUN)
    }
    /// `step`.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.step(), Some("p1"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.step(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn step(&self) -> Option<&str> {
        self.str_at(slot::STEP)
    }
    /// `seq`, absent on agent-scoped and foreign-emitter events (AEP-0001 §5.2).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.seq(), Some(7));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.seq(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }
    /// `epoch`, defaulting to 0.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.epoch(), 2);
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.epoch(), 0);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        self.epoch.unwrap_or(0)
    }
    /// `epoch` as it is on the wire (`None` when absent).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.epoch_attr(), Some(2));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.epoch_attr(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn epoch_attr(&self) -> Option<u64> {
        self.epoch
    }
    /// `cause`: the `id` of the causing event.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.cause(), Some("01I"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.cause(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn cause(&self) -> Option<&str> {
        self.str_at(slot::CAUSE)
    }
    /// `traceparent`: W3C Trace Context.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.traceparent(), Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.traceparent(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn traceparent(&self) -> Option<&str> {
        self.str_at(slot::TRACEPARENT)
    }
    /// `severity`, defaulting to [`Severity::Info`].
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.severity(), aep_core::Severity::Notice);
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.severity(), aep_core::Severity::Info);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn severity(&self) -> Severity {
        self.severity.unwrap_or_default()
    }
    /// `severity` as it is on the wire.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.severity_attr(), Some(aep_core::Severity::Notice));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.severity_attr(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn severity_attr(&self) -> Option<Severity> {
        self.severity
    }
    /// `capture`, defaulting to [`Capture::Metadata`].
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.capture(), aep_core::Capture::Redacted);
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.capture(), aep_core::Capture::Metadata);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn capture(&self) -> Capture {
        self.capture.unwrap_or_default()
    }
    /// `capture` as it is on the wire.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.capture_attr(), Some(aep_core::Capture::Redacted));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.capture_attr(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn capture_attr(&self) -> Option<Capture> {
        self.capture
    }
    /// `data` exactly as received (or as last set).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{"load":0.5510}}"#.parse()?;
    /// assert_eq!(e.data_raw().map(|r| r.get()), Some(r#"{"load":0.5510}"#)); // spelling kept
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn data_raw(&self) -> Option<&RawValue> {
        self.data.as_deref()
    }
    /// `data` as a JSON value (`None` when absent).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.data().map(|d| d["duration_ms"].clone()), Some(serde_json::json!(12)));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.data(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn data(&self) -> Option<Value> {
        self.data
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }
    /// `data` decoded into a payload type, e.g. one of the generated payload types.
    ///
    /// An absent `data` decodes as an empty object, so payload types whose fields are
    /// all optional still decode.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// let p: aep_core::payload::ToolCompleted = e.payload()?;
    /// assert_eq!(p.tool.name, "Bash");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn payload<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match self.data.as_deref() {
            Some(raw) => serde_json::from_str(raw.get()),
            None => serde_json::from_str("{}"),
        }
    }

    /// `data` decoded by `type` (AEP-0002 §4-5): the generated payload type of a
    /// registered type, or [`Payload::Other`](crate::payload::Payload::Other) holding
    /// the JSON as it is for unregistered and vendor types.
    ///
    /// ```
    /// use aep_core::payload::Payload;
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","session":"s1","seq":0,"data":{"trigger":"user"}}"#.parse()?;
    /// let Payload::RunStarted(p) = e.typed_payload()? else { panic!("run.started is registered") };
    /// assert_eq!(p.trigger.map(|t| t.as_str()), Some("user"));
    ///
    /// let vendor: aep_core::Event = r#"{"aep":"0.1","id":"2","type":"x.acme.tool.synced","time":"t","source":"s","agent":"a","data":{"n":1}}"#.parse()?;
    /// assert_eq!(vendor.typed_payload()?, Payload::Other(serde_json::json!({"n": 1})));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn typed_payload(&self) -> Result<crate::payload::Payload, crate::payload::PayloadError> {
        crate::payload::Payload::from_event(self)
    }

    /// The extension attributes (AEP-0001 §5.4) in wire order, values as raw JSON.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// let names: Vec<&str> = e.extensions().map(|(name, _)| name).collect();
    /// assert_eq!(names, ["acmeregion"]);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn extensions(&self) -> impl ExactSizeIterator<Item = (&str, &RawValue)> + '_ {
        self.extensions.iter().map(|(k, v)| (k.as_str(), &**v))
    }

    /// One extension attribute's value as JSON.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","acmeregion":"eu-1"}"#.parse()?;
    /// assert_eq!(e.extension("acmeregion"), Some(serde_json::json!("eu-1")));
    /// assert_eq!(e.extension("other"), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn extension(&self, name: &str) -> Option<Value> {
        self.extension_raw(name)
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// One extension attribute's value as raw JSON.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.extension_raw("acmeregion").map(|r| r.get()), Some(r#""eu-1""#));
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    #[inline]
    pub fn extension_raw(&self, name: &str) -> Option<&RawValue> {
        self.extensions
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| &**v)
    }

    /// One extension attribute's value when it is a JSON string.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.extension_str("acmeregion"), Some("eu-1"));
    /// assert_eq!(e.extension_str("acmezone"), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn extension_str(&self, name: &str) -> Option<&str> {
        let raw = self.extension_raw(name)?.get();
        // Cheap path for strings without escapes, which is what extension values are.
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        (!inner.contains('\\')).then_some(inner)
    }

    /// Sets an extension attribute, refusing what AEP-0001 §5.4 forbids. Replaces an
    /// existing value in place (keeping its position).
    ///
    /// ```
    /// use aep_core::Event;
    /// let mut e = Event::new("1", "agent.idle", "t", "s", "a");
    /// e.set_extension("acmeregion", "eu-1".into())?;
    /// assert!(e.set_extension("seq", 1.into()).is_err());
    /// assert!(e.set_extension("acmelist", serde_json::json!([1])).is_err());
    /// # Ok::<(), aep_core::ExtensionError>(())
    /// ```
    pub fn set_extension(&mut self, name: &str, value: Value) -> Result<(), ExtensionError> {
        check_extension_name(name)?;
        if !is_extension_value(&value) {
            return Err(ExtensionError::NonScalar(name.to_owned()));
        }
        let value = raw(&value);
        match self.extensions.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v = value,
            None => {
                self.extensions.push((name.to_owned(), value));
                if let Some(order) = self.order.take() {
                    let mut order = order.into_vec();
                    let at = order.iter().position(|&s| s == DATA).unwrap_or(order.len());
                    order.insert(at, EXT);
                    self.order = Some(order.into_boxed_slice());
                }
            }
        }
        Ok(())
    }

    /// Removes an extension attribute, returning whether it was present.
    ///
    /// ```
    /// let mut e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","acmeregion":"eu-1"}"#.parse()?;
    /// assert!(e.remove_extension("acmeregion"));
    /// assert!(!e.remove_extension("acmeregion"));
    /// assert_eq!(e.extensions().len(), 0);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn remove_extension(&mut self, name: &str) -> bool {
        let Some(pos) = self.extensions.iter().position(|(k, _)| k == name) else {
            return false;
        };
        self.extensions.remove(pos);
        if let Some(order) = self.order.take() {
            let mut order = order.into_vec();
            if let Some(at) = order.iter().enumerate().filter(|(_, &s)| s == EXT).nth(pos) {
                order.remove(at.0);
            }
            self.order = Some(order.into_boxed_slice());
        }
        true
    }

    /// Sets `data` from a JSON value (`Value::Null` removes it).
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_data(serde_json::json!({"trigger": "user"}));
    /// assert!(e.to_json().ends_with(r#""data":{"trigger":"user"}}"#));
    /// e.set_data(serde_json::Value::Null);
    /// assert_eq!(e.data(), None);
    /// ```
    pub fn set_data(&mut self, data: Value) {
        self.set_slot_present(DATA, !data.is_null());
        self.data = (!data.is_null()).then(|| raw(&data));
    }

    /// Sets `data` from raw JSON text kept verbatim.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_data_raw(Some(serde_json::value::RawValue::from_string(r#"{"n":1.50}"#.into())?));
    /// assert!(e.to_json().ends_with(r#""data":{"n":1.50}}"#));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn set_data_raw(&mut self, data: Option<Box<RawValue>>) {
        self.set_slot_present(DATA, data.is_some());
        self.data = data;
    }

    /// Sets `data` from a serializable payload (e.g. a generated payload type).
    ///
    /// ```
    /// use aep_core::payload::{RunStarted, RunStartedTrigger};
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_payload(&RunStarted { trigger: Some(RunStartedTrigger::User), ..Default::default() })?;
    /// assert_eq!(e.data(), Some(serde_json::json!({"trigger": "user"})));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn set_payload<T: Serialize>(&mut self, payload: &T) -> Result<(), serde_json::Error> {
        let raw = serde_json::value::to_raw_value(payload)?;
        self.set_data_raw(Some(raw));
        Ok(())
    }

    /// Sets `capture` (`None` removes the attribute).
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_capture(Some(aep_core::Capture::Full));
    /// assert!(e.to_json().contains(r#""capture":"full""#));
    /// e.set_capture(None);
    /// assert_eq!(e.capture(), aep_core::Capture::Metadata);
    /// ```
    pub fn set_capture(&mut self, capture: Option<Capture>) {
        self.set_slot_present(slot::CAPTURE, capture.is_some());
        self.capture = capture;
    }

    /// Sets `severity` (`None` removes the attribute).
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_severity(Some(aep_core::Severity::Error));
    /// assert_eq!(e.severity(), aep_core::Severity::Error);
    /// e.set_severity(None);
    /// assert!(!e.to_json().contains("severity"));
    /// ```
    pub fn set_severity(&mut self, severity: Option<Severity>) {
        self.set_slot_present(slot::SEVERITY, severity.is_some());
        self.severity = severity;
    }

    /// Sets `id`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_id("01K");
    /// assert_eq!(e.id(), "01K");
    /// ```
    pub fn set_id(&mut self, id: impl AsRef<str>) {
        self.put(slot::ID, Some(id.as_ref()));
    }

    /// Sets `time`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_time("2026-07-03T10:00:00.000Z");
    /// assert_eq!(e.time(), "2026-07-03T10:00:00.000Z");
    /// ```
    pub fn set_time(&mut self, time: impl AsRef<str>) {
        self.put(slot::TIME, Some(time.as_ref()));
    }

    /// Sets `source`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_source("aep://h/agent/b");
    /// assert_eq!(e.source(), "aep://h/agent/b");
    /// ```
    pub fn set_source(&mut self, source: impl AsRef<str>) {
        self.put(slot::SOURCE, Some(source.as_ref()));
    }

    /// Sets `subject`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_subject(Some("t_1".into()));
    /// assert_eq!(e.subject(), Some("t_1"));
    /// e.set_subject(None);
    /// assert_eq!(e.subject(), None);
    /// ```
    pub fn set_subject(&mut self, v: Option<String>) {
        self.set_str(slot::SUBJECT, v.as_deref());
    }
    /// Sets `session`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_session(Some("s1".into()));
    /// assert_eq!(e.session(), Some("s1"));
    /// e.set_session(None);
    /// assert_eq!(e.session(), None);
    /// ```
    pub fn set_session(&mut self, v: Option<String>) {
        self.set_str(slot::SESSION, v.as_deref());
    }
    /// Sets `run`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_run(Some("r1".into()));
    /// assert_eq!(e.run(), Some("r1"));
    /// e.set_run(None);
    /// assert_eq!(e.run(), None);
    /// ```
    pub fn set_run(&mut self, v: Option<String>) {
        self.set_str(slot::RUN, v.as_deref());
    }
    /// Sets `step`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_step(Some("p1".into()));
    /// assert_eq!(e.step(), Some("p1"));
    /// e.set_step(None);
    /// assert_eq!(e.step(), None);
    /// ```
    pub fn set_step(&mut self, v: Option<String>) {
        self.set_str(slot::STEP, v.as_deref());
    }
    /// Sets `seq`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_seq(Some(0));
    /// assert_eq!(e.seq(), Some(0));
    /// e.set_seq(None);
    /// assert!(!e.to_json().contains("seq"));
    /// ```
    pub fn set_seq(&mut self, v: Option<u64>) {
        self.set_slot_present(slot::SEQ, v.is_some());
        self.seq = v;
    }
    /// Sets `epoch` (`None` removes the attribute; readers then see 0).
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_epoch(Some(1));
    /// assert_eq!(e.epoch(), 1);
    /// e.set_epoch(None);
    /// assert_eq!((e.epoch(), e.epoch_attr()), (0, None));
    /// ```
    pub fn set_epoch(&mut self, v: Option<u64>) {
        self.set_slot_present(slot::EPOCH, v.is_some());
        self.epoch = v;
    }
    /// Sets `cause`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_cause(Some("01I".into()));
    /// assert_eq!(e.cause(), Some("01I"));
    /// e.set_cause(None);
    /// assert_eq!(e.cause(), None);
    /// ```
    pub fn set_cause(&mut self, v: Option<String>) {
        self.set_str(slot::CAUSE, v.as_deref());
    }
    /// Sets `traceparent`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_traceparent(Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()));
    /// assert_eq!(e.traceparent(), Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    /// e.set_traceparent(None);
    /// assert_eq!(e.traceparent(), None);
    /// ```
    pub fn set_traceparent(&mut self, v: Option<String>) {
        self.set_str(slot::TRACEPARENT, v.as_deref());
    }

    /// Builder form of [`Event::set_subject`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_subject("t_1");
    /// assert_eq!(e.subject(), Some("t_1"));
    /// ```
    pub fn with_subject(mut self, v: impl AsRef<str>) -> Self {
        self.set_str(slot::SUBJECT, Some(v.as_ref()));
        self
    }
    /// Builder form of [`Event::set_session`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_session("s1");
    /// assert_eq!(e.session(), Some("s1"));
    /// ```
    pub fn with_session(mut self, v: impl AsRef<str>) -> Self {
        self.set_str(slot::SESSION, Some(v.as_ref()));
        self
    }
    /// Builder form of [`Event::set_run`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_run("r1");
    /// assert_eq!(e.run(), Some("r1"));
    /// ```
    pub fn with_run(mut self, v: impl AsRef<str>) -> Self {
        self.set_str(slot::RUN, Some(v.as_ref()));
        self
    }
    /// Builder form of [`Event::set_step`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_step("p1");
    /// assert_eq!(e.step(), Some("p1"));
    /// ```
    pub fn with_step(mut self, v: impl AsRef<str>) -> Self {
        self.set_str(slot::STEP, Some(v.as_ref()));
        self
    }
    /// Builder form of [`Event::set_seq`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_session("s").with_seq(3);
    /// assert_eq!(e.seq(), Some(3));
    /// ```
    pub fn with_seq(mut self, v: u64) -> Self {
        self.set_seq(Some(v));
        self
    }
    /// Builder form of [`Event::set_epoch`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_epoch(2);
    /// assert!(e.to_json().ends_with(r#""epoch":2}"#));
    /// ```
    pub fn with_epoch(mut self, v: u64) -> Self {
        self.set_epoch(Some(v));
        self
    }
    /// Builder form of [`Event::set_cause`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_cause("01I");
    /// assert_eq!(e.cause(), Some("01I"));
    /// ```
    pub fn with_cause(mut self, v: impl AsRef<str>) -> Self {
        self.set_str(slot::CAUSE, Some(v.as_ref()));
        self
    }
    /// Builder form of [`Event::set_traceparent`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    /// assert_eq!(e.traceparent(), Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    /// ```
    pub fn with_traceparent(mut self, v: impl AsRef<str>) -> Self {
        self.set_str(slot::TRACEPARENT, Some(v.as_ref()));
        self
    }
    /// Builder form of [`Event::set_severity`].
    ///
    /// ```
    /// use aep_core::{Event, Severity};
    /// let e = Event::new("1", "error.raised", "t", "s", "a").with_severity(Severity::Critical);
    /// assert_eq!(e.severity_attr(), Some(Severity::Critical));
    /// ```
    pub fn with_severity(mut self, v: Severity) -> Self {
        self.set_severity(Some(v));
        self
    }
    /// Builder form of [`Event::set_capture`].
    ///
    /// ```
    /// use aep_core::{Capture, Event};
    /// let e = Event::new("1", "tool.completed", "t", "s", "a").with_capture(Capture::None);
    /// assert_eq!(e.capture(), Capture::None);
    /// ```
    pub fn with_capture(mut self, v: Capture) -> Self {
        self.set_capture(Some(v));
        self
    }
    /// Builder form of [`Event::set_data`].
    ///
    /// ```
    /// let e = aep_core::Event::new("1", "agent.idle", "t", "s", "a").with_data(serde_json::json!({}));
    /// assert!(e.to_json().ends_with(r#""data":{}}"#));
    /// ```
    pub fn with_data(mut self, data: Value) -> Self {
        self.set_data(data);
        self
    }

    /// Sets optional string attribute `slot`, keeping a recorded wire order true.
    fn set_str(&mut self, slot: Slot, value: Option<&str>) {
        self.set_slot_present(slot, value.is_some());
        self.put(slot, value);
    }

    /// Keeps a non-canonical wire order consistent when an attribute appears or
    /// disappears: a new attribute goes where the canonical order puts it.
    fn set_slot_present(&mut self, slot: Slot, present: bool) {
        let Some(order) = self.order.take() else {
            return;
        };
        let mut order = order.into_vec();
        let pos = order.iter().position(|&s| s == slot);
        match (pos, present) {
            (Some(at), false) => {
                order.remove(at);
            }
            (None, true) => {
                let at = order
                    .iter()
                    .position(|&s| s != EXT && s > slot)
                    .unwrap_or(order.len());
                order.insert(at, slot);
            }
            _ => {}
        }
        self.order = Some(order.into_boxed_slice());
    }

    /// The slots in the order this event writes them (a recorded order can come to
    /// equal the canonical one as attributes are removed; equality goes by this).
    fn wire_order(&self) -> Vec<Slot> {
        match &self.order {
            Some(order) => order.to_vec(),
            None => self.canonical_slots().collect(),
        }
    }

    fn canonical_slots(&self) -> impl Iterator<Item = Slot> + '_ {
        let has = |slot| self.str_at(slot).is_some();
        let present = [
            true,
            true,
            true,
            has(slot::SUBJECT),
            true,
            true,
            true,
            has(slot::SESSION),
            has(slot::RUN),
            has(slot::STEP),
            self.seq.is_some(),
            self.epoch.is_some(),
            has(slot::CAUSE),
            has(slot::TRACEPARENT),
            self.severity.is_some(),
            self.capture.is_some(),
        ];
        (0u8..16)
            .filter(move |&i| present[i as usize])
            .chain(std::iter::repeat_n(EXT, self.extensions.len()))
            .chain(self.data.is_some().then_some(DATA))
    }
}

/// Two events are equal when they would write the same JSON (raw values compared as
/// text, attribute order included).
impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        let raw_eq = |a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>| {
            a.as_ref().map(|r| r.get()) == b.as_ref().map(|r| r.get())
        };
        self.spans
            .iter()
            .zip(&other.spans)
            .all(|(&a, &b)| self.text_of(a) == other.text_of(b))
            && self.seq == other.seq
            && self.epoch == other.epoch
            && self.severity == other.severity
            && self.capture == other.capture
            && raw_eq(&self.data, &other.data)
            && self.extensions.len() == other.extensions.len()
            && self
                .extensions
                .iter()
                .zip(&other.extensions)
                .all(|((ka, va), (kb, vb))| ka == kb && va.get() == vb.get())
            && ((self.order.is_none() && other.order.is_none())
                || self.wire_order() == other.wire_order())
    }
}

impl Eq for Event {}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Event").field(&self.to_json()).finish()
    }
}

impl fmt::Display for Event {
    /// The compact JSON line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl FromStr for Event {
    type Err = EventParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // The plain envelope (the usual case) is read directly; anything else, errors
        // included, by serde_json, which decides every case the same way.
        match scan::envelope(s) {
            Some(event) => Ok(event),
            None => Ok(serde_json::from_str(s)?),
        }
    }
}

/// One attribute's value as written, borrowed from the event.
enum Attr<'a> {
    Str(&'a str),
    Number(u64),
    Raw(&'a RawValue),
}

impl Event {
    /// Calls `f` with each attribute's name and value in wire order: the one walk both
    /// the serde `Serialize` impl and the direct writer follow, so they cannot disagree.
    /// The flag says whether the name is a core one (plain ASCII, nothing to escape).
    fn walk<E>(&self, mut f: impl FnMut(&str, bool, Attr<'_>) -> Result<(), E>) -> Result<(), E> {
        let mut ext = self.extensions.iter();
        let mut write = |at: Slot| -> Result<(), E> {
            let value = match at {
                slot::SEQ => self.seq.map(Attr::Number),
                slot::EPOCH => self.epoch.map(Attr::Number),
                slot::AEP..=slot::TRACEPARENT => self.str_at(at).map(Attr::Str),
                slot::SEVERITY => self.severity.map(|v| Attr::Str(v.as_str())),
                slot::CAPTURE => self.capture.map(|v| Attr::Str(v.as_str())),
                DATA => self.data.as_deref().map(Attr::Raw),
                _ => {
                    return match ext.next() {
                        Some((k, v)) => f(k, false, Attr::Raw(v)),
                        None => Ok(()),
                    }
                }
            };
            match (CORE_ATTRIBUTES.get(at as usize), value) {
                (Some(name), Some(value)) => f(name, true, value),
                _ => Ok(()),
            }
        };
        match &self.order {
            Some(order) => order.iter().try_for_each(|&at| write(at)),
            None => self.canonical_slots().try_for_each(write),
        }
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = self.canonical_slots().count();
        let mut map = serializer.serialize_map(Some(len))?;
        self.walk(|name, _, value| match value {
            Attr::Str(v) => map.serialize_entry(name, v),
            Attr::Number(v) => map.serialize_entry(name, &v),
            Attr::Raw(v) => map.serialize_entry(name, v),
        })?;
        map.end()
    }
}

/// Writes `text` as a JSON string exactly as serde_json would. Most attribute values
/// need no escaping, and one branch-free pass to find that out beats serde_json's
/// byte-by-byte escape loop several times over.
fn write_json_str(out: &mut Vec<u8>, text: &str) {
    let plain = !text.bytes().fold(false, |hit, b| {
        hit | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if plain {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, text);
    }
}

/// The attribute name of a map key, decoded without allocating for core names.
enum Key {
    Core(Slot),
    Other(String),
}

/// The slot of a core attribute name; a `match` compiles to a length switch, where a
/// scan of [`CORE_ATTRIBUTES`] compares against every name.
pub(crate) fn core_slot(name: &str) -> Option<Slot> {
    Some(match name {
        "aep" => slot::AEP,
        "id" => slot::ID,
        "type" => slot::TYPE,
        "subject" => slot::SUBJECT,
        "time" => slot::TIME,
        "source" => slot::SOURCE,
        "agent" => slot::AGENT,
        "session" => slot::SESSION,
        "run" => slot::RUN,
        "step" => slot::STEP,
        "seq" => slot::SEQ,
        "epoch" => slot::EPOCH,
        "cause" => slot::CAUSE,
        "traceparent" => slot::TRACEPARENT,
        "severity" => slot::SEVERITY,
        "capture" => slot::CAPTURE,
        "data" => DATA,
        _ => return None,
    })
}

/// The wire order of a map being read, kept on the stack for the usual envelope size.
#[derive(Debug, Clone)]
struct WireOrder {
    inline: [Slot; 24],
    len: usize,
    spill: Vec<Slot>,
    /// Core slots seen so far, one bit each, for the duplicate check.
    seen: u32,
    /// Whether the order so far is the canonical one (ranks never decrease).
    canonical: bool,
    last_rank: u8,
}

impl WireOrder {
    fn new() -> WireOrder {
        WireOrder {
            inline: [0; 24],
            len: 0,
            spill: Vec::new(),
            seen: 0,
            canonical: true,
            last_rank: 0,
        }
    }

    /// Records `slot`; `false` when it is a core attribute already seen.
    fn push(&mut self, slot: Slot) -> bool {
        if slot != EXT {
            let bit = 1u32 << slot;
            if self.seen & bit != 0 {
                return false;
            }
            self.seen |= bit;
        }
        // Canonical order: core attributes in table order, extensions, then `data`.
        let rank = match slot {
            EXT => 16,
            DATA => 17,
            core => core,
        };
        if rank < self.last_rank {
            self.canonical = false;
        }
        self.last_rank = rank;
        match self.inline.get_mut(self.len) {
            Some(cell) if self.spill.is_empty() => {
                *cell = slot;
                self.len += 1;
            }
            _ => {
                if self.spill.is_empty() {
                    self.spill.extend(self.inline.iter().take(self.len));
                }
                self.spill.push(slot);
            }
        }
        true
    }

    /// Records that core `slot` was seen, without keeping the order (a reading that
    /// writes nothing back); `false` when it was seen before.
    fn see(&mut self, slot: Slot) -> bool {
        let bit = 1u32 << slot;
        let fresh = self.seen & bit == 0;
        self.seen |= bit;
        fresh
    }

    /// The order to keep, or `None` when it is the canonical one.
    fn finish(self) -> Option<Box<[Slot]>> {
        if self.canonical {
            None
        } else if self.spill.is_empty() {
            Some(self.inline.iter().take(self.len).copied().collect())
        } else {
            Some(self.spill.into_boxed_slice())
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an attribute name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match core_slot(v) {
                    Some(slot) => Key::Core(slot),
                    None => Key::Other(v.to_owned()),
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EventVisitor)
    }
}

struct EventVisitor;

fn dup<E: de::Error>(slot: Slot) -> E {
    E::custom(format_args!(
        "duplicate attribute `{}`",
        CORE_ATTRIBUTES.get(slot as usize).copied().unwrap_or("?")
    ))
}

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an AEP event (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        // The string attributes of a typical event (a ULID id, an RFC 3339 time, a
        // source URI, a session, a cause) fit; longer ones grow the text once or twice.
        let mut e = Event::with_capacity(192);
        let mut order = WireOrder::new();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Core(slot) => {
                    if !order.push(slot) {
                        return Err(dup(slot));
                    }
                    match slot {
                        slot::SEQ => e.seq = Some(map.next_value()?),
                        slot::EPOCH => e.epoch = Some(map.next_value()?),
                        slot::SEVERITY => e.severity = Some(map.next_value()?),
                        slot::CAPTURE => e.capture = Some(map.next_value()?),
                        DATA => e.data = Some(map.next_value()?),
                        // The text goes straight into the event's own, without a
                        // `String` of its own on the way.
                        _ => map.next_value_seed(StrSlot(&mut e, slot))?,
                    }
                }
                Key::Other(name) => {
                    if e.extensions.iter().any(|(k, _)| *k == name) {
                        return Err(de::Error::custom(format_args!(
                            "duplicate attribute `{name}`"
                        )));
                    }
                    order.push(EXT);
                    let value: Box<RawValue> = map.next_value()?;
                    e.extensions.push((name, value));
                }
            }
        }
        for (at, name) in [
            (slot::AEP, "aep"),
            (slot::ID, "id"),
            (slot::TYPE, "type"),
            (slot::TIME, "time"),
            (slot::SOURCE, "source"),
            (slot::AGENT, "agent"),
        ] {
            if e.str_at(at).is_none() {
                return Err(de::Error::missing_field(name));
            }
        }
        e.order = order.finish();
        Ok(e)
    }
}

/// Reads one string attribute's value into an event being read.
struct StrSlot<'e>(&'e mut Event, Slot);

impl<'de> de::DeserializeSeed<'de> for StrSlot<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for StrSlot<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.put(self.1, Some(v));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOLDEN: &str = include_str!("../../../fixtures/conformance/golden/golden.jsonl");

    #[test]
    fn golden_lines_are_read_directly_as_serde_reads_them() {
        for line in GOLDEN.lines().filter(|l| !l.trim().is_empty()) {
            let direct =
                scan::envelope(line).unwrap_or_else(|| panic!("not read directly: {line}"));
            let serde: Event = serde_json::from_str(line).unwrap();
            assert_eq!(direct, serde);
            assert_eq!(direct.to_json(), line);
        }
        // and what it must leave to serde
        for line in [
            r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"\u0061"}"#,
            r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","seq":01}"#,
            r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","agent":"a"}"#,
            r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s"}"#,
            r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"} x"#,
        ] {
            assert!(scan::envelope(line).is_none(), "{line}");
        }
    }

    #[test]
    fn golden_lines_round_trip_byte_identically() {
        let mut n = 0;
        for line in GOLDEN.lines().filter(|l| !l.trim().is_empty()) {
            let e: Event = line.parse().unwrap();
            assert_eq!(e.to_json(), line);
            n += 1;
        }
        assert_eq!(n, 64);
    }

    #[test]
    fn defaults_apply_and_absent_attributes_are_not_null() {
        let e = Event::new("1", "agent.idle", "t", "s", "a");
        assert_eq!(e.epoch(), 0);
        assert_eq!(e.severity(), Severity::Info);
        assert_eq!(e.capture(), Capture::Metadata);
        assert!(!e.to_json().contains("null"));
    }

    #[test]
    fn parse_errors_are_typed() {
        for bad in [
            &b"not json"[..],
            b"[]",
            b"{}",
            b"{\"aep\":\"0.1\",\"id\":1}",
            b"\xff\xfe",
            br#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","seq":-1}"#,
            br#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","seq":18446744073709551616}"#,
            br#"{"aep":"0.1","aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a"}"#,
            br#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","x":1,"x":2}"#,
            br#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","severity":"loud"}"#,
            br#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","session":null}"#,
        ] {
            assert!(Event::from_slice(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let err = Event::from_slice(b"{\"aep\":").unwrap_err();
        assert!(err.is_syntax());
    }

    /// The messages of the serde reading (the one for envelopes the direct reader does
    /// not take: here, an escape in `time` sends each line there).
    #[test]
    fn serde_reading_errors_say_what_is_wrong() {
        let head = r#"{"aep":"0.1","type":"a.b","time":"\u0074","source":"s","agent":"a""#;
        for (tail, expected) in [
            (
                r#","id":5}"#,
                "invalid type: integer `5`, expected a string",
            ),
            (r#","id":null}"#, "invalid type: null, expected a string"),
            (
                r#","id":"1","session":null}"#,
                "invalid type: null, expected a string",
            ),
            (r#"}"#, "missing field `id`"),
            (r#","id":"1","id":"2"}"#, "duplicate attribute `id`"),
            (
                r#","id":"1","session":"s","session":"t"}"#,
                "duplicate attribute `session`",
            ),
        ] {
            let line = format!("{head}{tail}");
            let err = line.parse::<Event>().unwrap_err().to_string();
            assert!(err.contains(expected), "{line}: {err}");
        }
    }

    #[test]
    fn invalid_utf8_inside_a_string_is_a_syntax_error_with_its_position() {
        let err = Event::from_slice(b"{\"aep\":\"0.\xff\"}").unwrap_err();
        assert!(err.is_syntax());
        assert_eq!(err.line(), 1);
    }

    #[test]
    fn many_attributes_out_of_order_round_trip() {
        // More attributes than the parser's inline order buffer holds, `data` first, so
        // the spilled wire order is the one kept.
        let mut line = String::from(
            r#"{"data":{"n":1},"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a""#,
        );
        for i in 0..30 {
            line.push_str(&format!(r#","x_{i}":{i}"#));
        }
        line.push_str(r#","seq":3}"#);
        let e = Event::from_slice(line.as_bytes()).unwrap();
        assert_eq!(e.to_json(), line);
        assert_eq!(e.extensions().len(), 30);
        let dup = line.replace(r#","seq":3}"#, r#","seq":3,"id":"2"}"#);
        let err = Event::from_slice(dup.as_bytes()).unwrap_err();
        assert!(
            err.to_string().contains("duplicate attribute `id`"),
            "{err}"
        );
    }

    /// How a test sets one string attribute.
    type Setter = fn(&mut Event, Option<String>);

    /// The string attributes with a setter, how to call it, and whether the attribute
    /// is required (never absent).
    fn setters() -> Vec<(Slot, Setter, bool)> {
        vec![
            (slot::ID, |e, v| e.set_id(v.unwrap_or_default()), true),
            (slot::TIME, |e, v| e.set_time(v.unwrap_or_default()), true),
            (
                slot::SOURCE,
                |e, v| e.set_source(v.unwrap_or_default()),
                true,
            ),
            (slot::SUBJECT, Event::set_subject, false),
            (slot::SESSION, Event::set_session, false),
            (slot::RUN, Event::set_run, false),
            (slot::STEP, Event::set_step, false),
            (slot::CAUSE, Event::set_cause, false),
            (slot::TRACEPARENT, Event::set_traceparent, false),
        ]
    }

    proptest::proptest! {
        /// Attributes set, replaced and removed in any order read back as last set,
        /// write and read back equal, and the shared text never holds more than twice
        /// the live text (plus 64 bytes): an event set over and over does not grow.
        #[test]
        fn string_attributes_set_in_any_order_read_back_and_stay_bounded(
            ops in proptest::collection::vec(
                (0..9usize, proptest::option::of("[a-z0-9\\u{e9}\"\\\\]{0,40}")),
                0..60,
            ),
            start in 0..3u8,
        ) {
            let setters = setters();
            // built, or read (exact capacity, an empty value, a recorded wire order)
            let mut e = match start {
                0 => Event::new("1", "agent.idle", "t", "s", "a"),
                1 => r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","subject":""}"#.parse().unwrap(),
                _ => r#"{"subject":"","agent":"a","aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s"}"#.parse().unwrap(),
            };
            let mut model: Vec<Option<String>> = setters
                .iter()
                .map(|(slot, _, _)| e.str_at(*slot).map(str::to_owned))
                .collect();
            for (which, value) in ops {
                let (_, set, required) = setters[which];
                let value = if required { Some(value.unwrap_or_default()) } else { value };
                set(&mut e, value.clone());
                model[which] = value;
                for (i, (slot, _, _)) in setters.iter().enumerate() {
                    proptest::prop_assert_eq!(e.str_at(*slot), model[i].as_deref());
                }
                proptest::prop_assert!(e.text.len() <= 2 * e.live_len() + 64);
            }
            proptest::prop_assert_eq!(e.aep(), AEP_VERSION);
            proptest::prop_assert_eq!(e.event_type(), "agent.idle");
            proptest::prop_assert_eq!(e.agent(), "a");
            let back: Event = e.to_json().parse().unwrap();
            proptest::prop_assert_eq!(&back, &e);
            let via_serde: Event = serde_json::from_str(&e.to_json()).unwrap();
            proptest::prop_assert_eq!(&via_serde, &e);
            // Built afresh from the model, in one go: no leftover text, yet equal (the
            // read events keep their wire order, which a build does not, so only the
            // built one).
            if start == 0 {
                let mut fresh = Event::new("", "agent.idle", "", "", "a");
                for (i, (_, set, _)) in setters.iter().enumerate() {
                    set(&mut fresh, model[i].clone());
                }
                proptest::prop_assert_eq!(&fresh, &e);
                proptest::prop_assert_eq!(fresh.to_json(), e.to_json());
            }
        }
    }

    #[test]
    fn equal_events_with_different_leftover_text_are_equal() {
        let mut a = Event::new("1", "agent.idle", "t", "s", "a").with_session("s1");
        a.set_subject(Some("x".repeat(30)));
        a.set_session(Some("s2".into())); // leaves "s1"... behind `subject`
        a.set_subject(None);
        let b = Event::new("1", "agent.idle", "t", "s", "a").with_session("s2");
        assert_ne!(a.text, b.text);
        assert_eq!(a, b);
        assert_eq!(a.to_json(), b.to_json());
    }

    #[test]
    fn an_event_stays_small_to_move() {
        // Events are moved through channels, futures and results on every hop; the
        // attribute text lives behind one pointer so that a move stays a few lines.
        assert!(
            std::mem::size_of::<Event>() <= 232,
            "{}",
            std::mem::size_of::<Event>()
        );
    }

    #[test]
    fn mutation_keeps_noncanonical_order_consistent() {
        let line = r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","session":"s","seq":3,"run":"r","data":{"a":1}}"#;
        let mut e: Event = line.parse().unwrap();
        e.set_capture(Some(Capture::None));
        e.set_data(Value::Null);
        e.set_extension("acme", json!("x")).unwrap();
        assert_eq!(
            e.to_json(),
            r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","session":"s","seq":3,"run":"r","capture":"none","acme":"x"}"#
        );
        assert!(e.remove_extension("acme"));
        assert!(!e.remove_extension("acme"));
        e.set_data(json!({"b":2}));
        assert!(e.to_json().ends_with(r#""capture":"none","data":{"b":2}}"#));
        let back: Event = e.to_json().parse().unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn value_round_trip_and_payload() {
        let v = json!({"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","data":{"trigger":"user"}});
        let e = Event::from_value(&v).unwrap();
        assert_eq!(e.to_value(), v);
        let p: serde_json::Map<String, Value> = e.payload().unwrap();
        assert_eq!(p["trigger"], "user");
    }
}
