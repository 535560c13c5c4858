//! `aep hook claude-code`, the whole process, beside the floor of any Node adapter, in
//! one run.
//!
//! ```text
//! cargo bench -p aep-cli --bench hook
//! ```
//! (env `AEP_BENCH_RUNS`, default 200.)
//!
//! The agent waits for every hook, so a hook's own time is what an adapter costs it.
//! Against one embedded relay on `127.0.0.1:0`, alternating run by run: (a) the release
//! `aep hook claude-code` on a `PreToolUse` payload: process start, stdin, the mapping,
//! the session state under its lock, the spool, one `POST /events`, the relay's answer,
//! exit; (b) `node` running the smallest adapter there is: read stdin, build one
//! envelope, one `fetch` POST, exit. Each run is timed from spawn to exit. Every event of
//! both must reach the relay (the bench fails otherwise). Without Node, (b) is skipped,
//! saying so.
//!
//! Then the permission round trip: (c) `aep hook claude-code` on a `PermissionRequest`,
//! held (`--hold 30000`) until a responder in this process answers it: a live
//! subscription sees the `attention.requested` and a `ControlClient` sends
//! `control.attention.respond {option: allow}` at once (again while the relay has no
//! route yet: the hook claims the session just after delivering the request). Timed
//! from spawn to exit; each run must print Claude Code's allow decision.

#![allow(clippy::unwrap_used)] // a bench: a panic is the failure report

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aep::relay::Relay;
use aep_test_support::bench::env_or;

const TOKEN: &str = "bench-token";

/// The floor of a Node adapter: stdin, one envelope, one POST.
const NODE: &str = r#"
let text = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) text += chunk;
const p = JSON.parse(text);
const s = p.session_id;
const event = {
  aep: "0.1", id: "n" + process.pid + Date.now(), type: "tool.requested",
  time: new Date().toISOString(), source: `aep://bench/agent/node/session/${s}`,
  agent: "node", session: s, seq: Number(process.env.AEP_BENCH_SEQ),
  data: { tool: { name: p.tool_name, call_id: p.tool_use_id } },
};
const r = await fetch(process.env.AEP_URL + "/events", {
  method: "POST",
  headers: { "content-type": "application/json", "aep-version": "0.1", authorization: "Bearer " + process.env.AEP_TOKEN },
  body: JSON.stringify(event),
});
if (!r.ok) console.error("the relay answered " + r.status + ": " + (await r.text()));
process.exit(r.ok ? 0 : 1);
"#;

/// A `PreToolUse` of Claude Code, its tool call numbered `i`.
fn payload(i: usize) -> Vec<u8> {
    claude_code(
        ("bench-session", "PreToolUse"),
        format!("toolu_{i:05}"),
        ("npm test -- --grep flaky", "Run the suite"),
    )
}

/// A `PermissionRequest` of Claude Code, its tool call numbered `i`.
fn permission(i: usize) -> Vec<u8> {
    claude_code(
        ("bench-permission", "PermissionRequest"),
        format!("toolu_p{i:05}"),
        ("rm -rf build", "Clean the build"),
    )
}

/// A Claude Code hook payload about a `Bash` call: `(session, hook event)`, the call's
/// id, and its `(command, description)`.
fn claude_code(
    (session, hook): (&str, &str),
    call: String,
    (command, description): (&str, &str),
) -> Vec<u8> {
    serde_json::json!({
        "session_id": session, "transcript_path": "/home/dev/.claude/projects/p/t.jsonl",
        "cwd": "/home/dev/proj", "permission_mode": "default", "hook_event_name": hook,
        "tool_name": "Bash", "tool_use_id": call,
        "tool_input": {"command": command, "description": description}
    })
    .to_string()
    .into_bytes()
}

/// Runs `cmd` with `stdin`, returning its wall time; a failing run fails the bench.
fn time(cmd: Command, stdin: &[u8]) -> Duration {
    time_out(cmd, stdin).0
}

/// [`time`], with what the run printed.
fn time_out(mut cmd: Command, stdin: &[u8]) -> (Duration, String) {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (took, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Answers every `attention.requested` the relay at `url` fans out with `allow`, at
/// once, until the relay goes away.
fn responder(url: &str) -> std::thread::JoinHandle<()> {
    let client = aep::blocking::Client::new(url).token(TOKEN);
    let requests = client
        .subscribe(aep::blocking::SubscribeOptions::new())
        .unwrap();
    let control = client.control(aep::control::ControlOptions::new()).unwrap();
    std::thread::spawn(move || {
        for e in requests {
            if e.event_type() != "attention.requested" {
                continue;
            }
            let session = e.session().unwrap_or_default().to_owned();
            loop {
                let opts = aep::control::SendOptions::new()
                    .subject(e.id())
                    .cause(e.id())
                    .data(serde_json::json!({"answer": {"option": "allow"}}))
                    .ack_window(Duration::from_secs(10));
                match control.send("control.attention.respond", &session, opts) {
                    // the hook has not claimed the session yet: again
                    Err(err) if err.to_string().contains("no-route") => continue,
                    Err(err) => panic!("the answer was refused: {err}"),
                    Ok(_) => break,
                }
            }
        }
    })
}

/// The value at quantile `q` of sorted `v`.
fn at(v: &[Duration], q: f64) -> f64 {
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

fn report(name: &str, v: &mut [Duration]) -> f64 {
    v.sort();
    println!(
        "{name:<28} n={:<4} min {:>6.2} ms  p25 {:>6.2}  p50 {:>6.2}  p75 {:>6.2}  p90 {:>6.2}  p99 {:>6.2}  max {:>6.2}",
        v.len(),
        at(v, 0.0),
        at(v, 0.25),
        at(v, 0.5),
        at(v, 0.75),
        at(v, 0.9),
        at(v, 0.99),
        at(v, 1.0)
    );
    at(v, 0.5)
}

fn main() {
    let runs = env_or("AEP_BENCH_RUNS", 200usize);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let relay = rt.block_on(Relay::builder().token(TOKEN).start()).unwrap();
    let url = relay.url().to_owned();
    let state = tempfile::tempdir().unwrap();
    let node = Command::new("node").arg("--version").output().is_ok();
    if !node {
        println!("skipped: the Node floor because node is not on PATH");
    }
    let aep_cmd = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_aep"));
        c.args([
            "hook",
            "claude-code",
            "--url",
            &url,
            "--token",
            TOKEN,
            "--state-dir",
        ])
        .arg(state.path());
        c
    };
    let node_cmd = |i: usize| {
        let mut c = Command::new("node");
        c.args(["--input-type=module", "-e", NODE])
            .env("AEP_BENCH_SEQ", i.to_string())
            .env("AEP_URL", &url)
            .env("AEP_TOKEN", TOKEN);
        c
    };
    // Warm the page cache and the relay's session, then measure, alternating.
    for i in 0..5 {
        time(aep_cmd(), &payload(100_000 + i));
        if node {
            time(node_cmd(100_000 + i), &payload(100_000 + i));
        }
    }
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..runs {
        let first_aep = i % 2 == 0;
        if first_aep || !node {
            a.push(time(aep_cmd(), &payload(i)));
        }
        if node {
            b.push(time(node_cmd(i), &payload(i)));
        }
        if !first_aep && node {
            a.push(time(aep_cmd(), &payload(i)));
        }
    }
    let held = aep::blocking::Client::new(&url)
        .token(TOKEN)
        .subscribe(
            aep::blocking::SubscribeOptions::new()
                .from_all()
                .history_only(),
        )
        .unwrap()
        .count();
    let want = (runs + 5) * if node { 2 } else { 1 };
    assert_eq!(held, want, "every hook's event reached the relay");
    println!("{runs} runs each, alternating; every event delivered ({held})");
    let ours = report("aep hook claude-code", &mut a);
    if node {
        let floor = report("node: stdin + one fetch POST", &mut b);
        println!("p50 ratio aep/node: {:.3}", ours / floor);
    }
    let _responder = responder(&url);
    let hold_cmd = || {
        let mut c = aep_cmd();
        c.args(["--hold", "30000"]);
        c
    };
    for i in 0..5 {
        time_out(hold_cmd(), &permission(100_000 + i));
    }
    let mut c = Vec::with_capacity(runs);
    for i in 0..runs {
        let (took, out) = time_out(hold_cmd(), &permission(i));
        assert!(out.contains(r#""behavior":"allow""#), "printed {out:?}");
        c.push(took);
    }
    println!("{runs} permission round trips, each answered allow");
    report("permission round trip", &mut c);
    rt.block_on(relay.shutdown()).unwrap();
}
