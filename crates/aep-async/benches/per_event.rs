//! The SDK's own work per event, for an instruction counter: a loop over `N` events in
//! one mode, nothing else. Subtract the `none` run (which only builds the input) from a
//! mode's run and divide by `N`:
//!
//! ```sh
//! cargo bench -p aep-async --bench per_event --no-run
//! for m in none parse consume match-parsed match-json emit; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$m target/release/deps/per_event-<hash> $m 20000
//! done
//! ```
//!
//! Modes: `none`; `parse` (`Event::from_slice`); `value` (`serde_json::Value` of the
//! same line, for scale); `consume` (parse, `(source, id)` dedupe, positions: what a
//! subscription does per event once the bytes are in); `match-parsed` and `match-json`
//! (an attribute filter decided on a parsed event, or on the bytes with
//! `Filter::decide_json`: a relay replaying stored events); `validate` (the envelope
//! rules a relay checks, minus the `parsed` run that builds its input); `ingest` (a
//! relay's fast path: `EnvelopeView::read` and `validate_envelope_view`) beside
//! `ingest-parsed` (`Event::from_slice`, `validate_envelope`, drop); `emit`
//! (`SessionEmitter::emit` into a sink that serializes, what `HttpSink::accept` does
//! before queueing).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::hint::black_box;

mod common;
use common::{event_line, SerializingSink};

/// Every mode `main` runs, for the usage message.
const MODES: &[&str] = &[
    "none",
    "parse",
    "value",
    "consume",
    "ingest",
    "ingest-parsed",
    "validate",
    "parsed",
    "match-parsed",
    "match-json",
    "emit",
];

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mode = args.next().unwrap_or_else(|| "consume".into());
    let n: usize = args.next().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let lines: Vec<String> = (0..n)
        .map(|i| event_line("a", &format!("s{}", i % 10), i))
        .collect();
    match mode.as_str() {
        "none" => {
            black_box(&lines);
        }
        "parse" => {
            for l in &lines {
                black_box(aep_core::Event::from_slice(l.as_bytes()).unwrap());
            }
        }
        "value" => {
            for l in &lines {
                black_box(serde_json::from_slice::<serde_json::Value>(l.as_bytes()).unwrap());
            }
        }
        "consume" => {
            let mut dedupe = aep_core::dedupe::Dedupe::new();
            let mut positions = aep_core::resume::Positions::new();
            for l in &lines {
                let e = aep_core::Event::from_slice(l.as_bytes()).unwrap();
                if dedupe.insert_event(&e) {
                    positions.observe(&e);
                }
                black_box(e);
            }
        }
        "ingest" => {
            // A relay's ingest fast path: read in place, check the envelope, keep nothing.
            for l in &lines {
                let text = std::str::from_utf8(l.as_bytes()).unwrap();
                let view = aep_core::EnvelopeView::read(text).unwrap();
                assert!(black_box(aep_core::validate::validate_envelope_view(&view)).is_empty());
            }
        }
        "ingest-parsed" => {
            // The same with an owned `Event`: parse, check, drop.
            for l in &lines {
                let e = aep_core::Event::from_slice(l.as_bytes()).unwrap();
                assert!(black_box(aep_core::validate::validate_envelope(&e)).is_empty());
            }
        }
        "validate" => {
            // What a relay checks per ingested event after parsing it (AEP-0003 §3.2.3).
            let events: Vec<_> = lines
                .iter()
                .map(|l| aep_core::Event::from_slice(l.as_bytes()).unwrap())
                .collect();
            for e in &events {
                assert!(black_box(aep_core::validate::validate_envelope(e)).is_empty());
            }
        }
        "parsed" => {
            // the `validate` mode's set-up alone, to subtract
            let events: Vec<_> = lines
                .iter()
                .map(|l| aep_core::Event::from_slice(l.as_bytes()).unwrap())
                .collect();
            black_box(&events);
        }
        "match-parsed" | "match-json" => {
            // What a relay's replay decides per stored event under an attribute filter:
            // parse then match, or decide on the bytes (`Filter::decide_json`).
            let f =
                aep_core::filter::Filter::from_json(r#"{"agent":"a","type":"tool.*"}"#).unwrap();
            let parsed = mode == "match-parsed";
            for l in &lines {
                let hit = if parsed {
                    f.matches(&aep_core::Event::from_slice(l.as_bytes()).unwrap())
                } else {
                    f.decide_json(l.as_bytes()) == Some(true)
                };
                assert!(black_box(hit));
            }
        }
        "emit" => {
            let emitter = aep_async::Emitter::new("a", "bench", SerializingSink::default());
            let session = emitter.session("s0");
            let data = serde_json::json!({"tool": "bash", "args": {"cmd": "ls -la"}});
            for _ in 0..n {
                black_box(session.emit("tool.called", &data).unwrap());
            }
        }
        other => {
            eprintln!("unknown mode {other}: one of {}", MODES.join(", "));
            std::process::exit(2);
        }
    }
    println!("{mode}: {n} events");
}
