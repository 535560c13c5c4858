//! The examples, run briefly against the embedded relay: each example file is compiled
//! here as a module and its entry point called with no arguments (so it starts its own
//! relay on `127.0.0.1:0` and shuts it down before returning).

#[allow(dead_code)]
#[path = "../../examples/quickstart.rs"]
mod quickstart;

#[allow(dead_code)]
#[path = "../../examples/subscriptions.rs"]
mod subscriptions;

#[allow(dead_code)]
#[path = "../../examples/blocking.rs"]
mod blocking;

#[allow(dead_code)]
#[path = "../../examples/emit.rs"]
mod emit;

#[allow(dead_code)]
#[path = "../../examples/tail.rs"]
mod tail;

#[allow(dead_code)]
#[path = "../../examples/bridge.rs"]
mod bridge;

#[allow(dead_code)]
#[path = "../../examples/traced_agent.rs"]
mod traced_agent;

use aep_test_support::servers::{status_response, Scripted};

fn args(flags: &[&str]) -> Vec<String> {
    flags.iter().map(|f| (*f).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emit_then_tail_history_against_one_relay() {
    let relay = aep::relay::Relay::builder().start().await.unwrap();
    let url = relay.url().to_owned();
    let emitted = emit::parse(args(&["--url", &url, "--session", "s-ex", "--count", "7"]))
        .map(emit::emit)
        .unwrap()
        .await;
    assert!(emitted, "every event delivered");
    let mut out = Vec::new();
    let opts = tail::parse(args(&["--url", &url, "--from", "all", "--history"])).unwrap();
    tail::tail(opts, &mut out).await.unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 7, "one JSON line per event, then exit");
    let seqs: Vec<_> = lines.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..7).collect::<Vec<_>>());
    assert!(lines.iter().all(|e| e["session"] == "s-ex"));
    assert_eq!(lines[0]["type"], "session.started");
    assert_eq!(lines[6]["type"], "session.ended");
    relay.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emit_and_tail_default_to_an_embedded_relay() {
    let emitted = emit::parse(args(&["--count", "3"]))
        .map(emit::emit)
        .unwrap()
        .await;
    assert!(emitted, "delivered to its own embedded relay");
    // A fresh embedded relay holds nothing: the history pass ends at once, empty.
    let mut out = Vec::new();
    let opts = tail::parse(args(&["--from", "all", "--history"])).unwrap();
    tail::tail(opts, &mut out).await.unwrap();
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_runs_end_to_end() {
    quickstart::quickstart(quickstart::Args::default())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_runs_end_to_end() {
    subscriptions::subscriptions(subscriptions::Args::default())
        .await
        .unwrap();
}

#[test]
fn blocking_runs_end_to_end() {
    blocking::blocking(blocking::Args::default()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_exports_its_demo_session_to_otlp_and_ocsf() {
    // An OTLP/HTTP endpoint that takes everything.
    let otlp = Scripted::start(|_| status_response(200)).await;
    let dir = std::env::temp_dir().join(format!("aep-bridge-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ocsf.jsonl");
    let file_arg = file.to_string_lossy().into_owned();
    let flags = args(&["--otlp", &otlp.url, "--spans", "--ocsf", &file_arg]);
    let (logs, ocsf) = bridge::bridge(bridge::parse(flags).unwrap()).await.unwrap();
    let (logs, ocsf) = (logs.unwrap(), ocsf.unwrap());
    // Six events: six LogRecords and three spans (session, run, tool call).
    assert_eq!((logs.events, logs.records, logs.exported), (6, 9, 9));
    assert_eq!(
        (ocsf.records, ocsf.skipped),
        (4, 2),
        "sessions and tools only"
    );
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(lines, 4);
    let mut paths: Vec<String> = (otlp.requests.lock().unwrap().iter())
        .map(|r| r.split(' ').nth(1).unwrap_or("").to_owned())
        .collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths, ["/v1/logs", "/v1/traces"]);
    assert!(bridge::parse(args(&[])).is_err(), "nothing to export to");
    assert!(bridge::parse(args(&["--otlp", "x", "--max-capture", "most"])).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traced_agent_spans_appear_on_the_relay() {
    traced_agent::traced_agent(traced_agent::Args::default())
        .await
        .unwrap();
}
