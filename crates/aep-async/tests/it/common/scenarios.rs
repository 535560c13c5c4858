// End-to-end scenarios of issue 6 ("Done when"), written once against the `TestRelay`
// alias and `include!`d by `reference_relay.rs` (the Node reference relay) and
// `rust_relay.rs` (the embedded `aep_relay`), so both relays run the same assertions.
// `TestRelay` must offer `skip()` (whether the relay cannot run here: the test then
// returns, having said so), `start(cfg)`, `stopped(cfg)`, `start_now()` and
// implement `common::Relay`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::{
    Client, DeliveryReport, Emitter, HttpSink, HttpSinkOptions, ResumePosition, SubscribeOptions,
    Subscription, Transport, WsSinkOptions,
};
use aep_core::{Event, Severity};
use common::{sse_response, status_response, Notices, Relay, RelayConfig, Scripted, Silent};
use futures::{SinkExt, StreamExt};
use serde_json::json;

const PATIENCE: Duration = Duration::from_secs(30);

/// A client of `url` that reconnects fast.
fn fast(url: impl Into<aep_async::Relays>) -> Client {
    Client::new(url).backoff(Duration::from_millis(50), Duration::from_millis(400))
}

fn http_sink(url: &str, reports: &Arc<Mutex<Vec<String>>>) -> HttpSink {
    let log = reports.clone();
    Client::new(url)
        .http_sink(
            HttpSinkOptions::new()
                .on_report(move |r| log.lock().unwrap().push(format!("{r:?}")))
                .retry(|r| r.backoff(Duration::from_millis(50), Duration::from_millis(300))),
        )
        .unwrap()
}

/// A started relay and an emitter sending to it over HTTP, its reports kept; `None`
/// where the relay cannot run here (the test then returns, `skip` having said why).
async fn relay_and_emitter() -> Option<(TestRelay, Arc<Mutex<Vec<String>>>, Emitter)> {
    if TestRelay::skip() {
        return None;
    }
    let relay = TestRelay::start(RelayConfig::default()).await;
    let reports = Arc::default();
    let emitter = Emitter::new("coder", "host-a", http_sink(&relay.url(), &reports));
    Some((relay, reports, emitter))
}

/// Takes `n` events or fails after a generous deadline (a hang guard, not a timing claim).
async fn take(sub: &mut Subscription, n: usize) -> Vec<Event> {
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(PATIENCE, sub.next()).await {
            Ok(Some(e)) => out.push(e),
            Ok(None) => break,
            Err(_) => panic!("only {} of {n} events arrived", out.len()),
        }
    }
    out
}

async fn drain_to_end(sub: &mut Subscription) -> Vec<Event> {
    let mut out = Vec::new();
    loop {
        match tokio::time::timeout(PATIENCE, sub.next()).await {
            Ok(Some(e)) => out.push(e),
            Ok(None) => return out,
            Err(_) => panic!("stream did not end; {} events so far", out.len()),
        }
    }
}

fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().filter_map(Event::seq).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_emit_then_sse_history_pass() {
    let Some((relay, reports, emitter)) = relay_and_emitter().await else {
        return;
    };
    let session = emitter.session("s-history");
    for i in 0..50 {
        session
            .emit("tool.called", json!({"tool": "bash", "i": i}))
            .unwrap();
    }
    emitter.emit("agent.heartbeat", None::<()>).unwrap();
    emitter.flush().await;
    let stats = emitter.stats();
    assert_eq!((stats.accepted, stats.delivered), (51, 51), "{reports:?}");

    let notices = Notices::default();
    let mut sub = fast(relay.url()).subscribe(
        SubscribeOptions::new()
            .from_all()
            .history_only()
            .on_notice(notices.handler()),
    );
    let events = drain_to_end(&mut sub).await;
    assert_eq!(seqs(&events), (0..50).collect::<Vec<_>>());
    assert!(events
        .iter()
        .all(|e| e.source() == "aep://host-a/agent/coder/session/s-history"));
    assert!(notices.any("ReplayComplete"), "{:?}", notices.all());
    assert_eq!(
        sub.positions(),
        vec![ResumePosition::new("s-history", 0, 49)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_down_at_start_then_delivered_and_streamed() {
    if TestRelay::skip() {
        return;
    }
    let mut relay = TestRelay::stopped(RelayConfig::default());
    let url = relay.url();
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let emitter = Emitter::new("coder", "host-a", http_sink(&url, &reports));
    let notices = Notices::default();
    let mut sub = fast(&url).subscribe(
        SubscribeOptions::new()
            .from_all()
            .on_notice(notices.handler()),
    );
    let session = emitter.session("s-late");
    for _ in 0..5 {
        session.emit("tool.called", json!({"tool": "ls"})).unwrap();
    }
    // Nothing listens yet: the sink retries, the subscription backs off.
    notices.wait_for("Network").await;
    for _ in 0..200 {
        if reports
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.contains("Retrying"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(reports
        .lock()
        .unwrap()
        .iter()
        .any(|r| r.contains("Retrying")));
    relay.start_now().await;
    emitter.flush().await;
    assert_eq!(emitter.stats().delivered, 5, "{reports:?}");
    let got = take(&mut sub, 5).await;
    assert_eq!(seqs(&got), vec![0, 1, 2, 3, 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_stream_and_restarted_resumes_without_loss_or_duplicate() {
    if TestRelay::skip() {
        return;
    }
    for transport in [Transport::Sse, Transport::WebSocket] {
        let mut relay = TestRelay::start(RelayConfig::default()).await;
        let reports = Arc::default();
        let emitter = Emitter::new("coder", "host-a", http_sink(&relay.url(), &reports));
        let session = emitter.session("s-crash");
        let notices = Notices::default();
        // `from=all`: events emitted before the request lands are replayed, so there is
        // no race with subscription set-up (the reference relay sends SSE headers only
        // with the first event or heartbeat).
        let mut sub = fast(relay.url()).subscribe(
            SubscribeOptions::new()
                .transport(transport)
                .from_all()
                .on_notice(notices.handler()),
        );
        for _ in 0..10 {
            session.emit("tool.called", json!({})).unwrap();
        }
        emitter.flush().await;
        let first = take(&mut sub, 10).await;
        assert_eq!(seqs(&first), (0..10).collect::<Vec<_>>());

        relay.kill();
        notices.wait_for("Error").await;
        // Emitted while the relay is down: the sink keeps them and retries.
        for _ in 10..15 {
            session.emit("tool.called", json!({})).unwrap();
        }
        relay.restart();
        emitter.flush().await;
        for _ in 15..20 {
            session.emit("tool.called", json!({})).unwrap();
        }
        // A redelivery of an already seen event must not reach the caller twice.
        session.redeliver(&first[9]).unwrap();
        emitter.flush().await;
        let rest = take(&mut sub, 10).await;
        assert_eq!(seqs(&rest), (10..20).collect::<Vec<_>>(), "{transport:?}");
        assert_eq!(sub.positions()[0].seq(), 19);
        // Nothing else arrives (no duplicate of the redelivered event).
        let extra = tokio::time::timeout(Duration::from_millis(300), sub.next()).await;
        assert!(extra.is_err(), "unexpected extra event {extra:?}");
        sub.close();
        sub.close();
        assert!(sub.is_closed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_from_persisted_positions_is_exact() {
    let Some((relay, _reports, emitter)) = relay_and_emitter().await else {
        return;
    };
    let a = emitter.session("s-a");
    let b = emitter.session("s-b");
    for _ in 0..6 {
        a.emit("tool.called", json!({})).unwrap();
        b.emit("tool.called", json!({})).unwrap();
    }
    emitter.flush().await;
    let saved = vec![
        ResumePosition::new("s-a", 0, 2),
        ResumePosition::new("s-b", 0, 4),
    ];
    let mut sub =
        fast(relay.url()).subscribe(SubscribeOptions::new().from_positions(saved).history_only());
    let got = drain_to_end(&mut sub).await;
    let mut pairs: Vec<(String, u64)> = got
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_never_answers_times_out_as_network() {
    let silent = Silent::start().await;
    // Subscription: the connect deadline fires and is a Network error, retried.
    for transport in [Transport::Sse, Transport::WebSocket] {
        let notices = Notices::default();
        let sub = fast(&silent.url)
            .connect_timeout(Duration::from_millis(200))
            .subscribe(
                SubscribeOptions::new()
                    .transport(transport)
                    .on_notice(notices.handler()),
            );
        notices.wait_for("timeout").await;
        assert!(
            notices.all().iter().all(|n| n.contains("Network")),
            "{:?}",
            notices.all()
        );
        drop(sub);
    }
    // Sink: each request times out, is retried, then given up; flush still returns.
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = reports.clone();
    let sink = Client::new(&silent.url)
        .http_sink(
            HttpSinkOptions::new()
                .request_timeout(Duration::from_millis(200))
                .on_report(move |r| log.lock().unwrap().push(format!("{r}")))
                .retry(|r| {
                    r.backoff(Duration::from_millis(20), Duration::from_millis(50))
                        .give_up_after(Some(Duration::from_millis(600)))
                }),
        )
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    // The emitting call itself succeeds although nothing will ever be delivered.
    emitter.session("s").emit("tool.called", json!({})).unwrap();
    emitter.close().await;
    let stats = emitter.stats();
    assert_eq!((stats.delivered, stats.rejected), (0, 1));
    let log = reports.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|r| r.contains("retrying") && r.contains("timeout")),
        "{log:?}"
    );
    assert!(log.iter().any(|r| r.starts_with("gave up")), "{log:?}");
}

/// A relay that takes only the token `sesame`.
async fn guarded_relay() -> TestRelay {
    TestRelay::start(RelayConfig {
        token: Some("sesame".into()),
        ..Default::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_is_http_401_everywhere() {
    if TestRelay::skip() {
        return;
    }
    let relay = guarded_relay().await;
    // Ingest: 401 is final, reported once, never retried.
    let reports: Arc<Mutex<Vec<DeliveryReport>>> = Arc::default();
    let log = reports.clone();
    let sink = Client::new(relay.url())
        .http_sink(HttpSinkOptions::new().on_report(move |r| log.lock().unwrap().push(r)))
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    emitter.session("s").emit("tool.called", json!({})).unwrap();
    emitter.flush().await;
    {
        let log = reports.lock().unwrap();
        assert_eq!(log.len(), 1, "{log:?}");
        assert!(
            matches!(&log[0], DeliveryReport::Rejected { error, events: 1 } if error.status() == Some(401))
        );
    }
    for transport in [Transport::Sse, Transport::WebSocket] {
        let notices = Notices::default();
        let _sub = fast(relay.url()).subscribe(
            SubscribeOptions::new()
                .transport(transport)
                .on_notice(notices.handler()),
        );
        notices.wait_for("status: 401").await;
    }
    // With the token everything flows.
    let sink = Client::new(relay.url())
        .token("sesame")
        .http_sink(HttpSinkOptions::new())
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    emitter.session("s").emit("tool.called", json!({})).unwrap();
    emitter.flush().await;
    assert_eq!(emitter.stats().delivered, 1);
    let mut sub = fast(relay.url())
        .token("sesame")
        .subscribe(SubscribeOptions::new().from_all().history_only());
    assert_eq!(drain_to_end(&mut sub).await.len(), 1);
}

async fn seed_sessions(url: &str, sessions: usize, per: usize) -> Vec<ResumePosition> {
    let reports = Arc::default();
    let emitter = Emitter::new("coder", "host-a", http_sink(url, &reports));
    let mut first = Vec::new();
    for s in 0..sessions {
        let se = emitter.session(format!("sess-{s:03}"));
        for _ in 0..per {
            se.emit("tool.called", json!({})).unwrap();
        }
        first.push(ResumePosition::new(se.session(), 0, 0));
    }
    emitter.flush().await;
    assert_eq!(
        emitter.stats().delivered,
        (sessions * per) as u64,
        "{reports:?}"
    );
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_resume_set_shrinks_and_retries() {
    if TestRelay::skip() {
        return;
    }
    let relay = TestRelay::start(RelayConfig {
        max_from: Some(2),
        ..Default::default()
    })
    .await;
    let from = seed_sessions(&relay.url(), 5, 3).await;
    for transport in [Transport::Sse, Transport::WebSocket] {
        let notices = Notices::default();
        let mut sub = fast(relay.url()).subscribe(
            SubscribeOptions::new()
                .transport(transport)
                .from_positions(from.clone())
                .on_notice(notices.handler()),
        );
        // 5 positions refused; capped at 2: the two newest sessions resume.
        let got = take(&mut sub, 4).await;
        let mut sessions: Vec<_> = got
            .iter()
            .map(|e| e.session().unwrap().to_owned())
            .collect();
        sessions.dedup();
        assert_eq!(sessions, vec!["sess-003", "sess-004"], "{transport:?}");
        assert!(
            notices.any("ResumeShrunk { cap: 2 }"),
            "{:?}",
            notices.all()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_set_too_large_for_one_request_drains_in_chunks() {
    if TestRelay::skip() {
        return;
    }
    let relay = TestRelay::start(RelayConfig::default()).await;
    let from = seed_sessions(&relay.url(), 40, 3).await;
    let mut sub = fast(relay.url()).subscribe(
        SubscribeOptions::new()
            .from_positions(from)
            .from_budget(400)
            .history_only(),
    );
    let got = drain_to_end(&mut sub).await;
    assert_eq!(got.len(), 80, "every session's seq 1 and 2, once");
    let mut keys: Vec<_> = got
        .iter()
        .map(|e| (e.session().unwrap().to_owned(), e.seq().unwrap()))
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 80);
    assert_eq!(sub.positions().len(), 40);
    assert!(sub.positions().iter().all(|p| p.seq() == 2));
}

const VALID: &str = r#"{"aep":"0.1","id":"01A","type":"tool.called","time":"2026-01-01T00:00:00.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":0}"#;
/// An unregistered vendor type with an unknown extension attribute: tolerated.
const FUTURE: &str = r#"{"aep":"0.1","id":"01B","type":"x.acme.future","time":"2026-01-01T00:00:00.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":1,"acmewidget":"blue","data":{"new":true}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_sse_data_is_dropped_and_reported() {
    let body = format!(
        "data: {{not json\n\n: replay-exhausted s 0:0\n\ndata: {VALID}\nid: s:0:0\n\ndata: {VALID}\n\ndata: {FUTURE}\n\n: replay-complete\n\n"
    );
    let server = Scripted::start(move |_| sse_response(&body)).await;
    let notices = Notices::default();
    let mut sub = fast(&server.url).subscribe(
        SubscribeOptions::new()
            .history_only()
            .on_notice(notices.handler()),
    );
    let got = drain_to_end(&mut sub).await;
    assert_eq!(
        got.len(),
        2,
        "the good event once (duplicate deduped), then the unknown type"
    );
    assert_eq!(got[1].event_type(), "x.acme.future");
    assert_eq!(got[1].extension_str("acmewidget"), Some("blue"));
    assert_eq!(sub.positions(), vec![ResumePosition::new("s", 0, 1)]);
    assert!(notices.any("Parse"), "{:?}", notices.all());
    assert!(notices.any("ReplayExhausted"), "{:?}", notices.all());
    assert!(notices.any("ReplayComplete"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_all_refused_falls_back_to_live_only() {
    let server = Scripted::start(|head: &str| {
        if head.contains("from=all") {
            status_response(400)
        } else {
            sse_response(&format!("data: {VALID}\n\n: replay-complete\n\n"))
        }
    })
    .await;
    let notices = Notices::default();
    let mut sub = fast(&server.url).subscribe(
        SubscribeOptions::new()
            .from_all()
            .history_only()
            .on_notice(notices.handler()),
    );
    let got = drain_to_end(&mut sub).await;
    assert_eq!(got.len(), 1);
    assert!(notices.any("AllRefused"), "{:?}", notices.all());
    let reqs = server.requests.lock().unwrap();
    assert!(
        reqs[0].contains("from=all") && !reqs[1].contains("from="),
        "{reqs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_connection_multiplexes_subscriptions() {
    if TestRelay::skip() {
        return;
    }
    let relay = TestRelay::start(RelayConfig::default()).await;
    let conn = fast(relay.url()).ws_connection();
    let n1 = Notices::default();
    let n2 = Notices::default();
    let mut tools = conn.subscribe(
        SubscribeOptions::new()
            .filter(json!({"type": "tool.*"}))
            .on_notice(n1.handler()),
    );
    let mut loud = conn.subscribe(
        SubscribeOptions::new()
            .filter(json!({"severity": {"gte": "error"}}))
            .on_notice(n2.handler()),
    );
    n1.wait_for("Connected").await;
    n2.wait_for("Connected").await;
    // The WS sink emits (hello as emitter).
    let sink = Client::new(relay.url())
        .ws_sink(WsSinkOptions::new("coder", "host-a/1"))
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    let s = emitter.session("s-ws");
    s.emit("tool.called", json!({})).unwrap();
    s.emit_with(
        "error.raised",
        json!({"message": "x"}),
        aep_async::EmitOptions::new().severity(Severity::Error),
    )
    .unwrap();
    s.emit_with(
        "tool.failed",
        json!({}),
        aep_async::EmitOptions::new().severity(Severity::Critical),
    )
    .unwrap();
    emitter.close().await;
    assert_eq!(emitter.stats().delivered, 3);
    let t = take(&mut tools, 2).await;
    assert_eq!(
        t.iter().map(|e| e.event_type()).collect::<Vec<_>>(),
        vec!["tool.called", "tool.failed"]
    );
    let l = take(&mut loud, 2).await;
    assert_eq!(
        l.iter().map(|e| e.event_type()).collect::<Vec<_>>(),
        vec!["error.raised", "tool.failed"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_only_over_ws_is_refused_with_a_notice() {
    let notices = Notices::default();
    let mut sub = fast("http://127.0.0.1:9").subscribe(
        SubscribeOptions::new()
            .transport(Transport::WebSocket)
            .history_only()
            .on_notice(notices.handler()),
    );
    assert!(sub.next().await.is_none());
    assert!(notices.any("SSE"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_subscription_filter_lowers_to_wire_plus_residual() {
    let progress = VALID
        .replace("tool.called", "tool.call.progress")
        .replace("\"01A\"", "\"01C\"");
    let body = format!("data: {VALID}\n\ndata: {progress}\n\n: replay-complete\n\n");
    let server = Scripted::start(move |_| sse_response(&body)).await;
    let f = aep_core::subscription::SubscriptionFilter::new()
        .with_types(["tool.*.progress"])
        .unwrap();
    let mut sub = fast(&server.url).subscribe(
        SubscribeOptions::new()
            .subscription_filter(&f)
            .unwrap()
            .history_only(),
    );
    let got = drain_to_end(&mut sub).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].event_type(), "tool.call.progress");
    let head = server.requests.lock().unwrap()[0].clone();
    assert!(
        head.contains("filter=%7B%22type%22%3A%5B%22tool.*%22%5D%7D"),
        "{head}"
    );
}

#[derive(Debug, Default, Clone)]
struct Commands(Arc<Mutex<Vec<Event>>>);

impl aep_async::CommandHook for Commands {
    fn accepts(&self) -> Vec<String> {
        vec!["control.pause".into()]
    }
    fn command(&self, command: Event) {
        self.0.lock().unwrap().push(command);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_sink_hands_inbound_commands_to_the_hook() {
    if TestRelay::skip() {
        return;
    }
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;

    let relay = guarded_relay().await;
    let commands = Commands::default();
    let sink = Client::new(relay.url())
        .token("sesame")
        .ws_sink(WsSinkOptions::new("coder", "host-a/1").command_hook(commands.clone()))
        .unwrap();
    let emitter = Emitter::new("coder", "host-a", sink);
    // Emitting on the session makes this connection its owner at the relay.
    emitter
        .session("s-ctl")
        .emit("session.started", json!({}))
        .unwrap();
    emitter.flush().await;

    let ws_url = relay.url().replace("http://", "ws://") + "/socket";
    let mut req = ws_url.into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", "Bearer sesame".parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    let hello = json!({"type": "hello", "versions": ["0.1"], "role": "consumer", "identity": {"agent": "op"}});
    ws.send(Message::text(hello.to_string())).await.unwrap();
    let command = json!({
        "aep": "0.1", "id": "01CMD", "type": "control.pause", "time": "2026-01-01T00:00:00.000Z",
        "source": "aep://console/agent/op", "agent": "op", "session": "s-ctl", "data": {}
    });
    // Wait for the relay's hello before commanding.
    while let Some(Ok(msg)) = ws.next().await {
        if msg.to_text().unwrap_or_default().contains("\"hello\"") {
            break;
        }
    }
    ws.send(Message::text(command.to_string())).await.unwrap();
    for _ in 0..400 {
        if !commands.0.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let got = commands.0.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "the command reached the hook");
    assert_eq!(got[0].id(), "01CMD");
    emitter.close().await;
}
