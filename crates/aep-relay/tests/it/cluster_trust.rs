//! The fleet's stream is a trust boundary (issue 31 points 3 and 5): whatever a NATS
//! client puts on the stream's subjects reaches a reader only if HTTP ingest would have
//! accepted and stored it; a server with authorization keeps everyone but the fleet's
//! relays off the stream; a `user:password@` in `--nats` authenticates, and is never
//! written to a log line, at `trace` either.

#![cfg(feature = "nats")]
use crate::common;

use std::time::Duration;

use aep_relay::{NatsCluster, RelayHandle};
use aep_test_support::nats::NatsServer;
use aep_test_support::process::RelayProcess;
use async_nats::jetstream;
use common::*;
use serde_json::{json, Value};

fn stream_name() -> String {
    format!("T{}", &id()[..20])
}

/// `/healthz`'s count of the stream's messages refused, by kind.
async fn stream_refused(relay: &RelayHandle) -> Value {
    get_json(relay.url(), "/healthz").await["stream_refused"].clone()
}

/// Messages published straight to the stream (JetStream publishes, stored) or to the
/// redelivery subject (core publishes), each a case HTTP ingest refuses or would not
/// store, never reach a live reader or a replay, on this relay or one started later;
/// each is counted by kind in `/healthz`. A valid event published last is delivered,
/// so the reader was listening.
#[tokio::test]
async fn a_poisoned_stream_delivers_nothing_invalid() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let stream = stream_name();
    let fleet = NatsCluster::new(server.url())
        .stream(stream.clone())
        .timeout(Duration::from_secs(2));
    let a = relay_on(&fleet).await;
    let mut live = Sse::open(&a, "").await;
    let s = session();
    let other = session();
    let subject = format!("{stream}.s.{s}");
    let command = json!({
        "aep": "0.1", "id": id(), "type": "control.pause", "time": "2026-07-03T10:15:04.221Z",
        "source": "aep://t/console", "agent": "console", "session": s,
    });
    let mut with_seq = command.clone();
    with_seq["seq"] = json!(1);
    let mut invalid = ev("progress.status", &s, 1);
    invalid["time"] = json!("yesterday");
    let poison: Vec<(String, String)> = vec![
        (subject.clone(), "garbage, not JSON".into()),
        (subject.clone(), with_seq.to_string()),
        (subject.clone(), invalid.to_string()),
        (subject.clone(), command.to_string()),
        // an event of `other` stored under `s`
        (
            subject.clone(),
            ev("progress.status", &other, 1).to_string(),
        ),
    ];
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = jetstream::new(client.clone());
    for (subject, payload) in &poison {
        js.publish(subject.clone(), payload.clone().into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    // the redeliveries' subject: garbage, and `s`'s event announced as `other`'s
    for (subject, payload) in [
        (format!("{stream}.d.{s}"), "garbage".to_owned()),
        (
            format!("{stream}.d.{other}"),
            ev("progress.status", &s, 2).to_string(),
        ),
    ] {
        client.publish(subject, payload.into()).await.unwrap();
    }
    client.flush().await.unwrap();
    let valid = ev("progress.status", &s, 0);
    js.publish(subject.clone(), valid.to_string().into())
        .await
        .unwrap()
        .await
        .unwrap();

    let first = live.next_event().await.expect("the valid event, live");
    assert_eq!(first.data.as_deref(), Some(valid.to_string().as_str()));
    let refused = stream_refused(&a).await;
    for (kind, at_least) in [
        ("not-json", 2),
        ("invalid-event", 2),
        ("not-stored", 1),
        ("wrong-subject", 2),
    ] {
        assert!(
            refused[kind].as_u64().unwrap() >= at_least,
            "{kind}: {refused}"
        );
    }
    // replays, here and on a relay that joins now, serve the valid event alone
    let b = relay_on(&fleet).await;
    for relay in [&a, &b] {
        assert_eq!(data(&replay(relay, "from=all").await), [valid.to_string()]);
        assert_eq!(data(&replay(relay, &from(&s)).await), [valid.to_string()]);
        assert!(data(&replay(relay, &from(&other)).await).is_empty());
    }
    assert!(stream_refused(&b).await["invalid-event"].as_u64().unwrap() >= 2);
    let more = tokio::time::timeout(Duration::from_millis(300), live.next_event()).await;
    assert!(!matches!(more, Ok(Some(_))), "delivered: {more:?}");
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

const RELAY_PASSWORD: &str = "rel4y-s3cret";

/// The README's authorization, as a test server runs it: the fleet's account holds the
/// relays' user and nobody else, every other client is in an account of its own.
fn authorization() -> String {
    format!(
        r#"
accounts: {{
  AEP_FLEET: {{
    jetstream: enabled
    users: [ {{ user: "aep-relay", password: "{RELAY_PASSWORD}" }} ]
  }}
  APPS: {{
    users: [ {{ user: "agent", password: "agent-pw" }} ]
  }}
}}
"#
    )
}

fn with_credentials(server: &NatsServer, userinfo: &str) -> String {
    format!("nats://{userinfo}@127.0.0.1:{}", server.port())
}

/// A fleet on a server with authorization: the relays authenticate with the
/// `user:password@` of their URL (handed to the client apart from it); without it they
/// are refused, naming why; a client of another account cannot put anything on the
/// stream, which the relays never see.
#[tokio::test]
async fn a_fleet_on_a_server_with_authorization_keeps_others_off_its_stream() {
    let Some(server) = NatsServer::start_with_config_or_skip(&authorization()) else {
        return;
    };
    let stream = stream_name();
    let fleet = NatsCluster::new(with_credentials(
        &server,
        &format!("aep-relay:{RELAY_PASSWORD}"),
    ))
    .stream(stream.clone())
    .timeout(Duration::from_secs(2));
    let (a, b) = (relay_on(&fleet).await, relay_on(&fleet).await);

    let anonymous = NatsCluster::new(server.url()).stream(stream.clone());
    let e = builder()
        .nats(anonymous)
        .start()
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("authorization"), "{e}");
    let wrong =
        NatsCluster::new(with_credentials(&server, "aep-relay:guess")).stream(stream.clone());
    let e = builder().nats(wrong).start().await.unwrap_err().to_string();
    assert!(!e.contains("guess"), "the password in an error: {e}");

    let s = session();
    let mut live = Sse::open(&b, "").await;
    let event = ev("session.started", &s, 0);
    assert_eq!(post_json(&a, &event).await.status(), 202);
    assert_eq!(
        live.next_event().await.unwrap().data.as_deref(),
        Some(event.to_string().as_str())
    );

    // another account's client: its publishes go nowhere near the fleet's stream
    let agent =
        async_nats::ConnectOptions::with_user_and_password("agent".into(), "agent-pw".into())
            .connect(server.url())
            .await
            .unwrap();
    let poison = ev("progress.status", &s, 1).to_string();
    agent
        .publish(format!("{stream}.s.{s}"), poison.clone().into())
        .await
        .unwrap();
    agent
        .publish(format!("{stream}.d.{s}"), poison.clone().into())
        .await
        .unwrap();
    agent.flush().await.unwrap();
    let stored = jetstream::new(agent.clone())
        .publish(format!("{stream}.s.{s}"), poison.into())
        .await;
    let stored = match stored {
        Ok(ack) => ack.await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(
        stored.is_err(),
        "another account stored into the fleet's stream"
    );

    let relay_client = async_nats::ConnectOptions::with_user_and_password(
        "aep-relay".into(),
        RELAY_PASSWORD.into(),
    )
    .connect(server.url())
    .await
    .unwrap();
    let mut held = jetstream::new(relay_client)
        .get_stream(stream.as_str())
        .await
        .unwrap();
    assert_eq!(
        held.info().await.unwrap().state.messages,
        1,
        "only the relay's event"
    );
    assert_eq!(data(&replay(&b, "from=all").await), [event.to_string()]);
    let more = tokio::time::timeout(Duration::from_millis(300), live.next_event()).await;
    assert!(!matches!(more, Ok(Some(_))), "delivered: {more:?}");
    let refused = stream_refused(&b).await;
    assert!(
        refused.as_object().unwrap().values().all(|n| n == 0),
        "{refused}"
    );
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// `aep-relay --nats nats://user:password@...` at `RUST_LOG=trace`: it authenticates
/// against a server that requires that user, serves, and not one line of its log holds
/// the password (or the URL that carried it).
#[tokio::test]
async fn credentials_in_the_url_never_reach_a_log_line_at_trace() {
    let Some(server) = NatsServer::start_with_config_or_skip(&authorization()) else {
        return;
    };
    let url = with_credentials(&server, &format!("aep-relay:{RELAY_PASSWORD}"));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aep-relay"));
    command
        .args([
            "--port",
            "0",
            "--host",
            "127.0.0.1",
            "--token",
            TOKEN,
            "--nats",
            &url,
        ])
        .args(["--nats-stream", &stream_name()])
        .env("RUST_LOG", "trace")
        .env_remove("AEP_NATS_URL");
    let relay = RelayProcess::spawn(command).unwrap();
    let s = session();
    let mut live = Sse::open_url(relay.url(), "", &[]).await;
    let event = ev("session.started", &s, 0);
    let posted = post(relay.url(), "0.1", "application/json", event.to_string())
        .await
        .unwrap();
    assert_eq!(posted.status(), 202);
    assert_eq!(
        live.next_event().await.unwrap().data.as_deref(),
        Some(event.to_string().as_str())
    );
    let log = relay.log();
    assert!(
        log.contains("write operation: CONNECT"),
        "not at trace: {log}"
    );
    for line in log.lines() {
        assert!(!line.contains(RELAY_PASSWORD), "the password in: {line}");
    }
}
