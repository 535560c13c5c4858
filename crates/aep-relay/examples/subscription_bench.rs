//! Ingest with many subscriptions (issue 32, point 4): the rate a relay ingests at while
//! 400 WebSocket consumers hold 100 subscriptions each, beside the same relay with none,
//! in the same run.
//!
//! Each round starts a fresh relay for each configuration, in turn:
//!
//! - `none`: no subscription; N events are posted in NDJSON batches.
//! - `subscribed`: `--sockets` consumers each subscribe `--per-socket` times (the mix
//!   below), then the same N events are posted. Every socket is read throughout, and
//!   the run ends once every event a filter takes has reached its socket: the count is
//!   checked against the mix, so nothing may be lost for speed.
//! - `unmatched`: the same subscriptions, and events of sessions none of them pins: the
//!   cost of routing alone, nothing delivered.
//!
//! The mix, per socket, most pinning a session (as an agent's tab or `aep tail --session`
//! does): 87 `{"session": s}`, 10 `{"session": s, "type": "progress.*"}`, 2
//! `{"agent": a, "severity": {"gte": "error"}}`, and 1 `{"type": "attention.*"}`, or on
//! one socket in 100 `{"severity": {"gte": "error"}}`, which pins nothing. The events
//! are `progress.status` `notice` of 1,000 sessions and 100 agents: about one session
//! subscription in 40 takes events (one delivery per event), the agent, type and
//! severity ones are decided and take none.
//!
//! Reported: ingest events/s (the POSTs' wall clock), per configuration the median and
//! the range over the rounds, the ratio of the medians, the subscriptions' setup time and
//! the relay's peak RSS.
//!
//! ```text
//! cargo build --release -p aep-relay --bin aep-relay --example subscription_bench
//! target/release/examples/subscription_bench [--events 20000] [--batch 1000] [--rounds 5]
//!     [--sockets 400] [--per-socket 100] [--relay-bin target/release/aep-relay]
//! ```

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep_test_support::process::{peak_rss_kib, RelayProcess};
use common::{median, mib, post_ndjson, start_relay, ws_connect, Socket, HELLO};
use futures::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const HELP: &str = "\
subscription_bench: ingest with many subscriptions beside ingest with none, in one run

usage: subscription_bench [--events N] [--batch N] [--rounds N] [--sockets N]
                          [--per-socket N] [--relay-bin PATH]

  --events N      events posted per configuration and round (default 20000)
  --batch N       events per NDJSON POST (default 1000)
  --rounds N      rounds; each starts a fresh relay per configuration (default 5)
  --sockets N     WebSocket consumers (default 400)
  --per-socket N  subscriptions on each (default 100; the relay's cap per socket)
  --relay-bin P   the relay (default: aep-relay beside this program)

Build it with: cargo build --release -p aep-relay --bin aep-relay --example subscription_bench
";

/// Sessions the events are spread over, and agents.
const SESSIONS: usize = 1_000;
const AGENTS: usize = 100;

#[derive(Debug, Clone)]
struct Options {
    events: usize,
    batch: usize,
    rounds: usize,
    sockets: usize,
    per_socket: usize,
    relay_bin: String,
}

fn options() -> Options {
    let mut o = Options {
        events: 20_000,
        batch: 1_000,
        rounds: 5,
        sockets: 400,
        per_socket: 100,
        relay_bin: common::relay_bin(),
    };
    for (flag, value) in common::flags(HELP, &[]) {
        let number = |default: usize| value.parse().unwrap_or(default);
        match flag.as_str() {
            "--events" => o.events = number(o.events),
            "--batch" => o.batch = number(o.batch).max(1),
            "--rounds" => o.rounds = number(o.rounds).max(1),
            "--sockets" => o.sockets = number(o.sockets),
            "--per-socket" => o.per_socket = number(o.per_socket),
            "--relay-bin" => o.relay_bin = value,
            other => common::unknown(other, HELP),
        }
    }
    o
}

fn session_name(n: usize) -> String {
    format!("bench-s{n}")
}

/// What a run holds: no subscription, the mix with events it takes, or the mix with
/// events of sessions it does not pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Config {
    None,
    Subscribed,
    Unmatched,
}

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::None => "none",
            Config::Subscribed => "subscribed",
            Config::Unmatched => "unmatched",
        }
    }
}

/// Subscription `j` of socket `i`: its filter, and the event session it takes, if any.
fn subscription(i: usize, j: usize, per_socket: usize) -> (String, Option<usize>) {
    let g = i * per_socket + j;
    let session = || Some(g).filter(|g| *g < SESSIONS);
    match j % 100 {
        0..=86 => (format!(r#"{{"session":"{}"}}"#, session_name(g)), session()),
        87..=96 => (
            format!(r#"{{"session":"{}","type":"progress.*"}}"#, session_name(g)),
            session(),
        ),
        97 | 98 => (
            format!(
                r#"{{"agent":"agent{}","severity":{{"gte":"error"}}}}"#,
                g % AGENTS
            ),
            None,
        ),
        _ if i % 100 == 0 => (r#"{"severity":{"gte":"error"}}"#.to_owned(), None),
        _ => (r#"{"type":"attention.*"}"#.to_owned(), None),
    }
}

/// The NDJSON bodies of one configuration's events, built before the clock starts, and
/// the count of deliveries the mix takes of them.
fn bodies(o: &Options, config: Config) -> (Vec<String>, u64) {
    let mut taken = vec![0u64; SESSIONS];
    for i in 0..o.sockets {
        for j in 0..o.per_socket {
            if let (_, Some(s)) = subscription(i, j, o.per_socket) {
                taken[s] += 1;
            }
        }
    }
    let mut expected = 0;
    let lines: Vec<String> = (0..o.events)
        .map(|n| {
            let s = n % SESSIONS;
            let agent = format!("agent{}", n % AGENTS);
            if config == Config::Unmatched {
                let session = format!("bench-unmatched{s}");
                return common::event(&agent, &session, n / SESSIONS, "notice", 180);
            }
            if config == Config::Subscribed {
                expected += taken[s];
            }
            common::event(&agent, &session_name(s), n / SESSIONS, "notice", 180)
        })
        .collect();
    let bodies = lines
        .chunks(o.batch)
        .map(|chunk| chunk.join("\n") + "\n")
        .collect();
    (bodies, expected)
}

/// Consumer `i`: connected, `hello` said, every subscription confirmed.
async fn consumer(url: &str, i: usize, per_socket: usize) -> Result<Socket, String> {
    let mut ws = ws_connect(url)
        .await
        .map_err(|e| format!("socket {i}: {e}"))?;
    let frames = std::iter::once(HELLO.to_owned()).chain((0..per_socket).map(|j| {
        let (filter, _) = subscription(i, j, per_socket);
        format!(r#"{{"type":"subscribe","id":"s{j}","filter":{filter}}}"#)
    }));
    for frame in frames {
        ws.feed(Message::Text(frame.into()))
            .await
            .map_err(|e| format!("socket {i}: {e}"))?;
    }
    ws.flush().await.map_err(|e| format!("socket {i}: {e}"))?;
    let mut confirmed = 0;
    while confirmed < per_socket {
        match tokio::time::timeout(Duration::from_secs(30), ws.next()).await {
            Ok(Some(Ok(m))) => {
                let text = m.to_text().unwrap_or("");
                if text.contains(r#""type":"subscribed""#) {
                    confirmed += 1;
                } else if text.contains(r#""type":"error""#) {
                    return Err(format!("socket {i}: refused: {text}"));
                }
            }
            other => return Err(format!("socket {i}: {confirmed} confirmed, then {other:?}")),
        }
    }
    Ok(ws)
}

/// Reads a consumer until it closes, counting the events it is sent.
async fn read(mut ws: Socket, delivered: Arc<AtomicU64>) {
    while let Some(Ok(m)) = ws.next().await {
        if let Message::Text(text) = m {
            if text.starts_with(r#"{"aep""#) {
                delivered.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// One configuration of one round.
struct Run {
    rate: f64,
    setup: Duration,
    delivered: u64,
    peak_rss_kib: Option<u64>,
}

async fn run(o: &Options, config: Config) -> Result<Run, String> {
    let subscribed = config != Config::None;
    let mut relay: RelayProcess = start_relay(
        Command::new(&o.relay_bin),
        // every consumer comes from this machine: no per-peer bound
        &["--max-connections-per-peer", "0", "--max-sessions", "2000"],
    )?;
    let url = relay.url().to_owned();
    let (bodies, expected) = bodies(o, config);
    let delivered = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    let started = Instant::now();
    if subscribed {
        // a few sockets at a time: setup is not what is measured
        let mut pending = futures::stream::iter(0..o.sockets)
            .map(|i| {
                let url = url.clone();
                async move { consumer(&url, i, o.per_socket).await }
            })
            .buffer_unordered(16);
        while let Some(ws) = pending.next().await {
            readers.push(tokio::spawn(read(ws?, delivered.clone())));
        }
    }
    let setup = started.elapsed();
    let client = reqwest::Client::new();
    let events_url = format!("{url}/events");
    let clock = Instant::now();
    for body in bodies {
        post_ndjson(&client, &events_url, body).await?;
    }
    let ingest = clock.elapsed();
    if subscribed {
        let deadline = Instant::now() + Duration::from_secs(60);
        while delivered.load(Ordering::Relaxed) < expected && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let got = delivered.load(Ordering::Relaxed);
    let peak = peak_rss_kib(relay.pid());
    relay.terminate(Duration::from_secs(10));
    for reader in readers {
        reader.abort();
    }
    if subscribed && got != expected {
        return Err(format!("{got} of {expected} deliveries arrived"));
    }
    Ok(Run {
        rate: o.events as f64 / ingest.as_secs_f64(),
        setup,
        delivered: got,
        peak_rss_kib: peak,
    })
}

fn range(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(0.0, f64::max);
    format!("{min:.0}-{max:.0}")
}

#[tokio::main]
async fn main() {
    let o = options();
    let total = o.sockets * o.per_socket;
    println!(
        "subscription_bench: {} events per run in batches of {}, {} rounds; {} sockets x {} subscriptions = {total}; relay {}",
        o.events, o.batch, o.rounds, o.sockets, o.per_socket, o.relay_bin
    );
    let configs = [Config::None, Config::Subscribed, Config::Unmatched];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for round in 1..=o.rounds {
        // rotate which goes first, so none always meets a warmer machine
        for k in 0..configs.len() {
            let at = (k + round) % configs.len();
            let config = configs[at];
            match run(&o, config).await {
                Ok(r) => {
                    println!(
                        "round {round} {:<10} {:>9.0} events/s  setup {:>6.2} s  delivered {:>6}  peak RSS {}",
                        config.name(),
                        r.rate,
                        r.setup.as_secs_f64(),
                        r.delivered,
                        mib(r.peak_rss_kib)
                    );
                    rates[at].push(r.rate);
                }
                Err(why) => {
                    eprintln!("round {round} {}: {why}", config.name());
                    std::process::exit(1);
                }
            }
        }
    }
    let anchor = median(rates[0].clone());
    for (config, rates) in configs.iter().zip(&rates) {
        let m = median(rates.clone());
        println!(
            "{:<10}  median {m:>7.0} events/s ({})  {:.2} of none",
            config.name(),
            range(rates),
            m / anchor
        );
    }
    println!("({total} subscriptions in the subscribed and unmatched runs)");
}
