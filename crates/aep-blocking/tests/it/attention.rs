//! The attention loop from plain threads (`ControlTarget::ask`), against the embedded
//! relay: an invalid answer nacked while the request stays pending, the valid one
//! returned, a timeout, and the refusal inside a runtime.

use std::time::{Duration, Instant};

use aep_blocking::control::{
    AskError, AttentionRequest, ControlTarget, NackReason, RejectReason, SendOptions,
};
use aep_blocking::{Client, Emitter, Error, SubscribeOptions, Subscription, WsSinkOptions};
use aep_core::redact::{RedactOptions, Redactor};
use aep_core::{Capture, Event};
use aep_relay::Relay;
use aep_testing::ThreadRelay;
use serde_json::json;

use crate::console_for;

const TOKEN: &str = "sesame";
const PATIENCE: Duration = Duration::from_secs(20);

fn next_of(sub: &mut Subscription, ty: &str) -> Event {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = sub
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no {ty} within {PATIENCE:?}: {e:?}"));
        if e.event_type() == ty {
            return e;
        }
    }
}

#[test]
fn ask_blocks_until_a_valid_answer_or_the_timeout() {
    let relay = ThreadRelay::start_with(Relay::builder().token(TOKEN)).unwrap();
    let target = ControlTarget::new(["control.attention.respond"], |cmd| {
        let _ = cmd.reject(RejectReason::Invalid, "no request of that id is pending");
    })
    .unwrap();
    let sink = Client::new(relay.url())
        .token(TOKEN)
        .ws_sink(WsSinkOptions::new("sync-asker", "host-a/1").command_hook(target.clone()))
        .unwrap();
    let emitter = Emitter::builder("sync-asker", "host-a")
        .capture(Capture::Redacted)
        .redactor(Redactor::new(RedactOptions::new()).unwrap())
        .build(sink);
    let session = target.attach(emitter.session("s-ask"));
    session.emit("session.started", json!({})).unwrap();

    let client = console_for(relay.url(), TOKEN, "s-ask");
    let options = SubscribeOptions::new()
        .from_all()
        .filter(json!({"session": "s-ask"}));
    let mut sub = Client::new(relay.url())
        .token(TOKEN)
        .subscribe(options)
        .unwrap();

    std::thread::scope(|scope| {
        let asker = scope.spawn(|| {
            target.ask(
                &session,
                AttentionRequest::choice(
                    "Which database?",
                    [("pg", "PostgreSQL"), ("lite", "SQLite")],
                ),
            )
        });
        let request = next_of(&mut sub, "attention.requested");
        assert_eq!(request.data().unwrap()["prompt"], "Which database?");
        let respond = |answer| {
            let opts = SendOptions::new()
                .subject(request.id())
                .data(json!({ "answer": answer }));
            client.send("control.attention.respond", "s-ask", opts)
        };
        let nack = respond(json!({"option": "mysql"})).unwrap_err();
        assert_eq!(nack.nack().map(|n| n.reason()), Some(NackReason::Invalid));
        assert!(!asker.is_finished(), "the request stays pending");
        respond(json!({"text": "SQLite"})).unwrap();
        let answer = asker.join().unwrap().unwrap();
        assert!(answer.is("lite"));
        assert_eq!(answer.request_id(), Some(request.id()));
    });
    assert_eq!(
        next_of(&mut sub, "attention.answered").data().unwrap()["answer"],
        json!({"option": "lite"})
    );

    let err = target
        .ask(
            &session,
            AttentionRequest::input("Anyone?").timeout(Duration::from_millis(200)),
        )
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(matches!(err, Error::Ask(AskError::TimedOut { .. })));
    assert_eq!(
        next_of(&mut sub, "attention.timeout").data().unwrap(),
        json!({"after_ms": 200})
    );

    // Inside a runtime a blocking ask would stall it: refused before anything is emitted.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let inside = rt.block_on(async { target.ask(&session, AttentionRequest::input("?")) });
    assert!(inside.unwrap_err().is_inside_runtime());

    client.close();
    emitter.close().unwrap();
}
