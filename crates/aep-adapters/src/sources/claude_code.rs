//! Claude Code hooks (AEP-0002 Annex A.1): twenty-nine hooks, twenty on core types and
//! the rest in `x.claude-code.session.*`.
//!
//! Identity: `session_id` is the AEP session; a Claude Code turn is an AEP run, opened
//! by `UserPromptSubmit` and closed by `Stop`/`StopFailure` (the session runtime mints
//! the run id: Claude Code exposes none); `tool_use_id` pairs the tool events.
//!
//! | hook | event |
//! |---|---|
//! | `SessionStart` / `SessionEnd` | `session.started` (`client`, `trigger`, the model, `permission_mode`) / `session.ended` (`normal`) |
//! | `UserPromptSubmit` | `run.started` (the prompt as content) |
//! | `Stop` / `StopFailure` | `run.finished` / `run.failed` (the vendor's error class as reason) |
//! | `PreToolUse` / `PostToolUse` / `PostToolUseFailure` | the tool trio |
//! | `PermissionDenied` | `tool.denied` by `policy` (the auto-mode classifier's block; the reason as the rule, content) |
//! | `PermissionRequest` | `attention.requested(kind: permission)`, Allow/Deny over control, held; for `AskUserQuestion`, `kind: form` (below) |
//! | `Elicitation` | `attention.requested(kind: form)` from the MCP server's requested schema |
//! | `ElicitationResult` | `attention.answered` via `oob` (accepted content as `values`) or `attention.resolved(dismissed)` |
//! | `SubagentStart` / `SubagentStop` | the delegation pair |
//! | `PreCompact` / `PostCompact` | nothing / `session.compacted` |
//! | `TaskCreated` / `TaskCompleted` | `progress.task.planned` / `.completed` (subject the task id, the subject line as content) |
//! | `Notification` | by subtype: `idle_prompt` → `attention.requested(kind: input)`, answered in the terminal (`respond_via: ["oob"]`); `permission_prompt` and `elicitation_dialog` nothing (their first-class hooks carry the moment); any other → `progress.status` |
//! | `TeammateIdle` | `agent.idle` |
//! | anything else (`Setup`, `ConfigChange`, `InstructionsLoaded`, `CwdChanged`, `FileChanged`, `WorktreeCreate`, `WorktreeRemove`, ...) | `x.claude-code.session.{snake_case(hook)}` |
//!
//! Deviations, documented as the Annex asks (the pins cover `AskUserQuestion` and
//! elicitation only; the rest follows the key rules, then the nearest pinned sibling,
//! Qwen Code):
//! - `PreCompact` emits nothing: compaction once, at `PostCompact`.
//! - `AskUserQuestion` arrives through `PermissionRequest` but is the agent asking the
//!   human, not a permission gate: one `kind: form` request per tool call (AEP-0006),
//!   one select field per question, `other: true` always, ids 1-based indexes.
//! - `Stop`'s last assistant message is message-stream territory (AEP-0007) and is not
//!   captured on the run terminal.
//! - The idle notification's subtype split follows the Annex; its request is settled
//!   by the runtime when the next prompt arrives (answered in the terminal) or dismissed
//!   when the session ends.

use serde_json::{json, Value};

use crate::draft::Draft;
use crate::family::{self, ended_normal, started, Hook};
use crate::form;
use crate::json::{get, s};

/// The vendor token.
pub const VENDOR: &str = "claude-code";

/// The tool whose permission request is a question to the human.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// Maps one Claude Code hook payload.
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::claude_code::map(&json!({"hook_event_name": "PermissionDenied", "tool_name": "Bash", "tool_use_id": "t1"}));
/// assert_eq!(d[0].event_type(), "tool.denied");
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    let h = Hook::read(p, "tool_use_id");
    let (tool_name, call) = (h.tool, h.call);
    let d = match h.name {
        "SessionStart" => started(p, VENDOR)
            .meta_opt("agent_type", get(p, "agent_type").cloned())
            .meta_opt("permission_mode", get(p, "permission_mode").cloned()),
        "SessionEnd" => ended_normal(),
        "StopFailure" => Draft::new("run.failed").meta(
            "reason",
            json!(s(p, "error").or(s(p, "error_type")).unwrap_or("error")),
        ),
        "PermissionDenied" => {
            family::denied(tool_name, call, "policy").content_opt("rule", get(p, "reason").cloned())
        }
        "PermissionRequest" if tool_name == ASK_USER_QUESTION => {
            let questions = get(p, "tool_input")
                .and_then(|i| get(i, "questions"))
                .unwrap_or(&Value::Null);
            ask_user_question(questions).with_attention_key(call.or(Some(tool_name)))
        }
        "Elicitation" => {
            let schema = get(p, "requested_schema")
                .or_else(|| get(p, "requestedSchema"))
                .unwrap_or(&Value::Null);
            elicitation(get(p, "message"), schema)
                .subject_opt(s(p, "mcp_server_name"))
                .with_attention_key(elicitation_key(p))
        }
        "ElicitationResult" => match s(p, "action") {
            Some("accept") => Draft::new("attention.answered")
                .both_in(
                    &["answer", "values"],
                    get(p, "content").cloned().unwrap_or_else(|| json!({})),
                    // With no request at hand nothing vouches for a value (AEP-0006):
                    // below `redacted` none survives.
                    json!({}),
                )
                .meta("via", json!("oob")),
            _ => Draft::new("attention.resolved").meta("resolution", json!("dismissed")),
        }
        .subject_opt(s(p, "mcp_server_name"))
        .with_attention_key(elicitation_key(p)),
        "PreCompact" => return Vec::new(),
        "PostCompact" => Draft::new("session.compacted")
            .meta_opt(
                "trigger",
                get(p, "trigger")
                    .or_else(|| get(p, "compact_trigger"))
                    .cloned(),
            )
            .content_opt("summary", get(p, "compact_summary").cloned()),
        "TaskCreated" => family::task("progress.task.planned", p, "task_subject", "task_id"),
        "TaskCompleted" => family::task("progress.task.completed", p, "task_subject", "task_id"),
        "Notification" => match s(p, "notification_type") {
            Some("permission_prompt" | "elicitation_dialog") => return Vec::new(),
            Some("idle_prompt") => Draft::new("attention.requested")
                .meta("kind", json!("input"))
                .both(
                    "prompt",
                    get(p, "message")
                        .cloned()
                        .unwrap_or_else(|| json!("Claude is waiting for your input")),
                    json!(format!("{VENDOR} requests input")),
                )
                .meta("respond_via", json!(["oob"]))
                .subject("idle_prompt")
                .with_attention_key(Some("idle_prompt")),
            kind => Draft::new("progress.status")
                .content_opt("message", get(p, "message").cloned())
                .subject_opt(kind),
        },
        "TeammateIdle" => Draft::new("agent.idle")
            .meta("reason", json!("teammate_idle"))
            .subject_opt(s(p, "teammate_name")),
        // The moments the family maps alike, else the vendor fallback.
        other => h
            .shared(VENDOR)
            .unwrap_or_else(|| family::fallback(VENDOR, other)),
    };
    vec![d.on_session(s(p, "session_id"))]
}

/// The key an elicitation and its result share: the vendor's elicitation id, else the
/// MCP server's name.
fn elicitation_key(p: &Value) -> Option<&str> {
    s(p, "elicitation_id")
        .or(s(p, "mcp_server_name"))
        .or(Some("elicitation"))
}

/// `AskUserQuestion` as one `attention.requested(kind: form)` (AEP-0006): the prompt
/// `"claude-code asks N questions"` (structural at every level), one select field per
/// question, answerable over control.
///
/// ```
/// use serde_json::json;
/// let q = json!([{"question": "Which?", "header": "DB", "multiSelect": false, "options": [{"label": "A"}, {"label": "B"}]}]);
/// let r = aep_adapters::sources::claude_code::ask_user_question(&q).render(&aep_adapters::Posture::default());
/// assert_eq!(r.data["prompt"], "claude-code asks 1 question");
/// assert_eq!(r.data["fields"][0]["choices"][1], json!({"id": "2", "label": "B"}));
/// ```
pub fn ask_user_question(questions: &Value) -> Draft {
    let fields = form::ask_user_question(questions, true);
    let (content, structural) = form::fields(&fields);
    Draft::new("attention.requested")
        .meta("kind", json!("form"))
        .meta("prompt", json!(form::asks(VENDOR, fields.len())))
        .both("fields", content, structural)
        .meta("respond_via", json!(["control"]))
        .subject(ASK_USER_QUESTION)
}

/// An MCP elicitation (`message` + a flat requested schema) as one
/// `attention.requested(kind: form)`: the message as the prompt (synthesized below
/// `redacted`: `"claude-code requests input (N fields)"`), closed selects for enums.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
/// let r = aep_adapters::sources::claude_code::elicitation(Some(&json!("Go?")), &schema)
///     .render(&aep_adapters::Posture::from_ceiling("metadata")?);
/// assert_eq!(r.data["prompt"], "claude-code requests input (1 field)");
/// # Ok::<(), aep_adapters::PostureError>(())
/// ```
pub fn elicitation(message: Option<&Value>, schema: &Value) -> Draft {
    let fields = form::elicitation(schema);
    let (content, structural) = form::fields(&fields);
    let n = fields.len();
    let synthesized = format!(
        "{VENDOR} requests input ({n} field{})",
        if n == 1 { "" } else { "s" }
    );
    Draft::new("attention.requested")
        .meta("kind", json!("form"))
        .both(
            "prompt",
            message
                .cloned()
                .unwrap_or_else(|| json!(synthesized.clone())),
            json!(synthesized),
        )
        .both("fields", content, structural)
        .meta("respond_via", json!(["control"]))
}
