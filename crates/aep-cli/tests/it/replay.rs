//! `aep replay`: a capture re-emitted as new sessions, with the provenance trail, no
//! commands, pacing and a dry run.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use aep::protocol::types::EventType;
use common::{
    dead_relay_url, fixtures, history, jsonl, line, relay, run, scratch, scratch_jsonl, TOKEN,
};
use serde_json::{json, Value};

#[test]
fn the_golden_capture_replays_as_fresh_sessions_that_validate() {
    let relay = relay();
    let golden = fixtures().join("conformance/golden/golden.jsonl");
    let recorded: Vec<aep::protocol::Event> = std::fs::read_to_string(&golden)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let r = run(&[
        "replay",
        golden.to_str().unwrap(),
        "--max-gap",
        "0",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
    ]);
    r.expect(0);
    let summary: Value = serde_json::from_str(&r.stdout).unwrap();
    let commands = recorded
        .iter()
        .filter(|e| EventType::parse(e.event_type()).unwrap().is_command())
        .count();
    assert_eq!(summary["skipped_commands"], commands);
    let replayed = history(relay.url());
    assert_eq!(summary["sent"], replayed.len());
    let recorded_ids: HashSet<&str> = recorded.iter().map(|e| e.id()).collect();
    let mut next_seq: HashMap<String, u64> = HashMap::new();
    for e in &replayed {
        assert!(e.session().unwrap().starts_with("replay-"));
        assert!(!recorded_ids.contains(e.id()), "fresh ids");
        assert!(
            !EventType::parse(e.event_type()).unwrap().is_command(),
            "no commands"
        );
        let of = e.extension("aepreplayid").unwrap();
        assert!(recorded_ids.contains(of.as_str().unwrap()));
        assert!(e.extension("aepreplayof").is_some() && e.extension("aepreplaytime").is_some());
        let seq = next_seq.entry(e.session().unwrap().to_owned()).or_insert(0);
        assert_eq!(e.seq(), Some(*seq), "seq from 0, contiguous");
        *seq += 1;
    }
    // cause links point at the replayed events now, wherever the target was replayed
    let by_recorded: HashMap<String, &aep::protocol::Event> = replayed
        .iter()
        .map(|e| {
            (
                e.extension("aepreplayid")
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
                e,
            )
        })
        .collect();
    let mut rewritten = 0;
    for e in &replayed {
        let original = recorded
            .iter()
            .find(|r| Some(r.id()) == e.extension("aepreplayid").unwrap().as_str())
            .unwrap();
        if let Some(cause) = original.cause() {
            if let Some(target) = by_recorded.get(cause) {
                if target.session() == e.session() {
                    assert_eq!(e.cause(), Some(target.id()));
                    rewritten += 1;
                }
            }
        }
    }
    assert!(rewritten > 5, "{rewritten} causes rewritten");
    // the replayed stream passes validate
    let dir = scratch();
    let lines: Vec<String> = replayed.iter().map(|e| e.to_json()).collect();
    let file = jsonl(dir.path(), "replayed.jsonl", &lines);
    let v = run(&["validate", file.to_str().unwrap()]);
    v.expect(0);
}

#[test]
fn a_dry_run_plans_and_sends_nothing() {
    let relay = relay();
    let dir = scratch();
    let lines = vec![
        line("A", "session.started", "s1", 0, json!({})),
        line("B", "session.started", "s2", 0, json!({})),
        serde_json::json!({"aep": "0.1", "id": "P", "type": "control.pause", "time": "2026-07-03T10:00:01.000Z",
            "source": "aep://h/agent/console", "agent": "console", "session": "s1"}).to_string(),
        line("A", "session.started", "s1", 0, json!({})),
    ];
    let file = jsonl(dir.path(), "cap.jsonl", &lines);
    let r = run(&[
        "replay",
        file.to_str().unwrap(),
        "--dry-run",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
    ]);
    r.expect(0);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(plan["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(plan["skipped_commands"], 1);
    assert_eq!(plan["duplicates"], 1);
    assert_eq!(plan["sent"], Value::Null);
    assert!(history(relay.url()).is_empty());
}

#[test]
fn pacing_follows_the_recording_scaled_and_capped() {
    let relay = relay();
    let dir = scratch();
    let mut a: Value =
        serde_json::from_str(&line("A", "session.started", "s", 0, json!({}))).unwrap();
    let mut b: Value = serde_json::from_str(&line("B", "run.started", "s", 1, json!({}))).unwrap();
    a["time"] = json!("2026-07-03T10:00:00.000Z");
    b["time"] = json!("2026-07-03T10:00:02.000Z");
    let file = jsonl(dir.path(), "paced.jsonl", &[a.to_string(), b.to_string()]);
    let f = file.to_str().unwrap();
    let started = Instant::now();
    run(&[
        "replay",
        f,
        "--speed",
        "4",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
    ])
    .expect(0);
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "paced: {:?}",
        started.elapsed()
    );
    let r = run(&["replay", f, "--max-gap", "10", "--dry-run"]);
    r.expect(0);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(plan["replay_seconds"].as_f64().unwrap() < 0.1);
}

#[test]
fn bad_input() {
    let (dir, file) = scratch_jsonl(
        "ok.jsonl",
        &[line("A", "session.started", "s", 0, json!({}))],
    );
    let f = file.to_str().unwrap();
    run(&["replay", f, "--speed", "0"]).expect(2);
    run(&["replay", f, "--max-gap", "soon"]).expect(2);
    run(&["replay"]).expect(2);
    run(&["replay", dir.path().join("none").to_str().unwrap()]).expect(6);
    let torn = jsonl(dir.path(), "torn.jsonl", &["{".into()]);
    let r = run(&["replay", torn.to_str().unwrap(), "--dry-run"]);
    r.expect(6);
    r.stderr_has("torn.jsonl:1");
    run(&["replay", f, "--url", &dead_relay_url()]).expect(5);
}
