//! One whole session per hook agent (`tests/data/sessions/{agent}.jsonl`, payloads
//! shaped as each agent documents them), through the session runtime: every event
//! passes aep-core's envelope, payload and capture rules, the stream passes the stream
//! rules with no finding, and it folds into the session, its runs and tools.

use std::path::PathBuf;

use aep_adapters::session::SessionState;
use aep_adapters::{Moment, Posture, Source};
use aep_core::envelope::{source_uri, EnvelopeFactory};
use aep_core::projection::project_state;
use aep_core::validate::{validate_event, StreamValidator};
use aep_core::Event;
use serde_json::Value;

fn data(agent: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sessions")
        .join(format!("{agent}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Runs a session file through the runtime, one state per session as `aep hook` keeps
/// them, and returns every event in emission order.
fn run(source: Source) -> Vec<Event> {
    let posture = Posture::default();
    let mut states: Vec<SessionState> = Vec::new();
    let mut out = Vec::new();
    for line in data(source.name()) {
        let (payload, hook) = match line.get("argv") {
            Some(h) => (line["payload"].clone(), h.as_str().map(str::to_owned)),
            None => (line, None),
        };
        let session = source
            .session_of(&payload)
            .unwrap_or_else(|| "unknown".to_owned());
        let i = match states.iter().position(|s| s.session() == session) {
            Some(i) => i,
            None => {
                states.push(SessionState::new(session.clone(), 5));
                states.len() - 1
            }
        };
        let factory = EnvelopeFactory::new(
            source_uri("test-host", source.name(), Some(&session)),
            source.name(),
        );
        let mut moment = Moment::new(&payload);
        if let Some(h) = hook.as_deref() {
            moment = moment.hook(h);
        }
        out.extend(states[i].apply(source, &moment, &posture, &factory));
    }
    out
}

fn check(source: Source) -> Vec<Event> {
    let events = run(source);
    assert!(!events.is_empty(), "{source}: no events");
    let mut stream = StreamValidator::new();
    for e in &events {
        let line = e.to_string();
        let issues = validate_event(e);
        assert!(issues.is_empty(), "{source}: {line}: {issues:?}");
        let issues = stream.push(e);
        assert!(issues.is_empty(), "{source}: {line}: {issues:?}");
        // What goes on the wire reads back as the same event.
        let back: Event = line.parse().expect("reads back");
        assert_eq!(&back, e);
    }
    let issues = stream.finish();
    assert!(issues.is_empty(), "{source}: {issues:?}");
    let state = project_state(&events);
    assert!(
        state.violations().is_empty(),
        "{source}: {:?}",
        state.violations()
    );
    events
}

fn types(events: &[Event]) -> Vec<&str> {
    events.iter().map(Event::event_type).collect()
}

#[test]
fn every_hook_agent_runs_a_whole_session_clean() {
    for source in Source::HOOK_AGENTS {
        let events = check(source);
        let state = project_state(&events);
        let session = &state.sessions()[0];
        // Positions only go up, in one epoch.
        let seqs: Vec<u64> = events
            .iter()
            .filter(|e| e.session() == Some(session.session()))
            .filter_map(Event::seq)
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{source}: {seqs:?}");
        assert!(events
            .iter()
            .filter(|e| e.seq().is_some())
            .all(|e| e.epoch() == 5));
        // Every session folds with its runs; none is left with attention pending.
        assert!(!session.runs().is_empty(), "{source}: no run folded");
        assert!(
            session.pending().is_empty(),
            "{source}: {:?}",
            session.pending()
        );
    }
}

#[test]
fn claude_code_pairs_tools_settles_the_permission_and_ends_once() {
    let events = check(Source::ClaudeCode);
    let t = types(&events);
    assert_eq!(t.first(), Some(&"session.started"));
    assert_eq!(t.last(), Some(&"session.ended"));
    assert!(
        !t.contains(&"session.compacted")
            || t.iter().filter(|x| **x == "session.compacted").count() == 1
    );
    let requested = events
        .iter()
        .find(|e| e.event_type() == "tool.requested")
        .expect("a tool");
    let completed = events
        .iter()
        .find(|e| e.event_type() == "tool.completed")
        .expect("its end");
    assert_eq!(completed.cause(), Some(requested.id()));
    let ask = events
        .iter()
        .find(|e| {
            e.event_type() == "attention.requested"
                && e.data().is_some_and(|d| d["kind"] == "permission")
        })
        .expect("the permission");
    let settled = events
        .iter()
        .find(|e| e.event_type() == "attention.resolved" && e.subject() == Some(ask.id()))
        .expect("settled when the tool ran");
    assert_eq!(settled.data().expect("data")["resolution"], "answered");
    let form = events
        .iter()
        .find(|e| {
            e.event_type() == "attention.requested" && e.data().is_some_and(|d| d["kind"] == "form")
        })
        .expect("the AskUserQuestion form");
    assert!(events
        .iter()
        .any(|e| e.event_type() == "attention.resolved" && e.subject() == Some(form.id())));
    // The idle prompt after Stop is dismissed when the session ends, before the end.
    let end = t.iter().position(|x| *x == "session.ended").expect("end");
    assert_eq!(t[end - 1], "attention.resolved");
    // Content stays home at the default posture: the prompt and the e-mail never ride.
    let wire: String = events.iter().map(ToString::to_string).collect();
    assert!(!wire.contains("ops@example.com") && !wire.contains("Fix the flaky"));
}

#[test]
fn codex_turns_are_the_runs() {
    let events = check(Source::Codex);
    let started = events
        .iter()
        .find(|e| e.event_type() == "run.started")
        .expect("run");
    assert_eq!(started.run(), Some("turn-1"));
    let finished = events
        .iter()
        .find(|e| e.event_type() == "run.finished")
        .expect("end");
    assert_eq!(finished.cause(), Some(started.id()));
    assert_eq!(
        types(&events)
            .iter()
            .filter(|t| **t == "session.compacted")
            .count(),
        1
    );
}

#[test]
fn antigravity_starts_its_session_and_run_and_joins_the_tool_name() {
    let events = check(Source::Antigravity);
    let t = types(&events);
    assert_eq!(
        &t[..3],
        ["session.started", "run.started", "run.step.started"]
    );
    let completed = events
        .iter()
        .find(|e| e.event_type() == "tool.completed")
        .expect("joined");
    assert_eq!(
        completed.data().expect("data")["tool"]["name"],
        "run_command"
    );
    assert_eq!(completed.step(), Some("1"));
    assert!(t.contains(&"tool.failed"));
    assert_eq!(t.last(), Some(&"run.finished"));
}

#[test]
fn opencode_diffs_todos_and_closes_its_synthesized_run() {
    for source in [Source::Opencode, Source::Kilocode] {
        let events = check(source);
        let t = types(&events);
        // The first snapshot seeds; the second completes td_1 and plans td_2.
        assert_eq!(
            t.iter()
                .filter(|x| **x == "progress.task.completed")
                .count(),
            1,
            "{source}"
        );
        assert_eq!(
            t.iter().filter(|x| **x == "progress.task.planned").count(),
            1,
            "{source}"
        );
        assert!(t.contains(&"run.finished"));
        assert_eq!(t.last(), Some(&"session.ended"));
    }
}

#[test]
fn hermes_answers_ride_oob_and_clarify_is_answered_with_its_choice_id() {
    let events = check(Source::Hermes);
    let answered: Vec<&Event> = events
        .iter()
        .filter(|e| e.event_type() == "attention.answered")
        .collect();
    assert_eq!(answered.len(), 2);
    assert_eq!(
        answered[0].data().expect("data")["answer"]["option"],
        "deny"
    );
    assert_eq!(
        answered[1].data().expect("data")["answer"]["values"]["1"],
        "2"
    );
    assert!(events.iter().any(|e| e.event_type() == "tool.denied"));
    let run = events
        .iter()
        .find(|e| e.event_type() == "run.started")
        .expect("run");
    assert_eq!(run.run(), Some("s_herm_1:t1:aaaa"));
}

#[test]
fn a_crash_that_loses_the_state_starts_a_new_epoch_never_a_reused_position() {
    let posture = Posture::default();
    let factory = EnvelopeFactory::new(source_uri("h", "codex", Some("s")), "codex");
    let hook = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "s", "turn_id": "t"});
    let mut before = SessionState::new("s", 100);
    let a = before.apply(Source::Codex, &Moment::new(&hook), &posture, &factory);
    // The state is lost; the next hook starts again in a later epoch.
    let mut after = SessionState::new("s", 101);
    let b = after.apply(Source::Codex, &Moment::new(&hook), &posture, &factory);
    assert_eq!((a[0].epoch(), a[0].seq()), (100, Some(0)));
    assert_eq!((b[0].epoch(), b[0].seq()), (101, Some(0)));
    let mut stream = StreamValidator::new();
    assert!(stream.push(&a[0]).is_empty());
    assert!(stream.push(&b[0]).is_empty());
}
