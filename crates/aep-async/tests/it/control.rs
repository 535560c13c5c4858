//! The control plane over real WebSockets (AEP-0004): a Rust `ControlClient` against a
//! Rust `ControlTarget` through the embedded Rust relay, and against fault cases built
//! from a WebSocket proxy and scripted endpoints.
#![cfg(feature = "ws")]
#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::control::{
    ControlClient, ControlError, ControlOptions, ControlTarget, Duplex, DuplexOptions, NackReason,
    RejectReason, SendOptions,
};
use aep_async::{Client, EmitOptions, Emitter, TransportErrorKind, WsSinkOptions};
use aep_core::frame::{
    Capabilities, ControlCapability, Frame, Hello, Message as AepMessage, Role, Subscribe,
};
use aep_core::Event;
use aep_test_support::task::AbortOnDrop;
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "t0ken";

async fn relay() -> aep_relay::RelayHandle {
    common::token_relay(TOKEN).await
}

/// A client of `url` with the token, reconnecting fast.
fn fast(url: &str) -> Client {
    Client::new(url)
        .token(TOKEN)
        .connect_timeout(Duration::from_secs(10))
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
}

/// An agent holding `session` over the WS sink with `target` as its command hook.
struct Agent {
    emitter: Emitter,
    session: Arc<aep_async::SessionEmitter>,
}

async fn agent(url: &str, session: &str, target: &ControlTarget) -> Agent {
    let sink = Client::new(url)
        .token(TOKEN)
        .ws_sink(WsSinkOptions::new("test-agent", "host/1").command_hook(target.clone()))
        .unwrap();
    let emitter = Emitter::new("test-agent", "host", sink);
    let session = target.attach(emitter.session(session));
    session.emit("session.started", json!({})).unwrap();
    emitter.flush().await;
    Agent { emitter, session }
}

/// A console connected to `url` once the relay routes commands for `session` (its
/// claim is live).
async fn console_for(url: &str, session: &str) -> ControlClient {
    let client = fast(url).control(ControlOptions::new()).await.unwrap();
    common::wait_claimed(&client, session).await;
    client
}

/// An agent holding `session` through `url` whose target decides every command it gets
/// (see [`decisive_target`]), and the count of its decisions.
async fn decisive_agent(url: &str, session: &str) -> (Agent, Arc<AtomicUsize>) {
    let decisions = Arc::new(AtomicUsize::new(0));
    let target = decisive_target(decisions.clone());
    (agent(url, session, &target).await, decisions)
}

/// A target accepting `control.pause` and refusing `control.cancel`, counting each
/// decision.
fn decisive_target(decisions: Arc<AtomicUsize>) -> ControlTarget {
    ControlTarget::builder(["control.pause", "control.cancel"])
        .ack_window(Duration::from_secs(7))
        .handler(move |cmd| {
            let decisions = decisions.clone();
            async move {
                decisions.fetch_add(1, Ordering::SeqCst);
                match cmd.command_type() {
                    "control.pause" => {
                        cmd.accept().unwrap();
                    }
                    _ => {
                        cmd.reject(RejectReason::Refused, "not while deploying")
                            .unwrap();
                    }
                }
            }
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_rejected_and_unsupported_through_the_rust_relay() {
    let relay = relay().await;
    let (agent, _) = decisive_agent(relay.url(), "s-basic").await;
    let client = console_for(relay.url(), "s-basic").await;

    // The roster relays the target's declaration, ack window included (AEP-0003 §4.1).
    let roster = client.roster().await.unwrap();
    let entry = roster.iter().find(|e| e.session == "s-basic").unwrap();
    let control = entry.control.as_ref().unwrap();
    assert!(control.accepts("control.pause"));
    assert_eq!(control.ack_window_ms, Some(7_000));

    let cmd = client
        .sender()
        .command("control.pause", "s-basic", &SendOptions::new());
    let ack = client
        .send_command(cmd.clone(), SendOptions::new())
        .await
        .unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    assert_eq!(ack.cause(), Some(cmd.id()));
    assert_eq!(ack.session(), Some("s-basic"));
    assert!(
        ack.data_raw().is_none(),
        "an accept carries no payload: {ack}"
    );
    assert!(
        ack.seq().is_some(),
        "acks are ordinary sequenced session events"
    );

    let err = client
        .send("control.cancel", "s-basic", SendOptions::new())
        .await
        .unwrap_err();
    let nack = err.nack().unwrap();
    assert_eq!(nack.reason(), NackReason::Refused);
    assert_eq!(nack.detail(), Some("not while deploying"));
    assert!(!nack.is_synthesized());

    // Undeclared: refused on the target's behalf by the relay, which knows `accepts`.
    let err = client
        .send("control.resume", "s-basic", SendOptions::new())
        .await
        .unwrap_err();
    assert_eq!(err.nack().unwrap().reason(), NackReason::Unsupported);

    // Not a command at all: refused before anything is sent.
    let err = client
        .send("run.started", "s-basic", SendOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ControlError::Command(_)), "{err:?}");

    client.close().await;
    agent.emitter.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeclared_types_are_nacked_unsupported_by_the_target_itself() {
    // Fed directly (a transport that does not know the declaration), the target nacks.
    let target = ControlTarget::new(["control.pause"], |cmd| async move {
        let _ = cmd.accept();
    });
    let dir = std::env::temp_dir().join(format!("aep-control-{}.jsonl", std::process::id()));
    let emitter = Emitter::new("a", "h", aep_async::JsonlSink::open(&dir).unwrap());
    let _session = target.attach(emitter.session("s1"));
    let sender = aep_core::control::ControlSender::new("console", "ops");
    let cmd = sender
        .command("control.cancel", "s1")
        .build("c1", "2026-01-01T00:00:00.000Z");
    target.handle(cmd.clone()).unwrap();
    target.handle(cmd).unwrap(); // redelivery: the recorded ack, byte-identical
    emitter.flush().await;
    let lines: Vec<String> = std::fs::read_to_string(&dir)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    std::fs::remove_file(&dir).ok();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], lines[1]);
    let ack: Event = lines[0].parse().unwrap();
    assert_eq!(ack.event_type(), "control.rejected");
    assert_eq!(ack.cause(), Some("c1"));
    assert_eq!(ack.data(), Some(json!({"reason": "unsupported"})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attention_round_trip() {
    // AEP-0002 §7: attention.requested -> control.attention.respond -> attention.answered
    // -> attention.resolved, each lifecycle event with subject = the request id.
    let relay = relay().await;
    let target = ControlTarget::new(["control.attention.respond"], |cmd| async move {
        let subject = cmd.event().subject().unwrap().to_owned();
        let answer = cmd.event().data().unwrap()["answer"].clone();
        let accepted = cmd.accept().unwrap();
        let opts = EmitOptions::new().subject(&subject);
        accepted
            .emit_with(
                "attention.answered",
                json!({"answer": answer}),
                opts.clone(),
            )
            .unwrap();
        accepted
            .emit_with(
                "attention.resolved",
                json!({"resolution": "answered"}),
                opts,
            )
            .unwrap();
    });
    let agent = agent(relay.url(), "s-att", &target).await;
    let mut watch = fast(relay.url())
        .duplex(DuplexOptions::new())
        .await
        .unwrap();
    let sub = Subscribe::new("w", json!({"session": "s-att"}));
    watch
        .send(&AepMessage::Frame(Frame::Subscribe(sub)))
        .await
        .unwrap();
    next_frame(&mut watch, "subscribed").await;

    let request = agent
        .session
        .emit(
            "attention.requested",
            json!({"kind": "input", "prompt": "continue?", "options": [{"id": "yes", "label": "Yes"}]}),
        )
        .unwrap();
    let client = console_for(relay.url(), "s-att").await;
    let opts = SendOptions::new()
        .subject(request.id())
        .data(json!({"answer": {"option": "yes"}}));
    let ack = client
        .send("control.attention.respond", "s-att", opts)
        .await
        .unwrap();
    let command_id = ack.cause().unwrap().to_owned();

    let mut seen = Vec::new();
    while seen.len() < 4 {
        if let AepMessage::Event(e) = watch.recv().await.unwrap().unwrap() {
            if e.event_type() != "control.attention.respond" {
                seen.push(e);
            }
        }
    }
    let types: Vec<&str> = seen.iter().map(|e| e.event_type()).collect();
    assert_eq!(
        types,
        [
            "attention.requested",
            "control.accepted",
            "attention.answered",
            "attention.resolved"
        ]
    );
    for e in &seen[2..] {
        assert_eq!(e.subject(), Some(request.id()), "AEP-0002 §7 rule 1");
        assert_eq!(
            e.cause(),
            Some(command_id.as_str()),
            "outcomes are cause-linked"
        );
    }
    assert_eq!(seen[2].data(), Some(json!({"answer": {"option": "yes"}})));
    watch.close().await;
    client.close().await;
    agent.emitter.close().await;
}

async fn next_frame(d: &mut Duplex, ty: &str) -> Frame {
    loop {
        match d.recv().await.unwrap().unwrap() {
            AepMessage::Frame(f) if f.frame_type() == ty => return f,
            _ => {}
        }
    }
}

/// A bare emitter connection claiming `session`, declaring `accepts`.
async fn raw_emitter(url: &str, session: &str, accepts: &[&str]) -> Duplex {
    let mut caps = Capabilities::default();
    caps.control = Some(ControlCapability::accepting(accepts.iter().copied()));
    let hello = Hello::new(Role::Emitter)
        .with_identity(aep_core::frame::Identity::new("raw"))
        .with_capabilities(caps);
    let d = fast(url)
        .duplex(DuplexOptions::new().hello(hello))
        .await
        .unwrap();
    let claim = Event::new(
        ulid::Ulid::new().to_string(),
        "session.started",
        "2026-01-01T00:00:00.000Z",
        format!("aep://h/agent/raw/session/{session}"),
        "raw",
    )
    .with_session(session)
    .with_seq(0);
    d.send(&AepMessage::Event(claim)).await.unwrap();
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_and_ambiguous_are_refused_by_the_relay() {
    let relay = relay().await;
    let client = fast(relay.url())
        .control(ControlOptions::new())
        .await
        .unwrap();
    let err = client
        .send("control.pause", "nobody", SendOptions::new())
        .await
        .unwrap_err();
    let nack = err.nack().unwrap();
    assert_eq!(
        nack.reason(),
        NackReason::Invalid,
        "unknown codes read as invalid"
    );
    assert!(nack.detail().unwrap().starts_with("no-route"), "{nack:?}");
    assert!(!nack.is_synthesized());

    let a = raw_emitter(relay.url(), "twice", &["control.pause"]).await;
    let b = raw_emitter(relay.url(), "twice", &["control.pause"]).await;
    common::until_claims(&client, "twice", 2).await;
    let err = client
        .send("control.pause", "twice", SendOptions::new())
        .await
        .unwrap_err();
    let nack = err.nack().unwrap();
    assert_eq!(nack.reason(), NackReason::Invalid);
    assert!(nack.detail().unwrap().starts_with("ambiguous"), "{nack:?}");
    a.close().await;
    b.close().await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_never_acks_times_out_after_identical_retries() {
    let relay = relay().await;
    let mut silent = raw_emitter(relay.url(), "s-silent", &["control.pause"]).await;
    let client = console_for(relay.url(), "s-silent").await;
    let opts = SendOptions::new()
        .ack_window(Duration::from_millis(150))
        .retries(2);
    let err = client
        .send("control.pause", "s-silent", opts)
        .await
        .unwrap_err();
    let nack = err.nack().unwrap();
    assert_eq!(nack.reason(), NackReason::Timeout);
    assert!(nack.is_synthesized());
    assert_eq!(nack.detail(), Some("no ack within 150 ms x 3"));
    // Three transmissions, one envelope (AEP-0004 §2.3).
    let mut got = Vec::new();
    while got.len() < 3 {
        if let AepMessage::Event(e) = silent.recv().await.unwrap().unwrap() {
            got.push(e.to_json());
        }
    }
    assert!(got.iter().all(|g| g == &got[0]));
    silent.close().await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_an_http_401_on_the_upgrade() {
    let relay = relay().await;
    let wrong = Client::new(relay.url()).token("wrong");
    let err = wrong.control(ControlOptions::new()).await.unwrap_err();
    assert_eq!(err.kind(), TransportErrorKind::Http { status: 401 });
    let none = Client::new(relay.url());
    let err = none.duplex(DuplexOptions::new()).await.unwrap_err();
    assert_eq!(err.status(), Some(401));
    let err = none.lifecycle().await.unwrap_err();
    assert_eq!(err.status(), Some(401));
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_connect_timeout() {
    // Accepts TCP and never answers the upgrade.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut socks = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            socks.push(s);
        }
    });
    let client = Client::new(&url).connect_timeout(Duration::from_millis(200));
    let err = client.control(ControlOptions::new()).await.unwrap_err();
    assert!(err.is_network() && err.is_timeout(), "{err}");
    assert!(err.to_string().contains("timeout"), "{err}");
    held.abort();

    // Completes the upgrade and never says hello: the same timeout covers the wait,
    // for the duplex and the lifecycle connection alike.
    let endpoint = Scripted::start(None, |_| Vec::new()).await;
    let client = Client::new(&endpoint.url).connect_timeout(Duration::from_millis(200));
    let err = client.duplex(DuplexOptions::new()).await.unwrap_err();
    assert!(
        err.is_timeout() && err.to_string().contains("timeout"),
        "{err}"
    );
    let endpoint = Scripted::start(None, |_| Vec::new()).await;
    let client = Client::new(&endpoint.url).connect_timeout(Duration::from_millis(200));
    let err = client.lifecycle().await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
}

/// A scripted WebSocket endpoint: says `hello` (when given) and answers each inbound
/// text message with `script(text)`.
struct Scripted {
    url: String,
    _task: AbortOnDrop,
}

impl Scripted {
    async fn start(
        hello: Option<Hello>,
        script: impl Fn(&str) -> Vec<Message> + Send + Sync + 'static,
    ) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let script = Arc::new(script);
        let _task = AbortOnDrop::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let script = script.clone();
                let hello = hello.clone();
                tokio::spawn(async move {
                    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                        return;
                    };
                    while let Some(Ok(msg)) = ws.next().await {
                        let Message::Text(text) = msg else { continue };
                        if text.contains(r#""type":"hello""#) {
                            if let Some(h) = &hello {
                                let _ = ws
                                    .send(Message::text(Frame::from(h.clone()).to_json()))
                                    .await;
                            }
                            continue;
                        }
                        for reply in script(text.as_str()) {
                            let _ = ws.send(reply).await;
                        }
                    }
                });
            }
        });
        Scripted { url, _task }
    }
}

fn endpoint_hello(roster: bool) -> Hello {
    let mut caps = Capabilities::default();
    if roster {
        caps.roster = Some(serde_json::Map::new());
    }
    Hello::new(Role::Both).with_capabilities(caps)
}

/// Answers `subscribe` with `subscribed` and every command with `extra` then its ack.
fn acking(extra: Vec<Message>) -> impl Fn(&str) -> Vec<Message> + Send + Sync + 'static {
    move |text| match aep_core::frame::decode(text) {
        Ok(AepMessage::Frame(Frame::Subscribe(s))) => {
            vec![Message::text(format!(
                r#"{{"type":"subscribed","id":"{}"}}"#,
                s.id
            ))]
        }
        Ok(AepMessage::Event(cmd)) => {
            let ack = Event::new(
                "ack-1",
                "control.accepted",
                "2026-01-01T00:00:00.000Z",
                "aep://h/agent/t/session/s",
                "t",
            )
            .with_session("s")
            .with_seq(1)
            .with_cause(cmd.id());
            let mut out = extra.clone();
            out.push(Message::text(ack.to_json()));
            out
        }
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn binary_and_malformed_frames_are_skipped() {
    let junk = vec![
        Message::binary(vec![0u8, 1, 2, 3]),
        Message::text("{not json"),
        Message::text(r#"{"no":"type"}"#),
        Message::text(r#"{"type":"ping","t":42}"#),
        Message::text(r#"{"type":"futureframe","x":1}"#),
    ];
    let endpoint = Scripted::start(Some(endpoint_hello(false)), acking(junk)).await;
    let client = Client::new(&endpoint.url)
        .control(ControlOptions::new())
        .await
        .unwrap();
    let ack = client
        .send("control.pause", "s", SendOptions::new())
        .await
        .unwrap();
    assert_eq!(ack.id(), "ack-1");
    client.close().await;

    // The raw duplex reports each bad message as a parse error and goes on.
    let mut d = Client::new(&endpoint.url)
        .duplex(DuplexOptions::new())
        .await
        .unwrap();
    let cmd = Event::new("c1", "control.pause", "t", "aep://h/agent/c", "c").with_session("s");
    d.send(&AepMessage::Event(cmd)).await.unwrap();
    let mut kinds = Vec::new();
    loop {
        match d.recv().await.unwrap() {
            Err(e) => kinds.push(format!("{:?}", e.kind())),
            Ok(AepMessage::Event(e)) => {
                assert_eq!(e.id(), "ack-1");
                break;
            }
            Ok(AepMessage::Frame(f)) => kinds.push(f.frame_type().to_owned()),
        }
    }
    // binary, not JSON, no type: three parse errors; the ping was answered, not handed up.
    assert_eq!(kinds, ["Parse", "Parse", "Parse", "futureframe"]);
    d.close().await;
    d.close().await; // idempotent
}

#[tokio::test]
async fn roster_is_refused_at_once_without_the_capability() {
    let endpoint = Scripted::start(Some(endpoint_hello(false)), acking(Vec::new())).await;
    let client = Client::new(&endpoint.url)
        .control(ControlOptions::new())
        .await
        .unwrap();
    let err = client.roster().await.unwrap_err();
    assert!(matches!(err, ControlError::RosterUnsupported), "{err:?}");
    client.close().await;
}

/// A WebSocket proxy in front of a relay. `rule(to_client, text)` decides per message.
struct Proxy {
    url: String,
    _task: AbortOnDrop,
    connections: Arc<AtomicUsize>,
}

#[derive(Clone, Copy, PartialEq)]
enum Act {
    Forward,
    Drop,
    /// Drop the message and cut this connection.
    Cut,
}

impl Proxy {
    async fn start(
        upstream: String,
        rule: impl Fn(bool, &str) -> Act + Send + Sync + 'static,
    ) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let rule = Arc::new(rule);
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        let _task = AbortOnDrop::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let rule = rule.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(client) = tokio_tungstenite::accept_async(tcp).await else {
                        return;
                    };
                    let mut req = format!("{}/socket", upstream.replace("http://", "ws://"))
                        .into_client_request_ok();
                    req.headers_mut()
                        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
                    let Ok((server, _)) = tokio_tungstenite::connect_async(req).await else {
                        return;
                    };
                    let (mut cw, mut cr) = client.split();
                    let (mut sw, mut sr) = server.split();
                    loop {
                        tokio::select! {
                            m = cr.next() => {
                                let Some(Ok(Message::Text(t))) = m else { return };
                                match rule(false, t.as_str()) {
                                    Act::Forward => { if sw.send(Message::Text(t)).await.is_err() { return } }
                                    Act::Drop => {}
                                    Act::Cut => return,
                                }
                            }
                            m = sr.next() => {
                                let Some(Ok(Message::Text(t))) = m else { return };
                                match rule(true, t.as_str()) {
                                    Act::Forward => { if cw.send(Message::Text(t)).await.is_err() { return } }
                                    Act::Drop => {}
                                    Act::Cut => return,
                                }
                            }
                        }
                    }
                });
            }
        });
        Proxy {
            url,
            _task,
            connections,
        }
    }
}

trait IntoRequest {
    fn into_client_request_ok(self) -> tokio_tungstenite::tungstenite::handshake::client::Request;
}

impl IntoRequest for String {
    fn into_client_request_ok(self) -> tokio_tungstenite::tungstenite::handshake::client::Request {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        self.into_client_request().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_ack_is_recovered_by_the_retry() {
    let relay = relay().await;
    let (agent, decisions) = decisive_agent(relay.url(), "s-lossy").await;
    // Drops the first ack on its way to the client; records what passes.
    let acks: Arc<Mutex<Vec<String>>> = Arc::default();
    let commands: Arc<Mutex<Vec<String>>> = Arc::default();
    let (a, c) = (acks.clone(), commands.clone());
    let proxy = Proxy::start(relay.url().to_owned(), move |to_client, text| {
        if !to_client && text.contains("control.pause") {
            c.lock().unwrap().push(text.to_owned());
        }
        if to_client && text.contains(r#""type":"control.accepted""#) {
            let mut a = a.lock().unwrap();
            a.push(text.to_owned());
            if a.len() == 1 {
                return Act::Drop;
            }
        }
        Act::Forward
    })
    .await;
    let client = console_for(&proxy.url, "s-lossy").await;
    // a window long enough for the re-sent ack's round trip on a busy machine
    let opts = SendOptions::new()
        .ack_window(Duration::from_secs(1))
        .retries(2);
    let ack = client.send("control.pause", "s-lossy", opts).await.unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    assert_eq!(
        decisions.load(Ordering::SeqCst),
        1,
        "decided once (AEP-0004 §3)"
    );
    let commands = commands.lock().unwrap().clone();
    assert!(
        commands.len() >= 2 && commands.iter().all(|c| c == &commands[0]),
        "{commands:?}"
    );
    let acks = acks.lock().unwrap().clone();
    assert!(acks.len() >= 2);
    assert_eq!(
        acks[0], acks[1],
        "the recorded ack is re-sent byte-identically"
    );
    assert_eq!(ack.to_json(), acks[1]);
    client.close().await;
    agent.emitter.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_reconnected_and_pending_commands_retransmitted() {
    let relay = relay().await;
    let (agent, decisions) = decisive_agent(relay.url(), "s-drop").await;
    // Cuts the connection carrying the first command, before forwarding it.
    let cut = Arc::new(AtomicUsize::new(0));
    let c = cut.clone();
    let proxy = Proxy::start(relay.url().to_owned(), move |to_client, text| {
        if !to_client
            && text.contains(r#""type":"control.pause""#)
            && c.fetch_add(1, Ordering::SeqCst) == 0
        {
            return Act::Cut;
        }
        Act::Forward
    })
    .await;
    let client = console_for(&proxy.url, "s-drop").await;
    // A long window: recovery comes from the reconnect's retransmission, not a retry.
    let opts = SendOptions::new()
        .ack_window(Duration::from_secs(60))
        .retries(0);
    let ack = client.send("control.pause", "s-drop", opts).await.unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    assert_eq!(decisions.load(Ordering::SeqCst), 1);
    assert!(proxy.connections.load(Ordering::SeqCst) >= 2);
    client.close().await;
    agent.emitter.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_commands_in_flight_from_many_tasks() {
    let relay = relay().await;
    let (agent, decisions) = decisive_agent(relay.url(), "s-many").await;
    let client = console_for(relay.url(), "s-many").await;
    let tasks: Vec<_> = (0..300)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                let ty = if i % 3 == 0 {
                    "control.cancel"
                } else {
                    "control.pause"
                };
                (ty, client.send(ty, "s-many", SendOptions::new()).await)
            })
        })
        .collect();
    let mut causes = std::collections::HashSet::new();
    for t in tasks {
        let (ty, r) = t.await.unwrap();
        match (ty, r) {
            ("control.pause", Ok(ack)) => assert!(causes.insert(ack.cause().unwrap().to_owned())),
            ("control.cancel", Err(e)) => {
                assert_eq!(e.nack().unwrap().reason(), NackReason::Refused)
            }
            (ty, r) => panic!("{ty}: {r:?}"),
        }
    }
    assert_eq!(causes.len(), 200);
    assert_eq!(decisions.load(Ordering::SeqCst), 300);
    assert_eq!(client.sender().pending(), 0);
    client.close().await;
    agent.emitter.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_is_idempotent_and_settles_pending_commands() {
    let relay = relay().await;
    let silent = raw_emitter(relay.url(), "s-close", &["control.pause"]).await;
    let client = console_for(relay.url(), "s-close").await;
    let pending = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .send("control.pause", "s-close", SendOptions::new())
                .await
        }
    });
    while client.sender().pending() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    client.close().await;
    client.close().await;
    let nack = pending.await.unwrap().unwrap_err();
    let nack = nack.nack().unwrap();
    assert_eq!(nack.reason(), NackReason::Timeout);
    assert!(nack.is_synthesized());
    let err = client
        .send("control.pause", "s-close", SendOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ControlError::Closed));
    silent.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecided_command_is_rejected_busy_within_the_window() {
    let relay = relay().await;
    // The handler holds the command until the sender has had its `busy`, then tries
    // to decide too late.
    let refused = Arc::new(tokio::sync::Notify::new());
    let late = refused.clone();
    let target = ControlTarget::builder(["control.pause"])
        .ack_window(Duration::from_millis(100))
        .handler(move |cmd| {
            let late = late.clone();
            async move {
                late.notified().await;
                assert!(cmd.accept().is_err());
            }
        });
    let agent = agent(relay.url(), "s-slow", &target).await;
    let client = console_for(relay.url(), "s-slow").await;
    let err = client
        .send("control.pause", "s-slow", SendOptions::new())
        .await
        .unwrap_err();
    let nack = err.nack().unwrap();
    assert_eq!(nack.reason(), NackReason::Busy);
    assert!(!nack.is_synthesized());
    refused.notify_one();
    client.close().await;
    agent.emitter.close().await;
}

#[tokio::test]
async fn dropping_every_handle_closes_the_connection_in_order() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let ack = acking(Vec::new());
    let endpoint = Scripted::start(Some(endpoint_hello(false)), move |text| {
        log.lock().unwrap().push(text.to_owned());
        ack(text)
    })
    .await;
    let client = Client::new(&endpoint.url)
        .control(ControlOptions::new())
        .await
        .unwrap();
    client
        .send("control.pause", "s", SendOptions::new())
        .await
        .unwrap();
    drop(client);
    for _ in 0..500 {
        if seen
            .lock()
            .unwrap()
            .iter()
            .any(|t| t.contains(r#""type":"closing""#))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "no closing frame after the last handle was dropped: {:?}",
        seen.lock().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_refuses_its_command_and_the_agent_goes_on() {
    let relay = relay().await;
    // The handler runs first on the sink's connection task: its panic must stay there.
    let target = ControlTarget::new(["control.pause"], |cmd| async move {
        if cmd.event().run() == Some("boom") {
            panic!("handler bug");
        }
        cmd.accept().unwrap();
    });
    let agent = agent(relay.url(), "s-panic", &target).await;
    let client = console_for(relay.url(), "s-panic").await;

    let err = client
        .send("control.pause", "s-panic", SendOptions::new().run("boom"))
        .await
        .unwrap_err();
    assert_eq!(err.nack().unwrap().reason(), NackReason::Refused);
    let ack = client
        .send("control.pause", "s-panic", SendOptions::new())
        .await
        .unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    agent.session.emit("progress.status", json!({})).unwrap();
    agent.emitter.flush().await;
    assert_eq!(agent.emitter.stats().dropped, 0);

    client.close().await;
    agent.emitter.close().await;
}

/// What each call of a handler's `accept` returned, in order.
type Accepts = Arc<Mutex<Vec<Result<(), String>>>>;

/// A target that accepts every `control.pause` and records how each accept went.
fn recording_target() -> (ControlTarget, Accepts) {
    let accepts = Accepts::default();
    let target = {
        let accepts = accepts.clone();
        ControlTarget::new(["control.pause"], move |cmd| {
            let result = cmd.accept().map(|_| ()).map_err(|e| e.to_string());
            accepts.lock().unwrap().push(result);
            async {}
        })
    };
    (target, accepts)
}

/// Delivers `command` twice and asserts both deliveries are new: nothing recorded an
/// ack for the first, so the retry is decided again.
fn assert_decided_twice(target: &ControlTarget, command: Event) {
    for delivery in 1..=2 {
        assert_eq!(
            target.handle(command.clone()).unwrap(),
            aep_core::control::CommandDelivery::New,
            "delivery {delivery} of {} is decided",
            command.id()
        );
    }
}

/// An ack that cannot be emitted (no session attached to ack through) leaves nothing
/// half-done: the handler hears of it, and the sender's retry of the same envelope is
/// decided again instead of waiting forever on an ack that never left.
#[tokio::test]
async fn an_ack_that_cannot_be_emitted_lets_the_retry_be_decided_again() {
    let (target, accepts) = recording_target();
    let command = aep_core::ControlSender::new("console", "h")
        .command("control.pause", "nobody-attached")
        .build("c1", "2026-07-03T10:15:04.221Z");
    assert_decided_twice(&target, command);
    let accepts = accepts.lock().unwrap();
    assert_eq!(accepts.len(), 2, "the handler called once per delivery");
    assert!(
        accepts
            .iter()
            .all(|e| e.as_ref().is_err_and(|e| e.contains("nobody-attached"))),
        "{accepts:?}"
    );
}

/// A session detached from the target is no longer acked through: its next command is
/// refused to the handler with the session named, and left to be decided again.
#[tokio::test]
async fn a_detached_session_is_no_longer_acked() {
    let path = std::env::temp_dir().join(format!("aep-detach-{}.jsonl", std::process::id()));
    let (target, errors) = recording_target();
    let emitter = Emitter::new("agent", "h", aep_async::JsonlSink::open(&path).unwrap());
    let held = target.attach(emitter.session("s-detach"));
    let command = |id: &str| {
        aep_core::ControlSender::new("console", "h")
            .command("control.pause", "s-detach")
            .build(id, "2026-07-03T10:15:04.221Z")
    };
    target.handle(command("c1")).unwrap();
    target.detach("s-detach");
    assert_decided_twice(&target, command("c2"));
    {
        let errors = errors.lock().unwrap();
        assert_eq!(errors.len(), 3);
        assert_eq!(errors[0], Ok(()), "acked while attached");
        for e in &errors[1..] {
            let e = e.as_ref().unwrap_err();
            assert!(e.contains("`s-detach` is not attached"), "{e}");
        }
    }
    drop(held);
    emitter.close().await;
    let _ = std::fs::remove_file(&path);
}

/// A send's future stays small (a console keeps thousands in flight, each a task):
/// the command is built after the one await that may take long, not held across it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_future_stays_small() {
    let relay = relay().await;
    let client = fast(relay.url())
        .control(ControlOptions::new())
        .await
        .unwrap();
    let send = client.send("control.pause", "s1", SendOptions::new());
    let size = std::mem::size_of_val(&send);
    eprintln!("send future: {size} bytes");
    drop(send);
    // 480 bytes measured (debug build); an Event (384) held across the await would
    // take it well past this, and the margin leaves room for another compiler's layout
    assert!(size <= 640, "send future is {size} bytes");
    client.close().await;
    relay.shutdown().await.unwrap();
}
