//! `aep project`: the state of every session, folded from events (aep-core's
//! `project_state`, the same JSON as the Python and TypeScript SDKs).

use std::io::Write;
use std::path::PathBuf;

use aep::protocol::projection::{project_state, ProjectedSession, ProjectedState};
use serde_json::Value;

use crate::args::Format;
use crate::exit::{Exit, Outcome};
use crate::filter::SourceArgs;
use crate::render::table;

/// Fold events into per-session state: agent, status, start and end, position, last
/// activity, runs and their status, tool calls with their duration and the requests
/// that gated them, pending attention requests with their question, and the violations
/// the fold found.
///
/// Reads FILE (`-` for stdin), or else one history pass over the relay at `--url`.
/// Prints the JSON of `project_state` (the Python and TypeScript SDKs' shape; `--detail`
/// adds the supervisor's members), or tables on a terminal.
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
    /// JSON with the supervisor's members: each session's `status`, `last_activity`,
    /// `tools` and `claim`, each pending request's prompt, options, fields,
    /// `respond_via`, subject and deadline [default: the SDKs' shape].
    #[arg(long)]
    detail: bool,
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
            let value = if args.detail {
                serde_json::to_value(state.detailed())
            } else {
                serde_json::to_value(&state)
            }
            .unwrap_or(Value::Null);
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

/// A row for each item `items` gives of every session: the session, then `row(item)`.
fn per_session<T>(
    state: &ProjectedState,
    items: impl Fn(&ProjectedSession) -> &[T],
    row: impl Fn(&T) -> Vec<String>,
) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for s in state.sessions() {
        for item in items(s) {
            let mut cells = vec![s.session().to_owned()];
            cells.extend(row(item));
            rows.push(cells);
        }
    }
    rows
}

/// Appends a table of `rows` after a blank line, when there are any.
fn more_table(out: &mut String, headers: &[&str], rows: &[Vec<String>]) {
    if !rows.is_empty() {
        out.push('\n');
        out.push_str(&table(headers, rows));
    }
}

/// The wire spelling of a serde enum (a status), or empty.
fn spelled(value: impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Sessions, runs, tool calls, pending attention and violations, each a table.
fn tables(state: &ProjectedState) -> String {
    let sessions: Vec<Vec<String>> = state
        .sessions()
        .iter()
        .map(|s| {
            let last = s
                .last_activity()
                .map(|a| format!("{} {}", crate::render::clock(a.time()), a.event_type()))
                .unwrap_or_else(|| "-".into());
            vec![
                s.session().to_owned(),
                s.agent().to_owned(),
                spelled(s.status()),
                or_dash(s.started()),
                or_dash(s.ended()),
                s.position()
                    .map(|p| format!("{}:{}", p.epoch(), p.seq()))
                    .unwrap_or_else(|| "-".into()),
                last,
                s.runs().len().to_string(),
                s.pending().len().to_string(),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "SESSION", "AGENT", "STATUS", "STARTED", "ENDED", "AT", "LAST", "RUNS", "PENDING",
        ],
        &sessions,
    );
    let runs = per_session(state, ProjectedSession::runs, |r| {
        let status = serde_json::to_value(r.status())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        vec![
            r.run().to_owned(),
            status,
            or_dash(r.started()),
            or_dash(r.ended()),
        ]
    });
    more_table(
        &mut out,
        &["SESSION", "RUN", "STATUS", "STARTED", "ENDED"],
        &runs,
    );
    let tools = per_session(state, ProjectedSession::tools, |t| {
        vec![
            t.call().to_owned(),
            t.name().to_owned(),
            spelled(t.status()),
            t.duration_ms()
                .map(|ms| format!("{ms} ms"))
                .unwrap_or_else(|| "-".into()),
            if t.gated_by().is_empty() {
                "-".into()
            } else {
                t.gated_by().join(",")
            },
        ]
    });
    more_table(
        &mut out,
        &[
            "SESSION",
            "TOOL CALL",
            "NAME",
            "STATUS",
            "DURATION",
            "GATED BY",
        ],
        &tools,
    );
    let pending = per_session(state, ProjectedSession::pending, |p| {
        let ask = p.request();
        let answers: Vec<&str> = if ask.fields().is_empty() {
            ask.options().iter().map(|o| o.id.as_str()).collect()
        } else {
            ask.fields().iter().map(|f| f.id.as_str()).collect()
        };
        vec![
            p.id().to_owned(),
            p.kind().unwrap_or("-").to_owned(),
            or_dash(Some(p.since())),
            ask.prompt().unwrap_or("-").to_owned(),
            if answers.is_empty() {
                "-".into()
            } else {
                answers.join(",")
            },
            if ask.answerable() { "control" } else { "oob" }.to_owned(),
            or_dash(ask.expires_at()),
        ]
    });
    more_table(
        &mut out,
        &[
            "SESSION",
            "PENDING REQUEST",
            "KIND",
            "SINCE",
            "PROMPT",
            "ANSWERS",
            "VIA",
            "EXPIRES",
        ],
        &pending,
    );
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
