//! One session's line in a supervisor's list, read in place: what a list shows of a
//! session (its status, times, position, last activity, counts, its claim) without the
//! copy of its runs, requests and tool calls a [`ProjectedSession`] snapshot makes, so
//! a list that redraws the sessions that changed costs what changed, not what the
//! sessions hold.
//!
//! [`ProjectedSession`]: super::ProjectedSession

use super::session::SessionAcc;
use super::{Activity, PendingAttention, SessionStatus};
use crate::resume::Position;

/// A session of a [`StateProjection`](super::StateProjection) as a list shows it,
/// borrowed from the projection ([`StateProjection::summary`](super::StateProjection::summary),
/// [`summaries`](super::StateProjection::summaries)). Its status is the snapshot's
/// ([`ProjectedSession::status`](super::ProjectedSession::status)), kept as the fold
/// goes rather than computed from the runs.
///
/// ```
/// use aep_core::{projection::{SessionStatus, StateProjection}, Event};
///
/// let e = |id: &str, ty: &str, seq| Event::new(id, ty, "2026-07-22T06:00:00.000Z", "aep://h", "a")
///     .with_session("s").with_seq(seq).with_run("r");
/// let mut p = StateProjection::new();
/// p.extend(&[e("1", "session.started", 0), e("2", "run.started", 1)]);
/// let s = p.summary("aep://h", "s").unwrap();
/// assert_eq!((s.agent(), s.status(), s.run_count()), ("a", SessionStatus::Running, 1));
/// assert_eq!(s.status(), p.session("aep://h", "s").unwrap().status());
/// assert_eq!(s.last_activity().map(|a| a.event_type()), Some("run.started"));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SessionSummary<'a> {
    pub(super) source: &'a str,
    pub(super) acc: &'a SessionAcc,
    pub(super) claimants: usize,
}

impl<'a> SessionSummary<'a> {
    /// The emitter's `source`.
    pub fn source(&self) -> &'a str {
        self.source
    }

    /// The `session` attribute.
    pub fn session(&self) -> &'a str {
        &self.acc.session
    }

    /// The `agent` of the first folded event of the session.
    pub fn agent(&self) -> &'a str {
        &self.acc.agent
    }

    /// `time` of the first `session.started`.
    pub fn started(&self) -> Option<&'a str> {
        self.acc.started.as_deref()
    }

    /// `time` of the first `session.ended`; `None` while open.
    pub fn ended(&self) -> Option<&'a str> {
        self.acc.ended.as_deref()
    }

    /// `(epoch, seq)` of the last folded sequenced event.
    pub fn position(&self) -> Option<Position> {
        self.acc.position
    }

    /// Ended, waiting on a person, running, or idle (see [`SessionStatus`]).
    pub fn status(&self) -> SessionStatus {
        SessionStatus::of(
            self.acc.ended.is_some(),
            !self.acc.pending.is_empty(),
            self.acc.running > 0,
        )
    }

    /// The last event folded into the session.
    pub fn last_activity(&self) -> Option<&'a Activity> {
        self.acc.last.as_ref()
    }

    /// The unresolved attention requests, in fold order.
    pub fn pending(&self) -> impl Iterator<Item = &'a PendingAttention> + 'a {
        self.acc.pending.iter()
    }

    /// How many attention requests are pending.
    pub fn pending_count(&self) -> usize {
        self.acc.pending.len()
    }

    /// How many runs the session has had.
    pub fn run_count(&self) -> usize {
        self.acc.runs.len()
    }

    /// How many tool calls the session has had.
    pub fn tool_count(&self) -> usize {
        self.acc.tools.len()
    }

    /// How many live claims the roster holds on the session (0: nobody connected
    /// claims it; see [`Claim`](super::Claim)).
    pub fn claimants(&self) -> usize {
        self.claimants
    }
}
