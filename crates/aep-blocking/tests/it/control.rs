//! The async crate's control scenarios from plain threads, against the embedded relay:
//! accept, reject, unsupported, the attention round trip, roster, duplex.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use aep_blocking::control::{
    open_duplex, ClientOptions, ControlClient, ControlTarget, DuplexOptions, NackReason,
    RejectReason, SendOptions,
};
use aep_blocking::{EmitOptions, Emitter, Error, SessionEmitter, WsSink};
use aep_core::frame::{Frame, IdFrame, Message};
use aep_relay::Relay;
use aep_testing::ThreadRelay;
use serde_json::json;

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
    let sink = WsSink::builder(url, "sync-agent", "host-a/1")
        .token(TOKEN)
        .command_hook(target.clone())
        .build()
        .unwrap();
    let emitter = Emitter::new("sync-agent", "host-a", sink);
    let session = target.attach(emitter.session(session));
    session.emit("session.started", json!({})).unwrap();
    (emitter, session)
}

/// Waits until the relay's roster shows `session` claimed, so commands can route.
fn wait_claimed(client: &ControlClient, session: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let roster = client.roster().unwrap();
        if roster.iter().any(|e| e.session == session) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{session} never claimed: {roster:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn accept_reject_unsupported_and_the_attention_round_trip() {
    let relay = ThreadRelay::start_with(Relay::builder().token(TOKEN)).unwrap();
    let (emitter, session) = agent(relay.url(), "s-sync");
    let client = ControlClient::connect(relay.url(), ClientOptions::new().token(TOKEN)).unwrap();
    wait_claimed(&client, "s-sync");

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

    client.close().unwrap();
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
    let mut duplex = open_duplex(relay.url(), DuplexOptions::new().token(TOKEN)).unwrap();
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
    duplex.close().unwrap();

    let client = ControlClient::connect(relay.url(), ClientOptions::new().token(TOKEN)).unwrap();
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
        client
    });
    client.close().unwrap();

    // A wrong token is the HTTP 401 of the upgrade.
    let denied =
        ControlClient::connect(relay.url(), ClientOptions::new().token("nope")).unwrap_err();
    assert!(
        matches!(denied, Error::Transport(ref e) if e.status() == Some(401)),
        "{denied:?}"
    );
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
