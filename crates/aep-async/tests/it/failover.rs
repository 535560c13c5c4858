//! Clients given several relays fail over between them (issue 20, "Clients"): a sink
//! whose relay is down or dies delivers to the next with the same ids; a subscription
//! whose relay dies resumes on the next from its positions; the control client connects
//! to the first relay that answers.
//!
//! Two embedded relays stand for a cluster. They do not share a store, so where a test
//! needs what a cluster shares (the events a subscription resumes over), it posts the
//! same events to both, as a cluster holds them once for all its relays.
#![cfg(all(feature = "http", feature = "sse", feature = "ws"))]
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use aep_async::control::{
    ControlClient, ControlOptions, ControlTarget, DuplexOptions, SendOptions,
};
use aep_async::{
    Client, Emitter, HttpSinkOptions, Notice, Relays, SessionEmitter, Sink, StartFrom,
    SubscribeOptions, Subscription, Transport, WsSinkOptions,
};
use aep_core::Event;
use aep_test_support::events::{json_event, session_id};
use aep_test_support::http::post_ndjson;
use aep_test_support::relay::TestRelay;
use aep_test_support::wait::Recorder;
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "t";
const MS: fn(u64) -> Duration = Duration::from_millis;

fn config() -> aep_relay::RelayConfig {
    aep_relay::RelayConfig::default().with_token(TOKEN)
}

/// Every event `relay` holds, read back with a `live=0` replay of everything.
async fn held(relay: &str) -> Vec<Event> {
    let options = SubscribeOptions::new().from_all().history_only();
    Client::new(relay)
        .token(TOKEN)
        .subscribe(options)
        .collect()
        .await
}

/// The next event of `sub`, or a failure after 20 s.
async fn next(sub: &mut Subscription) -> Event {
    tokio::time::timeout(Duration::from_secs(20), sub.next())
        .await
        .expect("an event within 20 s")
        .expect("the subscription goes on")
}

/// An emitter on `sink` with one fresh session that has emitted `n` events.
fn emitting(sink: impl Sink, n: u64) -> (Emitter, SessionEmitter) {
    let emitter = Emitter::new("a", "h", sink);
    let session = emitter.session(session_id());
    for n in 0..n {
        session.emit("progress.status", json!({ "n": n })).unwrap();
    }
    (emitter, session)
}

fn ids(events: &[Event]) -> Vec<String> {
    events.iter().map(|e| e.id().to_owned()).collect()
}

/// A client of both relays (`first` preferred) with the token, backing off fast.
fn both(first: &TestRelay, second: &TestRelay) -> Client {
    Client::new([first.url(), second.url()])
        .token(TOKEN)
        .backoff(MS(20), MS(100))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_sink_whose_first_relay_is_down_delivers_to_the_second() {
    let down = TestRelay::stopped(config()).unwrap();
    let up = TestRelay::start(config()).await.unwrap();
    let reports = Recorder::default();
    let sink = Client::new([down.url(), up.url()])
        .token(TOKEN)
        .http_sink(
            HttpSinkOptions::new()
                .on_report(reports.handler())
                .retry(|r| r.backoff(MS(10), MS(50))),
        )
        .unwrap();
    let (emitter, _session) = emitting(sink, 3);
    emitter.flush().await;
    assert_eq!(emitter.stats().delivered, 3, "{:?}", reports.all());
    assert!(
        reports.any("Retrying"),
        "the first relay failed: {:?}",
        reports.all()
    );
    assert_eq!(held(&up.url()).await.len(), 3);
    emitter.close().await;
}

/// A relay that answers every ingest `503`: the batch goes to the next relay, same bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_sink_sends_a_refused_batch_to_the_next_relay_with_the_same_ids() {
    let failing = aep_test_support::servers::Scripted::start(|_| {
        aep_test_support::servers::status_response(503)
    })
    .await;
    let up = TestRelay::start(config()).await.unwrap();
    let sink = Client::new(vec![failing.url.clone(), up.url()])
        .token(TOKEN)
        .http_sink(
            HttpSinkOptions::new()
                // one batch, sent by the flush: no pause mid-emit splits it
                .batch(|b| b.linger(Duration::from_secs(30)))
                .retry(|r| r.backoff(MS(10), MS(50))),
        )
        .unwrap();
    let (emitter, session) = emitting(sink, 4);
    emitter.flush().await;
    let stored = ids(&held(&up.url()).await);
    assert_eq!(stored.len(), 4);
    let refused = failing.requests.lock().unwrap().clone();
    assert_eq!(refused.len(), 1, "one attempt at the failing relay");
    for id in &stored {
        assert!(
            refused[0].contains(id.as_str()),
            "{id} was sent to the first relay too"
        );
    }
    // and the sink stays on the relay that took it
    session.emit("progress.status", json!({ "n": 4 })).unwrap();
    emitter.flush().await;
    assert_eq!(failing.requests.lock().unwrap().len(), 1);
    assert_eq!(held(&up.url()).await.len(), 5);
    emitter.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ws_sink_whose_first_relay_is_down_delivers_to_the_second() {
    let down = TestRelay::stopped(config()).unwrap();
    let up = TestRelay::start(config()).await.unwrap();
    let sink = Client::new(Relays::from([down.url(), up.url()]))
        .token(TOKEN)
        .backoff(MS(10), MS(50))
        .ws_sink(WsSinkOptions::new("a", "h/1"))
        .unwrap();
    let (emitter, _session) = emitting(sink, 3);
    emitter.close().await;
    assert_eq!(held(&up.url()).await.len(), 3);
}

/// A WebSocket endpoint that says `hello` and records the ids of the events it reads.
/// With `pong`, it answers `ping`s as a relay does once it has taken what came before;
/// after `events` events (`None`: until the sink closes) it drops the connection
/// without a close handshake, as a killed process. Returns its URL and the ids read.
async fn endpoint(
    pong: bool,
    events: Option<usize>,
) -> (String, tokio::task::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let _hello = ws.next().await;
        let ours = json!({"type": "hello", "versions": ["0.1"], "role": "collector"});
        ws.send(Message::text(ours.to_string())).await.unwrap();
        let mut read = Vec::new();
        while events.is_none_or(|n| read.len() < n) {
            let Some(Ok(Message::Text(text))) = ws.next().await else {
                break;
            };
            let value: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
            if value["type"] == "ping" {
                if pong {
                    let answer = json!({"type": "pong", "t": value["t"]});
                    ws.send(Message::text(answer.to_string())).await.unwrap();
                }
            } else if let Some(id) = value
                .get("aep")
                .and(value.get("id"))
                .and_then(|i| i.as_str())
            {
                read.push(id.to_owned());
            }
        }
        drop(ws);
        read
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ws_sink_sends_what_a_dead_relay_did_not_confirm_to_the_next() {
    let (hole, read) = endpoint(false, Some(3)).await;
    let up = TestRelay::start(config()).await.unwrap();
    let reports = Recorder::default();
    let sink = Client::new([hole, up.url()])
        .token(TOKEN)
        .backoff(MS(10), MS(50))
        .ws_sink(WsSinkOptions::new("a", "h/1").on_report(reports.handler()))
        .unwrap();
    let (emitter, session) = emitting(sink, 3);
    let swallowed = read.await.unwrap();
    assert_eq!(swallowed.len(), 3, "the first relay read all three");
    session.emit("progress.status", json!({ "n": 3 })).unwrap();
    emitter.close().await;
    let stored = ids(&held(&up.url()).await);
    assert_eq!(stored.len(), 4, "{stored:?} {:?}", reports.all());
    assert_eq!(&stored[..3], &swallowed[..], "same ids, same order");
    assert_eq!(emitter.stats().delivered, 4, "each counted once");
}

/// A relay that confirms what it took gets each event once, and `close` waits for the
/// confirmation of the last write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ws_sink_writes_confirmed_events_once() {
    let (url, read) = endpoint(true, None).await;
    let sink = Client::new(url)
        .ws_sink(WsSinkOptions::new("a", "h/1"))
        .unwrap();
    let emitter = Emitter::new("a", "h", sink);
    let session = emitter.session(session_id());
    let mut sent = Vec::new();
    for n in 0..50 {
        let event = session.emit("progress.status", json!({ "n": n })).unwrap();
        sent.push(event.id().to_owned());
        if n % 10 == 0 {
            emitter.flush().await;
            tokio::time::sleep(MS(20)).await;
        }
    }
    emitter.close().await;
    let read = read.await.unwrap();
    assert_eq!(read, sent, "every event once, in order");
}

/// Two relays `a` and `b`, one session's events of seq 1 to 4 (posted nowhere yet),
/// and a subscription over `transport` to `[a, b]` reading that session, connected.
async fn two_relays_and_a_reader(
    transport: Transport,
) -> (
    TestRelay,
    TestRelay,
    Vec<serde_json::Value>,
    Recorder,
    Subscription,
) {
    let a = TestRelay::start(config()).await.unwrap();
    let b = TestRelay::start(config()).await.unwrap();
    let session = session_id();
    let events: Vec<_> = (1..=4)
        .map(|seq| json_event("progress.status", &session, seq))
        .collect();
    let notices = Recorder::default();
    let sub = both(&a, &b).subscribe(
        SubscribeOptions::new()
            .transport(transport)
            .filter(json!({ "session": session }))
            .on_notice(notices.handler()),
    );
    notices.wait_for("Connected").await;
    (a, b, events, notices, sub)
}

/// Subscribes over `transport` to `[a, b]`, reads one event from `a`, kills `a`, and
/// reads on through `b` from its positions.
async fn subscription_fails_over(transport: Transport) {
    let (mut a, b, events, notices, mut sub) = two_relays_and_a_reader(transport).await;
    // the first event reaches both relays, as a cluster holds it once for all
    for relay in [&a, &b] {
        assert_eq!(
            post_ndjson(&relay.url(), TOKEN, &events[..1])
                .await
                .status(),
            202
        );
    }
    assert_eq!(next(&mut sub).await.seq(), Some(1));
    a.stop().await;
    // posted while the subscription moves over: the resume from (0, 1) replays them
    assert_eq!(
        post_ndjson(&b.url(), TOKEN, &events[1..3]).await.status(),
        202
    );
    assert_eq!(next(&mut sub).await.seq(), Some(2));
    assert_eq!(next(&mut sub).await.seq(), Some(3));
    assert_eq!(
        post_ndjson(&b.url(), TOKEN, &events[3..]).await.status(),
        202
    );
    assert_eq!(next(&mut sub).await.seq(), Some(4));
    assert!(
        notices.any("Connected { resume: 1"),
        "the position rode the request to the second relay: {:?}",
        notices.all()
    );
    assert_eq!(sub.positions()[0].seq(), 4);
    // nothing more: the first event was not delivered twice
    assert!(tokio::time::timeout(MS(300), sub.next()).await.is_err());
}

/// As [`subscription_fails_over`], but the caller has taken nothing when `a` dies: what
/// waits in the queue is still delivered, and the resume on `b` starts after it. The
/// events `b` holds meanwhile (posted to `b` alone, as a cluster's relay that stored
/// them before `a`'s feed delivered them) arrive; resumed from what the caller had
/// taken (nothing), `b` served the session live and they never came.
async fn subscription_fails_over_before_the_caller_reads(transport: Transport) {
    let (mut a, b, events, notices, mut sub) = two_relays_and_a_reader(transport).await;
    for relay in [&a, &b] {
        let posted = post_ndjson(&relay.url(), TOKEN, &events[..2]).await;
        assert_eq!(posted.status(), 202);
    }
    assert_eq!(
        post_ndjson(&b.url(), TOKEN, &events[2..]).await.status(),
        202
    );
    // the transport reads both events off `a` into the queue; the caller takes none
    tokio::time::sleep(MS(500)).await;
    a.stop().await;
    notices.wait_for("Connected { resume: 1").await;
    // the resume went from what waits in the queue; what the caller persists, from
    // what it took: nothing yet, else a restart would skip the queued events
    assert!(sub.positions().is_empty(), "{:?}", sub.positions());
    let seqs: Vec<_> = [
        next(&mut sub).await,
        next(&mut sub).await,
        next(&mut sub).await,
        next(&mut sub).await,
    ]
    .iter()
    .map(|e| e.seq())
    .collect();
    assert_eq!(
        seqs,
        [Some(1), Some(2), Some(3), Some(4)],
        "{:?}",
        notices.all()
    );
    assert_eq!(sub.positions()[0].seq(), 4);
    assert!(tokio::time::timeout(MS(300), sub.next()).await.is_err());
}

/// A test of `$scenario` over SSE and one over WebSocket, by the names given.
macro_rules! over_sse_and_ws {
    ($scenario:ident: $sse:ident, $ws:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $sse() {
            $scenario(Transport::Sse).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $ws() {
            $scenario(Transport::WebSocket).await;
        }
    };
}

over_sse_and_ws!(subscription_fails_over_before_the_caller_reads:
    an_sse_subscription_resumes_after_what_its_caller_has_not_taken_yet,
    a_ws_subscription_resumes_after_what_its_caller_has_not_taken_yet);

over_sse_and_ws!(subscription_fails_over:
    an_sse_subscription_resumes_on_the_next_relay_from_its_positions,
    a_ws_subscription_resumes_on_the_next_relay_from_its_positions);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_given_no_relay_ends_saying_so() {
    let notices = Recorder::default();
    let mut sub = Client::new(Vec::<String>::new())
        .subscribe(SubscribeOptions::new().on_notice(notices.handler()));
    assert!(sub.next().await.is_none());
    assert!(notices.any("no relay URL"), "{:?}", notices.all());
    assert!(Client::new(Vec::<String>::new())
        .http_sink(HttpSinkOptions::new())
        .is_err());
    assert!(Client::new(Vec::<String>::new())
        .ws_sink(WsSinkOptions::new("a", "h"))
        .is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_client_connects_to_the_first_relay_that_answers_and_fails_over() {
    let mut a = TestRelay::stopped(config()).unwrap();
    let mut b = TestRelay::start(config()).await.unwrap();
    let relays = both(&a, &b);
    let client = relays.control(ControlOptions::new()).await.unwrap();

    // The target follows the same relays; the command reaches it through b.
    let target = ControlTarget::builder(["control.pause"]).handler(|cmd| async move {
        cmd.accept().unwrap();
    });
    let sink = both(&a, &b)
        .ws_sink(WsSinkOptions::new("agent", "h/1").command_hook(target.clone()))
        .unwrap();
    let emitter = Emitter::new("agent", "h", sink);
    let session = target.attach(emitter.session(session_id()));
    session.emit("session.started", json!({})).unwrap();
    emitter.flush().await;
    let ack = send_until_routed(&client, session.session()).await;
    assert_eq!(ack.event_type(), "control.accepted");

    // b dies, a comes up: both move over, and commands route again
    a.restart().await.unwrap();
    b.stop().await;
    let ack = send_until_routed(&client, session.session()).await;
    assert_eq!(ack.event_type(), "control.accepted");
    client.close().await;
    emitter.close().await;

    // none answering: the connect fails, saying why
    a.stop().await;
    let err = relays.control(ControlOptions::new()).await.unwrap_err();
    assert!(err.is_connect(), "{err:?}");
}

/// The connections that are opened once and never reconnect (a duplex, a lifecycle
/// connection) fail over when they are opened: the first relay that answers, the one
/// refusal that says why (a wrong token) before an absent relay, and a connect error
/// when none answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplex_and_a_lifecycle_connection_open_on_the_first_relay_that_answers() {
    let a = TestRelay::stopped(config()).unwrap();
    let mut b = TestRelay::start(config()).await.unwrap();
    let relays = Client::new([a.url(), b.url()]).token(TOKEN);
    let duplex = relays.duplex(DuplexOptions::new()).await.unwrap();
    assert!(duplex.hello().capabilities().supports_roster());
    duplex.close().await;
    let lifecycle = relays.lifecycle().await.unwrap();
    lifecycle.close().await;

    let wrong = Client::new([a.url(), b.url()]).token("wrong");
    let err = wrong.duplex(DuplexOptions::new()).await.unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");
    let err = wrong.lifecycle().await.unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");

    b.stop().await;
    let err = relays.duplex(DuplexOptions::new()).await.unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    let err = relays.lifecycle().await.unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    assert!(Client::new(Vec::<String>::new()).lifecycle().await.is_err());
}

/// Sends `control.pause` until the relay the client is on routes it (a claim moves with
/// its agent's reconnect).
async fn send_until_routed(client: &ControlClient, session: &str) -> Event {
    let mut last = None;
    for _ in 0..100 {
        match client
            .send("control.pause", session, SendOptions::new())
            .await
        {
            Ok(ack) => return ack,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(MS(50)).await;
    }
    panic!("never routed: {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_from_all_starts_on_the_relay_that_answers() {
    let down = TestRelay::stopped(config()).unwrap();
    let up = TestRelay::start(config()).await.unwrap();
    let session = session_id();
    let events: Vec<_> = (1..=2)
        .map(|seq| json_event("progress.status", &session, seq))
        .collect();
    assert_eq!(post_ndjson(&up.url(), TOKEN, &events).await.status(), 202);
    let notices = Recorder::default();
    let sub = both(&down, &up).subscribe(
        SubscribeOptions::new()
            .start_from(StartFrom::All)
            .history_only()
            .on_notice(notices.handler()),
    );
    let got: Vec<Event> = sub.collect().await;
    assert_eq!(got.len(), 2, "{:?}", notices.all());
    assert!(notices.any("ReplayComplete"));
    let _ = Notice::ReplayComplete;
}

/// A relay that never answers `ping` holds `close` up to the connect timeout, no longer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ws_sink_closes_on_a_silent_relay_after_the_connect_timeout() {
    let (url, read) = endpoint(false, None).await;
    let sink = Client::new(url)
        .connect_timeout(MS(300))
        .ws_sink(WsSinkOptions::new("a", "h/1"))
        .unwrap();
    let emitter = Emitter::new("a", "h", sink);
    let session = emitter.session(session_id());
    session.emit("progress.status", json!({})).unwrap();
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(10), emitter.close())
        .await
        .expect("close returns");
    assert!(started.elapsed() >= MS(250), "{:?}", started.elapsed());
    assert_eq!(read.await.unwrap().len(), 1);
}

/// A relay that never answers `ping`, while the sink runs: a `flush` returns once the
/// connect timeout has passed on the unanswered `ping`, the events then counted as
/// delivered (a relay may not answer), and later events go on the same connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ws_sink_presumes_a_silent_relay_took_its_events_after_the_connect_timeout() {
    let (url, read) = endpoint(false, None).await;
    let reports = Recorder::default();
    let sink = Client::new(url)
        .connect_timeout(MS(300))
        .ws_sink(WsSinkOptions::new("a", "h/1").on_report(reports.handler()))
        .unwrap();
    let (emitter, session) = emitting(sink, 2);
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(10), emitter.flush())
        .await
        .expect("flush returns");
    assert!(started.elapsed() >= MS(250), "{:?}", started.elapsed());
    assert_eq!(emitter.stats().delivered, 2, "{:?}", reports.all());
    session.emit("progress.status", json!({ "n": 2 })).unwrap();
    tokio::time::timeout(Duration::from_secs(10), emitter.close())
        .await
        .expect("close returns");
    assert_eq!(emitter.stats().delivered, 3);
    assert_eq!(
        read.await.unwrap().len(),
        3,
        "one connection, each event once"
    );
    assert!(reports.all().is_empty(), "{:?}", reports.all());
}

/// A WebSocket endpoint that says `hello` to every connection and drops it at once,
/// counting them. Returns its URL.
async fn flapping(connections: std::sync::Arc<std::sync::atomic::AtomicUsize>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            connections.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                continue;
            };
            let _hello = ws.next().await;
            let ours = json!({"type": "hello", "versions": ["0.1"], "role": "collector"});
            let _ = ws.send(Message::text(ours.to_string())).await;
        }
    });
    url
}

/// Relays that all take the connection and drop it at once are gone round on the
/// backoff, as one such relay is, not in a tight loop (it went round about 350 times a
/// second, the backoff notwithstanding).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ws_sink_goes_round_relays_that_drop_it_at_once_on_the_backoff() {
    let connections = std::sync::Arc::default();
    let relays = [
        flapping(std::sync::Arc::clone(&connections)).await,
        flapping(std::sync::Arc::clone(&connections)).await,
    ];
    let sink = Client::new(relays)
        .backoff(MS(200), MS(200))
        .ws_sink(WsSinkOptions::new("a", "h/1").on_report(|_| {}))
        .unwrap();
    let (_emitter, _session) = emitting(sink, 1);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let n = connections.load(std::sync::atomic::Ordering::Relaxed);
    // two a backoff at most: about 10 in the second
    assert!((2..=30).contains(&n), "{n} connections in 1 s");
}

/// A relay whose socket is reset (its process killed) after the sink took events from
/// its queue and before it wrote them: the write fails, and each event goes to the next
/// relay once and is counted delivered once. They were counted twice: noted as written
/// before the failed flush and kept to write as well, they went out twice on the next
/// connection and its `pong` confirmed both copies (`delivered` past `accepted`, and a
/// `flush` that returned early).
///
/// On a current-thread runtime the order below is the order things happen: the sink
/// learns of the reset only from the write, as when a relay dies in that window.
#[tokio::test]
async fn a_ws_sink_whose_write_fails_counts_each_event_once() {
    let dying = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (up, read) = endpoint(true, None).await;
    let reports = Recorder::default();
    let sink = Client::new([format!("http://{}", dying.local_addr().unwrap()), up])
        .backoff(MS(10), MS(50))
        .ws_sink(WsSinkOptions::new("a", "h/1").on_report(reports.handler()))
        .unwrap();
    let emitter = Emitter::new("a", "h", sink);
    let session = emitter.session(session_id());
    let (tcp, _) = dying.accept().await.unwrap();
    let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
    let _hello = ws.next().await;
    let ours = json!({"type": "hello", "versions": ["0.1"], "role": "collector"});
    ws.send(Message::text(ours.to_string())).await.unwrap();
    // the sink waits for work
    tokio::time::sleep(MS(100)).await;
    ws.get_ref().set_zero_linger().unwrap();
    drop(ws);
    // no await from the reset to the emit: the sink runs next, before the runtime polls
    // its socket
    let id = session
        .emit("progress.status", json!({ "n": 1 }))
        .unwrap()
        .id()
        .to_owned();
    tokio::time::timeout(Duration::from_secs(10), emitter.close())
        .await
        .expect("close returns");
    assert!(
        reports.any("Retrying"),
        "the write failed and the sink moved on: {:?}",
        reports.all()
    );
    // the endpoint returns what it read once the sink has closed the socket: by then
    // the sink has counted all it will
    assert_eq!(
        read.await.unwrap(),
        [id.as_str()],
        "written once to the next relay"
    );
    let stats = emitter.stats();
    assert_eq!(
        (stats.accepted, stats.delivered),
        (1, 1),
        "{stats:?} {:?}",
        reports.all()
    );
}

/// A WebSocket endpoint that says `hello` to its one connection and resets it at once,
/// as a relay killed just after it took the connection. Returns its URL.
async fn resetting() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let _hello = ws.next().await;
        let ours = json!({"type": "hello", "versions": ["0.1"], "role": "collector"});
        ws.send(Message::text(ours.to_string())).await.unwrap();
        ws.get_ref().set_zero_linger().unwrap();
    });
    url
}

/// What a dead relay did not confirm is written again to the next; should that relay
/// die too while the sink writes it, it goes to the one after. It was lost: taken out
/// to be written and dropped with the failed write, it was neither delivered nor
/// counted, and `close` waited for it for ever.
#[tokio::test]
async fn a_ws_sink_whose_resend_fails_keeps_what_it_resends() {
    let (hole, swallowed) = endpoint(false, Some(40)).await;
    let dies = resetting().await;
    let (up, read) = endpoint(true, None).await;
    let reports = Recorder::default();
    let sink = Client::new([hole, dies, up])
        .backoff(MS(10), MS(50))
        .ws_sink(WsSinkOptions::new("a", "h/1").on_report(reports.handler()))
        .unwrap();
    let emitter = Emitter::new("a", "h", sink);
    let session = emitter.session(session_id());
    // more than a socket write buffer holds (128 KiB), so the resend writes to the
    // socket before it is done
    let big = "x".repeat(8 * 1024);
    for n in 0..40 {
        session
            .emit("progress.status", json!({ "n": n, "pad": big }))
            .unwrap();
    }
    let swallowed = swallowed.await.unwrap();
    assert_eq!(swallowed.len(), 40, "the first relay read them all");
    tokio::time::timeout(Duration::from_secs(10), emitter.close())
        .await
        .expect("close returns");
    assert_eq!(read.await.unwrap(), swallowed, "{:?}", reports.all());
    let stats = emitter.stats();
    assert_eq!((stats.accepted, stats.delivered), (40, 40), "{stats:?}");
}
