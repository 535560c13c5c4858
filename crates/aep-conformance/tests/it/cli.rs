//! The runner as CI calls it: exit status, the `aep-conformance-report` on `--json -`,
//! and a real failure in the corpus turning into a FAIL line and a non-zero exit.

use std::path::PathBuf;
use std::process::{Command, Output};

use aep_test_support::disk::TempDir;
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aep-conformance"))
        .args(args)
        .output()
        .expect("the runner starts")
}

/// Runs the runner on a corpus with failures: it exits 1, and its stdout has each of
/// `lines` (FAIL and PASS lines alike).
fn fails_with(args: &[&str], lines: &[&str]) {
    let out = run(args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for line in lines {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
}

#[test]
fn the_corpus_passes_and_the_json_report_has_the_protocol_shape() {
    let out = run(&["--json", "-"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The report alone is on stdout; the human lines went to stderr.
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is the JSON report");
    assert_eq!(report["format"], "aep-conformance-report");
    assert_eq!(report["formatVersion"], 1);
    assert_eq!(report["tool"], "run-rs");
    assert_eq!(report["ok"], true);
    let checks = report["checks"].as_array().expect("checks");
    assert_eq!(report["summary"]["total"], checks.len());
    assert_eq!(report["summary"]["fail"], 0);
    // The check families of the protocol's runner (spec/conformance/run.py), by name.
    let names: Vec<&str> = checks.iter().filter_map(|c| c["name"].as_str()).collect();
    let count = |p: &dyn Fn(&str) -> bool| names.iter().filter(|n| p(n)).count();
    assert_eq!(count(&|n| n.ends_with(" envelope-valid")), 64);
    assert_eq!(count(&|n| n.ends_with(" payload-valid")), 59);
    assert_eq!(count(&|n| n.starts_with("invalid rejected: ")), 35);
    assert_eq!(count(&|n| n.starts_with("attr-match: ")), 14);
    assert_eq!(count(&|n| n.starts_with("attr-match rejects: ")), 10);
    // The AEP-0005 bridge classes and the Annex A mapping pins.
    assert_eq!(count(&|n| n.starts_with("CE forward[")), 64);
    assert_eq!(count(&|n| n.starts_with("CE round-trip identity[")), 64);
    assert_eq!(count(&|n| n.starts_with("CE inbound")), 6);
    assert_eq!(count(&|n| n.starts_with("OTLP ")), 5);
    assert_eq!(count(&|n| n.starts_with("OCSF ")), 27);
    assert_eq!(count(&|n| n.contains(" pin schema-valid (")), 198);
    assert!(checks.len() >= 770, "{} checks", checks.len());
    for name in [
        "unknown-type tolerance (envelope accepts unregistered member + unknown ext attr)",
        "golden carries a kind=form round-trip",
        "golden form answer satisfies the values rules",
        "golden form answer capture-honest (free text only at redacted+)",
        "golden seq strictly monotonic per (source, session, epoch)",
        "golden honors lifecycle invariants (one terminal per run; attention closed before session.ended)",
        "golden has no (source,id) collision",
        "golden has one ack decision per command (AEP-0004 §3)",
        "golden acks every command it carries",
    ] {
        assert!(names.contains(&name), "no check named `{name}`");
    }
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("PASS  golden[0] session.started envelope-valid"));
}

#[test]
fn a_broken_golden_line_fails_the_run() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let golden = std::fs::read_to_string(root.join("fixtures/conformance/golden/golden.jsonl"))
        .expect("golden corpus");
    // The first line loses its required `agent`: envelope-invalid (AEP-0001 §5.1).
    let mut lines: Vec<String> = golden.lines().map(str::to_owned).collect();
    let mut first: serde_json::Map<String, Value> =
        serde_json::from_str(&lines[0]).expect("golden line");
    first.remove("agent");
    lines[0] = Value::Object(first).to_string();

    let scratch = TempDir::new("conformance-cli");
    let dir = scratch.path().join("conformance/golden");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    std::fs::write(dir.join("golden.jsonl"), lines.join("\n") + "\n").expect("scratch corpus");

    let fixtures = scratch.path().to_string_lossy().into_owned();
    fails_with(
        &["--fixtures", &fixtures, "--class", "golden"],
        &[
            "FAIL  golden[0] session.started envelope-valid",
            "PASS  golden[1] run.started envelope-valid",
        ],
    );
}

#[test]
fn a_usage_error_exits_2() {
    let out = run(&["--class", "no-such-class"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown class"));
}

#[test]
fn a_wrong_bridge_pin_fails_the_run() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let scratch = TempDir::new("conformance-pin");
    for rel in [
        "conformance/golden/golden.jsonl",
        "conformance/ce-roundtrip/inbound-cases.json",
        "conformance/otlp/otlp-expected.json",
        "schemas/registry/severity.json",
    ] {
        let to = scratch.path().join(rel);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("scratch dir");
        std::fs::copy(root.join(rel), to).expect("copy a fixture");
    }
    // The CE pin of golden[2] says the type maps under another root (AEP-0005 B3).
    let pins = std::fs::read_to_string(root.join("conformance/ce-roundtrip/ce-expected.jsonl"))
        .expect("CE pins");
    let mut lines: Vec<String> = pins.lines().map(str::to_owned).collect();
    lines[2] = lines[2].replace("\"dev.aep.tool.requested\"", "\"org.aep.tool.requested\"");
    std::fs::write(
        scratch
            .path()
            .join("conformance/ce-roundtrip/ce-expected.jsonl"),
        lines.join("\n") + "\n",
    )
    .expect("scratch pins");
    // And the OTLP table of the registry disagrees with AEP-0005 §3.4 on `notice`.
    let registry = root.join("schemas/registry/severity.json");
    let text = std::fs::read_to_string(registry).expect("registry");
    std::fs::write(
        scratch.path().join("schemas/registry/severity.json"),
        text.replace("\"INFO2\"", "\"INFO3\""),
    )
    .expect("scratch registry");

    let fixtures = scratch.path().to_string_lossy().into_owned();
    fails_with(
        &[
            "--fixtures",
            &fixtures,
            "--class",
            "ce-roundtrip",
            "--class",
            "otlp",
        ],
        &[
            "FAIL  CE forward[2] matches pin (tool.requested)",
            "PASS  CE forward[1] matches pin (run.started)",
            "PASS  CE round-trip identity[2]",
            "FAIL  OTLP severity table complete",
            "PASS  OTLP projection[3] matches pin (tool.completed)",
        ],
    );
}
