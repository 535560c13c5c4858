//! The fold itself: [`StateProjection`] in arrival order, and [`project_state`], which
//! orders a complete capture by `(source, session)` and `(epoch, seq)` first.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use serde::Deserialize;

use super::session::{Ordered, SessionAcc};
use super::summary::SessionSummary;
use super::supervise::{Activity, AttentionRequest, Claim, ToolCalls};
use super::witness::Witnesses;
use super::{
    PendingAttention, ProjectedRun, ProjectedSession, ProjectedState, RunStatus, ToolStatus,
    Violation,
};
use crate::dedupe::CompactId;
use crate::frame::RosterEntry;
use crate::resume::Position;
use crate::types::EventType;
use crate::{Event, FastMap};

/// What the fold does with a type, decided once per distinct type string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fold {
    /// Commands and `agent.*`: deduplicated, never folded.
    Skip,
    SessionStarted,
    SessionEnded,
    RunStarted,
    RunTerminal(RunStatus),
    ToolRequested,
    ToolTerminal(ToolStatus),
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
            "tool.requested" => Fold::ToolRequested,
            "tool.completed" => Fold::ToolTerminal(ToolStatus::Completed),
            "tool.failed" => Fold::ToolTerminal(ToolStatus::Failed),
            "tool.denied" => Fold::ToolTerminal(ToolStatus::Denied),
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
pub(super) struct Seen {
    pub(super) start: u64,
    pub(super) end: u32,
    pub(super) group: u32,
}

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
    /// The relay's roster: session -> its live claims (AEP-0003 §4.1).
    roster: FastMap<Box<str>, Vec<Claim>>,
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
            roster: FastMap::default(),
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
            running: 0,
            pending: Ordered::default(),
            tools: Ordered::default(),
            tool_ids: ToolCalls::default(),
            last: None,
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
                    None => self.witnesses.same(first.start, first.end, event),
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
        match &mut acc.last {
            // in place: most events of a session replace the last activity
            Some(last) => last.set(event),
            none => *none = Some(Activity::of(event)),
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
                        acc.running += 1;
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
                        acc.running = acc.running.saturating_sub(1);
                    }
                    // AEP-0002 §2 convention 5: the first terminal's status stays.
                    Some(_) => self.violations.push(Violation::RunTerminalExclusivity {
                        source: event.source().to_owned(),
                        session: session.to_owned(),
                        run: run.to_owned(),
                    }),
                }
            }
            Fold::ToolRequested => acc.fold_tool(event, None),
            Fold::ToolTerminal(status) => acc.fold_tool(event, Some(status)),
            Fold::AttentionRequested => {
                let mut request = AttentionRequest::of(event);
                if let Some(call) = acc.gated_call(event) {
                    if let Some(tool) = acc.tools.find(&call).and_then(|at| acc.tools.get_mut(at)) {
                        tool.gated_by.push(event.id().to_owned());
                    }
                    request.tool = Some(call.into());
                }
                acc.pending.push(PendingAttention {
                    id: event.id().to_owned(),
                    kind: attention_kind(event),
                    since: time.to_owned(),
                    request,
                });
            }
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
        let mut sessions: Vec<ProjectedSession> =
            self.sessions.iter().map(|acc| self.snapshot(acc)).collect();
        sessions.sort_unstable_by(|a, b| {
            (a.source.as_str(), a.session.as_str()).cmp(&(b.source.as_str(), b.session.as_str()))
        });
        ProjectedState {
            sessions,
            violations: self.violations.clone(),
        }
    }

    fn source_of(&self, acc: &SessionAcc) -> &str {
        self.sources.get(acc.source as usize).map_or("", |s| &**s)
    }

    fn snapshot(&self, acc: &SessionAcc) -> ProjectedSession {
        acc.snapshot(self.source_of(acc), self.claim_of(acc))
    }

    /// The roster's claim on a session: its session's live claims, those of another
    /// agent set aside when the claimant said who it is.
    fn claim_of(&self, acc: &SessionAcc) -> Option<Claim> {
        let claims = self.roster.get(&acc.session)?;
        let mine: Vec<&Claim> = claims
            .iter()
            .filter(|c| c.agent.as_deref().is_none_or(|a| a == &*acc.agent))
            .collect();
        let first = (*mine.first()?).clone();
        Some(Claim {
            claimants: mine.len(),
            ..first
        })
    }

    /// A snapshot of one session, `(source, session)`, as [`state`](Self::state)
    /// would hold it; `None` when nothing folded into it.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let mut p = StateProjection::new();
    /// p.apply(&Event::new("1", "session.started", "t", "aep://h", "a").with_session("s").with_seq(0));
    /// assert_eq!(p.session("aep://h", "s").map(|s| s.agent().to_owned()), Some("a".into()));
    /// assert!(p.session("aep://h", "other").is_none());
    /// ```
    pub fn session(&self, source: &str, session: &str) -> Option<ProjectedSession> {
        self.acc_of(source, session).map(|acc| self.snapshot(acc))
    }

    /// The fold's state of `(source, session)`.
    fn acc_of(&self, source: &str, session: &str) -> Option<&SessionAcc> {
        let (groups, sources) = (&self.groups, &self.sources);
        let hash = self.hasher.hash_one((source, session));
        let g = self.group_index.find(hash, |&g| {
            groups.get(g as usize).is_some_and(|g| {
                &*g.session == session
                    && sources.get(g.src as usize).is_some_and(|s| &**s == source)
            })
        })?;
        groups
            .get(*g as usize)
            .and_then(|g| g.acc)
            .and_then(|at| self.sessions.get(at as usize))
    }

    /// One session, `(source, session)`, as a list shows it: read in place, nothing of
    /// its runs, requests or tool calls copied; `None` when nothing folded into it.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let mut p = StateProjection::new();
    /// p.apply(&Event::new("1", "attention.requested", "t", "aep://h", "a").with_session("s").with_seq(0));
    /// let s = p.summary("aep://h", "s").unwrap();
    /// assert_eq!((s.session(), s.pending_count(), s.claimants()), ("s", 1, 0));
    /// ```
    pub fn summary(&self, source: &str, session: &str) -> Option<SessionSummary<'_>> {
        self.acc_of(source, session).map(|acc| self.summarize(acc))
    }

    /// Every session as [`summary`](Self::summary) reads it, in fold order.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let mut p = StateProjection::new();
    /// p.apply(&Event::new("1", "session.started", "t", "aep://h", "a").with_session("s").with_seq(0));
    /// assert_eq!(p.summaries().map(|s| s.session()).collect::<Vec<_>>(), ["s"]);
    /// ```
    pub fn summaries(&self) -> impl Iterator<Item = SessionSummary<'_>> + '_ {
        self.sessions.iter().map(|acc| self.summarize(acc))
    }

    fn summarize<'a>(&'a self, acc: &'a SessionAcc) -> SessionSummary<'a> {
        let claimants = self.roster.get(&acc.session).map_or(0, |claims| {
            claims
                .iter()
                .filter(|c| c.agent.as_deref().is_none_or(|a| a == &*acc.agent))
                .count()
        });
        SessionSummary {
            source: self.source_of(acc),
            acc,
            claimants,
        }
    }

    /// Every session's snapshot, in fold order (unsorted: [`state`](Self::state) sorts).
    pub fn sessions(&self) -> impl Iterator<Item = ProjectedSession> + '_ {
        self.sessions.iter().map(|acc| self.snapshot(acc))
    }

    /// Every pending attention request of every session, oldest `since` first (by
    /// instant when both times read as RFC 3339, else as text; ties in fold order):
    /// the inbox a supervisor answers from.
    ///
    /// ```
    /// use aep_core::{projection::StateProjection, Event};
    /// let ask = |id: &str, s: &str, time: &str| Event::new(id, "attention.requested", time, "aep://h", "a")
    ///     .with_session(s).with_seq(0).with_data(serde_json::json!({"kind": "input", "prompt": "?"}));
    /// let mut p = StateProjection::new();
    /// p.apply(&ask("late", "s1", "2026-07-22T06:00:09.000Z"));
    /// p.apply(&ask("early", "s2", "2026-07-22T08:00:01.000+03:00"));
    /// let ids: Vec<String> = p.inbox().iter().map(|i| i.request().id().to_owned()).collect();
    /// assert_eq!(ids, ["early", "late"]);
    /// ```
    pub fn inbox(&self) -> Vec<InboxItem> {
        let mut items: Vec<(Option<i128>, InboxItem)> = Vec::new();
        for acc in self.sessions.iter().filter(|a| !a.pending.is_empty()) {
            let source = self.source_of(acc);
            for p in acc.pending.iter() {
                items.push((
                    crate::validate::unix_nanos(&p.since),
                    InboxItem {
                        source: source.to_owned(),
                        session: acc.session.to_string(),
                        agent: acc.agent.to_string(),
                        request: p.clone(),
                    },
                ));
            }
        }
        items.sort_by(|(ta, a), (tb, b)| match (ta, tb) {
            (Some(ta), Some(tb)) => ta.cmp(tb),
            _ => a.request.since.cmp(&b.request.since),
        });
        items.into_iter().map(|(_, i)| i).collect()
    }

    /// Replaces the roster the sessions' claims are read from (the relay's AEP-0003
    /// §4.1 roster: one entry per live claim). A session no entry names has no claim.
    pub fn set_roster<'a>(&mut self, entries: impl IntoIterator<Item = &'a RosterEntry>) {
        self.roster.clear();
        for entry in entries {
            self.roster
                .entry(entry.session.as_str().into())
                .or_default()
                .push(Claim::of(entry));
        }
    }
}

/// One pending request of the inbox ([`StateProjection::inbox`]) with the session it
/// belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxItem {
    source: String,
    session: String,
    agent: String,
    request: PendingAttention,
}

impl InboxItem {
    /// The session's emitter.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The session's agent.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The pending request.
    pub fn request(&self) -> &PendingAttention {
        &self.request
    }
}

impl serde::Serialize for InboxItem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("source", &self.source)?;
        m.serialize_entry("session", &self.session)?;
        m.serialize_entry("agent", &self.agent)?;
        m.serialize_entry("request", &self.request.detailed())?;
        m.end()
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
pub(super) fn attention_kind(event: &Event) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
