//! The OTel-inbound channels (Codex, VS Code agent), companion and primary modes.

use serde_json::Value;

use super::*;

/// The schema checks of an OTel channel's records, both modes.
pub(super) fn otel_pins(c: &mut Checks, prefix: &str, records: &Value) {
    for (name, entry) in entries(records) {
        for mode in ["companion", "primary"] {
            c.pin(prefix, &format!("{mode} {name}"), at(entry, &[mode]));
        }
    }
}

/// The core types primary mode emits.
pub(super) fn primary_core(records: &Value) -> Vec<&str> {
    let mut core: Vec<&str> = values(records)
        .map(|e| at(e, &["primary"]))
        .filter(|p| truthy(p) && !starts(p, "x."))
        .map(ty)
        .collect();
    core.sort_unstable();
    core.dedup();
    core
}

pub(super) fn codex_otel(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let records = at(doc, &["records"]);
    let primary = |name: &str| at(records, &[name, "primary"]);
    otel_pins(c, "codex-otel", records);
    c.fact(
        "codex-otel pins: companion mode NEVER emits a core type (the dedup rule)",
        values(records)
            .chain([at(doc, &["unknown"])])
            .all(|e| starts(at(e, &["companion"]), "x.codex.otel.")),
    );
    c.fact(
        "codex-otel pins: primary mode's core subset is exactly the designed one",
        primary_core(records) == ["session.started", "tool.completed", "tool.denied", "tool.failed"],
    );
    c.fact(
        "codex-otel pins: a user deny maps to nothing in primary mode (human decision, not policy)",
        primary("tool_decision_user_deny").is_null()
            && at(primary("tool_decision_config_deny"), &["data", "by"]) == "policy",
    );
    c.fact(
        "codex-otel pins: prompt/transport internals stay vendor-namespaced in BOTH modes",
        ["user_prompt", "api_request", "sse_event", "websocket_event"]
            .iter()
            .all(|n| starts(primary(n), "x.codex.otel.")),
    );
    identity_without_run(
        c,
        "codex-otel pins: identity (conversation.id -> session; no run synthesis)",
        doc,
        "conversation.id",
    );
}

pub(super) fn vscode_otel(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let records = at(doc, &["records"]);
    let primary = |name: &str| at(records, &[name, "primary"]);
    otel_pins(c, "vscode-otel", records);
    let with_unknown: Vec<&Value> = values(records).chain([at(doc, &["unknown"])]).collect();
    c.fact(
        "vscode-otel pins: companion mode NEVER emits a core type (the dedup rule)",
        with_unknown
            .iter()
            .all(|e| starts(at(e, &["companion"]), "x.vscode.otel.")),
    );
    c.fact(
        "vscode-otel pins: primary mode's core subset is exactly the designed one",
        primary_core(records) == ["session.started", "tool.completed", "tool.failed"],
    );
    c.fact(
        "vscode-otel pins: the hook-only tiers never ride this channel (no tool.denied — the decision tier never reaches OTel; no session.ended — it does not exist on this vendor surface)",
        with_unknown.iter().all(|e| {
            ["companion", "primary"].iter().all(|m| {
                let p = at(e, &[m]);
                p.is_null() || !["tool.denied", "session.ended"].contains(&ty(p))
            })
        }),
    );
    c.fact(
        "vscode-otel pins: turn/edit/inference visibility stays vendor-namespaced in BOTH modes",
        ["agent_turn", "inference_details", "edit_feedback"]
            .iter()
            .all(|n| starts(primary(n), "x.vscode.otel.")),
    );
    identity_without_run(
        c,
        "vscode-otel pins: identity (resource session.id -> session; no run synthesis)",
        doc,
        "resource:session.id",
    );
}
