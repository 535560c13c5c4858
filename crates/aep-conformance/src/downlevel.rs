//! The down-leveling corpus class (`downlevel/cases.json`, AEP-0001 §8.2): each case's
//! event lowered to its ceiling must land on the expected `capture` and `data`. Check
//! names follow `spec/conformance/run.py`: `downlevel: {case name}`.

use std::path::Path;

use aep_core::capture::downlevel;
use aep_core::{Capture, Event};
use serde_json::Value;

use crate::check::Check;
use crate::fixtures::{cases, read_json};

/// Runs every case of `{fixtures}/conformance/downlevel/cases.json`, where `fixtures` is
/// the workspace's fixture root. A missing or malformed corpus is one failing check,
/// never a panic.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let corpus = match read_json(fixtures, "conformance/downlevel/cases.json") {
        Ok(corpus) => corpus,
        Err(check) => return vec![check],
    };
    let cases = cases(&corpus, "cases");
    if cases.is_empty() {
        return vec![Check::fail(
            "downlevel: corpus",
            "conformance/downlevel/cases.json has no `cases`",
        )];
    }
    cases.iter().enumerate().map(|(i, c)| case(i, c)).collect()
}

fn case(index: usize, case: &Value) -> Check {
    let name = match case.get("name").and_then(Value::as_str) {
        Some(n) => format!("downlevel: {n}"),
        None => format!("downlevel: case {index}"),
    };
    let level = |key: &str| {
        case.get(key)
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<Capture>().ok())
            .ok_or_else(|| format!("`{key}` is not a capture level"))
    };
    let outcome = (|| {
        let ceiling = level("ceiling")?;
        let expect_capture = level("expect_capture")?;
        let event = case
            .get("event")
            .ok_or_else(|| "no `event`".to_owned())
            .and_then(|e| Event::from_value(e).map_err(|e| e.to_string()))?;
        let out = downlevel(&event, ceiling);
        let data = out.data();
        let expect_data = match case.get("expect_data") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
        };
        if out.capture() == expect_capture && data == expect_data {
            Ok(())
        } else {
            let got = serde_json::json!({"capture": out.capture().as_str(), "data": data});
            let mut got = got.to_string();
            got.truncate(200);
            Err(got)
        }
    })();
    match outcome {
        Ok(()) => Check::new(name, true, None),
        Err(detail) => Check::new(name, false, detail),
    }
}
