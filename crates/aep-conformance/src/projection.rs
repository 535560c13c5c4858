//! Class `projection`: the golden state-projection corpus (`projection/events.jsonl`,
//! vendored from the reference SDKs) folded by [`project_state`] serializes to the
//! `state` of `projection/expected.json`, members in the same order. The protocol's own
//! runner has no such class; the check names follow its `class: case` form.

use std::path::Path;

use aep_core::projection::{project_state, StateProjection};
use aep_core::Event;
use serde_json::Value;

use crate::check::Check;
use crate::fixtures::{read_json, read_text};
use crate::redaction::snippet;

/// Runs the class over `{fixtures}/projection/`. A missing or malformed corpus is one
/// failing check.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let (text, expected) = match (
        read_text(fixtures, "projection/events.jsonl"),
        read_json(fixtures, "projection/expected.json"),
    ) {
        (Ok(text), Ok(doc)) => (text, doc.get("state").cloned().unwrap_or(Value::Null)),
        (Err(check), _) | (_, Err(check)) => return vec![check],
    };
    let mut events = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        match line.parse::<Event>() {
            Ok(e) => events.push(e),
            Err(e) => return vec![Check::fail(format!("projection: events[{i}] parses"), e.to_string())],
        }
    }
    let batch = project_state(&events);
    let mut checks = vec![same_json(
        "projection: batch state equals expected.json",
        &batch,
        &expected,
    )];
    // The corpus file is in arrival order with every session sorted, so folding it as it
    // arrives must land on the same sessions as the batch fold (violations may differ
    // in order only, which `fixtures/projection/README.md` leaves to the batch).
    let mut incremental = StateProjection::new();
    incremental.extend(&events);
    let state = incremental.state();
    checks.push(Check::new(
        "projection: incremental fold keeps the batch sessions",
        state.sessions() == batch.sessions(),
        format!(
            "{} sessions incrementally, {} in batch",
            state.sessions().len(),
            batch.sessions().len()
        ),
    ));
    checks
}

/// Whether `value` serializes to exactly `expected` (member order included).
fn same_json(name: &str, value: &impl serde::Serialize, expected: &Value) -> Check {
    match serde_json::to_string(value) {
        Ok(got) => {
            let want = expected.to_string();
            Check::new(
                name,
                got == want,
                format!("got {} want {}", snippet(&got), snippet(&want)),
            )
        }
        Err(e) => Check::fail(name, e.to_string()),
    }
}
