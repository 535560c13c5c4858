//! `aep emit`: events to a relay, from a JSONL file unchanged or one from flags.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep::protocol::types::{emit_scope, EmitScope};
use aep::protocol::{Capture, Event, Severity};
use aep::{EmitOptions, Emitter, Sink};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::args::{json_object, RelayArgs};
use crate::deliver::{http_sink, Reports};
use crate::exit::{describe, Exit, Failure, Outcome};
use crate::input::{self, Input};
use crate::term;

/// Send events to a relay over HTTP ingest (AEP-0003 §3.2).
///
/// From a JSONL file (a capture, another tool's output) the events go unchanged: ids,
/// sessions, `(epoch, seq)` and every attribute as written. They go in batches as fast
/// as the relay takes them and no faster: a fast input waits, nothing is dropped. A
/// progress bar shows on a terminal; a JSON summary goes to stdout at the end.
///
/// With `--type` one event is built instead (a fresh id, the time now, `seq` 0, and
/// unless `--epoch` the session's next epoch from the user's epoch store, so a second
/// `aep emit` into a session writes after the first) and printed on stdout.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    relay: RelayArgs,
    /// The JSONL file; `-` reads stdin [default: -].
    #[arg(value_name = "FILE", conflicts_with = "event_type")]
    file: Option<PathBuf>,
    /// Emit one event of this type instead of reading events.
    #[arg(long = "type", value_name = "TYPE")]
    event_type: Option<String>,
    /// The session of the one event (session-scoped types need one).
    #[arg(long, value_name = "SESSION", requires = "event_type")]
    session: Option<String>,
    /// The payload of the one event, a JSON object.
    #[arg(long, value_name = "JSON", value_parser = json_object, requires = "event_type")]
    data: Option<Value>,
    /// The one event's run.
    #[arg(long, value_name = "RUN", requires = "event_type")]
    run: Option<String>,
    /// The one event's subject.
    #[arg(long, value_name = "TEXT", requires = "event_type")]
    subject: Option<String>,
    /// The one event's severity [default: info].
    #[arg(long, value_name = "LEVEL", requires = "event_type")]
    severity: Option<Severity>,
    /// The one event's declared capture [default: metadata].
    #[arg(long, value_name = "LEVEL", requires = "event_type")]
    capture: Option<Capture>,
    /// The agent the one event is from.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "aep-cli",
        requires = "event_type"
    )]
    agent: String,
    /// The one event's epoch [default: the session's next epoch from the epoch store
    /// ($AEP_STATE_DIR/epochs.json, else the per-user state directory): the Unix time in
    /// milliseconds or one above the session's last, so each run of `aep emit` into a
    /// session declares a new epoch (AEP-0001 §7.2)].
    #[arg(long, value_name = "N", requires = "event_type")]
    epoch: Option<u64>,
    /// Events per request (the relay's max-batch bounds it).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    batch: usize,
    /// How long a batch is retried while the relay is away before the run fails.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    give_up_after: u64,
    /// The longest line of the file, in bytes; a longer one is exit 6 with its line
    /// number [default: 16777216, the relay's default --max-body].
    #[arg(long, value_name = "BYTES")]
    max_line: Option<usize>,
}

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    if args.event_type.is_some() {
        return one(args).await;
    }
    let path = args.file.clone().unwrap_or_else(|| PathBuf::from("-"));
    let input = Input::open(&path)?.with_max_line(args.max_line.unwrap_or(input::MAX_LINE));
    crate::probe::discovery(&args.relay).await?;
    let reports = Arc::new(Reports::default());
    let give_up_after = Duration::from_secs(args.give_up_after);
    let sink = http_sink(&args.relay, args.batch, give_up_after, &reports)?;
    let bar = term::progress(input.len());
    let started = Instant::now();
    let (tx, mut rx) = mpsc::channel::<Result<Vec<(Event, u64)>, Failure>>(8);
    let reader = tokio::task::spawn_blocking(move || read(input, &tx));
    let mut sent = 0u64;
    let mut failure = None;
    'read: while let Some(chunk) = rx.recv().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(f) => {
                failure = Some(f);
                break;
            }
        };
        for (event, offset) in chunk {
            if let Err(e) = put(&sink, &event).await {
                failure = Some(stopped(&args.relay, &e));
                break 'read;
            }
            sent += 1;
            bar.set_position(offset);
        }
        bar.set_message(format!("{sent} events"));
        if let Err(f) = reports.check(&args.relay) {
            failure = Some(f);
            break;
        }
    }
    drop(rx);
    let _ = reader.await;
    crate::deliver::close(&sink, failure.is_some(), give_up_after).await;
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    let stats = sink.stats();
    let result = match failure {
        Some(f) => Err(f),
        None => reports.check(&args.relay).map(|()| Exit::Success),
    };
    if result.is_err() && stats.delivered > 0 {
        term::note(format!(
            "{} of {sent} events were delivered; emitting the file again is safe: the same \
             ids are a redelivery, deduplicated on (source, id) (AEP-0001 §7.4)",
            stats.delivered
        ));
    }
    let rate = sent as f64 / elapsed.as_secs_f64().max(1e-9);
    crate::term::print_json(&json!({
        "sent": sent,
        "delivered": stats.delivered,
        // refused, given up, or still queued when the run failed
        "lost": sent.saturating_sub(stats.delivered),
        "seconds": (elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
        "events_per_second": rate.round(),
    }));
    if result.is_ok() {
        term::note(format!(
            "sent {sent} events to {} in {:.2} s ({rate:.0} events/s)",
            args.relay.base(),
            elapsed.as_secs_f64()
        ));
    }
    result
}

/// Hands one event to the sink once it has room for it (AEP-0003 §8.4's "block", not
/// "drop"): a file faster than the relay waits here. Fails once the sink has delivered
/// nothing for `--give-up-after` while events wait (`Stalled`).
async fn put(sink: &aep::HttpSink, event: &Event) -> Result<(), aep::EmitError> {
    sink.reserve().await?;
    sink.accept_reserved(event)
}

/// Why the waiting path stopped, as one line.
fn stopped(relay: &RelayArgs, e: &aep::EmitError) -> Failure {
    match e {
        aep::EmitError::Stalled { idle } => Failure::relay(format!(
            "{}: the relay took nothing for {:.1} s while events waited: it is down or not \
             reading (--give-up-after sets how long to wait)",
            relay.base(),
            idle.as_secs_f64()
        )),
        other => Failure::relay(format!(
            "{}: delivery stopped: {}",
            relay.base(),
            describe(other)
        )),
    }
}

/// The reading thread: lines parsed into events, in chunks, with the byte offset of
/// each; the first line that is not an event ends it (exit 6).
fn read(input: Input, tx: &mpsc::Sender<Result<Vec<(Event, u64)>, Failure>>) {
    let name = input.name().to_owned();
    let mut chunk = Vec::with_capacity(512);
    for line in input.lines() {
        let parsed = line.and_then(|l| input::event(&name, &l).map(|e| (e, l.offset)));
        match parsed {
            Ok(item) => {
                chunk.push(item);
                if chunk.len() == 512 && tx.blocking_send(Ok(std::mem::take(&mut chunk))).is_err() {
                    return;
                }
            }
            Err(f) => {
                let _ = tx.blocking_send(Ok(std::mem::take(&mut chunk)));
                let _ = tx.blocking_send(Err(f));
                return;
            }
        }
    }
    if !chunk.is_empty() {
        let _ = tx.blocking_send(Ok(chunk));
    }
}

/// One event from flags.
async fn one(args: Args) -> Outcome {
    let Some(event_type) = args.event_type.as_deref() else {
        return Err(Failure::usage("--type is required for one event"));
    };
    // The SDK's one emit-scope rule, read before the relay is asked anything: a usage
    // error is the same with or without a relay.
    let scope = emit_scope(event_type).map_err(|e| Failure::usage(format!("--type: {e}")))?;
    match (scope, &args.session) {
        (EmitScope::Command, _) => {
            return Err(Failure::usage(format!(
                "{event_type} is a command: send it with `aep send`, which waits for its ack"
            )));
        }
        (EmitScope::Agent, Some(_)) => {
            return Err(Failure::usage(format!(
                "{event_type} is agent-scoped: it carries no --session (AEP-0001 §5.2)"
            )));
        }
        (EmitScope::Session, None) => {
            return Err(Failure::usage(format!(
                "{event_type} is session-scoped: give --session (AEP-0001 §5.2)"
            )));
        }
        (EmitScope::Agent | EmitScope::Session, _) => {}
        (_, _) => {
            return Err(Failure::usage(format!(
                "{event_type} is written by a consumer into another emitter's session, without seq (AEP-0001 §5.2): `aep emit` writes the sessions it owns"
            )));
        }
    }
    crate::probe::discovery(&args.relay).await?;
    let reports = Arc::new(Reports::default());
    let sink = http_sink(
        &args.relay,
        1,
        Duration::from_secs(args.give_up_after),
        &reports,
    )?;
    let builder = Emitter::builder(&args.agent, crate::host()).capture(Capture::Full);
    let builder = match args.epoch {
        Some(epoch) => builder.epoch(epoch),
        None => crate::epochs::from_store(builder),
    };
    let emitter = builder.build(sink);
    let mut opts = EmitOptions::new().capture(args.capture.unwrap_or(Capture::Metadata));
    if let Some(r) = &args.run {
        opts = opts.run(r);
    }
    if let Some(s) = &args.subject {
        opts = opts.subject(s);
    }
    if let Some(s) = args.severity {
        opts = opts.severity(s);
    }
    let data = args.data.clone().unwrap_or_else(|| json!({}));
    let emitted = match &args.session {
        Some(session) => emitter.session(session).emit_with(event_type, data, opts),
        None => emitter.emit_with(event_type, data, opts),
    };
    let event = emitted.map_err(|e| Failure::usage(format!("not emitted: {e}")))?;
    emitter.close().await;
    reports.check(&args.relay)?;
    crate::term::print_json(&serde_json::from_str(&event.to_json()).unwrap_or(Value::Null));
    Ok(Exit::Success)
}
