//! [`ControlTarget::ask`]: the attention loop of an agent (AEP-0002 §7), core's
//! [`AttentionDesk`] driven on tokio's clock, answers routed to it by the target.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aep_core::attention::{
    Answer, AttentionDesk, AttentionRequest, Closed, RequestError, Respond, RESPOND,
};
use aep_core::control::{IncomingCommand, OutcomeEvent};
use aep_core::{Capture, Severity};
use tokio::sync::oneshot;

use super::target::{drain, ControlTarget, Inner, State};
use super::timer;
use crate::emit::{EmitOptions, SessionEmitter};
use crate::error::EmitError;

/// Why [`ControlTarget::ask`] returned no answer.
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

/// Emits a closed request's terminal and drops its waiter.
fn close(st: &mut State, closed: &Closed) {
    let key = (closed.session().to_owned(), closed.request().to_owned());
    if let Some(w) = st.asks.waiters.remove(&key) {
        emit(&w.session, closed.event(), None);
    }
}

/// Decides a `control.attention.respond` answering a request `ask` waits on: nacked
/// `invalid` (the request stays pending), or accepted, answered, resolved and handed to
/// its waiter. Anything else comes back for the handler.
pub(super) fn route(inner: &Inner, incoming: IncomingCommand) -> Option<IncomingCommand> {
    if incoming.command().event_type() != RESPOND {
        return Some(incoming);
    }
    let mut st = inner.lock();
    let answered = match st.asks.desk.respond(timer::now(), incoming.command()) {
        Respond::NotPending => return Some(incoming),
        Respond::Rejected(r) => {
            if let Err(e) = st.core.decide(incoming.key(), r.decision()) {
                tracing::warn!(error = %e, "answer not nacked");
            }
            drain(&mut st, None);
            return None;
        }
        Respond::Answered(a) => a,
        other => {
            tracing::warn!(outcome = ?other, "desk outcome this driver does not know");
            return Some(incoming);
        }
    };
    // AEP-0004 §1: the ack first, then the outcome, cause-linked to the command.
    if let Err(e) = st.core.decide(incoming.key(), answered.decision()) {
        tracing::warn!(error = %e, "answer not acked");
    }
    drain(&mut st, None);
    let key = (answered.session().to_owned(), answered.request().to_owned());
    if let Some(w) = st.asks.waiters.remove(&key) {
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
/// the future of [`ControlTarget::ask`] does.
struct Withdraw {
    inner: Arc<Inner>,
    session: String,
    request: String,
    armed: bool,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut st = self.inner.lock();
        if let Some(closed) = st.asks.desk.withdraw(&self.session, &self.request) {
            close(&mut st, &closed);
        }
    }
}

impl ControlTarget {
    /// Asks a person through the attention loop (AEP-0002 §7) and waits for the answer.
    ///
    /// Emits `attention.requested` in `session` (severity `notice`; attaching the
    /// session to this target if it is not yet), then waits for a
    /// `control.attention.respond` whose `subject` is the request's id. Each answer is
    /// checked against the request ([`AttentionRequest::check_answer`]: AEP-0006's form
    /// rules, AEP-0008's text answers): one that does not answer it is nacked `invalid`
    /// and the request stays pending; one that does is acked, recorded with
    /// `attention.answered` and `attention.resolved` (cause: the command), and returned.
    /// Past the request's [`timeout`](AttentionRequest::timeout) it emits
    /// `attention.timeout` and returns [`AskError::TimedOut`]. Dropping the future
    /// before then withdraws the request with `attention.resolved{resolution:
    /// "dismissed"}`, so every request reaches one terminal.
    ///
    /// The target must accept `control.attention.respond`; other answers to it (no
    /// request of this target pending under their subject) go to its handler as before.
    /// The events are asked at capture `full` and lowered to the emitter's ceiling: at
    /// `metadata` the prompt is synthesized and labels become placeholders (AEP-0002
    /// §5.3); give the emitter a `redacted` ceiling and a redactor to show a person the
    /// real question. Needs a tokio runtime with its timer.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use aep_async::control::ControlTarget;
    /// use aep_async::{Client, Emitter, WsSinkOptions};
    /// use aep_core::attention::{AttentionRequest, ALLOW};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let target = ControlTarget::new(["control.attention.respond"], |cmd| async move {
    ///     let _ = cmd.reject(aep_async::control::RejectReason::Invalid, "nothing of that id is pending");
    /// });
    /// let relay = Client::new("http://127.0.0.1:8787").token("secret");
    /// let sink = relay.ws_sink(WsSinkOptions::new("coder", "host-a/1").command_hook(target.clone()))?;
    /// let emitter = Emitter::new("coder", "host-a", sink);
    /// let session = target.attach(emitter.session("s1"));
    /// session.emit("session.started", serde_json::json!({}))?;
    ///
    /// let ask = AttentionRequest::permission("Run `terraform apply`?").timeout(Duration::from_secs(300));
    /// match target.ask(&session, ask).await {
    ///     Ok(answer) if answer.is(ALLOW) => println!("applying"),
    ///     Ok(answer) => println!("denied: {}", answer.text().unwrap_or("no reason given")),
    ///     Err(e) if e.is_timeout() => println!("nobody answered"),
    ///     Err(e) => return Err(e.into()),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ask(
        &self,
        session: &Arc<SessionEmitter>,
        request: AttentionRequest,
    ) -> Result<Answer, AskError> {
        if !self.inner.accepts.iter().any(|t| t == RESPOND) {
            return Err(AskError::NotAccepted);
        }
        request.check()?;
        if !request.answerable_by_control() {
            return Err(RequestError::NotAnswerableByControl.into());
        }
        self.attach(Arc::clone(session));
        let after = request.timeout_after();
        let (tx, mut rx) = oneshot::channel();
        let (request_id, deadline) = {
            // Held from the emit to the registration: an answer cannot be decided before
            // its request is pending.
            let mut st = self.inner.lock();
            let opts = EmitOptions::new()
                .severity(Severity::Notice)
                .capture(Capture::Full);
            let payload = request.payload_at(SystemTime::now());
            let emitted = session.emit_with("attention.requested", &payload, opts)?;
            let id = emitted.id().to_owned();
            let name = session.session().to_owned();
            if let Err(e) = st.asks.desk.open(timer::now(), &name, &id, request) {
                // Checked above, so unreachable in practice; the emitted request still
                // gets its terminal.
                let dismissed = OutcomeEvent::new(
                    "attention.resolved",
                    serde_json::json!({"resolution": "dismissed"}),
                    &id,
                )
                .with_subject(&id);
                emit(session, &dismissed, None);
                return Err(e.into());
            }
            let deadline = st.asks.desk.deadline(&name, &id);
            st.asks.waiters.insert(
                (name, id.clone()),
                Waiter {
                    tx,
                    session: Arc::clone(session),
                },
            );
            (id, deadline)
        };
        let mut guard = Withdraw {
            inner: Arc::clone(&self.inner),
            session: session.session().to_owned(),
            request: request_id.clone(),
            armed: true,
        };
        let answer = match deadline {
            None => rx.await.ok(),
            Some(d) => match tokio::time::timeout_at(d.into(), &mut rx).await {
                Ok(answer) => answer.ok(),
                Err(_) => {
                    let expired = {
                        let mut st = self.inner.lock();
                        let closed =
                            st.asks
                                .desk
                                .expire(timer::now(), &guard.session, &guard.request);
                        if let Some(c) = &closed {
                            close(&mut st, c);
                        }
                        closed.is_some()
                    };
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
}
