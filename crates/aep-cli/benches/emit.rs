//! `aep emit` of a JSONL file against the SDK's `HttpSink`, side by side in one run.
//!
//! ```text
//! cargo bench -p aep-cli --bench emit
//! ```
//! (env `AEP_BENCH_EVENTS`, default 100000; `AEP_BENCH_ROUNDS`, default 3.)
//!
//! Each round starts a fresh embedded relay holding 200,000 events per session (issue
//! 22's setting) for each of: (a) the release `aep emit FILE` on the file of events;
//! (b) the same events, parsed beforehand, handed to an `HttpSink` in this process whose
//! queue holds them all (`accept`, no waiting), then `close`; (c) the same through the
//! default queue and the waiting path `aep emit` takes (`reserve`, `accept_reserved`).
//! Each is timed from the first event to the last one acknowledged by the relay; (a)
//! also pays for its process start, reading and parsing.
//! Every event must arrive: a round that loses one fails the bench.

#![allow(clippy::unwrap_used)] // a bench: a panic is the failure report

use std::process::Command;
use std::time::Instant;

use aep::protocol::Event;
use aep::relay::Relay;
use aep::{Client, HttpSinkOptions, Sink};
use aep_test_support::bench::env_or;

const TOKEN: &str = "bench-token";

/// About 280 bytes per line, four sessions interleaved, like the SDK's throughput bench.
fn lines(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let s = format!("bench-{}", i % 4);
            serde_json::json!({
                "aep": "0.1", "id": format!("01JBENCH{i:018}"), "type": "tool.requested",
                "time": "2026-07-03T10:00:00.000Z", "source": format!("aep://bench/agent/emit/session/{s}"),
                "agent": "emit", "session": s, "seq": i / 4, "epoch": 0, "severity": "info",
                "data": {"tool": {"name": "Bash", "call_id": format!("call-{i}")}, "n": i},
            })
            .to_string()
        })
        .collect()
}

fn main() {
    let n = env_or("AEP_BENCH_EVENTS", 100_000usize);
    let rounds = env_or("AEP_BENCH_ROUNDS", 3usize);
    let lines = lines(n);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let events: Vec<Event> = lines.iter().map(|l| l.parse().unwrap()).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("{n} events of ~{} bytes, {rounds} rounds", lines[0].len());
    let mut cli = Vec::new();
    let mut sdk = Vec::new();
    let mut wait = Vec::new();
    for round in 0..rounds {
        // alternate which goes first, so neither always meets a warm machine
        for which in if round % 2 == 0 {
            ["cli", "sdk", "wait"]
        } else {
            ["wait", "sdk", "cli"]
        } {
            let relay = rt
                .block_on(Relay::builder().token(TOKEN).buffer(200_000).start())
                .unwrap();
            let url = relay.url().to_owned();
            let took = if which == "cli" {
                let started = Instant::now();
                let out = Command::new(env!("CARGO_BIN_EXE_aep"))
                    .args([
                        "emit",
                        file.to_str().unwrap(),
                        "--url",
                        &url,
                        "--token",
                        TOKEN,
                    ])
                    .output()
                    .unwrap();
                let took = started.elapsed();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(summary["delivered"], n, "aep emit lost events");
                took
            } else {
                rt.block_on(async {
                    // (b) the whole file queued at once; (c) the default queue, waiting
                    // for room as aep emit does
                    let options = if which == "sdk" {
                        HttpSinkOptions::new().queue_capacity(n)
                    } else {
                        HttpSinkOptions::new()
                    };
                    let sink = Client::new(&url).token(TOKEN).http_sink(options).unwrap();
                    let started = Instant::now();
                    for e in &events {
                        if which == "sdk" {
                            sink.accept(e).unwrap();
                        } else {
                            sink.reserve().await.unwrap();
                            sink.accept_reserved(e).unwrap();
                        }
                    }
                    Sink::close(&sink).await;
                    let took = started.elapsed();
                    assert_eq!(sink.stats().delivered, n as u64, "HttpSink lost events");
                    took
                })
            };
            rt.block_on(relay.shutdown()).unwrap();
            let rate = n as f64 / took.as_secs_f64();
            println!(
                "round {round} {which:>3}: {:>7.3} s  {:>9.0} events/s",
                took.as_secs_f64(),
                rate
            );
            match which {
                "cli" => cli.push(rate),
                "sdk" => sdk.push(rate),
                _ => wait.push(rate),
            }
        }
    }
    let span = |v: &[f64]| {
        let lo = v.iter().cloned().fold(f64::MAX, f64::min);
        let hi = v.iter().cloned().fold(0.0, f64::max);
        format!("{:.0}k-{:.0}k events/s", lo / 1000.0, hi / 1000.0)
    };
    println!("aep emit FILE:   {}", span(&cli));
    println!("HttpSink, all queued (SDK):  {}", span(&sdk));
    println!("HttpSink, reserve (SDK):     {}", span(&wait));
}
