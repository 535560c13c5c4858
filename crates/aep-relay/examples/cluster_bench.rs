//! The relay cluster's benchmark, in one invocation, against a `nats-server` it starts.
//!
//! Three figures side by side, in the same run, for the same 603-byte events
//! (relay_bench's event, padded):
//!
//! - **ceiling**: the server's own rate, an async-nats client publishing each event with
//!   its own `Nats-Msg-Id` to a file-backed stream, at most `--in-flight` acks
//!   outstanding (4,096 by default), every ack awaited: what JetStream takes on this
//!   machine before any relay work;
//! - **cluster**: three relays on that server (`--nats URL --nats-stream AEPCLUSTER`);
//!   `--posters` concurrent emitters POST NDJSON batches of `--batch` events to relay A,
//!   a live SSE reader on relay B and a live WebSocket reader on relay C read them;
//! - **memory**: one relay with its in-memory store, the same posters and readers on it.
//!
//! For the cluster and the single relay: events/s end to end (every event at both
//! readers, over the time from the first POST to the last arrival), delivery latency
//! p50/p99 (from the start of the POST carrying an event to its arrival at a reader, both
//! readers pooled), events lost (posted with a `202` and missing at a reader) and
//! delivered twice, and each process's peak RSS (`VmHWM`; the server's is reset before
//! the cluster runs, so it is the cluster's, not the ceiling's).
//!
//! A figure is only a result if every event got through once: an event lost or delivered
//! twice, a refused POST, or a ceiling run whose server did not store each message once,
//! fails the bench (it says so and exits non-zero).
//!
//! ```text
//! cargo run --release -p aep-relay --example cluster_bench -- \
//!     [--events 100000] [--batch 250] [--posters 4] [--in-flight 4096] [--runs 3] \
//!     [--compare PATH]
//! ```
//!
//! `--compare PATH` adds a second cluster of the same shape whose relays are the
//! `aep-relay` binary at PATH (another build, say the one before a change, built with
//! feature `nats`), on a stream of its own; the two clusters' runs alternate, so both
//! figures come from the same minutes of a shared machine.
//!
//! The relays are this program started again as a relay (`cluster_bench --as-relay
//! FLAGS`: the `aep-relay` binary's flags and start-up), so one `cargo run` builds
//! everything it measures. It starts `nats-server -js` (on `PATH`, or `AEP_NATS_SERVER`)
//! on a port of its own with a fresh store directory, and removes both at the end.

mod common;

use std::collections::VecDeque;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep_test_support::nats::NatsServer;
use aep_test_support::process::{cpu_secs, peak_rss_kib, RelayProcess};
use async_nats::jetstream::{self, message::PublishMessage, stream};
use bytes::Bytes;
use common::{filter_query, median, mib, start_relay, TOKEN};
use futures::StreamExt;
use tokio_tungstenite::tungstenite::Message;

const HELP: &str = "\
cluster_bench: a 3-relay cluster on NATS JetStream against one in-memory relay and
against JetStream's own rate, in one run

usage: cluster_bench [--events N] [--batch N] [--posters N] [--in-flight N] [--runs N]
                     [--only LIST] [--stall S]

  --events N     events per run (default 100000)
  --batch N      events per NDJSON POST (default 250)
  --posters N    concurrent POSTs to relay A, one session each (default 4)
  --relays N     the cluster's relays, 1 to 3 (default 3; with fewer, the readers
                 share relay A or B: what the cluster costs per relay)
  --in-flight N  the ceiling's publish acks awaited at once at most (default 4096)
  --runs N       runs of each; the median is reported with the spread (default 3)
  --only LIST    some of ceiling,cluster,memory (default all three)
  --stall S      seconds without progress before a reader counts as stalled (5)
  --compare PATH a second cluster of aep-relay binaries at PATH (another build,
                 with feature nats), its runs alternated with this build's

Run it with: cargo run --release -p aep-relay --example cluster_bench
";

/// The stream the cluster's relays share.
const CLUSTER_STREAM: &str = "AEPCLUSTER";

#[derive(Debug, Clone)]
struct Options {
    events: usize,
    batch: usize,
    posters: usize,
    relays: usize,
    in_flight: usize,
    runs: usize,
    sessions: usize,
    only: Vec<String>,
    stall: Duration,
    compare: Option<std::path::PathBuf>,
}

impl Options {
    fn wants(&self, what: &str) -> bool {
        self.only.iter().any(|o| o == what)
    }
}

fn options() -> Options {
    let mut o = Options {
        events: 100_000,
        batch: 250,
        posters: 4,
        relays: 3,
        in_flight: 4096,
        runs: 3,
        sessions: 1,
        only: vec!["ceiling".into(), "cluster".into(), "memory".into()],
        stall: Duration::from_secs(5),
        compare: None,
    };
    for (flag, value) in common::flags(HELP, &[]) {
        let number = |default: usize| value.parse().unwrap_or(default).max(1);
        match flag.as_str() {
            "--events" => o.events = number(o.events),
            "--batch" => o.batch = number(o.batch),
            "--posters" => o.posters = number(o.posters),
            "--relays" => o.relays = number(o.relays).min(3),
            "--in-flight" => o.in_flight = number(o.in_flight),
            "--runs" => o.runs = number(o.runs),
            "--only" => o.only = value.split(',').map(str::to_owned).collect(),
            "--stall" => o.stall = Duration::from_secs_f64(value.parse().unwrap_or(5.0)),
            "--compare" => o.compare = Some(value.into()),
            other => common::unknown(other, HELP),
        }
    }
    o
}

/// The size of relay_bench's event, which the cluster bench posts too.
const MESSAGE_BYTES: usize = 603;

/// relay_bench's event for `session` and `seq`, its detail padded so that the line is
/// exactly [`MESSAGE_BYTES`] long.
fn event(session: &str, seq: usize) -> Bytes {
    agent_event("bench", session, seq)
}

/// [`event`] of agent `agent` (whose name the readers filter on).
fn agent_event(agent: &str, session: &str, seq: usize) -> Bytes {
    let line = |pad: usize| common::event(agent, session, seq, "notice", pad);
    let bare = line(0).len();
    Bytes::from(line(MESSAGE_BYTES.saturating_sub(bare)))
}

#[derive(Debug)]
struct Ceiling {
    rate: f64,
    /// The stored messages read back by one ordered consumer (what each relay's live
    /// feed does), messages/s.
    read: f64,
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
    let read = read_back(&js, &name, o.events).await?;
    let _ = js.delete_stream(&name).await;
    latencies.sort();
    Ok(Ceiling {
        rate: o.events as f64 / secs,
        read,
        stored,
        duplicates,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
    })
}

/// Reads the `n` messages of stream `name` with an ordered consumer from its start, as a
/// relay's live feed reads the stream; messages/s.
async fn read_back(js: &jetstream::Context, name: &str, n: usize) -> Result<f64, String> {
    let stream = js
        .get_stream(name)
        .await
        .map_err(|e| format!("stream {name}: {e}"))?;
    let consumer = stream
        .create_consumer(jetstream::consumer::pull::OrderedConfig {
            deliver_policy: jetstream::consumer::DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(|e| format!("ordered consumer: {e}"))?;
    let started = Instant::now();
    let mut messages = consumer
        .messages()
        .await
        .map_err(|e| format!("reading {name}: {e}"))?;
    let mut read = 0;
    while read < n {
        match tokio::time::timeout(Duration::from_secs(10), messages.next()).await {
            Ok(Some(Ok(_))) => read += 1,
            other => return Err(format!("read back {read} of {n}: {other:?}")),
        }
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
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

/// The `q` quantile of the ascending `sorted` (the nearest rank below), zero if empty.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (sorted.len() as f64 * q) as usize;
    sorted
        .get(rank.min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

/// Where the readers of an end-to-end run attach, and the relay the posters post to.
struct Target<'a> {
    post: &'a str,
    sse: &'a str,
    ws: &'a str,
}

/// One end-to-end run's figures.
#[derive(Debug, Default)]
struct EndToEnd {
    rate: f64,
    /// Events/s acknowledged to the posters (until the last `202`).
    ingest: f64,
    p50: Duration,
    p99: Duration,
    /// Posted and acknowledged, missing at the reader that missed the most.
    lost: usize,
    /// Delivered more than once, both readers summed.
    twice: usize,
    /// The first refused POST (its poster stops there; what it never posted is not
    /// counted lost, so a refusal fails the run by itself).
    error: Option<String>,
}

/// What a reader saw: each event's arrival by its `seq` (the run's index of it).
struct Arrivals {
    at: Vec<Option<Instant>>,
    twice: usize,
}

impl Arrivals {
    fn new(n: usize) -> Arrivals {
        Arrivals {
            at: vec![None; n],
            twice: 0,
        }
    }

    /// Records the event in `line` (its `"seq":N`); whether every event has arrived.
    fn record(&mut self, line: &[u8], now: Instant, count: &mut usize) -> bool {
        if let Some(seq) = seq_of(line) {
            match self.at.get_mut(seq) {
                Some(slot @ None) => {
                    *slot = Some(now);
                    *count += 1;
                }
                Some(Some(_)) => self.twice += 1,
                None => {}
            }
        }
        *count >= self.at.len()
    }
}

/// The `seq` of an event line (the bench's events carry exactly one `"seq":`).
fn seq_of(line: &[u8]) -> Option<usize> {
    let at = memchr::memmem::find(line, b"\"seq\":")? + 6;
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

/// The readers' filter: every event of agent `agent`.
fn agent_filter(agent: &str) -> String {
    format!(r#"{{"agent":"{agent}"}}"#)
}

/// A live SSE reader of agent `agent` on `url`, connected; reads until every one of `n`
/// events arrived or nothing came for `stall`.
async fn sse_reader(
    client: &reqwest::Client,
    url: &str,
    agent: &str,
    n: usize,
    stall: Duration,
) -> Result<tokio::task::JoinHandle<Arrivals>, String> {
    let mut response = client
        .get(format!(
            "{url}/stream?filter={}",
            filter_query(&agent_filter(agent))
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .map_err(|e| format!("SSE to {url}: {e}"))?;
    if response.status() != 200 {
        return Err(format!("SSE to {url}: {}", response.status()));
    }
    Ok(tokio::spawn(async move {
        let mut arrivals = Arrivals::new(n);
        let mut count = 0;
        let mut carry = Vec::new();
        while let Ok(Ok(Some(chunk))) = tokio::time::timeout(stall, response.chunk()).await {
            let now = Instant::now();
            carry.extend_from_slice(&chunk);
            let mut start = 0;
            let mut done = false;
            while let Some(at) = memchr::memchr(b'\n', &carry[start..]) {
                let line = &carry[start..start + at];
                if line.starts_with(b"data:") {
                    done = arrivals.record(line, now, &mut count);
                }
                start += at + 1;
            }
            carry.drain(..start);
            if done {
                break;
            }
        }
        arrivals
    }))
}

/// A live WebSocket reader of agent `agent` on `url`, subscribed; as [`sse_reader`].
async fn ws_reader(
    url: &str,
    agent: &str,
    n: usize,
    stall: Duration,
) -> Result<tokio::task::JoinHandle<Arrivals>, String> {
    let mut ws = common::ws_subscribe(url, &agent_filter(agent)).await?;
    Ok(tokio::spawn(async move {
        let mut arrivals = Arrivals::new(n);
        let mut count = 0;
        while let Ok(Some(Ok(message))) = tokio::time::timeout(stall, ws.next()).await {
            if let Message::Text(text) = message {
                let line = text.as_bytes();
                if line.starts_with(b"{\"aep\"")
                    && arrivals.record(line, Instant::now(), &mut count)
                {
                    break;
                }
            }
        }
        arrivals
    }))
}

/// One end-to-end run against `target`: readers attach, then `--posters` tasks POST
/// their share of `--events` in batches of `--batch`, each event's batch start noted.
async fn end_to_end_run(target: &Target<'_>, o: &Options) -> Result<EndToEnd, String> {
    let client = reqwest::Client::new();
    let agent = format!("bench-{}", ulid::Ulid::new().to_string().to_lowercase());
    let n = o.events;
    let sse = sse_reader(&client, target.sse, &agent, n, o.stall).await?;
    let ws = ws_reader(target.ws, &agent, n, o.stall).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // poster p posts the events whose seq is p modulo the posters, in one session
    let sessions: Vec<String> = (0..o.posters).map(|p| format!("{agent}-{p}")).collect();
    let shares: Vec<Vec<(usize, Bytes)>> = (0..o.posters)
        .map(|p| {
            (p..n)
                .step_by(o.posters)
                .map(|seq| (seq, agent_event(&agent, &sessions[p], seq)))
                .collect()
        })
        .collect();
    let url = Arc::new(format!("{}/events", target.post));
    let started = Instant::now();
    let mut posting = Vec::new();
    for share in shares {
        let (client, url, batch) = (client.clone(), Arc::clone(&url), o.batch);
        posting.push(tokio::spawn(async move {
            let mut sent_at = Vec::with_capacity(share.len());
            for chunk in share.chunks(batch) {
                let mut body = Vec::with_capacity(chunk.len() * (MESSAGE_BYTES + 1));
                for (_, line) in chunk {
                    body.extend_from_slice(line);
                    body.push(b'\n');
                }
                let at = Instant::now();
                common::post_ndjson(&client, &url, body).await?;
                sent_at.extend(chunk.iter().map(|(seq, _)| (*seq, at)));
            }
            Ok::<_, String>(sent_at)
        }));
    }
    let mut sent = vec![None; n];
    let mut error = None;
    for task in posting {
        match task.await.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok(at) => at.into_iter().for_each(|(seq, at)| sent[seq] = Some(at)),
            Err(e) => error = Some(e),
        }
    }
    let posted = started.elapsed().as_secs_f64();
    let readers = [
        sse.await.map_err(|e| e.to_string())?,
        ws.await.map_err(|e| e.to_string())?,
    ];
    let mut latencies = Vec::with_capacity(2 * n);
    let mut last = started;
    let mut lost = 0;
    let mut twice = 0;
    for reader in &readers {
        twice += reader.twice;
        let mut missing = 0;
        for (sent, got) in sent.iter().zip(&reader.at) {
            match (sent, got) {
                (Some(sent), Some(got)) => {
                    latencies.push(got.saturating_duration_since(*sent));
                    last = last.max(*got);
                }
                (Some(_), None) => missing += 1,
                (None, _) => {}
            }
        }
        lost = lost.max(missing);
    }
    latencies.sort();
    let delivered = n - lost;
    Ok(EndToEnd {
        rate: delivered as f64 / last.duration_since(started).as_secs_f64().max(1e-9),
        ingest: n as f64 / posted.max(1e-9),
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        lost,
        twice,
        error,
    })
}

/// This program, started again as a relay with `flags` (see [`as_relay`]).
fn relay(flags: &[&str]) -> Result<RelayProcess, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let mut command = Command::new(exe);
    command.arg("--as-relay").env("RUST_LOG", "warn");
    start_relay(command, flags)
}

/// `cluster_bench --as-relay FLAGS`: the `aep-relay` binary's flags and start-up, so that
/// the relays measured are separate processes built by the same `cargo run`.
fn as_relay(flags: Vec<String>) -> std::process::ExitCode {
    use clap::Parser;
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        relay: aep_relay::cli::RelayArgs,
    }
    let cli = Cli::parse_from(std::iter::once("aep-relay".to_owned()).chain(flags));
    let config = match cli.relay.config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("aep-relay: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    aep_relay::cli::init_logging();
    let served = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|runtime| {
            runtime
                .block_on(aep_relay::cli::serve(
                    config,
                    "aep-relay",
                    aep_relay::cli::shutdown_signal(),
                ))
                .map_err(|e| e.to_string())
        });
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aep-relay: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The median of `v` and its spread (lowest, highest).
fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:>7.0} (runs {lo:.0}..{hi:.0})", median(v.to_vec()))
}

/// Runs `o.runs` end-to-end runs against `target`, prints each and the summary line;
/// returns the median rate, or `None` if a run failed, lost an event, delivered one
/// twice or had a POST refused (the bench then exits non-zero: a rate is only a
/// result if every event got through once).
async fn end_to_end(name: &str, target: &Target<'_>, o: &Options) -> Option<f64> {
    let mut runs = Vec::new();
    for run in 0..o.runs {
        runs.push(one_run(name, run, target, o).await?);
    }
    summarize(name, &runs)
}

/// One end-to-end run against `target`, printed; `None` if it failed.
async fn one_run(name: &str, run: usize, target: &Target<'_>, o: &Options) -> Option<EndToEnd> {
    match end_to_end_run(target, o).await {
        Ok(r) => {
            println!(
                "  {name} run {}: {:>8.0} events/s end to end ({:.0}/s acknowledged); latency p50 {:.1} ms p99 {:.1} ms; lost {} twice {}{}",
                run + 1,
                r.rate,
                r.ingest,
                r.p50.as_secs_f64() * 1e3,
                r.p99.as_secs_f64() * 1e3,
                r.lost,
                r.twice,
                r.error.as_ref().map(|e| format!("; error: {e}")).unwrap_or_default()
            );
            Some(r)
        }
        Err(e) => {
            println!("  {name} run {}: failed: {e}", run + 1);
            None
        }
    }
}

/// The summary line of `runs`; the median rate, or `None` (see [`end_to_end`]).
fn summarize(name: &str, runs: &[EndToEnd]) -> Option<f64> {
    let ms = |d: Vec<f64>| median(d);
    let rate: Vec<f64> = runs.iter().map(|r| r.rate).collect();
    let lost: usize = runs.iter().map(|r| r.lost).sum();
    let twice: usize = runs.iter().map(|r| r.twice).sum();
    println!(
        "{name:7}: {} events/s; p50 {:.1} ms, p99 {:.1} ms (medians); lost {lost} twice {twice} (all runs)",
        spread(&rate),
        ms(runs.iter().map(|r| r.p50.as_secs_f64() * 1e3).collect()),
        ms(runs.iter().map(|r| r.p99.as_secs_f64() * 1e3).collect()),
    );
    let refused = runs.iter().filter(|r| r.error.is_some()).count();
    if lost + twice + refused > 0 {
        println!(
            "{name}: FAILED: {lost} events lost, {twice} delivered twice, {refused} runs with a refused POST"
        );
        return None;
    }
    Some(median(rate))
}

/// One cluster of `--relays` relay processes on `server`'s stream `stream`.
struct Fleet {
    name: &'static str,
    relays: Vec<RelayProcess>,
    /// The relays', the server's and this program's CPU seconds before the runs.
    pids: Vec<u32>,
    cpu: Vec<f64>,
    runs: Vec<EndToEnd>,
    failed: bool,
}

impl Fleet {
    /// `--relays` relays started by `start` (given the `--nats*` flags) on `stream`.
    fn start(
        name: &'static str,
        server: &NatsServer,
        stream: &str,
        o: &Options,
        start: impl Fn(&[&str]) -> Result<RelayProcess, String>,
    ) -> Result<Fleet, String> {
        let url = server.url();
        let flags = ["--nats", url.as_str(), "--nats-stream", stream];
        let relays = (0..o.relays)
            .map(|_| start(&flags))
            .collect::<Result<Vec<_>, _>>()?;
        let mut pids: Vec<u32> = relays.iter().map(RelayProcess::pid).collect();
        pids.extend(server.pid());
        pids.push(std::process::id());
        Ok(Fleet {
            name,
            relays,
            cpu: Vec::new(),
            pids,
            runs: Vec::new(),
            failed: false,
        })
    }

    /// Posted to relay A, the SSE reader on B, the WS reader on C.
    fn target(&self) -> Target<'_> {
        let relays = &self.relays;
        Target {
            post: relays[0].url(),
            sse: relays[1 % relays.len()].url(),
            ws: relays[2 % relays.len()].url(),
        }
    }

    /// Its summary: the runs, then the CPU seconds its processes spent over them (the
    /// server's and this program's include the other fleet's runs when alternated) and
    /// their peaks.
    fn report(&self, server: &NatsServer, alternated: bool) -> Option<f64> {
        let rate = if self.failed {
            None
        } else {
            summarize(self.name, &self.runs)
        };
        let used: Vec<String> = self
            .pids
            .iter()
            .zip(&self.cpu)
            .map(|(p, before)| format!("{:.1}", cpu_secs(*p) - before))
            .collect();
        let names = ["relay A", "relay B", "relay C"];
        let mut line: Vec<String> = names
            .iter()
            .zip(&used)
            .take(self.relays.len())
            .map(|(name, cpu)| format!("{name} {cpu}"))
            .collect();
        if let [.., server, me] = used.as_slice() {
            let both = if alternated {
                " (both clusters' runs)"
            } else {
                ""
            };
            line.push(format!("nats-server {server}, this program {me}{both}"));
        }
        println!("  {} CPU s over the runs: {}", self.name, line.join(", "));
        let peaks: Vec<String> = ["relay A (posted to)", "B (SSE)", "C (WS)"]
            .iter()
            .zip(&self.relays)
            .map(|(name, r)| format!("{name} {}", mib(r.peak_rss_kib())))
            .collect();
        println!(
            "  {} peak RSS: {}, nats-server {}",
            self.name,
            peaks.join(", "),
            mib(server.pid().and_then(peak_rss_kib)),
        );
        rate
    }
}

/// The cluster figures: this build's relays (`cluster`) and, with `--compare`, the other
/// build's (`compare`, on a stream of its own), their runs alternated.
async fn clusters(server: &NatsServer, o: &Options) -> Vec<(&'static str, Option<f64>)> {
    let mut fleets = Vec::new();
    match Fleet::start("cluster", server, CLUSTER_STREAM, o, relay) {
        Ok(fleet) => fleets.push(fleet),
        Err(e) => {
            println!("cluster: a relay did not start: {e}");
            return vec![("cluster", None)];
        }
    }
    if let Some(path) = &o.compare {
        let other = |flags: &[&str]| {
            let mut command = Command::new(path);
            command.env("RUST_LOG", "warn");
            start_relay(command, flags)
        };
        match Fleet::start("compare", server, "AEPCOMPARE", o, other) {
            Ok(fleet) => fleets.push(fleet),
            Err(e) => {
                println!("compare: a relay of {} did not start: {e}", path.display());
                return vec![("compare", None)];
            }
        }
        println!(
            "  compare: the relays are {}; its runs alternate with this build's",
            path.display()
        );
    }
    for fleet in &mut fleets {
        fleet.cpu = fleet.pids.iter().map(|p| cpu_secs(*p)).collect();
    }
    for run in 0..o.runs {
        for fleet in &mut fleets {
            if fleet.failed {
                continue;
            }
            match one_run(fleet.name, run, &fleet.target(), o).await {
                Some(r) => fleet.runs.push(r),
                None => fleet.failed = true,
            }
        }
    }
    let alternated = fleets.len() > 1;
    fleets
        .iter()
        .map(|fleet| (fleet.name, fleet.report(server, alternated)))
        .collect()
}

/// The ceiling runs on `server`; the median rate.
async fn ceiling(server: &NatsServer, o: &Options) -> Option<f64> {
    let client = match async_nats::connect(server.url()).await {
        Ok(client) => client,
        Err(e) => {
            println!("  ceiling: connecting to {}: {e}", server.url());
            return None;
        }
    };
    let mut rates = Vec::new();
    let mut reads = Vec::new();
    let pid = server.pid().unwrap_or_default();
    let (cpu, me) = (cpu_secs(pid), cpu_secs(std::process::id()));
    for run in 0..o.runs {
        match ceiling_run(&client, o, run).await {
            Ok(c) => {
                println!(
                    "  ceiling run {}: {:>8.0} messages/s; stored {} duplicates {}; ack latency p50 {:.1} ms p99 {:.1} ms; read back by an ordered consumer {:.0}/s",
                    run + 1,
                    c.rate,
                    c.stored,
                    c.duplicates,
                    c.p50.as_secs_f64() * 1e3,
                    c.p99.as_secs_f64() * 1e3,
                    c.read
                );
                if (c.stored, c.duplicates) != (o.events, 0) {
                    println!(
                        "ceiling: FAILED: the server stored {} of {} messages, {} as duplicates",
                        c.stored, o.events, c.duplicates
                    );
                    return None;
                }
                rates.push(c.rate);
                reads.push(c.read);
            }
            Err(e) => {
                println!("  ceiling run {}: failed: {e}", run + 1);
                return None;
            }
        }
    }
    println!(
        "ceiling: {} messages/s; read back by one ordered consumer {} messages/s",
        spread(&rates),
        spread(&reads)
    );
    println!(
        "  CPU s over the runs (publishing and reading back): nats-server {:.1}, this program {:.1}",
        cpu_secs(pid) - cpu,
        cpu_secs(std::process::id()) - me
    );
    Some(median(rates))
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--as-relay") {
        return as_relay(args.skip(1).collect());
    }
    let o = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(bench(o))
}

async fn bench(o: Options) -> std::process::ExitCode {
    let mut server = match NatsServer::start() {
        Ok(server) => server,
        Err(why) => {
            eprintln!("cluster_bench: no nats-server to measure against: {why}");
            return std::process::ExitCode::FAILURE;
        }
    };
    println!(
        "cluster_bench: {} events of {MESSAGE_BYTES} bytes a run, {} runs (median, runs' range); posts: {} posters, NDJSON batches of {}; ceiling: {} acks in flight; nats-server {}, file storage",
        o.events, o.runs, o.posters, o.batch, o.in_flight, server.version()
    );
    let mut failed = false;
    let mut rates = Vec::new();
    if o.wants("memory") {
        match relay(&[]) {
            Ok(single) => {
                let target = Target {
                    post: single.url(),
                    sse: single.url(),
                    ws: single.url(),
                };
                let (cpu, me) = (cpu_secs(single.pid()), cpu_secs(std::process::id()));
                let rate = end_to_end("memory", &target, &o).await;
                failed |= rate.is_none();
                rates.push(("memory", rate));
                println!(
                    "  peak RSS: relay {}; CPU s over the runs: relay {:.1}, this program {:.1}",
                    mib(single.peak_rss_kib()),
                    cpu_secs(single.pid()) - cpu,
                    cpu_secs(std::process::id()) - me
                );
            }
            Err(e) => {
                println!("memory: the relay did not start: {e}");
                failed = true;
            }
        }
    }
    if o.wants("ceiling") {
        let rate = ceiling(&server, &o).await;
        failed |= rate.is_none();
        rates.push(("ceiling", rate));
    }
    if o.wants("cluster") {
        // the server's peak from here on is the clusters' (Linux: `5` resets VmHWM)
        if let Some(pid) = server.pid() {
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        }
        for (name, rate) in clusters(&server, &o).await {
            failed |= rate.is_none();
            rates.push((name, rate));
        }
    }
    let get = |name: &str| rates.iter().find(|r| r.0 == name).and_then(|r| r.1);
    if let (Some(cluster), Some(ceiling)) = (get("cluster"), get("ceiling")) {
        println!(
            "cluster/ceiling = {:.0}% (goal: 80% or more)",
            100.0 * cluster / ceiling
        );
    }
    if let (Some(cluster), Some(memory)) = (get("cluster"), get("memory")) {
        println!("cluster/memory = {:.0}%", 100.0 * cluster / memory);
    }
    if let (Some(cluster), Some(compare)) = (get("cluster"), get("compare")) {
        println!("cluster/compare = {:.0}%", 100.0 * cluster / compare);
    }
    server.kill();
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
