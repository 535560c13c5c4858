//! [`ControlTarget`]: the receiving side, the core target state machine driven by the
//! commands a transport hands in, an async handler, and the sessions' emitters.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use aep_core::attention::{Answer, AttentionRequest};
use aep_core::control::{
    self as core, CommandDelivery, CommandKey, Decision, RejectReason, TargetConfig,
};
use aep_core::steering::Steering;
use aep_core::Event;
use serde::Serialize;
use tokio::sync::Notify;

use super::acks::{Acks, Minted};
use super::attention::{self, AskError, Asks};
use super::error::ControlError;
use super::steering::{self, Instructions, InstructionsError, Slots};
use super::timer::{self, Arm, Timed};
use crate::emit::{EmitOptions, SessionEmitter};

type HandlerFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
type Handler = Arc<dyn Fn(Command) -> HandlerFuture + Send + Sync>;

/// Everything the target keeps, under its one lock: the acks, the attention loop's
/// requests and the steered sessions' queues are decided together.
struct State {
    /// Core's target and the attached sessions' emitters.
    acks: Acks,
    arm: Arm,
    /// The attention requests `ask` waits on, and their waiters (`attention`).
    asks: Asks,
    /// Each steered session's instruction queue and its reader (`steering`).
    steer: Slots,
}

pub(super) struct Inner {
    state: Mutex<State>,
    handler: Handler,
    accepts: Vec<String>,
    steering: Option<Steering>,
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
                    acks: Acks::new(core::ControlTarget::with_config(self.config)),
                    arm: Arm::default(),
                    asks: Asks::default(),
                    steer: Slots::new(),
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
    inner: Arc<Inner>,
}

impl fmt::Debug for ControlTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.lock();
        f.debug_struct("ControlTarget")
            .field("accepts", &self.inner.accepts)
            .field("ack_window", &self.inner.ack_window)
            .field("sessions", &st.acks.sessions.keys().collect::<Vec<_>>())
            .field("remembered", &st.acks.core.remembered())
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
        steering::on_attach(&mut st.steer, self.inner.steering.as_ref(), &name);
        st.acks.sessions.insert(name, Arc::downgrade(&session));
        session
    }

    /// Stops acking for `session` (commands addressed to it are then dropped and
    /// logged: there is no emitter to ack through). With steering, the session's queued
    /// instructions are dropped, each audited, and its instruction stream ends.
    pub fn detach(&self, session: &str) {
        let mut guard = self.inner.lock();
        let st = &mut *guard;
        steering::on_detach(&mut st.steer, &st.acks, session);
        st.acks.sessions.remove(session);
    }

    /// Feeds one delivery of a command. New commands of an accepted type go to the
    /// handler, polled here first and continued in a task of its own if it awaits (so
    /// this needs a tokio runtime); undeclared types are nacked `unsupported` and
    /// redeliveries re-acked, before this returns.
    pub fn handle(&self, command: Event) -> Result<CommandDelivery, ControlError> {
        let now = timer::now();
        let (delivery, decide, start_timer, wake) = {
            let mut st = self.inner.lock();
            let delivery = st.acks.core.handle_command(now, command)?;
            let (decide, _) = st.acks.drain(None);
            let deadline = st.acks.core.poll_timeout();
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
            let routed = {
                let mut guard = self.inner.lock();
                let st = &mut *guard;
                match attention::route(&mut st.asks, &mut st.acks, incoming) {
                    Some(i) => {
                        steering::route(&mut st.steer, self.inner.steering(), &mut st.acks, i)
                    }
                    None => None,
                }
            };
            let Some(incoming) = routed else {
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

// The attention loop and steering on the target: each is its own module's, driven here
// under the target's one lock.
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
        attention::check(&self.inner.accepts, &request)?;
        self.attach(Arc::clone(session));
        attention::ask(Arc::clone(&self.inner), session, request).await
    }

    /// The instructions consumers send `session` (`x.{vendor}.control.instruct`, the
    /// target's [`steering`](ControlTargetBuilder::steering)), as a stream;
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
        let Some(steering) = self.inner.steering() else {
            return Err(InstructionsError::NotConfigured);
        };
        let name = session.session().to_owned();
        self.attach(Arc::clone(session));
        steering::open(&mut self.inner.lock().steer, steering, &name)?;
        let steered: Arc<dyn steering::Steered> = self.inner.clone();
        Ok(Instructions::new(steered, Arc::clone(session), name))
    }

    /// The steering this target follows, if any.
    pub fn steering(&self) -> Option<&Steering> {
        self.inner.steering()
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
            .acks
            .sessions
            .get(session)
            .is_some_and(|s| s.strong_count() > 0)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn steering(&self) -> Option<&Steering> {
        self.steering.as_ref()
    }

    /// Records `decision` and emits its ack; returns the ack as emitted and the session
    /// it went through.
    fn decide(&self, key: &CommandKey, decision: Decision) -> Result<Minted, ControlError> {
        let mut st = self.lock();
        st.acks.core.decide(key, decision)?;
        let (_, mine) = st.acks.drain(Some(key));
        mine.unwrap_or_else(
            || Err(core::TargetError::NotAwaitingRecord(key.id().to_owned()).into()),
        )
    }
}

/// The attention loop's view of the target: its requests, under the one lock.
impl attention::Desk for Inner {
    fn with_asks<R>(&self, f: impl FnOnce(&mut Asks) -> R) -> R {
        f(&mut self.lock().asks)
    }
}

/// Steering's view of the target: the steered sessions' queues, under the one lock.
impl steering::Steered for Inner {
    fn with_slots(&self, f: &mut dyn FnMut(&mut Slots)) {
        f(&mut self.lock().steer)
    }
}

impl Timed for Inner {
    fn next_deadline(&self) -> Option<Instant> {
        let mut st = self.lock();
        let d = st.acks.core.poll_timeout();
        st.arm.set(d);
        d
    }

    fn fire(&self, now: Instant) {
        let mut st = self.lock();
        st.acks.core.handle_timeout(now);
        st.acks.drain(None);
    }
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
