//! The wire bridges: ACP, AG-UI, OpenHands, and pi's extension bus.

use serde_json::Value;

use super::*;

pub(super) fn acp(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let moments = at(doc, &["moments"]);
    let fallback = at(doc, &["fallback"]);
    let first = |name: &str| at(moments, &[name, "expected", "0"]);
    list_pins(c, "acp", moments, fallback, true);
    let with_deltas = |e: &'_ Value| -> Vec<Value> {
        items(at(e, &["expected"]))
            .iter()
            .chain(items(at(e, &["deltas_expected"])))
            .cloned()
            .collect()
    };
    c.fact(
        "acp pins: the stop reason decides the run terminal honestly",
        ty(first("response_prompt_end_turn")) == "run.finished"
            && ty(first("response_prompt_max_tokens")) == "run.finished"
            && ty(first("response_prompt_cancelled")) == "run.cancelled"
            && at(first("response_prompt_cancelled"), &["data", "by"]) == "user"
            && ty(first("response_prompt_refusal")) == "run.failed"
            && at(first("response_prompt_refusal"), &["data", "reason"]) == "refusal",
    );
    let gate = at(first("request_permission"), &["data"]);
    c.fact(
        "acp pins: the editor gate is observed READ-ONLY (no options, no respond_via; count as metadata)",
        lacks(gate, "options") && lacks(gate, "respond_via") && num_is(at(gate, &["options_count"]), 2.0),
    );
    c.fact(
        "acp pins: outcomes ride via oob; a cancelled outcome resolves as dismissed",
        at(first("response_permission_selected"), &["data", "via"]) == "oob"
            && at(first("response_permission_cancelled"), &["data", "resolution"]) == "dismissed",
    );
    c.fact(
        "acp pins: the tool status forks honestly onto the trio",
        ty(first("update_tool_call")) == "tool.requested"
            && ty(first("update_tool_completed")) == "tool.completed"
            && ty(first("update_tool_failed")) == "tool.failed"
            && starts(first("update_tool_in_progress"), "x.acp."),
    );
    c.fact(
        "acp pins: the id-less plan stays vendor-scoped as status counts (never invented tasks)",
        ty(first("update_plan")) == "x.acp.plan.updated"
            && num_is(at(first("update_plan"), &["data", "entries_pending"]), 2.0)
            && all_listed(moments, None)
                .iter()
                .all(|e| !starts(e, "progress.task.")),
    );
    let chunk = at(moments, &["update_agent_chunk"]);
    c.fact(
        "acp pins: chunks are suppressed by default and fork only under the opt-in",
        at(chunk, &["expected"]) == &json!([])
            && starts(at(chunk, &["deltas_expected", "0"]), "x.acp.")
            && values(moments)
                .flat_map(with_deltas)
                .all(|e| !starts(&e, "message.")),
    );
    c.fact(
        "acp pins: vendor types always carry two segments after the token",
        values(moments)
            .chain([fallback])
            .flat_map(with_deltas)
            .filter(|e| starts(e, "x.acp."))
            .all(|e| ty(&e).split('.').count() >= 4),
    );
    let identity = |key: &str, needle: &str| {
        at(doc, &["identity", key])
            .as_str()
            .is_some_and(|s| s.contains(needle))
    };
    c.fact(
        "acp pins: identity is real wire identity (sessionId verbatim; prompt-request run id)",
        identity("session_from", "sessionId") && identity("run_from", "JSON-RPC id"),
    );
}

pub(super) fn agui(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let events = at(doc, &["events"]);
    let exp = |name: &str| at(events, &[name, "expected"]);
    for (name, entry) in entries(events) {
        c.pin("agui", name, at(entry, &["expected"]));
    }
    c.fact(
        "agui pins: real vendor identity, no synthesis (a first)",
        at(doc, &["identity", "run_from"])
            .as_str()
            .is_some_and(|r| r.starts_with("runId")),
    );
    c.fact(
        "agui pins: lifecycle/steps/tools/state land on core types",
        [
            "run_started",
            "run_finished",
            "run_error",
            "step_started",
            "tool_call_start",
            "tool_call_result_joined",
            "state_snapshot",
            "state_delta",
        ]
        .iter()
        .all(|n| !starts(exp(n), "x.")),
    );
    c.fact(
        "agui pins: token and argument deltas are suppressed at the default posture, opt-in to the vendor plane",
        exp("text_message_content").is_null()
            && ty(at(events, &["text_message_content", "deltas_expected"])) == "x.agui.text_message.content"
            && exp("tool_call_args").is_null(),
    );
    c.fact(
        "agui pins: the encrypted reasoning value maps to nothing, ever (no deltas fork)",
        exp("reasoning_encrypted_value").is_null()
            && lacks(at(events, &["reasoning_encrypted_value"]), "deltas_expected"),
    );
    c.fact(
        "agui pins: the reply terminal stays vendor while message.agent.replied is reserved",
        ty(exp("text_message_end_assistant")) == "x.agui.text_message.end"
            && exp("text_message_end_user").is_null(),
    );
    c.fact(
        "agui pins: STEP_* stamps the envelope step",
        at(exp("step_started"), &["step"]) == "plan",
    );
    c.fact(
        "agui pins: deprecated THINKING_* aliases map identically",
        exp("thinking_start_deprecated_alias") == exp("reasoning_start"),
    );
    c.fact(
        "agui pins: unknown event types fall back mechanically to x.agui.*",
        full(r"x\.agui\.[a-z0-9_.]+", ty(at(doc, &["fallback", "expected"]))),
    );
}

pub(super) fn openhands(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let events = at(doc, &["events"]);
    let fallback = at(doc, &["fallback"]);
    let exp = |name: &str| at(events, &[name, "expected"]);
    for (name, entry) in entries(events) {
        for key in ["expected", "deltas_expected"] {
            c.pin("openhands", name, at(entry, &[key]));
        }
    }
    let all: Vec<&Value> = values(events).chain([fallback]).collect();
    c.fact(
        "openhands pins: inputs anchor the TRANSPORT shape (parent_id never on the wire)",
        all.iter().all(|e| lacks(at(e, &["input"]), "parent_id")),
    );
    c.fact(
        "openhands pins: the tool trio splits on the typed observation error fact",
        ty(exp("observation_ok")) == "tool.completed"
            && ty(exp("observation_error")) == "tool.failed"
            && at(exp("observation_error"), &["data", "error", "type"]) == "tool_error"
            && ty(exp("agent_error")) == "tool.failed",
    );
    c.fact(
        "openhands pins: a user rejection is a human decision, not a policy block",
        ty(exp("user_reject_user")) == "x.openhands.user_reject.observation"
            && ty(exp("user_reject_hook")) == "tool.denied"
            && at(exp("user_reject_hook"), &["data", "by"]) == "policy",
    );
    c.fact(
        "openhands pins: the message boundary stays vendor while message.* is reserved",
        ty(exp("message_agent")) == "x.openhands.message.event"
            && ty(exp("message_user")) == "x.openhands.message.event",
    );
    c.fact(
        "openhands pins: deltas opt in; token-id planes map to nothing even under the opt-in",
        exp("streaming_delta").is_null()
            && ty(at(events, &["streaming_delta", "deltas_expected"])) == "x.openhands.streaming.delta"
            && exp("token_event").is_null()
            && at(events, &["token_event", "deltas_expected"]).is_null(),
    );
    let step = at(exp("action_event"), &["step"]);
    c.fact(
        "openhands pins: llm_response_id stamps the envelope step as a string",
        step.is_string() && step == at(events, &["action_event", "input", "llm_response_id"]),
    );
    c.fact(
        "openhands pins: the naive vendor timestamp rides at metadata, never as the envelope ts",
        at(exp("action_event"), &["data", "vendor_ts"])
            == at(events, &["action_event", "input", "timestamp"]),
    );
    c.fact(
        "openhands pins: vendor types carry two segments after the token",
        all.iter()
            .flat_map(|e| ["expected", "deltas_expected"].map(|k| at(e, &[k])))
            .filter(|p| truthy(p))
            .map(ty)
            .filter(|t| t.starts_with("x."))
            .all(|t| full(r"x\.openhands\.[a-z0-9_]+(\.[a-z0-9_]+)+", t)),
    );
    let transitions = at(doc, &["status_transitions"]);
    for (name, t) in entries(transitions) {
        for m in items(at(t, &["expected"])) {
            c.pin("openhands transition", name, m);
        }
    }
    let types = |name: &str| -> Vec<&str> {
        items(at(transitions, &[name, "expected"]))
            .iter()
            .map(ty)
            .collect()
    };
    c.fact(
        "openhands pins: terminals close per the server's own is_terminal set",
        types("running_finished") == ["run.finished"]
            && types("running_error") == ["run.failed"]
            && types("running_stuck") == ["run.failed"]
            && types("running_deleting") == ["run.cancelled", "session.ended"],
    );
    let first = |name: &str| at(transitions, &[name, "expected", "0"]);
    c.fact(
        "openhands pins: paused/waiting never close the run; running->idle closes honestly",
        at(transitions, &["running_paused", "expected"]) == &json!([])
            && at(transitions, &["paused_running", "expected"]) == &json!([])
            && at(first("running_idle"), &["data", "reason"]) == "idle",
    );
    let waiting = at(first("running_waiting"), &["data"]);
    c.fact(
        "openhands pins: the approval loop rides the attention legs READ-ONLY (no options, no respond path)",
        ty(first("running_waiting")) == "attention.requested"
            && lacks(waiting, "options")
            && lacks(waiting, "respond_via")
            && at(first("waiting_running"), &["data", "resolution"]) == "answered"
            && at(first("waiting_paused"), &["data", "resolution"]) == "dismissed",
    );
}


pub(super) fn pi(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let moments = at(doc, &["moments"]);
    let fallback = at(doc, &["fallback"]);
    let exp = |name: &str| at(moments, &[name, "expected"]);
    let deltas = |name: &str| at(moments, &[name, "deltas_expected"]);
    let named = entries(moments).map(|(k, v)| (k.as_str(), v));
    for (name, entry) in named.chain([("fallback", fallback)]) {
        for key in ["expected", "deltas_expected"] {
            c.pin("pi", name, at(entry, &[key]));
        }
    }
    c.fact(
        "pi pins: lifecycle/turns/tools land on core types",
        [
            "session_start",
            "session_shutdown",
            "session_compact",
            "agent_start",
            "agent_end_stop",
            "turn_start",
            "turn_end",
            "tool_execution_start",
            "tool_execution_end_ok",
            "tool_execution_end_error",
        ]
        .iter()
        .all(|n| !starts(exp(n), "x.")),
    );
    c.fact(
        "pi pins: the typed stopReason closes runs (bounded terminations are completions)",
        ty(exp("agent_end_stop")) == "run.finished"
            && ty(exp("agent_end_error")) == "run.failed"
            && at(exp("agent_end_error"), &["data", "reason"]) == "error"
            && ty(exp("agent_end_aborted")) == "run.cancelled"
            && lacks(at(exp("agent_end_aborted"), &["data"]), "by"),
    );
    c.fact(
        "pi pins: the vendor turnIndex stamps the envelope step on the boundary pair",
        ty(exp("turn_start")) == "run.step.started"
            && at(exp("turn_start"), &["step"]).as_str()
                == Some(py_str(at(moments, &["turn_start", "input", "event", "turnIndex"])).as_str())
            && ty(exp("turn_end")) == "run.step.finished",
    );
    c.fact(
        "pi pins: the honest isError split on the tool trio",
        ty(exp("tool_execution_end_ok")) == "tool.completed"
            && ty(exp("tool_execution_end_error")) == "tool.failed"
            && at(exp("tool_execution_end_error"), &["data", "error", "type"]) == "error",
    );
    c.fact(
        "pi pins: message boundaries stay vendor while message.* stays reserved",
        ty(exp("message_start_user")) == "x.pi.message.submitted"
            && ty(exp("message_end_assistant")) == "x.pi.message.replied"
            && exp("message_start_assistant").is_null()
            && exp("message_end_toolresult").is_null(),
    );
    c.fact(
        "pi pins: stream updates are suppressed at the default posture, opt-in to the vendor plane",
        exp("message_update").is_null()
            && ty(deltas("message_update")) == "x.pi.message.delta"
            && exp("tool_execution_update").is_null()
            && ty(deltas("tool_execution_update")) == "x.pi.tool.update",
    );
    c.fact(
        "pi pins: observe-only — nothing maps to attention.* or tool.denied",
        values(moments)
            .chain([fallback])
            .flat_map(|e| [at(e, &["expected"]), at(e, &["deltas_expected"])])
            .filter(|p| !p.is_null())
            .all(|p| !starts(p, "attention.") && ty(p) != "tool.denied"),
    );
    c.fact(
        "pi pins: identity (ctx.sessionManager -> session; runs synthesized per agent loop)",
        session_from(doc).starts_with("ctx.sessionManager") && runs_synthesized(doc),
    );
    c.fact(
        "pi pins: unknown bus members fall back mechanically to x.pi.event.*",
        full(r"x\.pi\.event\.[a-z0-9_.]+", ty(at(fallback, &["expected"]))),
    );
}
