//! Payload validation against the registered schemas of AEP-0002 §5: a JSON Schema
//! 2020-12 interpreter for exactly the keywords those schemas use. A schema using any
//! other keyword fails to compile, and a test compiles every embedded schema.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::{format, Issue, Rule};

/// The payload schemas of `fixtures/schemas/types/`, by event type. A test keeps this
/// table equal to the registry's schema column.
pub(super) static SOURCES: &[(&str, &str)] = &[
    (
        "session.started",
        include_str!("../../../../fixtures/schemas/types/session.started.schema.json"),
    ),
    (
        "session.ended",
        include_str!("../../../../fixtures/schemas/types/session.ended.schema.json"),
    ),
    (
        "run.started",
        include_str!("../../../../fixtures/schemas/types/run.started.schema.json"),
    ),
    (
        "run.finished",
        include_str!("../../../../fixtures/schemas/types/run.finished.schema.json"),
    ),
    (
        "run.failed",
        include_str!("../../../../fixtures/schemas/types/run.failed.schema.json"),
    ),
    (
        "run.cancelled",
        include_str!("../../../../fixtures/schemas/types/run.cancelled.schema.json"),
    ),
    (
        "tool.requested",
        include_str!("../../../../fixtures/schemas/types/tool.requested.schema.json"),
    ),
    (
        "tool.completed",
        include_str!("../../../../fixtures/schemas/types/tool.completed.schema.json"),
    ),
    (
        "tool.failed",
        include_str!("../../../../fixtures/schemas/types/tool.failed.schema.json"),
    ),
    (
        "tool.denied",
        include_str!("../../../../fixtures/schemas/types/tool.denied.schema.json"),
    ),
    (
        "attention.requested",
        include_str!("../../../../fixtures/schemas/types/attention.requested.schema.json"),
    ),
    (
        "attention.answered",
        include_str!("../../../../fixtures/schemas/types/attention.answered.schema.json"),
    ),
    (
        "attention.resolved",
        include_str!("../../../../fixtures/schemas/types/attention.resolved.schema.json"),
    ),
    (
        "attention.timeout",
        include_str!("../../../../fixtures/schemas/types/attention.timeout.schema.json"),
    ),
    (
        "session.compacted",
        include_str!("../../../../fixtures/schemas/types/session.compacted.schema.json"),
    ),
    (
        "run.step.started",
        include_str!("../../../../fixtures/schemas/types/run.step.started.schema.json"),
    ),
    (
        "run.step.finished",
        include_str!("../../../../fixtures/schemas/types/run.step.finished.schema.json"),
    ),
    (
        "progress.status",
        include_str!("../../../../fixtures/schemas/types/progress.status.schema.json"),
    ),
    (
        "progress.task.planned",
        include_str!("../../../../fixtures/schemas/types/progress.task.planned.schema.json"),
    ),
    (
        "progress.task.completed",
        include_str!("../../../../fixtures/schemas/types/progress.task.completed.schema.json"),
    ),
    (
        "progress.artifact.produced",
        include_str!("../../../../fixtures/schemas/types/progress.artifact.produced.schema.json"),
    ),
    (
        "delegation.subagent.started",
        include_str!("../../../../fixtures/schemas/types/delegation.subagent.started.schema.json"),
    ),
    (
        "delegation.subagent.stopped",
        include_str!("../../../../fixtures/schemas/types/delegation.subagent.stopped.schema.json"),
    ),
    (
        "attention.routed",
        include_str!("../../../../fixtures/schemas/types/attention.routed.schema.json"),
    ),
    (
        "agent.presence",
        include_str!("../../../../fixtures/schemas/types/agent.presence.schema.json"),
    ),
    (
        "agent.idle",
        include_str!("../../../../fixtures/schemas/types/agent.idle.schema.json"),
    ),
    (
        "agent.health",
        include_str!("../../../../fixtures/schemas/types/agent.health.schema.json"),
    ),
    (
        "agent.heartbeat",
        include_str!("../../../../fixtures/schemas/types/agent.heartbeat.schema.json"),
    ),
    (
        "error.raised",
        include_str!("../../../../fixtures/schemas/types/error.raised.schema.json"),
    ),
    (
        "state.snapshot",
        include_str!("../../../../fixtures/schemas/types/state.snapshot.schema.json"),
    ),
    (
        "state.delta",
        include_str!("../../../../fixtures/schemas/types/state.delta.schema.json"),
    ),
    (
        "resource.retrieval.requested",
        include_str!("../../../../fixtures/schemas/types/resource.retrieval.requested.schema.json"),
    ),
    (
        "resource.retrieval.returned",
        include_str!("../../../../fixtures/schemas/types/resource.retrieval.returned.schema.json"),
    ),
    (
        "resource.retrieval.reranked",
        include_str!("../../../../fixtures/schemas/types/resource.retrieval.reranked.schema.json"),
    ),
    (
        "resource.citation.recorded",
        include_str!("../../../../fixtures/schemas/types/resource.citation.recorded.schema.json"),
    ),
    (
        "assessment.evaluation.recorded",
        include_str!(
            "../../../../fixtures/schemas/types/assessment.evaluation.recorded.schema.json"
        ),
    ),
    (
        "assessment.feedback.received",
        include_str!("../../../../fixtures/schemas/types/assessment.feedback.received.schema.json"),
    ),
    (
        "assessment.guardrail.recorded",
        include_str!(
            "../../../../fixtures/schemas/types/assessment.guardrail.recorded.schema.json"
        ),
    ),
    (
        "control.attention.respond",
        include_str!("../../../../fixtures/schemas/types/control.attention.respond.schema.json"),
    ),
    (
        "control.cancel",
        include_str!("../../../../fixtures/schemas/types/control.cancel.schema.json"),
    ),
    (
        "control.pause",
        include_str!("../../../../fixtures/schemas/types/control.pause.schema.json"),
    ),
    (
        "control.resume",
        include_str!("../../../../fixtures/schemas/types/control.resume.schema.json"),
    ),
    (
        "control.accepted",
        include_str!("../../../../fixtures/schemas/types/control.accepted.schema.json"),
    ),
    (
        "control.rejected",
        include_str!("../../../../fixtures/schemas/types/control.rejected.schema.json"),
    ),
];

/// Where every payload issue points in the spec.
const SECTION: &str = "AEP-0002 §5";

/// Keywords that carry no assertion (annotations, and the SDK's capture annotation).
const ANNOTATIONS: [&str; 7] = [
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "x-aep-capture",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    Null,
}

impl JsonType {
    fn parse(name: &str) -> Option<JsonType> {
        Some(match name {
            "object" => JsonType::Object,
            "array" => JsonType::Array,
            "string" => JsonType::String,
            "integer" => JsonType::Integer,
            "number" => JsonType::Number,
            "boolean" => JsonType::Boolean,
            "null" => JsonType::Null,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
            JsonType::Null => "null",
        }
    }

    /// JSON Schema's reading: an integer is any number with a zero fraction.
    fn admits(self, v: &Value) -> bool {
        match (self, v) {
            (JsonType::Object, Value::Object(_))
            | (JsonType::Array, Value::Array(_))
            | (JsonType::String, Value::String(_))
            | (JsonType::Number, Value::Number(_))
            | (JsonType::Boolean, Value::Bool(_))
            | (JsonType::Null, Value::Null) => true,
            (JsonType::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DateTime,
}

/// One compiled schema node.
#[derive(Debug, Default)]
pub(super) struct Schema {
    types: Vec<JsonType>,
    properties: Vec<(String, Schema)>,
    required: Vec<String>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    items: Option<Box<Schema>>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    format: Option<Format>,
    conditional: Option<Box<Conditional>>,
}

#[derive(Debug)]
struct Conditional {
    condition: Schema,
    then: Option<Schema>,
    otherwise: Option<Schema>,
}

/// Why a schema did not compile: the keyword (or value) at a path the interpreter does
/// not support.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unsupported {
    pub(super) path: String,
    pub(super) what: String,
}

fn unsupported(path: &str, what: impl Into<String>) -> Unsupported {
    Unsupported {
        path: path.to_owned(),
        what: what.into(),
    }
}

impl Schema {
    pub(super) fn compile(node: &Value, path: &str) -> Result<Schema, Unsupported> {
        let Value::Object(map) = node else {
            return Err(unsupported(path, "a schema that is not an object"));
        };
        let mut s = Schema::default();
        let mut cond_if = None;
        let mut cond_then = None;
        let mut cond_else = None;
        for (key, value) in map {
            let at = format!("{path}/{key}");
            match key.as_str() {
                k if ANNOTATIONS.contains(&k) => {}
                "type" => s.types = compile_types(value, &at)?,
                "properties" => {
                    let Value::Object(props) = value else {
                        return Err(unsupported(&at, "non-object properties"));
                    };
                    for (name, sub) in props {
                        s.properties
                            .push((name.clone(), Schema::compile(sub, &format!("{at}/{name}"))?));
                    }
                }
                "required" => {
                    s.required =
                        strings(value).ok_or_else(|| unsupported(&at, "non-string required"))?;
                }
                "enum" => match value {
                    Value::Array(values) => s.enumeration = Some(values.clone()),
                    _ => return Err(unsupported(&at, "non-array enum")),
                },
                "const" => s.constant = Some(value.clone()),
                "items" => s.items = Some(Box::new(Schema::compile(value, &at)?)),
                "minimum" => s.minimum = Some(number(value, &at)?),
                "maximum" => s.maximum = Some(number(value, &at)?),
                "format" => match value.as_str() {
                    Some("date-time") => s.format = Some(Format::DateTime),
                    _ => return Err(unsupported(&at, format!("format {value}"))),
                },
                "if" => cond_if = Some(Schema::compile(value, &at)?),
                "then" => cond_then = Some(Schema::compile(value, &at)?),
                "else" => cond_else = Some(Schema::compile(value, &at)?),
                other => return Err(unsupported(&at, format!("keyword `{other}`"))),
            }
        }
        // `then`/`else` without `if` assert nothing (JSON Schema 2020-12 §10.2.2).
        if let Some(condition) = cond_if {
            s.conditional = Some(Box::new(Conditional {
                condition,
                then: cond_then,
                otherwise: cond_else,
            }));
        }
        Ok(s)
    }

    /// Appends an issue for every assertion `v` fails; `path` names `v` (`data.cost`).
    fn check(&self, v: &Value, path: &Loc<'_>, out: &mut Vec<Issue>) {
        let before = out.len();
        if !self.types.is_empty() && !self.types.iter().any(|t| t.admits(v)) {
            let want: Vec<&str> = self.types.iter().map(|t| t.name()).collect();
            out.push(Issue::new(
                Rule::PayloadType,
                Some(path.to_string()),
                format!("{path} must be of type {}", want.join(" or ")),
                SECTION,
            ));
            // Nothing below is meaningful on a value of the wrong type.
            return;
        }
        if let Some(allowed) = &self.enumeration {
            if !allowed.iter().any(|a| json_eq(a, v)) {
                let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                out.push(Issue::new(
                    Rule::PayloadEnum,
                    Some(path.to_string()),
                    format!("{path} is {v}, not one of {}", list.join(", ")),
                    SECTION,
                ));
            }
        }
        if let Some(c) = &self.constant {
            if !json_eq(c, v) {
                out.push(Issue::new(
                    Rule::PayloadConst,
                    Some(path.to_string()),
                    format!("{path} must be {c}"),
                    SECTION,
                ));
            }
        }
        if let Some(n) = v.as_f64() {
            let low = self.minimum.is_some_and(|m| n < m);
            let high = self.maximum.is_some_and(|m| n > m);
            if low || high {
                let bound = if low {
                    format!("at least {}", self.minimum.unwrap_or_default())
                } else {
                    format!("at most {}", self.maximum.unwrap_or_default())
                };
                out.push(Issue::new(
                    Rule::PayloadRange,
                    Some(path.to_string()),
                    format!("{path} is {v}, must be {bound}"),
                    SECTION,
                ));
            }
        }
        if let (Some(Format::DateTime), Value::String(s)) = (self.format, v) {
            if !format::is_date_time(s) {
                out.push(Issue::new(
                    Rule::PayloadFormat,
                    Some(path.to_string()),
                    format!("{path} `{s}` is not an RFC 3339 date-time"),
                    SECTION,
                ));
            }
        }
        if let Value::Object(map) = v {
            self.check_object(map, path, out);
        }
        if let (Some(items), Value::Array(elements)) = (&self.items, v) {
            for (i, element) in elements.iter().enumerate() {
                items.check(element, &Loc::Index(path, i), out);
            }
        }
        if let Some(cond) = &self.conditional {
            let mut scratch = Vec::new();
            cond.condition.check(v, path, &mut scratch);
            let branch = if scratch.is_empty() {
                cond.then.as_ref()
            } else {
                cond.otherwise.as_ref()
            };
            if let Some(branch) = branch {
                branch.check(v, path, out);
            }
        }
        debug_assert!(out[before..].iter().all(|i| i.rule().is_payload()));
    }

    fn check_object(&self, map: &Map<String, Value>, path: &Loc<'_>, out: &mut Vec<Issue>) {
        // Linear scans: payloads and schemas have a handful of members, and comparing
        // short names beats hashing them.
        for name in &self.required {
            if !map.keys().any(|k| k == name) {
                out.push(Issue::new(
                    Rule::PayloadRequired,
                    Some(format!("{path}.{name}")),
                    format!("{path}.{name} is required"),
                    SECTION,
                ));
            }
        }
        if self.properties.is_empty() {
            return;
        }
        for (name, member) in map {
            if let Some((_, sub)) = self.properties.iter().find(|(p, _)| p == name) {
                sub.check(member, &Loc::Member(path, name), out);
            }
        }
    }
}

/// Where a payload value sits (`data.fields[0].choices`), rendered only when an issue
/// names it, so a valid payload costs no path strings.
enum Loc<'a> {
    Data,
    Member(&'a Loc<'a>, &'a str),
    Index(&'a Loc<'a>, usize),
}

impl std::fmt::Display for Loc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loc::Data => f.write_str("data"),
            Loc::Member(parent, name) => write!(f, "{parent}.{name}"),
            Loc::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

fn compile_types(value: &Value, at: &str) -> Result<Vec<JsonType>, Unsupported> {
    let names = match value {
        Value::String(s) => vec![s.clone()],
        other => strings(other).ok_or_else(|| unsupported(at, "non-string type"))?,
    };
    names
        .iter()
        .map(|n| JsonType::parse(n).ok_or_else(|| unsupported(at, format!("type `{n}`"))))
        .collect()
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn number(value: &Value, at: &str) -> Result<f64, Unsupported> {
    value
        .as_f64()
        .ok_or_else(|| unsupported(at, "a non-numeric bound"))
}

/// JSON Schema equality: numbers compare by value (`1` equals `1.0`), objects ignore
/// member order.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, xv)| y.get(k).is_some_and(|yv| json_eq(xv, yv)))
        }
        _ => a == b,
    }
}

/// Every embedded schema, compiled once; a schema that does not compile keeps its error
/// (surfaced by [`compiled`] in tests), and its type goes unchecked.
fn schemas() -> &'static HashMap<&'static str, Result<Schema, Unsupported>> {
    static SCHEMAS: OnceLock<HashMap<&'static str, Result<Schema, Unsupported>>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        SOURCES
            .iter()
            .map(|&(ty, text)| {
                let compiled = serde_json::from_str::<Value>(text)
                    .map_err(|e| unsupported(ty, format!("unreadable schema: {e}")))
                    .and_then(|v| Schema::compile(&v, ty));
                (ty, compiled)
            })
            .collect()
    })
}

/// The compiled schema of a type, or why it failed to compile; `None` when the type has
/// no embedded schema.
pub(super) fn compiled(event_type: &str) -> Option<&'static Result<Schema, Unsupported>> {
    schemas().get(event_type)
}

/// Checks `data` against the schema of `event_type`, appending issues to `out`.
pub(super) fn check(event_type: &str, data: &Value, out: &mut Vec<Issue>) {
    if let Some(Ok(schema)) = compiled(event_type) {
        schema.check(data, &Loc::Data, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_embedded_schema_compiles() {
        for (ty, _) in SOURCES {
            match compiled(ty) {
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("{ty}: unsupported {} at {}", e.what, e.path),
                None => panic!("{ty}: missing"),
            }
        }
    }

    #[test]
    fn table_matches_the_registry() {
        let want: Vec<&str> = crate::types::REGISTRY
            .iter()
            .filter(|t| t.schema.is_some())
            .map(|t| t.name)
            .collect();
        let have: Vec<&str> = SOURCES.iter().map(|(t, _)| *t).collect();
        assert_eq!(have, want);
        for (ty, text) in SOURCES {
            let v: Value = serde_json::from_str(text).unwrap();
            let id = v["$id"].as_str().unwrap();
            assert!(
                id.ends_with(&format!("/{ty}.schema.json")),
                "{ty} embeds {id}"
            );
        }
    }

    #[test]
    fn unsupported_keywords_fail_loudly() {
        for bad in [
            json!({"type": "object", "additionalProperties": false}),
            json!({"$ref": "#/x"}),
            json!({"format": "uri"}),
            json!({"type": "decimal"}),
            json!({"properties": {"a": {"pattern": "x"}}}),
            json!(true),
        ] {
            let err = Schema::compile(&bad, "t").unwrap_err();
            assert!(!err.what.is_empty());
        }
    }

    #[test]
    fn keywords_assert_what_they_say() {
        let schema = Schema::compile(
            &json!({
                "type": "object",
                "required": ["a"],
                "properties": {
                    "a": {"type": ["integer", "null"], "minimum": 0, "maximum": 10},
                    "b": {"const": 1},
                    "c": {"type": "array", "items": {"enum": ["x", "y"]}},
                    "d": {"format": "date-time"},
                    "e": {"if": {"const": "s"}, "then": {"type": "integer"}, "else": {"type": "string"}}
                }
            }),
            "t",
        )
        .unwrap();
        let rules = |v: Value| {
            let mut out = Vec::new();
            schema.check(&v, &Loc::Data, &mut out);
            out.into_iter()
                .map(|i| (i.rule(), i.attr().unwrap_or_default().to_owned()))
                .collect::<Vec<_>>()
        };
        assert!(rules(
            json!({"a": 3.0, "b": 1.0, "c": ["x"], "d": "2026-01-01T00:00:00Z", "e": "t"})
        )
        .is_empty());
        assert!(rules(json!({"a": null})).is_empty());
        assert_eq!(
            rules(json!({})),
            vec![(Rule::PayloadRequired, "data.a".into())]
        );
        assert_eq!(
            rules(json!({"a": 1.5})),
            vec![(Rule::PayloadType, "data.a".into())]
        );
        assert_eq!(
            rules(json!({"a": 11})),
            vec![(Rule::PayloadRange, "data.a".into())]
        );
        assert_eq!(
            rules(json!({"a": -1})),
            vec![(Rule::PayloadRange, "data.a".into())]
        );
        assert_eq!(
            rules(json!({"a": 1, "b": 2})),
            vec![(Rule::PayloadConst, "data.b".into())]
        );
        assert_eq!(
            rules(json!({"a": 1, "c": ["x", "z"]})),
            vec![(Rule::PayloadEnum, "data.c[1]".into())]
        );
        assert_eq!(
            rules(json!({"a": 1, "d": "yesterday"})),
            vec![(Rule::PayloadFormat, "data.d".into())]
        );
        assert_eq!(
            rules(json!({"a": 1, "e": 5})),
            vec![(Rule::PayloadType, "data.e".into())]
        );
        assert_eq!(rules(json!([])), vec![(Rule::PayloadType, "data".into())]);
    }
}
