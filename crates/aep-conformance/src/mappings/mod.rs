//! Class `mappings`: the AEP-0002 Annex A mapping pins (`conformance/mappings/*.json`),
//! checked from the spec side as the protocol's runner does: every pinned payload that
//! has a schema validates against it (aep-core's payload validator), and the wire facts
//! each adapter's design record promises hold (core types where the table says core,
//! the vendor namespace where it says vendor, no invented answers or identities).
//!
//! These checks use no adapter implementation, like `run.py`; the check names, their
//! order and their predicates follow `spec/conformance/run.py` block by block, one
//! submodule per family of pins: `forms` (Claude Code's AEP-0006 pins), `hooks` (one
//! event per hook), `bus` (OpenCode and Kilo Code, their SSE channels), `listed` (a
//! list of events per hook), `wire` (ACP, AG-UI, OpenHands, pi), `otel` (the OTel
//! channels). The class `adapters` runs this SDK's own mappings (`aep-adapters`)
//! against the same pins.

use std::path::Path;

use aep_core::payload::truthy;
use aep_core::types::lookup;
use aep_core::validate::validate_payload;
use regex::Regex;
use serde_json::{json, Value};

use crate::check::Check;
use crate::fixtures::read_json;

mod bus;
mod forms;
mod hooks;
mod listed;
mod otel;
mod wire;

use bus::{kilocode, kilocode_sse, opencode, opencode_sse};
use forms::{ask_user_question, elicitation};
use hooks::{codex, gemini, kimi_code, kimi_web, qwen, vscode};
use listed::{antigravity, cline, hermes};
use otel::{codex_otel, vscode_otel};
use wire::{acp, agui, openhands, pi};

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

/// The identity fact `name` of a mapping whose session rides `field` and that names no
/// `run_from` (the adapter synthesizes runs, or the source has none).
fn identity_without_run(c: &mut Checks, name: &str, doc: &Value, field: &str) {
    c.fact(name, session_from(doc) == field && runs_synthesized(doc));
}

// ---- tables with a list of expected events per entry

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
