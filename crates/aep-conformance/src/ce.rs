//! Class `ce-roundtrip` (AEP-0005 §1-2, §5 items 1, 2 and 5): every golden event maps
//! forward to its pinned CloudEvent, maps back to itself (canonical JSON, and `data`
//! byte for byte), a foreign CE type is out of scope, and the hand-authored inbound
//! cases map to their expected envelopes, which validate. Check names follow
//! `spec/conformance/run.py`.

use std::path::Path;

use aep_bridge::ce::{from_cloudevent, to_cloudevent, CeError, CloudEvent};
use aep_core::validate::{validate_value, Issue};
use aep_core::Event;
use serde_json::Value;

use crate::check::Check;
use crate::fixtures;
use crate::redaction::snippet;

/// Runs the class over `{fixtures}/conformance/{golden,ce-roundtrip}/`.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let (golden, pins, inbound) = match (
        fixtures::golden_events(fixtures),
        fixtures::read_text(fixtures, "conformance/ce-roundtrip/ce-expected.jsonl"),
        fixtures::read_json(fixtures, "conformance/ce-roundtrip/inbound-cases.json"),
    ) {
        (Ok(g), Ok(p), Ok(i)) => (g, p, i),
        (Err(c), _, _) | (_, Err(c), _) | (_, _, Err(c)) => return vec![c],
    };
    let pins: Vec<Value> = match pins
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
    {
        Ok(p) => p,
        Err(e) => return vec![Check::fail("fixture readable: ce-expected.jsonl", e.to_string())],
    };
    let mut checks = vec![Check::new(
        "CE pins cover golden corpus",
        pins.len() == golden.len(),
        format!("{} pins for {} golden events", pins.len(), golden.len()),
    )];
    for (i, (event, pin)) in golden.iter().zip(&pins).enumerate() {
        let ty = event.event_type();
        let forward = to_cloudevent(event);
        checks.push(match &forward {
            Ok(ce) => {
                let got = serde_json::to_value(ce).unwrap_or(Value::Null);
                let valid = ce.check();
                Check::new(
                    format!("CE forward[{i}] matches pin ({ty})"),
                    got == *pin && valid.is_ok(),
                    match valid {
                        Err(e) => e.to_string(),
                        Ok(()) => format!("got {}", snippet(&ce.to_json())),
                    },
                )
            }
            Err(e) => Check::fail(format!("CE forward[{i}] matches pin ({ty})"), e.to_string()),
        });
        let name = format!("CE round-trip identity[{i}]");
        checks.push(match forward.map(|ce| from_cloudevent(&ce)) {
            Ok(Ok(inverse)) => identical(name, event, &inverse.event),
            Ok(Err(e)) | Err(e) => Check::fail(name, e.to_string()),
        });
    }
    let foreign = CloudEvent::new("F1", "s", "com.example.thing").with_time("2026-07-03T10:00:00Z");
    checks.push(Check::new(
        "foreign CE event out of bridge scope",
        matches!(from_cloudevent(&foreign), Err(CeError::Foreign { .. })),
        "a com.example.thing CloudEvent mapped into AEP".to_owned(),
    ));
    for case in fixtures::cases(&inbound, "cases") {
        checks.extend(inbound_case(case));
    }
    checks
}

/// The inverse gave back the original: the same canonical JSON, and `data` as the
/// same bytes (AEP-0005 §2 rule 1, "bit-for-bit modulo JSON member order").
fn identical(name: String, original: &Event, back: &Event) -> Check {
    let same_json = back.to_value() == original.to_value();
    let same_data = back.data_raw().map(|d| d.get()) == original.data_raw().map(|d| d.get());
    Check::new(
        name,
        same_json && same_data,
        format!("got {}", snippet(&back.to_json())),
    )
}

fn inbound_case(case: &Value) -> [Check; 2] {
    let name = case.get("name").and_then(Value::as_str).unwrap_or("?");
    let rule = case.get("rule").and_then(Value::as_str).unwrap_or("");
    let expected = case.get("expected").cloned().unwrap_or(Value::Null);
    let ce_text = case.get("ce").map(Value::to_string).unwrap_or_default();
    let got = CloudEvent::from_json(ce_text.as_bytes())
        .and_then(|ce| from_cloudevent(&ce))
        .map(|inverse| inverse.event.to_value());
    let mapped = match got {
        Ok(v) => Check::new(
            format!("CE inbound: {name}"),
            v == expected,
            format!("{rule}: got {}", snippet(&v.to_string())),
        ),
        Err(e) => Check::fail(format!("CE inbound: {name}"), format!("{rule}: {e}")),
    };
    let envelope: Vec<Issue> = validate_value(&expected)
        .into_iter()
        .filter(|i| !i.rule().is_payload())
        .collect();
    let valid = Check::new(
        format!("CE inbound expected validates: {name}"),
        envelope.is_empty(),
        crate::golden::summary(&envelope),
    );
    [mapped, valid]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_data_spelling_is_not_identical() {
        let a: Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{"n":1.50}}"#.parse().unwrap();
        let b: Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{"n":1.5}}"#.parse().unwrap();
        assert!(!identical("x".into(), &a, &b).pass);
        assert!(identical("x".into(), &a, &a.clone()).pass);
    }
}
