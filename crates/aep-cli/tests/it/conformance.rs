//! `aep conformance`: the embedded corpus, another corpus, and the same checks as the
//! `aep-conformance` library runs.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::path::Path;

use common::{fixtures, run, scratch};
use serde_json::Value;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `aep conformance --fixtures DIR --class CLASS EXTRA`, which must exit 1 (a failure).
fn failing_class(dir: &Path, class: &str, extra: &[&str]) -> common::Run {
    let mut args = vec!["conformance", "--fixtures", dir.to_str().unwrap()];
    args.extend_from_slice(&["--class", class]);
    args.extend_from_slice(extra);
    let r = run(&args);
    r.expect(1);
    r
}

#[test]
fn the_embedded_corpus_passes_with_the_libraries_checks() {
    let expected = aep_conformance::Runner::new(aep_conformance::workspace_fixtures()).run();
    let r = run(&["conformance", "--json", "-"]);
    r.expect(0);
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["format"], "aep-conformance-report");
    assert_eq!(report["ok"], true);
    let names: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = expected.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, want, "the same checks, in the same order");
    r.stderr_has(&format!("OK: 0 failure(s) of {} check(s)", want.len()));
}

#[test]
fn another_corpus_with_a_broken_case_fails() {
    let dir = scratch();
    copy_dir(&fixtures(), dir.path());
    let golden = dir.path().join("conformance/golden/golden.jsonl");
    let text =
        std::fs::read_to_string(&golden)
            .unwrap()
            .replacen("\"aep\":\"0.1\"", "\"aep\":\"9.9\"", 1);
    std::fs::write(&golden, text).unwrap();
    let report = dir.path().join("report.json");
    let r = failing_class(dir.path(), "golden", &["--json", report.to_str().unwrap()]);
    r.stdout_has("FAIL  golden[0]");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(doc["ok"], false);
    // a directory with no corpus fails every check it cannot read, never panics
    let empty = scratch();
    failing_class(empty.path(), "invalid", &[]);
}

#[test]
fn usage() {
    run(&["conformance", "--class", "nope"]).expect(2);
    let r = run(&["conformance", "--help"]);
    r.expect(0);
    assert!(r.stdout.contains("--fixtures"));
}
