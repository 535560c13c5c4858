//! Prints every delivered event as one JSON line on stdout; markers and errors go to
//! stderr.
//!
//! ```text
//! cargo run --example tail -- [--url http://127.0.0.1:8787] [--token T] [--filter JSON]
//!     [--from all | --from-file F] [--history] [--transport sse|ws]
//! ```
//!
//! `--history` makes one pass over what the relay holds and exits at `replay-complete`.
//! `--from-file F` resumes from the positions stored in `F` (a JSON array of
//! `{session, epoch, seq}`; absent means live only) and writes the positions back on
//! exit (end of history, or Ctrl-C).
//!
//! Without `--url` it starts an embedded relay on `127.0.0.1:0` (its URL on stderr) and
//! tails that: nothing is emitted to it, so it shows only what other programs send there
//! while it runs, and with `--history` it prints nothing and exits at the (immediate)
//! `replay-complete`.

use std::io::Write;
use std::process::ExitCode;

use aep::{Client, Notice, ResumePosition, SubscribeOptions, Transport};
use futures::StreamExt;

/// The command line; `tests/it/examples.rs` builds it with [`parse`] too.
#[derive(Debug)]
pub struct Args {
    url: Option<String>,
    token: Option<String>,
    opts: SubscribeOptions,
    from_file: Option<String>,
}

fn usage(why: &str) -> ExitCode {
    eprintln!("tail: {why}");
    eprintln!("usage: tail [--url URL] [--token T] [--filter JSON] [--from all | --from-file F] [--history] [--transport sse|ws]");
    ExitCode::from(2)
}

/// Reads the flags above (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut url = None;
    let mut token = None;
    let mut opts = SubscribeOptions::new().on_notice(|n| match n {
        Notice::Connected { .. } => {}
        other => eprintln!("tail: {other:?}"),
    });
    let mut from_file = None;
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => url = Some(value()?),
            "--token" => token = Some(value()?),
            "--filter" => {
                let v = value()?;
                let filter = serde_json::from_str(&v).map_err(|e| format!("--filter: {e}"))?;
                opts = opts.filter(filter);
            }
            "--from" => match value()?.as_str() {
                "all" => opts = opts.from_all(),
                other => return Err(format!("--from takes `all`, not `{other}`")),
            },
            "--from-file" => {
                let path = value()?;
                if let Ok(text) = std::fs::read_to_string(&path) {
                    let positions: Vec<ResumePosition> =
                        serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
                    opts = opts.from_positions(positions);
                }
                from_file = Some(path);
            }
            "--history" => opts = opts.history_only(),
            "--transport" => {
                let t = match value()?.as_str() {
                    "sse" => Transport::Sse,
                    "ws" => Transport::WebSocket,
                    other => return Err(format!("unknown transport `{other}`")),
                };
                opts = opts.transport(t);
            }
            other => return Err(format!("unknown flag `{other}`")),
        }
    }
    Ok(Args {
        url,
        token,
        opts,
        from_file,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(why) => return usage(&why),
    };
    match tail(args, &mut std::io::stdout()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("tail: {why}");
            ExitCode::FAILURE
        }
    }
}

/// Writes each delivered event as one JSON line to `out` until the stream ends (with
/// `--history`), `out` fails, or Ctrl-C.
pub async fn tail(args: Args, out: &mut impl Write) -> Result<(), String> {
    let (url, relay) = match args.url {
        Some(url) => (url, None),
        None => {
            let mut relay = aep::relay::Relay::builder();
            if let Some(t) = &args.token {
                relay = relay.token(t.as_str());
            }
            let relay = relay
                .start()
                .await
                .map_err(|e| format!("starting the embedded relay: {e}"))?;
            eprintln!("tail: relay {}", relay.url());
            (relay.url().to_owned(), Some(relay))
        }
    };
    let client = match &args.token {
        Some(t) => Client::new(&url).token(t.as_str()),
        None => Client::new(&url),
    };
    let mut sub = client.subscribe(args.opts);
    loop {
        tokio::select! {
            event = sub.next() => match event {
                Some(event) => {
                    if writeln!(out, "{}", event.to_json()).and_then(|()| out.flush()).is_err() {
                        break;
                    }
                }
                None => break,
            },
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    sub.close();
    if let Some(relay) = relay {
        if let Err(e) = relay.shutdown().await {
            eprintln!("tail: stopping the embedded relay: {e}");
        }
    }
    if let Some(path) = &args.from_file {
        let positions = sub.positions();
        let text = serde_json::to_string_pretty(&positions).unwrap_or_else(|_| "[]".into());
        std::fs::write(path, text).map_err(|e| format!("writing {path}: {e}"))?;
    }
    Ok(())
}
