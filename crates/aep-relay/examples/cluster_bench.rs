//! The relay cluster's benchmark, in one invocation, against a `nats-server` it starts.
//!
//! Today it measures the ceiling: the server's own rate for the relay's events, an
//! async-nats client publishing 603-byte messages (relay_bench's event, padded to 603
//! bytes) each with its own `Nats-Msg-Id` to a file-backed stream, with a bounded number
//! of acks in flight (4,096 by default), every ack awaited. That is what JetStream can
//! take on this machine before any relay work, the figure a cluster's end-to-end rate is
//! held against.
//!
//! ```text
//! cargo build --release -p aep-relay --features nats --example cluster_bench
//! target/release/examples/cluster_bench [--events 100000] [--in-flight 4096] [--runs 3]
//!     [--sessions 1] [--nats nats://HOST:PORT]
//! ```
//!
//! Without `--nats` it starts `nats-server -js` (on `PATH`, or `AEP_NATS_SERVER`) on a
//! port of its own with a fresh store directory, and removes both at the end; each run
//! publishes to a stream of its own.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, message::PublishMessage, stream};
use bytes::Bytes;

const HELP: &str = "\
cluster_bench: the relay cluster's figures; today the JetStream ceiling

usage: cluster_bench [--events N] [--in-flight N] [--runs N] [--sessions N] [--nats URL]

  --events N     messages per run (default 100000)
  --in-flight N  publish acks awaited at once at most (default 4096)
  --runs N       runs; the median is reported (default 3)
  --sessions N   sessions (one subject each) the messages spread over (default 1)
  --nats URL     an existing server instead of starting one (its streams named
                 AEPBENCH* are replaced)

Build it with: cargo build --release -p aep-relay --features nats --example cluster_bench
";

/// The size of relay_bench's event, which the cluster bench posts too.
const MESSAGE_BYTES: usize = 603;

#[derive(Debug, Clone)]
struct Options {
    events: usize,
    in_flight: usize,
    runs: usize,
    sessions: usize,
    nats: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        events: 100_000,
        in_flight: 4096,
        runs: 3,
        sessions: 1,
        nats: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{HELP}");
        std::process::exit(0);
    }
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        let number = |default: usize| value.parse().unwrap_or(default).max(1);
        match args[i].as_str() {
            "--events" => o.events = number(o.events),
            "--in-flight" => o.in_flight = number(o.in_flight),
            "--runs" => o.runs = number(o.runs),
            "--sessions" => o.sessions = number(o.sessions),
            "--nats" => o.nats = Some(value),
            other => {
                eprintln!("unknown argument {other}\n\n{HELP}");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    o
}

/// relay_bench's event for `session` and `seq`, its detail padded so that the line is
/// exactly [`MESSAGE_BYTES`] long.
fn event(session: &str, seq: usize) -> Bytes {
    let id = ulid::Ulid::new();
    let line = |pad: usize| {
        format!(
            r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://bench/agent/bench/session/{session}","agent":"bench","session":"{session}","seq":{seq},"epoch":0,"severity":"notice","capture":"metadata","data":{{"phase":"benchmark","detail":"{}","step":{seq},"of":20000,"tags":["relay","bench","throughput","end-to-end"]}}}}"#,
            "x".repeat(pad)
        )
    };
    let bare = line(0).len();
    Bytes::from(line(MESSAGE_BYTES.saturating_sub(bare)))
}

#[derive(Debug)]
struct Ceiling {
    rate: f64,
    stored: usize,
    duplicates: usize,
    p50: Duration,
    p99: Duration,
}

/// One run: a fresh file-backed stream, every message published with its own
/// `Nats-Msg-Id`, at most `in_flight` acks outstanding, all of them awaited.
async fn ceiling_run(
    client: &async_nats::Client,
    o: &Options,
    run: usize,
) -> Result<Ceiling, String> {
    let js = jetstream::ContextBuilder::new()
        .max_ack_inflight(o.in_flight)
        .backpressure_on_inflight(true)
        .build(client.clone());
    let name = format!("AEPBENCH{run}");
    let _ = js.delete_stream(&name).await;
    js.create_stream(stream::Config {
        name: name.clone(),
        subjects: vec![format!("{name}.>")],
        storage: stream::StorageType::File,
        duplicate_window: Duration::from_secs(120),
        ..Default::default()
    })
    .await
    .map_err(|e| format!("creating stream {name}: {e}"))?;
    let sessions: Vec<String> = (0..o.sessions)
        .map(|s| format!("bench-{}-{s}", ulid::Ulid::new().to_string().to_lowercase()))
        .collect();
    // built before the clock starts: the ceiling is the server's, not the formatter's
    let messages: Vec<(String, Bytes)> = (0..o.events)
        .map(|i| {
            let session = &sessions[i % sessions.len()];
            (format!("{name}.{session}"), event(session, i))
        })
        .collect();
    let mut pending = VecDeque::with_capacity(o.in_flight);
    let mut latencies = Vec::with_capacity(o.events);
    let (mut stored, mut duplicates) = (0usize, 0usize);
    let started = Instant::now();
    for (i, (subject, payload)) in messages.into_iter().enumerate() {
        if pending.len() >= o.in_flight {
            let (sent, ack) = pending.pop_front().expect("in flight");
            settle(ack, sent, &mut latencies, &mut stored, &mut duplicates).await?;
        }
        let sent = Instant::now();
        let ack = js
            .send_publish(
                subject,
                PublishMessage::build()
                    .payload(payload)
                    .message_id(format!("bench-{run}-{i}")),
            )
            .await
            .map_err(|e| format!("publish {i}: {e}"))?;
        pending.push_back((sent, ack));
    }
    while let Some((sent, ack)) = pending.pop_front() {
        settle(ack, sent, &mut latencies, &mut stored, &mut duplicates).await?;
    }
    let secs = started.elapsed().as_secs_f64();
    let _ = js.delete_stream(&name).await;
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Ok(Ceiling {
        rate: o.events as f64 / secs,
        stored,
        duplicates,
        p50: at(0.50),
        p99: at(0.99),
    })
}

async fn settle(
    ack: jetstream::context::PublishAckFuture,
    sent: Instant,
    latencies: &mut Vec<Duration>,
    stored: &mut usize,
    duplicates: &mut usize,
) -> Result<(), String> {
    let ack = ack.await.map_err(|e| format!("ack: {e}"))?;
    latencies.push(sent.elapsed());
    if ack.duplicate {
        *duplicates += 1;
    } else {
        *stored += 1;
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

#[tokio::main]
async fn main() {
    let o = options();
    let server = match &o.nats {
        Some(_) => None,
        None => match aep_test_support::nats::NatsServer::start() {
            Ok(server) => Some(server),
            Err(why) => {
                eprintln!("cluster_bench: no nats-server to measure against: {why}");
                std::process::exit(1);
            }
        },
    };
    let url = o
        .nats
        .clone()
        .or_else(|| server.as_ref().map(|s| s.url()))
        .unwrap_or_default();
    let version = server
        .as_ref()
        .map(|s| format!("nats-server {}", s.version()))
        .unwrap_or_else(|| "a server of its own".into());
    let client = match async_nats::connect(&url).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("cluster_bench: connecting to {url}: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "cluster_bench: ceiling, {} messages of {MESSAGE_BYTES} bytes with Nats-Msg-Id over {} session(s), {} acks in flight, file storage, {version}, {} runs (median)",
        o.events, o.sessions, o.in_flight, o.runs
    );
    let mut runs = Vec::new();
    for run in 0..o.runs {
        match ceiling_run(&client, &o, run).await {
            Ok(c) => {
                println!(
                    "  run {}: {:>8.0} messages/s; stored {} duplicates {}; ack latency p50 {:.1} ms p99 {:.1} ms",
                    run + 1,
                    c.rate,
                    c.stored,
                    c.duplicates,
                    c.p50.as_secs_f64() * 1e3,
                    c.p99.as_secs_f64() * 1e3
                );
                runs.push(c);
            }
            Err(e) => {
                eprintln!("cluster_bench: run {}: {e}", run + 1);
                std::process::exit(1);
            }
        }
    }
    let lost: usize = runs.iter().map(|c| o.events - c.stored).sum();
    println!(
        "ceiling: {:.0} messages/s (median of {}); not stored: {lost}",
        median(runs.iter().map(|c| c.rate).collect()),
        runs.len()
    );
}
