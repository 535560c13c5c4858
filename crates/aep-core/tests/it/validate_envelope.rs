//! `validate_envelope` is `validate_event` without the payload-schema rules, over the whole
//! corpus: the same envelope findings, in the same order, and no payload findings.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use aep_core::validate::{validate_envelope, validate_event, Issue, Rule};
use aep_core::Event;
use serde_json::Value;

const INVALID: &str = include_str!("../../../../fixtures/conformance/invalid/cases.json");

fn without_payload(issues: Vec<Issue>) -> Vec<Issue> {
    issues
        .into_iter()
        .filter(|i| !i.rule().is_payload())
        .collect()
}

fn corpus_events() -> Vec<Event> {
    let mut events = common::events(common::GOLDEN);
    let doc: Value = serde_json::from_str(INVALID).unwrap();
    for case in doc["cases"].as_array().unwrap() {
        let values = match (&case["event"], &case["events"]) {
            (Value::Null, Value::Array(many)) => many.clone(),
            (one, _) => vec![one.clone()],
        };
        events.extend(values.iter().filter_map(|v| Event::from_value(v).ok()));
    }
    // and one the payload rules refuse, should the corpus hold none
    events.push(
        r#"{"aep":"0.1","id":"p1","type":"agent.presence","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","data":{"state":"sleeping"}}"#
            .parse()
            .unwrap(),
    );
    events
}

#[test]
fn envelope_findings_are_the_full_findings_minus_the_payload_ones() {
    let events = corpus_events();
    assert!(events.len() > 64, "the invalid cases contributed events");
    let mut payload_findings = 0;
    for event in &events {
        let full = validate_event(event);
        payload_findings += full.iter().filter(|i| i.rule().is_payload()).count();
        assert_eq!(validate_envelope(event), without_payload(full), "{event:?}");
    }
    assert!(
        payload_findings > 0,
        "the corpus exercises the payload rules"
    );
}

#[test]
fn a_data_that_is_not_an_object_is_still_an_envelope_finding() {
    for data in ["[1]", "\"text\"", "3", "true"] {
        let line = format!(
            r#"{{"aep":"0.1","id":"1","type":"agent.presence","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","data":{data}}}"#
        );
        let Ok(event) = line.parse::<Event>() else {
            continue; // refused at parse time already
        };
        let issues = validate_envelope(&event);
        assert_eq!(issues.len(), 1, "{data}");
        assert_eq!(issues[0].rule(), Rule::AttrType);
        assert_eq!(issues[0].attr(), Some("data"));
        assert_eq!(validate_event(&event), issues);
    }
}
