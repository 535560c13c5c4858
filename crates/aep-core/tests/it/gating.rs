//! The AEP-0006 capture-gating corpus (`fixtures/conformance/capture-gating/cases.json`):
//! each case's values, gated at its ceiling, come out exactly as expected.
// A test fails by panicking: unwrapping the corpus plumbing is the report.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use aep_core::gating::{gate_form_values, gate_form_values_redacting};
use aep_core::redact::{RedactOptions, Redactor};
use aep_core::Capture;
use serde_json::{json, Value};

fn corpus() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/capture-gating/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn cases(corpus: &Value) -> &[Value] {
    corpus["cases"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

#[test]
fn every_case_of_the_corpus() {
    let corpus = corpus();
    let cases = cases(&corpus);
    assert_eq!(cases.len(), 6, "the corpus changed size: update this test");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let ceiling: Capture = serde_json::from_value(case["ceiling"].clone()).unwrap();
        let out = Value::Object(gate_form_values(&case["fields"], &case["values"], ceiling));
        assert_eq!(out, case["expect"], "capture-gating: {name}");
    }
}

/// The corpus's free text is redaction-neutral on purpose, so the redacting gate must
/// agree with it too.
#[test]
fn every_case_of_the_corpus_through_the_pipeline() {
    let corpus = corpus();
    let redactor = Redactor::new(RedactOptions::default()).unwrap();
    for case in cases(&corpus) {
        let name = case["name"].as_str().unwrap();
        let ceiling: Capture = serde_json::from_value(case["ceiling"].clone()).unwrap();
        let out = gate_form_values_redacting(&case["fields"], &case["values"], ceiling, &redactor);
        assert_eq!(
            Value::Object(out),
            case["expect"],
            "capture-gating (redacting): {name}"
        );
    }
}

#[test]
fn free_text_is_redacted_at_redacted_only() {
    let redactor = Redactor::new(RedactOptions::default()).unwrap();
    let fields = json!([
        {"id": "note", "type": "string", "label": "Note"},
        {"id": "db", "type": "select", "label": "Database", "other": true,
         "choices": [{"id": "1", "label": "PostgreSQL"}]},
    ]);
    let values = json!({"note": "token=abc123", "db": "mail dba@example.com"});
    let gate = |c| Value::Object(gate_form_values_redacting(&fields, &values, c, &redactor));
    assert_eq!(gate(Capture::Metadata), json!({}));
    assert_eq!(
        gate(Capture::Redacted),
        json!({"note": "token=[REDACTED:secret]", "db": "mail [REDACTED:pii]"})
    );
    assert_eq!(gate(Capture::Full), values);
}

#[test]
fn values_of_the_wrong_json_type_are_free_text() {
    let fields = json!([
        {"id": "replicas", "type": "number", "label": "Replicas"},
        {"id": "staged", "type": "boolean", "label": "Staged"},
    ]);
    let values = json!({"replicas": "three, and my password is hunter2", "staged": "yes"});
    assert_eq!(
        Value::Object(gate_form_values(&fields, &values, Capture::Metadata)),
        json!({})
    );
    assert_eq!(
        Value::Object(gate_form_values(&fields, &values, Capture::Redacted)),
        values
    );
}
