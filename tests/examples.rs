//! The examples, run briefly against the embedded relay: each example file is compiled
//! here as a module and its entry point called with no arguments (so it starts its own
//! relay on `127.0.0.1:0` and shuts it down before returning).
#![allow(clippy::unwrap_used)]
// Each example is compiled as it stands, so each brings its own copy of `examples/common`.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)]
#[path = "../examples/quickstart.rs"]
mod quickstart;

#[allow(dead_code)]
#[path = "../examples/subscriptions.rs"]
mod subscriptions;

#[allow(dead_code)]
#[path = "../examples/blocking.rs"]
mod blocking;

#[allow(dead_code)]
#[path = "../examples/emit.rs"]
mod emit;

#[allow(dead_code)]
#[path = "../examples/tail.rs"]
mod tail;

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
