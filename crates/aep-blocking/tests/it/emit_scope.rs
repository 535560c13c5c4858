//! The one emit-scope rule from synchronous code: a session emitter refuses commands and
//! foreign events as the async one does, with the same typed error.

use aep_blocking::{EmitError, Emitter, JsonlSink};
use aep_core::types::EmitScope;
use serde_json::json;

#[test]
fn a_blocking_emitter_refuses_commands_and_foreign_events() {
    let path =
        std::env::temp_dir().join(format!("aep-blocking-scope-{}.jsonl", std::process::id()));
    let emitter = Emitter::new("a", "h", JsonlSink::open(&path).unwrap());
    let session = emitter.session("s");
    let err = session.emit("control.pause", json!({})).unwrap_err();
    assert!(
        matches!(
            err,
            EmitError::Scope {
                scope: EmitScope::Command,
                ..
            }
        ),
        "{err}"
    );
    let err = session
        .emit("attention.routed", json!({"to": "slack"}))
        .unwrap_err();
    assert!(
        matches!(
            err,
            EmitError::Scope {
                scope: EmitScope::Foreign,
                ..
            }
        ),
        "{err}"
    );
    let err = emitter
        .emit("x.acme.control.reboot", json!({}))
        .unwrap_err();
    assert!(
        matches!(
            err,
            EmitError::Scope {
                scope: EmitScope::Command,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(session.next_seq(), 0);
    emitter.close().unwrap();
    std::fs::remove_file(&path).ok();
}
