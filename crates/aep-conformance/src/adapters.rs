//! Class `adapters`: this SDK's own Annex A mappings (`aep-adapters`) run on every
//! pinned input of `conformance/mappings/*.json` and compared with what the pin
//! expects: the check the reference runner (`run.js`) makes of the reference
//! adapters' pure mapping modules.
//!
//! What is compared is what a pin states: for each event, `type`, `data`, and
//! `subject` and `step` when the pin has them (absent in the pin: absent from the
//! event); `null` or `[]` where the mapping emits nothing. Envelope identity, ids,
//! times, positions and cause links are runtime wiring no pin states (the session
//! runtime's tests hold them). Each pin is taken at the posture it names: the default
//! (`metadata`, `attention.*` at `redacted`); `expected_data_metadata` at `metadata`
//! for every type; `deltas_expected` with stream deltas on (and, for ACP, whose pin
//! says so, at `redacted`); the channels' `companion` and `primary` modes each.
//!
//! One check per input/expected pair, named `adapter pin {source} {table}/{entry}`.

use std::path::Path;

use aep_adapters::sources::{
    antigravity, claude_code, kilocode, kimi_code, opencode, openhands,
};
use aep_adapters::{ChannelMode, Draft, Moment, Posture, Source};
use serde_json::{json, Value};

use crate::check::Check;
use crate::fixtures::read_json;

/// Runs every pin of every source, in Annex A order. A file that cannot be read is one
/// failing check; the other sources still run.
pub fn run(fixtures: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    for source in Source::ALL {
        let rel = format!("conformance/mappings/{}.json", source.name());
        match read_json(fixtures, &rel) {
            Ok(doc) => pins(source, &doc, &mut out),
            Err(check) => out.push(check),
        }
    }
    out
}

/// The postures the pins are taken at.
struct Postures {
    default: Posture,
    metadata: Posture,
    deltas: Posture,
    acp_deltas: Posture,
}

impl Postures {
    fn new() -> Postures {
        let default = Posture::default();
        let metadata = Posture::from_ceiling("metadata").unwrap_or_else(|_| default.clone());
        let acp_deltas = Posture::from_ceiling("redacted")
            .unwrap_or_else(|_| default.clone())
            .with_deltas(true);
        Postures {
            deltas: default.clone().with_deltas(true),
            default,
            metadata,
            acp_deltas,
        }
    }
}

/// The checks of one source's file.
fn pins(source: Source, doc: &Value, out: &mut Vec<Check>) {
    let postures = Postures::new();
    let name = source.name();
    let out = std::cell::RefCell::new(out);
    let check = |entry: String, got: Vec<Draft>, posture: &Posture, want: &Value| {
        out.borrow_mut().push(compare(name, &entry, &got, posture, want));
    };
    let check_data = |entry: String, data: Vec<Value>, want: &Value| {
        out.borrow_mut().push(compare_data(name, &entry, data, want));
    };
    let map = |payload: &Value, posture: &Posture| source.map(&Moment::new(payload), posture);
    match source {
        Source::ClaudeCode => {
            let auq = &doc["ask_user_question"];
            let hook = json!({"hook_event_name": "PermissionRequest", "tool_name": claude_code::ASK_USER_QUESTION, "tool_input": auq["input"]});
            let eli = &doc["elicitation"];
            let mut elicitation = json!({"hook_event_name": "Elicitation"});
            if let (Some(e), Some(i)) = (elicitation.as_object_mut(), eli["input"].as_object()) {
                e.extend(i.clone());
            }
            for (label, payload, entry) in [
                ("ask_user_question", &hook, auq),
                ("elicitation", &elicitation, eli),
            ] {
                for (key, posture) in [
                    ("expected_data", &postures.default),
                    ("expected_data_metadata", &postures.metadata),
                ] {
                    let got = map(payload, posture);
                    let data: Vec<Value> = got.iter().map(|d| d.render(posture).data).collect();
                    check_data(format!("{label}/{key}"), data, &entry[key]);
                }
            }
        }
        Source::Antigravity => {
            for (entry, e) in table(doc, "hooks").chain(fallback(doc)) {
                let hook = e["hook"].as_str().unwrap_or("");
                let joined = e["join"]["name"].as_str();
                let got = antigravity::map(hook, &e["input"], joined);
                check(entry, got, &postures.default, &e["expected"]);
            }
        }
        Source::CodexOtel | Source::VscodeOtel => {
            let records = table(doc, "records").chain(
                doc.get("unknown").map(|u| ("unknown".to_owned(), u)),
            );
            for (entry, e) in records {
                for (mode, key) in [
                    (ChannelMode::Companion, "companion"),
                    (ChannelMode::Primary, "primary"),
                ] {
                    let got = source.map(&Moment::new(&e["input"]).mode(mode), &postures.default);
                    check(format!("{entry} ({key})"), got, &postures.default, &e[key]);
                }
            }
        }
        _ => {
            let key = ["hooks", "moments", "events"]
                .into_iter()
                .find(|k| doc.get(*k).is_some())
                .unwrap_or("hooks");
            for (entry, e) in table(doc, key).chain(fallback(doc)) {
                check(entry.clone(), map(&e["input"], &postures.default), &postures.default, &e["expected"]);
                if let Some(want) = e.get("deltas_expected") {
                    let posture = if source == Source::Acp {
                        &postures.acp_deltas
                    } else {
                        &postures.deltas
                    };
                    check(format!("{entry} (deltas)"), map(&e["input"], posture), posture, want);
                }
            }
        }
    }
    match source {
        Source::Opencode | Source::Kilocode => {
            let todos = &doc["todos"];
            let diff = if source == Source::Opencode {
                opencode::diff_todos
            } else {
                kilocode::diff_todos
            };
            check(
                "todos".to_owned(),
                diff(&todos["input"]["prev"], &todos["input"]["next"]),
                &postures.default,
                &todos["expected"],
            );
            let sse = if source == Source::Opencode {
                opencode::sse
            } else {
                kilocode::sse
            };
            for (entry, e) in table(&doc["sse_modes"], "modes") {
                let input = &doc["moments"][entry.trim_start_matches("modes/")]["input"]["event"];
                for (mode, key) in [
                    (ChannelMode::Companion, "companion"),
                    (ChannelMode::Primary, "primary"),
                ] {
                    check(format!("sse_{entry} ({key})"), sse(input, mode), &postures.default, &e[key]);
                }
            }
        }
        Source::KimiCode => {
            for (entry, e) in table(&doc["ws_modes"], "modes") {
                for (mode, key) in [
                    (ChannelMode::Companion, "companion"),
                    (ChannelMode::Primary, "primary"),
                ] {
                    check(format!("ws_{entry} ({key})"), kimi_code::web(&e["input"], mode), &postures.default, &e[key]);
                }
            }
        }
        Source::Openhands => {
            for (entry, e) in table(doc, "status_transitions") {
                let got = openhands::status_moments(e["prev"].as_str(), e["next"].as_str().unwrap_or(""));
                check(entry, got, &postures.default, &e["expected"]);
            }
        }
        _ => {}
    }
}

/// The entries of the object `doc[key]`, named `{key}/{entry}`, in file order.
fn table<'a>(doc: &'a Value, key: &'a str) -> impl Iterator<Item = (String, &'a Value)> + 'a {
    doc.get(key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(move |(k, v)| (format!("{key}/{k}"), v))
}

/// The file's `fallback` entry, when it has one.
fn fallback(doc: &Value) -> impl Iterator<Item = (String, &Value)> {
    doc.get("fallback").map(|f| ("fallback".to_owned(), f)).into_iter()
}

/// The pin's expectation as a list of events without their `$comment`s: `null` is
/// nothing, an object one event.
fn expected(want: &Value) -> Vec<Value> {
    let list = match want {
        Value::Null => Vec::new(),
        Value::Array(items) => items.clone(),
        one => vec![one.clone()],
    };
    list.into_iter()
        .map(|mut e| {
            if let Some(obj) = e.as_object_mut() {
                obj.remove("$comment");
            }
            e
        })
        .collect()
}

fn compare(source: &str, entry: &str, got: &[Draft], posture: &Posture, want: &Value) -> Check {
    let got: Vec<Value> = got.iter().map(|d| d.render(posture).to_pin()).collect();
    let want = expected(want);
    let name = format!("adapter pin {source} {entry}");
    Check::new(
        name,
        got == want,
        format!(
            "mapped {} but the pin expects {}",
            Value::Array(got.clone()),
            Value::Array(want.clone())
        ),
    )
}

/// Claude Code's form pins state the `data` of the one event the hook maps to.
fn compare_data(source: &str, entry: &str, data: Vec<Value>, want: &Value) -> Check {
    let name = format!("adapter pin {source} {entry}");
    let ok = data.len() == 1 && data.first() == Some(want);
    Check::new(
        name,
        ok,
        format!("mapped {} but the pin expects {want}", Value::Array(data.clone())),
    )
}
