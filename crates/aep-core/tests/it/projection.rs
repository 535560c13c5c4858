//! The projection against the golden corpus (`fixtures/projection/`) and the
//! incremental scenarios of the Python SDK's smoke tests.

use crate::common;

use aep_core::projection::{project_state, RunStatus, StateProjection, Violation};
use aep_core::resume::Position;
use aep_core::Event;
use serde_json::{json, Value};

const EVENTS: &str = include_str!("../../../../fixtures/projection/events.jsonl");
const EXPECTED: &str = include_str!("../../../../fixtures/projection/expected.json");

fn corpus() -> Vec<Event> {
    common::events(EVENTS)
}

fn expected_state() -> Value {
    let doc: Value = serde_json::from_str(EXPECTED).expect("expected.json");
    doc["state"].clone()
}

#[test]
fn batch_projection_of_the_corpus_equals_the_golden_state() {
    let state = project_state(&corpus());
    let got = serde_json::to_value(&state).unwrap();
    assert_eq!(got, expected_state());
    // Key order too: the snapshot writes members in the golden file's order.
    assert_eq!(
        serde_json::to_string(&got).unwrap(),
        serde_json::to_string(&expected_state()).unwrap()
    );
}

#[test]
fn the_golden_state_reads_back_into_the_typed_snapshot() {
    let typed: aep_core::projection::ProjectedState =
        serde_json::from_value(expected_state()).unwrap();
    // the golden members only: the supervisor's stay out of the serde form
    assert_eq!(
        serde_json::to_value(&typed).unwrap(),
        serde_json::to_value(project_state(&corpus())).unwrap()
    );
    let beta = typed.session("aep://corpus/adapter-a", "s-beta").unwrap();
    assert_eq!(beta.position(), Some(Position::new(1, 4)));
    assert_eq!(beta.runs()[1].status(), RunStatus::Finished);
    assert_eq!(beta.runs()[1].started(), None);
    assert_eq!(beta.pending()[0].kind(), Some("form"));
}

#[test]
fn batch_sort_repairs_arrival_order() {
    // The s-alpha subset of both sources, reversed, folds like file order (the
    // redelivered ev-a-03 is byte-identical, so no collider is involved).
    let alpha: Vec<Event> = corpus()
        .into_iter()
        .filter(|e| {
            e.session() == Some("s-alpha")
                && matches!(
                    e.source(),
                    "aep://corpus/adapter-a" | "aep://corpus/adapter-b"
                )
        })
        .collect();
    let forward = project_state(&alpha);
    let reversed = project_state(alpha.iter().rev());
    assert_eq!(forward, reversed);
    assert_eq!(forward.sessions().len(), 2);
    // Only the run-terminal violation of adapter-b survives; no ordering violation.
    assert_eq!(
        forward.violations(),
        &[Violation::RunTerminalExclusivity {
            source: "aep://corpus/adapter-b".into(),
            session: "s-alpha".into(),
            run: "r1".into(),
        }]
    );
}

#[test]
fn incremental_epoch_regression_on_late_arrival() {
    let base = |id: &str, epoch: u64, time: &str| {
        Event::new(id, "log.emitted", time, "aep://corpus/adapter-x", "agent-x")
            .with_session("s-x")
            .with_epoch(epoch)
            .with_seq(0)
    };
    let mut p = StateProjection::new();
    p.apply(&base("ev-x-00", 1, "2026-07-22T07:00:00.000Z"));
    p.apply(&base("ev-x-01", 0, "2026-07-22T07:00:01.000Z"));
    assert_eq!(
        p.violations(),
        &[Violation::EpochRegression {
            source: "aep://corpus/adapter-x".into(),
            session: "s-x".into(),
            id: "ev-x-01".into(),
        }]
    );
    // The position follows the last folded event, regression or not.
    let state = p.state();
    assert_eq!(state.sessions()[0].position(), Some(Position::new(0, 0)));
}

#[test]
fn incremental_fold_of_the_corpus_reports_arrival_order() {
    let mut p = StateProjection::new();
    p.extend(&corpus());
    let rules: Vec<&str> = p.violations().iter().map(Violation::rule).collect();
    // Arrival order: the collider ev-c-01 arrives after s-beta ended; nothing in the
    // file arrives out of order except the duplicated position of s-dup.
    assert_eq!(
        rules,
        [
            "run-terminal-exclusivity",
            "ended-with-pending-attention",
            "id-collision",
            "seq-regression"
        ]
    );
}

#[test]
fn attention_answered_does_not_clear_pending() {
    let mut p = StateProjection::new();
    for e in corpus() {
        p.apply(&e);
        if e.id() == "ev-a-05" {
            break;
        }
    }
    let state = p.state();
    let alpha = state.session("aep://corpus/adapter-a", "s-alpha").unwrap();
    assert_eq!(alpha.pending().len(), 1);
    assert_eq!(alpha.pending()[0].id(), "ev-a-04");
    assert_eq!(alpha.pending()[0].kind(), Some("permission"));
    assert_eq!(alpha.pending()[0].since(), "2026-07-22T06:00:04.000Z");
}

#[test]
fn command_frames_and_agent_events_create_no_session() {
    let all = corpus();
    let find = |id: &str| all.iter().find(|e| e.id() == id).unwrap();
    for id in ["ev-cmd-01", "ev-agent-00"] {
        let mut p = StateProjection::new();
        p.apply(find(id));
        assert_eq!(p.session_count(), 0, "{id}");
        assert!(p.state().sessions().is_empty());
    }
    let state = project_state(&all);
    assert!(state
        .sessions()
        .iter()
        .all(|s| s.source() != "aep://corpus/mc"));
    // Vendor commands are commands too; a vendor agent.* lookalike is not agent-scoped.
    let mut p = StateProjection::new();
    let vendor = |id: &str, ty: &str| {
        Event::new(id, ty, "t", "aep://mc", "mc")
            .with_session("s")
            .with_seq(0)
    };
    p.apply(&vendor("1", "x.acme.control.reboot"));
    assert_eq!(p.session_count(), 0);
    p.apply(&vendor("2", "x.acme.agent.ping"));
    assert_eq!(p.session_count(), 1);
}

#[test]
fn commands_are_still_deduplicated() {
    let cmd = Event::new("c1", "control.pause", "t", "aep://mc", "mc").with_session("s");
    let other = Event::new("c1", "control.resume", "t", "aep://mc", "mc").with_session("s");
    let mut p = StateProjection::new();
    p.apply(&cmd);
    p.apply(&cmd);
    assert!(p.violations().is_empty());
    p.apply(&other);
    assert_eq!(p.violations()[0].rule(), "id-collision");
}

#[test]
fn redelivery_is_told_from_collision_by_canonical_content() {
    let line = r#"{"aep":"0.1","id":"e1","type":"tool.completed","time":"t","source":"aep://h","agent":"a","session":"s","seq":1,"data":{"tool":{"name":"grep"},"n":1}}"#;
    // Same content: members reordered, whitespace, an escape.
    let same = r#"{"data":{"n":1, "tool":{"name":"gr\u0065p"}},"seq":1,"session":"s","agent":"a","source":"aep://h","time":"t","type":"tool.completed","id":"e1","aep":"0.1"}"#;
    let float = line.replace(r#""n":1"#, r#""n":1.0"#);
    let extra = line.replace(r#""seq":1,"#, r#""seq":1,"epoch":0,"#);
    let ext = line.replace(r#""seq":1,"#, r#""seq":1,"xacme":{"b":1,"a":2},"#);
    let ext_reordered = line.replace(r#""seq":1,"#, r#""xacme":{"a":2,"b":1},"seq":1,"#);
    let ev = |s: &str| -> Event { s.parse().unwrap() };

    let mut p = StateProjection::new();
    p.apply(&ev(line));
    p.apply(&ev(same));
    assert!(p.violations().is_empty(), "{:?}", p.violations());
    p.apply(&ev(&float));
    p.apply(&ev(&extra)); // an explicit epoch 0 is different JSON
    assert_eq!(p.violations().len(), 2);

    let mut p = StateProjection::new();
    p.apply(&ev(&ext));
    p.apply(&ev(&ext_reordered));
    assert!(p.violations().is_empty());
    p.apply(&ev(line));
    assert_eq!(p.violations().len(), 1);
}

#[test]
fn session_and_run_terminal_rules() {
    let ev = |id: &str, ty: &str, seq: u64| {
        Event::new(id, ty, format!("t{seq}"), "aep://h", "a")
            .with_session("s")
            .with_seq(seq)
    };
    let mut p = StateProjection::new();
    p.apply(&ev("1", "session.started", 0));
    p.apply(&ev("1b", "session.started", 1)); // first wins
    p.apply(&ev("2", "run.started", 2).with_run("r"));
    p.apply(&ev("2b", "run.started", 3).with_run("r")); // first wins, no violation
    p.apply(&ev("3", "attention.requested", 4).with_data(json!({"kind": 5})));
    p.apply(&ev("4", "attention.resolved", 5).with_subject("absent")); // no-op
    p.apply(&ev("5", "run.cancelled", 6).with_run("r"));
    p.apply(&ev("6", "run.finished", 7).with_run("r"));
    p.apply(&ev("7", "session.ended", 8));
    p.apply(&ev("8", "session.ended", 9));
    p.apply(&ev("9", "attention.timeout", 10).with_subject("3"));
    let state = p.state();
    let s = &state.sessions()[0];
    assert_eq!(s.started(), Some("t0"));
    assert_eq!(s.ended(), Some("t8"));
    assert_eq!(s.runs().len(), 1);
    assert_eq!(s.runs()[0].status(), RunStatus::Cancelled);
    assert_eq!(s.runs()[0].started(), Some("t2"));
    assert_eq!(s.runs()[0].ended(), Some("t6"));
    assert!(s.pending().is_empty());
    let rules: Vec<&str> = state.violations().iter().map(Violation::rule).collect();
    // The second ended reports exclusivity only (the Python SDK's reading).
    assert_eq!(
        rules,
        [
            "run-terminal-exclusivity",
            "ended-with-pending-attention",
            "session-terminal-exclusivity"
        ]
    );
    assert_eq!(
        state.violations()[1],
        Violation::EndedWithPendingAttention {
            source: "aep://h".into(),
            session: "s".into(),
            pending: 1
        }
    );
}

#[test]
fn sessions_are_emitter_scoped_and_sorted() {
    let ev = |id: &str, source: &str, session: &str| {
        Event::new(id, "log.emitted", "t", source, "a")
            .with_session(session)
            .with_seq(0)
    };
    let mut p = StateProjection::new();
    p.apply(&ev("1", "aep://b", "s"));
    p.apply(&ev("1", "aep://a", "s")); // same id, other emitter: not a collision
    p.apply(&ev("2", "aep://a", "r"));
    let state = p.state();
    let keys: Vec<(&str, &str)> = state
        .sessions()
        .iter()
        .map(|s| (s.source(), s.session()))
        .collect();
    assert_eq!(keys, [("aep://a", "r"), ("aep://a", "s"), ("aep://b", "s")]);
    assert!(state.violations().is_empty());
}

#[test]
fn many_runs_and_requests_per_session_stay_in_fold_order() {
    let mut p = StateProjection::new();
    let mut seq = 0;
    let mut ev = |id: String, ty: &str| {
        seq += 1;
        Event::new(id, ty, "t", "aep://h", "a")
            .with_session("s")
            .with_seq(seq)
    };
    for i in 0..200 {
        p.apply(&ev(format!("r{i}"), "run.started").with_run(format!("run{i}")));
        p.apply(&ev(format!("q{i}"), "attention.requested"));
    }
    for i in (0..200).rev().filter(|i| i % 2 == 1) {
        p.apply(&ev(format!("f{i}"), "run.failed").with_run(format!("run{i}")));
        p.apply(&ev(format!("x{i}"), "attention.resolved").with_subject(format!("q{i}")));
    }
    let state = p.state();
    let s = &state.sessions()[0];
    assert_eq!(s.runs().len(), 200);
    assert!(s
        .runs()
        .iter()
        .enumerate()
        .all(|(i, r)| r.run() == format!("run{i}")
            && r.status()
                == if i % 2 == 1 {
                    RunStatus::Failed
                } else {
                    RunStatus::Running
                }));
    let pending: Vec<&str> = s.pending().iter().map(|p| p.id()).collect();
    let want: Vec<String> = (0..200).step_by(2).map(|i| format!("q{i}")).collect();
    assert_eq!(pending, want);
    assert!(state.violations().is_empty());
}

#[test]
fn events_without_session_or_with_odd_types_never_panic() {
    let mut p = StateProjection::new();
    p.apply(&Event::new("1", "Not A Type", "t", "aep://h", "a"));
    p.apply(&Event::new("2", "Not.A.Type", "t", "aep://h", "a").with_session("s"));
    p.apply(&Event::new("3", "", "", "", "").with_session(""));
    p.apply(&Event::new("4", "run.finished", "t", "aep://h", "a").with_session("s"));
    p.apply(
        &Event::new("5", "attention.requested", "t", "aep://h", "a")
            .with_session("s")
            .with_data(json!([1, 2])),
    );
    let state = p.state();
    assert_eq!(state.sessions().len(), 2);
    let s = state.session("aep://h", "s").unwrap();
    assert_eq!(s.position(), None);
    assert_eq!(s.pending()[0].kind(), None);
}

// ---- the supervisor's members (issue 35) ---------------------------------------------

fn golden_stream() -> Vec<Event> {
    common::events(common::GOLDEN)
}

#[test]
fn tool_calls_pair_by_call_id_with_status_duration_and_gate() {
    use aep_core::projection::ToolStatus;
    let state = project_state(&golden_stream());
    let s = state
        .session("aep://host-a/agent/claude-code/session/s_8f2c", "s_8f2c")
        .unwrap();
    let tools: Vec<(&str, &str, ToolStatus)> = s
        .tools()
        .iter()
        .map(|t| (t.call(), t.name(), t.status()))
        .collect();
    assert_eq!(
        tools,
        [
            ("t_91", "Bash", ToolStatus::Completed),
            ("t_92", "Bash", ToolStatus::Denied),
            ("t_93", "Write", ToolStatus::Failed),
        ]
    );
    let t91 = &s.tools()[0];
    assert_eq!(t91.run(), Some("r_0042"));
    assert_eq!(t91.requested(), Some("2026-07-03T10:15:03.000Z"));
    assert!(t91.duration_ms().is_some());
    // the permission request's cause is the call's terminal: it gated that call
    assert_eq!(t91.gated_by(), ["01JX9YB4RQ000000000000GOLD"]);
    // a denied call was never requested: it has no start and no duration
    assert_eq!(s.tools()[1].requested(), None);
    assert!(
        s.pending().is_empty(),
        "resolved and timed out requests leave"
    );
    assert_eq!(s.last_activity().unwrap().event_type(), "session.ended");
    assert_eq!(s.status(), aep_core::projection::SessionStatus::Ended);
}

#[test]
fn a_tool_terminal_without_call_id_pairs_by_cause_and_times_give_the_duration() {
    let ev = |id: &str, ty: &str, time: &str, seq| {
        Event::new(id, ty, time, "aep://h", "a")
            .with_session("s")
            .with_seq(seq)
            .with_run("r")
            .with_subject("Bash")
            .with_data(json!({"tool": {"name": "Bash"}}))
    };
    let events = [
        ev("q", "tool.requested", "2026-07-22T06:00:00.000Z", 0),
        // a permission prompt naming the open call by subject (no cause)
        Event::new(
            "ask",
            "attention.requested",
            "2026-07-22T06:00:00.500Z",
            "aep://h",
            "a",
        )
        .with_session("s")
        .with_seq(1)
        .with_run("r")
        .with_subject("Bash")
        .with_data(json!({"kind": "permission", "prompt": "Run it?"})),
        ev("done", "tool.completed", "2026-07-22T06:00:02.000Z", 2).with_cause("q"),
        ev("late", "tool.failed", "2026-07-22T06:00:03.000Z", 3).with_cause("q"),
    ];
    let state = project_state(&events);
    let s = &state.sessions()[0];
    assert_eq!(s.tools().len(), 1, "{:?}", s.tools());
    let tool = &s.tools()[0];
    assert_eq!(tool.call(), "q");
    assert_eq!(tool.status(), aep_core::projection::ToolStatus::Completed);
    assert_eq!(tool.duration_ms(), Some(2000));
    assert_eq!(tool.gated_by(), ["ask"]);
    assert_eq!(s.pending()[0].request().tool(), Some("q"));
}

#[test]
fn a_pending_request_carries_its_question_and_how_to_answer_it() {
    let state = project_state(&golden_stream());
    // s_form's request is answered and resolved in the golden stream: fold up to it
    let upto: Vec<Event> = golden_stream()
        .into_iter()
        .take_while(|e| e.event_type() != "attention.answered" || e.session() != Some("s_form"))
        .collect();
    let partial = project_state(&upto);
    let form = partial
        .sessions()
        .iter()
        .find(|s| s.session() == "s_form")
        .unwrap();
    let pending = &form.pending()[0];
    let ask = pending.request();
    assert_eq!(pending.kind(), Some("form"));
    assert_eq!(ask.prompt(), Some("Configure the new service deployment"));
    let ids: Vec<&str> = ask.fields().iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["name", "staged", "regions", "db"]);
    assert_eq!(ask.fields()[0].required, Some(true));
    assert_eq!(ask.subject(), Some("deploy-form"));
    assert!(ask.answerable());
    assert_eq!(form.status(), aep_core::projection::SessionStatus::Waiting);
    // the detailed form carries it; the golden form does not
    let detailed = serde_json::to_value(pending.detailed()).unwrap();
    assert_eq!(detailed["fields"][2]["multi"], true);
    assert_eq!(detailed["answerable"], true);
    assert!(serde_json::to_value(pending)
        .unwrap()
        .get("fields")
        .is_none());
    assert!(state
        .sessions()
        .iter()
        .all(|s| s.session() != "s_form" || s.pending().is_empty()));
}

#[test]
fn the_inbox_lists_every_pending_request_oldest_first_with_its_session() {
    let mut p = StateProjection::new();
    p.extend(&corpus());
    let inbox = p.inbox();
    let got: Vec<(&str, &str)> = inbox
        .iter()
        .map(|i| (i.session(), i.request().id()))
        .collect();
    assert_eq!(got, [("s-beta", "ev-c-04")]);
    assert_eq!(
        inbox[0].request().request().prompt(),
        Some("Deployment details")
    );
    let json = serde_json::to_value(&inbox[0]).unwrap();
    assert_eq!(json["request"]["fields"][0]["id"], "env");
    assert_eq!(json["agent"], "agent-one");
}

#[test]
fn the_roster_claim_names_who_is_connected_and_what_it_accepts() {
    use aep_core::frame::{Capabilities, ControlCapability, Hello, Identity, Role, RosterEntry};
    let mut p = StateProjection::new();
    p.extend(&corpus());
    let hello = |agent: &str| {
        let mut caps = Capabilities::default();
        caps.control = Some(ControlCapability::accepting(["control.attention.respond"]));
        Hello::new(Role::Emitter)
            .with_identity(Identity::new(agent))
            .with_capabilities(caps)
    };
    p.set_roster(&[
        RosterEntry::claimed("s-beta", &hello("agent-one")),
        // another agent's claim of a same-named session is not this session's
        RosterEntry::claimed("s-alpha", &hello("someone-else")),
    ]);
    let beta = p.session("aep://corpus/adapter-a", "s-beta").unwrap();
    let claim = beta.claim().unwrap();
    assert_eq!(claim.agent(), Some("agent-one"));
    assert!(claim.accepts_type("control.attention.respond"));
    assert!(!claim.accepts_type("control.cancel"));
    assert_eq!(claim.claimants(), 1);
    assert!(p
        .session("aep://corpus/adapter-a", "s-alpha")
        .unwrap()
        .claim()
        .is_none());
    p.set_roster(&[]);
    assert!(p
        .session("aep://corpus/adapter-a", "s-beta")
        .unwrap()
        .claim()
        .is_none());
    // a full snapshot says the same
    let json = serde_json::to_value(p.state().detailed()).unwrap();
    assert_eq!(json["sessions"][1]["claim"], Value::Null);
    assert_eq!(json["sessions"][1]["status"], "ended");
}

#[test]
fn a_request_whose_payload_does_not_decode_stays_pending_without_a_question() {
    let e = Event::new("q", "attention.requested", "t", "aep://h", "a")
        .with_session("s")
        .with_seq(0)
        .with_data(json!({"kind": 5, "options": "nope"}));
    let state = project_state([&e]);
    let pending = &state.sessions()[0].pending()[0];
    assert_eq!(pending.request().prompt(), None);
    assert!(pending.request().options().is_empty());
    assert!(pending.request().answerable());
}

/// A list reads each session in place ([`StateProjection::summary`]); it says what the
/// snapshot says, at every step of a fold, whatever the events do to runs, requests and
/// tool calls (the corpus, the golden stream, and terminals out of order).
#[test]
fn a_session_summary_says_what_its_snapshot_says_at_every_step() {
    use aep_core::frame::{Hello, Identity, Role, RosterEntry};
    let e = |id: &str, ty: &str, seq, run: &str| {
        Event::new(id, ty, "2026-07-22T06:00:00.000Z", "aep://h", "a")
            .with_session("x")
            .with_seq(seq)
            .with_run(run)
    };
    let extra = [
        e("x1", "run.started", 0, "r1"),
        e("x2", "run.started", 1, "r2"),
        e("x3", "run.completed", 2, "r1"),
        e("x4", "run.failed", 3, "r1"), // a second terminal: the run stays closed
        e("x5", "run.cancelled", 4, "r3"), // a terminal without its start
        e("x6", "run.started", 5, "r3"),
        e("x7", "run.completed", 6, "r2"),
    ];
    let events: Vec<Event> = corpus()
        .into_iter()
        .chain(golden_stream())
        .chain(extra)
        .collect();
    let mut p = StateProjection::new();
    let hello = Hello::new(Role::Emitter).with_identity(Identity::new("a"));
    p.set_roster(&[RosterEntry::claimed("x", &hello)]);
    for event in &events {
        p.apply(event);
        assert_eq!(p.summaries().count(), p.session_count());
        for s in p.summaries() {
            let snap = p.session(s.source(), s.session()).unwrap();
            let facts = |x: &aep_core::projection::ProjectedSession| {
                (
                    x.agent().to_owned(),
                    x.started().map(str::to_owned),
                    x.ended().map(str::to_owned),
                    x.position(),
                    x.status(),
                    x.last_activity().cloned(),
                    x.pending().len(),
                    x.runs().len(),
                    x.tools().len(),
                    x.claim().map_or(0, |c| c.claimants()),
                )
            };
            let read = (
                s.agent().to_owned(),
                s.started().map(str::to_owned),
                s.ended().map(str::to_owned),
                s.position(),
                s.status(),
                s.last_activity().cloned(),
                s.pending_count(),
                s.run_count(),
                s.tool_count(),
                s.claimants(),
            );
            assert_eq!(read, facts(&snap), "after {}", event.id());
            let ids: Vec<&str> = s.pending().map(|q| q.id()).collect();
            let snap_ids: Vec<&str> = snap.pending().iter().map(|q| q.id()).collect();
            assert_eq!(ids, snap_ids);
        }
    }
    assert!(p.summary("aep://h", "nope").is_none());
}
