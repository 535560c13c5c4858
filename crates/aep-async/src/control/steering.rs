//! Steering on the target: `x.{vendor}.control.instruct` commands queued per session by
//! core's [`InstructionQueue`] and read by the agent as a stream, [`Instructions`], each
//! one delivered or dropped with its audit event. It sees the target only through
//! [`Steered`] and decides instructions through [`Acks`], so the wiring runs one way:
//! the target uses this module, never the reverse.

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use aep_core::control::{Decision, IncomingCommand, OutcomeEvent, RejectReason};
use aep_core::steering::{DropReason, Instruction, InstructionQueue, Steering};
use futures::Stream;

use super::acks::Acks;
use super::timer;
use crate::emit::{EmitOptions, SessionEmitter};

/// Why [`ControlTarget::instructions`](super::ControlTarget::instructions) gave no stream.
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

/// The steered sessions' queues, by session.
pub(super) type Slots = HashMap<String, Slot>;

/// The target a stream of instructions reads from, as steering sees it: the queues,
/// under the target's one lock. Declared here and implemented by the target.
pub(super) trait Steered: Send + Sync {
    /// Runs `f` on the queues, holding the target's lock.
    fn with_slots(&self, f: &mut dyn FnMut(&mut Slots));
}

/// Runs `f` on the queues of `steered`, under its lock, and returns what `f` returned.
fn locked<R>(steered: &dyn Steered, f: impl FnOnce(&mut Slots) -> R) -> Option<R> {
    let mut f = Some(f);
    let mut out = None;
    steered.with_slots(&mut |slots| {
        if let Some(f) = f.take() {
            out = Some(f(slots));
        }
    });
    out
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
pub(super) fn on_attach(steer: &mut Slots, steering: Option<&Steering>, session: &str) {
    if let Some(steering) = steering {
        steer.entry(session.to_owned()).or_insert_with(|| Slot {
            queue: InstructionQueue::new(steering.clone()),
            waker: None,
            reading: false,
            closed: false,
        });
    }
}

/// The session ends for steering: what is queued is dropped, each with its audit, and
/// the reader's stream ends.
pub(super) fn on_detach(steer: &mut Slots, acks: &Acks, session: &str) {
    let Some(mut slot) = steer.remove(session) else {
        return;
    };
    let audits = slot.queue.drop_all(DropReason::SessionEnded);
    if let Some(s) = acks.session(session) {
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
/// else comes back for the handler. Called under the target's lock.
pub(super) fn route(
    steer: &mut Slots,
    steering: Option<&Steering>,
    acks: &mut Acks,
    incoming: IncomingCommand,
) -> Option<IncomingCommand> {
    let Some(steering) = steering else {
        return Some(incoming);
    };
    if incoming.command().event_type() != steering.instruct_type() {
        return Some(incoming);
    }
    let session = incoming.command().session().unwrap_or_default().to_owned();
    let Some(slot) = steer.get_mut(&session) else {
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
    if let Err(e) = acks.core.decide(incoming.key(), decision) {
        tracing::warn!(error = %e, "instruction not acked");
    }
    // The ack goes out before the reader can take the instruction (the target's lock is
    // held), so its delivery is never on the stream ahead of its acceptance.
    acks.drain(None);
    if queued {
        if let Some(w) = steer.get_mut(&session).and_then(|s| s.waker.take()) {
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
    steered: Arc<dyn Steered>,
    session: Arc<SessionEmitter>,
    name: String,
}

impl fmt::Debug for Instructions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let waiting = self.waiting();
        f.debug_struct("Instructions")
            .field("session", &self.name)
            .field("waiting", &waiting)
            .finish()
    }
}

impl Instructions {
    /// The stream of `name`'s instructions, [opened](open) on `steered`.
    pub(super) fn new(
        steered: Arc<dyn Steered>,
        session: Arc<SessionEmitter>,
        name: String,
    ) -> Instructions {
        Instructions {
            steered,
            session,
            name,
        }
    }

    /// The next instruction, waiting for one; `None` once the session is detached.
    pub async fn next(&mut self) -> Option<Instruction> {
        futures::StreamExt::next(self).await
    }

    /// The next instruction if one waits, without waiting; `None` otherwise.
    pub fn try_next(&mut self) -> Option<Instruction> {
        locked(&*self.steered, |steer| {
            let slot = steer.get_mut(&self.name)?;
            let (instruction, audit) = slot.queue.next(timer::now())?.into_parts();
            emit(&self.session, &audit);
            Some(instruction)
        })
        .flatten()
    }

    /// How many instructions wait.
    pub fn waiting(&self) -> usize {
        locked(&*self.steered, |steer| {
            steer.get(&self.name).map_or(0, |s| s.queue.len())
        })
        .unwrap_or(0)
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
        locked(&*this.steered, |steer| {
            let Some(slot) = steer.get_mut(&this.name) else {
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
        })
        .unwrap_or(Poll::Ready(None))
    }
}

impl Drop for Instructions {
    fn drop(&mut self) {
        locked(&*self.steered, |steer| {
            let Some(slot) = steer.get_mut(&self.name) else {
                return;
            };
            slot.reading = false;
            slot.closed = true;
            slot.waker = None;
            for audit in slot.queue.drop_all(DropReason::SessionEnded) {
                emit(&self.session, &audit);
            }
        });
    }
}

/// Opens `name`'s queue for a reader (the body of
/// [`ControlTarget::instructions`](super::ControlTarget::instructions)): its queue is
/// made if the session had none, and one reader at a time takes from it.
pub(super) fn open(
    steer: &mut Slots,
    steering: &Steering,
    name: &str,
) -> Result<(), InstructionsError> {
    on_attach(steer, Some(steering), name);
    let Some(slot) = steer.get_mut(name) else {
        return Err(InstructionsError::NotConfigured);
    };
    if slot.reading {
        return Err(InstructionsError::AlreadyReading(name.to_owned()));
    }
    slot.reading = true;
    slot.closed = false;
    Ok(())
}
