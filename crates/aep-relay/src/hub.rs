//! The shared state of one relay: session buffers, subscribers, WebSocket connections,
//! and what happens to each accepted event (buffer admission, command routing, fan-out).
//!
//! One lock guards the state; it is held only for bookkeeping, never across a write to a
//! socket. An event is admitted and the subscriber list is read under the same lock, and a
//! subscription is registered and its replay snapshot taken under it too, so every event
//! reaches a new subscriber exactly once: by replay or live, never both, never neither.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use aep_core::resume::{ReplayStart, ResumeFrom};
use aep_core::Capture;
use bytes::Bytes;
use serde_json::{json, Value};
use smallvec::SmallVec;
use tokio_util::sync::CancellationToken;

use crate::config::RelayConfig;
use crate::encoded::Encoded;
use crate::fanout::{self, Sub, Subscribers};
use crate::journal::{self, Disk, Fs, Journal};
use crate::line::Incoming;
use crate::outbox::{self, Binding, Bounds, End, Outbox, ReplayJob};
use crate::proto::{Disposition, Filter};
use crate::routing::{self, Connections, Party, RosterTooLarge};
use crate::store::{Limits, Store};

/// Events accepted but not stored: the journal could not write them (a full disk).
#[derive(Debug)]
pub(crate) struct Unstored(pub(crate) std::io::Error);

impl std::fmt::Display for Unstored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not stored: the journal could not write it ({})", self.0)
    }
}

#[derive(Debug)]
struct State {
    store: Store,
    subs: Subscribers,
    conns: Connections,
}

/// What a new subscription replays before going live.
#[derive(Debug, Default)]
pub(crate) struct ReplayAsk {
    pub(crate) positions: Vec<ResumeFrom>,
    pub(crate) all: bool,
    /// `live=0` also serves the history of the one session the filter names.
    pub(crate) filter_session: bool,
}

/// The relay's shared state.
#[derive(Debug)]
pub(crate) struct Hub {
    pub(crate) config: RelayConfig,
    state: Mutex<State>,
    started: Instant,
    next_id: AtomicU64,
    /// Live subscriptions that need each event parsed (a filter on more than the session,
    /// or a capture ceiling), readable without the lock.
    parsing: Arc<AtomicUsize>,
    shutting_down: AtomicBool,
    /// Cancelled once the drain timeout of a shutdown has passed: every connection still
    /// open then is dropped.
    stopped: CancellationToken,
    journal: Option<Journal>,
}

impl Hub {
    /// The shared state; with a data directory, the buffers it holds are restored.
    pub(crate) fn new(config: RelayConfig) -> std::io::Result<Hub> {
        Hub::with_disk(config, Box::new(Fs::default()))
    }

    /// [`Hub::new`] with the journal writing through `disk`.
    pub(crate) fn with_disk(config: RelayConfig, disk: Box<dyn Disk>) -> std::io::Result<Hub> {
        let limits = Limits {
            events: config.buffer,
            session_bytes: config.max_session_bytes,
            sessions: config.max_sessions,
            bytes: config.max_store_bytes,
        };
        let mut store = Store::new(limits);
        let journal = match &config.data_dir {
            Some(dir) => {
                let options = journal::Options {
                    fsync: config.fsync,
                    interval: config.fsync_interval,
                    limits,
                };
                Some(Journal::open(dir, &mut store, options, disk)?)
            }
            None => None,
        };
        let subs = Subscribers::default();
        Ok(Hub {
            config,
            parsing: subs.parsing(),
            state: Mutex::new(State {
                store,
                subs,
                conns: Connections::default(),
            }),
            started: Instant::now(),
            next_id: AtomicU64::new(1),
            shutting_down: AtomicBool::new(false),
            stopped: CancellationToken::new(),
            journal,
        })
    }

    /// Writes out every buffered event still queued for the data directory.
    pub(crate) fn flush_journal(&self) {
        if let Some(journal) = &self.journal {
            journal.flush();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic elsewhere must not take the relay down with it: the state stays usable
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Accepts a batch already checked whole: admission, routing, then fan-out in order.
    /// The lock is taken once for the batch; each subscriber gets its events in runs.
    ///
    /// With a data directory the batch's new events are journaled, and this returns
    /// once they are written as the fsync policy promises; when they could not be, they
    /// are taken back out of the buffers and the error returned, so the emitter is not
    /// told they were stored (a retry is then admitted anew). Live readers may have had
    /// them meanwhile: to them the retry is a duplicate, as AEP-0001 §7.4 allows.
    pub(crate) async fn ingest<'a, 't: 'a, I>(
        &self,
        batch: I,
        from_conn: Option<u64>,
    ) -> Result<(), Unstored>
    where
        I: IntoIterator<Item = &'a Incoming<'t>> + Clone,
    {
        // Inline for the usual batch (a WebSocket ingests one event at a time).
        let mut fan_out: SmallVec<[bool; 16]> = SmallVec::new();
        let mut journaled: Vec<(Arc<str>, Encoded)> = Vec::new();
        let (subs, written) = {
            let mut st = self.lock();
            for incoming in batch.clone() {
                let go = match incoming.disposition {
                    Disposition::Command => {
                        let authenticated = self.config.token.is_some();
                        st.conns.route(incoming, from_conn, authenticated)
                    }
                    Disposition::Live => true,
                    Disposition::Buffered => {
                        if let Some(session) = incoming.session() {
                            if let Some(conn) = from_conn {
                                st.conns.claim(conn, session);
                            }
                            // live fan-out forwards even a duplicate (AEP-0003 §5): the
                            // relay is not a terminal consumer
                            let admission = st.store.admit(session, incoming.encoded.clone());
                            if let Some(journal) = &self.journal {
                                // under the lock, so the journal sees evictions in the
                                // buffers' order; an evicted session's lines of this batch
                                // are gone with it, not written after its file is removed
                                for gone in admission.evicted {
                                    journaled.retain(|(s, _)| *s != gone);
                                    journal.remove(gone);
                                }
                                if admission.admitted {
                                    let name = match journaled.last() {
                                        Some((last, _)) if **last == *session => last.clone(),
                                        _ => Arc::from(session),
                                    };
                                    journaled.push((name, incoming.encoded.clone()));
                                }
                            }
                        }
                        true
                    }
                };
                fan_out.push(go);
            }
            let written = match &self.journal {
                Some(journal) if !journaled.is_empty() => {
                    let lines = journaled
                        .iter()
                        .map(|(session, encoded)| (session.clone(), encoded.json()))
                        .collect();
                    Some(journal.append(lines))
                }
                _ => None,
            };
            (st.subs.list(), written)
        };
        if !subs.is_empty() {
            fanout::fan_out(&subs, batch, fan_out).await;
        }
        let Some(written) = written else {
            return Ok(());
        };
        let failed = match written.await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e,
            Err(_) => std::io::Error::other("the journal writer stopped"),
        };
        let mut st = self.lock();
        for (session, encoded) in &journaled {
            st.store.withdraw(session, encoded);
        }
        Err(Unstored(failed))
    }

    // ---- subscriptions ------------------------------------------------------------------

    /// Registers a subscription (when `live`) and queues its replay, atomically with
    /// respect to ingest. `first` is queued before the replay (the `subscribed` frame).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn subscribe(
        &self,
        outbox: &Arc<Outbox>,
        binding: Binding,
        conn: Option<(u64, String)>,
        filter: Filter,
        capture: Option<Capture>,
        ask: ReplayAsk,
        first: Option<Bytes>,
        ws_sub: Option<String>,
        live: bool,
    ) -> u64 {
        let filter = Arc::new(filter);
        let id = self.id();
        let mut st = self.lock();
        if let Some(bytes) = first {
            outbox.push_frame(bytes);
        }
        let mut parts = if ask.all {
            st.store.replay_all()
        } else {
            ask.positions
                .iter()
                .map(|p| st.store.replay(p.session(), p.start()))
                .collect()
        };
        // `all` already holds the filter's session: adding it again sent it twice
        if ask.filter_session && !ask.all {
            if let Some(session) = filter.session() {
                if !ask.positions.iter().any(|p| p.session() == session) {
                    parts.push(st.store.replay(session, ReplayStart::EARLIEST));
                }
            }
        }
        if !parts.is_empty() {
            outbox.push_replay(ReplayJob {
                parts,
                filter: filter.clone(),
                capture,
                sub: ws_sub,
                declare_gaps: !ask.all,
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
            let sub = Sub {
                id,
                conn: conn_id,
                filter,
                capture,
                binding,
                outbox: outbox.clone(),
            };
            st.subs.add(sub);
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
        let st = self.lock();
        json!({
            "sessions": st.store.len(),
            "subscribers": st.subs.len(),
            "connections": st.conns.len(),
            "uptime_s": self.uptime(),
        })
    }

    /// The `/connections` document.
    pub(crate) fn connections(&self) -> Value {
        let st = self.lock();
        let connections = st.conns.describe();
        let sse = st.subs.sse();
        let dropped = st.subs.dropped();
        json!({
            "ok": true,
            "relay": {
                "sessions": st.store.len(),
                "subscribers": st.subs.len(),
                "connections": st.conns.len(),
                "uptime_s": self.uptime(),
                "control": self.config.token.is_some(),
                "buffered_bytes": st.store.held_bytes(),
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
                hub.subscribe(
                    &outbox,
                    Binding::Ws,
                    None,
                    proto::parse_filter(&filter).unwrap(),
                    Some(capture),
                    ReplayAsk::default(),
                    None,
                    None,
                    true,
                );
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

    /// Subscribes a live SSE reader with `filter` and returns its drain.
    fn reader(hub: &Hub, filter: Value) -> Drain {
        let (outbox, rx) = hub.outbox(CancellationToken::new());
        let filter = proto::parse_filter(&filter).unwrap();
        hub.subscribe(
            &outbox,
            Binding::Sse,
            None,
            filter,
            None,
            ReplayAsk::default(),
            None,
            None,
            true,
        );
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
        assert_eq!(
            hub.lock()
                .store
                .replay("s1", ReplayStart::EARLIEST)
                .events
                .len(),
            1
        );
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
        assert_eq!(
            hub.lock()
                .store
                .replay("s1", ReplayStart::EARLIEST)
                .events
                .len(),
            4
        );
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
            let ask = ReplayAsk::default();
            hub.subscribe(
                outbox,
                Binding::Ws,
                None,
                filter,
                None,
                ask,
                None,
                None,
                true,
            );
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
        assert!(hub
            .lock()
            .store
            .replay("s1", ReplayStart::EARLIEST)
            .events
            .is_empty());
        disk.full.store(false, Ordering::SeqCst);
        hub.ingest(&batch, None).await.unwrap();
        assert_eq!(
            hub.lock()
                .store
                .replay("s1", ReplayStart::EARLIEST)
                .events
                .len(),
            2
        );
    }
}
