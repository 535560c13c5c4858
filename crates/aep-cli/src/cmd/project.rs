//! `aep project`: the state of every session, folded from events (aep-core's
//! `project_state`, the same JSON as the Python and TypeScript SDKs).

use std::io::Write;
use std::path::PathBuf;

use aep::protocol::projection::{project_state, ProjectedState};
use serde_json::Value;

use crate::args::Format;
use crate::exit::{Exit, Outcome};
use crate::filter::SourceArgs;
use crate::render::table;

/// Fold events into per-session state: agent, start and end, position, runs and their
/// status, pending attention requests, and the violations the fold found.
///
/// Reads FILE (`-` for stdin), or else one history pass over the relay at `--url`.
/// Prints the JSON of `project_state` (the Python and TypeScript SDKs' shape), or tables
/// on a terminal.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A JSONL file of events; `-` reads stdin [default: the relay's history].
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    #[command(flatten)]
    source: SourceArgs,
    /// `json`, or `text` tables [default: text on a terminal, json otherwise].
    #[arg(long, value_enum)]
    format: Option<Format>,
}

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    let filter = args.source.filter.build()?;
    let events =
        crate::source::events(args.file.as_deref(), &args.source.relay, filter.clone()).await?;
    // a file is filtered here, as the relay filters its history
    let wire =
        aep::protocol::Filter::from_value(&filter).unwrap_or_else(|_| aep::protocol::Filter::all());
    let kept: Vec<_> = events.iter().filter(|e| wire.matches(e)).collect();
    let state = project_state(kept);
    match Format::or_default(args.format) {
        Format::Json => {
            let value = serde_json::to_value(&state).unwrap_or(Value::Null);
            crate::term::print_json_pretty(&value);
        }
        Format::Text => {
            let mut out = anstream::stdout();
            let _ = out.write_all(tables(&state).as_bytes());
        }
    }
    Ok(Exit::Success)
}

fn or_dash(v: Option<&str>) -> String {
    v.map(|s| crate::render::clock(s).to_owned())
        .unwrap_or_else(|| "-".into())
}

/// Sessions, runs, pending attention and violations, each a table.
fn tables(state: &ProjectedState) -> String {
    let sessions: Vec<Vec<String>> = state
        .sessions()
        .iter()
        .map(|s| {
            vec![
                s.session().to_owned(),
                s.agent().to_owned(),
                or_dash(s.started()),
                or_dash(s.ended()),
                s.position()
                    .map(|p| format!("{}:{}", p.epoch(), p.seq()))
                    .unwrap_or_else(|| "-".into()),
                s.runs().len().to_string(),
                s.pending().len().to_string(),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "SESSION", "AGENT", "STARTED", "ENDED", "AT", "RUNS", "PENDING",
        ],
        &sessions,
    );
    let runs: Vec<Vec<String>> = state
        .sessions()
        .iter()
        .flat_map(|s| {
            s.runs().iter().map(move |r| {
                let status = serde_json::to_value(r.status())
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                vec![
                    s.session().to_owned(),
                    r.run().to_owned(),
                    status,
                    or_dash(r.started()),
                    or_dash(r.ended()),
                ]
            })
        })
        .collect();
    if !runs.is_empty() {
        out.push('\n');
        out.push_str(&table(
            &["SESSION", "RUN", "STATUS", "STARTED", "ENDED"],
            &runs,
        ));
    }
    let pending: Vec<Vec<String>> = state
        .sessions()
        .iter()
        .flat_map(|s| {
            s.pending().iter().map(move |p| {
                vec![
                    s.session().to_owned(),
                    p.id().to_owned(),
                    p.kind().unwrap_or("-").to_owned(),
                    or_dash(Some(p.since())),
                ]
            })
        })
        .collect();
    if !pending.is_empty() {
        out.push('\n');
        out.push_str(&table(
            &["SESSION", "PENDING REQUEST", "KIND", "SINCE"],
            &pending,
        ));
    }
    if !state.violations().is_empty() {
        out.push('\n');
        let rows: Vec<Vec<String>> = state
            .violations()
            .iter()
            .map(|v| {
                let detail = serde_json::to_value(v)
                    .ok()
                    .and_then(|v| v.as_object().cloned())
                    .map(|m| {
                        m.iter()
                            .filter(|(k, _)| k.as_str() != "rule")
                            .map(|(k, v)| {
                                format!(
                                    "{k}={}",
                                    v.as_str()
                                        .map(str::to_owned)
                                        .unwrap_or_else(|| v.to_string())
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                vec![v.rule().to_owned(), detail]
            })
            .collect();
        out.push_str(&table(&["VIOLATION", "WHERE"], &rows));
    }
    out
}
