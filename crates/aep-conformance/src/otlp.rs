//! Class `otlp` (AEP-0005 §3, §5 item 3): the pinned golden events project onto their
//! pinned LogRecords (severity, `gen_ai.*` hoisting and the `max_capture` default
//! asserted exactly), and the §3.4 severity table covers every AEP level as the
//! severity registry states it. Check names follow `spec/conformance/run.py`.

use std::path::Path;

use aep_bridge::otlp::{severity_to_otlp, to_log_record, OtlpOptions};
use aep_core::{Event, Severity};
use serde_json::Value;

use crate::check::Check;
use crate::fixtures;
use crate::redaction::snippet;

/// The golden events `run.py` pins: the worked example (traceparent and `gen_ai`
/// hoisting), warning severity, error severity at capture `redacted` (body dropped), an
/// agent-scoped event.
pub(crate) const CASES: [usize; 4] = [3, 13, 15, 24];

/// Runs the class over `{fixtures}/conformance/{golden,otlp}/` and
/// `{fixtures}/schemas/registry/severity.json`.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let (golden, pins, registry) = match (
        fixtures::golden_events(fixtures),
        fixtures::read_json(fixtures, "conformance/otlp/otlp-expected.json"),
        fixtures::read_json(fixtures, "schemas/registry/severity.json"),
    ) {
        (Ok(g), Ok(p), Ok(r)) => (g, p, r),
        (Err(c), _, _) | (_, Err(c), _) | (_, _, Err(c)) => return vec![c],
    };
    let mut checks: Vec<Check> = CASES
        .iter()
        .map(|&i| projection(golden.get(i), i, pins.get(i.to_string())))
        .collect();
    let table = severity_table(&registry, "otlp", |s| {
        let o = severity_to_otlp(s);
        serde_json::json!({"severity_text": o.text, "severity_number": o.number})
    });
    checks.push(Check::new(
        "OTLP severity table complete",
        table.is_ok(),
        table.err(),
    ));
    checks
}

fn projection(event: Option<&Event>, i: usize, pin: Option<&Value>) -> Check {
    let ty = event.map_or("?", Event::event_type);
    let name = format!("OTLP projection[{i}] matches pin ({ty})");
    let (Some(event), Some(pin)) = (event, pin) else {
        return Check::fail(name, format!("golden[{i}] or its pin is missing"));
    };
    match to_log_record(event, &OtlpOptions::default()) {
        Ok(record) => {
            let got = record.to_data_model();
            Check::new(name, got == *pin, format!("got {}", snippet(&got.to_string())))
        }
        Err(e) => Check::fail(name, e.to_string()),
    }
}

/// Checks a mapping table against the severity registry's (`schemas/registry/
/// severity.json`): every level of its `order` is in the registry's `key` table, and this
/// crate maps it to the registry's value.
pub(crate) fn severity_table(
    registry: &Value,
    key: &str,
    ours: impl Fn(Severity) -> Value,
) -> Result<(), String> {
    let order = registry
        .get("order")
        .and_then(Value::as_array)
        .ok_or("the severity registry has no `order`")?;
    if order.len() != Severity::ALL.len() {
        return Err(format!("the registry orders {} levels", order.len()));
    }
    for level in order {
        let text = level.as_str().unwrap_or_default();
        let severity: Severity = text.parse().map_err(|e| format!("{e}"))?;
        let theirs = registry.get(key).and_then(|t| t.get(text));
        match theirs {
            None => return Err(format!("the `{key}` table has no `{text}`")),
            Some(v) if *v != ours(severity) => {
                return Err(format!("`{text}`: the registry says {v}, this SDK {}", ours(severity)))
            }
            Some(_) => {}
        }
    }
    Ok(())
}
