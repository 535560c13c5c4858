//! Steering on the target: `x.{vendor}.control.instruct` commands queued per session by
//! core's [`InstructionQueue`] and read by the agent as a stream, [`Instructions`], each
//! one delivered or dropped with its audit event.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use aep_core::control::{Decision, IncomingCommand, OutcomeEvent, RejectReason};
use aep_core::steering::{DropReason, Instruction, InstructionQueue, Steering};
use futures::Stream;

use super::target::{drain, ControlTarget, Inner, State};
use super::timer;
use crate::emit::{EmitOptions, SessionEmitter};

/// Why [`ControlTarget::instructions`] gave no stream.
///
/// ```
/// let e = aep_async::control::InstructionsError::NotConfigured;
/// assert!(e.to_string().contains("steering"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InstructionsError {
    /// The target was built without [`steering`](super::ControlTargetBuilder::steering).
    #[error("this ControlTarget was built without steering: give its builder .steering(Steering::new(vendor)?)")]
    NotConfigured,
    /// The session's instructions are read by another stream already.
    #[error("session `{0}` already has an instruction stream: read that one, or drop it first")]
    AlreadyReading(String),
}

/// One session's queue and its reader.
pub(super) struct Slot {
    queue: InstructionQueue,
    waker: Option<Waker>,
    reading: bool,
    /// The reader was dropped: instructions are refused until a new one opens.
    closed: bool,
}

/// The queue of a session being attached, when the target steers (an instruction that
/// comes before the agent reads is kept for it).
pub(super) fn on_attach(st: &mut State, steering: Option<&Steering>, session: &str) {
    if let Some(steering) = steering {
        st.steer.entry(session.to_owned()).or_insert_with(|| Slot {
            queue: InstructionQueue::new(steering.clone()),
            waker: None,
            reading: false,
            closed: false,
        });
    }
}

/// The session ends for steering: what is queued is dropped, each with its audit, and
/// the reader's stream ends.
pub(super) fn on_detach(st: &mut State, session: &str) {
    let Some(mut slot) = st.steer.remove(session) else {
        return;
    };
    let audits = slot.queue.drop_all(DropReason::SessionEnded);
    if let Some(s) = st.sessions.get(session).and_then(std::sync::Weak::upgrade) {
        for audit in &audits {
            emit(&s, audit);
        }
    }
    if let Some(w) = slot.waker.take() {
        w.wake();
    }
}

fn emit(session: &SessionEmitter, audit: &OutcomeEvent) {
    let opts = EmitOptions::new().cause(audit.cause());
    if let Err(e) = session.emit_with(audit.event_type(), audit.data(), opts) {
        tracing::warn!(error = %e, event_type = audit.event_type(), "steering audit not emitted");
    }
}

/// Decides an instruction for a session this target steers: queued and accepted, or
/// rejected (a full queue, no text, too long; refused once its reader is gone). Anything
/// else comes back for the handler.
pub(super) fn route(inner: &Inner, incoming: IncomingCommand) -> Option<IncomingCommand> {
    let Some(steering) = &inner.steering else {
        return Some(incoming);
    };
    if incoming.command().event_type() != steering.instruct_type() {
        return Some(incoming);
    }
    let session = incoming.command().session().unwrap_or_default().to_owned();
    let mut st = inner.lock();
    let Some(slot) = st.steer.get_mut(&session) else {
        return Some(incoming);
    };
    let decision = if slot.closed {
        Decision::reject(
            RejectReason::Refused,
            "the agent stopped reading instructions for this session",
        )
    } else {
        slot.queue.offer(timer::now(), incoming.command())
    };
    let queued = decision == Decision::Accept;
    if let Err(e) = st.core.decide(incoming.key(), decision) {
        tracing::warn!(error = %e, "instruction not acked");
    }
    // The ack goes out before the reader can take the instruction, so its delivery is
    // never on the stream ahead of its acceptance.
    drain(&mut st, None);
    if queued {
        if let Some(w) = st.steer.get_mut(&session).and_then(|s| s.waker.take()) {
            w.wake();
        }
    }
    None
}

/// The instructions of one session, oldest first: a [`Stream`] that ends when the
/// session is detached from the target. Each one taken is audited with
/// `x.{vendor}.instruction.delivered {queued_ms}`, cause-linked to its command; dropping
/// the stream ends steering for the session (say so before `session.ended`): what is
/// still queued is dropped, each with `x.{vendor}.instruction.dropped {reason:
/// "session-ended"}`, and later instructions are refused until a new stream is opened.
///
/// ```no_run
/// use std::sync::Arc;
/// use aep_async::control::ControlTarget;
/// use aep_async::SessionEmitter;
///
/// # async fn agent(target: ControlTarget, session: Arc<SessionEmitter>) -> Result<(), Box<dyn std::error::Error>> {
/// let mut instructions = target.instructions(&session)?;
/// while let Some(i) = instructions.next().await {
///     println!("{} asks: {}", i.by(), i.text()); // fold it into the next prompt
/// }
/// # Ok(()) }
/// ```
pub struct Instructions {
    inner: Arc<Inner>,
    session: Arc<SessionEmitter>,
    name: String,
}

impl fmt::Debug for Instructions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let waiting = self
            .inner
            .lock()
            .steer
            .get(&self.name)
            .map_or(0, |s| s.queue.len());
        f.debug_struct("Instructions")
            .field("session", &self.name)
            .field("waiting", &waiting)
            .finish()
    }
}

impl Instructions {
    /// The next instruction, waiting for one; `None` once the session is detached.
    pub async fn next(&mut self) -> Option<Instruction> {
        futures::StreamExt::next(self).await
    }

    /// The next instruction if one waits, without waiting; `None` otherwise.
    pub fn try_next(&mut self) -> Option<Instruction> {
        let mut st = self.inner.lock();
        let slot = st.steer.get_mut(&self.name)?;
        let (instruction, audit) = slot.queue.next(timer::now())?.into_parts();
        emit(&self.session, &audit);
        Some(instruction)
    }

    /// How many instructions wait.
    pub fn waiting(&self) -> usize {
        self.inner
            .lock()
            .steer
            .get(&self.name)
            .map_or(0, |s| s.queue.len())
    }

    /// The session.
    pub fn session(&self) -> &Arc<SessionEmitter> {
        &self.session
    }
}

impl Stream for Instructions {
    type Item = Instruction;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instruction>> {
        let this = self.get_mut();
        let mut st = this.inner.lock();
        let Some(slot) = st.steer.get_mut(&this.name) else {
            return Poll::Ready(None);
        };
        match slot.queue.next(timer::now()) {
            Some(delivery) => {
                let (instruction, audit) = delivery.into_parts();
                emit(&this.session, &audit);
                Poll::Ready(Some(instruction))
            }
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for Instructions {
    fn drop(&mut self) {
        let mut st = self.inner.lock();
        let Some(slot) = st.steer.get_mut(&self.name) else {
            return;
        };
        slot.reading = false;
        slot.closed = true;
        slot.waker = None;
        for audit in slot.queue.drop_all(DropReason::SessionEnded) {
            emit(&self.session, &audit);
        }
    }
}

impl ControlTarget {
    /// The instructions consumers send `session` (`x.{vendor}.control.instruct`, the
    /// target's [`steering`](super::ControlTargetBuilder::steering)), as a stream;
    /// attaches the session if it is not yet.
    ///
    /// Each instruction is acked when it arrives: accepted and queued (the queue holds
    /// 20 by default, in arrival order), or rejected `invalid` when the queue is full,
    /// the text is blank or longer than 4,000 characters. Instructions that arrive for
    /// an attached session before the stream is opened wait in its queue.
    pub fn instructions(
        &self,
        session: &Arc<SessionEmitter>,
    ) -> Result<Instructions, InstructionsError> {
        let Some(steering) = &self.inner.steering else {
            return Err(InstructionsError::NotConfigured);
        };
        let name = session.session().to_owned();
        self.attach(Arc::clone(session));
        let mut st = self.inner.lock();
        on_attach(&mut st, Some(steering), &name);
        let Some(slot) = st.steer.get_mut(&name) else {
            return Err(InstructionsError::NotConfigured);
        };
        if slot.reading {
            return Err(InstructionsError::AlreadyReading(name));
        }
        slot.reading = true;
        slot.closed = false;
        Ok(Instructions {
            inner: Arc::clone(&self.inner),
            session: Arc::clone(session),
            name,
        })
    }

    /// The steering this target follows, if any.
    pub fn steering(&self) -> Option<&Steering> {
        self.inner.steering.as_ref()
    }
}
