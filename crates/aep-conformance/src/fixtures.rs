//! Reading the fixture corpus. A file that cannot be read or parsed becomes a failing
//! check, never a crash.

use std::path::Path;

use aep_core::Event;
use serde_json::Value;

use crate::check::Check;

/// Reads a fixture file as text; on failure, the failing check to report.
pub fn read_text(fixtures: &Path, rel: &str) -> Result<String, Check> {
    let path = fixtures.join(rel);
    std::fs::read_to_string(&path).map_err(|e| {
        Check::fail(
            format!("fixture readable: {rel}"),
            format!("{}: {e}", path.display()),
        )
    })
}

/// Reads a fixture file as one JSON document.
pub fn read_json(fixtures: &Path, rel: &str) -> Result<Value, Check> {
    let text = read_text(fixtures, rel)?;
    serde_json::from_str(&text)
        .map_err(|e| Check::fail(format!("fixture readable: {rel}"), e.to_string()))
}

/// The golden corpus, one JSON value per non-blank line.
pub fn golden(fixtures: &Path) -> Result<Vec<Value>, Check> {
    golden_lines(fixtures, |line| serde_json::from_str(line))
}

/// The golden corpus as events read from their own lines (so `data` keeps its exact
/// text), beside the values [`golden`] reads.
pub fn golden_events(fixtures: &Path) -> Result<Vec<Event>, Check> {
    golden_lines(fixtures, |line| line.parse::<Event>())
}

/// Each non-blank line of the golden corpus read by `parse`; the first line it refuses
/// fails the fixture check with its line number.
fn golden_lines<T, E: std::fmt::Display>(
    fixtures: &Path,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<Vec<T>, Check> {
    const REL: &str = "conformance/golden/golden.jsonl";
    let text = read_text(fixtures, REL)?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            parse(line).map_err(|e| {
                Check::fail(
                    format!("fixture readable: {REL}"),
                    format!("line {}: {e}", i + 1),
                )
            })
        })
        .collect()
}

/// The `type` of an event value, for check names.
pub fn type_of(event: &Value) -> &str {
    event.get("type").and_then(Value::as_str).unwrap_or("?")
}

/// The `cases` array of a fixture file.
pub fn cases<'a>(doc: &'a Value, key: &str) -> &'a [Value] {
    doc.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}
