//! The attr-match corpus (`fixtures/conformance/attr-match/cases.json`, AEP-0003 §6):
//! every match case gives its verdict, on parsed events and on raw JSON, and every
//! invalid filter is refused.
#![allow(clippy::unwrap_used)] // test code: a broken fixture should fail loudly

use crate::common;

use aep_core::filter::Filter;
use aep_core::Event;
use serde_json::{Map, Value};

const CASES: &str = include_str!("../../../../fixtures/conformance/attr-match/cases.json");

fn corpus(class: &str) -> Vec<Value> {
    let all: Value = serde_json::from_str(CASES).unwrap();
    all[class].as_array().unwrap().clone()
}

/// The corpus events carry only the attributes the case is about; an `Event` needs the
/// required ones too, so placeholders fill the gaps (never on a key the filter names).
fn as_event(case: &Value) -> Event {
    let mut obj: Map<String, Value> = case["event"].as_object().unwrap().clone();
    for (key, placeholder) in [
        ("aep", "0.1"),
        ("id", "01J0000000000000000000000"),
        ("time", "2026-07-03T10:00:00.000Z"),
        ("source", "aep://h/agent/a"),
        ("agent", "placeholder"),
    ] {
        if !obj.contains_key(key) {
            assert!(
                case["filter"].get(key).is_none(),
                "{}: placeholder on a filtered key",
                case["name"]
            );
            obj.insert(key.into(), placeholder.into());
        }
    }
    Event::from_value(&Value::Object(obj)).unwrap()
}

#[test]
fn every_match_case_gives_its_verdict() {
    let cases = corpus("match");
    assert_eq!(cases.len(), 14);
    let mut decided = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let want = case["match"].as_bool().unwrap();
        let filter = Filter::from_value(&case["filter"])
            .unwrap_or_else(|e| panic!("attr-match: {name}: valid filter refused: {e}"));
        assert_eq!(
            filter.matches_value(&case["event"]),
            want,
            "attr-match: {name} (raw JSON)"
        );
        assert_eq!(
            filter.matches(&as_event(case)),
            want,
            "attr-match: {name} (Event)"
        );
        // decided on the bytes of the event, read in place
        let from_bytes = filter.decide_json(as_event(case).to_json().as_bytes());
        assert!(
            from_bytes.is_none_or(|v| v == want),
            "attr-match: {name} (JSON bytes)"
        );
        decided += usize::from(from_bytes.is_some());
        assert_eq!(
            &filter.to_value(),
            &case["filter"],
            "attr-match: {name}: write-back"
        );
    }
    assert_eq!(decided, cases.len(), "every corpus event is read in place");
}

#[test]
fn every_invalid_filter_is_refused_naming_its_key() {
    let cases = corpus("invalid");
    assert_eq!(cases.len(), 10);
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let err = Filter::from_value(&case["filter"])
            .map(|f| f.to_json())
            .expect_err(&format!("attr-match rejects: {name}: accepted"));
        let key = case["filter"].as_object().unwrap().keys().next().unwrap();
        assert_eq!(
            err.key(),
            Some(key.as_str()),
            "attr-match rejects: {name}: {err}"
        );
        assert_eq!(err.code(), "invalid-filter");
        // The text form is refused the same way.
        assert_eq!(
            Filter::from_json(&case["filter"].to_string()).unwrap_err(),
            err,
            "{name}"
        );
    }
}

#[test]
fn spec_examples_parse_and_round_trip() {
    for text in [
        r#"{"type":["attention.*","error.*"],"severity":{"gte":"notice"}}"#,
        r#"{"session":"s_8f2c"}"#,
        r#"{"agent":["claude-code","codex"],"type":"tool.denied"}"#,
    ] {
        assert_eq!(Filter::from_json(text).unwrap().to_json(), text);
    }
}

mod bad_input {
    use super::common::{json, scalars, Shape};
    use aep_core::filter::Filter;
    use proptest::prelude::*;
    use serde_json::Value;

    fn json_value() -> impl Strategy<Value = Value> {
        let strings = prop_oneof![
            Just("*".to_owned()),
            Just("tool.*".to_owned()),
            Just("notice".to_owned()),
            Just("gte".to_owned()),
            "[a-z.*]{0,8}",
        ];
        let keys = prop_oneof![
            Just("type".to_owned()),
            Just("severity".to_owned()),
            Just("capture".to_owned()),
            Just("epoch".to_owned()),
            Just("gte".to_owned()),
            Just("lte".to_owned()),
            "[a-zA-Z0-9_]{0,22}",
        ];
        let shape = Shape {
            depth: 4,
            size: 32,
            width: 5,
        };
        json(scalars(any::<f64>(), strings), keys, shape)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Arbitrary JSON never panics the parser; whatever is accepted writes back
        /// unchanged and can be evaluated.
        #[test]
        fn arbitrary_json(value in json_value()) {
            if let Ok(filter) = Filter::from_value(&value) {
                prop_assert_eq!(filter.to_value(), value.clone());
                let _ = filter.matches_value(&value);
            }
        }

        /// Deciding from the bytes gives the parsed event's verdict whenever it decides,
        /// whatever the spelling of the members around a base envelope: escapes in keys
        /// and values, `-0`, leading zeros, fractions, exponents, integers past 64 bits,
        /// repeated keys, values of the wrong type. And every envelope read in place is
        /// decided.
        #[test]
        fn verdict_from_bytes_is_the_parsed_verdict(
            members in prop::collection::vec((0..KEYS.len(), 0..VALUES.len()), 0..8),
            filter in 0..FILTERS.len(),
        ) {
            let mut body: Vec<String> = vec![
                r#""aep":"0.1""#.into(),
                r#""id":"1""#.into(),
                r#""time":"t""#.into(),
                r#""source":"s""#.into(),
            ];
            body.extend(members.iter().map(|&(k, v)| format!("{}:{}", KEYS[k], VALUES[v])));
            let text = format!("{{{}}}", body.join(","));
            let filter = Filter::from_json(FILTERS[filter]).unwrap();
            let decided = filter.decide_json(text.as_bytes());
            let parsed = aep_core::Event::from_slice(text.as_bytes());
            if let Some(d) = decided {
                // `{}` decides on any object; every other verdict is on an event
                if !filter.is_empty() {
                    let event = parsed.as_ref().map_err(|e| TestCaseError::fail(format!("{text}: decided, but {e}")))?;
                    prop_assert_eq!(d, filter.matches(event), "{} on {}", filter.to_json(), text);
                }
            }
            if parsed.is_ok() && aep_core::EnvelopeView::read(&text).is_some() {
                prop_assert!(decided.is_some(), "{} on {}", filter.to_json(), text);
            }
        }

        /// Arbitrary text, invalid UTF-8 included, never panics.
        #[test]
        fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = Filter::from_json(&text);
        }
    }

    const KEYS: &[&str] = &[
        r#""agent""#,
        r#""ag\u0065nt""#,
        r#""session""#,
        r#""type""#,
        r#""severity""#,
        r#""capture""#,
        r#""epoch""#,
        r#""acme""#,
        r#""data""#,
        r#""id""#,
    ];
    const VALUES: &[&str] = &[
        r#""a""#,
        r#""b""#,
        r#""\u0061""#,
        r#""a\"b""#,
        r#""é""#,
        r#""notice""#,
        r#""error""#,
        r#""info""#,
        r#""full""#,
        r#""metadata""#,
        r#""tool.called""#,
        r#""tool""#,
        "0",
        "-0",
        "1",
        "007",
        "-5",
        "1.0",
        "1e0",
        "18446744073709551616",
        "-9223372036854775809",
        "true",
        "false",
        "null",
        "[1]",
        r#"{"a":1}"#,
    ];
    const FILTERS: &[&str] = &[
        "{}",
        r#"{"agent":"a"}"#,
        r#"{"agent":["a","b"],"session":"b"}"#,
        r#"{"severity":{"gte":"notice"}}"#,
        r#"{"capture":"full"}"#,
        r#"{"epoch":[0,1]}"#,
        r#"{"type":["tool.*","a"]}"#,
        r#"{"acme":"a"}"#,
        r#"{"acme":[1,-5,true]}"#,
        r#"{"acme":0,"agent":"a","severity":"info","capture":"metadata","epoch":1}"#,
        r#"{"run":"r"}"#,
        r#"{"step":"p","run":["q","r"]}"#,
        r#"{"subject":"x","cause":"c"}"#,
        r#"{"id":"1","source":"s","session":"b"}"#,
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3_000))]

        /// On whole envelopes (what a relay stores), the verdict from the bytes is the
        /// parsed event's, and every plainly written one is decided.
        #[test]
        fn verdict_on_an_envelope_is_the_parsed_events(
            agent in 0..3usize,
            ty in 0..4usize,
            severity in 0..4usize,
            capture in 0..3usize,
            epoch in 0..3usize,
            acme in 0..6usize,
            scope in 0..4usize,
            filter in 0..FILTERS.len(),
        ) {
            let agent = [r#""a""#, r#""b""#, r#""\u0061""#][agent];
            let ty = ["tool.called", "tool.completed", "run.started", "x.acme.tool.x"][ty];
            let severity = ["", r#","severity":"notice""#, r#","severity":"debug""#, r#","severity":"error""#][severity];
            let capture = ["", r#","capture":"full""#, r#","capture":"none""#][capture];
            let epoch = ["", r#","epoch":1"#, r#","epoch":0"#][epoch];
            let acme = ["", r#","acme":"a""#, r#","acme":1"#, r#","acme":-5"#, r#","acme":true"#, r#","acme":"\u0061""#][acme];
            let scope = ["", r#","run":"r""#, r#","subject":"x","cause":"c""#, r#","step":"p","run":"q""#][scope];
            let line = format!(
                r#"{{"aep":"0.1","id":"1","type":"{ty}","time":"t","source":"s","agent":{agent},"session":"b","seq":1{scope}{epoch}{severity}{capture}{acme},"data":{{"agent":"a","n":[1.5e3,"x\"y"]}}}}"#
            );
            let event = aep_core::Event::from_slice(line.as_bytes()).unwrap();
            let filter = Filter::from_json(FILTERS[filter]).unwrap();
            let decided = filter.decide_json(line.as_bytes());
            prop_assert!(decided.is_none_or(|d| d == filter.matches(&event)), "{} on {}", filter.to_json(), line);
            if !line.contains("u0061") {
                prop_assert_eq!(decided, Some(filter.matches(&event)), "{} on {}", filter.to_json(), line);
            }
        }
    }

    /// `-0` is no integer spelling: a filter on an extension's integer value does not
    /// equal it, on a `Value`, a parsed event or the bytes alike.
    #[test]
    fn minus_zero_equals_no_integer_on_every_reading() {
        let filter = Filter::from_json(r#"{"acme":0}"#).unwrap();
        let line = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","acme":-0}"#;
        let value: Value = serde_json::from_str(line).unwrap();
        assert!(!filter.matches_value(&value));
        assert!(!filter.matches(&aep_core::Event::from_slice(line.as_bytes()).unwrap()));
        assert_eq!(filter.decide_json(line.as_bytes()), Some(false));
        let zero = line.replace("-0", "0");
        assert_eq!(filter.decide_json(zero.as_bytes()), Some(true));
    }

    #[test]
    fn bytes_that_are_not_an_object_are_left_to_a_parse() {
        let not_objects: [&[u8]; 5] = [b"not json", b"[1]", b"\"a\"", b"", b" 1"];
        // `{}` reads only the opening brace; the others read the members they name
        let broken: [&[u8]; 3] = [b"{\"agent\":\"a\"} x", b"{", b"{\"agent\":\xff}"];
        for filter in FILTERS {
            let filter = Filter::from_json(filter).unwrap();
            let also = if filter.is_empty() {
                &[][..]
            } else {
                &broken[..]
            };
            for bad in not_objects.iter().chain(also) {
                let got = filter.decide_json(bad);
                assert_eq!(got, None, "{} on {:?}", filter.to_json(), bad);
            }
        }
    }

    /// An accepted event may carry `data` a `Value` cannot hold (an exponent past `f64`,
    /// a lone surrogate): skipped, it changes nothing, and the verdict is the parsed
    /// event's.
    #[test]
    fn data_a_value_cannot_hold_does_not_change_the_verdict() {
        let filter = Filter::from_json(r#"{"agent":"a","severity":{"gte":"notice"}}"#).unwrap();
        for data in [r#"{"n":1e400}"#, r#"{"t":"\udcff"}"#, r#"{"n":1}"#] {
            for (agent, severity) in [("a", "error"), ("b", "error"), ("a", "info")] {
                let line = format!(
                    r#"{{"aep":"0.1","id":"1","type":"tool.called","time":"2026-01-01T00:00:00.000Z","source":"aep://h/agent/a","agent":"{agent}","session":"s","seq":0,"severity":"{severity}","data":{data}}}"#
                );
                let event = aep_core::Event::from_slice(line.as_bytes()).unwrap();
                assert_eq!(
                    filter.decide_json(line.as_bytes()),
                    Some(filter.matches(&event)),
                    "{line}"
                );
            }
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!("{{\"acme\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(Filter::from_json(&deep).is_err());
    }
}
