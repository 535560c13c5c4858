//! The AEP-0006 capture-gating corpus (`capture-gating/cases.json`): each case's
//! `values`, gated at its ceiling by [`gate_form_values`], must equal its `expect`
//! exactly. Check names follow the protocol's runner: `capture-gating: {name}`.

use std::path::Path;

use aep_core::gating::gate_form_values;
use aep_core::Capture;
use serde_json::Value;

use crate::check::Check;
use crate::fixtures::{cases, read_json};
use crate::redaction::snippet;

/// Runs every case of `{fixtures}/conformance/capture-gating/cases.json`, where `fixtures`
/// is the workspace's fixture root. A missing or malformed corpus is one failing check.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let corpus = match read_json(fixtures, "conformance/capture-gating/cases.json") {
        Ok(corpus) => corpus,
        Err(check) => return vec![check],
    };
    cases(&corpus, "cases")
        .iter()
        .map(|case| {
            let name = format!(
                "capture-gating: {}",
                case.get("name").and_then(Value::as_str).unwrap_or("?")
            );
            let ceiling = case.get("ceiling").and_then(Value::as_str).unwrap_or("");
            let ceiling: Capture = match ceiling.parse() {
                Ok(c) => c,
                Err(e) => return Check::new(name, false, e.to_string()),
            };
            let field = |k: &str| case.get(k).unwrap_or(&Value::Null);
            let out = Value::Object(gate_form_values(field("fields"), field("values"), ceiling));
            let pass = out == *field("expect");
            let detail = (!pass).then(|| {
                format!(
                    "got {} want {}",
                    snippet(&out.to_string()),
                    snippet(&field("expect").to_string())
                )
            });
            Check::new(name, pass, detail)
        })
        .collect()
}
