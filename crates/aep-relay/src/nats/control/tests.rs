//! The control plane's tests: its pieces alone (subjects, claims messages, the copy of
//! the others' claims and its clock), then relays of one cluster on a real nats-server,
//! each on a runtime of its own so that killing one drops its NATS connection as a
//! `kill -9` would.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use aep_test_support::events::{json_command, json_event};
use aep_test_support::nats::NatsServer;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::*;
use crate::config::RelayConfig;
use crate::NatsCluster;

fn entry(session: &str, agent: &str) -> RosterEntry {
    let mut entry = RosterEntry::new(session);
    entry.agent = Some(agent.to_owned());
    entry
}

#[test]
fn subjects_are_pinned() {
    let s = Subjects::new("AEP");
    assert_eq!(s.claims("R1"), "AEP.ctl.claims.R1");
    assert_eq!(s.beat("R1"), "AEP.ctl.beat.R1");
    assert_eq!(s.sync(), "AEP.ctl.sync");
    assert_eq!(s.command("R1"), "AEP.ctl.cmd.R1");
    assert_eq!(s.relay_of("AEP.ctl.claims.R1"), Some("R1"));
    assert_eq!(s.relay_of("AEP.ctl.beat.R2"), Some("R2"));
    assert_eq!(s.relay_of("OTHER.ctl.beat.R2"), None);
    // outside the stream's subjects (`{stream}.s.>`): never stored
    assert!(!s.claims("R1").starts_with("AEP.s."));
}

/// Claims past the server's payload limit go in parts, each within it, read back whole;
/// no claim is one empty message.
#[test]
fn claims_are_split_within_the_payload_limit_and_read_back_whole() {
    let entries: Vec<_> = (0..50)
        .map(|i| entry(&format!("session-{i}"), "agent"))
        .collect();
    let messages = claims_messages("R1", 7, entries.clone(), 600);
    assert!(messages.len() > 1, "{}", messages.len());
    let mut mirror = Mirror::new(Duration::from_secs(3));
    let now = Instant::now();
    for (i, message) in messages.iter().enumerate() {
        assert!(message.len() <= 600, "part {i}: {} bytes", message.len());
        let (r#gen, part, got) = read_claims(message.as_bytes()).unwrap();
        assert_eq!((r#gen, part), (7, (i, messages.len())));
        // a copy changes only once every part has come
        assert_eq!(mirror.elsewhere("session-0", now).claims, 0);
        mirror.part("R1", r#gen, part, got, now);
    }
    assert_eq!(mirror.elsewhere("session-0", now).claims, 1);
    assert_eq!(&*mirror.entries(now)[0], &entries[..]);
    let empty = claims_messages("R1", 8, Vec::new(), 600);
    assert_eq!(empty.len(), 1);
    let (r#gen, part, got) = read_claims(empty[0].as_bytes()).unwrap();
    assert_eq!((r#gen, part, got.len()), (8, (0, 1), 0));
    mirror.part("R1", r#gen, part, got, now);
    assert!(mirror.entries(now).is_empty());
    // an older generation never replaces a newer one
    let (r#gen, part, got) = read_claims(messages[0].as_bytes()).unwrap();
    mirror.part("R1", r#gen, part, got, now);
    assert!(mirror.entries(now).is_empty());
    // a claim too large for any message (a hello past the server's payload limit) is
    // left out, not the relay's every claim with it
    let mut huge = entry("huge", "agent");
    huge.agent = Some("x".repeat(600));
    let told = claims_messages("R1", 9, vec![entry("small", "agent"), huge], 600);
    assert_eq!(told.len(), 1);
    assert!(told[0].len() <= 600, "{} bytes", told[0].len());
    let (_, _, got) = read_claims(told[0].as_bytes()).unwrap();
    assert_eq!(got, vec![entry("small", "agent")]);
    assert!(read_claims(b"{\"type\":\"roster\",\"id\":\"R1\",\"entries\":[]}").is_none());
    assert!(read_claims(b"not json").is_none());
}

/// What the copy counts: claims of every relay heard of within the bound, a relay whose
/// generation it lacks asked for again (not more than once a heartbeat), a relay gone
/// or silent past the bound not counted.
#[test]
fn the_copy_counts_live_relays_asks_for_what_it_lacks_and_forgets_the_silent() {
    let ttl = Duration::from_secs(3);
    let beat = Duration::from_secs(1);
    let mut mirror = Mirror::new(ttl);
    let t0 = Instant::now();
    assert!(
        mirror.beat("B", 1, t0, beat),
        "unknown claims are asked for"
    );
    assert!(
        !mirror.beat("B", 1, t0 + beat / 2, beat),
        "not twice a heartbeat"
    );
    assert!(mirror.beat("B", 1, t0 + beat, beat));
    mirror.part("B", 1, (0, 1), vec![entry("s", "b")], t0 + beat);
    mirror.part(
        "C",
        4,
        (0, 1),
        vec![entry("s", "c"), entry("t", "c")],
        t0 + beat,
    );
    assert!(!mirror.beat("B", 1, t0 + beat * 2, beat), "up to date");
    let at = t0 + beat * 2;
    let s = mirror.elsewhere("s", at);
    assert_eq!(s.claims, 2);
    assert_eq!(s.relay.as_deref(), Some("B"));
    assert_eq!(mirror.elsewhere("t", at).relay.as_deref(), Some("C"));
    assert_eq!(mirror.elsewhere("u", at), Elsewhere::default());
    // C silent since t0 + 1 s: counted up to the bound, not after
    assert_eq!(mirror.elsewhere("t", t0 + beat + ttl).claims, 1);
    assert_eq!(mirror.elsewhere("t", t0 + beat * 5).claims, 0);
    assert_eq!(mirror.entries(t0 + beat * 5).len(), 1);
    mirror.expire(t0 + beat * 5);
    assert_eq!(mirror.relays.len(), 1);
    mirror.gone("B");
    assert_eq!(mirror.elsewhere("s", at).claims, 0);
    // a hostile split asks for no unbounded memory
    mirror.part("D", 1, (0, usize::MAX), Vec::new(), at);
    assert!(mirror.relays["D"].assembling.is_none());
}

/// A peer that lies about its claims (parts that never complete, a generation that goes
/// backward, splits no relay writes, one name after another) holds at most one split
/// per relay name, each name forgotten once silent past the bound, and never changes
/// the copy but by a whole newer generation.
#[test]
fn a_liars_claims_hold_bounded_memory_and_never_a_partial_copy() {
    let ttl = Duration::from_secs(3);
    let mut mirror = Mirror::new(ttl);
    let now = Instant::now();
    let split = |mirror: &Mirror| {
        let (r#gen, slots) = mirror.relays["L"].assembling.as_ref().unwrap();
        (*r#gen, slots.len(), slots.iter().flatten().count())
    };
    mirror.part("L", 2, (0, 1), vec![entry("whole", "l")], now);
    // parts that never complete, generation after generation: the newest split alone
    for r#gen in 3..1000 {
        let claim = entry(&format!("partial-{gen}"), "l");
        mirror.part("L", r#gen, (0, 2), vec![claim], now);
    }
    assert_eq!(split(&mirror), (999, 2, 1));
    assert_eq!(mirror.elsewhere("whole", now).claims, 1);
    assert_eq!(mirror.elsewhere("partial-999", now).claims, 0);
    // a generation going backward, or the same again, changes nothing
    mirror.part("L", 1, (0, 1), Vec::new(), now);
    mirror.part("L", 2, (0, 1), Vec::new(), now);
    assert_eq!(mirror.elsewhere("whole", now).claims, 1);
    assert_eq!(split(&mirror), (999, 2, 1));
    // a part outside its split, or a split past what any relay writes, is dropped
    mirror.part("L", 5000, (2, 2), Vec::new(), now);
    mirror.part("L", 5000, (0, MAX_PARTS + 1), Vec::new(), now);
    assert_eq!(split(&mirror), (999, 2, 1));
    // the largest split a relay writes is taken, and replaces the one before
    mirror.part("L", 5000, (0, MAX_PARTS), Vec::new(), now);
    assert_eq!(split(&mirror), (5000, MAX_PARTS, 1));
    // the same generation split another way starts over
    mirror.part("L", 5000, (1, 3), Vec::new(), now);
    assert_eq!(split(&mirror), (5000, 3, 1));
    // a name per message: each forgotten once silent past the bound
    for i in 0..1000 {
        mirror.part(&format!("R{i}"), 1, (0, 2), vec![entry("s", "r")], now);
    }
    assert_eq!(mirror.relays.len(), 1001);
    mirror.expire(now + ttl + Duration::from_millis(1));
    assert!(mirror.relays.is_empty());
}

// ---- a cluster on a real nats-server ------------------------------------------------

const TOKEN: &str = "t";

/// The heartbeat of a relay started with `--nats`.
const BEAT: Duration = ControlOptions::default_heartbeat();

/// One relay of a test cluster, started as `--nats` starts one (the JetStream store and
/// this control plane), on a runtime of its own.
struct Node {
    runtime: Option<tokio::runtime::Runtime>,
    relay: Option<crate::RelayHandle>,
    socket: String,
}

impl Node {
    /// A relay of the fleet `stream` on `server`.
    async fn start(server: &NatsServer, stream: &str) -> Node {
        Node::start_with(server, stream, RelayConfig::default()).await
    }

    async fn start_with(server: &NatsServer, stream: &str, config: RelayConfig) -> Node {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let cluster = NatsCluster::new(server.url()).stream(stream);
        let relay = runtime
            .spawn(async move {
                crate::Relay::builder()
                    .config(config.with_token(TOKEN))
                    .nats(cluster)
                    .start()
                    .await
                    .unwrap()
            })
            .await
            .unwrap();
        Node {
            runtime: Some(runtime),
            socket: format!("{}?access_token={TOKEN}", relay.socket_url()),
            relay: Some(relay),
        }
    }

    /// Stops the relay as SIGTERM does: its connections closed, then its leaving told.
    async fn stop(&mut self) {
        if let (Some(runtime), Some(relay)) = (&self.runtime, self.relay.take()) {
            runtime.spawn(relay.shutdown()).await.unwrap().unwrap();
        }
    }

    /// Stops everything the relay runs at once, its NATS connection and its sockets
    /// included, as `kill -9` does: nothing is said to anyone, and once this returns
    /// its sockets are closed.
    async fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            let stopped = move || runtime.shutdown_timeout(Duration::from_secs(5));
            tokio::task::spawn_blocking(stopped).await.unwrap();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        // its task went with the runtime: the stop it sends reaches no one
        drop(self.relay.take());
    }
}

/// The relay whose claims (read off `claims`, a subscription to every relay's) first
/// name `session`.
async fn relay_claiming(
    claims: &mut async_nats::Subscriber,
    subjects: &Subjects,
    session: &str,
) -> String {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), claims.next())
            .await
            .expect("a relay's claims within 10 s")
            .unwrap();
        let Some((_, _, entries)) = read_claims(&message.payload) else {
            continue;
        };
        if entries.iter().any(|e| e.session == session) {
            return subjects.relay_of(&message.subject).unwrap().to_owned();
        }
    }
}

/// Until a request on `subject` finds no subscriber (within 10 s).
async fn until_no_responders(client: &async_nats::Client, subject: String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let probe = async_nats::Request::new().timeout(Some(Duration::from_millis(100)));
        match client.send_request(subject.clone(), probe).await {
            Err(e) if e.kind() == RequestErrorKind::NoResponders => return,
            _ => assert!(Instant::now() < deadline, "{subject} still subscribed"),
        }
    }
}

/// A WebSocket party of a test.
struct Peer {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
}

impl Peer {
    async fn hello(node: &Node, role: &str, capabilities: Value) -> Peer {
        let (ws, _) = tokio_tungstenite::connect_async(&node.socket)
            .await
            .unwrap();
        let mut peer = Peer { ws };
        peer.send(&json!({ "type": "hello", "versions": ["0.1"], "role": role,
            "identity": { "agent": format!("{role}-agent"), "instance": node.socket },
            "capabilities": capabilities }))
            .await;
        assert_eq!(peer.recv().await["type"], "hello");
        peer
    }

    /// An emitter that claims `session`, accepting `accepts`.
    async fn claiming(node: &Node, session: &str, accepts: Value) -> Peer {
        Peer::claiming_with(node, session, json!({ "control": { "accepts": accepts } })).await
    }

    /// An emitter that claims `session`, declaring `capabilities`.
    async fn claiming_with(node: &Node, session: &str, capabilities: Value) -> Peer {
        let mut peer = Peer::hello(node, "emitter", capabilities).await;
        peer.send(&json_event("session.started", session, 0)).await;
        peer
    }

    async fn send(&mut self, value: &Value) {
        self.send_text(&value.to_string()).await;
    }

    async fn send_text(&mut self, text: &str) {
        self.ws.send(WsMessage::text(text)).await.unwrap();
    }

    /// The next text message but the relay's pings.
    async fn recv_text(&mut self) -> String {
        loop {
            let next = tokio::time::timeout(Duration::from_secs(10), self.ws.next());
            match next.await.expect("a message within 10 s") {
                Some(Ok(WsMessage::Text(text))) if !text.contains(r#""type":"ping""#) => {
                    return text.to_string()
                }
                Some(Ok(_)) => {}
                other => panic!("the connection ended: {other:?}"),
            }
        }
    }

    async fn recv(&mut self) -> Value {
        serde_json::from_str(&self.recv_text().await).unwrap()
    }

    /// The roster as this peer's relay answers it.
    async fn roster(&mut self) -> Vec<Value> {
        self.send(&json!({ "type": "roster", "id": "r" })).await;
        let reply = self.recv().await;
        assert_eq!(reply["type"], "roster", "{reply}");
        reply["entries"].as_array().unwrap().clone()
    }

    /// Waits until this peer's relay lists `n` claims of `session`.
    async fn until_claims(&mut self, session: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got = self
                .roster()
                .await
                .iter()
                .filter(|e| e["session"] == session)
                .count();
            if got == n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{got} claims of {session}, not {n}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Sends `command` and reads the refusal, which names it as its `cause`.
    async fn refused(&mut self, command: &Value) -> Value {
        self.send(command).await;
        let error = self.recv().await;
        assert_eq!(error["type"], "error", "{error}");
        assert_eq!(error["cause"], command["id"]);
        error
    }
}

fn session() -> String {
    aep_test_support::events::session_id()
}

/// Three relays of one fleet on one nats-server; `None` (skipped) without a server.
async fn cluster(stream: &str) -> Option<(NatsServer, Node, Node, Node)> {
    let server = NatsServer::start_or_skip()?;
    let a = Node::start(&server, stream).await;
    let b = Node::start(&server, stream).await;
    let c = Node::start(&server, stream).await;
    Some((server, a, b, c))
}

/// Commands sent, one after the other, in the round-trip test.
const ROUND_TRIPS: u64 = 200;

/// A command sent to relay A reaches the one target whose claim lives on relay C, byte
/// for byte; the target's ack, an ordinary session event C stores in the stream,
/// returns to the sender on A through A's feed; the audit copy is fanned out on A.
#[tokio::test]
async fn a_command_to_a_reaches_its_target_on_c_and_the_ack_returns_to_a() {
    let Some((_server, a, _b, c)) = cluster("CTL1").await else {
        return;
    };
    let s = session();
    let mut target = Peer::claiming(&c, &s, json!(["control.pause"])).await;
    let mut console = Peer::hello(&a, "both", json!({})).await;
    console.until_claims(&s, 1).await;
    console
        .send(&json!({ "type": "subscribe", "id": "acks",
            "filter": { "session": s, "type": "control.*" } }))
        .await;
    assert_eq!(console.recv().await["type"], "subscribed");

    // each command once to the target, its audit copy on A, its ack back on A, in order
    let (mut delivered, mut acked) = (Vec::new(), Vec::new());
    for seq in 1..=ROUND_TRIPS {
        let command = json_command("control.pause", &s);
        // unusual spacing: forwarding across relays must not re-serialize either
        let text = format!("{{ \"data\" : {{}} ,{}", &command.to_string()[1..]);
        let started = Instant::now();
        console.send_text(&text).await;
        assert_eq!(target.recv_text().await, text);
        delivered.push(started.elapsed());
        // the audit copy, on the relay the command was sent to
        assert_eq!(console.recv().await["id"], command["id"]);

        let ack = json!({ "aep": "0.1", "id": aep_test_support::events::id(),
            "type": "control.accepted", "time": aep_test_support::events::TIME,
            "source": format!("aep://test/agent/a/session/{s}"), "agent": "a",
            "session": s, "seq": seq, "cause": command["id"], "data": {} });
        target.send(&ack).await;
        let got = console.recv().await;
        assert_eq!(
            (&got["type"], &got["cause"]),
            (&json!("control.accepted"), &command["id"])
        );
        acked.push(started.elapsed());
    }
    let at = |times: &mut Vec<Duration>, q: usize| {
        times.sort();
        times[(times.len() * q / 100).min(times.len() - 1)]
    };
    eprintln!(
        "{ROUND_TRIPS} commands from A to their target on C: delivered p50 {:?} p99 {:?}; acked back on A p50 {:?} p99 {:?}",
        at(&mut delivered, 50),
        at(&mut delivered, 99),
        at(&mut acked, 50),
        at(&mut acked, 99),
    );
}

#[tokio::test]
async fn a_command_nobody_claims_is_refused_no_route_cluster_wide() {
    let Some((_server, a, b, _c)) = cluster("CTL2").await else {
        return;
    };
    let s = session();
    // history but no live claimant: absent from the roster, refused no-route
    let mut gone = Peer::claiming(&b, &s, json!(["control.pause"])).await;
    let mut console = Peer::hello(&a, "consumer", json!({})).await;
    console.until_claims(&s, 1).await;
    gone.ws.close(None).await.unwrap();
    drop(gone);
    console.until_claims(&s, 0).await;
    let error = console.refused(&json_command("control.pause", &s)).await;
    assert_eq!(error["code"], "no-route");
    let error = console
        .refused(&json_command("control.pause", &session()))
        .await;
    assert_eq!(error["code"], "no-route");
}

/// Targets on two relays claim one session: a command from any relay, the third or one
/// of theirs, is refused `ambiguous`, every claim counted, and reaches no one.
#[tokio::test]
async fn claimants_on_two_relays_make_a_command_ambiguous() {
    let Some((_server, a, b, c)) = cluster("CTL3").await else {
        return;
    };
    let s = session();
    let mut on_b = Peer::claiming(&b, &s, json!(["control.pause"])).await;
    let mut on_c = Peer::claiming(&c, &s, json!(["control.pause"])).await;
    let mut also_c = Peer::claiming(&c, &s, json!(["control.pause"])).await;
    for node in [&a, &b, &c] {
        let mut console = Peer::hello(node, "consumer", json!({})).await;
        console.until_claims(&s, 3).await;
        let error = console.refused(&json_command("control.pause", &s)).await;
        assert_eq!(error["code"], "ambiguous");
        assert_eq!(
            error["detail"],
            format!("3 connected emitters claim session {s}")
        );
    }
    for target in [&mut on_b, &mut on_c, &mut also_c] {
        target.send(&json!({ "type": "ping", "t": 1 })).await;
        assert_eq!(target.recv().await["type"], "pong", "no command delivered");
    }
}

/// The relay of the target decides what only it knows: a declared `accepts` without
/// the type is refused `unsupported` there, and the refusal reaches the sender on A.
#[tokio::test]
async fn a_refusal_on_the_targets_relay_reaches_the_sender() {
    let Some((_server, a, _b, c)) = cluster("CTL4").await else {
        return;
    };
    let s = session();
    let mut target = Peer::claiming(&c, &s, json!(["control.attention.respond"])).await;
    let mut console = Peer::hello(&a, "consumer", json!({})).await;
    console.until_claims(&s, 1).await;
    let error = console.refused(&json_command("control.pause", &s)).await;
    assert_eq!(error["code"], "unsupported");
    assert_eq!(error["detail"], "target does not accept control.pause");
    target.send(&json!({ "type": "ping", "t": 1 })).await;
    assert_eq!(target.recv().await["type"], "pong", "nothing delivered");
}

/// A relay killed stops counting: at once for a session only it claimed, once a
/// command for it finds NATS knows nobody there (`no-route`), and otherwise within the
/// bound (`missed` heartbeats, and one more), after which a session it claimed beside
/// another relay is routed to the claimant left.
#[tokio::test]
async fn a_killed_relay_stops_counting_within_the_bound() {
    let Some((server, a, b, mut c)) = cluster("CTL5").await else {
        return;
    };
    let mut d = Node::start(&server, "CTL5").await;
    let (shared_s, only_d) = (session(), session());
    let watcher = async_nats::connect(server.url()).await.unwrap();
    let subjects = Subjects::new("CTL5");
    let mut claims = watcher.subscribe(subjects.claims("*")).await.unwrap();
    watcher.flush().await.unwrap();
    let mut on_b = Peer::claiming(&b, &shared_s, json!(["control.pause"])).await;
    let _on_c = Peer::claiming(&c, &shared_s, json!(["control.pause"])).await;
    let _on_d = Peer::claiming(&d, &only_d, json!(["control.pause"])).await;
    let d_relay = relay_claiming(&mut claims, &subjects, &only_d).await;
    let mut console = Peer::hello(&a, "consumer", json!({})).await;
    console.until_claims(&shared_s, 2).await;
    console.until_claims(&only_d, 1).await;
    let error = console
        .refused(&json_command("control.pause", &shared_s))
        .await;
    assert_eq!(error["code"], "ambiguous");

    let killed = Instant::now();
    c.kill().await;
    d.kill().await;
    // The server drops D's subscriptions once it reads the end of D's socket, which a
    // command sent at once may overtake (and then wait out the forward timeout): the
    // command goes once NATS has no one on D's subject, as a crash seen later would.
    until_no_responders(&watcher, subjects.command(&d_relay)).await;
    let error = console
        .refused(&json_command("control.pause", &only_d))
        .await;
    assert_eq!(error["code"], "no-route", "{error}");
    let detail = error["detail"].as_str().unwrap();
    assert!(detail.ends_with("is gone"), "{detail}");
    // at once: A forgot D's claims before it sent the refusal
    let left = console.roster().await;
    assert!(
        !left.iter().any(|e| e["session"] == only_d),
        "D's claims still counted after NATS said it was gone: {left:?}"
    );

    let bound = BEAT * (ControlOptions::default().missed + 1);
    console.until_claims(&shared_s, 1).await;
    let stopped = killed.elapsed();
    // the bound, and two heartbeats for a relay on a machine as busy as CI's
    assert!(
        stopped <= bound + 2 * BEAT,
        "C's claims counted {stopped:?} after its death, the bound being {bound:?}"
    );
    // the roster and routing read the same copy: B's claimant alone now
    let command = json_command("control.pause", &shared_s);
    console.send(&command).await;
    assert_eq!(on_b.recv().await, command);
    eprintln!("a killed relay's claims stopped counting after {stopped:?} (bound {bound:?})");
}

/// The roster of any relay lists the parties of all, each claim once with its
/// declarations; its size bound covers every relay's entries.
#[tokio::test]
async fn the_roster_of_any_relay_lists_every_relays_claims_within_its_limit() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let (a, b) = (
        Node::start(&server, "CTL6").await,
        Node::start(&server, "CTL6").await,
    );
    // C answers rosters of at most 1000 bytes: its own claim's entry fits, the
    // cluster's three do not
    let limit = 1000;
    let small = RelayConfig::default().with_hard_backpressure(limit);
    let c = Node::start_with(&server, "CTL6", small).await;
    let sessions: Vec<String> = (0..3).map(|_| session()).collect();
    let emits: Vec<String> = (0..8).map(|i| format!("x.acme.category-{i:024}")).collect();
    let declaring = |accepts: Value| json!({ "control": { "accepts": accepts }, "emits": emits });
    let _targets = [
        Peer::claiming_with(&a, &sessions[0], declaring(json!(["control.pause"]))).await,
        Peer::claiming_with(&b, &sessions[1], declaring(json!(["control.cancel"]))).await,
        Peer::claiming_with(&c, &sessions[2], declaring(json!([]))).await,
    ];
    for node in [&a, &b] {
        let mut console = Peer::hello(node, "consumer", json!({})).await;
        for s in &sessions {
            console.until_claims(s, 1).await;
        }
        let roster = console.roster().await;
        assert_eq!(roster.len(), 3, "{roster:?}");
        let size = |entries: &[Value]| {
            json!({ "type": "roster", "id": "big", "entries": entries })
                .to_string()
                .len()
        };
        assert!(size(&roster) > limit && size(&roster[..1]) < limit);
        let of = |s: &str| roster.iter().find(|e| e["session"] == s).unwrap().clone();
        assert_eq!(
            of(&sessions[1])["control"]["accepts"],
            json!(["control.cancel"])
        );
        assert_eq!(of(&sessions[2])["control"]["accepts"], json!([]));
        assert_eq!(of(&sessions[0])["agent"], "emitter-agent");
    }
    let mut console = Peer::hello(&c, "consumer", json!({})).await;
    console
        .send(&json!({ "type": "roster", "id": "big" }))
        .await;
    let error = console.recv().await;
    assert_eq!(
        (&error["type"], &error["code"]),
        (&json!("error"), &json!("limit-exceeded")),
        "{error}"
    );
    assert_eq!(error["id"], "big");
}

/// A relay stopped cleanly says so as its last step: the others stop counting its
/// claims at once, well before its silence would tell them.
#[tokio::test]
async fn a_relay_stopped_cleanly_stops_counting_at_once() {
    let Some((_server, a, _b, mut c)) = cluster("CTL7").await else {
        return;
    };
    let s = session();
    let _target = Peer::claiming(&c, &s, json!(["control.pause"])).await;
    let mut console = Peer::hello(&a, "consumer", json!({})).await;
    console.until_claims(&s, 1).await;
    // the target does not close its side: the stop waits out its drain, then leaves
    c.stop().await;
    let stopped = Instant::now();
    console.until_claims(&s, 0).await;
    // well before its silence would tell (`missed` heartbeats)
    assert!(stopped.elapsed() < 2 * BEAT, "{:?}", stopped.elapsed());
    let error = console.refused(&json_command("control.pause", &s)).await;
    assert_eq!(error["code"], "no-route");
}

// ---- a peer that lies, or never answers ----------------------------------------------

/// A peer on a fleet's control subjects, on a NATS connection of its own, that sends
/// what its test tells it: a broken, lying or silent relay. One connection, so what
/// it publishes reaches a relay in the order it was sent.
struct Liar {
    client: async_nats::Client,
    subjects: Subjects,
}

impl Liar {
    async fn join(server: &NatsServer, stream: &str) -> Liar {
        Liar {
            client: async_nats::connect(server.url()).await.unwrap(),
            subjects: Subjects::new(stream),
        }
    }

    /// Publishes `payload` as relay `relay`'s claims message.
    async fn publish(&self, relay: &str, payload: impl Into<Bytes>) {
        let subject = self.subjects.claims(relay);
        self.client.publish(subject, payload.into()).await.unwrap();
        self.client.flush().await.unwrap();
    }

    /// Relay `relay`'s claims of generation `gen`, whole, as a relay writes them.
    async fn claim(&self, relay: &str, r#gen: u64, entries: Vec<RosterEntry>) {
        for message in claims_messages(relay, r#gen, entries, 1 << 20) {
            self.publish(relay, message).await;
        }
    }
}

/// One relay of the fleet `stream` and a peer on its control subjects; `None`
/// (skipped) without a server.
async fn relay_and_peer(stream: &str) -> Option<(NatsServer, Node, Liar)> {
    let server = NatsServer::start_or_skip()?;
    let node = Node::start(&server, stream).await;
    let peer = Liar::join(&server, stream).await;
    Some((server, node, peer))
}

/// Sessions listed by a roster.
fn sessions_of(roster: &[Value]) -> Vec<String> {
    let mut sessions: Vec<String> = roster
        .iter()
        .map(|e| e["session"].as_str().unwrap().to_owned())
        .collect();
    sessions.sort();
    sessions
}

/// A peer that sends broken or lying claims (not UTF-8, not JSON, no generation, parts
/// that never complete or fall outside their split, a split past what a relay writes,
/// a generation going backward) neither stops a relay's control plane nor changes what
/// it counts: only a whole newer generation does.
#[tokio::test]
async fn a_liars_broken_claims_count_for_nothing_and_the_relay_keeps_serving() {
    let Some((_server, a, liar)) = relay_and_peer("CTL8").await else {
        return;
    };
    let (whole, partial, backward, after) = (session(), session(), session(), session());
    liar.claim("LIAR", 2, vec![entry(&whole, "liar")]).await;
    let mut console = Peer::hello(&a, "consumer", json!({})).await;
    console.until_claims(&whole, 1).await;

    let claim = serde_json::to_value(entry(&partial, "liar")).unwrap();
    let frame = |r#gen: Value, part: Value, parts: Value, claim: &Value| {
        json!({ "type": "roster", "id": "LIAR", "gen": r#gen, "part": part, "parts": parts,
            "entries": [claim] })
        .to_string()
    };
    let lies = [
        b"\xff\xfe".to_vec(),
        b"not json".to_vec(),
        json!({ "type": "roster", "id": "LIAR", "entries": [claim] })
            .to_string()
            .into_bytes(),
        frame(json!(-3), json!(0), json!(1), &claim).into_bytes(),
        frame(json!(5), json!(0), json!(2), &claim).into_bytes(),
        frame(json!(6), json!(2), json!(2), &claim).into_bytes(),
        frame(json!(7), json!(0), json!(MAX_PARTS + 1), &claim).into_bytes(),
        frame(json!(8), json!(0), json!(u64::MAX), &claim).into_bytes(),
    ];
    for lie in lies {
        liar.publish("LIAR", lie).await;
    }
    liar.claim("LIAR", 1, vec![entry(&backward, "liar")]).await;
    // sent after the lies on the same connection: once it counts, they were read
    liar.claim("LATER", 1, vec![entry(&after, "later")]).await;
    console.until_claims(&after, 1).await;

    let mut expected = vec![whole.clone(), after];
    expected.sort();
    assert_eq!(sessions_of(&console.roster().await), expected);
    for s in [&partial, &backward] {
        let error = console.refused(&json_command("control.pause", s)).await;
        assert_eq!(error["code"], "no-route", "{error}");
    }
}

/// A relay that holds a command's target and is connected to NATS, but never answers
/// (its runtime stuck, say), keeps the sender waiting the forward timeout (5 s: half
/// the default ack window, AEP-0004 §3, so the sender hears `no-route` before its own
/// window closes), then refused `no-route`, saying so.
#[tokio::test]
async fn a_forward_nobody_answers_is_refused_no_route_after_the_timeout() {
    let Some((_server, a, silent)) = relay_and_peer("CTL9").await else {
        return;
    };
    let mut forwarded = silent
        .client
        .subscribe(silent.subjects.command("SILENT"))
        .await
        .unwrap();
    let s = session();
    silent.claim("SILENT", 1, vec![entry(&s, "silent")]).await;
    let mut console = Peer::hello(&a, "consumer", json!({})).await;
    console.until_claims(&s, 1).await;

    let command = json_command("control.pause", &s);
    let sent = Instant::now();
    let error = console.refused(&command).await;
    let waited = sent.elapsed();
    let timeout = ControlOptions::default().forward_timeout;
    assert_eq!(error["code"], "no-route", "{error}");
    assert_eq!(
        error["detail"],
        format!(
            "the relay holding the claim of session {s} did not answer within {} ms",
            timeout.as_millis()
        )
    );
    assert!(
        waited >= timeout,
        "refused after {waited:?}, before {timeout:?}"
    );
    // it was asked, byte for byte, and could have answered
    let asked = forwarded.next().await.unwrap();
    assert_eq!(asked.payload, command.to_string());
    assert!(asked.reply.is_some());
}

/// What a peer forwards that no relay would (bytes that are not UTF-8, not an AEP
/// envelope, an event that is not a command) is answered with a refusal and handed to
/// no one; a command is handed over.
#[tokio::test]
async fn a_forward_that_is_not_a_command_is_refused_and_reaches_no_target() {
    let Some((_server, a, peer)) = relay_and_peer("CTL10").await else {
        return;
    };
    let s = session();
    let mut target = Peer::claiming(&a, &s, json!(["control.pause"])).await;
    Peer::hello(&a, "consumer", json!({}))
        .await
        .until_claims(&s, 1)
        .await;
    // A's name within the fleet, read off its heartbeat
    let mut beats = peer
        .client
        .subscribe(peer.subjects.beat("*"))
        .await
        .unwrap();
    let beat = tokio::time::timeout(BEAT * 3, beats.next()).await.unwrap();
    let subject = beat.unwrap().subject;
    let relay = peer.subjects.relay_of(&subject).unwrap();
    let ask = |payload: Vec<u8>| {
        let (client, subject) = (peer.client.clone(), peer.subjects.command(relay));
        async move { client.request(subject, payload.into()).await.unwrap() }
    };

    let not_a_command = json_event("session.ended", &s, 9).to_string();
    for (payload, why) in [
        (b"\xff\xfe".to_vec(), "not UTF-8"),
        (b"{".to_vec(), "not an AEP envelope"),
        (not_a_command.into_bytes(), "not a command"),
    ] {
        let refusal = read_refusal(&ask(payload).await.payload).unwrap();
        assert_eq!(refusal.code.as_str(), "invalid-event", "{refusal:?}");
        assert!(refusal.detail.contains(why), "{refusal:?}");
    }
    let command = json_command("control.pause", &s);
    let reply = ask(command.to_string().into_bytes()).await;
    assert!(reply.payload.is_empty(), "{:?}", reply.payload);
    // the command is the first thing the target was handed
    assert_eq!(target.recv().await, command);
}
