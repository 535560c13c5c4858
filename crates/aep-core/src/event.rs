//! The AEP-0001 §5 envelope as a Rust value.
//!
//! [`Event`] keeps everything a relay must forward unchanged (AEP-0004 §4.4, AEP-0001
//! §5.4): the order of the attributes as they arrived, extension attributes, and the
//! exact bytes of `data` (number spellings such as `0.5510` included). Reading a compact
//! JSON line and writing it back gives the same bytes.

use std::borrow::Cow;
use std::fmt;

use serde_json::value::RawValue;

use crate::level::{Capture, Severity};

mod access;
mod extension;
mod scan;
mod view;
mod wire;

pub use extension::{check_extension_name, is_extension_value, ExtensionError};
pub use view::EnvelopeView;
pub use wire::EventParseError;

pub(crate) use wire::core_slot;
use wire::WireOrder;

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
    /// [`Span`]s say where each one is. One allocation holds them all, however many are
    /// present: an event is built or parsed several times on every hop of a control round
    /// trip (AEP-0004 §3), and an allocation per long attribute (ids, `source`, `cause`)
    /// would dominate what each of those costs.
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

/// How an event's attributes are stored: the string text, the spans and the wire order.
impl Event {
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

    /// Sets optional string attribute `slot`, keeping a recorded wire order true.
    pub(crate) fn set_str(&mut self, slot: Slot, value: Option<&str>) {
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

/// An event by value, for the APIs that keep an event only sometimes and so take
/// `impl Into<Cow<'_, Event>>` ([`ControlSender::handle_event`]): nothing is copied.
///
/// [`ControlSender::handle_event`]: crate::control::ControlSender::handle_event
impl From<Event> for Cow<'_, Event> {
    fn from(event: Event) -> Self {
        Cow::Owned(event)
    }
}

/// A borrowed event, for the APIs that take `impl Into<Cow<'_, Event>>`: copied only
/// when the API keeps it.
///
/// ```
/// use std::borrow::Cow;
/// let e = aep_core::Event::new("1", "agent.idle", "t", "s", "a");
/// assert!(matches!(Cow::from(&e), Cow::Borrowed(_)));
/// assert!(matches!(Cow::from(e), Cow::Owned(_)));
/// ```
impl<'a> From<&'a Event> for Cow<'a, Event> {
    fn from(event: &'a Event) -> Self {
        Cow::Borrowed(event)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

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
