//! OpenHands agent-server events (AEP-0002 Annex A.15): the typed event union served
//! over the vendor's WebSocket, taken at the transport envelope (`parent_id` never on
//! the wire), observed read-only.
//!
//! Identity: the `conversation_id` the socket is scoped to is the AEP session; runs are
//! synthesized from the server's own `execution_status` transitions
//! ([`status_moments`]); `llm_response_id` stamps the envelope `step` (a grouping fact,
//! no `run.step.*` synthesis). Every event carries the vendor's event id and its naive
//! server-local timestamp at metadata (`vendor_event_id`, `vendor_ts`); the envelope
//! time is the receive time.
//!
//! | kind | maps to |
//! |---|---|
//! | `ActionEvent` | `tool.requested` (`risk` unless `UNKNOWN`; the args digest over the action's canonical JSON text) |
//! | `ObservationEvent` | `tool.completed`, or `tool.failed` on the typed `is_error` |
//! | `AgentErrorEvent` | `tool.failed` (`agent_error`), joined by `tool_call_id` |
//! | `UserRejectObservation` | `rejection_source: hook` → `tool.denied` by `policy`; a user's rejection is a human decision: `x.openhands.user_reject.observation` |
//! | `MessageEvent` | `x.openhands.message.event` (`role`, the activated skills' count; `message.*` is reserved) |
//! | `Condensation` | `session.compacted` (`forgotten`: how many events) |
//! | `ConversationStateUpdateEvent` | `full_state` → `state.snapshot`; a key → `state.delta` |
//! | `ConversationErrorEvent` | `error.raised` (`code`) |
//! | `StreamingDeltaEvent` | nothing; with deltas on, `x.openhands.streaming.delta` |
//! | `TokenEvent` | nothing, ever (raw token ids are not observability) |
//! | anything else | `x.openhands.{family}.{leaf}`, mechanical from the kind |
//!
//! Deviation, from the pins: the run a deletion cancels carries `reason: "deleting"`
//! at metadata although `run.cancelled.reason` is annotated `redacted`: the vendor
//! status token is structural.

use aep_core::Severity;
use serde_json::{json, Value};

use crate::draft::{Draft, Posture};
use crate::family::{self, tool};
use crate::json::{at, get, joined_text, s};
use crate::naming::snake;

/// The vendor token.
pub const VENDOR: &str = "openhands";

/// The vendor type of a kind: `UserRejectObservation` →
/// `x.openhands.user_reject.observation`, `PauseEvent` → `x.openhands.pause.event`,
/// `SystemPromptEvent` → `x.openhands.system.prompt` (a trailing `Event` dropped when
/// two words remain).
///
/// ```
/// assert_eq!(aep_adapters::sources::openhands::vendor_type_of("ACPToolCallEvent"), "x.openhands.acp_tool.call");
/// ```
pub fn vendor_type_of(kind: &str) -> String {
    let mut words: Vec<String> = snake(kind).split('_').map(str::to_owned).collect();
    if words.len() > 2 && words.last().is_some_and(|w| w == "event") {
        words.pop();
    }
    match words.split_last() {
        Some((last, head)) if !head.is_empty() => format!("x.{VENDOR}.{}.{last}", head.join("_")),
        Some((only, _)) => format!("x.{VENDOR}.{only}.event"),
        None => format!("x.{VENDOR}.unknown.event"),
    }
}

/// Maps one OpenHands transport event; `posture` decides the deltas opt-in.
///
/// ```
/// use serde_json::json;
/// let e = json!({"kind": "PauseEvent", "id": "e1", "timestamp": "2026-07-12T10:15:00"});
/// let d = aep_adapters::sources::openhands::map(&e, &aep_adapters::Posture::default());
/// assert_eq!(d[0].event_type(), "x.openhands.pause.event");
/// ```
pub fn map(e: &Value, posture: &Posture) -> Vec<Draft> {
    let kind = s(e, "kind").unwrap_or("Unknown");
    let name = s(e, "tool_name").unwrap_or("unknown");
    let call = s(e, "tool_call_id");
    let d = match kind {
        "ActionEvent" => {
            let mut d = Draft::new("tool.requested")
                .meta("tool", tool(name, call))
                .subject(name)
                .with_call(call)
                .step_opt(s(e, "llm_response_id"));
            if let Some(risk) = s(e, "security_risk").filter(|r| *r != "UNKNOWN") {
                d = d.meta("risk", json!(risk));
            }
            if let Some(action) = get(e, "action") {
                // Digested as the canonical JSON text of the action, as pinned.
                let text = aep_core::redact::canonical_json(action);
                d = d
                    .digest("args_digest", &json!(text))
                    .redacted_only("args_redacted", action.clone())
                    .full("args", action.clone());
            }
            d
        }
        "ObservationEvent" => {
            let obs = get(e, "observation").unwrap_or(&Value::Null);
            let text = get(obs, "content").and_then(joined_text).map(Value::String);
            if get(obs, "is_error").and_then(Value::as_bool) == Some(true) {
                family::failed(name, call, "tool_error", text.as_ref())
            } else {
                family::completed(name, call, text.as_ref())
            }
        }
        "AgentErrorEvent" => family::failed(name, call, "agent_error", get(e, "error")),
        "UserRejectObservation" if s(e, "rejection_source") == Some("hook") => {
            family::denied(name, call, "policy")
                .content_opt("rule", get(e, "rejection_reason").cloned())
        }
        "UserRejectObservation" => Draft::new(vendor_type_of(kind))
            .meta("tool", tool(name, call))
            .content_opt("reason", get(e, "rejection_reason").cloned())
            .subject(name)
            .with_call(call),
        "MessageEvent" => {
            let skills = get(e, "activated_skills")
                .and_then(Value::as_array)
                .filter(|a| !a.is_empty())
                .map(|a| json!(a.len()));
            Draft::new(vendor_type_of(kind))
                .meta_opt("role", at(e, &["llm_message", "role"]).cloned())
                .meta_opt("skills", skills)
                .content_opt(
                    "content",
                    at(e, &["llm_message", "content"])
                        .and_then(joined_text)
                        .map(Value::String),
                )
                .step_opt(s(e, "llm_response_id"))
        }
        "Condensation" => Draft::new("session.compacted")
            .meta_opt(
                "forgotten",
                get(e, "forgotten_event_ids")
                    .and_then(Value::as_array)
                    .map(|a| json!(a.len())),
            )
            .content_opt("summary", get(e, "summary").cloned()),
        "CondensationSummaryEvent" => {
            Draft::new(vendor_type_of(kind)).content_opt("summary", get(e, "summary").cloned())
        }
        "ConversationStateUpdateEvent" => match s(e, "key") {
            Some("full_state") | None => Draft::new("state.snapshot")
                .content_opt("state", get(e, "value").filter(|v| v.is_object()).cloned()),
            Some(key) => Draft::new("state.delta")
                .meta("key", json!(key))
                .content_opt("value", get(e, "value").cloned()),
        },
        "ConversationErrorEvent" => Draft::new("error.raised")
            .meta_opt("code", get(e, "code").cloned())
            .content_in(
                &["error", "message"],
                family::message_text(get(e, "detail")),
            ),
        "StreamingDeltaEvent" if posture.deltas() => Draft::new(vendor_type_of(kind))
            .content_opt("delta", get(e, "content").cloned())
            .severity(Severity::Debug),
        "StreamingDeltaEvent" | "TokenEvent" => return Vec::new(),
        _ => Draft::new(vendor_type_of(kind)).severity(Severity::Debug),
    };
    vec![d
        .meta_opt("vendor_ts", get(e, "timestamp").cloned())
        .meta_opt("vendor_event_id", get(e, "id").cloned())
        .on_session(s(e, "conversation_id"))]
}

/// The moments of an `execution_status` transition (`prev` → `next`): the run
/// synthesized from the server's own facts and the read-only approval loop. Terminals
/// follow the server's `is_terminal()` set: `finished` → `run.finished`,
/// `error`/`stuck` → `run.failed`, `deleting` → `run.cancelled` and
/// `session.ended(killed)`; `running` → `idle` closes with `reason: idle`; `paused` and
/// `waiting_for_confirmation` never close. Waiting raises `attention.requested` with no
/// options and no `respond_via`; leaving it resolves it (answered when the work goes on,
/// dismissed on a pause or a deletion).
///
/// ```
/// let d = aep_adapters::sources::openhands::status_moments(Some("running"), "deleting");
/// let types: Vec<&str> = d.iter().map(|d| d.event_type()).collect();
/// assert_eq!(types, ["run.cancelled", "session.ended"]);
/// ```
pub fn status_moments(prev: Option<&str>, next: &str) -> Vec<Draft> {
    if prev == Some(next) {
        return Vec::new();
    }
    const WAITING: &str = "waiting_for_confirmation";
    let mut out = Vec::new();
    let running_before = matches!(prev, Some("running" | "paused" | WAITING));
    if prev == Some(WAITING) {
        let resolution = match next {
            "paused" | "deleting" => "dismissed",
            _ => "answered",
        };
        out.push(Draft::new("attention.resolved").meta("resolution", json!(resolution)));
    }
    match next {
        "running" if !running_before => out.push(Draft::new("run.started")),
        WAITING => out.push(
            Draft::new("attention.requested")
                .meta("kind", json!("permission"))
                .meta(
                    "prompt",
                    json!("Awaiting confirmation for a pending action"),
                ),
        ),
        "finished" if running_before => out.push(Draft::new("run.finished")),
        "error" | "stuck" if running_before => {
            out.push(Draft::new("run.failed").meta("reason", json!(next)));
        }
        "idle" if prev == Some("running") => {
            out.push(Draft::new("run.finished").meta("reason", json!("idle")));
        }
        "deleting" => {
            if running_before {
                out.push(Draft::new("run.cancelled").meta("reason", json!("deleting")));
            }
            out.push(Draft::new("session.ended").meta("reason", json!("killed")));
        }
        _ => {}
    }
    out
}
