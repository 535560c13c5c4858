//! `aep project` and `aep timeline`: from a file, from stdin and from a relay's history.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

mod common;

use std::time::Duration;

use common::{
    dead_relay_url, events, fixtures, jsonl, line, relay, run, run_with, scratch, seed, TOKEN,
};
use serde_json::{json, Value};

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
}

#[test]
fn project_reads_a_relays_history_and_filters() {
    let relay = relay();
    seed(relay.url(), "p1", 3);
    seed(relay.url(), "p2", 2);
    let r = run(&[
        "project",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
        "--format",
        "json",
    ]);
    r.expect(0);
    let state: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(state["sessions"].as_array().unwrap().len(), 2);
    let r = run(&[
        "project",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
        "--format",
        "json",
        "--session",
        "p2",
    ]);
    r.expect(0);
    let state: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(state["sessions"][0]["session"], "p2");
    assert_eq!(state["sessions"].as_array().unwrap().len(), 1);
    run(&["project", "--url", &dead_relay_url(), "--format", "json"]).expect(5);
    run(&["project", "--url", relay.url(), "--token", "bad"]).expect(5);
}

#[test]
fn project_and_timeline_bad_input() {
    let dir = scratch();
    let file = jsonl(
        dir.path(),
        "bad.jsonl",
        &[
            line("A", "session.started", "s", 0, json!({})),
            "nope".into(),
        ],
    );
    let r = run(&["project", file.to_str().unwrap()]);
    r.expect(6);
    assert!(r.stderr.contains("bad.jsonl:2"), "{}", r.stderr);
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
    let r = run(&[
        "timeline",
        "s",
        "--file",
        file.to_str().unwrap(),
        "--format",
        "json",
    ]);
    r.expect(0);
    let ids: Vec<String> = events(&r.stdout)
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(ids, ["A", "B", "C"]);
    let r = run(&[
        "timeline",
        "s",
        "--file",
        file.to_str().unwrap(),
        "--format",
        "text",
    ]);
    r.expect(0);
    assert_eq!(r.stdout.lines().count(), 3);
    assert!(
        r.stdout.lines().next().unwrap().contains("session.started"),
        "{}",
        r.stdout
    );
    let r = run(&["timeline", "nobody", "--file", file.to_str().unwrap()]);
    r.expect(0);
    assert!(
        r.stderr.contains("no events of session nobody"),
        "{}",
        r.stderr
    );
}

#[test]
fn timeline_dag_is_the_cause_tree() {
    let golden = fixtures().join("conformance/golden/golden.jsonl");
    let g = golden.to_str().unwrap();
    let r = run(&[
        "timeline", "s_8f2c", "--file", g, "--dag", "--format", "text",
    ]);
    r.expect(0);
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
    let r = run(&[
        "timeline", "s_8f2c", "--file", g, "--dag", "--format", "json",
    ]);
    r.expect(0);
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
    let mut a: Value = serde_json::from_str(&line(
        "A",
        "tool.requested",
        "s",
        0,
        json!({"tool": {"name": "t"}}),
    ))
    .unwrap();
    a["cause"] = json!("B");
    let mut b: Value = serde_json::from_str(&line(
        "B",
        "tool.completed",
        "s",
        1,
        json!({"tool": {"name": "t"}}),
    ))
    .unwrap();
    b["cause"] = json!("A");
    lines.push(a.to_string());
    lines.push(b.to_string());
    // a chain 5,000 deep
    for i in 0..5000u64 {
        let mut e: Value = serde_json::from_str(&line(
            &format!("c{i}"),
            "run.step.started",
            "s",
            2 + i,
            json!({}),
        ))
        .unwrap();
        if i > 0 {
            e["cause"] = json!(format!("c{}", i - 1));
        }
        lines.push(e.to_string());
    }
    let file = jsonl(dir.path(), "deep.jsonl", &lines);
    let r = run(&[
        "timeline",
        "s",
        "--file",
        file.to_str().unwrap(),
        "--dag",
        "--format",
        "text",
    ]);
    r.expect(0);
    assert_eq!(r.stdout.lines().count(), 5002);
    let r = run(&[
        "timeline",
        "s",
        "--file",
        file.to_str().unwrap(),
        "--dag",
        "--format",
        "json",
    ]);
    r.expect(0);
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
    let r = run(&[
        "timeline",
        "tl",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
        "--format",
        "json",
    ]);
    r.expect(0);
    let got: Vec<String> = events(&r.stdout)
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(got, ids);
    run(&["timeline", "tl", "--url", &dead_relay_url()]).expect(5);
}
