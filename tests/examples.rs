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
