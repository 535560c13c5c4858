//! Class `mappings`: the AEP-0002 Annex A mapping pins (`conformance/mappings/*.json`),
//! checked from the spec side as the protocol's runner does: every pinned payload that
//! has a schema validates against it (aep-core's payload validator), and the wire facts
//! each adapter's design record promises hold (core types where the table says core,
//! the vendor namespace where it says vendor, no invented answers or identities).
//!
//! This runner has no adapter implementation, like `run.py`; the check names, their
//! order and their predicates follow `spec/conformance/run.py` block by block.

use std::path::Path;

use aep_core::payload::truthy;
use aep_core::types::lookup;
use aep_core::validate::validate_payload;
use regex::Regex;
use serde_json::{json, Value};

use crate::check::Check;
use crate::fixtures::read_json;

/// Runs every block, in `run.py`'s order. A mapping file that cannot be read is one
/// failing check for its block; the other blocks still run.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let mut out = Checks(Vec::new());
    let files = [
        "claude-code",
        "codex",
        "gemini-cli",
        "qwen-code",
        "vscode",
        "kimi-code",
        "opencode",
        "kilocode",
        "cline",
        "hermes",
        "antigravity",
        "acp",
        "agui",
        "openhands",
        "codex-otel",
        "vscode-otel",
        "pi",
    ];
    let mut docs = Vec::new();
    for name in files {
        match read_json(fixtures, &format!("conformance/mappings/{name}.json")) {
            Ok(doc) => docs.push(doc),
            Err(check) => {
                out.0.push(check);
                docs.push(Value::Null);
            }
        }
    }
    let doc = |name: &str| {
        files
            .iter()
            .position(|f| *f == name)
            .and_then(|i| docs.get(i))
            .filter(|d| !d.is_null())
    };
    let blocks: [(&[&str], Block); 21] = [
        (&["claude-code"], ask_user_question),
        (&["claude-code"], elicitation),
        (&["codex"], codex),
        (&["gemini-cli"], gemini),
        (&["qwen-code"], qwen),
        (&["vscode"], vscode),
        (&["kimi-code"], kimi_code),
        (&["kimi-code"], kimi_web),
        (&["opencode"], opencode),
        (&["kilocode"], kilocode),
        (&["cline"], cline),
        (&["hermes"], hermes),
        (&["antigravity"], antigravity),
        (&["acp"], acp),
        (&["opencode"], opencode_sse),
        (&["opencode", "kilocode"], kilocode_sse),
        (&["agui"], agui),
        (&["openhands"], openhands),
        (&["codex-otel"], codex_otel),
        (&["vscode-otel"], vscode_otel),
        (&["pi"], pi),
    ];
    for (needs, block) in blocks {
        let found: Vec<&Value> = needs.iter().filter_map(|n| doc(n)).collect();
        if found.len() == needs.len() {
            block(&found, &mut out);
        }
    }
    out.0
}

/// One block of `run.py`: the mapping files it reads, in order, and its checks.
type Block = fn(&[&Value], &mut Checks);

/// The checks of a run, with the two shapes `run.py` writes.
struct Checks(Vec<Check>);

impl Checks {
    /// A wire-facts check: a predicate over the pins.
    fn fact(&mut self, name: &str, ok: bool) {
        self.0.push(Check::new(
            name,
            ok,
            "the pinned wire facts do not hold".to_owned(),
        ));
    }

    /// A schema check of a payload against `event_type`'s schema.
    fn valid(&mut self, name: String, event_type: &str, data: &Value) {
        let issues = validate_payload(event_type, data);
        self.0.push(Check::new(
            name,
            issues.is_empty(),
            crate::golden::summary(&issues),
        ));
    }

    /// `run.py`'s loop body: an expected event whose type has a payload schema and
    /// whose `data` is not empty must validate; otherwise there is no check.
    fn pin(&mut self, prefix: &str, label: &str, exp: &Value) {
        if exp.is_null() {
            return;
        }
        let t = ty(exp);
        let has_schema = lookup(t).is_some_and(|r| r.schema.is_some());
        let data = at(exp, &["data"]);
        if has_schema && truthy(data) {
            self.valid(format!("{prefix} pin schema-valid ({label} -> {t})"), t, data);
        }
    }
}

static NULL: Value = Value::Null;

/// The value at a path of object keys and array indices (`-1`: the last item);
/// `null` where there is none.
fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    let mut cur = v;
    for key in path {
        cur = match cur {
            Value::Object(m) => m.get(*key),
            Value::Array(a) if *key == "-1" => a.last(),
            Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        }
        .unwrap_or(&NULL);
    }
    cur
}

/// An event's `type` (empty when it has none).
fn ty(v: &Value) -> &str {
    at(v, &["type"]).as_str().unwrap_or("")
}

/// Python's `key not in d` for a dict `d`.
fn lacks(v: &Value, key: &str) -> bool {
    v.get(key).is_none()
}

/// A list's items (none when it is not a list).
fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// An object's entries in file order (none when it is not an object).
fn entries(v: &Value) -> impl Iterator<Item = (&String, &Value)> {
    v.as_object().into_iter().flatten()
}

/// An object's values, in file order.
fn values(v: &Value) -> impl Iterator<Item = &Value> {
    entries(v).map(|(_, v)| v)
}

/// The `id`s of a list of objects.
fn ids(v: &Value) -> Vec<&str> {
    items(v)
        .iter()
        .map(|o| at(o, &["id"]).as_str().unwrap_or(""))
        .collect()
}

/// Python's `str()` of a JSON value.
fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        other => other.to_string(),
    }
}

/// Python's `v == n` for a number.
fn num_is(v: &Value, n: f64) -> bool {
    v.as_f64() == Some(n)
}

/// `re.fullmatch(pattern, text) is not None`.
fn full(pattern: &str, text: &str) -> bool {
    Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|re| re.is_match(text))
}

fn starts(v: &Value, prefix: &str) -> bool {
    ty(v).starts_with(prefix)
}

/// The pins' `identity.run_from` is `null` (runs are synthesized by the adapter).
fn runs_synthesized(doc: &Value) -> bool {
    at(doc, &["identity", "run_from"]).is_null()
}

fn session_from(doc: &Value) -> &str {
    at(doc, &["identity", "session_from"]).as_str().unwrap_or("")
}

// ---- Claude Code: AskUserQuestion and MCP elicitation -> kind:"form" (AEP-0006)

fn ask_user_question(docs: &[&Value], c: &mut Checks) {
    let auq = at(docs[0], &["ask_user_question"]);
    let questions = items(at(auq, &["input", "questions"]));
    for key in ["expected_data", "expected_data_metadata"] {
        let data = at(auq, &[key]);
        c.valid(
            format!("mapping pin schema-valid ({key})"),
            "attention.requested",
            data,
        );
        let fields = items(at(data, &["fields"]));
        let facts = at(data, &["kind"]) == "form"
            && fields.len() == questions.len()
            && fields.iter().all(|f| {
                at(f, &["type"]) == "select"
                    && at(f, &["other"]) == &Value::Bool(true)
                    && at(f, &["required"]) == &Value::Bool(true)
            })
            && fields.iter().zip(questions).all(|(f, q)| {
                (at(f, &["multi"]) == &Value::Bool(true))
                    == (at(q, &["multiSelect"]) == &Value::Bool(true))
            })
            && fields.iter().zip(questions).all(|(f, q)| {
                items(at(f, &["choices"])).len() == items(at(q, &["options"])).len()
            });
        c.fact(&format!("mapping pin wire facts ({key})"), facts);
    }
    let content = items(at(auq, &["expected_data", "fields"]));
    let placeholders = items(at(auq, &["expected_data_metadata", "fields"]));
    let labels_hold = questions.iter().zip(content).all(|(q, f)| {
        let question = at(q, &["question"]).as_str().unwrap_or("");
        at(f, &["label"])
            .as_str()
            .is_some_and(|l| l.contains(question))
    }) && placeholders
        .iter()
        .all(|f| at(f, &["label"]) == at(f, &["id"]));
    c.fact(
        "mapping pins show the [metadata*] label exception (content at redacted, placeholders at metadata)",
        labels_hold,
    );
}

fn elicitation(docs: &[&Value], c: &mut Checks) {
    let eli = at(docs[0], &["elicitation"]);
    let schema = at(eli, &["input", "requestedSchema"]);
    let props = at(schema, &["properties"]);
    let required: Vec<&str> = items(at(schema, &["required"]))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let shape = |p: &Value| -> &'static str {
        if p.get("enum").is_some() {
            return "select";
        }
        match at(p, &["type"]).as_str() {
            Some("number" | "integer") => "number",
            Some("boolean") => "boolean",
            _ => "string",
        }
    };
    for key in ["expected_data", "expected_data_metadata"] {
        let data = at(eli, &[key]);
        c.valid(
            format!("elicitation pin schema-valid ({key})"),
            "attention.requested",
            data,
        );
        let fields = items(at(data, &["fields"]));
        let field = |k: &str| {
            fields
                .iter()
                .rev()
                .find(|f| at(f, &["id"]) == k)
                .unwrap_or(&NULL)
        };
        let mut field_ids: Vec<&str> = fields
            .iter()
            .map(|f| at(f, &["id"]).as_str().unwrap_or(""))
            .collect();
        field_ids.sort_unstable();
        field_ids.dedup();
        let mut prop_ids: Vec<&str> = entries(props).map(|(k, _)| k.as_str()).collect();
        prop_ids.sort_unstable();
        let facts = at(data, &["kind"]) == "form"
            && field_ids == prop_ids
            && entries(props).all(|(k, p)| at(field(k), &["type"]) == shape(p))
            && entries(props).all(|(k, _)| {
                at(field(k), &["required"]) == &Value::Bool(required.contains(&k.as_str()))
            })
            && fields
                .iter()
                .all(|f| at(f, &["other"]) != &Value::Bool(true))
            && entries(props)
                .filter(|(_, p)| p.get("enum").is_some())
                .all(|(k, p)| {
                    items(at(field(k), &["choices"])).len() == items(at(p, &["enum"])).len()
                });
        c.fact(&format!("elicitation pin wire facts ({key})"), facts);
    }
    let content = items(at(eli, &["expected_data", "fields"]));
    let placeholders = items(at(eli, &["expected_data_metadata", "fields"]));
    let titles_hold = values(props)
        .zip(content)
        .filter(|(p, _)| truthy(at(p, &["title"])))
        .all(|(p, f)| at(f, &["label"]).as_str() == Some(py_str(at(p, &["title"])).as_str()));
    c.fact(
        "elicitation pins show the [metadata*] label exception",
        titles_hold
            && placeholders
                .iter()
                .all(|f| at(f, &["label"]) == at(f, &["id"])),
    );
}

// ---- hook adapters with one expected event per hook

/// The schema checks of a `hooks` map whose entries carry one `expected` (or null).
fn single_pins(c: &mut Checks, prefix: &str, hooks: &Value) {
    for (name, entry) in entries(hooks) {
        c.pin(prefix, name, at(entry, &["expected"]));
    }
}

/// Every non-null `expected` of a hooks map.
fn expecteds(hooks: &Value) -> impl Iterator<Item = &Value> {
    values(hooks)
        .map(|e| at(e, &["expected"]))
        .filter(|e| truthy(e))
}

fn codex(docs: &[&Value], c: &mut Checks) {
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
    c.fact(
        "codex pins: unknown hooks fall back to the vendor extension namespace",
        full(r"x\.codex\.session\.[a-z][a-z0-9_]*", ty(at(doc, &["fallback", "expected"]))),
    );
    c.fact(
        "codex pins: identity facts (thread -> session, turn -> run)",
        session_from(doc) == "session_id" && at(doc, &["identity", "run_from"]) == "turn_id",
    );
}

fn gemini(docs: &[&Value], c: &mut Checks) {
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
    c.fact(
        "gemini pins: unknown hooks fall back to the vendor extension namespace",
        full(
            r"x\.gemini-cli\.session\.[a-z][a-z0-9_]*",
            ty(at(doc, &["fallback", "expected"])),
        ),
    );
    c.fact(
        "gemini pins: identity facts (session_id -> session; runs are adapter-synthesized)",
        session_from(doc) == "session_id" && runs_synthesized(doc),
    );
}

fn qwen(docs: &[&Value], c: &mut Checks) {
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
    c.fact(
        "qwen pins: unknown hooks fall back to the vendor extension namespace",
        full(
            r"x\.qwen-code\.session\.[a-z][a-z0-9_]*",
            ty(at(doc, &["fallback", "expected"])),
        ),
    );
    c.fact(
        "qwen pins: identity (session_id -> session; runs synthesized; tool_use_id pairs)",
        session_from(doc) == "session_id" && runs_synthesized(doc),
    );
}

fn vscode(docs: &[&Value], c: &mut Checks) {
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
    let mut want = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "SubagentStart",
        "SubagentStop",
        "Stop",
    ];
    want.sort_unstable();
    c.fact(
        "vscode pins: the 8-event VSCode-target set is covered exactly",
        names == want,
    );
    c.fact(
        "vscode pins: unknown hooks fall back to the vendor extension namespace",
        full(
            r"x\.vscode\.session\.[a-z][a-z0-9_]*",
            ty(at(doc, &["fallback", "expected"])),
        ),
    );
    c.fact(
        "vscode pins: identity (optional session_id -> session; runs synthesized; tool_use_id pairs)",
        session_from(doc) == "session_id" && runs_synthesized(doc),
    );
}

fn kimi_code(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let exp = |name: &str| at(hooks, &[name, "expected"]);
    single_pins(c, "kimi-code", hooks);
    let mut names: Vec<&str> = values(hooks)
        .map(|e| at(e, &["input", "hook_event_name"]).as_str().unwrap_or(""))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut want = [
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
    c.fact(
        "kimi-code pins: unknown hooks fall back to the vendor extension namespace",
        full(
            r"x\.kimi-code\.session\.[a-z][a-z0-9_]*",
            ty(at(doc, &["fallback", "expected"])),
        ),
    );
    c.fact(
        "kimi-code pins: identity (session_id -> session, optional; runs synthesized; tool_call_id pairs)",
        session_from(doc) == "session_id" && runs_synthesized(doc),
    );
}

/// The Kimi web channel: the two-mode (companion/primary) discipline on a WS channel.
fn kimi_web(docs: &[&Value], c: &mut Checks) {
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

// ---- OpenCode and its fork Kilo Code: the same moment table on two namespaces

/// The moment checks shared by OpenCode (`vendor` = `opencode`) and Kilo Code
/// (`kilocode`); only the last check's name differs.
fn bus_moments(doc: &Value, c: &mut Checks, vendor: &str, identity_name: &str) {
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

fn opencode(docs: &[&Value], c: &mut Checks) {
    bus_moments(
        docs[0],
        c,
        "opencode",
        "opencode pins: identity (bus sessionID rides; runs synthesized on idle boundaries)",
    );
}

fn kilocode(docs: &[&Value], c: &mut Checks) {
    bus_moments(
        docs[0],
        c,
        "kilocode",
        "kilocode pins: identity carries the fork's parent shape (bus sessionID; runs synthesized)",
    );
}

/// The SSE channel checks shared by OpenCode and Kilo Code.
fn sse_modes(modes: &Value, c: &mut Checks, channel: &str, vendor: &str) {
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

fn opencode_sse(docs: &[&Value], c: &mut Checks) {
    sse_modes(at(docs[0], &["sse_modes", "modes"]), c, "opencode-sse", "opencode");
}

/// The Kilo Code SSE channel: OpenCode's moments on the fork's namespace plus the
/// fork-only moments of its >=7.4.6 runtime.
fn kilocode_sse(docs: &[&Value], c: &mut Checks) {
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

// ---- hook adapters with a list of expected events per hook

/// The schema checks of entries whose `expected` is a list (plus, with `deltas`, their
/// `deltas_expected` lists), `fallback` last.
fn list_pins(c: &mut Checks, prefix: &str, table: &Value, fallback: &Value, deltas: bool) {
    let named = entries(table).map(|(k, v)| (k.as_str(), v));
    for (name, entry) in named.chain([("fallback", fallback)]) {
        let mut pins: Vec<&Value> = items(at(entry, &["expected"])).iter().collect();
        if deltas {
            pins.extend(items(at(entry, &["deltas_expected"])));
        }
        for exp in pins {
            c.pin(prefix, name, exp);
        }
    }
}

/// Every expected event of a table of lists, `fallback` included when given.
fn all_listed<'a>(table: &'a Value, fallback: Option<&'a Value>) -> Vec<&'a Value> {
    values(table)
        .chain(fallback)
        .flat_map(|e| items(at(e, &["expected"])))
        .collect()
}

fn cline(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let fallback = at(doc, &["fallback"]);
    let first = |name: &str| at(hooks, &[name, "expected", "0"]);
    list_pins(c, "cline", hooks, fallback, false);
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
    c.fact(
        "cline pins: identity (taskId rides; run boundaries real, run id adapter-minted)",
        session_from(doc) == "taskId" && runs_synthesized(doc),
    );
}

fn hermes(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let fallback = at(doc, &["fallback"]);
    let nth = |name: &str, i: &str| at(hooks, &[name, "expected", i]);
    let first = |name: &str| nth(name, "0");
    list_pins(c, "hermes", hooks, fallback, false);
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

fn antigravity(docs: &[&Value], c: &mut Checks) {
    let doc = docs[0];
    let hooks = at(doc, &["hooks"]);
    let fallback = at(doc, &["fallback"]);
    let first = |name: &str| at(hooks, &[name, "expected", "0"]);
    list_pins(c, "antigravity", hooks, fallback, false);
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
    c.fact(
        "antigravity pins: identity (conversationId -> session verbatim; runs synthesized)",
        session_from(doc) == "conversationId" && runs_synthesized(doc),
    );
    c.fact(
        "antigravity pins: unknown hook event names fall back mechanically to x.antigravity.hook.*",
        full(
            r"x\.antigravity\.hook\.[a-z0-9_.]+",
            ty(at(fallback, &["expected", "0"])),
        ),
    );
}

fn acp(docs: &[&Value], c: &mut Checks) {
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

fn agui(docs: &[&Value], c: &mut Checks) {
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

fn openhands(docs: &[&Value], c: &mut Checks) {
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

// ---- OTel-inbound channels (companion and primary modes)

/// The schema checks of an OTel channel's records, both modes.
fn otel_pins(c: &mut Checks, prefix: &str, records: &Value) {
    for (name, entry) in entries(records) {
        for mode in ["companion", "primary"] {
            c.pin(prefix, &format!("{mode} {name}"), at(entry, &[mode]));
        }
    }
}

/// The core types primary mode emits.
fn primary_core(records: &Value) -> Vec<&str> {
    let mut core: Vec<&str> = values(records)
        .map(|e| at(e, &["primary"]))
        .filter(|p| truthy(p) && !starts(p, "x."))
        .map(ty)
        .collect();
    core.sort_unstable();
    core.dedup();
    core
}

fn codex_otel(docs: &[&Value], c: &mut Checks) {
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
    c.fact(
        "codex-otel pins: identity (conversation.id -> session; no run synthesis)",
        session_from(doc) == "conversation.id" && runs_synthesized(doc),
    );
}

fn vscode_otel(docs: &[&Value], c: &mut Checks) {
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
    c.fact(
        "vscode-otel pins: identity (resource session.id -> session; no run synthesis)",
        session_from(doc) == "resource:session.id" && runs_synthesized(doc),
    );
}

fn pi(docs: &[&Value], c: &mut Checks) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_truthiness() {
        let v = json!({"a": [{"b": 1}, {"b": 2}], "e": {}, "s": ""});
        assert_eq!(at(&v, &["a", "1", "b"]), &json!(2));
        assert_eq!(at(&v, &["a", "-1", "b"]), &json!(2));
        assert!(at(&v, &["a", "9"]).is_null());
        assert!(at(&v, &["nope", "deeper"]).is_null());
        assert!(!truthy(at(&v, &["e"])) && !truthy(at(&v, &["s"])) && truthy(at(&v, &["a"])));
        assert!(lacks(&v, "x") && !lacks(&v, "e"));
        assert_eq!(py_str(&json!(3)), "3");
        assert!(full(r"x\.pi\.event\.[a-z0-9_.]+", "x.pi.event.foo"));
        assert!(!full(r"x\.pi\.event\.[a-z0-9_.]+", "x.pi.event.foo!"));
    }

    #[test]
    fn a_broken_mapping_file_fails_only_its_block() {
        let checks = run(Path::new("/nonexistent"));
        assert_eq!(checks.len(), 17, "one failing check per file");
        assert!(checks.iter().all(|c| !c.pass));
    }
}
