//! State projection: fold events into per-session state and the protocol violations
//! the fold surfaces.
//!
//! The fold is the one of the Python and TypeScript SDKs (their shared golden corpus is
//! `fixtures/projection/`):
//!
//! - dedupe on `(source, id)` (AEP-0001 §7.4): a redelivery equal to the first
//!   occurrence collapses silently, a different event under the same key is an
//!   [`Violation::IdCollision`] and is dropped;
//! - sessions keyed `(source, session)`: session identity is emitter-scoped
//!   (AEP-0001 §5.2);
//! - `(epoch, seq)` ordering (AEP-0001 §7): regressions are reported, never repaired,
//!   and the position follows the last folded event;
//! - run and session terminal exclusivity (AEP-0002 §2 convention 5);
//! - pending attention (AEP-0002 §7.2): `attention.resolved` and `attention.timeout`
//!   clear a request, `attention.answered` does not.
//!
//! Beside that shared state, the fold keeps what a supervisor looks at (module
//! `supervise`): each pending request's question ([`AttentionRequest`]: prompt, options,
//! AEP-0006 fields, `respond_via`, subject, deadline), tool calls with their status,
//! duration and the requests that gated them ([`ProjectedTool`]), the last activity,
//! a [`SessionStatus`], and the roster's [`Claim`] when a relay hands it one
//! ([`StateProjection::set_roster`]). These stay out of the serde form, which is the
//! golden corpus's shape byte for byte; [`ProjectedState::detailed`] serializes them.
//!
//! Commands (AEP-0004) and agent-scoped `agent.*` events are deduplicated but never
//! folded: a command names the target's session under the sender's `source` and
//! carries no `seq`, so folding it would invent a session.
//!
//! [`StateProjection`] folds in arrival order; [`project_state`] repairs the order of a
//! complete capture first.
//!
//! Where the two reference SDKs differ, this follows the Python one: an event's
//! position is checked before its type folds (a regressing `session.ended` reports the
//! regression first), and a second distinct `session.ended` reports
//! `session-terminal-exclusivity` only, not the pending requests again. A request's
//! `kind` that is not a string reads as `None`, as in the TypeScript SDK. A `type`
//! outside the AEP-0001 §6 grammar is neither a command nor agent-scoped, so it folds.
//!
//! ```
//! use aep_core::{projection::{project_state, RunStatus}, Event};
//!
//! let base = |id: &str, ty: &str, seq| {
//!     Event::new(id, ty, "2026-07-22T06:00:00.000Z", "aep://h/a", "agent-one")
//!         .with_session("s")
//!         .with_seq(seq)
//! };
//! let events = [
//!     base("2", "run.started", 1).with_run("r1"),
//!     base("1", "session.started", 0),
//!     base("3", "run.failed", 2).with_run("r1"),
//! ];
//! let state = project_state(&events);
//! let session = &state.sessions()[0];
//! assert_eq!(session.runs()[0].status(), RunStatus::Failed);
//! assert!(state.violations().is_empty()); // the batch sorted by (epoch, seq) first
//! ```

use serde::{Deserialize, Serialize};

use crate::resume::Position;

mod fold;
mod session;
mod summary;
mod supervise;
mod timeline;
mod witness;

pub use fold::{project_state, InboxItem, StateProjection};
pub use summary::SessionSummary;
pub use supervise::{
    Activity, AttentionRequest, Claim, Detailed, ProjectedTool, SessionStatus, ToolStatus,
};
pub use timeline::{Placed, Timeline};

/// The status of a run (AEP-0002 §2 convention 5): running until the first terminal
/// event closes it.
///
/// ```
/// use aep_core::projection::RunStatus;
///
/// assert_eq!(RunStatus::from_terminal("run.cancelled"), Some(RunStatus::Cancelled));
/// assert_eq!(serde_json::to_string(&RunStatus::Running)?, r#""running""#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RunStatus {
    /// Started, no terminal event yet.
    Running,
    /// Closed by `run.finished`.
    Finished,
    /// Closed by `run.failed`.
    Failed,
    /// Closed by `run.cancelled`.
    Cancelled,
}

impl RunStatus {
    /// The status a terminal run event sets, for the three terminal types.
    ///
    /// ```
    /// use aep_core::projection::RunStatus;
    /// assert_eq!(RunStatus::from_terminal("run.failed"), Some(RunStatus::Failed));
    /// assert_eq!(RunStatus::from_terminal("run.started"), None);
    /// ```
    pub fn from_terminal(event_type: &str) -> Option<RunStatus> {
        match event_type {
            "run.finished" => Some(RunStatus::Finished),
            "run.failed" => Some(RunStatus::Failed),
            "run.cancelled" => Some(RunStatus::Cancelled),
            _ => None,
        }
    }
}

/// One run of a session.
///
/// ```
/// use aep_core::{projection::{project_state, RunStatus}, Event};
///
/// let e = Event::new("1", "run.finished", "2026-07-22T06:00:07.000Z", "aep://h", "a")
///     .with_session("s").with_seq(0).with_run("r");
/// let state = project_state([&e]);
/// let run = &state.sessions()[0].runs()[0];
/// assert_eq!((run.run(), run.status(), run.started()), ("r", RunStatus::Finished, None));
/// assert_eq!(run.ended(), Some("2026-07-22T06:00:07.000Z"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectedRun {
    run: String,
    status: RunStatus,
    started: Option<String>,
    ended: Option<String>,
}

impl ProjectedRun {
    /// The `run` attribute.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// Running, or how the first terminal event closed it.
    pub fn status(&self) -> RunStatus {
        self.status
    }

    /// `time` of `run.started`; `None` when the run was only seen closing.
    pub fn started(&self) -> Option<&str> {
        self.started.as_deref()
    }

    /// `time` of the first terminal event; `None` while running.
    pub fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }
}

/// One unresolved `attention.requested` (AEP-0002 §7.2).
///
/// ```
/// use aep_core::{projection::project_state, Event};
/// use serde_json::json;
///
/// let e = Event::new("q1", "attention.requested", "2026-07-22T06:00:04.000Z", "aep://h", "a")
///     .with_session("s").with_seq(0).with_data(json!({"kind": "permission"}));
/// let state = project_state([&e]);
/// let pending = &state.sessions()[0].pending()[0];
/// assert_eq!((pending.id(), pending.kind()), ("q1", Some("permission")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingAttention {
    id: String,
    kind: Option<String>,
    since: String,
    /// Not in the golden shape: see [`Detailed`].
    #[serde(skip)]
    request: AttentionRequest,
}

impl PendingAttention {
    /// The request's event id: the `subject` a resolution names.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The request's `data.kind` (`permission`, `input`, `form`, ...), when a string.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }

    /// `time` of the request.
    pub fn since(&self) -> &str {
        &self.since
    }

    /// What it asks and how it may be answered.
    pub fn request(&self) -> &AttentionRequest {
        &self.request
    }

    /// This request serialized with its question (see [`Detailed`]).
    pub fn detailed(&self) -> Detailed<'_, PendingAttention> {
        Detailed(self)
    }
}

/// One session's projected state, keyed `(source, session)` (AEP-0001 §5.2).
///
/// ```
/// use aep_core::{projection::project_state, resume::Position, Event};
///
/// let e = Event::new("1", "session.started", "2026-07-22T06:00:00.000Z", "aep://h", "agent-one")
///     .with_session("s").with_seq(0);
/// let state = project_state([&e]);
/// let s = &state.sessions()[0];
/// assert_eq!((s.source(), s.session(), s.agent()), ("aep://h", "s", "agent-one"));
/// assert_eq!(s.started(), Some("2026-07-22T06:00:00.000Z"));
/// assert_eq!(s.position(), Some(Position::new(0, 0)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectedSession {
    source: String,
    session: String,
    agent: String,
    started: Option<String>,
    ended: Option<String>,
    position: Option<Position>,
    runs: Vec<ProjectedRun>,
    pending: Vec<PendingAttention>,
    /// Not in the golden shape: see [`Detailed`].
    #[serde(skip)]
    tools: Vec<ProjectedTool>,
    #[serde(skip)]
    last_activity: Option<Activity>,
    #[serde(skip)]
    claim: Option<Claim>,
}

impl ProjectedSession {
    /// The emitter's `source`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The `session` attribute.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The `agent` of the first folded event of the session (descriptive, not policed).
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// `time` of the first `session.started`.
    pub fn started(&self) -> Option<&str> {
        self.started.as_deref()
    }

    /// `time` of the first `session.ended`; `None` while open.
    pub fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// `(epoch, seq)` of the last folded sequenced event; `None` before any.
    pub fn position(&self) -> Option<Position> {
        self.position
    }

    /// Runs, in fold order.
    pub fn runs(&self) -> &[ProjectedRun] {
        &self.runs
    }

    /// Unresolved attention requests, in fold order.
    pub fn pending(&self) -> &[PendingAttention] {
        &self.pending
    }

    /// Tool calls, in fold order.
    pub fn tools(&self) -> &[ProjectedTool] {
        &self.tools
    }

    /// The last event folded into the session.
    pub fn last_activity(&self) -> Option<&Activity> {
        self.last_activity.as_ref()
    }

    /// The roster's live claim on the session, when the projection was given one
    /// ([`StateProjection::set_roster`]); `None`: nobody connected claims it.
    pub fn claim(&self) -> Option<&Claim> {
        self.claim.as_ref()
    }

    /// Ended, waiting on a person, running, or idle, in that order of precedence.
    ///
    /// ```
    /// use aep_core::{projection::{project_state, SessionStatus}, Event};
    /// let e = |id: &str, ty: &str, seq| Event::new(id, ty, "t", "aep://h", "a").with_session("s").with_seq(seq).with_run("r");
    /// let state = project_state(&[e("1", "run.started", 0), e("2", "attention.requested", 1)]);
    /// assert_eq!(state.sessions()[0].status(), SessionStatus::Waiting);
    /// let state = project_state(&[e("1", "run.started", 0)]);
    /// assert_eq!(state.sessions()[0].status(), SessionStatus::Running);
    /// ```
    pub fn status(&self) -> SessionStatus {
        SessionStatus::of(
            self.ended.is_some(),
            !self.pending.is_empty(),
            self.runs.iter().any(|r| r.status == RunStatus::Running),
        )
    }

    /// This session serialized with the supervisor's members (see [`Detailed`]).
    pub fn detailed(&self) -> Detailed<'_, ProjectedSession> {
        Detailed(self)
    }
}

/// A protocol violation the fold surfaced. Each carries exactly the keys that scope
/// it; serialized with its `rule` name as in the reference SDKs.
///
/// ```
/// use aep_core::projection::Violation;
///
/// let v = Violation::IdCollision { source: "aep://h".into(), id: "e1".into() };
/// assert_eq!(v.rule(), "id-collision");
/// assert_eq!(serde_json::to_string(&v)?, r#"{"rule":"id-collision","source":"aep://h","id":"e1"}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Violation {
    /// One `(source, id)` named two different events (AEP-0001 §7.4); the first stays
    /// folded.
    IdCollision {
        /// The emitter.
        source: String,
        /// The reused id.
        id: String,
    },
    /// A second distinct terminal event for a run (AEP-0002 §2 convention 5); the
    /// first terminal's status stays.
    RunTerminalExclusivity {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
        /// The run.
        run: String,
    },
    /// A second distinct `session.ended` (AEP-0002 §2 convention 5); the first stays.
    SessionTerminalExclusivity {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
    },
    /// `session.ended` while attention requests were pending (AEP-0002 §7.2).
    EndedWithPendingAttention {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
        /// How many requests were pending.
        pending: usize,
    },
    /// `epoch` went backwards within a session (AEP-0001 §7).
    EpochRegression {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
        /// The event that regressed.
        id: String,
    },
    /// `seq` failed to advance within an epoch (AEP-0001 §7).
    SeqRegression {
        /// The emitter.
        source: String,
        /// The session.
        session: String,
        /// The event that regressed.
        id: String,
    },
}

impl Violation {
    /// The rule name: `id-collision`, `run-terminal-exclusivity`,
    /// `session-terminal-exclusivity`, `ended-with-pending-attention`,
    /// `epoch-regression` or `seq-regression`.
    ///
    /// ```
    /// use aep_core::projection::Violation;
    /// let v = Violation::SeqRegression { source: "aep://h".into(), session: "s".into(), id: "e2".into() };
    /// assert_eq!(v.rule(), "seq-regression");
    /// ```
    pub fn rule(&self) -> &'static str {
        match self {
            Violation::IdCollision { .. } => "id-collision",
            Violation::RunTerminalExclusivity { .. } => "run-terminal-exclusivity",
            Violation::SessionTerminalExclusivity { .. } => "session-terminal-exclusivity",
            Violation::EndedWithPendingAttention { .. } => "ended-with-pending-attention",
            Violation::EpochRegression { .. } => "epoch-regression",
            Violation::SeqRegression { .. } => "seq-regression",
        }
    }
}

/// A snapshot of the projection: sessions sorted by `(source, session)`, violations in
/// fold order. Serializes to the `state` shape of `fixtures/projection/expected.json`.
///
/// ```
/// use aep_core::projection::StateProjection;
///
/// let state = StateProjection::new().state();
/// assert_eq!(serde_json::to_string(&state)?, r#"{"sessions":[],"violations":[]}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProjectedState {
    sessions: Vec<ProjectedSession>,
    violations: Vec<Violation>,
}

impl ProjectedState {
    /// Sessions, sorted by `(source, session)`.
    pub fn sessions(&self) -> &[ProjectedSession] {
        &self.sessions
    }

    /// The session `(source, session)`.
    ///
    /// ```
    /// use aep_core::{projection::project_state, Event};
    /// let e = Event::new("1", "session.started", "t", "aep://h", "a").with_session("s").with_seq(0);
    /// let state = project_state([&e]);
    /// assert!(state.session("aep://h", "s").is_some());
    /// assert!(state.session("aep://other", "s").is_none()); // sessions are emitter-scoped
    /// ```
    pub fn session(&self, source: &str, session: &str) -> Option<&ProjectedSession> {
        self.sessions
            .binary_search_by(|s| (s.source.as_str(), s.session.as_str()).cmp(&(source, session)))
            .ok()
            .and_then(|i| self.sessions.get(i))
    }

    /// Violations, in fold order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// This snapshot serialized with the supervisor's members (see [`Detailed`]); the
    /// plain serde form is the golden corpus's shape.
    pub fn detailed(&self) -> Detailed<'_, ProjectedState> {
        Detailed(self)
    }
}
