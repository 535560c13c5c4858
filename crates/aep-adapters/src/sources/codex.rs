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
use crate::family::{self, started, Hook};
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
    let h = Hook::read(p, "tool_use_id");
    let d = match h.name {
        "SessionStart" => started(p, VENDOR),
        // Not a Codex hook (a failed command arrives as `PostToolUse`): the fallback.
        "PostToolUseFailure" => family::fallback(VENDOR, h.name),
        // Documented deviation: compaction is emitted once, at PostCompact.
        "PreCompact" => return Vec::new(),
        "PostCompact" => {
            Draft::new("session.compacted").meta_opt("trigger", get(p, "trigger").cloned())
        }
        // The moments the family maps alike, else the vendor fallback.
        other => h
            .shared(VENDOR)
            .unwrap_or_else(|| family::fallback(VENDOR, other)),
    };
    vec![d.on_session(s(p, "session_id")).on_run(s(p, "turn_id"))]
}
