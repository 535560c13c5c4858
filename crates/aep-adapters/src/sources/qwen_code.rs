//! Qwen Code hooks (AEP-0002 Annex A.4): sixteen hooks on core types, the
//! Claude-Code-shaped sibling.
//!
//! Identity: `session_id` is the AEP session; runs are synthesized by the session
//! runtime, one per `UserPromptSubmit`/`Stop` pair (no turn id is documented), and
//! `tool_use_id` pairs the tool events exactly.
//!
//! | hook | event |
//! |---|---|
//! | `SessionStart` | `session.started` (`client`, `trigger`, the model, `permission_mode` at metadata: a fleet-relevant security posture) |
//! | `SessionEnd` | `session.ended` (`normal`) |
//! | `UserPromptSubmit` | `run.started` |
//! | `Stop` / `StopFailure` | `run.finished` (token usage) / `run.failed` (the vendor's error class as `reason`) |
//! | `PreToolUse` / `PostToolUse` / `PostToolUseFailure` | the tool trio (`is_interrupt` → error type `interrupt`) |
//! | `PermissionRequest` | `attention.requested(kind: permission)` over control, held |
//! | `SubagentStart` / `SubagentStop` | the delegation pair |
//! | `PreCompact` / `PostCompact` | nothing / `session.compacted` |
//! | `Notification` | `progress.status`; `permission_prompt` nothing |
//! | `TodoCreated` / `TodoCompleted` | `progress.task.planned` / `.completed`; the `validation` phase nothing |
//!
//! Deviations: compaction once, at the post moment; the `permission_prompt`
//! notification is suppressed against the first-class `PermissionRequest` hook; each
//! todo hook fires twice per write (a `validation` phase, then `postWrite`) and only the
//! persisted write is the event (an absent or unknown phase emits: fail-open to
//! emission); the `all_todos` snapshot is not forwarded (payload minimalism). The
//! streaming `MessageDisplay` hook is left unregistered by `aep setup`.

use serde_json::{json, Value};

use crate::draft::Draft;
use crate::family::{self, ended_normal, started, Hook};
use crate::json::{get, s};

/// The vendor token.
pub const VENDOR: &str = "qwen-code";

/// Maps one Qwen Code hook payload.
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::qwen_code::map(&json!({"hook_event_name": "Notification", "notification_type": "permission_prompt"}));
/// assert!(d.is_empty()); // the PermissionRequest hook carries this moment
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    let h = Hook::read(p, "tool_use_id");
    let d = match h.name {
        "SessionStart" => {
            started(p, VENDOR).meta_opt("permission_mode", get(p, "permission_mode").cloned())
        }
        "SessionEnd" => ended_normal(),
        "Stop" => Draft::new("run.finished").usage(get(p, "input_tokens"), get(p, "output_tokens")),
        "StopFailure" => {
            Draft::new("run.failed").meta("reason", json!(s(p, "error").unwrap_or("error")))
        }
        "PreCompact" => return Vec::new(),
        "PostCompact" => Draft::new("session.compacted")
            .meta_opt("trigger", get(p, "trigger").cloned())
            .content_opt("summary", get(p, "compact_summary").cloned()),
        "Notification" if s(p, "notification_type") == Some("permission_prompt") => {
            return Vec::new()
        }
        "Notification" => Draft::new("progress.status")
            .content_opt("message", get(p, "message").cloned())
            .subject_opt(s(p, "notification_type")),
        "TodoCreated" | "TodoCompleted" if s(p, "phase") == Some("validation") => {
            return Vec::new()
        }
        "TodoCreated" => family::task("progress.task.planned", p, "todo_content", "todo_id"),
        "TodoCompleted" => family::task("progress.task.completed", p, "todo_content", "todo_id"),
        // The moments the family maps alike, else the vendor fallback.
        other => h
            .shared(VENDOR)
            .unwrap_or_else(|| family::fallback(VENDOR, other)),
    };
    vec![d.on_session(s(p, "session_id"))]
}
