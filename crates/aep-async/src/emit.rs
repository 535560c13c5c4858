//! Building envelopes for one producer: [`Emitter`] (agent-scoped events) and
//! [`SessionEmitter`] (one per session, owning `(epoch, seq)`, AEP-0001 §7).

use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, Mutex};

use aep_core::capture::{downlevel_in_place, downlevel_redacting};
use aep_core::envelope::{set_extensions, EnvelopeFactory};
use aep_core::redact::Redactor;
use aep_core::types::EmitScope;
use aep_core::{Capture, Event, EventType, Severity};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::EmitError;
use crate::sink::{DeliveryStats, Sink};

mod epoch;

pub use epoch::{EpochError, EpochStore, STATE_DIR_VAR};

/// Where sessions take their epoch from (AEP-0001 §7.2).
#[derive(Debug, Clone)]
enum Epochs {
    /// One epoch for every session: the caller owns its increase.
    Fixed(u64),
    /// Each session's own, from the store, when it is created.
    Store(Arc<EpochStore>),
}

/// Optional envelope attributes for one emitted event.
///
/// ```
/// use aep_async::EmitOptions;
/// use aep_core::Severity;
///
/// let opts = EmitOptions::new().run("r1").severity(Severity::Notice).extension("acmeregion", "eu");
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct EmitOptions {
    subject: Option<String>,
    run: Option<String>,
    step: Option<String>,
    cause: Option<String>,
    traceparent: Option<String>,
    severity: Option<Severity>,
    capture: Option<Capture>,
    extensions: Vec<(String, Value)>,
}

impl EmitOptions {
    /// No optional attributes.
    pub fn new() -> Self {
        Self::default()
    }
    aep_core::setters! {
        /// The `subject` attribute.
        pub fn subject(v: impl Into<String>) => subject = Some(v.into());
        /// The `run` attribute (session-scoped events only).
        pub fn run(v: impl Into<String>) => run = Some(v.into());
        /// The `step` attribute (session-scoped events only).
        pub fn step(v: impl Into<String>) => step = Some(v.into());
        /// The `cause` attribute: the id of the event this one answers.
        pub fn cause(v: impl Into<String>) => cause = Some(v.into());
        /// The `traceparent` attribute (W3C trace context).
        pub fn traceparent(v: impl Into<String>) => traceparent = Some(v.into());
        /// The `severity` attribute (default `info` when absent).
        pub fn severity(v: Severity) => severity = Some(v);
        /// The `capture` level this event asks for; the emitter's ceiling still applies.
        pub fn capture(v: Capture) => capture = Some(v);
    }
    /// An extension attribute (AEP-0001 §5.4), checked when the event is built.
    pub fn extension(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extensions.push((name.into(), value.into()));
        self
    }
}

/// The optional attributes of one event, borrowed: [`EmitOptions`] without a `String`
/// made for any of them, for a producer on a hot path that holds them already (a
/// `tracing` layer, a control target's ack). [`SessionEmitter::emit_with_attrs`] and
/// [`Emitter::emit_with_attrs`] take it.
///
/// ```
/// use aep_async::{EmitAttrs, Emitter};
/// use aep_core::Severity;
///
/// # let path = std::env::temp_dir().join(format!("aep-attrs-doc-{}.jsonl", std::process::id()));
/// let session = Emitter::new("a", "h", aep_async::JsonlSink::open(&path)?).session("s");
/// let run = String::from("r1");
/// let e = session.emit_with_attrs(
///     "run.started",
///     serde_json::json!({"trigger": "user"}),
///     EmitAttrs::new().run(&run).severity(Severity::Notice),
/// )?;
/// assert_eq!((e.run(), e.severity()), (Some("r1"), Severity::Notice));
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[must_use]
pub struct EmitAttrs<'a> {
    pub(crate) subject: Option<&'a str>,
    pub(crate) run: Option<&'a str>,
    pub(crate) step: Option<&'a str>,
    pub(crate) cause: Option<&'a str>,
    pub(crate) traceparent: Option<&'a str>,
    pub(crate) severity: Option<Severity>,
    pub(crate) capture: Option<Capture>,
    pub(crate) extensions: &'a [(String, Value)],
}

/// The name the crate's own code uses.
pub(crate) type Attrs<'a> = EmitAttrs<'a>;

impl<'a> EmitAttrs<'a> {
    /// No optional attributes.
    pub fn new() -> Self {
        Self::default()
    }
    aep_core::setters! {
        /// The `subject` attribute.
        pub fn subject(v: &'a str) => subject = Some(v);
        /// The `run` attribute (session-scoped events only).
        pub fn run(v: &'a str) => run = Some(v);
        /// The `step` attribute (session-scoped events only).
        pub fn step(v: &'a str) => step = Some(v);
        /// The `cause` attribute: the id of the event this one answers.
        pub fn cause(v: &'a str) => cause = Some(v);
        /// The `traceparent` attribute (W3C trace context).
        pub fn traceparent(v: &'a str) => traceparent = Some(v);
        /// The `severity` attribute (default `info` when absent).
        pub fn severity(v: Severity) => severity = Some(v);
        /// The `capture` level this event asks for; the emitter's ceiling still applies.
        pub fn capture(v: Capture) => capture = Some(v);
        /// Extension attributes (AEP-0001 §5.4), checked when the event is built.
        pub fn extensions(v: &'a [(String, Value)]) => extensions = v;
    }
}

impl EmitOptions {
    fn attrs(&self) -> Attrs<'_> {
        Attrs {
            subject: self.subject.as_deref(),
            run: self.run.as_deref(),
            step: self.step.as_deref(),
            cause: self.cause.as_deref(),
            traceparent: self.traceparent.as_deref(),
            severity: self.severity,
            capture: self.capture,
            extensions: &self.extensions,
        }
    }
}

#[derive(Debug)]
struct Inner {
    agent: String,
    host: String,
    epochs: Epochs,
    ceiling: Capture,
    sink: Arc<dyn Sink>,
    envelope: EnvelopeFactory,
    redactor: Option<Arc<Redactor>>,
}

/// `aep://{host}/agent/{agent}[/session/{session}]` (AEP-0001 §5.2), aep-core's one
/// spelling of it.
fn source(host: &str, agent: &str, session: Option<&str>) -> String {
    aep_core::envelope::source_uri(host, agent, session)
}

/// Builds valid envelopes for one producer and hands them to a [`Sink`].
///
/// Cheap to clone (one `Arc`). Emitting never waits for the network and never fails
/// because a relay is down: delivery trouble goes to the sink's error handler. Call
/// [`Emitter::flush`] or [`Emitter::close`] to wait for delivery.
///
/// **Two ways to emit.** [`emit`](SessionEmitter::emit) never waits: when a network
/// sink's bounded queue is full it drops `debug`/`info` events first, counting and
/// reporting every drop (AEP-0003 §8.4), which is what a producer that must not block
/// wants. [`emit_wait`](SessionEmitter::emit_wait) (or [`reserve`](SessionEmitter::reserve)
/// then [`EmitPermit::emit`]) waits for room instead, so a producer faster than the
/// network goes at its pace and loses nothing; use it for bulk data. It fails rather than
/// waits for ever: [`EmitError::Closed`] once the sink is closed,
/// [`EmitError::Stalled`] once the sink has delivered nothing for its `give_up_after`.
///
/// `epoch` (AEP-0001 §7.2) must increase each time the producer restarts without
/// durable `seq` state. Either the caller owns it ([`EmitterBuilder::epoch`], default
/// 0), or each session takes the next one from an [`EpochStore`] when it is created
/// ([`EmitterBuilder::epoch_store`]), so a restarted process never writes at a
/// position an earlier run used.
///
/// ```
/// use aep_async::{Emitter, JsonlSink};
/// use serde_json::json;
///
/// # tokio_test_block(async {
/// let path = std::env::temp_dir().join(format!("aep-emitter-doc-{}.jsonl", std::process::id()));
/// let emitter = Emitter::new("coder", "host-a", JsonlSink::open(&path)?);
/// let session = emitter.session("s1");
/// let started = session.emit("session.started", json!({"cwd": "/tmp"}))?;
/// assert_eq!(started.seq(), Some(0));
/// assert_eq!(started.source(), "aep://host-a/agent/coder/session/s1");
/// let hb = emitter.emit("agent.heartbeat", None::<()>)?;
/// assert_eq!(hb.session(), None);
/// emitter.close().await;
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(()) });
/// # fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Emitter {
    inner: Arc<Inner>,
}

impl Emitter {
    /// An emitter for `agent` on `host` with epoch 0 and capture ceiling `metadata`.
    pub fn new(agent: impl Into<String>, host: impl Into<String>, sink: impl Sink) -> Self {
        Self::builder(agent, host).build(sink)
    }

    /// Configure epoch and capture ceiling before choosing the sink.
    ///
    /// ```
    /// use aep_async::{Emitter, JsonlSink};
    /// use aep_core::Capture;
    /// # let path = std::env::temp_dir().join(format!("aep-builder-doc-{}.jsonl", std::process::id()));
    /// let emitter = Emitter::builder("coder", "host-a")
    ///     .epoch(3)
    ///     .capture(Capture::Redacted)
    ///     .build(JsonlSink::open(&path)?);
    /// assert_eq!(emitter.epoch(), 3);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn builder(agent: impl Into<String>, host: impl Into<String>) -> EmitterBuilder {
        EmitterBuilder {
            agent: agent.into(),
            host: host.into(),
            epochs: Epochs::Fixed(0),
            ceiling: Capture::Metadata,
            redactor: None,
        }
    }

    /// The producer identity (envelope `agent`).
    pub fn agent(&self) -> &str {
        &self.inner.agent
    }
    /// The host segment of `source`.
    pub fn host(&self) -> &str {
        &self.inner.host
    }
    /// The epoch stamped on session-scoped events when it is fixed
    /// ([`EmitterBuilder::epoch`]); 0 with an [`EpochStore`], where each session takes
    /// its own ([`SessionEmitter::epoch`]).
    pub fn epoch(&self) -> u64 {
        match self.inner.epochs {
            Epochs::Fixed(e) => e,
            Epochs::Store(_) => 0,
        }
    }

    /// The epoch store sessions take their epoch from, if there is one.
    pub fn epoch_store(&self) -> Option<&EpochStore> {
        match &self.inner.epochs {
            Epochs::Store(s) => Some(s),
            Epochs::Fixed(_) => None,
        }
    }
    /// The capture ceiling (AEP-0001 §8.2).
    pub fn capture_ceiling(&self) -> Capture {
        self.inner.ceiling
    }

    /// A session emitter: `seq` starts at 0 and increases by one per event, in the
    /// emitter's fixed epoch or, with an [`EpochStore`], in the next epoch the store
    /// gives `(agent, session)`: each session emitter created for a session starts a
    /// new epoch, so none writes at a position another used (AEP-0001 §7.2).
    ///
    /// Taking an epoch from a store reads and writes its small file. Should the store
    /// fail (an unwritable directory, a lock held past its wait), the session takes the
    /// timestamp seed instead (the current Unix time in milliseconds, increasing within
    /// the process) and the failure is logged as a warning: emitting goes on, and only
    /// a clock set back could then repeat an epoch.
    ///
    /// ```
    /// use aep_async::emit::EpochStore;
    /// use aep_async::{Emitter, JsonlSink};
    /// # let dir = std::env::temp_dir().join(format!("aep-session-epoch-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let store = EpochStore::at(dir.join("epochs.json"));
    /// let emitter = Emitter::builder("coder", "host-a").epoch_store(store).build(JsonlSink::open(dir.join("out.jsonl"))?);
    /// let first = emitter.session("s1");
    /// let again = emitter.session("s1"); // a restart, as far as positions go
    /// assert!(again.epoch() > first.epoch());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn session(&self, session: impl Into<String>) -> SessionEmitter {
        let session = session.into();
        let envelope = EnvelopeFactory::new(
            source(&self.inner.host, &self.inner.agent, Some(&session)),
            self.inner.agent.as_str(),
        );
        let epoch = match &self.inner.epochs {
            Epochs::Fixed(e) => *e,
            Epochs::Store(store) => store
                .next_epoch(&self.inner.agent, &session)
                .unwrap_or_else(|e| {
                    let seed = epoch::fallback_epoch();
                    tracing::warn!(error = %e, session, epoch = seed, "the epoch store failed: the session takes the timestamp seed");
                    seed
                }),
        };
        SessionEmitter {
            emitter: self.clone(),
            session,
            epoch,
            seq: Mutex::new(0),
            envelope,
        }
    }

    /// Emits an agent-scoped event (`agent.*`): no session, run, step or seq.
    ///
    /// `data` is any `Serialize` value: a generated payload type or raw
    /// `serde_json::Value`; `None::<()>`, `null` and `{}` emit no `data`.
    pub fn emit(&self, event_type: &str, data: impl Serialize) -> Result<Event, EmitError> {
        self.emit_with(event_type, data, EmitOptions::default())
    }

    /// [`Emitter::emit`] with optional attributes.
    pub fn emit_with(
        &self,
        event_type: &str,
        data: impl Serialize,
        opts: EmitOptions,
    ) -> Result<Event, EmitError> {
        self.emit_agent(event_type, &data, opts.attrs(), Hand::Queue)
    }

    /// [`Emitter::emit_with`] with borrowed attributes ([`EmitAttrs`]): no `String` is
    /// made for them.
    ///
    /// ```
    /// use aep_async::{EmitAttrs, Emitter};
    /// # let path = std::env::temp_dir().join(format!("aep-attrs-agent-doc-{}.jsonl", std::process::id()));
    /// let emitter = Emitter::new("a", "h", aep_async::JsonlSink::open(&path)?);
    /// let hb = emitter.emit_with_attrs("agent.heartbeat", None::<()>, EmitAttrs::new().subject("probe"))?;
    /// assert_eq!(hb.subject(), Some("probe"));
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn emit_with_attrs(
        &self,
        event_type: &str,
        data: impl Serialize,
        attrs: EmitAttrs<'_>,
    ) -> Result<Event, EmitError> {
        self.emit_agent(event_type, &data, attrs, Hand::Queue)
    }

    /// Waits for room in the sink, then emits an agent-scoped event like
    /// [`Emitter::emit`]: backpressure instead of dropping (see [`Emitter`]).
    ///
    /// Fails with [`EmitError::Closed`] once the sink is closed and with
    /// [`EmitError::Stalled`] once it has delivered nothing for its `give_up_after`;
    /// the event is then not emitted. With a sink that never drops (JSONL) it does not
    /// wait.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # let path = std::env::temp_dir().join(format!("aep-emitter-wait-{}.jsonl", std::process::id()));
    /// let emitter = aep_async::Emitter::new("coder", "host-a", aep_async::JsonlSink::open(&path)?);
    /// let hb = emitter.emit_wait("agent.heartbeat", None::<()>).await?;
    /// assert_eq!(hb.session(), None);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    pub async fn emit_wait(
        &self,
        event_type: &str,
        data: impl Serialize,
    ) -> Result<Event, EmitError> {
        self.reserve().await?.emit(event_type, data)
    }

    /// Waits for room in the sink and holds it for one agent-scoped event, emitted with
    /// [`EmitPermit::emit`] or [`EmitPermit::emit_with`]; dropping the permit unused
    /// gives the room back. Fails as [`Emitter::emit_wait`] does.
    ///
    /// ```
    /// use aep_async::EmitOptions;
    /// use aep_core::Severity;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # let path = std::env::temp_dir().join(format!("aep-emitter-reserve-{}.jsonl", std::process::id()));
    /// let emitter = aep_async::Emitter::new("coder", "host-a", aep_async::JsonlSink::open(&path)?);
    /// let permit = emitter.reserve().await?;
    /// let hb = permit.emit_with("agent.heartbeat", None::<()>, EmitOptions::new().severity(Severity::Debug))?;
    /// assert_eq!(hb.severity(), Severity::Debug);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    pub async fn reserve(&self) -> Result<EmitPermit<'_>, EmitError> {
        self.inner.sink.reserve().await?;
        Ok(EmitPermit {
            scope: Scope::Agent(self),
            used: false,
        })
    }

    /// Builds an agent-scoped event and hands it to the sink.
    fn emit_agent(
        &self,
        event_type: &str,
        data: &impl Serialize,
        attrs: Attrs<'_>,
        hand: Hand<'_>,
    ) -> Result<Event, EmitError> {
        let scope = scope_of(event_type)?;
        if scope != EmitScope::Agent {
            return Err(refused(event_type, scope));
        }
        if attrs.run.is_some() || attrs.step.is_some() {
            return Err(EmitError::Scope {
                event_type: event_type.to_owned(),
                scope,
                reason: "is agent-scoped and carries no run or step (AEP-0002 §4)",
            });
        }
        let event = self.build(&self.inner.envelope, event_type, Some(data), attrs)?;
        hand.over(&*self.inner.sink, &event)?;
        Ok(event)
    }

    /// The event of `event_type` with `data` (`None`: no payload) and `attrs`, stamped
    /// by `envelope`, with the capture ceiling applied.
    fn build(
        &self,
        envelope: &EnvelopeFactory,
        event_type: &str,
        data: Option<&impl Serialize>,
        attrs: Attrs<'_>,
    ) -> Result<Event, EmitError> {
        let inner = &*self.inner;
        let mut event = envelope.event(event_type);
        if !attrs.extensions.is_empty() {
            set_extensions(
                &mut event,
                attrs
                    .extensions
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.clone())),
            )?;
        }
        if let Some(v) = attrs.subject {
            event = event.with_subject(v);
        }
        if let Some(v) = attrs.run {
            event = event.with_run(v);
        }
        if let Some(v) = attrs.step {
            event = event.with_step(v);
        }
        if let Some(v) = attrs.cause {
            event = event.with_cause(v);
        }
        if let Some(v) = attrs.traceparent {
            event = event.with_traceparent(v);
        }
        event.set_severity(attrs.severity);
        if let Some(data) = data {
            let raw =
                serde_json::value::to_raw_value(data).map_err(|source| EmitError::Payload {
                    event_type: event_type.to_owned(),
                    source,
                })?;
            if !is_empty_payload(&raw) {
                event.set_data_raw(Some(raw));
            }
        }
        let asked = attrs.capture.unwrap_or(inner.ceiling);
        event.set_capture(Some(asked));
        if let Some(redactor) = &inner.redactor {
            // An emitter enforcing its ceiling runs the §9.4 pipeline itself (AEP-0003
            // §9.1), so `redacted` content is really redacted and may claim it.
            downlevel_redacting(&mut event, inner.ceiling, |v| *v = redactor.redact_value(v));
        } else if asked > inner.ceiling {
            // The ceiling is enforced at the source (AEP-0001 §8.2): content above it
            // is dropped by the down-leveler, never sent.
            downlevel_in_place(&mut event, inner.ceiling);
        }
        Ok(event)
    }

    /// Waits until every event accepted so far is delivered or finally reported.
    pub async fn flush(&self) {
        self.inner.sink.flush().await;
    }

    /// Stops accepting, then waits for delivery of everything accepted (see the
    /// sink's documentation for what a permanently failing relay does).
    pub async fn close(&self) {
        self.inner.sink.close().await;
    }

    /// Counters of the sink: accepted, delivered, rejected, dropped.
    pub fn stats(&self) -> DeliveryStats {
        self.inner.sink.stats()
    }
}

/// The refusal of a type of `scope` by an emitter of another scope (core's one rule,
/// [`EventType::emit_scope`]), saying what to do instead.
fn refused(event_type: &str, scope: EmitScope) -> EmitError {
    let reason = match scope {
        EmitScope::Agent => {
            "is agent-scoped and carries no session or seq (AEP-0001 §5.2): emit it with Emitter::emit"
        }
        EmitScope::Session => {
            "is session-scoped (AEP-0001 §5.2): emit it through a session, Emitter::session(..)"
        }
        EmitScope::Command => {
            "is a command (AEP-0004 §2): an emitter sends none; send it with a ControlClient or ControlSender, which addresses the session without seq and waits for its ack"
        }
        _ => {
            "is written by a consumer into another emitter's session, without seq (AEP-0001 §5.2, AEP-0002 §7.3): a session's own emitter does not emit it"
        }
    };
    EmitError::Scope {
        event_type: event_type.to_owned(),
        scope,
        reason,
    }
}

/// The emit scope of `event_type` (core's rule, [`EventType::emit_scope`]), or the
/// refusal of a malformed type.
///
/// A producer emits a handful of types over and over, so the answers for the last few
/// types this thread checked are kept and a repeated type costs a comparison, not a
/// parse: the rule stays core's, only its answer is remembered.
fn scope_of(event_type: &str) -> Result<EmitScope, EmitError> {
    let cached = SCOPES
        .try_with(|c| c.borrow().find(event_type))
        .ok()
        .flatten();
    if let Some(scope) = cached {
        return Ok(scope);
    }
    let scope = EventType::parse(event_type)
        .map_err(|_| EmitError::Type(event_type.to_owned()))?
        .emit_scope();
    let _ = SCOPES.try_with(|c| c.borrow_mut().remember(event_type, scope));
    Ok(scope)
}

/// Types longer than this are checked each time (registered types are at most 28
/// bytes; vendor types may be longer).
const CACHED_TYPE_BYTES: usize = 40;

/// The last types a thread checked and their scopes, replaced round robin.
struct ScopeCache {
    entries: [(u8, [u8; CACHED_TYPE_BYTES], EmitScope); 8],
    used: usize,
    next: usize,
}

impl ScopeCache {
    const fn new() -> ScopeCache {
        ScopeCache {
            entries: [(0, [0; CACHED_TYPE_BYTES], EmitScope::Session); 8],
            used: 0,
            next: 0,
        }
    }

    fn find(&self, event_type: &str) -> Option<EmitScope> {
        let b = event_type.as_bytes();
        self.entries
            .iter()
            .take(self.used)
            .find(|(len, text, _)| usize::from(*len) == b.len() && text.get(..b.len()) == Some(b))
            .map(|(_, _, scope)| *scope)
    }

    fn remember(&mut self, event_type: &str, scope: EmitScope) {
        let b = event_type.as_bytes();
        let (Ok(len), Some(entry)) = (u8::try_from(b.len()), self.entries.get_mut(self.next))
        else {
            return;
        };
        let Some(slot) = entry.1.get_mut(..b.len()) else {
            return;
        };
        slot.copy_from_slice(b);
        entry.0 = len;
        entry.2 = scope;
        self.next = (self.next + 1) % self.entries.len();
        self.used = (self.used + 1).min(self.entries.len());
    }
}

thread_local! {
    static SCOPES: std::cell::RefCell<ScopeCache> = const { std::cell::RefCell::new(ScopeCache::new()) };
}

/// `null` and `{}` are no payload: such an event carries no `data` at all.
fn is_empty_payload(raw: &RawValue) -> bool {
    matches!(raw.get(), "null" | "{}")
}

/// [`is_empty_payload`] before serializing: `None` for a value that would carry no
/// `data`, so that a caller holding a `Value` (a control target's ack) need not
/// serialize it only to have it dropped.
pub(crate) fn payload_of(data: &Value) -> Option<&Value> {
    let empty = match data {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        _ => false,
    };
    (!empty).then_some(data)
}

/// Configuration of an [`Emitter`].
///
/// ```
/// # use aep_async::{Emitter, JsonlSink};
/// # let path = std::env::temp_dir().join(format!("aep-eb-doc-{}.jsonl", std::process::id()));
/// let emitter = Emitter::builder("a", "h").epoch(1).build(JsonlSink::open(&path)?);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build`"]
pub struct EmitterBuilder {
    agent: String,
    host: String,
    epochs: Epochs,
    ceiling: Capture,
    redactor: Option<Arc<Redactor>>,
}

impl EmitterBuilder {
    aep_core::setters! {
        /// One epoch for every session (AEP-0001 §7.2): the caller owns its increase on
        /// each restart. Replaces an [`epoch_store`](Self::epoch_store).
        pub fn epoch(epoch: u64) => epochs = Epochs::Fixed(epoch);
        /// Each session takes the next epoch `store` gives its `(agent, session)` when it is
        /// created ([`Emitter::session`]), so a restarted producer writes after every
        /// position an earlier run used (AEP-0001 §7.2). [`EpochStore::user`] is the user's
        /// store. Replaces a fixed [`epoch`](Self::epoch).
        ///
        /// ```
        /// use aep_async::emit::EpochStore;
        /// use aep_async::{Emitter, JsonlSink};
        /// # let dir = std::env::temp_dir().join(format!("aep-builder-store-{}", std::process::id()));
        /// # std::fs::create_dir_all(&dir)?;
        /// let store = EpochStore::at(dir.join("epochs.json"));
        /// for _run in 0..2 {
        ///     let emitter = Emitter::builder("coder", "host-a").epoch_store(store.clone()).build(JsonlSink::open(dir.join("out.jsonl"))?);
        ///     let e = emitter.session("s1").emit("session.started", serde_json::json!({}))?;
        ///     assert_eq!(store.last_epoch("coder", "s1")?, Some(e.epoch()));
        /// }
        /// # std::fs::remove_dir_all(&dir).ok();
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn epoch_store(store: EpochStore) => epochs = Epochs::Store(Arc::new(store));
        /// The capture ceiling (AEP-0001 §8.2): stamped on events that ask for nothing,
        /// enforced on events that ask for more.
        pub fn capture(ceiling: Capture) => ceiling = ceiling;
        /// Runs the redaction pipeline (AEP-0003 §9.4) on every event's `redacted`-gated
        /// content, so events may carry `capture: redacted` truthfully; without it, content
        /// above the ceiling is dropped mechanically and never claims `redacted`.
        ///
        /// ```
        /// use aep_async::{Emitter, EmitOptions, JsonlSink};
        /// use aep_core::redact::{RedactOptions, Redactor};
        /// use aep_core::Capture;
        /// # let path = std::env::temp_dir().join(format!("aep-redactor-doc-{}.jsonl", std::process::id()));
        /// let emitter = Emitter::builder("a", "h")
        ///     .capture(Capture::Redacted)
        ///     .redactor(Redactor::new(RedactOptions::new())?)
        ///     .build(JsonlSink::open(&path)?);
        /// let e = emitter.session("s").emit_with(
        ///     "tool.failed",
        ///     serde_json::json!({"tool": {"name": "Bash"}, "error": {"type": "E", "message": "export API_KEY=abc123"}}),
        ///     EmitOptions::new().capture(Capture::Full),
        /// )?;
        /// assert_eq!(e.capture(), Capture::Redacted);
        /// assert!(!e.to_json().contains("abc123"));
        /// # std::fs::remove_file(&path).ok();
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn redactor(redactor: Redactor) => redactor = Some(Arc::new(redactor));
    }
    /// Finishes with the sink events go to.
    pub fn build(self, sink: impl Sink) -> Emitter {
        let envelope =
            EnvelopeFactory::new(source(&self.host, &self.agent, None), self.agent.as_str());
        Emitter {
            inner: Arc::new(Inner {
                agent: self.agent,
                host: self.host,
                epochs: self.epochs,
                ceiling: self.ceiling,
                sink: Arc::new(sink),
                envelope,
                redactor: self.redactor,
            }),
        }
    }
}

/// Session-scoped emission: stamps `session`, `epoch` and a monotonic `seq` from 0.
///
/// `emit` takes `&self`; the sequence counter and the hand-off to the sink happen under
/// one lock, so events reach the sink in `seq` order even from several tasks.
///
/// ```
/// # use aep_async::{Emitter, JsonlSink};
/// # use serde_json::json;
/// # let path = std::env::temp_dir().join(format!("aep-se-doc-{}.jsonl", std::process::id()));
/// let session = Emitter::new("a", "h", JsonlSink::open(&path)?).session("s");
/// let first = session.emit("run.started", json!({"trigger": "user"}))?;
/// let second = session.emit("run.completed", None::<()>)?;
/// assert_eq!((first.seq(), second.seq()), (Some(0), Some(1)));
/// session.redeliver(&first)?; // same id, same position: consumers dedupe it
/// assert_eq!(session.next_seq(), 2);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SessionEmitter {
    emitter: Emitter,
    session: String,
    epoch: u64,
    seq: Mutex<u64>,
    envelope: EnvelopeFactory,
}

impl fmt::Debug for SessionEmitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionEmitter")
            .field("session", &self.session)
            .field("epoch", &self.epoch)
            .field("next_seq", &self.next_seq())
            .finish()
    }
}

impl SessionEmitter {
    /// The session id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The emitter this session belongs to.
    pub fn emitter(&self) -> &Emitter {
        &self.emitter
    }

    /// The epoch every event of this session emitter carries (AEP-0001 §7.2).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The `seq` the next event will carry.
    pub fn next_seq(&self) -> u64 {
        *self.seq.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Emits a session-scoped event; `data` as in [`Emitter::emit`].
    pub fn emit(&self, event_type: &str, data: impl Serialize) -> Result<Event, EmitError> {
        self.emit_with(event_type, data, EmitOptions::default())
    }

    /// [`SessionEmitter::emit`] with optional attributes.
    pub fn emit_with(
        &self,
        event_type: &str,
        data: impl Serialize,
        opts: EmitOptions,
    ) -> Result<Event, EmitError> {
        self.emit_attrs(event_type, Some(&data), opts.attrs())
    }

    /// [`SessionEmitter::emit_with`] with borrowed attributes ([`EmitAttrs`]): no
    /// `String` is made for them, which is what a producer on a hot path (a `tracing`
    /// layer) holds already.
    ///
    /// ```
    /// use aep_async::{EmitAttrs, Emitter};
    /// # let path = std::env::temp_dir().join(format!("aep-attrs-session-doc-{}.jsonl", std::process::id()));
    /// let session = Emitter::new("a", "h", aep_async::JsonlSink::open(&path)?).session("s");
    /// let first = session.emit("tool.requested", serde_json::json!({"tool": {"name": "grep"}}))?;
    /// let done = session.emit_with_attrs(
    ///     "tool.completed",
    ///     serde_json::json!({"tool": {"name": "grep"}, "duration_ms": 3}),
    ///     EmitAttrs::new().subject("grep").cause(first.id()),
    /// )?;
    /// assert_eq!((done.seq(), done.cause()), (Some(1), Some(first.id())));
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn emit_with_attrs(
        &self,
        event_type: &str,
        data: impl Serialize,
        attrs: EmitAttrs<'_>,
    ) -> Result<Event, EmitError> {
        self.emit_attrs(event_type, Some(&data), attrs)
    }

    /// Waits for room in the sink, then emits like [`SessionEmitter::emit`]:
    /// backpressure instead of dropping, for a producer that may be faster than the
    /// network (see [`Emitter`]).
    ///
    /// Fails with [`EmitError::Closed`] once the sink is closed and with
    /// [`EmitError::Stalled`] once it has delivered nothing for its `give_up_after`
    /// (default 60 s); the event is then not emitted and takes no `seq`. With a sink that
    /// never drops (JSONL) it does not wait. Waiting uses tokio's timer: the runtime
    /// must have it enabled (`#[tokio::main]` does, as does `enable_all`).
    ///
    /// ```no_run
    /// use aep_async::{Client, Emitter, HttpSinkOptions};
    /// use serde_json::json;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let sink = Client::new("http://127.0.0.1:8787").http_sink(HttpSinkOptions::new())?;
    /// let emitter = Emitter::new("coder", "host-a", sink);
    /// let session = emitter.session("s1");
    /// for n in 0..100_000 {
    ///     // as fast as the relay takes them, none dropped
    ///     session.emit_wait("tool.called", json!({"tool": "bash", "n": n})).await?;
    /// }
    /// emitter.close().await;
    /// assert_eq!(emitter.stats().dropped, 0);
    /// # Ok(()) }
    /// ```
    pub async fn emit_wait(
        &self,
        event_type: &str,
        data: impl Serialize,
    ) -> Result<Event, EmitError> {
        self.reserve().await?.emit(event_type, data)
    }

    /// Waits for room in the sink and holds it for one event of this session, emitted
    /// with [`EmitPermit::emit`] or [`EmitPermit::emit_with`] (the `seq` is taken then,
    /// not now); dropping the permit unused gives the room back. Fails as
    /// [`SessionEmitter::emit_wait`] does.
    ///
    /// ```
    /// use aep_async::{EmitOptions, Emitter, JsonlSink};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # let path = std::env::temp_dir().join(format!("aep-session-reserve-{}.jsonl", std::process::id()));
    /// let session = Emitter::new("a", "h", JsonlSink::open(&path)?).session("s");
    /// let permit = session.reserve().await?;
    /// let e = permit.emit_with("run.started", serde_json::json!({"trigger": "user"}), EmitOptions::new().run("r1"))?;
    /// assert_eq!((e.seq(), e.run()), (Some(0), Some("r1")));
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    pub async fn reserve(&self) -> Result<EmitPermit<'_>, EmitError> {
        self.emitter.inner.sink.reserve().await?;
        Ok(EmitPermit {
            scope: Scope::Session(self),
            used: false,
        })
    }

    /// [`emit_with`](Self::emit_with) from borrowed attributes; `data` `None` for no
    /// payload.
    pub(crate) fn emit_attrs(
        &self,
        event_type: &str,
        data: Option<&impl Serialize>,
        attrs: Attrs<'_>,
    ) -> Result<Event, EmitError> {
        self.emit_session(event_type, data, attrs, Hand::Queue)
    }

    /// Builds a session-scoped event, stamps the next `seq` and hands it to the sink.
    fn emit_session(
        &self,
        event_type: &str,
        data: Option<&impl Serialize>,
        attrs: Attrs<'_>,
        hand: Hand<'_>,
    ) -> Result<Event, EmitError> {
        let scope = scope_of(event_type)?;
        if scope != EmitScope::Session {
            return Err(refused(event_type, scope));
        }
        let mut event = self
            .emitter
            .build(&self.envelope, event_type, data, attrs)?
            .with_session(&self.session);
        event.set_epoch(Some(self.epoch));
        let mut seq = self.seq.lock().unwrap_or_else(|p| p.into_inner());
        event.set_seq(Some(*seq));
        hand.over(&*self.emitter.inner.sink, &event)?;
        // A refused event leaves no hole: the counter only moves once the sink took it.
        *seq += 1;
        Ok(event)
    }

    /// Hands an already emitted event to the sink again, unchanged: same `id`, same
    /// `(epoch, seq)`. Legal at-least-once redelivery that consumers collapse by
    /// dedupe (AEP-0001 §7.4); the counter is not touched. This is how a target
    /// re-acknowledges a retransmitted command (AEP-0004 §3).
    pub fn redeliver(&self, event: &Event) -> Result<(), EmitError> {
        self.emitter.inner.sink.accept(event)
    }
}

/// How an event goes to the sink: queued (dropping under pressure), or into a place a
/// reservation holds, noting that the place was handed over (and so is the sink's to
/// account for, whatever `accept_reserved` answers).
#[derive(Debug, Clone, Copy)]
enum Hand<'a> {
    Queue,
    Reserved(&'a Cell<bool>),
}

impl Hand<'_> {
    fn over(self, sink: &dyn Sink, event: &Event) -> Result<(), EmitError> {
        match self {
            Hand::Queue => sink.accept(event),
            Hand::Reserved(handed) => {
                handed.set(true);
                sink.accept_reserved(event)
            }
        }
    }
}

/// Who a permit emits for.
#[derive(Debug, Clone, Copy)]
enum Scope<'a> {
    Agent(&'a Emitter),
    Session(&'a SessionEmitter),
}

/// A place held in the sink for one event: what [`SessionEmitter::reserve`] and
/// [`Emitter::reserve`] give once the sink has room. Emitting through it never drops
/// anything to make room. Dropped unused, it gives the place back.
///
/// An event the permit emits is built like one from [`SessionEmitter::emit`] (or
/// [`Emitter::emit`], for a permit of the emitter): same checks, same errors. An event
/// refused before it reaches the sink (a malformed type, a payload that does not
/// serialize) gives the place back.
///
/// ```
/// use aep_async::{Emitter, JsonlSink};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// # let path = std::env::temp_dir().join(format!("aep-permit-doc-{}.jsonl", std::process::id()));
/// let session = Emitter::new("a", "h", JsonlSink::open(&path)?).session("s");
/// let permit = session.reserve().await?;
/// drop(permit); // not used: the place goes back, no seq taken
/// let e = session.reserve().await?.emit("session.started", serde_json::json!({}))?;
/// assert_eq!(e.seq(), Some(0));
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
#[must_use = "a permit holds a place in the sink until it emits or is dropped"]
pub struct EmitPermit<'a> {
    scope: Scope<'a>,
    used: bool,
}

impl fmt::Debug for EmitPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("EmitPermit");
        match self.scope {
            Scope::Agent(e) => d.field("agent", &e.agent()),
            Scope::Session(s) => d.field("session", &s.session()),
        };
        d.finish()
    }
}

impl EmitPermit<'_> {
    /// Emits one event into the held place; `data` as in [`SessionEmitter::emit`].
    pub fn emit(self, event_type: &str, data: impl Serialize) -> Result<Event, EmitError> {
        self.emit_with(event_type, data, EmitOptions::default())
    }

    /// [`EmitPermit::emit`] with optional attributes.
    pub fn emit_with(
        mut self,
        event_type: &str,
        data: impl Serialize,
        opts: EmitOptions,
    ) -> Result<Event, EmitError> {
        let handed = Cell::new(false);
        let hand = Hand::Reserved(&handed);
        let emitted = match self.scope {
            Scope::Agent(e) => e.emit_agent(event_type, &data, opts.attrs(), hand),
            Scope::Session(s) => s.emit_session(event_type, Some(&data), opts.attrs(), hand),
        };
        // Once handed over, the place is the sink's to account for; otherwise `Drop`
        // gives it back.
        self.used = handed.get();
        emitted
    }

    fn sink(&self) -> &dyn Sink {
        match self.scope {
            Scope::Agent(e) => &*e.inner.sink,
            Scope::Session(s) => &*s.emitter.inner.sink,
        }
    }
}

impl Drop for EmitPermit<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.sink().release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The remembered answers are core's: for every kind of type, the first and the
    /// repeated check agree, a malformed type is refused every time, and more types
    /// than the cache holds still get their own answer.
    #[test]
    fn the_scope_cache_answers_as_core_does() {
        let types = [
            "tool.completed",
            "agent.heartbeat",
            "control.pause",
            "x.acme.control.reboot",
            "attention.routed",
            "control.accepted",
            "x.acme-corp.widget.spun",
            "run.step.started",
            "session.started",
            "progress.updated",
            "x.a-vendor-with-a-rather-long-name.category.something.more",
        ];
        for _ in 0..3 {
            for t in types {
                let core = EventType::parse(t).unwrap().emit_scope();
                assert_eq!(scope_of(t).unwrap(), core, "{t}");
            }
        }
        for bad in ["control", "nope.thing", "", "tool..x"] {
            assert!(matches!(scope_of(bad), Err(EmitError::Type(_))), "{bad:?}");
            assert!(matches!(scope_of(bad), Err(EmitError::Type(_))), "{bad:?}");
        }
    }

    /// Deciding on the value and deciding on its serialized text agree.
    #[test]
    fn payload_of_agrees_with_the_serialized_check() {
        for v in [
            json!(null),
            json!({}),
            json!({"reason": "busy"}),
            json!([]),
            json!(""),
            json!(0),
            json!(false),
            json!({"": null}),
        ] {
            let raw = serde_json::value::to_raw_value(&v).unwrap();
            assert_eq!(payload_of(&v).is_none(), is_empty_payload(&raw), "{v}");
        }
    }
}
