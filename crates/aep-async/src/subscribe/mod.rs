//! Consuming: [`Client::subscribe`] returns a [`Subscription`], a `Stream` of events
//! with the consumer duties of AEP-0001 §7 and AEP-0003 §5–7 built in.
//!
//! - `(source, id)` dedupe, bounded (AEP-0001 §7.4);
//! - [`Subscription::positions`]: the latest `(session, epoch, seq)` per session, to
//!   persist and pass back as [`StartFrom::Positions`];
//! - reconnect with exponential backoff, resuming exactly from the positions of what the
//!   caller has taken from the stream or waits for it in the subscription's queue (no
//!   gap; duplicates collapsed before the caller);
//! - a resume set larger than `from_budget` encoded characters: the newest positions
//!   ride the live request, older ones drain first through bounded `live=0` requests;
//! - a 4xx on a resume-carrying request shrinks the set and retries; `from=all`
//!   refused falls back to live-only;
//! - markers and errors go to the [`Notice`] handler, never into the stream.
//!
//! A build without `sse` and `ws` has the types but no [`Transport`] to run them on.
// In such a build nothing constructs a subscription.
#![cfg_attr(not(any(feature = "sse", feature = "ws")), allow(dead_code))]

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use aep_core::dedupe::Dedupe;
use aep_core::resume::{Position, Positions, ResumePosition};
use aep_core::subscription::{Cursor, CursorError, Residual, SubscriptionFilter};
use aep_core::{Capture, Event};
use futures::Stream;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::callback::Callback;
use crate::client::Client;
#[cfg(any(feature = "sse", feature = "ws"))]
use crate::client::{Defaults, Link};
use crate::error::TransportError;

#[cfg(feature = "sse")]
mod sse;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub mod ws;

/// Where a subscription starts (the `from` of AEP-0003 §5, §7).
///
/// ```
/// use aep_async::StartFrom;
/// use aep_core::resume::ResumePosition;
/// let from = StartFrom::Positions(vec![ResumePosition::new("s1", 0, 41)]);
/// assert_ne!(from, StartFrom::All);
/// assert_eq!(StartFrom::default(), StartFrom::Live);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartFrom {
    /// Live delivery only (the default).
    #[default]
    Live,
    /// Replay strictly after each position, then live (AEP-0003 §7).
    Positions(Vec<ResumePosition>),
    /// Replay every session the endpoint holds from its earliest held event, then live
    /// (AEP-0003 §5). An endpoint that refuses it (4xx, or `invalid-filter` on WS)
    /// gets a live-only subscription; the refusal is reported as a [`Notice`].
    All,
}

/// The consuming binding. A variant exists only with its feature (`sse`, `ws`), so
/// naming a binding that is compiled out is a compile error, not a subscription that
/// ends at once; the enum is `#[non_exhaustive]`, so a crate that matches on it keeps
/// compiling when another crate in the build turns the other feature on.
///
/// Without [`SubscribeOptions::transport`], a subscription uses SSE, or WebSocket in a
/// build without the `sse` feature.
///
/// ```
/// # #[cfg(feature = "ws")] {
/// use aep_async::{SubscribeOptions, Transport};
/// let opts = SubscribeOptions::new().transport(Transport::WebSocket);
/// # let _ = opts; }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// Server-Sent Events, `GET {base}/stream` (AEP-0003 §3.3).
    #[cfg(feature = "sse")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sse")))]
    Sse,
    /// WebSocket, `{base}/socket` with `subscribe` frames (AEP-0003 §6.5).
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    WebSocket,
}

/// The binding of a subscription that names none.
#[cfg(feature = "sse")]
const DEFAULT_TRANSPORT: Transport = Transport::Sse;
#[cfg(all(feature = "ws", not(feature = "sse")))]
const DEFAULT_TRANSPORT: Transport = Transport::WebSocket;

/// Something the caller may want to know that is not an event.
///
/// ```
/// use aep_async::Notice;
/// let n = Notice::Comment("hello".into());
/// assert!(matches!(n, Notice::Comment(_)));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Notice {
    /// A connection (or WS subscription) is established; `resume` positions rode it.
    Connected {
        /// Resume positions sent with the request.
        resume: usize,
        /// Whether it asked for `from=all`.
        all: bool,
    },
    /// A requested position predates the endpoint's buffer: events between it and
    /// `earliest` are gone from this endpoint; consult a history store (AEP-0003 §5).
    ReplayExhausted {
        /// The session.
        session: String,
        /// The earliest `(epoch, seq)` the endpoint still holds (delivery resumes there).
        earliest: Position,
    },
    /// The history pass of a `live=false` subscription finished; the stream ends.
    ReplayComplete,
    /// The endpoint is closing the connection deliberately (WS `closing` frame).
    Closing {
        /// The endpoint's reason.
        reason: String,
    },
    /// A WS subscription was refused in-band (`error` frame, AEP-0003 §6.5).
    Refused {
        /// The closed-set code (`invalid-filter`, `limit-exceeded`, ...).
        code: String,
        /// The endpoint's detail, if any.
        detail: Option<String>,
    },
    /// The resume set was refused and is now capped at `cap` positions.
    ResumeShrunk {
        /// The new cap.
        cap: usize,
    },
    /// `from=all` was refused; the subscription continues live-only.
    AllRefused,
    /// Any other SSE comment line (heartbeats excepted).
    Comment(String),
    /// A transport failure: the subscription retries (or, for a failed history pass,
    /// ends); a `Parse` error only dropped one payload.
    Error(TransportError),
}

/// The handler that receives [`Notice`]s.
pub type NoticeHandler = Arc<dyn Fn(Notice) + Send + Sync>;

/// What a subscription asks for and how it behaves; defaults are the Python SDK's. Where
/// it connects, with what token and on what reconnect schedule is the [`Client`]'s.
///
/// | option | default |
/// |---|---|
/// | transport | SSE (WebSocket in a build without `sse`) |
/// | filter | `{}` (everything) |
/// | capture ceiling | none (the endpoint's) |
/// | from | live only |
/// | live | `true` (`history_only()` sets `false`) |
/// | from_budget | 6000 encoded characters |
/// | max_replay_chunks | 20 |
/// | dedupe memory | 50 000 `(source, id)` keys |
///
/// What the relay sends is bounded by the client's [`read_limits`](crate::Client::read_limits): a
/// line, an event or a WebSocket message past its bound, an answer that is not an SSE
/// stream, a stream cut in the middle of an event, or a connection silent past the idle
/// timeout (three missed heartbeats) is reported as a [`Notice::Error`]; the
/// subscription reconnects on its backoff and resumes.
///
/// ```
/// use aep_async::SubscribeOptions;
/// use aep_core::Capture;
/// use serde_json::json;
///
/// let opts = SubscribeOptions::new()
///     .filter(json!({"type": ["attention.*"], "severity": {"gte": "notice"}}))
///     .capture(Capture::Metadata)
///     .from_all()
///     .on_notice(|n| eprintln!("{n:?}"));
/// # let _ = opts;
/// ```
#[derive(Clone, Debug)]
#[must_use = "options do nothing until passed to Client::subscribe"]
pub struct SubscribeOptions {
    pub(crate) filter: Value,
    pub(crate) capture: Option<Capture>,
    pub(crate) from: StartFrom,
    pub(crate) live: bool,
    pub(crate) from_budget: usize,
    pub(crate) max_replay_chunks: usize,
    pub(crate) dedupe_capacity: usize,
    pub(crate) buffer: usize,
    pub(crate) transport: Option<Transport>,
    pub(crate) on_notice: Option<Callback<NoticeHandler>>,
    pub(crate) residual: Option<Residual>,
}

impl Default for SubscribeOptions {
    fn default() -> Self {
        SubscribeOptions {
            filter: Value::Object(Default::default()),
            capture: None,
            from: StartFrom::Live,
            live: true,
            from_budget: 6000,
            max_replay_chunks: 20,
            dedupe_capacity: 50_000,
            buffer: 256,
            transport: None,
            on_notice: None,
            residual: None,
        }
    }
}

impl SubscribeOptions {
    /// The defaults listed above.
    pub fn new() -> Self {
        Self::default()
    }
    /// An attr-match filter (AEP-0003 §6), sent to the endpoint as is. Replaces
    /// [`SubscribeOptions::subscription_filter`].
    pub fn filter(mut self, filter: Value) -> Self {
        self.filter = filter;
        self.residual = None;
        self
    }
    /// A subscription lifecycle filter (type patterns with `*` anywhere, `topic`,
    /// `target`, ...): lowered to an attr-match wire filter any AEP-0003 relay serves,
    /// plus a residual predicate applied here to what the relay delivers. Replaces
    /// [`SubscribeOptions::filter`]. The filter's `from_cursor`
    /// (`{session}:{epoch}:{seq}`, [`aep_core::subscription::Cursor`]) becomes the resume
    /// position ([`StartFrom::Positions`]); a malformed cursor is refused here with a
    /// [`CursorError`] that says why, rather than dropped. The effective delivery mode is
    /// the endpoint's (AEP-0003 §8.4), whatever `delivery_mode` asks.
    ///
    /// ```
    /// use aep_async::SubscribeOptions;
    /// use aep_core::subscription::SubscriptionFilter;
    ///
    /// let f = SubscriptionFilter::new().with_types(["tool.*.progress"])?;
    /// let opts = SubscribeOptions::new().subscription_filter(&f)?;
    /// # let _ = opts;
    /// let bad = f.clone().with_from_cursor("not-a-cursor");
    /// assert!(SubscribeOptions::new().subscription_filter(&bad).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subscription_filter(mut self, filter: &SubscriptionFilter) -> Result<Self, CursorError> {
        let lowered = filter.lower();
        self.filter = lowered.wire().to_value();
        self.residual = (!lowered.residual().is_trivial()).then(|| lowered.residual().clone());
        if let Some(text) = filter.from_cursor() {
            let cursor = Cursor::parse(text)?;
            let at = ResumePosition::new(cursor.session(), cursor.epoch(), cursor.seq());
            self.from = StartFrom::Positions(vec![at]);
        }
        Ok(self)
    }
    aep_core::setters! {
        /// The capture ceiling (AEP-0003 §6.4): the endpoint down-levels before delivery.
        pub fn capture(ceiling: Capture) => capture = Some(ceiling);
        /// Where to start (default [`StartFrom::Live`]).
        pub fn start_from(from: StartFrom) => from = from;
    }
    /// Resume from persisted positions: [`StartFrom::Positions`].
    pub fn from_positions(self, positions: Vec<ResumePosition>) -> Self {
        self.start_from(StartFrom::Positions(positions))
    }
    /// Replay everything the endpoint holds first (AEP-0003 §5): [`StartFrom::All`].
    pub fn from_all(self) -> Self {
        self.start_from(StartFrom::All)
    }
    /// `live=false`: one history pass (SSE `live=0`) that ends at `replay-complete`.
    /// Only the SSE transport offers it.
    pub fn history_only(mut self) -> Self {
        self.live = false;
        self
    }
    aep_core::setters! {
        /// Whether to stay live after the replay (default `true`).
        pub fn live(live: bool) => live = live;
        /// Budget in encoded characters for the positions riding the live request.
        pub fn from_budget(chars: usize) => from_budget = chars;
        /// Most `live=0` drain requests per (re)connect.
        pub fn max_replay_chunks(n: usize) => max_replay_chunks = n;
        /// How many `(source, id)` keys dedupe remembers.
        pub fn dedupe_capacity(n: usize) => dedupe_capacity = n;
        /// The binding (default SSE, or WebSocket in a build without `sse`).
        pub fn transport(t: Transport) => transport = Some(t);
        /// Where [`Notice`]s go (default: `tracing`, errors at `warn`).
        pub fn on_notice(f: impl Fn(Notice) + Send + Sync + 'static) => on_notice = Some(Callback(Arc::new(f)));
    }
}

#[derive(Debug)]
struct SubState {
    dedupe: Dedupe,
    positions: Positions,
    /// The positions of what the transport handed to the queue, taken or not.
    received: Positions,
}

/// State shared between a [`Subscription`] and the task feeding it.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<SubState>,
    pub(crate) cancel: CancellationToken,
    notice: Option<Callback<NoticeHandler>>,
    residual: Option<Residual>,
}

impl Shared {
    fn new(opts: &SubscribeOptions) -> Self {
        let positions = match &opts.from {
            StartFrom::Positions(ps) => ps.iter().cloned().collect(),
            _ => Positions::new(),
        };
        Shared {
            state: Mutex::new(SubState {
                dedupe: Dedupe::with_capacity(opts.dedupe_capacity),
                positions,
                received: Positions::new(),
            }),
            cancel: CancellationToken::new(),
            notice: opts.on_notice.clone(),
            residual: opts.residual.clone(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SubState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Dedupe (AEP-0001 §7.4) and position tracking at the moment an event reaches
    /// the caller. An event the residual filter refuses still advances its session's
    /// position: it was delivered and deliberately skipped.
    fn admit(&self, event: &Event) -> bool {
        let mut st = self.lock();
        if !st.dedupe.insert_event(event) {
            return false;
        }
        st.positions.observe(event);
        drop(st);
        self.residual.as_ref().is_none_or(|r| r.matches(event))
    }

    /// Positions, least recently advanced first (the newest ride a request first).
    pub(crate) fn positions(&self) -> Vec<ResumePosition> {
        self.lock().positions.to_vec()
    }

    /// Notes events the transport hands to the queue, before the caller takes them.
    pub(crate) fn received(&self, events: &[Event]) {
        let mut st = self.lock();
        for event in events {
            st.received.observe(event);
        }
    }

    /// Where a reconnect resumes (AEP-0003 §7): per session, the later of what the
    /// caller has taken and what waits for it in the queue, which is still delivered.
    /// The taken positions alone left out every session whose first events were still
    /// queued when a connection died: the next request had no position for it, so the
    /// relay served it live from then on, and what it stored meanwhile was never sent.
    pub(crate) fn resume_positions(&self) -> Vec<ResumePosition> {
        let st = self.lock();
        let mut positions = st.positions.clone();
        positions.merge(&st.received);
        positions.to_vec()
    }

    pub(crate) fn notify(&self, notice: Notice) {
        match &notice {
            Notice::Error(e) => tracing::warn!(error = %e, "aep subscription"),
            Notice::ReplayExhausted { session, earliest } => {
                tracing::info!(%session, epoch = earliest.epoch(), seq = earliest.seq(), "replay exhausted")
            }
            other => tracing::debug!(notice = ?other, "aep subscription"),
        }
        if let Some(handler) = &self.notice {
            handler(notice);
        }
    }
}

/// A live or history subscription: a `Stream` of events, deduplicated, in delivery
/// order.
///
/// **Why `Item = Event` and not `Result`:** nothing that goes wrong ends the stream
/// early. Network failures and refusals are retried (resuming exactly), a parse failure
/// drops one payload; all of them are reported as [`Notice`]s to the handler given in
/// [`SubscribeOptions::on_notice`]. The stream ends only on [`Subscription::close`], at
/// the end of a `live=false` history pass, or when a history pass or a WS subscription
/// fails for good.
///
/// [`Subscription::positions`] reflects the events the caller has taken from the stream,
/// so persisting it and resuming later loses nothing that was not seen. Dropping the
/// subscription closes it (no runtime needed).
///
/// ```no_run
/// use aep_async::{Client, SubscribeOptions};
/// use futures::StreamExt;
///
/// # async fn run() {
/// let mut sub = Client::new("http://127.0.0.1:8787").subscribe(SubscribeOptions::new());
/// if let Some(event) = sub.next().await {
///     println!("{} {}", event.event_type(), event.id());
/// }
/// let resume_from = sub.positions();
/// sub.close();
/// sub.close(); // idempotent
/// # let _ = resume_from; }
/// ```
#[must_use = "a subscription is closed when dropped: keep it and read it"]
pub struct Subscription {
    rx: mpsc::Receiver<Vec<Event>>,
    buf: VecDeque<Event>,
    shared: Arc<Shared>,
    on_close: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("buffered", &self.buf.len())
            .field("closed", &self.shared.cancel.is_cancelled())
            .finish()
    }
}

impl Subscription {
    pub(crate) fn new(
        opts: &SubscribeOptions,
    ) -> (Subscription, Arc<Shared>, mpsc::Sender<Vec<Event>>) {
        let (tx, rx) = mpsc::channel(opts.buffer.max(1));
        let shared = Arc::new(Shared::new(opts));
        (
            Subscription {
                rx,
                buf: VecDeque::new(),
                shared: shared.clone(),
                on_close: None,
            },
            shared,
            tx,
        )
    }

    #[cfg(feature = "ws")]
    pub(crate) fn set_on_close(&mut self, f: impl FnOnce() + Send + Sync + 'static) {
        self.on_close = Some(Box::new(f));
    }

    /// The latest `(session, epoch, seq)` per session among the events taken from the
    /// stream, least recently advanced first. Persist it; resume with
    /// [`SubscribeOptions::from_positions`].
    ///
    /// A reconnect of this subscription resumes from further on where events wait in
    /// its queue (they are still delivered, so the relay need not send them again);
    /// these positions stay with what was taken, so that a process restarted from them
    /// misses none of those queued events.
    pub fn positions(&self) -> Vec<ResumePosition> {
        self.shared.positions()
    }

    /// Stops the subscription; the stream ends after the events already buffered.
    /// Idempotent, and needs no runtime.
    pub fn close(&mut self) {
        self.shared.cancel.cancel();
        if let Some(f) = self.on_close.take() {
            f();
        }
    }

    /// Whether [`Subscription::close`] was called (or the subscription was dropped).
    pub fn is_closed(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.close();
    }
}

impl Stream for Subscription {
    type Item = Event;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let this = self.get_mut();
        loop {
            while let Some(event) = this.buf.pop_front() {
                if this.shared.admit(&event) {
                    return Poll::Ready(Some(event));
                }
            }
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(batch)) => this.buf.extend(batch),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Client {
    /// Subscribes to the client's relay (or the first reachable of its relays,
    /// [`Relays`](crate::Relays)) with `options`.
    ///
    /// Returns at once; connecting, resuming and reconnecting happen in a background
    /// task on the current tokio runtime. With several relays, a subscription whose relay
    /// fails resumes on the next one from its [positions](Subscription::positions): the
    /// relays of a cluster replay from one shared store, and the subscription's dedupe
    /// drops what the caller has seen, so the caller sees no gap and no duplicate. Called
    /// outside a runtime, the subscription ends at once with a `Network`
    /// [`Notice::Error`]. With [`Transport::WebSocket`] the subscription opens its own
    /// connection; use [`Client::ws_connection`] to multiplex several on one.
    ///
    /// ```no_run
    /// use aep_async::{Client, SubscribeOptions};
    /// use futures::StreamExt;
    ///
    /// # async fn run(saved: Vec<aep_core::resume::ResumePosition>) {
    /// let client = Client::new("http://127.0.0.1:8787").token("secret");
    /// let mut sub = client.subscribe(SubscribeOptions::new().from_positions(saved));
    /// while let Some(event) = sub.next().await {
    ///     // handle it; `sub.positions()` is what to persist
    /// #   let _ = event;
    /// }
    /// # }
    /// ```
    ///
    /// Two relays of a cluster:
    ///
    /// ```no_run
    /// use aep_async::{Client, SubscribeOptions};
    ///
    /// # async fn run() {
    /// let client = Client::new(["http://10.0.0.1:8787", "http://10.0.0.2:8787"]);
    /// let sub = client.subscribe(SubscribeOptions::new());
    /// # let _ = sub; }
    /// ```
    #[cfg(any(feature = "sse", feature = "ws"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sse", feature = "ws"))))]
    pub fn subscribe(&self, options: SubscribeOptions) -> Subscription {
        if self.relays().is_empty() {
            return unavailable(&options, "the client was given no relay URL");
        }
        let link = self.link(Defaults::CONSUMER);
        match options.transport.unwrap_or(DEFAULT_TRANSPORT) {
            #[cfg(feature = "sse")]
            Transport::Sse => subscribe_sse(self, link, options),
            #[cfg(feature = "ws")]
            Transport::WebSocket => subscribe_ws(link, options),
        }
    }
}

/// A subscription that ends at once, having told its notice handler why.
#[cfg(any(feature = "sse", feature = "ws"))]
fn unavailable(options: &SubscribeOptions, why: &str) -> Subscription {
    failed(options, TransportError::network_msg(why.to_owned()))
}

/// A subscription that ends at once with `error` as its notice.
#[cfg(any(feature = "sse", feature = "ws"))]
fn failed(options: &SubscribeOptions, error: TransportError) -> Subscription {
    let (sub, shared, tx) = Subscription::new(options);
    shared.notify(Notice::Error(error));
    drop(tx);
    sub
}

#[cfg(feature = "sse")]
fn subscribe_sse(client: &Client, link: Link, options: SubscribeOptions) -> Subscription {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return unavailable(&options, "Client::subscribe needs a tokio runtime");
    };
    let http = match client.http() {
        Ok(http) => http,
        Err(e) => return failed(&options, e),
    };
    let (sub, shared, tx) = Subscription::new(&options);
    let task = sse::SseTask::new(link, http, options, shared, tx);
    runtime.spawn(task.run());
    sub
}

#[cfg(feature = "ws")]
fn subscribe_ws(link: Link, options: SubscribeOptions) -> Subscription {
    // The subscription holds the only handle: the connection ends with it.
    ws::WsConnection::start(link).subscribe(options)
}
