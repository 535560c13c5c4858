//! Gemini CLI hooks (AEP-0002 Annex A.3): eleven hooks, eight on core types and the
//! three model-plane hooks in `x.gemini-cli.session.*` by design.
//!
//! Identity: `session_id` is the AEP session; runs are synthesized by the session
//! runtime, one per `BeforeAgent`/`AfterAgent` pair (Gemini exposes no turn id), and
//! tool events pair by `(session, tool name)` since no call id is exposed.
//!
//! | hook | event |
//! |---|---|
//! | `SessionStart` / `SessionEnd` | `session.started` / `session.ended` (every vendor reason collapses to `normal`) |
//! | `BeforeAgent` / `AfterAgent` | `run.started` (the prompt content) / `run.finished` (the response is not captured) |
//! | `BeforeTool` | `tool.requested` |
//! | `AfterTool` | `tool.completed`, or `tool.failed` when `tool_response.error` is set |
//! | `BeforeModel`, `AfterModel`, `BeforeToolSelection` | `x.gemini-cli.session.*` with the model id (`AfterModel` at `debug`: it fires per streamed chunk) |
//! | `PreCompress` | `session.compacted` |
//! | `Notification` | `progress.status`, subject the notification type |
//!
//! Deviations: compaction is emitted at the vendor's only moment, the pre moment
//! (`PreCompress`); `Notification` is observability only, never `attention.requested`
//! (the hook can neither grant nor deny, so a respond affordance would be a lie).
//! Observe-only: no hook of this surface is answerable.

use aep_core::Severity;
use serde_json::Value;

use crate::draft::Draft;
use crate::family::{self, ended_normal, requested, run_started, started};
use crate::json::{at, get, s};

/// The vendor token.
pub const VENDOR: &str = "gemini-cli";

/// Maps one Gemini CLI hook payload.
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::gemini_cli::map(&json!({"hook_event_name": "PreCompress", "trigger": "auto"}));
/// assert_eq!(d[0].event_type(), "session.compacted");
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    let hook = s(p, "hook_event_name").unwrap_or("unknown");
    let tool_name = s(p, "tool_name").unwrap_or("unknown");
    let model = || at(p, &["llm_request", "model"]).cloned();
    let d = match hook {
        "SessionStart" => started(p, VENDOR),
        "SessionEnd" => ended_normal(),
        "BeforeAgent" => run_started(get(p, "prompt").cloned()),
        "AfterAgent" => Draft::new("run.finished"),
        "BeforeTool" => requested(tool_name, None, get(p, "tool_input")),
        "AfterTool" => match at(p, &["tool_response", "error"]) {
            Some(error) => {
                let kind = s(error, "type").unwrap_or("tool_error");
                let message = get(error, "message").or(error.as_str().map(|_| error));
                family::failed(tool_name, None, kind, message)
            }
            None => family::completed(tool_name, None, get(p, "tool_response")),
        },
        "BeforeModel" | "AfterModel" | "BeforeToolSelection" => {
            let d = family::fallback(VENDOR, hook).meta_opt("model", model());
            if hook == "AfterModel" {
                d
            } else {
                d.severity(Severity::Info)
            }
        }
        "PreCompress" => {
            Draft::new("session.compacted").meta_opt("trigger", get(p, "trigger").cloned())
        }
        "Notification" => Draft::new("progress.status")
            .content_opt("message", get(p, "message").cloned())
            .subject_opt(s(p, "notification_type")),
        other => family::fallback(VENDOR, other),
    };
    vec![d.on_session(s(p, "session_id"))]
}
