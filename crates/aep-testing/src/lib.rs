//! # aep-testing: test doubles for code that speaks AEP, no relay needed
//!
//! - [`MemorySink`]: a [`Sink`] that records what an [`Emitter`] produces.
//! - [`ScriptedSource`]: scripts a producer with real [`SessionEmitter`]s (fresh ULID
//!   ids, `session`/`epoch` stamped, `seq` contiguous from 0) and plays the recording
//!   into any consumer.
//! - [`ControlStub`]: both sides of the control plane (AEP-0004). Target side: a
//!   recording session emitter to answer commands with, and
//!   [`command`](ControlStub::command) minting well-formed commands (no `seq`). Client
//!   side: a fake transport that captures what a sender transmits ([`sent`](ControlStub::sent))
//!   and mints the replies ([`accept`](ControlStub::accept),
//!   [`reject`](ControlStub::reject), [`roster_reply`](ControlStub::roster_reply)).
//! - feature `relay`: `relay` re-exports the embeddable relay, and `start_relay` /
//!   `ThreadRelay` start one in a line, for async and sync integration tests (plain code
//!   spans, not links, so the docs build with and without the feature).
//!
//! Every envelope is built by the SDK's own emitters and command builder, so what a
//! test observes is what production code emits.
//!
//! ```
//! use aep_testing::{MemorySink, ScriptedSource};
//! use aep_async::Emitter;
//! use aep_core::projection::StateProjection;
//! use serde_json::json;
//!
//! let sink = MemorySink::new();
//! let emitter = Emitter::new("agent", "host", sink.clone());
//! emitter.session("s1").emit("session.started", json!({}))?;
//! assert_eq!(sink.events()[0].event_type(), "session.started");
//!
//! let script = ScriptedSource::new();
//! let s = script.session("s2");
//! s.emit("session.started", json!({}))?;
//! s.emit("session.ended", json!({"reason": "normal"}))?;
//! let mut projection = StateProjection::new();
//! script.play(|event| projection.apply(event));
//! assert!(projection.state().sessions()[0].ended().is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Layout
//!
//! One module: the three doubles, and the relay helpers behind feature `relay`.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use aep_async::{EmitError, EmitOptions, Emitter, SessionEmitter, Sink, SinkFuture};
use aep_core::control::{is_command_type, ControlSender, ACCEPTED, REJECTED};
use aep_core::frame::{RosterEntry, RosterReply};
use aep_core::Event;
use serde_json::{json, Value};

#[cfg(feature = "relay")]
#[cfg_attr(docsrs, doc(cfg(feature = "relay")))]
pub use aep_relay as relay;

#[cfg(feature = "relay")]
mod relays;
#[cfg(feature = "relay")]
#[cfg_attr(docsrs, doc(cfg(feature = "relay")))]
pub use relays::{start_relay, ThreadRelay};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A [`Sink`] that records every event it is given, in order.
///
/// Clones share one record: hand a clone to the emitter and keep one to read.
///
/// ```
/// use aep_testing::MemorySink;
/// let sink = MemorySink::new();
/// let emitter = aep_async::Emitter::new("a", "h", sink.clone());
/// emitter.emit("agent.heartbeat", None::<()>)?;
/// assert_eq!(sink.len(), 1);
/// sink.clear();
/// assert!(sink.events().is_empty());
/// # Ok::<(), aep_async::EmitError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemorySink {
    events: Arc<Mutex<Vec<Event>>>,
    source: Option<Arc<str>>,
}

impl MemorySink {
    /// An empty record.
    pub fn new() -> MemorySink {
        MemorySink::default()
    }

    /// A record that rewrites each event's `source` to `source` as it is recorded, to
    /// pin corpus-style identities.
    fn with_source(source: Option<String>) -> MemorySink {
        MemorySink {
            events: Arc::default(),
            source: source.map(Arc::from),
        }
    }

    /// The recorded events, in the order they were emitted.
    pub fn events(&self) -> Vec<Event> {
        lock(&self.events).clone()
    }

    /// How many events are recorded.
    pub fn len(&self) -> usize {
        lock(&self.events).len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        lock(&self.events).is_empty()
    }

    /// Empties the record (clones see it empty too).
    pub fn clear(&self) {
        lock(&self.events).clear();
    }
}

impl Sink for MemorySink {
    fn accept(&self, event: &Event) -> Result<(), EmitError> {
        let mut event = event.clone();
        if let Some(source) = &self.source {
            event.set_source(source.as_ref());
        }
        lock(&self.events).push(event);
        Ok(())
    }
    fn flush(&self) -> SinkFuture<'_> {
        Box::pin(async {})
    }
    fn close(&self) -> SinkFuture<'_> {
        Box::pin(async {})
    }
}

/// Scripts one producer: real [`SessionEmitter`]s over one shared [`MemorySink`].
///
/// Every scripted event is a well-formed envelope (fresh ULID `id`, `source`
/// `aep://{host}/agent/{agent}/session/{session}`, `session` and `epoch` stamped, `seq`
/// contiguous from 0 per session emitter). [`ScriptedSource::play`] feeds the recording
/// to any consumer.
///
/// ```
/// use aep_testing::ScriptedSource;
/// let script = ScriptedSource::new();
/// let s = script.session_at("s", 2);
/// let first = s.emit("session.started", serde_json::json!({}))?;
/// assert_eq!((first.epoch(), first.seq()), (2, Some(0)));
/// assert_eq!(script.events(), vec![first]);
/// # Ok::<(), aep_async::EmitError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ScriptedSource {
    agent: String,
    host: String,
    sink: MemorySink,
}

impl Default for ScriptedSource {
    fn default() -> Self {
        ScriptedSource::new()
    }
}

impl ScriptedSource {
    /// A source with agent `scripted` on host `scripted-host`.
    pub fn new() -> ScriptedSource {
        ScriptedSource::builder().build()
    }

    /// Choose agent, host and a pinned `source`.
    ///
    /// ```
    /// let script = aep_testing::ScriptedSource::builder().agent("coder").source("aep://corpus/adapter-a").build();
    /// script.session("s").emit("session.started", serde_json::json!({}))?;
    /// assert_eq!(script.events()[0].source(), "aep://corpus/adapter-a");
    /// # Ok::<(), aep_async::EmitError>(())
    /// ```
    pub fn builder() -> ScriptedSourceBuilder {
        ScriptedSourceBuilder {
            agent: "scripted".into(),
            host: "scripted-host".into(),
            source: None,
        }
    }

    /// A session emitter for `session` at epoch 0.
    pub fn session(&self, session: impl Into<String>) -> SessionEmitter {
        self.session_at(session, 0)
    }

    /// A session emitter for `session` at `epoch` (epoch is emitter-wide, AEP-0001 §7.2,
    /// so each call builds its own emitter over the shared record).
    pub fn session_at(&self, session: impl Into<String>, epoch: u64) -> SessionEmitter {
        Emitter::builder(self.agent.as_str(), self.host.as_str())
            .epoch(epoch)
            .build(self.sink.clone())
            .session(session)
    }

    /// An emitter for agent-scoped events (`agent.*`) over the same record.
    pub fn emitter(&self) -> Emitter {
        Emitter::new(self.agent.as_str(), self.host.as_str(), self.sink.clone())
    }

    /// Everything emitted so far, across sessions, in emit order.
    pub fn events(&self) -> Vec<Event> {
        self.sink.events()
    }

    /// Hands each recorded event to `consumer`, in emit order.
    pub fn play(&self, mut consumer: impl FnMut(&Event)) {
        for event in self.sink.events() {
            consumer(&event);
        }
    }
}

/// Configuration of a [`ScriptedSource`] (or a [`ControlStub`]).
///
/// ```
/// let script = aep_testing::ScriptedSource::builder().agent("a").host("h").build();
/// # let _ = script;
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build`"]
pub struct ScriptedSourceBuilder {
    agent: String,
    host: String,
    source: Option<String>,
}

impl ScriptedSourceBuilder {
    aep_core::setters! {
        /// The `agent` of every event.
        pub fn agent(agent: impl Into<String>) => agent = agent.into();

        /// The host segment of the emitter-built `source`.
        pub fn host(host: impl Into<String>) => host = host.into();

        /// Overrides `source` on every recorded event (the events the emit calls return
        /// keep the emitter-built one).
        pub fn source(source: impl Into<String>) => source = Some(source.into());
    }
    /// The scripted source.
    pub fn build(self) -> ScriptedSource {
        ScriptedSource {
            agent: self.agent,
            host: self.host,
            sink: MemorySink::with_source(self.source),
        }
    }
}

/// Why [`ControlStub::command`] refused to mint a command.
///
/// ```
/// let e = aep_testing::ControlStub::new().command("run.started", "s").unwrap_err();
/// assert!(e.to_string().contains("not a command type"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotACommand(String);

impl fmt::Display for NotACommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a command type: commands are `control.{{verb}}` or \
             `x.{{vendor}}.control.{{verb}}` (AEP-0004 §2)",
            self.0
        )
    }
}

impl std::error::Error for NotACommand {}

/// Both sides of the control plane (AEP-0004), no relay required.
///
/// **Target side:** [`ControlStub::emitter`] is a real session emitter over a record;
/// hand it to the code that answers commands (a `ControlTarget` driver), and read every
/// ack it emitted, re-acks included, from [`ControlStub::acks`].
/// [`ControlStub::command`] mints commands to drive the target with.
///
/// **Client side:** the stub is the sender's transport. Capture what a sender transmits
/// with [`ControlStub::send`] (or [`ControlStub::transmit`] to drain a sans-IO
/// [`ControlSender`]), then feed back [`ControlStub::accept`] /
/// [`ControlStub::reject`] acks or a [`ControlStub::roster_reply`].
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::ControlSender;
/// use aep_testing::ControlStub;
///
/// let stub = ControlStub::new();
/// let mut sender = ControlSender::new("console", "ops-host");
/// let cmd = stub.command("control.pause", "s1")?;
/// sender.send(Instant::now(), cmd)?;
/// stub.transmit(&mut sender);
/// let ack = stub.accept(&stub.sent()[0])?;
/// assert!(sender.handle_event(&ack));
/// assert!(sender.poll_settled().unwrap().result.is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ControlStub {
    emitter: Emitter,
    record: MemorySink,
    target: Arc<SessionEmitter>,
    sessions: Mutex<HashMap<String, Arc<SessionEmitter>>>,
    sent: Arc<Mutex<Vec<Event>>>,
    builder: ControlSender,
}

impl Default for ControlStub {
    fn default() -> Self {
        ControlStub::new()
    }
}

impl ControlStub {
    /// A stub with agent `control-stub` on host `stub-host`, target session
    /// `stub-target`.
    pub fn new() -> ControlStub {
        ControlStub::with_identity("control-stub", "stub-host", "stub-target")
    }

    /// A stub with the given identity: commands and acks carry `agent` and
    /// `aep://{host}/...` sources; [`ControlStub::emitter`] emits on `session`.
    pub fn with_identity(agent: &str, host: &str, session: &str) -> ControlStub {
        let record = MemorySink::new();
        let emitter = Emitter::new(agent, host, record.clone());
        ControlStub {
            target: Arc::new(emitter.session(session)),
            emitter,
            record,
            sessions: Mutex::default(),
            sent: Arc::default(),
            builder: ControlSender::new(agent, host),
        }
    }

    /// The target-side session emitter, shared: attach it to an
    /// [`aep_async::ControlTarget`] (or emit acks with it from your own driver).
    ///
    /// ```
    /// let stub = aep_testing::ControlStub::new();
    /// let target = aep_async::ControlTarget::new(["control.pause"], |cmd| async move { let _ = cmd.accept(); });
    /// target.attach(stub.emitter());
    /// ```
    pub fn emitter(&self) -> Arc<SessionEmitter> {
        self.target.clone()
    }

    /// Every event the stub's emitters produced (acks, nacks, byte-identical re-acks),
    /// in emit order.
    pub fn acks(&self) -> Vec<Event> {
        self.record.events()
    }

    /// A well-formed command addressed to `session`: fresh ULID `id`, the stub's
    /// `source` and `agent`, `time`, and no `seq` (AEP-0004 §2.2).
    pub fn command(&self, command_type: &str, session: &str) -> Result<Event, NotACommand> {
        self.command_with(command_type, session, |b| b)
    }

    /// [`ControlStub::command`] with `run`, `subject`, `data` set through the builder.
    ///
    /// ```
    /// let stub = aep_testing::ControlStub::new();
    /// let cmd = stub.command_with("control.cancel", "s1", |b| b.run("r1").data(serde_json::json!({"scope": "run"})))?;
    /// assert_eq!(cmd.run(), Some("r1"));
    /// # Ok::<(), aep_testing::NotACommand>(())
    /// ```
    pub fn command_with(
        &self,
        command_type: &str,
        session: &str,
        f: impl FnOnce(aep_core::control::CommandBuilder) -> aep_core::control::CommandBuilder,
    ) -> Result<Event, NotACommand> {
        if !is_command_type(command_type) {
            return Err(NotACommand(command_type.to_owned()));
        }
        Ok(f(self.builder.command(command_type, session)).build_at(SystemTime::now()))
    }

    /// Client side: captures one outbound command (the transport's `send`).
    pub fn send(&self, command: Event) {
        lock(&self.sent).push(command);
    }

    /// Client side: a transport for [`aep_async::ControlSender::new`] that captures
    /// every transmission (first sends and retries) into [`ControlStub::sent`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use aep_async::control::{ControlSender, SendOptions};
    /// let stub = std::sync::Arc::new(aep_testing::ControlStub::new());
    /// let sender = ControlSender::new("console", "ops-host", stub.transport());
    /// let pending = tokio::spawn({
    ///     let sender = sender.clone();
    ///     async move { sender.send("control.pause", "s1", SendOptions::new()).await }
    /// });
    /// while stub.sent().is_empty() { tokio::task::yield_now().await; }
    /// sender.handle_event(&stub.accept(&stub.sent()[0])?);
    /// assert_eq!(pending.await??.event_type(), "control.accepted");
    /// # Ok(()) }
    /// ```
    pub fn transport(&self) -> impl Fn(&Event) + Send + Sync + 'static + use<> {
        let sent = self.sent.clone();
        move |command: &Event| lock(&sent).push(command.clone())
    }

    /// Client side: drains everything a sans-IO [`ControlSender`] wants to transmit into
    /// [`ControlStub::sent`]; returns how many.
    pub fn transmit(&self, sender: &mut ControlSender) -> usize {
        let mut n = 0;
        while let Some(command) = sender.poll_transmit() {
            self.send(Arc::unwrap_or_clone(command));
            n += 1;
        }
        n
    }

    /// Client side: the commands captured so far, retransmissions included.
    pub fn sent(&self) -> Vec<Event> {
        lock(&self.sent).clone()
    }

    /// The `control.accepted` ack for `command` (`cause` = its id), emitted on the
    /// command's target session (AEP-0004 §3); feed it to the sender.
    pub fn accept(&self, command: &Event) -> Result<Event, EmitError> {
        self.ack(command, ACCEPTED, json!({}))
    }

    /// The `control.rejected` nack for `command` with `reason` (AEP-0004 §3: `busy`,
    /// `invalid`, `unsupported`, ...).
    pub fn reject(&self, command: &Event, reason: &str) -> Result<Event, EmitError> {
        self.ack(command, REJECTED, json!({"reason": reason}))
    }

    /// [`ControlStub::reject`] with a `detail`.
    pub fn reject_with_detail(
        &self,
        command: &Event,
        reason: &str,
        detail: &str,
    ) -> Result<Event, EmitError> {
        self.ack(
            command,
            REJECTED,
            json!({"reason": reason, "detail": detail}),
        )
    }

    fn ack(&self, command: &Event, ty: &str, data: Value) -> Result<Event, EmitError> {
        let session = command.session().unwrap_or(self.target.session());
        let emitter = self.session_emitter(session);
        emitter.emit_with(ty, data, EmitOptions::new().cause(command.id()))
    }

    fn session_emitter(&self, session: &str) -> Arc<SessionEmitter> {
        let mut sessions = lock(&self.sessions);
        sessions
            .entry(session.to_owned())
            .or_insert_with(|| Arc::new(self.emitter.session(session)))
            .clone()
    }

    /// Client side: the `roster` reply to request `request_id` (AEP-0003 §4.1), one live
    /// claim per session, each declaring `accepts`.
    ///
    /// ```
    /// let stub = aep_testing::ControlStub::new();
    /// let reply = stub.roster_reply("r-1", &["s1"], &["control.pause"]);
    /// assert_eq!(reply.entries[0].session, "s1");
    /// ```
    pub fn roster_reply(
        &self,
        request_id: &str,
        sessions: &[&str],
        accepts: &[&str],
    ) -> RosterReply {
        let entries = sessions
            .iter()
            .map(|s| {
                let mut entry = RosterEntry::new(*s);
                entry.agent = Some(self.emitter.agent().to_owned());
                entry.control = Some(aep_core::frame::ControlCapability::accepting(
                    accepts.iter().map(|a| (*a).to_owned()),
                ));
                entry
            })
            .collect();
        RosterReply::new(request_id, entries)
    }
}
