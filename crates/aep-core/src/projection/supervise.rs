//! What a supervisor looks at beyond the cross-SDK state: each pending request's
//! question and how it may be answered, tool calls and what gated them, the session's
//! last activity, its status, and the roster's claim on it.
//!
//! These members ride the same types as the golden state
//! (`fixtures/projection/expected.json`) but stay out of their serde form, which is the
//! Python and TypeScript SDKs' shape byte for byte; [`Detailed`] serializes a snapshot
//! with them.

use std::fmt;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::frame::RosterEntry;
use crate::payload::{
    AttentionRequested, AttentionRequestedField, AttentionRequestedOption,
    AttentionRequestedRespondVia,
};
use crate::{Event, Severity};

use super::{PendingAttention, ProjectedRun, ProjectedSession, ProjectedState, Violation};

/// What an `attention.requested` asks (AEP-0002 §5.3, AEP-0006, AEP-0008), read from
/// its payload and envelope when it folded.
///
/// A payload that does not decode as `attention.requested` (a producer's fault) keeps
/// what the envelope says and an empty question: the request is still pending and
/// still shown, it just cannot be rendered as a form.
///
/// ```
/// use aep_core::{projection::project_state, Event};
/// use serde_json::json;
///
/// let e = Event::new("q1", "attention.requested", "2026-07-22T06:00:04.000Z", "aep://h", "a")
///     .with_session("s").with_seq(0).with_subject("Bash")
///     .with_data(json!({"kind": "permission", "prompt": "Run rm?", "respond_via": ["oob"],
///         "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]}));
/// let state = project_state([&e]);
/// let ask = state.sessions()[0].pending()[0].request();
/// assert_eq!(ask.prompt(), Some("Run rm?"));
/// assert_eq!(ask.options().len(), 2);
/// assert_eq!(ask.subject(), Some("Bash"));
/// assert!(!ask.answerable()); // AEP-0008: declared, and `control` is not listed
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AttentionRequest {
    pub(super) prompt: Option<String>,
    pub(super) options: Vec<AttentionRequestedOption>,
    pub(super) fields: Vec<AttentionRequestedField>,
    pub(super) respond_via: Option<Vec<AttentionRequestedRespondVia>>,
    pub(super) expires_at: Option<String>,
    pub(super) subject: Option<String>,
    pub(super) run: Option<String>,
    pub(super) severity: Severity,
    pub(super) tool: Option<String>,
}

// The payload types compare JSON numbers and values, which are never NaN: equality is
// an equivalence.
impl Eq for AttentionRequest {}

impl AttentionRequest {
    /// Reads the question of `event`, an `attention.requested`.
    pub(super) fn of(event: &Event) -> AttentionRequest {
        let payload = event.payload::<AttentionRequested>().ok();
        let (prompt, options, fields, respond_via, expires_at) = match payload {
            Some(p) => (
                Some(p.prompt),
                p.options.unwrap_or_default(),
                p.fields.unwrap_or_default(),
                p.respond_via,
                p.expires_at,
            ),
            None => (None, Vec::new(), Vec::new(), None, None),
        };
        AttentionRequest {
            prompt,
            options,
            fields,
            respond_via,
            expires_at,
            subject: event.subject().map(str::to_owned),
            run: event.run().map(str::to_owned),
            severity: event.severity(),
            tool: None,
        }
    }

    /// `data.prompt`: what the person must read; `None` when the payload did not decode.
    pub fn prompt(&self) -> Option<&str> {
        self.prompt.as_deref()
    }

    /// `data.options`: the closed-choice answers, in order.
    pub fn options(&self) -> &[AttentionRequestedOption] {
        &self.options
    }

    /// `data.fields`: a `kind: "form"` request's typed fields (AEP-0006), in order.
    pub fn fields(&self) -> &[AttentionRequestedField] {
        &self.fields
    }

    /// `data.respond_via`, as declared; `None` when absent.
    pub fn respond_via(&self) -> Option<&[AttentionRequestedRespondVia]> {
        self.respond_via.as_deref()
    }

    /// Whether a consumer should offer to answer over control (AEP-0008 §2): when
    /// `respond_via` is absent (nothing declared: send and settle), or lists `control`.
    /// A declaration without `control` makes the request informational on the bus.
    ///
    /// ```
    /// use aep_core::{projection::project_state, Event};
    /// use serde_json::json;
    /// let ask = |data| {
    ///     let e = Event::new("q", "attention.requested", "t", "aep://h", "a").with_session("s").with_seq(0).with_data(data);
    ///     project_state([&e]).sessions()[0].pending()[0].request().answerable()
    /// };
    /// assert!(ask(json!({"kind": "input", "prompt": "?"})));
    /// assert!(ask(json!({"kind": "input", "prompt": "?", "respond_via": ["oob", "control"]})));
    /// assert!(!ask(json!({"kind": "input", "prompt": "?", "respond_via": []})));
    /// ```
    pub fn answerable(&self) -> bool {
        self.respond_via
            .as_ref()
            .is_none_or(|via| via.contains(&AttentionRequestedRespondVia::Control))
    }

    /// `data.expires_at`: the deadline the emitter declared, RFC 3339.
    pub fn expires_at(&self) -> Option<&str> {
        self.expires_at.as_deref()
    }

    /// The request's `subject` (the acted-upon entity, e.g. the tool name; AEP-0001 §5).
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The `run` it was raised in.
    pub fn run(&self) -> Option<&str> {
        self.run.as_deref()
    }

    /// Its `severity` (AEP-0002 §4.1 recommends `notice` or above).
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// The tool call it gates ([`ProjectedTool::call`]), when one is known.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }
}

/// Where a tool call stands (AEP-0002 §4.1): requested until its first terminal.
///
/// ```
/// use aep_core::projection::ToolStatus;
/// assert_eq!(serde_json::to_string(&ToolStatus::Denied)?, r#""denied""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolStatus {
    /// `tool.requested`, no terminal yet: about to run, or running.
    Requested,
    /// Closed by `tool.completed`.
    Completed,
    /// Closed by `tool.failed`.
    Failed,
    /// Closed by `tool.denied`: blocked before it ran.
    Denied,
}

impl ToolStatus {
    /// The status a terminal tool event sets, for the three terminal types.
    ///
    /// ```
    /// use aep_core::projection::ToolStatus;
    /// assert_eq!(ToolStatus::from_terminal("tool.failed"), Some(ToolStatus::Failed));
    /// assert_eq!(ToolStatus::from_terminal("tool.requested"), None);
    /// ```
    pub fn from_terminal(event_type: &str) -> Option<ToolStatus> {
        match event_type {
            "tool.completed" => Some(ToolStatus::Completed),
            "tool.failed" => Some(ToolStatus::Failed),
            "tool.denied" => Some(ToolStatus::Denied),
            _ => None,
        }
    }
}

/// One tool call of a session: `tool.requested` and its terminal, paired by
/// `data.tool.call_id` (the `tool_ref` of AEP-0002 §5.2), or by the terminal's `cause`
/// naming the request when no call id is given.
///
/// ```
/// use aep_core::{projection::{project_state, ToolStatus}, Event};
/// use serde_json::json;
///
/// let ev = |id: &str, ty: &str, time: &str, seq| Event::new(id, ty, time, "aep://h", "a")
///     .with_session("s").with_seq(seq).with_run("r1")
///     .with_data(json!({"tool": {"name": "Bash", "call_id": "t1"}}));
/// let state = project_state(&[
///     ev("1", "tool.requested", "2026-07-22T06:00:00.000Z", 0),
///     ev("2", "tool.completed", "2026-07-22T06:00:01.250Z", 1),
/// ]);
/// let tool = &state.sessions()[0].tools()[0];
/// assert_eq!((tool.call(), tool.name(), tool.status()), ("t1", "Bash", ToolStatus::Completed));
/// assert_eq!(tool.duration_ms(), Some(1250)); // from the times when no duration_ms
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectedTool {
    pub(super) call: String,
    pub(super) name: String,
    pub(super) status: ToolStatus,
    pub(super) run: Option<String>,
    pub(super) requested: Option<String>,
    pub(super) ended: Option<String>,
    pub(super) duration_ms: Option<u64>,
    pub(super) gated_by: Vec<String>,
    /// The ids of its request and terminal, which an attention request's `cause` names.
    #[serde(skip)]
    pub(super) ids: Vec<String>,
}

impl ProjectedTool {
    /// The call's key: `data.tool.call_id`, else the id of its `tool.requested` (or of
    /// a terminal seen alone).
    pub fn call(&self) -> &str {
        &self.call
    }

    /// `data.tool.name`, else the event's `subject`, else empty.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Requested, or how its first terminal closed it.
    pub fn status(&self) -> ToolStatus {
        self.status
    }

    /// The `run` it belongs to.
    pub fn run(&self) -> Option<&str> {
        self.run.as_deref()
    }

    /// `time` of `tool.requested`; `None` when only its terminal was seen.
    pub fn requested(&self) -> Option<&str> {
        self.requested.as_deref()
    }

    /// `time` of the terminal; `None` while requested.
    pub fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// The terminal's `data.duration_ms`, else the time between request and terminal.
    pub fn duration_ms(&self) -> Option<u64> {
        self.duration_ms
    }

    /// The `attention.requested` ids that gated it: those whose `cause` names one of its
    /// events, or whose `subject` names the tool while the call was open in the same
    /// run (the permission prompt of a held call).
    pub fn gated_by(&self) -> &[String] {
        &self.gated_by
    }
}

/// The last event folded into a session.
///
/// ```
/// use aep_core::{projection::project_state, Event, Severity};
/// let e = Event::new("1", "log.emitted", "2026-07-22T06:00:09.000Z", "aep://h", "a")
///     .with_session("s").with_seq(4).with_severity(Severity::Warning);
/// let state = project_state([&e]);
/// let last = state.sessions()[0].last_activity().unwrap();
/// assert_eq!((last.event_type(), last.time(), last.severity()), ("log.emitted", "2026-07-22T06:00:09.000Z", Severity::Warning));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Activity {
    pub(super) id: String,
    #[serde(rename = "type")]
    pub(super) event_type: String,
    pub(super) time: String,
    pub(super) severity: Severity,
}

impl Activity {
    /// Becomes `event`'s, reusing its strings' buffers.
    pub(super) fn set(&mut self, event: &Event) {
        let put = |to: &mut String, from: &str| {
            to.clear();
            to.push_str(from);
        };
        put(&mut self.id, event.id());
        put(&mut self.event_type, event.event_type());
        put(&mut self.time, event.time());
        self.severity = event.severity();
    }

    pub(super) fn of(event: &Event) -> Activity {
        Activity {
            id: event.id().to_owned(),
            event_type: event.event_type().to_owned(),
            time: event.time().to_owned(),
            severity: event.severity(),
        }
    }

    /// The event's `id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The event's `type`.
    pub fn event_type(&self) -> &str {
        &self.event_type
    }

    /// The event's `time`.
    pub fn time(&self) -> &str {
        &self.time
    }

    /// The event's `severity`.
    pub fn severity(&self) -> Severity {
        self.severity
    }
}

/// What a supervisor reads first of a session, from its folded state.
///
/// ```
/// use aep_core::projection::SessionStatus;
/// assert_eq!(serde_json::to_string(&SessionStatus::Waiting)?, r#""waiting""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SessionStatus {
    /// `session.ended` folded (AEP-0002 §2 convention 5).
    Ended,
    /// Open, with an attention request pending (AEP-0002 §7): a person is needed.
    Waiting,
    /// Open, a run without its terminal.
    Running,
    /// Open, nothing running or pending.
    Idle,
}

impl SessionStatus {
    /// The one precedence: ended, then waiting, then running, then idle.
    pub(super) fn of(ended: bool, pending: bool, running: bool) -> SessionStatus {
        if ended {
            SessionStatus::Ended
        } else if pending {
            SessionStatus::Waiting
        } else if running {
            SessionStatus::Running
        } else {
            SessionStatus::Idle
        }
    }
}

/// A live claim on a session from the relay's roster (AEP-0003 §4.1): who is
/// connected for it and which commands it takes (AEP-0004 §4.2).
///
/// ```
/// use aep_core::frame::{Capabilities, ControlCapability, Hello, Identity, Role, RosterEntry};
/// use aep_core::{projection::StateProjection, Event};
///
/// let mut caps = Capabilities::default();
/// caps.control = Some(ControlCapability::accepting(["control.cancel"]));
/// let hello = Hello::new(Role::Emitter).with_identity(Identity::new("a")).with_capabilities(caps);
/// let mut p = StateProjection::new();
/// p.apply(&Event::new("1", "session.started", "t", "aep://h", "a").with_session("s").with_seq(0));
/// p.set_roster(&[RosterEntry::claimed("s", &hello)]);
/// let state = p.state();
/// let claim = state.sessions()[0].claim().unwrap();
/// assert_eq!(claim.accepts(), Some(&["control.cancel".to_owned()][..]));
/// assert!(claim.accepts_type("control.cancel") && !claim.accepts_type("control.pause"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub(super) agent: Option<String>,
    pub(super) instance: Option<String>,
    pub(super) accepts: Option<Vec<String>>,
    /// More than one live claim: a command to it is refused `ambiguous` (AEP-0004 §4.5).
    pub(super) claimants: usize,
}

impl Claim {
    pub(super) fn of(entry: &RosterEntry) -> Claim {
        Claim {
            agent: entry.agent.clone(),
            instance: entry.instance.clone(),
            accepts: entry.control.as_ref().and_then(|c| c.accepts.clone()),
            claimants: 1,
        }
    }

    /// `hello.identity.agent` of the claimant.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// `hello.identity.instance` of the claimant.
    pub fn instance(&self) -> Option<&str> {
        self.instance.as_deref()
    }

    /// The command types it declared it accepts; `None`: undeclared.
    pub fn accepts(&self) -> Option<&[String]> {
        self.accepts.as_deref()
    }

    /// Whether a command of `command_type` would reach a decision (AEP-0004 §4.2): it is
    /// declared, or nothing is declared and the target decides.
    pub fn accepts_type(&self, command_type: &str) -> bool {
        self.accepts
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == command_type))
    }

    /// How many live claims the session has (more than one: `ambiguous`).
    pub fn claimants(&self) -> usize {
        self.claimants
    }
}

/// A snapshot serialized with the supervisor's members: each session's `status`,
/// `last_activity`, `tools` and `claim`, and each pending request's question
/// ([`AttentionRequest`]) beside its golden members. `T` is [`ProjectedState`],
/// [`ProjectedSession`] or [`PendingAttention`]; take one with their `detailed()`.
///
/// ```
/// use aep_core::{projection::project_state, Event};
/// let e = Event::new("1", "session.started", "t", "aep://h", "a").with_session("s").with_seq(0);
/// let state = project_state([&e]);
/// let json = serde_json::to_value(state.detailed())?;
/// assert_eq!(json["sessions"][0]["status"], "idle");
/// assert_eq!(json["sessions"][0]["last_activity"]["type"], "session.started");
/// assert!(serde_json::to_value(&state)?["sessions"][0].get("status").is_none()); // golden shape
/// # Ok::<(), serde_json::Error>(())
/// ```
pub struct Detailed<'a, T>(pub(super) &'a T);

impl<T: fmt::Debug> fmt::Debug for Detailed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Detailed").field(self.0).finish()
    }
}

impl Serialize for Detailed<'_, PendingAttention> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let r = &p.request;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &p.id)?;
        m.serialize_entry("kind", &p.kind)?;
        m.serialize_entry("since", &p.since)?;
        m.serialize_entry("prompt", &r.prompt)?;
        m.serialize_entry("options", &r.options)?;
        m.serialize_entry("fields", &r.fields)?;
        m.serialize_entry("respond_via", &r.respond_via)?;
        m.serialize_entry("answerable", &r.answerable())?;
        m.serialize_entry("expires_at", &r.expires_at)?;
        m.serialize_entry("subject", &r.subject)?;
        m.serialize_entry("run", &r.run)?;
        m.serialize_entry("severity", &r.severity)?;
        m.serialize_entry("tool", &r.tool)?;
        m.end()
    }
}

/// A list of snapshot parts (a session's pending requests, a state's sessions), each
/// [`Detailed`].
struct DetailedList<'a, T>(&'a [T]);

impl<'a, T> Serialize for DetailedList<'a, T>
where
    Detailed<'a, T>: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Detailed))
    }
}

impl Serialize for Detailed<'_, ProjectedSession> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("source", &x.source)?;
        m.serialize_entry("session", &x.session)?;
        m.serialize_entry("agent", &x.agent)?;
        m.serialize_entry("started", &x.started)?;
        m.serialize_entry("ended", &x.ended)?;
        m.serialize_entry("position", &x.position)?;
        m.serialize_entry("runs", &x.runs as &[ProjectedRun])?;
        m.serialize_entry("pending", &DetailedList(&x.pending))?;
        m.serialize_entry("status", &x.status())?;
        m.serialize_entry("last_activity", &x.last_activity)?;
        m.serialize_entry("tools", &x.tools)?;
        m.serialize_entry("claim", &x.claim)?;
        m.end()
    }
}

impl Serialize for Detailed<'_, ProjectedState> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("sessions", &DetailedList(&self.0.sessions))?;
        m.serialize_entry("violations", &self.0.violations as &[Violation])?;
        m.end()
    }
}

/// The key of each tool call (AEP-0002 §5.2 `tool_ref`): `data.tool.call_id`, else,
/// for a terminal, the call its `cause` names, else the event's own id; and the call
/// each tool event went to, which an attention request's `cause` may name. One rule for
/// the fold and the timeline.
#[derive(Debug, Default)]
pub(super) struct ToolCalls {
    ids: crate::FastMap<Box<str>, Box<str>>,
}

impl ToolCalls {
    /// Bounds the id map: past it, later events are paired by call id alone.
    const MAX: usize = 1 << 20;

    /// The call `event` (a tool event; `terminal` unless `tool.requested`) belongs to,
    /// remembered under its id.
    pub(super) fn key_of(&mut self, event: &Event, terminal: bool) -> Box<str> {
        let call_id = ToolBits::of(event).tool.and_then(|t| t.call_id);
        self.key_with(event, terminal, call_id)
    }

    /// [`key_of`](Self::key_of) with the payload's `call_id` read already.
    pub(super) fn key_with(
        &mut self,
        event: &Event,
        terminal: bool,
        call_id: Option<String>,
    ) -> Box<str> {
        let call: Box<str> = match call_id {
            Some(id) => id.into(),
            // AEP-0001 §5: `cause` is the immediately causing event, here the request
            None => match event
                .cause()
                .filter(|_| terminal)
                .and_then(|c| self.ids.get(c))
            {
                Some(call) => call.clone(),
                None => event.id().into(),
            },
        };
        if self.ids.len() < Self::MAX {
            self.ids.insert(event.id().into(), call.clone());
        }
        call
    }

    /// The call whose event has id `id`.
    pub(super) fn call_of(&self, id: &str) -> Option<&str> {
        self.ids.get(id).map(|c| &**c)
    }
}

/// `duration_ms` of a tool terminal's payload, and its `tool_ref`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolBits {
    #[serde(default)]
    pub(super) tool: Option<ToolRefBits>,
    #[serde(default)]
    pub(super) duration_ms: Option<u64>,
}

/// The `tool_ref` (AEP-0002 §5.2) members a tool call is keyed and named by.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolRefBits {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) call_id: Option<String>,
}

impl ToolBits {
    /// What a tool event's payload says; nothing when it is not an object of that shape.
    pub(super) fn of(event: &Event) -> ToolBits {
        let Some(raw) = event.data_raw() else {
            return ToolBits::default();
        };
        if !raw.get().trim_start().starts_with('{') {
            return ToolBits::default();
        }
        serde_json::from_str(raw.get()).unwrap_or_default()
    }
}

/// Milliseconds from `from` to `to`, both RFC 3339, when both read and `to` is not
/// earlier.
pub(super) fn millis_between(from: &str, to: &str) -> Option<u64> {
    let (a, b) = (
        crate::validate::unix_nanos(from)?,
        crate::validate::unix_nanos(to)?,
    );
    u64::try_from((b - a) / 1_000_000).ok()
}
