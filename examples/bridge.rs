//! A relay's events flowing into an OpenTelemetry backend (AEP-0005 §3): an OTLP/HTTP
//! exporter subscribed to the relay, and optionally an OCSF JSONL file beside it.
//!
//! ```text
//! cargo run --example bridge -- --url URL --otlp http://127.0.0.1:4318
//!     [--token T] [--otlp-token T] [--filter JSON] [--spans] [--max-capture LEVEL]
//!     [--ocsf FILE] [--history]
//! ```
//!
//! `--otlp` is the collector's base URL (records go to `/v1/logs`, spans to
//! `/v1/traces`); `--spans` adds GenAI spans (`invoke_agent`, `execute_tool`) to the
//! LogRecords; `--max-capture` (default `metadata`) is the most content that leaves;
//! `--ocsf FILE` also appends the OCSF records of the security-relevant events;
//! `--history` exports what the relay holds and exits, instead of following it until
//! Ctrl-C.
//!
//! Without `--url` it starts an embedded relay, emits one short demo session into it and
//! exports that (`--history` implied), so the flow shows with nothing else running.

use std::process::ExitCode;

use aep::bridge::export::{ExportStats, HttpOptions, OcsfWriter, OtlpExporter, Signals};
use aep::bridge::CaptureLimit;
use aep::protocol::Capture;
use aep::{Client, EmitOptions, Emitter, HttpSinkOptions, SubscribeOptions};
use serde_json::json;

/// The command line; `tests/it/examples.rs` builds it with [`parse`] too.
#[derive(Debug, Default)]
pub struct Args {
    url: Option<String>,
    token: Option<String>,
    otlp: Option<String>,
    otlp_token: Option<String>,
    filter: Option<serde_json::Value>,
    spans: bool,
    max_capture: Capture,
    ocsf: Option<String>,
    history: bool,
}

const USAGE: &str = "usage: bridge [--url URL] --otlp URL [--token T] [--otlp-token T] [--filter JSON] [--spans] [--max-capture none|metadata|redacted|full] [--ocsf FILE] [--history]";

/// Reads the flags above (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut out = Args::default();
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => out.url = Some(value()?),
            "--token" => out.token = Some(value()?),
            "--otlp" => out.otlp = Some(value()?),
            "--otlp-token" => out.otlp_token = Some(value()?),
            "--filter" => {
                let text = value()?;
                out.filter =
                    Some(serde_json::from_str(&text).map_err(|e| format!("--filter: {e}"))?);
            }
            "--spans" => out.spans = true,
            "--max-capture" => {
                out.max_capture = value()?
                    .parse()
                    .map_err(|e| format!("--max-capture: {e}"))?;
            }
            "--ocsf" => out.ocsf = Some(value()?),
            "--history" => out.history = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown flag `{other}`; try --help")),
        }
    }
    if out.otlp.is_none() && out.ocsf.is_none() {
        return Err("give --otlp URL (or --ocsf FILE)".to_owned());
    }
    Ok(out)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(why) => {
            eprintln!("bridge: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match bridge(args).await {
        Ok((otlp, ocsf)) => {
            if let Some(s) = otlp {
                eprintln!("bridge: OTLP {s:?}");
            }
            if let Some(s) = ocsf {
                eprintln!("bridge: OCSF {s:?}");
            }
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("bridge: {why}");
            ExitCode::FAILURE
        }
    }
}

/// Exports until the relay's history is done (`--history`) or Ctrl-C; returns what the
/// OTLP exporter and the OCSF writer did.
pub async fn bridge(
    mut args: Args,
) -> Result<(Option<ExportStats>, Option<ExportStats>), Box<dyn std::error::Error>> {
    let embedded = match &args.url {
        Some(_) => None,
        None => {
            let relay = aep::relay::Relay::builder().start().await?;
            eprintln!(
                "bridge: embedded relay {}, with a demo session",
                relay.url()
            );
            demo_session(relay.url()).await?;
            args.url = Some(relay.url().to_owned());
            args.history = true;
            Some(relay)
        }
    };
    let url = args.url.clone().unwrap_or_default();
    let relay = match &args.token {
        Some(token) => Client::new(url).token(token.as_str()),
        None => Client::new(url),
    };
    let mut subscription = SubscribeOptions::new();
    if let Some(filter) = &args.filter {
        subscription = subscription.filter(filter.clone());
    }
    if args.history {
        subscription = subscription.from_all().history_only();
    }
    let limit = CaptureLimit::new(args.max_capture);
    // Each exporter is a consumer of its own; Ctrl-C stops both.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until_stopped = || {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        }
    };
    let otlp = async {
        let Some(endpoint) = &args.otlp else {
            return Ok::<_, Box<dyn std::error::Error>>(None);
        };
        let mut http = HttpOptions::new();
        if let Some(token) = &args.otlp_token {
            http = http.bearer(token);
        }
        let signals = if args.spans {
            Signals::LogsAndSpans
        } else {
            Signals::Logs
        };
        let exporter = OtlpExporter::builder(endpoint.as_str())
            .signals(signals)
            .capture(limit)
            .http(http)
            .build()?;
        let stats = exporter
            .run_relay(&relay, subscription.clone(), until_stopped())
            .await;
        Ok(Some(stats))
    };
    let ocsf = async {
        let Some(path) = &args.ocsf else {
            return Ok::<_, Box<dyn std::error::Error>>(None);
        };
        let writer = OcsfWriter::to_path(path).await?.capture(limit);
        let stats = writer
            .run_relay(&relay, subscription.clone(), until_stopped())
            .await?;
        Ok(Some(stats))
    };
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = stop.send(true);
        }
        // Keeps `stop` (and so the exporters) alive until Ctrl-C or the end.
        std::future::pending::<()>().await;
    });
    let (otlp, ocsf) = tokio::join!(otlp, ocsf);
    ctrl_c.abort();
    if let Some(relay) = embedded {
        relay.shutdown().await?;
    }
    Ok((otlp?, ocsf?))
}

/// One short coding session with a run and a tool call, emitted over HTTP.
async fn demo_session(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let emitter = Emitter::new(
        "coder",
        "demo-host",
        Client::new(url).http_sink(HttpSinkOptions::new())?,
    );
    let session = emitter.session("s-demo");
    let run = || EmitOptions::new().run("r-1");
    let tool = json!({"name": "Bash", "call_id": "t1"});
    session.emit(
        "session.started",
        json!({"gen_ai.request.model": "demo-model"}),
    )?;
    session.emit_with("run.started", json!({"trigger": "user"}), run())?;
    session.emit_with(
        "tool.requested",
        json!({"tool": tool}),
        run().subject("Bash"),
    )?;
    let done = json!({"tool": tool, "status": "success", "duration_ms": 12});
    session.emit_with("tool.completed", done, run().subject("Bash"))?;
    let usage = json!({"gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 40});
    session.emit_with("run.finished", usage, run())?;
    session.emit("session.ended", json!({"reason": "normal"}))?;
    emitter.close().await;
    Ok(())
}
