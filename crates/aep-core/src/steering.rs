//! Steering, target side: instructions a consumer sends an agent with the vendor verb
//! `x.{vendor}.control.instruct` (AEP-0004 §5's extension rule), queued per session and
//! handed to the agent in order, each step on the stream (the steering design record,
//! `docs/components/control-steering-design.md`).
//!
//! ```text
//! x.{vendor}.control.instruct {text} ──▶ control.accepted (queued)  ──▶ x.{vendor}.instruction.delivered {queued_ms}
//!                                    └─▶ control.rejected{invalid} (queue full, no text, too long)
//!                          queued at the session's end ──▶ x.{vendor}.instruction.dropped {reason: "session-ended"}
//! ```
//!
//! [`Steering`] names the verb and the audit types of one vendor and bounds the queue
//! (20 instructions of at most 4,000 characters by default, as the reference adapters);
//! [`InstructionQueue`] is one session's FIFO as a sans-IO state machine: it decides each
//! command, hands out the next instruction with its `delivered` audit, and drops what is
//! left with one `dropped` audit each. Every audit is cause-linked to its command.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use aep_core::control::{ControlSender, Decision};
//! use aep_core::steering::{DropReason, InstructionQueue, Steering};
//! use serde_json::json;
//!
//! let t0 = Instant::now();
//! let mut queue = InstructionQueue::new(Steering::new("acme")?);
//! let instruct = |id: &str, text: &str| {
//!     ControlSender::new("console", "ops").command("x.acme.control.instruct", "s1")
//!         .data(json!({"text": text})).build(id, "t")
//! };
//! assert_eq!(queue.offer(t0, &instruct("c1", "prefer the staging bucket")), Decision::Accept);
//! assert_eq!(queue.offer(t0, &instruct("c2", "then run the tests")), Decision::Accept);
//!
//! let first = queue.next(t0 + Duration::from_millis(40)).unwrap();
//! assert_eq!(first.instruction().text(), "prefer the staging bucket");
//! let audit = first.audit();
//! assert_eq!((audit.event_type(), audit.cause()), ("x.acme.instruction.delivered", "c1"));
//! assert_eq!(audit.data(), &json!({"queued_ms": 40}));
//!
//! let dropped = queue.drop_all(DropReason::SessionEnded);
//! assert_eq!(dropped[0].data(), &json!({"reason": "session-ended"}));
//! assert_eq!(dropped[0].cause(), "c2");
//! # Ok::<(), aep_core::steering::SteeringError>(())
//! ```

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::control::{Decision, OutcomeEvent, RejectReason};
use crate::event::Event;
use crate::types::EventType;

/// How many instructions a session's queue holds by default (the reference adapters'
/// cap).
///
/// ```
/// assert_eq!(aep_core::steering::Steering::new("acme")?.capacity(), aep_core::steering::DEFAULT_CAPACITY);
/// # Ok::<(), aep_core::steering::SteeringError>(())
/// ```
pub const DEFAULT_CAPACITY: usize = 20;

/// The longest instruction taken by default, in characters (the reference adapters'
/// cap).
///
/// ```
/// assert_eq!(aep_core::steering::Steering::new("acme")?.max_chars(), aep_core::steering::DEFAULT_MAX_CHARS);
/// # Ok::<(), aep_core::steering::SteeringError>(())
/// ```
pub const DEFAULT_MAX_CHARS: usize = 4_000;

/// A vendor name that cannot head a type (AEP-0001 §6: `[a-z0-9_-]+`).
///
/// ```
/// assert!(aep_core::steering::Steering::new("Acme Corp").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a vendor name (AEP-0001 §6: lowercase letters, digits, `_` and `-`)")]
pub struct SteeringError(String);

/// The steering of one vendor: its verb `x.{vendor}.control.instruct`, its audit types
/// `x.{vendor}.instruction.delivered` and `.dropped`, and the bounds of each session's
/// queue.
///
/// ```
/// use aep_core::steering::Steering;
/// let s = Steering::new("acme")?.with_capacity(5).with_max_chars(500);
/// assert_eq!(s.instruct_type(), "x.acme.control.instruct");
/// assert_eq!(s.delivered_type(), "x.acme.instruction.delivered");
/// assert_eq!(s.dropped_type(), "x.acme.instruction.dropped");
/// assert_eq!((s.capacity(), s.max_chars()), (5, 500));
/// # Ok::<(), aep_core::steering::SteeringError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steering {
    vendor: String,
    instruct: String,
    delivered: String,
    dropped: String,
    capacity: usize,
    max_chars: usize,
}

impl Steering {
    /// The steering of `vendor`, with the default bounds.
    pub fn new(vendor: &str) -> Result<Steering, SteeringError> {
        let instruct = format!("x.{vendor}.control.instruct");
        match EventType::parse(&instruct) {
            Ok(t) if t.vendor() == Some(vendor) => {}
            _ => return Err(SteeringError(vendor.to_owned())),
        }
        Ok(Steering {
            vendor: vendor.to_owned(),
            instruct,
            delivered: format!("x.{vendor}.instruction.delivered"),
            dropped: format!("x.{vendor}.instruction.dropped"),
            capacity: DEFAULT_CAPACITY,
            max_chars: DEFAULT_MAX_CHARS,
        })
    }

    crate::setters! {
        /// Holds at most `capacity` instructions per session (at least one).
        #[must_use]
        pub fn with_capacity(capacity: usize) => capacity = capacity.max(1);

        /// Takes instructions of at most `max_chars` characters.
        #[must_use]
        pub fn with_max_chars(max_chars: usize) => max_chars = max_chars;
    }

    /// The vendor.
    pub fn vendor(&self) -> &str {
        &self.vendor
    }

    /// The command type, `x.{vendor}.control.instruct`: what the target declares in
    /// `control.accepts` (AEP-0004 §4.2).
    pub fn instruct_type(&self) -> &str {
        &self.instruct
    }

    /// `x.{vendor}.instruction.delivered`.
    pub fn delivered_type(&self) -> &str {
        &self.delivered
    }

    /// `x.{vendor}.instruction.dropped`.
    pub fn dropped_type(&self) -> &str {
        &self.dropped
    }

    /// How many instructions a session's queue holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The longest instruction taken, in characters.
    pub fn max_chars(&self) -> usize {
        self.max_chars
    }
}

/// Why queued instructions are dropped undelivered (the `reason` of
/// `x.{vendor}.instruction.dropped`).
///
/// ```
/// assert_eq!(aep_core::steering::DropReason::SessionEnded.as_str(), "session-ended");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// The session ended with instructions still queued (the reference's one reason).
    SessionEnded,
}

impl DropReason {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            DropReason::SessionEnded => "session-ended",
        }
    }
}

crate::names::display_as_str!(DropReason);

/// One instruction handed to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    command: String,
    by: String,
    text: String,
    queued: Duration,
}

impl Instruction {
    /// What the agent is asked to take into account.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The command's `id`.
    pub fn command_id(&self) -> &str {
        &self.command
    }

    /// Who sent it: the command's `agent` (an asserted identity, AEP-0004 §8).
    pub fn by(&self) -> &str {
        &self.by
    }

    /// How long it waited in the queue.
    pub fn queued_for(&self) -> Duration {
        self.queued
    }
}

/// An instruction taken from the queue and its `delivered` audit, to emit.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    instruction: Instruction,
    audit: OutcomeEvent,
}

impl Delivery {
    /// The instruction.
    pub fn instruction(&self) -> &Instruction {
        &self.instruction
    }

    /// `x.{vendor}.instruction.delivered {queued_ms}`, `cause` the command.
    pub fn audit(&self) -> &OutcomeEvent {
        &self.audit
    }

    /// Both.
    pub fn into_parts(self) -> (Instruction, OutcomeEvent) {
        (self.instruction, self.audit)
    }
}

#[derive(Debug)]
struct Queued {
    command: String,
    by: String,
    text: String,
    at: Instant,
}

/// One session's instructions in arrival order, bounded ([`Steering::capacity`]): the
/// steering loop as a sans-IO state machine. [`offer`](Self::offer) decides each
/// `x.{vendor}.control.instruct` (accepted and queued, or rejected `invalid`: a full
/// queue, no text, too long); [`next`](Self::next) hands out the oldest with its
/// `delivered` audit; [`drop_all`](Self::drop_all) empties it with one `dropped` audit
/// per instruction. Nothing queued is lost silently.
#[derive(Debug)]
pub struct InstructionQueue {
    steering: Steering,
    items: VecDeque<Queued>,
}

impl InstructionQueue {
    /// An empty queue.
    pub fn new(steering: Steering) -> InstructionQueue {
        InstructionQueue {
            steering,
            items: VecDeque::new(),
        }
    }

    /// The steering it follows.
    pub fn steering(&self) -> &Steering {
        &self.steering
    }

    /// Decides one command at `now`: accepted when it is this vendor's verb with a
    /// non-blank `text` of at most the length taken and the queue has room (it is then
    /// queued); otherwise rejected, saying why without quoting the text (an ack's detail
    /// is emitted at the emitter's ceiling).
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::{ControlSender, Decision, RejectReason};
    /// use aep_core::steering::{InstructionQueue, Steering};
    /// let mut q = InstructionQueue::new(Steering::new("acme")?.with_capacity(1));
    /// let sender = ControlSender::new("console", "ops");
    /// let cmd = |id: &str, data| sender.command("x.acme.control.instruct", "s").data(data).build(id, "t");
    /// let now = Instant::now();
    /// assert_eq!(q.offer(now, &cmd("c1", serde_json::json!({"text": "go"}))), Decision::Accept);
    /// let full = q.offer(now, &cmd("c2", serde_json::json!({"text": "and then"})));
    /// assert!(matches!(full, Decision::Reject { reason: RejectReason::Invalid, .. }));
    /// let empty = q.offer(now, &cmd("c3", serde_json::json!({})));
    /// assert!(matches!(empty, Decision::Reject { reason: RejectReason::Invalid, .. }));
    /// # Ok::<(), aep_core::steering::SteeringError>(())
    /// ```
    pub fn offer(&mut self, now: Instant, command: &Event) -> Decision {
        if command.event_type() != self.steering.instruct {
            return Decision::reject(
                RejectReason::Unsupported,
                format!("this agent takes {}", self.steering.instruct),
            );
        }
        let text = command
            .data_raw()
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .and_then(|d| d.get("text").and_then(Value::as_str).map(str::to_owned));
        let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
            return Decision::reject(
                RejectReason::Invalid,
                "an instruction is {\"text\": string}, the text not blank",
            );
        };
        if text.chars().count() > self.steering.max_chars {
            return Decision::reject(
                RejectReason::Invalid,
                format!(
                    "the instruction is longer than the {} characters this agent takes",
                    self.steering.max_chars
                ),
            );
        }
        if self.items.len() >= self.steering.capacity {
            return Decision::reject(
                RejectReason::Invalid,
                format!(
                    "the session's instruction queue is full ({} waiting): send it again once the agent has taken some",
                    self.steering.capacity
                ),
            );
        }
        self.items.push_back(Queued {
            command: command.id().to_owned(),
            by: command.agent().to_owned(),
            text,
            at: now,
        });
        Decision::Accept
    }

    /// Takes the oldest instruction at `now`, with its `delivered` audit.
    pub fn next(&mut self, now: Instant) -> Option<Delivery> {
        let q = self.items.pop_front()?;
        let queued = now.saturating_duration_since(q.at);
        let audit = OutcomeEvent::new(
            self.steering.delivered.clone(),
            json!({ "queued_ms": u64::try_from(queued.as_millis()).unwrap_or(u64::MAX) }),
            &q.command,
        );
        Some(Delivery {
            instruction: Instruction {
                command: q.command,
                by: q.by,
                text: q.text,
                queued,
            },
            audit,
        })
    }

    /// Empties the queue: one `x.{vendor}.instruction.dropped {reason}` per instruction,
    /// in order, each `cause` its command.
    pub fn drop_all(&mut self, reason: DropReason) -> Vec<OutcomeEvent> {
        self.items
            .drain(..)
            .map(|q| {
                OutcomeEvent::new(
                    self.steering.dropped.clone(),
                    json!({ "reason": reason.as_str() }),
                    q.command,
                )
            })
            .collect()
    }

    /// How many instructions wait.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ControlSender;

    fn instruct(vendor: &str, id: &str, data: Value) -> Event {
        ControlSender::new("console", "ops")
            .command(format!("x.{vendor}.control.instruct"), "s")
            .data(data)
            .build(id, "2026-07-03T10:00:00.000Z")
    }

    #[test]
    fn vendor_names() {
        for ok in ["acme", "claude-code", "a_b", "x1"] {
            assert!(Steering::new(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Acme", "a.b", "a b", "x.y"] {
            assert!(Steering::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fifo_bounded_and_audited() {
        let t0 = Instant::now();
        let mut q = InstructionQueue::new(Steering::new("acme").unwrap());
        for i in 0..DEFAULT_CAPACITY {
            let d = q.offer(
                t0,
                &instruct("acme", &format!("c{i}"), json!({"text": format!("t{i}")})),
            );
            assert_eq!(d, Decision::Accept);
        }
        let over = q.offer(t0, &instruct("acme", "c-over", json!({"text": "one more"})));
        let Decision::Reject { reason, detail } = over else {
            panic!()
        };
        assert_eq!(reason, RejectReason::Invalid);
        assert!(detail.unwrap().contains("full (20"));
        assert!(!format!(
            "{:?}",
            q.offer(t0, &instruct("acme", "c-x", json!({"text": "secret plan"})))
        )
        .contains("secret"));
        let first = q.next(t0 + Duration::from_millis(5)).unwrap();
        assert_eq!(first.instruction().text(), "t0");
        assert_eq!(first.instruction().by(), "console");
        assert_eq!(first.audit().data(), &json!({"queued_ms": 5}));
        // Room again.
        assert_eq!(
            q.offer(t0, &instruct("acme", "c20", json!({"text": "t20"}))),
            Decision::Accept
        );
        let dropped = q.drop_all(DropReason::SessionEnded);
        assert_eq!(dropped.len(), DEFAULT_CAPACITY);
        assert_eq!(dropped[0].cause(), "c1");
        assert_eq!(dropped.last().unwrap().cause(), "c20");
        assert!(dropped
            .iter()
            .all(|d| d.event_type() == "x.acme.instruction.dropped"));
        assert!(q.is_empty() && q.next(t0).is_none());
    }

    #[test]
    fn malformed_and_foreign_commands_are_rejected() {
        let t0 = Instant::now();
        let mut q = InstructionQueue::new(Steering::new("acme").unwrap().with_max_chars(5));
        for data in [
            json!({}),
            json!({"text": 3}),
            json!({"text": "  "}),
            json!("text"),
        ] {
            assert!(
                matches!(
                    q.offer(t0, &instruct("acme", "c", data.clone())),
                    Decision::Reject {
                        reason: RejectReason::Invalid,
                        ..
                    }
                ),
                "{data}"
            );
        }
        assert!(matches!(
            q.offer(t0, &instruct("acme", "c", json!({"text": "é".repeat(6)}))),
            Decision::Reject {
                reason: RejectReason::Invalid,
                ..
            }
        ));
        assert_eq!(
            q.offer(t0, &instruct("acme", "c", json!({"text": "é".repeat(5)}))),
            Decision::Accept
        );
        assert!(matches!(
            q.offer(t0, &instruct("other", "c", json!({"text": "hi"}))),
            Decision::Reject {
                reason: RejectReason::Unsupported,
                ..
            }
        ));
        assert_eq!(q.len(), 1);
    }
}
