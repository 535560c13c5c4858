//! The VS Code agent OTel channel (AEP-0002 Annex A.5): the `copilot_chat.*`
//! LogRecord family behind the opt-in `github.copilot.chat.otel.enabled` setting,
//! received by an OTLP-inbound sidecar, in two modes.
//!
//! Identity: the resource's `session.id` (one session per exporter process) is the AEP
//! session; no run is synthesized.
//!
//! | record (`event.name`) | companion | primary |
//! |---|---|---|
//! | `copilot_chat.session.start` | `x.vscode.otel.session.start` | `session.started` (client, model) |
//! | `copilot_chat.tool.call` | `x.vscode.otel.tool.call` | `tool.completed` / `tool.failed` (the vendor's own `error.type` token) |
//! | `copilot_chat.agent.turn`, `copilot_chat.edit.feedback`, `gen_ai.client.inference.operation.details` | `x.vscode.otel.agent.turn`, `.edit.feedback`, `.inference_details` | the same (no run identity exists on this channel) |
//! | anything else | `x.vscode.otel.unknown` (`event.name`) | the same |
//!
//! Two vendor ceilings hold in both modes: never `tool.denied` (the hook decision tier
//! never reaches OTel) and never `session.ended` (session end does not exist on this
//! surface). The GenAI message attributes are content (`redacted`).

use serde_json::{json, Value};

use super::otel::Record;
use crate::channel::ChannelMode;
use crate::draft::Draft;
use crate::family::{self, tool};
use crate::json::{flag, num, s};

/// The vendor token.
pub const VENDOR: &str = "vscode";

const IDENTITY: [&str; 2] = ["event.name", "session.id"];
const CONTENT: [&str; 4] = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "error.message",
];

/// The family member of a record name, if it is one of the channel's.
fn member(name: &str) -> Option<&'static str> {
    Some(match name {
        "copilot_chat.session.start" => "session.start",
        "copilot_chat.tool.call" => "tool.call",
        "copilot_chat.agent.turn" => "agent.turn",
        "copilot_chat.edit.feedback" => "edit.feedback",
        "gen_ai.client.inference.operation.details" => "inference_details",
        _ => return None,
    })
}

/// Maps one VS Code agent LogRecord (`{resource, attributes}`) in `mode`.
///
/// ```
/// use aep_adapters::{sources::vscode_otel::map, ChannelMode};
/// use serde_json::json;
/// let r = json!({"resource": {"session.id": "v1"}, "attributes": {"event.name": "copilot_chat.tool.call", "gen_ai.tool.name": "readFile", "success": true}});
/// assert_eq!(map(&r, ChannelMode::Primary)[0].event_type(), "tool.completed");
/// ```
pub fn map(input: &Value, mode: ChannelMode) -> Vec<Draft> {
    let r = Record::of(input);
    let which = member(r.name());
    let companion = match which {
        Some(m) => r.family(format!("x.{VENDOR}.otel.{m}"), &IDENTITY, &CONTENT),
        None => Draft::new(format!("x.{VENDOR}.otel.unknown"))
            .meta("event.name", json!(r.name()))
            .severity(aep_core::Severity::Debug),
    };
    let d = match (mode, which) {
        (ChannelMode::Companion, _) => companion,
        (ChannelMode::Primary, Some("session.start")) => Draft::new("session.started")
            .meta("client", family::client(VENDOR, None))
            .meta_opt(
                "gen_ai.request.model",
                r.attr("gen_ai.request.model").cloned(),
            ),
        (ChannelMode::Primary, Some("tool.call")) => {
            let name = r.attr_str("gen_ai.tool.name").unwrap_or("unknown");
            let d = if flag(r.attributes, "success").unwrap_or(true) {
                Draft::new("tool.completed")
                    .meta("tool", tool(name, None))
                    .subject(name)
            } else {
                family::failed(
                    name,
                    None,
                    r.attr_str("error.type").unwrap_or("tool_error"),
                    r.attr("error.message"),
                )
            };
            d.meta_opt("duration_ms", num(r.attributes, "duration_ms"))
        }
        (ChannelMode::Primary, _) => companion,
    };
    let session = s(r.resource, "session.id").or(s(r.attributes, "session.id"));
    vec![d.on_session(session)]
}
