//! Kimi Code CLI hooks (AEP-0002 Annex A.6): the sixteen-event external-hooks
//! surface, and the Kimi web channel ([`web`]).
//!
//! Identity: `session_id` is the AEP session, absent on the subagent hooks (those land
//! on the runtime's `unknown` session); runs are synthesized per `UserPromptSubmit`
//! and closed by `Stop`/`StopFailure`/`Interrupt` (the vendor's `turn_id` never becomes
//! the run id: one id authority); `tool_call_id` pairs tool and permission moments.
//! `cwd` never rides.
//!
//! | hook | event |
//! |---|---|
//! | `SessionStart` / `SessionEnd` | `session.started` (`trigger`) / `session.ended` (`normal`) |
//! | `UserPromptSubmit` | `run.started` (the content parts joined, as content); with `is_steer`: `x.kimi-code.run.steer_submitted` (a steer rides the running turn, it opens no run) |
//! | `Stop` / `StopFailure` / `Interrupt` | `run.finished` / `run.failed` (`error_type` as reason and error type) / `run.cancelled` by the user |
//! | `PreToolUse` / `PostToolUse` / `PostToolUseFailure` | the tool trio (`error.name` → error type) |
//! | `PermissionRequest` | `attention.requested(kind: permission)`, `respond_via: ["oob"]`, no options (the vendor owns its choice surface) |
//! | `PermissionResult` | `attention.answered` via `oob` (`decision` verbatim as the option, feedback as text); `cancelled` → `attention.resolved(dismissed)`; `error` → the fallback |
//! | `SubagentStart` / `SubagentStop` | the delegation pair, subject the agent name |
//! | `PreCompact` | `x.kimi-code.session.pre_compact` (both moments exist: the post moment is the truthful carrier) |
//! | `PostCompact` | `session.compacted` |
//! | `Notification` | `progress.status` (background-task status, never an attention loop) |
//!
//! Observe-only by default: the permission pair is the vendor's own prompt, observed.

/// The sixteen hooks of Kimi Code's external-hooks surface (Annex A.6), each mapped by
/// this module; `aep setup kimi-code` registers every one.
///
/// ```
/// assert_eq!(aep_adapters::sources::kimi_code::HOOKS.len(), 16);
/// assert!(aep_adapters::sources::kimi_code::HOOKS.contains(&"PermissionRequest"));
/// ```
pub const HOOKS: [&str; 16] = [
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "Interrupt",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionResult",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
];

use serde_json::{json, Value};

use crate::channel::ChannelMode;
use crate::draft::Draft;
use crate::family::{self, ended_normal, requested, Hook};
use crate::form::{self, Field};
use crate::json::{get, joined_text, s, s_at};
use crate::naming::snake;

/// The vendor token.
pub const VENDOR: &str = "kimi-code";

/// Maps one Kimi Code hook payload.
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::kimi_code::map(&json!({"hook_event_name": "Interrupt", "session_id": "s"}));
/// assert_eq!(d[0].event_type(), "run.cancelled");
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    let h = Hook::read(p, "tool_call_id");
    let (hook, tool_name, call) = (h.name, h.tool, h.call);
    let d = match hook {
        "SessionStart" => {
            Draft::new("session.started").meta_opt("trigger", get(p, "source").cloned())
        }
        "SessionEnd" => ended_normal(),
        "UserPromptSubmit" if get(p, "is_steer").and_then(Value::as_bool) == Some(true) => {
            Draft::new("x.kimi-code.run.steer_submitted").content_opt(
                "prompt",
                get(p, "prompt").and_then(joined_text).map(Value::String),
            )
        }
        "UserPromptSubmit" => {
            family::run_started(get(p, "prompt").and_then(joined_text).map(Value::String))
        }
        "StopFailure" => {
            let kind = s(p, "error_type").unwrap_or("error");
            Draft::new("run.failed")
                .meta("reason", json!(kind))
                .meta_in(&["error", "type"], json!(kind))
                .content_in(
                    &["error", "message"],
                    get(p, "error_message").cloned().unwrap_or(Value::Null),
                )
        }
        "Interrupt" => Draft::new("run.cancelled").meta("by", json!("user")),
        "PostToolUse" => family::completed(tool_name, call, get(p, "tool_output")),
        "PostToolUseFailure" => {
            let error = get(p, "error");
            let kind = error.and_then(|e| s(e, "name")).unwrap_or("tool_error");
            family::failed(tool_name, call, kind, error.and_then(|e| get(e, "message")))
        }
        "PermissionRequest" => Draft::new("attention.requested")
            .meta("kind", json!("permission"))
            .both(
                "prompt",
                json!(s(p, "display").or(s(p, "action")).map_or_else(
                    || format!("Permission requested: {tool_name}"),
                    str::to_owned
                )),
                json!(format!("{VENDOR} requests permission: {tool_name}")),
            )
            .meta("respond_via", json!(["oob"]))
            .subject(tool_name)
            .with_attention_key(call),
        "PermissionResult" => match s(p, "decision") {
            Some("cancelled") => Draft::new("attention.resolved")
                .meta("resolution", json!("dismissed"))
                .with_attention_key(call),
            Some(decision) if decision != "error" => Draft::new("attention.answered")
                .meta_in(&["answer", "option"], json!(decision))
                .content_in(
                    &["answer", "text"],
                    get(p, "feedback").cloned().unwrap_or(Value::Null),
                )
                .meta("via", json!("oob"))
                .meta_opt("label", get(p, "selected_label").cloned())
                .with_attention_key(call),
            // An internal gate failure is not an answer: never an attention outcome.
            _ => family::fallback(VENDOR, hook),
        },
        "SubagentStart" => Draft::new("delegation.subagent.started")
            .content_opt("prompt", get(p, "prompt").cloned())
            .subject_opt(s(p, "agent_name")),
        "SubagentStop" => Draft::new("delegation.subagent.stopped")
            .content_opt("response", get(p, "response").cloned())
            .subject_opt(s(p, "agent_name")),
        // Both compaction moments exist: the post moment is the truthful carrier.
        "PreCompact" => family::fallback(VENDOR, hook)
            .severity(aep_core::Severity::Info)
            .meta_opt("trigger", get(p, "trigger").cloned())
            .meta_opt("token_count", get(p, "token_count").cloned()),
        "PostCompact" => Draft::new("session.compacted")
            .meta_opt("trigger", get(p, "trigger").cloned())
            .meta_opt(
                "estimated_token_count",
                get(p, "estimated_token_count").cloned(),
            ),
        "Notification" => Draft::new("progress.status")
            .meta_opt("severity", get(p, "severity").cloned())
            .content_opt("message", get(p, "title").cloned())
            .subject_opt(s(p, "notification_type")),
        // `Stop` and `PreToolUse` as the family maps them, else the vendor fallback.
        other => h
            .shared(VENDOR)
            .unwrap_or_else(|| family::fallback(VENDOR, other)),
    };
    vec![d.on_session(s(p, "session_id"))]
}

/// Maps one frame of the Kimi web channel (the kap-server WebSocket stream:
/// `{type, seq, session_id, timestamp, payload, volatile?}`) in `mode`.
///
/// Volatile frames (the vendor's own do-not-persist marker) and the internal
/// `permission.approval.*` bus echoes never emit. Companion mode emits the
/// channel-visible `x.kimi-code.web.*` family with empty data. Primary mode maps the
/// wire: the vendor's real turn boundaries carry the run pair (no synthesis, no
/// fabricated session lifecycle), `tool.call.started` opens the tool pair
/// (`tool.result` names no tool: the receiver pairs it by call id), and every ask maps
/// to `attention.requested` without options or `respond_via` (a read-only channel).
///
/// ```
/// use aep_adapters::{sources::kimi_code::web, ChannelMode};
/// use serde_json::json;
/// let frame = json!({"type": "turn.started", "session_id": "s", "payload": {"origin": {"kind": "user"}}});
/// assert_eq!(web(&frame, ChannelMode::Companion)[0].event_type(), "x.kimi-code.web.turn.started");
/// assert_eq!(web(&frame, ChannelMode::Primary)[0].event_type(), "run.started");
/// ```
pub fn web(frame: &Value, mode: ChannelMode) -> Vec<Draft> {
    let ty = s(frame, "type").unwrap_or("unknown");
    if get(frame, "volatile").and_then(Value::as_bool) == Some(true)
        || ty.starts_with("permission.approval.")
    {
        return Vec::new();
    }
    let family_type = format!(
        "x.{VENDOR}.web.{}",
        ty.split('.').map(snake).collect::<Vec<_>>().join(".")
    );
    let session = s(frame, "session_id");
    let d = match mode {
        ChannelMode::Companion => Some(Draft::new(family_type).severity(aep_core::Severity::Debug)),
        ChannelMode::Primary => web_primary(
            ty,
            &family_type,
            get(frame, "payload").unwrap_or(&Value::Null),
        ),
    };
    d.into_iter().map(|d| d.on_session(session)).collect()
}

fn web_primary(ty: &str, family_type: &str, p: &Value) -> Option<Draft> {
    let turn = get(p, "turnId").and_then(crate::json::scalar_text);
    Some(match ty {
        "turn.started" => {
            let by_user = s_at(p, &["origin", "kind"]) == Some("user");
            Draft::new("run.started")
                .meta_opt("trigger", by_user.then(|| json!("user")))
                .content_opt("prompt", get(p, "prompt").cloned())
                .on_run(turn.as_deref())
        }
        "turn.ended" => match s(p, "reason") {
            Some("completed") | None => Draft::new("run.finished"),
            Some("cancelled") => Draft::new("run.cancelled"),
            Some(other) => Draft::new("run.failed").meta("reason", json!(other)),
        }
        .on_run(turn.as_deref()),
        "tool.call.started" => requested(
            s(p, "name").unwrap_or("unknown"),
            s(p, "toolCallId"),
            get(p, "args"),
        ),
        // The result names no tool: the receiver pairs it by call id.
        "tool.result" => return None,
        "event.approval.requested" => {
            let tool = s(p, "tool_name").unwrap_or("unknown");
            Draft::new("attention.requested")
                .meta("kind", json!("permission"))
                .both(
                    "prompt",
                    json!(s(p, "action")
                        .map_or_else(|| format!("Permission requested: {tool}"), str::to_owned)),
                    json!(format!("{VENDOR} requests permission: {tool}")),
                )
                .subject_opt(s(p, "approval_id"))
                .with_attention_key(s(p, "approval_id"))
        }
        "event.approval.resolved" => match s(p, "decision") {
            Some(decision) => Draft::new("attention.answered")
                .meta_in(&["answer", "option"], json!(decision))
                .content_in(
                    &["answer", "text"],
                    get(p, "feedback").cloned().unwrap_or(Value::Null),
                )
                .meta("via", json!("oob")),
            None => Draft::new("attention.resolved").meta("resolution", json!("dismissed")),
        }
        .subject_opt(s(p, "approval_id"))
        .with_attention_key(s(p, "approval_id")),
        "event.question.requested" => {
            let questions = get(p, "questions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let fields: Vec<Field> = questions
                .iter()
                .filter_map(|q| {
                    Some(Field {
                        id: s(q, "id")?.to_owned(),
                        kind: "select",
                        label: s(q, "question").unwrap_or_default().to_owned(),
                        required: None,
                        other: false,
                        multi: false,
                        choices: get(q, "options")
                            .and_then(Value::as_array)
                            .map(|o| {
                                o.iter()
                                    .filter_map(|c| {
                                        Some((
                                            s(c, "id")?.to_owned(),
                                            s(c, "label").unwrap_or_default().to_owned(),
                                        ))
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                        bounds: (None, None),
                    })
                })
                .collect();
            let (content, structural) = form::fields(&fields);
            let prompt = match fields.as_slice() {
                [one] => one.label.clone(),
                many => form::asks(VENDOR, many.len()),
            };
            Draft::new("attention.requested")
                .meta("kind", json!("form"))
                .both(
                    "prompt",
                    json!(prompt),
                    json!(form::asks(VENDOR, fields.len())),
                )
                .both("fields", content, structural)
                .subject_opt(s(p, "question_id"))
                .with_attention_key(s(p, "question_id"))
        }
        "event.question.answered" => {
            let answers = get(p, "answers").cloned().unwrap_or_else(|| json!({}));
            Draft::new("attention.answered")
                .both_in(&["answer", "values"], answers, json!({}))
                .meta("via", json!("oob"))
                .subject_opt(s(p, "question_id"))
                .with_attention_key(s(p, "question_id"))
        }
        "event.question.dismissed" => Draft::new("attention.resolved")
            .meta("resolution", json!("dismissed"))
            .subject_opt(s(p, "question_id"))
            .with_attention_key(s(p, "question_id")),
        "event.session.work_changed" => Draft::new(family_type)
            .meta_opt("busy", get(p, "busy").cloned())
            .meta_opt(
                "pending_interaction",
                get(p, "pending_interaction").cloned(),
            ),
        "session.meta.updated" => {
            Draft::new(family_type).content_opt("patch", get(p, "patch").cloned())
        }
        _ => Draft::new(family_type).severity(aep_core::Severity::Debug),
    })
}
