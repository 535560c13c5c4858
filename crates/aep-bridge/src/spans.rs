//! Sessions, runs and tool calls as OTLP spans: an opt-in export mode beyond AEP-0005,
//! which exports LogRecords (§3.1) and defers span synthesis. The backends people use
//! for agents show traces, so this mode pairs start and finish events into spans with
//! the OpenTelemetry GenAI semantic conventions.
//!
//! | span | opened by | closed by | name | `gen_ai.operation.name` |
//! |---|---|---|---|---|
//! | session | `session.started` | `session.ended` | `session {agent}` | (none) |
//! | run | `run.started` | `run.finished`, `run.failed`, `run.cancelled` | `invoke_agent {agent}` | `invoke_agent` |
//! | tool call | `tool.requested` | `tool.completed`, `tool.failed`, `tool.denied` | `execute_tool {tool}` | `execute_tool` |
//!
//! - Pairing: a session by `(source, session)` (AEP-0001 §5.2), a run by its `run`
//!   within that session, a tool call by `data.tool.call_id`, or else by the finish
//!   event's `cause` naming the request. A `tool.denied` without a request is a
//!   zero-length span (the call never ran).
//! - Nesting: a tool span's parent is its run's span, a run's is its session's.
//! - Trace ids: a span whose start event carries a `traceparent` joins that trace, as a
//!   child of the span it names (the AEP parent, if any, becomes a link); other spans
//!   take their parent's trace, or a trace id derived from `(source, session)`, so every
//!   span of a session lands on one trace. Span ids derive from `(source, id)` of the
//!   start event: the same stream gives the same ids on every run.
//! - Links: a start event whose `cause` names another span's start event links to it.
//! - Other events of an open run or session become span events on it (up to
//!   [`SpanOptions::max_events`] per span).
//! - Attributes: `gen_ai.agent.name`, `gen_ai.conversation.id` (the session),
//!   `gen_ai.tool.name`, `gen_ai.tool.call.id`, the `aep.*` identity, `gen_ai.*` payload
//!   members of the start and finish events (after the capture ceiling), `error.type`
//!   on failures; status `ERROR` for `run.failed`, `tool.failed` and `tool.denied`.
//!
//! Memory is bounded: at most [`SpanOptions::max_open`] spans wait for their finish;
//! past that the oldest is abandoned and counted ([`SpanAssembler::abandoned`]).
//!
//! ```
//! use aep_bridge::spans::{SpanAssembler, SpanOptions};
//! use aep_core::Event;
//!
//! let mut spans = SpanAssembler::new(SpanOptions::default());
//! let start: Event = r#"{"aep":"0.1","id":"01A","type":"run.started","time":"2026-07-03T10:14:01.000Z","source":"aep://h/agent/coder","agent":"coder","session":"s1","run":"r1","seq":1}"#.parse()?;
//! let end: Event = r#"{"aep":"0.1","id":"01B","type":"run.finished","time":"2026-07-03T10:14:03.500Z","source":"aep://h/agent/coder","agent":"coder","session":"s1","run":"r1","seq":2,"data":{"gen_ai.usage.output_tokens":87}}"#.parse()?;
//! assert!(spans.push(&start)?.is_empty());
//! let done = spans.push(&end)?;
//! assert_eq!(done[0].name(), "invoke_agent coder");
//! assert_eq!(done[0].end_time_unix_nano() - done[0].start_time_unix_nano(), 2_500_000_000);
//! assert_eq!(done[0].attribute("gen_ai.usage.output_tokens"), Some(&serde_json::json!(87)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap, VecDeque};

use aep_core::validate::TraceParent;
use aep_core::Event;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1 as proto_trace;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::otlp::{by_service, key_values, resource, scope, time_nanos, trace_parent, OtlpOptions};
use crate::{attrs, CaptureLimit, MapError};

/// Options of span synthesis. Defaults: `max_capture` `metadata` (payload-derived
/// attributes obey it as the logs do), `service.name` from each event's `agent`, at most
/// 10 000 open spans, at most 128 span events per span.
///
/// ```
/// use aep_bridge::spans::SpanOptions;
/// let opts = SpanOptions::new().max_open(100).max_events(0).service_name("fleet");
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanOptions {
    /// The capture ceiling and `service.name`, as the log records have them.
    projection: OtlpOptions,
    max_open: usize,
    max_events: usize,
}

impl Default for SpanOptions {
    fn default() -> Self {
        SpanOptions {
            projection: OtlpOptions::default(),
            max_open: 10_000,
            max_events: 128,
        }
    }
}

impl SpanOptions {
    /// The defaults.
    ///
    /// ```
    /// assert_eq!(aep_bridge::spans::SpanOptions::new(), Default::default());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    aep_core::setters! {
        /// The capture ceiling for payload-derived attributes (AEP-0005 §3.3).
        ///
        /// ```
        /// let o = aep_bridge::spans::SpanOptions::new().capture(aep_bridge::CaptureLimit::default());
        /// # let _ = o;
        /// ```
        pub fn capture(limit: CaptureLimit) => projection.capture = limit;

        /// One `service.name` for every span instead of each event's `agent`.
        ///
        /// ```
        /// let o = aep_bridge::spans::SpanOptions::new().service_name("fleet");
        /// # let _ = o;
        /// ```
        pub fn service_name(name: impl Into<String>) => projection.service_name = Some(name.into());

        /// The capture ceiling and `service.name` of `projection`, the log records' own.
        // the OTLP exporter's (feature `export`) alone
        #[cfg_attr(not(feature = "export"), allow(dead_code))]
        pub(crate) fn projection(projection: OtlpOptions) => projection = projection;

        /// Most spans waiting for their finish event (at least 1).
        ///
        /// ```
        /// let o = aep_bridge::spans::SpanOptions::new().max_open(1);
        /// # let _ = o;
        /// ```
        pub fn max_open(n: usize) => max_open = n.max(1);

        /// Most span events recorded on one span; the rest are counted in the span's
        /// `dropped_events_count`.
        ///
        /// ```
        /// let o = aep_bridge::spans::SpanOptions::new().max_events(16);
        /// # let _ = o;
        /// ```
        pub fn max_events(n: usize) => max_events = n;
    }
}

/// A span's outcome (OTLP `Status`).
///
/// ```
/// use aep_bridge::spans::SpanStatus;
/// assert_ne!(SpanStatus::Unset, SpanStatus::Error("boom".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanStatus {
    /// No claim (a finished run, a completed tool call, an ended session).
    Unset,
    /// A failure, with a description.
    Error(String),
}

/// A time-stamped event inside a span: another AEP event of the run or session.
///
/// ```
/// use aep_bridge::spans::SpanEvent;
/// let e = SpanEvent { name: "dev.aep.attention.requested".into(), time_unix_nano: 1, attributes: vec![] };
/// assert_eq!(e.time_unix_nano, 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    /// `dev.aep.` and the event's type.
    pub name: String,
    /// The event's `time`.
    pub time_unix_nano: u64,
    /// `aep.event_id` and `aep.sequence`.
    pub attributes: Vec<(String, Value)>,
}

/// A link to another span (the span a start event's `cause` names, or the AEP parent of
/// a span that joined a foreign trace).
///
/// ```
/// use aep_bridge::spans::SpanLink;
/// let l = SpanLink { trace_id: [1; 16], span_id: [2; 8], attributes: vec![] };
/// assert_eq!(l.span_id, [2; 8]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SpanLink {
    /// The linked span's trace.
    pub trace_id: [u8; 16],
    /// The linked span.
    pub span_id: [u8; 8],
    /// `aep.link` says why (`cause` or `parent`).
    pub attributes: Vec<(String, Value)>,
}

/// One finished span, before protobuf.
///
/// ```
/// # use aep_bridge::spans::{SpanAssembler, SpanOptions, SpanStatus};
/// # let mut a = SpanAssembler::new(SpanOptions::default());
/// let denied = aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "aep://h/agent/a", "a")
///     .with_session("s").with_subject("Bash");
/// let span = a.push(&denied)?.remove(0);
/// assert_eq!(span.name(), "execute_tool Bash");
/// assert_eq!(span.status(), &SpanStatus::Error("tool.denied".into()));
/// assert_eq!(span.start_time_unix_nano(), span.end_time_unix_nano());
/// # Ok::<(), aep_bridge::MapError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent_span_id: Option<[u8; 8]>,
    flags: u8,
    name: String,
    service_name: String,
    start_time_unix_nano: u64,
    end_time_unix_nano: u64,
    attributes: Vec<(String, Value)>,
    events: Vec<SpanEvent>,
    dropped_events: u32,
    links: Vec<SpanLink>,
    status: SpanStatus,
}

impl Span {
    /// The trace id.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert_ne!(span.trace_id(), [0; 16]);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }
    /// The span id.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert_ne!(span.span_id(), [0; 8]);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }
    /// The parent span, if any.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert_eq!(span.parent_span_id(), None); // no run or session span was open
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn parent_span_id(&self) -> Option<[u8; 8]> {
        self.parent_span_id
    }
    /// The span name (`invoke_agent coder`, `execute_tool Bash`, `session coder`).
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x").with_subject("Bash"))?.remove(0);
    /// assert_eq!(span.name(), "execute_tool Bash");
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The resource's `service.name`.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert_eq!(span.service_name(), "a");
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn service_name(&self) -> &str {
        &self.service_name
    }
    /// The start event's `time`.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "1970-01-01T00:00:02Z", "s", "a").with_session("x"))?.remove(0);
    /// assert_eq!(span.start_time_unix_nano(), 2_000_000_000);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn start_time_unix_nano(&self) -> u64 {
        self.start_time_unix_nano
    }
    /// The finish event's `time` (never before the start).
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "1970-01-01T00:00:02Z", "s", "a").with_session("x"))?.remove(0);
    /// assert!(span.end_time_unix_nano() >= span.start_time_unix_nano());
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn end_time_unix_nano(&self) -> u64 {
        self.end_time_unix_nano
    }
    /// The attributes, in order.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert_eq!(span.attributes().next().map(|(k, _)| k), Some("gen_ai.agent.name"));
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn attributes(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + '_ {
        attrs::pairs(&self.attributes)
    }
    /// One attribute.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert_eq!(span.attribute("gen_ai.operation.name"), Some(&serde_json::json!("execute_tool")));
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn attribute(&self, key: &str) -> Option<&Value> {
        attrs::get(&self.attributes, key)
    }
    /// The span events: the other events of the run or session while it was open.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert!(span.events().is_empty());
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn events(&self) -> &[SpanEvent] {
        &self.events
    }
    /// The links.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert!(span.links().is_empty());
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn links(&self) -> &[SpanLink] {
        &self.links
    }
    /// The status.
    ///
    /// ```
    /// # let span = aep_bridge::spans::SpanAssembler::new(Default::default())
    /// #     .push(&aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "s", "a").with_session("x"))?.remove(0);
    /// assert!(matches!(span.status(), aep_bridge::spans::SpanStatus::Error(_)));
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn status(&self) -> &SpanStatus {
        &self.status
    }

    /// The protobuf span (`opentelemetry.proto.trace.v1.Span`, kind `INTERNAL`).
    ///
    /// ```
    /// # use aep_bridge::spans::{SpanAssembler, SpanOptions};
    /// # let mut a = SpanAssembler::new(SpanOptions::default());
    /// # let denied = aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "aep://h/agent/a", "a").with_session("s");
    /// let span = a.push(&denied)?.remove(0);
    /// let p = span.to_proto();
    /// assert_eq!(p.span_id.len(), 8);
    /// assert_eq!(p.status.map(|s| s.code), Some(2)); // STATUS_CODE_ERROR
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn to_proto(&self) -> proto_trace::Span {
        let (code, message) = match &self.status {
            SpanStatus::Unset => (proto_trace::status::StatusCode::Unset, String::new()),
            SpanStatus::Error(m) => (proto_trace::status::StatusCode::Error, m.clone()),
        };
        proto_trace::Span {
            trace_id: self.trace_id.to_vec(),
            span_id: self.span_id.to_vec(),
            trace_state: String::new(),
            parent_span_id: self.parent_span_id.map(|p| p.to_vec()).unwrap_or_default(),
            flags: u32::from(self.flags),
            name: self.name.clone(),
            kind: proto_trace::span::SpanKind::Internal as i32,
            start_time_unix_nano: self.start_time_unix_nano,
            end_time_unix_nano: self.end_time_unix_nano,
            attributes: key_values(&self.attributes),
            dropped_attributes_count: 0,
            events: self
                .events
                .iter()
                .map(|e| proto_trace::span::Event {
                    time_unix_nano: e.time_unix_nano,
                    name: e.name.clone(),
                    attributes: key_values(&e.attributes),
                    dropped_attributes_count: 0,
                })
                .collect(),
            dropped_events_count: self.dropped_events,
            links: self
                .links
                .iter()
                .map(|l| proto_trace::span::Link {
                    trace_id: l.trace_id.to_vec(),
                    span_id: l.span_id.to_vec(),
                    trace_state: String::new(),
                    attributes: key_values(&l.attributes),
                    dropped_attributes_count: 0,
                    flags: 0,
                })
                .collect(),
            dropped_links_count: 0,
            status: Some(proto_trace::Status {
                message,
                code: code as i32,
            }),
        }
    }
}

/// An OTLP/HTTP traces export request (`POST /v1/traces`): one `ResourceSpans` per
/// `service.name`, first seen first.
///
/// ```
/// # use aep_bridge::spans::{SpanAssembler, SpanOptions, traces_request};
/// # let mut a = SpanAssembler::new(SpanOptions::default());
/// # let denied = aep_core::Event::new("1", "tool.denied", "2026-07-03T10:00:00Z", "aep://h/agent/a", "a").with_session("s");
/// let spans = a.push(&denied)?;
/// assert_eq!(traces_request(&spans).resource_spans.len(), 1);
/// # Ok::<(), aep_bridge::MapError>(())
/// ```
pub fn traces_request(spans: &[Span]) -> ExportTraceServiceRequest {
    let resource_spans = by_service(spans, |s| s.service_name.as_str())
        .into_iter()
        .map(|(service, group)| proto_trace::ResourceSpans {
            resource: Some(resource(service)),
            scope_spans: vec![proto_trace::ScopeSpans {
                scope: Some(scope()),
                spans: group.into_iter().map(Span::to_proto).collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        })
        .collect();
    ExportTraceServiceRequest { resource_spans }
}

/// What a span is, and where it waits for its finish.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Session {
        source: String,
        session: String,
    },
    Run {
        source: String,
        session: String,
        run: String,
    },
    Tool {
        source: String,
        session: String,
        call: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Session,
    Run,
    Tool,
}

/// A span waiting for its finish event.
#[derive(Debug)]
struct Open {
    span: Span,
    /// Where it sits in the eviction order.
    age: u64,
    /// The start event's id (a finish's `cause` may name it).
    start_id: String,
}

/// Where a span can be found by the id of its start event (for `cause` links).
#[derive(Debug, Clone, Copy)]
struct Context {
    trace_id: [u8; 16],
    span_id: [u8; 8],
}

/// How many start events are remembered for `cause` links.
const RECENT: usize = 4096;

/// Pairs start and finish events into [`Span`]s: a sans-IO state machine, fed one event
/// at a time, in stream order. See the [module docs](self) for the rules.
///
/// ```
/// use aep_bridge::spans::{SpanAssembler, SpanOptions};
/// let mut a = SpanAssembler::new(SpanOptions::default());
/// let started = aep_core::Event::new("1", "session.started", "2026-07-03T10:00:00Z", "aep://h/agent/a", "a").with_session("s");
/// assert!(a.push(&started)?.is_empty());
/// assert_eq!(a.open(), 1);
/// # Ok::<(), aep_bridge::MapError>(())
/// ```
#[derive(Debug)]
pub struct SpanAssembler {
    options: SpanOptions,
    open: HashMap<Key, Open>,
    by_age: BTreeMap<u64, Key>,
    next_age: u64,
    recent: HashMap<String, Context>,
    recent_order: VecDeque<String>,
    abandoned: u64,
    unpaired: u64,
}

impl SpanAssembler {
    /// An assembler with no open span.
    ///
    /// ```
    /// let a = aep_bridge::spans::SpanAssembler::new(Default::default());
    /// assert_eq!(a.open(), 0);
    /// ```
    pub fn new(options: SpanOptions) -> Self {
        SpanAssembler {
            options,
            open: HashMap::new(),
            by_age: BTreeMap::new(),
            next_age: 0,
            recent: HashMap::new(),
            recent_order: VecDeque::new(),
            abandoned: 0,
            unpaired: 0,
        }
    }

    /// Spans waiting for their finish event.
    ///
    /// ```
    /// assert_eq!(aep_bridge::spans::SpanAssembler::new(Default::default()).open(), 0);
    /// ```
    pub fn open(&self) -> usize {
        self.open.len()
    }

    /// Spans given up unfinished: evicted past [`SpanOptions::max_open`], or replaced by
    /// a second start of the same session, run or tool call.
    ///
    /// ```
    /// assert_eq!(aep_bridge::spans::SpanAssembler::new(Default::default()).abandoned(), 0);
    /// ```
    pub fn abandoned(&self) -> u64 {
        self.abandoned
    }

    /// Finish events whose start was never seen (a subscription that began midway):
    /// they close nothing and make no span, except `tool.denied`.
    ///
    /// ```
    /// use aep_bridge::spans::SpanAssembler;
    /// let mut a = SpanAssembler::new(Default::default());
    /// let ended = aep_core::Event::new("1", "run.finished", "2026-07-03T10:00:00Z", "s", "a").with_session("s").with_run("r");
    /// assert!(a.push(&ended)?.is_empty());
    /// assert_eq!(a.unpaired(), 1);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn unpaired(&self) -> u64 {
        self.unpaired
    }

    /// Feeds one event; returns the spans it finished (usually none or one).
    ///
    /// Fails, changing nothing, for an event whose `time` is not an RFC 3339 date-time
    /// at or after 1970 or whose `traceparent` is malformed.
    ///
    /// ```
    /// use aep_bridge::spans::SpanAssembler;
    /// let mut a = SpanAssembler::new(Default::default());
    /// let bad = aep_core::Event::new("1", "run.started", "soon", "s", "a");
    /// assert!(a.push(&bad).is_err());
    /// ```
    pub fn push(&mut self, event: &Event) -> Result<Vec<Span>, MapError> {
        let egress = self.options.projection.capture.apply(event);
        let e = egress.event();
        let time = time_nanos(e)?;
        let tp = trace_parent(e)?;
        let data = egress.members();
        let (Some(session), source) = (e.session(), e.source()) else {
            return Ok(Vec::new());
        };
        let session_key = || Key::Session {
            source: source.to_owned(),
            session: session.to_owned(),
        };
        let run_key = |run: &str| Key::Run {
            source: source.to_owned(),
            session: session.to_owned(),
            run: run.to_owned(),
        };
        let call_id = data
            .and_then(|d| d.get("tool"))
            .and_then(|t| t.get("call_id"))
            .and_then(Value::as_str);
        let mut done = Vec::new();
        match e.event_type() {
            "session.started" => {
                self.start(e, Kind::Session, session_key(), None, time, tp, data);
            }
            "run.started" => {
                if let Some(run) = e.run() {
                    let parent = Some(session_key());
                    self.start(e, Kind::Run, run_key(run), parent, time, tp, data);
                }
            }
            "tool.requested" => {
                let call = call_id.unwrap_or(e.id());
                let key = Key::Tool {
                    source: source.to_owned(),
                    session: session.to_owned(),
                    call: call.to_owned(),
                };
                let parent = e.run().map(run_key).or_else(|| Some(session_key()));
                self.start(e, Kind::Tool, key, parent, time, tp, data);
            }
            "session.ended" => done.extend(self.finish(&session_key(), e, time, data)),
            "run.finished" | "run.failed" | "run.cancelled" => {
                if let Some(run) = e.run() {
                    done.extend(self.finish(&run_key(run), e, time, data));
                } else {
                    self.unpaired += 1;
                }
            }
            "tool.completed" | "tool.failed" | "tool.denied" => {
                let key = self.tool_key(source, session, call_id, e.cause());
                match key {
                    Some(key) => done.extend(self.finish(&key, e, time, data)),
                    None if e.event_type() == "tool.denied" => {
                        // A denied call never ran: a zero-length span says so.
                        let parent = e.run().map(run_key).or_else(|| Some(session_key()));
                        let key = Key::Tool {
                            source: source.to_owned(),
                            session: session.to_owned(),
                            call: e.id().to_owned(),
                        };
                        self.start(e, Kind::Tool, key.clone(), parent, time, tp, data);
                        done.extend(self.finish(&key, e, time, data));
                    }
                    None => self.unpaired += 1,
                }
            }
            _ => self.annotate(e, session_key(), e.run().map(run_key), time),
        }
        Ok(done)
    }

    /// The open tool span a finish event closes: by call id, or by `cause` naming the
    /// request.
    fn tool_key(
        &self,
        source: &str,
        session: &str,
        call_id: Option<&str>,
        cause: Option<&str>,
    ) -> Option<Key> {
        if let Some(call) = call_id {
            let key = Key::Tool {
                source: source.to_owned(),
                session: session.to_owned(),
                call: call.to_owned(),
            };
            if self.open.contains_key(&key) {
                return Some(key);
            }
        }
        let cause = cause?;
        self.open
            .iter()
            .find(|(k, o)| {
                matches!(k, Key::Tool { source: s, session: ss, .. } if s == source && ss == session)
                    && o.start_id == cause
            })
            .map(|(k, _)| k.clone())
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        e: &Event,
        kind: Kind,
        key: Key,
        parent: Option<Key>,
        time: u64,
        tp: Option<TraceParent>,
        data: Option<&Map<String, Value>>,
    ) {
        let parent = parent.and_then(|p| self.open.get(&p)).map(|o| Context {
            trace_id: o.span.trace_id,
            span_id: o.span.span_id,
        });
        let span_id = derive::<8>("aep.span", &[e.source(), e.id()]);
        let mut links = Vec::new();
        let (trace_id, parent_span_id, flags) = match (tp, parent) {
            (Some(tp), parent) => {
                if let Some(p) = parent {
                    links.push(link(p, "parent"));
                }
                (tp.trace_id(), Some(tp.span_id()), tp.flags())
            }
            (None, Some(p)) => (p.trace_id, Some(p.span_id), 1),
            (None, None) => {
                let session = e.session().unwrap_or(e.id());
                (derive::<16>("aep.trace", &[e.source(), session]), None, 1)
            }
        };
        let caused = e.cause().and_then(|c| self.recent.get(c)).copied();
        if let Some(c) = caused.filter(|c| Some(c.span_id) != parent_span_id) {
            links.push(link(c, "cause"));
        }
        let agent = e.agent();
        let mut attributes: Vec<(String, Value)> = vec![
            ("gen_ai.agent.name".to_owned(), Value::from(agent)),
            ("aep.agent_id".to_owned(), Value::from(agent)),
            ("aep.source".to_owned(), Value::from(e.source())),
        ];
        if let Some(s) = e.session() {
            attributes.push(("gen_ai.conversation.id".to_owned(), Value::from(s)));
            attributes.push(("aep.session_id".to_owned(), Value::from(s)));
        }
        let name = match kind {
            Kind::Session => format!("session {agent}"),
            Kind::Run => {
                attributes.push(("gen_ai.operation.name".to_owned(), "invoke_agent".into()));
                if let Some(run) = e.run() {
                    attributes.push(("aep.run_id".to_owned(), Value::from(run)));
                }
                format!("invoke_agent {agent}")
            }
            Kind::Tool => {
                attributes.push(("gen_ai.operation.name".to_owned(), "execute_tool".into()));
                if let Some(run) = e.run() {
                    attributes.push(("aep.run_id".to_owned(), Value::from(run)));
                }
                let tool = data
                    .and_then(|d| d.get("tool"))
                    .and_then(|t| t.get("name"))
                    .and_then(Value::as_str)
                    .or(e.subject())
                    .unwrap_or("tool");
                attributes.push(("gen_ai.tool.name".to_owned(), Value::from(tool)));
                let call = data
                    .and_then(|d| d.get("tool"))
                    .and_then(|t| t.get("call_id"));
                if let Some(call) = call {
                    attributes.push(("gen_ai.tool.call.id".to_owned(), call.clone()));
                }
                format!("execute_tool {tool}")
            }
        };
        attributes.push(("aep.start_event_id".to_owned(), Value::from(e.id())));
        hoist(&mut attributes, data);
        let span = Span {
            trace_id,
            span_id,
            parent_span_id,
            flags,
            name,
            service_name: self.options.projection.service_for(agent),
            start_time_unix_nano: time,
            end_time_unix_nano: time,
            attributes,
            events: Vec::new(),
            dropped_events: 0,
            links,
            status: SpanStatus::Unset,
        };
        self.remember(e.id(), Context { trace_id, span_id });
        if self.open.len() >= self.options.max_open && !self.open.contains_key(&key) {
            if let Some((_, oldest)) = self.by_age.pop_first() {
                self.open.remove(&oldest);
                self.abandoned += 1;
            }
        }
        let age = self.next_age;
        self.next_age += 1;
        let replaced = self.open.insert(
            key.clone(),
            Open {
                span,
                age,
                start_id: e.id().to_owned(),
            },
        );
        if let Some(old) = replaced {
            self.by_age.remove(&old.age);
            self.abandoned += 1;
        }
        self.by_age.insert(age, key);
    }

    fn finish(
        &mut self,
        key: &Key,
        e: &Event,
        time: u64,
        data: Option<&Map<String, Value>>,
    ) -> Option<Span> {
        let Some(open) = self.open.remove(key) else {
            self.unpaired += 1;
            return None;
        };
        self.by_age.remove(&open.age);
        let mut span = open.span;
        span.end_time_unix_nano = time.max(span.start_time_unix_nano);
        let ty = e.event_type();
        let outcome = ty.rsplit('.').next().unwrap_or(ty);
        span.attributes
            .push(("aep.outcome".to_owned(), Value::from(outcome)));
        span.attributes
            .push(("aep.end_event_id".to_owned(), Value::from(e.id())));
        let text = |path: &[&str]| {
            let mut v = data?.get(path.first()?.to_owned())?;
            for p in path.get(1..)? {
                v = v.get(p)?;
            }
            v.as_str().map(str::to_owned)
        };
        let error = match ty {
            "run.failed" => Some(text(&["reason"]).unwrap_or_else(|| ty.to_owned())),
            "tool.failed" => Some(text(&["error", "type"]).unwrap_or_else(|| ty.to_owned())),
            "tool.denied" => Some(ty.to_owned()),
            _ => None,
        };
        if let Some(error) = error {
            span.attributes
                .push(("error.type".to_owned(), Value::from(error.as_str())));
            span.status = SpanStatus::Error(error);
        }
        hoist(&mut span.attributes, data);
        Some(span)
    }

    /// Records an event of an open run (or else session) as a span event.
    fn annotate(&mut self, e: &Event, session: Key, run: Option<Key>, time: u64) {
        let max = self.options.max_events;
        let target = match run {
            Some(run) if self.open.contains_key(&run) => run,
            _ => session,
        };
        let Some(open) = self.open.get_mut(&target) else {
            return;
        };
        if open.span.events.len() >= max {
            open.span.dropped_events = open.span.dropped_events.saturating_add(1);
            return;
        }
        let mut attributes = vec![("aep.event_id".to_owned(), Value::from(e.id()))];
        if let Some(seq) = e.seq() {
            attributes.push(("aep.sequence".to_owned(), Value::from(seq)));
        }
        open.span.events.push(SpanEvent {
            name: format!("{}{}", crate::ce::TYPE_ROOT, e.event_type()),
            time_unix_nano: time,
            attributes,
        });
    }

    fn remember(&mut self, id: &str, context: Context) {
        if self.recent.insert(id.to_owned(), context).is_none() {
            self.recent_order.push_back(id.to_owned());
        }
        while self.recent_order.len() > RECENT {
            if let Some(old) = self.recent_order.pop_front() {
                self.recent.remove(&old);
            }
        }
    }
}

/// The `gen_ai.*` members of a surviving payload, as attributes (the OTel-mirror rule
/// of AEP-0005 §3.2, applied to spans); a later value replaces an earlier one.
fn hoist(attributes: &mut Vec<(String, Value)>, data: Option<&Map<String, Value>>) {
    for (k, v) in data.into_iter().flatten() {
        if !k.starts_with("gen_ai.") {
            continue;
        }
        match attributes.iter_mut().find(|(name, _)| name == k) {
            Some((_, old)) => *old = v.clone(),
            None => attributes.push((k.clone(), v.clone())),
        }
    }
}

fn link(to: Context, why: &str) -> SpanLink {
    SpanLink {
        trace_id: to.trace_id,
        span_id: to.span_id,
        attributes: vec![("aep.link".to_owned(), Value::from(why))],
    }
}

/// `N` bytes of SHA-256 over a domain tag and parts (NUL-separated): deterministic ids,
/// never all zero (which OTLP reads as "no id").
fn derive<const N: usize>(domain: &str, parts: &[&str]) -> [u8; N] {
    let mut h = Sha256::new();
    h.update(domain.as_bytes());
    for p in parts {
        h.update([0]);
        h.update(p.as_bytes());
    }
    let digest = h.finalize();
    let mut out = [0u8; N];
    out.copy_from_slice(&digest[..N]);
    if out.iter().all(|b| *b == 0) {
        out[N - 1] = 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: &str, ty: &str, secs: u32) -> Event {
        Event::new(
            id,
            ty,
            format!("2026-07-03T10:00:{secs:02}Z"),
            "aep://h/agent/a",
            "a",
        )
        .with_session("s")
    }

    #[test]
    fn a_session_its_run_and_a_tool_call_nest_on_one_trace() {
        let mut a = SpanAssembler::new(SpanOptions::default());
        let mut done = Vec::new();
        for e in [
            ev("1", "session.started", 0),
            ev("2", "run.started", 1).with_run("r"),
            ev("3", "tool.requested", 2)
                .with_run("r")
                .with_data(serde_json::json!({"tool": {"name": "Bash", "call_id": "t1"}})),
            ev("4", "progress.status", 3).with_run("r"),
            ev("5", "tool.failed", 4)
                .with_run("r")
                .with_data(serde_json::json!({"tool": {"name": "Bash", "call_id": "t1"}, "error": {"type": "Exit"}})),
            ev("6", "run.finished", 5).with_run("r"),
            ev("7", "session.ended", 6),
        ] {
            done.extend(a.push(&e).unwrap());
        }
        let names: Vec<&str> = done.iter().map(Span::name).collect();
        assert_eq!(names, ["execute_tool Bash", "invoke_agent a", "session a"]);
        let (tool, run, session) = (&done[0], &done[1], &done[2]);
        assert!(done.iter().all(|s| s.trace_id == session.trace_id));
        assert_eq!(session.parent_span_id, None);
        assert_eq!(run.parent_span_id, Some(session.span_id));
        assert_eq!(tool.parent_span_id, Some(run.span_id));
        assert_eq!(tool.status, SpanStatus::Error("Exit".into()));
        assert_eq!(run.events.len(), 1);
        assert_eq!(a.open(), 0);
        assert_eq!((a.abandoned(), a.unpaired()), (0, 0));
    }

    #[test]
    fn open_spans_are_bounded() {
        let mut a = SpanAssembler::new(SpanOptions::new().max_open(2));
        for i in 0..5 {
            let e = ev(&format!("r{i}"), "run.started", 0).with_run(format!("r{i}"));
            a.push(&e).unwrap();
        }
        assert_eq!(a.open(), 2);
        assert_eq!(a.abandoned(), 3);
        let late = ev("x", "run.finished", 1).with_run("r0");
        assert!(a.push(&late).unwrap().is_empty());
        assert_eq!(a.unpaired(), 1);
        let kept = ev("y", "run.finished", 1).with_run("r4");
        assert_eq!(a.push(&kept).unwrap().len(), 1);
    }

    #[test]
    fn a_traceparent_puts_the_span_on_its_trace() {
        let mut a = SpanAssembler::new(SpanOptions::default());
        a.push(&ev("1", "session.started", 0)).unwrap();
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        a.push(&ev("2", "run.started", 1).with_run("r").with_traceparent(tp))
            .unwrap();
        let run = a
            .push(&ev("3", "run.finished", 2).with_run("r"))
            .unwrap()
            .remove(0);
        assert_eq!(hex_of(&run.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(
            run.parent_span_id.map(|p| hex_of(&p)).as_deref(),
            Some("00f067aa0ba902b7")
        );
        assert_eq!(run.links.len(), 1, "the session span becomes a link");
    }

    fn hex_of(b: &[u8]) -> String {
        crate::otlp::hex(b)
    }
}
