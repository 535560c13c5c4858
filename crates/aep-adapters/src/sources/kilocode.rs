//! Kilo Code moments (AEP-0002 Annex A.8): the OpenCode fork, its table carried whole
//! on its own identity (`x.kilocode.*`, client `kilocode`), and its SSE channel
//! ([`sse`]).
//!
//! Everything [`super::opencode`] documents holds here. The permission surface is
//! dual, where the fork diverged at runtime:
//! - `<=7.4.5`: the held `permission.ask` hook over control, bus `permission.updated`
//!   silent;
//! - `>=7.4.6`: bus `permission.asked` → `attention.requested(kind: permission)` with
//!   the vendor's own reply enum as options (`once`, `always`, `reject`), answers
//!   delivered over the server's reply route; `question.asked` → `kind: form` on the
//!   `AskUserQuestion` shape (`custom` → `other`); `permission.replied` and
//!   `question.replied` → `attention.resolved(answered)`.

use serde_json::Value;

use super::bus::Bus;
use crate::channel::ChannelMode;
use crate::draft::Draft;

/// The vendor token.
pub const VENDOR: &str = "kilocode";

const BUS: Bus = Bus {
    vendor: VENDOR,
    asks: true,
};

/// Maps one Kilo Code plugin moment.
///
/// ```
/// use serde_json::json;
/// let m = json!({"kind": "bus", "event": {"type": "question.replied", "properties": {"requestID": "q1"}}});
/// assert_eq!(aep_adapters::sources::kilocode::map(&m)[0].event_type(), "attention.resolved");
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    BUS.map(p)
}

/// Maps one bus event of the Kilo Code SSE channel in `mode` (every ask without its
/// answer affordances: a form's fields stay, the question is the observation).
///
/// ```
/// use aep_adapters::{sources::kilocode::sse, ChannelMode};
/// use serde_json::json;
/// let e = json!({"type": "permission.asked", "properties": {"id": "p", "type": "bash", "sessionID": "s"}});
/// let d = sse(&e, ChannelMode::Primary);
/// assert!(d[0].get("options").is_none());
/// ```
pub fn sse(event: &Value, mode: ChannelMode) -> Vec<Draft> {
    BUS.event(event, mode, false).into_iter().collect()
}

/// The `progress.task.*` transitions between two todo snapshots (as OpenCode's).
///
/// ```
/// use serde_json::json;
/// assert!(aep_adapters::sources::kilocode::diff_todos(&json!([]), &json!([])).is_empty());
/// ```
pub fn diff_todos(prev: &Value, next: &Value) -> Vec<Draft> {
    super::bus::diff_todos(prev, next)
}
