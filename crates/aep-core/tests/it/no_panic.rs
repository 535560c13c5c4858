//! No input makes parsing or validation panic: arbitrary bytes, arbitrary JSON, mutated
//! golden lines, deep nesting, huge numbers, invalid UTF-8, out-of-range `seq`.
//! Property cases are bounded so the file runs in seconds.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use aep_core::types::EventType;
use aep_core::validate::{
    validate_envelope_view, validate_event, validate_value, Rule, StreamValidator,
};
use aep_core::{EnvelopeView, Event};
use std::sync::LazyLock;

use common::{scalars, Shape};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

static GOLDEN_VALUES: LazyLock<Vec<Value>> = LazyLock::new(|| {
    common::lines(common::GOLDEN)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
});

static GOLDEN_EVENTS: LazyLock<Vec<Event>> = LazyLock::new(|| {
    GOLDEN_VALUES
        .iter()
        .map(|v| Event::from_value(v).unwrap())
        .collect()
});

fn golden_line(i: usize) -> Value {
    GOLDEN_VALUES[i % GOLDEN_VALUES.len()].clone()
}

/// Everything the crate offers on bytes, run for its (absence of) panics; plus the one
/// property that ties the two validators together.
fn exercise_bytes(bytes: &[u8]) {
    let parsed = Event::from_slice(bytes);
    // the in-place reading: where it reads, the parse reads too (the same attributes:
    // tests/event_reader.rs)
    if let Some(view) = std::str::from_utf8(bytes).ok().and_then(EnvelopeView::read) {
        assert!(parsed.is_ok(), "{:?}", String::from_utf8_lossy(bytes));
        let _ = validate_envelope_view(&view);
        let _ = view.extensions().count();
    }
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        exercise_value(&value);
    }
    if let Ok(event) = parsed {
        let _ = event.typed_payload();
        // Writing back and reading again is the identity (AEP-0004 §4.4 forwarding).
        let again = Event::from_slice(event.to_json().as_bytes());
        assert_eq!(again.as_ref().ok(), Some(&event), "{}", event.to_json());
        let _ = validate_event(&event);
        let mut stream = StreamValidator::new().require_acks(true);
        let _ = stream.push(&event);
        let _ = stream.push(&event);
        let _ = stream.finish();
    }
}

fn exercise_value(value: &Value) {
    let issues = validate_value(value);
    if let Ok(event) = Event::from_value(value) {
        // Parsing settles the JSON types; what remains must be judged the same way.
        assert_eq!(issues, validate_event(&event), "{value}");
        let mut stream = StreamValidator::new();
        let _ = stream.push(&event);
        let _ = stream.finish();
    } else {
        // What does not parse into an Event is never reported valid.
        assert!(!issues.is_empty(), "valid but unparseable: {value}");
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let strings = prop_oneof!["[a-z0-9._:/ -]{0,12}", any::<String>()];
    let shape = Shape {
        depth: 4,
        size: 32,
        width: 6,
    };
    common::json(scalars(any::<f64>(), strings), "[a-z_]{1,8}", shape)
}

/// Names the mutations aim at: the core attributes, `data`, and some extension names.
fn arb_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(aep_core::event::CORE_ATTRIBUTES.to_vec()).prop_map(str::to_owned),
        "[a-zA-Z0-9_]{0,24}",
    ]
}

/// Type strings: mostly near the AEP-0001 §6 grammar (so many parse), some arbitrary.
fn arb_type() -> impl Strategy<Value = String> {
    let category = prop::sample::select(aep_core::types::CATEGORIES.to_vec());
    prop_oneof![
        (
            prop::option::of("[a-z0-9-]{0,6}"),
            prop_oneof![category.prop_map(str::to_owned), "[a-z_]{0,6}"],
            "[a-z0-9_]{0,6}(\\.[a-zA-Z0-9_-]{0,4}){0,2}",
        )
            .prop_map(|(vendor, category, rest)| match vendor {
                Some(v) => format!("x.{v}.{category}.{rest}"),
                None => format!("{category}.{rest}"),
            }),
        "\\PC{0,16}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        exercise_bytes(&bytes);
    }

    #[test]
    fn arbitrary_json(value in arb_json()) {
        exercise_value(&value);
        exercise_bytes(value.to_string().as_bytes());
    }

    #[test]
    fn mutated_golden_lines(line in 0usize..64, name in arb_name(), replacement in arb_json(), remove in any::<bool>()) {
        let mut value = golden_line(line);
        let map = value.as_object_mut().unwrap();
        if remove {
            map.shift_remove(&name);
        } else {
            map.insert(name, replacement);
        }
        exercise_value(&value);
        exercise_bytes(value.to_string().as_bytes());
    }

    #[test]
    fn type_strings(raw in arb_type()) {
        if let Ok(t) = EventType::parse(&raw) {
            // The parts put back together are the string (AEP-0001 §6 grammar).
            let rebuilt = match t.vendor() {
                Some(v) => format!("x.{v}.{}.{}", t.category(), t.rest()),
                None => format!("{}.{}", t.category(), t.rest()),
            };
            prop_assert_eq!(rebuilt, raw.as_str());
            prop_assert!(t.bare().ends_with(t.rest()));
            let _ = (t.is_command(), t.is_ack(), t.is_sequenced(), t.registered());
        }
    }

    #[test]
    fn mutated_payloads(line in 0usize..64, name in "[a-z_]{1,12}", replacement in arb_json()) {
        let mut value = golden_line(line);
        if let Some(Value::Object(data)) = value.get_mut("data") {
            // Replace an existing member when the name hits one, or add one.
            let key = data.keys().find(|k| k.starts_with(&name[..1])).cloned().unwrap_or(name);
            data.insert(key, replacement);
        }
        exercise_value(&value);
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn golden_streams_in_any_order(order in Just((0..64).collect::<Vec<usize>>()).prop_shuffle()) {
        let mut stream = StreamValidator::new().require_acks(true);
        for i in order {
            let _ = stream.push(&GOLDEN_EVENTS[i]);
        }
        let _ = stream.finish();
    }
}

fn nested(depth: usize, open: &str, close: &str) -> String {
    format!("{}{}", open.repeat(depth), close.repeat(depth))
}

#[test]
fn deeply_nested_json_is_refused_not_a_stack_overflow() {
    for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
        let deep = nested(10_000, open, close);
        exercise_bytes(deep.as_bytes());
        assert!(Event::from_slice(deep.as_bytes()).is_err());
        let line = format!(
            r#"{{"aep":"0.1","id":"1","type":"state.snapshot","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":0,"data":{{"key":"k","value":{deep}}}}}"#
        );
        exercise_bytes(line.as_bytes());
        let ext = format!(
            r#"{{"aep":"0.1","id":"1","type":"agent.idle","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","acme":{deep}}}"#
        );
        exercise_bytes(ext.as_bytes());
    }
}

#[test]
fn a_deep_value_built_in_memory_validates() {
    // Built by moving, never through `json!`, which would clone the value recursively.
    let mut deep = Value::from(0);
    for _ in 0..10_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut data = Map::new();
    data.insert("client".to_owned(), json!({"name": "x"}));
    data.insert("deep".to_owned(), deep);
    let mut event = golden_line(0);
    event["data"] = Value::Object(data);
    event["acmedeep"] = json!([]);
    let issues = validate_value(&event);
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].rule(), Rule::ExtensionValue);
    // serde_json drops nested values recursively; unwind the nesting by hand so the
    // test's own cleanup cannot overflow a small test-thread stack.
    let mut stack = vec![event];
    while let Some(mut v) = stack.pop() {
        match &mut v {
            Value::Array(items) => stack.append(items),
            Value::Object(map) => stack.extend(std::mem::take(map).into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[test]
fn huge_and_negative_numbers() {
    let base = r#"{"aep":"0.1","id":"1","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","#;
    for (seq, parses) in [
        ("-1", false),
        ("18446744073709551616", false),
        ("18446744073709551615", true),
        ("1e400", false),
        ("1.5", false),
        ("-0", false),
        ("99999999999999999999999999999999999999999", false),
        ("0", true),
    ] {
        let line = format!(r#"{base}"seq":{seq}}}"#);
        exercise_bytes(line.as_bytes());
        assert_eq!(
            Event::from_slice(line.as_bytes()).is_ok(),
            parses,
            "seq {seq}"
        );
        if let Ok(value) = serde_json::from_str::<Value>(&line) {
            let issues = validate_value(&value);
            assert_eq!(issues.is_empty(), parses, "seq {seq}: {issues:?}");
            if !parses {
                assert_eq!(
                    (issues[0].rule(), issues[0].attr()),
                    (Rule::AttrType, Some("seq"))
                );
            }
        }
    }
    let epoch = format!(r#"{base}"seq":0,"epoch":-1}}"#);
    let issues = validate_value(&serde_json::from_str(&epoch).unwrap());
    assert_eq!(
        (issues[0].rule(), issues[0].attr()),
        (Rule::AttrType, Some("epoch"))
    );
    let payload = json!({"aep":"0.1","id":"1","type":"agent.heartbeat","time":"2026-07-03T10:00:00Z",
        "source":"aep://h/agent/a","agent":"a","data":{"tick": -1e308, "interval_ms": 1.7976931348623157e308}});
    exercise_value(&payload);
}

#[test]
fn malformed_input_is_refused() {
    for bytes in [
        // invalid UTF-8, and a lone surrogate escape
        &b"\xff\xfe\xfd"[..],
        b"{\"aep\":\"0.1\",\"id\":\"\xc3\x28\"}",
        b"{\"aep\":\"0.1\",\"id\":\"1\",\"type\":\"agent.idle\",\"time\":\"2026-07-03T10:00:00Z\",\"source\":\"aep://h/agent/a\",\"agent\":\"\xed\xa0\x80\"}",
        b"{\"\xf0\x28\x8c\x28\":1}",
        b"\"\\ud800\"",
        // empty, and JSON that is no envelope
        b"",
        b"   ",
        b"null",
        b"0",
        b"\"\"",
        b"[]",
        b"{}",
        b"{\"aep\":null}",
    ] {
        exercise_bytes(bytes);
        assert!(Event::from_slice(bytes).is_err(), "{bytes:?}");
    }
}

#[test]
fn truncated_input() {
    let line = common::GOLDEN.lines().next().unwrap().as_bytes();
    for end in 0..line.len() {
        exercise_bytes(&line[..end]);
    }
}
