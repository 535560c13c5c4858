//! `aep project` and `aep timeline`: from a file, from stdin and from a relay's history.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{
    dead_relay_url, event_ids, fixtures, jsonl, line, relay, run, run_with, scratch, scratch_jsonl,
    seed, Run, TOKEN,
};
use serde_json::{json, Value};

/// `aep timeline SESSION --file FILE EXTRA`, which must succeed.
fn timeline_of(session: &str, file: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["timeline", session, "--file", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let r = run(&args);
    r.expect(0);
    r
}

/// `aep ARGS --url URL --token TOKEN --format json`, which must succeed.
fn json_from_relay(url: &str, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--url", url, "--token", TOKEN, "--format", "json"]);
    let r = run(&all);
    r.expect(0);
    r
}

/// An event line of session `s`, with `cause` where one is given.
fn caused(id: &str, ty: &str, seq: u64, data: Value, cause: Option<&str>) -> String {
    let mut e: Value = serde_json::from_str(&line(id, ty, "s", seq, data)).unwrap();
    if let Some(cause) = cause {
        e["cause"] = json!(cause);
    }
    e.to_string()
}

#[test]
fn project_prints_the_sdks_projection_of_the_corpus() {
    let corpus = fixtures().join("projection");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus.join("expected.json")).unwrap())
            .unwrap();
    let file = corpus.join("events.jsonl");
    let r = run(&["project", file.to_str().unwrap(), "--format", "json"]);
    r.expect(0);
    let got: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(got, expected["state"]);
    // the same from stdin
    let bytes = std::fs::read(&file).unwrap();
    let r = run_with(
        &["project", "-", "--format", "json"],
        &bytes,
        Duration::from_secs(30),
    );
    r.expect(0);
    assert_eq!(
        serde_json::from_str::<Value>(&r.stdout).unwrap(),
        expected["state"]
    );
    // tables for people
    let r = run(&["project", file.to_str().unwrap(), "--format", "text"]);
    r.expect(0);
    for header in ["SESSION", "RUN", "PENDING REQUEST", "VIOLATION"] {
        assert!(r.stdout.contains(header), "{header}: {}", r.stdout);
    }
    assert!(
        r.stdout.contains("ev-c-04"),
        "the pending request: {}",
        r.stdout
    );
    // the supervisor's members: the status, the request's question, in tables and JSON
    for shown in ["STATUS", "ended", "Deployment details", "LAST"] {
        assert!(r.stdout.contains(shown), "{shown}: {}", r.stdout);
    }
    let r = run(&[
        "project",
        file.to_str().unwrap(),
        "--format",
        "json",
        "--detail",
    ]);
    r.expect(0);
    let got: Value = serde_json::from_str(&r.stdout).unwrap();
    let beta = &got["sessions"][1];
    assert_eq!(beta["session"], "s-beta");
    assert_eq!(beta["status"], "ended");
    assert_eq!(beta["pending"][0]["prompt"], "Deployment details");
    assert_eq!(beta["pending"][0]["fields"][0]["choices"][1]["id"], "prod");
    assert_eq!(beta["last_activity"]["type"], "session.ended");
    assert!(beta["tools"].is_array() && beta["claim"].is_null());
}

#[test]
fn project_reads_a_relays_history_and_filters() {
    let relay = relay();
    seed(relay.url(), "p1", 3);
    seed(relay.url(), "p2", 2);
    let r = json_from_relay(relay.url(), &["project"]);
    let state: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(state["sessions"].as_array().unwrap().len(), 2);
    let r = json_from_relay(relay.url(), &["project", "--session", "p2"]);
    let state: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(state["sessions"][0]["session"], "p2");
    assert_eq!(state["sessions"].as_array().unwrap().len(), 1);
    run(&["project", "--url", &dead_relay_url(), "--format", "json"]).expect(5);
    run(&["project", "--url", relay.url(), "--token", "bad"]).expect(5);
}

#[test]
fn project_and_timeline_bad_input() {
    let (dir, file) = scratch_jsonl(
        "bad.jsonl",
        &[
            line("A", "session.started", "s", 0, json!({})),
            "nope".into(),
        ],
    );
    let r = run(&["project", file.to_str().unwrap()]);
    r.expect(6);
    r.stderr_has("bad.jsonl:2");
    let r = run(&["timeline", "s", "--file", file.to_str().unwrap()]);
    r.expect(6);
    run(&["project", dir.path().join("none.jsonl").to_str().unwrap()]).expect(6);
    run(&[
        "project",
        "--filter",
        r#"{"data":1}"#,
        file.to_str().unwrap(),
    ])
    .expect(2);
    run(&["timeline"]).expect(2);
}

#[test]
fn timeline_orders_by_position_and_dedupes() {
    let dir = scratch();
    let lines = vec![
        line("C", "run.finished", "s", 2, json!({})),
        line("A", "session.started", "s", 0, json!({})),
        line("B", "run.started", "s", 1, json!({})),
        line("B", "run.started", "s", 1, json!({})), // a redelivery
        line("X", "session.started", "other", 0, json!({})),
    ];
    let file = jsonl(dir.path(), "t.jsonl", &lines);
    let r = timeline_of("s", &file, &["--format", "json"]);
    let ids: Vec<String> = event_ids(&r.stdout);
    assert_eq!(ids, ["A", "B", "C"]);
    let r = timeline_of("s", &file, &["--format", "text"]);
    assert_eq!(r.stdout.lines().count(), 3);
    assert!(
        r.stdout.lines().next().unwrap().contains("session.started"),
        "{}",
        r.stdout
    );
    let r = run(&["timeline", "nobody", "--file", file.to_str().unwrap()]);
    r.expect(0);
    r.stderr_has("no events of session nobody");
}

#[test]
fn timeline_dag_is_the_cause_tree() {
    let golden = fixtures().join("conformance/golden/golden.jsonl");
    let r = timeline_of("s_8f2c", &golden, &["--dag", "--format", "text"]);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 24);
    assert!(lines[0].contains("session.started"));
    assert!(
        lines[1].starts_with("├─ ") && lines[1].contains("run.started"),
        "{}",
        r.stdout
    );
    assert!(
        lines[2].starts_with("│  └─ ") && lines[2].contains("tool.requested"),
        "{}",
        r.stdout
    );
    let r = timeline_of("s_8f2c", &golden, &["--dag", "--format", "json"]);
    let nodes: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(nodes.len(), 24, "every event once");
    assert_eq!(
        (nodes[0]["depth"].as_u64(), &nodes[0]["parent"]),
        (Some(0), &Value::Null)
    );
    assert_eq!(nodes[0]["event"]["type"], "session.started");
    assert_eq!(nodes[1]["depth"], 1);
    assert_eq!(nodes[1]["parent"], nodes[0]["event"]["id"]);
    assert_eq!(nodes[1]["event"]["type"], "run.started");
}

#[test]
fn timeline_dag_survives_cycles_and_deep_chains() {
    let dir = scratch();
    let mut lines = Vec::new();
    // a two-event cycle: neither is a root
    let tool = || json!({"tool": {"name": "t"}});
    lines.push(caused("A", "tool.requested", 0, tool(), Some("B")));
    lines.push(caused("B", "tool.completed", 1, tool(), Some("A")));
    // a chain 5,000 deep
    for i in 0..5000u64 {
        let cause = (i > 0).then(|| format!("c{}", i - 1));
        let id = format!("c{i}");
        lines.push(caused(
            &id,
            "run.step.started",
            2 + i,
            json!({}),
            cause.as_deref(),
        ));
    }
    let file = jsonl(dir.path(), "deep.jsonl", &lines);
    let r = timeline_of("s", &file, &["--dag", "--format", "text"]);
    assert_eq!(r.stdout.lines().count(), 5002);
    let r = timeline_of("s", &file, &["--dag", "--format", "json"]);
    let deepest = r
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["depth"]
                .as_u64()
                .unwrap()
        })
        .max();
    assert_eq!(deepest, Some(4999), "the true depth, past what text draws");
}

#[test]
fn timeline_reads_a_relays_history() {
    let relay = relay();
    let ids = seed(relay.url(), "tl", 4);
    seed(relay.url(), "other", 2);
    let r = json_from_relay(relay.url(), &["timeline", "tl"]);
    let got: Vec<String> = event_ids(&r.stdout);
    assert_eq!(got, ids);
    run(&["timeline", "tl", "--url", &dead_relay_url()]).expect(5);
}
