//! The attention loop on a real relay (AEP-0002 §7, AEP-0006, AEP-0008): an agent's
//! `ControlTarget::ask` answered by the SDK's `ControlClient` through the embedded relay,
//! every lifecycle event read back from a subscription to the session.
#![cfg(feature = "ws")]

use crate::common;

use std::time::Duration;

use aep_async::control::{
    AskError, ControlError, ControlTarget, NackReason, RejectReason, SendOptions,
};
use aep_async::Emitter;
use aep_core::attention::{Applied, AttentionRequest, FormField, RequestError, RespondVia};
use aep_core::redact::{RedactOptions, Redactor};
use aep_core::{Capture, Event, Severity};
use serde_json::{json, Value};

const TOKEN: &str = "t0ken";

/// An agent with a target that asks, a console that answers, and a watch on the session.
type Loop = common::AgentLoop;

/// The loop of the session `name`: what no `ask` waits on reaches the handler, which
/// refuses it.
async fn start(name: &str) -> Loop {
    let target = ControlTarget::new(["control.attention.respond"], |cmd| async move {
        let _ = cmd.reject(RejectReason::Invalid, "no request of that id is pending");
    });
    // A redacted ceiling and the redaction pipeline, as an agent showing a person the
    // real question has (AEP-0003 §9.4).
    let emitter = |sink| {
        Emitter::builder("asker", "host")
            .capture(Capture::Redacted)
            .redactor(Redactor::new(RedactOptions::new()).unwrap())
            .build(sink)
    };
    Loop::start(TOKEN, "asker", target, emitter, name).await
}

impl Loop {
    /// Sends `answer` to `request`: the ack, or the nack.
    async fn respond(&self, request: &str, answer: Value) -> Result<Event, ControlError> {
        let opts = SendOptions::new()
            .subject(request)
            .cause(request)
            .data(json!({ "answer": answer }));
        self.console
            .send("control.attention.respond", &self.name, opts)
            .await
    }

    /// Asks `request` on a task of its own.
    /// Asks `request` on a task of its own (the ask, when joined), and the
    /// `attention.requested` it put on the wire.
    async fn ask(
        &mut self,
        request: AttentionRequest,
    ) -> (
        tokio::task::JoinHandle<Result<aep_core::attention::Answer, AskError>>,
        Event,
    ) {
        let target = self.target.clone();
        let session = self.session.clone();
        let asked = tokio::spawn(async move { target.ask(&session, request).await });
        (asked, self.next("attention.requested").await)
    }
}

/// The nack's reason and detail.
fn nack(result: Result<Event, ControlError>) -> (NackReason, String) {
    let err = result.expect_err("a nack");
    let nack = err.nack().expect("a nack, not another failure");
    (nack.reason(), nack.detail().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_acked_recorded_and_returned() {
    let mut l = start("att-basic").await;
    let (asked, request) = l
        .ask(AttentionRequest::permission("Run `terraform apply`?"))
        .await;
    assert_eq!(request.severity(), Severity::Notice);
    let data = request.data().unwrap();
    assert_eq!(data["kind"], "permission");
    assert_eq!(data["prompt"], "Run `terraform apply`?");
    assert_eq!(data["respond_via"], json!(["control"]));
    assert_eq!(
        data["options"],
        json!([{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}])
    );

    // Text that names an option is that option (AEP-0008).
    let ack = l
        .respond(request.id(), json!({"text": "  ALLOW "}))
        .await
        .unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    let answer = asked.await.unwrap().unwrap();
    assert!(answer.is("allow"));
    assert_eq!(answer.applied(), Applied::TextNamedOption);
    assert_eq!(answer.request_id(), Some(request.id()));
    assert_eq!(answer.by(), Some("aep-rust-control"));

    let command = ack.cause().unwrap().to_owned();
    let answered = l.next("attention.answered").await;
    let resolved = l.next("attention.resolved").await;
    for e in [&answered, &resolved] {
        assert_eq!(e.subject(), Some(request.id()), "AEP-0002 §7 rule 1");
        assert_eq!(e.cause(), Some(command.as_str()), "AEP-0004 §6");
    }
    assert!(ack.seq() < answered.seq() && answered.seq() < resolved.seq());
    assert_eq!(
        answered.data().unwrap(),
        json!({"answer": {"option": "allow"}, "by": "aep-rust-control", "via": "control"}),
        "the answer as applied: the word is the decision, not kept as text"
    );
    assert_eq!(resolved.data().unwrap()["resolution"], "answered");
    assert!(resolved.data().unwrap()["latency_ms"].is_u64());
    l.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_answers_are_nacked_and_the_request_stays_pending() {
    let mut l = start("att-invalid").await;
    let form = AttentionRequest::form("Deploy settings")
        .field(FormField::string("service", "Service").required())
        .field(FormField::number("replicas", "Replicas").min(1.0).max(5.0))
        .field(
            FormField::select("region", "Region")
                .choice("eu", "Europe")
                .choice("us", "US"),
        );
    let (asked, request) = l.ask(form).await;
    assert_eq!(
        request.data().unwrap()["fields"].as_array().unwrap().len(),
        3
    );

    for (bad, why) in [
        (
            json!({"values": {"replicas": 3}}),
            "required field `service`",
        ),
        (
            json!({"values": {"service": "billing", "region": "mars-north"}}),
            "select field `region`",
        ),
        (
            json!({"values": {"service": "billing", "replicas": 9}}),
            "outside its range",
        ),
        (json!({"option": "eu"}), "answered with values"),
        (json!({"text": "eu please"}), "answered with values"),
        (json!({}), "answered with values"),
    ] {
        let (reason, detail) = nack(l.respond(request.id(), bad.clone()).await);
        assert_eq!(reason, NackReason::Invalid, "{bad}");
        assert!(detail.contains(why), "{bad}: {detail}");
        assert!(
            !detail.contains("mars-north"),
            "a detail never quotes the answer"
        );
    }
    assert!(
        !asked.is_finished(),
        "still pending after every invalid answer"
    );

    let ok = json!({"values": {"service": "billing", "replicas": 2, "region": "eu"}});
    l.respond(request.id(), ok.clone()).await.unwrap();
    let answer = asked.await.unwrap().unwrap();
    assert_eq!(
        Value::Object(answer.values().unwrap().clone()),
        ok["values"]
    );
    let answered = l.next("attention.answered").await;
    assert_eq!(answered.data().unwrap()["answer"], ok);
    l.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_naming_no_option_is_the_refusal_never_the_permission() {
    let mut l = start("att-text").await;
    let (asked, request) = l.ask(AttentionRequest::permission("Push to main?")).await;
    l.respond(
        request.id(),
        json!({"text": "yes, but use the staging branch"}),
    )
    .await
    .unwrap();
    let answer = asked.await.unwrap().unwrap();
    assert_eq!(answer.option(), Some("deny"));
    assert_eq!(answer.text(), Some("yes, but use the staging branch"));
    assert_eq!(answer.applied(), Applied::TextRefused);
    let answered = l.next("attention.answered").await;
    assert_eq!(
        answered.data().unwrap()["answer"],
        json!({"option": "deny", "text": "yes, but use the staging branch"})
    );
    assert_eq!(answered.capture(), Capture::Redacted);

    // An option the request does not offer is invalid, and the next answer counts.
    let (asked, request) = l
        .ask(AttentionRequest::choice(
            "Which database?",
            [("pg", "PostgreSQL"), ("lite", "SQLite")],
        ))
        .await;
    let (reason, detail) = nack(l.respond(request.id(), json!({"option": "mysql"})).await);
    assert_eq!(reason, NackReason::Invalid);
    assert!(detail.contains("pg, lite"), "{detail}");
    l.respond(request.id(), json!({"text": "postgresql"}))
        .await
        .unwrap();
    assert!(asked.await.unwrap().unwrap().is("pg"));
    l.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_emits_attention_timeout() {
    let mut l = start("att-timeout").await;
    let (asked, request) = l
        .ask(AttentionRequest::input("Anyone there?").timeout(Duration::from_millis(300)))
        .await;
    assert!(request.data().unwrap()["expires_at"].is_string());
    let err = asked.await.unwrap().unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(err.request_id(), Some(request.id()));
    let timeout = l.next("attention.timeout").await;
    assert_eq!(timeout.subject(), Some(request.id()));
    assert_eq!(timeout.cause(), Some(request.id()));
    assert_eq!(timeout.data().unwrap(), json!({"after_ms": 300}));
    // Closed: a late answer is nobody's, and the handler refuses it.
    let (reason, detail) = nack(l.respond(request.id(), json!({"text": "me!"})).await);
    assert_eq!(reason, NackReason::Invalid);
    assert!(detail.contains("no request"), "{detail}");
    l.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_ask_withdraws_the_request() {
    let mut l = start("att-withdraw").await;
    let (asked, request) = l
        .ask(AttentionRequest::permission("Delete the cache?"))
        .await;
    asked.abort();
    assert!(asked.await.unwrap_err().is_cancelled());
    let withdrawn = l.next("attention.resolved").await;
    assert_eq!(withdrawn.subject(), Some(request.id()));
    assert_eq!(
        withdrawn.data().unwrap(),
        json!({"resolution": "dismissed"})
    );
    let (reason, _) = nack(l.respond(request.id(), json!({"option": "allow"})).await);
    assert_eq!(reason, NackReason::Invalid, "nobody waits any more");

    // A future dropped unpolled past its emit withdraws too: here, by a caller's own
    // timeout around it.
    let target = l.target.clone();
    let session = l.session.clone();
    let outer = tokio::time::timeout(
        Duration::from_millis(200),
        target.ask(&session, AttentionRequest::input("Still there?")),
    )
    .await;
    assert!(outer.is_err());
    let request = l.next("attention.requested").await;
    let withdrawn = l.next("attention.resolved").await;
    assert_eq!(withdrawn.subject(), Some(request.id()));
    l.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_cannot_be_answered_are_refused_before_emitting() {
    let path = std::env::temp_dir().join(format!("aep-ask-refused-{}.jsonl", std::process::id()));
    let emitter = Emitter::new("a", "h", aep_async::JsonlSink::open(&path).unwrap());
    let pause_only = ControlTarget::new(["control.pause"], |cmd| async move {
        let _ = cmd.accept();
    });
    let session = pause_only.attach(emitter.session("s"));
    let err = pause_only
        .ask(&session, AttentionRequest::permission("?"))
        .await
        .unwrap_err();
    assert!(matches!(err, AskError::NotAccepted), "{err}");

    let target = ControlTarget::new(["control.attention.respond"], |_cmd| async move {});
    let session = target.attach(emitter.session("s2"));
    for (request, expected) in [
        (
            AttentionRequest::permission("?").respond_via([RespondVia::Oob]),
            RequestError::NotAnswerableByControl,
        ),
        (AttentionRequest::form("?"), RequestError::FormWithoutFields),
        (AttentionRequest::input(""), RequestError::EmptyPrompt),
    ] {
        match target.ask(&session, request).await {
            Err(AskError::Request(e)) => assert_eq!(e, expected),
            other => panic!("{other:?}"),
        }
    }
    emitter.close().await;
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::remove_file(&path).ok();
    assert!(written.is_empty(), "nothing emitted: {written}");
}
