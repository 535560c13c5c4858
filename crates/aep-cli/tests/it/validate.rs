//! `aep validate` against the conformance corpus and bad input.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use aep::protocol::validate::{validate_value, Issue, StreamValidator};
use aep::protocol::Event;
use common::{fixtures, jsonl, line, run, run_with, scratch, scratch_jsonl};
use serde_json::Value;

#[test]
fn the_golden_corpus_is_clean() {
    // aep-conformance passes the golden classes: aep validate must agree
    for class in ["golden", "golden-stream"] {
        let checks = aep_conformance::class(class).unwrap().run(&fixtures());
        assert!(
            !checks.is_empty() && checks.iter().all(|c| c.pass),
            "{class}: {checks:?}"
        );
    }
    let golden = fixtures().join("conformance/golden/golden.jsonl");
    let r = run(&["validate", golden.to_str().unwrap()]);
    r.expect(0);
    r.stderr_has("ok: 64 lines, 0 finding(s)");
    let r = run(&[
        "validate",
        "--json",
        "--require-acks",
        golden.to_str().unwrap(),
    ]);
    r.expect(0);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["format"], "aep-conformance-report");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["summary"]["total"], 65); // a check per line, one for the end
}

/// What aep-conformance's `invalid` class computes for a case: the rule ids of the
/// issues the case's citation names.
fn cited_rules(case: &Value) -> Vec<String> {
    let citation = case["rule"].as_str().unwrap();
    let events: Vec<&Value> = match case.get("events").and_then(Value::as_array) {
        Some(events) => events.iter().collect(),
        None => vec![&case["event"]],
    };
    let mut stream = StreamValidator::new();
    let mut issues: Vec<Issue> = Vec::new();
    for v in &events {
        issues.extend(validate_value(v));
        if let Ok(e) = Event::from_value(v) {
            issues.extend(stream.push(&e));
        }
    }
    issues.extend(stream.finish());
    issues
        .iter()
        .filter(|i| i.is_cited_by(citation))
        .map(|i| i.rule().as_str().to_owned())
        .collect()
}

#[test]
fn every_invalid_case_fails_with_the_rule_the_corpus_expects() {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("conformance/invalid/cases.json")).unwrap(),
    )
    .unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 35);
    // aep-conformance's verdict on each case, by its check's name
    let verdicts = aep_conformance::class("invalid").unwrap().run(&fixtures());
    let dir = scratch();
    for (n, case) in cases.iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let verdict = verdicts
            .iter()
            .find(|c| c.name == format!("invalid rejected: {name}"))
            .unwrap_or_else(|| panic!("{name}: no aep-conformance check"));
        assert!(verdict.pass, "{name}: aep-conformance: {verdict:?}");
        let expected = cited_rules(case);
        assert!(!expected.is_empty(), "{name}: aep-core cites nothing");
        let lines: Vec<String> = match case.get("events").and_then(Value::as_array) {
            Some(events) => events.iter().map(Value::to_string).collect(),
            None => vec![case["event"].to_string()],
        };
        let file = jsonl(dir.path(), &format!("case-{n}.jsonl"), &lines);
        let r = run(&["validate", "--json", file.to_str().unwrap()]);
        r.expect(1);
        let report: Value = serde_json::from_str(&r.stdout).unwrap();
        let found: Vec<&str> = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["findings"].as_array().into_iter().flatten())
            .map(|f| f["rule"].as_str().unwrap())
            .collect();
        assert!(
            found.iter().any(|r| expected.iter().any(|e| e == r)),
            "{name}: expected one of {expected:?}, aep validate found {found:?}"
        );
        // the human form names the file and a line for each finding
        r.stderr_has(&format!("case-{n}.jsonl:"));
    }
}

#[test]
fn an_unregistered_type_is_a_warning_not_a_finding() {
    let (_dir, file) = scratch_jsonl(
        "future.jsonl",
        &[line(
            "F1",
            "progress.some_future_member",
            "s1",
            0,
            serde_json::json!({}),
        )],
    );
    let r = run(&["validate", file.to_str().unwrap()]);
    r.expect(0);
    r.stderr_has("warning");
    r.stderr_has("not in the AEP 0.1 registry");
}

#[test]
fn findings_name_file_line_rule_and_section() {
    let dir = scratch();
    let lines = [
        line("A", "session.started", "s1", 0, serde_json::json!({})),
        "this is not json".to_owned(),
        line("B", "run.started", "s1", 0, serde_json::json!({})), // seq did not move
        // a field annotated `full` at the default `metadata` capture
        line(
            "C",
            "tool.requested",
            "s1",
            1,
            serde_json::json!({"tool": {"name": "Bash"}, "args": {"cmd": "ls"}}),
        ),
        line("A", "session.started", "s1", 0, serde_json::json!({})), // a redelivery
    ];
    let file = jsonl(dir.path(), "mixed.jsonl", &lines);
    let r = run(&["validate", file.to_str().unwrap()]);
    r.expect(1);
    r.stderr_has("mixed.jsonl:2: not-json:");
    r.stderr_has("mixed.jsonl:3: seq-regression:");
    r.stderr_has("mixed.jsonl:4: payload-capture: data.args:");
    r.stderr_has("(AEP-0002 §5.1)");
    r.stderr_has("mixed.jsonl:5: warning: repeats line 1");
    r.stderr_has("FAILED: 5 lines, 3 finding(s), 1 warning(s)");
    assert!(r.stdout.is_empty(), "human text goes to stderr");
}

#[test]
fn stdin_is_read_with_a_dash_and_stream_rules_close_at_the_end() {
    let text = format!(
        "{}\n{}\n",
        line("A", "session.started", "s1", 0, serde_json::json!({})),
        line(
            "B",
            "attention.requested",
            "s1",
            1,
            serde_json::json!({"kind": "input", "prompt": "ok?"})
        ),
    );
    let ended = line(
        "C",
        "session.ended",
        "s1",
        2,
        serde_json::json!({"reason": "completed"}),
    );
    let r = run_with(
        &["validate", "-"],
        format!("{text}{ended}\n").as_bytes(),
        std::time::Duration::from_secs(30),
    );
    r.expect(1);
    r.stderr_has("stdin:3: ended-with-pending-attention");
}

#[test]
fn an_unreadable_file_is_exit_6_in_one_line() {
    let dir = scratch();
    let missing = dir.path().join("missing.jsonl");
    let r = run(&["validate", missing.to_str().unwrap()]);
    r.expect(6);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    r.stderr_has("missing.jsonl");
    let r = run(&["validate", dir.path().to_str().unwrap()]);
    r.expect(6);
    r.stderr_has("directory");
}

#[test]
fn usage_errors_are_exit_2() {
    run(&["validate", "--frobnicate"]).expect(2);
    run(&["validate", "a", "b"]).expect(2);
    run(&[]).expect(2);
    let help = run(&["validate", "--help"]);
    help.expect(0);
    assert!(help.stdout.contains("Usage: aep validate"));
}
