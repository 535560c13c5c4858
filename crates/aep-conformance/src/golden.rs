//! Class `golden`: every golden line is a valid envelope with a valid payload
//! (AEP-0001 §5, AEP-0002 §5).

use std::path::Path;

use aep_core::validate::{validate_value, Issue};
use aep_core::types::lookup;

use crate::check::Check;
use crate::fixtures;

/// Runs the class.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let golden = match fixtures::golden(fixtures) {
        Ok(g) => g,
        Err(check) => return vec![check],
    };
    let mut checks = Vec::new();
    let mut payload = Vec::new();
    for (i, event) in golden.iter().enumerate() {
        let ty = fixtures::type_of(event);
        let (payload_issues, envelope_issues): (Vec<Issue>, Vec<Issue>) =
            validate_value(event).into_iter().partition(|i| i.rule().is_payload());
        checks.push(Check::new(
            format!("golden[{i}] {ty} envelope-valid"),
            envelope_issues.is_empty(),
            summary(&envelope_issues),
        ));
        let has_schema = lookup(ty).is_some_and(|t| t.schema.is_some());
        if has_schema && event.get("data").is_some() {
            payload.push(Check::new(
                format!("golden[{i}] {ty} payload-valid"),
                payload_issues.is_empty(),
                summary(&payload_issues),
            ));
        }
    }
    checks.extend(payload);
    checks
}

/// The first two issues, as `run.py` reports the first two schema errors.
pub fn summary(issues: &[Issue]) -> String {
    issues
        .iter()
        .take(2)
        .map(Issue::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
