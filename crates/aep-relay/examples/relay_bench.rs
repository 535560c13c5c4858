//! End-to-end relay benchmark: the Rust relay against the reference relay, same machine,
//! same run.
//!
//! For each relay and scenario a fresh relay process is started (buffer 20 000 so the
//! whole flood is held), then:
//!
//! - `live-notice` / `live-info`: one SSE and one WebSocket subscriber attach, N events
//!   are posted in NDJSON batches, and the clock stops when both subscribers have every
//!   event (or stalled for 3 s). Reported: events/s end to end, what each subscriber got.
//! - `replay-notice` / `replay-info`: N events are posted with nobody listening, then one
//!   `live=0` SSE replay reads the session back. Reported: events delivered, time, and
//!   whether the relay process survived.
//!
//! Peak RSS is the relay process's `VmHWM`; buffered memory is the RSS growth while the
//! replay flood was posted, per event, against the events' serialized size.
//!
//! ```text
//! cargo build --release -p aep-relay --bin aep-relay --example relay_bench
//! target/release/examples/relay_bench [--events 20000] [--batch 10000] [--runs 3]
//!     [--relay-bin target/release/aep-relay] [--reference ../shared/tools/reference-relay.sh]
//!     [--only live-notice,replay-info] [--stall 3] [--wrap "valgrind --tool=callgrind"]
//! ```
//!
//! `--wrap` runs the Rust relay under a command (a profiler); the relay is stopped with
//! SIGTERM, so it exits cleanly and the profiler writes its output. Callgrind Ir/event is
//! the difference of two runs with different `--events`, divided by the difference.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use aep_test_support::process::{peak_rss_kib, rss_kib, RelayProcess};
use aep_test_support::reference::{ReferenceOptions, ReferenceRelay};
use common::{filter_query, median, mib, start_relay, ws_subscribe, BUFFER, TOKEN};
use futures::StreamExt;
use tokio_tungstenite::tungstenite::Message;

const HELP: &str = "\
relay_bench: the Rust relay against the reference relay, end to end, in one run

usage: relay_bench [--events N] [--batch N] [--runs N] [--relay-bin PATH]
                   [--reference SCRIPT | --no-reference] [--only SCENARIOS] [--stall S]
                   [--wrap COMMAND]

  --events N        events per run (default 20000)
  --batch N         events per NDJSON POST (default 10000)
  --runs N          runs per scenario; the median is reported (default 3)
  --relay-bin PATH  the Rust relay (default: aep-relay beside this program)
  --reference S     the reference relay's start script
                    (default ../shared/tools/reference-relay.sh; needs node)
  --no-reference    the Rust relay only
  --only LIST       some of live-notice,live-info,replay-notice,replay-info
  --stall S         seconds without progress before a reader counts as stalled (3)
  --wrap COMMAND    run the Rust relay under COMMAND (a profiler), stopped by SIGTERM

Build it with: cargo build --release -p aep-relay --bin aep-relay --example relay_bench
";

#[derive(Debug, Clone)]
struct Options {
    events: usize,
    batch: usize,
    runs: usize,
    relay_bin: String,
    reference: Option<String>,
    only: Option<Vec<String>>,
    stall: Duration,
    wrap: Vec<String>,
}

impl Options {
    fn wants(&self, scenario: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|s| s == scenario))
    }
}

fn options() -> Options {
    let mut o = Options {
        events: 20_000,
        batch: 10_000,
        runs: 3,
        relay_bin: common::relay_bin(),
        reference: Some("../shared/tools/reference-relay.sh".into()),
        only: None,
        stall: Duration::from_secs(3),
        wrap: Vec::new(),
    };
    for (flag, value) in common::flags(HELP, &["--no-reference"]) {
        match flag.as_str() {
            "--events" => o.events = value.parse().unwrap_or(o.events),
            "--batch" => o.batch = value.parse().unwrap_or(o.batch),
            "--runs" => o.runs = value.parse().unwrap_or(o.runs),
            "--relay-bin" => o.relay_bin = value,
            "--reference" => o.reference = Some(value),
            "--only" => o.only = Some(value.split(',').map(str::to_owned).collect()),
            "--stall" => o.stall = Duration::from_secs_f64(value.parse().unwrap_or(3.0)),
            "--wrap" => o.wrap = value.split_whitespace().map(str::to_owned).collect(),
            "--no-reference" => o.reference = None,
            other => common::unknown(other, HELP),
        }
    }
    o
}

/// Starts a fresh relay process.
type Starter = Box<dyn Fn() -> Relay>;

/// A relay process under test.
struct Relay {
    process: Process,
    url: String,
}

enum Process {
    /// Started with `--port 0`; it names its address.
    Rust(RelayProcess),
    /// Started on port 0; a preloaded hook names the port it took.
    Reference(ReferenceRelay),
}

impl Relay {
    fn rust(bin: &str, wrap: &[String]) -> Relay {
        let command = match wrap.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let process = start_relay(command, &[]).unwrap_or_else(|why| {
            panic!("the Rust relay {bin} (build it: cargo build --release -p aep-relay): {why}")
        });
        Relay {
            url: process.url().to_owned(),
            process: Process::Rust(process),
        }
    }

    fn reference(script: &str) -> Relay {
        let options = ReferenceOptions {
            token: Some(TOKEN.to_owned()),
            buffer: Some(BUFFER.parse().expect("BUFFER is a number")),
            script: Some(script.into()),
            ..Default::default()
        };
        let relay = ReferenceRelay::start(options)
            .unwrap_or_else(|why| panic!("the reference relay {script}: {why}"));
        Relay {
            url: relay.url(),
            process: Process::Reference(relay),
        }
    }

    fn pid(&self) -> u32 {
        match &self.process {
            Process::Rust(p) => p.pid(),
            Process::Reference(relay) => relay.pid().unwrap_or(0),
        }
    }

    /// Peak resident set, KiB.
    fn peak_rss_kib(&self) -> Option<u64> {
        peak_rss_kib(self.pid())
    }

    fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.pid())
    }

    fn alive(&mut self) -> bool {
        match &mut self.process {
            Process::Rust(p) => p.is_running(),
            Process::Reference(relay) => relay.is_running(),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // SIGTERM first: the relay exits cleanly (and a wrapping profiler writes its file)
        let grace = Duration::from_secs(20);
        match &mut self.process {
            Process::Rust(p) => p.terminate(grace),
            Process::Reference(relay) => relay.terminate(grace),
        }
    }
}

fn event(session: &str, seq: usize, severity: &str) -> String {
    // about 600 bytes a line
    common::event("bench", session, seq, severity, 180)
}

async fn post_all(
    client: &reqwest::Client,
    url: &str,
    lines: &[String],
    batch: usize,
) -> Result<(), String> {
    for chunk in lines.chunks(batch) {
        let mut body = chunk.join("\n");
        body.push('\n');
        common::post_ndjson(client, &format!("{url}/events"), body).await?;
    }
    Ok(())
}

/// Counts SSE `data:` lines until `want` arrived, the stream ended, or it stalled.
async fn count_sse(
    mut response: reqwest::Response,
    want: usize,
    stall: Duration,
) -> (usize, Instant, bool) {
    let mut n = 0;
    let mut carry = Vec::new();
    let mut last = Instant::now();
    loop {
        match tokio::time::timeout(stall, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                carry.extend_from_slice(&chunk);
                let mut start = 0;
                while let Some(at) = carry[start..].iter().position(|&b| b == b'\n') {
                    if carry[start..start + at].starts_with(b"data:") {
                        n += 1;
                        last = Instant::now();
                    }
                    start += at + 1;
                }
                carry.drain(..start);
                if n >= want {
                    return (n, last, false);
                }
            }
            Ok(Ok(None)) | Ok(Err(_)) => return (n, last, true),
            Err(_) => return (n, last, false),
        }
    }
}

async fn open_sse(client: &reqwest::Client, url: &str, query: &str) -> reqwest::Response {
    client
        .get(format!("{url}/stream?{query}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("SSE")
}

#[derive(Debug, Default, Clone)]
struct Outcome {
    rate: f64,
    sse: usize,
    ws: usize,
    sse_cut: bool,
    ws_cut: bool,
    error: Option<String>,
}

async fn live_run(url: &str, o: &Options, severity: &str) -> Outcome {
    let client = reqwest::Client::new();
    let session = format!("bench-{}", ulid::Ulid::new().to_string().to_lowercase());
    let filter = format!(r#"{{"session":"{session}"}}"#);
    let sse = open_sse(&client, url, &format!("filter={}", filter_query(&filter))).await;
    let mut ws = ws_subscribe(url, &filter).await.expect("ws");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let lines: Vec<String> = (0..o.events)
        .map(|i| event(&session, i, severity))
        .collect();
    let want = o.events;
    let stall = o.stall;
    let sse_task = tokio::spawn(count_sse(sse, want, stall));
    let ws_task = tokio::spawn(async move {
        let mut n = 0;
        let mut last = Instant::now();
        loop {
            match tokio::time::timeout(stall, ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => {
                    if t.as_str().starts_with(r#"{"aep""#) {
                        n += 1;
                        last = Instant::now();
                        if n >= want {
                            return (n, last, false);
                        }
                    }
                }
                Ok(Some(Ok(Message::Close(_)))) | Ok(None) | Ok(Some(Err(_))) => {
                    return (n, last, true)
                }
                Ok(Some(Ok(_))) => {}
                Err(_) => return (n, last, false),
            }
        }
    });
    let start = Instant::now();
    let posted = post_all(&client, url, &lines, o.batch).await;
    let (sse_n, sse_last, sse_cut) = sse_task.await.unwrap_or((0, start, true));
    let (ws_n, ws_last, ws_cut) = ws_task.await.unwrap_or((0, start, true));
    // delivered events per second: a relay that drops or cuts a reader off is not
    // credited with what it never delivered
    let end = sse_last.max(ws_last);
    let delivered = sse_n.min(ws_n);
    Outcome {
        rate: delivered as f64 / end.duration_since(start).as_secs_f64(),
        sse: sse_n,
        ws: ws_n,
        sse_cut,
        ws_cut,
        error: posted.err(),
    }
}

#[derive(Debug, Default)]
struct ReplayOutcome {
    held_per_event: Option<f64>,
    delivered: usize,
    secs: f64,
    bytes_per_event: f64,
    rss_per_event: Option<f64>,
    alive: bool,
    error: Option<String>,
}

async fn replay_run(relay: &mut Relay, o: &Options, severity: &str) -> ReplayOutcome {
    let client = reqwest::Client::new();
    let session = format!("replay-{}", ulid::Ulid::new().to_string().to_lowercase());
    let lines: Vec<String> = (0..o.events)
        .map(|i| event(&session, i, severity))
        .collect();
    let bytes: usize = lines.iter().map(|l| l.len()).sum();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = relay.rss_kib();
    let mut out = ReplayOutcome {
        bytes_per_event: bytes as f64 / o.events as f64,
        ..ReplayOutcome::default()
    };
    if let Err(e) = post_all(&client, &relay.url, &lines, o.batch).await {
        out.error = Some(e);
        return out;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    out.rss_per_event = match (before, relay.rss_kib()) {
        (Some(b), Some(a)) => Some((a.saturating_sub(b) * 1024) as f64 / o.events as f64),
        _ => None,
    };
    // the Rust relay accounts the bytes its buffers hold (`/connections`)
    if let Ok(r) = client
        .get(format!("{}/connections", relay.url))
        .bearer_auth(TOKEN)
        .send()
        .await
    {
        let doc: serde_json::Value =
            serde_json::from_str(&r.text().await.unwrap_or_default()).unwrap_or_default();
        out.held_per_event = doc["relay"]["buffered_bytes"]
            .as_u64()
            .map(|b| b as f64 / o.events as f64);
    }
    let filter = filter_query(&format!(r#"{{"session":"{session}"}}"#));
    let start = Instant::now();
    let response = open_sse(&client, &relay.url, &format!("live=0&filter={filter}")).await;
    let (n, _, _) = count_sse(response, usize::MAX, o.stall).await;
    out.secs = start.elapsed().as_secs_f64();
    out.delivered = n;
    tokio::time::sleep(Duration::from_millis(500)).await;
    out.alive = relay.alive();
    out
}

#[tokio::main]
async fn main() {
    let o = options();
    println!(
        "relay_bench: {} events per run, NDJSON batches of {}, {} runs (median)",
        o.events, o.batch, o.runs
    );
    let mut targets: Vec<(&str, Starter)> = Vec::new();
    let bin = o.relay_bin.clone();
    let wrap = o.wrap.clone();
    targets.push(("rust", Box::new(move || Relay::rust(&bin, &wrap))));
    if let Some(script) = o.reference.clone() {
        targets.push(("reference", Box::new(move || Relay::reference(&script))));
    }
    let mut rates: Vec<(String, String, f64)> = Vec::new();
    for (name, start) in &targets {
        for severity in ["notice", "info"] {
            if !o.wants(&format!("live-{severity}")) {
                continue;
            }
            let relay = start();
            let mut runs = Vec::new();
            for _ in 0..o.runs {
                runs.push(live_run(&relay.url, &o, severity).await);
            }
            let rate = median(runs.iter().map(|r| r.rate).collect());
            rates.push((name.to_string(), format!("live-{severity}"), rate));
            println!(
                "{name:9} live-{severity:6}: {:>9.0} events/s end to end (median); delivered SSE {:?} WS {:?} of {}; cut off SSE {} WS {}; peak RSS {}{}",
                rate,
                runs.iter().map(|r| r.sse).collect::<Vec<_>>(),
                runs.iter().map(|r| r.ws).collect::<Vec<_>>(),
                o.events,
                runs.iter().filter(|r| r.sse_cut).count(),
                runs.iter().filter(|r| r.ws_cut).count(),
                mib(relay.peak_rss_kib()),
                runs.iter()
                    .find_map(|r| r.error.clone())
                    .map(|e| format!("; error: {e}"))
                    .unwrap_or_default(),
            );
        }
        for severity in ["notice", "info"] {
            if !o.wants(&format!("replay-{severity}")) {
                continue;
            }
            let mut relay = start();
            let r = replay_run(&mut relay, &o, severity).await;
            let peak = relay.peak_rss_kib();
            println!(
                "{name:9} replay-{severity:6}: delivered {} of {} in {:.3} s ({:.0} events/s); relay {}; peak RSS {}; buffered RSS {} per event for {:.0}-byte events{}{}",
                r.delivered,
                o.events,
                r.secs,
                r.delivered as f64 / r.secs.max(1e-9),
                if r.alive { "alive" } else { "DIED" },
                mib(peak),
                r.rss_per_event
                    .map(|b| format!("{b:.0} B ({:.2}x)", b / r.bytes_per_event))
                    .unwrap_or_else(|| "n/a".into()),
                r.bytes_per_event,
                r.held_per_event
                    .map(|h| format!("; accounted {h:.0} B ({:.2}x)", h / r.bytes_per_event))
                    .unwrap_or_default(),
                r.error.map(|e| format!("; error: {e}")).unwrap_or_default(),
            );
        }
    }
    for scenario in ["live-notice", "live-info"] {
        let get = |n: &str| {
            rates
                .iter()
                .find(|(t, s, _)| t == n && s == scenario)
                .map(|r| r.2)
        };
        if let (Some(r), Some(f)) = (get("rust"), get("reference")) {
            println!("ratio {scenario}: rust/reference = {:.1}x", r / f);
        }
    }
}
