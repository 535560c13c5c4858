//! `aep sink`: durable capture, crash recovery (a torn line, SIGKILL), rotation, and
//! clean shutdown.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use serde_json::json;

use common::{
    aep, dead_relay_url, eventually, file_lines, finish, relay, run, scratch, seed, spawn,
    terminate, Run, TOKEN,
};

fn start_sink(url: &str, out: &Path, extra: &[&str]) -> Child {
    let mut cmd = aep();
    cmd.args(["sink", "--url", url, "--token", TOKEN, "--out"])
        .arg(out)
        .args(extra);
    spawn(cmd)
}

/// `aep sink --out OUT` against a relay that is not there: what it makes of `out`
/// decides the outcome before any connection.
fn sink_without_relay(out: &Path) -> Run {
    run(&[
        "sink",
        "--url",
        &dead_relay_url(),
        "--out",
        out.to_str().unwrap(),
    ])
}

fn ids(path: &Path) -> Vec<String> {
    file_lines(path)
        .iter()
        .map(|l| l.parse::<aep::protocol::Event>().unwrap().id().to_owned())
        .collect()
}

/// Emits `n` `tool.requested` events with `data(i)` into `session` over HTTP, as an
/// emitter in `epoch`; returns their ids.
fn emit_tools(
    url: &str,
    epoch: u64,
    session: &str,
    n: usize,
    data: impl Fn(usize) -> serde_json::Value,
) -> Vec<String> {
    use aep::blocking::{Client, Emitter, HttpSinkOptions};
    let emitter = Emitter::builder("seeder", "test").epoch(epoch).build(
        Client::new(url)
            .token(TOKEN)
            .http_sink(HttpSinkOptions::new())
            .unwrap(),
    );
    let s = emitter.session(session);
    let ids = (0..n)
        .map(|i| s.emit("tool.requested", data(i)).unwrap().id().to_owned())
        .collect();
    emitter.close().unwrap();
    ids
}

#[test]
fn a_file_per_session_and_a_clean_stop() {
    let relay = relay();
    let dir = scratch();
    let a = seed(relay.url(), "s1", 5);
    let b = seed(relay.url(), "s/2", 3);
    let child = start_sink(relay.url(), dir.path(), &["--from", "all"]);
    let s1 = dir.path().join("s1.jsonl");
    let s2 = dir.path().join("s%2F2.jsonl");
    eventually("both sessions on disk", Duration::from_secs(20), || {
        file_lines(&s1).len() == 5 && file_lines(&s2).len() == 3
    });
    terminate(&child);
    let r = finish(child, b"", Duration::from_secs(20));
    r.expect(0);
    assert_eq!(ids(&s1), a);
    assert_eq!(ids(&s2), b);
    let summary: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(summary["events"], 8);
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".sink-state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state.as_array().unwrap().len(), 2);
    for f in [&s1, &s2] {
        run(&["validate", f.to_str().unwrap()]).expect(0);
    }
}

#[test]
fn a_crash_and_a_torn_line_leave_no_duplicates_and_no_gaps() {
    let relay = relay();
    let dir = scratch();
    let first = seed(relay.url(), "s1", 10);
    let mut child = start_sink(relay.url(), dir.path(), &["--from", "all"]);
    let file = dir.path().join("s1.jsonl");
    eventually("the first events on disk", Duration::from_secs(20), || {
        file_lines(&file).len() == 10
    });
    child.kill().unwrap(); // SIGKILL: no flush, no state write
    child.wait().unwrap();
    // an interrupted write: half a line at the end
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    f.write_all(br#"{"aep":"0.1","id":"torn","ty"#).unwrap();
    drop(f);
    // the state file says less than the file holds: the file is the authority
    std::fs::write(
        dir.path().join(".sink-state.json"),
        r#"[{"session":"s1","epoch":0,"seq":3}]"#,
    )
    .unwrap();
    // the agent restarts: a new epoch (AEP-0001 §7.2)
    let more = emit_tools(
        relay.url(),
        1,
        "s1",
        5,
        |i| serde_json::json!({"tool": {"name": format!("m{i}")}}),
    );
    let child = start_sink(relay.url(), dir.path(), &[]);
    eventually("the rest on disk", Duration::from_secs(20), || {
        file_lines(&file).len() == 15
    });
    terminate(&child);
    let r = finish(child, b"", Duration::from_secs(20));
    r.expect(0);
    r.stderr_has("torn last line");
    let got = ids(&file);
    let expected: Vec<String> = first.iter().chain(&more).cloned().collect();
    assert_eq!(got, expected, "every event once, in order");
    run(&["validate", file.to_str().unwrap()]).expect(0);
}

#[test]
fn rotation_starts_a_new_file_and_keeps_every_event_once() {
    let relay = relay();
    let dir = scratch();
    // about 1.6 MiB in one session
    let pad = "x".repeat(800);
    let sent = emit_tools(
        relay.url(),
        0,
        "big",
        2000,
        |i| serde_json::json!({"tool": {"name": format!("t{i}")}, "pad": pad}),
    );
    let child = start_sink(
        relay.url(),
        dir.path(),
        &["--from", "all", "--rotate-mb", "1"],
    );
    let jsonl = || -> Vec<PathBuf> {
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        files
    };
    let all_ids = || -> Vec<String> { jsonl().iter().flat_map(|f| ids(f)).collect() };
    // While the sink writes, a file's last line may be half written: only whole lines
    // count until it has stopped, and then every line must be an event.
    let whole_lines = || -> usize {
        let newlines = |f: &PathBuf| {
            let bytes = std::fs::read(f).unwrap_or_default();
            bytes.iter().filter(|&&b| b == b'\n').count()
        };
        jsonl().iter().map(newlines).sum()
    };
    eventually("every event on disk", Duration::from_secs(30), || {
        whole_lines() == 2000
    });
    terminate(&child);
    finish(child, b"", Duration::from_secs(20)).expect(0);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let rotated: Vec<_> = files
        .iter()
        .filter(|f| f.starts_with("big.") && f.ends_with(".jsonl") && f.as_str() != "big.jsonl")
        .collect();
    assert!(!rotated.is_empty(), "{files:?}");
    for f in rotated {
        assert!(
            std::fs::metadata(dir.path().join(f)).unwrap().len() <= 1 << 20,
            "{f}"
        );
    }
    let got: HashSet<String> = all_ids().into_iter().collect();
    assert_eq!(got.len(), 2000);
    assert_eq!(got, sent.into_iter().collect::<HashSet<_>>());
}

#[test]
fn a_relay_down_or_an_unwritable_directory() {
    let dir = scratch();
    let r = sink_without_relay(dir.path());
    r.expect(5);
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let r = sink_without_relay(&file);
    r.expect(6);
    r.stderr_has("a-file");
    run(&["sink", "--url", &dead_relay_url()]).expect(2); // --out is required
}

#[test]
fn a_state_file_that_is_garbage_is_exit_6_with_a_remedy_sink_has() {
    let dir = scratch();
    let state = dir.path().join(".sink-state.json");
    std::fs::write(&state, "{not json").unwrap();
    let r = sink_without_relay(dir.path());
    r.expect(6);
    r.stderr_has(".sink-state.json");
    r.stderr_has("remove it to start over");
    // sink has no such flag: the remedy must not send the user to it
    r.stderr_lacks("--no-resume");
}

/// A session name whose escaped file name would pass 255 bytes (30 CJK characters are
/// enough): a bounded file name, the session read back from the file on restart, and
/// the capture goes on for every session.
#[test]
fn a_long_session_name_is_captured_and_the_capture_goes_on() {
    let relay = relay();
    let dir = scratch();
    let long = "長い名前のセッション".repeat(10);
    // each batch an emitter of its own, in an epoch of its own (AEP-0001 §7.2)
    let batch = |epoch, session: &str, n| {
        emit_tools(
            relay.url(),
            epoch,
            session,
            n,
            |i| json!({"tool": {"name": format!("t{i}")}}),
        )
    };
    let mut long_ids = batch(1, &long, 3);
    let mut after_ids = batch(1, "after", 1);
    let child = start_sink(relay.url(), dir.path(), &["--from", "all"]);
    let after = dir.path().join("after.jsonl");
    let long_file = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains('~'))
    };
    eventually("both sessions on disk", Duration::from_secs(20), || {
        file_lines(&after).len() == 1 && long_file().is_some_and(|f| file_lines(&f).len() == 3)
    });
    let long_file = long_file().unwrap();
    let name_len = long_file.file_name().unwrap().len();
    assert!(name_len <= 255, "{name_len} bytes");
    // live, after the long session: both go on
    long_ids.extend(batch(2, &long, 2));
    after_ids.extend(batch(2, "after", 2));
    eventually("the live events on disk", Duration::from_secs(20), || {
        file_lines(&after).len() == 3 && file_lines(&long_file).len() == 5
    });
    terminate(&child);
    finish(child, b"", Duration::from_secs(20)).expect(0);
    // restarted: the long session resumes from what its file holds, nothing twice
    let child = start_sink(relay.url(), dir.path(), &["--from", "all"]);
    after_ids.extend(batch(3, "after", 1));
    eventually(
        "the restarted sink's first event",
        Duration::from_secs(20),
        || file_lines(&after).len() == 4,
    );
    terminate(&child);
    finish(child, b"", Duration::from_secs(20)).expect(0);
    assert_eq!(ids(&long_file), long_ids);
    assert_eq!(ids(&after), after_ids);
}
