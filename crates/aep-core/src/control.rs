//! Control state machines: sender correlation and target dedupe (AEP-0004).
//!
//! Both sides are sans-IO state machines in the style of `quinn-proto`: they read no
//! clock and touch no socket. Time comes in as a `now: Instant` argument; input is fed
//! with `handle_*` methods; output is taken with `poll_*` methods; the next deadline is
//! [`ControlSender::poll_timeout`] / [`ControlTarget::poll_timeout`]. After feeding any
//! input, drain every `poll_*` method, then sleep until `poll_timeout()` (or the next
//! input) and call `handle_timeout(now)`.
//!
//! - [`ControlSender`] builds commands (no `seq`, `session` addressing, the sender's
//!   `source`, AEP-0004 §2), correlates acks by `cause` (§6), resends the identical
//!   envelope when the ack window closes (§2.3), and settles every command exactly once:
//!   accepted, rejected (§3), refused by the relay (§4.2), or the locally synthesized
//!   `timeout` (§3).
//! - [`ControlTarget`] dedupes commands on `(source, id)`, nacks types outside `accepts`
//!   as `unsupported` (§4.2), asks the application for exactly one decision per
//!   command, and answers a redelivery with the recorded ack, byte-identical (§3).
//!
//! ```
//! use std::time::Instant;
//! use aep_core::control::{ControlSender, ControlTarget, Decision, TargetOutput};
//! use aep_core::Event;
//!
//! let t0 = Instant::now();
//! let mut sender = ControlSender::new("console", "ops-host");
//! let cmd = sender.command("control.pause", "s1").build("01JCMD", "2026-07-03T10:00:00.000Z");
//! sender.send(t0, cmd)?;
//! let wire = sender.poll_transmit().unwrap();
//!
//! let mut target = ControlTarget::new(["control.pause"]);
//! target.handle_command(t0, (*wire).clone())?;
//! let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
//! target.decide(incoming.key(), Decision::Accept)?;
//! let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
//! // The session's emitter mints the ack as an ordinary sequenced event:
//! let ack_event = Event::new("01JACK", ack.ack_type(), "2026-07-03T10:00:00.100Z", "aep://h/agent/a/session/s1", "a")
//!     .with_session("s1").with_seq(7).with_cause(ack.cause()).with_data(ack.data());
//! target.record(ack.key(), ack_event.clone())?;
//!
//! assert!(sender.handle_event(&ack_event));
//! let settled = sender.poll_settled().unwrap();
//! assert_eq!(settled.command_id, "01JCMD");
//! assert!(settled.result.is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::types::EventType;

mod nack;
mod outcome;
mod sender;
mod target;

pub use nack::{Nack, NackOrigin, NackReason, RejectReason, UnknownReason};
pub use outcome::OutcomeEvent;
pub use sender::{CommandBuilder, ControlSender, SendError, SendPolicy, Settled};
pub use target::{
    AckToEmit, CommandDelivery, CommandKey, ControlTarget, Decision, IncomingCommand, TargetConfig,
    TargetError, TargetOutput,
};

pub use crate::frame::DEFAULT_ACK_WINDOW;

/// How many times a sender resends a command after the ack window closes, by default
/// (as the Python and TypeScript SDKs): three transmissions in all.
///
/// ```
/// use aep_core::control::{SendPolicy, DEFAULT_ACK_WINDOW, DEFAULT_RETRIES};
/// assert_eq!(SendPolicy::default(), SendPolicy::new(DEFAULT_ACK_WINDOW, DEFAULT_RETRIES));
/// ```
pub const DEFAULT_RETRIES: u32 = 2;

/// How many commands a target remembers for dedupe and re-acknowledgement, by default
/// (as the Python and TypeScript SDKs).
///
/// ```
/// use aep_core::control::{TargetConfig, DEFAULT_DEDUPE_CAPACITY};
/// let config = TargetConfig::new(["control.pause"]).with_dedupe_capacity(DEFAULT_DEDUPE_CAPACITY / 10);
/// assert!(format!("{config:?}").contains("1000"));
/// ```
pub const DEFAULT_DEDUPE_CAPACITY: usize = 10_000;

/// The ack types (AEP-0004 §3).
///
/// ```
/// use aep_core::control::{Decision, ACCEPTED};
/// assert_eq!(Decision::Accept.ack_type(), ACCEPTED);
/// ```
pub const ACCEPTED: &str = "control.accepted";
/// The ack types (AEP-0004 §3).
///
/// ```
/// use aep_core::control::{Decision, RejectReason, REJECTED};
/// assert_eq!(Decision::reject(RejectReason::Busy, "later").ack_type(), REJECTED);
/// ```
pub const REJECTED: &str = "control.rejected";

/// Whether `ty` is a well-formed command type: [`EventType::is_command`] on a string.
///
/// ```
/// use aep_core::control::is_command_type;
/// assert!(is_command_type("control.cancel"));
/// assert!(is_command_type("control.frobnicate"));
/// assert!(is_command_type("x.acme.control.reboot"));
/// assert!(!is_command_type("control.accepted"));
/// assert!(!is_command_type("run.started"));
/// ```
pub fn is_command_type(ty: &str) -> bool {
    EventType::parse(ty).is_ok_and(|t| t.is_command())
}
