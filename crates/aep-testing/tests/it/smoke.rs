//! The Python SDK's `tests/smoke_testing.py` scenarios: the doubles (MemorySink,
//! ScriptedSource, ControlStub on both sides of AEP-0004). Relay-free. Its projection
//! scenarios are aep-core's, tested there (`crates/aep-core/tests/it/projection.rs`).

use std::time::{Duration, Instant};

use aep_async::Emitter;
use aep_core::control::{
    CommandDelivery, ControlSender, ControlTarget, Decision, NackReason, SendPolicy, TargetOutput,
};
use aep_core::Event;
use aep_testing::{ControlStub, MemorySink, ScriptedSource};
use serde_json::json;

#[test]
fn memory_sink_records_emitter_built_events_in_order_and_clears() {
    let sink = MemorySink::new();
    let session = Emitter::new("mem-agent", "mem-host", sink.clone()).session("s-mem");
    let first = session
        .emit(
            "session.started",
            json!({"client": {"name": "testing-smoke"}}),
        )
        .unwrap();
    let second = session
        .emit("session.ended", json!({"reason": "normal"}))
        .unwrap();
    assert_eq!(sink.events(), vec![first, second]);
    sink.clear();
    assert!(sink.events().is_empty());
    assert!(sink.is_empty());
}

#[test]
fn scripted_source_stamps_real_envelopes_and_plays_them_in_order() {
    let src = ScriptedSource::new();
    let sx = src.session("s-x");
    let x: Vec<Event> = [
        (
            "session.started",
            json!({"client": {"name": "testing-smoke"}}),
        ),
        ("progress.status", json!({})),
        ("session.ended", json!({"reason": "normal"})),
    ]
    .into_iter()
    .map(|(ty, data)| sx.emit(ty, data).unwrap())
    .collect();
    for ev in &x {
        assert!(ev.source().starts_with("aep://"), "{}", ev.source());
        assert!(!ev.agent().is_empty());
        assert_eq!(ev.session(), Some("s-x"));
        assert_eq!(ev.to_value()["epoch"], 0, "epoch stamped");
        // A fresh ULID: 26 Crockford base32 characters.
        assert_eq!(ev.id().len(), 26);
    }
    assert_eq!(
        x.iter().map(|e| e.seq()).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2)]
    );
    assert!(x[0].id() != x[1].id() && x[1].id() != x[2].id());

    let y = src
        .session_at("s-y", 2)
        .emit(
            "session.started",
            json!({"client": {"name": "testing-smoke"}}),
        )
        .unwrap();
    assert_eq!((y.session(), y.epoch(), y.seq()), (Some("s-y"), 2, Some(0)));

    let all: Vec<Event> = x.iter().cloned().chain([y]).collect();
    assert_eq!(src.events(), all);
    let mut played = Vec::new();
    src.play(|ev| played.push(ev.clone()));
    assert_eq!(played, all);
}

#[test]
fn scripted_source_pins_source_on_the_record() {
    let src = ScriptedSource::builder()
        .source("aep://corpus/adapter-a")
        .build();
    src.session("s").emit("session.started", json!({})).unwrap();
    assert_eq!(src.events()[0].source(), "aep://corpus/adapter-a");
}

/// Drives a sans-IO [`ControlTarget`] the way the control layer does: decisions from
/// `decide`, acks minted on the stub's emitter and recorded, re-acks redelivered.
/// Returns the commands handed to the application.
fn drive(
    target: &mut ControlTarget,
    stub: &ControlStub,
    command: &Event,
    decide: impl Fn(&Event) -> Decision,
) -> (CommandDelivery, Vec<Event>) {
    let delivery = target
        .handle_command(Instant::now(), command.clone())
        .unwrap();
    let mut executed = Vec::new();
    while let Some(out) = target.poll_output() {
        match out {
            TargetOutput::Decide(incoming) => {
                let decision = decide(incoming.command());
                if decision == Decision::Accept {
                    executed.push(incoming.command().clone());
                }
                target.decide(incoming.key(), decision).unwrap();
            }
            TargetOutput::EmitAck(ack) => {
                let event = stub
                    .emitter()
                    .emit_with(
                        ack.ack_type(),
                        ack.data(),
                        aep_async::EmitOptions::new().cause(ack.cause()),
                    )
                    .unwrap();
                target.record(ack.key(), event).unwrap();
            }
            TargetOutput::Redeliver(event) => stub.emitter().redeliver(&event).unwrap(),
            other => panic!("unexpected target output {other:?}"),
        }
    }
    (delivery, executed)
}

fn acks_for(stub: &ControlStub, command: &Event) -> Vec<Event> {
    stub.acks()
        .into_iter()
        .filter(|e| e.cause() == Some(command.id()))
        .collect()
}

/// Two commands from `stub` to session `s-x`: a `control.pause`, and a
/// `control.cancel` with data.
fn pause_and_cancel(stub: &ControlStub) -> (Event, Event) {
    let pause = stub.command("control.pause", "s-x").unwrap();
    let cancel = stub
        .command_with("control.cancel", "s-x", |b| b.data(json!({"scope": "run"})))
        .unwrap();
    (pause, cancel)
}

#[test]
fn control_stub_mints_well_formed_commands_without_seq() {
    let stub = ControlStub::new();
    let (cmd, other) = pause_and_cancel(&stub);
    let v = cmd.to_value();
    assert_eq!(v["aep"], "0.1");
    assert!(!cmd.id().is_empty() && cmd.id() != other.id());
    assert_eq!(cmd.session(), Some("s-x"));
    assert_eq!(cmd.seq(), None);
    assert!(v.get("seq").is_none());
    assert!(cmd.source().starts_with("aep://"));
    assert!(!cmd.agent().is_empty());
    assert!(v.get("time").is_some());
    assert!(stub.command("session.started", "s-x").is_err());
}

#[test]
fn control_stub_target_side_acks_reacks_byte_identically_and_nacks_unsupported() {
    let stub = ControlStub::new();
    let (cmd, cmd_other) = pause_and_cancel(&stub);
    let mut target = ControlTarget::new(["control.pause"]);

    let (delivery, executed) = drive(&mut target, &stub, &cmd, |_| Decision::Accept);
    let acks = acks_for(&stub, &cmd);
    assert_eq!(delivery, CommandDelivery::New);
    assert_eq!(executed, vec![cmd.clone()]);
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].event_type(), "control.accepted");

    // The same frame again: one decision; the recorded ack re-emitted byte-identically
    // (AEP-0004 §3), never a re-execute.
    let (delivery, executed) = drive(&mut target, &stub, &cmd, |_| Decision::Accept);
    let acks = acks_for(&stub, &cmd);
    assert_eq!(delivery, CommandDelivery::Redelivered);
    assert!(executed.is_empty());
    assert_eq!(acks.len(), 2);
    assert_eq!(acks[0].to_json(), acks[1].to_json());

    // A type outside `accepts` is nacked `unsupported` (AEP-0004 §4.2).
    let (delivery, executed) = drive(&mut target, &stub, &cmd_other, |_| Decision::Accept);
    let nacks = acks_for(&stub, &cmd_other);
    assert_eq!(delivery, CommandDelivery::Unsupported);
    assert!(executed.is_empty());
    assert_eq!(nacks.len(), 1);
    assert_eq!(nacks[0].event_type(), "control.rejected");
    assert_eq!(nacks[0].data().unwrap()["reason"], "unsupported");
}

#[test]
fn control_stub_client_side_accept_settles_the_send() {
    let stub = ControlStub::new();
    let mut sender = ControlSender::new("stub-phone", "stub-host");
    let t0 = Instant::now();
    let cmd = sender
        .command("control.pause", "s-x")
        .data(json!({}))
        .build("01JCMDPAUSE0000000000000000", "2026-07-22T07:00:00.000Z");
    sender
        .send_with(t0, cmd, SendPolicy::new(Duration::from_secs(2), 1))
        .unwrap();
    assert_eq!(stub.transmit(&mut sender), 1);
    let sent = stub.sent();
    assert_eq!(sent[0].event_type(), "control.pause");
    assert_eq!(sent[0].seq(), None);

    let ack = stub.accept(&sent[0]).unwrap();
    assert!(sender.handle_event(&ack));
    let settled = sender.poll_settled().unwrap();
    let accepted = settled.result.unwrap();
    assert_eq!(accepted.event_type(), "control.accepted");
    assert_eq!(accepted.cause(), Some(sent[0].id()));
}

#[test]
fn control_stub_client_side_reject_settles_with_the_reason() {
    let stub = ControlStub::new();
    let mut sender = ControlSender::new("stub-phone", "stub-host");
    let cmd = stub.command("control.resume", "s-x").unwrap();
    sender
        .send_with(
            Instant::now(),
            cmd,
            SendPolicy::new(Duration::from_secs(2), 0),
        )
        .unwrap();
    stub.transmit(&mut sender);
    let nack = stub.reject(&stub.sent()[0], "busy").unwrap();
    assert!(sender.handle_event(&nack));
    let err = sender.poll_settled().unwrap().result.unwrap_err();
    assert_eq!(err.reason().to_string(), "busy");
    assert!(!matches!(err.reason(), NackReason::Timeout));
}

#[test]
fn control_stub_roster_reply_round_trips_as_a_frame() {
    let stub = ControlStub::new();
    let reply = stub.roster_reply("r-1", &["s-x", "s-y"], &["control.pause"]);
    let frame = aep_core::frame::Frame::Roster(reply.clone());
    let back = aep_core::frame::Frame::from_value(serde_json::from_str(&frame.to_json()).unwrap())
        .unwrap();
    assert_eq!(back, frame);
    assert!(reply.entries[1]
        .control
        .as_ref()
        .unwrap()
        .accepts("control.pause"));
}

#[test]
fn relay_starts_in_a_line_for_sync_and_async_tests() {
    let relay = aep_testing::ThreadRelay::start().unwrap();
    assert!(relay.url().starts_with("http://127.0.0.1:"));
    relay.shutdown().unwrap();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let relay = aep_testing::start_relay().await.unwrap();
        assert!(relay.url().starts_with("http://"));
        relay.shutdown().await.unwrap();
    });
}

/// The Python smoke's threaded client scenario, over the async sender: `send` waits
/// while another task answers through the stub.
#[tokio::test]
async fn control_stub_is_the_transport_of_the_async_sender() {
    use aep_async::control::{ControlSender as AsyncSender, SendOptions};
    use std::sync::Arc;

    let stub = Arc::new(ControlStub::new());
    let sender = AsyncSender::new("stub-phone", "stub-host", stub.transport());
    let wait_sent = |n: usize| {
        let stub = stub.clone();
        async move {
            while stub.sent().len() < n {
                tokio::task::yield_now().await;
            }
        }
    };
    let window = SendOptions::new().ack_window(Duration::from_secs(2));

    let pending = tokio::spawn({
        let (sender, window) = (sender.clone(), window.clone());
        async move {
            sender
                .send("control.pause", "s-x", window.retries(1).data(json!({})))
                .await
        }
    });
    wait_sent(1).await;
    assert!(sender.handle_event(stub.accept(&stub.sent()[0]).unwrap()));
    let ack = pending.await.unwrap().unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    assert_eq!(ack.cause(), Some(stub.sent()[0].id()));
    assert_eq!(stub.sent()[0].seq(), None);

    let pending = tokio::spawn({
        let sender = sender.clone();
        async move {
            sender
                .send("control.resume", "s-x", window.retries(0))
                .await
        }
    });
    wait_sent(2).await;
    assert!(sender.handle_event(stub.reject(&stub.sent()[1], "busy").unwrap()));
    let err = pending.await.unwrap().unwrap_err();
    assert_eq!(
        err.nack().map(|n| n.reason().to_string()),
        Some("busy".into())
    );
}

/// The Python smoke's target scenario over the async `ControlTarget` itself, with the
/// stub's recording emitter attached.
#[tokio::test]
async fn control_stub_drives_the_async_control_target() {
    use aep_async::control::ControlTarget as AsyncTarget;

    let stub = ControlStub::new();
    let cmd = stub.command("control.pause", "stub-target").unwrap();
    let other = stub.command("control.cancel", "stub-target").unwrap();
    let (executed_tx, mut executed) = tokio::sync::mpsc::unbounded_channel();
    let target = AsyncTarget::new(["control.pause"], move |c| {
        let executed_tx = executed_tx.clone();
        async move {
            let _ = executed_tx.send(c.event().clone());
            let _ = c.accept();
        }
    });
    target.attach(stub.emitter());

    target.handle(cmd.clone()).unwrap();
    assert_eq!(executed.recv().await.unwrap(), cmd);
    while acks_for(&stub, &cmd).is_empty() {
        tokio::task::yield_now().await;
    }
    // The retransmit: the recorded ack again, byte-identical, no second execution.
    target.handle(cmd.clone()).unwrap();
    let acks = acks_for(&stub, &cmd);
    assert_eq!(acks.len(), 2);
    assert_eq!(acks[0].event_type(), "control.accepted");
    assert_eq!(acks[0].to_json(), acks[1].to_json());
    assert!(executed.try_recv().is_err());

    target.handle(other.clone()).unwrap();
    let nacks = acks_for(&stub, &other);
    assert_eq!(nacks.len(), 1);
    assert_eq!(nacks[0].data().unwrap()["reason"], "unsupported");
}
