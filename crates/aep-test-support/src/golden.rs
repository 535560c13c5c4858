//! The conformance corpus's golden stream (`fixtures/conformance/golden/golden.jsonl`):
//! 64 events of every registered category, as lines and as parsed events.

use aep_core::Event;

const GOLDEN: &str = include_str!("../../../fixtures/conformance/golden/golden.jsonl");

/// Every event line, as written.
///
/// ```
/// assert_eq!(aep_test_support::golden::lines().len(), 64);
/// ```
pub fn lines() -> Vec<String> {
    GOLDEN
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every event, parsed; panics if one does not parse.
///
/// ```
/// let events = aep_test_support::golden::events();
/// assert!(events.iter().all(|e| !e.id().is_empty()));
/// ```
pub fn events() -> Vec<Event> {
    lines()
        .iter()
        .map(|l| l.parse().expect("a golden line parses"))
        .collect()
}
