//! `aep emit` against the embedded relay: files sent unchanged, one event from flags,
//! bad lines and relays that are down or refuse.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::time::Duration;

use common::{
    dead_relay_url, history, jsonl, line, relay, run, run_with, scratch, scripted_relay,
    scripted_relay_by, TOKEN,
};
use serde_json::{json, Value};

fn emit(url: &str, extra: &[&str]) -> common::Run {
    let mut args = vec!["emit", "--url", url, "--token", TOKEN];
    args.extend_from_slice(extra);
    run(&args)
}

fn lines(session: &str, n: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            line(
                &format!("{session}-{i}"),
                "tool.requested",
                session,
                i,
                json!({"tool": {"name": "t"}}),
            )
        })
        .collect()
}

#[test]
fn a_file_goes_unchanged_and_a_summary_comes_back() {
    let relay = relay();
    let dir = scratch();
    let mut all = lines("a", 20);
    all.extend(lines("b", 5));
    let file = jsonl(dir.path(), "in.jsonl", &all);
    let r = emit(relay.url(), &[file.to_str().unwrap()]);
    r.expect(0);
    let summary: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(summary["sent"], 25);
    assert_eq!(summary["delivered"], 25);
    assert_eq!(summary["lost"], 0);
    r.stderr_has("sent 25 events");
    let held: Vec<String> = history(relay.url()).iter().map(|e| e.to_json()).collect();
    assert_eq!(held.len(), 25);
    for l in &all {
        assert!(held.contains(l), "byte for byte: {l}");
    }
}

#[test]
fn stdin_with_a_dash_or_by_default() {
    let relay = relay();
    let text = lines("s", 3).join("\n") + "\n";
    run_with(
        &["emit", "-", "--url", relay.url(), "--token", TOKEN],
        text.as_bytes(),
        Duration::from_secs(60),
    )
    .expect(0);
    assert_eq!(history(relay.url()).len(), 3);
    let more = lines("t", 2).join("\n");
    run_with(
        &["emit", "--url", relay.url(), "--token", TOKEN],
        more.as_bytes(),
        Duration::from_secs(60),
    )
    .expect(0);
    assert_eq!(history(relay.url()).len(), 5);
}

#[test]
fn one_event_from_flags() {
    let relay = relay();
    let r = emit(
        relay.url(),
        &[
            "--type",
            "run.started",
            "--session",
            "s1",
            "--run",
            "r1",
            "--data",
            r#"{"trigger":"user"}"#,
            "--severity",
            "notice",
        ],
    );
    r.expect(0);
    let printed: aep::protocol::Event = r.stdout.trim().parse().unwrap();
    assert_eq!(printed.event_type(), "run.started");
    assert_eq!(
        (printed.session(), printed.seq(), printed.run()),
        (Some("s1"), Some(0), Some("r1"))
    );
    assert!(
        printed.epoch() > 1_600_000_000_000,
        "epoch is Unix milliseconds"
    );
    let held = history(relay.url());
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].id(), printed.id());
    assert_eq!(held[0].data(), Some(json!({"trigger": "user"})));
    // agent-scoped: no session
    emit(
        relay.url(),
        &[
            "--type",
            "agent.presence",
            "--data",
            r#"{"state":"online"}"#,
        ],
    )
    .expect(0);
}

#[test]
fn one_event_usage_errors() {
    let url = dead_relay_url();
    for bad in [
        &["--type", "run.started"][..],                   // no session
        &["--type", "agent.presence", "--session", "s1"], // agent-scoped
        &["--type", "control.pause", "--session", "s1"],  // a command
        &["--type", "Not.A.Type", "--session", "s1"],
        &["--type", "run.started", "--session", "s1", "--data", "[1]"],
        &["--session", "s1"], // no --type
        &["file.jsonl", "--type", "run.started"],
    ] {
        let r = emit(&url, bad);
        r.expect(2);
    }
}

#[test]
fn a_line_that_is_not_an_event_is_exit_6_naming_it() {
    let relay = relay();
    let dir = scratch();
    let mut all = lines("a", 2);
    all.push("{\"half\": ".into());
    all.extend(lines("b", 2));
    let file = jsonl(dir.path(), "torn.jsonl", &all);
    let r = emit(relay.url(), &[file.to_str().unwrap()]);
    r.expect(6);
    r.stderr_has("torn.jsonl:3: not an AEP event");
    // what came before the bad line was delivered, nothing after it
    assert_eq!(history(relay.url()).len(), 2);
    let r = emit(
        relay.url(),
        &[dir.path().join("absent.jsonl").to_str().unwrap()],
    );
    r.expect(6);
    r.stderr_has("absent.jsonl");
}

#[test]
fn a_relay_down_or_refusing_is_exit_5() {
    let dir = scratch();
    let file = jsonl(dir.path(), "in.jsonl", &lines("a", 2));
    let f = file.to_str().unwrap();
    let r = run(&["emit", f, "--url", &dead_relay_url()]);
    r.expect(5);
    r.stderr_has("cannot reach the relay");
    r.stderr_has("check that the relay is running and that --url or AEP_URL is its address");
    let relay = relay();
    let r = run(&["emit", f, "--url", relay.url(), "--token", "wrong"]);
    r.expect(5);
    r.stderr_has("401");
    let r = run(&["emit", f, "--url", relay.url()]);
    r.expect(5);
    r.stderr_has("requires a token");
    // an envelope the relay refuses at ingest (session-scoped without seq): a 4xx
    let mut bad: Value = serde_json::from_str(&lines("c", 1)[0]).unwrap();
    bad.as_object_mut().unwrap().remove("seq");
    let file = jsonl(dir.path(), "refused.jsonl", &[bad.to_string()]);
    let r = emit(relay.url(), &[file.to_str().unwrap()]);
    r.expect(5);
    r.stderr_has("refused 1 events");
}

/// A relay that answers discovery and then never answers an ingest request: the
/// connections are held open, read, and left silent.
fn silent_relay() -> String {
    scripted_relay_by(|request| {
        request.starts_with(b"GET /.well-known/aep").then_some(
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".as_slice(),
        )
    })
}

#[test]
fn a_relay_that_stops_answering_is_exit_5_not_a_hang() {
    let dir = scratch();
    // more than the sink's queue holds, so the waiting path has to wait
    let file = jsonl(dir.path(), "big.jsonl", &lines("s", 12_000));
    let r = run_with(
        &[
            "emit",
            file.to_str().unwrap(),
            "--url",
            &silent_relay(),
            "--give-up-after",
            "1",
        ],
        b"",
        Duration::from_secs(60),
    );
    r.expect(5);
    // a batch given up, or the wait for room given up: whichever the sink saw first
    let err = r.stderr.trim();
    assert!(
        err.starts_with("error: http://127.0.0.1:")
            && (err.contains("gave up on") || err.contains("took nothing for")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let summary: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(summary["delivered"], 0);
    assert_eq!(summary["lost"], summary["sent"]);
}

/// `aep emit` to `url` both ways: the events of `file`, and one event from flags.
fn emit_both_ways(file: &str, url: &str) -> [common::Run; 2] {
    [
        vec!["emit", file],
        vec!["emit", "--type", "agent.heartbeat"],
    ]
    .map(|mut args| {
        args.extend(["--url", url]);
        run(&args)
    })
}

#[test]
fn a_relay_that_fails_discovery_or_never_answers_it_is_exit_5() {
    let dir = scratch();
    let file = jsonl(dir.path(), "in.jsonl", &lines("d", 1));
    let f = file.to_str().unwrap();
    let failing = scripted_relay(Some(
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\noops",
    ));
    for r in emit_both_ways(f, &failing) {
        r.expect(5);
        r.stderr_has("answered 500");
        r.stderr_has("/.well-known/aep");
        r.stderr_has("--url or AEP_URL");
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    }
    // a web server on the wrong port: a success that is no discovery document, where
    // the events would have been taken and delivered nowhere
    let not_a_relay = scripted_relay(Some(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 15\r\nconnection: close\r\n\r\n<html>hi</html>",
    ));
    for r in emit_both_ways(f, &not_a_relay) {
        r.expect(5);
        r.stderr_has("no AEP discovery document");
        assert!(r.stdout.is_empty(), "nothing sent: {}", r.stdout);
    }
    // a discovery document padded past the 64 KiB any relay's fits in is refused
    // before it is held whole (it parses: only the bound refuses it)
    let pad = "x".repeat(70 << 10);
    let document = format!(r#"{{"aep":["0.1"],"endpoints":{{"events":"/events"}},"pad":"{pad}"}}"#);
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{document}",
        document.len()
    );
    let huge = scripted_relay(Some(Box::leak(answer.into_bytes().into_boxed_slice())));
    for r in emit_both_ways(f, &huge) {
        r.expect(5);
        r.stderr_has("no AEP discovery document");
        r.stderr_has("a body over 65536 bytes");
        assert!(r.stdout.is_empty(), "nothing sent: {}", r.stdout);
    }
    // accepted and never answered: the probe's own timeout ends it, not the deadline
    let r = run_with(
        &["emit", f, "--url", &scripted_relay(None)],
        b"",
        Duration::from_secs(40),
    );
    r.expect(5);
    r.stderr_has("cannot reach the relay");
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "nothing sent: {}", r.stdout);
}
