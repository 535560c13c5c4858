//! VS Code agent hooks (AEP-0002 Annex A.5): the eight-event VSCode-target Preview
//! surface, a Claude-Code-family member.
//!
//! Identity: `session_id` is the AEP session (optional in the vendor envelope: a
//! missing one lands on the runtime's `unknown` session); runs are synthesized per
//! `UserPromptSubmit`/`Stop` pair; `tool_use_id` pairs the tool events.
//!
//! | hook | event |
//! |---|---|
//! | `SessionStart` | `session.started` (`client`, `trigger`, the model, `agent_type`) |
//! | `UserPromptSubmit` / `Stop` | `run.started` / `run.finished` |
//! | `PreToolUse` / `PostToolUse` | `tool.requested` / `tool.completed` |
//! | `PreCompact` | `session.compacted` |
//! | `SubagentStart` / `SubagentStop` | the delegation pair |
//!
//! Deviations and stated gaps: compaction is carried at the pre moment, the only one
//! this surface exposes; `PostToolUse` fires on success only, so `tool.failed`,
//! `run.failed` and `session.ended` have no vendor moment here; `transcript_path` (a
//! workstation-local path) and the vendor's `timestamp` are never forwarded (the
//! envelope time is the adapter's clock). Observe-only by default.

/// The eight hooks of the VSCode-target Preview surface (Annex A.5), each mapped by this
/// module; `aep setup vscode` registers every one.
///
/// ```
/// assert_eq!(aep_adapters::sources::vscode::HOOKS.len(), 8);
/// assert!(!aep_adapters::sources::vscode::HOOKS.contains(&"PermissionRequest"));
/// ```
pub const HOOKS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "SubagentStart",
    "SubagentStop",
    "Stop",
];

use serde_json::Value;

use crate::draft::Draft;
use crate::family::{self, started, Hook};
use crate::json::{get, s};

/// The vendor token.
pub const VENDOR: &str = "vscode";

/// Maps one VS Code agent hook payload.
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::vscode::map(&json!({"hook_event_name": "PreCompact", "trigger": "auto"}));
/// assert_eq!(d[0].event_type(), "session.compacted");
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    let h = Hook::read(p, "tool_use_id");
    let d = match h.name {
        "SessionStart" => started(p, VENDOR).meta_opt("agent_type", get(p, "agent_type").cloned()),
        // Not hooks of this surface (stated gaps): the fallback.
        "PostToolUseFailure" | "PermissionRequest" => family::fallback(VENDOR, h.name),
        // Documented deviation: the pre moment is the only compaction moment here.
        "PreCompact" => Draft::new("session.compacted")
            .meta_opt("trigger", get(p, "trigger").cloned())
            .content_opt(
                "custom_instructions",
                get(p, "custom_instructions").cloned(),
            ),
        // The moments the family maps alike, else the vendor fallback.
        other => h
            .shared(VENDOR)
            .unwrap_or_else(|| family::fallback(VENDOR, other)),
    };
    vec![d.on_session(s(p, "session_id"))]
}
