//! AEP-0006 forms: `attention.requested(kind: "form")` field specs built from the
//! vendors' ask-the-user surfaces (Claude Code's `AskUserQuestion`, MCP elicitation
//! schemas, Kilo Code's questions, Hermes's `clarify`, the Kimi web channel's
//! questions).
//!
//! Field and choice labels are model-generated content: they carry the `[metadata*]`
//! exception of AEP-0002 §5.3, so each form is built twice, with its labels (kept at
//! `redacted` and above, through the pipeline) and with structural placeholders (the
//! field or choice id) for `metadata`. Ids stay structural at every level so an
//! `answer.values` map means the same thing at any ceiling.

use serde_json::{json, Map, Value};

use crate::json::{get, s, scalar_text};

/// One form field (AEP-0002 §5.2 `field_spec`).
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The field id, structural.
    pub id: String,
    /// `string`, `number`, `boolean` or `select`.
    pub kind: &'static str,
    /// The label (content).
    pub label: String,
    /// `required`, when the vendor states it.
    pub required: Option<bool>,
    /// `other: true` where the vendor offers a free-text escape.
    pub other: bool,
    /// `multi: true` for a multiple-choice select.
    pub multi: bool,
    /// The choices of a select: `(id, label)`.
    pub choices: Vec<(String, String)>,
    /// `min` and `max`, when the schema states them.
    pub bounds: (Option<Value>, Option<Value>),
}

impl Field {
    fn to_json(&self, structural: bool) -> Value {
        let mut f = Map::new();
        f.insert("id".into(), json!(self.id));
        f.insert("type".into(), json!(self.kind));
        let label = if structural { &self.id } else { &self.label };
        f.insert("label".into(), json!(label));
        if let Some(r) = self.required {
            f.insert("required".into(), json!(r));
        }
        if self.other {
            f.insert("other".into(), json!(true));
        }
        if !self.choices.is_empty() || self.kind == "select" {
            let choices: Vec<Value> = self
                .choices
                .iter()
                .map(|(id, label)| json!({"id": id, "label": if structural { id } else { label }}))
                .collect();
            f.insert("choices".into(), Value::Array(choices));
        }
        if self.multi {
            f.insert("multi".into(), json!(true));
        }
        if let Some(min) = &self.bounds.0 {
            f.insert("min".into(), min.clone());
        }
        if let Some(max) = &self.bounds.1 {
            f.insert("max".into(), max.clone());
        }
        Value::Object(f)
    }
}

/// The `fields` member twice: with labels, and with the structural placeholders.
///
/// ```
/// use aep_adapters::form::{fields, Field};
/// let f = Field { id: "1".into(), kind: "select", label: "Pick".into(), required: Some(true), other: true, multi: false,
///     choices: vec![("1".into(), "A".into())], bounds: (None, None) };
/// let (content, structural) = fields(&[f]);
/// assert_eq!(content[0]["label"], "Pick");
/// assert_eq!(structural[0]["label"], "1");
/// assert_eq!(structural[0]["choices"][0]["label"], "1");
/// ```
pub fn fields(fields: &[Field]) -> (Value, Value) {
    (
        Value::Array(fields.iter().map(|f| f.to_json(false)).collect()),
        Value::Array(fields.iter().map(|f| f.to_json(true)).collect()),
    )
}

/// `"{agent} asks 1 question"` / `"{agent} asks N questions"`: the structural prompt of
/// a question batch.
///
/// ```
/// assert_eq!(aep_adapters::form::asks("kilocode", 1), "kilocode asks 1 question");
/// assert_eq!(aep_adapters::form::asks("claude-code", 2), "claude-code asks 2 questions");
/// ```
pub fn asks(agent: &str, n: usize) -> String {
    if n == 1 {
        format!("{agent} asks 1 question")
    } else {
        format!("{agent} asks {n} questions")
    }
}

/// Choices in the vendor's order, each id its 1-based index (the vendor names none).
pub(crate) fn numbered(labels: Vec<String>) -> Vec<(String, String)> {
    labels
        .into_iter()
        .enumerate()
        .map(|(i, l)| ((i + 1).to_string(), l))
        .collect()
}

/// The fields of an `AskUserQuestion`-shaped batch (Claude Code's tool input, Kilo
/// Code's `question.asked`): one `select` per question, `required`, ids and choice ids
/// 1-based indexes, the label `"{header}: {question}"`, `multi` mirroring
/// `multiSelect`, and `other` from `other_default` unless the question says `custom:
/// false`. Questions that are not objects, or have no question text, are skipped.
///
/// ```
/// use serde_json::json;
/// let q = json!([{"question": "Which?", "header": "DB", "multiSelect": true, "options": [{"label": "A"}]}]);
/// let f = aep_adapters::form::ask_user_question(&q, true);
/// assert_eq!((f[0].label.as_str(), f[0].multi, f[0].other), ("DB: Which?", true, true));
/// ```
pub fn ask_user_question(questions: &Value, other_default: bool) -> Vec<Field> {
    let Some(list) = questions.as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|q| {
            let question = s(q, "question")?;
            let label = match s(q, "header") {
                Some(h) => format!("{h}: {question}"),
                None => question.to_owned(),
            };
            let choices = get(q, "options")
                .and_then(Value::as_array)
                .map(|opts| {
                    opts.iter()
                        .filter_map(|o| match o {
                            Value::String(l) => Some(l.clone()),
                            other => s(other, "label").map(str::to_owned),
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            Some((label, choices, q))
        })
        .enumerate()
        .map(|(i, (label, choices, q))| Field {
            id: (i + 1).to_string(),
            kind: "select",
            label,
            required: Some(true),
            other: get(q, "custom")
                .and_then(Value::as_bool)
                .unwrap_or(other_default),
            multi: get(q, "multiSelect")
                .or_else(|| get(q, "multiple"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            choices: numbered(choices),
            bounds: (None, None),
        })
        .collect()
}

/// The fields of an MCP elicitation `requestedSchema` (a flat object schema): one
/// field per property, in schema order, its id the property key; `enum` → a closed
/// `select` (choice ids the enum values, labels `enumNames`), `number`/`integer` →
/// `number`, `boolean` → `boolean`, anything else `string`; `required` mirrors the
/// schema's list; the label is the `title` (or the key).
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"n": {"type": "integer", "title": "Count", "minimum": 1}}, "required": ["n"]});
/// let f = aep_adapters::form::elicitation(&schema);
/// assert_eq!((f[0].kind, f[0].required, f[0].bounds.0.clone()), ("number", Some(true), Some(json!(1))));
/// ```
pub fn elicitation(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = get(schema, "required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = get(schema, "properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(key, p)| {
            let label = get(p, "title")
                .and_then(scalar_text)
                .unwrap_or_else(|| key.clone());
            let mut field = Field {
                id: key.clone(),
                kind: "string",
                label,
                required: Some(required.contains(&key.as_str())),
                other: false,
                multi: false,
                choices: Vec::new(),
                bounds: (None, None),
            };
            if let Some(values) = get(p, "enum").and_then(Value::as_array) {
                let names = get(p, "enumNames").and_then(Value::as_array);
                field.kind = "select";
                field.choices = values
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| {
                        let id = scalar_text(v)?;
                        let label = names
                            .and_then(|n| n.get(i))
                            .and_then(scalar_text)
                            .unwrap_or_else(|| id.clone());
                        Some((id, label))
                    })
                    .collect();
            } else {
                field.kind = match get(p, "type").and_then(Value::as_str) {
                    Some("number" | "integer") => "number",
                    Some("boolean") => "boolean",
                    _ => "string",
                };
                let bound = |a: &str, b: &str| get(p, a).or_else(|| get(p, b)).cloned();
                if field.kind == "number" {
                    field.bounds = (bound("minimum", "min"), bound("maximum", "max"));
                }
            }
            field
        })
        .collect()
}
