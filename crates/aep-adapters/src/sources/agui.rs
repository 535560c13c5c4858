//! AG-UI (AEP-0002 Annex A.14): the event stream union of `@ag-ui/core` 0.0.57 onto
//! the run, step, tool and state lifecycle; token deltas suppressed pending the
//! message/stream sub-profile.
//!
//! Identity: real vendor identity, no synthesis: `threadId` is the AEP session and
//! `runId` the run (both from `RUN_STARTED`, scoped to the stream); `STEP_*` stamps the
//! envelope `step`. The receiver joins `toolCallName` from `TOOL_CALL_START` onto the
//! results before mapping.
//!
//! | event | maps to |
//! |---|---|
//! | `RUN_STARTED` / `RUN_FINISHED` / `RUN_ERROR` | `run.started` (`parent_run`) / `run.finished` / `run.failed` (the vendor code as reason) |
//! | `STEP_STARTED` / `STEP_FINISHED` | `run.step.started` / `run.step.finished`, subject and step the step name |
//! | `TOOL_CALL_START` / `TOOL_CALL_RESULT` | `tool.requested` / `tool.completed` (an unjoined result: tool name `unknown`) |
//! | `TEXT_MESSAGE_START` / `TEXT_MESSAGE_END` (assistant) | `x.agui.text_message.start` / `.end` (`message.agent.replied` is reserved); a user message's end: nothing |
//! | `STATE_SNAPSHOT` / `STATE_DELTA` | `state.snapshot` / `state.delta` (the patch's op count) |
//! | `TOOL_CALL_ARGS`, `TOOL_CALL_END`, `TEXT_MESSAGE_CONTENT`, `REASONING_MESSAGE_CONTENT`, `*_CHUNK` | nothing; with deltas on, their vendor type |
//! | `REASONING_ENCRYPTED_VALUE` | nothing, ever (opaque ciphertext) |
//! | `THINKING_*` | as their `REASONING_*` replacements |
//! | anything else (`RAW`, `CUSTOM`, `MESSAGES_SNAPSHOT`, ...) | `x.agui.{head}.{last word}` |

use aep_core::Severity;
use serde_json::{json, Value};

use crate::draft::{Draft, Posture};
use crate::family::{self, tool};
use crate::json::{get, s};
use crate::naming::last_split;

/// The vendor token.
pub const VENDOR: &str = "agui";

/// The deprecated `THINKING_*` names and their `REASONING_*` replacements.
fn alias(ty: &str) -> &str {
    match ty {
        "THINKING_START" => "REASONING_START",
        "THINKING_END" => "REASONING_END",
        "THINKING_TEXT_MESSAGE_START" => "REASONING_MESSAGE_START",
        "THINKING_TEXT_MESSAGE_CONTENT" => "REASONING_MESSAGE_CONTENT",
        "THINKING_TEXT_MESSAGE_END" => "REASONING_MESSAGE_END",
        other => other,
    }
}

/// Maps one AG-UI event; `posture` decides the deltas opt-in.
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::agui::map(&json!({"type": "STEP_STARTED", "stepName": "plan"}), &aep_adapters::Posture::default());
/// assert_eq!((d[0].event_type(), d[0].step_str()), ("run.step.started", Some("plan")));
/// ```
pub fn map(e: &Value, posture: &Posture) -> Vec<Draft> {
    let ty = alias(s(e, "type").unwrap_or("UNKNOWN"));
    let fallback =
        || Draft::new(format!("x.{VENDOR}.{}", last_split(ty))).severity(Severity::Debug);
    let delta = |d: Draft| if posture.deltas() { Some(d) } else { None };
    let d = match ty {
        "RUN_STARTED" => Some(
            family::run_started(None)
                .meta_opt("parent_run", get(e, "parentRunId").cloned())
                .on_run(s(e, "runId")),
        ),
        "RUN_FINISHED" => Some(
            Draft::new("run.finished")
                .content_opt(
                    "summary",
                    get(e, "result").filter(|r| r.is_string()).cloned(),
                )
                .on_run(s(e, "runId")),
        ),
        "RUN_ERROR" => Some(
            Draft::new("run.failed")
                .meta("reason", json!(s(e, "code").unwrap_or("error")))
                .content_in(
                    &["error", "message"],
                    family::message_text(get(e, "message")),
                ),
        ),
        "STEP_STARTED" | "STEP_FINISHED" => {
            let name = s(e, "stepName");
            let t = if ty == "STEP_STARTED" {
                "run.step.started"
            } else {
                "run.step.finished"
            };
            Some(Draft::new(t).subject_opt(name).step_opt(name))
        }
        "TOOL_CALL_START" => Some(
            Draft::new("tool.requested")
                .meta(
                    "tool",
                    tool(
                        s(e, "toolCallName").unwrap_or("unknown"),
                        s(e, "toolCallId"),
                    ),
                )
                .subject_opt(s(e, "toolCallName"))
                .with_call(s(e, "toolCallId")),
        ),
        "TOOL_CALL_RESULT" => {
            let name = s(e, "toolCallName").unwrap_or("unknown");
            Some(
                family::completed(name, s(e, "toolCallId"), get(e, "content"))
                    .subject_opt(s(e, "toolCallId")),
            )
        }
        "TOOL_CALL_ARGS" | "TEXT_MESSAGE_CONTENT" | "REASONING_MESSAGE_CONTENT" => {
            delta(fallback().content_opt("delta", get(e, "delta").cloned()))
        }
        "TOOL_CALL_END" => delta(fallback()),
        chunk if chunk.ends_with("_CHUNK") => {
            delta(fallback().content_opt("delta", get(e, "delta").cloned()))
        }
        // Opaque ciphertext is not observability.
        "REASONING_ENCRYPTED_VALUE" => None,
        "TEXT_MESSAGE_START" => Some(
            fallback()
                .meta_opt("role", get(e, "role").cloned())
                .subject_opt(s(e, "messageId")),
        ),
        "TEXT_MESSAGE_END" => match s(e, "role") {
            Some(role) if role != "assistant" => None,
            _ => Some(
                fallback()
                    .content_opt("content", get(e, "content").cloned())
                    .subject_opt(s(e, "messageId")),
            ),
        },
        "STATE_SNAPSHOT" => {
            Some(Draft::new("state.snapshot").content_opt("state", get(e, "snapshot").cloned()))
        }
        "STATE_DELTA" => {
            let ops = get(e, "delta")
                .and_then(Value::as_array)
                .map(|a| json!(a.len()));
            Some(
                Draft::new("state.delta")
                    .meta_opt("ops", ops)
                    .content_opt("delta", get(e, "delta").cloned()),
            )
        }
        "RAW" => Some(fallback().full("event", get(e, "event").cloned().unwrap_or(Value::Null))),
        "CUSTOM" => Some(
            fallback()
                .meta_opt("name", get(e, "name").cloned())
                .full("value", get(e, "value").cloned().unwrap_or(Value::Null)),
        ),
        _ => Some(fallback()),
    };
    d.into_iter()
        .map(|d| d.on_session(s(e, "threadId")))
        .collect()
}
