//! Control round trips (client -> relay -> target -> ack -> relay -> client) through the
//! Rust relay and the reference relay, beside the Python SDK's `ControlClient` on the
//! same relay and the same Rust target in the same run.
//!
//! ```text
//! cargo run --release --example control_bench -- [--sequential N] [--concurrent N]
//!     [--rounds N] [--relays rust,reference] [--no-python]
//! ```
//!
//! Per relay: p50/p99 latency of sequential commands (after a warm-up) and the median
//! commands/s over `--rounds` bursts of `--concurrent` commands in flight at once, after
//! one burst that is not counted (for both clients), with the 10th and 90th percentile
//! bursts beside it. Defaults: `--sequential 3000 --concurrent 1000 --rounds 201`.
//!
//! Why 201 bursts: a Rust burst of 1,000 commands lasts about 6 ms, so 21 of them span
//! about 150 ms, and on a shared machine one busy moment of another tenant that long moves
//! a run's median by a third. 201 bursts span 1-2 s for the Rust client (about 15 s for
//! the Python one, whose bursts last about 70 ms). The Rust relay runs in this process
//! on its own runtime thread; the reference relay is
//! `../shared/tools/reference-relay.sh`; the Python SDK is
//! `../shared/reference/python-sdk` (run with `python3`). The target is a Rust
//! `ControlTarget` over the WebSocket sink that accepts at once.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aep_async::control::{ClientOptions, ControlClient, ControlTarget, SendOptions};
use aep_async::{Emitter, WsSink};
use serde_json::json;

const TOKEN: &str = "bench";

#[derive(Clone)]
struct Args {
    sequential: usize,
    concurrent: usize,
    rounds: usize,
    relays: Vec<String>,
    python: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        sequential: 3_000,
        concurrent: 1_000,
        rounds: 201,
        relays: vec!["rust".into(), "reference".into()],
        python: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--no-python" {
            a.python = false;
            continue;
        }
        let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n = || v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--sequential" => a.sequential = n()?,
            "--concurrent" => a.concurrent = n()?,
            "--rounds" => a.rounds = n()?,
            "--relays" => a.relays = v.split(',').map(str::to_owned).collect(),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

fn shared() -> std::path::PathBuf {
    std::env::var("AEP_SHARED")
        .map(Into::into)
        .unwrap_or_else(|_| "/work/shared".into())
}

/// A relay for the duration of the bench: in-process Rust, or the reference child.
enum Relay {
    Rust(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>),
    Reference(Child),
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
                Ok((Relay::Rust(stop_tx, thread), url))
            }
            "reference" => {
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .map_err(|e| e.to_string())?
                    .port();
                let child = Command::new("bash")
                    .arg(shared().join("tools/reference-relay.sh"))
                    .arg(port.to_string())
                    .arg(TOKEN)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| e.to_string())?;
                let url = format!("http://127.0.0.1:{port}");
                for _ in 0..300 {
                    if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                        return Ok((Relay::Reference(child), url));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err("the reference relay did not start".into())
            }
            other => Err(format!("unknown relay {other}")),
        }
    }

    fn stop(self) {
        match self {
            Relay::Rust(stop, thread) => {
                let _ = stop.send(());
                let _ = thread.join();
            }
            Relay::Reference(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

#[derive(Debug)]
struct Figures {
    p50_us: f64,
    p99_us: f64,
    cmds_per_s: f64,
    /// The 10th and 90th percentile bursts, commands/s.
    p10_p90: (f64, f64),
}

impl Figures {
    fn print(&self, relay: &str, client: &str) {
        println!(
            "{relay:<10} {client:<8} {:>10.0} {:>10.0} {:>12.0} {:>10.0}-{:.0}",
            self.p50_us, self.p99_us, self.cmds_per_s, self.p10_p90.0, self.p10_p90.1
        );
    }
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

async fn rust_client(url: &str, session: &str, args: &Args) -> Result<Figures, String> {
    let client = ControlClient::connect(
        url,
        ClientOptions::new()
            .token(TOKEN)
            .identity("rust-bench", "bench"),
    )
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
    let mut rates = Vec::new();
    // One burst first, not counted: the first one grows maps, queues and socket
    // buffers that later ones reuse (py_bench.py does the same).
    for round in 0..=args.rounds {
        let t = Instant::now();
        let tasks: Vec<_> = (0..args.concurrent)
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
        if round > 0 {
            rates.push(args.concurrent as f64 / t.elapsed().as_secs_f64());
        }
    }
    rates.sort_by(f64::total_cmp);
    client.close().await;
    Ok(Figures {
        p50_us: pct(&lat, 0.5),
        p99_us: pct(&lat, 0.99),
        cmds_per_s: rates.get(rates.len() / 2).copied().unwrap_or(0.0),
        p10_p90: (
            rates.get(rates.len() / 10).copied().unwrap_or(0.0),
            rates
                .get((rates.len() * 9 / 10).min(rates.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0.0),
        ),
    })
}

fn python_client(url: &str, session: &str, args: &Args) -> Result<Figures, String> {
    let sdk = shared().join("reference/python-sdk");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/control-interop/py_bench.py");
    let out = Command::new("python3")
        .arg(script)
        .args([url, TOKEN, session])
        .arg((args.sequential / 2).max(1).to_string())
        .arg(args.concurrent.to_string())
        .arg(args.rounds.to_string())
        .env("PYTHONPATH", sdk)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let f = |k: &str| v.get(k).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    Ok(Figures {
        p50_us: f("p50_us"),
        p99_us: f("p99_us"),
        cmds_per_s: f("cmds_per_s"),
        p10_p90: (f("p10"), f("p90")),
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("control_bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    println!(
        "control round trips: {} sequential (p50/p99), {} in flight x {} rounds (median commands/s)",
        args.sequential, args.concurrent, args.rounds
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
        let sink = WsSink::builder(&url, "bench-target", "bench/1")
            .token(TOKEN)
            .queue_capacity(1_000_000)
            .command_hook(target.clone())
            .build();
        let Ok(sink) = sink else {
            eprintln!("control_bench: sink");
            relay.stop();
            continue;
        };
        let emitter = Emitter::new("bench-target", "bench", sink);
        let session = format!("bench-{kind}");
        let s = target.attach(emitter.session(&session));
        let _ = s.emit("session.started", json!({}));
        emitter.flush().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The client runs as a task on the runtime, as application code does: driven from
        // `main`'s own thread instead, every settled command would wake that thread
        // across cores (measured: p50 136-175 us that way, 115-120 us as a task, the
        // same commands/s).
        let driver = {
            let (url, session, args) = (url.clone(), session.clone(), args.clone());
            tokio::spawn(async move { rust_client(&url, &session, &args).await })
        };
        match driver.await.unwrap_or_else(|e| Err(e.to_string())) {
            Ok(f) => f.print(kind, "rust"),
            Err(e) => eprintln!("control_bench: {kind} rust client: {e}"),
        }
        if args.python {
            let (u, s2) = (url.clone(), session.clone());
            let a = args.clone();
            let res = tokio::task::spawn_blocking(move || python_client(&u, &s2, &a)).await;
            match res {
                Ok(Ok(f)) => f.print(kind, "python"),
                Ok(Err(e)) => eprintln!("control_bench: {kind} python client: {e}"),
                Err(e) => eprintln!("control_bench: {kind} python client: {e}"),
            }
        }
        emitter.close().await;
        relay.stop();
    }
    std::process::ExitCode::SUCCESS
}
