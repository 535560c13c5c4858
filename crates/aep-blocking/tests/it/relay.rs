//! What only the blocking layer adds, against the embedded relay: the emit-and-consume
//! round trip through the blocking calls, the `std::sync::mpsc`-style receive API and
//! the iterator, calls made inside a runtime, runtimes the caller provides, and the
//! blocking waiting emit. The
//! relay scenarios themselves (outages, resume, refusals, timeouts) are the async
//! crate's (`aep-async/tests/common/scenarios.rs`): the blocking calls run that code.
#![allow(clippy::unwrap_used)]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_blocking::delivery::RetryPolicy;
use aep_blocking::{
    Client, Emitter, Error, HttpSink, HttpSinkOptions, Notice, RecvError, RecvTimeoutError,
    ResumePosition, Runtime, SubscribeOptions, Subscription, Transport, TryRecvError,
};
use aep_core::Event;
use aep_testing::ThreadRelay;
use serde_json::json;

use aep_test_support::wait::PATIENCE;

/// A client of `relays` that reconnects fast.
fn fast(relays: impl Into<aep_blocking::Relays>) -> Client {
    Client::new(relays).backoff(Duration::from_millis(20), Duration::from_millis(200))
}

fn sink(relays: impl Into<aep_blocking::Relays>) -> HttpSink {
    let retry = |r: RetryPolicy| r.backoff(Duration::from_millis(20), Duration::from_millis(200));
    let options = HttpSinkOptions::new().retry(retry);
    fast(relays).http_sink(options).unwrap()
}

fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().filter_map(Event::seq).collect()
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

/// What only the blocking layer has (the replay itself is the async suite's
/// `http_emit_then_sse_history_pass`): `flush` returns once the batch is delivered, and
/// a history-only subscription that has ended answers `Closed` to every receive.
#[test]
fn an_ended_history_pass_is_closed_to_every_blocking_receive() {
    let relay = ThreadRelay::start().unwrap();
    let emitter = Emitter::new("coder", "host-a", sink(relay.url()));
    let session = emitter.session("s-history");
    for i in 0..3 {
        session
            .emit(
                "tool.requested",
                json!({"tool": {"name": "bash"}, "args": {"i": i}}),
            )
            .unwrap();
    }
    emitter.flush().unwrap();
    assert_eq!(emitter.stats().delivered, 3);

    let mut sub = fast(relay.url())
        .subscribe(SubscribeOptions::new().from_all().history_only())
        .unwrap();
    assert_eq!(seqs(&drain(&mut sub)), [0, 1, 2]);
    assert_eq!(
        sub.positions(),
        vec![ResumePosition::new("s-history", 0, 2)]
    );
    assert_eq!(sub.recv(), Err(RecvError::Closed));
    assert_eq!(sub.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(
        sub.recv_timeout(Duration::from_millis(10)),
        Err(RecvTimeoutError::Closed)
    );
}

#[test]
fn live_over_both_transports_with_iterator_and_timeouts() {
    let relay = ThreadRelay::start().unwrap();
    for transport in [Transport::Sse, Transport::WebSocket] {
        let session_id = format!("s-live-{transport:?}");
        let (connected_tx, connected_rx) = mpsc::sync_channel(4);
        let mut sub = fast(relay.url())
            .subscribe(
                SubscribeOptions::new()
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
fn inside_a_runtime_waiting_calls_refuse_and_the_rest_work() {
    let relay = ThreadRelay::start().unwrap();
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = reports.clone();
    let sink = Client::new(relay.url())
        .http_sink(
            HttpSinkOptions::new()
                .on_report(move |r| log.lock().unwrap().push(format!("{r:?}")))
                .retry(|r| r.give_up_after(Some(Duration::from_secs(5)))),
        )
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    let mut sub = fast(relay.url())
        .subscribe(SubscribeOptions::new())
        .unwrap();
    let url = relay.url().to_owned();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (emitter, sub) = rt.block_on(async move {
        // Non-waiting calls work anywhere.
        let session = emitter.session("s");
        session.emit("progress.status", json!({})).unwrap();
        assert_eq!(sub.try_recv(), Err(TryRecvError::Empty));
        // Waiting calls say why they refuse, at once: no deadlock, no tokio panic.
        assert!(matches!(
            session.emit_wait("progress.status", json!({})),
            Err(Error::InsideRuntime)
        ));
        assert!(matches!(session.reserve(), Err(Error::InsideRuntime)));
        assert!(matches!(
            emitter.emit_wait("agent.heartbeat", None::<()>),
            Err(Error::InsideRuntime)
        ));
        assert!(matches!(emitter.reserve(), Err(Error::InsideRuntime)));
        assert_eq!(session.next_seq(), 1, "a refused wait takes no seq");
        assert!(matches!(emitter.flush(), Err(Error::InsideRuntime)));
        assert!(emitter.close().unwrap_err().is_inside_runtime());
        assert_eq!(sub.recv(), Err(RecvError::InsideRuntime));
        assert_eq!(
            sub.recv_timeout(Duration::from_millis(1)),
            Err(RecvTimeoutError::InsideRuntime)
        );
        assert_eq!(sub.next(), None);
        assert!(Runtime::shared().unwrap().block_on(async {}).is_err());
        // New objects can be made, and dropped, inside a runtime; opening a connection
        // that waits for its `hello` refuses.
        let other = fast(&url).subscribe(SubscribeOptions::new()).unwrap();
        drop(other);
        let refused = fast(&url).duplex(aep_blocking::control::DuplexOptions::new());
        assert!(refused.unwrap_err().is_inside_runtime());
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
    let relay_client = Client::new(relay.url()).runtime(&rt);
    let sink = relay_client.http_sink(HttpSinkOptions::new()).unwrap();
    let emitter = Emitter::builder("coder", "host-a").build_on(&rt, sink);
    assert!(emitter.runtime().is_some_and(|r| r.same_as(&rt)));
    emitter
        .session("s-own")
        .emit("progress.status", json!({}))
        .unwrap();
    emitter.flush().unwrap();
    let sub_options = SubscribeOptions::new().from_all().history_only();
    let mut sub = relay_client.subscribe(sub_options).unwrap();
    assert_eq!(drain(&mut sub).len(), 1);
    // Every handle dropped on a plain thread, the caller's runtime still running.
    drop((emitter, sub, rt, relay_client));
    tokio_rt.shutdown_timeout(Duration::from_secs(1));

    // An owned runtime: the last handle going stops its thread; nothing blocks.
    let owned = Runtime::new().unwrap();
    assert_eq!(owned.block_on(async { 7 }).unwrap(), 7);
    let task = owned.clone();
    drop(owned);
    drop(task);
}

/// A plain thread producing faster than the relay takes events loses nothing when it
/// waits: over a queue of 16, every event of the burst arrives, in order.
#[test]
fn a_producer_faster_than_the_relay_loses_nothing_when_it_waits() {
    let relay = ThreadRelay::start().unwrap();
    let sink = Client::new(relay.url())
        .http_sink(
            HttpSinkOptions::new()
                .batch(|b| b.max_items(4))
                .queue_capacity(16)
                .on_report(|_| {}),
        )
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    let session = emitter.session("s-bulk");
    for i in 0..5_000 {
        session
            .emit_wait("tool.called", json!({"tool": "bash", "i": i}))
            .unwrap();
    }
    // A permit, used with options.
    let e = session
        .reserve()
        .unwrap()
        .emit_with(
            "tool.called",
            json!({}),
            aep_blocking::EmitOptions::new().subject("last"),
        )
        .unwrap();
    assert_eq!(e.seq(), Some(5_000));
    emitter.close().unwrap();
    let stats = emitter.stats();
    assert_eq!(
        (stats.accepted, stats.delivered, stats.dropped),
        (5_001, 5_001, 0)
    );
    let mut sub = fast(relay.url())
        .subscribe(SubscribeOptions::new().from_all().history_only())
        .unwrap();
    assert_eq!(seqs(&drain(&mut sub)), (0..5_001).collect::<Vec<_>>());
}

/// Waiting ends with a typed error, not a hang: `Stalled` once the relay has been gone
/// for the sink's `give_up_after`, `Closed` once the emitter is closed.
#[test]
fn a_wait_ends_with_stalled_when_the_relay_is_gone_and_closed_after_close() {
    let relay = ThreadRelay::start().unwrap();
    let options = HttpSinkOptions::new()
        .queue_capacity(4)
        .batch(|b| b.max_items(1))
        .request_timeout(Duration::from_millis(200))
        .retry(|r| {
            r.backoff(Duration::from_millis(20), Duration::from_millis(50))
                .give_up_after(Some(Duration::from_millis(300)))
        })
        .on_report(|_| {});
    let sink = Client::new(relay.url()).http_sink(options).unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    let session = emitter.session("s");
    session.emit_wait("tool.called", json!({})).unwrap();
    emitter.flush().unwrap();
    relay.shutdown().unwrap();
    let started = std::time::Instant::now();
    let err = loop {
        match session.emit_wait("tool.called", json!({})) {
            Ok(_) => assert!(started.elapsed() < PATIENCE, "no end to the wait"),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(err, Error::Emit(aep_blocking::EmitError::Stalled { .. })),
        "{err}"
    );
    emitter.close().unwrap();
    assert!(matches!(
        session.emit_wait("tool.called", json!({})),
        Err(Error::Emit(aep_blocking::EmitError::Closed))
    ));
}

/// A relay that is down: it takes connections and drops them at once.
fn down_relay() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            drop(conn);
        }
    });
    url
}

/// Given two relays of which the first is down, the blocking sink and subscription use
/// the second (the failover itself is the async crate's, tested there).
#[test]
fn a_sink_and_a_subscription_given_two_relays_use_the_one_that_answers() {
    let relay = ThreadRelay::start().unwrap();
    let relays = aep_blocking::Relays::from([down_relay(), relay.url().to_owned()]);
    let emitter = Emitter::new("coder", "host-a", sink(relays.clone()));
    let session = emitter.session("s-two");
    for _ in 0..3 {
        session.emit("progress.status", json!({})).unwrap();
    }
    emitter.flush().unwrap();
    assert_eq!(emitter.stats().delivered, 3);
    let mut sub = fast(relays)
        .subscribe(SubscribeOptions::new().from_all().history_only())
        .unwrap();
    assert_eq!(seqs(&drain(&mut sub)), [0, 1, 2]);
}

/// `Client::tls_ca_pem` from plain threads (issue 31 §2): an HTTPS relay whose
/// certificate a run-time CA signed, an emit and a history pass over it.
#[test]
fn a_private_ca_is_trusted_from_the_blocking_client() {
    let dir = aep_test_support::disk::TempDir::new("blocking-tls");
    let ca = aep_test_support::tls::TestCa::new("aep-blocking tls test");
    let paths = ca.write(dir.path(), "");
    let relay =
        ThreadRelay::start_with(aep_relay::Relay::builder().tls(&paths.cert, &paths.key)).unwrap();
    assert!(relay.url().starts_with("https://"), "{}", relay.url());
    let client = fast(relay.url()).tls_ca_pem(ca.pem()).unwrap();
    let emitter = Emitter::new(
        "coder",
        "host-a",
        client.http_sink(HttpSinkOptions::new()).unwrap(),
    );
    emitter
        .session("s-tls")
        .emit("session.started", json!({}))
        .unwrap();
    emitter.flush().unwrap();
    assert_eq!(emitter.stats().delivered, 1);
    let mut sub = client
        .subscribe(SubscribeOptions::new().from_all().history_only())
        .unwrap();
    assert_eq!(seqs(&drain(&mut sub)), [0]);
}
