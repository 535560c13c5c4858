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
//! - [`ControlClient`] (feature `ws`): a [`ControlSender`] over its own WebSocket to
//!   `{base}/socket`, with `hello`, the session subscriptions acks arrive on,
//!   `roster()`, and reconnects.
//! - [`Duplex`] (feature `ws`): the raw WebSocket binding, `hello` done, JSON messages
//!   in and out, for callers who speak the rest of the protocol themselves.
//! - [`ControlTarget`]: the receiving side. It plugs into the WebSocket emit sink as its
//!   `CommandHook`, so an agent that emits over WebSocket receives its commands on the
//!   same connection, asks an async handler to decide, and acks through the session's
//!   [`SessionEmitter`](crate::SessionEmitter).
//!
//! ```no_run
//! use aep_async::control::{ControlClient, ClientOptions, SendOptions};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = ControlClient::connect("http://127.0.0.1:8787", ClientOptions::new().token("secret")).await?;
//! match client.send("control.pause", "s1", SendOptions::new()).await {
//!     Ok(ack) => println!("accepted: {}", ack.id()),
//!     Err(e) => println!("not accepted: {e}"),
//! }
//! client.close().await;
//! # Ok(()) }
//! ```

mod error;
mod sender;
mod target;
mod timer;

#[cfg(feature = "ws")]
mod client;
#[cfg(feature = "ws")]
mod duplex;

pub use error::{ControlError, NackError};
pub use sender::{ControlSender, SendOptions};
pub use target::{Accepted, Command, ControlTarget, ControlTargetBuilder};

#[cfg(feature = "ws")]
pub use client::{ClientOptions, ControlClient};
#[cfg(feature = "ws")]
pub use duplex::{open_duplex, Duplex, DuplexOptions};

/// What one step of a state machine produced, held outside the lock until delivered:
/// almost always a single item, which is kept inline, so a command or an ack costs no
/// allocation here (and no buffer crossing glibc's 1 KiB free-list threshold, as a
/// `Vec` growing to four envelopes would).
#[derive(Debug)]
pub(crate) struct Few<T> {
    first: Option<T>,
    rest: Vec<T>,
}

impl<T> Default for Few<T> {
    fn default() -> Self {
        Few {
            first: None,
            rest: Vec::new(),
        }
    }
}

impl<T> Few<T> {
    pub(crate) fn push(&mut self, item: T) {
        if self.first.is_none() {
            self.first = Some(item);
        } else {
            self.rest.push(item);
        }
    }
}

impl<T> IntoIterator for Few<T> {
    type Item = T;
    type IntoIter = std::iter::Chain<std::option::IntoIter<T>, std::vec::IntoIter<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

pub use aep_core::control::{
    Decision, NackOrigin, NackReason, RejectReason, DEFAULT_ACK_WINDOW, DEFAULT_RETRIES,
};
