//! The emitting boundary: envelopes, (epoch, seq), scopes, extensions, capture ceiling,
//! and the JSONL binding.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;

use aep_async::{EmitError, EmitOptions, Emitter, JsonlSink};
use aep_core::types::EmitScope;
use aep_core::{Capture, Event, Severity};
use serde::Serialize;
use serde_json::json;

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("aep-async-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn lines(path: &PathBuf) -> Vec<Event> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

#[derive(Serialize)]
struct ToolCalled {
    tool: &'static str,
}

#[test]
fn session_events_carry_session_epoch_and_monotonic_seq() {
    let path = temp("seq");
    let emitter = Emitter::builder("coder", "host-a")
        .epoch(7)
        .build(JsonlSink::open(&path).unwrap());
    let s = emitter.session("s1");
    let a = s.emit("tool.called", ToolCalled { tool: "bash" }).unwrap();
    let b = s
        .emit_with(
            "tool.completed",
            json!({"ok": true}),
            EmitOptions::new().run("r1").step("st1"),
        )
        .unwrap();
    assert_eq!((a.seq(), b.seq()), (Some(0), Some(1)));
    assert_eq!(a.epoch_attr(), Some(7));
    assert_eq!(a.session(), Some("s1"));
    assert_eq!(a.source(), "aep://host-a/agent/coder/session/s1");
    assert_eq!(a.data().unwrap(), json!({"tool": "bash"}));
    assert_eq!(b.run(), Some("r1"));
    assert_eq!(a.capture_attr(), Some(Capture::Metadata));
    assert_eq!(a.time().len(), 24);
    assert_eq!(a.id().len(), 26, "a ULID");
    s.redeliver(&a).unwrap();
    let written = lines(&path);
    assert_eq!(written.len(), 3);
    assert_eq!(written[2], a, "redelivery is byte-identical");
    assert_eq!(s.next_seq(), 2);
    // every optional attribute of the options reaches the event, each in its own place
    let c = s
        .emit_with(
            "tool.completed",
            json!({}),
            EmitOptions::new()
                .subject("t_1")
                .run("r2")
                .step("p2")
                .cause("01CAUSE")
                .traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
                .severity(Severity::Warning)
                .extension("acmeregion", "eu-1"),
        )
        .unwrap();
    assert_eq!(
        (c.subject(), c.run(), c.step(), c.cause()),
        (Some("t_1"), Some("r2"), Some("p2"), Some("01CAUSE"))
    );
    assert_eq!(
        c.traceparent(),
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    );
    assert_eq!(c.severity_attr(), Some(Severity::Warning));
    assert_eq!(c.extension_str("acmeregion"), Some("eu-1"));
    assert!(c.data_raw().is_none(), "{{}} is no payload");
    std::fs::remove_file(&path).ok();
}

#[test]
fn agent_scoped_events_carry_no_session_run_step_or_seq() {
    let path = temp("agent");
    let emitter = Emitter::new("coder", "host-a", JsonlSink::open(&path).unwrap());
    let hb = emitter.emit("agent.heartbeat", None::<()>).unwrap();
    assert_eq!(hb.source(), "aep://host-a/agent/coder");
    assert_eq!(
        (hb.session(), hb.seq(), hb.run(), hb.epoch_attr()),
        (None, None, None, None)
    );
    assert!(hb.data_raw().is_none());
    assert!(matches!(
        emitter.emit_with("agent.heartbeat", None::<()>, EmitOptions::new().run("r")),
        Err(EmitError::Scope { .. })
    ));
    assert!(matches!(
        emitter.emit("tool.called", json!({})),
        Err(EmitError::Scope { .. })
    ));
    let s = emitter.session("s");
    assert!(matches!(
        s.emit("agent.heartbeat", json!({})),
        Err(EmitError::Scope { .. })
    ));
    assert_eq!(s.next_seq(), 0, "a refused event consumes no seq");
    assert!(matches!(
        emitter.emit("NotAType", json!({})),
        Err(EmitError::Type(_))
    ));
    std::fs::remove_file(&path).ok();
}

/// One emit-scope rule (core's `EmitScope`): an emitter writes its own agent events and
/// the sessions it owns; never a command, nor another emitter's foreign event.
#[test]
fn commands_and_foreign_events_are_refused_by_every_emitting_path() {
    let path = temp("scope");
    let emitter = Emitter::new("coder", "host-a", JsonlSink::open(&path).unwrap());
    let s = emitter.session("s");
    for (ty, scope) in [
        ("control.pause", EmitScope::Command),
        ("control.attention.respond", EmitScope::Command),
        ("x.acme.control.instruct", EmitScope::Command),
        ("attention.routed", EmitScope::Foreign),
    ] {
        for result in [
            s.emit(ty, json!({})),
            emitter.emit(ty, json!({})),
            s.emit_with(ty, json!({}), EmitOptions::new().subject("x")),
        ] {
            match result {
                Err(EmitError::Scope {
                    scope: got,
                    event_type,
                    ..
                }) => {
                    assert_eq!((got, event_type.as_str()), (scope, ty));
                }
                other => panic!("{ty}: {other:?}"),
            }
        }
    }
    let err = s.emit("control.pause", json!({})).unwrap_err().to_string();
    assert!(
        err.contains("is a command") && err.contains("ControlClient"),
        "{err}"
    );
    assert_eq!(s.next_seq(), 0, "nothing refused took a seq");
    // Acks are the session owner's sequenced events, and vendor events of any category.
    assert!(s.emit("control.accepted", json!({})).is_ok());
    assert!(s
        .emit("x.acme.instruction.delivered", json!({"queued_ms": 3}))
        .is_ok());
    std::fs::remove_file(&path).ok();
}

#[test]
fn extension_attributes_are_checked() {
    let path = temp("ext");
    let s = Emitter::new("a", "h", JsonlSink::open(&path).unwrap()).session("s");
    let ok = s
        .emit_with(
            "tool.called",
            json!({}),
            EmitOptions::new()
                .extension("acmeregion", "eu")
                .extension("acmen", 3),
        )
        .unwrap();
    assert_eq!(ok.extension_str("acmeregion"), Some("eu"));
    for (name, value) in [
        ("seq", json!(1)),
        ("Bad-Name", json!("x")),
        ("acmefloat", json!(1.5)),
        ("acmeobj", json!({"a": 1})),
    ] {
        let r = s.emit_with(
            "tool.called",
            json!({}),
            EmitOptions::new().extension(name, value),
        );
        assert!(matches!(r, Err(EmitError::Extension(_))), "{name}");
    }
    std::fs::remove_file(&path).ok();
}

#[test]
fn capture_ceiling_is_stamped_and_enforced() {
    let path = temp("capture");
    let emitter = Emitter::builder("a", "h")
        .capture(Capture::Redacted)
        .build(JsonlSink::open(&path).unwrap());
    let s = emitter.session("s");
    let stamped = s.emit("tool.called", json!({})).unwrap();
    assert_eq!(stamped.capture(), Capture::Redacted);
    let asking = |capture| {
        let options = EmitOptions::new().capture(capture);
        s.emit_with("tool.called", json!({}), options).unwrap()
    };
    assert_eq!(asking(Capture::None).capture(), Capture::None);
    let higher = asking(Capture::Full);
    // Above the ceiling: the mechanical down-leveler never mints the `redacted`
    // provenance claim, so a `full` event at a `redacted` ceiling lands on `metadata`
    // (AEP-0001 §8.2(e)).
    assert_eq!(
        higher.capture(),
        Capture::Metadata,
        "never above the ceiling"
    );
    let sev = s
        .emit_with(
            "tool.called",
            json!({}),
            EmitOptions::new().severity(Severity::Warning),
        )
        .unwrap();
    assert_eq!(sev.severity_attr(), Some(Severity::Warning));
    std::fs::remove_file(&path).ok();
}

#[test]
fn jsonl_lines_stay_whole_under_concurrent_writers() {
    let path = temp("concurrent");
    let emitter = Emitter::new("a", "h", JsonlSink::open(&path).unwrap());
    let big = "x".repeat(3000);
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = Arc::new(emitter.session(format!("s{t}")));
            let big = big.clone();
            scope.spawn(move || {
                for _ in 0..200 {
                    s.emit("tool.called", json!({"blob": big})).unwrap();
                }
            });
        }
    });
    let written = lines(&path);
    assert_eq!(written.len(), 800);
    for t in 0..4 {
        let session = format!("s{t}");
        let seqs: Vec<u64> = written
            .iter()
            .filter(|e| e.session() == Some(&session))
            .filter_map(Event::seq)
            .collect();
        assert_eq!(seqs, (0..200).collect::<Vec<_>>(), "per-session order kept");
    }
    std::fs::remove_file(&path).ok();
}

#[tokio::test]
async fn closed_jsonl_sink_refuses() {
    let path = temp("closed");
    let emitter = Emitter::new("a", "h", JsonlSink::open(&path).unwrap());
    emitter.close().await;
    assert!(matches!(
        emitter.emit("agent.heartbeat", None::<()>),
        Err(EmitError::Closed)
    ));
    std::fs::remove_file(&path).ok();
}
