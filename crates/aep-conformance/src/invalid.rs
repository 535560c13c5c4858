//! Class `invalid`: every case of the invalid corpus is rejected, for the rule it cites;
//! and the envelope tolerates what a future minor version may add (AEP-0001 §10).

use std::path::Path;

use aep_core::validate::{validate_value, Issue, StreamValidator};
use aep_core::Event;
use serde_json::{json, Value};

use crate::check::Check;
use crate::fixtures;

/// Runs the class.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let doc = match fixtures::read_json(fixtures, "conformance/invalid/cases.json") {
        Ok(doc) => doc,
        Err(check) => return vec![check],
    };
    let mut checks: Vec<Check> = fixtures::cases(&doc, "cases").iter().map(case).collect();
    checks.push(tolerance());
    checks
}

/// Every issue a case raises: the single-event rules on each event (as JSON: it may not
/// parse into an `Event`), then the cross-event rules over the stream.
fn issues(case: &Value) -> Vec<Issue> {
    let events: Vec<&Value> = match case.get("events").and_then(Value::as_array) {
        Some(events) => events.iter().collect(),
        None => case.get("event").into_iter().collect(),
    };
    let mut stream = StreamValidator::new();
    let mut out = Vec::new();
    for value in events {
        out.extend(validate_value(value));
        if let Ok(event) = Event::from_value(value) {
            out.extend(stream.push(&event));
        }
    }
    out.extend(stream.finish());
    out
}

fn case(case: &Value) -> Check {
    let name = case.get("name").and_then(Value::as_str).unwrap_or("?");
    let citation = case.get("rule").and_then(Value::as_str).unwrap_or("");
    let issues = issues(case);
    let check = format!("invalid rejected: {name}");
    if issues.is_empty() {
        return Check::fail(check, format!("violates {citation} but validated"));
    }
    if issues.iter().any(|i| i.is_cited_by(citation)) {
        Check::pass(check)
    } else {
        Check::fail(
            check,
            format!(
                "rejected, but not for {citation}: {}",
                crate::golden::summary(&issues)
            ),
        )
    }
}

fn tolerance() -> Check {
    let tolerant = json!({"aep": "0.1", "id": "TOL1", "type": "progress.some_future_member",
        "time": "2026-07-03T10:00:00Z", "source": "aep://h/agent/a",
        "agent": "a", "session": "s1", "seq": 0, "futureext": "x"});
    let issues = validate_value(&tolerant);
    Check::new(
        "unknown-type tolerance (envelope accepts unregistered member + unknown ext attr)",
        issues.is_empty(),
        crate::golden::summary(&issues),
    )
}
