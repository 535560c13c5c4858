//! `aep tail`: follow a relay, resuming where the last run stopped.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use aep::protocol::{Capture, Event};
use aep::SubscribeOptions;

use crate::args::Format;
use crate::exit::{Exit, Failure, Outcome};
use crate::filter::SourceArgs;
use crate::follow::{Follow, Step};
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
    source: SourceArgs,
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

/// How a tail whose state file cannot be used starts over.
const START_OVER: &str = "remove it or pass --no-resume";

/// How often, at most, the state file is rewritten while events flow.
const SAVE_EVERY: Duration = Duration::from_millis(250);

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    let filter = args.source.filter.build()?;
    if args.history && args.transport == TransportArg::Ws {
        return Err(Failure::usage(
            "--history needs --transport sse: only SSE has a history-only pass (live=0)",
        ));
    }
    let state = match (&args.state, args.no_resume) {
        (_, true) => None,
        (Some(path), false) => Some(StateFile::new(path, START_OVER)),
        (None, false) => {
            StateFile::default_path("tail-state.json").map(|p| StateFile::new(p, START_OVER))
        }
    };
    let mut opts = SubscribeOptions::new()
        .filter(filter)
        .transport(args.transport.into());
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
    let mut out = Output::new(Format::or_default(args.format));
    let mut follow = Follow::start(&args.source.relay, opts);
    let failure = loop {
        match follow.next().await {
            Step::End(failure) => break failure,
            Step::Event(event) => {
                let mut open = out.event(&event);
                // take what is ready too, then flush once
                for _ in 0..1024 {
                    match follow.ready() {
                        Some(e) if open => open = out.event(&e),
                        _ => break,
                    }
                }
                if !(open && out.flush()) {
                    break None; // stdout closed: the reader is gone
                }
                follow.due_in(SAVE_EVERY);
            }
            Step::Due => {
                if let Some(state) = &state {
                    save(state, follow.subscription());
                }
            }
        }
    };
    let result = match follow.close().or(failure) {
        Some(f) => Err(f),
        None if args.history && !follow.watch.complete => Err(follow.watch.unfinished()),
        None => Ok(Exit::Success),
    };
    finish(state.as_ref(), follow.subscription(), result)
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
