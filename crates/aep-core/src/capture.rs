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
//! ```
//! use aep_core::{capture::downlevel, Capture, Event};
//!
//! let event: Event = r#"{"aep":"0.1","id":"1","type":"tool.failed","time":"t","source":"s","agent":"a","session":"s1","seq":3,"capture":"redacted","data":{"tool":{"name":"Bash"},"error":{"type":"ExecError","message":"failed in /home/u"}}}"#.parse()?;
//! let lowered = downlevel(&event, Capture::Metadata);
//! assert_eq!(lowered.capture(), Capture::Metadata);
//! assert_eq!(lowered.data(), Some(serde_json::json!({"tool":{"name":"Bash"},"error":{"type":"ExecError"}})));
//! # Ok::<(), aep_core::EventParseError>(())
//! ```

use serde_json::{Map, Value};

use crate::event::Event;
use crate::level::Capture;
use crate::schema::{type_capture, Exception, FieldCapture};

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
    let from = event.capture();
    let target = honored_level(from, ceiling);
    if target == from {
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
    let data = match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(map)) => map,
        // A payload that is not an object has no annotated members to keep.
        _ => {
            event.set_data_raw(None);
            return target;
        }
    };
    let hop = Hop {
        target,
        agent: event.agent(),
        subject: event.subject().filter(|s| !s.is_empty()),
    };
    let pruned = hop.object(data, annotations.fields);
    event.set_data(Value::Object(pruned));
    target
}

/// One down-leveling pass: the level it lands on and the envelope facts the prompt
/// synthesis of AEP-0003 §9.2 may use.
struct Hop<'e> {
    target: Capture,
    agent: &'e str,
    subject: Option<&'e str>,
}

impl Hop<'_> {
    fn object(&self, map: Map<String, Value>, fields: &[FieldCapture]) -> Map<String, Value> {
        let mut out = Map::with_capacity(map.len());
        for (name, value) in map {
            match fields.iter().find(|f| f.name == name) {
                // Unannotated members default to metadata (AEP-0002 §5.1 rule 4), and the
                // target is at least metadata here, so they stay whole.
                None => {
                    out.insert(name, value);
                }
                Some(f) if f.capture > self.target => {}
                Some(f) => {
                    out.insert(name, self.value(value, f));
                }
            }
        }
        if self.target < Capture::Redacted {
            for f in fields.iter().filter(|f| f.exception.is_some()) {
                self.degrade(&mut out, f);
            }
        }
        out
    }

    fn value(&self, value: Value, field: &FieldCapture) -> Value {
        match value {
            Value::Object(map) => Value::Object(self.object(map, field.properties)),
            Value::Array(items) => {
                let label_exception = field
                    .items
                    .iter()
                    .any(|f| f.exception == Some(Exception::IdLabel));
                let items = items.into_iter().filter_map(|item| match item {
                    Value::Object(map) => Some(Value::Object(self.object(map, field.items))),
                    // An item where an object with a [metadata*] label belongs carries
                    // content of unknown shape below `redacted`.
                    _ if label_exception && self.target < Capture::Redacted => None,
                    other => Some(other),
                });
                Value::Array(items.collect())
            }
            other => other,
        }
    }

    /// Applies the structural degradation of one `[metadata*]` field (AEP-0002 §5.3) to
    /// the object holding it.
    fn degrade(&self, holder: &mut Map<String, Value>, field: &FieldCapture) {
        let Some(exception) = field.exception else {
            return;
        };
        match exception {
            Exception::SynthesizedPrompt => {
                if !holder.contains_key(field.name) {
                    return;
                }
                let kind = match holder.get("kind") {
                    Some(Value::String(kind)) => kind.as_str(),
                    _ => "attention",
                };
                let prompt = match self.subject {
                    Some(subject) => format!("{} requests {kind}: {subject}", self.agent),
                    None => format!("{} requests {kind}", self.agent),
                };
                holder.insert(field.name.to_owned(), Value::String(prompt));
            }
            Exception::IdLabel => match holder.get("id").map(placeholder) {
                Some(id) => {
                    holder.insert(field.name.to_owned(), Value::String(id));
                }
                None => {
                    holder.remove(field.name);
                }
            },
            Exception::StructuralValues => {
                let Some(value) = holder.get_mut(field.name) else {
                    return;
                };
                match value {
                    Value::Object(values) => {
                        values.retain(|_, v| matches!(v, Value::Number(_) | Value::Bool(_)));
                    }
                    _ => {
                        holder.remove(field.name);
                    }
                }
            }
        }
    }
}

/// A structural id as label text: a string as it is, any other JSON as its JSON text.
fn placeholder(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
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
    fn data_absent_stays_absent() {
        let e = Event::new("1", "tool.completed", "t", "s", "a").with_capture(Capture::Full);
        let out = downlevel(&e, Capture::None);
        assert_eq!(out.capture_attr(), Some(Capture::None));
        assert_eq!(out.data_raw().map(|r| r.get()), None);
    }
}
