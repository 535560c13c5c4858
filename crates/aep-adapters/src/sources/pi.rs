//! pi extension-bus events (AEP-0002 Annex A.12): the in-process notification subset
//! onto the session, run, step and tool lifecycle; observe-only by non-subscription
//! (the plugin registers no interception surface).
//!
//! Input: `{session: {id, file, cwd}, event}`, the session read in-process by the
//! plugin (`ctx.sessionManager`) and attached to every moment.
//!
//! Identity: the pi session id is the AEP session; runs are synthesized per agent loop
//! (`agent_start` opens, `agent_end` closes on the last assistant message's typed
//! `stopReason`; a retried loop is a new run); `turnIndex` sets the envelope `step`;
//! `toolCallId` pairs the tool trio.
//!
//! | event | maps to |
//! |---|---|
//! | `session_start` / `session_shutdown` / `session_compact` | `session.started` (`reason`) / `session.ended` (`normal`, the vendor reason beside) / `session.compacted` (`reason`, `will_retry`) |
//! | `agent_start` | `run.started` |
//! | `agent_end` | `stopReason` `error` → `run.failed`; `aborted` → `run.cancelled` (no `by`: Esc and programmatic aborts look alike); otherwise `run.finished` with the reason and token usage |
//! | `agent_settled` | `x.pi.agent.settled` (the final-settlement fact) |
//! | `turn_start` / `turn_end` | `run.step.started` / `run.step.finished` |
//! | `tool_execution_start` / `tool_execution_end` | `tool.requested` / `tool.completed`, or `tool.failed` on the typed `isError` |
//! | `message_start` (user) / `message_end` (assistant) | `x.pi.message.submitted` / `x.pi.message.replied` (content digests; `message.*` is reserved) |
//! | `message_update`, `tool_execution_update` | nothing; with deltas on, `x.pi.message.delta` / `x.pi.tool.update` |
//! | `session_info_changed`, `session_tree`, `model_select`, `thinking_level_select` | `x.pi.session.info`, `x.pi.session.tree`, `x.pi.model.select`, `x.pi.thinking.select` |
//! | anything else | `x.pi.event.{type}` |
//!
//! Stated gaps: approvals are not bus-visible, so nothing maps to `attention.*` or
//! `tool.denied`. `x.pi.*` rides at `debug`.

use aep_core::Severity;
use serde_json::{json, Value};

use crate::draft::{Draft, Posture};
use crate::family::{self, tool};
use crate::json::{at, get, joined_text, s, text};
use crate::naming::snake;

/// The vendor token.
pub const VENDOR: &str = "pi";

/// Maps one pi moment (`{session, event}`); `posture` decides the deltas opt-in.
///
/// ```
/// use serde_json::json;
/// let m = json!({"session": {"id": "s"}, "event": {"type": "turn_start", "turnIndex": 0}});
/// let d = aep_adapters::sources::pi::map(&m, &aep_adapters::Posture::default());
/// assert_eq!((d[0].event_type(), d[0].step_str()), ("run.step.started", Some("0")));
/// ```
pub fn map(m: &Value, posture: &Posture) -> Vec<Draft> {
    let e = get(m, "event").unwrap_or(&Value::Null);
    let ty = s(e, "type").unwrap_or("unknown");
    let vendor = |t: &str| Draft::new(format!("x.{VENDOR}.{t}")).severity(Severity::Debug);
    let d = match ty {
        "session_start" => Draft::new("session.started")
            .meta("client", family::client(VENDOR, None))
            .meta_opt("reason", get(e, "reason").cloned())
            .content_opt("cwd", at(m, &["session", "cwd"]).cloned()),
        "session_shutdown" => {
            family::ended_normal().meta_opt("vendor_reason", get(e, "reason").cloned())
        }
        "session_compact" => Draft::new("session.compacted")
            .meta_opt("reason", get(e, "reason").cloned())
            .meta_opt("will_retry", get(e, "willRetry").cloned()),
        "agent_start" => Draft::new("run.started"),
        "agent_end" => agent_end(e),
        "agent_settled" => vendor("agent.settled"),
        "turn_start" => Draft::new("run.step.started").step_opt(text(e, "turnIndex")),
        "turn_end" => Draft::new("run.step.finished").step_opt(text(e, "turnIndex")),
        "message_start" => {
            let msg = get(e, "message").unwrap_or(&Value::Null);
            if s(msg, "role") != Some("user") {
                return Vec::new();
            }
            let content = get(msg, "content").and_then(joined_text);
            let mut d = vendor("message.submitted");
            if let Some(c) = &content {
                d = d
                    .digest("content_digest", &json!(c))
                    .content("content", json!(c));
            }
            d
        }
        "message_end" => {
            let msg = get(e, "message").unwrap_or(&Value::Null);
            if s(msg, "role") != Some("assistant") {
                return Vec::new();
            }
            let content = get(msg, "content").and_then(joined_text);
            let mut d = vendor("message.replied")
                .meta_opt("stop_reason", get(msg, "stopReason").cloned())
                .usage(at(msg, &["usage", "input"]), at(msg, &["usage", "output"]));
            if let Some(c) = &content {
                d = d
                    .digest("content_digest", &json!(c))
                    .content("content", json!(c));
            }
            d
        }
        "message_update" if posture.deltas() => vendor("message.delta")
            .meta_opt("kind", at(e, &["assistantMessageEvent", "type"]).cloned())
            .content_opt("delta", at(e, &["assistantMessageEvent", "delta"]).cloned()),
        "message_update" => return Vec::new(),
        "tool_execution_start" => family::requested(
            s(e, "toolName").unwrap_or("unknown"),
            s(e, "toolCallId"),
            get(e, "args"),
        ),
        "tool_execution_update" if posture.deltas() => {
            let name = s(e, "toolName").unwrap_or("unknown");
            let mut d = vendor("tool.update")
                .meta("tool", tool(name, s(e, "toolCallId")))
                .subject(name)
                .with_call(s(e, "toolCallId"));
            if let Some(partial) = get(e, "partialResult") {
                d = d
                    .digest("partial_digest", partial)
                    .content("partial", partial.clone());
            }
            d
        }
        "tool_execution_update" => return Vec::new(),
        "tool_execution_end" => {
            let name = s(e, "toolName").unwrap_or("unknown");
            let call = s(e, "toolCallId");
            if get(e, "isError").and_then(Value::as_bool) == Some(true) {
                let message = at(e, &["result", "content"])
                    .and_then(joined_text)
                    .map(Value::String);
                family::failed(name, call, "error", message.as_ref())
            } else {
                family::completed(name, call, get(e, "result"))
            }
        }
        "session_info_changed" => {
            vendor("session.info").content_opt("name", get(e, "name").cloned())
        }
        "session_tree" => vendor("session.tree"),
        "model_select" => vendor("model.select")
            .meta_opt("source", get(e, "source").cloned())
            .meta_opt("model", at(e, &["model", "id"]).cloned()),
        "thinking_level_select" => {
            vendor("thinking.select").meta_opt("level", get(e, "level").cloned())
        }
        other => vendor(&format!("event.{}", snake(other))),
    };
    vec![d.on_session(at(m, &["session", "id"]).and_then(Value::as_str))]
}

/// The run terminal from the last assistant message's typed `stopReason`.
fn agent_end(e: &Value) -> Draft {
    let last = get(e, "messages")
        .and_then(Value::as_array)
        .and_then(|msgs| {
            msgs.iter()
                .rev()
                .find(|m| s(m, "role") == Some("assistant"))
        });
    let Some(msg) = last else {
        return Draft::new("run.finished");
    };
    let reason = get(msg, "stopReason").cloned();
    match s(msg, "stopReason") {
        Some("error") => Draft::new("run.failed")
            .meta("reason", json!("error"))
            .meta_opt("stop_reason", reason)
            .meta_in(&["error", "type"], json!("error"))
            .content_in(
                &["error", "message"],
                family::message_text(get(msg, "errorMessage")),
            ),
        Some("aborted") => Draft::new("run.cancelled").meta_opt("stop_reason", reason),
        _ => Draft::new("run.finished")
            .meta_opt("stop_reason", reason)
            .usage(at(msg, &["usage", "input"]), at(msg, &["usage", "output"])),
    }
}
