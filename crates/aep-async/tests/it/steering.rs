//! Steering on a real relay (the steering design record): `x.acme.control.instruct` sent
//! by the SDK's `ControlClient`, queued by the agent's `ControlTarget` and read as a
//! stream, every acceptance, delivery and drop read back from the session.
#![cfg(feature = "ws")]

use crate::common;

use aep_async::control::{
    ControlError, ControlTarget, Instructions, InstructionsError, NackReason, SendOptions, Steering,
};
use aep_async::Emitter;
use aep_core::Event;
use serde_json::json;

const TOKEN: &str = "st33r";
const INSTRUCT: &str = "x.acme.control.instruct";

type Agent = common::AgentLoop;

/// An agent holding the session `name` whose target takes `acme`'s steering verbs.
async fn start(name: &str) -> Agent {
    let target = ControlTarget::builder(["control.cancel"])
        .steering(Steering::new("acme").unwrap())
        .handler(|cmd| async move {
            let _ = cmd.accept();
        });
    let emitter = |sink| Emitter::new("steered", "host", sink);
    Agent::start(TOKEN, "steered", target, emitter, name).await
}

impl Agent {
    async fn instruct(&self, text: &str) -> Result<Event, ControlError> {
        let opts = SendOptions::new().data(json!({ "text": text }));
        self.console.send(INSTRUCT, &self.name, opts).await
    }

    fn instructions(&self) -> Instructions {
        self.target.instructions(&self.session).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_arrive_in_order_each_delivery_audited() {
    let mut a = start("steer-order").await;
    // Declared in hello, so the relay routes the verb (AEP-0004 §4.2).
    let roster = a.console.roster().await.unwrap();
    let entry = roster.iter().find(|e| e.session == a.name).unwrap();
    assert!(entry.control.as_ref().unwrap().accepts(INSTRUCT));

    // Sent before the agent reads: kept for it.
    let acks = [
        a.instruct("prefer the staging bucket").await.unwrap(),
        a.instruct("then run the tests").await.unwrap(),
    ];
    let mut instructions = a.instructions();
    let first = instructions.next().await.unwrap();
    let second = instructions.next().await.unwrap();
    assert_eq!(
        (first.text(), second.text()),
        ("prefer the staging bucket", "then run the tests")
    );
    assert_eq!(first.by(), "aep-rust-control");
    // One read while waiting, released by the next instruction.
    let reader = tokio::spawn(async move { (instructions.next().await, instructions) });
    let third_ack = a.instruct("and commit").await.unwrap();
    let (third, instructions) = reader.await.unwrap();
    assert_eq!(third.unwrap().text(), "and commit");

    for ack in acks.iter().chain([&third_ack]) {
        assert_eq!(ack.event_type(), "control.accepted");
        let delivered = common::next_of(&mut a.watch, "x.acme.instruction.delivered").await;
        assert_eq!(
            delivered.cause(),
            ack.cause(),
            "cause-linked to its command"
        );
        assert!(delivered.seq() > ack.seq(), "accepted before delivered");
        assert!(delivered.data().unwrap()["queued_ms"].is_u64());
    }
    assert_eq!(instructions.waiting(), 0);
    drop(instructions);
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_is_bounded_and_what_is_left_is_dropped_audited() {
    let mut a = start("steer-bound").await;
    let mut instructions = a.instructions();
    let mut commands = Vec::new();
    for i in 0..20 {
        let ack = a.instruct(&format!("step {i}")).await.unwrap();
        commands.push(ack.cause().unwrap().to_owned());
    }
    let full = a.instruct("one too many").await.unwrap_err();
    let nack = full.nack().unwrap();
    assert_eq!(nack.reason(), NackReason::Invalid);
    assert!(nack.detail().unwrap().contains("full (20"), "{nack:?}");
    assert!(!nack.detail().unwrap().contains("one too many"));
    // Too long, or no text: invalid too, and nothing queued.
    let long = a.instruct(&"x".repeat(4_001)).await.unwrap_err();
    assert_eq!(long.nack().unwrap().reason(), NackReason::Invalid);
    let blank = a.instruct("   ").await.unwrap_err();
    assert_eq!(blank.nack().unwrap().reason(), NackReason::Invalid);

    // Taking one makes room for one.
    assert_eq!(instructions.next().await.unwrap().text(), "step 0");
    let ack = a.instruct("step 20").await.unwrap();
    commands.push(ack.cause().unwrap().to_owned());
    assert_eq!(instructions.waiting(), 20);

    // The agent stops reading: the 20 left are dropped, each audited, in order.
    drop(instructions);
    for command in &commands[1..] {
        let dropped = common::next_of(&mut a.watch, "x.acme.instruction.dropped").await;
        assert_eq!(dropped.cause(), Some(command.as_str()));
        assert_eq!(dropped.data().unwrap(), json!({"reason": "session-ended"}));
    }
    // Nobody reads any more: refused, not queued unseen.
    let late = a.instruct("anyone?").await.unwrap_err();
    assert_eq!(late.nack().unwrap().reason(), NackReason::Refused);
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detaching_the_session_ends_the_stream() {
    let mut a = start("steer-detach").await;
    let mut instructions = a.instructions();
    assert_eq!(
        a.target.instructions(&a.session).unwrap_err(),
        InstructionsError::AlreadyReading(a.name.clone())
    );
    let ack = a.instruct("queued at the end").await.unwrap();
    a.target.detach(&a.name);
    assert!(instructions.next().await.is_none(), "the stream ends");
    let dropped = common::next_of(&mut a.watch, "x.acme.instruction.dropped").await;
    assert_eq!(dropped.cause(), ack.cause());

    let plain = ControlTarget::new(["control.pause"], |cmd| async move {
        let _ = cmd.accept();
    });
    assert_eq!(
        plain.instructions(&a.session).unwrap_err(),
        InstructionsError::NotConfigured
    );
    a.close().await;
}
