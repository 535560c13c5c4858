//! [`ControlSender`]: the core sender state machine behind a mutex, with a timer task
//! and one waiter per command, over any transport.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use aep_core::control::{self as core, SendPolicy};
use aep_core::frame::{ErrorFrame, Frame};
use aep_core::{Capture, Event};
use serde_json::Value;
use tokio::sync::{oneshot, Notify};

use super::error::ControlError;
use super::timer::{self, Arm, Timed};
use aep_core::control::Nack;
use smallvec::SmallVec;

/// The optional parts of one command and its timing.
///
/// ```
/// use std::time::Duration;
/// use aep_async::control::SendOptions;
/// let opts = SendOptions::new()
///     .run("r1")
///     .data(serde_json::json!({"scope": "run"}))
///     .ack_window(Duration::from_secs(2))
///     .retries(1);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct SendOptions {
    run: Option<String>,
    subject: Option<String>,
    cause: Option<String>,
    data: Option<Value>,
    capture: Option<Capture>,
    ack_window: Option<Duration>,
    retries: Option<u32>,
}

impl SendOptions {
    /// No optional attributes; the default window (10 s) and retries (2).
    pub fn new() -> Self {
        Self::default()
    }
    aep_core::setters! {
        /// Narrows the command to a run.
        pub fn run(run: impl Into<String>) => run = Some(run.into());
        /// `subject`: for `control.attention.respond`, the `attention.requested` id
        /// (AEP-0004 §6).
        pub fn subject(subject: impl Into<String>) => subject = Some(subject.into());
        /// `cause`: the event that prompted the command.
        pub fn cause(cause: impl Into<String>) => cause = Some(cause.into());
        /// The payload.
        pub fn data(data: Value) => data = Some(data);
        /// `capture` (default `metadata`).
        pub fn capture(capture: Capture) => capture = Some(capture);
        /// How long each transmission waits for its ack (default 10 s, AEP-0004 §3).
        pub fn ack_window(window: Duration) => ack_window = Some(window);
        /// Resends of the identical envelope after the first transmission (default 2).
        pub fn retries(retries: u32) => retries = Some(retries);
    }

    pub(crate) fn policy(&self) -> SendPolicy {
        let d = SendPolicy::default();
        SendPolicy::new(
            self.ack_window.unwrap_or(d.ack_window),
            self.retries.unwrap_or(d.retries),
        )
    }
}

type Reply = oneshot::Sender<Result<Event, Nack>>;
/// Where a command's settlement arrives.
pub(crate) type Settlement = oneshot::Receiver<Result<Event, Nack>>;

/// Waits for a started command's settlement.
pub(crate) async fn settlement(rx: Settlement) -> Result<Event, ControlError> {
    match rx.await {
        Ok(result) => result.map_err(ControlError::Nack),
        // The sender was dropped with the command pending.
        Err(_) => Err(ControlError::Closed),
    }
}

struct State {
    core: core::ControlSender,
    /// Keyed by command id; foldhash, as the core's own pending set.
    waiters: HashMap<String, Reply, foldhash::fast::RandomState>,
    arm: Arm,
    closed: bool,
}

pub(crate) struct Inner {
    state: Mutex<State>,
    /// The sender's identity, outside the lock: building a command reads only this, so
    /// tasks build their envelopes in parallel.
    identity: core::ControlSender,
    transmit: Box<dyn Fn(&Event) + Send + Sync>,
    wake: Arc<Notify>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The timer task holds only a weak reference; wake it so it sees we are gone.
        self.wake.notify_one();
    }
}

/// The sending side of control over a transport you own (AEP-0004 §2, §3).
///
/// Give it a function that writes one command envelope to your duplex; feed it every
/// inbound event ([`handle_event`](Self::handle_event)) and frame
/// ([`handle_frame`](Self::handle_frame)). [`send`](Self::send) then resolves to the
/// `control.accepted` event or a [`Nack`]. Correlation, the identical-envelope
/// retries and the synthesized `timeout` are [`aep_core::control::ControlSender`]'s;
/// this type adds the clock (one timer task) and a waiter per command, so any number
/// of tasks may send at once. Cheap to clone.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use aep_async::control::{ControlSender, SendOptions};
/// use aep_core::Event;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let wire: Arc<Mutex<Vec<Event>>> = Arc::default();
/// let out = wire.clone();
/// let sender = ControlSender::new("console", "ops-host", move |cmd: &Event| out.lock().unwrap().push(cmd.clone()));
///
/// let pending = tokio::spawn({
///     let sender = sender.clone();
///     async move { sender.send("control.pause", "s1", SendOptions::new()).await }
/// });
/// while wire.lock().unwrap().is_empty() { tokio::task::yield_now().await; }
/// // The target's ack arrives on your transport; feed it in.
/// let cmd = wire.lock().unwrap()[0].clone();
/// let ack = Event::new("01JACK", "control.accepted", "2026-07-03T10:00:00.000Z", "aep://h/agent/a/session/s1", "a")
///     .with_session("s1").with_seq(3).with_cause(cmd.id());
/// assert!(sender.handle_event(&ack));
/// assert_eq!(pending.await??.id(), "01JACK");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ControlSender {
    inner: Arc<Inner>,
}

impl fmt::Debug for ControlSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.lock();
        f.debug_struct("ControlSender")
            .field("source", &st.core.source())
            .field("pending", &st.core.pending_len())
            .field("closed", &st.closed)
            .finish()
    }
}

impl ControlSender {
    /// A sender speaking as `agent` on `host` (commands carry the source
    /// `aep://{host}/agent/{agent}`), writing each transmission with `transmit`.
    ///
    /// `transmit` is called outside any lock, once per transmission (first sends and
    /// retries alike); it must not block.
    pub fn new(
        agent: impl Into<String>,
        host: impl AsRef<str>,
        transmit: impl Fn(&Event) + Send + Sync + 'static,
    ) -> ControlSender {
        ControlSender::from_core(core::ControlSender::new(agent, host), transmit)
    }

    /// A sender around an existing core state machine (its source and default policy).
    pub fn from_core(
        core: core::ControlSender,
        transmit: impl Fn(&Event) + Send + Sync + 'static,
    ) -> ControlSender {
        let identity = core::ControlSender::with_source(core.agent(), core.source());
        ControlSender {
            inner: Arc::new(Inner {
                identity,
                state: Mutex::new(State {
                    core,
                    waiters: HashMap::default(),
                    arm: Arm::default(),
                    closed: false,
                }),
                transmit: Box::new(transmit),
                wake: Arc::new(Notify::new()),
            }),
        }
    }

    /// The `source` every command carries.
    pub fn source(&self) -> String {
        self.inner.identity.source().to_owned()
    }

    /// Builds a command of `command_type` addressed to `session`: a fresh ULID `id`,
    /// the current `time`, no `seq` (AEP-0004 §2).
    pub fn command(&self, command_type: &str, session: &str, options: &SendOptions) -> Event {
        let mut b = self.inner.identity.command(command_type, session);
        if let Some(r) = &options.run {
            b = b.run(r);
        }
        if let Some(s) = &options.subject {
            b = b.subject(s);
        }
        if let Some(c) = &options.cause {
            b = b.cause(c);
        }
        if let Some(d) = &options.data {
            b = b.data(d.clone());
        }
        if let Some(c) = options.capture {
            b = b.capture(c);
        }
        b.build_at(std::time::SystemTime::now())
    }

    /// Sends a command and waits for its settlement: the `control.accepted` event, or
    /// a [`ControlError::Nack`] (rejected, refused by the relay, or the synthesized
    /// `timeout` after the last window).
    pub async fn send(
        &self,
        command_type: &str,
        session: &str,
        options: SendOptions,
    ) -> Result<Event, ControlError> {
        let command = self.command(command_type, session, &options);
        let rx = self.start(command, options.policy())?;
        settlement(rx).await
    }

    /// Sends a command envelope you built (its `id` is the idempotency key; retries
    /// resend it unchanged). Only the timing of `options` is used.
    pub async fn send_command(
        &self,
        command: Event,
        options: SendOptions,
    ) -> Result<Event, ControlError> {
        let rx = self.start(command, options.policy())?;
        settlement(rx).await
    }

    /// Registers and transmits the command; returns where its settlement will arrive.
    /// Synchronous, so that a send's future holds only the receiver while it waits
    /// (a task per command in flight is then small to spawn and to move).
    pub(crate) fn start(
        &self,
        command: Event,
        policy: SendPolicy,
    ) -> Result<Settlement, ControlError> {
        let (tx, rx) = oneshot::channel();
        let now = timer::now();
        let (out, start_timer, wake) = {
            let mut st = self.inner.lock();
            if st.closed {
                return Err(ControlError::Closed);
            }
            let id = command.id().to_owned();
            st.core.send_with(now, command, policy)?;
            st.waiters.insert(id, tx);
            let wake = st.arm.earlier(Some(now + policy.ack_window));
            let start_timer = st.arm.start();
            (drain(&mut st), start_timer, wake)
        };
        if start_timer {
            timer::spawn(Arc::downgrade(&self.inner), self.inner.wake.clone());
        }
        if wake {
            self.inner.wake.notify_one();
        }
        self.inner.deliver(out);
        Ok(rx)
    }

    /// Feeds one inbound event. Returns whether it settled a pending command (an ack
    /// whose `cause` is a pending command's `id`, AEP-0004 §6). An accepted command
    /// settles with the ack itself: pass the event by value and it is kept without a
    /// copy, by reference and it is copied then.
    pub fn handle_event<'e>(&self, event: impl Into<Cow<'e, Event>>) -> bool {
        self.feed(|core| core.handle_event(event))
    }

    /// Feeds one inbound frame. Returns whether it settled a pending command (an
    /// `error` frame whose `cause` is a pending command's `id`, AEP-0004 §4.2).
    pub fn handle_frame(&self, frame: &Frame) -> bool {
        match frame {
            Frame::Error(e) => self.handle_error_frame(e),
            _ => false,
        }
    }

    /// Feeds one inbound `error` frame; see [`handle_frame`](Self::handle_frame).
    pub fn handle_error_frame(&self, frame: &ErrorFrame) -> bool {
        self.feed(|core| core.handle_error_frame(frame))
    }

    /// Feeds one input to the core; settles what it settled.
    fn feed(&self, input: impl FnOnce(&mut core::ControlSender) -> bool) -> bool {
        let out = {
            let mut st = self.inner.lock();
            if !input(&mut st.core) {
                return false;
            }
            drain(&mut st)
        };
        self.inner.deliver(out);
        true
    }

    /// How many commands await their ack.
    pub fn pending(&self) -> usize {
        self.inner.lock().core.pending_len()
    }

    /// Settles every pending command as a synthesized `timeout` carrying `detail` and
    /// refuses further sends with [`ControlError::Closed`]. Idempotent.
    pub fn close(&self, detail: &str) {
        let out = {
            let mut st = self.inner.lock();
            if st.closed {
                return;
            }
            st.closed = true;
            st.core.handle_close(detail);
            drain(&mut st)
        };
        self.inner.wake.notify_one();
        self.inner.deliver(out);
    }

    /// Transmits every pending command again, unchanged (same `id`, same `source`):
    /// after a reconnect, so a command or ack lost with the old connection is recovered
    /// without waiting for the window (the target's dedupe answers with the recorded
    /// ack, AEP-0004 §3). The retry budget is not touched.
    pub fn retransmit_pending(&self) {
        let commands: Vec<Event> = {
            let st = self.inner.lock();
            st.core.pending_commands().into_iter().cloned().collect()
        };
        for c in &commands {
            (self.inner.transmit)(c);
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes transmissions and resolves waiters, outside the lock.
    fn deliver(&self, out: Output) {
        for c in out.transmit {
            (self.transmit)(&c);
        }
        for (reply, result) in out.settled {
            // The caller may have given up waiting; the settlement is then moot.
            let _ = reply.send(result);
        }
    }
}

impl Timed for Inner {
    fn next_deadline(&self) -> Option<Instant> {
        let mut st = self.lock();
        if st.closed {
            return None;
        }
        let d = st.core.poll_timeout();
        st.arm.set(d);
        d
    }

    fn fire(&self, now: Instant) {
        let out = {
            let mut st = self.lock();
            st.core.handle_timeout(now);
            drain(&mut st)
        };
        self.deliver(out);
    }
}

/// What one step of the state machine produced, held outside the lock until delivered:
/// almost always one command or one settlement, kept inline, so a command or an ack
/// costs no allocation here.
#[derive(Default)]
struct Output {
    transmit: SmallVec<[Arc<Event>; 1]>,
    settled: SmallVec<[(Reply, Result<Event, Nack>); 1]>,
}

/// Takes everything the core state machine produced.
fn drain(st: &mut State) -> Output {
    let mut out = Output::default();
    while let Some(c) = st.core.poll_transmit() {
        out.transmit.push(c);
    }
    while let Some(s) = st.core.poll_settled() {
        if let Some(reply) = st.waiters.remove(&s.command_id) {
            out.settled.push((reply, s.result));
        }
    }
    out
}
