//! The `Layer`: a mapped span's state lives in its extensions (inserted at
//! `on_new_span`, updated by `on_record` and `ERROR` events, taken out at
//! `on_close`), as `tracing-opentelemetry` keeps its own. No map keyed by span id and no
//! lock of the layer's on the way: the only shared lookup is a session's emitter, made
//! when a span names a session.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use aep_async::{EmitError, Emitter, SessionEmitter};
use aep_core::{Capture, Event};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Dispatch, Subscriber};
use tracing_subscriber::filter::Filtered;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::events::{self, Common, End, RunScope, Scope};
use crate::filter::SpanFilter;
use crate::mapping::{Attr, Mapping, SpanKind};
use crate::record::{Keep, Recorded, Visitor};
use crate::sessions::{Refused, Sessions, MAX_SESSION_BYTES};

/// The layer as it goes into a subscriber: the [`AepLayer`] behind its [`SpanFilter`].
/// `S` is the subscriber it is added to, inferred by `.with(..)`.
pub type TracingLayer<S> = Filtered<AepLayer, SpanFilter, S>;

/// Content (tool arguments and results, prompts, error messages) larger than this is
/// digested and not carried, unless [`Builder::max_content_bytes`] says otherwise.
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 64 * 1024;

/// Sessions the layer keeps at most, unless [`Builder::max_sessions`] says otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 16 * 1024;

/// A `tracing_subscriber::Layer` that turns an instrumented agent's spans into AEP
/// events on an [`Emitter`], with no change to the agent's code.
///
/// Spans are mapped by the OpenTelemetry GenAI conventions (`gen_ai.operation.name`
/// `invoke_agent`, `chat`, `execute_tool`, ...), and by the span names, operation
/// values and field names a [`Builder`] adds:
///
/// | span | events |
/// |---|---|
/// | agent invocation ([`SpanKind::Run`]) | `run.started`, then `run.finished` (duration, tokens) or `run.failed` |
/// | model call ([`SpanKind::Step`]) | `run.step.started`, `run.step.finished` (model, tokens, status) |
/// | tool execution ([`SpanKind::Tool`]) | `tool.requested` (call id, name, `args_digest`), then `tool.completed`, `tool.failed` or `tool.denied` |
///
/// Every event carries the `run` (and `step`) it happens in; its session is the
/// nearest `gen_ai.conversation.id` (or `session.id`) around it, declared when that
/// span was created, else the layer's default (rig records no conversation id: wrap
/// the call in an `invoke_agent` span that names it, which rig adopts as its agent
/// span); with feature `otel` and a `tracing_opentelemetry` layer in the same
/// subscriber, its `traceparent` is the span's OpenTelemetry context. A terminal's
/// `cause` is its opening event (AEP-0002 §2).
///
/// **When events go out.** The opening event is sent the first time the span is
/// entered once its identity is known (a tool's name), else when it is first exited
/// (a framework that records the tool's name after entering the span, as rig does),
/// else when it closes; the terminal when the span closes. A span's fields should be
/// recorded before then: what comes later reaches only the terminal.
///
/// **Failure.** A span failed when it records an error type or message
/// (`error.type`, `gen_ai.tool.error.type`, `exception.*`), `otel.status_code =
/// "ERROR"`, a tool outcome of `error` or `denied`, or when an `ERROR` event happens
/// inside it (the event's message is the error message). A tool outcome of `skipped`
/// (a hook or a policy kept it from running) is `tool.denied` by `policy`.
///
/// **Capture.** At the emitter's default ceiling (`metadata`) events carry names,
/// ids, digests, durations and token counts only. With a ceiling of `redacted` or
/// `full` the layer adds the content it saw (arguments, results, prompt, error
/// message) and the emitter lowers it to its ceiling (AEP-0001 §8.2).
///
/// ```
/// use aep_testing::MemorySink;
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let sink = MemorySink::new();
/// let emitter = aep_async::Emitter::new("my-agent", "host-a", sink.clone());
/// let subscriber = tracing_subscriber::registry()
///     .with(aep_tracing::AepLayer::builder(emitter).session("conv-1").build());
/// tracing::subscriber::with_default(subscriber, || {
///     let tool = tracing::info_span!(
///         "execute_tool",
///         gen_ai.operation.name = "execute_tool",
///         gen_ai.tool.name = "search",
///         gen_ai.tool.call.id = "call-1",
///     );
///     tool.in_scope(|| { /* run the tool */ });
/// });
/// let types: Vec<_> = sink.events().iter().map(|e| e.event_type().to_owned()).collect();
/// assert_eq!(types, ["tool.requested", "tool.completed"]);
/// assert_eq!(sink.events()[0].session(), Some("conv-1"));
/// ```
pub struct AepLayer {
    shared: Arc<Shared>,
}

struct Shared {
    mapping: Arc<Mapping>,
    sessions: Sessions,
    keep: Keep,
    counters: Counters,
    last_error: Mutex<Option<String>>,
    #[cfg(feature = "otel")]
    dispatch: std::sync::OnceLock<tracing_core::dispatcher::WeakDispatch>,
}

#[derive(Debug, Default)]
struct Counters {
    emitted: AtomicU64,
    failed: AtomicU64,
    refused: AtomicU64,
}

impl fmt::Debug for AepLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AepLayer")
            .field("mapping", &self.shared.mapping)
            .field("sessions", &self.shared.sessions)
            .field("stats", &self.stats())
            .finish()
    }
}

/// What a layer has done so far: a snapshot from [`AepLayer::stats`] or
/// [`StatsHandle::stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayerStats {
    /// Events the emitter accepted.
    pub emitted: u64,
    /// Events the emitter refused (a closed sink, say); [`LayerStats::last_error`]
    /// says why.
    pub failed: u64,
    /// Events not built because their span's session was refused: an id a `source`
    /// URI cannot carry, or one past [`Builder::max_sessions`].
    pub refused: u64,
    /// The last emit failure or refused session, and what to do about it.
    pub last_error: Option<String>,
}

/// A handle on a layer's [`LayerStats`] that stays with the caller once the layer is
/// moved into a subscriber.
///
/// ```
/// let emitter = aep_async::Emitter::new("a", "h", aep_testing::MemorySink::new());
/// let layer = aep_tracing::AepLayer::builder(emitter).build::<tracing_subscriber::Registry>();
/// let stats = layer.inner().stats_handle();
/// assert_eq!(stats.stats().emitted, 0);
/// ```
#[derive(Clone)]
pub struct StatsHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for StatsHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StatsHandle").field(&self.stats()).finish()
    }
}

impl StatsHandle {
    /// The counters now.
    pub fn stats(&self) -> LayerStats {
        self.shared.stats()
    }
}

impl Shared {
    fn stats(&self) -> LayerStats {
        LayerStats {
            emitted: self.counters.emitted.load(Ordering::Relaxed),
            failed: self.counters.failed.load(Ordering::Relaxed),
            refused: self.counters.refused.load(Ordering::Relaxed),
            last_error: self
                .last_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    fn note_error(&self, text: String) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(text);
    }

    /// Counts an emit's outcome; the event when it went out.
    fn count(&self, emitted: Option<Result<Event, EmitError>>) -> Option<Event> {
        match emitted? {
            Ok(event) => {
                self.counters.emitted.fetch_add(1, Ordering::Relaxed);
                Some(event)
            }
            Err(e) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                self.note_error(format!(
                    "the emitter refused an event: {e} (the layer goes on with the next span)"
                ));
                None
            }
        }
    }
}

/// A mapped span's state, in its extensions.
#[derive(Debug)]
struct SpanState {
    kind: SpanKind,
    /// `None`: the span's session was refused, and so are its events.
    scope: Option<Scope>,
    rec: Recorded,
    opened: Instant,
    /// The opening event is out (or there is none to send).
    started: bool,
    /// The opening event, kept whole rather than a copy of its id made: its `id` is
    /// the terminal's `cause`.
    start: Option<Event>,
    traceparent: Option<String>,
}

impl SpanState {
    /// Whether the opening event can go out: a tool needs its name.
    fn ready(&self) -> bool {
        self.kind != SpanKind::Tool || self.rec.tool_name.is_some()
    }
}

/// Configuration of an [`AepLayer`]; see [`AepLayer::builder`].
///
/// Defaults: the GenAI conventions' operations and field names, a session named by a
/// fresh ULID for spans that name none, [`DEFAULT_MAX_SESSIONS`] sessions,
/// [`DEFAULT_MAX_CONTENT_BYTES`] of content per field.
///
/// ```
/// use aep_tracing::{AepLayer, Attr, SpanKind};
///
/// let emitter = aep_async::Emitter::new("a", "h", aep_testing::MemorySink::new());
/// let layer = AepLayer::builder(emitter)
///     .session("main")
///     .span_name("run_tool", SpanKind::Tool) // a span named `run_tool` is a tool call
///     .field("tool", Attr::ToolName)         // whose `tool` field names the tool
///     .skip_operation("chat")                // model calls emit nothing
///     .build::<tracing_subscriber::Registry>();
/// # let _ = layer;
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct Builder {
    emitter: Emitter,
    session: DefaultSession,
    mapping: Mapping,
    max_sessions: usize,
    max_content_bytes: usize,
}

/// The session of spans that name none.
#[derive(Debug)]
enum DefaultSession {
    /// A fresh ULID.
    Fresh,
    /// This id, a session the layer makes.
    Named(String),
    /// This session emitter, which the caller holds too.
    Given(Arc<SessionEmitter>),
}

impl Builder {
    aep_core::setters! {
        /// The session of spans that name none (no `gen_ai.conversation.id` or
        /// `session.id` on them or around them). Default: a fresh ULID, so two runs of
        /// the program never share a session's positions (AEP-0001 §7). Replaces a
        /// [`session_emitter`](Self::session_emitter).
        pub fn session(id: impl Into<String>) => session = DefaultSession::Named(id.into());
        /// The layer emits the events of spans that name no session, and of spans that name
        /// `session`'s id, through `session` itself, which the agent keeps for its own
        /// events: one `seq` counter, so the spans' events and the agent's (an
        /// attention request it [`ask`](aep_async::control::ControlTarget::ask)s, say)
        /// take one session's positions in the order they happen (AEP-0001 §7). Replaces
        /// a [`session`](Self::session) id. `session` should belong to the builder's
        /// emitter; [`AepLayer::on_session`] takes care of that.
        ///
        /// ```
        /// use std::sync::Arc;
        /// use tracing_subscriber::layer::SubscriberExt;
        ///
        /// let sink = aep_testing::MemorySink::new();
        /// let emitter = aep_async::Emitter::new("my-agent", "host-a", sink.clone());
        /// let session = Arc::new(emitter.session("conv-1"));
        /// let layer = aep_tracing::AepLayer::builder(emitter).session_emitter(session.clone()).build();
        /// tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        ///     tracing::info_span!("execute_tool", gen_ai.operation.name = "execute_tool",
        ///         gen_ai.tool.name = "search").in_scope(|| {
        ///         // the agent's own event, between the span's two
        ///         session.emit("progress.updated", serde_json::json!({"message": "searching"})).unwrap();
        ///     });
        /// });
        /// let seqs: Vec<_> = sink.events().iter().map(|e| (e.event_type().to_owned(), e.seq())).collect();
        /// assert_eq!(seqs, [
        ///     ("tool.requested".to_owned(), Some(0)),
        ///     ("progress.updated".to_owned(), Some(1)),
        ///     ("tool.completed".to_owned(), Some(2)),
        /// ]);
        /// ```
        pub fn session_emitter(session: Arc<SessionEmitter>) => session = DefaultSession::Given(session);
    }

    /// Spans named `name` are of `kind`, whatever their fields (for code that does
    /// not follow the GenAI conventions).
    pub fn span_name(mut self, name: impl Into<Cow<'static, str>>, kind: SpanKind) -> Self {
        self.mapping.span_name(name.into(), kind);
        self
    }

    /// Spans whose operation (`gen_ai.operation.name`, or the field mapped to
    /// [`Attr::Operation`]) is `value` are of `kind`; replaces the convention's
    /// mapping of that value.
    pub fn operation(mut self, value: impl Into<Cow<'static, str>>, kind: SpanKind) -> Self {
        self.mapping.operation(value.into(), Some(kind));
        self
    }

    aep_core::setters! {
        /// Spans whose operation is `value` emit nothing (say `chat`, to leave model calls
        /// out).
        pub fn skip_operation(value: impl Into<Cow<'static, str>>) => self.mapping.operation(value.into(), None);
    }

    /// The field `name` means `attr`; checked before the convention's names, so it
    /// can also remap one of them.
    pub fn field(mut self, name: impl Into<Cow<'static, str>>, attr: Attr) -> Self {
        self.mapping.field(name.into(), attr);
        self
    }

    aep_core::setters! {
        /// Sessions kept at most (default [`DEFAULT_MAX_SESSIONS`]). A session's emitter
        /// is kept while the layer lives, since one forgotten and met again would restart
        /// its `seq` (AEP-0001 §7 rule 2); past the bound, spans naming a new session emit
        /// nothing and are counted in [`LayerStats::refused`].
        pub fn max_sessions(max: usize) => max_sessions = max;
        /// Content kept per field at most (default [`DEFAULT_MAX_CONTENT_BYTES`]): larger
        /// arguments or results are digested and not carried.
        pub fn max_content_bytes(max: usize) => max_content_bytes = max;
    }

    /// The layer behind its filter, ready for `registry().with(..)`.
    pub fn build<S>(self) -> TracingLayer<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let mapping = Arc::new(self.mapping);
        let content = self.emitter.capture_ceiling() >= Capture::Redacted;
        let default = match self.session {
            DefaultSession::Given(session) => session,
            DefaultSession::Named(id) => Arc::new(self.emitter.session(id)),
            DefaultSession::Fresh => Arc::new(
                self.emitter
                    .session(aep_core::envelope::new_ulid(SystemTime::now()).to_string()),
            ),
        };
        let layer = AepLayer {
            shared: Arc::new(Shared {
                mapping: mapping.clone(),
                sessions: Sessions::new(self.emitter, default, self.max_sessions),
                keep: Keep {
                    content,
                    max_content_bytes: self.max_content_bytes,
                },
                counters: Counters::default(),
                last_error: Mutex::new(None),
                #[cfg(feature = "otel")]
                dispatch: std::sync::OnceLock::new(),
            }),
        };
        layer.with_filter(SpanFilter { mapping })
    }
}

impl AepLayer {
    /// A layer emitting on `emitter`; see [`Builder`] for what can be configured.
    pub fn builder(emitter: Emitter) -> Builder {
        Builder {
            emitter,
            session: DefaultSession::Fresh,
            mapping: Mapping::default(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_content_bytes: DEFAULT_MAX_CONTENT_BYTES,
        }
    }

    /// A layer emitting on `session` and its emitter: the events of spans that name no
    /// session, or `session`'s id, go through `session` itself, so an agent holding it
    /// (to [`ask`](aep_async::control::ControlTarget::ask) a person, to emit its own
    /// events) shares one session's positions with its spans; spans naming other
    /// sessions go to sessions of the same emitter. The same as
    /// `AepLayer::builder(session.emitter().clone()).session_emitter(session)`.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use aep_async::control::{ControlTarget, RejectReason};
    /// use aep_async::Emitter;
    /// use aep_core::attention::{AttentionRequest, ALLOW};
    /// use aep_tracing::AepLayer;
    /// use tracing::Instrument;
    /// use tracing_subscriber::layer::SubscriberExt;
    ///
    /// // `sink`: a WsSink whose command hook is `target` (answers come back as commands
    /// // on its connection): `Client::new(url).ws_sink(WsSinkOptions::new(..).command_hook(target.clone()))`.
    /// # async fn run(target: ControlTarget, sink: impl aep_async::Sink) -> Result<(), Box<dyn std::error::Error>> {
    /// let session = target.attach(Emitter::new("my-agent", "host-a", sink).session("conv-1"));
    /// let layer = AepLayer::on_session(session.clone()).build();
    /// tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))?;
    /// let tool = tracing::info_span!("execute_tool", gen_ai.operation.name = "execute_tool",
    ///     gen_ai.tool.name = "deploy");
    /// async {
    ///     let ask = AttentionRequest::permission("Deploy to production?").timeout(Duration::from_secs(300));
    ///     if target.ask(&session, ask).await?.is(ALLOW) { /* deploy */ }
    ///     Ok::<_, Box<dyn std::error::Error>>(())
    /// }
    /// .instrument(tool)
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub fn on_session(session: Arc<SessionEmitter>) -> Builder {
        AepLayer::builder(session.emitter().clone()).session_emitter(session)
    }

    /// What the layer has done so far.
    pub fn stats(&self) -> LayerStats {
        self.shared.stats()
    }

    /// A handle on [`AepLayer::stats`] to keep once the layer is in a subscriber.
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle {
            shared: self.shared.clone(),
        }
    }

    /// The session of spans that name none.
    pub fn default_session(&self) -> &str {
        self.shared.sessions.default_session().session()
    }

    #[cfg(feature = "otel")]
    fn traceparent(&self, id: &Id) -> Option<String> {
        let dispatch = self.shared.dispatch.get()?.upgrade()?;
        crate::otel::traceparent(id, &dispatch)
    }

    #[cfg(not(feature = "otel"))]
    fn traceparent(&self, _id: &Id) -> Option<String> {
        None
    }

    /// The scope of a new span: its session (its own, else its parent's, else the
    /// default), and its run and step.
    fn scope(
        &self,
        kind: SpanKind,
        session: Option<String>,
        parent: Option<Scope>,
    ) -> Option<Scope> {
        let shared = &*self.shared;
        let own = match session {
            Some(id) => match shared.sessions.get(&id) {
                Ok(s) => Some(s),
                Err(why) => {
                    shared.note_error(match why {
                        Refused::Unusable => format!(
                            "session id {id:?} is not usable (empty, over {MAX_SESSION_BYTES} \
                             bytes, or with white space or control characters): the events \
                             of its spans are not emitted; use an id a URI can carry"
                        ),
                        Refused::Full => format!(
                            "session {id:?} is past the layer's max_sessions: the events of \
                             its spans are not emitted; raise Builder::max_sessions"
                        ),
                    });
                    return None;
                }
            },
            None => None,
        };
        let (session, run, step) = match parent {
            Some(p) => (own.unwrap_or(p.session), p.run, p.step),
            None => (
                own.unwrap_or_else(|| shared.sessions.default_session().clone()),
                None,
                None,
            ),
        };
        Some(match kind {
            SpanKind::Run => Scope {
                session,
                run: Some(Arc::new(RunScope::new(
                    aep_core::envelope::new_ulid(SystemTime::now()).to_string(),
                ))),
                step: None,
            },
            SpanKind::Step => {
                let step = match &run {
                    // Steps are numbered within their run, from 1.
                    Some(r) => (r.steps.fetch_add(1, Ordering::Relaxed) + 1).to_string(),
                    None => aep_core::envelope::new_ulid(SystemTime::now()).to_string(),
                };
                Scope {
                    session,
                    run,
                    step: Some(step.into()),
                }
            }
            SpanKind::Tool | SpanKind::Session => Scope { session, run, step },
        })
    }

    fn visitor<'a>(&'a self, record: &'a mut Recorded, event: bool) -> Visitor<'a> {
        Visitor {
            mapping: &self.shared.mapping,
            record,
            keep: self.shared.keep,
            event,
        }
    }

    /// Sends the opening event of a state whose span can open.
    fn open(&self, state: &mut SpanState, span_name: &str) {
        state.started = true;
        let Some(scope) = &state.scope else {
            self.shared.counters.refused.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let common = Common {
            scope,
            traceparent: state.traceparent.as_deref(),
            content: self.shared.keep.content,
        };
        state.start = self
            .shared
            .count(events::start(state.kind, &state.rec, span_name, common));
    }

    /// On entering or exiting: the opening event, once the span can open.
    fn maybe_open<S>(&self, id: &Id, ctx: &Context<'_, S>)
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let Some(span) = ctx.span(id) else { return };
        let due = span
            .extensions()
            .get::<SpanState>()
            .is_some_and(|s| !s.started && s.ready());
        if !due {
            return;
        }
        // Read before taking the extensions: the OpenTelemetry layer locks them too.
        let traceparent = self.traceparent(id);
        let mut ext = span.extensions_mut();
        if let Some(state) = ext.get_mut::<SpanState>() {
            if !state.started {
                state.traceparent = traceparent;
                self.open(state, span.name());
            }
        }
    }
}

impl<S> Layer<S> for AepLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    #[cfg(feature = "otel")]
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        let _ = self.shared.dispatch.set(subscriber.downgrade());
    }

    #[cfg(not(feature = "otel"))]
    fn on_register_dispatch(&self, _subscriber: &Dispatch) {}

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut rec = Recorded::default();
        attrs.record(&mut self.visitor(&mut rec, false));
        let mapping = &self.shared.mapping;
        let kind = mapping
            .kind_of_name(attrs.metadata().name())
            .or(rec.operation);
        let kind = match (kind, &rec.session) {
            (Some(kind), _) => kind,
            (None, Some(_)) => SpanKind::Session,
            // An operation that maps to nothing (embeddings, say): no state at all.
            (None, None) => return,
        };
        let Some(span) = ctx.span(id) else { return };
        // The nearest mapped span around this one (the filtered context skips the
        // spans this layer never sees).
        let parent = span
            .scope()
            .skip(1)
            .find_map(|s| s.extensions().get::<SpanState>().map(|st| st.scope.clone()));
        let scope = match parent {
            // Inside a refused session: refused too.
            Some(None) => None,
            Some(Some(p)) => self.scope(kind, rec.session.take(), Some(p)),
            None => self.scope(kind, rec.session.take(), None),
        };
        span.extensions_mut().insert(SpanState {
            kind,
            scope,
            rec,
            opened: Instant::now(),
            started: kind == SpanKind::Session,
            start: None,
            traceparent: None,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        if let Some(state) = ext.get_mut::<SpanState>() {
            values.record(&mut self.visitor(&mut state.rec, false));
        }
    }

    fn on_event(&self, event: &tracing_core::Event<'_>, ctx: Context<'_, S>) {
        // Only `ERROR` events pass the filter: each fails the nearest span with a
        // terminal around it.
        let Some(span) = ctx.event_span(event) else {
            return;
        };
        for s in span.scope() {
            let mut ext = s.extensions_mut();
            if let Some(state) = ext.get_mut::<SpanState>() {
                if state.kind != SpanKind::Session {
                    state.rec.failed = true;
                    event.record(&mut self.visitor(&mut state.rec, true));
                    return;
                }
            }
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        self.maybe_open(id, &ctx);
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        self.maybe_open(id, &ctx);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(mut state) = span.extensions_mut().remove::<SpanState>() else {
            return;
        };
        if state.kind == SpanKind::Session {
            return;
        }
        if !state.started {
            state.traceparent = self.traceparent(&id);
            self.open(&mut state, span.name());
        }
        let Some(scope) = &state.scope else {
            self.shared.counters.refused.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let duration_ms = u64::try_from(state.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut steps_usage = None;
        if let Some(run) = &scope.run {
            match state.kind {
                SpanKind::Step => {
                    let (i, o) = (state.rec.input_tokens, state.rec.output_tokens);
                    run.input_tokens
                        .fetch_add(i.unwrap_or(0), Ordering::Relaxed);
                    run.output_tokens
                        .fetch_add(o.unwrap_or(0), Ordering::Relaxed);
                }
                SpanKind::Run => {
                    let (i, o) = (
                        run.input_tokens.load(Ordering::Relaxed),
                        run.output_tokens.load(Ordering::Relaxed),
                    );
                    if i > 0 || o > 0 {
                        steps_usage = Some((i, o));
                    }
                }
                _ => {}
            }
        }
        let common = Common {
            scope,
            traceparent: state.traceparent.as_deref(),
            content: self.shared.keep.content,
        };
        let end = End {
            kind: state.kind,
            rec: &state.rec,
            span_name: span.name(),
            started: state.start.as_ref().map(Event::id),
            duration_ms,
            steps_usage,
        };
        self.shared.count(events::end(end, common));
    }
}

/// The layer with every default: `AepLayer::builder(emitter).build()`.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
/// let emitter = aep_async::Emitter::new("a", "h", aep_testing::MemorySink::new());
/// let _subscriber = tracing_subscriber::registry().with(aep_tracing::layer(emitter));
/// ```
pub fn layer<S>(emitter: Emitter) -> TracingLayer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    AepLayer::builder(emitter).build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_opens_once_it_has_a_name() {
        let state = |name: Option<&str>, kind| SpanState {
            kind,
            scope: None,
            rec: Recorded {
                tool_name: name.map(str::to_owned),
                ..Recorded::default()
            },
            opened: Instant::now(),
            started: false,
            start: None,
            traceparent: None,
        };
        assert!(!state(None, SpanKind::Tool).ready());
        assert!(state(Some("search"), SpanKind::Tool).ready());
        assert!(state(None, SpanKind::Run).ready());
    }
}
