//! The AEP-0003 §9.4 redaction corpus (`redaction/cases.json`): every text case through
//! [`Redactor::redact_text`], every value case through [`Redactor::redact_value`], each
//! judged by its `must_contain` / `must_not_contain` lists. Check names follow the
//! protocol's runner: `redact text: {name}`, `redact value: {name}`.

use std::path::Path;

use aep_core::redact::{RedactOptions, Redactor};
use serde_json::{json, Value};

use crate::check::Check;

/// The operator home the protocol's runner pins when a case sets none, so results do
/// not depend on the machine.
const PINNED_HOME: &str = "/nonexistent-home";

/// Runs the corpus found under `fixtures` (the conformance fixture directory, or a
/// directory holding it as `conformance/`).
pub fn run(fixtures: &Path) -> Vec<Check> {
    let corpus = match load(fixtures, "redaction/cases.json") {
        Ok(corpus) => corpus,
        Err(why) => return vec![Check::new("redaction: corpus readable", false, why)],
    };
    let mut checks = Vec::new();
    for (class, label) in [
        ("text_cases", "redact text"),
        ("value_cases", "redact value"),
    ] {
        for case in corpus
            .get(class)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = format!(
                "{label}: {}",
                case.get("name").and_then(Value::as_str).unwrap_or("?")
            );
            checks.push(match redact_case(case, class == "text_cases") {
                Ok(out) => {
                    let why = violations(case, &out);
                    let detail = (!why.is_empty())
                        .then(|| format!("{} in {}", why.join(", "), snippet(&out)));
                    Check::new(name, why.is_empty(), detail)
                }
                Err(why) => Check::new(name, false, why),
            });
        }
    }
    checks
}

/// Reads `relative` under `fixtures`, or under `fixtures/conformance`.
pub(crate) fn load(fixtures: &Path, relative: &str) -> Result<Value, String> {
    let direct = fixtures.join(relative);
    let path = if direct.exists() {
        direct
    } else {
        fixtures.join("conformance").join(relative)
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
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
