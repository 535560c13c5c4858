//! `ControlSender` over an injected transport, in paused time: the identical-envelope
//! retries, the synthesized timeout, and relay refusals (AEP-0004 §2.3, §3, §4.2).
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::control::{ControlSender, NackReason, SendOptions};
use aep_async::ControlError;
use aep_core::frame::{ErrorCode, ErrorFrame, Frame};
use aep_core::Event;
use tokio::task::JoinHandle;

fn wired() -> (ControlSender, Arc<Mutex<Vec<Event>>>) {
    let wire: Arc<Mutex<Vec<Event>>> = Arc::default();
    let out = wire.clone();
    let sender = ControlSender::new("console", "ops", move |c: &Event| {
        out.lock().unwrap().push(c.clone())
    });
    (sender, wire)
}

/// A caller waiting on `sender.send(ty, "s1", options)`, on a task of its own.
fn sending(
    sender: &ControlSender,
    ty: &'static str,
    options: SendOptions,
) -> JoinHandle<Result<Event, ControlError>> {
    let sender = sender.clone();
    tokio::spawn(async move { sender.send(ty, "s1", options).await })
}

/// Waits until a command is on the wire.
async fn until_sent(wire: &Mutex<Vec<Event>>) {
    while wire.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn silence_is_retried_with_the_identical_envelope_then_timed_out() {
    let (sender, wire) = wired();
    let opts = SendOptions::new()
        .ack_window(Duration::from_secs(10))
        .retries(2);
    let err = sender.send("control.pause", "s1", opts).await.unwrap_err();
    let nack = err.nack().unwrap();
    assert_eq!(nack.reason(), NackReason::Timeout);
    assert!(nack.is_synthesized());
    assert_eq!(nack.detail(), Some("no ack within 10000 ms x 3"));
    let wire = wire.lock().unwrap();
    assert_eq!(wire.len(), 3);
    assert!(wire.iter().all(|c| c.to_json() == wire[0].to_json()));
    assert_eq!(
        wire[0].seq(),
        None,
        "commands never carry seq (AEP-0004 §2)"
    );
    assert_eq!(wire[0].source(), "aep://ops/agent/console");
    assert_eq!(sender.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_ack_after_a_retry_settles_once() {
    let (sender, wire) = wired();
    let opts = SendOptions::new().ack_window(Duration::from_secs(1));
    let task = sending(&sender, "control.resume", opts);
    tokio::time::sleep(Duration::from_millis(1500)).await; // one retry went out
    let cmd = wire.lock().unwrap()[0].clone();
    assert_eq!(wire.lock().unwrap().len(), 2);
    let ack = Event::new(
        "a1",
        "control.accepted",
        "t",
        "aep://h/agent/a/session/s1",
        "a",
    )
    .with_session("s1")
    .with_seq(4)
    .with_cause(cmd.id());
    assert!(sender.handle_event(&ack));
    assert!(
        !sender.handle_event(&ack),
        "a redelivered ack settles nothing twice"
    );
    assert_eq!(task.await.unwrap().unwrap().id(), "a1");
}

#[tokio::test(start_paused = true)]
async fn relay_error_frames_refuse_by_cause() {
    let (sender, wire) = wired();
    let task = sending(&sender, "control.cancel", SendOptions::new());
    until_sent(&wire).await;
    let id = wire.lock().unwrap()[0].id().to_owned();
    let unrelated = Frame::Error(ErrorFrame::new(ErrorCode::Ambiguous).with_cause("other"));
    assert!(!sender.handle_frame(&unrelated));
    let refusal = ErrorFrame::new(ErrorCode::Ambiguous)
        .with_cause(&id)
        .with_detail("2 connected emitters claim session s1");
    assert!(sender.handle_frame(&Frame::Error(refusal)));
    let nack = task.await.unwrap().unwrap_err();
    let nack = nack.nack().unwrap();
    assert_eq!(nack.reason(), NackReason::Invalid);
    assert_eq!(
        nack.detail(),
        Some("ambiguous: 2 connected emitters claim session s1")
    );
}

#[tokio::test(start_paused = true)]
async fn close_settles_pending_and_refuses_new_sends() {
    let (sender, wire) = wired();
    let task = sending(&sender, "control.pause", SendOptions::new());
    until_sent(&wire).await;
    sender.close("transport gone");
    sender.close("again");
    let nack = task.await.unwrap().unwrap_err();
    assert_eq!(nack.nack().unwrap().detail(), Some("transport gone"));
    let err = sender
        .send("control.pause", "s1", SendOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ControlError::Closed));
}
