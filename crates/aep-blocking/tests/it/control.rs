//! The async crate's control scenarios from plain threads, against the embedded relay:
//! accept, reject, unsupported, the attention round trip, roster, duplex.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use aep_blocking::control::{
    ControlError, ControlOptions, ControlTarget, DuplexOptions, Nack, NackReason, RejectReason,
    SendOptions,
};
use aep_blocking::{
    Client, EmitOptions, Emitter, Error, SessionEmitter, TransportError, WsSinkOptions,
};
use aep_core::frame::{Frame, IdFrame, Message};
use aep_relay::Relay;
use aep_testing::ThreadRelay;
use serde_json::json;

use crate::console_for;

const TOKEN: &str = "sesame";
const PATIENCE: Duration = Duration::from_secs(20);

/// An agent in sync code: accepts pause (after a blocking call) and attention answers,
/// rejects resume `busy`.
fn agent(url: &str, session: &str) -> (Emitter, SessionEmitter) {
    let target = ControlTarget::new(
        [
            "control.pause",
            "control.resume",
            "control.attention.respond",
        ],
        |cmd| match cmd.command_type() {
            "control.resume" => {
                let _ = cmd.reject(RejectReason::Busy, "mid-step");
            }
            "control.attention.respond" => {
                let subject = cmd.event().subject().map(str::to_owned);
                if let (Some(request), Ok(accepted)) = (subject, cmd.accept()) {
                    let about = EmitOptions::new().subject(request);
                    let _ = accepted.emit_with("attention.answered", json!({"answer": {}}), about);
                }
            }
            _ => {
                // The handler runs outside any runtime: blocking calls work here.
                if aep_blocking::Runtime::shared()
                    .and_then(|rt| rt.block_on(async {}))
                    .is_ok()
                {
                    let _ = cmd.accept();
                } else {
                    let _ = cmd.reject(RejectReason::Refused, "blocking refused in the handler");
                }
            }
        },
    )
    .unwrap();
    let sink = Client::new(url)
        .token(TOKEN)
        .ws_sink(WsSinkOptions::new("sync-agent", "host-a/1").command_hook(target.clone()))
        .unwrap();
    let emitter = Emitter::new("sync-agent", "host-a", sink);
    let session = target.attach(emitter.session(session));
    session.emit("session.started", json!({})).unwrap();
    (emitter, session)
}

#[test]
fn accept_reject_unsupported_and_the_attention_round_trip() {
    let relay = ThreadRelay::start_with(Relay::builder().token(TOKEN)).unwrap();
    let (emitter, session) = agent(relay.url(), "s-sync");
    let client = console_for(relay.url(), TOKEN, "s-sync");

    let ack = client
        .send("control.pause", "s-sync", SendOptions::new())
        .unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    assert_eq!(ack.session(), Some("s-sync"));

    let busy = client
        .send("control.resume", "s-sync", SendOptions::new())
        .unwrap_err();
    assert_eq!(busy.nack().map(|n| n.reason()), Some(NackReason::Busy));

    let unsupported = client
        .send("control.cancel", "s-sync", SendOptions::new())
        .unwrap_err();
    assert_eq!(
        unsupported.nack().map(|n| n.reason()),
        Some(NackReason::Unsupported)
    );

    let ask = session
        .emit(
            "attention.requested",
            json!({"kind": "permission", "prompt": "ok?"}),
        )
        .unwrap();
    let answered = client
        .send(
            "control.attention.respond",
            "s-sync",
            SendOptions::new()
                .subject(ask.id())
                .data(json!({"answer": {"ok": true}})),
        )
        .unwrap();
    assert_eq!(answered.event_type(), "control.accepted");
    assert!(answered.cause().is_some());

    client.close();
    client.close();
    // A closed client refuses, it does not hang.
    let closed = client
        .send("control.pause", "s-sync", SendOptions::new())
        .unwrap_err();
    assert!(matches!(closed, Error::Control(_)), "{closed:?}");
    emitter.close().unwrap();
}

#[test]
fn duplex_speaks_frames_and_control_refuses_inside_a_runtime() {
    let relay = ThreadRelay::start_with(Relay::builder().token(TOKEN)).unwrap();
    let relay_client = Client::new(relay.url()).token(TOKEN);
    let mut duplex = relay_client.duplex(DuplexOptions::new()).unwrap();
    assert!(duplex.hello().capabilities().supports_roster());
    duplex
        .send(&Message::Frame(Frame::RosterRequest(IdFrame::new("r-1"))))
        .unwrap();
    let reply = duplex.recv_timeout(PATIENCE).unwrap().unwrap();
    assert!(
        matches!(reply, Message::Frame(Frame::Roster(ref r)) if r.id == "r-1"),
        "{reply:?}"
    );
    assert!(matches!(
        duplex.recv_timeout(Duration::from_millis(20)),
        Some(Err(Error::Timeout(_)))
    ));
    duplex.close();

    let client = relay_client.control(ControlOptions::new()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async move {
        let refused = client
            .send("control.pause", "s", SendOptions::new())
            .unwrap_err();
        assert!(refused.is_inside_runtime());
        assert!(client.roster().unwrap_err().is_inside_runtime());
        // Opening refuses to wait here; closing only starts the close.
        let refused = relay_client.control(ControlOptions::new()).unwrap_err();
        assert!(refused.is_inside_runtime());
        client.close();
        client
    });
    let closed = client.send("control.pause", "s", SendOptions::new());
    assert!(
        matches!(closed, Err(Error::Control(ControlError::Closed))),
        "{closed:?}"
    );

    // A wrong token is the HTTP 401 of the upgrade.
    let denied = Client::new(relay.url())
        .token("nope")
        .control(ControlOptions::new())
        .unwrap_err();
    assert_eq!(denied.status(), Some(401), "{denied:?}");
    assert!(!denied.is_timeout() && !denied.is_network());
}

/// A handler that panics rejects its command `refused` (the command is dropped
/// undecided), and the commands after it are still decided: one bug does not leave the
/// target refusing everything.
#[test]
fn a_panicking_handler_rejects_its_command_and_the_next_is_decided() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let panicked = AtomicBool::new(false);
    let target = ControlTarget::new(["control.pause"], move |cmd| {
        if !panicked.swap(true, Ordering::SeqCst) {
            panic!("a bug in the handler (this panic is the test)");
        }
        let _ = cmd.accept();
    })
    .unwrap();
    let sink = aep_testing::MemorySink::new();
    let emitter = Emitter::new("agent", "host-a", sink.clone());
    let _session = target.attach(emitter.session("s1"));
    let commands = aep_testing::ControlStub::new();
    for _ in 0..2 {
        let command = commands.command("control.pause", "s1").unwrap();
        target.handle(command).unwrap();
    }
    let deadline = Instant::now() + PATIENCE;
    while sink.len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let acks: Vec<_> = sink
        .events()
        .iter()
        .map(|e| e.event_type().to_owned())
        .collect();
    assert_eq!(acks, ["control.rejected", "control.accepted"]);
    let rejected = &sink.events()[0];
    assert_eq!(
        rejected.data().map(|d| d["reason"].clone()),
        Some(json!("refused"))
    );
}

/// `Error`'s checks see through what it wraps: a timeout is a timeout whether it is the
/// blocking call's own, a transport's, or a control error's (a transport timeout inside
/// it, or the synthesized `timeout` nack).
#[test]
fn is_timeout_sees_through_wrapping() {
    // A server that takes the connection and never answers the upgrade.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = std::thread::spawn(move || listener.accept().map(|(s, _)| s));
    let silent = Client::new(&url).connect_timeout(Duration::from_millis(200));
    let err = silent.control(ControlOptions::new()).unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
    assert!(
        err.is_timeout() && err.is_network() && !err.is_connect(),
        "{err:?}"
    );
    drop(held);

    let wrapped = [
        Error::from(ControlError::from(TransportError::timeout("no hello"))),
        Error::from(ControlError::from(Nack::timeout("no ack"))),
        Error::Timeout(Duration::from_secs(1)),
    ];
    for e in &wrapped {
        assert!(e.is_timeout(), "{e:?}");
    }
    assert!(wrapped[0].is_network() && wrapped[0].transport().is_some());
    assert!(!Error::from(ControlError::Closed).is_timeout());
    let refused = Error::from(ControlError::from(TransportError::http(503, "down")));
    assert_eq!((refused.status(), refused.is_timeout()), (Some(503), false));
}

/// The lifecycle model from plain threads against the relay: a subscription created,
/// its deliveries received, cancelled; the connection closed; and the same in process.
#[test]
fn lifecycle_subscriptions_from_plain_threads() {
    use aep_blocking::lifecycle::{Ended, Hub};
    use aep_core::subscription::{DeliveryMode, SubscriptionFilter};

    let relay = ThreadRelay::start_with(Relay::builder().token(TOKEN)).unwrap();
    let conn = Client::new(relay.url()).token(TOKEN).lifecycle().unwrap();
    let filter = SubscriptionFilter::new()
        .with_types("tool.*")
        .unwrap()
        .with_delivery_mode(DeliveryMode::AtLeastOnce);
    let mut sub = conn.subscribe(&filter).unwrap();
    assert!(sub.id().starts_with("sub_"), "{}", sub.id());
    let sink = Client::new(relay.url())
        .token(TOKEN)
        .http_sink(aep_blocking::HttpSinkOptions::new())
        .unwrap();
    let emitter = Emitter::new("sync-agent", "host-a", sink);
    let session = emitter.session("s-life");
    session.emit("tool.called", json!({"n": 1})).unwrap();
    session.emit("progress.status", json!({})).unwrap();
    session.emit("tool.called", json!({"n": 2})).unwrap();
    emitter.flush().unwrap();
    for n in [1, 2] {
        let delivery = sub.recv_timeout(PATIENCE).unwrap();
        assert_eq!(delivery.event().event_type(), "tool.called");
        assert_eq!(delivery.event().data(), Some(json!({"n": n})));
    }
    assert!(sub.cancel().unwrap().is_some());
    assert_eq!(sub.ended(), Some(Ended::Cancelled));
    conn.close();
    conn.close();
    emitter.close().unwrap();

    let hub = Hub::new().unwrap();
    let hub_session = hub.session();
    let mut local = hub_session.subscribe(&filter).unwrap();
    let event = aep_core::Event::new(
        "1",
        "tool.called",
        "2026-01-01T00:00:00Z",
        "aep://h/agent/a",
        "a",
    )
    .with_session("s")
    .with_seq(0);
    assert_eq!(hub.publish(event).unwrap(), 1);
    assert_eq!(local.try_recv().unwrap().event().id(), "1");
    hub_session.close();
    assert_eq!(
        local.recv_timeout(PATIENCE).err(),
        Some(aep_blocking::RecvTimeoutError::Closed)
    );
    assert_eq!(local.ended(), Some(Ended::SessionClosed));
}
