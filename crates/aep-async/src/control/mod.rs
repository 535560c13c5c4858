//! The control plane (AEP-0004) over tokio: send commands to an agent's session and
//! receive the ack, or receive commands as an agent and answer them.
//!
//! The protocol rules (command shape, correlation by `cause`, identical-envelope
//! retries, the synthesized `timeout`, `(source, id)` dedupe, the recorded ack re-sent
//! byte-identically, `unsupported` for undeclared types) live in
//! [`aep_core::control`]; this module only drives those state machines with a clock, a
//! socket and tasks.
//!
//! - [`ControlSender`]: correlation and retries over a transport you own: inject a
//!   transmit function, feed inbound events and frames.
//! - [`ControlClient`] (feature `ws`, [`Client::control`](crate::Client::control)): a
//!   [`ControlSender`] over its own WebSocket to `{base}/socket`, with `hello`, the
//!   session subscriptions acks arrive on, `roster()`, and reconnects.
//! - [`Duplex`] (feature `ws`, [`Client::duplex`](crate::Client::duplex)): the raw
//!   WebSocket binding, `hello` done, JSON messages in and out, for callers who speak
//!   the rest of the protocol themselves.
//! - [`ControlTarget`]: the receiving side. It plugs into the WebSocket emit sink as its
//!   `CommandHook`, so an agent that emits over WebSocket receives its commands on the
//!   same connection, asks an async handler to decide, and acks through the session's
//!   [`SessionEmitter`](crate::SessionEmitter). [`ControlTarget::ask`] is the
//!   attention loop on it: a request emitted, its answer checked, acked and recorded
//!   (core's [`aep_core::attention`]); [`ControlTarget::instructions`] the steering:
//!   `x.{vendor}.control.instruct` queued per session and read as a stream, each one
//!   delivered or dropped with its audit (core's [`aep_core::steering`]).
//!
//! ```no_run
//! use aep_async::control::{ControlOptions, SendOptions};
//! use aep_async::Client;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let relay = Client::new("http://127.0.0.1:8787").token("secret");
//! let control = relay.control(ControlOptions::new()).await?;
//! match control.send("control.pause", "s1", SendOptions::new()).await {
//!     Ok(ack) => println!("accepted: {}", ack.id()),
//!     Err(e) => println!("not accepted: {e}"),
//! }
//! control.close().await;
//! # Ok(()) }
//! ```

mod acks;
mod attention;
mod error;
mod sender;
mod steering;
mod target;
mod timer;

#[cfg(feature = "ws")]
mod client;
#[cfg(feature = "ws")]
mod duplex;

pub use attention::AskError;
pub use error::ControlError;
pub use sender::{ControlSender, SendOptions};
pub use steering::{Instructions, InstructionsError};
pub use target::{Accepted, Command, ControlTarget, ControlTargetBuilder};

#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use client::{ControlClient, ControlOptions};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use duplex::{Duplex, DuplexOptions};

pub use aep_core::attention::{Answer, AttentionRequest, FormField};
pub use aep_core::control::{
    Decision, Nack, NackOrigin, NackReason, RejectReason, DEFAULT_ACK_WINDOW, DEFAULT_RETRIES,
};
pub use aep_core::steering::{Instruction, Steering};
