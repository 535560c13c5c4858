//! The hook agents whose tables pin a list of events per hook: Cline, Hermes,
//! Antigravity.

use serde_json::Value;

use super::*;

/// A listed table's document, its `hooks` and its `fallback` entry, every pin of both
/// checked schema-valid first ([`list_pins`]).
fn table<'a>(
    docs: &[&'a Value],
    c: &mut Checks,
    prefix: &str,
) -> (&'a Value, &'a Value, &'a Value) {
    let doc = docs[0];
    let (hooks, fallback) = (at(doc, &["hooks"]), at(doc, &["fallback"]));
    list_pins(c, prefix, hooks, fallback, false);
    (doc, hooks, fallback)
}

pub(super) fn cline(docs: &[&Value], c: &mut Checks) {
    let (doc, hooks, fallback) = table(docs, c, "cline");
    let first = |name: &str| at(hooks, &[name, "expected", "0"]);
    c.fact(
        "cline pins: the run lifecycle rides REAL boundaries on core types",
        ty(first("agent_start")) == "run.started"
            && at(first("agent_resume"), &["data", "trigger"]) == "resume"
            && ty(first("agent_end")) == "run.finished",
    );
    c.fact(
        "cline pins: abort is a cancellation, error a failure (the vendor distinction kept)",
        ty(first("agent_abort")) == "run.cancelled"
            && at(first("agent_abort"), &["data", "by"]) == "user"
            && ty(first("agent_error")) == "run.failed"
            && at(first("agent_error"), &["data", "reason"]) == "ApiError",
    );
    c.fact(
        "cline pins: the typed error field splits tool.completed/tool.failed honestly",
        ty(first("tool_result_ok")) == "tool.completed"
            && ty(first("tool_result_error")) == "tool.failed"
            && at(first("tool_result_error"), &["data", "error", "type"]) == "tool_error",
    );
    c.fact(
        "cline pins: a typed parent id opens and closes the delegation pair",
        ty(first("agent_start_parented")) == "delegation.subagent.started"
            && ty(at(hooks, &["agent_end_parented", "expected", "-1"])) == "delegation.subagent.stopped"
            && at(first("agent_start_parented"), &["subject"]) == "agent_child",
    );
    c.fact(
        "cline pins: prompt_submit stays vendor-namespaced (message.user.submitted is reserved)",
        starts(first("prompt_submit"), "x.cline."),
    );
    c.fact(
        "cline pins: compaction lands at the vendor's only exposed (pre) moment, paths gated",
        ty(first("pre_compact")) == "session.compacted"
            && lacks(at(first("pre_compact"), &["data"]), "context_json_path"),
    );
    c.fact(
        "cline pins: observe-only — nothing on this surface maps to attention.*",
        all_listed(hooks, Some(fallback))
            .iter()
            .all(|e| !starts(e, "attention.")),
    );
    c.fact(
        "cline pins: the iteration counter stamps the envelope step (no run.step.* synthesis)",
        at(first("tool_call"), &["step"]) == "1"
            && all_listed(hooks, None).iter().all(|e| !starts(e, "run.step.")),
    );
    c.fact(
        "cline pins: unknown hook names fall back mechanically to x.cline.*",
        full(r"x\.cline\.[a-z0-9_.]+", ty(at(fallback, &["expected", "0"]))),
    );
    identity_without_run(
        c,
        "cline pins: identity (taskId rides; run boundaries real, run id adapter-minted)",
        doc,
        "taskId",
    );
}

pub(super) fn hermes(docs: &[&Value], c: &mut Checks) {
    let (doc, hooks, fallback) = table(docs, c, "hermes");
    let nth = |name: &str, i: &str| at(hooks, &[name, "expected", i]);
    let first = |name: &str| nth(name, "0");
    c.fact(
        "hermes pins: the drift sentinel rides in every input envelope",
        values(hooks).chain([fallback]).all(|e| {
            at(e, &["input", "extra", "telemetry_schema_version"]) == "hermes.observer.v1"
        }),
    );
    c.fact(
        "hermes pins: the three-way tool status splits completed/failed/DENIED honestly",
        ty(first("post_tool_call_ok")) == "tool.completed"
            && ty(first("post_tool_call_error")) == "tool.failed"
            && ty(first("post_tool_call_blocked")) == "tool.denied"
            && at(first("post_tool_call_blocked"), &["data", "by"]) == "policy",
    );
    let gate = at(first("pre_approval_request"), &["data"]);
    c.fact(
        "hermes pins: the vendor gate is observed read-only WITH the vendor menu as data (oob channel declared)",
        at(gate, &["kind"]) == "permission"
            && ids(at(gate, &["options"])) == ["once", "session", "always", "deny"]
            && at(gate, &["respond_via"]) == &json!(["oob"]),
    );
    c.fact(
        "hermes pins: the human decision rides via oob; a timeout choice maps to attention.timeout",
        at(first("post_approval_response_deny"), &["data", "via"]) == "oob"
            && ty(first("post_approval_response_timeout")) == "attention.timeout",
    );
    let turn_ends = ["on_session_end_completed", "on_session_end_interrupted"];
    c.fact(
        "hermes pins: the per-turn boundary closes RUNS (the source-pinned naming trap)",
        ty(first("on_session_end_completed")) == "run.finished"
            && ty(first("on_session_end_interrupted")) == "run.cancelled"
            && at(first("on_session_end_interrupted"), &["data", "by"]) == "user"
            && turn_ends.iter().all(|n| {
                items(at(hooks, &[n, "expected"]))
                    .iter()
                    .all(|e| ty(e) != "session.ended")
            }),
    );
    c.fact(
        "hermes pins: the session end comes from finalize ALONE; reset announces the successor on the vendor plane",
        ty(first("on_session_finalize")) == "session.ended"
            && ty(first("on_session_reset")) == "x.hermes.session.reset"
            && items(at(hooks, &["on_session_reset", "expected"]))
                .iter()
                .all(|e| ty(e) != "session.ended"),
    );
    let pre = "pre_tool_call (clarify: the form overlay, vendor choice normalization)";
    let ask = at(nth(pre, "1"), &["data"]);
    let field = at(ask, &["fields", "0"]);
    c.fact(
        "hermes pins: the clarify form overlay rides BESIDE the pinned tool trio (kind form, one select field with other:true, respond_via oob)",
        ty(nth(pre, "0")) == "tool.requested"
            && ty(nth(pre, "1")) == "attention.requested"
            && at(ask, &["kind"]) == "form"
            && at(ask, &["respond_via"]) == &json!(["oob"])
            && at(field, &["type"]) == "select"
            && at(field, &["other"]) == &Value::Bool(true)
            && ids(at(field, &["choices"])) == ["1", "2", "3", "4"],
    );
    c.fact(
        "hermes pins: a picked clarify choice is its STRUCTURAL 1-based id; the Other path is content; timeouts and dismissals never fabricate answers",
        at(nth("post_tool_call (clarify: a picked choice is its structural id)", "1"), &["data"])
            == &json!({"answer": {"values": {"1": "3"}}, "via": "oob"})
            && at(
                nth("post_tool_call (clarify: the Other path is free text, redacted-gated)", "1"),
                &["data", "answer", "values", "1"],
            ) == "ship them both"
            && ty(nth("post_tool_call (clarify: the CLI timeout sentinel)", "1")) == "attention.timeout"
            && at(
                nth("post_tool_call (clarify: cancelled by the user, dismissed)", "1"),
                &["data", "resolution"],
            ) == "dismissed"
            && ty(nth(
                "post_tool_call (clarify: blocked before the ask, dismissed beside the pinned denial)",
                "0",
            )) == "tool.denied",
    );
    let start = at(hooks, &["subagent_start"]);
    c.fact(
        "hermes pins: the delegation pair lands on the parent session (child as subject)",
        ty(first("subagent_start")) == "delegation.subagent.started"
            && at(first("subagent_start"), &["subject"])
                == at(start, &["input", "extra", "child_session_id"])
            && at(start, &["input", "session_id"])
                == at(start, &["input", "extra", "parent_session_id"]),
    );
    c.fact(
        "hermes pins: run identity is REAL (extra.turn_id), not synthesized",
        at(doc, &["identity", "run_from"])
            .as_str()
            .is_some_and(|r| r.contains("turn_id")),
    );
    c.fact(
        "hermes pins: the api plane stays vendor-namespaced; no compaction moment is invented",
        ty(first("api_request_error")) == "x.hermes.api.error"
            && all_listed(hooks, Some(fallback))
                .iter()
                .all(|e| ty(e) != "session.compacted"),
    );
    c.fact(
        "hermes pins: unregistered hook names fall back mechanically to x.hermes.*",
        full(r"x\.hermes\.[a-z0-9_.]+", ty(at(fallback, &["expected", "0"]))),
    );
}

pub(super) fn antigravity(docs: &[&Value], c: &mut Checks) {
    let (doc, hooks, fallback) = table(docs, c, "antigravity");
    let first = |name: &str| at(hooks, &[name, "expected", "0"]);
    c.fact(
        "antigravity pins: every entry names its hook (no payload carries an event name)",
        values(hooks).chain([fallback]).all(|e| truthy(at(e, &["hook"]))),
    );
    let input = |name: &str| at(hooks, &[name, "input"]);
    c.fact(
        "antigravity pins: the invocation pair is wire-indistinguishable (argv is the discriminator)",
        input("pre_invocation") == input("post_invocation")
            && ty(first("pre_invocation")) == "run.step.started"
            && ty(first("post_invocation")) == "run.step.finished",
    );
    let stamped = |name: &str| {
        at(first(name), &["step"]).as_str() == Some(py_str(at(input(name), &["invocationNum"])).as_str())
    };
    c.fact(
        "antigravity pins: invocationNum sets the envelope step on the boundary pair",
        stamped("pre_invocation") && stamped("post_invocation"),
    );
    let joined = at(hooks, &["post_tool_use_ok_joined"]);
    c.fact(
        "antigravity pins: the join supplies the name the thin PostToolUse lacks",
        lacks(at(joined, &["input"]), "toolCall")
            && at(joined, &["join", "name"]) == at(first("post_tool_use_ok_joined"), &["data", "tool", "name"])
            && ty(first("post_tool_use_ok_joined")) == "tool.completed"
            && ty(first("post_tool_use_error_joined")) == "tool.failed",
    );
    let unjoined = ["post_tool_use_unjoined", "post_tool_use_unjoined_error"];
    c.fact(
        "antigravity pins: unjoined completions fall back honestly (a name is never invented)",
        lacks(at(hooks, &["post_tool_use_unjoined"]), "join")
            && ty(first("post_tool_use_unjoined")) == "x.antigravity.step.completed"
            && at(first("post_tool_use_unjoined_error"), &["data", "failed"]) == &Value::Bool(true)
            && unjoined.iter().all(|n| {
                items(at(hooks, &[n, "expected"]))
                    .iter()
                    .all(|e| lacks(at(e, &["data"]), "tool"))
            }),
    );
    c.fact(
        "antigravity pins: the typed terminationReason closes runs (bounded terminations are completions)",
        ty(first("stop_model_stop")) == "run.finished"
            && ty(first("stop_max_steps_exceeded")) == "run.finished"
            && at(first("stop_max_steps_exceeded"), &["data", "termination_reason"]) == "max_steps_exceeded"
            && ty(first("stop_error")) == "run.failed"
            && at(first("stop_error"), &["data", "reason"]) == "error",
    );
    c.fact(
        "antigravity pins: observe-only — nothing maps to attention.* or tool.denied",
        all_listed(hooks, Some(fallback))
            .iter()
            .all(|e| !starts(e, "attention.") && ty(e) != "tool.denied"),
    );
    c.fact(
        "antigravity pins: the vendor's interaction tools are observed as tools",
        ty(first("pre_tool_use_question_tool")) == "tool.requested",
    );
    identity_without_run(
        c,
        "antigravity pins: identity (conversationId -> session verbatim; runs synthesized)",
        doc,
        "conversationId",
    );
    c.fact(
        "antigravity pins: unknown hook event names fall back mechanically to x.antigravity.hook.*",
        full(
            r"x\.antigravity\.hook\.[a-z0-9_.]+",
            ty(at(fallback, &["expected", "0"])),
        ),
    );
}
