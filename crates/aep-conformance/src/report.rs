//! The machine-readable report shared by the protocol's conformance tools
//! (`spec/conformance/README.md`, "The report format"), and its timestamps.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aep_core::envelope::rfc3339_millis;

use serde_json::{json, Value};

use crate::check::Check;

/// The report's `tool` for this runner.
///
/// ```
/// assert_eq!(aep_conformance::report::TOOL, "run-rs");
/// ```
pub const TOOL: &str = "run-rs";

/// Builds the `aep-conformance-report` object, `formatVersion` 1.
///
/// ```
/// use aep_conformance::{report, Check};
/// let doc = report::report(&[Check::pass("a")], "2026-07-22T12:00:00.000Z", "2026-07-22T12:00:01.000Z");
/// assert_eq!(doc["ok"], true);
/// assert_eq!(doc["summary"]["total"], 1);
/// ```
pub fn report(checks: &[Check], started_at: &str, finished_at: &str) -> Value {
    let pass = checks.iter().filter(|c| c.pass).count();
    let fail = checks.len() - pass;
    let rows: Vec<Value> = checks
        .iter()
        .map(|c| {
            let mut row = json!({
                "name": c.name,
                "status": if c.pass { "pass" } else { "fail" },
            });
            if let (Some(detail), Some(map)) = (&c.detail, row.as_object_mut()) {
                map.insert("detail".to_owned(), Value::from(detail.as_str()));
            }
            row
        })
        .collect();
    json!({
        "format": "aep-conformance-report",
        "formatVersion": 1,
        "aep": aep_core::AEP_VERSION,
        "tool": TOOL,
        "target": null,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "checks": rows,
        "summary": { "pass": pass, "fail": fail, "skip": 0, "total": checks.len() },
        "ok": fail == 0,
    })
}

/// Now, as an ISO 8601 UTC timestamp with milliseconds (`2026-07-22T12:00:00.000Z`).
///
/// ```
/// assert!(aep_conformance::report::now().ends_with('Z'));
/// ```
pub fn now() -> String {
    rfc3339_millis(SystemTime::now())
}

/// Formats milliseconds since the Unix epoch (proleptic Gregorian calendar), as
/// aep-core writes every `time` ([`rfc3339_millis`]: past year 9999 it is clamped).
///
/// ```
/// assert_eq!(aep_conformance::report::timestamp(0), "1970-01-01T00:00:00.000Z");
/// ```
pub fn timestamp(millis: u128) -> String {
    // The last millisecond of 9999 (where aep-core clamps anyway): every platform's
    // `SystemTime` reaches it.
    const LAST: u64 = 253_402_300_799_999;
    let millis = u64::try_from(millis).map_or(LAST, |m| m.min(LAST));
    rfc3339_millis(UNIX_EPOCH + Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(timestamp(1_784_721_600_500), "2026-07-22T12:00:00.500Z");
        // RFC 3339 has four-digit years: a later instant is clamped, not written wider.
        assert_eq!(timestamp(u128::MAX), "9999-12-31T23:59:59.999Z");
        assert!(aep_core::validate::is_date_time(&now()));
    }

    #[test]
    fn report_shape() {
        let checks = [Check::pass("a"), Check::fail("b", "why")];
        let r = report(&checks, "s", "f");
        assert_eq!(
            r["summary"],
            json!({"pass": 1, "fail": 1, "skip": 0, "total": 2})
        );
        assert_eq!(r["ok"], false);
        assert_eq!(r["checks"][0], json!({"name": "a", "status": "pass"}));
        assert_eq!(r["checks"][1]["detail"], "why");
        let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "format",
                "formatVersion",
                "aep",
                "tool",
                "target",
                "startedAt",
                "finishedAt",
                "checks",
                "summary",
                "ok"
            ]
        );
    }
}
