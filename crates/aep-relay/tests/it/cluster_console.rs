//! Mission control on a NATS fleet (issue 35): every relay's console shows the whole
//! fleet, and answers a request whose agent is connected to another relay. Two relays
//! on one real nats-server (skipped, saying why, where there is none; a failure under
//! `AEP_REQUIRE_EXTERNAL=1`), the agent on the SDK, the console's API read as a page
//! reads it (no browser needed).

#![cfg(feature = "nats")]

use std::time::{Duration, Instant};

use aep_async::EmitOptions;
use aep_relay::{NatsCluster, RelayHandle};
use aep_test_support::nats::NatsServer;
use serde_json::{json, Value};

use crate::common::*;

async fn console_relay_on(cluster: &NatsCluster) -> RelayHandle {
    builder()
        .nats(cluster.clone())
        .console(true)
        .start()
        .await
        .expect("a relay of the cluster starts")
}

async fn state(relay: &RelayHandle) -> Value {
    let (status, state) = api_get(relay, "/console/api/state").await;
    assert_eq!(status, 200, "{state}");
    state
}

/// Reads `relay`'s console state until `ok` holds of it, 30 s at most.
async fn state_until(relay: &RelayHandle, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let st = state(relay).await;
        if ok(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "never {what}: {st}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_relays_console_shows_the_fleet_and_answers_an_agent_on_another_relay() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let fleet = NatsCluster::new(server.url())
        .stream(format!("C{}", &id()[..20]))
        .timeout(Duration::from_secs(2));
    let (a, b) = (
        console_relay_on(&fleet).await,
        console_relay_on(&fleet).await,
    );
    // B's console is open before anything happens: what follows reaches it live
    let before = state(&b).await;
    assert_eq!(before["counts"]["sessions"], 0, "{before}");

    // an agent on A: a session, and a question for a person
    let (target, emitter, mut received) = accepting_agent(
        a.url(),
        TOKEN,
        ("fleet-agent", "host-a"),
        &["control.attention.respond", "control.cancel"],
    );
    let s = session();
    let handle = target.attach(emitter.session(&s));
    handle.emit("session.started", json!({})).unwrap();
    let asked = handle
        .emit_with(
            "attention.requested",
            json!({"kind": "permission", "prompt": "Apply the migration?",
                "options": [{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}]}),
            EmitOptions::new().subject("migrate"),
        )
        .unwrap();
    emitter.flush().await;
    // and a session posted over HTTP to A alone
    let other = session();
    assert_eq!(
        post_ndjson(&a, &[ev("session.started", &other, 0)])
            .await
            .status(),
        202
    );

    // B shows both sessions, the request in its inbox, and A's agent in its roster
    let st = state_until(&b, "the fleet on B", |st| {
        let sessions = st["sessions"].as_array().map_or(0, Vec::len);
        let claimed = st["roster"].as_array().is_some_and(|r| {
            r.iter().any(|g| {
                g["agent"] == "fleet-agent"
                    && g["sessions"].as_array().is_some_and(|s| s.len() == 1)
            })
        });
        sessions == 2 && st["inbox_total"] == 1 && claimed
    })
    .await;
    let item = &st["inbox"][0];
    assert_eq!(item["session"], s);
    assert_eq!(item["request"]["id"], asked.id());
    assert_eq!(item["request"]["prompt"], "Apply the migration?");
    assert_eq!(item["request"]["subject"], "migrate");
    let roster = st["roster"].as_array().unwrap();
    let group = roster.iter().find(|g| g["agent"] == "fleet-agent").unwrap();
    assert_eq!(group["sessions"], json!([s]));
    assert!(
        group["accepts"]
            .as_array()
            .unwrap()
            .contains(&json!("control.attention.respond")),
        "{group}"
    );
    let line = about(&st["sessions"], &s).next().unwrap();
    assert_eq!(
        (line["status"].as_str(), line["claimed"].as_bool()),
        (Some("waiting"), Some(true))
    );
    // A's console says the same
    let on_a = state_until(&a, "the fleet on A", |st| st["inbox_total"] == 1).await;
    assert_eq!(on_a["counts"]["sessions"], 2);

    // answered from B's console: routed to A, acked by the agent, the ack back on B
    let answer = json!({"source": asked.source(), "session": s, "request": asked.id(),
        "answer": {"option": "allow"}});
    let (status, outcome) = api_post(&b, "/console/api/respond", &answer).await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["outcome"], "accepted");
    let command = tokio::time::timeout(Duration::from_secs(10), received.recv())
        .await
        .expect("the command reached the agent on A")
        .unwrap();
    assert_eq!(command.event_type(), "control.attention.respond");
    assert_eq!(command.subject(), Some(asked.id()));
    assert_eq!(
        command.data().unwrap()["answer"],
        json!({"option": "allow"})
    );
    // the agent resolves it on A: B's inbox empties
    resolve_answered(&handle, asked.id(), command.id());
    emitter.flush().await;
    state_until(&b, "the request resolved on B", |st| st["inbox_total"] == 0).await;
    emitter.close().await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}
