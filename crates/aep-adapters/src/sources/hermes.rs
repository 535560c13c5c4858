//! Hermes Agent shell hooks (AEP-0002 Annex A.10): twelve of the twenty-three events
//! mapped onto the run, tool, attention and delegation lifecycle; observe-only.
//!
//! Identity: `session_id` is the AEP session (the subagent hooks carry the parent's, so
//! the delegation pair lands on the parent; the approval hooks carry none, only
//! `extra.session_key`, which stands in); the vendor's real per-turn `extra.turn_id`
//! rides verbatim as the run id (no synthesis); `extra.tool_call_id` pairs the tool
//! trio; the approval pair is keyed by its `pattern_key`. Every payload carries
//! `extra.telemetry_schema_version` (`hermes.observer.v1` at the pinned tag), the drift
//! sentinel.
//!
//! | hook | events |
//! |---|---|
//! | `on_session_start` | `session.started` |
//! | `pre_llm_call` | `run.started` (`message_digest` of the user message; the message as content) |
//! | `pre_tool_call` | `tool.requested`; for `clarify`, a `kind: form` card beside it ([`clarify_card`]) |
//! | `post_tool_call` | by `status`: `tool.completed` / `tool.failed` / `tool.denied` by `policy`; for `clarify`, the answer beside it ([`clarify_outcome`]) |
//! | `pre_approval_request` | `attention.requested(kind: permission)` with the vendor's four-way menu as options, `respond_via: ["oob"]` |
//! | `post_approval_response` | `attention.answered` via `oob` (the choice verbatim), or `attention.timeout` |
//! | `on_session_end` | per TURN: `run.finished`, or `run.cancelled` by the user when interrupted (never a session end) |
//! | `subagent_start` / `subagent_stop` | the delegation pair, subject the child session |
//! | `api_request_error` | `x.hermes.api.error` at `error` severity |
//! | `on_session_finalize` | `session.ended` (the only session end) |
//! | `on_session_reset` | `x.hermes.session.reset` (it fires with the successor's id: a `session.ended` would end a session at its birth) |
//! | anything else | `x.hermes.{hook, dotted}` |
//!
//! No compaction moment exists on this surface and none is invented. Observe-only:
//! the vendor's own approval gate is observed read-only.

use aep_core::Severity;
use serde_json::{json, Value};

use crate::draft::Draft;
use crate::family::{self, requested};
use crate::form::{self, Field};
use crate::json::{get, s};
use crate::naming::{dotted, vendor_type};

/// The vendor token.
pub const VENDOR: &str = "hermes";

/// The ask-the-user tool.
pub const CLARIFY: &str = "clarify";

/// Maps one Hermes shell-hook envelope (`{hook_event_name, tool_name, tool_input,
/// session_id, cwd, extra}`).
///
/// ```
/// use serde_json::json;
/// let d = aep_adapters::sources::hermes::map(&json!({"hook_event_name": "on_session_finalize", "session_id": "s", "extra": {}}));
/// assert_eq!(d[0].event_type(), "session.ended");
/// ```
pub fn map(p: &Value) -> Vec<Draft> {
    let hook = s(p, "hook_event_name").unwrap_or("unknown");
    let extra = get(p, "extra").unwrap_or(&Value::Null);
    let tool_name = s(p, "tool_name").unwrap_or("unknown");
    let call = s(extra, "tool_call_id");
    let out: Vec<Draft> = match hook {
        "on_session_start" => vec![Draft::new("session.started")
            .meta("client", family::client(VENDOR, None))
            .content_opt("cwd", get(p, "cwd").cloned())],
        "pre_llm_call" => {
            let mut d = family::run_started(get(extra, "user_message").cloned());
            if let Some(m) = get(extra, "user_message") {
                d = d.digest("message_digest", m);
            }
            vec![d]
        }
        "pre_tool_call" => {
            let mut v = vec![requested(tool_name, call, get(p, "tool_input"))];
            if tool_name == CLARIFY {
                v.extend(clarify_card(
                    get(p, "tool_input").unwrap_or(&Value::Null),
                    call,
                ));
            }
            v
        }
        "post_tool_call" => {
            let status = s(extra, "status").unwrap_or("ok");
            let d = match status {
                "error" => family::failed(
                    tool_name,
                    call,
                    s(extra, "error_type").unwrap_or("tool_error"),
                    get(extra, "error_message"),
                ),
                "blocked" => family::denied(tool_name, call, "policy")
                    .content_opt("rule", get(extra, "error_message").cloned()),
                _ => family::completed(tool_name, call, get(extra, "result")),
            };
            let mut v = vec![d.meta_opt("duration_ms", get(extra, "duration_ms").cloned())];
            if tool_name == CLARIFY {
                v.extend(clarify_outcome(status, get(extra, "result"), call));
            }
            v
        }
        "pre_approval_request" => {
            let key = s(extra, "pattern_key");
            vec![Draft::new("attention.requested")
                .meta("kind", json!("permission"))
                .both(
                    "prompt",
                    json!(match s(extra, "command") {
                        Some(c) => format!("Approval requested: {c}"),
                        None => "Approval requested".to_owned(),
                    }),
                    json!(format!(
                        "{VENDOR} requests permission: {}",
                        key.unwrap_or("command")
                    )),
                )
                .meta(
                    "options",
                    json!([
                        {"id": "once", "label": "Allow once"},
                        {"id": "session", "label": "Allow for this session"},
                        {"id": "always", "label": "Add to permanent allowlist"},
                        {"id": "deny", "label": "Deny"}
                    ]),
                )
                .meta("respond_via", json!(["oob"]))
                .subject_opt(key)
                .with_attention_key(key)]
        }
        "post_approval_response" => {
            let key = s(extra, "pattern_key");
            let d = match s(extra, "choice") {
                Some("timeout") => Draft::new("attention.timeout"),
                choice => Draft::new("attention.answered")
                    .meta_in(&["answer", "option"], json!(choice.unwrap_or("deny")))
                    .meta("via", json!("oob")),
            };
            vec![d.subject_opt(key).with_attention_key(key)]
        }
        "on_session_end" => {
            let flag = |k: &str| get(extra, k).and_then(Value::as_bool);
            vec![if flag("interrupted") == Some(true) {
                Draft::new("run.cancelled").meta("by", json!("user"))
            } else if flag("completed") == Some(false) {
                Draft::new("run.failed").meta("reason", json!("incomplete"))
            } else {
                Draft::new("run.finished")
            }]
        }
        "subagent_start" => vec![delegation("delegation.subagent.started", extra)
            .meta_opt("role", get(extra, "child_role").cloned())
            .content_opt("goal", get(extra, "child_goal").cloned())],
        "subagent_stop" => vec![delegation("delegation.subagent.stopped", extra)
            .meta_opt("status", get(extra, "child_status").cloned())
            .meta_opt("duration_ms", get(extra, "duration_ms").cloned())
            .content_opt("summary", get(extra, "child_summary").cloned())],
        "api_request_error" => vec![Draft::new("x.hermes.api.error")
            .meta_opt("status_code", get(extra, "status_code").cloned())
            .meta_opt("retry_count", get(extra, "retry_count").cloned())
            .meta_opt("reason", get(extra, "reason").cloned())
            .content_opt(
                "message",
                get(extra, "error").and_then(|e| get(e, "message")).cloned(),
            )
            .severity(Severity::Error)],
        "on_session_finalize" => vec![family::ended_normal()],
        "on_session_reset" => {
            vec![Draft::new("x.hermes.session.reset")
                .meta_opt("reason", get(extra, "reason").cloned())]
        }
        other => vec![Draft::new(vendor_type(VENDOR, &dotted(other))).severity(Severity::Debug)],
    };
    let session = s(p, "session_id")
        .or(s(extra, "session_key"))
        .or(s(extra, "parent_session_id"));
    let run = s(extra, "turn_id");
    out.into_iter()
        .map(|d| d.on_session(session).on_run(run))
        .collect()
}

/// The choices `clarify` offers, normalized as the vendor's entry point does: strings
/// trimmed, `{description}` objects read, empties dropped, at most four.
fn clarify_choices(input: &Value) -> Vec<String> {
    get(input, "choices")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|c| match c {
                    Value::String(t) => Some(t.trim().to_owned()),
                    other => s(other, "description")
                        .or(s(other, "label"))
                        .or(s(other, "text"))
                        .map(|t| t.trim().to_owned()),
                })
                .filter(|t| !t.is_empty())
                .take(4)
                .collect()
        })
        .unwrap_or_default()
}

/// The form overlay of a `clarify` call (AEP-0006), beside its tool events: one field,
/// a select with `other: true` when choices are offered, a string otherwise;
/// `respond_via: ["oob"]` (the answer is given in Hermes's own UI). A question-less call
/// has no card.
///
/// ```
/// use serde_json::json;
/// let card = aep_adapters::sources::hermes::clarify_card(&json!({"question": "Ship?", "choices": ["yes", " no "]}), Some("tc1"));
/// assert_eq!(card[0].event_type(), "attention.requested");
/// assert!(aep_adapters::sources::hermes::clarify_card(&json!({}), Some("tc1")).is_empty());
/// ```
pub fn clarify_card(input: &Value, call: Option<&str>) -> Vec<Draft> {
    let Some(question) = s(input, "question") else {
        return Vec::new();
    };
    let choices = clarify_choices(input);
    let field = Field {
        id: "1".into(),
        kind: if choices.is_empty() {
            "string"
        } else {
            "select"
        },
        label: question.to_owned(),
        required: Some(true),
        other: !choices.is_empty(),
        multi: false,
        choices: form::numbered(choices),
        bounds: (None, None),
    };
    let (content, structural) = form::fields(&[field]);
    vec![Draft::new("attention.requested")
        .meta("kind", json!("form"))
        .meta("prompt", json!(format!("{VENDOR} asks a question")))
        .both("fields", content, structural)
        .meta("respond_via", json!(["oob"]))
        .subject_opt(call)
        .with_attention_key(call)]
}

/// How a `clarify` call ended, from its result (`{question, choices_offered,
/// user_response}` as JSON text): a picked choice is answered with its structural
/// 1-based id, any other text is the free-text answer (gated `redacted`); the vendor's
/// timeout sentinels are `attention.timeout`; a cancel, an undeliverable prompt, an
/// empty answer, a block or an error dismiss. Never a fabricated answer.
///
/// ```
/// use serde_json::json;
/// let r = json!(r#"{"question":"Q?","choices_offered":["a","b"],"user_response":"b"}"#);
/// let d = aep_adapters::sources::hermes::clarify_outcome("ok", Some(&r), Some("tc1"));
/// assert_eq!(d[0].get("answer"), None); // nested: answer.values
/// assert_eq!(d[0].event_type(), "attention.answered");
/// ```
pub fn clarify_outcome(status: &str, result: Option<&Value>, call: Option<&str>) -> Vec<Draft> {
    let dismissed = || {
        Draft::new("attention.resolved")
            .meta("resolution", json!("dismissed"))
            .subject_opt(call)
            .with_attention_key(call)
    };
    if status != "ok" {
        return vec![dismissed()];
    }
    let parsed: Value = match result {
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or(Value::Null),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    let answer = s(&parsed, "user_response").map(str::trim).unwrap_or("");
    let lower = answer.to_ascii_lowercase();
    if lower.starts_with("the user did not provide a response")
        || lower.starts_with("[user did not respond")
    {
        return vec![Draft::new("attention.timeout")
            .subject_opt(call)
            .with_attention_key(call)];
    }
    if answer.is_empty()
        || lower.starts_with("the user cancelled")
        || lower.starts_with("[clarify prompt could not be delivered")
    {
        return vec![dismissed()];
    }
    let offered: Vec<&str> = get(&parsed, "choices_offered")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::trim).collect())
        .unwrap_or_default();
    let d = match offered.iter().position(|c| *c == answer) {
        Some(i) => Draft::new("attention.answered")
            .meta_in(&["answer", "values"], json!({"1": (i + 1).to_string()})),
        None => Draft::new("attention.answered").both_in(
            &["answer", "values"],
            json!({"1": answer}),
            json!({}),
        ),
    };
    vec![d
        .meta("via", json!("oob"))
        .subject_opt(call)
        .with_attention_key(call)]
}

/// A delegation moment about the child session `child_session_id` names: the child as
/// `child` and as the subject.
fn delegation(event_type: &str, extra: &Value) -> Draft {
    let child = s(extra, "child_session_id");
    Draft::new(event_type)
        .meta_opt("child", child.map(|c| json!({"session": c})))
        .subject_opt(child)
}
