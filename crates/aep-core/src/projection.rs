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
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::resume::Position;
use crate::types::EventType;
use crate::Event;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

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

#[derive(Debug)]
struct SourceAcc {
    name: Box<str>,
    /// id -> canonical fingerprint of the first occurrence (AEP-0001 §7.4)
    seen: FastMap<Box<str>, u64>,
    /// session -> index into `StateProjection::sessions`
    sessions: FastMap<Box<str>, u32>,
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
/// Redeliveries are told from collisions by the event's canonical content (object
/// keys in any order, insignificant whitespace and string escapes ignored, `1` and
/// `1.0` distinct, as the reference SDKs' sorted-keys JSON does), kept as a 64-bit
/// fingerprint under a per-projection random key rather than the whole text: two
/// different events under one `(source, id)` pass as a redelivery with probability
/// 2^-64.
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
    fingerprint: foldhash::quality::RandomState,
    source_ids: FastMap<Box<str>, u32>,
    sources: Vec<SourceAcc>,
    sessions: Vec<SessionAcc>,
    /// The source and session of the last event, since consecutive events mostly
    /// share them.
    last: Option<(u32, Option<u32>)>,
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
    pub fn new() -> StateProjection {
        StateProjection {
            fingerprint: foldhash::quality::RandomState::default(),
            source_ids: FastMap::default(),
            sources: Vec::new(),
            sessions: Vec::new(),
            last: None,
            violations: Vec::new(),
        }
    }

    /// Violations so far, in fold order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// How many sessions the projection holds.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    fn source_index(&mut self, source: &str) -> u32 {
        if let Some((at, _)) = self.last {
            if self
                .sources
                .get(at as usize)
                .is_some_and(|s| &*s.name == source)
            {
                return at;
            }
        }
        if let Some(&at) = self.source_ids.get(source) {
            self.last = Some((at, None));
            return at;
        }
        let at = self.sources.len() as u32;
        self.sources.push(SourceAcc {
            name: source.into(),
            seen: FastMap::default(),
            sessions: FastMap::default(),
        });
        self.source_ids.insert(source.into(), at);
        self.last = Some((at, None));
        at
    }

    fn session_index(&mut self, src: u32, session: &str, agent: &str) -> usize {
        if let Some((s, Some(at))) = self.last {
            if s == src
                && self
                    .sessions
                    .get(at as usize)
                    .is_some_and(|acc| &*acc.session == session)
            {
                return at as usize;
            }
        }
        let next = self.sessions.len() as u32;
        let at = match self.sources.get_mut(src as usize) {
            Some(source) => match source.sessions.get(session) {
                Some(&at) => at,
                None => {
                    source.sessions.insert(session.into(), next);
                    next
                }
            },
            None => next,
        };
        if at == next {
            self.sessions.push(SessionAcc {
                source: src,
                session: session.into(),
                agent: agent.into(),
                started: None,
                ended: None,
                position: None,
                runs: Ordered::default(),
                pending: Ordered::default(),
            });
        }
        self.last = Some((src, Some(at)));
        at as usize
    }

    /// Folds one event: dedupe first, then state. A redelivery collapses silently; a
    /// different event under a known `(source, id)` records
    /// [`Violation::IdCollision`] and is dropped. Commands and `agent.*` events are
    /// deduplicated but fold nothing, and so are events without `session`.
    pub fn apply(&mut self, event: &Event) {
        let src = self.source_index(event.source());
        let fingerprint = fingerprint(&self.fingerprint, event);
        let Some(source) = self.sources.get_mut(src as usize) else {
            return;
        };
        match source.seen.entry(event.id().into()) {
            Entry::Occupied(first) => {
                if *first.get() != fingerprint {
                    self.violations.push(Violation::IdCollision {
                        source: event.source().to_owned(),
                        id: event.id().to_owned(),
                    });
                }
                return;
            }
            Entry::Vacant(slot) => {
                slot.insert(fingerprint);
            }
        }

        let ty = event.event_type();
        // A type outside the grammar is neither a command nor agent-scoped: it folds,
        // as in the reference SDKs.
        if EventType::parse(ty).is_ok_and(|t| t.is_command() || t.is_agent_scoped()) {
            return;
        }
        let Some(session) = event.session() else {
            return;
        };
        let at = self.session_index(src, session, event.agent());
        let Some(acc) = self.sessions.get_mut(at) else {
            return;
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
        match ty {
            "session.started" => {
                if acc.started.is_none() {
                    acc.started = Some(time.into());
                }
            }
            "session.ended" => {
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
            "run.started" => {
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
            "run.finished" | "run.failed" | "run.cancelled" => {
                let (Some(run), Some(status)) = (event.run(), RunStatus::from_terminal(ty)) else {
                    return;
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
            "attention.requested" => acc.pending.push(PendingAttention {
                id: event.id().to_owned(),
                kind: attention_kind(event),
                since: time.to_owned(),
            }),
            // attention.answered is deliberately absent: resolution is the emitter's
            // attention.resolved (AEP-0002 §7.2). A subject not pending is a no-op.
            "attention.resolved" | "attention.timeout" => {
                if let Some(subject) = event.subject() {
                    acc.pending.remove(subject);
                }
            }
            _ => {}
        }
    }

    /// Folds every event of `events`, in order.
    pub fn extend<'a, I: IntoIterator<Item = &'a Event>>(&mut self, events: I) {
        for event in events {
            self.apply(event);
        }
    }

    /// Snapshot of the state: sessions sorted by `(source, session)`, runs and pending
    /// requests in fold order, violations in fold order. Later folds do not change it.
    pub fn state(&self) -> ProjectedState {
        let mut sessions: Vec<ProjectedSession> = self
            .sessions
            .iter()
            .map(|acc| ProjectedSession {
                source: self
                    .sources
                    .get(acc.source as usize)
                    .map(|s| s.name.to_string())
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
    // Group ids in first-seen order, one per (source, session).
    let mut group_ids: FastMap<(&str, &str), u32> = FastMap::default();
    let mut keys: Vec<(&str, &str)> = Vec::new();
    let mut group_of: Vec<u32> = Vec::with_capacity(events.len());
    let mut last: Option<((&str, &str), u32)> = None;
    for event in &events {
        let key = (event.source(), event.session().unwrap_or(""));
        let id = match last {
            Some((k, id)) if k == key => id,
            _ => *group_ids.entry(key).or_insert_with(|| {
                keys.push(key);
                keys.len() as u32 - 1
            }),
        };
        last = Some((key, id));
        group_of.push(id);
    }
    // Rank the groups by key, then lay the events out group by group (a counting
    // sort, stable), and sort each group by position (stable, so ties keep arrival
    // order; a group that arrived in order is one linear pass).
    let mut by_key: Vec<u32> = (0..keys.len() as u32).collect();
    by_key.sort_unstable_by_key(|&g| keys.get(g as usize).copied());
    let mut start = vec![0usize; keys.len() + 1];
    let mut rank = vec![0usize; keys.len()];
    for (r, &g) in by_key.iter().enumerate() {
        if let Some(slot) = rank.get_mut(g as usize) {
            *slot = r;
        }
    }
    for &g in &group_of {
        if let Some(n) = rank.get(g as usize).and_then(|&r| start.get_mut(r + 1)) {
            *n += 1;
        }
    }
    for r in 1..start.len() {
        start[r] += start[r - 1];
    }
    let mut fill = start.clone();
    let mut ordered: Vec<&Event> = events.clone();
    for (event, &g) in events.iter().zip(&group_of) {
        if let Some(at) = rank.get(g as usize).and_then(|&r| fill.get_mut(r)) {
            if let Some(slot) = ordered.get_mut(*at) {
                *slot = event;
            }
            *at += 1;
        }
    }
    let mut projection = StateProjection::new();
    for bounds in start.windows(2) {
        if let [from, to] = *bounds {
            if let Some(group) = ordered.get_mut(from..to) {
                group.sort_by_key(|e| (e.epoch(), e.seq().unwrap_or(0)));
                for event in group.iter() {
                    projection.apply(event);
                }
            }
        }
    }
    projection.state()
}

/// `data.kind` of an `attention.requested`, when `data` is an object holding a string
/// `kind`.
fn attention_kind(event: &Event) -> Option<String> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(borrow)]
        kind: Option<Cow<'a, str>>,
    }
    let raw = event.data_raw()?;
    serde_json::from_str::<Kind<'_>>(raw.get())
        .ok()
        .and_then(|k| k.kind)
        .map(Cow::into_owned)
}

/// The canonical fingerprint of an event: equal for events whose sorted-keys JSON is
/// equal (the reference SDKs' redelivery test, AEP-0001 §7.4).
fn fingerprint<S: BuildHasher>(state: &S, event: &Event) -> u64 {
    let mut h = state.build_hasher();
    event.aep().hash(&mut h);
    event.id().hash(&mut h);
    event.event_type().hash(&mut h);
    event.subject().hash(&mut h);
    event.time().hash(&mut h);
    event.source().hash(&mut h);
    event.agent().hash(&mut h);
    event.session().hash(&mut h);
    event.run().hash(&mut h);
    event.step().hash(&mut h);
    event.seq().hash(&mut h);
    event.epoch_attr().hash(&mut h);
    event.cause().hash(&mut h);
    event.traceparent().hash(&mut h);
    event.severity_attr().hash(&mut h);
    event.capture_attr().hash(&mut h);
    event
        .data_raw()
        .map(|raw| canonical_hash(state, raw.get()))
        .hash(&mut h);
    // Extension attributes are a set: combine order-independently.
    let mut extensions = 0u64;
    for (name, value) in event.extensions() {
        extensions =
            extensions.wrapping_add(hash_one(state, (name, canonical_hash(state, value.get()))));
    }
    h.write_u64(extensions);
    h.finish()
}

fn hash_one<S: BuildHasher, T: Hash>(state: &S, value: T) -> u64 {
    let mut h = state.build_hasher();
    value.hash(&mut h);
    h.finish()
}

/// The hash of a JSON text's canonical form. Raw values inside an event are valid
/// JSON; should one not be, its bytes stand in.
fn canonical_hash<S: BuildHasher>(state: &S, json: &str) -> u64 {
    let mut de = serde_json::Deserializer::from_str(json);
    match Canonical(state).deserialize(&mut de) {
        Ok(hash) => hash,
        Err(_) => hash_one(state, (7u8, json)),
    }
}

/// Hashes a JSON value as its canonical form: object members as a set, arrays in
/// order, integers and floats apart (Python's `json.dumps` writes `1` and `1.0`
/// differently).
struct Canonical<'s, S>(&'s S);

impl<S> Clone for Canonical<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Canonical<'_, S> {}

impl<'de, S: BuildHasher> DeserializeSeed<'de> for Canonical<'_, S> {
    type Value = u64;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: BuildHasher> Visitor<'de> for Canonical<'_, S> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<u64, E> {
        Ok(hash_one(self.0, 0u8))
    }

    fn visit_bool<E>(self, v: bool) -> Result<u64, E> {
        Ok(hash_one(self.0, (1u8, v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<u64, E> {
        Ok(hash_one(self.0, (2u8, i128::from(v))))
    }

    fn visit_i64<E>(self, v: i64) -> Result<u64, E> {
        Ok(hash_one(self.0, (2u8, i128::from(v))))
    }

    fn visit_f64<E>(self, v: f64) -> Result<u64, E> {
        Ok(hash_one(self.0, (3u8, v.to_bits())))
    }

    fn visit_str<E>(self, v: &str) -> Result<u64, E> {
        Ok(hash_one(self.0, (4u8, v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let mut h = self.0.build_hasher();
        h.write_u8(5);
        while let Some(item) = seq.next_element_seed(self)? {
            h.write_u64(item);
        }
        Ok(h.finish())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u64, A::Error> {
        let mut members = 0u64;
        let mut count = 0u64;
        while let Some(key) = map.next_key_seed(Canonical(self.0))? {
            let value = map.next_value_seed(self)?;
            members = members.wrapping_add(hash_one(self.0, (key, value)));
            count += 1;
        }
        Ok(hash_one(self.0, (6u8, count, members)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(json: &str) -> u64 {
        let state = foldhash::quality::FixedState::with_seed(7);
        canonical_hash(&state, json)
    }

    #[test]
    fn canonical_hash_ignores_member_order_whitespace_and_escapes() {
        assert_eq!(
            fp(r#"{"a":1,"b":[1,"x"]}"#),
            fp(r#"{ "b" : [1, "\u0078"], "a":1 }"#)
        );
        assert_ne!(fp(r#"{"a":1}"#), fp(r#"{"a":1.0}"#));
        assert_ne!(fp(r#"[1,2]"#), fp(r#"[2,1]"#));
        assert_ne!(fp(r#"{"a":"b"}"#), fp(r#"{"b":"a"}"#));
        assert_ne!(fp(r#"{"a":{}}"#), fp(r#"{"a":[]}"#));
        assert_ne!(fp("null"), fp("false"));
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
