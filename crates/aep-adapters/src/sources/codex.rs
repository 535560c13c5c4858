//! Codex hooks (AEP-0002 Annex A.2): ten hooks onto ten core types.
//!
//! Identity: the Codex `thread` (`session_id`) is the AEP session and its turn
//! (`turn_id`) the AEP run; no run is synthesized.
//!
//! | hook | event |
//! |---|---|
//! | `SessionStart` | `session.started` (`client`, `trigger` from `source`, the model; `cwd` content) |
//! | `UserPromptSubmit` | `run.started` (`trigger: user`; the prompt content) |
//! | `Stop` | `run.finished` |
//! | `PreToolUse` | `tool.requested` (`tool_use_id` pairs; args digest always, args content) |
//! | `PostToolUse` | `tool.completed` (result digest always) |
//! | `PermissionRequest` | `attention.requested(kind: permission)`, Allow/Deny over control |
//! | `SubagentStart` / `SubagentStop` | `delegation.subagent.started` / `.stopped` (subject the agent id) |
//! | `PreCompact` | nothing |
//! | `PostCompact` | `session.compacted` |
//! | anything else | `x.codex.session.{snake_case(hook)}` |
//!
//! Deviations, documented as the Annex asks:
//! - `PreCompact` emits nothing: compaction is emitted once, at `PostCompact` (the
//!   post-moment rule).
//! - Codex has no tool-failure hook: a failed command still arrives as `PostToolUse` and
//!   maps to `tool.completed`; `tool.failed` stays for runtime-reported failures, which
//!   this surface does not report.
//! - `SessionEnd` is not a Codex hook; a session ends when its state is dropped (see the
//!   session runtime).

use serde_json::Value;

use crate::draft::Draft;
use crate::family::{self, describe, held_permission, requested, run_started, started};
use crate::json::{get, s};

/// The vendor token.
pub const VENDOR: &str = "codex";

/// Maps one Codex hook payload.
///
/// ```
/// use serde_json::json;
/// let drafts = aep_adapters::sources::codex::map(&json!({"hook_event_name": "Stop", "session_id": "s", "turn_id": "t"}));
/// assert_eq!(drafts[0].event_type(), "run.finished");
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    let hook = s(p, "hook_event_name").unwrap_or("");
    let tool_name = s(p, "tool_name").unwrap_or("unknown");
    let call = s(p, "tool_use_id");
    let d = match hook {
        "SessionStart" => started(p, VENDOR),
        "UserPromptSubmit" => run_started(get(p, "prompt").cloned()),
        "Stop" => Draft::new("run.finished"),
        "PreToolUse" => requested(tool_name, call, get(p, "tool_input")),
        "PostToolUse" => family::completed(tool_name, call, get(p, "tool_response")),
        "PermissionRequest" => {
            held_permission(VENDOR, tool_name, describe(get(p, "tool_input")).as_deref())
                .with_attention_key(call.or(Some(tool_name)))
        }
        "SubagentStart" => Draft::new("delegation.subagent.started")
            .meta_opt("agent_type", get(p, "agent_type").cloned())
            .subject_opt(s(p, "agent_id")),
        "SubagentStop" => Draft::new("delegation.subagent.stopped")
            .meta_opt("agent_type", get(p, "agent_type").cloned())
            .subject_opt(s(p, "agent_id")),
        // Documented deviation: compaction is emitted once, at PostCompact.
        "PreCompact" => return Vec::new(),
        "PostCompact" => {
            Draft::new("session.compacted").meta_opt("trigger", get(p, "trigger").cloned())
        }
        other => family::fallback(VENDOR, if other.is_empty() { "unknown" } else { other }),
    };
    vec![d.on_session(s(p, "session_id")).on_run(s(p, "turn_id"))]
}
