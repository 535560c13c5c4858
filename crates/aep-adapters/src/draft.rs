//! Drafts: what a mapping says an event carries, each member of `data` with the capture
//! level it needs, and the [`Posture`] that renders it.
//!
//! A mapping never decides what leaves the machine: it tags every member (metadata, or
//! content gated at `redacted` or `full`, or a `[metadata*]` member with its structural
//! stand-in) and [`Draft::render`] keeps what the posture's ceiling allows, running what
//! it keeps at `redacted` through aep-core's AEP-0003 §9.4 pipeline. Digests
//! (AEP-0003 §9.3) are metadata and always present: they are computed by aep-core over
//! the original value, before anything is dropped or redacted.

use std::fmt;
use std::sync::OnceLock;

use aep_core::ceiling::{CaptureCeiling, CeilingError};
use aep_core::redact::{ContentDigest, RedactError, RedactOptions, Redactor};
use aep_core::{Capture, Severity};
use serde_json::{Map, Value};

/// The adapter's capture posture (AEP-0003 §9.1) and its opt-ins.
///
/// The default is the one every Annex A pin is taken at: `metadata`, with `attention.*`
/// at `redacted` so prompts stay readable, the redaction pipeline with its defaults
/// (secrets, any user's home directory, PII), and stream deltas off.
///
/// ```
/// use aep_adapters::Posture;
/// use aep_core::Capture;
///
/// let posture = Posture::default();
/// assert_eq!(posture.ceiling_for("tool.requested"), Capture::Metadata);
/// assert_eq!(posture.ceiling_for("attention.requested"), Capture::Redacted);
/// let everything = Posture::from_ceiling("full")?;
/// assert_eq!(everything.ceiling_for("attention.requested"), Capture::Full);
/// # Ok::<(), aep_adapters::PostureError>(())
/// ```
#[derive(Clone)]
pub struct Posture {
    ceiling: CaptureCeiling,
    /// The options the pipeline is built from, once something needs it: compiling its
    /// patterns is the costliest thing a hook does, and most hooks keep no content.
    redaction: RedactOptions,
    redactor: OnceLock<Option<Redactor>>,
    deltas: bool,
}

/// The default ceiling, in AEP-0003 §9.1's notation.
pub const DEFAULT_CEILING: &str = "metadata,attention.*=redacted";

/// A posture that could not be built: a ceiling that does not parse, or redaction
/// options aep-core refuses.
///
/// ```
/// let err = aep_adapters::Posture::from_ceiling("metadata,atention.*=full").unwrap_err();
/// assert!(err.to_string().contains("atention"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostureError {
    /// The ceiling notation (AEP-0003 §9.1) did not parse.
    Ceiling(CeilingError),
    /// The redaction options were refused.
    Redact(String),
}

impl fmt::Display for PostureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostureError::Ceiling(e) => write!(
                f,
                "capture ceiling: {e}; write it as `metadata,attention.*=redacted`"
            ),
            PostureError::Redact(e) => write!(f, "redaction options: {e}"),
        }
    }
}

impl std::error::Error for PostureError {}

impl From<RedactError> for PostureError {
    fn from(e: RedactError) -> Self {
        PostureError::Redact(e.to_string())
    }
}

impl Default for Posture {
    fn default() -> Self {
        Posture {
            ceiling: DEFAULT_CEILING
                .parse()
                .unwrap_or_else(|_| CaptureCeiling::new(Capture::Metadata)),
            redaction: RedactOptions::new(),
            redactor: OnceLock::new(),
            deltas: false,
        }
    }
}

impl Posture {
    /// A posture from a ceiling in AEP-0003 §9.1's notation (`metadata`,
    /// `metadata,attention.*=redacted`, `redacted,tool.*=full`, ...).
    ///
    /// ```
    /// let p = aep_adapters::Posture::from_ceiling("redacted")?;
    /// assert_eq!(p.ceiling_for("run.started"), aep_core::Capture::Redacted);
    /// # Ok::<(), aep_adapters::PostureError>(())
    /// ```
    pub fn from_ceiling(ceiling: &str) -> Result<Posture, PostureError> {
        let ceiling = ceiling.parse().map_err(PostureError::Ceiling)?;
        Ok(Posture {
            ceiling,
            ..Posture::default()
        })
    }

    aep_core::setters! {
        /// The same posture with another ceiling.
        ///
        /// ```
        /// use aep_core::{ceiling::CaptureCeiling, Capture};
        /// let p = aep_adapters::Posture::default().with_ceiling(CaptureCeiling::new(Capture::None));
        /// assert_eq!(p.ceiling_for("attention.requested"), Capture::None);
        /// ```
        pub fn with_ceiling(ceiling: CaptureCeiling) => ceiling = ceiling;
    }

    /// The same posture with other redaction options (configured secrets, the home
    /// directory, PII on or off).
    ///
    /// ```
    /// use aep_core::redact::RedactOptions;
    /// let p = aep_adapters::Posture::default().with_redaction(RedactOptions::new().home("/home/op"))?;
    /// # let _ = p;
    /// # Ok::<(), aep_adapters::PostureError>(())
    /// ```
    pub fn with_redaction(mut self, options: RedactOptions) -> Result<Posture, PostureError> {
        let redactor = Redactor::new(options.clone())?;
        self.redaction = options;
        self.redactor = OnceLock::from(Some(redactor));
        Ok(self)
    }

    aep_core::setters! {
        /// The same posture with stream deltas (token, argument and partial-result
        /// updates) on or off. Off by default: the Annex A sources suppress them pending the
        /// message/stream sub-profile.
        ///
        /// ```
        /// assert!(aep_adapters::Posture::default().with_deltas(true).deltas());
        /// ```
        pub fn with_deltas(on: bool) => deltas = on;
    }

    /// Whether stream deltas are on.
    ///
    /// ```
    /// assert!(!aep_adapters::Posture::default().deltas());
    /// ```
    pub fn deltas(&self) -> bool {
        self.deltas
    }

    /// The ceiling for events of `event_type`.
    ///
    /// ```
    /// let p = aep_adapters::Posture::default();
    /// assert_eq!(p.ceiling_for("x.codex.session.setup"), aep_core::Capture::Metadata);
    /// ```
    pub fn ceiling_for(&self, event_type: &str) -> aep_core::Capture {
        self.ceiling.for_type_str(event_type)
    }

    /// The capture ceiling.
    ///
    /// ```
    /// let p = aep_adapters::Posture::default();
    /// assert_eq!(p.ceiling().to_string(), aep_adapters::DEFAULT_CEILING);
    /// ```
    pub fn ceiling(&self) -> &CaptureCeiling {
        &self.ceiling
    }

    /// The redaction pipeline content kept at `redacted` passes through (`None` only if
    /// aep-core could not build its built-in patterns; content gated `redacted` is then
    /// dropped).
    ///
    /// ```
    /// let p = aep_adapters::Posture::default();
    /// let redactor = p.redactor().expect("the built-in patterns compile");
    /// assert_eq!(redactor.redact_text("mail ops@example.com"), "mail [REDACTED:pii]");
    /// ```
    pub fn redactor(&self) -> Option<&Redactor> {
        // Only a bug in aep-core's built-in patterns can refuse the options (they were
        // checked by `with_redaction`); then content gated `redacted` is dropped
        // instead of sent unredacted (the privacy-safe direction).
        self.redactor
            .get_or_init(|| Redactor::new(self.redaction.clone()).ok())
            .as_ref()
    }

    /// `value` through the §9.4 pipeline, or nothing when there is no pipeline.
    fn redacted(&self, value: &Value) -> Option<Value> {
        self.redactor().map(|r| r.redact_value(value))
    }
}

impl fmt::Debug for Posture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Posture")
            .field("ceiling", &self.ceiling.to_string())
            .field("deltas", &self.deltas)
            .finish_non_exhaustive()
    }
}

/// How one member of `data` is gated.
#[derive(Debug, Clone, PartialEq)]
enum Gate {
    /// Structural: kept at any level above `none`.
    Metadata,
    /// Content: kept at `redacted` (through the pipeline) and `full` (verbatim).
    Content,
    /// Content only at exactly `redacted` (the `*_redacted` twins of `full` members).
    RedactedOnly,
    /// Verbatim content, only at `full`.
    Full,
    /// A `[metadata*]` member (AEP-0002 §5.3): the content at `redacted` and above, the
    /// structural stand-in below.
    Both(Value),
}

/// One event a mapping produces, before it is rendered at a posture and stamped with an
/// envelope.
///
/// ```
/// use aep_adapters::{Draft, Posture};
/// use serde_json::json;
///
/// let draft = Draft::new("tool.requested")
///     .meta("tool", json!({"name": "Bash"}))
///     .digest("args_digest", &json!({"command": "npm test"}))
///     .full("args", json!({"command": "npm test"}))
///     .subject("Bash");
/// let at_metadata = draft.render(&Posture::default());
/// assert_eq!(at_metadata.data, json!({"tool": {"name": "Bash"}, "args_digest": "9178ac939ad908d8fd89e97596cdc0e5"}));
/// let at_full = draft.render(&Posture::from_ceiling("full")?);
/// assert_eq!(at_full.data["args"], json!({"command": "npm test"}));
/// # Ok::<(), aep_adapters::PostureError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    event_type: String,
    /// Each member by its path (one key, or nested keys for a member inside an object),
    /// in the order drafted.
    fields: Vec<(Vec<String>, Value, Gate)>,
    subject: Option<String>,
    step: Option<String>,
    severity: Option<Severity>,
    links: Links,
}

/// What the session runtime needs to know of a draft beyond its payload: the keys that
/// pair it with earlier events and the identity it rides on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Links {
    /// The vendor's tool call id (pairs requested with completed/failed/denied).
    pub(crate) call: Option<String>,
    /// The vendor key of an attention request (pairs requested with its settlement).
    pub(crate) attention: Option<String>,
    /// The session the event belongs on, when the payload names one.
    pub(crate) session: Option<String>,
    /// The vendor's own run id, when it has one.
    pub(crate) run: Option<String>,
}

/// A vendor id as the links keep it: an empty one is none.
fn id(id: Option<&str>) -> Option<String> {
    id.filter(|i| !i.is_empty()).map(str::to_owned)
}

impl Draft {
    /// A draft of `event_type` with no data.
    ///
    /// ```
    /// let d = aep_adapters::Draft::new("run.finished");
    /// assert_eq!(d.event_type(), "run.finished");
    /// ```
    pub fn new(event_type: impl Into<String>) -> Draft {
        Draft {
            event_type: event_type.into(),
            fields: Vec::new(),
            subject: None,
            step: None,
            severity: None,
            links: Links::default(),
        }
    }

    /// The event type.
    ///
    /// ```
    /// assert_eq!(aep_adapters::Draft::new("x.acme.session.thing").event_type(), "x.acme.session.thing");
    /// ```
    pub fn event_type(&self) -> &str {
        &self.event_type
    }

    /// The `subject`, if any.
    ///
    /// ```
    /// assert_eq!(aep_adapters::Draft::new("tool.requested").subject("Bash").subject_str(), Some("Bash"));
    /// ```
    pub fn subject_str(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The envelope `step`, if any.
    ///
    /// ```
    /// assert_eq!(aep_adapters::Draft::new("run.step.started").step("3").step_str(), Some("3"));
    /// ```
    pub fn step_str(&self) -> Option<&str> {
        self.step.as_deref()
    }

    /// The severity the mapping asks for (`None`: the envelope default, `info`).
    ///
    /// ```
    /// use aep_core::Severity;
    /// let d = aep_adapters::Draft::new("x.acme.session.thing").severity(Severity::Debug);
    /// assert_eq!(d.severity_level(), Some(Severity::Debug));
    /// ```
    pub fn severity_level(&self) -> Option<Severity> {
        self.severity
    }

    aep_core::setters! {
        /// Sets the `subject`.
        ///
        /// ```
        /// let d = aep_adapters::Draft::new("tool.requested").subject("Bash");
        /// assert_eq!(d.subject_str(), Some("Bash"));
        /// ```
        pub fn subject(subject: impl Into<String>) => subject = Some(subject.into());
        /// Sets the `subject` when there is one.
        ///
        /// ```
        /// let d = aep_adapters::Draft::new("tool.requested").subject_opt(None::<String>);
        /// assert_eq!(d.subject_str(), None);
        /// ```
        pub fn subject_opt(subject: Option<impl Into<String>>) => subject = subject.map(Into::into);
        /// Sets the envelope `step`.
        ///
        /// ```
        /// assert_eq!(aep_adapters::Draft::new("run.finished").step("2").step_str(), Some("2"));
        /// ```
        pub fn step(step: impl Into<String>) => step = Some(step.into());
        /// Sets the envelope `step` when there is one.
        ///
        /// ```
        /// assert_eq!(aep_adapters::Draft::new("run.finished").step_opt(Some("1")).step_str(), Some("1"));
        /// ```
        pub fn step_opt(step: Option<impl Into<String>>) => step = step.map(Into::into);
        /// Sets the severity.
        ///
        /// ```
        /// use aep_core::Severity;
        /// assert_eq!(aep_adapters::Draft::new("x.a.b.c").severity(Severity::Error).severity_level(), Some(Severity::Error));
        /// ```
        pub fn severity(severity: Severity) => severity = Some(severity);
    }

    fn push(self, key: &str, value: Value, gate: Gate) -> Draft {
        self.push_at(&[key], value, gate)
    }

    /// `value` under `gate` when there is one (`null` is none).
    fn push_opt(self, key: &str, value: Option<Value>, gate: Gate) -> Draft {
        match value.filter(|v| !v.is_null()) {
            Some(v) => self.push(key, v, gate),
            None => self,
        }
    }

    fn push_at(mut self, path: &[&str], value: Value, gate: Gate) -> Draft {
        self.fields.retain(|(k, _, _)| k.as_slice() != path);
        let path = path.iter().map(|k| (*k).to_owned()).collect();
        self.fields.push((path, value, gate));
        self
    }

    /// A structural member nested in an object member (`["error", "type"]`).
    ///
    /// ```
    /// let d = aep_adapters::Draft::new("tool.failed")
    ///     .meta_in(&["error", "type"], "tool_error".into())
    ///     .content_in(&["error", "message"], "no such file".into());
    /// let r = d.render(&aep_adapters::Posture::default());
    /// assert_eq!(r.data, serde_json::json!({"error": {"type": "tool_error"}}));
    /// ```
    pub fn meta_in(self, path: &[&str], value: Value) -> Draft {
        self.push_at(path, value, Gate::Metadata)
    }

    /// Content gated `redacted`, nested in an object member.
    ///
    /// ```
    /// use aep_adapters::{Draft, Posture};
    /// let d = Draft::new("attention.answered").meta_in(&["answer", "option"], "deny".into()).content_in(&["answer", "text"], "not now".into());
    /// assert_eq!(d.render(&Posture::default()).data["answer"]["text"], "not now"); // attention.* at redacted
    /// ```
    pub fn content_in(self, path: &[&str], value: Value) -> Draft {
        if value.is_null() {
            return self;
        }
        self.push_at(path, value, Gate::Content)
    }

    /// A structural member, kept at every level but `none`.
    ///
    /// ```
    /// let d = aep_adapters::Draft::new("run.started").meta("trigger", "user".into());
    /// assert_eq!(d.render(&aep_adapters::Posture::default()).data["trigger"], "user");
    /// ```
    pub fn meta(self, key: &str, value: Value) -> Draft {
        self.push(key, value, Gate::Metadata)
    }

    /// A structural member when there is one.
    ///
    /// ```
    /// let d = aep_adapters::Draft::new("run.started").meta_opt("trigger", None);
    /// assert!(d.render(&aep_adapters::Posture::default()).data.as_object().unwrap().is_empty());
    /// ```
    pub fn meta_opt(self, key: &str, value: Option<Value>) -> Draft {
        self.push_opt(key, value, Gate::Metadata)
    }

    /// The token usage pair at metadata, under the OTel GenAI names
    /// (`gen_ai.usage.input_tokens` / `gen_ai.usage.output_tokens`), each when present.
    pub(crate) fn usage(self, input: Option<&Value>, output: Option<&Value>) -> Draft {
        self.meta_opt("gen_ai.usage.input_tokens", input.cloned())
            .meta_opt("gen_ai.usage.output_tokens", output.cloned())
    }

    /// Content gated `redacted`: passed through the §9.4 pipeline at `redacted`,
    /// verbatim at `full`, absent below.
    ///
    /// ```
    /// use aep_adapters::{Draft, Posture};
    /// let d = Draft::new("run.started").content("prompt", "mail ops@example.com".into());
    /// assert!(d.render(&Posture::default()).data.get("prompt").is_none());
    /// assert_eq!(d.render(&Posture::from_ceiling("redacted")?).data["prompt"], "mail [REDACTED:pii]");
    /// assert_eq!(d.render(&Posture::from_ceiling("full")?).data["prompt"], "mail ops@example.com");
    /// # Ok::<(), aep_adapters::PostureError>(())
    /// ```
    pub fn content(self, key: &str, value: Value) -> Draft {
        self.push(key, value, Gate::Content)
    }

    /// Content gated `redacted` when there is some.
    ///
    /// ```
    /// let d = aep_adapters::Draft::new("run.started").content_opt("prompt", None);
    /// assert_eq!(d, aep_adapters::Draft::new("run.started"));
    /// ```
    pub fn content_opt(self, key: &str, value: Option<Value>) -> Draft {
        self.push_opt(key, value, Gate::Content)
    }

    /// Content present only at exactly `redacted`, through the pipeline: the
    /// `*_redacted` twin of a member that [`full`](Draft::full) carries verbatim.
    ///
    /// ```
    /// use aep_adapters::{Draft, Posture};
    /// let d = Draft::new("tool.requested").redacted_only("args_redacted", "x".into());
    /// assert!(d.render(&Posture::from_ceiling("full")?).data.get("args_redacted").is_none());
    /// assert_eq!(d.render(&Posture::from_ceiling("redacted")?).data["args_redacted"], "x");
    /// # Ok::<(), aep_adapters::PostureError>(())
    /// ```
    pub fn redacted_only(self, key: &str, value: Value) -> Draft {
        self.push(key, value, Gate::RedactedOnly)
    }

    /// Verbatim content, present only at `full`.
    ///
    /// ```
    /// use aep_adapters::{Draft, Posture};
    /// let d = Draft::new("tool.completed").full("result", "ok".into());
    /// assert!(d.render(&Posture::from_ceiling("redacted")?).data.get("result").is_none());
    /// # Ok::<(), aep_adapters::PostureError>(())
    /// ```
    pub fn full(self, key: &str, value: Value) -> Draft {
        self.push(key, value, Gate::Full)
    }

    /// A `[metadata*]` member (AEP-0002 §5.3): `content` at `redacted` and above (through
    /// the pipeline at `redacted`), `structural` below.
    ///
    /// ```
    /// use aep_adapters::{Draft, Posture};
    /// let d = Draft::new("attention.requested").both("prompt", "Allow rm?".into(), "codex requests permission: shell".into());
    /// assert_eq!(d.render(&Posture::default()).data["prompt"], "Allow rm?");
    /// assert_eq!(d.render(&Posture::from_ceiling("metadata")?).data["prompt"], "codex requests permission: shell");
    /// # Ok::<(), aep_adapters::PostureError>(())
    /// ```
    pub fn both(self, key: &str, content: Value, structural: Value) -> Draft {
        self.push(key, content, Gate::Both(structural))
    }

    /// A `[metadata*]` member nested in an object member.
    ///
    /// ```
    /// use aep_adapters::{Draft, Posture};
    /// use serde_json::json;
    /// let d = Draft::new("attention.answered").both_in(&["answer", "values"], json!({"1": "free text"}), json!({}));
    /// assert_eq!(d.render(&Posture::from_ceiling("metadata")?).data, json!({"answer": {"values": {}}}));
    /// # Ok::<(), aep_adapters::PostureError>(())
    /// ```
    pub fn both_in(self, path: &[&str], content: Value, structural: Value) -> Draft {
        self.push_at(path, content, Gate::Both(structural))
    }

    /// A content digest (AEP-0003 §9.3) of `value`, always present: metadata.
    ///
    /// ```
    /// let d = aep_adapters::Draft::new("tool.completed").digest("result_digest", &"ok 42 tests".into());
    /// assert_eq!(d.render(&aep_adapters::Posture::default()).data["result_digest"], "9623cdc86ee0e1f01e338bc35845417f");
    /// ```
    pub fn digest(self, key: &str, value: &Value) -> Draft {
        let hex = ContentDigest::of(value).to_hex();
        self.meta(key, Value::String(hex))
    }

    /// A member's value as drafted (before gating), if the draft has it.
    ///
    /// ```
    /// let d = aep_adapters::Draft::new("run.started").meta("trigger", "user".into());
    /// assert_eq!(d.get("trigger"), Some(&serde_json::json!("user")));
    /// ```
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(k, _, _)| k.len() == 1 && k[0] == key)
            .map(|(_, v, _)| v)
    }

    aep_core::setters! {
        /// The vendor's tool call id, which pairs a tool event with its request in the
        /// session runtime.
        ///
        /// ```
        /// let d = aep_adapters::Draft::new("tool.completed").with_call(Some("call_1"));
        /// # let _ = d;
        /// ```
        pub fn with_call(call: Option<&str>) => links.call = id(call);
        /// The vendor's key of an attention request (a tool call id, a permission id, a
        /// pattern key), which pairs the request with its settlement in the session
        /// runtime.
        ///
        /// ```
        /// let d = aep_adapters::Draft::new("attention.timeout").with_attention_key(Some("perm_1"));
        /// # let _ = d;
        /// ```
        pub fn with_attention_key(key: Option<&str>) => links.attention = id(key);
        pub(crate) fn on_session(session: Option<&str>) => links.session = id(session);
        pub(crate) fn on_run(run: Option<&str>) => links.run = id(run);
    }

    pub(crate) fn links(&self) -> &Links {
        &self.links
    }

    /// Renders the draft at `posture`: the members its ceiling for this type allows,
    /// content kept at `redacted` passed through the pipeline, and the `capture` level
    /// the event declares (the ceiling).
    ///
    /// ```
    /// use aep_adapters::{Draft, Posture};
    /// use aep_core::Capture;
    /// let r = Draft::new("attention.requested").meta("kind", "permission".into()).render(&Posture::default());
    /// assert_eq!(r.capture, Capture::Redacted);
    /// assert_eq!(r.event_type, "attention.requested");
    /// ```
    pub fn render(&self, posture: &Posture) -> Rendered {
        let ceiling = posture.ceiling_for(&self.event_type);
        let mut data = Map::new();
        if ceiling > Capture::None {
            for (key, value, gate) in &self.fields {
                let kept = match gate {
                    Gate::Metadata => Some(value.clone()),
                    Gate::Content => match ceiling {
                        Capture::Redacted => posture.redacted(value),
                        Capture::Full => Some(value.clone()),
                        _ => None,
                    },
                    Gate::RedactedOnly if ceiling == Capture::Redacted => posture.redacted(value),
                    Gate::RedactedOnly => None,
                    Gate::Full => (ceiling == Capture::Full).then(|| value.clone()),
                    Gate::Both(structural) => match ceiling {
                        Capture::Redacted => posture.redacted(value),
                        Capture::Full => Some(value.clone()),
                        _ => Some(structural.clone()),
                    },
                };
                if let Some(v) = kept {
                    insert_at(&mut data, key, v);
                }
            }
        }
        Rendered {
            event_type: self.event_type.clone(),
            data: Value::Object(data),
            capture: ceiling,
            subject: self.subject.clone(),
            step: self.step.clone(),
            severity: self.severity,
        }
    }
}

/// Inserts `value` at `path` in `data`, creating the objects on the way (a member
/// already holding a non-object is replaced: the later draft call wins).
fn insert_at(data: &mut Map<String, Value>, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = data;
    for key in parents {
        let slot = at
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        match slot {
            Value::Object(m) => at = m,
            _ => return,
        }
    }
    at.insert(last.clone(), value);
}

/// A draft rendered at a posture: what goes into an event's envelope and `data`.
///
/// ```
/// use aep_adapters::{Draft, Posture};
/// let r = Draft::new("run.finished").step("2").render(&Posture::default());
/// assert_eq!(r.to_pin(), serde_json::json!({"type": "run.finished", "data": {}, "step": "2"}));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The event type.
    pub event_type: String,
    /// The payload (an object; empty when nothing survives).
    pub data: Value,
    /// The capture level the event declares.
    pub capture: Capture,
    /// The `subject`.
    pub subject: Option<String>,
    /// The envelope `step`.
    pub step: Option<String>,
    /// The severity (`None`: the default).
    pub severity: Option<Severity>,
}

impl Rendered {
    /// The `{type, data, subject?, step?}` form the Annex A pins state a mapping in.
    ///
    /// ```
    /// use aep_adapters::{Draft, Posture};
    /// let r = Draft::new("tool.requested").subject("Bash").render(&Posture::default());
    /// assert_eq!(r.to_pin()["subject"], "Bash");
    /// ```
    pub fn to_pin(&self) -> Value {
        let mut pin = Map::new();
        pin.insert("type".into(), Value::String(self.event_type.clone()));
        pin.insert("data".into(), self.data.clone());
        if let Some(s) = &self.subject {
            pin.insert("subject".into(), Value::String(s.clone()));
        }
        if let Some(s) = &self.step {
            pin.insert("step".into(), Value::String(s.clone()));
        }
        Value::Object(pin)
    }
}
