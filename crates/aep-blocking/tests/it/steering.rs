//! Steering from plain threads: instructions read as an iterator, each delivery audited,
//! against the embedded relay.

use std::time::Duration;

use aep_blocking::control::{ControlTarget, NackReason, SendOptions, Steering};
use aep_blocking::{Client, Emitter, Error, SubscribeOptions, WsSinkOptions};
use aep_relay::Relay;
use aep_testing::ThreadRelay;
use serde_json::json;

use crate::console_for;

const TOKEN: &str = "sesame";

#[test]
fn instructions_are_an_iterator_on_a_plain_thread() {
    let relay = ThreadRelay::start_with(Relay::builder().token(TOKEN)).unwrap();
    let builder = aep_async::ControlTarget::builder(["control.cancel"])
        .steering(Steering::new("acme").unwrap().with_capacity(2));
    let target = ControlTarget::with_builder(builder, |cmd| {
        let _ = cmd.accept();
    })
    .unwrap();
    let sink = Client::new(relay.url())
        .token(TOKEN)
        .ws_sink(WsSinkOptions::new("sync-steered", "host-a/1").command_hook(target.clone()))
        .unwrap();
    let emitter = Emitter::new("sync-steered", "host-a", sink);
    let session = target.attach(emitter.session("s-steer"));
    session.emit("session.started", json!({})).unwrap();
    let client = console_for(relay.url(), TOKEN, "s-steer");
    let instruct = |text: &str| {
        client.send(
            "x.acme.control.instruct",
            "s-steer",
            SendOptions::new().data(json!({ "text": text })),
        )
    };

    let mut instructions = target.instructions(&session).unwrap();
    assert!(instructions.try_recv().is_none());
    assert!(matches!(
        instructions.recv_timeout(Duration::from_millis(20)),
        Err(Error::Timeout(_))
    ));
    instruct("first").unwrap();
    instruct("second").unwrap();
    let full = instruct("third").unwrap_err();
    assert_eq!(full.nack().map(|n| n.reason()), Some(NackReason::Invalid));
    let texts: Vec<String> = instructions
        .by_ref()
        .take(2)
        .map(|i| i.text().to_owned())
        .collect();
    assert_eq!(texts, ["first", "second"]);

    let reader =
        std::thread::spawn(move || instructions.recv().map(|i| i.map(|i| i.text().to_owned())));
    instruct("third, now there is room").unwrap();
    assert_eq!(
        reader.join().unwrap().unwrap().as_deref(),
        Some("third, now there is room")
    );

    emitter.flush().unwrap();
    let options = SubscribeOptions::new()
        .from_all()
        .history_only()
        .filter(json!({"type": "x.acme.instruction.delivered"}));
    let delivered: Vec<_> = Client::new(relay.url())
        .token(TOKEN)
        .subscribe(options)
        .unwrap()
        .collect();
    assert_eq!(delivered.len(), 3);
    client.close();
    emitter.close().unwrap();
}
