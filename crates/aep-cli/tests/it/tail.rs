//! `aep tail` against the embedded relay: history, resume state, filters, transports,
//! and the relay or the input being wrong.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::time::Duration;

use common::{
    aep, dead_relay_url, events, finish, relay, relay_with, run, run_with, scratch, scripted_relay,
    seed, spawn, terminate, TOKEN,
};

fn tail(url: &str, extra: &[&str]) -> common::Run {
    let mut args = vec!["tail", "--url", url, "--token", TOKEN, "--format", "json"];
    args.extend_from_slice(extra);
    run(&args)
}

/// `aep tail --history` at `url` with a state file that holds `state`.
fn history_with_state(url: &str, state: &str) -> common::Run {
    let dir = scratch();
    let path = dir.path().join("state.json");
    std::fs::write(&path, state).unwrap();
    tail(url, &["--history", "--state", path.to_str().unwrap()])
}

#[test]
fn history_from_all_prints_every_event_in_order_per_session() {
    let relay = relay();
    let a = seed(relay.url(), "s1", 5);
    let b = seed(relay.url(), "s2", 3);
    let r = tail(relay.url(), &["--from", "all", "--history", "--no-resume"]);
    r.expect(0);
    let got = events(&r.stdout);
    assert_eq!(got.len(), 8);
    let ids = |s: &str| -> Vec<String> {
        got.iter()
            .filter(|e| e.session() == Some(s))
            .map(|e| e.id().to_owned())
            .collect()
    };
    assert_eq!(ids("s1"), a);
    assert_eq!(ids("s2"), b);
}

#[test]
fn the_state_file_resumes_where_the_last_run_stopped() {
    let relay = relay();
    let dir = scratch();
    let state = dir.path().join("nested/state.json");
    let state = state.to_str().unwrap();
    seed(relay.url(), "s1", 3);
    let r = tail(
        relay.url(),
        &["--from", "all", "--history", "--state", state],
    );
    r.expect(0);
    assert_eq!(events(&r.stdout).len(), 3);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    assert_eq!(
        saved,
        serde_json::json!([{"session": "s1", "epoch": 0, "seq": 2}])
    );

    // resuming replays only what lies after the saved positions: s1 has nothing new,
    // and s9 is in no saved position, so a history pass without `--from` shows nothing
    let more = seed(relay.url(), "s9", 2);
    let r = tail(relay.url(), &["--history", "--state", state]);
    r.expect(0);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    // --from all replaces the state for this run
    let r = tail(
        relay.url(),
        &["--from", "all", "--history", "--state", state],
    );
    r.expect(0);
    let got = events(&r.stdout);
    assert_eq!(got.len(), 5);
    assert!(more.iter().all(|id| got.iter().any(|e| e.id() == id)));
    let saved: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    assert_eq!(saved.len(), 2);
}

#[test]
fn filters_from_flags_and_json() {
    let relay = relay();
    seed(relay.url(), "s1", 3);
    seed(relay.url(), "s2", 2);
    let base = ["--from", "all", "--history", "--no-resume"];
    let r = tail(
        relay.url(),
        &[&base[..], &["--type", "session.started"]].concat(),
    );
    r.expect(0);
    assert_eq!(events(&r.stdout).len(), 2);
    let r = tail(
        relay.url(),
        &[&base[..], &["--session", "s2", "--type", "tool.*"]].concat(),
    );
    r.expect(0);
    let got = events(&r.stdout);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].event_type(), "tool.requested");
    let r = tail(
        relay.url(),
        &[
            &base[..],
            &["--filter", r#"{"session":["s1"]}"#, "--severity", "info"],
        ]
        .concat(),
    );
    r.expect(0);
    assert_eq!(events(&r.stdout).len(), 3);
    let r = tail(
        relay.url(),
        &[&base[..], &["--severity", "warning"]].concat(),
    );
    r.expect(0);
    assert!(r.stdout.is_empty());
}

#[test]
fn a_bad_filter_is_a_usage_error_before_anything_is_sent() {
    let url = dead_relay_url(); // nothing is contacted
    for bad in [
        &["--filter", "not json"][..],
        &["--filter", "[1]"],
        &["--filter", r#"{"time":"x"}"#],
        &["--filter", r#"{"session":"s*"}"#],
        &["--type", "a", "--filter", r#"{"type":"b"}"#],
        &["--severity", "loud"],
        &["--history", "--transport", "ws"],
        &["--from", "yesterday"],
    ] {
        let r = tail(&url, bad);
        r.expect(2);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    let r = tail(&url, &["--filter", r#"{"time":"x"}"#]);
    r.stderr_has("time");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn an_unreachable_relay_or_a_refused_token_is_exit_5() {
    let r = run(&["tail", "--url", &dead_relay_url(), "--no-resume"]);
    r.expect(5);
    r.stderr_has("cannot subscribe at http://127.0.0.1:");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    let relay = relay();
    for transport in ["sse", "ws"] {
        let r = run(&[
            "tail",
            "--url",
            relay.url(),
            "--token",
            "wrong",
            "--no-resume",
            "--transport",
            transport,
        ]);
        r.expect(5);
        assert!(r.stderr.contains("401"), "{transport}: {}", r.stderr);
        r.stderr_lacks("wrong");
    }
}

#[test]
fn a_relay_that_fails_or_never_answers_the_subscription_is_exit_5() {
    let failing = scripted_relay(Some(
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\noops",
    ));
    let r = run(&["tail", "--url", &failing, "--no-resume", "--history"]);
    r.expect(5);
    r.stderr_has("500");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    // accepted and never answered: the subscription's connect timeout (30 s) ends it
    let r = run_with(
        &["tail", "--url", &scripted_relay(None), "--no-resume"],
        b"",
        Duration::from_secs(60),
    );
    r.expect(5);
    r.stderr_has("cannot subscribe at http://127.0.0.1:");
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

#[test]
fn an_unreadable_state_file_is_exit_6() {
    let relay = relay();
    let r = history_with_state(relay.url(), "{not json");
    r.expect(6);
    r.stderr_has("state.json");
    r.stderr_has("--no-resume");
}

#[test]
fn replay_exhausted_is_a_warning() {
    let relay = relay_with(aep::relay::Relay::builder().token(TOKEN).buffer(3));
    seed(relay.url(), "s1", 10);
    let r = history_with_state(relay.url(), r#"[{"session":"s1","epoch":0,"seq":0}]"#);
    r.expect(0);
    assert_eq!(events(&r.stdout).len(), 3);
    r.stderr_has("warning: replay-exhausted");
}

/// A session the relay evicted whole since the last run: the resume is told of the gap
/// (`replay-exhausted`), not answered with `replay-complete` alone.
#[test]
fn a_session_evicted_since_the_last_run_is_a_replay_exhausted_warning() {
    let relay = relay_with(aep::relay::Relay::builder().token(TOKEN).max_sessions(1));
    seed(relay.url(), "gone", 5);
    seed(relay.url(), "kept", 2); // "gone" is evicted to make room
    let r = history_with_state(relay.url(), r#"[{"session":"gone","epoch":0,"seq":1}]"#);
    r.expect(0);
    r.stderr_has("warning: replay-exhausted")
        .stderr_has("session gone before (0, 5)");
}

#[test]
fn live_over_websocket_until_sigterm_saves_the_state() {
    let relay = relay();
    let dir = scratch();
    let state = dir.path().join("state.json");
    let mut cmd = aep();
    cmd.args([
        "tail",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
        "--transport",
        "ws",
        "--format",
        "text",
    ])
    .arg("--state")
    .arg(&state);
    let mut child = spawn(cmd);
    let lines = common::line_channel(child.stdout.take().unwrap());
    // the subscription is live once the relay has a subscriber: emit until one arrives
    let mut seen = None;
    for _ in 0..50 {
        seed(relay.url(), "live", 1);
        if let Ok(line) = lines.recv_timeout(Duration::from_millis(200)) {
            seen = Some(line);
            break;
        }
    }
    let line = seen.expect("a live event within 10 s");
    assert!(
        line.contains("live") && line.contains("session.started"),
        "{line}"
    );
    terminate(&child);
    let r = finish(child, b"", Duration::from_secs(20));
    r.expect(0);
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.contains("\"live\""), "{saved}");
}
