//! The down-leveling corpus (`fixtures/conformance/downlevel/cases.json`, AEP-0001 §8.2):
//! every case passes, and nothing but `capture` and `data` changes.

use crate::common;

use std::path::PathBuf;

use aep_core::capture::downlevel;
use aep_core::{Capture, Event};
use serde_json::Value;

fn cases() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/downlevel/cases.json");
    let text = std::fs::read_to_string(&path).expect("downlevel corpus");
    let doc: Value = serde_json::from_str(&text).expect("corpus is JSON");
    doc["cases"].as_array().expect("cases array").clone()
}

/// The capture level a case names under `key`.
fn level(case: &Value, key: &str) -> Capture {
    case[key].as_str().expect(key).parse().expect("level")
}

/// A case's event, parsed.
fn event(case: &Value) -> Event {
    Event::from_value(&case["event"]).expect("case event parses")
}

fn envelope_without_content(event: &Event) -> Value {
    let mut v = event.to_value();
    let map = v.as_object_mut().expect("event object");
    map.remove("data");
    map.remove("capture");
    v
}

#[test]
fn all_eighteen_cases_pass() {
    let cases = cases();
    assert_eq!(cases.len(), 18, "the corpus holds 18 cases");
    for case in &cases {
        let name = case["name"].as_str().expect("case name");
        let (ceiling, event) = (level(case, "ceiling"), event(case));
        let out = downlevel(&event, ceiling);
        let expect_capture = level(case, "expect_capture");
        let expect_data = match &case["expect_data"] {
            Value::Null => None,
            v => Some(v.clone()),
        };
        assert_eq!(
            (out.capture(), out.data()),
            (expect_capture, expect_data),
            "downlevel case failed: {name}"
        );
        assert_eq!(
            envelope_without_content(&out),
            envelope_without_content(&event),
            "downlevel changed more than capture and data: {name}"
        );
    }
}

#[test]
fn pass_through_cases_keep_bytes() {
    for case in &cases() {
        let (ceiling, event) = (level(case, "ceiling"), event(case));
        if ceiling >= event.capture() {
            assert_eq!(
                downlevel(&event, ceiling).to_json(),
                event.to_json(),
                "{}",
                case["name"]
            );
        }
    }
}

#[test]
fn downleveling_is_idempotent_on_the_corpus() {
    for case in &cases() {
        let (ceiling, event) = (level(case, "ceiling"), event(case));
        let once = downlevel(&event, ceiling);
        assert_eq!(downlevel(&once, ceiling), once, "{}", case["name"]);
    }
}

mod property {
    use super::common::{self, scalars, Shape};
    use aep_core::capture::{downlevel, downlevel_in_place, downlevel_redacting};
    use aep_core::schema::{FieldCapture, TYPE_CAPTURES};
    use aep_core::{Capture, Event};
    use proptest::prelude::*;
    use serde_json::Value;

    fn json() -> impl Strategy<Value = Value> {
        let shape = Shape {
            depth: 5,
            size: 64,
            width: 6,
        };
        common::json(scalars(any::<f64>(), "[a-z]{0,6}"), key(), shape)
    }

    /// Member names the annotated schemas use, so the pruning and degrading paths run.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "answer",
                "text",
                "values",
                "option",
                "prompt",
                "kind",
                "options",
                "fields",
                "choices",
                "label",
                "id",
                "error",
                "message",
                "type",
                "tool",
                "result",
                "result_redacted",
                "documents",
                "content",
                "content_redacted",
                "citations",
                "source",
                "uri",
                "cited_text",
                "guardrail",
                "explanation",
                "args",
                "context",
            ])
            .prop_map(str::to_owned),
            "[a-z_]{1,8}",
        ]
    }

    fn event_type() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(
                aep_core::types::REGISTRY
                    .iter()
                    .map(|t| t.name)
                    .collect::<Vec<_>>()
            )
            .prop_map(str::to_owned),
            Just("x.acme.tool.synced".to_owned()),
            "[a-z.]{0,12}",
        ]
    }

    fn capture() -> impl Strategy<Value = Capture> {
        prop::sample::select(Capture::ALL.to_vec())
    }

    fn event() -> impl Strategy<Value = Event> {
        (
            event_type(),
            proptest::option::of(capture()),
            proptest::option::of(json()),
            proptest::option::of("[A-Za-z ]{0,8}"),
        )
            .prop_map(|(ty, cap, data, subject)| {
                let mut e = Event::new("01J", ty, "2026-07-03T10:00:00Z", "aep://h/agent/a", "a");
                e.set_capture(cap);
                e.set_subject(subject);
                if let Some(data) = data {
                    e.set_data(data);
                }
                e
            })
    }

    /// `data` holding any of the annotated members of `fields`, nested as annotated,
    /// each member arbitrary JSON where it is not an annotated object or array.
    fn annotated_data(fields: &'static [FieldCapture], depth: u32) -> BoxedStrategy<Value> {
        let members: Vec<BoxedStrategy<Option<(String, Value)>>> = fields
            .iter()
            .map(|f| {
                let value = if depth > 0 && !f.properties.is_empty() {
                    prop_oneof![annotated_data(f.properties, depth - 1), json()].boxed()
                } else if depth > 0 && !f.items.is_empty() {
                    prop::collection::vec(annotated_data(f.items, depth - 1), 0..3)
                        .prop_map(Value::Array)
                        .boxed()
                } else {
                    json().boxed()
                };
                proptest::option::of(value.prop_map(move |v| (f.name.to_owned(), v))).boxed()
            })
            .collect();
        members
            .prop_map(|members| Value::Object(members.into_iter().flatten().collect()))
            .boxed()
    }

    /// An event of an annotated registered type whose `data` uses its annotations.
    fn annotated_event() -> impl Strategy<Value = Event> {
        (prop::sample::select(TYPE_CAPTURES.to_vec()), capture()).prop_flat_map(|(t, cap)| {
            annotated_data(t.fields, 3).prop_map(move |data| {
                Event::new(
                    "01J",
                    t.event_type,
                    "2026-07-03T10:00:00Z",
                    "aep://h/agent/a",
                    "a",
                )
                .with_capture(cap)
                .with_data(data)
            })
        })
    }

    fn has_redacted_or_full_field(v: &Value) -> bool {
        // Canary strings planted below are never copied into a lower level.
        v.to_string().contains("CANARY")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn never_panics_never_raises(e in event(), ceiling in capture()) {
            let out = downlevel(&e, ceiling);
            prop_assert!(out.capture() <= e.capture(), "capture rose");
            if out.capture() != e.capture() {
                prop_assert!(out.capture() <= ceiling);
                prop_assert_ne!(out.capture(), Capture::Redacted, "redacted minted");
            } else {
                prop_assert_eq!(out.to_json(), e.to_json(), "an untouched event changed");
            }
            if out.capture() == Capture::None && e.capture() != Capture::None {
                prop_assert!(out.data_raw().is_none());
            }
            // Idempotent, and in-place agrees with the copying form.
            prop_assert_eq!(downlevel(&out, ceiling), out.clone());
            let mut again = e.clone();
            prop_assert_eq!(downlevel_in_place(&mut again, ceiling), out.capture());
            prop_assert_eq!(again, out);
        }

        #[test]
        fn a_redacting_hop_lands_on_the_ceiling_and_never_raises(e in event(), ceiling in capture()) {
            let mut out = e.clone();
            let level = downlevel_redacting(&mut out, ceiling, |v: &mut Value| *v = Value::from("[R]"));
            prop_assert_eq!(level, e.capture().min(ceiling));
            prop_assert_eq!(out.capture(), level);
            if level < Capture::Redacted {
                prop_assert_eq!(out, downlevel(&e, ceiling), "below redacted it is mechanical");
            }
        }

        /// The validator's payload-capture rule and the down-leveler read the same
        /// annotations (AEP-0002 §5.1): what a hop lowers honors the level it lands on.
        #[test]
        fn what_a_hop_lowers_passes_the_capture_rule(e in annotated_event(), ceiling in capture()) {
            let out = downlevel(&e, ceiling);
            if out.capture() < e.capture() {
                let issues = aep_core::validate::validate_event(&out);
                let flagged: Vec<_> = issues
                    .iter()
                    .filter(|i| i.rule() == aep_core::validate::Rule::PayloadCapture)
                    .collect();
                prop_assert!(flagged.is_empty(), "{:?} in {}", flagged, out.to_json());
            }
        }

        #[test]
        fn content_fields_never_survive_metadata(answer in json(), ceiling in prop::sample::select(vec![Capture::None, Capture::Metadata, Capture::Redacted])) {
            // A full tool.completed with content planted in every content-gated slot.
            let data = serde_json::json!({
                "tool": {"name": "Bash"},
                "result": {"CANARY": answer.clone()},
                "result_redacted": "CANARY",
                "status": "success",
            });
            let e = Event::new("1", "tool.completed", "t", "s", "a")
                .with_capture(Capture::Full)
                .with_data(data);
            let out = downlevel(&e, ceiling);
            prop_assert!(out.capture() <= Capture::Metadata);
            prop_assert!(!out.data().as_ref().is_some_and(has_redacted_or_full_field));
        }
    }
}

/// What a hop writes still decodes into the payload type of its event: down-leveling
/// never removes a required member (required members are all `metadata`-gated).
#[test]
fn downleveled_golden_events_keep_their_payload_shape() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/golden/golden.jsonl");
    let text = std::fs::read_to_string(path).expect("golden corpus");
    for (i, line) in text.lines().enumerate() {
        let mut event: Event = line.parse().expect("golden event");
        event.set_capture(Some(Capture::Full));
        for ceiling in [Capture::Metadata, Capture::Redacted] {
            let out = downlevel(&event, ceiling);
            assert_eq!(out.capture(), Capture::Metadata, "golden line {i}");
            if let Err(e) = aep_core::payload::Payload::from_event(&out) {
                panic!("golden line {i} down-leveled to {ceiling} no longer decodes: {e}");
            }
        }
    }
}
