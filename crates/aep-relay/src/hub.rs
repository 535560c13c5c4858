//! The shared state of one relay: the replay store, the live subscriptions and the
//! WebSocket connections, and the order in which accepted events reach them.
//!
//! One lock guards the subscriptions and the connections; it is held only for
//! bookkeeping, never across a write to a socket or a wait for the store. An ingest
//! admits its batch (admission, routing, the store's admission) and takes the list of
//! readers under it, and a subscription is registered and its replay bounded (by the
//! store's stamp) under it too, so every event reaches a new subscriber exactly once: by
//! replay or live, never both, never neither. With a store several relays share, its
//! feed takes the lock in place of ingest for the events it delivers (see `storage`).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use aep_core::resume::{ReplayStart, ResumeFrom};
use aep_core::Capture;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::admission::{self, Rules};
use crate::config::RelayConfig;
use crate::fanout::{self, Sub, Subscribers};
use crate::journal::{self, Disk, Fs, Journal};
use crate::line::Incoming;
use crate::memory::Memory;
use crate::outbox::{self, Binding, Bounds, End, Outbox, ReplayJob};
use crate::proto::Filter;
use crate::routing::{self, Connections, Party, RosterTooLarge};
use crate::storage::{
    Admitted, Admitting, Backend, Feed, Limits, ReplayFrom, Stamp, Storage, Unstored,
};

#[derive(Debug)]
struct State {
    subs: Subscribers,
    conns: Connections,
    /// With a feed: the stamp of the last event fan-out has taken from it, which bounds
    /// a new subscription's replay (none: ingest fans out, bounded by the store's stamp).
    fed: Option<Stamp>,
}

/// What a new subscription replays before going live (AEP-0003 §5).
#[derive(Debug, Default)]
pub(crate) struct ReplayAsk {
    pub(crate) positions: Vec<ResumeFrom>,
    pub(crate) all: bool,
    /// `live=0` also serves the history of the one session the filter names.
    pub(crate) filter_session: bool,
}

impl ReplayAsk {
    /// What the store is asked for, if anything.
    fn from(self, filter: &Filter) -> Option<ReplayFrom> {
        if self.all {
            // holds the filter's session already: adding it again sent it twice
            return Some(ReplayFrom::All);
        }
        let mut sessions = self.positions;
        if let Some(session) = filter.session().filter(|_| self.filter_session) {
            if !sessions.iter().any(|p| p.session() == session) {
                sessions.push(ResumeFrom::new(session, ReplayStart::EARLIEST));
            }
        }
        (!sessions.is_empty()).then_some(ReplayFrom::Sessions(sessions))
    }
}

/// A subscription to register: one SSE stream, one WebSocket `subscribe`, or one of the
/// subscription model's (see [`Hub::subscribe`]).
#[derive(Debug)]
pub(crate) struct SubscribeRequest {
    pub(crate) binding: Binding,
    pub(crate) filter: Filter,
    pub(crate) capture: Option<Capture>,
    pub(crate) replay: ReplayAsk,
    /// Registered for live delivery after its replay; `false` (`live=0`): replay only.
    pub(crate) live: bool,
    /// The WebSocket connection it is made on and its id there: a later one of the
    /// same id replaces it, and closing the connection ends it.
    pub(crate) conn: Option<(u64, String)>,
    /// The subscription id its replay markers echo (`replay-exhausted`); none on SSE.
    pub(crate) sub: Option<String>,
    /// Queued before the replay (the `subscribed` frame).
    pub(crate) first: Option<Bytes>,
}

impl SubscribeRequest {
    /// A live subscription on `binding` with `filter`, replaying nothing, no ceiling.
    pub(crate) fn new(binding: Binding, filter: Filter) -> SubscribeRequest {
        SubscribeRequest {
            binding,
            filter,
            capture: None,
            replay: ReplayAsk::default(),
            live: true,
            conn: None,
            sub: None,
            first: None,
        }
    }
}

/// The relay's shared state.
#[derive(Debug)]
pub(crate) struct Hub {
    pub(crate) config: RelayConfig,
    state: Mutex<State>,
    storage: Box<dyn Storage>,
    /// A shared store's feed, until the server starts fanning it out.
    feed: Untaken,
    started: Instant,
    next_id: AtomicU64,
    /// Live subscriptions that need each event parsed (a filter on more than the session,
    /// or a capture ceiling), readable without the lock.
    parsing: Arc<AtomicUsize>,
    shutting_down: AtomicBool,
    /// Cancelled once the drain timeout of a shutdown has passed: every connection still
    /// open then is dropped.
    stopped: CancellationToken,
}

/// A feed not taken yet.
struct Untaken(Mutex<Option<Feed>>);

impl std::fmt::Debug for Untaken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feed")
    }
}

/// The store the configuration asks for: the journal with a data directory (writing
/// through `disk`), the in-memory buffers without.
fn open_backend(config: &RelayConfig, disk: Box<dyn Disk>) -> std::io::Result<Backend> {
    let limits = Limits {
        events: config.buffer,
        session_bytes: config.max_session_bytes,
        sessions: config.max_sessions,
        bytes: config.max_store_bytes,
    };
    Ok(match &config.data_dir {
        Some(dir) => {
            let options = journal::Options {
                fsync: config.fsync,
                interval: config.fsync_interval,
                limits,
            };
            Backend::local(Journal::open(dir, options, disk)?)
        }
        None => Backend::local(Memory::new(limits)),
    })
}

impl Hub {
    /// The shared state; with a data directory, the buffers it holds are restored.
    pub(crate) fn new(config: RelayConfig) -> std::io::Result<Hub> {
        Hub::with_disk(config, Box::new(Fs::default()))
    }

    /// [`Hub::new`] with the journal writing through `disk`.
    pub(crate) fn with_disk(config: RelayConfig, disk: Box<dyn Disk>) -> std::io::Result<Hub> {
        let backend = open_backend(&config, disk)?;
        Ok(Hub::with_backend(config, backend))
    }

    /// The shared state over `backend`.
    pub(crate) fn with_backend(config: RelayConfig, backend: Backend) -> Hub {
        let subs = Subscribers::default();
        let fed = backend.feed.is_some().then(|| backend.storage.stamp());
        Hub {
            config,
            parsing: subs.parsing(),
            state: Mutex::new(State {
                subs,
                conns: Connections::default(),
                fed,
            }),
            storage: backend.storage,
            feed: Untaken(Mutex::new(backend.feed)),
            started: Instant::now(),
            next_id: AtomicU64::new(1),
            shutting_down: AtomicBool::new(false),
            stopped: CancellationToken::new(),
        }
    }

    /// Waits until the store has written everything admitted so far (a shutdown's last
    /// step).
    pub(crate) fn flush(&self) {
        self.storage.flush();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic elsewhere must not take the relay down with it: the state stays usable
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh queue sized by the configured bounds; `shed` is cancelled if its reader
    /// is disconnected past the hard bound (see [`Outbox::shed`]).
    pub(crate) fn outbox(
        &self,
        shed: CancellationToken,
    ) -> (
        Arc<Outbox>,
        tokio::sync::mpsc::UnboundedReceiver<outbox::Item>,
    ) {
        let bounds = Bounds {
            soft: self.config.soft_backpressure,
            hard: self.config.hard_backpressure,
            grace: self.config.lag_grace,
        };
        Outbox::new(bounds, shed)
    }

    /// Whether a live subscription needs parsed events now; ingest keeps them only then.
    pub(crate) fn needs_parsed(&self) -> bool {
        self.parsing.load(Ordering::Acquire) > 0
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// Cancelled when the relay has stopped: what is still open closes at once.
    pub(crate) fn stopped(&self) -> &CancellationToken {
        &self.stopped
    }

    // ---- ingest -----------------------------------------------------------------------

    /// Accepts a batch already checked whole: admission and the store's admission under
    /// the lock, then fan-out in order, each subscriber getting its events in runs; then
    /// the store's answer.
    ///
    /// `Err` when the store could not keep the batch (a full disk): nothing of it is
    /// held then, so the emitter is not told it was stored, and its retry is admitted
    /// anew. Live readers may have had the events meanwhile: to them the retry is a
    /// duplicate, as AEP-0001 §7.4 allows.
    pub(crate) async fn ingest<'a, 't: 'a, I>(
        &self,
        batch: I,
        from_conn: Option<u64>,
    ) -> Result<(), Unstored>
    where
        I: IntoIterator<Item = &'a Incoming<'t>> + Clone,
    {
        let (subs, fan_out, admitting) = {
            let mut st = self.lock();
            let rules = Rules {
                authenticated: self.config.token.is_some(),
                fed: st.fed.is_some(),
            };
            let plan = admission::plan(&mut st.conns, batch.clone(), from_conn, rules);
            let admitting = match plan.stored.as_slice() {
                [] => Admitting::Done(Default::default()),
                stored => self.storage.admit(stored),
            };
            (st.subs.list(), plan.fan_out, admitting)
        };
        if !subs.is_empty() {
            let events = batch
                .into_iter()
                .zip(fan_out)
                .filter_map(|(e, go)| go.then_some(e));
            fanout::fan_out(&subs, events).await;
        }
        admitting.stored().await.map(drop)
    }

    /// Fans out what a shared store's feed yields, until it ends; `None` when the store
    /// has no feed (or it is fanned out already). The server runs it while it serves.
    pub(crate) fn feed(self: &Arc<Hub>) -> Option<impl Future<Output = ()> + Send + 'static> {
        let mut feed = self
            .feed
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        let hub = self.clone();
        Some(async move {
            while let Some(admitted) = feed.next().await {
                hub.fan_out_fed(admitted).await;
            }
        })
    }

    async fn fan_out_fed(&self, admitted: Admitted) {
        let subs = {
            let mut st = self.lock();
            if st.fed.is_some_and(|fed| admitted.stamp <= fed) {
                return;
            }
            st.fed = Some(admitted.stamp);
            st.subs.list()
        };
        if !subs.is_empty() {
            let batch: Vec<Incoming<'static>> =
                admitted.events.into_iter().map(Incoming::stored).collect();
            fanout::fan_out(&subs, &batch).await;
        }
    }

    // ---- subscriptions ------------------------------------------------------------------

    /// Registers a subscription (when `live`) and queues its replay, atomically with
    /// respect to fan-out, toward `outbox`; its hub id.
    pub(crate) fn subscribe(&self, outbox: &Arc<Outbox>, request: SubscribeRequest) -> u64 {
        let SubscribeRequest {
            binding,
            filter,
            capture,
            replay,
            live,
            conn,
            sub,
            first,
        } = request;
        let replay = replay.from(&filter);
        let filter = Arc::new(filter);
        let id = self.id();
        let mut st = self.lock();
        if let Some(bytes) = first {
            outbox.push_frame(bytes);
        }
        if let Some(from) = replay {
            let upto = st.fed.unwrap_or_else(|| self.storage.stamp());
            outbox.push_replay(ReplayJob {
                replay: self.storage.replay(from, upto),
                filter: filter.clone(),
                capture,
                sub,
            });
        }
        if live {
            let conn_id = conn.as_ref().map(|(c, _)| *c);
            if let Some((c, key)) = conn {
                // re-using an id replaces that subscription
                if let Some(old) = st.conns.add_subscription(c, key, id) {
                    st.subs.remove(old);
                }
            }
            st.subs.add(Sub {
                id,
                conn: conn_id,
                filter,
                capture,
                binding,
                outbox: outbox.clone(),
            });
        }
        id
    }
    /// Removes one subscription by hub id (an SSE stream that ended).
    pub(crate) fn unsubscribe(&self, id: u64) {
        let mut st = self.lock();
        st.subs.remove(id);
    }

    /// Removes a WebSocket subscription by its client id; `false` when there was none.
    pub(crate) fn unsubscribe_ws(&self, conn: u64, key: &str) -> bool {
        let mut st = self.lock();
        let Some(id) = st.conns.remove_subscription(conn, key) else {
            return false;
        };
        st.subs.remove(id);
        true
    }

    // ---- connections --------------------------------------------------------------------

    pub(crate) fn connect(&self, outbox: Arc<Outbox>) -> u64 {
        let id = self.id();
        self.lock().conns.connect(id, outbox);
        id
    }

    pub(crate) fn hello(&self, conn: u64, party: Arc<Party>) {
        self.lock().conns.hello(conn, party);
    }

    pub(crate) fn disconnect(&self, conn: u64) {
        let mut st = self.lock();
        for id in st.conns.disconnect(conn) {
            st.subs.remove(id);
        }
    }

    /// WebSocket subscriptions (`subscribe`) a connection holds, but for `besides`.
    pub(crate) fn subscriptions_of(&self, conn: u64, besides: Option<&str>) -> usize {
        self.lock().conns.subscriptions_of(conn, besides)
    }

    /// The `roster` reply to request `id` (AEP-0003 §4.1), built outside the lock from
    /// a snapshot of the claims and never past `limit` bytes.
    pub(crate) fn roster_reply(&self, id: &str, limit: usize) -> Result<String, RosterTooLarge> {
        let claims = self.lock().conns.claims();
        routing::roster_reply(id, &claims, limit)
    }

    // ---- introspection ------------------------------------------------------------------

    fn uptime(&self) -> u64 {
        (self.started.elapsed().as_millis() as u64 + 500) / 1000
    }

    /// `/healthz` counts.
    pub(crate) fn counts(&self) -> Value {
        let sessions = self.storage.sessions();
        let st = self.lock();
        json!({
            "sessions": sessions,
            "subscribers": st.subs.len(),
            "connections": st.conns.len(),
            "uptime_s": self.uptime(),
        })
    }

    /// The `/connections` document.
    pub(crate) fn connections(&self) -> Value {
        let (sessions, held) = (self.storage.sessions(), self.storage.held_bytes());
        let st = self.lock();
        let connections = st.conns.describe();
        let sse = st.subs.sse();
        let dropped = st.subs.dropped();
        json!({
            "ok": true,
            "relay": {
                "sessions": sessions,
                "subscribers": st.subs.len(),
                "connections": st.conns.len(),
                "uptime_s": self.uptime(),
                "control": self.config.token.is_some(),
                "buffered_bytes": held,
                "dropped": dropped,
            },
            "connections": connections,
            "sse_subscribers": sse,
        })
    }

    /// Tells every reader the relay is going away (SSE `: shutting-down`, WS 1001).
    pub(crate) fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        let st = self.lock();
        st.subs.end_streams(End::Shutdown);
        st.conns.end_all(End::Shutdown);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::tests::LINE;
    use crate::line::{parse_line, read_event, Reading};
    use crate::outbox::{Drain, Piece};
    use crate::proto;
    use crate::storage::{Admitted, Backend};

    /// Fan-out of an event read in place reaches the readers a parsed one reaches, and a
    /// reader that lowers `capture` gets the lowered event.
    #[tokio::test]
    async fn a_websocket_event_read_in_place_fans_out_as_a_parsed_one() {
        let line = std::str::from_utf8(LINE).unwrap().replace(
            r#""data":{}"#,
            r#""capture":"full","acme":"x","data":{"status":"reading"}"#,
        );
        let mut lowered_once = Vec::new();
        for in_place in [true, false] {
            let hub = Hub::new(RelayConfig::default()).unwrap();
            let mut by_session = reader(&hub, json!({ "session": "s1" }));
            let mut by_type = reader(&hub, json!({ "type": "progress.*", "agent": "a" }));
            let mut other_type = reader(&hub, json!({ "type": "tool.started" }));
            let mut severe = reader(&hub, json!({ "severity": { "gte": "warning" } }));
            let mut notice = reader(&hub, json!({ "severity": { "gte": "notice" } }));
            let mut by_ext = reader(&hub, json!({ "acme": "x" }));
            let ceiling_at = |filter: Value, capture: Capture| {
                let (outbox, rx) = hub.outbox(CancellationToken::new());
                let filter = proto::parse_filter(&filter).unwrap();
                let mut request = SubscribeRequest::new(Binding::Ws, filter);
                request.capture = Some(capture);
                hub.subscribe(&outbox, request);
                Drain::new(rx, outbox, Binding::Ws, std::time::Duration::from_secs(60))
            };
            let ceiling = |filter: Value| ceiling_at(filter, Capture::Metadata);
            let mut lowered = ceiling(json!({}));
            let mut lowered_other = ceiling(json!({ "session": "s2" }));
            let mut roomy = ceiling_at(json!({ "session": "s1" }), Capture::Full);
            let mut slot = None;
            let incoming = if in_place {
                read_event(&line, &mut slot).unwrap()
            } else {
                parse_line(line.as_bytes(), true).unwrap()
            };
            assert_eq!(matches!(incoming.reading, Reading::InPlace(_)), in_place);
            hub.ingest(std::slice::from_ref(&incoming), Some(7))
                .await
                .unwrap();
            let sse = incoming.encoded.sse();
            assert_eq!(next_data(&mut by_session), Some(sse.clone()));
            assert_eq!(next_data(&mut by_type), Some(sse));
            assert_eq!(next_data(&mut other_type), None);
            assert_eq!(next_data(&mut severe), None);
            assert_eq!(next_data(&mut notice), Some(incoming.encoded.sse()));
            assert_eq!(next_data(&mut by_ext), Some(incoming.encoded.sse()));
            assert_eq!(next_data(&mut lowered_other), None);
            // a ceiling at or above the event's level forwards it as received
            assert_eq!(next_data(&mut roomy), Some(incoming.encoded.json()));
            let got = next_data(&mut lowered).unwrap();
            let got: Value = serde_json::from_slice(&got).unwrap();
            // lowered from `full`, and the same bytes either way
            assert_eq!(got["capture"], "metadata", "in place: {in_place}");
            lowered_once.push(got);
        }
        assert_eq!(lowered_once[0], lowered_once[1]);
    }

    /// The events `hub`'s store holds of `session`.
    fn held(hub: &Hub, session: &str) -> usize {
        let from = ResumeFrom::new(session, ReplayStart::EARLIEST);
        crate::memory::tests::replayed(&*hub.storage, ReplayFrom::Sessions(vec![from])).len()
    }

    /// Subscribes a live SSE reader with `filter` and returns its drain.
    fn reader(hub: &Hub, filter: Value) -> Drain {
        let (outbox, rx) = hub.outbox(CancellationToken::new());
        let filter = proto::parse_filter(&filter).unwrap();
        hub.subscribe(&outbox, SubscribeRequest::new(Binding::Sse, filter));
        Drain::new(rx, outbox, Binding::Sse, std::time::Duration::from_secs(60))
    }

    /// The JSON of one SSE message.
    fn sse_data(message: &[u8]) -> &[u8] {
        let start = memchr::memmem::find(message, b"data: ").unwrap() + 6;
        let end = start + memchr::memchr(b'\n', &message[start..]).unwrap();
        &message[start..end]
    }

    fn next_data(drain: &mut Drain) -> Option<Bytes> {
        match drain.try_next() {
            Some(Piece::Data(bytes)) => Some(bytes),
            _ => None,
        }
    }

    #[tokio::test]
    async fn an_event_parsed_while_nobody_listened_still_reaches_a_new_subscriber() {
        let hub = Hub::new(RelayConfig::default()).unwrap();
        assert!(!hub.needs_parsed());
        let incoming = parse_line(LINE, hub.needs_parsed()).unwrap();
        assert!(matches!(incoming.reading, Reading::BytesOnly));
        assert_eq!(incoming.session(), Some("s1"));
        // subscribers arrive between parsing and ingest: the session alone is decided on
        // the frame, anything else parses the event again
        let mut by_session = reader(&hub, json!({ "session": "s1" }));
        let mut other_session = reader(&hub, json!({ "session": "s2" }));
        let mut everything = reader(&hub, json!({}));
        assert!(!hub.needs_parsed());
        let mut by_type = reader(&hub, json!({ "type": "progress.status", "session": "s1" }));
        let mut other_type = reader(&hub, json!({ "type": "tool.started" }));
        assert!(hub.needs_parsed());
        hub.ingest(std::slice::from_ref(&incoming), None)
            .await
            .unwrap();
        let sse = incoming.encoded.sse();
        assert_eq!(next_data(&mut by_session), Some(sse.clone()));
        assert_eq!(next_data(&mut everything), Some(sse.clone()));
        assert_eq!(next_data(&mut by_type), Some(sse));
        assert_eq!(next_data(&mut other_session), None);
        assert_eq!(next_data(&mut other_type), None);
        // and it was buffered under its session
        assert_eq!(held(&hub, "s1"), 1);
    }

    fn line(id: &str, seq: u64) -> Vec<u8> {
        format!(r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"s1","seq":{seq},"severity":"notice","data":{{}}}}"#).into_bytes()
    }

    /// An ingest that must wait for a slow reader first hands every other reader the
    /// whole batch, and waits for that one reader only; a second ingest meanwhile does
    /// not wait at all (AEP-0003 §8.4: a lagging reader never holds anyone up).
    #[tokio::test]
    async fn a_slow_reader_holds_back_neither_the_others_nor_a_second_ingest() {
        let e1 = parse_line(&line("e1", 1), true).unwrap();
        // one event fits under the soft bound, a second does not
        let soft = e1.encoded.sse().len() + 150;
        let cfg = RelayConfig::default()
            .with_soft_backpressure(soft)
            .with_hard_backpressure(1 << 20)
            .with_lag_grace(std::time::Duration::from_secs(10));
        let hub = Hub::new(cfg).unwrap();
        let mut fast = reader(&hub, json!({}));
        let _slow = reader(&hub, json!({})); // never read
        hub.ingest(std::slice::from_ref(&e1), None).await.unwrap();
        assert!(next_data(&mut fast).is_some(), "e1 reaches the fast reader");
        let batch = [
            parse_line(&line("e2", 2), true).unwrap(),
            parse_line(&line("e3", 3), true).unwrap(),
        ];
        let first = hub.ingest(&batch, None);
        tokio::pin!(first);
        let r = tokio::time::timeout(std::time::Duration::from_millis(100), &mut first).await;
        assert!(
            r.is_err(),
            "the ingest waits for the slow reader (lag grace)"
        );
        let mut ids = Vec::new();
        let mut read = |fast: &mut Drain| {
            while let Some(got) = next_data(fast) {
                let event = aep_core::Event::from_slice(sse_data(&got)).unwrap();
                ids.push(event.id().to_owned());
            }
        };
        // the fast reader has the whole batch though the ingest has not finished
        read(&mut fast);
        let e4 = parse_line(&line("e4", 4), true).unwrap();
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            hub.ingest(std::slice::from_ref(&e4), None),
        )
        .await
        .expect("a second ingest does not wait for the reader the first waits for")
        .unwrap();
        read(&mut fast);
        // the batch was admitted whole
        assert_eq!(held(&hub, "s1"), 4);
        assert_eq!(ids, ["e2", "e3", "e4"]);
    }

    fn typed(id: &str, ty: &str, seq: u64) -> Vec<u8> {
        format!(r#"{{"aep":"0.1","id":"{id}","type":"{ty}","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"s1","seq":{seq},"data":{{}}}}"#).into_bytes()
    }

    /// Two subscriptions on one connection splitting a session by type: the connection
    /// still gets the session in `seq` order (AEP-0003 §7 resumes by high-water mark).
    #[tokio::test]
    async fn one_connection_with_two_subscriptions_gets_a_session_in_order() {
        in_order_on_one_connection(0).await;
        // past the handful that is scanned: the queue map groups them the same way
        in_order_on_one_connection(10).await;
    }

    async fn in_order_on_one_connection(others: usize) {
        let hub = Hub::new(RelayConfig::default()).unwrap();
        let (outbox, rx) = hub.outbox(CancellationToken::new());
        let live = |outbox: &Arc<Outbox>, ty: &str| {
            let filter = proto::parse_filter(&json!({ "type": ty })).unwrap();
            hub.subscribe(outbox, SubscribeRequest::new(Binding::Ws, filter));
        };
        for i in 0..others {
            let (other, _rx) = hub.outbox(CancellationToken::new());
            live(&other, &format!("x.other.t{i}"));
        }
        for ty in ["progress.status", "tool.called"] {
            live(&outbox, ty);
        }
        let mut drain = Drain::new(rx, outbox, Binding::Ws, std::time::Duration::from_secs(60));
        let batch = [
            parse_line(&typed("p1", "progress.status", 1), true).unwrap(),
            parse_line(&typed("t2", "tool.called", 2), true).unwrap(),
            parse_line(&typed("p3", "progress.status", 3), true).unwrap(),
        ];
        hub.ingest(&batch, None).await.unwrap();
        let mut ids = Vec::new();
        while let Some(b) = next_data(&mut drain) {
            ids.push(aep_core::Event::from_slice(&b).unwrap().id().to_owned());
        }
        assert_eq!(ids, ["p1", "t2", "p3"], "wire order on the connection");
    }

    /// A batch the journal cannot write is not stored: the ingest says so, the buffer
    /// does not keep it, and the same batch sent again once the disk has room is
    /// admitted anew (the dedupe would otherwise take it for stored).
    #[tokio::test]
    async fn a_batch_the_journal_cannot_write_is_not_kept() {
        use crate::journal::testing::{Faulty, TempDir};
        let dir = TempDir::new();
        let disk = Faulty::default();
        let config = RelayConfig::default().with_data_dir(&dir.0);
        let hub = Hub::with_disk(config, Box::new(disk.clone())).unwrap();
        let batch = [
            parse_line(&line("e1", 1), false).unwrap(),
            parse_line(&line("e2", 2), false).unwrap(),
        ];
        disk.full.store(true, Ordering::SeqCst);
        let unstored = hub.ingest(&batch, None).await.unwrap_err();
        assert_eq!(unstored.0.kind(), std::io::ErrorKind::StorageFull);
        assert!(held(&hub, "s1") == 0);
        disk.full.store(false, Ordering::SeqCst);
        hub.ingest(&batch, None).await.unwrap();
        assert_eq!(held(&hub, "s1"), 2);
    }

    /// A store two relays share, as a cluster's stream would be: one set of buffers,
    /// each admission yielded once, in stamp order, to every relay's feed, and answered
    /// only after a round trip, as a remote acknowledgement is.
    #[derive(Debug)]
    struct Shared {
        memory: Memory,
        feeds: Mutex<Vec<futures::channel::mpsc::UnboundedSender<Admitted>>>,
    }

    #[derive(Debug)]
    struct Relay(Arc<Shared>);

    impl Storage for Relay {
        fn admit(&self, events: &[&crate::encoded::Encoded]) -> Admitting {
            // one lock over admission and publication keeps the feeds in stamp order
            let mut feeds = self.0.feeds.lock().unwrap();
            let before = self.0.memory.stamp();
            let Admitting::Done(outcomes) = self.0.memory.admit(events) else {
                unreachable!("the memory store answers at once");
            };
            let held: Vec<_> = events
                .iter()
                .zip(&outcomes)
                .filter(|(_, o)| **o == crate::storage::Outcome::Held)
                .map(|(e, _)| (*e).clone())
                .collect();
            let stamp = self.0.memory.stamp();
            if stamp > before {
                feeds.retain(|feed| {
                    let events = held.clone();
                    feed.unbounded_send(Admitted { events, stamp }).is_ok()
                });
            }
            Admitting::Pending(Box::pin(async move {
                tokio::task::yield_now().await;
                Ok(outcomes)
            }))
        }
        fn stamp(&self) -> Stamp {
            self.0.memory.stamp()
        }
        fn replay(&self, from: ReplayFrom, upto: Stamp) -> crate::storage::Replay {
            self.0.memory.replay(from, upto)
        }
        fn sessions(&self) -> usize {
            self.0.memory.sessions()
        }
        fn held_bytes(&self) -> usize {
            self.0.memory.held_bytes()
        }
    }

    /// A relay of `shared`, fanning out its feed.
    fn relay_of(shared: &Arc<Shared>) -> Arc<Hub> {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        shared.feeds.lock().unwrap().push(tx);
        let backend = Backend {
            storage: Box::new(Relay(shared.clone())),
            feed: Some(Box::pin(rx)),
        };
        let hub = Arc::new(Hub::with_backend(RelayConfig::default(), backend));
        tokio::spawn(hub.feed().expect("a shared store has a feed"));
        hub
    }

    /// The ids a drain receives within a moment.
    async fn ids_within(drain: &mut Drain, n: usize) -> Vec<String> {
        let mut ids = Vec::new();
        while ids.len() < n {
            let next = tokio::time::timeout(std::time::Duration::from_secs(5), drain.next());
            match next.await.expect("delivered in time") {
                Some(Piece::Data(b)) => ids.push(
                    aep_core::Event::from_slice(sse_data(&b))
                        .unwrap()
                        .id()
                        .to_owned(),
                ),
                other => panic!("{other:?}"),
            }
        }
        // and nothing more, however long fan-out runs on
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(next_data(drain).is_none(), "delivered once");
        ids
    }

    /// A store several relays share fits behind the same trait and hub: what relay A
    /// admits reaches B's live readers through the feed, and A's once (from the feed,
    /// not from its ingest as well); a new subscription on B replays what was admitted
    /// before it and gets what follows live, each event once.
    #[tokio::test]
    async fn a_shared_store_feeds_fan_out_on_every_relay() {
        let shared = Arc::new(Shared {
            memory: Memory::new(Limits {
                events: 100,
                session_bytes: 1 << 20,
                sessions: 100,
                bytes: 1 << 24,
            }),
            feeds: Mutex::new(Vec::new()),
        });
        let (a, b) = (relay_of(&shared), relay_of(&shared));
        let mut on_a = reader(&a, json!({}));
        let mut on_b = reader(&b, json!({ "session": "s1" }));
        let batch = [
            parse_line(&line("e1", 1), false).unwrap(),
            parse_line(&line("e2", 2), false).unwrap(),
        ];
        a.ingest(&batch, None).await.unwrap();
        assert_eq!(ids_within(&mut on_b, 2).await, ["e1", "e2"]);
        assert_eq!(ids_within(&mut on_a, 2).await, ["e1", "e2"]);
        // the same batch again: stored once, so fed to no one
        a.ingest(&batch, None).await.unwrap();
        // a late subscriber on B: e1 and e2 replayed, e3 live
        let (outbox, rx) = b.outbox(CancellationToken::new());
        let mut request = SubscribeRequest::new(Binding::Sse, Filter::default());
        request.replay.all = true;
        b.subscribe(&outbox, request);
        let mut late = Drain::new(rx, outbox, Binding::Sse, std::time::Duration::from_secs(60));
        b.ingest(&[parse_line(&line("e3", 3), false).unwrap()], None)
            .await
            .unwrap();
        assert_eq!(ids_within(&mut late, 3).await, ["e1", "e2", "e3"]);
        assert_eq!(ids_within(&mut on_a, 1).await, ["e3"]);
        assert_eq!(held(&a, "s1"), 3);
    }
}
