//! The attr-match class of the corpus (`attr-match/cases.json`, AEP-0003 §6): every
//! match case must give its verdict with a valid filter, every invalid filter must be
//! refused. Check names follow `spec/conformance/run.py`.

use std::path::Path;

use aep_core::filter::Filter;
use serde_json::Value;

use crate::check::Check;

/// Runs the attr-match cases under `fixtures` (the corpus root holding `attr-match/`).
///
/// One check per case: `attr-match: {name}` and `attr-match rejects: {name}`; a corpus
/// that cannot be read is one failing `attr-match: corpus` check.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let path = fixtures.join("conformance").join("attr-match").join("cases.json");
    let corpus = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()))
    {
        Ok(corpus) => corpus,
        Err(e) => {
            return vec![Check::new(
                "attr-match: corpus",
                false,
                format!("cannot read {}: {e}", path.display()),
            )]
        }
    };
    let cases = |class: &str| {
        corpus
            .get(class)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut checks = Vec::new();
    for case in cases("match") {
        let name = format!("attr-match: {}", case_name(&case));
        let want = case.get("match").and_then(Value::as_bool);
        let event = case.get("event").unwrap_or(&Value::Null);
        let check = match (
            Filter::from_value(case.get("filter").unwrap_or(&Value::Null)),
            want,
        ) {
            (Err(e), _) => Check::new(name, false, format!("valid filter refused: {e}")),
            (Ok(_), None) => Check::new(name, false, "case has no boolean `match`".to_owned()),
            (Ok(filter), Some(want)) => {
                let got = filter.matches_value(event);
                Check::new(
                    name,
                    got == want,
                    (got != want).then(|| format!("expected match={want}, got {got}")),
                )
            }
        };
        checks.push(check);
    }
    for case in cases("invalid") {
        let name = format!("attr-match rejects: {}", case_name(&case));
        checks.push(
            match Filter::from_value(case.get("filter").unwrap_or(&Value::Null)) {
                Ok(f) => Check::new(name, false, format!("accepted {f}")),
                Err(e) => Check::new(name, true, e.to_string()),
            },
        );
    }
    checks
}

fn case_name(case: &Value) -> &str {
    case.get("name")
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)")
}
