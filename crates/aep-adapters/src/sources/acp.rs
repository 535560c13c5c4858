//! ACP, the Agent Client Protocol (AEP-0002 Annex A.13): the editor–agent JSON-RPC
//! wire, observed read-only through a byte-transparent tee.
//!
//! Input: one *moment* of the wire, `{kind: "request" | "response" | "notification",
//! method, params | result}` (the tee joins a response to its request's method by
//! JSON-RPC id).
//!
//! Identity: `params.sessionId` (or a `session/new` result's `sessionId`) is the AEP
//! session, verbatim; the `session/prompt` turn is the run (its JSON-RPC id, scoped to
//! the session); `toolCallId` pairs the tool trio.
//!
//! | moment | events |
//! |---|---|
//! | request `session/prompt` | `run.started` (`message_digest` of the prompt; its text as content) |
//! | request `session/request_permission` | `attention.requested(kind: permission)` read-only: no options, no `respond_via`, the offered count as `options_count` |
//! | response `session/new` | `session.started` |
//! | response `session/prompt` | by `stopReason`: `cancelled` → `run.cancelled` by the user; `refusal` → `run.failed`; any other (bounded terminations) → `run.finished` with the stop reason |
//! | response `session/request_permission` | `selected` → `attention.answered` via `oob`; `cancelled` → `attention.resolved(dismissed)` |
//! | `session/update` `tool_call` / `tool_call_update` | `tool.requested` / by status: `completed` → `tool.completed`, `failed` → `tool.failed`, other → `x.acp.tool_call.update` |
//! | `session/update` `plan` | `x.acp.plan.updated` with status counts (plan entries carry no id: diffing would invent identity) |
//! | `session/update` `usage_update` | `x.acp.usage.updated` (token counts) |
//! | `session/update` message and thought chunks | nothing; with deltas on, `x.acp.{update}` with the text as content |
//! | any other method or update | `x.acp.{method, dotted}` (a one-word method gains `.event`) |
//!
//! Read-only: the tee never initiates, answers or injects.

use aep_core::Severity;
use serde_json::{json, Value};

use crate::draft::{Draft, Posture};
use crate::family;
use crate::json::{at, get, joined_text, s, s_at};
use crate::naming::{dotted, vendor_type};

/// The vendor token.
pub const VENDOR: &str = "acp";

/// Maps one ACP wire moment; `posture` decides the deltas opt-in.
///
/// ```
/// use serde_json::json;
/// let m = json!({"kind": "response", "method": "session/prompt", "result": {"stopReason": "refusal"}});
/// let d = aep_adapters::sources::acp::map(&m, &aep_adapters::Posture::default());
/// assert_eq!(d[0].event_type(), "run.failed");
/// ```
pub fn map(m: &Value, posture: &Posture) -> Vec<Draft> {
    let kind = s(m, "kind").unwrap_or("notification");
    let method = s(m, "method").unwrap_or("unknown");
    let params = get(m, "params").unwrap_or(&Value::Null);
    let result = get(m, "result").unwrap_or(&Value::Null);
    let machinery = |suffix: Option<&str>| {
        let rest = match suffix {
            Some(x) => format!("{}.{x}", dotted(method)),
            None => dotted(method),
        };
        Draft::new(vendor_type(VENDOR, &rest)).severity(Severity::Debug)
    };
    let d = match (kind, method) {
        ("request", "session/prompt") => {
            let mut d = family::run_started(
                get(params, "prompt")
                    .and_then(joined_text)
                    .map(Value::String),
            );
            if let Some(prompt) = get(params, "prompt") {
                d = d.digest("message_digest", prompt);
            }
            d
        }
        ("request", "session/request_permission") => {
            let call = get(params, "toolCall").unwrap_or(&Value::Null);
            let id = s(call, "toolCallId");
            let title = s(call, "title").unwrap_or("a tool call");
            Draft::new("attention.requested")
                .meta("kind", json!("permission"))
                .both(
                    "prompt",
                    json!(format!("Permission requested: {title}")),
                    json!(format!(
                        "{VENDOR} requests permission: {}",
                        id.unwrap_or("tool")
                    )),
                )
                .meta_opt(
                    "options_count",
                    get(params, "options")
                        .and_then(Value::as_array)
                        .map(|o| json!(o.len())),
                )
                .subject_opt(id)
                .with_attention_key(id)
        }
        ("response", "session/new") => {
            Draft::new("session.started").meta("client", family::client(VENDOR, None))
        }
        ("response", "session/prompt") => match s(result, "stopReason") {
            Some("cancelled") => Draft::new("run.cancelled").meta("by", json!("user")),
            Some("refusal") => Draft::new("run.failed").meta("reason", json!("refusal")),
            reason => Draft::new("run.finished").meta_opt("stop_reason", reason.map(|r| json!(r))),
        },
        ("response", "session/request_permission") => match s_at(result, &["outcome", "outcome"]) {
            Some("selected") => Draft::new("attention.answered")
                .meta_in(
                    &["answer", "option"],
                    json!(s_at(result, &["outcome", "optionId"]).unwrap_or("selected")),
                )
                .meta("via", json!("oob")),
            _ => Draft::new("attention.resolved").meta("resolution", json!("dismissed")),
        },
        ("notification", "session/update") => {
            let update = get(params, "update").unwrap_or(&Value::Null);
            match session_update(update, posture) {
                Some(d) => d,
                None => return Vec::new(),
            }
        }
        ("response", _) => machinery(Some("response")),
        _ => machinery(None),
    };
    let session = s(params, "sessionId").or(s(result, "sessionId"));
    vec![d.on_session(session)]
}

fn session_update(u: &Value, posture: &Posture) -> Option<Draft> {
    let which = s(u, "sessionUpdate").unwrap_or("unknown");
    let id = s(u, "toolCallId");
    let name = s(u, "title").unwrap_or("unknown");
    Some(match which {
        "tool_call" => family::requested(name, id, get(u, "rawInput"))
            .meta_opt("kind", get(u, "kind").cloned())
            .subject_opt(id),
        "tool_call_update" => match s(u, "status") {
            Some("completed") => family::completed(name, id, get(u, "rawOutput")).subject_opt(id),
            Some("failed") => family::failed(name, id, "tool_error", None).subject_opt(id),
            status => Draft::new("x.acp.tool_call.update")
                .meta_opt("status", status.map(|x| json!(x)))
                .subject_opt(id)
                .severity(Severity::Debug),
        },
        "plan" => {
            let entries = get(u, "entries")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let count = |status: &str| {
                entries
                    .iter()
                    .filter(|e| s(e, "status") == Some(status))
                    .count()
            };
            let mut d = Draft::new("x.acp.plan.updated");
            for (key, status) in [
                ("entries_pending", "pending"),
                ("entries_in_progress", "in_progress"),
                ("entries_completed", "completed"),
            ] {
                let n = count(status);
                if n > 0 {
                    d = d.meta(key, json!(n));
                }
            }
            d.content("entries", Value::Array(entries))
        }
        "usage_update" => Draft::new("x.acp.usage.updated")
            .usage(get(u, "usedTokens"), get(u, "outputTokens"))
            .severity(Severity::Debug),
        chunk if chunk.ends_with("_chunk") => {
            if !posture.deltas() {
                return None;
            }
            Draft::new(vendor_type(VENDOR, &dotted(chunk)))
                .content_opt("delta", at(u, &["content", "text"]).cloned())
                .severity(Severity::Debug)
        }
        other => Draft::new(vendor_type(VENDOR, &dotted(other))).severity(Severity::Debug),
    })
}
