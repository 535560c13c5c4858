//! `aep hook` as the agents run it: one process per hook, the payload on stdin, against
//! the embedded relay: whole sessions of every hook agent (`aep validate` finds nothing,
//! `aep project` folds them), a relay that is down, wedged or refusing, hooks racing on
//! one session, payloads that are not what they should be.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use aep::protocol::Event;
use aep_test_support::relay::TestRelay;
use common::{history, relay, run_with, scratch, scripted_relay, Run, TOKEN};
use serde_json::{json, Value};

/// The session files of aep-adapters' tests: payloads shaped as each agent documents
/// them; Antigravity's lines carry the hook name the registration passes (`argv`).
fn session_lines(agent: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../aep-adapters/tests/data/sessions")
        .join(format!("{agent}.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs one hook: `aep hook AGENT [HOOK]` with `payload` on stdin.
fn hook(
    agent: &str,
    argv: Option<&str>,
    payload: &[u8],
    url: &str,
    dir: &Path,
    extra: &[&str],
) -> Run {
    let dir = dir.to_str().unwrap();
    let mut args = vec!["hook", agent];
    if let Some(h) = argv {
        args.push(h);
    }
    args.extend_from_slice(&["--url", url, "--token", TOKEN, "--state-dir", dir]);
    // A busy machine may take more than the default second to map a large payload in
    // a debug build: the budget here only guards against a hang, unless a test sets it.
    if !extra.contains(&"--budget") {
        args.extend_from_slice(&["--budget", "20000"]);
    }
    // Nobody answers here: a permission request is observed, never held (the loop is
    // `permission.rs`'s).
    if !extra.contains(&"--hold") {
        args.extend_from_slice(&["--hold", "0"]);
    }
    args.extend_from_slice(extra);
    run_with(&args, payload, Duration::from_secs(30))
}

/// Feeds a whole session file to `aep hook AGENT`, each hook checked: exit 0, the
/// agent's neutral reply on stdout.
fn play(agent: &str, url: &str, dir: &Path) {
    for line in session_lines(agent) {
        let (payload, argv) = match line.get("argv") {
            Some(h) => (line["payload"].clone(), h.as_str().map(str::to_owned)),
            None => (line, None),
        };
        let r = hook(
            agent,
            argv.as_deref(),
            payload.to_string().as_bytes(),
            url,
            dir,
            &[],
        );
        r.expect(0);
        assert!(r.stderr.is_empty(), "{agent}: {}", r.stderr);
        let want = match (agent, argv.as_deref()) {
            ("antigravity", Some("PreToolUse" | "Stop")) => "{\"decision\": \"\"}\n",
            ("antigravity" | "cline", _) => "{}\n",
            _ => "",
        };
        assert_eq!(r.stdout, want, "{agent} {argv:?}");
    }
}

fn write_jsonl(dir: &Path, events: &[Event]) -> PathBuf {
    let path = dir.join("held.jsonl");
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn every_hook_agent_s_whole_session_validates_and_folds() {
    let relay = relay();
    for agent in aep_adapters::Source::HOOK_AGENTS.map(aep_adapters::Source::name) {
        let state = scratch();
        play(agent, relay.url(), state.path());
        let held: Vec<Event> = history(relay.url())
            .into_iter()
            .filter(|e| e.agent() == agent)
            .collect();
        assert!(held.len() >= 5, "{agent}: {} events", held.len());
        let file = write_jsonl(state.path(), &held);
        let path = file.to_str().unwrap();
        run_with(&["validate", path], b"", Duration::from_secs(30)).expect(0);
        let folded = run_with(
            &["project", path, "--format", "json"],
            b"",
            Duration::from_secs(30),
        );
        folded.expect(0);
        let folded: Value = serde_json::from_str(&folded.stdout).unwrap();
        assert_eq!(folded["violations"], json!([]), "{agent}");
        let sessions = folded["sessions"].as_array().unwrap();
        assert!(
            sessions
                .iter()
                .any(|s| !s["runs"].as_array().unwrap().is_empty()),
            "{agent}: no run folded: {folded}"
        );
        assert!(
            sessions.iter().all(|s| s["pending"] == json!([])),
            "{agent}: {folded}"
        );
        // Nothing left behind: everything was delivered.
        let spooled = std::fs::read_dir(state.path().join("spool"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert_eq!(
            std::fs::metadata(spooled.join("events.jsonl"))
                .unwrap()
                .len(),
            0,
            "{agent}"
        );
    }
}

/// A relay that is down on a port it holds, and the tokio runtime that brings it back
/// on the same port (`rt.block_on(relay.restart())`).
fn stopped_relay() -> (tokio::runtime::Runtime, TestRelay) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let relay = rt
        .block_on(async { TestRelay::stopped(aep_relay::RelayConfig::default()) })
        .unwrap();
    (rt, relay)
}

fn payload(i: usize) -> Vec<u8> {
    json!({"hook_event_name": "PreToolUse", "session_id": "spooled", "tool_name": "Bash",
        "tool_use_id": format!("t{i}"), "tool_input": {"command": format!("echo {i}")}})
    .to_string()
    .into_bytes()
}

fn seqs(events: &[Event], session: &str) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e.session() == Some(session))
        .filter_map(Event::seq)
        .collect()
}

#[test]
fn a_relay_that_is_down_costs_a_spool_and_the_next_hook_delivers_it_in_order_once() {
    let (rt, mut relay) = stopped_relay();
    let url = relay.url();
    let state = scratch();
    for i in 0..5 {
        let r = hook("claude-code", None, &payload(i), &url, state.path(), &[]);
        r.expect(0).stderr_has("spooled");
        assert_eq!(r.stdout, "");
    }
    let log = std::fs::read_to_string(state.path().join("hook.log")).unwrap();
    assert!(log.contains("unreachable"), "{log}");
    rt.block_on(relay.restart()).unwrap();
    // The next hook delivers what waited, then its own, in order.
    hook("claude-code", None, &payload(5), &url, state.path(), &[]).expect(0);
    let held = history_open(&url);
    assert_eq!(seqs(&held, "spooled"), (0..6).collect::<Vec<u64>>());
    // Nothing twice: every id once.
    let mut ids: Vec<&str> = held.iter().map(Event::id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 6);
}

#[test]
fn aep_hook_flush_delivers_the_spool_and_says_what_is_left() {
    let (rt, mut relay) = stopped_relay();
    let url = relay.url();
    let state = scratch();
    let dir = state.path().to_str().unwrap();
    for i in 0..3 {
        hook("codex", None, &payload(i), &url, state.path(), &[]).expect(0);
    }
    flush(&url, dir)
        .expect(5)
        .stderr_has("3 events still spooled");
    rt.block_on(relay.restart()).unwrap();
    flush(&url, dir)
        .expect(0)
        .stderr_has("3 sent, 0 rejected, 0 waiting");
    assert_eq!(seqs(&history_open(&url), "spooled"), [0, 1, 2]);
    // Flushing an empty spool is done at once.
    flush(&url, dir).expect(0);
}

/// `aep hook flush` of the spool in `dir` to the relay at `url`.
fn flush(url: &str, dir: &str) -> Run {
    run_with(
        &["hook", "flush", "--url", url, "--state-dir", dir],
        b"",
        Duration::from_secs(30),
    )
}

/// The text of `file` in the one spool under the hook state directory `state`.
fn spooled(state: &Path, file: &str) -> String {
    let spool = std::fs::read_dir(state.join("spool"))
        .unwrap()
        .next()
        .expect("a spool")
        .unwrap()
        .path();
    std::fs::read_to_string(spool.join(file)).unwrap()
}

/// One history pass over a relay without a token.
fn history_open(url: &str) -> Vec<Event> {
    use aep::blocking::SubscribeOptions;
    aep::blocking::Client::new(url)
        .subscribe(SubscribeOptions::new().from_all().history_only())
        .expect("subscribe")
        .collect()
}

#[test]
fn hooks_racing_on_one_session_never_share_a_position() {
    let relay = relay();
    let state = scratch();
    let children: Vec<_> = (0..12)
        .map(|i| {
            let mut cmd = common::aep();
            cmd.args([
                "hook",
                "qwen-code",
                "--budget",
                "20000",
                "--url",
                relay.url(),
                "--token",
                TOKEN,
                "--state-dir",
            ])
            .arg(state.path());
            (common::spawn(cmd), payload(i))
        })
        .collect();
    for (child, p) in children {
        common::finish(child, &p, Duration::from_secs(60)).expect(0);
    }
    let held = history(relay.url());
    let seqs = seqs(&held, "spooled");
    assert_eq!(seqs.len(), 12);
    // Unique, and in the order the relay took them: increasing.
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[test]
fn a_wedged_relay_costs_the_budget_and_nothing_is_lost() {
    let url = scripted_relay(None);
    let state = scratch();
    let r = hook(
        "gemini-cli",
        None,
        &payload(0),
        &url,
        state.path(),
        &["--budget", "300"],
    );
    r.expect(0).stderr_has("did not answer within the budget");
    let waiting = spooled(state.path(), "events.jsonl");
    assert_eq!(waiting.lines().count(), 1);
}

#[test]
fn a_relay_that_refuses_an_event_for_good_keeps_it_aside() {
    let url = scripted_relay(Some(
        b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ));
    let state = scratch();
    hook("vscode", None, &payload(0), &url, state.path(), &[]).expect(0);
    let rejected = spooled(state.path(), "rejected.jsonl");
    assert_eq!(rejected.lines().count(), 1);
    assert!(rejected.contains("tool.requested"));
}

#[test]
fn a_payload_that_is_not_json_is_a_logged_refusal_and_exit_0() {
    let relay = relay();
    let state = scratch();
    let r = hook(
        "antigravity",
        Some("PreToolUse"),
        b"{not json",
        relay.url(),
        state.path(),
        &[],
    );
    r.expect(0).stderr_has("not JSON");
    assert_eq!(r.stdout, "{\"decision\": \"\"}\n");
    let log = std::fs::read_to_string(state.path().join("hook.log")).unwrap();
    assert!(
        log.contains("antigravity: the payload is not JSON"),
        "{log}"
    );
    // An unknown hook is the vendor fallback, delivered.
    let r = hook(
        "codex",
        None,
        br#"{"hook_event_name":"BrandNewHook","session_id":"s"}"#,
        relay.url(),
        state.path(),
        &[],
    );
    r.expect(0);
    assert!(history(relay.url())
        .iter()
        .any(|e| e.event_type() == "x.codex.session.brand_new_hook"));
}

#[test]
fn a_five_megabyte_tool_output_goes_as_its_digest() {
    let relay = relay();
    let state = scratch();
    let big = json!({"hook_event_name": "PostToolUse", "session_id": "big", "tool_name": "Bash",
        "tool_use_id": "t1", "tool_input": {"command": "cat log"},
        "tool_response": {"stdout": "ünïcödé ".repeat(500_000), "stderr": ""}});
    let bytes = big.to_string().into_bytes();
    assert!(bytes.len() > 5_000_000);
    hook("claude-code", None, &bytes, relay.url(), state.path(), &[]).expect(0);
    let held = history(relay.url());
    let done = held
        .iter()
        .find(|e| e.event_type() == "tool.completed")
        .expect("delivered");
    assert!(done.to_string().len() < 1_000);
    assert_eq!(
        done.data().unwrap()["result_digest"].as_str().map(str::len),
        Some(32)
    );
}

#[test]
fn a_lost_state_file_never_reuses_a_position() {
    let relay = relay();
    let state = scratch();
    let one = |i: usize| {
        let p = json!({"hook_event_name": "PreToolUse", "session_id": "lost-state", "tool_name": "Bash",
            "tool_use_id": format!("t{i}"), "tool_input": {"command": "ls"}});
        hook(
            "claude-code",
            None,
            p.to_string().as_bytes(),
            relay.url(),
            state.path(),
            &[],
        )
        .expect(0);
    };
    for i in 0..3 {
        one(i);
    }
    // The agent's state is gone (a wiped state directory, a new machine image): the
    // next hook starts the session again in the epoch store's next epoch.
    std::fs::remove_dir_all(state.path().join("sessions")).unwrap();
    for i in 3..6 {
        one(i);
    }
    let held: Vec<Event> = history(relay.url())
        .into_iter()
        .filter(|e| e.session() == Some("lost-state"))
        .collect();
    let positions: Vec<(u64, u64)> = held.iter().map(|e| (e.epoch(), e.seq().unwrap())).collect();
    assert_eq!(positions.len(), 6);
    let mut unique = positions.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 6, "a position was used twice: {positions:?}");
    assert!(positions[3].0 > positions[2].0, "{positions:?}");
    assert_eq!(positions[3].1, 0);
    let file = write_jsonl(state.path(), &held);
    run_with(
        &["validate", file.to_str().unwrap()],
        b"",
        Duration::from_secs(30),
    )
    .expect(0);
}
