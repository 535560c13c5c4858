//! Claude Code's two AEP-0006 pins: `AskUserQuestion` and MCP elicitation as
//! `kind: "form"`.

use serde_json::Value;

use super::*;

/// A form pin's two renderings (`expected_data`, `expected_data_metadata`), each
/// schema-valid as `attention.requested` (`{what} pin schema-valid ({key})`) and a
/// `kind: form` whose fields hold `wire` (`{what} pin wire facts ({key})`).
fn renderings(c: &mut Checks, what: &str, pin: &Value, wire: impl Fn(&[Value]) -> bool) {
    for key in ["expected_data", "expected_data_metadata"] {
        let data = at(pin, &[key]);
        c.valid(
            format!("{what} pin schema-valid ({key})"),
            "attention.requested",
            data,
        );
        let fields = items(at(data, &["fields"]));
        c.fact(
            &format!("{what} pin wire facts ({key})"),
            at(data, &["kind"]) == "form" && wire(fields),
        );
    }
}

pub(super) fn ask_user_question(docs: &[&Value], c: &mut Checks) {
    let auq = at(docs[0], &["ask_user_question"]);
    let questions = items(at(auq, &["input", "questions"]));
    renderings(c, "mapping", auq, |fields| {
        fields.len() == questions.len()
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
            })
    });
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

pub(super) fn elicitation(docs: &[&Value], c: &mut Checks) {
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
    renderings(c, "elicitation", eli, |fields| {
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
        field_ids == prop_ids
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
                })
    });
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
