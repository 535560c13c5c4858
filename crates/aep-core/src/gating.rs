//! Form-values gating (AEP-0006; AEP-0002 §5.3 `attention.answered.answer.values`):
//! which answers of a `kind: "form"` request a capture level lets through.
//!
//! `values` maps each `field_spec.id` of the request to its answer, and its gate depends
//! on the field: a `string` field's answer, and free text given to a `select` field with
//! `other: true`, is user-authored text (gated `redacted`, like `answer.text`); a number,
//! a boolean, or closed `choices[].id`s are structural and stay at `metadata`. A key with
//! no field_spec is dropped at every level: nothing vouches for what it holds.
//!
//! ```
//! use aep_core::{gating::gate_form_values, Capture};
//! use serde_json::json;
//!
//! let fields = json!([
//!     {"id": "name", "type": "string", "label": "Service name"},
//!     {"id": "replicas", "type": "number", "label": "Replicas"},
//!     {"id": "db", "type": "select", "label": "Database", "other": true,
//!      "choices": [{"id": "1", "label": "PostgreSQL"}]},
//! ]);
//! let values = json!({"name": "billing-api", "replicas": 3, "db": "MariaDB"});
//! assert_eq!(gate_form_values(&fields, &values, Capture::Metadata), json!({"replicas": 3}).as_object().cloned().unwrap());
//! assert_eq!(gate_form_values(&fields, &values, Capture::Redacted).len(), 3);
//! ```

use serde_json::{Map, Value};

use crate::redact::Redactor;
use crate::Capture;

/// How an answer in `values` is gated (AEP-0006). Exhaustive: AEP-0006 gates an answer
/// as structural or as free text, nothing in between.
///
/// ```
/// use aep_core::gating::{classify, ValueClass};
/// use serde_json::json;
/// assert_eq!(classify(&json!({"id": "n", "type": "string"}), &json!("hi")), ValueClass::FreeText);
/// assert_eq!(classify(&json!({"id": "n", "type": "boolean"}), &json!(true)), ValueClass::Structural);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueClass {
    /// A number, a boolean, or closed `choices[].id`s: kept at `metadata`.
    Structural,
    /// User-authored text (a `string` field, or `other` free text on a `select`):
    /// `redacted` minimum, through the AEP-0003 §9.4 pipeline.
    FreeText,
}

impl ValueClass {
    /// The lowest capture level that may carry an answer of this class.
    ///
    /// ```
    /// use aep_core::{gating::ValueClass, Capture};
    /// assert_eq!(ValueClass::FreeText.min_capture(), Capture::Redacted);
    /// assert_eq!(ValueClass::Structural.min_capture(), Capture::Metadata);
    /// ```
    pub const fn min_capture(self) -> Capture {
        match self {
            ValueClass::Structural => Capture::Metadata,
            ValueClass::FreeText => Capture::Redacted,
        }
    }
}

/// Classifies the answer `value` given to the field described by the field_spec
/// `field`.
///
/// Only what the field_spec vouches for is structural: a JSON number for a `number`
/// field, a JSON boolean for a `boolean` field, a `choices[].id` (or an array of them)
/// for a `select` field. Anything else, including a value of the wrong JSON type and a
/// field of a type this version does not know, is free text: dropping more is always
/// legal (AEP-0001 §8.2(b)), leaking is not.
///
/// ```
/// use aep_core::gating::{classify, ValueClass};
/// use serde_json::json;
///
/// let select = json!({"id": "r", "type": "select", "multi": true, "choices": [{"id": "1"}, {"id": "2"}]});
/// assert_eq!(classify(&select, &json!(["1", "2"])), ValueClass::Structural);
/// assert_eq!(classify(&select, &json!(["1", "eu-north"])), ValueClass::FreeText);
/// assert_eq!(classify(&json!({"id": "n", "type": "number"}), &json!("3")), ValueClass::FreeText);
/// ```
pub fn classify(field: &Value, value: &Value) -> ValueClass {
    let structural = match field.get("type").and_then(Value::as_str) {
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("select") => {
            let is_choice = |v: &Value| {
                v.as_str().is_some_and(|id| {
                    field
                        .get("choices")
                        .and_then(Value::as_array)
                        .is_some_and(|choices| {
                            choices
                                .iter()
                                .any(|c| c.get("id").and_then(Value::as_str) == Some(id))
                        })
                })
            };
            match value {
                Value::Array(items) => items.iter().all(is_choice),
                single => is_choice(single),
            }
        }
        _ => false,
    };
    if structural {
        ValueClass::Structural
    } else {
        ValueClass::FreeText
    }
}

/// The class of the answer under `key`, or `None` when no field_spec has that id. When
/// several field_specs share the id, the answer is structural only if every one of them
/// says so.
fn class_of(fields: &[Value], key: &str, value: &Value) -> Option<ValueClass> {
    fields
        .iter()
        .filter(|f| f.get("id").and_then(Value::as_str) == Some(key))
        .map(|f| classify(f, value))
        .reduce(|a, b| {
            if a == ValueClass::FreeText || b == ValueClass::FreeText {
                ValueClass::FreeText
            } else {
                ValueClass::Structural
            }
        })
}

/// The answers of `values` an event gated at `ceiling` may carry, given the request's
/// `fields` (AEP-0006): structural answers always, free text only at `redacted` and
/// above, keys without a field_spec never.
///
/// This gates one object inside `data`; at ceiling `none` the whole `data` is already
/// gone (AEP-0001 §8.2), which is the caller's business, so structural answers still
/// pass here. At `redacted` the caller owes the free text the §9.4 pipeline: use
/// [`gate_form_values_redacting`] to have it applied.
///
/// Tolerates any JSON: `fields` that is not an array counts as no fields (everything is
/// dropped), `values` that is not an object as no answers.
///
/// ```
/// use aep_core::{gating::gate_form_values, Capture};
/// use serde_json::json;
///
/// let fields = json!([{"id": "staged", "type": "boolean"}]);
/// let out = gate_form_values(&fields, &json!({"staged": true, "surprise": "x"}), Capture::Full);
/// assert_eq!(serde_json::Value::Object(out), json!({"staged": true}));
/// assert!(gate_form_values(&json!(null), &json!({"staged": true}), Capture::Full).is_empty());
/// ```
#[must_use]
pub fn gate_form_values(fields: &Value, values: &Value, ceiling: Capture) -> Map<String, Value> {
    gate(fields, values, ceiling, |v| v.clone())
}

/// [`gate_form_values`], with the free text kept at exactly `redacted` passed through
/// `redactor` (AEP-0003 §9.4), as an emitter honoring a `redacted` ceiling must. At `full`
/// the text stays verbatim.
///
/// ```
/// use aep_core::{gating::gate_form_values_redacting, redact::{RedactOptions, Redactor}, Capture};
/// use serde_json::json;
///
/// let redactor = Redactor::new(RedactOptions::default())?;
/// let fields = json!([{"id": "contact", "type": "string"}, {"id": "n", "type": "number"}]);
/// let values = json!({"contact": "ops@example.com", "n": 2});
/// let out = gate_form_values_redacting(&fields, &values, Capture::Redacted, &redactor);
/// assert_eq!(serde_json::Value::Object(out), json!({"contact": "[REDACTED:pii]", "n": 2}));
/// let full = gate_form_values_redacting(&fields, &values, Capture::Full, &redactor);
/// assert_eq!(full["contact"], "ops@example.com");
/// # Ok::<(), aep_core::redact::RedactError>(())
/// ```
#[must_use]
pub fn gate_form_values_redacting(
    fields: &Value,
    values: &Value,
    ceiling: Capture,
    redactor: &Redactor,
) -> Map<String, Value> {
    gate(fields, values, ceiling, |v| {
        if ceiling == Capture::Redacted {
            redactor.redact_value(v)
        } else {
            v.clone()
        }
    })
}

fn gate(
    fields: &Value,
    values: &Value,
    ceiling: Capture,
    free_text: impl Fn(&Value) -> Value,
) -> Map<String, Value> {
    let fields = fields.as_array().map(Vec::as_slice).unwrap_or_default();
    let Some(values) = values.as_object() else {
        return Map::new();
    };
    values
        .iter()
        .filter_map(|(key, value)| {
            let kept = match class_of(fields, key, value)? {
                ValueClass::Structural => value.clone(),
                ValueClass::FreeText if ceiling >= ValueClass::FreeText.min_capture() => {
                    free_text(value)
                }
                ValueClass::FreeText => return None,
            };
            Some((key.clone(), kept))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicate_field_ids_gate_conservatively() {
        let fields = json!([{"id": "x", "type": "number"}, {"id": "x", "type": "string"}]);
        assert!(gate_form_values(&fields, &json!({"x": 1}), Capture::Metadata).is_empty());
        assert_eq!(
            gate_form_values(&fields, &json!({"x": 1}), Capture::Redacted).len(),
            1
        );
    }

    #[test]
    fn hostile_shapes_are_dropped_not_fatal() {
        let fields = json!([
            {"id": "s", "type": "select", "choices": "not-an-array"},
            {"type": "number"},
            {"id": 7, "type": "boolean"},
            {"id": "future", "type": "date"},
            {"id": "b", "type": "boolean"},
        ]);
        let values = json!({"s": "1", "7": true, "future": "2026-01-01", "b": "true"});
        assert!(gate_form_values(&fields, &values, Capture::Metadata).is_empty());
        assert!(gate_form_values(&fields, &json!([1, 2]), Capture::Full).is_empty());
    }
}
