//! Parity with the protocol's runner: `aep-conformance` runs every check `run.py` runs,
//! by name, plus its own projection checks, and all of them pass.
//!
//! Needs the protocol checkout (`AEP_SHARED`, else `../shared` beside the workspace),
//! Python 3 and `jsonschema`; without them the test prints why it skipped, unless
//! `AEP_REQUIRE_EXTERNAL=1` (set by `.ci/run`) makes a skip a failure.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn shared() -> PathBuf {
    aep_test_support::external::shared_dir()
}

/// Skips with a printed reason, or fails where external tools are required.
fn skip(why: &str) {
    aep_test_support::external::skip_for(Some(why));
}

fn names(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .filter_map(|c| c["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_run_py_check_runs_here_by_name_and_passes() {
    let run_py = shared().join("spec/conformance/run.py");
    if !run_py.is_file() {
        return skip(&format!("{} is not there", run_py.display()));
    }
    let python = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .output();
    if !python.is_ok_and(|o| o.status.success()) {
        return skip("python3 with jsonschema is not installed");
    }
    let theirs = Command::new("python3")
        .arg(&run_py)
        .args(["--json", "-"])
        .output()
        .expect("run.py starts");
    assert!(theirs.status.success(), "run.py fails on its own corpus");
    let theirs: Value = serde_json::from_slice(&theirs.stdout).expect("run.py's report");

    let ours = Command::new(env!("CARGO_BIN_EXE_aep-conformance"))
        .args(["--json", "-"])
        .output()
        .expect("aep-conformance starts");
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let ours: Value = serde_json::from_slice(&ours.stdout).expect("our report");
    assert_eq!(ours["summary"]["fail"], 0);

    let theirs = names(&theirs);
    let ours = names(&ours);
    let ours_set: BTreeSet<&String> = ours.iter().collect();
    let missing: Vec<&String> = theirs.iter().filter(|n| !ours_set.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "run.py checks not run here: {missing:#?}"
    );
    let theirs_set: BTreeSet<&String> = theirs.iter().collect();
    // This SDK's own classes: its adapters against the Annex A pins (what the
    // reference's run.js checks of its adapters), and projection.
    let adapters = ours
        .iter()
        .filter(|n| n.starts_with("adapter pin "))
        .count();
    let extra: Vec<&String> = ours
        .iter()
        .filter(|n| !theirs_set.contains(n) && !n.starts_with("adapter pin "))
        .collect();
    assert_eq!(
        extra,
        [
            "projection: batch state equals expected.json",
            "projection: incremental fold keeps the batch sessions"
        ],
        "only the adapters and projection classes are this SDK's own"
    );
    assert!(adapters > 0, "the adapters class ran");
    assert_eq!(
        ours.len(),
        theirs.len() + 2 + adapters,
        "no name runs twice"
    );
}
