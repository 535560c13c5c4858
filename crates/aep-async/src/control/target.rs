//! [`ControlTarget`]: the receiving side, the core target state machine driven by the
//! commands a transport hands in, an async handler, and the sessions' emitters.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use aep_core::control::{
    self as core, CommandDelivery, CommandKey, Decision, RejectReason, TargetConfig, TargetOutput,
};
use aep_core::steering::Steering;
use aep_core::Event;
use serde::Serialize;
use tokio::sync::Notify;

use super::error::ControlError;
use super::timer::{self, Arm, Timed};
use crate::emit::{self, Attrs, EmitOptions, SessionEmitter};
use smallvec::SmallVec;

type HandlerFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
type Handler = Arc<dyn Fn(Command) -> HandlerFuture + Send + Sync>;

pub(super) struct State {
    pub(super) core: core::ControlTarget,
    /// Weak: the emit sink's connection task holds this target as its command hook, and
    /// the session holds the sink; a strong reference would keep all of them alive after
    /// the agent let go.
    pub(super) sessions: HashMap<String, Weak<SessionEmitter>>,
    arm: Arm,
    /// The attention requests `ask` waits on, and their waiters (`attention`).
    pub(super) asks: super::attention::Asks,
    /// Each steered session's instruction queue and its reader (`steering`).
    pub(super) steer: HashMap<String, super::steering::Slot>,
}

pub(super) struct Inner {
    state: Mutex<State>,
    handler: Handler,
    pub(super) accepts: Vec<String>,
    pub(super) steering: Option<Steering>,
    ack_window: Option<Duration>,
    wake: Arc<Notify>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

/// Configuration of a [`ControlTarget`].
///
/// ```
/// use std::time::Duration;
/// use aep_async::control::ControlTarget;
/// let target = ControlTarget::builder(["control.pause"])
///     .ack_window(Duration::from_secs(5))
///     .dedupe_capacity(1_000)
///     .handler(|cmd| async move { let _ = cmd.accept(); });
/// # let _ = target;
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `handler`"]
pub struct ControlTargetBuilder {
    config: TargetConfig,
    steering: Option<Steering>,
}

impl ControlTargetBuilder {
    /// How long the handler may take to decide before the target rejects the command
    /// `busy` itself, declared at `hello` as `ack_window_ms` (default 10 s, AEP-0004 §3,
    /// §7).
    pub fn ack_window(mut self, window: Duration) -> Self {
        self.config = self.config.with_decision_window(Some(window));
        self
    }

    /// How many acknowledged commands are remembered for dedupe and re-ack
    /// (default 10 000).
    pub fn dedupe_capacity(mut self, capacity: usize) -> Self {
        self.config = self.config.with_dedupe_capacity(capacity);
        self
    }

    /// Takes instructions (`steering`'s `x.{vendor}.control.instruct`, declared in
    /// `accepts`): each attached session gets a bounded queue, read with
    /// [`ControlTarget::instructions`]; the handler never sees them. Steering is opt-in
    /// by design: declare it only where the agent really folds instructions in.
    ///
    /// ```
    /// use aep_async::control::ControlTarget;
    /// use aep_core::steering::Steering;
    /// let target = ControlTarget::builder(["control.cancel"])
    ///     .steering(Steering::new("acme")?)
    ///     .handler(|cmd| async move { let _ = cmd.accept(); });
    /// assert_eq!(target.accepts(), ["control.cancel", "x.acme.control.instruct"]);
    /// # Ok::<(), aep_core::steering::SteeringError>(())
    /// ```
    pub fn steering(mut self, steering: Steering) -> Self {
        if !self.config.accepts(steering.instruct_type()) {
            self.config
                .accepts
                .push(steering.instruct_type().to_owned());
        }
        self.steering = Some(steering);
        self
    }

    /// Finishes with the async handler that decides each new command of an accepted
    /// type, exactly once, by calling [`Command::accept`], [`Command::reject`] or
    /// [`Command::decide`]. A handler that returns without deciding refuses the command
    /// (`refused`).
    ///
    /// The handler is first polled where the command arrives (for the WebSocket sink,
    /// its connection task), so one that decides at once costs no task; if it awaits
    /// something not yet ready, it goes on in a task of its own. Do not block in it:
    /// hand long synchronous work to `spawn_blocking`.
    pub fn handler<F, Fut>(self, handler: F) -> ControlTarget
    where
        F: Fn(Command) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |cmd| Box::pin(handler(cmd)));
        ControlTarget {
            inner: Arc::new(Inner {
                accepts: self.config.accepts.clone(),
                steering: self.steering,
                ack_window: self.config.decision_window,
                state: Mutex::new(State {
                    core: core::ControlTarget::with_config(self.config),
                    sessions: HashMap::new(),
                    arm: Arm::default(),
                    asks: super::attention::Asks::default(),
                    steer: HashMap::new(),
                }),
                handler,
                wake: Arc::new(Notify::new()),
            }),
        }
    }
}

/// The receiving side of control (AEP-0004 §2.3, §3, §4.2, §7), for an agent.
///
/// Declares the command types it `accepts`; dedupes deliveries on `(source, id)`; nacks
/// undeclared types `unsupported`; hands each new command to your async handler, which
/// accepts or rejects it with a reason; emits exactly one ack (`cause` = the command's
/// `id`) through the addressed session's [`SessionEmitter`]; and answers a redelivery
/// with the recorded ack, byte-identical. The rules are
/// [`aep_core::control::ControlTarget`]'s.
///
/// Plug it into the WebSocket emit sink with `WsSinkOptions::command_hook` so the
/// agent's commands arrive on the connection it emits on, then
/// [`attach`](Self::attach) each session it owns. Any other transport can feed
/// commands to [`handle`](Self::handle).
///
/// ```no_run
/// use std::sync::Arc;
/// use aep_async::control::ControlTarget;
/// use aep_async::{Client, EmitOptions, Emitter, WsSinkOptions};
/// use serde_json::json;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let target = ControlTarget::new(["control.pause", "control.cancel"], |cmd| async move {
///     match cmd.command_type() {
///         "control.cancel" => {
///             let run = cmd.event().run().unwrap_or("r1").to_owned();
///             if let Ok(accepted) = cmd.accept() {
///                 // The outcome, cause-linked to the command (AEP-0004 §6).
///                 let _ = accepted.emit_with("run.cancelled", json!({"reason": "operator"}), EmitOptions::new().run(run));
///             }
///         }
///         _ => { let _ = cmd.reject(aep_async::control::RejectReason::Busy, "mid-step"); }
///     }
/// });
/// let relay = Client::new("http://127.0.0.1:8787").token("secret");
/// let sink = relay.ws_sink(WsSinkOptions::new("coder", "host-a/1").command_hook(target.clone()))?;
/// let emitter = Emitter::new("coder", "host-a", sink);
/// let session = target.attach(emitter.session("s1"));
/// session.emit("session.started", json!({}))?; // claims s1 on this connection
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ControlTarget {
    pub(super) inner: Arc<Inner>,
}

impl fmt::Debug for ControlTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.lock();
        f.debug_struct("ControlTarget")
            .field("accepts", &self.inner.accepts)
            .field("ack_window", &self.inner.ack_window)
            .field("sessions", &st.sessions.keys().collect::<Vec<_>>())
            .field("remembered", &st.core.remembered())
            .field("asks", &st.asks)
            .field(
                "steering",
                &self.inner.steering.as_ref().map(|s| s.vendor()),
            )
            .finish()
    }
}

impl ControlTarget {
    /// A target accepting `accepts`, deciding with `handler`, with the defaults.
    pub fn new<I, S, F, Fut>(accepts: I, handler: F) -> ControlTarget
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
        F: Fn(Command) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        ControlTarget::builder(accepts).handler(handler)
    }

    /// A builder for the options.
    pub fn builder<I, S>(accepts: I) -> ControlTargetBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ControlTargetBuilder {
            config: TargetConfig::new(accepts),
            steering: None,
        }
    }

    /// The declared command types (`hello.capabilities.control.accepts`).
    pub fn accepts(&self) -> &[String] {
        &self.inner.accepts
    }

    /// The declared ack window (`hello.capabilities.control.ack_window_ms`).
    pub fn ack_window(&self) -> Option<Duration> {
        self.inner.ack_window
    }

    /// Routes the commands addressed to `session.session()` to this target, and their
    /// acks through `session`, for as long as the returned emitter (or a clone of the
    /// `Arc`) is alive: keep it for the agent's own events.
    pub fn attach(&self, session: impl Into<Arc<SessionEmitter>>) -> Arc<SessionEmitter> {
        let session = session.into();
        let name = session.session().to_owned();
        let mut st = self.inner.lock();
        super::steering::on_attach(&mut st, self.inner.steering.as_ref(), &name);
        st.sessions.insert(name, Arc::downgrade(&session));
        session
    }

    /// Stops acking for `session` (commands addressed to it are then dropped and
    /// logged: there is no emitter to ack through). With steering, the session's queued
    /// instructions are dropped, each audited, and its instruction stream ends.
    pub fn detach(&self, session: &str) {
        let mut st = self.inner.lock();
        super::steering::on_detach(&mut st, session);
        st.sessions.remove(session);
    }

    /// Feeds one delivery of a command. New commands of an accepted type go to the
    /// handler, polled here first and continued in a task of its own if it awaits (so
    /// this needs a tokio runtime); undeclared types are nacked `unsupported` and
    /// redeliveries re-acked, before this returns.
    pub fn handle(&self, command: Event) -> Result<CommandDelivery, ControlError> {
        let now = timer::now();
        let (delivery, decide, start_timer, wake) = {
            let mut st = self.inner.lock();
            let delivery = st.core.handle_command(now, command)?;
            let (decide, _) = drain(&mut st, None);
            let deadline = st.core.poll_timeout();
            let wake = st.arm.earlier(deadline);
            let start_timer = deadline.is_some() && st.arm.start();
            (delivery, decide, start_timer, wake)
        };
        if start_timer {
            timer::spawn(Arc::downgrade(&self.inner), self.inner.wake.clone());
        }
        if wake {
            self.inner.wake.notify_one();
        }
        for incoming in decide {
            // An answer to a request `ask` waits on is the attention loop's to decide, an
            // instruction the steering's.
            let Some(incoming) = super::attention::route(&self.inner, incoming)
                .and_then(|i| super::steering::route(&self.inner, i))
            else {
                continue;
            };
            let key = incoming.key().clone();
            let cmd = Command {
                event: incoming.into_command(),
                key,
                target: Arc::downgrade(&self.inner),
                decided: false,
            };
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    let handler = &self.inner.handler;
                    // One poll in place: most handlers decide without awaiting, and a
                    // task per command (its allocation, its wake-up, often a thread
                    // unparked) is then pure overhead. The noop waker is safe: if the
                    // handler is pending, the spawned task polls it again at once, and
                    // a future must wake the waker of its latest poll. A panicking
                    // handler must not take the caller (the sink's connection task)
                    // down with it: as in a task of its own, its command is dropped
                    // undecided, and so refused.
                    let first = std::panic::catch_unwind(AssertUnwindSafe(move || {
                        let mut future = handler(cmd);
                        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
                        match future.as_mut().poll(&mut cx) {
                            Poll::Ready(()) => None,
                            Poll::Pending => Some(future),
                        }
                    }));
                    match first {
                        Ok(None) => {}
                        Ok(Some(future)) => {
                            rt.spawn(future);
                        }
                        Err(_) => tracing::warn!("the command handler panicked"),
                    }
                }
                Err(_) => {
                    let _ = cmd.reject(RejectReason::Busy, "no async runtime to run the handler");
                }
            }
        }
        Ok(delivery)
    }
}

#[cfg(feature = "ws")]
impl crate::sink::ws::CommandHook for ControlTarget {
    fn accepts(&self) -> Vec<String> {
        self.inner.accepts.clone()
    }

    fn ack_window(&self) -> Option<Duration> {
        self.inner.ack_window
    }

    fn command(&self, command: Event) {
        if let Err(e) = self.handle(command) {
            tracing::warn!(error = %e, "inbound command refused");
        }
    }

    fn holds(&self, session: &str) -> bool {
        self.inner
            .lock()
            .sessions
            .get(session)
            .is_some_and(|s| s.strong_count() > 0)
    }
}

impl Inner {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `decision` and emits its ack; returns the ack as emitted and the session
    /// it went through.
    fn decide(&self, key: &CommandKey, decision: Decision) -> Result<Minted, ControlError> {
        let mut st = self.lock();
        st.core.decide(key, decision)?;
        let (_, mine) = drain(&mut st, Some(key));
        mine.unwrap_or_else(
            || Err(core::TargetError::NotAwaitingRecord(key.id().to_owned()).into()),
        )
    }
}

impl Timed for Inner {
    fn next_deadline(&self) -> Option<Instant> {
        let mut st = self.lock();
        let d = st.core.poll_timeout();
        st.arm.set(d);
        d
    }

    fn fire(&self, now: Instant) {
        let mut st = self.lock();
        st.core.handle_timeout(now);
        drain(&mut st, None);
    }
}

/// An ack as emitted, with the session emitter it went through.
pub(super) type Minted = (Arc<Event>, Arc<SessionEmitter>);

/// Carries out everything the core target asked for: acks are minted through the
/// session's emitter and recorded; recorded acks are re-sent as they were. Returns the
/// commands awaiting a decision and, when `mine` is given, how minting its ack went.
pub(super) fn drain(
    st: &mut State,
    mine: Option<&CommandKey>,
) -> (
    SmallVec<[core::IncomingCommand; 1]>,
    Option<Result<Minted, ControlError>>,
) {
    let mut decide = SmallVec::new();
    let mut minted = None;
    while let Some(out) = st.core.poll_output() {
        match out {
            TargetOutput::Decide(incoming) => decide.push(incoming),
            TargetOutput::EmitAck(ack) => {
                let key = ack.key();
                let session = ack.session().unwrap_or_default();
                let data = ack.data();
                let result = match st.sessions.get(session).and_then(Weak::upgrade) {
                    None => Err(ControlError::UnknownSession(session.to_owned())),
                    Some(s) => s
                        .emit_attrs(
                            ack.ack_type(),
                            emit::payload_of(&data),
                            Attrs {
                                cause: Some(ack.cause()),
                                ..Attrs::default()
                            },
                        )
                        .map(|event| (Arc::new(event), s))
                        .map_err(ControlError::from),
                };
                match &result {
                    // Shared, not copied: the record and the handler's `Accepted` hold
                    // the one ack.
                    Ok((event, _)) => {
                        if let Err(e) = st.core.record(key, Arc::clone(event)) {
                            tracing::warn!(error = %e, "ack not recorded");
                        }
                    }
                    // No ack left: forgotten, so a redelivery is decided again rather
                    // than waiting on a record that will never come.
                    Err(e) => {
                        tracing::warn!(error = %e, command = key.id(), "ack not emitted");
                        let _ = st.core.abandon(key);
                    }
                }
                if mine == Some(key) {
                    minted = Some(result);
                }
            }
            TargetOutput::Redeliver(ack) => {
                let session = ack.session().unwrap_or_default();
                match st.sessions.get(session).and_then(Weak::upgrade) {
                    Some(s) => {
                        if let Err(e) = s.redeliver(&ack) {
                            tracing::warn!(error = %e, "recorded ack not re-sent");
                        }
                    }
                    None => tracing::warn!(session, "recorded ack for a detached session"),
                }
            }
            other => tracing::warn!(output = ?other, "target output this driver does not know"),
        }
    }
    (decide, minted)
}

/// One new command awaiting its decision, handed to the target's handler.
///
/// Decide exactly once: [`accept`](Self::accept) (then carry the command out and report
/// the outcome through the returned [`Accepted`]), [`reject`](Self::reject) or
/// [`decide`](Self::decide). Dropping it undecided rejects it `refused`.
///
/// ```no_run
/// # fn f(cmd: aep_async::control::Command) {
/// use aep_async::control::RejectReason;
/// if cmd.event().subject().is_none() {
///     let _ = cmd.reject(RejectReason::Invalid, "respond needs the attention id as subject");
/// }
/// # }
/// ```
pub struct Command {
    event: Event,
    key: CommandKey,
    target: Weak<Inner>,
    decided: bool,
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("type", &self.event.event_type())
            .field("id", &self.event.id())
            .field("session", &self.event.session())
            .field("decided", &self.decided)
            .finish()
    }
}

impl Command {
    /// The command as received.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The command type, e.g. `control.cancel`.
    pub fn command_type(&self) -> &str {
        self.event.event_type()
    }

    /// Accepts: emits `control.accepted` now. The returned [`Accepted`] emits the
    /// outcome events, cause-linked to the command.
    pub fn accept(mut self) -> Result<Accepted, ControlError> {
        let (ack, session) = self.settle(Decision::Accept)?;
        Ok(Accepted {
            key: self.key.clone(),
            ack,
            session,
        })
    }

    /// Rejects with `reason` and a human-readable `detail` (AEP-0004 §3); emits
    /// `control.rejected` now.
    pub fn reject(
        mut self,
        reason: RejectReason,
        detail: impl Into<String>,
    ) -> Result<Event, ControlError> {
        self.settle(Decision::reject(reason, detail))
            .map(|(ack, _)| Arc::unwrap_or_clone(ack))
    }

    /// Records `decision`; returns the ack as emitted.
    pub fn decide(mut self, decision: Decision) -> Result<Event, ControlError> {
        self.settle(decision)
            .map(|(ack, _)| Arc::unwrap_or_clone(ack))
    }

    fn settle(&mut self, decision: Decision) -> Result<Minted, ControlError> {
        self.decided = true;
        let target = self.target.upgrade().ok_or(ControlError::Closed)?;
        target.decide(&self.key, decision)
    }
}

impl Drop for Command {
    fn drop(&mut self) {
        if !self.decided {
            let _ = self.settle(Decision::reject(
                RejectReason::Refused,
                "the handler returned without a decision",
            ));
        }
    }
}

/// An accepted command: its ack, and the session to report the outcome on.
///
/// ```no_run
/// # fn f(accepted: aep_async::control::Accepted) -> Result<(), aep_async::EmitError> {
/// accepted.emit("run.cancelled", serde_json::json!({"reason": "operator"}))?; // cause = the command id
/// # Ok(()) }
/// ```
pub struct Accepted {
    /// The command's key: its `id` is the `cause` of every outcome.
    key: CommandKey,
    ack: Arc<Event>,
    session: Arc<SessionEmitter>,
}

impl fmt::Debug for Accepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Accepted")
            .field("command_id", &self.key.id())
            .field("ack", &self.ack.id())
            .finish()
    }
}

impl Accepted {
    /// The `control.accepted` event as emitted.
    pub fn ack(&self) -> &Event {
        &self.ack
    }

    /// The session the command addressed.
    pub fn session(&self) -> &Arc<SessionEmitter> {
        &self.session
    }

    /// Emits an outcome event on the session with `cause` = the command's `id`
    /// (AEP-0004 §6).
    pub fn emit(
        &self,
        event_type: &str,
        data: impl Serialize,
    ) -> Result<Event, crate::error::EmitError> {
        self.emit_with(event_type, data, EmitOptions::new())
    }

    /// [`emit`](Self::emit) with optional attributes; `cause` is always the command's
    /// `id`.
    pub fn emit_with(
        &self,
        event_type: &str,
        data: impl Serialize,
        options: EmitOptions,
    ) -> Result<Event, crate::error::EmitError> {
        self.session
            .emit_with(event_type, data, options.cause(self.key.id()))
    }
}
