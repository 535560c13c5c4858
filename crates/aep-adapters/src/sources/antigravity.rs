//! Antigravity hooks (AEP-0002 Annex A.11): the five-hook `hooks.json` system of
//! Antigravity 2.0 and the Antigravity CLI (1.0.16 at least); observe-only.
//!
//! No payload names its own event: the registration passes the hook name on the
//! command line (`aep hook antigravity PreToolUse`), and [`Moment::hook`](crate::Moment)
//! carries it.
//!
//! Identity: `conversationId` is the AEP session, verbatim (the runtime synthesizes
//! `session.started` on first sight; no session end is exposed); runs are synthesized,
//! opened at the first invocation boundary and closed by `Stop`; `PreInvocation` /
//! `PostInvocation` set the envelope `step` from `invocationNum`.
//!
//! | hook | events |
//! |---|---|
//! | `PreToolUse` | `tool.requested` (`step_idx`, the args digest); it feeds the `(conversationId, stepIdx)` join |
//! | `PostToolUse` | joined: `tool.completed`, or `tool.failed` on a non-empty `error`; unjoined: `x.antigravity.step.completed` (`failed`, `step_idx`): a tool name is never invented |
//! | `PreInvocation` / `PostInvocation` | `run.step.started` (`initial_num_steps`) / `run.step.finished` |
//! | `Stop` | `terminationReason` `error` → `run.failed`; any other (`model_stop`, `max_steps_exceeded`) → `run.finished` with the reason, `execution_num`, `fully_idle` (bounded terminations are completions) |
//! | anything else | `x.antigravity.hook.{name, lowercased}` |
//!
//! Stated gaps: approval outcomes are not hook-visible (a denied tool is
//! indistinguishable from a running one), so nothing maps to `attention.*` or
//! `tool.denied`, and a dangling `PreToolUse` synthesizes nothing. The vendor's
//! interaction tools (`ask_question`) are observed as tools.

use serde_json::{json, Value};

use crate::draft::Draft;
use crate::family::{self, tool};
use crate::json::{get, s, text};
use crate::naming::flat;

/// The vendor token.
pub const VENDOR: &str = "antigravity";

/// The neutral reply of the hooks that want one (`PreToolUse`, `Stop`): the vendor's
/// safely-handled empty decision, never a named one, never `"continue"`.
pub const NEUTRAL_DECISION: &str = r#"{"decision": ""}"#;

/// Maps one Antigravity hook: its name (from the registration), its payload, and the
/// tool name the session joined to a `PostToolUse`'s `stepIdx`.
///
/// ```
/// use serde_json::json;
/// let p = json!({"conversationId": "c", "stepIdx": 5, "error": ""});
/// let joined = aep_adapters::sources::antigravity::map("PostToolUse", &p, Some("run_command"));
/// assert_eq!(joined[0].event_type(), "tool.completed");
/// let unjoined = aep_adapters::sources::antigravity::map("PostToolUse", &p, None);
/// assert_eq!(unjoined[0].event_type(), "x.antigravity.step.completed");
/// ```
pub fn map(hook: &str, p: &Value, joined: Option<&str>) -> Vec<Draft> {
    let step_idx = get(p, "stepIdx").cloned();
    let error = s(p, "error");
    let d = match hook {
        "PreToolUse" => {
            let call = get(p, "toolCall").unwrap_or(&Value::Null);
            let name = s(call, "name").unwrap_or("unknown");
            family::requested(name, None, get(call, "args")).meta_opt("step_idx", step_idx)
        }
        "PostToolUse" => match joined {
            Some(name) => match error {
                Some(message) => family::failed(name, None, "tool_error", Some(&json!(message))),
                None => Draft::new("tool.completed")
                    .meta("tool", tool(name, None))
                    .subject(name),
            }
            .meta_opt("step_idx", step_idx),
            // Honest absence: the thin payload names no tool and none was joined.
            None => Draft::new("x.antigravity.step.completed")
                .meta("failed", json!(error.is_some()))
                .meta_opt("step_idx", step_idx)
                .content_opt("error", error.map(|e| json!(e))),
        },
        "PreInvocation" => Draft::new("run.step.started")
            .meta_opt("initial_num_steps", get(p, "initialNumSteps").cloned())
            .step_opt(text(p, "invocationNum")),
        "PostInvocation" => Draft::new("run.step.finished").step_opt(text(p, "invocationNum")),
        "Stop" => {
            let reason = s(p, "terminationReason").unwrap_or("model_stop");
            let d = if reason == "error" {
                Draft::new("run.failed")
                    .meta("reason", json!("error"))
                    .meta_in(&["error", "type"], json!("error"))
                    .content_in(&["error", "message"], family::message_text(get(p, "error")))
            } else {
                Draft::new("run.finished").meta("termination_reason", json!(reason))
            };
            d.meta_opt("execution_num", get(p, "executionNum").cloned())
                .meta_opt("fully_idle", get(p, "fullyIdle").cloned())
        }
        other => Draft::new(format!("x.{VENDOR}.hook.{}", flat(other)))
            .severity(aep_core::Severity::Debug),
    };
    vec![d.on_session(s(p, "conversationId"))]
}
