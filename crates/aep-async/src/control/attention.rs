//! The attention loop of an agent (AEP-0002 §7) behind
//! [`ControlTarget::ask`](super::ControlTarget::ask): core's [`AttentionDesk`] driven on
//! tokio's clock, answers routed to it by the target. It sees the target only through
//! [`Desk`] and decides answers through [`Acks`], so the wiring runs one way: the target
//! uses this module, never the reverse.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aep_core::attention::{
    Answer, AttentionDesk, AttentionRequest, Closed, RequestError, Respond, RESPOND,
};
use aep_core::control::{IncomingCommand, OutcomeEvent};
use aep_core::{Capture, Severity};
use tokio::sync::oneshot;

use super::acks::Acks;
use super::timer;
use crate::emit::{EmitOptions, SessionEmitter};
use crate::error::EmitError;

/// Why [`ControlTarget::ask`](super::ControlTarget::ask) returned no answer.
///
/// ```
/// use std::time::Duration;
/// use aep_async::control::AskError;
/// let e = AskError::TimedOut { request: "01JREQ".into(), after: Duration::from_secs(300) };
/// assert_eq!(e.request_id(), Some("01JREQ"));
/// assert!(e.is_timeout());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// The target does not declare `control.attention.respond`, so the relay would
    /// refuse every answer on its behalf (AEP-0004 §4.2).
    #[error("this ControlTarget does not accept control.attention.respond, so no answer could reach it: add it to the accepted types")]
    NotAccepted,
    /// The request is not well formed, or cannot be answered by control.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// `attention.requested` could not be emitted; nothing is pending.
    #[error("attention.requested was not emitted: {0}")]
    Emit(#[from] EmitError),
    /// No answer came before the request's timeout; `attention.timeout` was emitted
    /// (AEP-0002 §7).
    #[error("no answer to request {request} within {after:?}; attention.timeout was emitted")]
    TimedOut {
        /// The `attention.requested` id.
        request: String,
        /// The request's timeout.
        after: Duration,
    },
    /// The target was dropped while the request was pending.
    #[error("the control target was dropped while the request was pending")]
    Closed,
}

impl AskError {
    /// The request's id, when it was emitted.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            AskError::TimedOut { request, .. } => Some(request),
            _ => None,
        }
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, AskError::TimedOut { .. })
    }
}

/// A request `ask` waits on: where its answer goes, and the session its events go to.
struct Waiter {
    tx: oneshot::Sender<Answer>,
    session: Arc<SessionEmitter>,
}

/// The target's attention loop: core's desk and the waiters of its requests, by
/// `(session, request id)`. Lives in the target's state, under its one lock.
#[derive(Default)]
pub(super) struct Asks {
    desk: AttentionDesk,
    waiters: HashMap<(String, String), Waiter>,
}

impl std::fmt::Debug for Asks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asks")
            .field("pending", &self.desk.len())
            .finish()
    }
}

/// Emits `outcome` through `session` (cause and subject set; `capture` asked, the
/// emitter's ceiling still applies), logging a failure: an outcome's loss does not
/// undo the decision already acked.
fn emit(session: &SessionEmitter, outcome: &OutcomeEvent, capture: Option<Capture>) {
    let mut opts = EmitOptions::new().cause(outcome.cause());
    if let Some(s) = outcome.subject() {
        opts = opts.subject(s);
    }
    if let Some(c) = capture {
        opts = opts.capture(c);
    }
    if let Err(e) = session.emit_with(outcome.event_type(), outcome.data(), opts) {
        tracing::warn!(error = %e, event_type = outcome.event_type(), "attention outcome not emitted");
    }
}

/// The target an ask runs in, as the attention loop sees it: its requests, under the
/// target's one lock. Declared here and implemented by the target.
pub(super) trait Desk: Send + Sync + 'static {
    /// Runs `f` on the requests, holding the target's lock.
    fn with_asks<R>(&self, f: impl FnOnce(&mut Asks) -> R) -> R;
}

/// Emits a closed request's terminal and drops its waiter.
fn close(asks: &mut Asks, closed: &Closed) {
    let key = (closed.session().to_owned(), closed.request().to_owned());
    if let Some(w) = asks.waiters.remove(&key) {
        emit(&w.session, closed.event(), None);
    }
}

/// Decides a `control.attention.respond` answering a request `ask` waits on: nacked
/// `invalid` (the request stays pending), or accepted, answered, resolved and handed to
/// its waiter. Anything else comes back for the handler. Called under the target's lock.
pub(super) fn route(
    asks: &mut Asks,
    acks: &mut Acks,
    incoming: IncomingCommand,
) -> Option<IncomingCommand> {
    if incoming.command().event_type() != RESPOND {
        return Some(incoming);
    }
    let answered = match asks.desk.respond(timer::now(), incoming.command()) {
        Respond::NotPending => return Some(incoming),
        Respond::Rejected(r) => {
            if let Err(e) = acks.core.decide(incoming.key(), r.decision()) {
                tracing::warn!(error = %e, "answer not nacked");
            }
            acks.drain(None);
            return None;
        }
        Respond::Answered(a) => a,
        other => {
            tracing::warn!(outcome = ?other, "desk outcome this driver does not know");
            return Some(incoming);
        }
    };
    // AEP-0004 §1: the ack first, then the outcome, cause-linked to the command.
    if let Err(e) = acks.core.decide(incoming.key(), answered.decision()) {
        tracing::warn!(error = %e, "answer not acked");
    }
    acks.drain(None);
    let key = (answered.session().to_owned(), answered.request().to_owned());
    if let Some(w) = asks.waiters.remove(&key) {
        let ceiling = w.session.emitter().capture_ceiling();
        // Asked at `full`: the emitter lowers it to its ceiling (text dropped below
        // `redacted`); the values are gated for that ceiling already.
        emit(&w.session, &answered.answered(ceiling), Some(Capture::Full));
        emit(&w.session, &answered.resolved(), None);
        let _ = w.tx.send((*answered).into_answer());
    }
    None
}

/// Closes the request with its withdrawal unless it reached a terminal: what dropping
/// the future of [`ControlTarget::ask`](super::ControlTarget::ask) does.
struct Withdraw<D: Desk> {
    desk: Arc<D>,
    session: String,
    request: String,
    armed: bool,
}

impl<D: Desk> Drop for Withdraw<D> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.desk.with_asks(|asks| {
            if let Some(closed) = asks.desk.withdraw(&self.session, &self.request) {
                close(asks, &closed);
            }
        });
    }
}

/// What [`ControlTarget::ask`](super::ControlTarget::ask) checks before it emits
/// anything: the target accepts the answers, and the request is well formed and
/// answerable by control.
pub(super) fn check(accepts: &[String], request: &AttentionRequest) -> Result<(), AskError> {
    if !accepts.iter().any(|t| t == RESPOND) {
        return Err(AskError::NotAccepted);
    }
    request.check()?;
    if !request.answerable_by_control() {
        return Err(RequestError::NotAnswerableByControl.into());
    }
    Ok(())
}

/// Emits `request` in `session` (attached already, and `request` [checked](check)) and
/// waits for its answer, its timeout, or the target's end: the body of
/// [`ControlTarget::ask`](super::ControlTarget::ask).
pub(super) async fn ask<D: Desk>(
    desk: Arc<D>,
    session: &Arc<SessionEmitter>,
    request: AttentionRequest,
) -> Result<Answer, AskError> {
    let after = request.timeout_after();
    let (tx, mut rx) = oneshot::channel();
    // The lock is held from the emit to the registration: an answer cannot be decided
    // before its request is pending.
    let (request_id, deadline) = desk.with_asks(|asks| {
        let opts = EmitOptions::new()
            .severity(Severity::Notice)
            .capture(Capture::Full);
        let payload = request.payload_at(SystemTime::now());
        let emitted = session.emit_with("attention.requested", &payload, opts)?;
        let id = emitted.id().to_owned();
        let name = session.session().to_owned();
        if let Err(e) = asks.desk.open(timer::now(), &name, &id, request) {
            // Checked above, so unreachable in practice; the emitted request still
            // gets its terminal.
            let dismissed = OutcomeEvent::new(
                "attention.resolved",
                serde_json::json!({"resolution": "dismissed"}),
                &id,
            )
            .with_subject(&id);
            emit(session, &dismissed, None);
            return Err(AskError::from(e));
        }
        let deadline = asks.desk.deadline(&name, &id);
        asks.waiters.insert(
            (name, id.clone()),
            Waiter {
                tx,
                session: Arc::clone(session),
            },
        );
        Ok((id, deadline))
    })?;
    let mut guard = Withdraw {
        desk: Arc::clone(&desk),
        session: session.session().to_owned(),
        request: request_id.clone(),
        armed: true,
    };
    let answer = match deadline {
        None => rx.await.ok(),
        Some(d) => match tokio::time::timeout_at(d.into(), &mut rx).await {
            Ok(answer) => answer.ok(),
            Err(_) => {
                let expired = desk.with_asks(|asks| {
                    let closed = asks
                        .desk
                        .expire(timer::now(), &guard.session, &guard.request);
                    if let Some(c) = &closed {
                        close(asks, c);
                    }
                    closed.is_some()
                });
                if expired {
                    guard.armed = false;
                    return Err(AskError::TimedOut {
                        request: request_id,
                        after: after.unwrap_or_default(),
                    });
                }
                // The answer won the race: it was sent before the lock was taken.
                rx.await.ok()
            }
        },
    };
    guard.armed = false;
    answer.ok_or(AskError::Closed)
}
