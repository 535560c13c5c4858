//! The single-event rules, written once over a view that both a JSON object and a parsed
//! [`Event`] provide.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{capture, format, payload, Issue, Rule};
use crate::event::{
    check_extension_name, is_extension_value, slot, EnvelopeView, Event, ExtensionError,
};
use crate::level::{Capture, Severity, CAPTURE_NAMES, SEVERITY_NAMES};
use crate::types::{EventType, CATEGORIES};

/// One core attribute as the rules see it.
pub(super) enum Seen<'a> {
    Absent,
    Str(&'a str),
    Count,
    /// Any other JSON value (only a JSON object input can hold one).
    Other,
}

/// A core context attribute, by its index in [`crate::event::CORE_ATTRIBUTES`]: the rules
/// read some twenty attributes per event, and the relay runs them on every event it
/// ingests, so they address attributes by slot rather than compare names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Attr(usize);

impl Attr {
    pub(super) const AEP: Attr = Attr(slot::AEP as usize);
    pub(super) const ID: Attr = Attr(slot::ID as usize);
    pub(super) const TYPE: Attr = Attr(slot::TYPE as usize);
    pub(super) const SUBJECT: Attr = Attr(slot::SUBJECT as usize);
    pub(super) const TIME: Attr = Attr(slot::TIME as usize);
    pub(super) const SOURCE: Attr = Attr(slot::SOURCE as usize);
    pub(super) const AGENT: Attr = Attr(slot::AGENT as usize);
    pub(super) const SESSION: Attr = Attr(slot::SESSION as usize);
    pub(super) const RUN: Attr = Attr(slot::RUN as usize);
    pub(super) const STEP: Attr = Attr(slot::STEP as usize);
    pub(super) const SEQ: Attr = Attr(slot::SEQ as usize);
    pub(super) const EPOCH: Attr = Attr(slot::EPOCH as usize);
    pub(super) const CAUSE: Attr = Attr(slot::CAUSE as usize);
    pub(super) const TRACEPARENT: Attr = Attr(slot::TRACEPARENT as usize);
    pub(super) const SEVERITY: Attr = Attr(slot::SEVERITY as usize);
    pub(super) const CAPTURE: Attr = Attr(slot::CAPTURE as usize);

    /// The attribute's wire name.
    pub(super) fn name(self) -> &'static str {
        crate::event::CORE_ATTRIBUTES
            .get(self.0)
            .copied()
            .unwrap_or_default()
    }
}

/// What the rules need to read from an envelope.
pub(super) trait Envelope {
    /// A core context attribute other than `data`, by its [`Attr`] slot.
    fn attr(&self, attr: Attr) -> Seen<'_>;
    /// `data`, when present.
    fn data(&self) -> Option<Cow<'_, Value>>;
    /// Whether `data`, when present, is a JSON object; for the envelope-only rules,
    /// which need its shape but not its content.
    fn data_is_object(&self) -> Option<bool> {
        self.data().map(|d| d.is_object())
    }
    /// Calls `f` with every extension attribute (every non-core member) and its value.
    fn each_extension(&self, f: &mut dyn FnMut(&str, Cow<'_, Value>));
}

/// A JSON object seen as an envelope: the core attributes found in one pass over the
/// members, so no rule pays for a hash lookup.
pub(super) struct JsonEnvelope<'a> {
    members: &'a Map<String, Value>,
    core: [Option<&'a Value>; 17],
}

impl<'a> JsonEnvelope<'a> {
    pub(super) fn new(members: &'a Map<String, Value>) -> JsonEnvelope<'a> {
        let mut core = [None; 17];
        for (name, value) in members {
            if let Some(cell) = core_slot(name).and_then(|i| core.get_mut(i)) {
                *cell = Some(value);
            }
        }
        JsonEnvelope { members, core }
    }

    fn core(&self, name: &str) -> Option<&'a Value> {
        core_slot(name).and_then(|i| self.core.get(i).copied().flatten())
    }
}

/// The index of a core attribute in [`crate::event::CORE_ATTRIBUTES`].
fn core_slot(name: &str) -> Option<usize> {
    crate::event::core_slot(name).map(usize::from)
}

impl Envelope for JsonEnvelope<'_> {
    fn attr(&self, attr: Attr) -> Seen<'_> {
        match self.core.get(attr.0).copied().flatten() {
            None => Seen::Absent,
            Some(Value::String(s)) => Seen::Str(s),
            Some(Value::Number(n)) if n.is_u64() => Seen::Count,
            Some(_) => Seen::Other,
        }
    }

    fn data(&self) -> Option<Cow<'_, Value>> {
        self.core("data").map(Cow::Borrowed)
    }

    fn each_extension(&self, f: &mut dyn FnMut(&str, Cow<'_, Value>)) {
        for (name, value) in self.members {
            if core_slot(name).is_none() {
                f(name, Cow::Borrowed(value));
            }
        }
    }
}

impl Envelope for Event {
    fn attr(&self, attr: Attr) -> Seen<'_> {
        fn text(v: Option<&str>) -> Seen<'_> {
            v.map_or(Seen::Absent, Seen::Str)
        }
        fn count<'a>(v: Option<u64>) -> Seen<'a> {
            v.map_or(Seen::Absent, |_| Seen::Count)
        }
        match attr {
            Attr::AEP => Seen::Str(self.aep()),
            Attr::ID => Seen::Str(self.id()),
            Attr::TYPE => Seen::Str(self.event_type()),
            Attr::TIME => Seen::Str(self.time()),
            Attr::SOURCE => Seen::Str(self.source()),
            Attr::AGENT => Seen::Str(self.agent()),
            Attr::SUBJECT => text(self.subject()),
            Attr::SESSION => text(self.session()),
            Attr::RUN => text(self.run()),
            Attr::STEP => text(self.step()),
            Attr::CAUSE => text(self.cause()),
            Attr::TRACEPARENT => text(self.traceparent()),
            Attr::SEQ => count(self.seq()),
            Attr::EPOCH => count(self.epoch_attr()),
            Attr::SEVERITY => text(self.severity_attr().map(Severity::as_str)),
            Attr::CAPTURE => text(self.capture_attr().map(Capture::as_str)),
            _ => Seen::Absent,
        }
    }

    fn data(&self) -> Option<Cow<'_, Value>> {
        // A raw value that does not re-read (it always does: it was read as JSON) counts
        // as `null`, which the `data` rule refuses, rather than as absent.
        self.data_raw()
            .map(|raw| Cow::Owned(serde_json::from_str(raw.get()).unwrap_or(Value::Null)))
    }

    fn data_is_object(&self) -> Option<bool> {
        // raw JSON text that opens with `{` is an object: it was read as valid JSON
        self.data_raw()
            .map(|raw| raw.get().trim_start().starts_with('{'))
    }

    fn each_extension(&self, f: &mut dyn FnMut(&str, Cow<'_, Value>)) {
        for (name, raw) in self.extensions() {
            let value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            f(name, Cow::Owned(value));
        }
    }
}

impl Envelope for EnvelopeView<'_> {
    fn attr(&self, attr: Attr) -> Seen<'_> {
        fn text(v: Option<&str>) -> Seen<'_> {
            v.map_or(Seen::Absent, Seen::Str)
        }
        fn count<'a>(v: Option<u64>) -> Seen<'a> {
            v.map_or(Seen::Absent, |_| Seen::Count)
        }
        let p = &self.plain;
        match attr {
            Attr::AEP => Seen::Str(p.aep),
            Attr::ID => Seen::Str(p.id),
            Attr::TYPE => Seen::Str(p.ty),
            Attr::TIME => Seen::Str(p.time),
            Attr::SOURCE => Seen::Str(p.source),
            Attr::AGENT => Seen::Str(p.agent),
            Attr::SUBJECT => text(p.subject),
            Attr::SESSION => text(p.session),
            Attr::RUN => text(p.run),
            Attr::STEP => text(p.step),
            Attr::CAUSE => text(p.cause),
            Attr::TRACEPARENT => text(p.traceparent),
            Attr::SEQ => count(p.seq),
            Attr::EPOCH => count(p.epoch),
            Attr::SEVERITY => text(p.severity.map(Severity::as_str)),
            Attr::CAPTURE => text(p.capture.map(Capture::as_str)),
            _ => Seen::Absent,
        }
    }

    fn data(&self) -> Option<Cow<'_, Value>> {
        // checked as JSON when read, so it decodes; a value past serde_json's own limits
        // counts as `null`, as for an `Event`
        self.data_raw()
            .map(|raw| Cow::Owned(serde_json::from_str(raw).unwrap_or(Value::Null)))
    }

    fn data_is_object(&self) -> Option<bool> {
        // checked JSON text that opens with `{` is an object
        self.data_raw().map(|raw| raw.starts_with('{'))
    }

    fn each_extension(&self, f: &mut dyn FnMut(&str, Cow<'_, Value>)) {
        for (name, raw) in self.extensions() {
            let value = serde_json::from_str(raw).unwrap_or(Value::Null);
            f(name, Cow::Owned(value));
        }
    }
}

const REQUIRED: [Attr; 5] = [Attr::ID, Attr::TYPE, Attr::TIME, Attr::SOURCE, Attr::AGENT];
const OPTIONAL_TEXT: [Attr; 5] = [
    Attr::SUBJECT,
    Attr::SESSION,
    Attr::RUN,
    Attr::STEP,
    Attr::CAUSE,
];

fn issue(rule: Rule, attr: &str, message: String, section: &'static str) -> Issue {
    Issue::new(rule, Some(attr.to_owned()), message, section)
}

/// Which single-event rules [`validate`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// The envelope rules and the payload schema of `data`.
    Full,
    /// The envelope rules only (AEP-0003 §3.2.3: what a relay checks).
    Envelope,
}

/// AEP-0001 §5.1: each of `attrs` is a non-empty string, and present when `required`.
fn text_attrs<E: Envelope + ?Sized>(e: &E, attrs: &[Attr], required: bool, out: &mut Vec<Issue>) {
    for &attr in attrs {
        let name = attr.name();
        let (rule, message) = match e.attr(attr) {
            Seen::Str(s) if !s.is_empty() => continue,
            Seen::Absent if !required => continue,
            Seen::Absent => (Rule::Required, format!("{name} is required")),
            _ if required => (Rule::AttrType, format!("{name} must be a non-empty string")),
            _ => (
                Rule::AttrType,
                format!("{name} must be a non-empty string when present"),
            ),
        };
        out.push(issue(rule, name, message, "AEP-0001 §5.1"));
    }
}

/// Runs the single-event rules of `scope` over `e`.
pub(super) fn validate<E: Envelope + ?Sized>(e: &E, scope: Scope) -> Vec<Issue> {
    let mut out = Vec::new();

    // AEP-0001 §5.1 #1: consumers dispatch on the version every event carries.
    if !matches!(e.attr(Attr::AEP), Seen::Str(crate::event::AEP_VERSION)) {
        out.push(issue(
            Rule::Version,
            "aep",
            "aep must be the literal \"0.1\"".to_owned(),
            "AEP-0001 §5.1",
        ));
    }

    text_attrs(e, &REQUIRED, true, &mut out);

    let type_str = match e.attr(Attr::TYPE) {
        Seen::Str(s) if !s.is_empty() => Some(s),
        _ => None,
    };
    let event_type = type_str.and_then(|s| match EventType::parse(s) {
        Ok(t) => Some(t),
        Err(err) => {
            // An unknown first segment breaks the closed category set of AEP-0002 §3;
            // everything else is the §6 grammar itself.
            let first = s.split('.').next().unwrap_or_default();
            let section = if first != "x" && !CATEGORIES.contains(&first) {
                "AEP-0002 §3"
            } else {
                "AEP-0001 §6"
            };
            out.push(issue(Rule::TypeSyntax, "type", err.to_string(), section));
            None
        }
    });

    // AEP-0001 §5.1: `time` is an RFC 3339 date-time, `source` a URI
    let formats = [
        (
            Attr::TIME,
            format::is_date_time as fn(&str) -> bool,
            "is not an RFC 3339 date-time with offset",
        ),
        (
            Attr::SOURCE,
            format::is_uri,
            "is not a URI: use a schemed identifier such as aep://host/agent/name",
        ),
    ];
    for (attr, valid, what) in formats {
        if let Seen::Str(value) = e.attr(attr) {
            if !value.is_empty() && !valid(value) {
                let name = attr.name();
                let message = format!("{name} `{value}` {what}");
                out.push(issue(Rule::Format, name, message, "AEP-0001 §5.1"));
            }
        }
    }

    text_attrs(e, &OPTIONAL_TEXT, false, &mut out);

    for attr in [Attr::SEQ, Attr::EPOCH] {
        let name = attr.name();
        if matches!(e.attr(attr), Seen::Str(_) | Seen::Other) {
            out.push(issue(
                Rule::AttrType,
                name,
                format!("{name} must be an integer from 0 to 2^64-1"),
                "AEP-0001 §5.1",
            ));
        }
    }

    match e.attr(Attr::TRACEPARENT) {
        Seen::Absent => {}
        Seen::Str(s) if format::is_traceparent(s) => {}
        _ => out.push(issue(
            Rule::Format,
            "traceparent",
            "traceparent must be a W3C Trace Context header value (vv-<32 hex>-<16 hex>-ff)"
                .to_owned(),
            "AEP-0001 §5.1",
        )),
    }

    match e.attr(Attr::SEVERITY) {
        Seen::Absent => {}
        Seen::Str(s) if s.parse::<Severity>().is_ok() => {}
        _ => out.push(issue(
            Rule::Enum,
            "severity",
            format!("severity must be one of {SEVERITY_NAMES}"),
            "AEP-0001 §8.1",
        )),
    }
    // absent is `metadata` (AEP-0001 §5.1); the payload rule below judges `data`
    // against this level
    let declared = match e.attr(Attr::CAPTURE) {
        Seen::Absent => Some(Capture::Metadata),
        Seen::Str(s) => s.parse::<Capture>().ok(),
        _ => None,
    };
    if declared.is_none() {
        out.push(issue(
            Rule::Enum,
            "capture",
            format!("capture must be one of {CAPTURE_NAMES}"),
            "AEP-0001 §8.2",
        ));
    }

    // the payload rules need `data` decoded; the envelope rules only its shape
    let data = match scope {
        Scope::Full => e.data(),
        Scope::Envelope => None,
    };
    let is_object = match &data {
        Some(d) => Some(d.is_object()),
        None => e.data_is_object(),
    };
    if is_object == Some(false) {
        out.push(issue(
            Rule::AttrType,
            "data",
            "data must be a JSON object".to_owned(),
            "AEP-0001 §5",
        ));
    }
    let data_object = data.as_deref().filter(|d| d.is_object());

    e.each_extension(&mut |name, value| {
        if let Err(err) = check_extension_name(name) {
            let message = match err {
                ExtensionError::CoreName(_) => {
                    format!("`{name}` collides with a core attribute name")
                }
                _ => format!("extension attribute name `{name}` must match [a-z0-9]{{1,20}}"),
            };
            out.push(issue(Rule::ExtensionName, name, message, "AEP-0001 §5.4"));
        }
        if !is_extension_value(&value) {
            out.push(issue(
                Rule::ExtensionValue,
                name,
                format!("extension attribute `{name}` must carry a string, integer or boolean"),
                "AEP-0001 §5.4",
            ));
        }
    });

    if let Some(t) = event_type {
        scoping(e, t, &mut out);
    }

    if let (Some(t), Some(data)) = (type_str, data_object) {
        payload::check(t, data, &mut out);
        // an unregistered `capture` has failed above; its content level is unknowable
        if let (Some(declared), Value::Object(members)) = (declared, data) {
            capture::check(t, declared, members, &mut out);
        }
    }

    out
}

/// AEP-0001 §5.2 with the AEP-0004 §2.2 foreign-emitter carve-out. Judged only for a
/// well-formed type: a malformed one has already failed, and its scope is unknowable.
fn scoping<E: Envelope + ?Sized>(e: &E, t: EventType<'_>, out: &mut Vec<Issue>) {
    let has = |attr| !matches!(e.attr(attr), Seen::Absent);
    if t.is_agent_scoped() {
        let found: Vec<&str> = [Attr::SESSION, Attr::RUN, Attr::STEP, Attr::SEQ]
            .into_iter()
            .filter(|&a| has(a))
            .map(Attr::name)
            .collect();
        if !found.is_empty() {
            out.push(Issue::new(
                Rule::Scoping,
                found.first().map(|s| (*s).to_owned()),
                format!(
                    "agent-scoped events omit session, run, step and seq; found {}",
                    found.join(", ")
                ),
                "AEP-0001 §5.2",
            ));
        }
    } else if t.is_foreign_emitter() {
        let (section, what) = if t.is_command() {
            ("AEP-0004 §2.2", "commands")
        } else {
            ("AEP-0001 §5.2", "attention.routed")
        };
        let named = if !has(Attr::SESSION) {
            "session"
        } else {
            "seq"
        };
        if !has(Attr::SESSION) || has(Attr::SEQ) {
            out.push(Issue::new(
                Rule::Scoping,
                Some(named.to_owned()),
                format!("{what} carry session (addressing) and never seq: they do not enter the session's ordering"),
                section,
            ));
        }
    } else {
        let missing = [Attr::SESSION, Attr::SEQ]
            .into_iter()
            .find(|&a| !has(a))
            .map(Attr::name);
        if let Some(missing) = missing {
            out.push(Issue::new(
                Rule::Scoping,
                Some(missing.to_owned()),
                format!("session-scoped events carry session and seq; {missing} is absent"),
                "AEP-0001 §5.2",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_slots_follow_the_core_attribute_table() {
        for (i, name) in crate::event::CORE_ATTRIBUTES.iter().enumerate() {
            assert_eq!(core_slot(name), Some(i));
        }
        let attrs = [
            Attr::AEP,
            Attr::ID,
            Attr::TYPE,
            Attr::SUBJECT,
            Attr::TIME,
            Attr::SOURCE,
            Attr::AGENT,
            Attr::SESSION,
            Attr::RUN,
            Attr::STEP,
            Attr::SEQ,
            Attr::EPOCH,
            Attr::CAUSE,
            Attr::TRACEPARENT,
            Attr::SEVERITY,
            Attr::CAPTURE,
        ];
        for (i, attr) in attrs.into_iter().enumerate() {
            assert_eq!(attr, Attr(i));
            assert_eq!(core_slot(attr.name()), Some(i));
        }
        assert_eq!(core_slot("acmeregion"), None);
    }
}
