//! [`AttentionRequest`] and [`FormField`]: what an agent asks, checked before it is
//! emitted, and its `attention.requested` payload (AEP-0002 §5.3, AEP-0006, AEP-0008).

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Number, Value};

use super::answer::{self, Answer, Asked, InvalidAnswer};
use crate::payload::{
    AttentionRequested, AttentionRequestedField, AttentionRequestedFieldChoice,
    AttentionRequestedFieldType, AttentionRequestedKind, AttentionRequestedOption,
    AttentionRequestedRespondVia, ControlAttentionRespondAnswer,
};

/// The option ids [`AttentionRequest::permission`] offers, and the one it refuses with.
///
/// ```
/// use aep_core::attention::{AttentionRequest, ALLOW, DENY};
/// let r = AttentionRequest::permission("Run `cargo publish`?");
/// assert_eq!(r.options().iter().map(|o| o.id.as_str()).collect::<Vec<_>>(), [ALLOW, DENY]);
/// assert_eq!(r.refusing_option(), Some(DENY));
/// ```
pub const ALLOW: &str = "allow";
/// The refusing option of [`AttentionRequest::permission`]; see [`ALLOW`].
pub const DENY: &str = "deny";

/// Why an [`AttentionRequest`] cannot be asked as it is.
///
/// ```
/// use aep_core::attention::{AttentionRequest, RequestError};
/// let r = AttentionRequest::form("Deploy settings");
/// assert_eq!(r.check(), Err(RequestError::FormWithoutFields));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The prompt is empty: a person has nothing to read (AEP-0002 §5.3, `prompt` REQ).
    #[error("the prompt is empty: give the question the person must read (AEP-0002 §5.3)")]
    EmptyPrompt,
    /// Two options share an id: an answer naming it would be ambiguous.
    #[error("two options have the id `{0}`: give each option its own id")]
    DuplicateOption(String),
    /// The refusing option is not one of the options.
    #[error("the refusing option `{0}` is not one of the request's options")]
    RefusingNotAnOption(String),
    /// `fields` on a request that is not `kind: "form"` (AEP-0006: present only then).
    #[error("fields are for kind form only (AEP-0006); use kind form or drop the fields")]
    FieldsWithoutForm,
    /// A `kind: "form"` request with no field.
    #[error("a form request needs at least one field (AEP-0006)")]
    FormWithoutFields,
    /// A form with options: a form is answered through its fields' `values`.
    #[error("a form request is answered through its fields' values (AEP-0006); options are for the other kinds")]
    OptionsOnForm,
    /// Two fields share an id: `values` is a map by field id.
    #[error("two form fields have the id `{0}`: `values` maps each field id to its answer")]
    DuplicateField(String),
    /// A `select` field without choices (AEP-0006: `choices` REQUIRED for `select`).
    #[error("select field `{0}` has no choices (AEP-0006: choices are required for select)")]
    SelectWithoutChoices(String),
    /// Two choices of one field share an id.
    #[error("select field `{0}` has two choices with one id")]
    DuplicateChoice(String),
    /// A number field whose `min` is above its `max`: no answer could be valid.
    #[error("number field `{0}` has min above max: no answer could be valid")]
    EmptyRange(String),
    /// The request's `respond_via` does not list `control`, so no
    /// `control.attention.respond` can answer it (AEP-0008): it cannot be waited on.
    #[error("respond_via does not list control, so no control.attention.respond can answer this request (AEP-0008); add RespondVia::Control to wait for an answer")]
    NotAnswerableByControl,
    /// A request of this id is already pending in this session.
    #[error("request `{0}` is already pending")]
    AlreadyPending(String),
}

/// What an agent asks a person (AEP-0002 §5.3 `attention.requested`): the kind, the
/// prompt, closed-choice options (and which one refuses, AEP-0008), AEP-0006 form fields,
/// the channels an answer may take (`respond_via`, `["control"]` unless set) and how long
/// to wait (`timeout`: the `expires_at` of the request and the deadline of its
/// `attention.timeout`).
///
/// Four shapes cover what agents ask: [`permission`](Self::permission) (allow or deny;
/// text that names neither is applied as the refusal, AEP-0008),
/// [`choice`](Self::choice) (input from options), [`input`](Self::input) (free text),
/// [`form`](Self::form) (typed fields, AEP-0006). [`new`](Self::new) takes any kind.
///
/// ```
/// use std::time::Duration;
/// use aep_core::attention::{AttentionRequest, FormField};
///
/// let ask = AttentionRequest::form("Deploy settings")
///     .field(FormField::string("service", "Service").required())
///     .field(FormField::number("replicas", "Replicas").min(1.0).max(10.0))
///     .field(FormField::select("region", "Region").choice("eu", "Europe").choice("us", "US"))
///     .timeout(Duration::from_secs(300));
/// ask.check()?;
/// let payload = ask.payload_at(std::time::UNIX_EPOCH);
/// assert_eq!(payload.kind.as_str(), "form");
/// assert_eq!(payload.fields.as_ref().map(Vec::len), Some(3));
/// assert_eq!(payload.expires_at.as_deref(), Some("1970-01-01T00:05:00.000Z"));
/// # Ok::<(), aep_core::attention::RequestError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionRequest {
    payload: AttentionRequested,
    refusing: Option<String>,
    timeout: Option<Duration>,
}

impl AttentionRequest {
    /// A request of `kind` with `prompt`, nothing else.
    ///
    /// ```
    /// use aep_core::attention::{AttentionKind, AttentionRequest};
    /// let r = AttentionRequest::new(AttentionKind::Review, "Review the migration plan");
    /// assert_eq!(r.kind(), AttentionKind::Review);
    /// assert!(r.options().is_empty());
    /// ```
    pub fn new(kind: AttentionRequestedKind, prompt: impl Into<String>) -> AttentionRequest {
        AttentionRequest {
            payload: AttentionRequested {
                kind,
                prompt: prompt.into(),
                options: None,
                fields: None,
                expires_at: None,
                respond_via: None,
                context: None,
                extra: Map::new(),
            },
            refusing: None,
            timeout: None,
        }
    }

    /// A permission request: options [`ALLOW`] ("Allow") and [`DENY`] ("Deny"), `deny`
    /// the refusing one, so text that names neither is applied as a denial with the text
    /// as its reason, never as permission (AEP-0008).
    ///
    /// ```
    /// use aep_core::attention::AttentionRequest;
    /// let r = AttentionRequest::permission("Delete 14 files?");
    /// assert_eq!(r.kind().as_str(), "permission");
    /// assert_eq!(r.options().len(), 2);
    /// ```
    pub fn permission(prompt: impl Into<String>) -> AttentionRequest {
        AttentionRequest::new(AttentionRequestedKind::Permission, prompt)
            .option(ALLOW, "Allow")
            .option(DENY, "Deny")
            .refusing(DENY)
    }

    /// A question answered in free text (`kind: "input"`, no options).
    ///
    /// ```
    /// let r = aep_core::attention::AttentionRequest::input("Which branch should I rebase on?");
    /// assert_eq!(r.kind().as_str(), "input");
    /// ```
    pub fn input(prompt: impl Into<String>) -> AttentionRequest {
        AttentionRequest::new(AttentionRequestedKind::Input, prompt)
    }

    /// A question answered by one of `options` (`(id, label)` pairs; `kind: "input"`).
    /// Text naming an option's id or label is that option (AEP-0008); other text is kept
    /// as a free-text answer.
    ///
    /// ```
    /// use aep_core::attention::AttentionRequest;
    /// let r = AttentionRequest::choice("Which database?", [("pg", "PostgreSQL"), ("lite", "SQLite")]);
    /// assert_eq!(r.options()[1].label, "SQLite");
    /// ```
    pub fn choice<I, A, B>(prompt: impl Into<String>, options: I) -> AttentionRequest
    where
        I: IntoIterator<Item = (A, B)>,
        A: Into<String>,
        B: Into<String>,
    {
        options.into_iter().fold(
            AttentionRequest::new(AttentionRequestedKind::Input, prompt),
            |r, (id, label)| r.option(id, label),
        )
    }

    /// A structured form (`kind: "form"`, AEP-0006); add its fields with
    /// [`field`](Self::field).
    ///
    /// ```
    /// use aep_core::attention::{AttentionRequest, FormField};
    /// let r = AttentionRequest::form("Release").field(FormField::boolean("notes", "Write release notes"));
    /// assert_eq!(r.fields()[0].id, "notes");
    /// ```
    pub fn form(prompt: impl Into<String>) -> AttentionRequest {
        AttentionRequest::new(AttentionRequestedKind::Form, prompt)
    }

    /// Adds the closed-choice option `id` labelled `label`.
    ///
    /// ```
    /// use aep_core::attention::{AttentionKind, AttentionRequest};
    /// let r = AttentionRequest::new(AttentionKind::Permission, "Push to main?")
    ///     .option("once", "Allow once").option("always", "Always allow").option("no", "Deny")
    ///     .refusing("no");
    /// assert_eq!(r.refusing_option(), Some("no"));
    /// ```
    pub fn option(mut self, id: impl Into<String>, label: impl Into<String>) -> Self {
        self.payload
            .options
            .get_or_insert_with(Vec::new)
            .push(AttentionRequestedOption {
                id: id.into(),
                label: label.into(),
                extra: Map::new(),
            });
        self
    }

    crate::setters! {
        /// The option a text answer that names no option is applied as, with the text as
        /// its stated reason (AEP-0008). Without one, such a text answer to a permission
        /// request is nacked `invalid`; it is never applied as a permissive choice.
        pub fn refusing(option_id: impl Into<String>) => refusing = Some(option_id.into());
    }

    /// Adds a form field (AEP-0006).
    pub fn field(mut self, field: FormField) -> Self {
        self.payload
            .fields
            .get_or_insert_with(Vec::new)
            .push(field.0);
        self
    }

    /// The channels an answer may take (AEP-0008 `respond_via`); `["control"]` when not
    /// set. A request waited on must list `control`.
    ///
    /// ```
    /// use aep_core::attention::{AttentionRequest, RespondVia};
    /// let r = AttentionRequest::permission("Run it?").respond_via([RespondVia::Control, RespondVia::Oob]);
    /// assert_eq!(r.payload_at(std::time::UNIX_EPOCH).respond_via.map(|v| v.len()), Some(2));
    /// ```
    pub fn respond_via(
        mut self,
        channels: impl IntoIterator<Item = AttentionRequestedRespondVia>,
    ) -> Self {
        self.payload.respond_via = Some(channels.into_iter().collect());
        self
    }

    crate::setters! {
        /// Context for the person (`context`, capture `full`: dropped below a `full`
        /// ceiling).
        pub fn context(context: Map<String, Value>) => payload.context = Some(context);

        /// How long to wait for an answer: the request's `expires_at`, and the deadline after
        /// which the loop emits `attention.timeout` (AEP-0002 §7). No limit when not set.
        pub fn timeout(after: Duration) => timeout = Some(after);
    }

    /// The kind.
    pub fn kind(&self) -> AttentionRequestedKind {
        self.payload.kind
    }

    /// The prompt.
    pub fn prompt(&self) -> &str {
        &self.payload.prompt
    }

    /// The options, in order.
    pub fn options(&self) -> &[AttentionRequestedOption] {
        self.payload.options.as_deref().unwrap_or_default()
    }

    /// The form fields, in order.
    pub fn fields(&self) -> &[AttentionRequestedField] {
        self.payload.fields.as_deref().unwrap_or_default()
    }

    /// The refusing option (AEP-0008), when there is one.
    pub fn refusing_option(&self) -> Option<&str> {
        self.refusing.as_deref()
    }

    /// How long to wait for an answer, when limited.
    pub fn timeout_after(&self) -> Option<Duration> {
        self.timeout
    }

    /// Whether an answer may come as a `control.attention.respond` (`respond_via` absent
    /// or listing `control`, AEP-0008).
    pub fn answerable_by_control(&self) -> bool {
        self.payload
            .respond_via
            .as_ref()
            .is_none_or(|v| v.contains(&AttentionRequestedRespondVia::Control))
    }

    /// Checks the request is well formed: a prompt; unique option ids, the refusing one
    /// among them; fields for a form and only there, unique, each `select` with its
    /// choices, each range non-empty.
    ///
    /// ```
    /// use aep_core::attention::{AttentionRequest, FormField, RequestError};
    /// let bad = AttentionRequest::form("x").field(FormField::select("db", "Database"));
    /// assert_eq!(bad.check(), Err(RequestError::SelectWithoutChoices("db".into())));
    /// assert_eq!(AttentionRequest::input(" ").check(), Err(RequestError::EmptyPrompt));
    /// ```
    pub fn check(&self) -> Result<(), RequestError> {
        if self.payload.prompt.trim().is_empty() {
            return Err(RequestError::EmptyPrompt);
        }
        let mut ids = HashSet::new();
        for o in self.options() {
            if !ids.insert(o.id.as_str()) {
                return Err(RequestError::DuplicateOption(o.id.clone()));
            }
        }
        if let Some(r) = &self.refusing {
            if !ids.contains(r.as_str()) {
                return Err(RequestError::RefusingNotAnOption(r.clone()));
            }
        }
        let form = self.payload.kind == AttentionRequestedKind::Form;
        match (form, self.fields().is_empty()) {
            (false, false) => return Err(RequestError::FieldsWithoutForm),
            (true, true) => return Err(RequestError::FormWithoutFields),
            _ => {}
        }
        if form && !self.options().is_empty() {
            return Err(RequestError::OptionsOnForm);
        }
        let mut fields = HashSet::new();
        for f in self.fields() {
            if !fields.insert(f.id.as_str()) {
                return Err(RequestError::DuplicateField(f.id.clone()));
            }
            check_field(f)?;
        }
        Ok(())
    }

    /// The `attention.requested` payload at wall-clock time `now`: `respond_via`
    /// `["control"]` unless set, and `expires_at` `now` plus the timeout when there is
    /// one.
    ///
    /// ```
    /// use aep_core::attention::AttentionRequest;
    /// let p = AttentionRequest::permission("Run it?").payload_at(std::time::UNIX_EPOCH);
    /// let v = serde_json::to_value(&p)?;
    /// assert_eq!(v["respond_via"], serde_json::json!(["control"]));
    /// assert!(v.get("expires_at").is_none());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn payload_at(&self, now: SystemTime) -> AttentionRequested {
        let mut p = self.payload.clone();
        if p.respond_via.is_none() {
            p.respond_via = Some(vec![AttentionRequestedRespondVia::Control]);
        }
        if let (None, Some(after)) = (&p.expires_at, self.timeout) {
            if let Some(at) = now.checked_add(after) {
                p.expires_at = Some(crate::envelope::rfc3339_millis(at));
            }
        }
        p
    }

    /// Checks a `control.attention.respond` answer against this request and returns the
    /// answer to apply, or why it is invalid (the command is then nacked `invalid` and
    /// the request stays pending, AEP-0006):
    ///
    /// - a form answer is `values` that cover every required field, each of its field's
    ///   shape: a string, a number within `min`..`max`, a boolean, a `choices[].id` (an
    ///   array of them for `multi`), free text on a `select` only where `other` allows,
    ///   and no key that is not a field (AEP-0006);
    /// - an `option` must be one the request offered;
    /// - `text` alone against options that, trimmed and in any case, equals an option's
    ///   id or exactly one option's label *is* that option (AEP-0008); text naming no
    ///   option of a permission request is applied as its refusing option with the text
    ///   as reason, or is invalid when it has none: never the permissive choice.
    ///
    /// ```
    /// use aep_core::attention::{Applied, AttentionRequest};
    /// use aep_core::payload::ControlAttentionRespondAnswer;
    /// let r = AttentionRequest::permission("Run `rm -rf build`?");
    /// let text = |t: &str| ControlAttentionRespondAnswer { text: Some(t.into()), ..Default::default() };
    ///
    /// let a = r.check_answer(&text(" ALLOW "))?;
    /// assert_eq!((a.option(), a.text(), a.applied()), (Some("allow"), None, Applied::TextNamedOption));
    ///
    /// let a = r.check_answer(&text("use the staging bucket instead"))?;
    /// assert_eq!(a.option(), Some("deny"));
    /// assert_eq!(a.text(), Some("use the staging bucket instead"));
    /// assert_eq!(a.applied(), Applied::TextRefused);
    /// # Ok::<(), aep_core::attention::InvalidAnswer>(())
    /// ```
    pub fn check_answer(
        &self,
        answer: &ControlAttentionRespondAnswer,
    ) -> Result<Answer, InvalidAnswer> {
        let asked = Asked {
            kind: self.kind(),
            fields: self.fields(),
            options: self.options(),
            refusing: self.refusing_option(),
        };
        answer::check(asked, answer)
    }
}

/// One field's own rules (AEP-0006 `field_spec`).
fn check_field(f: &AttentionRequestedField) -> Result<(), RequestError> {
    match f.r#type {
        AttentionRequestedFieldType::Select => {
            let choices = f.choices.as_deref().unwrap_or_default();
            if choices.is_empty() {
                return Err(RequestError::SelectWithoutChoices(f.id.clone()));
            }
            let mut ids = HashSet::new();
            if !choices.iter().all(|c| ids.insert(c.id.as_str())) {
                return Err(RequestError::DuplicateChoice(f.id.clone()));
            }
        }
        AttentionRequestedFieldType::Number => {
            let bound = |n: &Option<Number>| n.as_ref().and_then(Number::as_f64);
            if let (Some(min), Some(max)) = (bound(&f.min), bound(&f.max)) {
                if min > max {
                    return Err(RequestError::EmptyRange(f.id.clone()));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// One typed field of a form (AEP-0006 `field_spec`): a string, a number (optionally
/// bounded), a boolean, or a select from choices (one, or several with
/// [`multi`](Self::multi); free text too with [`other`](Self::other)).
///
/// ```
/// use aep_core::attention::FormField;
/// let f = FormField::select("tags", "Tags").choice("a", "Alpha").choice("b", "Beta").multi().required();
/// let spec = f.into_spec();
/// assert_eq!((spec.multi, spec.required, spec.choices.map(|c| c.len())), (Some(true), Some(true), Some(2)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FormField(AttentionRequestedField);

impl FormField {
    fn of(
        field_type: AttentionRequestedFieldType,
        id: impl Into<String>,
        label: impl Into<String>,
    ) -> FormField {
        FormField(AttentionRequestedField {
            id: id.into(),
            r#type: field_type,
            label: label.into(),
            required: None,
            multi: None,
            other: None,
            choices: None,
            min: None,
            max: None,
            extra: Map::new(),
        })
    }

    /// A free-text field; its answer is user-authored text (gated `redacted`).
    pub fn string(id: impl Into<String>, label: impl Into<String>) -> FormField {
        FormField::of(AttentionRequestedFieldType::String, id, label)
    }

    /// A number field.
    pub fn number(id: impl Into<String>, label: impl Into<String>) -> FormField {
        FormField::of(AttentionRequestedFieldType::Number, id, label)
    }

    /// A yes/no field.
    pub fn boolean(id: impl Into<String>, label: impl Into<String>) -> FormField {
        FormField::of(AttentionRequestedFieldType::Boolean, id, label)
    }

    /// A select field; add its choices with [`choice`](Self::choice).
    pub fn select(id: impl Into<String>, label: impl Into<String>) -> FormField {
        FormField::of(AttentionRequestedFieldType::Select, id, label)
    }

    /// Adds the choice `id` labelled `label` (a `select` field's).
    pub fn choice(mut self, id: impl Into<String>, label: impl Into<String>) -> FormField {
        self.0
            .choices
            .get_or_insert_with(Vec::new)
            .push(AttentionRequestedFieldChoice {
                id: id.into(),
                label: label.into(),
                extra: Map::new(),
            });
        self
    }

    /// An answer must give this field (AEP-0006: otherwise nacked `invalid`).
    pub fn required(mut self) -> FormField {
        self.0.required = Some(true);
        self
    }

    /// Several choices may be selected (a `select` field's answer is then an array).
    pub fn multi(mut self) -> FormField {
        self.0.multi = Some(true);
        self
    }

    /// Free text is accepted besides the choices (a `select` field).
    pub fn other(mut self) -> FormField {
        self.0.other = Some(true);
        self
    }

    /// The least value a number field takes (ignored when not finite).
    pub fn min(mut self, min: f64) -> FormField {
        self.0.min = Number::from_f64(min);
        self
    }

    /// The greatest value a number field takes (ignored when not finite).
    pub fn max(mut self, max: f64) -> FormField {
        self.0.max = Number::from_f64(max);
        self
    }

    /// The field as the payload carries it.
    pub fn into_spec(self) -> AttentionRequestedField {
        self.0
    }
}

impl From<AttentionRequestedField> for FormField {
    fn from(spec: AttentionRequestedField) -> FormField {
        FormField(spec)
    }
}
