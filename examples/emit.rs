//! Emits one session of N events to a relay over HTTP and exits once all are delivered.
//!
//! ```text
//! cargo run --example emit -- --url http://127.0.0.1:8787 [--token T] [--session S] [--count N]
//! ```
//!
//! Delivery problems are printed on stderr; the exit status is 0 only when every event
//! was accepted by the relay.

use std::process::ExitCode;

use aep_async::{Emitter, HttpSink};
use serde_json::json;

struct Args {
    url: String,
    token: Option<String>,
    session: String,
    count: u64,
}

fn usage() -> ExitCode {
    eprintln!("usage: emit --url URL [--token T] [--session S] [--count N]");
    ExitCode::from(2)
}

fn parse() -> Option<Args> {
    let mut url = None;
    let mut token = None;
    let mut session = None;
    let mut count = 10;
    let mut it = std::env::args().skip(1);
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
        // No embedded relay yet: `--url` is required until aep-relay can be embedded.
        url: url?,
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
    let Some(args) = parse() else {
        return usage();
    };
    let mut sink = HttpSink::builder(&args.url).on_report(|r| eprintln!("emit: {r}"));
    if let Some(t) = &args.token {
        sink = sink.token(t);
    }
    let sink = match sink.build() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("emit: {e}");
            return ExitCode::FAILURE;
        }
    };
    let emitter = Emitter::new("aep-example", "localhost", sink);
    let session = emitter.session(&args.session);
    for i in 0..args.count {
        let result = match i {
            0 => session.emit("session.started", json!({"cwd": "."})),
            n if n + 1 == args.count => {
                session.emit("session.ended", json!({"reason": "completed"}))
            }
            n => session.emit("tool.called", json!({"tool": "example", "n": n})),
        };
        if let Err(e) = result {
            eprintln!("emit: {e}");
            return ExitCode::FAILURE;
        }
    }
    emitter.close().await;
    let stats = emitter.stats();
    eprintln!(
        "emit: session {} accepted {} delivered {} rejected {} dropped {}",
        args.session, stats.accepted, stats.delivered, stats.rejected, stats.dropped
    );
    if stats.delivered == args.count {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
