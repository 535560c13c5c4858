//! Prints every delivered event as one JSON line on stdout; markers and errors go to
//! stderr.
//!
//! ```text
//! cargo run --example tail -- --url http://127.0.0.1:8787 [--token T] [--filter JSON]
//!     [--from all | --from-file F] [--history] [--transport sse|ws]
//! ```
//!
//! `--history` makes one pass over what the relay holds and exits at `replay-complete`.
//! `--from-file F` resumes from the positions stored in `F` (a JSON array of
//! `{session, epoch, seq}`; absent means live only) and writes the positions back on
//! exit (end of history, or Ctrl-C).

use std::io::Write;
use std::process::ExitCode;

use aep_async::{subscribe, From, Notice, ResumePosition, SubscribeOptions, Transport};
use futures::StreamExt;

struct Args {
    url: String,
    opts: SubscribeOptions,
    from_file: Option<String>,
}

fn usage(why: &str) -> ExitCode {
    eprintln!("tail: {why}");
    eprintln!("usage: tail --url URL [--token T] [--filter JSON] [--from all | --from-file F] [--history] [--transport sse|ws]");
    ExitCode::from(2)
}

fn parse() -> Result<Args, String> {
    let mut url = None;
    let mut opts = SubscribeOptions::new().on_notice(|n| match n {
        Notice::Connected { .. } => {}
        other => eprintln!("tail: {other:?}"),
    });
    let mut from_file = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => url = Some(value()?),
            "--token" => opts = opts.token(value()?),
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
                    opts = opts.from(From::Positions(positions));
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
    // No embedded relay yet: `--url` is required until aep-relay can be embedded.
    let url = url.ok_or("--url is required")?;
    Ok(Args {
        url,
        opts,
        from_file,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(why) => return usage(&why),
    };
    let mut sub = subscribe(&args.url, args.opts);
    let stdout = std::io::stdout();
    loop {
        tokio::select! {
            event = sub.next() => match event {
                Some(event) => {
                    let mut out = stdout.lock();
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
    if let Some(path) = &args.from_file {
        let positions = sub.positions();
        let text = serde_json::to_string_pretty(&positions).unwrap_or_else(|_| "[]".into());
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("tail: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
