//! The one emit-scope rule from synchronous code: a session emitter refuses commands and
//! foreign events as the async one does, with the same typed error.

use aep_blocking::{EmitError, Emitter, JsonlSink};
use aep_core::types::EmitScope;
use aep_core::Event;
use serde_json::json;

/// `emitted` was refused for its scope, `want`.
fn assert_refused(emitted: Result<Event, EmitError>, want: EmitScope) {
    match emitted {
        Err(EmitError::Scope { scope, .. }) => assert_eq!(scope, want),
        other => panic!("expected a {want:?} scope refusal, got {other:?}"),
    }
}

#[test]
fn a_blocking_emitter_refuses_commands_and_foreign_events() {
    let path =
        std::env::temp_dir().join(format!("aep-blocking-scope-{}.jsonl", std::process::id()));
    let emitter = Emitter::new("a", "h", JsonlSink::open(&path).unwrap());
    let session = emitter.session("s");
    assert_refused(session.emit("control.pause", json!({})), EmitScope::Command);
    assert_refused(
        session.emit("attention.routed", json!({"to": "slack"})),
        EmitScope::Foreign,
    );
    assert_refused(
        emitter.emit("x.acme.control.reboot", json!({})),
        EmitScope::Command,
    );
    assert_eq!(session.next_seq(), 0);
    emitter.close().unwrap();
    std::fs::remove_file(&path).ok();
}
