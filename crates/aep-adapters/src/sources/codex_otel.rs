//! The Codex OTel channel (AEP-0002 Annex A.2): Codex's telemetry LogRecords, received
//! by an OTLP-inbound sidecar, read over flattened attributes, in two modes.
//!
//! Identity: `conversation.id` is the AEP session; no run is synthesized (an async
//! export pipeline cannot pair run boundaries honestly).
//!
//! | record (`event.name`) | companion | primary |
//! |---|---|---|
//! | `codex.conversation_starts` | `x.codex.otel.conversation_starts` (model, policies) | `session.started` (client, model) |
//! | `codex.user_prompt` | `x.codex.otel.user_prompt` (length; the prompt as content) | the same |
//! | `codex.tool_decision` | `x.codex.otel.tool_decision` | a `deny` from `config` → `tool.denied` by `policy`, from automation by `runtime`; a user's deny: nothing (a human decision, not a policy block); any other decision: the companion shape |
//! | `codex.tool_result` | `x.codex.otel.tool_result` (the error as content) | `tool.completed` (`duration_ms`) / `tool.failed` (`tool_error`: the channel carries free text, not a taxonomy) |
//! | `codex.api_request`, `codex.sse_event`, `codex.websocket_event` | `x.codex.otel.*` | the same (transport internals stay vendor-namespaced) |
//! | anything else | `x.codex.otel.unknown` (`event.name`) | the same |
//!
//! Companion mode never emits a core type: the hook adapter is the only core-type
//! authority when both run.

use serde_json::{json, Value};

use super::otel::Record;
use crate::channel::ChannelMode;
use crate::draft::Draft;
use crate::family::{self, tool};
use crate::json::{num, s};

/// The vendor token.
pub const VENDOR: &str = "codex";

const IDENTITY: [&str; 4] = ["conversation.id", "app.version", "originator", "event.name"];
const CONTENT: [&str; 6] = ["prompt", "error", "output", "arguments", "message", "body"];
const KNOWN: [&str; 7] = [
    "conversation_starts",
    "user_prompt",
    "tool_decision",
    "tool_result",
    "api_request",
    "sse_event",
    "websocket_event",
];

/// Maps one Codex LogRecord (`{resource, attributes}`) in `mode`.
///
/// ```
/// use aep_adapters::{sources::codex_otel::map, ChannelMode};
/// use serde_json::json;
/// let r = json!({"attributes": {"event.name": "codex.tool_decision", "tool_name": "shell", "decision": "deny", "source": "user"}});
/// assert!(map(&r, ChannelMode::Primary).is_empty()); // a human decision
/// assert_eq!(map(&r, ChannelMode::Companion)[0].event_type(), "x.codex.otel.tool_decision");
/// ```
pub fn map(input: &Value, mode: ChannelMode) -> Vec<Draft> {
    let r = Record::of(input);
    let short = r.name().strip_prefix("codex.").unwrap_or("");
    let companion = if KNOWN.contains(&short) {
        r.family(format!("x.{VENDOR}.otel.{short}"), &IDENTITY, &CONTENT)
    } else {
        Draft::new(format!("x.{VENDOR}.otel.unknown"))
            .meta("event.name", json!(r.name()))
            .severity(aep_core::Severity::Debug)
    };
    let d = match mode {
        ChannelMode::Companion => Some(companion),
        ChannelMode::Primary => primary(&r, short, companion),
    };
    let session = r.attr_str("conversation.id");
    d.into_iter().map(|d| d.on_session(session)).collect()
}

fn primary(r: &Record<'_>, short: &str, companion: Draft) -> Option<Draft> {
    let tool_name = r.attr_str("tool_name").unwrap_or("unknown");
    Some(match short {
        "conversation_starts" => Draft::new("session.started")
            .meta("client", family::client(VENDOR, None))
            .meta_opt("gen_ai.request.model", r.attr("model").cloned()),
        "tool_decision" if r.attr_str("decision") == Some("deny") => {
            let by = match r.attr_str("source") {
                Some("config") => "policy",
                Some("user") | None => return None,
                Some(_) => "runtime",
            };
            crate::family::denied(tool_name, None, by)
        }
        "tool_result" => {
            let ok = crate::json::flag(r.attributes, "success").unwrap_or(true);
            if ok {
                Draft::new("tool.completed")
                    .meta("tool", tool(tool_name, None))
                    .meta_opt("duration_ms", num(r.attributes, "duration_ms"))
                    .subject(tool_name)
            } else {
                family::failed(tool_name, None, "tool_error", r.attr("error"))
            }
        }
        _ => companion,
    })
    .map(|d| d.on_session(s(r.attributes, "conversation.id")))
}
