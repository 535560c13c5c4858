//! `aep tail`: follow a relay, resuming where the last run stopped.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use aep::protocol::{Capture, Event};
use aep::{Notice, SubscribeOptions, TransportErrorKind};
use futures::{FutureExt, StreamExt};
use tokio::time::Instant;

use crate::args::{Format, RelayArgs};
use crate::exit::{describe, Exit, Failure, Outcome};
use crate::filter::FilterArgs;
use crate::render;
use crate::state::StateFile;
use crate::term;

/// Follow the events of a relay (SSE or WebSocket), resuming where the last run stopped.
///
/// Resume positions (per session, `(epoch, seq)`) are saved in a state file as events
/// arrive and on exit, and sent on the next start, so a restarted tail misses nothing
/// the relay still holds; a `replay-exhausted` warning says when it no longer does.
/// Output is one JSON event per line, or a timeline on a terminal.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    relay: RelayArgs,
    #[command(flatten)]
    filter: FilterArgs,
    /// `all`: replay everything the relay holds first; the saved state is ignored and
    /// this run's positions replace it.
    #[arg(long, value_name = "all", value_parser = ["all"])]
    from: Option<String>,
    /// One pass over the relay's history (SSE `live=0`): exit at `replay-complete`.
    #[arg(long)]
    history: bool,
    /// The resume state file [default: DATA_DIR/aep/tail-state.json].
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Neither read nor write resume state.
    #[arg(long, conflicts_with = "state")]
    no_resume: bool,
    /// The binding to subscribe over.
    #[arg(long, value_enum, default_value_t = TransportArg::Sse)]
    transport: TransportArg,
    /// `json`: one event per line; `text`: a timeline [default: text on a terminal,
    /// json otherwise].
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// A capture ceiling: the relay down-levels events above it (AEP-0003 §6.4).
    #[arg(long, value_name = "LEVEL")]
    capture: Option<Capture>,
}

/// The bindings `--transport` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportArg {
    /// Server-Sent Events, `GET /stream`.
    Sse,
    /// WebSocket, `/socket`.
    Ws,
}

impl From<TransportArg> for aep::Transport {
    fn from(t: TransportArg) -> aep::Transport {
        match t {
            TransportArg::Sse => aep::Transport::Sse,
            TransportArg::Ws => aep::Transport::WebSocket,
        }
    }
}

/// How often, at most, the state file is rewritten while events flow.
const SAVE_EVERY: Duration = Duration::from_millis(250);

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    let filter = args.filter.build()?;
    if args.history && args.transport == TransportArg::Ws {
        return Err(Failure::usage(
            "--history needs --transport sse: only SSE has a history-only pass (live=0)",
        ));
    }
    let state = match (&args.state, args.no_resume) {
        (_, true) => None,
        (Some(path), false) => Some(StateFile::new(path)),
        (None, false) => StateFile::default_path("tail-state.json").map(StateFile::new),
    };
    let mut opts = SubscribeOptions::new()
        .filter(filter)
        .transport(args.transport.into());
    if let Some(t) = args.relay.token() {
        opts = opts.token(t);
    }
    if let Some(c) = args.capture {
        opts = opts.capture(c);
    }
    if args.from.is_some() {
        opts = opts.from_all();
    } else if let Some(state) = &state {
        let saved = state.load()?;
        if !saved.is_empty() {
            opts = opts.from_positions(saved);
        }
    }
    if args.history {
        opts = opts.history_only();
    }
    let (notices, mut notice_rx) = tokio::sync::mpsc::unbounded_channel();
    opts = opts.on_notice(move |n| {
        let _ = notices.send(n);
    });
    let mut out = Output::new(Format::or_default(args.format));
    let mut watch = Watch::new(args.relay.base());
    let mut sub = aep::subscribe(args.relay.base(), opts);
    let mut save_at: Option<Instant> = None;
    let shutdown = crate::signal::shutdown();
    tokio::pin!(shutdown);
    let failure = loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break None,
            Some(notice) = notice_rx.recv() => {
                if let Some(f) = watch.notice(notice) {
                    break Some(f);
                }
            }
            event = sub.next() => {
                let Some(event) = event else { break None };
                let mut open = out.event(&event);
                // take what is ready too, then flush once
                for _ in 0..1024 {
                    match sub.next().now_or_never() {
                        Some(Some(e)) if open => open = out.event(&e),
                        _ => break,
                    }
                }
                if !(open && out.flush()) {
                    break None; // stdout closed: the reader is gone
                }
                save_at.get_or_insert_with(|| Instant::now() + SAVE_EVERY);
            }
            () = sleep_until(save_at) => {
                save_at = None;
                if let Some(state) = &state {
                    save(state, &sub);
                }
            }
        }
    };
    sub.close();
    while let Ok(notice) = notice_rx.try_recv() {
        if let Some(f) = watch.notice(notice) {
            return finish(state.as_ref(), &sub, Err(f));
        }
    }
    let result = match failure {
        Some(f) => Err(f),
        None if args.history && !watch.complete => Err(watch.unfinished()),
        None => Ok(Exit::Success),
    };
    finish(state.as_ref(), &sub, result)
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn save(state: &StateFile, sub: &aep::Subscription) {
    if let Err(e) = state.save(&sub.positions()) {
        term::warn(format!(
            "cannot save the resume state to {}: {e}",
            state.path().display()
        ));
    }
}

fn finish(state: Option<&StateFile>, sub: &aep::Subscription, result: Outcome) -> Outcome {
    if let Some(state) = state {
        save(state, sub);
    }
    result
}

/// What the notices of a subscription say about the relay.
#[derive(Debug)]
pub struct Watch {
    url: String,
    /// A connection has been established once.
    pub connected: bool,
    /// The history pass reached `replay-complete`.
    pub complete: bool,
    last_error: Option<String>,
}

impl Watch {
    /// Watching the subscription to `url`.
    pub fn new(url: &str) -> Watch {
        Watch {
            url: url.to_owned(),
            connected: false,
            complete: false,
            last_error: None,
        }
    }

    /// Reports a notice; a relay that is unreachable before the first connection, or
    /// that refuses the token at any time, ends the run (exit 5).
    pub fn notice(&mut self, notice: Notice) -> Option<Failure> {
        match notice {
            Notice::Connected { .. } => self.connected = true,
            Notice::ReplayComplete => self.complete = true,
            Notice::ReplayExhausted { session, earliest } => term::warn(format!(
                "replay-exhausted: the relay no longer holds session {session} before ({}, {}); the events in between are gone from it, consult a durable capture (aep sink)",
                earliest.epoch(),
                earliest.seq()
            )),
            Notice::Error(e) => {
                let refused = matches!(e.kind(), TransportErrorKind::Http { status } if status == 401 || status == 403);
                let text = describe(&e);
                if refused {
                    return Some(Failure::relay(format!(
                        "the relay at {} refused the token ({text}); pass --token or set AEP_TOKEN",
                        self.url
                    )));
                }
                if matches!(e.kind(), TransportErrorKind::Parse) {
                    term::warn(format!("dropped a payload that is not an event: {text}"));
                } else if !self.connected {
                    return Some(Failure::relay(format!(
                        "cannot subscribe at {}: {text}",
                        self.url
                    )));
                } else {
                    term::warn(format!("connection to {} lost ({text}); resuming", self.url));
                }
                self.last_error = Some(text);
            }
            Notice::Refused { code, detail } => {
                return Some(Failure::relay(format!(
                    "the relay at {} refused the subscription: {code}{}",
                    self.url,
                    detail.map(|d| format!(": {d}")).unwrap_or_default()
                )))
            }
            Notice::AllRefused => {
                term::warn("the relay does not replay everything (from=all); following live only")
            }
            Notice::ResumeShrunk { cap } => term::warn(format!(
                "the relay refused the resume set; resuming the {cap} most recent sessions"
            )),
            Notice::Closing { reason } => term::note(format!("the relay is closing: {reason}")),
            _ => {}
        }
        None
    }

    /// A history pass that ended without `replay-complete`.
    pub fn unfinished(&self) -> Failure {
        Failure::relay(format!(
            "the history pass at {} ended before replay-complete{}",
            self.url,
            self.last_error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ))
    }
}

/// Where events go: JSON lines, or the timeline.
enum Output {
    Json(std::io::BufWriter<std::io::Stdout>),
    Text(anstream::AutoStream<std::io::Stdout>),
}

impl Output {
    fn new(format: Format) -> Output {
        match format {
            Format::Json => Output::Json(std::io::BufWriter::with_capacity(
                1 << 16,
                std::io::stdout(),
            )),
            Format::Text => Output::Text(anstream::stdout()),
        }
    }

    /// Writes one event; false once stdout is closed.
    fn event(&mut self, e: &Event) -> bool {
        match self {
            Output::Json(w) => writeln!(w, "{}", e.to_json()).is_ok(),
            Output::Text(w) => writeln!(w, "{}", render::event_line(e)).is_ok(),
        }
    }

    fn flush(&mut self) -> bool {
        match self {
            Output::Json(w) => w.flush().is_ok(),
            Output::Text(w) => w.flush().is_ok(),
        }
    }
}
