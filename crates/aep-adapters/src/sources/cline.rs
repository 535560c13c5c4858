//! Cline subprocess hooks (AEP-0002 Annex A.9): ten zod-typed events onto the run,
//! tool and delegation lifecycle; observe-only.
//!
//! Identity: `taskId` is the AEP session, with real run boundaries (`agent_start` and
//! `agent_resume` open, `agent_end`, `agent_abort` and `agent_error` close) whose ids the
//! session runtime mints; the typed call id pairs the tool events; the per-turn
//! `iteration` stamps the envelope `step` (no `run.step.*` synthesis).
//!
//! | hook | events |
//! |---|---|
//! | `agent_start` / `agent_resume` | `run.started` (`trigger: user` / `resume`); with a `parent_agent_id`, `delegation.subagent.started` first (subject the agent id) |
//! | `agent_end` / `agent_abort` / `agent_error` | `run.finished` / `run.cancelled` by the user / `run.failed` (the error name); with a parent, `delegation.subagent.stopped` after |
//! | `tool_call` | `tool.requested` |
//! | `tool_result` | `tool.completed`, or `tool.failed` when the typed `error` is set |
//! | `prompt_submit` | `x.cline.prompt.submitted` (`message.user.submitted` is reserved) |
//! | `pre_compact` | `session.compacted` (strategy, token counts; the context dump paths are content) |
//! | `session_shutdown` | `session.ended` (`normal`) |
//! | anything else | `x.cline.{hook, dotted}` |
//!
//! Deviations: compaction at the vendor's only (pre) moment. Observe-only: the hook
//! responses never carry the vendor's agent-mutating control fields.

use aep_core::Severity;
use serde_json::{json, Value};

use crate::draft::Draft;
use crate::family::{self, requested};
use crate::json::{get, present, s, text};
use crate::naming::{dotted, vendor_type};

/// The vendor token.
pub const VENDOR: &str = "cline";

/// Maps one Cline hook payload (the typed stdin JSON).
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::cline::map(&json!({"hookName": "agent_end", "taskId": "t", "iteration": 3}));
/// assert_eq!((d[0].event_type(), d[0].step_str()), ("run.finished", Some("3")));
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    let hook = s(p, "hookName")
        .or(s(p, "hook_event_name"))
        .unwrap_or("unknown");
    let parent = s(p, "parent_agent_id");
    let agent = s(p, "agent_id");
    let started = |trigger: &str| family::run_started(None).meta("trigger", json!(trigger));
    let stopped = || Draft::new("delegation.subagent.stopped").subject_opt(agent);
    let mut out = match hook {
        "agent_start" | "agent_resume" => {
            let trigger = if hook == "agent_start" {
                "user"
            } else {
                "resume"
            };
            let mut v = Vec::new();
            if parent.is_some() && hook == "agent_start" {
                v.push(Draft::new("delegation.subagent.started").subject_opt(agent));
            }
            v.push(started(trigger));
            v
        }
        "agent_end" | "agent_abort" | "agent_error" => {
            let terminal = match hook {
                "agent_end" => Draft::new("run.finished"),
                "agent_abort" => Draft::new("run.cancelled")
                    .meta("by", json!("user"))
                    .content_opt("reason", get(p, "reason").cloned()),
                _ => {
                    let error = get(p, "error").unwrap_or(&Value::Null);
                    let name = s(error, "name").or(error.as_str()).unwrap_or("error");
                    Draft::new("run.failed")
                        .meta("reason", json!(name))
                        .meta_in(&["error", "type"], json!(name))
                        .content_in(
                            &["error", "message"],
                            family::message_text(get(error, "message")),
                        )
                }
            };
            let mut v = vec![terminal];
            if parent.is_some() {
                v.push(stopped());
            }
            v
        }
        "tool_call" => {
            let call = get(p, "tool_call").unwrap_or(&Value::Null);
            vec![requested(
                s(call, "name").unwrap_or("unknown"),
                s(call, "id"),
                get(call, "input"),
            )]
        }
        "tool_result" => {
            let r = get(p, "tool_result").unwrap_or(&Value::Null);
            let name = s(r, "name").unwrap_or("unknown");
            let d = if present(r, "error") {
                family::failed(name, s(r, "id"), "tool_error", get(r, "error"))
            } else {
                family::completed(name, s(r, "id"), get(r, "output"))
            };
            vec![d.meta_opt("duration_ms", get(r, "durationMs").cloned())]
        }
        "prompt_submit" => vec![Draft::new("x.cline.prompt.submitted")
            .content_opt("prompt", get(p, "prompt").cloned())
            .severity(Severity::Debug)],
        // Documented deviation: the vendor exposes only the pre moment.
        "pre_compact" => {
            let c = get(p, "preCompact").unwrap_or(&Value::Null);
            vec![Draft::new("session.compacted")
                .meta_opt("strategy", get(c, "compactionStrategy").cloned())
                .usage(get(c, "tokensIn"), get(c, "tokensOut"))
                .content_opt("context_json_path", get(c, "contextJsonPath").cloned())
                .content_opt("context_raw_path", get(c, "contextRawPath").cloned())]
        }
        "session_shutdown" => vec![family::ended_normal()],
        other => vec![Draft::new(vendor_type(VENDOR, &dotted(other))).severity(Severity::Debug)],
    };
    let step = text(p, "iteration");
    let session = s(p, "taskId");
    for d in &mut out {
        let mut next = std::mem::replace(d, Draft::new(""));
        next = next.on_session(session);
        if let Some(step) = &step {
            if !next.event_type().starts_with("delegation.") {
                next = next.step(step.clone());
            }
        }
        *d = next;
    }
    out
}
