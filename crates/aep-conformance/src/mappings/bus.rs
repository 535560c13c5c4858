//! OpenCode and its fork Kilo Code: the plugin moment table on two namespaces, and
//! their SSE channels in both modes.

use serde_json::Value;

use super::*;

/// The moment checks shared by OpenCode (`vendor` = `opencode`) and Kilo Code
/// (`kilocode`); only the last check's name differs.
pub(super) fn bus_moments(doc: &Value, c: &mut Checks, vendor: &str, identity_name: &str) {
    let moments = at(doc, &["moments"]);
    let exp = |name: &str| at(moments, &[name, "expected"]);
    for (name, entry) in entries(moments) {
        c.pin(vendor, name, at(entry, &["expected"]));
    }
    let core = [
        "session_created",
        "session_deleted",
        "session_idle",
        "session_compacted",
        "message_user",
        "tool_before",
        "tool_after",
        "permission_ask",
        "permission_replied",
    ];
    c.fact(
        &format!("{vendor} pins: lifecycle/tool/permission moments land on core types"),
        core.iter().all(|n| !starts(exp(n), "x.")),
    );
    let ns = format!("x.{vendor}.");
    c.fact(
        &format!("{vendor} pins: the machinery plane stays in the vendor namespace by design"),
        [
            "session_error",
            "message_assistant",
            "file_edited",
            "command_executed",
            "server_connected",
        ]
        .iter()
        .all(|n| starts(exp(n), &ns)),
    );
    let ask = at(exp("permission_ask"), &["data"]);
    c.fact(
        &format!("{vendor} pins: the hold-open ask is a permission-kind attention request over control"),
        at(ask, &["kind"]) == "permission" && at(ask, &["respond_via"]) == &json!(["control"]),
    );
    c.fact(
        &format!("{vendor} pins: bus permission.updated and todo.updated are deliberately silent"),
        exp("permission_updated").is_null() && exp("todo_updated").is_null(),
    );
    let mut todo_types: Vec<&str> = items(at(doc, &["todos", "expected"]))
        .iter()
        .map(ty)
        .collect();
    todo_types.sort_unstable();
    todo_types.dedup();
    c.fact(
        &format!("{vendor} pins: todo snapshots diff into planned/completed transitions only"),
        todo_types == ["progress.task.completed", "progress.task.planned"],
    );
    c.fact(
        &format!("{vendor} pins: no tool.failed on this surface (typed hooks expose no error), errors ride session-scoped"),
        values(moments).all(|e| {
            let exp = at(e, &["expected"]);
            exp.is_null() || ty(exp) != "tool.failed"
        }) && ty(exp("session_error")) == format!("x.{vendor}.session.error"),
    );
    let parent = at(exp("session_created_child"), &["data", "parent", "session"]);
    let created = at(
        moments,
        &["session_created", "input", "event", "properties", "info", "id"],
    );
    c.fact(
        &format!("{vendor} pins: a child session names its parent (the delegation shape)"),
        !parent.is_null() && parent == created,
    );
    c.fact(
        &format!("{vendor} pins: unknown bus types fall back mechanically to x.{vendor}.*"),
        full(
            &format!(r"x\.{vendor}\.[a-z0-9_.]+"),
            ty(at(doc, &["fallback", "expected"])),
        ),
    );
    c.fact(identity_name, runs_synthesized(doc));
}

pub(super) fn opencode(docs: &[&Value], c: &mut Checks) {
    bus_moments(
        docs[0],
        c,
        "opencode",
        "opencode pins: identity (bus sessionID rides; runs synthesized on idle boundaries)",
    );
}

pub(super) fn kilocode(docs: &[&Value], c: &mut Checks) {
    bus_moments(
        docs[0],
        c,
        "kilocode",
        "kilocode pins: identity carries the fork's parent shape (bus sessionID; runs synthesized)",
    );
}

/// The SSE channel checks shared by OpenCode and Kilo Code.
pub(super) fn sse_modes(modes: &Value, c: &mut Checks, channel: &str, vendor: &str) {
    let primary = |name: &str| at(modes, &[name, "primary"]);
    for (name, entry) in entries(modes) {
        c.pin(&format!("{channel} primary"), name, at(entry, &["primary"]));
    }
    let ns = format!("x.{vendor}.");
    c.fact(
        &format!("{channel} companion pins: ZERO core types on the channel (the dedup rule)"),
        values(modes).all(|e| {
            let comp = at(e, &["companion"]);
            !comp.is_null() && starts(comp, &ns)
        }),
    );
    let asked = at(primary("permission_updated"), &["data"]);
    c.fact(
        &format!("{channel} primary pins: the read-only channel advertises no answer path"),
        ty(primary("permission_updated")) == "attention.requested"
            && lacks(asked, "options")
            && lacks(asked, "respond_via"),
    );
    c.fact(
        &format!("{channel} primary pins: core lifecycle flows in SSE-only deployments"),
        ty(primary("session_created")) == "session.started"
            && ty(primary("message_user")) == "run.started"
            && ty(primary("session_idle")) == "run.finished",
    );
}

pub(super) fn opencode_sse(docs: &[&Value], c: &mut Checks) {
    sse_modes(at(docs[0], &["sse_modes", "modes"]), c, "opencode-sse", "opencode");
}

/// The Kilo Code SSE channel: OpenCode's moments on the fork's namespace plus the
/// fork-only moments of its >=7.4.6 runtime.
pub(super) fn kilocode_sse(docs: &[&Value], c: &mut Checks) {
    let opencode_modes = at(docs[0], &["sse_modes", "modes"]);
    let modes = at(docs[1], &["sse_modes", "modes"]);
    let divergence = ["permission_asked", "question_asked", "question_replied"];
    let mirrored: Vec<&String> = entries(modes)
        .map(|(k, _)| k)
        .filter(|k| !divergence.contains(&k.as_str()))
        .collect();
    let upstream: Vec<&String> = entries(opencode_modes).map(|(k, _)| k).collect();
    c.fact(
        "kilocode-sse mode names = the opencode mirror + the >=7.4.6 divergence moments",
        mirrored == upstream && divergence.iter().all(|k| !lacks(modes, k)),
    );
    sse_modes(modes, c, "kilocode-sse", "kilocode");
}
