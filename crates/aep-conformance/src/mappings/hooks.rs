//! The hook agents whose tables pin one expected event per hook: Codex, Gemini CLI,
//! Qwen Code, the VS Code agent, Kimi Code (and its web channel).

use serde_json::Value;

use super::*;

/// The schema checks of a `hooks` map whose entries carry one `expected` (or null).
pub(super) fn single_pins(c: &mut Checks, prefix: &str, hooks: &Value) {
    for (name, entry) in entries(hooks) {
        c.pin(prefix, name, at(entry, &["expected"]));
    }
}

/// `{prefix} pins`: the hooks the mapping does not know land in `vendor`'s extension
/// namespace, `x.{vendor}.session.*`.
fn session_fallback(c: &mut Checks, prefix: &str, vendor: &str, doc: &Value) {
    let pattern = format!(r"x\.{}\.session\.[a-z][a-z0-9_]*", regex::escape(vendor));
    c.fact(
        &format!("{prefix} pins: unknown hooks fall back to the vendor extension namespace"),
        full(&pattern, ty(at(doc, &["fallback", "expected"]))),
    );
}

/// Every non-null `expected` of a hooks map.
pub(super) fn expecteds(hooks: &Value) -> impl Iterator<Item = &Value> {
    values(hooks)
        .map(|e| at(e, &["expected"]))
        .filter(|e| truthy(e))
}

pub(super) fn codex(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let h = |name: &str, path: &[&str]| {
        let mut full_path = vec![name, "expected"];
        full_path.extend_from_slice(path);
        at(hooks, &full_path)
    };
    single_pins(c, "codex", hooks);
    c.fact(
        "codex pins: every mapped hook lands on a core type (10 -> 10)",
        expecteds(hooks).all(|e| !starts(e, "x.")),
    );
    c.fact(
        "codex pins: compaction emitted once, at PostCompact (documented deviation)",
        h("PreCompact", &[]).is_null() && h("PostCompact", &["type"]) == "session.compacted",
    );
    let pr = h("PermissionRequest", &["data"]);
    c.fact(
        "codex pins: PermissionRequest is a permission-kind attention request over control",
        at(pr, &["kind"]) == "permission"
            && at(pr, &["respond_via"]) == &json!(["control"])
            && ids(at(pr, &["options"])) == ["allow", "deny"],
    );
    session_fallback(c, "codex", "codex", doc);
    c.fact(
        "codex pins: identity facts (thread -> session, turn -> run)",
        session_from(doc) == "session_id" && at(doc, &["identity", "run_from"]) == "turn_id",
    );
}

pub(super) fn gemini(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let exp = |name: &str| at(hooks, &[name, "expected"]);
    single_pins(c, "gemini", hooks);
    let core = [
        "SessionStart",
        "SessionEnd",
        "BeforeAgent",
        "AfterAgent",
        "BeforeTool",
        "AfterTool",
        "AfterTool-error",
        "PreCompress",
        "Notification",
    ];
    c.fact(
        "gemini pins: lifecycle/tool/compaction/notification hooks land on core types",
        core.iter().all(|n| !starts(exp(n), "x.")),
    );
    c.fact(
        "gemini pins: the model plane stays in the vendor namespace by design",
        ["BeforeModel", "AfterModel", "BeforeToolSelection"]
            .iter()
            .all(|n| starts(exp(n), "x.gemini-cli.session.")),
    );
    c.fact(
        "gemini pins: tool errors map to tool.failed honestly (tool_response.error)",
        ty(exp("AfterTool-error")) == "tool.failed" && ty(exp("AfterTool")) == "tool.completed",
    );
    c.fact(
        "gemini pins: compaction emitted at the vendor's only exposed (pre) moment",
        ty(exp("PreCompress")) == "session.compacted"
            && at(exp("PreCompress"), &["data", "trigger"]) == "auto",
    );
    c.fact(
        "gemini pins: Notification is observability-only — progress.status, never attention.*",
        ty(exp("Notification")) == "progress.status"
            && !expecteds(hooks).any(|e| starts(e, "attention.")),
    );
    session_fallback(c, "gemini", "gemini-cli", doc);
    identity_without_run(
        c,
        "gemini pins: identity facts (session_id -> session; runs are adapter-synthesized)",
        doc,
        "session_id",
    );
}

pub(super) fn qwen(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let exp = |name: &str| at(hooks, &[name, "expected"]);
    let input = |name: &str, key: &str| at(hooks, &[name, "input", key]);
    single_pins(c, "qwen", hooks);
    c.fact(
        "qwen pins: every mapped hook lands on a core type",
        expecteds(hooks).all(|e| !starts(e, "x.")),
    );
    let pr = at(exp("PermissionRequest"), &["data"]);
    c.fact(
        "qwen pins: PermissionRequest is a permission-kind attention request over control",
        at(pr, &["kind"]) == "permission" && at(pr, &["respond_via"]) == &json!(["control"]),
    );
    c.fact(
        "qwen pins: the permission_prompt notification is suppressed (first-class hook covers it)",
        exp("Notification_permission").is_null()
            && ty(exp("Notification_other")) == "progress.status",
    );
    c.fact(
        "qwen pins: compaction once, at the post moment (PreCompact deliberately silent)",
        exp("PreCompact").is_null() && ty(exp("PostCompact")) == "session.compacted",
    );
    c.fact(
        "qwen pins: the todo validation phase is suppressed (the persisted postWrite fact is the event)",
        exp("TodoCreated_validation").is_null()
            && exp("TodoCompleted_validation").is_null()
            && input("TodoCreated_validation", "phase") == "validation"
            && input("TodoCreated", "phase") == "postWrite"
            && ty(exp("TodoCreated")) == "progress.task.planned",
    );
    c.fact(
        "qwen pins: StopFailure carries the vendor error taxonomy as run.failed.reason",
        at(exp("StopFailure"), &["data", "reason"]) == "rate_limit",
    );
    session_fallback(c, "qwen", "qwen-code", doc);
    identity_without_run(
        c,
        "qwen pins: identity (session_id -> session; runs synthesized; tool_use_id pairs)",
        doc,
        "session_id",
    );
}

pub(super) fn vscode(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let exp = |name: &str| at(hooks, &[name, "expected"]);
    single_pins(c, "vscode", hooks);
    c.fact(
        "vscode pins: every mapped hook lands on a core type",
        expecteds(hooks).all(|e| !starts(e, "x.")),
    );
    c.fact(
        "vscode pins: compaction at the PRE moment (no post moment exists — the documented deviation)",
        ty(exp("PreCompact")) == "session.compacted" && lacks(hooks, "PostCompact"),
    );
    c.fact(
        "vscode pins: success-only tool surface — tool.failed/run.failed/session.ended have no vendor moment",
        expecteds(hooks).all(|e| !["tool.failed", "run.failed", "session.ended"].contains(&ty(e)))
            && ty(exp("PostToolUse")) == "tool.completed",
    );
    let mut names: Vec<&str> = entries(hooks).map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    // the adapter maps (and `aep setup` registers) exactly these
    let mut want = aep_adapters::sources::vscode::HOOKS;
    want.sort_unstable();
    c.fact(
        "vscode pins: the 8-event VSCode-target set is covered exactly",
        names == want,
    );
    session_fallback(c, "vscode", "vscode", doc);
    identity_without_run(
        c,
        "vscode pins: identity (optional session_id -> session; runs synthesized; tool_use_id pairs)",
        doc,
        "session_id",
    );
}

pub(super) fn kimi_code(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let exp = |name: &str| at(hooks, &[name, "expected"]);
    single_pins(c, "kimi-code", hooks);
    let mut names: Vec<&str> = values(hooks)
        .map(|e| at(e, &["input", "hook_event_name"]).as_str().unwrap_or(""))
        .collect();
    names.sort_unstable();
    names.dedup();
    // the adapter maps (and `aep setup` registers) exactly these
    let mut want = aep_adapters::sources::kimi_code::HOOKS;
    want.sort_unstable();
    c.fact(
        "kimi-code pins: the 16-event enum is covered exactly (multi-decision results as variants)",
        names == want,
    );
    c.fact(
        "kimi-code pins: the failure twin exists (PostToolUseFailure -> tool.failed; StopFailure -> run.failed with the required reason)",
        ty(exp("PostToolUseFailure")) == "tool.failed"
            && ty(exp("StopFailure")) == "run.failed"
            && !lacks(at(exp("StopFailure"), &["data"]), "reason"),
    );
    c.fact(
        "kimi-code pins: the Interrupt hook is the vendor-named cancellation (run.cancelled by user)",
        ty(exp("Interrupt")) == "run.cancelled" && at(exp("Interrupt"), &["data", "by"]) == "user",
    );
    let request = at(exp("PermissionRequest"), &["data"]);
    c.fact(
        "kimi-code pins: the permission pair is observe-only oob — no options claimed, answers ride oob",
        at(request, &["respond_via"]) == &json!(["oob"])
            && lacks(request, "options")
            && at(exp("PermissionResult_approved"), &["data", "via"]) == "oob",
    );
    c.fact(
        "kimi-code pins: a cancelled result dismisses with no answered moment; an error result degrades to the fallback",
        ty(exp("PermissionResult_cancelled")) == "attention.resolved"
            && at(exp("PermissionResult_cancelled"), &["data", "resolution"]) == "dismissed"
            && starts(exp("PermissionResult_error"), "x.kimi-code."),
    );
    c.fact(
        "kimi-code pins: compaction once, at the post moment (PreCompact degrades — both moments exist)",
        ty(exp("PostCompact")) == "session.compacted" && starts(exp("PreCompact"), "x.kimi-code."),
    );
    c.fact(
        "kimi-code pins: a steer submission never opens a run",
        starts(exp("UserPromptSubmit_steer"), "x.kimi-code.")
            && ty(exp("UserPromptSubmit")) == "run.started",
    );
    c.fact(
        "kimi-code pins: Notification is an observability heartbeat, never an attention loop",
        ty(exp("Notification")) == "progress.status",
    );
    session_fallback(c, "kimi-code", "kimi-code", doc);
    identity_without_run(
        c,
        "kimi-code pins: identity (session_id -> session, optional; runs synthesized; tool_call_id pairs)",
        doc,
        "session_id",
    );
}

/// The Kimi web channel: the two-mode (companion/primary) discipline on a WS channel.
pub(super) fn kimi_web(docs: &[&Value], c: &mut Checks) {
    let modes = at(docs[0], &["ws_modes", "modes"]);
    let m = |name: &str, mode: &str| at(modes, &[name, mode]);
    for (name, entry) in entries(modes) {
        c.pin("kimi-web primary", name, at(entry, &["primary"]));
    }
    c.fact(
        "kimi-web pins: volatile frames and the internal bus echoes never emit in either mode",
        m("volatile_status", "companion").is_null()
            && m("volatile_status", "primary").is_null()
            && m("bus_echo_permission", "companion").is_null()
            && m("bus_echo_permission", "primary").is_null(),
    );
    c.fact(
        "kimi-web companion pins: every emitted moment is x.kimi-code.web.* (the dedup rule; the hook adapter is the core authority)",
        values(modes).all(|e| {
            let comp = at(e, &["companion"]);
            comp.is_null() || starts(comp, "x.kimi-code.web.")
        }) && values(modes).any(|e| !at(e, &["companion"]).is_null()),
    );
    let approval = at(m("approval_requested", "primary"), &["data"]);
    let question = at(m("question_requested", "primary"), &["data"]);
    c.fact(
        "kimi-web primary pins: the read-only channel advertises no answer path on any ask",
        ty(m("approval_requested", "primary")) == "attention.requested"
            && lacks(approval, "options")
            && lacks(approval, "respond_via")
            && lacks(question, "options")
            && lacks(question, "respond_via"),
    );
    c.fact(
        "kimi-web primary pins: the vendor's REAL turn boundaries carry the run pair (no synthesis, no fabricated session lifecycle)",
        ty(m("turn_started", "primary")) == "run.started"
            && ty(m("turn_ended_completed", "primary")) == "run.finished"
            && ty(m("turn_ended_cancelled", "primary")) == "run.cancelled"
            && !values(modes).any(|e| starts(at(e, &["primary"]), "session.")),
    );
    c.fact(
        "kimi-web primary pins: the tool result stays receiver-paired (the wire names no tool; the pure pin is null)",
        ty(m("tool_call_started", "primary")) == "tool.requested"
            && m("tool_result", "primary").is_null(),
    );
    c.fact(
        "kimi-web primary pins: a decision-less approval resolve dismisses; a decision answers via oob",
        ty(m("approval_resolved_dismissed", "primary")) == "attention.resolved"
            && at(m("approval_resolved_dismissed", "primary"), &["data", "resolution"]) == "dismissed"
            && at(m("approval_resolved_rejected", "primary"), &["data", "via"]) == "oob",
    );
}
