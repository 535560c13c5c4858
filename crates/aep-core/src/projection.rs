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

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::BuildHasher;

use serde::{Deserialize, Serialize};

use hashbrown::HashTable;

use crate::dedupe::CompactId;
use crate::resume::Position;
use crate::types::EventType;
use crate::Event;

use crate::FastMap;

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
}

/// Entries kept in fold order and found by key: a linear scan while few, a hash index
/// once many, so a session with thousands of runs or requests stays linear overall.
/// Removal leaves a hole until holes outnumber entries.
#[derive(Debug)]
struct Ordered<T> {
    slots: Vec<Option<T>>,
    live: usize,
    index: Option<FastMap<Box<str>, usize>>,
}

trait Keyed {
    fn key(&self) -> &str;
}

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered {
            slots: Vec::new(),
            live: 0,
            index: None,
        }
    }
}

impl<T: Keyed> Ordered<T> {
    const SCAN: usize = 16;

    fn find(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self
                .slots
                .iter()
                .position(|s| s.as_ref().is_some_and(|t| t.key() == key)),
        }
    }

    fn get_mut(&mut self, at: usize) -> Option<&mut T> {
        self.slots.get_mut(at).and_then(Option::as_mut)
    }

    fn push(&mut self, item: T) {
        if let Some(index) = &mut self.index {
            index.insert(item.key().into(), self.slots.len());
        }
        self.slots.push(Some(item));
        self.live += 1;
        if self.index.is_none() && self.slots.len() > Self::SCAN {
            self.reindex();
        }
    }

    fn remove(&mut self, key: &str) {
        let Some(at) = self.find(key) else {
            return;
        };
        if let Some(slot) = self.slots.get_mut(at) {
            *slot = None;
            self.live -= 1;
        }
        if let Some(index) = &mut self.index {
            index.remove(key);
        }
        if self.slots.len() > Self::SCAN && self.live * 2 < self.slots.len() {
            self.slots.retain(Option::is_some);
            self.reindex();
        }
    }

    fn reindex(&mut self) {
        self.index = (self.slots.len() > Self::SCAN).then(|| {
            self.slots
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.as_ref().map(|t| (t.key().into(), i)))
                .collect()
        });
    }

    fn len(&self) -> usize {
        self.live
    }

    fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }
}

impl Keyed for ProjectedRun {
    fn key(&self) -> &str {
        &self.run
    }
}

impl Keyed for PendingAttention {
    fn key(&self) -> &str {
        &self.id
    }
}

#[derive(Debug)]
struct SessionAcc {
    source: u32,
    session: Box<str>,
    agent: Box<str>,
    started: Option<Box<str>>,
    ended: Option<Box<str>>,
    position: Option<Position>,
    runs: Ordered<ProjectedRun>,
    pending: Ordered<PendingAttention>,
}

/// What the fold does with a type, decided once per distinct type string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fold {
    /// Commands and `agent.*`: deduplicated, never folded.
    Skip,
    SessionStarted,
    SessionEnded,
    RunStarted,
    RunTerminal(RunStatus),
    AttentionRequested,
    /// `attention.resolved` and `attention.timeout`.
    AttentionCleared,
    /// Everything else: it moves the position only.
    Other,
}

impl Fold {
    fn of(ty: &str) -> Fold {
        // A type outside the grammar is neither a command nor agent-scoped: it folds,
        // as in the reference SDKs.
        if EventType::parse(ty).is_ok_and(|t| t.is_command() || t.is_agent_scoped()) {
            return Fold::Skip;
        }
        match ty {
            "session.started" => Fold::SessionStarted,
            "session.ended" => Fold::SessionEnded,
            "run.started" => Fold::RunStarted,
            "attention.requested" => Fold::AttentionRequested,
            // attention.answered is deliberately absent: resolution is the emitter's
            // attention.resolved (AEP-0002 §7.2).
            "attention.resolved" | "attention.timeout" => Fold::AttentionCleared,
            _ => RunStatus::from_terminal(ty).map_or(Fold::Other, Fold::RunTerminal),
        }
    }
}

/// The first occurrence of an id: where `Witnesses` recorded it (`start` and the
/// length `end`), or in a batch its index among the events (`start`), and the group it
/// was folded in (see [`project_state`]).
#[derive(Debug, Clone, Copy)]
struct Seen {
    start: u64,
    end: u32,
    group: u32,
}

/// The size of a record chunk, in bytes.
const CHUNK: usize = 32 * 1024;

/// A batch folding in arrival order met an event it cannot fold there: one out of
/// `(epoch, seq)` order in its group, or an id first folded in another group. The
/// batch folds group by group instead.
#[derive(Debug)]
struct Abort;

/// The events of one `(source, session)`; events without `session` form the group of
/// the empty session, as in the reference SDKs' batch grouping.
#[derive(Debug)]
struct Group {
    src: u32,
    session: Box<str>,
    /// The session's state, once a foldable event arrived.
    acc: Option<u32>,
    /// The last `(epoch, seq)` seen in a batch.
    last: (u64, u64),
}

/// Incremental state projection: [`apply`](Self::apply) folds one event at a time in
/// arrival order, [`state`](Self::state) snapshots the result at any point.
///
/// Arrival order is folded as is: an out-of-order arrival is reported as an
/// [`Violation::EpochRegression`] or [`Violation::SeqRegression`], not repaired (use
/// [`project_state`] for a capture that should be sorted first). The `(source, id)`
/// memory lives as long as the projection, as in the reference SDKs (for a bounded
/// transport-side dedupe, see [`crate::dedupe`]).
///
/// Redeliveries are told from collisions by the event's content, as the reference
/// SDKs' sorted-keys JSON tells them: member order, insignificant whitespace and
/// string escapes do not count, `1` and `1.0` differ, an explicit default (`"epoch":0`)
/// differs from an absent attribute. The first occurrence of each key is kept
/// exactly, in one append-only buffer (about the size of the events' JSON).
///
/// ```
/// use aep_core::{projection::{StateProjection, Violation}, Event};
///
/// let ev = |id: &str, epoch, seq| {
///     Event::new(id, "log.emitted", "2026-07-22T07:00:00.000Z", "aep://x", "agent-x")
///         .with_session("s-x").with_epoch(epoch).with_seq(seq)
/// };
/// let mut p = StateProjection::new();
/// p.apply(&ev("ev-x-00", 1, 0));
/// p.apply(&ev("ev-x-01", 0, 0));
/// p.apply(&ev("ev-x-01", 0, 0)); // redelivery: silent
/// assert!(matches!(p.violations(), [Violation::EpochRegression { id, .. }] if id == "ev-x-01"));
/// ```
pub struct StateProjection {
    witnesses: Witnesses,
    /// The fold decision per type string: a stream uses few types.
    folds: FastMap<Box<str>, Fold>,
    /// source -> index into `sources`, consulted when a group is created
    source_ids: FastMap<Box<str>, u32>,
    sources: Vec<Box<str>>,
    /// (source, id) -> the first occurrence (AEP-0001 §7.4)
    seen: FastMap<(u32, CompactId), Seen>,
    /// (source, session) -> index into `groups`, hashed by `hasher`
    group_index: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    sessions: Vec<SessionAcc>,
    groups: Vec<Group>,
    /// The group of the last event, since consecutive events often share it.
    last: Option<u32>,
    violations: Vec<Violation>,
}

impl fmt::Debug for StateProjection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateProjection")
            .field("sources", &self.sources.len())
            .field("sessions", &self.sessions.len())
            .field("violations", &self.violations)
            .finish_non_exhaustive()
    }
}

impl Default for StateProjection {
    fn default() -> Self {
        StateProjection::new()
    }
}

impl StateProjection {
    /// An empty projection.
    ///
    /// ```
    /// use aep_core::projection::StateProjection;
    /// let p = StateProjection::new();
    /// assert_eq!((p.session_count(), p.violations().len()), (0, 0));
    /// ```
    pub fn new() -> StateProjection {
        StateProjection {
            witnesses: Witnesses::default(),
            folds: FastMap::default(),
            source_ids: FastMap::default(),
            seen: FastMap::default(),
            group_index: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            sources: Vec::new(),
            sessions: Vec::new(),
            groups: Vec::new(),
            last: None,
            violations: Vec::new(),
        }
    }

    /// Violations so far, in fold order.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let e = |seq| Event::new(format!("e{seq}"), "tool.requested", "t", "aep://h", "a").with_session("s").with_seq(seq);
    /// let mut p = StateProjection::new();
    /// p.extend([&e(2), &e(1)]);
    /// assert_eq!(p.violations()[0].rule(), "seq-regression"); // arrival order, not repaired
    /// ```
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// How many sessions the projection holds.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let mut p = StateProjection::new();
    /// p.apply(&Event::new("1", "session.started", "t", "aep://h", "a").with_session("s").with_seq(0));
    /// p.apply(&Event::new("2", "control.pause", "t", "aep://c", "c").with_session("s"));
    /// assert_eq!(p.session_count(), 1); // a command never creates a session
    /// ```
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    fn source_index(&mut self, source: &str) -> u32 {
        if let Some(&at) = self.source_ids.get(source) {
            return at;
        }
        let at = self.sources.len() as u32;
        self.sources.push(source.into());
        self.source_ids.insert(source.into(), at);
        at
    }

    /// The group of `(source, session)`, created on first sight.
    fn group_of(&mut self, source: &str, session: &str) -> u32 {
        let (groups, sources) = (&self.groups, &self.sources);
        let is = |g: u32| {
            groups.get(g as usize).is_some_and(|g| {
                &*g.session == session
                    && sources.get(g.src as usize).is_some_and(|s| &**s == source)
            })
        };
        if let Some(g) = self.last.filter(|&g| is(g)) {
            return g;
        }
        let hash = self.hasher.hash_one((source, session));
        if let Some(&g) = self.group_index.find(hash, |&g| is(g)) {
            self.last = Some(g);
            return g;
        }
        let src = self.source_index(source);
        let g = self.groups.len() as u32;
        self.groups.push(Group {
            src,
            session: session.into(),
            acc: None,
            last: (0, 0),
        });
        let (groups, sources, hasher) = (&self.groups, &self.sources, &self.hasher);
        self.group_index.insert_unique(hash, g, |&g| {
            groups.get(g as usize).map_or(0, |g| {
                let source = sources.get(g.src as usize).map_or("", |s| &**s);
                hasher.hash_one((source, &*g.session))
            })
        });
        self.last = Some(g);
        g
    }

    fn session_index(&mut self, group: u32, session: &str, agent: &str) -> Option<usize> {
        let g = self.groups.get_mut(group as usize)?;
        if let Some(at) = g.acc {
            return Some(at as usize);
        }
        let at = self.sessions.len();
        g.acc = Some(at as u32);
        self.sessions.push(SessionAcc {
            source: g.src,
            session: session.into(),
            agent: agent.into(),
            started: None,
            ended: None,
            position: None,
            runs: Ordered::default(),
            pending: Ordered::default(),
        });
        Some(at)
    }

    /// Folds one event: dedupe first, then state. A redelivery collapses silently; a
    /// different event under a known `(source, id)` records
    /// [`Violation::IdCollision`] and is dropped. Commands and `agent.*` events are
    /// deduplicated but fold nothing, and so are events without `session`.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let start = Event::new("1", "session.started", "2026-07-22T06:00:00.000Z", "aep://h", "a")
    ///     .with_session("s").with_seq(0);
    /// let mut p = StateProjection::new();
    /// p.apply(&start);
    /// p.apply(&start); // a redelivery collapses silently
    /// let state = p.state();
    /// assert_eq!(state.sessions()[0].started(), Some("2026-07-22T06:00:00.000Z"));
    /// assert!(state.violations().is_empty());
    /// ```
    pub fn apply(&mut self, event: &Event) {
        // Outside a batch nothing aborts.
        let _ = self.apply_in(event, None);
    }

    /// [`apply`](Self::apply), returning the event's group. In a batch (the events
    /// and this one's index among them), an event out of order in its group, or under
    /// an id first folded in another group, stops it before any change; and the first
    /// occurrence of an id is kept as its index, the batch holding the event itself.
    fn apply_in(&mut self, event: &Event, batch: Option<(&[&Event], usize)>) -> Result<u32, Abort> {
        let group = self.group_of(event.source(), event.session().unwrap_or(""));
        let src = self.groups.get(group as usize).map_or(0, |g| g.src);
        if batch.is_some() {
            let position = (event.epoch(), event.seq().unwrap_or(0));
            if let Some(g) = self.groups.get_mut(group as usize) {
                if position < g.last {
                    return Err(Abort);
                }
                g.last = position;
            }
        }
        match self.seen.entry((src, CompactId::new(event.id()))) {
            Entry::Occupied(first) => {
                let first = *first.get();
                let same = match batch {
                    Some(_) if first.group != group => return Err(Abort),
                    Some((events, _)) => events
                        .get(first.start as usize)
                        .is_some_and(|&e| self.witnesses.same_events(e, event)),
                    None => self.witnesses.same(first, event),
                };
                if !same {
                    self.violations.push(Violation::IdCollision {
                        source: event.source().to_owned(),
                        id: event.id().to_owned(),
                    });
                }
                return Ok(group);
            }
            Entry::Vacant(slot) => {
                let (start, end) = match batch {
                    Some((_, at)) => (at as u64, 0),
                    None => self.witnesses.record(event),
                };
                slot.insert(Seen { start, end, group });
            }
        }

        let ty = event.event_type();
        let fold = match self.folds.get(ty) {
            Some(&fold) => fold,
            None => {
                let fold = Fold::of(ty);
                // Bounded, so a stream of ever-new type strings costs no memory here.
                if self.folds.len() < 1024 {
                    self.folds.insert(ty.into(), fold);
                }
                fold
            }
        };
        if fold == Fold::Skip {
            return Ok(group);
        }
        let Some(session) = event.session() else {
            return Ok(group);
        };
        let Some(acc) = self
            .session_index(group, session, event.agent())
            .and_then(|at| self.sessions.get_mut(at))
        else {
            return Ok(group);
        };
        let violation = |v: &mut Vec<Violation>, make: fn(String, String, String) -> Violation| {
            v.push(make(
                event.source().to_owned(),
                session.to_owned(),
                event.id().to_owned(),
            ));
        };

        // AEP-0001 §7: report a regression, then fold anyway, so the position mirrors
        // the last folded event (the reference CLI's resume positions do the same).
        if let Some(position) = Position::of(event) {
            if let Some(last) = acc.position {
                if position.epoch() < last.epoch() {
                    violation(&mut self.violations, |source, session, id| {
                        Violation::EpochRegression {
                            source,
                            session,
                            id,
                        }
                    });
                } else if position.epoch() == last.epoch() && position.seq() <= last.seq() {
                    violation(&mut self.violations, |source, session, id| {
                        Violation::SeqRegression {
                            source,
                            session,
                            id,
                        }
                    });
                }
            }
            acc.position = Some(position);
        }

        let time = event.time();
        match fold {
            Fold::SessionStarted => {
                if acc.started.is_none() {
                    acc.started = Some(time.into());
                }
            }
            Fold::SessionEnded => {
                if acc.ended.is_none() {
                    acc.ended = Some(time.into());
                    // AEP-0002 §7.2: an ending session must not strand a request.
                    if !acc.pending.is_empty() {
                        self.violations.push(Violation::EndedWithPendingAttention {
                            source: event.source().to_owned(),
                            session: session.to_owned(),
                            pending: acc.pending.len(),
                        });
                    }
                } else {
                    // A second distinct ended: an identical repeat collapsed at dedupe.
                    self.violations.push(Violation::SessionTerminalExclusivity {
                        source: event.source().to_owned(),
                        session: session.to_owned(),
                    });
                }
            }
            Fold::RunStarted => {
                // A second distinct run.started for a known run: first wins, and no
                // rule makes it a violation.
                if let Some(run) = event.run() {
                    if acc.runs.find(run).is_none() {
                        acc.runs.push(ProjectedRun {
                            run: run.to_owned(),
                            status: RunStatus::Running,
                            started: Some(time.to_owned()),
                            ended: None,
                        });
                    }
                }
            }
            Fold::RunTerminal(status) => {
                let Some(run) = event.run() else {
                    return Ok(group);
                };
                match acc.runs.find(run).and_then(|at| acc.runs.get_mut(at)) {
                    // A terminal without run.started still records the run.
                    None => acc.runs.push(ProjectedRun {
                        run: run.to_owned(),
                        status,
                        started: None,
                        ended: Some(time.to_owned()),
                    }),
                    Some(entry) if entry.status == RunStatus::Running => {
                        entry.status = status;
                        entry.ended = Some(time.to_owned());
                    }
                    // AEP-0002 §2 convention 5: the first terminal's status stays.
                    Some(_) => self.violations.push(Violation::RunTerminalExclusivity {
                        source: event.source().to_owned(),
                        session: session.to_owned(),
                        run: run.to_owned(),
                    }),
                }
            }
            Fold::AttentionRequested => acc.pending.push(PendingAttention {
                id: event.id().to_owned(),
                kind: attention_kind(event),
                since: time.to_owned(),
            }),
            // A subject that is not pending is a no-op.
            Fold::AttentionCleared => {
                if let Some(subject) = event.subject() {
                    acc.pending.remove(subject);
                }
            }
            Fold::Skip | Fold::Other => {}
        }
        Ok(group)
    }

    /// Folds every event of `events`, in order.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let e = |id: &str, ty: &str, seq| Event::new(id, ty, "t", "aep://h", "a").with_session("s").with_seq(seq);
    /// let mut p = StateProjection::new();
    /// p.extend(&[e("1", "session.started", 0), e("2", "session.ended", 1)]);
    /// assert_eq!(p.state().sessions()[0].ended(), Some("t"));
    /// ```
    pub fn extend<'a, I: IntoIterator<Item = &'a Event>>(&mut self, events: I) {
        for event in events {
            self.apply(event);
        }
    }

    /// Snapshot of the state: sessions sorted by `(source, session)`, runs and pending
    /// requests in fold order, violations in fold order. Later folds do not change it.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let mut p = StateProjection::new();
    /// p.apply(&Event::new("1", "run.started", "t", "aep://h", "a").with_session("s").with_seq(0).with_run("r"));
    /// let state = p.state();
    /// assert_eq!(state.sessions()[0].runs()[0].run(), "r");
    /// assert_eq!(state.session("aep://h", "s").map(|s| s.agent()), Some("a"));
    /// ```
    pub fn state(&self) -> ProjectedState {
        let mut sessions: Vec<ProjectedSession> = self
            .sessions
            .iter()
            .map(|acc| ProjectedSession {
                source: self
                    .sources
                    .get(acc.source as usize)
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
                session: acc.session.to_string(),
                agent: acc.agent.to_string(),
                started: acc.started.as_deref().map(str::to_owned),
                ended: acc.ended.as_deref().map(str::to_owned),
                position: acc.position,
                runs: acc.runs.iter().cloned().collect(),
                pending: acc.pending.iter().cloned().collect(),
            })
            .collect();
        sessions.sort_unstable_by(|a, b| {
            (a.source.as_str(), a.session.as_str()).cmp(&(b.source.as_str(), b.session.as_str()))
        });
        ProjectedState {
            sessions,
            violations: self.violations.clone(),
        }
    }
}

/// Batch projection of a complete capture: the events group by `(source, session)`
/// (no session groups as the empty one), each group sorts stably by
/// `(epoch, seq)` (absent `seq` as 0), and the groups fold in `(source, session)`
/// order through one [`StateProjection`]. The sort repairs arrival order, so the
/// only ordering violations left are two distinct events at one position.
///
/// ```
/// use aep_core::{projection::project_state, Event};
///
/// let ev = |id: &str, seq| Event::new(id, "log.emitted", "t", "aep://h", "a").with_session("s").with_seq(seq);
/// let state = project_state(&[ev("b", 2), ev("a", 1), ev("c", 2)]);
/// assert_eq!(state.violations()[0].rule(), "seq-regression"); // c repeats position 2
/// ```
pub fn project_state<'a, I: IntoIterator<Item = &'a Event>>(events: I) -> ProjectedState {
    let events: Vec<&Event> = events.into_iter().collect();
    match fold_in_arrival_order(&events) {
        Some(state) => state,
        None => fold_group_by_group(&events, &Groups::of(&events)),
    }
}

/// The batch groups: one per `(source, session)`, ranked by that key.
struct Groups {
    /// per event, the rank of its group
    rank_of: Vec<u32>,
    /// how many events each rank holds
    sizes: Vec<usize>,
}

impl Groups {
    fn of(events: &[&Event]) -> Groups {
        let mut ids: FastMap<(&str, &str), u32> = FastMap::default();
        let mut keys: Vec<(&str, &str)> = Vec::new();
        let mut group_of: Vec<u32> = Vec::with_capacity(events.len());
        for event in events {
            let key = (event.source(), event.session().unwrap_or(""));
            let id = *ids.entry(key).or_insert_with(|| {
                keys.push(key);
                keys.len() as u32 - 1
            });
            group_of.push(id);
        }
        let mut by_key: Vec<u32> = (0..keys.len() as u32).collect();
        by_key.sort_unstable_by_key(|&g| keys.get(g as usize).copied());
        let mut rank = vec![0u32; keys.len()];
        for (r, &g) in by_key.iter().enumerate() {
            if let Some(slot) = rank.get_mut(g as usize) {
                *slot = r as u32;
            }
        }
        let mut sizes = vec![0usize; keys.len()];
        let rank_of: Vec<u32> = group_of
            .iter()
            .map(|&g| {
                let r = rank.get(g as usize).copied().unwrap_or(0);
                if let Some(n) = sizes.get_mut(r as usize) {
                    *n += 1;
                }
                r
            })
            .collect();
        Groups { rank_of, sizes }
    }
}

/// The batch fold as specified: groups in key order, each sorted by `(epoch, seq)`
/// (stable, so ties keep arrival order; a group that arrived in order is one pass).
fn fold_group_by_group(events: &[&Event], groups: &Groups) -> ProjectedState {
    let mut fill: Vec<usize> = groups
        .sizes
        .iter()
        .scan(0, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect();
    let mut ordered: Vec<Option<(u64, u64, &Event)>> = vec![None; events.len()];
    for (&event, &r) in events.iter().zip(&groups.rank_of) {
        if let Some(at) = fill.get_mut(r as usize) {
            if let Some(slot) = ordered.get_mut(*at) {
                *slot = Some((event.epoch(), event.seq().unwrap_or(0), event));
            }
            *at += 1;
        }
    }
    let mut projection = StateProjection::new();
    let mut from = 0;
    for &n in &groups.sizes {
        if let Some(group) = ordered.get_mut(from..from + n) {
            group.sort_by_key(|slot| slot.map(|(epoch, seq, _)| (epoch, seq)));
            for &(_, _, event) in group.iter().flatten() {
                projection.apply(event);
            }
        }
        from += n;
    }
    projection.state()
}

/// The same fold when every group arrived sorted, done in arrival order, which reads
/// the events where they lie instead of jumping between groups. Sessions fold
/// independently, so only two things depend on the order between groups: the order
/// of the violations, restored by sorting them stably by group, and which of two
/// events sharing a `(source, id)` across groups comes first. That case, or a group
/// out of order, gives up (`None`) for the group-by-group fold.
fn fold_in_arrival_order(events: &[&Event]) -> Option<ProjectedState> {
    let mut projection = StateProjection::new();

    let mut groups: Vec<u32> = Vec::new();
    for (at, &event) in events.iter().enumerate() {
        let group = projection.apply_in(event, Some((events, at))).ok()?;
        groups.resize(projection.violations.len(), group);
    }
    if !groups.is_empty() {
        let key = |g: u32| {
            projection.groups.get(g as usize).map(|g| {
                let source = projection.sources.get(g.src as usize).map_or("", |s| &**s);
                (source, &*g.session)
            })
        };
        let mut by_key: Vec<u32> = (0..projection.groups.len() as u32).collect();
        by_key.sort_unstable_by_key(|&g| key(g));
        let mut rank = vec![0usize; by_key.len()];
        for (r, &g) in by_key.iter().enumerate() {
            if let Some(slot) = rank.get_mut(g as usize) {
                *slot = r;
            }
        }
        let mut tagged: Vec<(usize, Violation)> = groups
            .iter()
            .map(|&g| rank.get(g as usize).copied().unwrap_or(0))
            .zip(projection.violations.drain(..))
            .collect();
        tagged.sort_by_key(|&(r, _)| r);
        projection.violations = tagged.into_iter().map(|(_, v)| v).collect();
    }
    Some(projection.state())
}

/// `data.kind` of an `attention.requested`, when `data` is an object holding a string
/// `kind`. Producers write `kind` first; that layout is read without parsing the
/// prompt and options behind it.
fn attention_kind(event: &Event) -> Option<String> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(borrow)]
        kind: Option<Cow<'a, str>>,
    }
    let raw = event.data_raw()?.get();
    if let Some(rest) = raw.strip_prefix(r#"{"kind":""#) {
        // A string without escapes ends at the next quote.
        if let Some(end) = rest.find(['"', '\\']) {
            if rest.get(end..end + 1) == Some("\"") {
                return rest.get(..end).map(str::to_owned);
            }
        }
    }
    // Only an object: a derived struct would also read an array positionally.
    if !raw.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Kind<'_>>(raw)
        .ok()
        .and_then(|k| k.kind)
        .map(Cow::into_owned)
}

/// The first occurrence of every `(source, id)`, kept exactly so that a later event
/// under the same key is told apart as a redelivery or a collision (AEP-0001 §7.4).
///
/// Each record is the event minus its key, appended to a chunk (no allocation per
/// event): the attributes with length prefixes, then `data` and the extension
/// attributes as their raw JSON text. Equal bytes are equal events. Bytes that differ
/// may still be one event written twice (members reordered, whitespace, escapes), so
/// `data` and the extensions are then compared as JSON values, the reading of the
/// reference SDKs' sorted-keys JSON: member order ignored, `1` and `1.0` distinct.
#[derive(Debug, Default)]
struct Witnesses {
    /// Records in chunks of about [`CHUNK`] bytes: no reallocation copies a growing
    /// buffer, and freed chunks are reused by the allocator.
    chunks: Vec<Vec<u8>>,
    scratch: Vec<u8>,
}

/// A length, or absence: `0` absent, `n + 1` for length `n`, in one byte below 255,
/// else `255` and four bytes.
fn put_len(out: &mut Vec<u8>, n: Option<usize>) {
    let n = n.map_or(0, |n| n + 1);
    match u8::try_from(n) {
        Ok(b) if b < 0xff => out.push(b),
        _ => {
            out.push(0xff);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: Option<&str>) {
    put_len(out, s.map(str::len));
    if let Some(s) = s {
        out.extend_from_slice(s.as_bytes());
    }
}

/// The string attributes a record holds, in record order (`source` and `id` are the
/// key), and `data`.
fn record_parts(event: &Event) -> ([Option<&str>; 10], Option<&str>) {
    let strings = [
        Some(event.aep()),
        Some(event.event_type()),
        event.subject(),
        Some(event.time()),
        Some(event.agent()),
        event.session(),
        event.run(),
        event.step(),
        event.cause(),
        event.traceparent(),
    ];
    (strings, event.data_raw().map(|r| r.get()))
}

/// Writes `event` (less `source` and `id`, the key) as a record: the fixed part with
/// its length first, then `data`, then the extensions.
fn put_record(out: &mut Vec<u8>, event: &Event) {
    let (strings, data) = record_parts(event);
    let mark = out.len();
    let short = strings
        .iter()
        .chain([&data])
        .all(|s| s.is_none_or(|s| s.len() < 0xfe));
    if short && event.extensions().len() == 0 {
        // The common case in one pass over a buffer sized once: every length fits a
        // byte, no extension attributes.
        let fixed: usize = strings
            .iter()
            .map(|s| s.map_or(1, |s| s.len() + 1))
            .sum::<usize>()
            + 20;
        let total = 4 + fixed + data.map_or(1, |d| d.len() + 1) + 1;
        out.resize(mark + total, 0);
        let Some(buf) = out.get_mut(mark..) else {
            return;
        };
        // The buffer is zeroed: an absent attribute (0) needs no write.
        let mut w = Writer { buf, at: 0 };
        w.word32(fixed as u32);
        for s in strings {
            w.short_str(s);
        }
        for v in [event.seq(), event.epoch_attr()] {
            w.byte(u8::from(v.is_some()));
            w.word64(v.unwrap_or(0));
        }
        w.byte(event.severity_attr().map_or(0xff, |s| s as u8));
        w.byte(event.capture_attr().map_or(0xff, |c| c as u8));
        w.short_str(data);
        w.byte(1); // no extension attributes
        let at = w.at;
        debug_assert_eq!(at, total);
        return;
    }
    put_record_any(out, event);
}

/// Writes into a zeroed buffer of the right size (out-of-range writes are dropped,
/// never a panic).
struct Writer<'b> {
    buf: &'b mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn byte(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.at) {
            *slot = b;
        }
        self.at += 1;
    }

    fn word32(&mut self, v: u32) {
        if let Some(slot) = self.buf.get_mut(self.at..self.at + 4) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
        self.at += 4;
    }

    fn word64(&mut self, v: u64) {
        if let Some(slot) = self.buf.get_mut(self.at..self.at + 8) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
        self.at += 8;
    }

    /// A string shorter than 254 bytes as [`put_str`] writes it.
    fn short_str(&mut self, s: Option<&str>) {
        match s {
            None => self.at += 1,
            Some(s) => {
                self.byte(s.len() as u8 + 1);
                if let Some(slot) = self.buf.get_mut(self.at..self.at + s.len()) {
                    slot.copy_from_slice(s.as_bytes());
                }
                self.at += s.len();
            }
        }
    }
}

/// [`put_record`] for any event: long attributes, extension attributes.
fn put_record_any(out: &mut Vec<u8>, event: &Event) {
    let (strings, data) = record_parts(event);
    let mark = out.len();
    out.extend_from_slice(&[0; 4]);
    for s in strings {
        put_str(out, s);
    }
    for v in [event.seq(), event.epoch_attr()] {
        out.push(u8::from(v.is_some()));
        out.extend_from_slice(&v.unwrap_or(0).to_le_bytes());
    }
    out.push(event.severity_attr().map_or(0xff, |s| s as u8));
    out.push(event.capture_attr().map_or(0xff, |c| c as u8));
    let fixed = (out.len() - mark - 4) as u32;
    if let Some(len) = out.get_mut(mark..mark + 4) {
        len.copy_from_slice(&fixed.to_le_bytes());
    }
    put_str(out, data);
    put_len(out, Some(event.extensions().len()));
    for (name, value) in event.extensions() {
        put_str(out, Some(name));
        put_str(out, Some(value.get()));
    }
}

/// A record read back: the fixed part, `data` and the extensions.
struct Record<'a> {
    fixed: &'a [u8],
    data: Option<&'a [u8]>,
    extensions: Vec<(&'a [u8], &'a [u8])>,
}

/// Reads what [`put_len`] wrote: `Some(None)` for absence.
fn take_len(bytes: &mut &[u8]) -> Option<Option<usize>> {
    let (&b, rest) = bytes.split_first()?;
    *bytes = rest;
    let n = if b < 0xff {
        usize::from(b)
    } else {
        let (n, rest) = bytes.split_first_chunk::<4>()?;
        *bytes = rest;
        u32::from_le_bytes(*n) as usize
    };
    Some(n.checked_sub(1))
}

fn take_str<'a>(bytes: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    match take_len(bytes)? {
        None => Some(None),
        Some(n) => {
            let (s, rest) = bytes.split_at_checked(n)?;
            *bytes = rest;
            Some(Some(s))
        }
    }
}

impl<'a> Record<'a> {
    fn read(mut bytes: &'a [u8]) -> Option<Record<'a>> {
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let (fixed, rest) = rest.split_at_checked(u32::from_le_bytes(*len) as usize)?;
        bytes = rest;
        let data = take_str(&mut bytes)?;
        let count = take_len(&mut bytes)??;
        let mut extensions = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            extensions.push((take_str(&mut bytes)??, take_str(&mut bytes)??));
        }
        Some(Record {
            fixed,
            data,
            extensions,
        })
    }
}

/// Whether two JSON texts hold the same value (object member order ignored).
fn same_json(a: &[u8], b: &[u8]) -> bool {
    a == b
        || matches!(
            (
                serde_json::from_slice::<serde_json::Value>(a),
                serde_json::from_slice::<serde_json::Value>(b),
            ),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Whether two records hold the same event.
fn same_record(first: &[u8], second: &[u8]) -> bool {
    if first == second {
        return true;
    }
    let (Some(a), Some(b)) = (Record::read(first), Record::read(second)) else {
        return false;
    };
    a.fixed == b.fixed
        && match (a.data, b.data) {
            (Some(x), Some(y)) => same_json(x, y),
            (None, None) => true,
            _ => false,
        }
        && a.extensions.len() == b.extensions.len()
        && a.extensions.iter().all(|(name, x)| {
            b.extensions
                .iter()
                .any(|(other, y)| name == other && same_json(x, y))
        })
}

impl Witnesses {
    /// Records `event`; returns where its record lies: chunk and offset packed as
    /// `chunk << 32 | offset`, and the length.
    fn record(&mut self, event: &Event) -> (u64, u32) {
        let full = self.chunks.last().is_none_or(|c| c.len() >= CHUNK);
        if full {
            self.chunks.push(Vec::with_capacity(CHUNK + 1024));
        }
        let at = self.chunks.len() - 1;
        let Some(chunk) = self.chunks.last_mut() else {
            return (0, 0);
        };
        let start = chunk.len();
        put_record(chunk, event);
        (
            ((at as u64) << 32) | start as u64,
            (chunk.len() - start) as u32,
        )
    }

    /// Whether `event` is the one recorded at `at`.
    fn same(&mut self, at: Seen, event: &Event) -> bool {
        self.scratch.clear();
        put_record(&mut self.scratch, event);
        let offset = (at.start & 0xffff_ffff) as usize;
        let first = self
            .chunks
            .get((at.start >> 32) as usize)
            .and_then(|c| c.get(offset..offset + at.end as usize));
        first.is_some_and(|first| same_record(first, &self.scratch))
    }

    /// Whether two events are the same, by their records.
    fn same_events(&mut self, first: &Event, event: &Event) -> bool {
        self.scratch.clear();
        put_record(&mut self.scratch, first);
        let mark = self.scratch.len();
        put_record(&mut self.scratch, event);
        let (a, b) = self.scratch.split_at(mark);
        same_record(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_json_ignores_member_order_whitespace_and_escapes() {
        let same = |a: &str, b: &str| same_json(a.as_bytes(), b.as_bytes());
        assert!(same(
            r#"{"a":1,"b":[1,"x"]}"#,
            r#"{ "b" : [1, "\u0078"], "a":1 }"#
        ));
        assert!(!same(r#"{"a":1}"#, r#"{"a":1.0}"#));
        assert!(!same(r#"[1,2]"#, r#"[2,1]"#));
        assert!(!same(r#"{"a":"b"}"#, r#"{"b":"a"}"#));
        assert!(!same(r#"{"a":{}}"#, r#"{"a":[]}"#));
        assert!(!same("null", "false"));
    }

    #[test]
    fn the_one_pass_record_is_the_general_record() {
        let e: Event = r#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","session":"x","seq":3,"severity":"notice","data":{"kind":"form"}}"#.parse().unwrap();
        let (mut fast, mut general) = (vec![7u8], vec![7u8]);
        put_record(&mut fast, &e);
        put_record_any(&mut general, &e);
        assert_eq!(fast, general);
        let r = Record::read(&fast[1..]).unwrap();
        assert_eq!(r.data, Some(&br#"{"kind":"form"}"#[..]));
        assert!(r.extensions.is_empty());
        assert_eq!(attention_kind(&e).as_deref(), Some("form"));
    }

    #[test]
    fn attention_kind_reads_every_layout() {
        let kind = |data: &str| {
            let line = format!(
                r#"{{"aep":"0.1","id":"1","type":"attention.requested","time":"t","source":"s","agent":"a","data":{data}}}"#
            );
            attention_kind(&line.parse::<Event>().unwrap())
        };
        assert_eq!(
            kind(r#"{"kind":"form","prompt":"p"}"#).as_deref(),
            Some("form")
        );
        assert_eq!(
            kind(r#"{"prompt":"p","kind":"input"}"#).as_deref(),
            Some("input")
        );
        assert_eq!(kind(r#"{"kind":"a\"b"}"#).as_deref(), Some("a\"b"));
        assert_eq!(kind(r#"{ "kind" : "x" }"#).as_deref(), Some("x"));
        assert_eq!(kind(r#"{"kind":5}"#), None);
        assert_eq!(kind(r#"{"prompt":"p"}"#), None);
        assert_eq!(kind(r#"["kind"]"#), None);
        assert_eq!(kind(r#""{\"kind\":\"x\"}""#), None);
    }

    #[test]
    fn records_read_back() {
        let e: Event = r#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","xa":{"k":[1]},"xb":"v","data":{"z":1}}"#.parse().unwrap();
        let mut out = Vec::new();
        put_record(&mut out, &e);
        let r = Record::read(&out).unwrap();
        assert_eq!(r.data, Some(&br#"{"z":1}"#[..]));
        assert_eq!(
            r.extensions,
            [
                (&b"xa"[..], &br#"{"k":[1]}"#[..]),
                (&b"xb"[..], &br#""v""#[..])
            ]
        );
        for n in [None, Some(0), Some(253), Some(254), Some(300)] {
            let mut buf = Vec::new();
            put_len(&mut buf, n);
            assert_eq!(take_len(&mut &buf[..]), Some(n));
        }
        assert!(Record::read(&out[..out.len() - 1]).is_none());
    }

    const TYPES: [&str; 12] = [
        "session.started",
        "session.ended",
        "run.started",
        "run.finished",
        "run.failed",
        "attention.requested",
        "attention.resolved",
        "attention.answered",
        "control.pause",
        "agent.presence",
        "tool.completed",
        "log.emitted",
    ];

    /// Events from small alphabets, so ids repeat within and across sessions; seqs
    /// climb per session unless `shuffle` reorders them.
    fn stream(picks: &[(u8, u8, u8, u8, u8, bool)], climb: bool) -> Vec<Event> {
        let mut next_seq = [0u64; 8];
        picks
            .iter()
            .map(|&(src, sess, id, ty, data, no_session)| {
                let key = usize::from(src % 2) * 4 + usize::from(sess % 4);
                let seq = if climb {
                    next_seq[key]
                } else {
                    u64::from(id % 5)
                };
                next_seq[key] += u64::from(id % 2);
                let mut e = Event::new(
                    format!("e{id}"),
                    TYPES[usize::from(ty) % TYPES.len()],
                    format!("t{data}"),
                    format!("aep://src{}", src % 2),
                    "agent",
                )
                .with_run(format!("r{}", data % 2))
                .with_subject(format!("e{}", data % 12))
                .with_seq(seq)
                .with_data(serde_json::json!({"kind": format!("k{}", data % 3)}));
                if !no_session {
                    e = e.with_session(format!("s{}", sess % 4));
                }
                e
            })
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn arrival_order_fold_equals_the_group_by_group_fold(
            picks in proptest::collection::vec(
                (0u8..4, 0u8..8, 0u8..40, 0u8..24, 0u8..6, proptest::bool::weighted(0.05)),
                0..60,
            ),
            climb in proptest::bool::weighted(0.8),
        ) {
            let events = stream(&picks, climb);
            let refs: Vec<&Event> = events.iter().collect();
            let groups = Groups::of(&refs);
            let slow = fold_group_by_group(&refs, &groups);
            proptest::prop_assert_eq!(project_state(&events), slow.clone());
            if let Some(fast) = fold_in_arrival_order(&refs) {
                proptest::prop_assert_eq!(fast, slow);
            }
        }
    }

    #[test]
    fn arrival_order_fold_orders_violations_by_group() {
        let ev = |id: &str, source: &str, seq| {
            Event::new(id, "log.emitted", "t", source, "a")
                .with_session("s")
                .with_seq(seq)
        };
        let events = [
            ev("1", "aep://b", 0),
            ev("2", "aep://b", 0),
            ev("1", "aep://a", 0),
            ev("2", "aep://a", 0),
            ev("3", "aep://b", 0),
        ];
        let refs: Vec<&Event> = events.iter().collect();
        let groups = Groups::of(&refs);
        let fast = fold_in_arrival_order(&refs).unwrap();
        assert_eq!(fast, fold_group_by_group(&refs, &groups));
        let sources: Vec<&str> = fast
            .violations()
            .iter()
            .map(|v| match v {
                Violation::SeqRegression { source, .. } => source.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(sources, ["aep://a", "aep://b", "aep://b"]);
        // Redelivery and collision inside one session stay on the arrival-order fold.
        let again = [
            ev("1", "aep://a", 0),
            ev("1", "aep://a", 0),
            ev("1", "aep://a", 1),
        ];
        let refs: Vec<&Event> = again.iter().collect();
        let fast = fold_in_arrival_order(&refs).unwrap();
        assert_eq!(fast, fold_group_by_group(&refs, &Groups::of(&refs)));
        let rules: Vec<&str> = fast.violations().iter().map(Violation::rule).collect();
        assert_eq!(rules, ["id-collision"]);
        // A (source, id) shared across sessions needs the group-by-group order.
        let shared = [
            ev("1", "aep://a", 0),
            ev("1", "aep://a", 1).with_session("r"),
        ];
        let refs: Vec<&Event> = shared.iter().collect();
        assert!(fold_in_arrival_order(&refs).is_none());
        // So does a session out of order.
        let late = [ev("1", "aep://a", 1), ev("2", "aep://a", 0)];
        let refs: Vec<&Event> = late.iter().collect();
        assert!(fold_in_arrival_order(&refs).is_none());
    }

    #[test]
    fn ordered_stays_in_order_across_index_and_holes() {
        let mut o: Ordered<PendingAttention> = Ordered::default();
        let p = |i: usize| PendingAttention {
            id: format!("q{i}"),
            kind: None,
            since: String::new(),
        };
        for i in 0..100 {
            o.push(p(i));
        }
        for i in (0..100).filter(|i| i % 3 != 0) {
            o.remove(&format!("q{i}"));
        }
        o.remove("absent");
        let ids: Vec<&str> = o.iter().map(|p| p.id.as_str()).collect();
        let want: Vec<String> = (0..100)
            .filter(|i| i % 3 == 0)
            .map(|i| format!("q{i}"))
            .collect();
        assert_eq!(ids, want);
        assert_eq!(o.len(), 34);
        assert_eq!(
            o.find("q99"),
            Some(
                o.slots
                    .iter()
                    .position(|s| s.as_ref().is_some_and(|p| p.id == "q99"))
                    .unwrap()
            )
        );
    }
}
