//! The down-leveling corpus (`fixtures/conformance/downlevel/cases.json`, AEP-0001 §8.2):
//! every case passes, and nothing but `capture` and `data` changes.

use std::path::PathBuf;

use aep_core::capture::downlevel;
use aep_core::{Capture, Event};
use serde_json::Value;

fn cases() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/downlevel/cases.json");
    let text = std::fs::read_to_string(&path).expect("downlevel corpus");
    let doc: Value = serde_json::from_str(&text).expect("corpus is JSON");
    doc["cases"].as_array().expect("cases array").clone()
}

fn envelope_without_content(event: &Event) -> Value {
    let mut v = event.to_value();
    let map = v.as_object_mut().expect("event object");
    map.remove("data");
    map.remove("capture");
    v
}

#[test]
fn all_eighteen_cases_pass() {
    let cases = cases();
    assert_eq!(cases.len(), 18, "the corpus holds 18 cases");
    for case in &cases {
        let name = case["name"].as_str().expect("case name");
        let ceiling: Capture = case["ceiling"]
            .as_str()
            .expect("ceiling")
            .parse()
            .expect("level");
        let event = Event::from_value(&case["event"]).expect("case event parses");
        let out = downlevel(&event, ceiling);
        let expect_capture: Capture = case["expect_capture"]
            .as_str()
            .expect("expect_capture")
            .parse()
            .expect("level");
        let expect_data = match &case["expect_data"] {
            Value::Null => None,
            v => Some(v.clone()),
        };
        assert_eq!(
            (out.capture(), out.data()),
            (expect_capture, expect_data),
            "downlevel case failed: {name}"
        );
        assert_eq!(
            envelope_without_content(&out),
            envelope_without_content(&event),
            "downlevel changed more than capture and data: {name}"
        );
    }
}

#[test]
fn pass_through_cases_keep_bytes() {
    for case in cases() {
        let ceiling: Capture = case["ceiling"]
            .as_str()
            .expect("ceiling")
            .parse()
            .expect("level");
        let event = Event::from_value(&case["event"]).expect("case event parses");
        if ceiling >= event.capture() {
            assert_eq!(
                downlevel(&event, ceiling).to_json(),
                event.to_json(),
                "{}",
                case["name"]
            );
        }
    }
}

#[test]
fn downleveling_is_idempotent_on_the_corpus() {
    for case in cases() {
        let ceiling: Capture = case["ceiling"]
            .as_str()
            .expect("ceiling")
            .parse()
            .expect("level");
        let event = Event::from_value(&case["event"]).expect("case event parses");
        let once = downlevel(&event, ceiling);
        assert_eq!(downlevel(&once, ceiling), once, "{}", case["name"]);
    }
}
