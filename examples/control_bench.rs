//! Control round trips (client -> relay -> target -> ack -> relay -> client) through the
//! Rust relay and the reference relay, beside the Python SDK's `ControlClient` on the
//! same relay and the same Rust target in the same run.
//!
//! ```text
//! cargo run --release --example control_bench -- [--sequential N] [--concurrent N]
//!     [--blocks N] [--bursts N] [--python-bursts N] [--relays rust,reference]
//!     [--no-python]
//! ```
//!
//! Per relay and client: p50/p99 latency of sequential commands (after a warm-up of 200
//! commands for Rust, 100 for Python; Python runs half the sequential count), then
//! commands/s in bursts of `--concurrent` commands in flight at once: the median burst,
//! with the 10th and 90th percentile bursts beside it. The `ratio` row is the Rust median
//! over the Python one, with the spread of the block-by-block ratios.
//!
//! The bursts run in `--blocks` blocks, the two clients taking turns: in each block one
//! uncounted and `--bursts` counted Rust bursts, then one uncounted and
//! `--python-bursts` counted Python bursts. Defaults: `--sequential 3000 --concurrent
//! 1000 --blocks 20 --bursts 20 --python-bursts 2 --relays rust,reference`, with Python
//! (400 Rust bursts of about 6 ms, 40 Python bursts of about 70 ms); `--no-python`
//! measures the Rust client alone. Why:
//! - a slow moment of a shared machine (another tenant) then falls on both clients
//!   alike, instead of on whichever ran its bursts then;
//! - the first burst after the other client's turn runs on a cold pipeline (parked
//!   threads, idle virtual CPUs: Rust bursts 70 ms apart measured about a quarter
//!   slower than back to back), so each turn starts with an uncounted one;
//! - turns are long (about 120 ms and 200 ms): with turns of 10 Rust bursts the Rust
//!   rate still measured about 5% below back to back; with 20, no different from it.
//!
//! The Rust relay runs in this process on its own runtime thread; the reference relay is
//! `../shared/tools/reference-relay.sh` (the shared directory is `AEP_SHARED`, by default
//! `../shared` beside the workspace root); the Python SDK is
//! `../shared/reference/python-sdk` (run with `python3` through
//! `.ci/control-interop/py_bench.py`). The target is a Rust `ControlTarget`
//! over the WebSocket sink that accepts at once.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aep::control::{ControlClient, ControlOptions, ControlTarget, SendOptions};
use aep::{Client, Emitter, WsSinkOptions};
use aep_test_support::reference::{ReferenceOptions, ReferenceRelay};
use serde_json::json;

mod common;

const TOKEN: &str = "bench";

#[derive(Clone)]
struct Args {
    sequential: usize,
    concurrent: usize,
    blocks: usize,
    bursts: usize,
    python_bursts: usize,
    relays: Vec<String>,
    python: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        sequential: 3_000,
        concurrent: 1_000,
        blocks: 20,
        bursts: 20,
        python_bursts: 2,
        relays: vec!["rust".into(), "reference".into()],
        python: true,
    };
    for (flag, v) in common::flags(&["--no-python"])? {
        let n = || v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--no-python" => a.python = false,
            "--sequential" => a.sequential = n()?,
            "--concurrent" => a.concurrent = n()?,
            "--blocks" => a.blocks = n()?,
            "--bursts" => a.bursts = n()?,
            "--python-bursts" => a.python_bursts = n()?,
            "--relays" => a.relays = v.split(',').map(str::to_owned).collect(),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if [
        a.sequential,
        a.concurrent,
        a.blocks,
        a.bursts,
        a.python_bursts,
    ]
    .contains(&0)
    {
        return Err(
            "--sequential, --concurrent, --blocks, --bursts and --python-bursts must be at least 1"
                .into(),
        );
    }
    Ok(a)
}

/// The shared directory: `AEP_SHARED`, or `../shared` beside the workspace root (the
/// tests' rule, [`aep_test_support::external::shared_dir`]).
fn shared() -> std::path::PathBuf {
    aep_test_support::external::shared_dir()
}

/// A relay for the duration of the bench: in-process Rust, or the reference child.
enum Relay {
    Rust(
        std::sync::mpsc::Sender<()>,
        Option<std::thread::JoinHandle<()>>,
    ),
    Reference(ReferenceRelay),
}

impl Relay {
    fn start(kind: &str) -> Result<(Relay, String), String> {
        match kind {
            "rust" => {
                let (url_tx, url_rx) = std::sync::mpsc::channel();
                let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
                let thread = std::thread::spawn(move || {
                    // One worker: with two (what the binary starts on 2 cores) the relay's
                    // workers contend with the client's and target's for the same two
                    // cores; measured side by side, no more commands/s and a worse p50.
                    let rt = match tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(1)
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt,
                        Err(e) => return drop(url_tx.send(Err(e.to_string()))),
                    };
                    rt.block_on(async move {
                        match aep_relay::Relay::builder().token(TOKEN).start().await {
                            Ok(relay) => {
                                let _ = url_tx.send(Ok(relay.url().to_owned()));
                                let _ = tokio::task::spawn_blocking(move || stop_rx.recv()).await;
                                let _ = relay.shutdown().await;
                            }
                            Err(e) => drop(url_tx.send(Err(e.to_string()))),
                        }
                    });
                });
                let url = url_rx.recv().map_err(|e| e.to_string())??;
                Ok((Relay::Rust(stop_tx, Some(thread)), url))
            }
            "reference" => {
                let options = ReferenceOptions {
                    token: Some(TOKEN.to_owned()),
                    ..Default::default()
                };
                let relay = ReferenceRelay::start(options)?;
                let url = relay.url();
                // Held from here: dropped on the way out, it is killed.
                Ok((Relay::Reference(relay), url))
            }
            other => Err(format!("unknown relay {other}")),
        }
    }
}

/// Stopped however the bench ends, so no relay outlives it.
impl Drop for Relay {
    fn drop(&mut self) {
        match self {
            Relay::Rust(stop, thread) => {
                let _ = stop.send(());
                if let Some(thread) = thread.take() {
                    let _ = thread.join();
                }
            }
            Relay::Reference(relay) => relay.kill(),
        }
    }
}

/// Sequential round trips for the Python client: half the Rust client's, as each takes
/// about twice as long.
fn python_sequential(args: &Args) -> usize {
    (args.sequential / 2).max(1)
}

/// One client's figures: sequential latency, and the rate of each counted burst.
#[derive(Debug, Default)]
struct Figures {
    p50_us: f64,
    p99_us: f64,
    /// Commands/s of each counted burst, in the order they ran.
    rates: Vec<f64>,
    /// The median burst of each block.
    blocks: Vec<f64>,
}

impl Figures {
    fn print(&self, relay: &str, client: &str) {
        let (p10, p50, p90) = spread(&self.rates);
        println!(
            "{relay:<10} {client:<8} {:>10.0} {:>10.0} {p50:>12.0} {p10:>10.0}-{p90:.0}",
            self.p50_us, self.p99_us
        );
    }
}

/// The 10th percentile, the median and the 90th percentile of `xs`. The median of an
/// even count is the mean of the middle two: a block of two Python bursts would
/// otherwise count its faster one.
fn spread(xs: &[f64]) -> (f64, f64, f64) {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let i = ((xs.len() as f64 * p) as usize).min(xs.len().saturating_sub(1));
        xs.get(i).copied().unwrap_or(0.0)
    };
    let median = match xs.len() {
        0 => 0.0,
        n if n % 2 == 0 => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
        n => xs[n / 2],
    };
    (at(0.1), median, at(0.9))
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

/// Connects, warms up and measures sequential round trips.
async fn rust_sequential(
    url: &str,
    session: &str,
    args: &Args,
) -> Result<(ControlClient, Figures), String> {
    let client = Client::new(url)
        .token(TOKEN)
        .identity("rust-bench", "bench")
        .control(ControlOptions::new())
        .await
        .map_err(|e| e.to_string())?;
    for _ in 0..200 {
        client
            .send("control.pause", session, SendOptions::new())
            .await
            .map_err(|e| e.to_string())?;
    }
    let mut lat = Vec::with_capacity(args.sequential);
    for _ in 0..args.sequential {
        let t = Instant::now();
        client
            .send("control.pause", session, SendOptions::new())
            .await
            .map_err(|e| e.to_string())?;
        lat.push(t.elapsed());
    }
    lat.sort();
    let figures = Figures {
        p50_us: pct(&lat, 0.5),
        p99_us: pct(&lat, 0.99),
        ..Figures::default()
    };
    Ok((client, figures))
}

/// One burst of `n` commands in flight at once, each sent from a task of its own;
/// returns commands/s.
async fn rust_burst(client: &ControlClient, session: &str, n: usize) -> Result<f64, String> {
    let t = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let c = client.clone();
            let s = session.to_owned();
            tokio::spawn(async move { c.send("control.pause", &s, SendOptions::new()).await })
        })
        .collect();
    for task in tasks {
        task.await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

/// The Python SDK's `ControlClient` in a child process (`py_bench.py`), driven
/// one burst at a time so that its bursts interleave with the Rust client's. Killed
/// when dropped.
struct PyClient {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl PyClient {
    /// Starts the client; returns once its sequential round trips are measured.
    fn start(url: &str, session: &str, args: &Args) -> Result<(PyClient, Figures), String> {
        let sdk = shared().join("reference/python-sdk");
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(".ci/control-interop/py_bench.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args([url, TOKEN, session])
            .arg(python_sequential(args).to_string())
            .arg(args.concurrent.to_string())
            .env("PYTHONPATH", sdk)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("python3: no pipes".into());
        };
        let mut py = PyClient {
            child,
            stdin,
            stdout: std::io::BufReader::new(stdout),
        };
        let v = py.line()?;
        let f = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_f64)
                .ok_or_else(|| format!("py_bench.py: no {k} in {v}"))
        };
        let figures = Figures {
            p50_us: f("p50_us")?,
            p99_us: f("p99_us")?,
            ..Figures::default()
        };
        Ok((py, figures))
    }

    /// Runs one burst; returns commands/s.
    fn burst(&mut self) -> Result<f64, String> {
        use std::io::Write;
        writeln!(self.stdin, "burst")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("py_bench.py: {e}"))?;
        let v = self.line()?;
        v.get("rate")
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| format!("py_bench.py: no rate in {v}"))
    }

    fn line(&mut self) -> Result<serde_json::Value, String> {
        use std::io::BufRead;
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err("py_bench.py exited (its stderr is above)".into()),
            Ok(_) => serde_json::from_str(&line).map_err(|e| format!("py_bench.py: {e}: {line}")),
            Err(e) => Err(format!("py_bench.py: {e}")),
        }
    }
}

impl Drop for PyClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Both clients' figures, the clients taking turns block by block (see the module
/// docs). A Python failure is reported and the Rust client goes on alone.
async fn measure(
    url: &str,
    [session, py_session]: [&str; 2],
    args: &Args,
) -> Result<(Figures, Option<Figures>), String> {
    let (client, mut rust) = rust_sequential(url, session, args).await?;
    let mut python = None;
    if args.python {
        let (u, s, a) = (url.to_owned(), py_session.to_owned(), args.clone());
        match tokio::task::spawn_blocking(move || PyClient::start(&u, &s, &a)).await {
            Ok(Ok(started)) => python = Some(started),
            Ok(Err(e)) => eprintln!("control_bench: python client: {e}"),
            Err(e) => eprintln!("control_bench: python client: {e}"),
        }
    }
    for done in 0..args.blocks {
        let mut block = Vec::with_capacity(args.bursts);
        for burst in 0..=args.bursts {
            let rate = rust_burst(&client, session, args.concurrent).await?;
            if burst > 0 {
                block.push(rate);
            }
        }
        rust.blocks.push(spread(&block).1);
        rust.rates.extend(block);
        if let Some((py, mut figures)) = python.take() {
            let n = args.python_bursts;
            let turn = tokio::task::spawn_blocking(move || {
                let mut py = py;
                let rates = (0..=n).map(|_| py.burst()).collect::<Result<Vec<f64>, _>>();
                (py, rates)
            });
            match turn.await {
                Ok((py, Ok(rates))) => {
                    let block = rates.get(1..).unwrap_or_default();
                    figures.blocks.push(spread(block).1);
                    figures.rates.extend_from_slice(block);
                    python = Some((py, figures));
                }
                Ok((_, Err(e))) => stopped(done, &e),
                Err(e) => stopped(done, &e.to_string()),
            }
        }
    }
    client.close().await;
    Ok((rust, python.map(|(_, figures)| figures)))
}

fn stopped(blocks: usize, e: &str) {
    eprintln!(
        "control_bench: the python client failed after {blocks} blocks ({e}); \
         its figures are left out and the Rust client goes on alone"
    );
}

/// The ratio of the two medians, and the spread of the block-by-block ratios (each
/// block's median Rust burst over its median Python burst).
fn print_ratio(relay: &str, rust: &Figures, python: &Figures) {
    let paired: Vec<f64> = rust
        .blocks
        .iter()
        .zip(&python.blocks)
        .map(|(r, p)| r / p)
        .collect();
    let (p10, _, p90) = spread(&paired);
    let ratio = spread(&rust.rates).1 / spread(&python.rates).1;
    println!(
        "{relay:<10} {:<8} {:>10} {:>10} {:>11.1}x {p10:>9.1}x-{p90:.1}x",
        "ratio", "", "", ratio
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let Some(args) = common::or_usage("control_bench", "", parse()) else {
        return std::process::ExitCode::from(2);
    };
    let (py_sequential, py_bursts) = match args.python {
        true => (
            format!(", {} for Python", python_sequential(&args)),
            format!(" and 1+{} Python", args.python_bursts),
        ),
        false => Default::default(),
    };
    println!(
        "control round trips: {} sequential for Rust{py_sequential} (p50/p99); bursts of {} in \
         flight, {} blocks of 1+{} Rust{py_bursts} bursts (the first of each turn uncounted; \
         commands/s: median and 10th-90th percentile bursts)",
        args.sequential, args.concurrent, args.blocks, args.bursts,
    );
    println!(
        "{:<10} {:<8} {:>10} {:>10} {:>12} {:>16}",
        "relay", "client", "p50 us", "p99 us", "commands/s", "bursts p10-p90"
    );
    for kind in &args.relays {
        let (relay, url) = match Relay::start(kind) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("control_bench: {kind}: {e}");
                continue;
            }
        };
        let target = ControlTarget::new(["control.pause"], |cmd| async move {
            let _ = cmd.accept();
        });
        let sink = Client::new(&url).token(TOKEN).ws_sink(
            WsSinkOptions::new("bench-target", "bench/1")
                .queue_capacity(1_000_000)
                .command_hook(target.clone()),
        );
        let Ok(sink) = sink else {
            eprintln!("control_bench: sink");
            drop(relay);
            continue;
        };
        let emitter = Emitter::new("bench-target", "bench", sink);
        // A session per client: each client's subscription then carries its own acks
        // only, and neither spends its turn reading the other's traffic.
        let session = format!("bench-{kind}");
        let py_session = format!("bench-{kind}-python");
        let held: Vec<_> = [&session, &py_session]
            .map(|s| target.attach(emitter.session(s)))
            .into_iter()
            .collect();
        for s in &held {
            let _ = s.emit("session.started", json!({}));
        }
        emitter.flush().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The client runs as a task on the runtime, as application code does: driven from
        // `main`'s own thread instead, every settled command would wake that thread
        // across cores (measured: p50 136-175 us that way, 115-120 us as a task, the
        // same commands/s).
        let driver = {
            let (url, session, py_session, args) = (
                url.clone(),
                session.clone(),
                py_session.clone(),
                args.clone(),
            );
            tokio::spawn(async move { measure(&url, [&session, &py_session], &args).await })
        };
        match driver.await.unwrap_or_else(|e| Err(e.to_string())) {
            Ok((rust, python)) => {
                rust.print(kind, "rust");
                if let Some(python) = python {
                    python.print(kind, "python");
                    print_ratio(kind, &rust, &python);
                }
            }
            Err(e) => eprintln!("control_bench: {kind} rust client: {e}"),
        }
        emitter.close().await;
        drop(relay);
    }
    std::process::ExitCode::SUCCESS
}
