//! An answer checked against its request: AEP-0006's form rules (shared with the stream
//! validator, [`form_problems`]) and AEP-0008's text answers; [`Answer`] applied or
//! [`InvalidAnswer`].

use std::fmt;

use serde_json::{Map, Value};

use crate::payload::{
    AttentionAnsweredAnswer, AttentionRequestedField, AttentionRequestedKind,
    AttentionRequestedOption, ControlAttentionRespondAnswer,
};

/// How an [`Answer`] was derived from what the responder sent.
///
/// ```
/// use aep_core::attention::{Applied, AttentionRequest};
/// use aep_core::payload::ControlAttentionRespondAnswer;
/// let r = AttentionRequest::permission("Go?");
/// let a = r.check_answer(&ControlAttentionRespondAnswer { option: Some("allow".into()), ..Default::default() })?;
/// assert_eq!(a.applied(), Applied::AsSent);
/// # Ok::<(), aep_core::attention::InvalidAnswer>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Applied {
    /// As sent: an offered option, free text, or form values.
    AsSent,
    /// Text that named an option (its id, or exactly one label, trimmed, in any case)
    /// applied as that option; the matched word is the decision, not kept as text
    /// (AEP-0008).
    TextNamedOption,
    /// Text that named no option of a permission request, applied as the request's
    /// refusing option with the text kept as the reason (AEP-0008: never the
    /// permissive choice).
    TextRefused,
}

/// An answer as applied (AEP-0002 §5.3: "the recorded `answer` always states what was
/// actually applied"): an option of the request, free text, form values, or an option
/// with accompanying text. What an agent acts on, and what `attention.answered` records.
///
/// ```
/// use aep_core::attention::AttentionRequest;
/// use aep_core::payload::ControlAttentionRespondAnswer;
/// let r = AttentionRequest::choice("Which database?", [("pg", "PostgreSQL"), ("lite", "SQLite")]);
/// let a = r.check_answer(&ControlAttentionRespondAnswer { text: Some("sqlite".into()), ..Default::default() })?;
/// assert!(a.is("lite"));
/// assert_eq!(serde_json::to_value(a.to_payload()).unwrap(), serde_json::json!({"option": "lite"}));
/// # Ok::<(), aep_core::attention::InvalidAnswer>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    option: Option<String>,
    text: Option<String>,
    values: Option<Map<String, Value>>,
    applied: Applied,
    /// Set by the desk: the request answered and who answered it.
    request: Option<String>,
    by: Option<String>,
}

impl Answer {
    /// The option applied, when the answer is (or maps to) one.
    pub fn option(&self) -> Option<&str> {
        self.option.as_deref()
    }

    /// The free text: the answer itself, or the reason given with an option.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// A form's values by field id (AEP-0006).
    pub fn values(&self) -> Option<&Map<String, Value>> {
        self.values.as_ref()
    }

    /// Whether the option applied is `option_id`.
    pub fn is(&self, option_id: &str) -> bool {
        self.option.as_deref() == Some(option_id)
    }

    /// How the answer was derived from what was sent.
    pub fn applied(&self) -> Applied {
        self.applied
    }

    /// The id of the `attention.requested` event answered, once a desk matched the
    /// answer to its request.
    pub fn request_id(&self) -> Option<&str> {
        self.request.as_deref()
    }

    /// Who answered: the `agent` of the `control.attention.respond` (an asserted
    /// identity, AEP-0004 §8), once a desk matched the answer to its request.
    pub fn by(&self) -> Option<&str> {
        self.by.as_deref()
    }

    /// The same answer, matched to `request` and answered by `by`.
    pub(super) fn matched(mut self, request: &str, by: &str) -> Answer {
        self.request = Some(request.to_owned());
        self.by = Some(by.to_owned());
        self
    }

    /// The `answer` member of `attention.answered`.
    pub fn to_payload(&self) -> AttentionAnsweredAnswer {
        AttentionAnsweredAnswer {
            option: self.option.clone(),
            text: self.text.clone(),
            values: self.values.clone(),
            extra: Map::new(),
        }
    }
}

/// Why an answer does not answer its request: the command is nacked
/// `control.rejected{reason:"invalid"}` with this as its detail, and the request stays
/// pending (AEP-0006). The detail never quotes the responder's text, since an ack's
/// detail is emitted at the emitter's ceiling.
///
/// ```
/// use aep_core::attention::{AttentionRequest, InvalidAnswer};
/// use aep_core::payload::ControlAttentionRespondAnswer;
/// let r = AttentionRequest::permission("Go?");
/// let e = r.check_answer(&ControlAttentionRespondAnswer { option: Some("maybe".into()), ..Default::default() }).unwrap_err();
/// assert!(matches!(e, InvalidAnswer::UnknownOption { .. }));
/// assert!(e.to_string().contains("allow, deny"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidAnswer {
    /// The command's payload is not a `control.attention.respond` payload.
    #[error("the command carries no `answer` object (AEP-0004 §5): {0}")]
    Malformed(String),
    /// No option, no text, no values.
    #[error("the answer is empty: give an option, text or values")]
    Empty,
    /// An option the request did not offer.
    #[error("the option is not one this request offers; its options are {known}")]
    UnknownOption {
        /// The option sent.
        option: String,
        /// The offered ids, comma-separated.
        known: String,
    },
    /// An option for a request that offered none.
    #[error("this request offers no options: answer with text")]
    NoOptions,
    /// `values` for a request that is not a form.
    #[error("values answer a form (AEP-0006) and this request is not one")]
    ValuesWithoutForm,
    /// A form answered without `values` (or with an option).
    #[error("this form is answered with values, a map of field id to answer (AEP-0006)")]
    FormNeedsValues,
    /// Form values that break AEP-0006's rules.
    #[error("the form values are invalid (AEP-0006): {}", list(.0))]
    Values(Vec<FormProblem>),
    /// Text naming no option of a permission request that has no refusing option to
    /// apply it as (AEP-0008: never the permissive choice).
    #[error("the text names no option of this permission request, and text is never applied as permission (AEP-0008): answer with one of its options ({known})")]
    UnmatchedPermissionText {
        /// The offered ids, comma-separated.
        known: String,
    },
}

/// The first problems, and how many more: a nack's detail stays short whatever the
/// answer held.
fn list(problems: &[FormProblem]) -> String {
    const SHOWN: usize = 5;
    let mut text = problems
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > SHOWN {
        text.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    text
}

/// One way form `values` break AEP-0006 (AEP-0002 §5.3 `attention.answered`): the rule
/// a target checks before applying an answer and the stream validator checks on the
/// recorded one. Its text never quotes the value.
///
/// ```
/// use aep_core::attention::{form_problems, FormProblem};
/// use serde_json::json;
/// let fields = json!([{"id": "n", "type": "number", "label": "N", "min": 1, "max": 3, "required": true}]);
/// let values = json!({"n": 9});
/// let problems = form_problems(&fields, values.as_object().unwrap());
/// assert!(matches!(&problems[..], [FormProblem::OutOfRange { field, .. }] if field == "n"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FormProblem {
    /// A `required: true` field has no value.
    #[error("required field `{field}` is not answered")]
    Missing {
        /// The field id.
        field: String,
    },
    /// The value is not of its field's type.
    #[error("field `{field}` takes {expected}")]
    WrongType {
        /// The field id.
        field: String,
        /// What the field takes: `a string`, `a number`, `a boolean`.
        expected: &'static str,
    },
    /// A value of a `select` field that is not one of its `choices[].id`, where the field
    /// does not allow `other` free text.
    #[error("a value of select field `{field}` is not one of its choices[].id, and the field does not allow other free text")]
    NotAChoice {
        /// The field id.
        field: String,
    },
    /// An array for a single-select field, or a single value for a `multi` one.
    #[error("select field `{field}` takes {expected}")]
    Shape {
        /// The field id.
        field: String,
        /// `one choice id` or `an array of choice ids`.
        expected: &'static str,
    },
    /// A number outside the field's `min`..`max`.
    #[error("field `{field}` is outside its range")]
    OutOfRange {
        /// The field id.
        field: String,
    },
    /// A key that names no field of the form (the key, the responder's, is not quoted).
    #[error("a key of the values names no field of this form")]
    UnknownField {
        /// The key.
        field: String,
    },
}

impl FormProblem {
    /// The field (or key) the problem is about.
    pub fn field(&self) -> &str {
        match self {
            FormProblem::Missing { field }
            | FormProblem::WrongType { field, .. }
            | FormProblem::NotAChoice { field }
            | FormProblem::Shape { field, .. }
            | FormProblem::OutOfRange { field }
            | FormProblem::UnknownField { field } => field,
        }
    }
}

/// Every way `values` break the AEP-0006 rules of the form whose `fields` (the
/// `attention.requested` payload's, as JSON) they answer: a required field unanswered,
/// a value not of its field's type (a number outside `min`..`max` included), a
/// `select` value that is not a `choices[].id` where `other` is not allowed, an array
/// for a single-select or a single value for a `multi` one, a key that is no field.
///
/// A field whose spec is malformed (no `id`) is skipped: the payload schema reports it.
///
/// ```
/// use aep_core::attention::form_problems;
/// use serde_json::json;
/// let fields = json!([
///     {"id": "db", "type": "select", "label": "DB", "choices": [{"id": "pg", "label": "PostgreSQL"}]},
///     {"id": "why", "type": "string", "label": "Why", "required": true},
/// ]);
/// let ok = json!({"db": "pg", "why": "it is what we run"});
/// assert!(form_problems(&fields, ok.as_object().unwrap()).is_empty());
/// let bad = json!({"db": "mysql"});
/// assert_eq!(form_problems(&fields, bad.as_object().unwrap()).len(), 2); // not a choice, why missing
/// ```
pub fn form_problems(fields: &Value, values: &Map<String, Value>) -> Vec<FormProblem> {
    let fields = fields.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = Vec::new();
    for field in fields {
        let Some(fid) = field.get("id").and_then(Value::as_str) else {
            continue;
        };
        let flag = |name: &str| field.get(name).and_then(Value::as_bool).unwrap_or(false);
        let Some(value) = values.get(fid) else {
            if flag("required") {
                out.push(FormProblem::Missing {
                    field: fid.to_owned(),
                });
            }
            continue;
        };
        if let Some(p) = value_problem(field, fid, value, flag("multi"), flag("other")) {
            out.push(p);
        }
    }
    for key in values.keys() {
        if !fields
            .iter()
            .any(|f| f.get("id").and_then(Value::as_str) == Some(key))
        {
            out.push(FormProblem::UnknownField { field: key.clone() });
        }
    }
    out
}

/// What is wrong with `value` as the answer to `field`, if anything.
fn value_problem(
    field: &Value,
    fid: &str,
    value: &Value,
    multi: bool,
    other: bool,
) -> Option<FormProblem> {
    let field_id = || fid.to_owned();
    let wrong = |expected| {
        Some(FormProblem::WrongType {
            field: field_id(),
            expected,
        })
    };
    match field.get("type").and_then(Value::as_str) {
        Some("string") if !value.is_string() => wrong("a string"),
        Some("boolean") if !value.is_boolean() => wrong("a boolean"),
        Some("number") => {
            let Some(n) = value.as_f64() else {
                return wrong("a number");
            };
            let bound = |name: &str| field.get(name).and_then(Value::as_f64);
            let below = bound("min").is_some_and(|min| n < min);
            let above = bound("max").is_some_and(|max| n > max);
            (below || above).then(|| FormProblem::OutOfRange { field: field_id() })
        }
        Some("select") => {
            let answers = match (value, multi) {
                (Value::Array(many), true) => many.as_slice(),
                (Value::Array(_), false) => {
                    return Some(FormProblem::Shape {
                        field: field_id(),
                        expected: "one choice id",
                    });
                }
                (_, true) => {
                    return Some(FormProblem::Shape {
                        field: field_id(),
                        expected: "an array of choice ids",
                    });
                }
                (one, false) => std::slice::from_ref(one),
            };
            let choices = field
                .get("choices")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let is_choice = |s: &str| {
                choices
                    .iter()
                    .any(|c| c.get("id").and_then(Value::as_str) == Some(s))
            };
            let bad = answers.iter().any(|a| match a.as_str() {
                Some(s) => !is_choice(s) && !other,
                None => true,
            });
            bad.then(|| FormProblem::NotAChoice { field: field_id() })
        }
        _ => None,
    }
}

/// The offered option ids, comma-separated (for a nack's detail).
fn known(options: &[AttentionRequestedOption]) -> String {
    options
        .iter()
        .map(|o| o.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The option `text` names (AEP-0008): after trimming, case-insensitively, an option's
/// id, or else exactly one option's label.
fn named_option<'a>(options: &'a [AttentionRequestedOption], text: &str) -> Option<&'a str> {
    let t = text.trim();
    let same = |a: &str| a.trim() == t || a.trim().to_lowercase() == t.to_lowercase();
    if let Some(o) = options.iter().find(|o| o.id == t) {
        return Some(&o.id);
    }
    let mut by_id = options.iter().filter(|o| same(&o.id));
    if let (Some(o), None) = (by_id.next(), by_id.next()) {
        return Some(&o.id);
    }
    let mut by_label = options.iter().filter(|o| same(&o.label));
    match (by_label.next(), by_label.next()) {
        (Some(o), None) => Some(&o.id),
        _ => None,
    }
}

/// What an answer is checked against: the parts of the request it answers. Declared
/// here, and filled in by the request, so that answers need not know requests.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked<'a> {
    pub(super) kind: AttentionRequestedKind,
    pub(super) fields: &'a [AttentionRequestedField],
    pub(super) options: &'a [AttentionRequestedOption],
    /// The option a permission's unmatched text is applied as (AEP-0008).
    pub(super) refusing: Option<&'a str>,
}

/// [`AttentionRequest::check_answer`](super::AttentionRequest::check_answer).
pub(super) fn check(
    request: Asked<'_>,
    answer: &ControlAttentionRespondAnswer,
) -> Result<Answer, InvalidAnswer> {
    // Blank text is no text: a reply box left empty says nothing.
    let text = answer
        .text
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .map(str::to_owned);
    let made = |option: Option<String>, text: Option<String>, applied| Answer {
        option,
        text,
        values: None,
        applied,
        request: None,
        by: None,
    };
    if request.kind == AttentionRequestedKind::Form {
        let (None, Some(values)) = (&answer.option, &answer.values) else {
            return Err(InvalidAnswer::FormNeedsValues);
        };
        let fields = serde_json::to_value(request.fields)
            .map_err(|e| InvalidAnswer::Malformed(e.to_string()))?;
        let problems = form_problems(&fields, values);
        if !problems.is_empty() {
            return Err(InvalidAnswer::Values(problems));
        }
        return Ok(Answer {
            option: None,
            text,
            values: Some(values.clone()),
            applied: Applied::AsSent,
            request: None,
            by: None,
        });
    }
    if answer.values.is_some() {
        return Err(InvalidAnswer::ValuesWithoutForm);
    }
    let options = request.options;
    match (&answer.option, text) {
        (Some(option), text) => {
            if options.is_empty() {
                return Err(InvalidAnswer::NoOptions);
            }
            if !options.iter().any(|o| &o.id == option) {
                return Err(InvalidAnswer::UnknownOption {
                    option: option.clone(),
                    known: known(options),
                });
            }
            Ok(made(Some(option.clone()), text, Applied::AsSent))
        }
        (None, Some(text)) if !options.is_empty() => {
            if let Some(id) = named_option(options, &text) {
                return Ok(made(Some(id.to_owned()), None, Applied::TextNamedOption));
            }
            if request.kind != AttentionRequestedKind::Permission {
                return Ok(made(None, Some(text), Applied::AsSent));
            }
            match request.refusing {
                Some(refusing) => Ok(made(
                    Some(refusing.to_owned()),
                    Some(text),
                    Applied::TextRefused,
                )),
                None => Err(InvalidAnswer::UnmatchedPermissionText {
                    known: known(options),
                }),
            }
        }
        (None, Some(text)) => Ok(made(None, Some(text), Applied::AsSent)),
        (None, None) => Err(InvalidAnswer::Empty),
    }
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Applied::AsSent => "as sent",
            Applied::TextNamedOption => "text naming an option",
            Applied::TextRefused => "text applied as the refusing option",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::{AttentionKind, AttentionRequest, FormField};
    use serde_json::json;

    fn respond(v: Value) -> ControlAttentionRespondAnswer {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn permission_text_is_never_the_permissive_choice() {
        let r = AttentionRequest::permission("Go?");
        for word in ["allow", "Allow", "  ALLOW\n", "allow "] {
            let a = r.check_answer(&respond(json!({"text": word}))).unwrap();
            assert_eq!(
                (a.option(), a.applied()),
                (Some("allow"), Applied::TextNamedOption)
            );
        }
        for other in ["yes", "ok", "allow it", "sure, go ahead", "deny?"] {
            let a = r.check_answer(&respond(json!({"text": other}))).unwrap();
            assert_eq!(a.option(), Some("deny"), "{other}");
            assert_eq!(a.text(), Some(other));
            assert_eq!(a.applied(), Applied::TextRefused);
        }
        // Without a refusing option, unmatched text is refused outright.
        let bare = AttentionRequest::new(AttentionKind::Permission, "Go?")
            .option("yes", "Yes")
            .option("no", "No");
        assert!(matches!(
            bare.check_answer(&respond(json!({"text": "probably"}))),
            Err(InvalidAnswer::UnmatchedPermissionText { .. })
        ));
        // A label names its option only when exactly one option has it.
        let twice = AttentionRequest::new(AttentionKind::Permission, "Go?")
            .option("a", "Same")
            .option("b", "Same")
            .option("n", "No")
            .refusing("n");
        let a = twice
            .check_answer(&respond(json!({"text": "same"})))
            .unwrap();
        assert_eq!(a.applied(), Applied::TextRefused);
        let a = twice.check_answer(&respond(json!({"text": "NO"}))).unwrap();
        assert_eq!(
            (a.option(), a.applied()),
            (Some("n"), Applied::TextNamedOption)
        );
    }

    #[test]
    fn options_text_and_empty_answers() {
        let r = AttentionRequest::choice("Which?", [("pg", "PostgreSQL"), ("lite", "SQLite")]);
        let a = r
            .check_answer(&respond(json!({"option": "pg", "text": "the one we run"})))
            .unwrap();
        assert_eq!((a.option(), a.text()), (Some("pg"), Some("the one we run")));
        let a = r
            .check_answer(&respond(json!({"text": "MariaDB"})))
            .unwrap();
        assert_eq!((a.option(), a.text()), (None, Some("MariaDB")));
        assert!(matches!(
            r.check_answer(&respond(json!({"option": "mysql"}))),
            Err(InvalidAnswer::UnknownOption { .. })
        ));
        assert_eq!(
            r.check_answer(&respond(json!({}))),
            Err(InvalidAnswer::Empty)
        );
        assert_eq!(
            r.check_answer(&respond(json!({"text": "   "}))),
            Err(InvalidAnswer::Empty)
        );
        assert_eq!(
            r.check_answer(&respond(json!({"values": {"a": 1}}))),
            Err(InvalidAnswer::ValuesWithoutForm)
        );
        let free = AttentionRequest::input("Which branch?");
        assert_eq!(
            free.check_answer(&respond(json!({"option": "main"}))),
            Err(InvalidAnswer::NoOptions)
        );
        let a = free
            .check_answer(&respond(json!({"text": "main"})))
            .unwrap();
        assert_eq!(a.text(), Some("main"));
    }

    #[test]
    fn form_rules() {
        let r = AttentionRequest::form("Deploy")
            .field(FormField::string("service", "Service").required())
            .field(FormField::number("replicas", "Replicas").min(1.0).max(5.0))
            .field(FormField::boolean("dry", "Dry run"))
            .field(
                FormField::select("region", "Region")
                    .choice("eu", "EU")
                    .choice("us", "US"),
            )
            .field(
                FormField::select("tags", "Tags")
                    .choice("a", "A")
                    .choice("b", "B")
                    .multi(),
            )
            .field(FormField::select("db", "DB").choice("pg", "PG").other());
        r.check().unwrap();
        let ok = json!({"values": {"service": "billing", "replicas": 3, "dry": false, "region": "eu", "tags": ["a", "b"], "db": "MariaDB"}});
        let a = r.check_answer(&respond(ok)).unwrap();
        assert_eq!(a.values().map(Map::len), Some(6));
        let problems = |v: Value| match r.check_answer(&respond(json!({ "values": v }))) {
            Err(InvalidAnswer::Values(p)) => p,
            other => panic!("{other:?}"),
        };
        let fields =
            |p: Vec<FormProblem>| p.iter().map(|p| p.field().to_owned()).collect::<Vec<_>>();
        assert_eq!(fields(problems(json!({"replicas": 2}))), ["service"]);
        assert_eq!(
            fields(problems(
                json!({"service": 1, "replicas": 9, "dry": "no", "region": "mars", "tags": "a", "x": 1})
            )),
            ["service", "replicas", "dry", "region", "tags", "x"]
        );
        assert!(matches!(
            &problems(json!({"service": "s", "region": ["eu"]}))[..],
            [FormProblem::Shape { .. }]
        ));
        assert_eq!(
            r.check_answer(&respond(json!({"option": "eu"}))),
            Err(InvalidAnswer::FormNeedsValues)
        );
        assert_eq!(
            r.check_answer(&respond(json!({"text": "eu"}))),
            Err(InvalidAnswer::FormNeedsValues)
        );
        // Nothing the responder wrote appears in a nack's detail, which stays short.
        let e = r
            .check_answer(&respond(
                json!({"values": {"service": "s", "region": "secret-region", "secret-key": 1}}),
            ))
            .unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
        let many: Map<String, Value> = (0..10_000).map(|i| (format!("k{i}"), json!(i))).collect();
        let e = r
            .check_answer(&respond(json!({ "values": many })))
            .unwrap_err();
        assert!(e.to_string().len() < 1_000, "{e}");
        assert!(e.to_string().ends_with("and 9996 more"), "{e}");
    }
}
