//! `EventType::parse` is a hand-written single pass; the envelope schema's `type` pattern
//! is the grammar it must agree with (AEP-0001 §6), on every string.
#![allow(clippy::unwrap_used)] // test code: a broken case should fail loudly

use crate::common;

use aep_core::types::EventType;
use common::joined;
use proptest::prelude::*;

static PATTERN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    let schema: serde_json::Value = serde_json::from_str(include_str!(
        "../../../../fixtures/schemas/aep-event.schema.json"
    ))
    .unwrap();
    let pattern = schema["properties"]["type"]["pattern"].as_str().unwrap();
    regex::Regex::new(pattern).unwrap()
});

fn schema_pattern() -> &'static regex::Regex {
    &PATTERN
}

/// Pieces that land on every branch of the grammar: categories, the vendor prefix, dots
/// (doubled, leading, trailing), and bytes allowed in one kind of segment but not another.
const PIECES: &[&str] = &[
    "control",
    "tool",
    "agent",
    "attention",
    "x",
    "acme",
    "claude-code",
    "a",
    "b_2",
    "0",
    ".",
    ".",
    ".",
    "-",
    "_",
    "A",
    "é",
    " ",
    "widget",
    "controls",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn parse_agrees_with_the_schema_pattern(text in joined(PIECES, 0..8)) {
        let parsed = EventType::parse(&text);
        prop_assert_eq!(parsed.is_ok(), schema_pattern().is_match(&text), "{}", text);
        if let Ok(t) = parsed {
            // the parts read back as the dotted segments they came from
            let segs: Vec<&str> = text.split('.').collect();
            if segs[0] == "x" {
                prop_assert_eq!(t.vendor(), Some(segs[1]));
                prop_assert_eq!(t.category(), segs[2]);
                prop_assert_eq!(t.rest(), segs[3..].join("."));
            } else {
                prop_assert_eq!(t.vendor(), None);
                prop_assert_eq!(t.category(), segs[0]);
                prop_assert_eq!(t.rest(), segs[1..].join("."));
            }
            prop_assert_eq!(t.as_str(), text.as_str());
        }
    }

    #[test]
    fn arbitrary_text_agrees_too(text in "[a-z0-9_.x-]{0,24}") {
        prop_assert_eq!(EventType::parse(&text).is_ok(), schema_pattern().is_match(&text), "{}", text);
    }
}
