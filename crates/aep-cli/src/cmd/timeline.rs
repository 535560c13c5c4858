//! `aep timeline SESSION`: one session in `(epoch, seq)` order, or as its `cause` tree.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;

use aep::protocol::Event;
use serde_json::{json, Value};

use crate::args::{Format, RelayArgs};
use crate::exit::{Exit, Outcome};
use crate::render;

/// One session, in `(epoch, seq)` order (AEP-0001 §7), deduplicated on `(source, id)`.
///
/// Reads `--file` (a capture, an adapter's log; `-` for stdin), or else the relay's
/// history of the session (`live=0`). With `--dag`, the events form the tree of their
/// `cause` links (AEP-0001 §5.1): an event whose cause is not in the session is a root.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session.
    #[arg(value_name = "SESSION")]
    session: String,
    /// A JSONL file of events; `-` reads stdin [default: the relay's history].
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    #[command(flatten)]
    relay: RelayArgs,
    /// Show the `cause` tree instead of a flat list.
    #[arg(long)]
    dag: bool,
    /// `json` (one event per line; with --dag, `{"depth", "parent", "event"}` per line in
    /// tree order), or `text` [default: text on a terminal, json otherwise].
    #[arg(long, value_enum)]
    format: Option<Format>,
}

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    let filter = json!({"session": args.session});
    let events = crate::source::events(args.file.as_deref(), &args.relay, filter).await?;
    let mut seen = HashSet::new();
    let mut events: Vec<Event> = events
        .into_iter()
        .filter(|e| e.session() == Some(args.session.as_str()))
        .filter(|e| seen.insert((e.source().to_owned(), e.id().to_owned())))
        .collect();
    // stable: events without a position keep their order among equals
    events.sort_by_key(|e| (e.epoch(), e.seq().unwrap_or(u64::MAX)));
    if events.is_empty() {
        crate::term::note(format!("no events of session {}", args.session));
        return Ok(Exit::Success);
    }
    let format = Format::or_default(args.format);
    let mut out = anstream::stdout();
    let text = match (args.dag, format) {
        (false, Format::Json) => events.iter().map(|e| e.to_json() + "\n").collect(),
        (false, Format::Text) => events
            .iter()
            .map(|e| render::event_line(e) + "\n")
            .collect(),
        (true, Format::Json) => Forest::new(&events).to_json_lines(&events),
        (true, Format::Text) => Forest::new(&events).render(&events),
    };
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(Exit::Success)
}

/// Levels of the `--dag` tree drawn with guides; deeper ones are drawn at this depth.
const MAX_DRAWN: usize = 48;

/// The `cause` links of a session as a forest over indices of the sorted events. Built
/// and walked without recursion, so a hostile chain a million links deep, or a cycle,
/// is drawn rather than overflowing the stack.
struct Forest {
    roots: Vec<usize>,
    children: Vec<Vec<usize>>,
}

impl Forest {
    fn new(events: &[Event]) -> Forest {
        let index: HashMap<&str, usize> = events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id(), i))
            .collect();
        let mut children = vec![Vec::new(); events.len()];
        let mut roots = Vec::new();
        for (i, e) in events.iter().enumerate() {
            match e.cause().and_then(|c| index.get(c)) {
                Some(&parent) if parent != i => children[parent].push(i),
                _ => roots.push(i),
            }
        }
        let mut forest = Forest { roots, children };
        // a cycle has no root: what no root reaches becomes one
        let mut reached = vec![false; events.len()];
        forest.walk_from(&forest.roots.clone(), &mut reached, |_, _, _, _| {});
        for i in 0..events.len() {
            if !reached[i] {
                forest.roots.push(i);
                forest.walk_from(&[i], &mut reached, |_, _, _, _| {});
            }
        }
        forest
    }

    /// Depth-first from every root; `visit(index, depth, ancestors_last, is_last)` once
    /// per node (`ancestors_last` holds at most `MAX_DRAWN` flags).
    fn walk(&self, visit: impl FnMut(usize, usize, &[bool], bool)) {
        let mut reached = vec![false; self.children.len()];
        self.walk_from(&self.roots, &mut reached, visit);
    }

    /// Depth-first from `roots`, skipping (and marking) what `reached` holds.
    fn walk_from(
        &self,
        roots: &[usize],
        reached: &mut [bool],
        mut visit: impl FnMut(usize, usize, &[bool], bool),
    ) {
        // (node, depth, ancestors' "was last" flags, is last)
        let mut stack: Vec<(usize, usize, Vec<bool>, bool)> = Vec::new();
        for (n, &root) in roots.iter().enumerate().rev() {
            stack.push((root, 0, Vec::new(), n + 1 == roots.len()));
        }
        while let Some((node, depth, lasts, last)) = stack.pop() {
            if std::mem::replace(&mut reached[node], true) {
                continue;
            }
            visit(node, depth, &lasts, last);
            // drawing needs the ancestors' flags; past MAX_DRAWN levels the picture is
            // cut, so a chain a million deep costs a million short lines, not a square
            let mut below = lasts.clone();
            if below.len() < MAX_DRAWN {
                below.push(last);
            }
            let kids = &self.children[node];
            for (n, &child) in kids.iter().enumerate().rev() {
                stack.push((child, depth + 1, below.clone(), n + 1 == kids.len()));
            }
        }
    }

    fn render(&self, events: &[Event]) -> String {
        let mut out = String::new();
        self.walk(|i, _, lasts, last| {
            if !lasts.is_empty() {
                for &ancestor_last in &lasts[1..] {
                    out.push_str(if ancestor_last { "   " } else { "│  " });
                }
                out.push_str(if last { "└─ " } else { "├─ " });
            }
            out.push_str(&render::event_line(&events[i]));
            out.push('\n');
        });
        out
    }

    /// One line per event in tree order: `{"depth": D, "parent": ID|null, "event": E}`.
    /// Flat on purpose: a nested document as deep as a hostile chain would be as costly
    /// to write and to read as it is deep.
    fn to_json_lines(&self, events: &[Event]) -> String {
        let mut out = String::new();
        self.walk(|i, depth, _, _| {
            let e = &events[i];
            let parent = e.cause().filter(|_| depth > 0);
            let event: Value = serde_json::from_str(&e.to_json()).unwrap_or(Value::Null);
            out.push_str(&json!({"depth": depth, "parent": parent, "event": event}).to_string());
            out.push('\n');
        });
        out
    }
}
