//! Emits one session of N events to a relay over HTTP and exits once all are delivered.
//!
//! ```text
//! cargo run --example emit -- [--url http://127.0.0.1:8787] [--token T] [--session S] [--count N]
//! ```
//!
//! Without `--url` it starts an embedded relay on `127.0.0.1:0`, emits the session to it,
//! and shuts it down once every event is delivered (so the events go with it).
//!
//! It emits as fast as the relay takes the events: `emit_wait` waits for room in the
//! sink's queue rather than dropping events when the producer gets ahead of the network
//! (plain `emit` never waits, and drops `debug`/`info` first once the queue is full).
//!
//! Delivery problems are printed on stderr; the exit status is 0 only when every event
//! was accepted by the relay.

use std::process::ExitCode;

use aep::{Client, Emitter, HttpSinkOptions};
use serde_json::json;

/// The command line; `tests/it/examples.rs` builds it with [`parse`] too.
#[derive(Debug)]
pub struct Args {
    /// The relay; `None` starts an embedded one.
    pub url: Option<String>,
    /// Its bearer token.
    pub token: Option<String>,
    /// The session to emit.
    pub session: String,
    /// How many events.
    pub count: u64,
}

fn usage() -> ExitCode {
    eprintln!("usage: emit [--url URL] [--token T] [--session S] [--count N]");
    ExitCode::from(2)
}

/// Reads `[--url URL] [--token T] [--session S] [--count N]` (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Option<Args> {
    let mut url = None;
    let mut token = None;
    let mut session = None;
    let mut count = 10;
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let value = it.next()?;
        match flag.as_str() {
            "--url" => url = Some(value),
            "--token" => token = Some(value),
            "--session" => session = Some(value),
            "--count" => count = value.parse().ok()?,
            _ => return None,
        }
    }
    Some(Args {
        url,
        token,
        session: session.unwrap_or_else(|| {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            format!("s-{ms}-{}", std::process::id())
        }),
        count,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(args) = parse(std::env::args().skip(1)) else {
        return usage();
    };
    if emit(args).await {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Emits the session; `true` when every event was delivered.
pub async fn emit(args: Args) -> bool {
    let (url, relay) = match &args.url {
        Some(url) => (url.clone(), None),
        None => {
            let mut relay = aep::relay::Relay::builder();
            if let Some(t) = &args.token {
                relay = relay.token(t.as_str());
            }
            match relay.start().await {
                Ok(relay) => (relay.url().to_owned(), Some(relay)),
                Err(e) => {
                    eprintln!("emit: starting the embedded relay: {e}");
                    return false;
                }
            }
        }
    };
    eprintln!("emit: relay {url}");
    let delivered = emit_to(&url, &args).await;
    if let Some(relay) = relay {
        if let Err(e) = relay.shutdown().await {
            eprintln!("emit: stopping the embedded relay: {e}");
        }
    }
    delivered
}

async fn emit_to(url: &str, args: &Args) -> bool {
    let mut relay = Client::new(url);
    if let Some(t) = &args.token {
        relay = relay.token(t);
    }
    let options = HttpSinkOptions::new().on_report(|r| eprintln!("emit: {r}"));
    let sink = match relay.http_sink(options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("emit: {e}");
            return false;
        }
    };
    let emitter = Emitter::new("aep-example", "localhost", sink);
    let session = emitter.session(&args.session);
    for i in 0..args.count {
        let result = match i {
            0 => {
                session
                    .emit_wait("session.started", json!({"cwd": "."}))
                    .await
            }
            n if n + 1 == args.count => {
                session
                    .emit_wait("session.ended", json!({"reason": "completed"}))
                    .await
            }
            n => {
                session
                    .emit_wait("tool.called", json!({"tool": "example", "n": n}))
                    .await
            }
        };
        if let Err(e) = result {
            eprintln!("emit: {e}");
            return false;
        }
    }
    emitter.close().await;
    let stats = emitter.stats();
    eprintln!(
        "emit: session {} accepted {} delivered {} rejected {} dropped {}",
        args.session, stats.accepted, stats.delivered, stats.rejected, stats.dropped
    );
    stats.delivered == args.count
}
