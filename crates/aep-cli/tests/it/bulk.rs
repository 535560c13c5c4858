//! Issue 22's bulk proof: `aep emit` of a 100,000-event file through a local relay
//! started with `aep relay --buffer 200000` delivers every one, and `aep tail --from all
//! --history --no-resume --format json` reads them all back, in order per session.

#![allow(clippy::unwrap_used)] // a test: a panic is the failure report

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::{jsonl, line, run_with, scratch, AepRelay, TOKEN};

#[test]
fn a_hundred_thousand_events_go_through_and_come_back_in_order() {
    const N: u64 = 100_000;
    const SESSIONS: u64 = 4;
    let relay = AepRelay::start(&["--buffer", "200000", "--token", TOKEN], &[]);
    let dir = scratch();
    let lines: Vec<String> = (0..N)
        .map(|i| {
            let s = format!("bulk-{}", i % SESSIONS);
            line(
                &format!("e{i}"),
                "tool.requested",
                &s,
                i / SESSIONS,
                serde_json::json!({"tool": {"name": "t"}}),
            )
        })
        .collect();
    let file = jsonl(dir.path(), "bulk.jsonl", &lines);
    drop(lines);
    let deadline = Duration::from_secs(300);
    let against_relay = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--url", &relay.url, "--token", TOKEN]);
        run_with(&all, b"", deadline)
    };
    let r = against_relay(&["emit", file.to_str().unwrap()]);
    r.expect(0);
    let summary: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(summary["sent"], N);
    assert_eq!(summary["delivered"], N);

    let r = against_relay(&[
        "tail",
        "--from",
        "all",
        "--history",
        "--no-resume",
        "--format",
        "json",
    ]);
    r.expect(0);
    let mut next: HashMap<String, u64> = HashMap::new();
    let mut count = 0u64;
    for l in r.stdout.lines() {
        let e: aep::protocol::Event = l.parse().unwrap();
        let expected = next.entry(e.session().unwrap().to_owned()).or_insert(0);
        assert_eq!(e.seq(), Some(*expected), "in order per session");
        *expected += 1;
        count += 1;
    }
    assert_eq!(count, N);
    assert_eq!(next.len() as u64, SESSIONS);
    relay.stop().expect(0);
}
