//! The control plane (AEP-0004) for synchronous code: [`ControlClient`] sends commands
//! and waits for their ack, [`Duplex`] speaks the raw WebSocket binding, and
//! [`ControlTarget`] answers commands as an agent with a plain-function handler.
//!
//! All three drive the async crate's types ([`aep_async::control`]) on a [`Runtime`];
//! correlation, retries, dedupe and the byte-identical re-ack are theirs.

#[cfg(feature = "ws")]
use std::time::Duration;

mod attention;
mod steering;

pub use aep_async::control::{
    Accepted, AskError, Command, ControlError, Decision, Instruction, InstructionsError, Nack,
    NackOrigin, NackReason, RejectReason, SendOptions, Steering,
};
#[cfg(feature = "ws")]
pub use aep_async::control::{ControlOptions, DuplexOptions};
pub use aep_core::attention::{Answer, AttentionRequest, FormField};
#[cfg(feature = "ws")]
use aep_core::frame::{Hello, Message, RosterEntry};
use aep_core::Event;
pub use steering::Instructions;

use crate::emit::SessionEmitter;
use crate::error::Error;
use crate::runtime::Runtime;

/// Sends commands over its own WebSocket and waits for each one's settlement; the
/// blocking face of [`aep_async::ControlClient`], connected with
/// [`Client::control`](crate::Client::control).
///
/// ```no_run
/// use aep_blocking::control::{ControlOptions, SendOptions};
/// use aep_blocking::Client;
///
/// let control = Client::new("http://127.0.0.1:8787").token("secret").control(ControlOptions::new())?;
/// match control.send("control.pause", "s1", SendOptions::new()) {
///     Ok(ack) => println!("accepted: {}", ack.id()),
///     Err(e) => match e.nack() {
///         Some(nack) => println!("not accepted: {}", nack.reason()),
///         None => return Err(e.into()),
///     },
/// }
/// control.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
#[derive(Debug, Clone)]
pub struct ControlClient {
    inner: aep_async::ControlClient,
    runtime: Runtime,
}

#[cfg(feature = "ws")]
impl ControlClient {
    pub(crate) fn new(inner: aep_async::ControlClient, runtime: Runtime) -> Self {
        ControlClient { inner, runtime }
    }

    /// The async client underneath.
    pub fn as_async(&self) -> &aep_async::ControlClient {
        &self.inner
    }

    /// The endpoint's `hello` (the latest, after a reconnect).
    pub fn hello(&self) -> Hello {
        self.inner.hello()
    }

    /// Sends a command of `command_type` to `session` and blocks until it settles: the
    /// `control.accepted` event, or an [`Error::Control`] carrying the nack
    /// ([`Error::nack`]).
    pub fn send(
        &self,
        command_type: &str,
        session: &str,
        options: SendOptions,
    ) -> Result<Event, Error> {
        let command = self.inner.sender().command(command_type, session, &options);
        self.send_command(command, options)
    }

    /// Sends an envelope you built (see [`aep_async::ControlSender::command`]).
    pub fn send_command(&self, command: Event, options: SendOptions) -> Result<Event, Error> {
        let inner = self.inner.clone();
        Ok(self
            .runtime
            .block_on(async move { inner.send_command(command, options).await })??)
    }

    /// The endpoint's live-claim snapshot (AEP-0003 §4.1).
    pub fn roster(&self) -> Result<Vec<RosterEntry>, Error> {
        let inner = self.inner.clone();
        Ok(self
            .runtime
            .block_on(async move { inner.roster().await })??)
    }

    /// Closes in order; pending commands settle as the synthesized `timeout`.
    /// Idempotent. Waits for the close, except inside a tokio runtime, where it only
    /// starts it (a blocking call there would stall the runtime).
    pub fn close(&self) {
        let _ = self.runtime.block_on(self.inner.close());
    }
}

/// The raw WebSocket binding, `hello` done: events and frames in and out; the blocking
/// face of [`aep_async::control::Duplex`], opened with
/// [`Client::duplex`](crate::Client::duplex).
///
/// ```no_run
/// use aep_blocking::control::DuplexOptions;
/// use aep_blocking::Client;
/// use aep_core::frame::{Frame, IdFrame, Message};
///
/// let mut duplex = Client::new("http://127.0.0.1:8787").token("secret").duplex(DuplexOptions::new())?;
/// duplex.send(&Message::Frame(Frame::RosterRequest(IdFrame::new("r1"))))?;
/// if let Some(reply) = duplex.recv() {
///     println!("{:?}", reply?);
/// }
/// duplex.close();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
#[derive(Debug)]
pub struct Duplex {
    inner: aep_async::control::Duplex,
    runtime: Runtime,
}

#[cfg(feature = "ws")]
impl Duplex {
    pub(crate) fn new(inner: aep_async::control::Duplex, runtime: Runtime) -> Self {
        Duplex { inner, runtime }
    }

    /// The endpoint's `hello`.
    pub fn hello(&self) -> Hello {
        self.inner.hello()
    }

    /// Writes one event or frame.
    pub fn send(&self, message: &Message) -> Result<(), Error> {
        Ok(self.runtime.poll_here(self.inner.send(message))??)
    }

    /// Writes one JSON text as is.
    pub fn send_text(&self, text: impl Into<String>) -> Result<(), Error> {
        Ok(self.runtime.poll_here(self.inner.send_text(text))??)
    }

    /// Blocks for the next event or frame; `None` once the connection is closed. An
    /// undecodable message is an `Err` and the connection goes on.
    pub fn recv(&mut self) -> Option<Result<Message, Error>> {
        match self.runtime.poll_here(self.inner.recv()) {
            Ok(next) => next.map(|r| r.map_err(Error::from)),
            Err(e) => Some(Err(e)),
        }
    }

    /// [`Duplex::recv`] waiting at most `timeout` ([`Error::Timeout`]; nothing is lost).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<Result<Message, Error>> {
        let inner = &mut self.inner;
        let next = async move { tokio::time::timeout(timeout, inner.recv()).await };
        match self.runtime.poll_here(next) {
            Ok(Ok(next)) => next.map(|r| r.map_err(Error::from)),
            Ok(Err(_)) => Some(Err(Error::Timeout(timeout))),
            Err(e) => Some(Err(e)),
        }
    }

    /// Closes in order (a `closing` frame, then the WebSocket close). Idempotent.
    /// Waits for the close, except inside a tokio runtime, where it only starts it.
    pub fn close(&self) {
        let _ = self.runtime.block_on(self.inner.close());
    }
}

/// The receiving side of control for an agent written in synchronous code; the
/// blocking face of [`aep_async::ControlTarget`].
///
/// The handler is a plain function; it runs on a thread of its own (never on the
/// connection's task, and outside any runtime, so blocking calls are fine there), once
/// per new command of an accepted type in arrival order, and decides with
/// [`Command::accept`], [`Command::reject`] or [`Command::decide`] (dropping the
/// command undecided rejects it `refused`). Hand the target to
/// [`WsSinkOptions::command_hook`](crate::WsSinkOptions::command_hook) and
/// [`attach`](ControlTarget::attach) each session the agent owns.
///
/// ```no_run
/// use aep_blocking::control::{ControlTarget, RejectReason};
/// use aep_blocking::{Client, Emitter, WsSinkOptions};
/// use serde_json::json;
///
/// let target = ControlTarget::new(["control.pause"], |cmd| {
///     if cmd.event().run().is_none() {
///         let _ = cmd.reject(RejectReason::Invalid, "pause needs a run");
///     } else if let Ok(accepted) = cmd.accept() {
///         let _ = accepted.emit("run.paused", json!({}));
///     }
/// })?;
/// let relay = Client::new("http://127.0.0.1:8787").token("secret");
/// let sink = relay.ws_sink(WsSinkOptions::new("coder", "host-a/1").command_hook(target.clone()))?;
/// let emitter = Emitter::new("coder", "host-a", sink);
/// let session = target.attach(emitter.session("s1"));
/// session.emit("session.started", json!({}))?; // claims s1 on this connection
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ControlTarget {
    inner: aep_async::ControlTarget,
}

impl ControlTarget {
    /// A target accepting `accepts`, deciding with `handler`, with the defaults.
    ///
    /// Fails with [`Error::Runtime`] when the handler's thread cannot be started: a
    /// target without it could only refuse every command.
    pub fn new<I, S, F>(accepts: I, handler: F) -> Result<ControlTarget, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
        F: Fn(Command) + Send + Sync + 'static,
    {
        Self::with_builder(aep_async::ControlTarget::builder(accepts), handler)
    }

    /// A target from the async builder's options (ack window, dedupe capacity), deciding
    /// with the plain-function `handler`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aep_blocking::control::ControlTarget;
    /// let builder = aep_async::ControlTarget::builder(["control.pause"]).ack_window(Duration::from_secs(2));
    /// let target = ControlTarget::with_builder(builder, |cmd| { let _ = cmd.accept(); })?;
    /// assert_eq!(target.accepts(), ["control.pause"]);
    /// # Ok::<(), aep_blocking::Error>(())
    /// ```
    pub fn with_builder<F>(
        builder: aep_async::control::ControlTargetBuilder,
        handler: F,
    ) -> Result<ControlTarget, Error>
    where
        F: Fn(Command) + Send + Sync + 'static,
    {
        // The handler runs on a plain thread of its own, outside any runtime, so it may
        // call blocking APIs (flush an emitter, send a command); commands reach it in
        // arrival order. The thread ends when the last clone of the target is dropped
        // (the channel's sender lives in the async handler).
        let (tx, rx) = std::sync::mpsc::channel::<Command>();
        std::thread::Builder::new()
            .name("aep-control-target".into())
            .spawn(move || {
                while let Ok(cmd) = rx.recv() {
                    // A handler that panics rejects its command `refused` (the command
                    // is dropped undecided while unwinding); the commands after it are
                    // still decided.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(cmd)));
                }
            })
            .map_err(Error::Runtime)?;
        let tx = std::sync::Mutex::new(tx);
        let inner = builder.handler(move |cmd| {
            // The thread outlives every sender (it ends when they are all gone), so a
            // failed send only returns the command, whose drop rejects it `refused`.
            let _ = tx.lock().unwrap_or_else(|p| p.into_inner()).send(cmd);
            std::future::ready(())
        });
        Ok(ControlTarget { inner })
    }

    /// The declared command types.
    pub fn accepts(&self) -> &[String] {
        self.inner.accepts()
    }

    /// Routes the commands addressed to `session` to this target and acks them through
    /// it; returns the session emitter to keep emitting with (same `seq` counter).
    pub fn attach(&self, session: SessionEmitter) -> SessionEmitter {
        self.inner.attach(session.as_async().clone());
        session
    }

    /// Stops acking for `session`.
    pub fn detach(&self, session: &str) {
        self.inner.detach(session);
    }

    /// Feeds one delivery of a command from a transport you own, on the
    /// [shared](Runtime::shared) runtime: new commands go to the handler; undeclared
    /// types are nacked and redeliveries re-acked before this returns.
    pub fn handle(&self, command: Event) -> Result<(), Error> {
        self.handle_on(&Runtime::shared()?, command)
    }

    /// [`ControlTarget::handle`] on `runtime` instead.
    pub fn handle_on(&self, runtime: &Runtime, command: Event) -> Result<(), Error> {
        let inner = self.inner.clone();
        runtime.enter(|| inner.handle(command))?;
        Ok(())
    }

    /// The async target underneath.
    pub fn as_async(&self) -> &aep_async::ControlTarget {
        &self.inner
    }
}

#[cfg(feature = "ws")]
impl aep_async::CommandHook for ControlTarget {
    fn accepts(&self) -> Vec<String> {
        aep_async::CommandHook::accepts(&self.inner)
    }
    fn ack_window(&self) -> Option<Duration> {
        aep_async::CommandHook::ack_window(&self.inner)
    }
    fn command(&self, command: Event) {
        aep_async::CommandHook::command(&self.inner, command)
    }
}
