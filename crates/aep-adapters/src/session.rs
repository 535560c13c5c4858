//! The session runtime: what one agent session keeps between two hooks, and the rules
//! that turn a mapping's drafts into stamped events.
//!
//! A hook is a new process each time, so everything a session needs to go on lives in
//! a [`SessionState`] the caller loads before a hook and stores after it (serde; `aep
//! hook` keeps one file per session under a lock). [`SessionState::apply`] maps one
//! moment and applies the shared runtime rules, the part of each adapter the Annex A
//! pins leave to "runtime state":
//!
//! - **Positions** (AEP-0001 §7): every sequenced event gets the next `seq` of the
//!   state's `epoch`; the state never hands out a position twice. Whoever loses the
//!   state must start a new epoch ([`SessionState::new`] takes it; `aep hook` takes the
//!   next of the user's epoch store, the durable epoch memory §7 names).
//! - **Runs**: a `run.started` opens a run whose id is the vendor's (Codex's turn,
//!   Hermes's turn, AG-UI's run) or, where runs are synthesized, the id of the
//!   `run.started` event itself. A second open while a run is open keeps the live run
//!   for the sources whose steering never double-opens (OpenCode, Kilo Code, pi) and
//!   closes the stale one `run.cancelled` first for the others (the interrupt-drain
//!   rule). A terminal with no open run and no vendor run id is dropped (OpenCode's
//!   `session.idle` when nothing ran). Every event between carries the run; its
//!   terminal names the `run.started` as its `cause`.
//! - **Tools**: `tool.requested` is remembered by call id (or tool name, where the
//!   vendor has no call id); its completion, failure or denial names it as `cause`.
//! - **Attention**: a request is pending until its settlement arrives;
//!   `attention.answered`, `attention.resolved` and `attention.timeout` take the
//!   request's event id as `subject` (AEP-0002 §7.1) and `cause`, an answer is followed
//!   by `attention.resolved(answered)`, and a settlement with nothing pending is
//!   dropped (one terminal per request). A tool event for the tool a permission was
//!   asked for settles it (answered: the decision was made, out of band); a run's end
//!   dismisses what it left pending, except an input request (Claude Code's idle
//!   prompt), which the next prompt answers; a session's end dismisses everything, so
//!   a session never ends with attention pending (AEP-0002 §7.2).
//! - **Sessions**: `session.ended` drains an open run (`run.cancelled`) and is emitted
//!   once; Antigravity's session is started on first sight.
//! - **Steps**: `run.step.started` sets the envelope `step` of the events that follow,
//!   until its `run.step.finished`.
//! - **Joins**: Antigravity's `(conversationId, stepIdx)` and AG-UI's `toolCallId` →
//!   tool name; OpenCode's and Kilo Code's todo snapshots, diffed into transitions
//!   (the first snapshot seen only seeds); OpenHands's execution status, whose
//!   transitions synthesize its runs.
//!
//! Memory is bounded: each table keeps at most [`MAX_OPEN`] entries, the oldest
//! forgotten first.
//!
//! ```
//! use aep_adapters::{session::SessionState, Moment, Posture, Source};
//! use aep_core::envelope::{source_uri, EnvelopeFactory};
//! use serde_json::json;
//!
//! let factory = EnvelopeFactory::new(source_uri("host-a", "claude-code", Some("s1")), "claude-code");
//! let posture = Posture::default();
//! let mut state = SessionState::new("s1", 7);
//! let mut run = |payload: serde_json::Value| state.apply(Source::ClaudeCode, &Moment::new(&payload), &posture, &factory);
//! let started = run(json!({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "fix it"}));
//! let tool = run(json!({"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "ls"}}));
//! let done = run(json!({"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash", "tool_use_id": "t1", "tool_response": "ok"}));
//! assert_eq!(started[0].run(), Some(started[0].id()));    // a synthesized run is named by its start
//! assert_eq!(tool[0].run(), started[0].run());
//! assert_eq!(done[0].cause(), Some(tool[0].id()));         // the tool pair, linked
//! assert_eq!((done[0].epoch(), done[0].seq()), (7, Some(2)));
//! ```

use aep_core::capture::{downlevel_in_place, downlevel_redacting};
use aep_core::envelope::{Clock, EnvelopeFactory};
use aep_core::types::EventType;
use aep_core::{Capture, Event};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::draft::{Draft, Posture};
use crate::json::{get, s, scalar_text};
use crate::source::{Moment, Source};
use crate::sources::{antigravity, kilocode, opencode, openhands};

/// The most entries each table of a [`SessionState`] keeps (open tools, pending
/// attention, joins): past it the oldest is forgotten, so a session that never closes
/// what it opens costs bounded memory and a bounded state file.
pub const MAX_OPEN: usize = 256;

/// A run that is open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenRun {
    /// The run id: the vendor's, or the id of the `run.started` event.
    pub id: String,
    /// The id of the `run.started` event.
    pub event: String,
    /// Whether the id is the vendor's own.
    pub vendor: bool,
}

/// A tool call that was requested and has not ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTool {
    /// The tool's name.
    pub name: String,
    /// The id of the `tool.requested` event.
    pub event: String,
}

/// An attention request that has not been settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The id of the `attention.requested` event (the `subject` of its settlement).
    pub event: String,
    /// Its `kind` (`permission`, `form`, `input`, ...).
    pub kind: String,
    /// The tool it asks about, when it asks about one.
    pub tool: Option<String>,
    /// The form's field specs, for a `kind: form` request.
    pub fields: Option<Value>,
    /// Whether it was raised inside a run.
    pub in_run: bool,
}

/// A small keyed table that forgets its oldest entry past [`MAX_OPEN`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
struct Table<T>(Vec<(String, T)>);

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table(Vec::new())
    }
}

impl<T> Table<T> {
    fn insert(&mut self, key: String, value: T) {
        self.0.retain(|(k, _)| *k != key);
        if self.0.len() >= MAX_OPEN {
            self.0.remove(0);
        }
        self.0.push((key, value));
    }

    fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn remove(&mut self, key: &str) -> Option<T> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }

    fn take_where(&mut self, mut pick: impl FnMut(&T) -> bool) -> Vec<(String, T)> {
        let (taken, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|(_, v)| pick(v));
        self.0 = kept;
        taken
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// What one session keeps between hooks. Serializable, so a hook process can load it,
/// apply one moment and store it back; an unreadable state is replaced by a new one in
/// a new epoch (never a reused position).
///
/// ```
/// let state = aep_adapters::session::SessionState::new("s1", 3);
/// assert_eq!((state.session(), state.epoch(), state.next_seq()), ("s1", 3, 0));
/// let text = serde_json::to_string(&state)?;
/// let back: aep_adapters::session::SessionState = serde_json::from_str(&text)?;
/// assert_eq!(back, state);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionState {
    session: String,
    epoch: u64,
    next_seq: u64,
    started: bool,
    ended: bool,
    run: Option<OpenRun>,
    step: Option<String>,
    tools: Table<OpenTool>,
    attention: Table<Pending>,
    joins: Table<String>,
    todos: Option<Value>,
    status: Option<String>,
}

impl SessionState {
    /// A new state for `session`, its positions in `epoch` from `seq` 0.
    ///
    /// ```
    /// let s = aep_adapters::session::SessionState::new("s", 1_783_000_000_000);
    /// assert_eq!(s.epoch(), 1_783_000_000_000);
    /// ```
    pub fn new(session: impl Into<String>, epoch: u64) -> SessionState {
        SessionState {
            session: session.into(),
            epoch,
            ..SessionState::default()
        }
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The epoch positions are assigned in.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The `seq` the next sequenced event gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The open run, if any.
    ///
    /// ```
    /// assert!(aep_adapters::session::SessionState::new("s", 0).open_run().is_none());
    /// ```
    pub fn open_run(&self) -> Option<&OpenRun> {
        self.run.as_ref()
    }

    /// Whether the session has ended.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// The pending attention request under `key` (the vendor's key: a tool call id, a
    /// pattern key, a permission id).
    ///
    /// ```
    /// assert!(aep_adapters::session::SessionState::new("s", 0).pending("t1").is_none());
    /// ```
    pub fn pending(&self, key: &str) -> Option<&Pending> {
        self.attention.get(key)
    }

    /// How many attention requests are pending.
    pub fn pending_count(&self) -> usize {
        self.attention.len()
    }

    /// Maps one moment of `source` and applies the runtime rules (see the [module
    /// docs](self)), returning the events to send, stamped by `factory` (which names the
    /// emitter and reads the clock) at the state's next positions.
    pub fn apply<C: Clock>(
        &mut self,
        source: Source,
        moment: &Moment<'_>,
        posture: &Posture,
        factory: &EnvelopeFactory<C>,
    ) -> Vec<Event> {
        let drafts = self.drafts(source, moment, posture);
        self.emit(source, drafts, posture, factory)
    }

    /// Applies the runtime rules to drafts made elsewhere (an answer the `aep hook`
    /// permission loop received, a settlement it decided) and stamps them.
    ///
    /// ```
    /// use aep_adapters::{session::SessionState, Draft, Posture, Source};
    /// use aep_core::envelope::EnvelopeFactory;
    /// let f = EnvelopeFactory::new("aep://h/agent/codex/session/s", "codex");
    /// let mut s = SessionState::new("s", 0);
    /// // nothing pending under `t9`: a settlement of nothing is dropped
    /// let none = s.emit(Source::Codex, vec![Draft::new("attention.timeout").with_attention_key(Some("t9"))], &Posture::default(), &f);
    /// assert!(none.is_empty());
    /// ```
    pub fn emit<C: Clock>(
        &mut self,
        source: Source,
        drafts: Vec<Draft>,
        posture: &Posture,
        factory: &EnvelopeFactory<C>,
    ) -> Vec<Event> {
        let mut out = Vec::with_capacity(drafts.len() + 2);
        let mut ended_tools = Vec::new();
        for draft in drafts {
            if matches!(
                draft.event_type(),
                "tool.completed" | "tool.failed" | "tool.denied"
            ) {
                ended_tools.extend(draft.links().call.clone());
                ended_tools.extend(draft.subject_str().map(str::to_owned));
            }
            self.one(source, draft, posture, factory, &mut out);
        }
        // A form is not a gate: the end of the tool that asked it dismisses it, unless
        // the same moment answered it.
        let asked = self.attention.take_where(|p| {
            p.kind == "form" && p.tool.as_ref().is_some_and(|t| ended_tools.contains(t))
        });
        for (_, p) in asked {
            self.settle(&p, "dismissed", None, posture, factory, &mut out);
        }
        out
    }

    /// Stamps an event a driver decided outside the mapping: a control ack (AEP-0004
    /// §3) or an outcome of aep-core's attention desk (`attention.answered`,
    /// `attention.resolved`, `attention.timeout`), with the `cause` and `subject` it was
    /// decided with, at the state's next position, asked at `asked` and lowered to the
    /// posture's ceiling (through its redaction pipeline where content is kept at
    /// `redacted`). An attention outcome needs the request pending under `key` (the
    /// session runtime's key, [`crate::hold::Hold::key`]); a terminal settles it. With
    /// nothing pending there (the session ended, the tool ran meanwhile) the outcome is
    /// dropped: one terminal per request (AEP-0002 §7).
    ///
    /// ```
    /// use aep_adapters::{session::SessionState, Moment, Posture, Source};
    /// use aep_core::{envelope::EnvelopeFactory, Capture};
    /// use serde_json::json;
    /// let f = EnvelopeFactory::new("aep://h/agent/codex/session/s", "codex");
    /// let posture = Posture::default();
    /// let mut s = SessionState::new("s", 9);
    /// let p = json!({"hook_event_name": "PermissionRequest", "session_id": "s", "turn_id": "t", "tool_name": "Bash", "tool_use_id": "c1"});
    /// let asked = s.apply(Source::Codex, &Moment::new(&p), &posture, &f);
    /// let request = asked[0].id().to_owned();
    /// let ack = s.outcome(None, "control.accepted", json!({}), Some("cmd-1"), None, Capture::Metadata, &posture, &f);
    /// assert_eq!(ack.unwrap().cause(), Some("cmd-1"));
    /// let timeout = s.outcome(Some("c1"), "attention.timeout", json!({"after_ms": 5}), Some(&request), Some(&request), Capture::Metadata, &posture, &f).unwrap();
    /// assert_eq!((timeout.seq(), timeout.subject()), (Some(2), Some(request.as_str())));
    /// // settled: a second terminal is dropped
    /// assert!(s.outcome(Some("c1"), "attention.timeout", json!({}), None, None, Capture::Metadata, &posture, &f).is_none());
    /// // another request under the key is not settled by this one's outcome
    /// let again = s.apply(Source::Codex, &Moment::new(&p), &posture, &f);
    /// assert!(s.outcome(Some("c1"), "attention.timeout", json!({}), Some(&request), Some(&request), Capture::Metadata, &posture, &f).is_none());
    /// assert_eq!(s.pending("c1").map(|p| p.event.as_str()), Some(again[0].id()));
    /// ```
    #[allow(clippy::too_many_arguments)] // one event's envelope, each part named
    pub fn outcome<C: Clock>(
        &mut self,
        key: Option<&str>,
        event_type: &str,
        data: Value,
        cause: Option<&str>,
        subject: Option<&str>,
        asked: Capture,
        posture: &Posture,
        factory: &EnvelopeFactory<C>,
    ) -> Option<Event> {
        if event_type.starts_with("attention.") {
            let key = key?;
            let pending = self.attention.get(key)?;
            // Another request took the key meanwhile (the same tool asked twice, no call
            // id to tell them apart): this outcome is not its to settle.
            if subject.is_some_and(|s| s != pending.event) {
                return None;
            }
            if event_type != "attention.answered" {
                self.attention.remove(key);
            }
        }
        let mut event = factory.event(event_type);
        event.set_session(Some(self.session.clone()));
        event.set_epoch(Some(self.epoch));
        event.set_seq(Some(self.next_seq));
        self.next_seq += 1;
        event.set_run(self.run.as_ref().map(|r| r.id.clone()));
        event.set_step(self.step.clone());
        event.set_subject(subject.map(str::to_owned));
        event.set_cause(cause.map(str::to_owned));
        event.set_capture(Some(asked));
        if data.as_object().is_some_and(|d| !d.is_empty()) {
            event.set_data(data);
        }
        let ceiling = posture.ceiling_for(event_type);
        match posture.redactor() {
            Some(r) if ceiling >= Capture::Redacted => {
                downlevel_redacting(&mut event, ceiling, |v| *v = r.redact_value(v));
            }
            _ => {
                downlevel_in_place(&mut event, ceiling);
            }
        }
        Some(event)
    }

    /// The drafts of one moment: the pure mapping, with what this session joins to it
    /// first and the transitions it derives after.
    fn drafts(&mut self, source: Source, moment: &Moment<'_>, posture: &Posture) -> Vec<Draft> {
        let p = moment.payload();
        match source {
            Source::Antigravity => {
                let hook = moment.hook_name().unwrap_or("");
                let step = get(p, "stepIdx").and_then(scalar_text);
                let joined = match (hook, &step) {
                    ("PostToolUse", Some(k)) => self.joins.remove(k),
                    _ => None,
                };
                if let ("PreToolUse", Some(k), Some(name)) =
                    (hook, &step, get(p, "toolCall").and_then(|c| s(c, "name")))
                {
                    self.joins.insert(k.clone(), name.to_owned());
                }
                let mut drafts = antigravity::map(hook, p, joined.as_deref());
                // Runs open at the first invocation boundary.
                if hook == "PreInvocation" && self.run.is_none() {
                    drafts.insert(0, Draft::new("run.started").meta("trigger", json!("user")));
                }
                if !self.started {
                    drafts.insert(
                        0,
                        Draft::new("session.started")
                            .meta("client", json!({"name": antigravity::VENDOR})),
                    );
                }
                drafts
            }
            Source::Agui => {
                let ty = s(p, "type");
                let id = s(p, "toolCallId");
                if let (Some("TOOL_CALL_START"), Some(id), Some(name)) =
                    (ty, id, s(p, "toolCallName"))
                {
                    self.joins.insert(id.to_owned(), name.to_owned());
                }
                if let (Some("TOOL_CALL_RESULT"), Some(id), None) = (ty, id, s(p, "toolCallName")) {
                    if let Some(name) = self.joins.remove(id) {
                        let mut joined = p.clone();
                        if let Some(o) = joined.as_object_mut() {
                            o.insert("toolCallName".into(), json!(name));
                        }
                        return source.map(&Moment::new(&joined), posture);
                    }
                }
                source.map(moment, posture)
            }
            Source::Opencode | Source::Kilocode => {
                let mut drafts = source.map(moment, posture);
                let event = get(p, "event").unwrap_or(p);
                if s(event, "type") == Some("todo.updated") {
                    let next = get(event, "properties")
                        .and_then(|pr| get(pr, "todos"))
                        .cloned()
                        .unwrap_or_else(|| json!([]));
                    // The first snapshot seen only seeds: a mid-session attach invents
                    // no transitions.
                    if let Some(prev) = self.todos.replace(next.clone()) {
                        drafts.extend(if source == Source::Opencode {
                            opencode::diff_todos(&prev, &next)
                        } else {
                            kilocode::diff_todos(&prev, &next)
                        });
                    }
                }
                drafts
            }
            Source::Openhands => {
                let mut drafts = source.map(moment, posture);
                let status = match s(p, "key") {
                    Some("execution_status") => get(p, "value").and_then(Value::as_str),
                    Some("full_state") => get(p, "value").and_then(|v| s(v, "execution_status")),
                    _ => None,
                };
                if let Some(next) = status {
                    let prev = self.status.replace(next.to_owned());
                    drafts.extend(openhands::status_moments(prev.as_deref(), next));
                }
                drafts
            }
            Source::KimiCode => {
                let mut drafts = source.map(moment, posture);
                // The rejected decision's enforcement fact rides beside the answer.
                if s(p, "hook_event_name") == Some("PermissionResult")
                    && s(p, "decision") == Some("rejected")
                {
                    let name = s(p, "tool_name").unwrap_or("unknown");
                    let call = s(p, "tool_call_id");
                    drafts.push(crate::family::denied(name, call, "runtime"));
                }
                drafts
            }
            Source::Cline => {
                let drafts = source.map(moment, posture);
                // A child agent's loop is not the session's run: its delegation pair
                // rides the session, its run boundaries do not.
                if s(p, "parent_agent_id").is_some() {
                    drafts
                        .into_iter()
                        .filter(|d| !d.event_type().starts_with("run."))
                        .collect()
                } else {
                    drafts
                }
            }
            _ => source.map(moment, posture),
        }
    }

    /// Applies the rules to one draft, pushing what it becomes.
    fn one<C: Clock>(
        &mut self,
        source: Source,
        draft: Draft,
        posture: &Posture,
        factory: &EnvelopeFactory<C>,
        out: &mut Vec<Event>,
    ) {
        let ty = draft.event_type().to_owned();
        let links = draft.links().clone();
        match ty.as_str() {
            "session.started" => {
                self.started = true;
                self.stamp(&draft, posture, factory, None, None, out);
            }
            "session.ended" => {
                if self.ended {
                    return;
                }
                self.close_run(Draft::new("run.cancelled"), posture, factory, out);
                for (_, p) in self.attention.take_where(|_| true) {
                    self.settle(&p, "dismissed", None, posture, factory, out);
                }
                self.ended = true;
                self.stamp(&draft, posture, factory, None, None, out);
            }
            "run.started" => {
                if let Some(open) = &self.run {
                    let same = links.run.as_deref() == Some(open.id.as_str());
                    let keeps_live = links.run.is_none()
                        && matches!(source, Source::Opencode | Source::Kilocode | Source::Pi);
                    if same || keeps_live {
                        return;
                    }
                    // The interrupt-drain rule: a stale run closes at the next open.
                    self.close_run(Draft::new("run.cancelled"), posture, factory, out);
                }
                // The next prompt answers what the last turn left waiting for input.
                for (_, p) in self.attention.take_where(|p| p.kind == "input") {
                    self.settle(&p, "answered", None, posture, factory, out);
                }
                let mut event = self.event(&draft, posture, factory, None);
                let (id, vendor) = match &links.run {
                    Some(v) => (v.clone(), true),
                    None => (event.id().to_owned(), false),
                };
                event.set_run(Some(id.clone()));
                self.run = Some(OpenRun {
                    id,
                    event: event.id().to_owned(),
                    vendor,
                });
                self.step = None;
                out.push(event);
            }
            "run.finished" | "run.failed" | "run.cancelled" => {
                let matches_open = self.run.as_ref().is_some_and(|open| {
                    links.run.is_none() || links.run.as_deref() == Some(open.id.as_str())
                });
                if matches_open {
                    self.close_run(draft, posture, factory, out);
                } else if let Some(vendor_run) = &links.run {
                    let run = vendor_run.clone();
                    self.stamp(&draft, posture, factory, Some(run), None, out);
                }
            }
            "tool.requested" => {
                let key = links
                    .call
                    .clone()
                    .or_else(|| draft.subject_str().map(str::to_owned));
                let event = self.event(&draft, posture, factory, None);
                if let Some(key) = key {
                    self.tools.insert(
                        key,
                        OpenTool {
                            name: draft.subject_str().unwrap_or("unknown").to_owned(),
                            event: event.id().to_owned(),
                        },
                    );
                }
                out.push(event);
            }
            "tool.completed" | "tool.failed" | "tool.denied" => {
                let key = links
                    .call
                    .clone()
                    .or_else(|| draft.subject_str().map(str::to_owned));
                let requested = key.as_deref().and_then(|k| self.tools.remove(k));
                let cause = requested.map(|t| t.event);
                self.stamp(&draft, posture, factory, None, cause, out);
                // The tool a permission was asked for ran (or was refused): the question
                // was answered, out of band.
                let tool = draft.subject_str().map(str::to_owned);
                let call = links.call.clone();
                let settled = self.attention.take_where(|p| {
                    p.kind == "permission" && p.tool.is_some() && (p.tool == tool || p.tool == call)
                });
                for (_, p) in settled {
                    self.settle(&p, "answered", None, posture, factory, out);
                }
            }
            "attention.requested" => {
                let event = self.event(&draft, posture, factory, None);
                let key = links
                    .attention
                    .clone()
                    .or_else(|| draft.subject_str().map(str::to_owned))
                    .unwrap_or_else(|| event.id().to_owned());
                let kind = draft
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("other")
                    .to_owned();
                let tool = match kind.as_str() {
                    "permission" | "form" => links
                        .call
                        .clone()
                        .or_else(|| draft.subject_str().map(str::to_owned)),
                    _ => None,
                };
                self.attention.insert(
                    key,
                    Pending {
                        event: event.id().to_owned(),
                        kind,
                        tool,
                        fields: draft.get("fields").cloned(),
                        in_run: self.run.is_some(),
                    },
                );
                out.push(event);
            }
            "attention.answered" | "attention.resolved" | "attention.timeout" => {
                let Some(key) = links.attention.as_deref() else {
                    return;
                };
                let Some(pending) = self.attention.remove(key) else {
                    // One terminal per request: nothing pending, nothing to settle.
                    return;
                };
                let draft = draft.subject(pending.event.clone());
                let event = self.event(&draft, posture, factory, Some(pending.event.clone()));
                let answered = event.id().to_owned();
                out.push(event);
                if ty == "attention.answered" {
                    self.settle(&pending, "answered", Some(answered), posture, factory, out);
                }
            }
            _ => self.stamp(&draft, posture, factory, None, None, out),
        }
    }

    /// Closes the open run with `terminal` (its cause the run's start), dismissing the
    /// attention it left pending (but an input request).
    fn close_run<C: Clock>(
        &mut self,
        terminal: Draft,
        posture: &Posture,
        factory: &EnvelopeFactory<C>,
        out: &mut Vec<Event>,
    ) {
        let Some(open) = self.run.take() else {
            return;
        };
        self.run = Some(open.clone());
        for (_, p) in self.attention.take_where(|p| p.in_run && p.kind != "input") {
            self.settle(&p, "dismissed", None, posture, factory, out);
        }
        self.run = None;
        self.stamp(
            &terminal,
            posture,
            factory,
            Some(open.id),
            Some(open.event),
            out,
        );
        self.step = None;
    }

    /// `attention.resolved` for the request `pending`.
    fn settle<C: Clock>(
        &mut self,
        pending: &Pending,
        resolution: &str,
        cause: Option<String>,
        posture: &Posture,
        factory: &EnvelopeFactory<C>,
        out: &mut Vec<Event>,
    ) {
        let draft = Draft::new("attention.resolved")
            .meta("resolution", json!(resolution))
            .subject(pending.event.clone());
        let cause = cause.or_else(|| Some(pending.event.clone()));
        self.stamp(&draft, posture, factory, None, cause, out);
    }

    fn stamp<C: Clock>(
        &mut self,
        draft: &Draft,
        posture: &Posture,
        factory: &EnvelopeFactory<C>,
        run: Option<String>,
        cause: Option<String>,
        out: &mut Vec<Event>,
    ) {
        let mut event = self.event(draft, posture, factory, cause);
        if let Some(run) = run {
            event.set_run(Some(run));
        }
        out.push(event);
    }

    /// The envelope of one draft: its type, payload and capture; the session, the next
    /// position and the open run for a sequenced type; the open step; `cause`.
    fn event<C: Clock>(
        &mut self,
        draft: &Draft,
        posture: &Posture,
        factory: &EnvelopeFactory<C>,
        cause: Option<String>,
    ) -> Event {
        let rendered = draft.render(posture);
        let mut event = factory.event(&rendered.event_type);
        let parsed = EventType::parse(&rendered.event_type);
        let agent_scoped = parsed.as_ref().is_ok_and(EventType::is_agent_scoped);
        if !agent_scoped {
            event.set_session(Some(self.session.clone()));
            event.set_epoch(Some(self.epoch));
            event.set_seq(Some(self.next_seq));
            self.next_seq += 1;
            let in_run = !rendered.event_type.starts_with("session.");
            if in_run {
                event.set_run(self.run.as_ref().map(|r| r.id.clone()));
                let step = rendered.step.clone().or_else(|| self.step.clone());
                event.set_step(step);
            }
        }
        match rendered.event_type.as_str() {
            "run.step.started" => self.step = rendered.step.clone(),
            "run.step.finished" => self.step = None,
            _ => {}
        }
        event.set_subject(rendered.subject.clone());
        event.set_cause(cause);
        event.set_severity(rendered.severity);
        event.set_capture(Some(rendered.capture));
        if rendered.data.as_object().is_some_and(|d| !d.is_empty()) {
            event.set_data(rendered.data);
        }
        event
    }
}
