//! Emit and consume throughput, side by side in one run (the machine is noisy):
//!
//! - SDK-bound: the HTTP sink against an in-process server that answers 202 at once,
//!   and an SSE subscription reading a pre-built body from an in-process server (its
//!   inverse rate is the SDK's per-event cost: SSE parse, envelope parse, dedupe,
//!   position tracking);
//! - against the Rust relay (in process) and the reference relay (when `node` is
//!   available), the same rows for each: raw NDJSON ingest and raw replay (no SDK), then
//!   the SDK's HTTP sink, SSE history pass and WS subscription.
//!
//! `cargo bench -p aep-async --bench throughput` (env `AEP_BENCH_EVENTS`, default 100000,
//! for the SDK-bound rows; `AEP_BENCH_RELAY_EVENTS`, default 20000, for the relay rows;
//! `AEP_BENCH_RUST_RELAY_EVENTS`, default 100000, for the Rust relay's longer run;
//! `AEP_BENCH_MAX_BATCH` and `AEP_BENCH_LINGER_MS` for the `HttpSink` under test;
//! `AEP_BENCH_SDK_ONLY` skips both relays, `AEP_BENCH_NO_REFERENCE` the reference relay;
//! the reference relay and the Python SDK are looked for in `AEP_SHARED`, by default
//! `../shared` beside the workspace root).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep_async::{Client, EmitOptions, Emitter, HttpSinkOptions, SubscribeOptions, Transport};
use aep_core::{binding, Severity};
use aep_test_support::bench::env_or;
use futures::StreamExt;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

mod common;
use common::{event_line, SerializingSink};

/// CPU seconds this process has used (user + system), from /proc/self/stat: robust to
/// the machine's load, unlike wall time.
fn cpu_seconds() -> f64 {
    aep_test_support::process::cpu_secs(std::process::id())
}

type Responder = Arc<dyn Fn(&str) -> Vec<u8> + Send + Sync>;

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

/// One row whose work `run` times itself (setup left out); the CPU it used is this
/// process's while it runs.
async fn row(name: &str, n: usize, run: impl std::future::Future<Output = Duration>) {
    let c = cpu_seconds();
    let d = run.await;
    report(name, n, d, cpu_seconds() - c);
}

fn report(name: &str, n: usize, d: Duration, cpu: f64) {
    println!(
        "{name:<48} {:>10.0} events/s  ({n} in {:.3} s; this process {:.2} us CPU/event)",
        rate(n, d),
        d.as_secs_f64(),
        cpu * 1e6 / n as f64
    );
}

/// A keep-alive HTTP/1.1 server answering every request with `respond(head)`.
async fn serve(respond: Responder) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let respond = respond.clone();
            tokio::spawn(async move {
                let (r, mut w) = sock.into_split();
                let mut r = BufReader::with_capacity(1 << 16, r);
                loop {
                    let mut head = String::new();
                    let mut len = 0usize;
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        head.push_str(&line);
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; len];
                    if r.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    if w.write_all(&respond(&head)).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// `n` events through an `HttpSink`, as `agent` over sessions `{prefix}0`, `{prefix}1`,
/// ...: `emit` into a queue that holds them all, or, with `wait`, `emit_wait` (a
/// reservation per event) into the default queue of 10,000, so that the producer waits
/// for room whenever it gets ahead.
async fn emit_sdk(
    url: &str,
    (agent, prefix): (&str, &str),
    n: usize,
    sessions: usize,
    wait: bool,
) -> Duration {
    let max_batch = env_or("AEP_BENCH_MAX_BATCH", 10_000);
    let linger = Duration::from_millis(env_or("AEP_BENCH_LINGER_MS", 5));
    let mut options = HttpSinkOptions::new().batch(|b| b.max_items(max_batch).linger(linger));
    if !wait {
        options = options.queue_capacity(n + 1);
    }
    let sink = Client::new(url).http_sink(options).unwrap();
    let emitter = Emitter::new(agent, "bench", sink);
    let ses: Vec<_> = (0..sessions)
        .map(|i| emitter.session(format!("{prefix}{i}")))
        .collect();
    let data = json!({"tool": "bash", "args": {"cmd": "ls -la"}});
    let t = Instant::now();
    for i in 0..n {
        // `notice`: the reference relay drops debug/info toward a reader more than
        // 1 MiB behind (AEP-0003 §8.4), which a replay burst is.
        let opts = EmitOptions::new().severity(Severity::Notice);
        let session = &ses[i % sessions];
        if wait {
            session
                .reserve()
                .await
                .unwrap()
                .emit_with("tool.called", &data, opts)
                .unwrap();
        } else {
            session.emit_with("tool.called", &data, opts).unwrap();
        }
    }
    emitter.close().await;
    let d = t.elapsed();
    assert_eq!(emitter.stats().delivered, n as u64, "{:?}", emitter.stats());
    d
}

async fn consume(url: &str, n: usize, transport: Transport) -> Duration {
    consume_filtered(url, n, transport, json!({"agent": "a"})).await
}

async fn consume_filtered(
    url: &str,
    n: usize,
    transport: Transport,
    filter: serde_json::Value,
) -> Duration {
    let opts = SubscribeOptions::new()
        .from_all()
        .filter(filter)
        .transport(transport);
    let opts = if transport == Transport::Sse {
        opts.history_only()
    } else {
        opts
    };
    let t = Instant::now();
    let mut sub = Client::new(url).subscribe(opts);
    let mut got = 0;
    while got < n {
        match tokio::time::timeout(Duration::from_secs(60), sub.next()).await {
            Ok(Some(_)) => got += 1,
            _ => break,
        }
    }
    let d = t.elapsed();
    assert_eq!(got, n, "{transport:?}");
    d
}

#[derive(Debug, Default)]
struct CollectSink(std::sync::Mutex<Vec<String>>);

impl aep_async::Sink for CollectSink {
    fn accept(&self, event: &aep_core::Event) -> Result<(), aep_async::EmitError> {
        self.0.lock().unwrap().push(event.to_json());
        Ok(())
    }
    fn flush(&self) -> aep_async::SinkFuture<'_> {
        Box::pin(async {})
    }
    fn close(&self) -> aep_async::SinkFuture<'_> {
        Box::pin(async {})
    }
}

fn collect_sdk_lines(n: usize, sessions: usize) -> Vec<String> {
    let sink = Arc::new(CollectSink::default());
    let emitter = Emitter::new("pre", "bench", SharedSink(sink.clone()));
    let ses: Vec<_> = (0..sessions)
        .map(|i| emitter.session(format!("pre{i}")))
        .collect();
    let data = json!({"tool": "bash", "args": {"cmd": "ls -la"}});
    for i in 0..n {
        let opts = EmitOptions::new().severity(Severity::Notice);
        ses[i % sessions]
            .emit_with("tool.called", &data, opts)
            .unwrap();
    }
    std::mem::take(&mut *sink.0.lock().unwrap())
}

#[derive(Debug)]
struct SharedSink(Arc<CollectSink>);

impl aep_async::Sink for SharedSink {
    fn accept(&self, event: &aep_core::Event) -> Result<(), aep_async::EmitError> {
        self.0.accept(event)
    }
    fn flush(&self) -> aep_async::SinkFuture<'_> {
        Box::pin(async {})
    }
    fn close(&self) -> aep_async::SinkFuture<'_> {
        Box::pin(async {})
    }
}

/// The Python SDK against the same relay, in the same run: `http_sink` emitting
/// `emit_n` events (one POST each), then `aio.subscribe(live=False)` over the relay's
/// history of agent `a` (`consume_n` events). Returns (emit/s, consume/s), or `None`
/// when python3 or the SDK is not here.
fn python_sdk(url: &str, emit_n: usize, consume_n: usize) -> Option<(f64, f64)> {
    let sdk = aep_test_support::external::shared_dir().join("reference/python-sdk");
    if !sdk.exists() {
        return None;
    }
    const SCRIPT: &str = r#"
import asyncio, sys, time
from aep_sdk import Emitter, http_sink, aio
url, emit_n, consume_n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
e = Emitter("py", "bench", http_sink(url)).session("py0")
t = time.perf_counter()
for i in range(emit_n):
    e.emit("tool.called", {"tool": "bash", "args": {"cmd": "ls -la"}}, severity="notice")
emit_rate = emit_n / (time.perf_counter() - t)
async def consume():
    got = 0
    t = time.perf_counter()
    sub = await aio.subscribe(url, filter={"agent": "a"}, from_="all", live=False)
    async for _ in sub:
        got += 1
    return got, time.perf_counter() - t
got, d = asyncio.run(consume())
assert got >= consume_n, got
print(emit_rate, got / d)
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(url)
        .arg(emit_n.to_string())
        .arg(consume_n.to_string())
        .env("PYTHONPATH", &sdk)
        .stderr(Stdio::inherit())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().filter_map(|v| v.parse().ok());
    Some((it.next()?, it.next()?))
}

/// The Rust relay on a thread and runtime of its own, like a separate process.
struct RustRelay {
    url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl RustRelay {
    fn start(buffer: usize) -> RustRelay {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let relay = aep_relay::Relay::builder()
                    .bind("127.0.0.1:0")
                    .buffer(buffer)
                    .max_sessions(1000)
                    .start()
                    .await
                    .unwrap();
                url_tx.send(relay.url().to_owned()).unwrap();
                let _ = stop_rx.await;
                relay.shutdown().await.unwrap();
            });
        });
        RustRelay {
            url: url_rx.recv().unwrap(),
            stop,
            thread,
        }
    }

    fn stop(self) {
        let _ = self.stop.send(());
        self.thread.join().unwrap();
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = env_or("AEP_BENCH_EVENTS", 100_000);
    let sessions = 10;

    // No IO: building envelopes into a sink that only serializes (what HttpSink's
    // accept does before queueing).
    {
        let sink = SerializingSink::default();
        let emitter = Emitter::new("a", "bench", sink);
        let s = emitter.session("s0");
        let data = json!({"tool": "bash", "args": {"cmd": "ls -la"}});
        let c = cpu_seconds();
        let t = Instant::now();
        for _ in 0..n {
            s.emit("tool.called", &data).unwrap();
        }
        report(
            "emit: build + serialize, no IO",
            n,
            t.elapsed(),
            cpu_seconds() - c,
        );
    }
    // No IO: what a subscription does per event once the bytes are in: envelope parse,
    // (source, id) dedupe, position tracking.
    {
        let lines: Vec<String> = (0..n)
            .map(|i| event_line("a", &format!("s{}", i % sessions), i))
            .collect();
        let mut dedupe = aep_core::dedupe::Dedupe::new();
        let mut positions = aep_core::resume::Positions::new();
        let c = cpu_seconds();
        let t = Instant::now();
        let mut admitted = 0;
        for line in &lines {
            let ev = aep_core::Event::from_slice(line.as_bytes()).unwrap();
            if dedupe.insert_event(&ev) {
                positions.observe(&ev);
                admitted += 1;
            }
        }
        report(
            "consume: parse + dedupe + positions, no IO",
            n,
            t.elapsed(),
            cpu_seconds() - c,
        );
        assert_eq!(admitted, n);
    }

    // SDK-bound emit.
    let accept: Responder =
        Arc::new(|_| b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_vec());
    let sink_url = serve(accept).await;
    row(
        "emit: HttpSink -> in-process 202 server",
        n,
        emit_sdk(&sink_url, ("a", "s"), n, sessions, false),
    )
    .await;
    row(
        "emit_wait: HttpSink (queue 10k) -> in-process 202 server",
        n,
        emit_sdk(&sink_url, ("a", "s"), n, sessions, true),
    )
    .await;

    // SDK-bound consume: a pre-built SSE body.
    let mut body = String::with_capacity(n * 330);
    for i in 0..n {
        let s = format!("s{}", i % sessions);
        body.push_str(&format!(
            "event: tool.called\ndata: {}\nid: {s}:0:{i}\n\n",
            event_line("a", &s, i)
        ));
    }
    body.push_str(binding::sse::REPLAY_COMPLETE);
    let body = Arc::new(body);
    let b = body.clone();
    let sse: Responder = Arc::new(move |_| {
        let mut out = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n",
            binding::SSE_CONTENT_TYPE,
            b.len()
        )
        .into_bytes();
        out.extend_from_slice(b.as_bytes());
        out
    });
    let sse_url = serve(sse).await;
    row(
        "consume: SSE subscription <- in-process body",
        n,
        consume(&sse_url, n, Transport::Sse),
    )
    .await;

    // `AEP_BENCH_SDK_ONLY=1`: the SDK-bound half alone, e.g. under callgrind
    if std::env::var_os("AEP_BENCH_SDK_ONLY").is_some() {
        println!("AEP_BENCH_SDK_ONLY set; relays skipped");
        return;
    }
    // One replay pass of the reference relay holds at most 8 MiB in flight before it
    // disconnects the reader (its backpressure rule), about 25 000 of these events; both
    // relays get the same count so the rows compare.
    let relay_n: usize = env_or("AEP_BENCH_RELAY_EVENTS", 20_000);

    // The Rust relay, in this process on a runtime of its own (so its CPU time is in
    // the "this process" column of these rows). It has no replay window to respect, so
    // it also gets a longer run that amortizes connection set-up.
    let rust_n: usize = env_or("AEP_BENCH_RUST_RELAY_EVENTS", 100_000);
    let rust = RustRelay::start(relay_n + 10);
    against_relay("Rust relay", &rust.url, relay_n, sessions).await;
    rust.stop();
    if rust_n > relay_n {
        let rust = RustRelay::start(rust_n + 10);
        against_relay("Rust relay, longer run", &rust.url, rust_n, sessions).await;
        rust.stop();
    }

    // The reference relay, if node is here and not skipped.
    if std::env::var_os("AEP_BENCH_NO_REFERENCE").is_some() {
        println!("AEP_BENCH_NO_REFERENCE set; reference relay skipped");
        return;
    }
    if let Some(why) = aep_test_support::reference::ReferenceRelay::missing() {
        println!("reference relay not available ({why}); skipped");
        return;
    }
    let options = aep_test_support::reference::ReferenceOptions {
        buffer: Some(relay_n + 10),
        env: vec![("AEP_MAX_SESSIONS".into(), "1000".into())],
        ..Default::default()
    };
    let relay = aep_test_support::reference::ReferenceRelay::start(options).unwrap();
    let url = relay.url();
    against_relay("reference relay", &url, relay_n, sessions).await;
}

/// The end-to-end rows against one relay at `url`: raw NDJSON ingest, the same POSTs of
/// SDK-built events, `HttpSink`, a raw replay, and the SSE and WS subscriptions.
async fn against_relay(label: &str, url: &str, n: usize, sessions: usize) {
    let client = reqwest::Client::new();

    // Raw ingest anchor: pre-built 10 000-line NDJSON POSTs, other sessions.
    let mut raw_n = 0;
    let c = cpu_seconds();
    let t = Instant::now();
    for chunk in 0..(n / 10_000).max(1) {
        let mut nd = String::new();
        for i in 0..10_000 {
            nd.push_str(&event_line("raw", &format!("raw{chunk}"), i));
            nd.push('\n');
        }
        let res = client
            .post(binding::events_url(url))
            .header(binding::VERSION_HEADER, aep_core::AEP_VERSION)
            .header("content-type", binding::NDJSON_CONTENT_TYPE)
            .body(nd)
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        raw_n += 10_000;
    }
    report(
        &format!("{label}: raw NDJSON ingest (10k/POST)"),
        raw_n,
        t.elapsed(),
        cpu_seconds() - c,
    );

    // The same raw POSTs, of events the SDK built (other sessions): tells the relay's
    // per-event cost apart from the sink's way of sending.
    let lines = collect_sdk_lines(n, sessions);
    let lines_n = lines.len();
    let c = cpu_seconds();
    let t = Instant::now();
    for chunk in lines.chunks(10_000) {
        let res = client
            .post(binding::events_url(url))
            .header(binding::VERSION_HEADER, aep_core::AEP_VERSION)
            .header("content-type", binding::NDJSON_CONTENT_TYPE)
            .body(chunk.join("\n"))
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
    }
    report(
        &format!("{label}: raw POST of SDK-built events"),
        lines.len(),
        t.elapsed(),
        cpu_seconds() - c,
    );

    row(
        &format!("{label}: emit with HttpSink"),
        n,
        emit_sdk(url, ("a", "s"), n, sessions, false),
    )
    .await;

    // Raw replay anchor: the bytes of a from=all live=0 pass, unparsed.
    let total = n;
    let c = cpu_seconds();
    let t = Instant::now();
    let mut res = client
        .get(format!(
            "{}?from=all&live=0&filter=%7B%22agent%22%3A%22a%22%7D",
            binding::stream_url(url)
        ))
        .header("accept", binding::SSE_CONTENT_TYPE)
        .send()
        .await
        .unwrap();
    let mut lines = 0;
    while let Some(c) = res.chunk().await.unwrap() {
        lines += c.iter().filter(|&&b| b == b'\n').count();
    }
    report(
        &format!("{label}: raw replay (bytes only)"),
        total,
        t.elapsed(),
        cpu_seconds() - c,
    );
    // Four lines per event (event, data, id, blank), plus the marker.
    assert!(
        lines >= total * 4,
        "the relay cut the replay short: {lines} lines"
    );

    row(
        &format!("{label}: SSE subscription history pass"),
        total,
        consume(url, total, Transport::Sse),
    )
    .await;
    row(
        &format!("{label}: WS subscription from=all"),
        total,
        consume(url, total, Transport::WebSocket),
    )
    .await;
    // Everything the relay holds, no filter: the relay serves stored bytes without
    // parsing them again, so this row is bound by the SDK rather than the relay's
    // filtering. Only where the relay keeps it all (the reference relay's replay window
    // is smaller).
    let everything = raw_n + lines_n + total;
    if label.starts_with("Rust") {
        for transport in [Transport::Sse, Transport::WebSocket] {
            row(
                &format!("{label}: {transport:?} subscription, no filter"),
                everything,
                consume_filtered(url, everything, transport, json!({})),
            )
            .await;
        }
    }

    // The waiting path, last so that the rows above read what they read before it: its
    // events are another agent's in other sessions, outside their filters and buffers.
    row(
        &format!("{label}: emit_wait with HttpSink (queue 10k)"),
        n,
        emit_sdk(url, ("w", "w"), n, sessions, true),
    )
    .await;

    // The Python SDK on the same relay, same run: the issue's ratios.
    match python_sdk(url, 1_000, total) {
        Some((emit, consume)) => println!(
            "{label}: Python SDK http_sink {emit:.0} events/s, aio.subscribe(live=False) {consume:.0} events/s"
        ),
        None => println!("{label}: Python SDK not available; skipped"),
    }
}
