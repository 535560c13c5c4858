//! One session's timeline as a supervisor reads it: its events in `(epoch, seq)` order
//! (AEP-0001 §7 rule 3), each placed in its run and tool call, with the gaps between
//! positions said (rule 2: gaps are legal, and a reader is told of them).
//!
//! The tool call an event belongs to is decided by the same rule the fold pairs calls
//! with ([`ProjectedTool::call`](super::ProjectedTool::call)).

use serde::Serialize;

use super::supervise::ToolCalls;
use crate::resume::Position;
use crate::Event;

/// Places the events of one session, fed in `(epoch, seq)` order.
///
/// ```
/// use aep_core::{projection::{Placed, Timeline}, Event};
/// use serde_json::json;
///
/// let ev = |id: &str, ty: &str, seq| Event::new(id, ty, "t", "aep://h", "a")
///     .with_session("s").with_seq(seq).with_run("r1")
///     .with_data(json!({"tool": {"name": "Read", "call_id": "c7"}}));
/// let mut timeline = Timeline::new();
/// let first = timeline.place(&ev("1", "tool.requested", 0));
/// let second = timeline.place(&ev("2", "tool.completed", 4));
/// assert_eq!(first.tool(), Some("c7"));
/// assert_eq!((second.run(), second.tool()), (Some("r1"), Some("c7")));
/// assert_eq!(second.gap(), Some((1, 3))); // seq 1 to 3 never arrived
/// ```
#[derive(Debug, Default)]
pub struct Timeline {
    tools: ToolCalls,
    last: Option<Position>,
}

/// Where one event sits in its session's timeline ([`Timeline::place`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placed {
    run: Option<String>,
    tool: Option<String>,
    gap: Option<(u64, u64)>,
}

impl Placed {
    /// The `run` it belongs to.
    pub fn run(&self) -> Option<&str> {
        self.run.as_deref()
    }

    /// The key of the tool call it belongs to, for `tool.*` events.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The `seq` range (first, last, inclusive) of its epoch that never arrived between
    /// the previous event and this one.
    pub fn gap(&self) -> Option<(u64, u64)> {
        self.gap
    }
}

impl Timeline {
    /// An empty timeline.
    pub fn new() -> Timeline {
        Timeline::default()
    }

    /// Places the next event of the session (fed in `(epoch, seq)` order).
    pub fn place(&mut self, event: &Event) -> Placed {
        let ty = event.event_type();
        let tool = if let Some(rest) = ty.strip_prefix("tool.") {
            let terminal = rest != "requested";
            Some(self.tools.key_of(event, terminal).to_string())
        } else {
            None
        };
        let position = Position::of(event);
        let gap = match (self.last, position) {
            (Some(last), Some(now))
                if last.epoch() == now.epoch() && now.seq() > last.seq().saturating_add(1) =>
            {
                Some((last.seq() + 1, now.seq() - 1))
            }
            _ => None,
        };
        if position.is_some() {
            self.last = position;
        }
        Placed {
            run: event.run().map(str::to_owned),
            tool,
            gap,
        }
    }
}
