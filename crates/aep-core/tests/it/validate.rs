//! The validation corpus: every golden line is valid, the golden stream keeps the
//! cross-event rules, and every invalid case fails for the rule it names.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use aep_core::validate::{validate_event, validate_value, Issue, Rule, StreamValidator};
use aep_core::Event;
use serde_json::Value;

const INVALID: &str = include_str!("../../../../fixtures/conformance/invalid/cases.json");

fn golden() -> Vec<(Value, Event)> {
    common::lines(common::GOLDEN)
        .map(|l| (serde_json::from_str(l).unwrap(), l.parse().unwrap()))
        .collect()
}

#[test]
fn every_golden_line_is_valid_as_value_and_as_event() {
    let lines = golden();
    assert_eq!(lines.len(), 64);
    for (i, (value, event)) in lines.iter().enumerate() {
        assert_eq!(
            validate_value(value),
            Vec::<Issue>::new(),
            "golden[{i}] value"
        );
        assert_eq!(
            validate_event(event),
            Vec::<Issue>::new(),
            "golden[{i}] event"
        );
    }
}

#[test]
fn the_golden_stream_keeps_the_cross_event_rules_and_acks_every_command() {
    let mut v = StreamValidator::new().require_acks(true);
    for (i, (_, event)) in golden().iter().enumerate() {
        assert_eq!(v.push(event), Vec::<Issue>::new(), "golden[{i}]");
    }
    assert_eq!(v.finish(), Vec::<Issue>::new());
}

/// Each issue's rule and the attribute it names, in order.
fn found(issues: &[Issue]) -> Vec<(Rule, Option<&str>)> {
    issues.iter().map(|i| (i.rule(), i.attr())).collect()
}

/// The rule each invalid case must fail for, by case name.
fn expected_rule(case: &str) -> Rule {
    match case {
        "session-scoped without session"
        | "session-scoped without seq"
        | "agent-scoped with session"
        | "agent-scoped with seq"
        | "command with seq"
        | "attention.routed with seq" => Rule::Scoping,
        "single-segment type"
        | "unknown category"
        | "uppercase in type"
        | "vendor type too short (x.vendor.verb)" => Rule::TypeSyntax,
        "extension attribute name over 20 chars"
        | "extension attribute name with illegal charset" => Rule::ExtensionName,
        "extension attribute with object value" => Rule::ExtensionValue,
        "unknown severity" => Rule::Enum,
        "malformed traceparent" => Rule::Format,
        "unsupported envelope version" => Rule::Version,
        "negative seq" => Rule::AttrType,
        "form select field without choices" => Rule::PayloadRequired,
        "form answered with a non-choice string for a select without other:true" => {
            Rule::FormValues
        }
        "second run terminal (finished then cancelled)"
        | "run terminal repeated (failed twice, distinct events)" => Rule::RunTerminalExclusivity,
        "session ends with a dangling attention request" => Rule::EndedWithPendingAttention,
        "id collision within one emitter (same (source,id), different content)" => {
            Rule::IdCollision
        }
        "seq regression without an epoch bump" => Rule::SeqRegression,
        "epoch regression" => Rule::EpochRegression,
        "second ack for one command (accepted twice, distinct events)"
        | "conflicting ack decisions for one command (accepted then rejected)" => {
            Rule::AckExclusivity
        }
        "second session.ended for one session (distinct events)" => {
            Rule::SessionTerminalExclusivity
        }
        "agent.presence with an unregistered state"
        | "agent.health with an unregistered status" => Rule::PayloadEnum,
        "agent.presence missing the required state"
        | "run.finished cost missing the required currency" => Rule::PayloadRequired,
        "session.compacted with a non-integer token count"
        | "state.delta with a non-array delta"
        | "tool.completed cost total is a string (amounts are numbers, not bare-float strings)" => {
            Rule::PayloadType
        }
        other => panic!("no expected rule for invalid case `{other}`: add one"),
    }
}

/// Every issue of a case: single-event rules on each event (as JSON, as the event may
/// not parse), then the cross-event rules over the stream.
fn case_issues(case: &Value) -> Vec<Issue> {
    let events: Vec<&Value> = match case.get("events") {
        Some(Value::Array(events)) => events.iter().collect(),
        _ => vec![&case["event"]],
    };
    let mut issues = Vec::new();
    let mut stream = StreamValidator::new();
    for value in events {
        issues.extend(validate_value(value));
        if let Ok(event) = Event::from_value(value) {
            assert_eq!(validate_value(value), validate_event(&event), "{value}");
            issues.extend(stream.push(&event));
        }
    }
    issues.extend(stream.finish());
    issues
}

fn check_case(name: &str) {
    let doc: Value = serde_json::from_str(INVALID).unwrap();
    let case = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no invalid case named `{name}`"));
    let rule = expected_rule(name);
    let cited = case["rule"].as_str().unwrap();
    let issues = case_issues(case);
    let hit = issues.iter().find(|i| i.rule() == rule);
    let Some(hit) = hit else {
        panic!("`{name}` must fail with {rule}; got {issues:#?}");
    };
    assert!(
        hit.is_cited_by(cited),
        "`{name}`: issue cites {} but the case cites {cited}",
        hit.section()
    );
    // No stray rule fires alongside the named one.
    for i in &issues {
        assert_eq!(i.rule(), rule, "`{name}`: unexpected {i}");
    }
}

#[test]
fn the_invalid_corpus_has_35_cases_each_with_an_expected_rule() {
    let doc: Value = serde_json::from_str(INVALID).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 35);
    for case in cases {
        expected_rule(case["name"].as_str().unwrap());
    }
}

macro_rules! invalid_cases {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_case($name);
            }
        )*
    };
}

invalid_cases! {
    invalid_session_scoped_without_session => "session-scoped without session",
    invalid_session_scoped_without_seq => "session-scoped without seq",
    invalid_agent_scoped_with_session => "agent-scoped with session",
    invalid_agent_scoped_with_seq => "agent-scoped with seq",
    invalid_command_with_seq => "command with seq",
    invalid_attention_routed_with_seq => "attention.routed with seq",
    invalid_single_segment_type => "single-segment type",
    invalid_unknown_category => "unknown category",
    invalid_uppercase_in_type => "uppercase in type",
    invalid_vendor_type_too_short => "vendor type too short (x.vendor.verb)",
    invalid_extension_name_over_20_chars => "extension attribute name over 20 chars",
    invalid_extension_object_value => "extension attribute with object value",
    invalid_extension_name_illegal_charset => "extension attribute name with illegal charset",
    invalid_unknown_severity => "unknown severity",
    invalid_malformed_traceparent => "malformed traceparent",
    invalid_unsupported_envelope_version => "unsupported envelope version",
    invalid_negative_seq => "negative seq",
    invalid_form_select_without_choices => "form select field without choices",
    invalid_form_answer_not_a_choice => "form answered with a non-choice string for a select without other:true",
    invalid_second_run_terminal => "second run terminal (finished then cancelled)",
    invalid_run_terminal_repeated => "run terminal repeated (failed twice, distinct events)",
    invalid_session_ends_with_dangling_attention => "session ends with a dangling attention request",
    invalid_id_collision => "id collision within one emitter (same (source,id), different content)",
    invalid_seq_regression => "seq regression without an epoch bump",
    invalid_epoch_regression => "epoch regression",
    invalid_second_ack => "second ack for one command (accepted twice, distinct events)",
    invalid_conflicting_acks => "conflicting ack decisions for one command (accepted then rejected)",
    invalid_second_session_ended => "second session.ended for one session (distinct events)",
    invalid_presence_unregistered_state => "agent.presence with an unregistered state",
    invalid_presence_missing_state => "agent.presence missing the required state",
    invalid_health_unregistered_status => "agent.health with an unregistered status",
    invalid_compacted_non_integer_count => "session.compacted with a non-integer token count",
    invalid_state_delta_non_array => "state.delta with a non-array delta",
    invalid_cost_missing_currency => "run.finished cost missing the required currency",
    invalid_cost_total_string => "tool.completed cost total is a string (amounts are numbers, not bare-float strings)",
}

#[test]
fn unknown_types_and_attributes_are_tolerated() {
    let v = serde_json::json!({"aep": "0.1", "id": "TOL1", "type": "progress.some_future_member",
        "time": "2026-07-03T10:00:00Z", "source": "aep://h/agent/a", "agent": "a",
        "session": "s1", "seq": 0, "futureext": "x"});
    assert!(validate_value(&v).is_empty());
    let vendor = serde_json::json!({"aep": "0.1", "id": "V", "type": "x.acme.tool.synced",
        "time": "2026-07-03T10:00:00Z", "source": "aep://h/agent/a", "agent": "a",
        "session": "s1", "seq": 0, "data": {"anything": [1, 2]}});
    assert!(validate_value(&vendor).is_empty());
}

#[test]
fn issues_name_the_attribute() {
    let v = serde_json::json!({"aep": "0.2", "type": "", "time": "yesterday",
        "source": "adapter-a", "agent": 7, "session": "", "seq": 1.5, "epoch": -1,
        "severity": "fatal", "capture": 3, "data": [], "Bad": "x", "acmeobj": {}});
    let issues = validate_value(&v);
    let got = found(&issues);
    let want = vec![
        (Rule::Version, Some("aep")),
        (Rule::Required, Some("id")),
        (Rule::AttrType, Some("type")),
        (Rule::AttrType, Some("agent")),
        (Rule::Format, Some("time")),
        (Rule::Format, Some("source")),
        (Rule::AttrType, Some("session")),
        (Rule::AttrType, Some("seq")),
        (Rule::AttrType, Some("epoch")),
        (Rule::Enum, Some("severity")),
        (Rule::Enum, Some("capture")),
        (Rule::AttrType, Some("data")),
        (Rule::ExtensionName, Some("Bad")),
        (Rule::ExtensionValue, Some("acmeobj")),
    ];
    assert_eq!(got, want);
}

#[test]
fn seq_of_2_pow_64_is_an_attr_type_issue_not_a_panic() {
    let v: Value = serde_json::from_str(
        r#"{"aep":"0.1","id":"1","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":18446744073709551616}"#,
    )
    .unwrap();
    let issues = validate_value(&v);
    assert_eq!(issues.len(), 1);
    assert_eq!(
        (issues[0].rule(), issues[0].attr()),
        (Rule::AttrType, Some("seq"))
    );
}

#[test]
fn the_typescript_rule_vocabulary_is_covered() {
    for id in [
        "not-an-object",
        "version",
        "required",
        "attr-type",
        "type-syntax",
        "format",
        "enum",
        "scoping",
        "extension-name",
        "extension-value",
    ] {
        let rule: Rule = id.parse().unwrap();
        assert!(!rule.is_payload() && !rule.is_stream(), "{id}");
    }
}

#[test]
fn rule_ids_round_trip_and_are_unique() {
    let mut seen = std::collections::HashSet::new();
    for &rule in Rule::ALL {
        assert!(seen.insert(rule.as_str()));
        assert_eq!(rule.as_str().parse::<Rule>(), Ok(rule));
    }
    assert!("no-such-rule".parse::<Rule>().is_err());
}

/// AEP-0001 §8.2(a), AEP-0002 §5.1 rule 1: `data` honours the declared `capture`.
#[test]
fn a_field_above_the_declared_capture_is_a_payload_capture_issue() {
    let event = |capture: Option<&str>, data: Value| {
        let mut v = serde_json::json!({"aep": "0.1", "id": "1", "type": "tool.requested",
            "time": "2026-07-03T10:00:00Z", "source": "aep://h/agent/a", "agent": "a",
            "session": "s", "seq": 0, "data": data});
        if let Some(c) = capture {
            v["capture"] = Value::from(c);
        }
        v
    };
    let args = serde_json::json!({"tool": {"name": "Bash"}, "args": {"command": "ls"}});
    // `args` is annotated `full`: absent capture means `metadata`
    let issues = validate_value(&event(None, args.clone()));
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].rule(), Rule::PayloadCapture);
    assert_eq!(issues[0].attr(), Some("data.args"));
    assert_eq!(issues[0].section(), "AEP-0002 §5.1");
    assert!(issues[0].rule().is_payload());
    assert!(validate_value(&event(Some("redacted"), args.clone()))
        .iter()
        .any(|i| i.rule() == Rule::PayloadCapture));
    assert!(validate_value(&event(Some("full"), args.clone())).is_empty());
    // an unregistered level is refused, and judges no payload: its content is unknowable
    let issues = validate_value(&event(Some("most"), args.clone()));
    assert_eq!(found(&issues), [(Rule::Enum, Some("capture"))]);
    // members no schema names are `metadata` (rule 4); nested annotations are read
    let nested = serde_json::json!({"error": {"type": "E", "message": "boom"}, "tool": {"name": "Bash"}, "vendor": 1});
    let mut failed = event(Some("metadata"), nested);
    failed["type"] = Value::from("tool.failed");
    let issues = validate_value(&failed);
    assert_eq!(
        found(&issues),
        [(Rule::PayloadCapture, Some("data.error.message"))]
    );
    // `none` is envelope only
    let issues = validate_value(&event(
        Some("none"),
        serde_json::json!({"tool": {"name": "Bash"}}),
    ));
    assert_eq!(found(&issues), [(Rule::PayloadCapture, Some("data"))]);
    assert!(!validate_value(&event(Some("none"), serde_json::json!({})))
        .iter()
        .any(|i| i.rule() == Rule::PayloadCapture));
    // an array of objects: each item's members are judged
    let docs = serde_json::json!({"documents": [{"id": "d1"}, {"id": "d2", "content": "text"}]});
    let mut returned = event(Some("redacted"), docs);
    returned["type"] = Value::from("resource.retrieval.returned");
    let issues: Vec<_> = validate_value(&returned)
        .into_iter()
        .filter(|i| i.rule() == Rule::PayloadCapture)
        .collect();
    assert_eq!(
        issues.iter().map(Issue::attr).collect::<Vec<_>>(),
        [Some("data.documents[1].content")]
    );
}
