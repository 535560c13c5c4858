//! The JSON wire form of an [`Event`]: reading (the direct reader in `scan` first, serde
//! for everything else), writing back in wire order, and the read error.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{scan, slot, Event, Slot, CORE_ATTRIBUTES, DATA, EXT};

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

impl Event {
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
pub(super) struct WireOrder {
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
    pub(super) fn new() -> WireOrder {
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
    pub(super) fn push(&mut self, slot: Slot) -> bool {
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
    pub(super) fn see(&mut self, slot: Slot) -> bool {
        let bit = 1u32 << slot;
        let fresh = self.seen & bit == 0;
        self.seen |= bit;
        fresh
    }

    /// The order to keep, or `None` when it is the canonical one.
    pub(super) fn finish(self) -> Option<Box<[Slot]>> {
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
