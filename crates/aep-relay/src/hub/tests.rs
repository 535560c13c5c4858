//! The hub's tests: fan-out of each reading, the exactly-once hand-over, pacing, a
//! store that cannot write, and a store several relays share.

use super::*;
use crate::config::RelayConfig;
use crate::directory::Alone;
use crate::journal::{Disk, Fs};
use crate::line::tests::LINE;
use crate::line::{parse_line, read_event, Reading};
use crate::memory::Memory;
use crate::outbox::{Drain, Piece};
use crate::proto;
use crate::storage::{Admitted, Backend, Limits};

/// The hub of a relay on its own, as the server assembles it from `config`, its
/// journal (with a data directory) writing through `disk`.
fn hub_with_disk(config: RelayConfig, disk: Box<dyn Disk>) -> Hub {
    let backend = crate::server::open_local(&config, disk).unwrap();
    hub_over(&config, backend).0
}

/// [`hub_with_disk`] on the file system.
fn hub_of(config: RelayConfig) -> Hub {
    hub_with_disk(config, Box::new(Fs::default()))
}

/// The hub of a relay on its own over `backend`, and the backend's feed.
fn hub_over(config: &RelayConfig, backend: Backend) -> (Hub, Option<Feed>) {
    Hub::new(
        crate::server::hub_settings(config),
        backend,
        Arc::new(Alone),
    )
}

/// Fan-out of an event read in place, or kept as bytes only (as a shared store's feed
/// gives it), reaches the readers a parsed one reaches, and a reader that lowers
/// `capture` gets the lowered event.
#[tokio::test]
async fn a_websocket_event_read_in_place_fans_out_as_a_parsed_one() {
    let line = std::str::from_utf8(LINE).unwrap().replace(
        r#""data":{}"#,
        r#""capture":"full","acme":"x","data":{"status":"reading"}"#,
    );
    let mut lowered_once = Vec::new();
    for (in_place, bytes_only) in [(true, false), (false, false), (false, true)] {
        let hub = hub_of(RelayConfig::default());
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
            Drain::new(rx, outbox, std::time::Duration::from_secs(60))
        };
        let ceiling = |filter: Value| ceiling_at(filter, Capture::Metadata);
        let mut lowered = ceiling(json!({}));
        let mut lowered_other = ceiling(json!({ "session": "s2" }));
        let mut roomy = ceiling_at(json!({ "session": "s1" }), Capture::Full);
        let mut slot = None;
        let incoming = if in_place {
            read_event(&line, &mut slot).unwrap()
        } else if bytes_only {
            Incoming::stored(parse_line(line.as_bytes(), false).unwrap().encoded)
        } else {
            parse_line(line.as_bytes(), true).unwrap()
        };
        assert_eq!(matches!(incoming.reading, Reading::InPlace(_)), in_place);
        assert_eq!(matches!(incoming.reading, Reading::BytesOnly), bytes_only);
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
    assert_eq!(lowered_once[0], lowered_once[2]);
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
    Drain::new(rx, outbox, std::time::Duration::from_secs(60))
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
    let hub = hub_of(RelayConfig::default());
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
    let hub = hub_of(cfg);
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
    let hub = hub_of(RelayConfig::default());
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
    let mut drain = Drain::new(rx, outbox, std::time::Duration::from_secs(60));
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
    let hub = hub_with_disk(config, Box::new(disk.clone()));
    let batch = [
        parse_line(&line("e1", 1), false).unwrap(),
        parse_line(&line("e2", 2), false).unwrap(),
    ];
    disk.full.store(true, Ordering::SeqCst);
    let unstored = hub.ingest(&batch, None).await.unwrap_err();
    assert_eq!(unstored.error.kind(), std::io::ErrorKind::StorageFull);
    assert_eq!(unstored.kind(), crate::storage::UnstoredKind::Full);
    assert!(held(&hub, "s1") == 0);
    disk.full.store(false, Ordering::SeqCst);
    hub.ingest(&batch, None).await.unwrap();
    assert_eq!(held(&hub, "s1"), 2);
}

/// A store two relays share, as a cluster's stream would be: one set of buffers, each
/// admission yielded once, in stamp order, to every relay's feed (its redeliveries too,
/// at the stamp already fed), and answered only after a round trip, as a remote
/// acknowledgement is.
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
        // the events whose outcome is `wanted`
        let those = |wanted: crate::storage::Outcome| -> Vec<_> {
            events
                .iter()
                .zip(&outcomes)
                .filter(|(_, o)| **o == wanted)
                .map(|(e, _)| (*e).clone())
                .collect()
        };
        let held = those(crate::storage::Outcome::Held);
        let stamp = self.0.memory.stamp();
        if stamp > before {
            feeds.retain(|feed| {
                let events = held.clone();
                feed.unbounded_send(Admitted {
                    events,
                    stamp,
                    generation: 0,
                })
                .is_ok()
            });
        }
        // redeliveries too, at a stamp already fed (the held copy's, or before it)
        let again = those(crate::storage::Outcome::Duplicate);
        if !again.is_empty() {
            feeds.retain(|feed| {
                let events = again.clone();
                let stamp = before;
                feed.unbounded_send(Admitted {
                    events,
                    stamp,
                    generation: 0,
                })
                .is_ok()
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

/// A store several relays share, roomy enough for any test here.
fn shared() -> Arc<Shared> {
    Arc::new(Shared {
        memory: Memory::new(Limits {
            events: 100,
            session_bytes: 1 << 20,
            sessions: 100,
            bytes: 1 << 24,
        }),
        feeds: Mutex::new(Vec::new()),
    })
}

/// A relay of `shared` and its feed, which nobody fans out yet.
fn relay_unfed(shared: &Arc<Shared>) -> (Arc<Hub>, Feed) {
    let (tx, rx) = futures::channel::mpsc::unbounded();
    shared.feeds.lock().unwrap().push(tx);
    let backend = Backend {
        storage: Box::new(Relay(shared.clone())),
        feed: Some(Box::pin(rx)),
        gate: None,
    };
    let (hub, feed) = hub_over(&RelayConfig::default(), backend);
    (Arc::new(hub), feed.expect("a shared store has a feed"))
}

/// A relay of `shared`, fanning out its feed.
fn relay_of(shared: &Arc<Shared>) -> Arc<Hub> {
    let (hub, feed) = relay_unfed(shared);
    let fanning = hub.clone();
    tokio::spawn(async move { fanning.fan_out_feed(feed).await });
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
/// not from its ingest as well); a redelivery is forwarded on both; a new subscription
/// on B replays what was admitted before it and gets what follows live, each event
/// once.
#[tokio::test]
async fn a_shared_store_feeds_fan_out_on_every_relay() {
    let shared = shared();
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
    // the same batch again: stored once, and forwarded live on every relay, as a
    // single relay forwards a redelivery (AEP-0003 §5)
    a.ingest(&batch, None).await.unwrap();
    assert_eq!(ids_within(&mut on_b, 2).await, ["e1", "e2"]);
    assert_eq!(ids_within(&mut on_a, 2).await, ["e1", "e2"]);
    // a late subscriber on B: e1 and e2 replayed, e3 live
    let (outbox, rx) = b.outbox(CancellationToken::new());
    let mut request = SubscribeRequest::new(Binding::Sse, Filter::default());
    request.replay.all = true;
    b.subscribe(&outbox, request);
    let mut late = Drain::new(rx, outbox, std::time::Duration::from_secs(60));
    b.ingest(&[parse_line(&line("e3", 3), false).unwrap()], None)
        .await
        .unwrap();
    assert_eq!(ids_within(&mut late, 3).await, ["e1", "e2", "e3"]);
    assert_eq!(ids_within(&mut on_a, 1).await, ["e3"]);
    assert_eq!(held(&a, "s1"), 3);
}

/// A replay with no live part (`live=0`) serves what the shared store holds when it is
/// read, not only what this relay's feed has reached: an event acknowledged (a `202`,
/// AEP-0003 §3.2.3) on any relay is in a `live=0` replay asked right after, however far
/// behind the reading relay's feed is. Here B's feed is never run at all.
#[tokio::test]
async fn a_replay_without_live_serves_what_the_feed_has_not_reached() {
    let shared = shared();
    let a = relay_of(&shared);
    // a relay far behind the stream: its feed is never fanned out
    let (b, _feed) = relay_unfed(&shared);
    let batch = [
        parse_line(&line("e1", 1), false).unwrap(),
        parse_line(&line("e2", 2), false).unwrap(),
    ];
    a.ingest(&batch, None).await.unwrap();
    let replay_only = |live: bool| {
        let (outbox, rx) = b.outbox(CancellationToken::new());
        let mut request = SubscribeRequest::new(Binding::Sse, Filter::default());
        request.replay.all = true;
        request.live = live;
        b.subscribe(&outbox, request);
        Drain::new(rx, outbox, std::time::Duration::from_secs(60))
    };
    assert_eq!(ids_within(&mut replay_only(false), 2).await, ["e1", "e2"]);
    // a live subscription still meets the feed where the feed is: its replay bounded
    // there, the rest to come live, each event once
    let mut live = replay_only(true);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(next_data(&mut live).is_none());
}

/// A feed with a gate is parked while nobody reads live, and opened by a live
/// subscription from the larger of what it delivered and the store's stamp, which
/// bounds that subscription's replay; what the feed read under an earlier opening is
/// dropped, so each event reaches the new reader once, by replay or live.
#[tokio::test]
async fn a_parked_feed_opens_where_the_new_readers_replay_ends() {
    let shared = shared();
    let a = relay_of(&shared);
    let (gate, opened) = tokio::sync::watch::channel(Gate::parked(0));
    let (_feed, rx) = futures::channel::mpsc::unbounded();
    let backend = Backend {
        storage: Box::new(Relay(shared.clone())),
        feed: Some(Box::pin(rx)),
        gate: Some(gate),
    };
    let b = Arc::new(hub_over(&RelayConfig::default(), backend).0);
    let event = |id: &str, seq| parse_line(&line(id, seq), false).unwrap();
    let fed = |id: &str, seq, generation| Admitted {
        events: vec![event(id, seq).encoded],
        stamp: seq,
        generation,
    };
    let late_reader = || {
        let (outbox, rx) = b.outbox(CancellationToken::new());
        let mut request = SubscribeRequest::new(Binding::Sse, Filter::default());
        request.replay.all = true;
        let id = b.subscribe(&outbox, request);
        (
            id,
            Drain::new(rx, outbox, std::time::Duration::from_secs(60)),
        )
    };
    a.ingest(&[event("e1", 1), event("e2", 2)], None)
        .await
        .unwrap();
    assert_eq!(
        *opened.borrow(),
        Gate::parked(0),
        "parked until a live reader"
    );

    let (first, mut on_b) = late_reader();
    let open = |after, generation| Gate {
        after: Some(after),
        generation,
    };
    assert_eq!(*opened.borrow(), open(2, 1));
    // read under no opening (before this one): dropped, replay has served it
    b.fan_out_fed(fed("e2", 2, 0)).await;
    a.ingest(&[event("e3", 3)], None).await.unwrap();
    b.fan_out_fed(fed("e3", 3, 1)).await;
    assert_eq!(ids_within(&mut on_b, 3).await, ["e1", "e2", "e3"]);

    // the reader gone, the next delivery parks the feed
    b.unsubscribe(first);
    a.ingest(&[event("e4", 4)], None).await.unwrap();
    b.fan_out_fed(fed("e4", 4, 1)).await;
    let parked = Gate {
        after: None,
        generation: 1,
    };
    assert_eq!(*opened.borrow(), parked);
    a.ingest(&[event("e5", 5)], None).await.unwrap();

    // opened again at the store's stamp (5, past the 4 fed): e5 is replayed, and the
    // first opening's read-ahead of it dropped
    let (_second, mut again) = late_reader();
    assert_eq!(*opened.borrow(), open(5, 2));
    b.fan_out_fed(fed("e5", 5, 1)).await;
    assert_eq!(
        ids_within(&mut again, 5).await,
        ["e1", "e2", "e3", "e4", "e5"]
    );
    a.ingest(&[event("e6", 6)], None).await.unwrap();
    b.fan_out_fed(fed("e6", 6, 2)).await;
    assert_eq!(ids_within(&mut again, 1).await, ["e6"]);
}
