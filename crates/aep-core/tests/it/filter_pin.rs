//! What a filter pins (issue 32), held against the filter itself: an event the index
//! does not offer to a subscription never matches that subscription's filter, on a
//! parsed event and on the same event read in place.

use aep_core::filter::{Filter, PinAttr};
use aep_core::{EnvelopeView, Event};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const SESSIONS: &[&str] = &["s1", "s2", "s.3", "é"];
const AGENTS: &[&str] = &["a", "b", "c"];
const TYPES: &[&str] = &[
    "tool.called",
    "tool.completed",
    "attention.requested",
    "progress",
    "x.acme.tool.synced",
    "x.other.thing",
];
const PATTERNS: &[&str] = &["tool.*", "attention.*", "x.acme.*", "x.*", "progress.*"];
const SEVERITIES: &[&str] = &["debug", "info", "notice", "error"];

/// One predicate's values: a scalar or an inclusion of one to three of `pool`.
fn values(pool: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop::collection::vec(prop::sample::select(pool), 1..4).prop_flat_map(|picked| {
        let one = Value::from(picked[0]);
        let all = Value::from(picked);
        prop_oneof![Just(one), Just(all)]
    })
}

fn type_values() -> impl Strategy<Value = Value> {
    let pool: Vec<&'static str> = TYPES.iter().chain(PATTERNS).copied().collect();
    prop::collection::vec(prop::sample::select(pool), 1..4).prop_map(Value::from)
}

fn filter() -> impl Strategy<Value = Filter> {
    (
        prop::option::of(values(SESSIONS)),
        prop::option::of(values(AGENTS)),
        prop::option::of(type_values()),
        prop::option::of(prop::sample::select(SEVERITIES)),
    )
        .prop_map(|(session, agent, ty, severity)| {
            let mut map = Map::new();
            for (key, value) in [("session", session), ("agent", agent), ("type", ty)] {
                if let Some(value) = value {
                    map.insert(key.into(), value);
                }
            }
            if let Some(s) = severity {
                map.insert("severity".into(), json!({ "gte": s }));
            }
            Filter::from_map(map).unwrap()
        })
}

fn event_line() -> impl Strategy<Value = String> {
    (
        prop::option::of(prop::sample::select(SESSIONS)),
        prop::sample::select(AGENTS),
        prop::sample::select(TYPES),
        prop::sample::select(SEVERITIES),
        any::<bool>(),
    )
        .prop_map(|(session, agent, ty, severity, escaped)| {
            // an escaped agent: a parse reads it, the reading in place does not
            let agent = if escaped {
                format!("\\u{:04x}{}", u32::from(agent.as_bytes()[0]), &agent[1..])
            } else {
                agent.to_owned()
            };
            let scope = session.map_or(String::new(), |s| format!(r#","session":"{s}","seq":1"#));
            format!(
                r#"{{"aep":"0.1","id":"1","type":"{ty}","time":"t","source":"s","agent":"{agent}"{scope},"severity":"{severity}"}}"#
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4_000))]

    /// Whatever the filter and the event: a match implies the event's key is one the
    /// filter is filed under, and the reading in place files the event as the parse does.
    #[test]
    fn an_event_the_index_does_not_offer_never_matches(filter in filter(), line in event_line()) {
        let event = Event::from_slice(line.as_bytes()).unwrap();
        if let Some(view) = EnvelopeView::read(&line) {
            for attr in PinAttr::ALL {
                prop_assert_eq!(attr.key_of_view(&view), attr.key_of(&event), "{:?} of {}", attr, line);
            }
        }
        let Some(pin) = filter.pin() else {
            return Ok(());
        };
        prop_assert!(!pin.keys().is_empty());
        let key = pin.attr().key_of(&event);
        if filter.matches(&event) {
            prop_assert!(pin.admits(key), "{} matches {} filed under {:?}", filter, line, key);
        }
    }
}

/// Every attr-match corpus filter that pins something files each corpus event it
/// matches under one of its keys.
#[test]
fn the_corpus_filters_file_what_they_match() {
    let all: Value = serde_json::from_str(include_str!(
        "../../../../fixtures/conformance/attr-match/cases.json"
    ))
    .unwrap();
    for case in all["match"].as_array().unwrap() {
        let filter = Filter::from_value(&case["filter"]).unwrap();
        let (Some(pin), true) = (filter.pin(), filter.matches_value(&case["event"])) else {
            continue;
        };
        let key = match pin.attr() {
            PinAttr::Category => case["event"]["type"]
                .as_str()
                .map(aep_core::filter::type_category),
            attr => case["event"][attr.as_str()].as_str(),
        };
        assert!(pin.admits(key), "{}: {:?}", case["name"], pin);
    }
}
