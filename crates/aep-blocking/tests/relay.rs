//! The async crate's relay scenarios, from plain threads, against the embedded relay.
#![allow(clippy::unwrap_used)]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_blocking::{
    subscribe, subscribe_on, DeliveryReport, Emitter, Error, HttpSink, Notice, RecvError,
    RecvTimeoutError, ResumePosition, Runtime, SubscribeOptions, Subscription, Transport,
    TryRecvError,
};
use aep_core::Event;
use aep_relay::Relay;
use aep_testing::ThreadRelay;
use serde_json::json;

/// Generous: only a broken implementation waits this long.
const PATIENCE: Duration = Duration::from_secs(20);

fn fast() -> SubscribeOptions {
    SubscribeOptions::new().backoff(Duration::from_millis(20), Duration::from_millis(200))
}

fn sink(url: &str) -> HttpSink {
    HttpSink::builder(url)
        .configure(|b| b.retry_backoff(Duration::from_millis(20), Duration::from_millis(200)))
        .build()
        .unwrap()
}

fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().filter_map(Event::seq).collect()
}

/// Notices as strings, and a way to wait for one.
#[derive(Clone, Default)]
struct Notices(Arc<Mutex<Vec<String>>>);

impl Notices {
    fn handler(&self) -> impl Fn(Notice) + Send + Sync + 'static {
        let log = self.0.clone();
        move |n| log.lock().unwrap().push(format!("{n:?}"))
    }
    fn wait_for(&self, needle: &str) {
        let deadline = std::time::Instant::now() + PATIENCE;
        while std::time::Instant::now() < deadline {
            if self.0.lock().unwrap().iter().any(|n| n.contains(needle)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "no notice containing {needle:?}: {:?}",
            self.0.lock().unwrap()
        );
    }
}

fn drain(sub: &mut Subscription) -> Vec<Event> {
    let mut out = Vec::new();
    loop {
        match sub.recv_timeout(PATIENCE) {
            Ok(e) => out.push(e),
            Err(RecvTimeoutError::Closed) => return out,
            Err(e) => panic!("{e} after {} events", out.len()),
        }
    }
}

fn take(sub: &mut Subscription, n: usize) -> Vec<Event> {
    (0..n)
        .map(|_| sub.recv_timeout(PATIENCE).unwrap())
        .collect()
}

#[test]
fn http_emit_then_sse_history_pass() {
    let relay = ThreadRelay::start().unwrap();
    let emitter = Emitter::new("coder", "host-a", sink(relay.url()));
    let session = emitter.session("s-history");
    for i in 0..50 {
        session
            .emit(
                "tool.requested",
                json!({"tool": {"name": "bash"}, "args": {"i": i}}),
            )
            .unwrap();
    }
    emitter.emit("agent.heartbeat", None::<()>).unwrap();
    emitter.flush().unwrap();
    let stats = emitter.stats();
    assert_eq!((stats.accepted, stats.delivered), (51, 51));

    let notices = Notices::default();
    let mut sub = subscribe(
        relay.url(),
        fast()
            .from_all()
            .history_only()
            .on_notice(notices.handler()),
    )
    .unwrap();
    let events = drain(&mut sub);
    assert_eq!(seqs(&events), (0..50).collect::<Vec<_>>());
    notices.wait_for("ReplayComplete");
    assert_eq!(
        sub.positions(),
        vec![ResumePosition::new("s-history", 0, 49)]
    );
    assert_eq!(sub.recv(), Err(RecvError::Closed));
    assert_eq!(sub.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn live_over_both_transports_with_iterator_and_timeouts() {
    let relay = ThreadRelay::start().unwrap();
    for transport in [Transport::Sse, Transport::WebSocket] {
        let session_id = format!("s-live-{transport:?}");
        let (connected_tx, connected_rx) = mpsc::sync_channel(4);
        let mut sub = subscribe(
            relay.url(),
            fast()
                .transport(transport)
                .filter(json!({"session": session_id}))
                .on_notice(move |n| {
                    if matches!(n, Notice::Connected { .. }) {
                        let _ = connected_tx.try_send(());
                    }
                }),
        )
        .unwrap();
        connected_rx.recv_timeout(PATIENCE).unwrap();
        // Nothing yet: a timeout loses nothing and the subscription goes on.
        assert_eq!(
            sub.recv_timeout(Duration::from_millis(20)),
            Err(RecvTimeoutError::Timeout)
        );
        assert_eq!(sub.try_recv(), Err(TryRecvError::Empty));

        let emitter = Emitter::new("coder", "host-a", sink(relay.url()));
        let session = emitter.session(session_id.as_str());
        for _ in 0..4 {
            session.emit("progress.status", json!({})).unwrap();
        }
        emitter.close().unwrap();
        let first = sub.recv_timeout(PATIENCE).unwrap();
        let rest: Vec<Event> = sub.by_ref().take(3).collect();
        assert_eq!(first.seq(), Some(0));
        assert_eq!(seqs(&rest), vec![1, 2, 3], "{transport:?}");
        assert_eq!(sub.positions(), vec![ResumePosition::new(session_id, 0, 3)]);
        sub.close();
        assert!(sub.is_closed());
        assert_eq!(sub.next(), None);
    }
}

#[test]
fn relay_down_at_start_then_delivered_and_streamed() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = reports.clone();
    let sink = HttpSink::builder(&url)
        .configure(|b| b.retry_backoff(Duration::from_millis(20), Duration::from_millis(200)))
        .on_report(move |r| log.lock().unwrap().push(format!("{r:?}")))
        .build()
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    let notices = Notices::default();
    let mut sub = subscribe(&url, fast().from_all().on_notice(notices.handler())).unwrap();
    let session = emitter.session("s-late");
    for _ in 0..5 {
        session.emit("progress.status", json!({})).unwrap();
    }
    // Nothing listens yet: the sink retries, the subscription backs off.
    notices.wait_for("Network");
    let deadline = std::time::Instant::now() + PATIENCE;
    while !reports
        .lock()
        .unwrap()
        .iter()
        .any(|r| r.contains("Retrying"))
    {
        assert!(std::time::Instant::now() < deadline, "no retry reported");
        std::thread::sleep(Duration::from_millis(10));
    }
    let relay =
        ThreadRelay::start_with(Relay::builder().bind(format!("127.0.0.1:{port}"))).unwrap();
    emitter.flush().unwrap();
    assert_eq!(emitter.stats().delivered, 5, "{reports:?}");
    assert_eq!(seqs(&take(&mut sub, 5)), vec![0, 1, 2, 3, 4]);
    drop(sub);
    relay.shutdown().unwrap();
}

#[test]
fn resume_from_persisted_positions_is_exact() {
    let relay = ThreadRelay::start().unwrap();
    let emitter = Emitter::new("coder", "host-a", sink(relay.url()));
    let a = emitter.session("s-a");
    let b = emitter.session("s-b");
    for _ in 0..6 {
        a.emit("progress.status", json!({})).unwrap();
        b.emit("progress.status", json!({})).unwrap();
    }
    emitter.flush().unwrap();
    let saved = vec![
        ResumePosition::new("s-a", 0, 2),
        ResumePosition::new("s-b", 0, 4),
    ];
    let mut sub = subscribe(relay.url(), fast().from_positions(saved).history_only()).unwrap();
    let mut pairs: Vec<(String, u64)> = drain(&mut sub)
        .iter()
        .map(|e| (e.session().unwrap().to_owned(), e.seq().unwrap()))
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        vec![
            ("s-a".into(), 3),
            ("s-a".into(), 4),
            ("s-a".into(), 5),
            ("s-b".into(), 5)
        ]
    );
}

#[test]
fn unauthorized_is_http_401_everywhere() {
    let relay = ThreadRelay::start_with(Relay::builder().token("sesame")).unwrap();
    let reports: Arc<Mutex<Vec<DeliveryReport>>> = Arc::default();
    let log = reports.clone();
    let sink = HttpSink::builder(relay.url())
        .on_report(move |r| log.lock().unwrap().push(r))
        .build()
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    emitter
        .session("s")
        .emit("progress.status", json!({}))
        .unwrap();
    emitter.flush().unwrap();
    {
        let log = reports.lock().unwrap();
        assert_eq!(log.len(), 1, "{log:?}");
        assert!(
            matches!(&log[0], DeliveryReport::Rejected { error, events: 1 } if error.status() == Some(401))
        );
    }
    for transport in [Transport::Sse, Transport::WebSocket] {
        let notices = Notices::default();
        let _sub = subscribe(
            relay.url(),
            fast().transport(transport).on_notice(notices.handler()),
        )
        .unwrap();
        notices.wait_for("401");
    }
    let sink = HttpSink::builder(relay.url())
        .token("sesame")
        .build()
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    emitter
        .session("s")
        .emit("progress.status", json!({}))
        .unwrap();
    emitter.close().unwrap();
    assert_eq!(emitter.stats().delivered, 1);
    let mut sub = subscribe(
        relay.url(),
        fast().token("sesame").from_all().history_only(),
    )
    .unwrap();
    assert_eq!(drain(&mut sub).len(), 1);
}

#[test]
fn inside_a_runtime_waiting_calls_refuse_and_the_rest_work() {
    let relay = ThreadRelay::start().unwrap();
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = reports.clone();
    let sink = HttpSink::builder(relay.url())
        .give_up_after(Some(Duration::from_secs(5)))
        .on_report(move |r| log.lock().unwrap().push(format!("{r:?}")))
        .build()
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    let mut sub = subscribe(relay.url(), fast()).unwrap();
    let url = relay.url().to_owned();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (emitter, sub) = rt.block_on(async move {
        // Non-waiting calls work anywhere.
        emitter
            .session("s")
            .emit("progress.status", json!({}))
            .unwrap();
        assert_eq!(sub.try_recv(), Err(TryRecvError::Empty));
        // Waiting calls say why they refuse, at once: no deadlock, no tokio panic.
        assert!(matches!(emitter.flush(), Err(Error::InsideRuntime)));
        assert!(emitter.close().unwrap_err().is_inside_runtime());
        assert_eq!(sub.recv(), Err(RecvError::InsideRuntime));
        assert_eq!(
            sub.recv_timeout(Duration::from_millis(1)),
            Err(RecvTimeoutError::InsideRuntime)
        );
        assert_eq!(sub.next(), None);
        assert!(Runtime::shared().unwrap().block_on(async {}).is_err());
        // New objects can be made, and dropped, inside a runtime.
        let other = subscribe(&url, fast()).unwrap();
        drop(other);
        (emitter, sub)
    });
    // Back on a plain thread, the same objects wait normally.
    emitter.close().unwrap();
    assert_eq!(emitter.stats().delivered, 1, "{reports:?}");
    drop(sub);
}

#[test]
fn caller_provided_runtime_and_drop_without_runtime() {
    let relay = ThreadRelay::start().unwrap();
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let rt = Runtime::from_handle(tokio_rt.handle().clone());
    let sink = HttpSink::builder(relay.url()).build_on(&rt).unwrap();
    let emitter = Emitter::builder("coder", "host-a").build_on(&rt, sink);
    assert!(emitter.runtime().is_some_and(|r| r.same_as(&rt)));
    emitter
        .session("s-own")
        .emit("progress.status", json!({}))
        .unwrap();
    emitter.flush().unwrap();
    let mut sub = subscribe_on(&rt, relay.url(), fast().from_all().history_only()).unwrap();
    assert_eq!(drain(&mut sub).len(), 1);
    // Every handle dropped on a plain thread, the caller's runtime still running.
    drop((emitter, sub, rt));
    tokio_rt.shutdown_timeout(Duration::from_secs(1));

    // An owned runtime: the last handle going stops its thread; nothing blocks.
    let owned = Runtime::new().unwrap();
    assert_eq!(owned.block_on(async { 7 }).unwrap(), 7);
    let task = owned.clone();
    drop(owned);
    drop(task);
}

#[test]
fn killed_mid_stream_and_restarted_resumes_without_loss_or_duplicate() {
    for transport in [Transport::Sse, Transport::WebSocket] {
        // A durable relay, so a restart on the same port still holds the history.
        let dir = std::env::temp_dir().join(format!(
            "aep-blocking-restart-{}-{transport:?}",
            std::process::id()
        ));
        let durable = || Relay::builder().data_dir(&dir);
        let relay = ThreadRelay::start_with(durable()).unwrap();
        let url = relay.url().to_owned();
        let port = url.rsplit(':').next().unwrap().to_owned();
        let emitter = Emitter::new("coder", "host-a", sink(&url));
        let session = emitter.session("s-crash");
        let notices = Notices::default();
        let mut sub = subscribe(
            &url,
            fast()
                .transport(transport)
                .from_all()
                .on_notice(notices.handler()),
        )
        .unwrap();
        for _ in 0..10 {
            session.emit("progress.status", json!({})).unwrap();
        }
        emitter.flush().unwrap();
        let first = take(&mut sub, 10);
        assert_eq!(seqs(&first), (0..10).collect::<Vec<_>>());

        relay.shutdown().unwrap();
        notices.wait_for("Error");
        // Emitted while the relay is down: the sink keeps them and retries.
        for _ in 10..15 {
            session.emit("progress.status", json!({})).unwrap();
        }
        let relay = ThreadRelay::start_with(durable().bind(format!("127.0.0.1:{port}"))).unwrap();
        emitter.flush().unwrap();
        for _ in 15..20 {
            session.emit("progress.status", json!({})).unwrap();
        }
        // A redelivery of an already seen event must not reach the caller twice.
        session.redeliver(&first[9]).unwrap();
        emitter.flush().unwrap();
        let rest = take(&mut sub, 10);
        assert_eq!(seqs(&rest), (10..20).collect::<Vec<_>>(), "{transport:?}");
        assert_eq!(sub.positions()[0].seq(), 19);
        assert_eq!(
            sub.recv_timeout(Duration::from_millis(300)),
            Err(RecvTimeoutError::Timeout),
            "no duplicate of the redelivered event"
        );
        drop(sub);
        relay.shutdown().unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn server_that_never_answers_times_out_as_network() {
    // Accepts connections and never says a word; stopped and joined at the end.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    silent.set_nonblocking(true).unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let keeper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok((s, _)) = silent.accept() {
                    held.push(s);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    for transport in [Transport::Sse, Transport::WebSocket] {
        let notices = Notices::default();
        let sub = subscribe(
            &url,
            fast()
                .transport(transport)
                .connect_timeout(Duration::from_millis(200))
                .on_notice(notices.handler()),
        )
        .unwrap();
        notices.wait_for("timeout");
        drop(sub);
    }
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = reports.clone();
    let sink = HttpSink::builder(&url)
        .configure(|b| {
            b.request_timeout(Duration::from_millis(200))
                .retry_backoff(Duration::from_millis(20), Duration::from_millis(50))
        })
        .give_up_after(Some(Duration::from_millis(600)))
        .on_report(move |r| log.lock().unwrap().push(format!("{r}")))
        .build()
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    // The emitting call succeeds although nothing will ever be delivered; close returns.
    emitter
        .session("s")
        .emit("progress.status", json!({}))
        .unwrap();
    emitter.close().unwrap();
    let stats = emitter.stats();
    assert_eq!((stats.delivered, stats.rejected), (0, 1));
    assert!(
        reports
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.starts_with("gave up")),
        "{reports:?}"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    keeper.join().unwrap();
}
