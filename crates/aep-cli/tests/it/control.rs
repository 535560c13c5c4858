//! `aep send`, `aep respond`, `aep cancel` and `aep roster` against the embedded relay
//! and an agent holding a session: the exit codes 0, 3, 4, 5 and 2.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::time::{Duration, Instant};

use aep::protocol::{Capture, Event};
use aep::testing::ThreadRelay;
use common::{dead_relay_url, relay, relay_with, run, Agent, TOKEN};

fn control(url: &str, args: &[&str]) -> common::Run {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--url", url, "--token", TOKEN]);
    run(&all)
}

/// [`control`], which must exit `code` well before the default ack window (10 s) would
/// have run out: what a refusal or the test's short windows decide. (Not three
/// seconds: starting the process alone can take one on a busy machine.)
fn control_soon(url: &str, args: &[&str], code: i32) -> common::Run {
    let started = Instant::now();
    let r = control(url, args);
    r.expect(code);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}");
    r
}

/// A relay and an agent holding `session` on it (the agent drops first).
fn relay_with_agent(session: &str) -> (ThreadRelay, Agent) {
    let relay = relay();
    let agent = Agent::start(relay.url(), session);
    (relay, agent)
}

#[test]
fn an_accepted_command_prints_its_ack() {
    let (relay, agent) = relay_with_agent("s1");
    let r = control(
        relay.url(),
        &["send", "control.pause", "--session", "s1", "--run", "r1"],
    );
    r.expect(0);
    let ack: Event = r.stdout.trim().parse().unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    let commands = agent.commands();
    assert_eq!(commands.len(), 1);
    assert_eq!(ack.cause(), Some(commands[0].id()));
    assert_eq!(commands[0].run(), Some("r1"));
    r.stderr_has("accepted");
    // the short form names the same type
    control(
        relay.url(),
        &[
            "send",
            "pause",
            "--session",
            "s1",
            "--data",
            r#"{"why":"x"}"#,
        ],
    )
    .expect(0);
    assert_eq!(agent.commands()[1].event_type(), "control.pause");
    assert_eq!(
        agent.commands()[1].data(),
        Some(serde_json::json!({"why": "x"}))
    );
}

#[test]
fn a_rejection_is_exit_3_with_the_reason() {
    let (relay, _agent) = relay_with_agent("s1");
    let r = control(relay.url(), &["send", "control.resume", "--session", "s1"]);
    r.expect(3);
    r.stderr_has("nacked by the target: refused (not paused)");
    let rejected: Event = r.stdout.trim().parse().unwrap();
    assert_eq!(rejected.event_type(), "control.rejected");
}

#[test]
fn no_route_is_exit_3_within_a_second_or_two() {
    let relay = relay();
    let r = control_soon(
        relay.url(),
        &["send", "control.pause", "--session", "nobody"],
        3,
    );
    r.stderr_has("no-route");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn silence_past_every_window_is_exit_4() {
    let (relay, _agent) = relay_with_agent("s1");
    let r = control_soon(
        relay.url(),
        &[
            "send",
            "control.x.hang",
            "--session",
            "s1",
            "--ack-window",
            "300",
            "--retries",
            "1",
        ],
        4,
    );
    r.stderr_has("no ack");
}

#[test]
fn respond_carries_the_answer_and_names_the_request() {
    let (relay, agent) = relay_with_agent("s1");
    control(relay.url(), &["respond", "s1", "REQ1", "--option", "yes"]).expect(0);
    control(
        relay.url(),
        &["respond", "s1", "REQ2", "--text", "go ahead"],
    )
    .expect(0);
    control(
        relay.url(),
        &["respond", "s1", "REQ3", "--values", r#"{"n": 3}"#],
    )
    .expect(0);
    let c = agent.commands();
    assert_eq!(c.len(), 3);
    assert!(c
        .iter()
        .all(|e| e.event_type() == "control.attention.respond"));
    assert_eq!((c[0].subject(), c[0].cause()), (Some("REQ1"), Some("REQ1")));
    assert_eq!(
        c[0].data(),
        Some(serde_json::json!({"answer": {"option": "yes"}}))
    );
    assert_eq!(c[0].capture(), Capture::Metadata);
    assert_eq!(
        c[1].data(),
        Some(serde_json::json!({"answer": {"text": "go ahead"}}))
    );
    assert_eq!(c[1].capture(), Capture::Redacted);
    assert_eq!(
        c[2].data(),
        Some(serde_json::json!({"answer": {"values": {"n": 3}}}))
    );
}

#[test]
fn cancel_names_its_scope() {
    let (relay, agent) = relay_with_agent("s1");
    control(
        relay.url(),
        &["cancel", "s1", "--run", "r1", "--reason", "wrong branch"],
    )
    .expect(0);
    control(relay.url(), &["cancel", "s1"]).expect(0);
    let c = agent.commands();
    assert_eq!(c[0].run(), Some("r1"));
    assert_eq!(
        c[0].data(),
        Some(serde_json::json!({"scope": "run", "reason": "wrong branch"}))
    );
    assert_eq!(c[0].capture(), Capture::Redacted);
    assert_eq!(c[1].run(), None);
    assert_eq!(c[1].data(), Some(serde_json::json!({"scope": "session"})));
}

#[test]
fn usage_errors_are_exit_2() {
    let url = dead_relay_url(); // nothing is contacted
    for bad in [
        &["respond", "s1", "REQ"][..],
        &["respond", "s1", "REQ", "--option", "a", "--text", "b"],
        &["respond", "s1", "REQ", "--values", "[1]"],
        &["send", "Not A Type", "--session", "s1"],
        &["send", "control.pause"],
        &["send", "control.pause", "--session", "s1", "--data", "{"],
        &[
            "send",
            "control.pause",
            "--session",
            "s1",
            "--ack-window",
            "soon",
        ],
        &["cancel"],
    ] {
        let r = control(&url, bad);
        r.expect(2);
    }
}

#[test]
fn a_relay_down_or_refusing_is_exit_5_and_a_watch_only_relay_nacks() {
    // `aep send pause --session s1 --url URL EXTRA`
    let pause = |url: &str, extra: &[&str]| {
        let mut args = vec!["send", "pause", "--session", "s1", "--url", url];
        args.extend_from_slice(extra);
        run(&args)
    };
    let r = pause(&dead_relay_url(), &[]);
    r.expect(5);
    r.stderr_has("cannot reach the relay at http://127.0.0.1:");
    r.stderr_has("--url or AEP_URL is its address");
    let relay = relay();
    let r = pause(relay.url(), &["--token", "nope"]);
    r.expect(5);
    r.stderr_has("refused the token");
    r.stderr_lacks("nope");
    // without a token of its own a relay is watch-only: control is refused in-band
    let open = relay_with(aep::relay::Relay::builder());
    let r = pause(open.url(), &[]);
    r.expect(3);
    r.stderr_has("unauthorized");
}

#[test]
fn roster_lists_the_live_claims() {
    let (relay, _agent) = relay_with_agent("s-held");
    let r = control(relay.url(), &["roster"]);
    r.expect(0);
    assert!(r.stdout.starts_with("SESSION"), "{}", r.stdout);
    assert!(
        r.stdout.contains("s-held") && r.stdout.contains("test-agent"),
        "{}",
        r.stdout
    );
    r.stdout_has("control.pause");
    let r = control(relay.url(), &["roster", "--json"]);
    r.expect(0);
    let list: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(list[0]["session"], "s-held");
    let r = run(&["roster", "--url", &dead_relay_url()]);
    r.expect(5);
}
