//! The capture posture: what each level keeps of the same hook, and that the event
//! declares exactly what it carries (aep-core's capture rule finds nothing).

use aep_adapters::session::SessionState;
use aep_adapters::{Moment, Posture, Source};
use aep_core::envelope::EnvelopeFactory;
use aep_core::validate::validate_event;
use aep_core::{Capture, Event};
use serde_json::json;

fn at(ceiling: &str, payload: &serde_json::Value) -> Event {
    let posture = Posture::from_ceiling(ceiling).expect("a ceiling");
    let factory = EnvelopeFactory::new("aep://h/agent/codex/session/s", "codex");
    let events =
        SessionState::new("s", 0).apply(Source::Codex, &Moment::new(payload), &posture, &factory);
    let e = events.into_iter().next().expect("one event");
    assert!(
        validate_event(&e).is_empty(),
        "{ceiling}: {e}: {:?}",
        validate_event(&e)
    );
    e
}

#[test]
fn each_level_keeps_what_it_allows() {
    let hook = json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "shell",
        "tool_use_id": "c1", "tool_input": {"command": "curl -H 'Authorization: Bearer abcdefghijklmnop' https://x"}});
    let none = at("none", &hook);
    assert_eq!((none.capture(), none.data()), (Capture::None, None));
    let meta = at("metadata", &hook);
    let d = meta.data().expect("data");
    assert!(
        d.get("args").is_none() && d.get("args_redacted").is_none() && d["args_digest"].is_string()
    );
    let redacted = at("redacted", &hook);
    let d = redacted.data().expect("data");
    assert!(d.get("args").is_none());
    let text = d["args_redacted"].to_string();
    assert!(
        text.contains("[REDACTED:secret]") && !text.contains("abcdefghijklmnop"),
        "{text}"
    );
    let full = at("full", &hook);
    assert_eq!(
        full.data().expect("data")["args"]["command"],
        hook["tool_input"]["command"]
    );
    assert_eq!(full.capture(), Capture::Full);
    // The digest is over the original value at every level.
    assert_eq!(
        meta.data().expect("d")["args_digest"],
        full.data().expect("d")["args_digest"]
    );
}

#[test]
fn a_permission_prompt_is_synthesized_from_structure_below_redacted() {
    let hook = json!({"hook_event_name": "PermissionRequest", "session_id": "s", "tool_name": "shell",
        "tool_input": {"command": "rm -rf /home/alice/build"}});
    let meta = at("metadata", &hook);
    assert_eq!(
        meta.data().expect("d")["prompt"],
        "codex requests permission: shell"
    );
    let redacted = at("metadata,attention.*=redacted", &hook);
    // Home paths pass the §9.4 pipeline.
    assert_eq!(
        redacted.data().expect("d")["prompt"],
        "Permission requested: shell — rm -rf ~/build"
    );
    assert_eq!(redacted.capture(), Capture::Redacted);
}
