//! Capture down-leveling at a re-emitting or fan-out hop (AEP-0001 §8.2, AEP-0002 §5.1).
//!
//! A hop may lower an event's content to a ceiling (a subscription's capture ceiling,
//! AEP-0003 §6; a relay's configured maximum) and must never raise it. Lowering is
//! mechanical, driven by the generated `x-aep-capture` annotations of [`crate::schema`]:
//!
//! - every field annotated above the new level is dropped, nested fields and the fields
//!   of array items included; members a schema does not name default to `metadata`
//!   (AEP-0002 §5.1 rule 4);
//! - the `[metadata*]` fields of AEP-0002 §5.3 (the attention `prompt`, option, form-field
//!   and choice `label`s, form `answer.values`) are degraded structurally below
//!   `redacted`: the hop has no source context to synthesize or classify them;
//! - `capture` is rewritten to the level honored, and a mechanical hop never mints the
//!   `redacted` provenance claim: a `redacted` ceiling on a `full` event lands on
//!   `metadata` (AEP-0001 §8.2(e));
//! - a type without annotations (unregistered, vendor `x.*`, or reserved with its payload
//!   deferred) loses its `data` wholesale, the privacy-safe direction.
//!
//! Dropping more than required is always legal (AEP-0001 §8.2(b)); where the wire holds
//! a shape the schema does not allow in a `[metadata*]` field, this module drops it.
//!
//! A hop that runs the AEP-0003 §9.4 pipeline itself (a *redacting re-emitter*, or an
//! emitter enforcing its configured ceiling, AEP-0003 §9.1) uses [`downlevel_redacting`]
//! instead, which may land a `full` event on `redacted`.
//!
//! ```
//! use aep_core::{capture::downlevel, Capture, Event};
//!
//! let event: Event = r#"{"aep":"0.1","id":"1","type":"tool.failed","time":"t","source":"s","agent":"a","session":"s1","seq":3,"capture":"redacted","data":{"tool":{"name":"Bash"},"error":{"type":"ExecError","message":"failed in /home/u"}}}"#.parse()?;
//! let lowered = downlevel(&event, Capture::Metadata);
//! assert_eq!(lowered.capture(), Capture::Metadata);
//! assert_eq!(lowered.data(), Some(serde_json::json!({"tool":{"name":"Bash"},"error":{"type":"ExecError"}})));
//! # Ok::<(), aep_core::EventParseError>(())
//! ```

use std::borrow::Cow;
use std::fmt;

use crate::event::Event;
use crate::level::Capture;
use crate::schema::{type_capture, Exception, FieldCapture};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// The capture level an event at `event` carries after a mechanical hop enforcing
/// `ceiling`: unchanged when the ceiling is not lower (never up-leveled,
/// AEP-0001 §8.2(b)), `metadata` for a `full` event at a `redacted` ceiling
/// (§8.2(e)), the ceiling otherwise.
///
/// ```
/// use aep_core::{capture::honored_level, Capture};
/// assert_eq!(honored_level(Capture::Full, Capture::Redacted), Capture::Metadata);
/// assert_eq!(honored_level(Capture::Redacted, Capture::Redacted), Capture::Redacted);
/// assert_eq!(honored_level(Capture::Metadata, Capture::Full), Capture::Metadata);
/// assert_eq!(honored_level(Capture::Redacted, Capture::None), Capture::None);
/// ```
pub fn honored_level(event: Capture, ceiling: Capture) -> Capture {
    if ceiling >= event {
        event
    } else if ceiling == Capture::Redacted {
        // Only a `full` event is above a `redacted` ceiling. Dropping fields cannot
        // establish that the remaining free text passed the AEP-0003 §9.4 pipeline.
        Capture::Metadata
    } else {
        ceiling
    }
}

/// Down-levels a copy of `event` to `ceiling`; see the [module docs](self) for the
/// rules. An event whose `capture` is at or below the ceiling comes back unchanged,
/// byte for byte.
///
/// ```
/// use aep_core::{capture::downlevel, Capture, Event};
///
/// let event: Event = r#"{"aep":"0.1","id":"1","type":"tool.completed","time":"t","source":"s","agent":"a","session":"s1","seq":4,"capture":"full","data":{"tool":{"name":"Bash"},"result":"verbatim","result_digest":"a3f9"}}"#.parse()?;
/// let lowered = downlevel(&event, Capture::Redacted);
/// assert_eq!(lowered.capture(), Capture::Metadata); // AEP-0001 §8.2(e)
/// assert_eq!(lowered.data(), Some(serde_json::json!({"tool":{"name":"Bash"},"result_digest":"a3f9"})));
/// assert_eq!(downlevel(&lowered, Capture::Full), lowered); // never up-leveled
/// # Ok::<(), aep_core::EventParseError>(())
/// ```
#[must_use = "the lowered event is a new value; the argument is unchanged"]
pub fn downlevel(event: &Event, ceiling: Capture) -> Event {
    let mut out = event.clone();
    downlevel_in_place(&mut out, ceiling);
    out
}

/// Down-levels `event` in place to `ceiling` and returns the capture level it now
/// honors. Leaves the event untouched (and returns its level) when the ceiling is not
/// lower than its `capture`.
///
/// ```
/// use aep_core::{capture::downlevel_in_place, Capture, Event};
///
/// let mut event = Event::new("1", "x.acme.session.blob", "t", "s", "a")
///     .with_capture(Capture::Full)
///     .with_data(serde_json::json!({"anything": "verbatim"}));
/// assert_eq!(downlevel_in_place(&mut event, Capture::Metadata), Capture::Metadata);
/// assert_eq!(event.data(), None); // no annotations: data dropped wholesale
/// ```
pub fn downlevel_in_place(event: &mut Event, ceiling: Capture) -> Capture {
    let target = honored_level(event.capture(), ceiling);
    lower(event, target, None)
}

/// Down-levels `event` in place to `ceiling` as a **redacting re-emitter**
/// (AEP-0001 §8.2(e)): a `full` event at a `redacted` ceiling lands on `redacted`,
/// because this hop passes every `redacted`-gated and `[metadata*]` field it keeps
/// through `redact`, which must apply the AEP-0003 §9.4 pipeline (e.g. the `redact`
/// module's value redaction). Below `redacted` it is [`downlevel_in_place`]. Returns the
/// capture level the event now honors.
///
/// Holding this hop to the pipeline is the caller's responsibility: it carries the same
/// incident-grade duty as an emitting adapter.
///
/// ```
/// use aep_core::{capture::downlevel_redacting, Capture, Event};
/// use serde_json::{json, Value};
///
/// let mut event = Event::new("1", "tool.completed", "t", "s", "a")
///     .with_capture(Capture::Full)
///     .with_data(json!({"tool": {"name": "Bash"}, "result": "token=abc", "result_redacted": "token=abc"}));
/// let level = downlevel_redacting(&mut event, Capture::Redacted, |v: &mut Value| {
///     *v = json!("[REDACTED:secret]"); // stands in for the AEP-0003 §9.4 pipeline
/// });
/// assert_eq!(level, Capture::Redacted);
/// assert_eq!(event.data(), Some(json!({"tool": {"name": "Bash"}, "result_redacted": "[REDACTED:secret]"})));
/// ```
pub fn downlevel_redacting<F: FnMut(&mut Value)>(
    event: &mut Event,
    ceiling: Capture,
    mut redact: F,
) -> Capture {
    let target = event.capture().min(ceiling);
    lower(event, target, Some(&mut redact))
}

/// Lowers `event` to `target` (at most its current level), passing the content it keeps
/// at `redacted` through `redact` when given.
fn lower(
    event: &mut Event,
    target: Capture,
    redact: Option<&mut dyn FnMut(&mut Value)>,
) -> Capture {
    let from = event.capture();
    if target >= from {
        return from;
    }
    event.set_capture(Some(target));
    let Some(raw) = event.data_raw() else {
        return target;
    };
    let annotations = match type_capture(event.event_type()) {
        Some(t) if target > Capture::None => t,
        _ => {
            event.set_data_raw(None);
            return target;
        }
    };
    let mut hop = Hop {
        target,
        agent: event.agent(),
        subject: event.subject().filter(|s| !s.is_empty()),
        redact: redact.filter(|_| target == Capture::Redacted),
    };
    let mut out = Vec::with_capacity(raw.get().len());
    let pruned = match hop.object_raw(raw.get(), annotations.fields, &mut out) {
        Ok(()) => String::from_utf8(out)
            .ok()
            .and_then(|text| RawValue::from_string(text).ok()),
        // Not an object, so there are no annotated members to keep.
        Err(_) => None,
    };
    event.set_data_raw(pruned);
    target
}

/// One down-leveling pass: the level it lands on and the envelope facts the prompt
/// synthesis of AEP-0003 §9.2 may use.
struct Hop<'e, 'r> {
    target: Capture,
    agent: &'e str,
    subject: Option<&'e str>,
    /// Set only for a redacting re-emitter landing on `redacted`.
    redact: Option<&'r mut dyn FnMut(&mut Value)>,
}

impl Hop<'_, '_> {
    /// Writes the object `raw` pruned against `fields` to `out`. Members kept whole keep
    /// their exact bytes (number spellings included, as a relay forwards them).
    fn object_raw(
        &mut self,
        raw: &str,
        fields: &[FieldCapture],
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        let Members(members) = serde_json::from_str(raw)?;
        let degrade = self.target < Capture::Redacted;
        let mut first = true;
        out.push(b'{');
        for (name, value) in &members {
            let field = fields.iter().find(|f| f.name == name);
            if field.is_some_and(|f| f.capture > self.target) {
                continue;
            }
            let exception = field.and_then(|f| f.exception).filter(|_| degrade);
            let replacement = match exception {
                None => None,
                Some(e) => match self.degraded(e, value, &members)? {
                    Some(text) => Some(text),
                    // A [metadata*] field with nothing structural to keep is dropped.
                    None => continue,
                },
            };
            if !first {
                out.push(b',');
            }
            first = false;
            serde_json::to_writer(&mut *out, name)?;
            out.push(b':');
            let content =
                field.is_some_and(|f| f.capture == Capture::Redacted || f.exception.is_some());
            let at = out.len();
            match (replacement, field) {
                (Some(text), _) => out.extend_from_slice(text.as_bytes()),
                (None, Some(f)) if !f.properties.is_empty() || !f.items.is_empty() => {
                    self.value_raw(value, f, out)?;
                }
                // Leaves, and members the schema does not name (metadata, AEP-0002 §5.1
                // rule 4), stay whole.
                _ => out.extend_from_slice(value.get().as_bytes()),
            }
            if content {
                if let Some(redact) = self.redact.as_mut() {
                    // AEP-0001 §8.2(e): a redacting re-emitter passes every redacted-gated
                    // and [metadata*] field it keeps through the §9.4 pipeline.
                    let mut kept: Value = serde_json::from_slice(&out[at..])?;
                    redact(&mut kept);
                    out.truncate(at);
                    serde_json::to_writer(&mut *out, &kept)?;
                }
            }
        }
        if degrade {
            // A label placeholder stands in even where the label itself was missing.
            for f in fields
                .iter()
                .filter(|f| f.exception == Some(Exception::IdLabel))
            {
                if members.iter().any(|(k, _)| k == f.name) {
                    continue;
                }
                if let Some((_, id)) = members.iter().find(|(k, _)| k == "id") {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    serde_json::to_writer(&mut *out, f.name)?;
                    out.push(b':');
                    serde_json::to_writer(&mut *out, &placeholder(id)?)?;
                }
            }
        }
        out.push(b'}');
        Ok(())
    }

    fn value_raw(
        &mut self,
        raw: &RawValue,
        field: &FieldCapture,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'{') => self.object_raw(text, field.properties, out),
            Some(b'[') if !field.items.is_empty() => {
                // An item where an object with a [metadata*] label belongs carries content
                // of unknown shape below `redacted`.
                let drop_scalars = self.target < Capture::Redacted
                    && field.items.iter().any(|f| f.exception.is_some());
                let items: Vec<&RawValue> = serde_json::from_str(text)?;
                let mut first = true;
                out.push(b'[');
                for item in items {
                    let is_object = item.get().starts_with('{');
                    if !is_object && drop_scalars {
                        continue;
                    }
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    if is_object {
                        self.object_raw(item.get(), field.items, out)?;
                    } else {
                        out.extend_from_slice(item.get().as_bytes());
                    }
                }
                out.push(b']');
                Ok(())
            }
            _ => {
                out.extend_from_slice(text.as_bytes());
                Ok(())
            }
        }
    }

    /// The structural stand-in of a `[metadata*]` field (AEP-0002 §5.3) below `redacted`
    /// as JSON text, or `None` when nothing structural is left to keep.
    fn degraded(
        &self,
        exception: Exception,
        value: &RawValue,
        siblings: &[(Cow<'_, str>, &RawValue)],
    ) -> Result<Option<String>, serde_json::Error> {
        let sibling = |name: &str| siblings.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        match exception {
            Exception::SynthesizedPrompt => {
                if !value.get().starts_with('"') {
                    return Ok(None);
                }
                let kind = match sibling("kind").map(|k| serde_json::from_str::<String>(k.get())) {
                    Some(Ok(kind)) => kind,
                    _ => "attention".to_owned(),
                };
                // AEP-0003 §9.2: synthesized from envelope facts only.
                let prompt = match self.subject {
                    Some(subject) => format!("{} requests {kind}: {subject}", self.agent),
                    None => format!("{} requests {kind}", self.agent),
                };
                serde_json::to_string(&prompt).map(Some)
            }
            Exception::IdLabel => match sibling("id") {
                Some(id) => serde_json::to_string(&placeholder(id)?).map(Some),
                None => Ok(None),
            },
            Exception::StructuralValues => {
                if !value.get().starts_with('{') {
                    return Ok(None);
                }
                let Members(values) = serde_json::from_str(value.get())?;
                let mut out = Vec::with_capacity(value.get().len());
                out.push(b'{');
                let structural = values.iter().filter(|(_, v)| {
                    // Numbers and booleans only: a string may be free text, and an array's
                    // ids cannot be checked without the request's field_spec.
                    matches!(
                        v.get().as_bytes().first(),
                        Some(b'-' | b'0'..=b'9' | b't' | b'f')
                    )
                });
                for (i, (k, v)) in structural.enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut out, k)?;
                    out.push(b':');
                    out.extend_from_slice(v.get().as_bytes());
                }
                out.push(b'}');
                Ok(String::from_utf8(out).ok())
            }
        }
    }
}

/// An object's members in wire order, values as raw JSON borrowed from the input.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(Key(key)) = map.next_key()? {
                    members.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

/// A member name, borrowed unless it holds escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A structural id as label text: a string as it is, any other JSON as its JSON text.
fn placeholder(id: &RawValue) -> Result<String, serde_json::Error> {
    if id.get().starts_with('"') {
        serde_json::from_str(id.get())
    } else {
        Ok(id.get().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(ty: &str, capture: Capture, data: Value) -> Event {
        Event::new("1", ty, "t", "aep://h/agent/a", "a")
            .with_capture(capture)
            .with_data(data)
    }

    #[test]
    fn levels_never_rise_and_never_mint_redacted() {
        for from in Capture::ALL {
            for ceiling in Capture::ALL {
                let got = honored_level(from, ceiling);
                assert!(got <= from, "{from} at {ceiling} rose to {got}");
                if got != from {
                    assert_ne!(
                        got,
                        Capture::Redacted,
                        "{from} at {ceiling} minted redacted"
                    );
                    assert!(got <= ceiling);
                }
            }
        }
    }

    #[test]
    fn unannotated_members_of_registered_types_stay() {
        let e = event(
            "control.pause",
            Capture::Full,
            json!({"vendor": {"note": "x"}}),
        );
        let out = downlevel(&e, Capture::Metadata);
        assert_eq!(out.data(), Some(json!({"vendor": {"note": "x"}})));
    }

    #[test]
    fn reserved_and_non_object_payloads_are_dropped() {
        let e = event(
            "message.user.submitted",
            Capture::Full,
            json!({"text": "hi"}),
        );
        assert_eq!(downlevel(&e, Capture::Metadata).data(), None);
        let e = event("tool.completed", Capture::Full, json!("verbatim"));
        assert_eq!(downlevel(&e, Capture::Metadata).data(), None);
    }

    #[test]
    fn misshapen_exception_fields_are_dropped() {
        let e = event(
            "attention.requested",
            Capture::Redacted,
            json!({"kind": "input", "prompt": "p", "options": ["free text", {"label": "no id"}, {"id": 7, "label": "Seven"}]}),
        );
        let out = downlevel(&e, Capture::Metadata);
        assert_eq!(
            out.data(),
            Some(
                json!({"kind": "input", "prompt": "a requests input", "options": [{}, {"id": 7, "label": "7"}]})
            )
        );
        let e = event(
            "attention.answered",
            Capture::Redacted,
            json!({"answer": {"values": "free text"}}),
        );
        assert_eq!(
            downlevel(&e, Capture::Metadata).data(),
            Some(json!({"answer": {}}))
        );
    }

    #[test]
    fn kept_members_keep_their_bytes() {
        let line = r#"{"aep":"0.1","id":"1","type":"resource.retrieval.returned","time":"t","source":"s","agent":"a","capture":"full","data":{"documents":[{"id":"d","score":0.5510,"content":"x","metadata":{"rank":1.0}}],"x_v\u0065ndor":1e3}}"#;
        let e: Event = line.parse().expect("event");
        let out = downlevel(&e, Capture::Metadata);
        assert_eq!(
            out.data_raw().map(|r| r.get()),
            Some(
                r#"{"documents":[{"id":"d","score":0.5510,"metadata":{"rank":1.0}}],"x_vendor":1e3}"#
            )
        );
    }

    #[test]
    fn a_redacting_re_emitter_lands_on_redacted_and_redacts_what_it_keeps() {
        let data = json!({
            "kind": "permission", "prompt": "Run rm -rf?", "context": {"cwd": "/home/u"},
            "options": [{"id": "allow", "label": "Allow it"}],
            "x_vendor": "kept as metadata",
        });
        let mut e = event("attention.requested", Capture::Full, data);
        let mut calls = Vec::new();
        let level = downlevel_redacting(&mut e, Capture::Redacted, |v: &mut Value| {
            calls.push(v.clone());
            *v = json!("[R]");
        });
        assert_eq!(level, Capture::Redacted);
        assert_eq!(
            e.data(),
            Some(
                json!({"kind": "permission", "prompt": "[R]", "options": [{"id": "allow", "label": "[R]"}], "x_vendor": "kept as metadata"})
            )
        );
        assert_eq!(calls, vec![json!("Run rm -rf?"), json!("Allow it")]);
    }

    #[test]
    fn a_redacting_re_emitter_below_redacted_is_mechanical() {
        let data = json!({"tool": {"name": "Bash"}, "error": {"type": "E", "message": "m"}});
        let mut calls = 0;
        let mut e = event("tool.failed", Capture::Full, data.clone());
        let level = downlevel_redacting(&mut e, Capture::Metadata, |_: &mut Value| calls += 1);
        assert_eq!(level, Capture::Metadata);
        assert_eq!(
            e.data(),
            Some(json!({"tool": {"name": "Bash"}, "error": {"type": "E"}}))
        );
        // A redacted source keeps the claim minted at the source, untouched.
        let mut e = event("tool.failed", Capture::Redacted, data.clone());
        let before = e.to_json();
        assert_eq!(
            downlevel_redacting(&mut e, Capture::Redacted, |_: &mut Value| calls += 1),
            Capture::Redacted
        );
        assert_eq!(e.to_json(), before);
        assert_eq!(calls, 0);
    }

    #[test]
    fn data_absent_stays_absent() {
        let e = Event::new("1", "tool.completed", "t", "s", "a").with_capture(Capture::Full);
        let out = downlevel(&e, Capture::None);
        assert_eq!(out.capture_attr(), Some(Capture::None));
        assert_eq!(out.data_raw().map(|r| r.get()), None);
    }
}
