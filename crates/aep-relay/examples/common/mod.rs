//! What the relay's bench programs (`relay_bench`, `cluster_bench`, `subscription_bench`)
//! share: their event, their command line and relay binary, a Rust relay process started
//! with their flags, an NDJSON POST, a WebSocket (connected, or a live subscription), a
//! filter as a query value, and how their figures are summarized.
// Each bench uses its own share of this module.
#![allow(dead_code)]

use std::process::Command;
use std::time::Duration;

use aep_test_support::process::RelayProcess;
use futures::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

/// The bearer token of every relay a bench starts.
pub const TOKEN: &str = "bench";
/// Each relay's replay depth per session (`--buffer`): a whole run's events.
pub const BUFFER: &str = "20000";

/// The bench's event: a `progress.status` of agent `agent` in `session` at `seq` with
/// `severity`, `pad` bytes of `x` in its `data.detail` (relay_bench's pad of 180 makes
/// a line of about 600 bytes; cluster_bench pads it to exactly 603).
pub fn event(agent: &str, session: &str, seq: usize, severity: &str, pad: usize) -> String {
    let id = ulid::Ulid::new();
    format!(
        r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://bench/agent/{agent}/session/{session}","agent":"{agent}","session":"{session}","seq":{seq},"epoch":0,"severity":"{severity}","capture":"metadata","data":{{"phase":"benchmark","detail":"{}","step":{seq},"of":20000,"tags":["relay","bench","throughput","end-to-end"]}}}}"#,
        "x".repeat(pad)
    )
}

/// A Rust relay process: `command` (the relay, or a program that runs one) on a port it
/// picks on 127.0.0.1, with [`TOKEN`] and [`BUFFER`], then `flags`; its address read
/// off its first line, or why it did not start.
pub fn start_relay(mut command: Command, flags: &[&str]) -> Result<RelayProcess, String> {
    command
        .args(["--port", "0", "--host", "127.0.0.1", "--token", TOKEN])
        .args(["--buffer", BUFFER])
        .args(flags);
    RelayProcess::spawn(command)
}

/// The attr-match `filter` (its JSON) as the value of a `?filter=` query.
pub fn filter_query(filter: &str) -> String {
    aep_core::percent::encode(filter.as_bytes(), aep_core::percent::unreserved)
}

/// A WebSocket to a relay's `/socket`.
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The `hello` of a consumer (AEP-0003), the first frame every bench socket sends.
pub const HELLO: &str = r#"{"type":"hello","versions":["0.1"],"role":"consumer"}"#;

/// The `aep-relay` binary built beside the running example (`target/<profile>/`), else
/// `aep-relay` from `PATH`: the default of `--relay-bin`.
pub fn relay_bin() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("aep-relay").display().to_string())
        .unwrap_or_else(|| "aep-relay".into())
}

/// A WebSocket to the relay at `url` (`http://`), with the bench token; nothing said yet.
pub async fn ws_connect(url: &str) -> Result<Socket, String> {
    let ws_url = format!(
        "ws{}/socket?access_token={TOKEN}",
        url.trim_start_matches("http")
    );
    let (ws, _) = tokio_tungstenite::connect_async(ws_url)
        .await
        .map_err(|e| format!("WS to {url}: {e}"))?;
    Ok(ws)
}

/// A live WebSocket connection to the relay at `url` (`http://`), a consumer
/// subscribed with the attr-match `filter` (its JSON) once the relay said `subscribed`.
pub async fn ws_subscribe(url: &str, filter: &str) -> Result<Socket, String> {
    let mut ws = ws_connect(url).await?;
    let subscribe = format!(r#"{{"type":"subscribe","id":"b","filter":{filter}}}"#);
    for frame in [HELLO.to_owned(), subscribe] {
        ws.send(Message::Text(frame.into()))
            .await
            .map_err(|e| format!("WS to {url}: {e}"))?;
    }
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
            Ok(Some(Ok(m))) if m.to_text().unwrap_or("").contains("subscribed") => return Ok(ws),
            Ok(Some(Ok(_))) => {}
            other => return Err(format!("WS to {url}: no `subscribed` ({other:?})")),
        }
    }
}

/// The median of `v` (the upper one of an even count), 0 if empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// `kib` in MiB, or `n/a`.
pub fn mib(kib: Option<u64>) -> String {
    kib.map(|k| format!("{:.1} MiB", k as f64 / 1024.0))
        .unwrap_or_else(|| "n/a".into())
}

/// The bench's command line as `(flag, value)` pairs, a flag named in `switches` with an
/// empty value; `--help` or `-h` prints `help` and exits, and a last flag without its
/// value exits with status 2.
pub fn flags(help: &str, switches: &[&str]) -> Vec<(String, String)> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{help}");
        std::process::exit(0);
    }
    let mut pairs = Vec::new();
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let value = if switches.contains(&flag.as_str()) {
            String::new()
        } else if let Some(value) = args.next() {
            value
        } else {
            eprintln!("{flag} needs a value\n\n{help}");
            std::process::exit(2);
        };
        pairs.push((flag, value));
    }
    pairs
}

/// Exits with status 2, saying which argument the bench does not know.
pub fn unknown(flag: &str, help: &str) -> ! {
    eprintln!("unknown argument {flag}\n\n{help}");
    std::process::exit(2);
}

/// POSTs an NDJSON `body` to `url` (a relay's `/events`) with the bench's token; an
/// answer other than `202` is an error that gives the status and the relay's reason.
pub async fn post_ndjson(
    client: &reqwest::Client,
    url: &str,
    body: impl Into<reqwest::Body>,
) -> Result<(), String> {
    let r = client
        .post(url)
        .bearer_auth(TOKEN)
        .header("aep-version", "0.1")
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .await
        .map_err(|e| format!("POST: {e}"))?;
    if r.status() != 202 {
        let status = r.status();
        return Err(format!(
            "POST answered {status}: {}",
            r.text().await.unwrap_or_default()
        ));
    }
    Ok(())
}
