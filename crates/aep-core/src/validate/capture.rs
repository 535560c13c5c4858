//! The capture rule of a payload (AEP-0001 §8.2(a), AEP-0002 §5.1 rule 1): an event's
//! `data` carries no field annotated above the event's declared `capture`.
//!
//! The annotations are [`crate::schema`]'s, the ones the down-leveler of
//! [`crate::capture`] drops fields by, so a field this rule flags is a field a hop at the
//! event's own level would remove. Members a schema does not name are `metadata`
//! (AEP-0002 §5.1 rule 4); the `[metadata*]` fields of AEP-0002 §5.3 are annotated
//! `metadata` and so may be present at `metadata` (their shape is the payload schema's
//! business). At `none` an event carries no payload content at all (AEP-0001 §8.2).

use serde_json::{Map, Value};

use super::{Issue, Rule};
use crate::level::Capture;
use crate::schema::{type_capture, FieldCapture};

const SECTION: &str = "AEP-0002 §5.1";

/// Appends an issue for each member of `data` annotated above `declared`. Types without
/// annotations (unregistered, vendor, reserved) are judged only at `none`.
pub(super) fn check(
    event_type: &str,
    declared: Capture,
    data: &Map<String, Value>,
    out: &mut Vec<Issue>,
) {
    if declared == Capture::None {
        if !data.is_empty() {
            out.push(Issue::new(
                Rule::PayloadCapture,
                Some("data".to_owned()),
                "the event declares capture `none` (envelope only) but carries payload content: omit `data` or declare the level it needs",
                "AEP-0001 §8.2",
            ));
        }
        return;
    }
    let Some(schema) = type_capture(event_type) else {
        return;
    };
    for (name, value) in data {
        if let Some(field) = schema.field(name) {
            field_check(field, value, &format!("data.{name}"), declared, out);
        }
    }
}

fn field_check(
    field: &FieldCapture,
    value: &Value,
    path: &str,
    declared: Capture,
    out: &mut Vec<Issue>,
) {
    if field.capture > declared {
        out.push(Issue::new(
            Rule::PayloadCapture,
            Some(path.to_owned()),
            format!(
                "`{path}` is annotated x-aep-capture `{}` but the event declares capture `{}`: omit it, or declare `{}`",
                field.capture.as_str(),
                declared.as_str(),
                field.capture.as_str()
            ),
            SECTION,
        ));
        // the field goes whole; what it holds is not judged again
        return;
    }
    match value {
        Value::Object(members) if !field.properties.is_empty() => {
            for (name, inner) in members {
                if let Some(f) = field.property(name) {
                    field_check(f, inner, &format!("{path}.{name}"), declared, out);
                }
            }
        }
        Value::Array(items) if !field.items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                if let Value::Object(members) = item {
                    for (name, inner) in members {
                        if let Some(f) = field.item(name) {
                            field_check(f, inner, &format!("{path}[{i}].{name}"), declared, out);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}
