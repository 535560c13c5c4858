//! The permission loop end to end: `aep hook claude-code` on a `PermissionRequest` held
//! while `aep respond` answers it through the embedded relay, and the agent's decision
//! on stdout: an allow, a deny with guidance, an `AskUserQuestion` form, a wrong answer
//! nacked while the request stays open, and no answer in time leaving the decision to
//! the agent (the neutral reply, `attention.timeout`).

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use aep::protocol::Event;
use common::{aep, finish, history, relay, run, run_with, scratch, spawn, Run, TOKEN};
use serde_json::{json, Value};

/// Starts `aep hook claude-code` on `payload`, holding for `hold_ms`.
fn start_hook(url: &str, dir: &Path, payload: &Value, hold_ms: &str) -> (Child, Vec<u8>) {
    let mut cmd = aep();
    cmd.args(["hook", "claude-code", "--url", url, "--token", TOKEN])
        .args(["--state-dir", dir.to_str().unwrap()])
        .args(["--budget", "20000", "--hold", hold_ms]);
    (spawn(cmd), payload.to_string().into_bytes())
}

/// `aep hook claude-code` on `payload` of `session`, holding for a minute on a thread of
/// its own (its outcome when joined), and the `attention.requested` it put at the relay.
fn held_hook(
    url: &str,
    dir: &Path,
    payload: &Value,
    session: &str,
) -> (std::thread::JoinHandle<Run>, Event) {
    let (child, stdin) = start_hook(url, dir, payload, "60000");
    let writer = std::thread::spawn(move || finish(child, &stdin, Duration::from_secs(90)));
    (writer, requested(url, session))
}

/// The `attention.requested` of `session` once the relay holds it.
pub(crate) fn requested(url: &str, session: &str) -> Event {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = history(url)
            .into_iter()
            .find(|e| e.session() == Some(session) && e.event_type() == "attention.requested");
        if let Some(e) = found {
            return e;
        }
        assert!(
            Instant::now() < deadline,
            "no attention.requested in {session}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `aep respond SESSION REQUEST ANSWER...`, sent again while the relay has no route yet
/// (the hook claims the session just after the request is delivered): its exit code.
pub(crate) fn respond(url: &str, session: &str, request: &str, answer: &[&str]) -> Run {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut args = vec!["respond", session, request];
        args.extend_from_slice(answer);
        args.extend_from_slice(&["--url", url, "--token", TOKEN, "--ack-window", "5000"]);
        let r = run(&args);
        if r.code() != 3 || !r.stderr.contains("no-route") || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn permission(session: &str) -> Value {
    json!({"hook_event_name": "PermissionRequest", "session_id": session, "cwd": "/w",
        "permission_mode": "default", "transcript_path": "/t.jsonl", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build", "description": "Clean the build"},
        "permission_suggestions": [{"type": "addRules", "behavior": "allow", "destination": "localSettings"}]})
}

/// The relay's events of `session`.
fn session_events(url: &str, session: &str) -> Vec<Event> {
    history(url)
        .into_iter()
        .filter(|e| e.session() == Some(session))
        .collect()
}

/// The first of `events` of type `ty`.
fn of_type<'a>(events: &'a [Event], ty: &str) -> &'a Event {
    let found = events.iter().find(|e| e.event_type() == ty);
    found.unwrap_or_else(|| panic!("no {ty} in {events:?}"))
}

/// `aep validate` finds nothing in `events`.
fn validates(dir: &Path, events: &[Event]) {
    let path = dir.join("held.jsonl");
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&path, text).unwrap();
    run_with(
        &["validate", path.to_str().unwrap()],
        b"",
        Duration::from_secs(30),
    )
    .expect(0);
}

#[test]
fn an_allow_from_aep_respond_is_claude_code_s_allow_decision() {
    let relay = relay();
    let dir = scratch();
    let (writer, request) = held_hook(relay.url(), dir.path(), &permission("p-allow"), "p-allow");
    assert_eq!(request.data().unwrap()["options"][0]["id"], "allow");
    // answerable until the hold ends (AEP-0002 §5.3 `expires_at`)
    assert!(request.data().unwrap()["expires_at"].is_string());
    let r = respond(relay.url(), "p-allow", request.id(), &["--option", "allow"]);
    r.expect(0);
    let hook = writer.join().unwrap();
    hook.expect(0);
    let decision: Value = serde_json::from_str(hook.stdout.trim()).unwrap();
    assert_eq!(
        decision,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
    );
    let events = session_events(relay.url(), "p-allow");
    let ack = of_type(&events, "control.accepted");
    let answered = of_type(&events, "attention.answered");
    assert_eq!(answered.subject(), Some(request.id()));
    assert_eq!(answered.cause(), ack.cause());
    assert_eq!(answered.data().unwrap()["answer"]["option"], "allow");
    let resolved: Vec<&Event> = events
        .iter()
        .filter(|e| e.event_type() == "attention.resolved")
        .collect();
    assert_eq!(resolved.len(), 1, "one terminal");
    assert_eq!(resolved[0].data().unwrap()["resolution"], "answered");
    validates(dir.path(), &events);
}

#[test]
fn text_naming_no_option_is_a_deny_with_the_text_as_guidance() {
    let relay = relay();
    let dir = scratch();
    let (writer, request) = held_hook(relay.url(), dir.path(), &permission("p-deny"), "p-deny");
    // An option the request does not offer: nacked `invalid`, the request stays open.
    let wrong = respond(relay.url(), "p-deny", request.id(), &["--option", "maybe"]);
    wrong.expect(3);
    wrong.stderr_has("invalid");
    respond(
        relay.url(),
        "p-deny",
        request.id(),
        &["--text", "run make clean instead"],
    )
    .expect(0);
    let hook = writer.join().unwrap();
    hook.expect(0);
    let decision: Value = serde_json::from_str(hook.stdout.trim()).unwrap();
    assert_eq!(
        decision["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny", "message": "run make clean instead"})
    );
    let events = session_events(relay.url(), "p-deny");
    let answered = of_type(&events, "attention.answered");
    // AEP-0008: the recorded answer is the option applied; the text, at `redacted`.
    assert_eq!(answered.data().unwrap()["answer"]["option"], "deny");
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event_type() == "control.rejected")
            .count(),
        1
    );
    validates(dir.path(), &events);
}

#[test]
fn no_answer_in_time_leaves_the_decision_to_claude_code_s_own_prompt() {
    let relay = relay();
    let dir = scratch();
    let (child, stdin) = start_hook(relay.url(), dir.path(), &permission("p-late"), "1500");
    let hook = finish(child, &stdin, Duration::from_secs(90));
    hook.expect(0);
    assert_eq!(hook.stdout, "", "the neutral reply: no decision");
    let events = session_events(relay.url(), "p-late");
    let request = of_type(&events, "attention.requested");
    let timeout = of_type(&events, "attention.timeout");
    assert_eq!(timeout.subject(), Some(request.id()));
    // A later answer finds nothing pending: nothing holds the session any more.
    let late = run(&[
        "respond",
        "p-late",
        request.id(),
        "--option",
        "allow",
        "--url",
        relay.url(),
        "--token",
        TOKEN,
        "--ack-window",
        "2000",
        "--retries",
        "0",
    ]);
    assert_ne!(late.code(), 0);
    validates(dir.path(), &events);
}

#[test]
fn an_ask_user_question_form_is_answered_with_claude_code_s_updated_input() {
    let relay = relay();
    let dir = scratch();
    let payload = json!({"hook_event_name": "PermissionRequest", "session_id": "p-form",
        "tool_name": "AskUserQuestion", "tool_use_id": "toolu_1", "tool_input": {"questions": [
            {"question": "Which database?", "header": "DB", "multiSelect": false,
             "options": [{"label": "PostgreSQL", "description": "server"}, {"label": "SQLite", "description": "file"}]}]}});
    let (writer, request) = held_hook(relay.url(), dir.path(), &payload, "p-form");
    assert_eq!(request.data().unwrap()["kind"], "form");
    // a form needs values: an option is nacked, the question stays open
    respond(relay.url(), "p-form", request.id(), &["--option", "1"]).expect(3);
    respond(
        relay.url(),
        "p-form",
        request.id(),
        &["--values", r#"{"1": "2"}"#],
    )
    .expect(0);
    let hook = writer.join().unwrap();
    hook.expect(0);
    let decision: Value = serde_json::from_str(hook.stdout.trim()).unwrap();
    let decision = &decision["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "allow");
    assert_eq!(
        decision["updatedInput"]["answers"],
        json!({"Which database?": "SQLite"})
    );
    validates(dir.path(), &session_events(relay.url(), "p-form"));
}

#[test]
fn a_relay_that_is_down_holds_nothing_the_request_waits_in_the_spool() {
    let url = common::dead_relay_url();
    let dir = scratch();
    let started = Instant::now();
    let (child, stdin) = start_hook(&url, dir.path(), &permission("p-down"), "60000");
    let hook = finish(child, &stdin, Duration::from_secs(90));
    hook.expect(0);
    assert_eq!(
        hook.stdout, "",
        "the neutral reply: Claude Code asks itself"
    );
    hook.stderr_has("spooled");
    // Not held for the minute: nobody could have answered.
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "{:?}",
        started.elapsed()
    );
    let spooled = std::fs::read_dir(dir.path().join("spool"))
        .unwrap()
        .map(|d| std::fs::read_to_string(d.unwrap().path().join("events.jsonl")).unwrap())
        .collect::<String>();
    assert!(spooled.contains("attention.requested"), "{spooled}");
}
