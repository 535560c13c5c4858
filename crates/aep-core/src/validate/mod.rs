//! Validation with stable rule ids: the envelope (AEP-0001 §5-§6, §8), payloads against
//! their registered schemas (AEP-0002 §5), and the cross-event rules of a stream
//! (AEP-0001 §7, AEP-0002 §2 and §7, AEP-0004 §3, AEP-0006).
//!
//! Every finding is an [`Issue`]: the [`Rule`] that fired (its [`Rule::as_str`] id is
//! stable and shared with the other AEP SDKs), the attribute or payload path it names,
//! a message, and the spec section it enforces.
//!
//! - [`validate_value`] judges any JSON value, because an invalid envelope may not even
//!   parse into an [`Event`].
//! - [`validate_event`] judges a parsed [`Event`] with the same rules.
//! - [`StreamValidator`] judges what only a sequence of events can break.
//!
//! ```
//! use aep_core::validate::{validate_value, Rule};
//! use serde_json::json;
//!
//! let issues = validate_value(&json!({
//!     "aep": "0.1", "id": "1", "type": "run.started", "time": "2026-07-03T10:00:00Z",
//!     "source": "aep://h/agent/a", "agent": "a", "session": "s1"
//! }));
//! assert_eq!(issues.len(), 1);
//! assert_eq!(issues[0].rule(), Rule::Scoping); // session-scoped events carry seq
//! assert_eq!(issues[0].rule().as_str(), "scoping");
//! assert_eq!(issues[0].section(), "AEP-0001 §5.2");
//! ```

mod capture;
mod envelope;
mod format;
mod payload;
mod stream;

use std::fmt;

use serde_json::Value;

use crate::event::{EnvelopeView, Event};
use crate::names::{self, display_as_str};
use envelope::Scope;

pub use format::{is_date_time, is_traceparent, is_uri, unix_nanos, TraceParent};
pub use stream::{validate_stream, StreamValidator};

/// A validation rule, with a stable id ([`Rule::as_str`]).
///
/// The envelope ids are those of the TypeScript SDK's `validate.ts`; the `payload-*` ids
/// name JSON Schema keyword failures inside `data`; the stream ids match the violation
/// names of the reference state projection where one exists.
///
/// ```
/// use aep_core::validate::Rule;
/// assert_eq!(Rule::ExtensionName.as_str(), "extension-name");
/// assert_eq!("seq-regression".parse::<Rule>(), Ok(Rule::SeqRegression));
/// assert!(Rule::SeqRegression.is_stream());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// The value is not a JSON object (AEP-0001 §5).
    NotAnObject,
    /// `aep` is not the literal `"0.1"` (AEP-0001 §5.1).
    Version,
    /// A required attribute is absent (AEP-0001 §5.1).
    Required,
    /// An attribute has the wrong JSON type, or is an empty string (AEP-0001 §5.1).
    AttrType,
    /// `type` is outside the AEP-0001 §6 grammar.
    TypeSyntax,
    /// `time`, `source` or `traceparent` is malformed (AEP-0001 §5.1).
    Format,
    /// `severity` or `capture` is not a registered level (AEP-0001 §8).
    Enum,
    /// `session`/`seq` presence contradicts the type's scope (AEP-0001 §5.2).
    Scoping,
    /// An extension attribute name is ill-formed (AEP-0001 §5.4).
    ExtensionName,
    /// An extension attribute value is not a string, integer or boolean (AEP-0001 §5.4).
    ExtensionValue,
    /// A payload value has the wrong JSON type (schema `type`).
    PayloadType,
    /// A payload member the schema requires is absent (schema `required`).
    PayloadRequired,
    /// A payload value is outside its enumeration (schema `enum`).
    PayloadEnum,
    /// A payload value differs from its constant (schema `const`).
    PayloadConst,
    /// A payload number is out of range (schema `minimum`/`maximum`).
    PayloadRange,
    /// A payload string is malformed (schema `format`).
    PayloadFormat,
    /// A payload field is annotated above the event's declared `capture`, or a
    /// `capture: none` event carries `data` (AEP-0001 §8.2(a), AEP-0002 §5.1 rule 1).
    PayloadCapture,
    /// The same `(source, id)` names two different events (AEP-0001 §7.4).
    IdCollision,
    /// `seq` did not increase within an epoch of a session (AEP-0001 §7.2).
    SeqRegression,
    /// `epoch` went backwards within a session (AEP-0001 §7.2).
    EpochRegression,
    /// A second terminal event for one run (AEP-0002 §2 convention 5).
    RunTerminalExclusivity,
    /// A second distinct `session.ended` for one session (AEP-0002 §2 convention 5).
    SessionTerminalExclusivity,
    /// `session.ended` while an attention request is still open (AEP-0002 §7.2).
    EndedWithPendingAttention,
    /// A second, different ack decision for one command (AEP-0004 §3).
    AckExclusivity,
    /// A command no ack answers by the end of the stream (AEP-0004 §3).
    CommandUnacked,
    /// `attention.answered` `values` break the form rules (AEP-0006, AEP-0002 §5.3).
    FormValues,
}

impl Rule {
    /// Every rule, in declaration order.
    ///
    /// ```
    /// use aep_core::validate::Rule;
    /// assert_eq!(Rule::ALL.iter().filter(|r| r.is_stream()).count(), 9);
    /// assert!(Rule::ALL.contains(&Rule::FormValues));
    /// ```
    pub const ALL: &'static [Rule] = &[
        Rule::NotAnObject,
        Rule::Version,
        Rule::Required,
        Rule::AttrType,
        Rule::TypeSyntax,
        Rule::Format,
        Rule::Enum,
        Rule::Scoping,
        Rule::ExtensionName,
        Rule::ExtensionValue,
        Rule::PayloadType,
        Rule::PayloadRequired,
        Rule::PayloadEnum,
        Rule::PayloadConst,
        Rule::PayloadRange,
        Rule::PayloadFormat,
        Rule::PayloadCapture,
        Rule::IdCollision,
        Rule::SeqRegression,
        Rule::EpochRegression,
        Rule::RunTerminalExclusivity,
        Rule::SessionTerminalExclusivity,
        Rule::EndedWithPendingAttention,
        Rule::AckExclusivity,
        Rule::CommandUnacked,
        Rule::FormValues,
    ];

    /// The stable rule id.
    ///
    /// ```
    /// assert_eq!(aep_core::validate::Rule::AttrType.as_str(), "attr-type");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Rule::NotAnObject => "not-an-object",
            Rule::Version => "version",
            Rule::Required => "required",
            Rule::AttrType => "attr-type",
            Rule::TypeSyntax => "type-syntax",
            Rule::Format => "format",
            Rule::Enum => "enum",
            Rule::Scoping => "scoping",
            Rule::ExtensionName => "extension-name",
            Rule::ExtensionValue => "extension-value",
            Rule::PayloadType => "payload-type",
            Rule::PayloadRequired => "payload-required",
            Rule::PayloadEnum => "payload-enum",
            Rule::PayloadConst => "payload-const",
            Rule::PayloadRange => "payload-range",
            Rule::PayloadFormat => "payload-format",
            Rule::PayloadCapture => "payload-capture",
            Rule::IdCollision => "id-collision",
            Rule::SeqRegression => "seq-regression",
            Rule::EpochRegression => "epoch-regression",
            Rule::RunTerminalExclusivity => "run-terminal-exclusivity",
            Rule::SessionTerminalExclusivity => "session-terminal-exclusivity",
            Rule::EndedWithPendingAttention => "ended-with-pending-attention",
            Rule::AckExclusivity => "ack-exclusivity",
            Rule::CommandUnacked => "command-unacked",
            Rule::FormValues => "form-values",
        }
    }

    /// Whether this rule judges a payload against its schema.
    ///
    /// ```
    /// use aep_core::validate::Rule;
    /// assert!(Rule::PayloadRequired.is_payload());
    /// assert!(!Rule::Required.is_payload());
    /// ```
    pub const fn is_payload(self) -> bool {
        matches!(
            self,
            Rule::PayloadType
                | Rule::PayloadRequired
                | Rule::PayloadEnum
                | Rule::PayloadConst
                | Rule::PayloadRange
                | Rule::PayloadFormat
                | Rule::PayloadCapture
        )
    }

    /// Whether this rule needs more than one event ([`StreamValidator`]).
    ///
    /// ```
    /// use aep_core::validate::Rule;
    /// assert!(Rule::IdCollision.is_stream());
    /// assert!(!Rule::Scoping.is_stream());
    /// ```
    pub const fn is_stream(self) -> bool {
        matches!(
            self,
            Rule::IdCollision
                | Rule::SeqRegression
                | Rule::EpochRegression
                | Rule::RunTerminalExclusivity
                | Rule::SessionTerminalExclusivity
                | Rule::EndedWithPendingAttention
                | Rule::AckExclusivity
                | Rule::CommandUnacked
                | Rule::FormValues
        )
    }
}

display_as_str!(Rule);

/// A string that names no [`Rule`].
///
/// ```
/// let err = "no-such-rule".parse::<aep_core::validate::Rule>().unwrap_err();
/// assert_eq!(err.to_string(), "unknown validation rule id `no-such-rule`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown validation rule id `{0}`")]
pub struct UnknownRule(String);

impl std::str::FromStr for Rule {
    type Err = UnknownRule;
    fn from_str(s: &str) -> Result<Rule, UnknownRule> {
        names::find(Rule::ALL, Rule::as_str, s).ok_or_else(|| UnknownRule(s.to_owned()))
    }
}

/// One finding: the rule that fired, what it names, why, and where the spec says so.
///
/// ```
/// use aep_core::validate::{validate_value, Rule};
/// let issues = validate_value(&serde_json::json!([1, 2]));
/// assert_eq!(issues[0].rule(), Rule::NotAnObject);
/// assert_eq!(issues[0].attr(), None);
/// assert!(issues[0].to_string().starts_with("not-an-object:"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    rule: Rule,
    attr: Option<String>,
    message: String,
    section: &'static str,
}

impl Issue {
    pub(crate) fn new(
        rule: Rule,
        attr: Option<String>,
        message: impl Into<String>,
        section: &'static str,
    ) -> Issue {
        Issue {
            rule,
            attr,
            message: message.into(),
            section,
        }
    }

    /// The rule that fired.
    ///
    /// ```
    /// use aep_core::validate::{validate_value, Rule};
    /// let issues = validate_value(&serde_json::json!({"aep": "0.2"}));
    /// assert_eq!(issues[0].rule(), Rule::Version);
    /// ```
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The attribute (`seq`, an extension name) or payload path (`data.cost.currency`,
    /// `data.fields[0]`) the issue is about, when it is about one.
    ///
    /// ```
    /// use aep_core::validate::validate_value;
    /// let issues = validate_value(&serde_json::json!({"aep": "0.1"}));
    /// assert_eq!(issues[0].attr(), Some("id")); // the first required attribute missing
    /// ```
    pub fn attr(&self) -> Option<&str> {
        self.attr.as_deref()
    }

    /// What is wrong, for people.
    ///
    /// ```
    /// use aep_core::validate::validate_value;
    /// let issues = validate_value(&serde_json::json!("text"));
    /// assert!(!issues[0].message().is_empty());
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The spec section the rule enforces, e.g. `AEP-0001 §5.2`.
    ///
    /// ```
    /// use aep_core::validate::validate_value;
    /// let issues = validate_value(&serde_json::json!(null));
    /// assert_eq!(issues[0].section(), "AEP-0001 §5");
    /// ```
    pub fn section(&self) -> &'static str {
        self.section
    }

    /// Whether a citation, as the fixture corpus writes them (`AEP-0001 §5.1 #2 /
    /// §7.4`), names this issue's section: the same document and section number.
    ///
    /// ```
    /// use aep_core::validate::{validate_value, Rule};
    /// let issues = validate_value(&serde_json::json!({"aep": "0.2"}));
    /// assert_eq!(issues[0].rule(), Rule::Version);
    /// assert!(issues[0].is_cited_by("AEP-0001 §5.1 #1 (0.1 schema)"));
    /// assert!(!issues[0].is_cited_by("AEP-0002 §5.1"));
    /// ```
    pub fn is_cited_by(&self, citation: &str) -> bool {
        let (doc, number) = self.section.split_once(' ').unwrap_or((self.section, ""));
        citation.contains(doc) && citation.contains(number)
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.rule)?;
        if let Some(attr) = &self.attr {
            write!(f, "{attr}: ")?;
        }
        write!(f, "{} ({})", self.message, self.section)
    }
}

/// Validates one JSON value as an AEP 0.1 event: the envelope rules, then the payload
/// against its registered schema. An empty list means valid.
///
/// A non-object yields the single [`Rule::NotAnObject`] issue. `data` is checked against
/// its schema only when present and an object (an absent `data` is not a payload).
///
/// ```
/// use aep_core::validate::{validate_value, Rule};
/// use serde_json::json;
///
/// let ok = json!({"aep":"0.1","id":"1","type":"agent.presence","time":"2026-07-03T10:00:00Z",
///                 "source":"aep://h/agent/a","agent":"a","data":{"state":"online"}});
/// assert!(validate_value(&ok).is_empty());
///
/// let bad = json!({"aep":"0.1","id":"1","type":"agent.presence","time":"2026-07-03T10:00:00Z",
///                  "source":"aep://h/agent/a","agent":"a","data":{"state":"sleeping"}});
/// let issues = validate_value(&bad);
/// assert_eq!(issues[0].rule(), Rule::PayloadEnum);
/// assert_eq!(issues[0].attr(), Some("data.state"));
/// ```
pub fn validate_value(value: &Value) -> Vec<Issue> {
    match value {
        Value::Object(map) => envelope::validate(&envelope::JsonEnvelope::new(map), Scope::Full),
        _ => vec![Issue::new(
            Rule::NotAnObject,
            None,
            "an event is a JSON object",
            "AEP-0001 §5",
        )],
    }
}

/// Validates a parsed [`Event`] with the rules of [`validate_value`]. Parsing already
/// enforced the JSON types of the core attributes, so the rules that remain are the
/// ones about their content.
///
/// ```
/// use aep_core::{Event, validate::{validate_event, Rule}};
///
/// let e: Event = r#"{"aep":"0.1","id":"1","type":"tool.Completed","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":0}"#.parse()?;
/// let issues = validate_event(&e);
/// assert_eq!(issues[0].rule(), Rule::TypeSyntax);
/// assert_eq!(issues[0].attr(), Some("type"));
/// # Ok::<(), aep_core::EventParseError>(())
/// ```
pub fn validate_event(event: &Event) -> Vec<Issue> {
    envelope::validate(event, Scope::Full)
}

/// Validates a parsed [`Event`] with the envelope rules of [`validate_event`] only: every
/// AEP-0001 rule about the envelope (`data` must still be an object), none of the
/// payload-schema rules, so `data` is never decoded. This is the check AEP-0003 §3.2.3
/// asks of a relay; payload schemas are the consumer's business.
///
/// ```
/// use aep_core::{Event, validate::{validate_envelope, validate_event, Rule}};
///
/// // `state` outside its enumeration: a payload issue, not an envelope one
/// let e: Event = r#"{"aep":"0.1","id":"1","type":"agent.presence","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","data":{"state":"sleeping"}}"#.parse()?;
/// assert_eq!(validate_event(&e)[0].rule(), Rule::PayloadEnum);
/// assert!(validate_envelope(&e).is_empty());
///
/// let e: Event = r#"{"aep":"0.1","id":"1","type":"agent.presence","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","data":[1]}"#.parse()?;
/// assert_eq!(validate_envelope(&e)[0].rule(), Rule::AttrType);
/// # Ok::<(), aep_core::EventParseError>(())
/// ```
pub fn validate_envelope(event: &Event) -> Vec<Issue> {
    envelope::validate(event, Scope::Envelope)
}

/// [`validate_envelope`] for an envelope read in place ([`EnvelopeView`]): the same rules,
/// the same issues, without an owned [`Event`].
///
/// ```
/// use aep_core::event::EnvelopeView;
/// use aep_core::validate::{validate_envelope_view, Rule};
///
/// let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","seq":3}"#;
/// let issues = validate_envelope_view(&EnvelopeView::read(line).unwrap());
/// assert_eq!(issues.iter().map(|i| i.rule()).collect::<Vec<_>>(), [Rule::Format, Rule::Format, Rule::Scoping]);
/// ```
pub fn validate_envelope_view(view: &EnvelopeView<'_>) -> Vec<Issue> {
    envelope::validate(view, Scope::Envelope)
}

/// Validates `data` against the registered schema of `event_type` (AEP-0002 §5), for
/// payloads checked apart from an envelope. Types without a schema (vendor, reserved,
/// unregistered) yield no issues.
///
/// ```
/// use aep_core::validate::{validate_payload, Rule};
/// let issues = validate_payload("run.finished", &serde_json::json!({"cost": {"total": 0.01}}));
/// assert_eq!(issues[0].rule(), Rule::PayloadRequired);
/// assert_eq!(issues[0].attr(), Some("data.cost.currency"));
/// assert!(validate_payload("x.acme.tool.synced", &serde_json::json!({"any": 1})).is_empty());
/// ```
pub fn validate_payload(event_type: &str, data: &Value) -> Vec<Issue> {
    let mut out = Vec::new();
    payload::check(event_type, data, &mut out);
    out
}
