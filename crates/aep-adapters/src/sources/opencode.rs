//! OpenCode moments (AEP-0002 Annex A.7): the plugin bus and the interception hooks,
//! and the OpenCode SSE channel ([`sse`]).
//!
//! Identity: the bus `sessionID` (or `info.id` on the session's own events) is the AEP
//! session; runs are synthesized by the session runtime on OpenCode's own boundaries
//! (the first user `message.updated` opens one unless one is open, `session.idle`
//! closes it); `callID` pairs the tool events.
//!
//! | moment | event |
//! |---|---|
//! | `session.created` | `session.started` (`client` name and version; a child names its `parent`) |
//! | `session.deleted` / `session.idle` / `session.compacted` | `session.ended` / `run.finished` / `session.compacted` |
//! | `session.status` | `progress.status`, subject the status type |
//! | `session.error` | `x.opencode.session.error` at `error` severity |
//! | `message.updated` | a user message: `run.started`; any other: `x.opencode.message.updated` (token counts) |
//! | `tool.execute.before` / `.after` | `tool.requested` / `tool.completed` |
//! | `permission.ask` (the held hook) | `attention.requested(kind: permission)`, Allow/Deny over control |
//! | bus `permission.updated` | nothing (the held hook carries it) |
//! | bus `permission.replied` | `attention.resolved(answered)` |
//! | `todo.updated` | nothing here: the runtime diffs snapshots into `progress.task.*` ([`diff_todos`]) |
//! | `file.edited`, `command.executed`, `server.connected`, anything else | `x.opencode.{bus type}` at `debug` |
//!
//! Deviations: no `tool.failed` on this surface (the typed hooks expose no error;
//! failures ride `x.opencode.session.error`); compaction is the vendor's post moment.

use serde_json::Value;

use super::bus::Bus;
use crate::channel::ChannelMode;
use crate::draft::Draft;

/// The vendor token.
pub const VENDOR: &str = "opencode";

const BUS: Bus = Bus {
    vendor: VENDOR,
    asks: false,
};

/// Maps one OpenCode plugin moment (`{kind: "bus", event}`, `{kind: "tool.before"}`,
/// `{kind: "tool.after"}`, `{kind: "permission.ask"}`).
///
/// ```
/// use serde_json::json;
/// let m = json!({"kind": "bus", "event": {"type": "session.idle", "properties": {"sessionID": "s"}}});
/// assert_eq!(aep_adapters::sources::opencode::map(&m)[0].event_type(), "run.finished");
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    BUS.map(p)
}

/// Maps one bus event of the OpenCode SSE channel (`GET /event`) in `mode`: companion
/// emits only `x.opencode.*` (the plugin adapter is the core-type authority); primary
/// the full bus mapping, its permission card without options or `respond_via` (nothing
/// answers through this channel).
///
/// ```
/// use aep_adapters::{sources::opencode::sse, ChannelMode};
/// use serde_json::json;
/// let e = json!({"type": "session.idle", "properties": {"sessionID": "s"}});
/// assert_eq!(sse(&e, ChannelMode::Companion)[0].event_type(), "x.opencode.session.idle");
/// ```
pub fn sse(event: &Value, mode: ChannelMode) -> Vec<Draft> {
    BUS.event(event, mode, false).into_iter().collect()
}

/// The `progress.task.*` transitions between two todo snapshots (`todo.updated`'s
/// `properties.todos`): new ids planned, moves to `completed` completed.
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::opencode::diff_todos(&json!([]), &json!([{"id": "t", "status": "completed"}]));
/// assert_eq!(d.len(), 2);
/// ```
pub fn diff_todos(prev: &Value, next: &Value) -> Vec<Draft> {
    super::bus::diff_todos(prev, next)
}
