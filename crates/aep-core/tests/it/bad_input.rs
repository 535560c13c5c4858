//! The "bad input" clause of the protocol core's second half: events missing every
//! optional attribute, commands of unknown types or without `session`, and acks that
//! name nothing pending go through capture, projection, dedupe, resume and control
//! with a typed answer or the documented tolerance, never a panic.

use crate::common;

use std::time::{Duration, Instant};

use aep_core::capture::{downlevel, downlevel_redacting};
use aep_core::control::{CommandDelivery, ControlTarget, NackReason, TargetOutput};
use aep_core::gating::gate_form_values;
use aep_core::projection::{project_state, StateProjection};
use aep_core::redact::{RedactOptions, Redactor};
use aep_core::resume::Positions;
use aep_core::{Capture, Dedupe, Event};
use common::sender_with_pending;
use serde_json::{json, Value};

const LEVELS: [Capture; 4] = [
    Capture::None,
    Capture::Metadata,
    Capture::Redacted,
    Capture::Full,
];

/// Only the attributes every event must carry (AEP-0001 §5.1), read from the wire.
fn bare(ty: &str) -> Event {
    format!(r#"{{"aep":"0.1","id":"b1","type":"{ty}","time":"t","source":"aep://h","agent":"a"}}"#)
        .parse()
        .expect("a bare envelope parses")
}

#[test]
fn bare_events_down_level_to_every_ceiling() {
    for ty in [
        "tool.completed",
        "attention.requested",
        "x.acme.blob",
        "control.pause",
    ] {
        let event = bare(ty);
        for ceiling in LEVELS {
            let out = downlevel(&event, ceiling);
            // No `capture` reads as metadata (AEP-0001 §8.2), so only `none` lowers it.
            assert_eq!(
                out.capture(),
                Capture::Metadata.min(ceiling),
                "{ty} at {ceiling:?}"
            );
            assert_eq!(out.data(), None);
            let mut copy = event.clone();
            downlevel_redacting(&mut copy, ceiling, |_: &mut Value| {});
            assert_eq!(copy.data(), None);
        }
    }
}

#[test]
fn bare_events_fold_into_nothing_and_dedupe_on_source_and_id() {
    let events: Vec<Event> = ["session.started", "run.finished", "attention.resolved"]
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut e = bare(t);
            e.set_id(format!("b{i}"));
            e
        })
        .collect();
    // No `session`: nothing to key a session by, and no violation to report.
    let state = project_state(&events);
    assert!(state.sessions().is_empty());
    assert!(state.violations().is_empty());
    let mut p = StateProjection::new();
    p.extend(&events);
    assert_eq!(p.session_count(), 0);

    let mut seen = Dedupe::with_capacity(4);
    assert!(seen.insert_event(&events[0]) && seen.insert_event(&events[1]));
    assert!(!seen.insert_event(&events[0]), "same (source, id)");
    // The same (source, id) under another type is still the same key.
    let mut retyped = bare("tool.requested");
    retyped.set_id("b1");
    assert!(seen.contains_event(&retyped));

    let mut positions = Positions::new();
    assert!(
        !positions.observe(&events[0]),
        "no session, no seq: no position"
    );
    assert!(positions.is_empty());
}

#[test]
fn bare_events_and_odd_values_pass_the_redaction_and_gating_paths() {
    let r = Redactor::new(RedactOptions::new()).unwrap();
    for value in [
        json!(null),
        json!([]),
        json!({}),
        json!(1e308),
        json!([[[[]]]]),
    ] {
        assert_eq!(r.redact_value(&value), value);
        for ceiling in LEVELS {
            assert!(gate_form_values(&value, &value, ceiling).is_empty());
        }
    }
    assert_eq!(r.redact_text(""), "");
}

#[test]
fn the_target_answers_unknown_and_unaddressed_commands() {
    let t0 = Instant::now();
    let mut target = ControlTarget::new(["control.pause"]);
    // An unknown core verb and an unknown vendor command: `unsupported`, never an error.
    for (id, ty) in [
        ("u1", "control.frobnicate"),
        ("u2", "x.acme.control.reboot"),
    ] {
        let mut cmd = bare(ty);
        cmd.set_id(id);
        assert_eq!(
            target.handle_command(t0, cmd).unwrap(),
            CommandDelivery::Unsupported
        );
        let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else {
            panic!("{ty}: no ack queued");
        };
        assert_eq!(ack.data(), json!({"reason": "unsupported"}));
        assert_eq!(
            ack.session(),
            None,
            "nothing to address the ack to but the cause"
        );
    }
    // A known verb without `session` is still one command with one decision.
    let mut bare_pause = bare("control.pause");
    bare_pause.set_id("b2");
    assert_eq!(
        target.handle_command(t0, bare_pause).unwrap(),
        CommandDelivery::New
    );
    // A non-command is refused with a typed error.
    assert!(target.handle_command(t0, bare("tool.completed")).is_err());
    target.handle_timeout(t0 + Duration::from_secs(3600));
}

#[test]
fn the_sender_ignores_acks_that_name_nothing_pending() {
    let mut s = sender_with_pending(Instant::now(), "s1", "c1");
    // Acks without `cause`, with a foreign `cause`, and non-acks settle nothing.
    for ack in [
        bare("control.accepted"),
        bare("control.rejected"),
        bare("control.accepted").with_cause("c9"),
        bare("tool.completed").with_cause("c1"),
    ] {
        assert!(!s.handle_event(&ack), "{}", ack.to_json());
    }
    assert!(s.is_pending("c1"));
    // A rejection whose payload is missing reads as `invalid`, the normalization of
    // AEP-0004 §3 for an unrecognized reason.
    assert!(s.handle_event(bare("control.rejected").with_cause("c1")));
    let nack = s.poll_settled().unwrap().result.unwrap_err();
    assert_eq!(nack.reason(), NackReason::Invalid);
    assert!(!nack.is_synthesized());
}
