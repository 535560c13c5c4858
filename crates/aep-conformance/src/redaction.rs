//! The AEP-0003 §9.4 redaction corpus (`redaction/cases.json`): every text case through
//! [`Redactor::redact_text`], every value case through [`Redactor::redact_value`], each
//! judged by its `must_contain` / `must_not_contain` lists. Check names follow the
//! protocol's runner: `redact text: {name}`, `redact value: {name}`.

use std::path::Path;

use aep_core::redact::{RedactOptions, Redactor};
use serde_json::{json, Value};

use crate::check::Check;
use crate::fixtures::{cases, read_json};

/// The operator home the protocol's runner pins when a case sets none, so results do
/// not depend on the machine.
const PINNED_HOME: &str = "/nonexistent-home";

/// Runs every case of `{fixtures}/conformance/redaction/cases.json`, where `fixtures` is
/// the workspace's fixture root. A missing or malformed corpus is one failing check.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let corpus = match read_json(fixtures, "conformance/redaction/cases.json") {
        Ok(corpus) => corpus,
        Err(check) => return vec![check],
    };
    let mut checks = Vec::new();
    for (class, label) in [
        ("text_cases", "redact text"),
        ("value_cases", "redact value"),
    ] {
        for case in cases(&corpus, class) {
            let name = format!(
                "{label}: {}",
                case.get("name").and_then(Value::as_str).unwrap_or("?")
            );
            checks.push(match redact_case(case, class == "text_cases") {
                Ok(out) => {
                    let why = violations(case, &out);
                    if why.is_empty() {
                        Check::pass(name)
                    } else {
                        Check::fail(name, format!("{} in {}", why.join(", "), snippet(&out)))
                    }
                }
                Err(why) => Check::fail(name, why),
            });
        }
    }
    checks
}

/// The redacted output of one case, as text (a value case as its JSON).
fn redact_case(case: &Value, text: bool) -> Result<String, String> {
    let mut opts = case.get("opts").cloned().unwrap_or_else(|| json!({}));
    if let Some(map) = opts.as_object_mut() {
        map.entry("home").or_insert_with(|| json!(PINNED_HOME));
    }
    let opts: RedactOptions = serde_json::from_value(opts).map_err(|e| format!("opts: {e}"))?;
    let redactor = Redactor::new(opts).map_err(|e| e.to_string())?;
    let input = case.get("input").unwrap_or(&Value::Null);
    if text {
        let input = input.as_str().ok_or("input is not a string")?;
        Ok(redactor.redact_text(input).into_owned())
    } else {
        Ok(redactor.redact_value(input).to_string())
    }
}

/// What `out` misses of `must_contain` and leaks of `must_not_contain`.
fn violations(case: &Value, out: &str) -> Vec<String> {
    let strings = |key: &str| {
        case.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
    };
    let missing = strings("must_contain")
        .into_iter()
        .filter(|s| !out.contains(s))
        .map(|s| format!("missing {s:?}"));
    let leaked = strings("must_not_contain")
        .into_iter()
        .filter(|s| out.contains(s))
        .map(|s| format!("leaked {s:?}"));
    missing.chain(leaked).collect()
}

/// The start of an output, for a failure detail.
pub(crate) fn snippet(out: &str) -> String {
    const MAX: usize = 160;
    let cut: String = out.chars().take(MAX).collect();
    if cut.len() < out.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}
