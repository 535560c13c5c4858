//! Whatever a payload holds (wrong types, missing members, hostile strings, huge
//! values), every source maps it without panicking to events of legal types, and the
//! runtime stamps them into valid envelopes.

use aep_adapters::session::SessionState;
use aep_adapters::{ChannelMode, Moment, Posture, Source};
use aep_core::envelope::EnvelopeFactory;
use aep_core::types::EventType;
use aep_core::validate::validate_event;
use proptest::prelude::*;
use serde_json::{json, Value};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("PreToolUse"),
            Just("PostToolUse"),
            Just("PermissionRequest"),
            Just("Stop"),
            Just("session.idle"),
            Just("bus"),
            Just("tool.after"),
            Just("RUN_STARTED"),
            Just("ActionEvent"),
            Just("agent_end"),
            Just("post_tool_call"),
            Just("clarify"),
            Just("codex.tool_result"),
            Just("session/update"),
            Just("request"),
            Just("response"),
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("hook_event_name"),
                        Just("hookName"),
                        Just("type"),
                        Just("kind"),
                        Just("session_id"),
                        Just("tool_name"),
                        Just("tool_input"),
                        Just("event"),
                        Just("properties"),
                        Just("extra"),
                        Just("attributes"),
                        Just("method"),
                        Just("params"),
                        Just("result"),
                        Just("questions"),
                        Just("status"),
                        Just("tool_use_id"),
                        Just("sessionUpdate"),
                        Just("update"),
                        Just("info"),
                    ]
                    .prop_map(str::to_owned),
                    inner,
                ),
                0..6,
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn map_all(payload: &Value) {
    let posture = Posture::default();
    let deltas = Posture::default().with_deltas(true);
    for source in Source::ALL {
        for mode in [ChannelMode::Companion, ChannelMode::Primary] {
            for hook in [None, Some("PostToolUse"), Some("PreToolUse"), Some("")] {
                let mut m = Moment::new(payload).mode(mode);
                if let Some(h) = hook {
                    m = m.hook(h);
                }
                for p in [&posture, &deltas] {
                    for d in source.map(&m, p) {
                        let r = d.render(p);
                        assert!(
                            EventType::parse(&r.event_type).is_ok(),
                            "{source}: {}",
                            r.event_type
                        );
                    }
                }
            }
        }
        let factory = EnvelopeFactory::new("aep://h/agent/a/session/s", "a");
        let mut state = SessionState::new("s", 1);
        for e in state.apply(source, &Moment::new(payload), &posture, &factory) {
            let issues: Vec<_> = validate_event(&e)
                .into_iter()
                // A hostile payload may fill a member with a value its schema refuses
                // (a number where a string belongs); the envelope itself stays valid.
                .filter(|i| !i.rule().as_str().starts_with("payload"))
                .collect();
            assert!(issues.is_empty(), "{source}: {e}: {issues:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn arbitrary_payloads_never_panic(payload in arb_json()) {
        map_all(&payload);
    }
}

#[test]
fn hostile_shapes_map_to_the_fallback_or_nothing() {
    let long = "x".repeat(100_000);
    for payload in [
        json!(null),
        json!([]),
        json!("PreToolUse"),
        json!(42),
        json!({"hook_event_name": 7}),
        json!({"hook_event_name": "Pre\u{0}Tool\u{202e}Use😀", "session_id": ["a"]}),
        json!({"hook_event_name": long.clone()}),
        json!({"hook_event_name": "PreToolUse", "tool_name": {"a": 1}, "tool_input": "just text"}),
        json!({"kind": "bus", "event": "session.idle"}),
        json!({"type": "TOOL_CALL_RESULT", "toolCallId": 5}),
        json!({"kind": "ConversationStateUpdateEvent", "key": "execution_status", "value": 9}),
        json!({"session": 1, "event": {"type": "agent_end", "messages": "none"}}),
    ] {
        map_all(&payload);
    }
}

#[test]
fn a_five_megabyte_tool_output_is_digested_not_carried() {
    let output = "ü".repeat(2_600_000); // 5.2 MB of UTF-8
    let hook = json!({"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Bash",
        "tool_use_id": "t1", "tool_input": {"command": "cat big"}, "tool_response": {"stdout": output}});
    let posture = Posture::default();
    let factory = EnvelopeFactory::new("aep://h/agent/claude-code/session/s", "claude-code");
    let events = SessionState::new("s", 0).apply(
        Source::ClaudeCode,
        &Moment::new(&hook),
        &posture,
        &factory,
    );
    let line = events[0].to_string();
    assert!(line.len() < 1_000, "{} bytes on the wire", line.len());
    assert!(events[0].data().expect("data")["result_digest"]
        .as_str()
        .is_some_and(|d| d.len() == 32));
}
