//! What the hook-shaped sources share: the tool trio, the permission card, the
//! session frame, and the hooks the Claude-Code-shaped members map alike
//! ([`Hook::shared`]). Each source module decides which of these a hook becomes; the
//! shapes themselves are written once here.

use serde_json::{json, Map, Value};

use crate::draft::Draft;
use crate::json::{get, s};

/// The `tool` object of the tool trio: `{name, call_id?}`.
pub(crate) fn tool(name: &str, call: Option<&str>) -> Value {
    let mut t = Map::new();
    t.insert("name".into(), json!(name));
    if let Some(c) = call.filter(|c| !c.is_empty()) {
        t.insert("call_id".into(), json!(c));
    }
    Value::Object(t)
}

/// `tool.requested`: the args digest always (AEP-0003 §9.3, over the original
/// value), the args verbatim at `full`, redacted at exactly `redacted`.
pub(crate) fn requested(name: &str, call: Option<&str>, args: Option<&Value>) -> Draft {
    carrying("tool.requested", "args", name, call, args)
}

/// `tool.completed`: the result digest always, the result at `full`, redacted at
/// exactly `redacted`.
pub(crate) fn completed(name: &str, call: Option<&str>, result: Option<&Value>) -> Draft {
    carrying("tool.completed", "result", name, call, result)
}

/// A tool moment carrying `value` as `key`: `{key}_digest` always (over the original
/// value), `key` verbatim at `full`, `{key}_redacted` at exactly `redacted`.
fn carrying(
    event_type: &str,
    key: &str,
    name: &str,
    call: Option<&str>,
    value: Option<&Value>,
) -> Draft {
    let d = Draft::new(event_type)
        .meta("tool", tool(name, call))
        .subject(name)
        .with_call(call);
    match value {
        Some(v) => d
            .digest(&format!("{key}_digest"), v)
            .redacted_only(&format!("{key}_redacted"), v.clone())
            .full(key, v.clone()),
        None => d,
    }
}

/// `tool.failed` with the vendor's error class (structural) and its message
/// (content, `redacted`).
pub(crate) fn failed(name: &str, call: Option<&str>, kind: &str, message: Option<&Value>) -> Draft {
    Draft::new("tool.failed")
        .meta("tool", tool(name, call))
        .meta_in(&["error", "type"], json!(kind))
        .content_in(&["error", "message"], message_text(message))
        .subject(name)
        .with_call(call)
}

/// `tool.denied`: the tool refused before it ran, `by` whom (`policy`, `runtime`).
pub(crate) fn denied(name: &str, call: Option<&str>, by: &str) -> Draft {
    Draft::new("tool.denied")
        .meta("tool", tool(name, call))
        .meta("by", json!(by))
        .subject(name)
        .with_call(call)
}

/// The readable detail of a tool input for a permission prompt: the command (with its
/// stated description), else the path, URL, pattern or query it acts on.
pub(crate) fn describe(input: Option<&Value>) -> Option<String> {
    let input = input?;
    if let Some(text) = input.as_str().filter(|t| !t.is_empty()) {
        return Some(text.to_owned());
    }
    if let Some(cmd) = s(input, "command").or_else(|| s(input, "cmd")) {
        return Some(match s(input, "description") {
            Some(why) => format!("{cmd} ({why})"),
            None => cmd.to_owned(),
        });
    }
    ["file_path", "path", "url", "pattern", "query", "prompt"]
        .iter()
        .find_map(|k| s(input, k))
        .map(str::to_owned)
}

/// The two options a held permission gate can deliver.
pub(crate) fn allow_deny() -> Value {
    json!([{"id": "allow", "label": "Allow"}, {"id": "deny", "label": "Deny"}])
}

/// `attention.requested(kind: permission)`: the prompt `"Permission requested: {tool} —
/// {detail}"` at `redacted` and above, synthesized from structure below (AEP-0003 §9.2:
/// `"{agent} requests permission: {tool}"`).
pub(crate) fn permission(agent: &str, tool: &str, detail: Option<&str>) -> Draft {
    let prompt = match detail {
        Some(d) => format!("Permission requested: {tool} — {d}"),
        None => format!("Permission requested: {tool}"),
    };
    Draft::new("attention.requested")
        .meta("kind", json!("permission"))
        .both(
            "prompt",
            json!(prompt),
            json!(format!("{agent} requests permission: {tool}")),
        )
        .subject(tool)
}

/// A held gate's card: the permission prompt with the options the gate can deliver,
/// answerable over control.
pub(crate) fn held_permission(agent: &str, tool: &str, detail: Option<&str>) -> Draft {
    permission(agent, tool, detail)
        .meta("options", allow_deny())
        .meta("respond_via", json!(["control"]))
}

/// `session.ended` with the vendor's free-text reason collapsed to the schema's
/// `normal` (the siblings' convention).
pub(crate) fn ended_normal() -> Draft {
    Draft::new("session.ended").meta("reason", json!("normal"))
}

/// The `client` object of `session.started`.
pub(crate) fn client(name: &str, version: Option<&str>) -> Value {
    match version {
        Some(v) => json!({"name": name, "version": v}),
        None => json!({"name": name}),
    }
}

/// `session.started` of a hook agent: `client`, the vendor's `source` as `trigger`,
/// the model, and the working directory as content.
pub(crate) fn started(p: &Value, client_name: &str) -> Draft {
    Draft::new("session.started")
        .meta("client", client(client_name, None))
        .meta_opt("trigger", get(p, "source").cloned())
        .meta_opt("gen_ai.request.model", get(p, "model").cloned())
        .content_opt("cwd", get(p, "cwd").cloned())
}

/// `run.started` by the user, the prompt as content.
pub(crate) fn run_started(prompt: Option<Value>) -> Draft {
    Draft::new("run.started")
        .meta("trigger", json!("user"))
        .content_opt("prompt", prompt)
}

/// A task-list moment (`progress.task.planned` / `.completed`): the payload's
/// `title_key` as the task's title (content), subject its `id_key`.
pub(crate) fn task(event_type: &str, p: &Value, title_key: &str, id_key: &str) -> Draft {
    Draft::new(event_type)
        .content_in(
            &["task", "title"],
            get(p, title_key).cloned().unwrap_or(Value::Null),
        )
        .subject_opt(s(p, id_key))
}

/// The vendor-extension fallback of a hook agent, with no data.
pub(crate) fn fallback(vendor: &str, hook: &str) -> Draft {
    Draft::new(crate::naming::session_fallback(vendor, hook)).severity(aep_core::Severity::Debug)
}

/// An error message as the schemas want it, a string: text as it is, any other value
/// as its JSON; `null` when there is none (the member is then left out).
pub(crate) fn message_text(message: Option<&Value>) -> Value {
    match message {
        Some(Value::String(m)) if !m.is_empty() => Value::String(m.clone()),
        Some(Value::Null) | None => Value::Null,
        Some(Value::String(_)) => Value::Null,
        Some(other) => Value::String(other.to_string()),
    }
}

/// One hook payload of the Claude-Code-shaped members (Annex A.1, A.2, A.4, A.5): the
/// hook's name, the tool it names and the id pairing the tool moments, read once.
pub(crate) struct Hook<'a> {
    /// The payload as the vendor sent it.
    pub(crate) p: &'a Value,
    /// `hook_event_name` (`unknown` when absent).
    pub(crate) name: &'a str,
    /// `tool_name` (`unknown` when absent).
    pub(crate) tool: &'a str,
    /// The member pairing the tool moments.
    pub(crate) call: Option<&'a str>,
}

impl<'a> Hook<'a> {
    /// Reads the hook envelope; `call_key` names the member carrying the tool call id.
    pub(crate) fn read(p: &'a Value, call_key: &str) -> Self {
        Hook {
            p,
            name: s(p, "hook_event_name").unwrap_or("unknown"),
            tool: s(p, "tool_name").unwrap_or("unknown"),
            call: s(p, call_key),
        }
    }

    /// The hooks every member that has them maps alike: the user's prompt opens the
    /// run, `Stop` finishes it, the tool trio (`is_interrupt` → error type
    /// `interrupt`), the held permission gate keyed by the call (else the tool), and the
    /// delegation pair (subject the agent id). `None` for any other hook: the member
    /// maps it, or falls back.
    pub(crate) fn shared(&self, vendor: &str) -> Option<Draft> {
        let (p, tool, call) = (self.p, self.tool, self.call);
        Some(match self.name {
            "UserPromptSubmit" => run_started(get(p, "prompt").cloned()),
            "Stop" => Draft::new("run.finished"),
            "PreToolUse" => requested(tool, call, get(p, "tool_input")),
            "PostToolUse" => completed(tool, call, get(p, "tool_response")),
            "PostToolUseFailure" => {
                let kind = if get(p, "is_interrupt").and_then(Value::as_bool) == Some(true) {
                    "interrupt"
                } else {
                    "tool_error"
                };
                failed(tool, call, kind, get(p, "error"))
            }
            "PermissionRequest" => {
                held_permission(vendor, tool, describe(get(p, "tool_input")).as_deref())
                    .with_attention_key(call.or(Some(tool)))
            }
            "SubagentStart" | "SubagentStop" => Draft::new(if self.name == "SubagentStart" {
                "delegation.subagent.started"
            } else {
                "delegation.subagent.stopped"
            })
            .meta_opt("agent_type", get(p, "agent_type").cloned())
            .subject_opt(s(p, "agent_id")),
            _ => return None,
        })
    }
}
