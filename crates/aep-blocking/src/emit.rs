//! [`Emitter`] and [`SessionEmitter`] for synchronous code.
//!
//! Building and emitting events never waits (the async emitter already hands events to
//! a queue), so those calls go straight to `aep_async`; only the waiting calls
//! ([`SessionEmitter::emit_wait`], [`SessionEmitter::reserve`], the same on [`Emitter`],
//! [`Emitter::flush`] and [`Emitter::close`]) wait, on the runtime.

use std::sync::Arc;
use std::time::Duration;

use aep_async::emit::EpochStore;
use aep_async::{DeliveryStats, EmitAttrs, EmitError, EmitOptions, EmitPermit, Sink};
use aep_core::redact::Redactor;
use aep_core::{Capture, Event};
use serde::Serialize;

use crate::error::Error;
use crate::runtime::Runtime;

/// Builds valid envelopes for one producer and hands them to a sink; the blocking
/// face of [`aep_async::Emitter`], same names, same behaviour.
///
/// Cheap to clone. Emitting never waits for the network and never fails because a relay
/// is down; [`Emitter::flush`] and [`Emitter::close`] block until delivery.
///
/// **Two ways to emit**, as in [`aep_async::Emitter`]: `emit` never blocks (a full
/// queue drops `debug`/`info` first, AEP-0003 §8.4); `emit_wait` blocks until the sink
/// has room, so bulk data goes at the network's pace and nothing is dropped. It fails
/// with [`EmitError::Closed`] or [`EmitError::Stalled`] (inside [`Error::Emit`]) rather
/// than blocking for ever, and with [`Error::InsideRuntime`] when called inside a tokio
/// runtime.
///
/// ```
/// use aep_blocking::{Emitter, JsonlSink};
/// use serde_json::json;
///
/// let path = std::env::temp_dir().join(format!("aep-blocking-doc-{}.jsonl", std::process::id()));
/// let emitter = Emitter::new("coder", "host-a", JsonlSink::open(&path)?);
/// let session = emitter.session("s1");
/// assert_eq!(session.emit("session.started", json!({"cwd": "/tmp"}))?.seq(), Some(0));
/// emitter.close()?;
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Emitter {
    inner: aep_async::Emitter,
    /// Where `flush`/`close` wait; `None`: the shared runtime, looked up when needed
    /// (an emitter over a JSONL file never starts one).
    runtime: Option<Runtime>,
}

impl Emitter {
    /// An emitter for `agent` on `host` with epoch 0 and capture ceiling `metadata`;
    /// `flush` and `close` wait on the [shared](Runtime::shared) runtime.
    pub fn new(agent: impl Into<String>, host: impl Into<String>, sink: impl Sink) -> Self {
        Self::builder(agent, host).build(sink)
    }

    /// Configure epoch, capture ceiling and redactor before choosing the sink.
    ///
    /// ```
    /// use aep_blocking::{Emitter, JsonlSink};
    /// use aep_core::Capture;
    /// # let path = std::env::temp_dir().join(format!("aep-blocking-builder-{}.jsonl", std::process::id()));
    /// let emitter = Emitter::builder("coder", "host-a")
    ///     .epoch(3)
    ///     .capture(Capture::Redacted)
    ///     .build(JsonlSink::open(&path)?);
    /// assert_eq!(emitter.epoch(), 3);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(agent: impl Into<String>, host: impl Into<String>) -> EmitterBuilder {
        EmitterBuilder {
            inner: aep_async::Emitter::builder(agent, host),
        }
    }

    /// Wraps an async emitter; `runtime` is where [`Emitter::flush`] waits.
    pub fn from_async_on(runtime: &Runtime, inner: aep_async::Emitter) -> Self {
        Emitter {
            inner,
            runtime: Some(runtime.clone()),
        }
    }

    /// The async emitter underneath (share it with async code in the same program).
    pub fn as_async(&self) -> &aep_async::Emitter {
        &self.inner
    }

    /// The runtime this emitter waits on, when one was given (otherwise the shared
    /// one).
    pub fn runtime(&self) -> Option<&Runtime> {
        self.runtime.as_ref()
    }

    pub(crate) fn waiter(&self) -> Result<Runtime, Error> {
        match &self.runtime {
            Some(rt) => Ok(rt.clone()),
            None => Runtime::shared(),
        }
    }

    /// The producer identity (envelope `agent`).
    pub fn agent(&self) -> &str {
        self.inner.agent()
    }
    /// The host segment of `source`.
    pub fn host(&self) -> &str {
        self.inner.host()
    }
    /// The fixed epoch stamped on session-scoped events (AEP-0001 §7.2); 0 with an
    /// [`EpochStore`], where each session takes its own ([`SessionEmitter::epoch`]).
    pub fn epoch(&self) -> u64 {
        self.inner.epoch()
    }
    /// The capture ceiling (AEP-0001 §8.2).
    pub fn capture_ceiling(&self) -> Capture {
        self.inner.capture_ceiling()
    }

    /// A session emitter: `seq` starts at 0 and increases by one per event, in the
    /// fixed epoch or the next one of the [`EpochStore`]; see
    /// [`aep_async::Emitter::session`].
    pub fn session(&self, session: impl Into<String>) -> SessionEmitter {
        SessionEmitter {
            inner: Arc::new(self.inner.session(session)),
            emitter: self.clone(),
        }
    }

    /// Emits an agent-scoped event (`agent.*`); see [`aep_async::Emitter::emit`].
    pub fn emit(&self, event_type: &str, data: impl Serialize) -> Result<Event, EmitError> {
        self.inner.emit(event_type, data)
    }

    /// [`Emitter::emit`] with optional attributes.
    pub fn emit_with(
        &self,
        event_type: &str,
        data: impl Serialize,
        opts: EmitOptions,
    ) -> Result<Event, EmitError> {
        self.inner.emit_with(event_type, data, opts)
    }

    /// [`Emitter::emit_with`] with borrowed attributes; see
    /// [`aep_async::Emitter::emit_with_attrs`].
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("aep-blocking-attrs-{}.jsonl", std::process::id()));
    /// let emitter = aep_blocking::Emitter::new("a", "h", aep_blocking::JsonlSink::open(&path)?);
    /// let hb = emitter.emit_with_attrs("agent.heartbeat", None::<()>, aep_blocking::EmitAttrs::new().subject("probe"))?;
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
        self.inner.emit_with_attrs(event_type, data, attrs)
    }

    /// Blocks until the sink has room, then emits an agent-scoped event; see
    /// [`aep_async::Emitter::emit_wait`]. Refused with [`Error::InsideRuntime`] inside a
    /// tokio runtime.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("aep-blocking-ewait-{}.jsonl", std::process::id()));
    /// let emitter = aep_blocking::Emitter::new("a", "h", aep_blocking::JsonlSink::open(&path)?);
    /// let hb = emitter.emit_wait("agent.heartbeat", None::<()>)?;
    /// assert_eq!(hb.session(), None);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn emit_wait(&self, event_type: &str, data: impl Serialize) -> Result<Event, Error> {
        Ok(self
            .waiter()?
            .poll_here(self.inner.emit_wait(event_type, data))??)
    }

    /// Blocks until the sink has room and holds it for one agent-scoped event; see
    /// [`aep_async::Emitter::reserve`]. Refused with [`Error::InsideRuntime`] inside a
    /// tokio runtime.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("aep-blocking-ereserve-{}.jsonl", std::process::id()));
    /// let emitter = aep_blocking::Emitter::new("a", "h", aep_blocking::JsonlSink::open(&path)?);
    /// let hb = emitter.reserve()?.emit("agent.heartbeat", None::<()>)?;
    /// assert_eq!(hb.session(), None);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reserve(&self) -> Result<EmitPermit<'_>, Error> {
        Ok(self.waiter()?.poll_here(self.inner.reserve())??)
    }

    /// Blocks until every event accepted so far is delivered or finally reported.
    pub fn flush(&self) -> Result<(), Error> {
        let inner = self.inner.clone();
        self.waiter()?.block_on(async move { inner.flush().await })
    }

    /// [`Emitter::flush`] giving up after `timeout` ([`Error::Timeout`]).
    pub fn flush_timeout(&self, timeout: Duration) -> Result<(), Error> {
        let inner = self.inner.clone();
        self.waiter()?
            .block_on_timeout(async move { inner.flush().await }, timeout)
    }

    /// Stops accepting, then blocks until everything accepted is delivered or finally
    /// reported. Call it before the program exits: dropping the last handle of a
    /// runtime stops it, and what was still queued is reported as abandoned.
    pub fn close(&self) -> Result<(), Error> {
        let inner = self.inner.clone();
        self.waiter()?.block_on(async move { inner.close().await })
    }

    /// Counters of the sink: accepted, delivered, rejected, dropped.
    pub fn stats(&self) -> DeliveryStats {
        self.inner.stats()
    }
}

/// Configuration of an [`Emitter`].
///
/// ```
/// # let path = std::env::temp_dir().join(format!("aep-blocking-eb-{}.jsonl", std::process::id()));
/// let rt = aep_blocking::Runtime::new()?;
/// let emitter = aep_blocking::Emitter::builder("a", "h")
///     .epoch(1)
///     .build_on(&rt, aep_blocking::JsonlSink::open(&path)?);
/// assert!(emitter.runtime().is_some_and(|r| r.same_as(&rt)));
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build`"]
pub struct EmitterBuilder {
    inner: aep_async::EmitterBuilder,
}

impl EmitterBuilder {
    /// One epoch for every session (AEP-0001 §7.2); replaces an epoch store.
    pub fn epoch(mut self, epoch: u64) -> Self {
        self.inner = self.inner.epoch(epoch);
        self
    }
    /// Each session takes the next epoch of `store` when it is created, so a restarted
    /// producer writes after every position an earlier run used; see
    /// [`aep_async::EmitterBuilder::epoch_store`].
    ///
    /// ```
    /// use aep_blocking::{Emitter, EpochStore, JsonlSink};
    /// # let dir = std::env::temp_dir().join(format!("aep-blocking-store-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let store = EpochStore::at(dir.join("epochs.json"));
    /// let emitter = Emitter::builder("coder", "host-a").epoch_store(store.clone()).build(JsonlSink::open(dir.join("out.jsonl"))?);
    /// let session = emitter.session("s1");
    /// assert_eq!(store.last_epoch("coder", "s1")?, Some(session.epoch()));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn epoch_store(mut self, store: EpochStore) -> Self {
        self.inner = self.inner.epoch_store(store);
        self
    }
    /// The capture ceiling (AEP-0001 §8.2).
    pub fn capture(mut self, ceiling: Capture) -> Self {
        self.inner = self.inner.capture(ceiling);
        self
    }
    /// Runs the redaction pipeline (AEP-0003 §9.4) on every event's `redacted`-gated
    /// content, as [`aep_async::EmitterBuilder::redactor`].
    ///
    /// ```
    /// use aep_blocking::{EmitOptions, Emitter, JsonlSink};
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// use aep_core::Capture;
    /// # let path = std::env::temp_dir().join(format!("aep-blocking-redactor-{}.jsonl", std::process::id()));
    /// let emitter = Emitter::builder("a", "h")
    ///     .capture(Capture::Redacted)
    ///     .redactor(Redactor::new(RedactOptions::new())?)
    ///     .build(JsonlSink::open(&path)?);
    /// let e = emitter.session("s").emit_with(
    ///     "tool.failed",
    ///     serde_json::json!({"tool": {"name": "Bash"}, "error": {"type": "E", "message": "export API_KEY=abc123"}}),
    ///     EmitOptions::new().capture(Capture::Full),
    /// )?;
    /// assert!(!e.to_json().contains("abc123"));
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.inner = self.inner.redactor(redactor);
        self
    }
    /// Finishes with the sink events go to; [`Emitter::flush`] and [`Emitter::close`]
    /// wait on the [shared](Runtime::shared) runtime.
    pub fn build(self, sink: impl Sink) -> Emitter {
        Emitter {
            inner: self.inner.build(sink),
            runtime: None,
        }
    }
    /// [`EmitterBuilder::build`] waiting on `runtime` instead.
    pub fn build_on(self, runtime: &Runtime, sink: impl Sink) -> Emitter {
        Emitter {
            inner: self.inner.build(sink),
            runtime: Some(runtime.clone()),
        }
    }
}

/// Session-scoped emission: stamps `session`, `epoch` and a monotonic `seq` from 0
/// (AEP-0001 §7); the blocking face of [`aep_async::SessionEmitter`].
///
/// ```
/// # let path = std::env::temp_dir().join(format!("aep-blocking-se-{}.jsonl", std::process::id()));
/// let session = aep_blocking::Emitter::new("a", "h", aep_blocking::JsonlSink::open(&path)?).session("s");
/// let first = session.emit("run.started", serde_json::json!({"trigger": "user"}))?;
/// session.redeliver(&first)?; // same id, same position: consumers dedupe it
/// assert_eq!(session.next_seq(), 1);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SessionEmitter {
    // Shared, so a control target can ack through the same `seq` counter.
    inner: Arc<aep_async::SessionEmitter>,
    emitter: Emitter,
}

impl SessionEmitter {
    /// The session id.
    pub fn session(&self) -> &str {
        self.inner.session()
    }
    /// The emitter this session belongs to.
    pub fn emitter(&self) -> &Emitter {
        &self.emitter
    }
    /// The async session emitter underneath (shared: events emitted through it take
    /// their `seq` from the same counter).
    pub fn as_async(&self) -> &Arc<aep_async::SessionEmitter> {
        &self.inner
    }
    /// The epoch every event of this session emitter carries (AEP-0001 §7.2).
    pub fn epoch(&self) -> u64 {
        self.inner.epoch()
    }
    /// The `seq` the next event will carry.
    pub fn next_seq(&self) -> u64 {
        self.inner.next_seq()
    }
    /// Emits a session-scoped event; see [`aep_async::SessionEmitter::emit`].
    pub fn emit(&self, event_type: &str, data: impl Serialize) -> Result<Event, EmitError> {
        self.inner.emit(event_type, data)
    }
    /// [`SessionEmitter::emit`] with optional attributes.
    pub fn emit_with(
        &self,
        event_type: &str,
        data: impl Serialize,
        opts: EmitOptions,
    ) -> Result<Event, EmitError> {
        self.inner.emit_with(event_type, data, opts)
    }
    /// [`SessionEmitter::emit_with`] with borrowed attributes; see
    /// [`aep_async::SessionEmitter::emit_with_attrs`].
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("aep-blocking-sattrs-{}.jsonl", std::process::id()));
    /// let session = aep_blocking::Emitter::new("a", "h", aep_blocking::JsonlSink::open(&path)?).session("s");
    /// let run = String::from("r1");
    /// let e = session.emit_with_attrs("run.started", serde_json::json!({}), aep_blocking::EmitAttrs::new().run(&run))?;
    /// assert_eq!(e.run(), Some("r1"));
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn emit_with_attrs(
        &self,
        event_type: &str,
        data: impl Serialize,
        attrs: EmitAttrs<'_>,
    ) -> Result<Event, EmitError> {
        self.inner.emit_with_attrs(event_type, data, attrs)
    }
    /// Blocks until the sink has room, then emits a session-scoped event: the waiting
    /// path for bulk data, which loses nothing to a full queue; see
    /// [`aep_async::SessionEmitter::emit_wait`]. Refused with [`Error::InsideRuntime`]
    /// inside a tokio runtime.
    ///
    /// ```no_run
    /// use aep_blocking::{Client, Emitter, HttpSinkOptions};
    ///
    /// let sink = Client::new("http://127.0.0.1:8787").http_sink(HttpSinkOptions::new())?;
    /// let emitter = Emitter::new("coder", "host-a", sink);
    /// let session = emitter.session("s1");
    /// for n in 0..100_000 {
    ///     session.emit_wait("tool.called", serde_json::json!({"tool": "bash", "n": n}))?;
    /// }
    /// emitter.close()?;
    /// assert_eq!(emitter.stats().dropped, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn emit_wait(&self, event_type: &str, data: impl Serialize) -> Result<Event, Error> {
        Ok(self
            .emitter
            .waiter()?
            .poll_here(self.inner.emit_wait(event_type, data))??)
    }

    /// Blocks until the sink has room and holds it for one event of this session,
    /// emitted through the permit (with options, if need be); see
    /// [`aep_async::SessionEmitter::reserve`]. Refused with [`Error::InsideRuntime`]
    /// inside a tokio runtime.
    ///
    /// ```
    /// use aep_blocking::{EmitOptions, Emitter, JsonlSink};
    /// # let path = std::env::temp_dir().join(format!("aep-blocking-reserve-{}.jsonl", std::process::id()));
    /// let session = Emitter::new("a", "h", JsonlSink::open(&path)?).session("s");
    /// let e = session.reserve()?.emit_with("run.started", serde_json::json!({"trigger": "user"}), EmitOptions::new().run("r1"))?;
    /// assert_eq!(e.seq(), Some(0));
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reserve(&self) -> Result<EmitPermit<'_>, Error> {
        Ok(self.emitter.waiter()?.poll_here(self.inner.reserve())??)
    }

    /// Hands an already emitted event to the sink again, unchanged (AEP-0001 §7.4).
    pub fn redeliver(&self, event: &Event) -> Result<(), EmitError> {
        self.inner.redeliver(event)
    }
}
