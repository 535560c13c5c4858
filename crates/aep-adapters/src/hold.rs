//! The permission loop, agent side: which hook moments hold the agent for an answer
//! over control, the request they ask (as aep-core's [`AttentionRequest`], so every
//! answer is checked by aep-core's one rule), and how an answer is printed back in the
//! agent's own decision format. Sans-IO: `aep hook` emits the request, waits, and prints
//! [`Hold::reply`].
//!
//! The moments that hold (AEP-0002 Annex A and the adapters' design record,
//! `docs/components/adapters.md`, "The PermissionRequest control loop"):
//!
//! | agent | moment | request | decision printed |
//! |---|---|---|---|
//! | Claude Code | `PermissionRequest` | `permission`, Allow/Deny | `{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}`, or `"deny"` with a `message` |
//! | Claude Code | `PermissionRequest` of `AskUserQuestion` | `form`, one select per question | `"allow"` with `updatedInput: {questions, answers}` (each question's text to the chosen labels, `", "`-joined, or the free text) |
//! | Claude Code | `Elicitation` | `form` from the requested schema | `{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": values}}` |
//! | Codex | `PermissionRequest` | `permission`, Allow/Deny | as Claude Code's permission, without `updatedInput` (Codex fails closed on it) |
//! | Qwen Code | `PermissionRequest` | `permission`, Allow/Deny | as Claude Code's permission |
//! | OpenCode, Kilo Code | the plugin's `permission.ask` | `permission`, Allow/Deny | `{"status": "allow"}` / `{"status": "deny"}`, which the plugin sets as the hook's `output.status` |
//!
//! Where each format comes from:
//! - Claude Code: the hooks reference, "PermissionRequest decision control" and
//!   "Elicitation" (<https://code.claude.com/docs/en/hooks>); `updatedInput` for
//!   `AskUserQuestion` is the `PermissionResult` the Agent SDK documents for
//!   `canUseTool` (<https://docs.claude.com/en/docs/agent-sdk/permissions>).
//! - Codex: the `PermissionRequest` command output schema of `codex-hooks`
//!   (`schema/generated/permission-request.command.output.schema.json`, Codex PR
//!   openai/codex#17563): `behavior` `allow`/`deny` with an optional `message`;
//!   `updatedInput`, `updatedPermissions` and `interrupt: true` fail closed.
//! - OpenCode and Kilo Code: the plugin hook `permission.ask(input, output)` of
//!   `@opencode-ai/plugin` (the `Hooks` type; Kilo Code's fork keeps it), whose
//!   `output.status` is `"ask"`, `"allow"` or `"deny"`; a deny carries no message there,
//!   so guidance text is recorded in `attention.answered` but cannot reach the model.
//! - Qwen Code: its hooks documentation
//!   (<https://qwenlm.github.io/qwen-code-docs/en/users/features/hooks/>), the Claude
//!   Code contract adopted: the same `hookSpecificOutput.decision`.
//!
//! Answers follow AEP-0008 through [`AttentionRequest::check_answer`]: an option id, or
//! text naming one (`"allow"`, `"Deny"`), is that option; text naming none of a
//! permission's options is a deny carrying the text as its `message` (Claude Code's
//! "tell Claude what to do differently"), never an allow. No answer in time prints the
//! agent's neutral reply ([`crate::Source::neutral_reply`]): the agent asks in its
//! own prompt, as it would have without the hook.

use aep_core::attention::{Answer, AttentionRequest, FormField, ALLOW, DENY};
use aep_core::payload::AttentionRequestedField;
use serde_json::{json, Map, Value};

use crate::draft::Posture;
use crate::json::{get, s};
use crate::source::{Moment, Source};
use crate::sources::claude_code::ASK_USER_QUESTION;

/// What a deny without guidance tells the agent.
pub const DENIED: &str = "Denied via the AEP attention loop";

/// What a held moment asks and how its answer goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// An Allow/Deny gate.
    Permission,
    /// Claude Code's `AskUserQuestion`: the questions, to map values back to labels.
    Questions,
    /// An MCP elicitation: values go back as its content.
    Elicitation,
    /// The OpenCode plugin's `permission.ask`: a status the plugin sets.
    PluginPermission,
}

/// One moment that holds the agent until a person answers over control.
///
/// ```
/// use aep_adapters::{hold::Hold, Moment, Source};
/// use aep_core::payload::ControlAttentionRespondAnswer;
/// use serde_json::json;
///
/// let p = json!({"hook_event_name": "PermissionRequest", "session_id": "s1", "tool_name": "Bash",
///     "tool_input": {"command": "rm -rf build"}});
/// let hold = Hold::of(Source::ClaudeCode, &Moment::new(&p)).expect("a held moment");
/// assert_eq!(hold.key(), "Bash");
/// assert_eq!(hold.request().prompt(), "Permission requested: Bash — rm -rf build");
/// let answer = hold.request().check_answer(&ControlAttentionRespondAnswer { text: Some("use make clean".into()), ..Default::default() })?;
/// let reply: serde_json::Value = serde_json::from_str(&hold.reply(&answer))?;
/// assert_eq!(reply["hookSpecificOutput"]["decision"], json!({"behavior": "deny", "message": "use make clean"}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Hold {
    source: Source,
    shape: Shape,
    key: String,
    request: AttentionRequest,
    questions: Value,
}

impl Hold {
    /// The hold of `moment`, if it is one of the moments above; `None` for every other
    /// moment (observed only) and for a request the core would refuse to ask.
    ///
    /// ```
    /// use aep_adapters::{hold::Hold, Moment, Source};
    /// let pre = serde_json::json!({"hook_event_name": "PreToolUse", "tool_name": "Bash"});
    /// assert!(Hold::of(Source::ClaudeCode, &Moment::new(&pre)).is_none());
    /// let gemini = serde_json::json!({"hook_event_name": "PermissionRequest", "tool_name": "x"});
    /// assert!(Hold::of(Source::GeminiCli, &Moment::new(&gemini)).is_none());
    /// ```
    pub fn of(source: Source, moment: &Moment<'_>) -> Option<Hold> {
        let p = moment.payload();
        let plugin = matches!(source, Source::Opencode | Source::Kilocode);
        let hook = if plugin {
            s(p, "kind")?
        } else {
            s(p, "hook_event_name")?
        };
        let tool = s(p, "tool_name").unwrap_or("unknown");
        let shape = match (source, hook) {
            (Source::Opencode | Source::Kilocode, "permission.ask") => Shape::PluginPermission,
            (Source::ClaudeCode, "PermissionRequest") if tool == ASK_USER_QUESTION => {
                Shape::Questions
            }
            (Source::ClaudeCode, "Elicitation") => Shape::Elicitation,
            (Source::ClaudeCode | Source::Codex | Source::QwenCode, "PermissionRequest") => {
                Shape::Permission
            }
            _ => return None,
        };
        // The request as asked, at `full`: the answer is checked against the real
        // options and fields, whatever ceiling the emitted event was lowered to.
        let full = Posture::from_ceiling("full").ok()?;
        let drafts = source.map(moment, &full);
        let draft = drafts
            .iter()
            .find(|d| d.event_type() == "attention.requested")?;
        let key = draft.links().attention.clone()?;
        let data = draft.render(&full).data;
        let permission = matches!(shape, Shape::Permission | Shape::PluginPermission);
        let request = request_of(&data, permission)?;
        request.check().ok()?;
        let questions = get(p, "tool_input")
            .and_then(|i| get(i, "questions"))
            .cloned()
            .unwrap_or(Value::Null);
        Some(Hold {
            source,
            shape,
            key,
            request,
            questions,
        })
    }

    /// The session runtime's key of the request (the tool call id, else the tool's or
    /// the MCP server's name): what [`crate::session::SessionState::outcome`] settles.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The request, at `full`: what an answer is checked against.
    pub fn request(&self) -> &AttentionRequest {
        &self.request
    }

    /// The agent whose moment this is.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The decision `answer` (checked against [`request`](Self::request)) means, in
    /// the agent's format, one line of JSON.
    ///
    /// ```
    /// use aep_adapters::{hold::Hold, Moment, Source};
    /// use aep_core::payload::ControlAttentionRespondAnswer;
    /// let p = serde_json::json!({"hook_event_name": "PermissionRequest", "session_id": "s", "turn_id": "t", "tool_name": "Bash", "tool_use_id": "c1"});
    /// let hold = Hold::of(Source::Codex, &Moment::new(&p)).unwrap();
    /// let allow = hold.request().check_answer(&ControlAttentionRespondAnswer { option: Some("allow".into()), ..Default::default() })?;
    /// let printed: serde_json::Value = serde_json::from_str(&hold.reply(&allow))?;
    /// assert_eq!(printed, serde_json::json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reply(&self, answer: &Answer) -> String {
        let out = match self.shape {
            Shape::Permission => {
                let decision = if answer.is(ALLOW) {
                    json!({"behavior": "allow"})
                } else {
                    json!({"behavior": "deny", "message": answer.text().unwrap_or(DENIED)})
                };
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
            }
            Shape::Questions => {
                let answers = self.answers(answer.values());
                let input = json!({"questions": self.questions, "answers": answers});
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                    "decision": {"behavior": "allow", "updatedInput": input}}})
            }
            Shape::PluginPermission => {
                json!({"status": if answer.is(ALLOW) { ALLOW } else { DENY }})
            }
            Shape::Elicitation => {
                let content = answer.values().cloned().unwrap_or_default();
                json!({"hookSpecificOutput": {"hookEventName": "Elicitation",
                    "action": "accept", "content": content}})
            }
        };
        out.to_string()
    }

    /// `AskUserQuestion`'s `answers`: each question's text to the labels its values
    /// chose (choice ids are 1-based indexes, AEP-0006), `", "`-joined for a multiple
    /// choice, or the free text of its "Other".
    fn answers(&self, values: Option<&Map<String, Value>>) -> Map<String, Value> {
        let mut out = Map::new();
        let (Some(values), Some(list)) = (values, self.questions.as_array()) else {
            return out;
        };
        let asked = list.iter().filter(|q| s(q, "question").is_some());
        for (i, q) in asked.enumerate() {
            let (Some(text), Some(value)) = (s(q, "question"), values.get(&(i + 1).to_string()))
            else {
                continue;
            };
            let labels: Vec<String> = match value {
                Value::Array(picked) => picked.iter().map(|v| label_of(q, v)).collect(),
                one => vec![label_of(q, one)],
            };
            out.insert(text.to_owned(), Value::String(labels.join(", ")));
        }
        out
    }
}

/// The label of choice `value` of question `q` (a 1-based index), or the value itself
/// as text (the "Other" answer).
fn label_of(q: &Value, value: &Value) -> String {
    let text = match value {
        Value::String(t) => t.clone(),
        other => other.to_string(),
    };
    let chosen = text
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| get(q, "options")?.as_array()?.get(i).cloned());
    match chosen {
        Some(Value::String(label)) => label,
        Some(o) => s(&o, "label").map_or(text, str::to_owned),
        None => text,
    }
}

/// aep-core's request from an `attention.requested` payload: its kind, prompt, options
/// (a permission refusing with `deny`, AEP-0008) and fields.
fn request_of(data: &Value, permission: bool) -> Option<AttentionRequest> {
    let kind = serde_json::from_value(get(data, "kind")?.clone()).ok()?;
    let mut request = AttentionRequest::new(kind, s(data, "prompt")?);
    for o in get(data, "options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        request = request.option(s(o, "id")?, s(o, "label").unwrap_or_default());
    }
    if permission {
        let offers = |id| request.options().iter().any(|o| o.id == id);
        if !(offers(ALLOW) && offers(DENY)) {
            return None;
        }
        request = request.refusing(DENY);
    }
    for f in get(data, "fields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field: AttentionRequestedField = serde_json::from_value(f.clone()).ok()?;
        request = request.field(FormField::from(field));
    }
    Some(request)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a panic is the failure report

    use super::*;
    use aep_core::payload::ControlAttentionRespondAnswer;

    fn answer(hold: &Hold, a: Value) -> Answer {
        let a: ControlAttentionRespondAnswer = serde_json::from_value(a).unwrap();
        hold.request().check_answer(&a).unwrap()
    }

    fn reply(hold: &Hold, a: Value) -> Value {
        serde_json::from_str(&hold.reply(&answer(hold, a))).unwrap()
    }

    #[test]
    fn a_permission_prints_allow_deny_or_guidance_and_text_naming_an_option_is_it() {
        for source in [Source::ClaudeCode, Source::Codex, Source::QwenCode] {
            let p = json!({"hook_event_name": "PermissionRequest", "session_id": "s", "tool_name": "Bash",
                "tool_use_id": "c1", "tool_input": {"command": "ls"}});
            let hold = Hold::of(source, &Moment::new(&p)).unwrap();
            assert_eq!(hold.key(), "c1");
            let d = |a| reply(&hold, a)["hookSpecificOutput"]["decision"].clone();
            assert_eq!(d(json!({"option": "allow"})), json!({"behavior": "allow"}));
            assert_eq!(d(json!({"text": " ALLOW "})), json!({"behavior": "allow"}));
            assert_eq!(
                d(json!({"option": "deny"})),
                json!({"behavior": "deny", "message": DENIED})
            );
            assert_eq!(
                d(json!({"text": "try cargo check"})),
                json!({"behavior": "deny", "message": "try cargo check"})
            );
            assert_eq!(
                reply(&hold, json!({"option": "allow"}))["hookSpecificOutput"]["hookEventName"],
                "PermissionRequest"
            );
        }
    }

    #[test]
    fn the_plugin_s_permission_ask_gets_a_status() {
        let ask = json!({"kind": "permission.ask", "permission": {"id": "per_1", "type": "bash",
            "sessionID": "ses_1", "title": "rm -rf build"}});
        let hold = Hold::of(Source::Opencode, &Moment::new(&ask)).unwrap();
        assert_eq!(hold.key(), "per_1");
        assert_eq!(
            reply(&hold, json!({"option": "allow"})),
            json!({"status": "allow"})
        );
        assert_eq!(
            reply(&hold, json!({"text": "not now"})),
            json!({"status": "deny"})
        );
    }

    #[test]
    fn ask_user_question_answers_by_label_and_an_elicitation_by_its_content() {
        let p = json!({"hook_event_name": "PermissionRequest", "session_id": "s", "tool_name": "AskUserQuestion",
            "tool_use_id": "c2", "tool_input": {"questions": [
                {"question": "Which DB?", "header": "DB", "multiSelect": false, "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
                {"question": "Which tests?", "header": "Tests", "multiSelect": true, "options": [{"label": "unit"}, {"label": "e2e"}]},
                {"question": "Name?", "header": "N", "options": [{"label": "a"}]}]}});
        let hold = Hold::of(Source::ClaudeCode, &Moment::new(&p)).unwrap();
        let r = reply(
            &hold,
            json!({"values": {"1": "2", "2": ["1", "2"], "3": "my own"}}),
        );
        let decision = &r["hookSpecificOutput"]["decision"];
        assert_eq!(decision["behavior"], "allow");
        assert_eq!(
            decision["updatedInput"]["answers"],
            json!({"Which DB?": "SQLite", "Which tests?": "unit, e2e", "Name?": "my own"})
        );
        assert_eq!(
            decision["updatedInput"]["questions"],
            p["tool_input"]["questions"]
        );
        // a required question unanswered: aep-core refuses it, the request stays open
        let missing: ControlAttentionRespondAnswer =
            serde_json::from_value(json!({"values": {"1": "1"}})).unwrap();
        assert!(hold.request().check_answer(&missing).is_err());

        let e = json!({"hook_event_name": "Elicitation", "session_id": "s", "mcp_server_name": "db",
            "message": "Connect?", "requested_schema": {"type": "object", "properties": {
                "host": {"type": "string"}, "port": {"type": "integer", "minimum": 1}}, "required": ["host"]}});
        let hold = Hold::of(Source::ClaudeCode, &Moment::new(&e)).unwrap();
        assert_eq!(hold.key(), "db");
        let r = reply(&hold, json!({"values": {"host": "db.local", "port": 5432}}));
        assert_eq!(
            r,
            json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                "content": {"host": "db.local", "port": 5432}}})
        );
    }

    #[test]
    fn only_the_gates_with_a_back_channel_hold() {
        let p =
            json!({"hook_event_name": "PermissionRequest", "session_id": "s", "tool_name": "Bash"});
        for source in Source::ALL {
            let held = Hold::of(source, &Moment::new(&p)).is_some();
            let want = matches!(
                source,
                Source::ClaudeCode | Source::Codex | Source::QwenCode
            );
            assert_eq!(held, want, "{source}");
        }
        let ask = json!({"kind": "permission.ask", "permission": {"id": "per_1", "type": "bash",
            "sessionID": "ses_1", "title": "rm -rf build"}});
        for source in Source::ALL {
            let want = matches!(source, Source::Opencode | Source::Kilocode);
            assert_eq!(
                Hold::of(source, &Moment::new(&ask)).is_some(),
                want,
                "{source}"
            );
        }
        // not JSON-shaped as the agent sends it: no hold, no panic
        for odd in [json!(null), json!([1]), json!({"hook_event_name": 7})] {
            assert!(Hold::of(Source::ClaudeCode, &Moment::new(&odd)).is_none());
        }
    }
}
