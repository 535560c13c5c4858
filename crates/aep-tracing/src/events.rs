//! A mapped span's AEP events, built from what it recorded: the opening event when
//! the span starts, the terminal when it closes (AEP-0002 §2: paired, the terminal's
//! `cause` the opening event's `id`). A run's payloads and a failure's are aep-core's
//! registered types, the registry's shapes by construction; the ones every mapped span
//! pays for (a tool's, a step's) are written straight from the record, in the same
//! shapes (a unit test compares them with those types, the integration tests validate
//! every event), with no string copied and no map built first.

use std::sync::Arc;

use aep_async::{EmitAttrs, EmitError, SessionEmitter};
use aep_core::payload::{
    RunFailed, RunFailedError, RunFinished, RunStarted, ToolDenied, ToolDeniedBy, ToolDeniedTool,
    ToolFailed, ToolFailedError, ToolFailedTool,
};
use aep_core::{Capture, Event, Severity};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::mapping::SpanKind;
use crate::record::Recorded;

/// Where a span's events go and the grouping they carry: inherited from the nearest
/// mapped span around it, its own `run` or `step` added when it is a run or a step.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub(crate) session: Arc<SessionEmitter>,
    pub(crate) run: Option<Arc<RunScope>>,
    pub(crate) step: Option<Arc<str>>,
}

/// A run's id and what its steps add up to, shared with the spans inside it.
#[derive(Debug)]
pub(crate) struct RunScope {
    pub(crate) id: String,
    pub(crate) steps: std::sync::atomic::AtomicU64,
    pub(crate) input_tokens: std::sync::atomic::AtomicU64,
    pub(crate) output_tokens: std::sync::atomic::AtomicU64,
}

impl RunScope {
    pub(crate) fn new(id: String) -> RunScope {
        RunScope {
            id,
            steps: 0.into(),
            input_tokens: 0.into(),
            output_tokens: 0.into(),
        }
    }
}

/// What every event of one span shares.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Common<'a> {
    pub(crate) scope: &'a Scope,
    pub(crate) traceparent: Option<&'a str>,
    /// The ceiling lets content out: content fields are added and the event asks for
    /// `full`, which the emitter lowers to its ceiling (AEP-0001 §8.2).
    pub(crate) content: bool,
}

impl<'a> Common<'a> {
    fn attrs(&self) -> EmitAttrs<'a> {
        let mut attrs = EmitAttrs::new();
        if let Some(run) = &self.scope.run {
            attrs = attrs.run(run.id.as_str());
        }
        if let Some(step) = &self.scope.step {
            attrs = attrs.step(step);
        }
        if let Some(tp) = self.traceparent {
            attrs = attrs.traceparent(tp);
        }
        attrs
    }

    /// Attributes of an event that carries content fields when `with_content`.
    fn asking(&self, with_content: bool) -> EmitAttrs<'a> {
        let attrs = self.attrs();
        if with_content {
            attrs.capture(Capture::Full)
        } else {
            attrs
        }
    }
}

/// The tool's name: recorded, or else the span's own name (the schema requires one,
/// AEP-0002 §5.2 `tool_ref`).
fn tool_name<'a>(rec: &'a Recorded, span_name: &'a str) -> &'a str {
    rec.tool_name.as_deref().unwrap_or(span_name)
}

/// A JSON value of a payload the layer writes itself, borrowed from what the span
/// recorded: the hot payloads (a tool's, a step's) are serialized straight from the
/// record, with no copy of its strings and no map built first. Their shapes are the
/// registry's (`tool.requested`, `tool.completed`, `run.step.finished`); the tests
/// compare them with aep-core's payload types and validate every event.
#[derive(Debug, Clone, Copy)]
enum Json<'a> {
    Str(&'a str),
    U64(u64),
    /// A JSON object of the members present.
    Obj(&'a [Option<(&'a str, Json<'a>)>]),
    Value(&'a Value),
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Json::Str(s) => serializer.serialize_str(s),
            Json::U64(n) => serializer.serialize_u64(n),
            Json::Obj(members) => {
                let mut map = serializer.serialize_map(None)?;
                for (name, value) in members.iter().flatten() {
                    map.serialize_entry(name, value)?;
                }
                map.end()
            }
            Json::Value(v) => v.serialize(serializer),
        }
    }
}

/// `"tool": {"name", "call_id"}`.
fn tool_member<'a>(name: &'a str, call_id: Option<&'a str>) -> [Option<(&'a str, Json<'a>)>; 2] {
    [
        Some(("name", Json::Str(name))),
        call_id.map(|id| ("call_id", Json::Str(id))),
    ]
}

/// A span's content, when it is carried: an object for `args` (the schema types it
/// `object`), an object or a string for `result`.
fn args_member(rec: &Recorded, content: bool) -> Option<&Value> {
    let args = rec.args.as_ref().filter(|_| content)?;
    args.value.as_ref().filter(|v| v.is_object())
}

/// The `gen_ai.*` members a step carries beyond its schema (open, AEP-0002 §5.4), named
/// verbatim as AEP-0001 §5.1's mirror rule asks.
fn step_finished<'a>(
    rec: &'a Recorded,
    status: &'a str,
    duration_ms: u64,
) -> [Option<(&'a str, Json<'a>)>; 7] {
    [
        Some(("status", Json::Str(status))),
        rec.provider
            .as_deref()
            .map(|v| ("gen_ai.provider.name", Json::Str(v))),
        rec.request_model
            .as_deref()
            .map(|v| ("gen_ai.request.model", Json::Str(v))),
        rec.response_model
            .as_deref()
            .map(|v| ("gen_ai.response.model", Json::Str(v))),
        rec.input_tokens
            .map(|v| ("gen_ai.usage.input_tokens", Json::U64(v))),
        rec.output_tokens
            .map(|v| ("gen_ai.usage.output_tokens", Json::U64(v))),
        Some(("duration_ms", Json::U64(duration_ms))),
    ]
}

/// Emits the event that opens a span of `kind` (none for [`SpanKind::Session`]).
pub(crate) fn start(
    kind: SpanKind,
    rec: &Recorded,
    span_name: &str,
    common: Common<'_>,
) -> Option<Result<Event, EmitError>> {
    let session = &common.scope.session;
    Some(match kind {
        SpanKind::Session => return None,
        SpanKind::Run => {
            let prompt = rec.prompt.clone().filter(|_| common.content);
            let mut data = RunStarted {
                prompt,
                ..RunStarted::default()
            };
            if let Some(agent) = &rec.agent_name {
                data.extra
                    .insert("gen_ai.agent.name".to_owned(), Value::String(agent.clone()));
            }
            let attrs = common.asking(data.prompt.is_some());
            session.emit_with_attrs("run.started", data, attrs)
        }
        // No payload: the schema's members are all optional and none is known yet.
        SpanKind::Step => session.emit_with_attrs("run.step.started", None::<()>, common.attrs()),
        SpanKind::Tool => {
            let name = tool_name(rec, span_name);
            let tool = tool_member(name, rec.tool_call_id.as_deref());
            let digest = rec.args.as_ref().map(|a| a.digest.to_hex());
            let args = args_member(rec, common.content);
            let data = [
                Some(("tool", Json::Obj(&tool))),
                digest
                    .as_ref()
                    .map(|d| ("args_digest", Json::Str(d.as_str()))),
                args.map(|a| ("args", Json::Value(a))),
            ];
            let attrs = common.asking(args.is_some()).subject(name);
            session.emit_with_attrs("tool.requested", Json::Obj(&data), attrs)
        }
    })
}

/// How a span ended, read from what it recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Succeeded,
    Failed,
    /// A tool that never ran: a hook or policy skipped it (`outcome = skipped`).
    Skipped,
}

fn ending(rec: &Recorded) -> Ending {
    match rec.outcome.as_deref() {
        Some("skipped") => Ending::Skipped,
        Some("error" | "denied" | "failure" | "failed") => Ending::Failed,
        _ if rec.failed => Ending::Failed,
        _ => Ending::Succeeded,
    }
}

/// The terminal of a span: `cause` its opening event, `duration_ms` its open time.
pub(crate) struct End<'a> {
    pub(crate) kind: SpanKind,
    pub(crate) rec: &'a Recorded,
    pub(crate) span_name: &'a str,
    pub(crate) started: Option<&'a str>,
    pub(crate) duration_ms: u64,
    /// A run's tokens when the run span recorded none itself: its steps' sum.
    pub(crate) steps_usage: Option<(u64, u64)>,
}

/// Emits the terminal event of a span (none for [`SpanKind::Session`]).
pub(crate) fn end(end: End<'_>, common: Common<'_>) -> Option<Result<Event, EmitError>> {
    let End {
        kind,
        rec,
        span_name,
        started,
        duration_ms,
        steps_usage,
    } = end;
    let session = &common.scope.session;
    fn caused_by<'a>(attrs: EmitAttrs<'a>, started: Option<&'a str>) -> EmitAttrs<'a> {
        match started {
            Some(id) => attrs.cause(id),
            None => attrs,
        }
    }
    let with_cause = |attrs| caused_by(attrs, started);
    let duration = Some(duration_ms);
    let message = || rec.error_message.clone().filter(|_| common.content);
    Some(match (kind, ending(rec)) {
        (SpanKind::Session, _) => return None,
        (SpanKind::Run, Ending::Failed) => {
            let message = message();
            let has_message = message.is_some();
            let data = RunFailed {
                reason: "error".to_owned(),
                error: Some(RunFailedError {
                    r#type: rec.error_type.clone(),
                    message,
                    ..RunFailedError::default()
                }),
                duration_ms: duration,
                ..RunFailed::default()
            };
            let attrs = common.asking(has_message).severity(Severity::Error);
            session.emit_with_attrs("run.failed", data, with_cause(attrs))
        }
        (SpanKind::Run, _) => {
            let (input, output) = match (rec.input_tokens, rec.output_tokens) {
                (None, None) => steps_usage.map_or((None, None), |(i, o)| (Some(i), Some(o))),
                own => own,
            };
            let data = RunFinished {
                duration_ms: duration,
                gen_ai_usage_input_tokens: input,
                gen_ai_usage_output_tokens: output,
                ..RunFinished::default()
            };
            session.emit_with_attrs("run.finished", data, with_cause(common.attrs()))
        }
        (SpanKind::Step, ending) => {
            let status = if ending == Ending::Failed {
                "error"
            } else {
                "success"
            };
            let data = step_finished(rec, status, duration_ms);
            session.emit_with_attrs(
                "run.step.finished",
                Json::Obj(&data),
                with_cause(common.attrs()),
            )
        }
        (SpanKind::Tool, Ending::Skipped) => {
            let name = tool_name(rec, span_name);
            let data = ToolDenied {
                tool: ToolDeniedTool {
                    name: name.to_owned(),
                    call_id: rec.tool_call_id.clone(),
                    ..ToolDeniedTool::default()
                },
                by: ToolDeniedBy::Policy,
                rule: None,
                extra: Map::new(),
            };
            let attrs = common.attrs().subject(name);
            session.emit_with_attrs("tool.denied", data, with_cause(attrs))
        }
        (SpanKind::Tool, Ending::Failed) => {
            let name = tool_name(rec, span_name);
            let message = message();
            let has_message = message.is_some();
            let data = ToolFailed {
                tool: ToolFailedTool {
                    name: name.to_owned(),
                    call_id: rec.tool_call_id.clone(),
                    ..ToolFailedTool::default()
                },
                error: ToolFailedError {
                    r#type: rec
                        .error_type
                        .clone()
                        .or_else(|| rec.outcome.clone())
                        .or_else(|| Some("error".to_owned())),
                    message,
                    ..ToolFailedError::default()
                },
                duration_ms: duration,
                ..ToolFailed::default()
            };
            let attrs = common
                .asking(has_message)
                .subject(name)
                .severity(Severity::Error);
            session.emit_with_attrs("tool.failed", data, with_cause(attrs))
        }
        (SpanKind::Tool, Ending::Succeeded) => {
            let name = tool_name(rec, span_name);
            let tool = tool_member(name, rec.tool_call_id.as_deref());
            let result = rec.result.as_ref();
            let digest = result.map(|r| r.digest.to_hex());
            // Another JSON value than an object or a string (a number, an array) goes
            // as the text it was: the schema's `result` is text or an object.
            let text;
            let content = match result
                .filter(|_| common.content)
                .and_then(|r| r.value.as_ref())
            {
                Some(v @ (Value::Object(_) | Value::String(_))) => Some(Json::Value(v)),
                Some(other) => {
                    text = other.to_string();
                    Some(Json::Str(&text))
                }
                None => None,
            };
            let data = [
                Some(("tool", Json::Obj(&tool))),
                Some(("duration_ms", Json::U64(duration_ms))),
                rec.outcome.as_deref().map(|s| ("status", Json::Str(s))),
                digest
                    .as_ref()
                    .map(|d| ("result_digest", Json::Str(d.as_str()))),
                content.map(|c| ("result", c)),
                rec.input_tokens
                    .map(|v| ("gen_ai.usage.input_tokens", Json::U64(v))),
                rec.output_tokens
                    .map(|v| ("gen_ai.usage.output_tokens", Json::U64(v))),
            ];
            let attrs = common.asking(content.is_some()).subject(name);
            session.emit_with_attrs("tool.completed", Json::Obj(&data), with_cause(attrs))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_core::payload::{
        RunStepFinished, TextOrObject, ToolCompleted, ToolCompletedTool, ToolRequested,
        ToolRequestedTool,
    };

    /// The payloads written straight from the record are the ones aep-core's types
    /// make of the same record: same members, same values.
    #[test]
    fn the_hot_payloads_are_aep_cores_types() {
        let full = Recorded {
            tool_name: Some("grep \"quoted\" ü".to_owned()),
            tool_call_id: Some("call-1".to_owned()),
            outcome: Some("success".to_owned()),
            provider: Some("openai".to_owned()),
            request_model: Some("m-1".to_owned()),
            response_model: Some("m-1-2026".to_owned()),
            input_tokens: Some(12),
            output_tokens: Some(3),
            ..Recorded::default()
        };
        let bare = Recorded::default();
        for rec in [&full, &bare] {
            let name = tool_name(rec, "span");
            let tool = tool_member(name, rec.tool_call_id.as_deref());
            let requested = [Some(("tool", Json::Obj(&tool)))];
            let typed = ToolRequested {
                tool: ToolRequestedTool {
                    name: name.to_owned(),
                    call_id: rec.tool_call_id.clone(),
                    ..ToolRequestedTool::default()
                },
                ..ToolRequested::default()
            };
            let value = |v: &dyn erased::Ser| v.value();
            assert_eq!(value(&Json::Obj(&requested)), value(&typed));

            let completed = [
                Some(("tool", Json::Obj(&tool))),
                Some(("duration_ms", Json::U64(7))),
                rec.outcome.as_deref().map(|s| ("status", Json::Str(s))),
                Some(("result", Json::Str("[1,2]"))),
                rec.input_tokens
                    .map(|v| ("gen_ai.usage.input_tokens", Json::U64(v))),
                rec.output_tokens
                    .map(|v| ("gen_ai.usage.output_tokens", Json::U64(v))),
            ];
            let typed = ToolCompleted {
                tool: ToolCompletedTool {
                    name: name.to_owned(),
                    call_id: rec.tool_call_id.clone(),
                    ..ToolCompletedTool::default()
                },
                duration_ms: Some(7),
                status: rec.outcome.clone(),
                result: Some(TextOrObject::Text("[1,2]".to_owned())),
                gen_ai_usage_input_tokens: rec.input_tokens,
                gen_ai_usage_output_tokens: rec.output_tokens,
                ..ToolCompleted::default()
            };
            assert_eq!(value(&Json::Obj(&completed)), value(&typed));

            let step = step_finished(rec, "success", 9);
            let mut extra = Map::new();
            for (k, v) in [
                ("gen_ai.provider.name", &rec.provider),
                ("gen_ai.request.model", &rec.request_model),
                ("gen_ai.response.model", &rec.response_model),
            ] {
                if let Some(v) = v {
                    extra.insert(k.to_owned(), Value::String(v.clone()));
                }
            }
            for (k, v) in [
                ("gen_ai.usage.input_tokens", rec.input_tokens),
                ("gen_ai.usage.output_tokens", rec.output_tokens),
            ] {
                if let Some(v) = v {
                    extra.insert(k.to_owned(), Value::from(v));
                }
            }
            extra.insert("duration_ms".to_owned(), Value::from(9));
            let typed = RunStepFinished {
                status: Some("success".to_owned()),
                extra,
            };
            assert_eq!(value(&Json::Obj(&step)), value(&typed));
        }
    }

    /// A payload's JSON value, whatever its type.
    mod erased {
        pub(super) trait Ser {
            fn value(&self) -> serde_json::Value;
        }
        impl<T: serde::Serialize> Ser for T {
            fn value(&self) -> serde_json::Value {
                serde_json::to_value(self).unwrap_or_default()
            }
        }
    }

    fn rec(outcome: Option<&str>, failed: bool) -> Recorded {
        Recorded {
            outcome: outcome.map(str::to_owned),
            failed,
            ..Recorded::default()
        }
    }

    #[test]
    fn the_outcome_decides_the_terminal_then_any_failure_signal() {
        assert_eq!(ending(&rec(None, false)), Ending::Succeeded);
        assert_eq!(ending(&rec(Some("success"), false)), Ending::Succeeded);
        assert_eq!(ending(&rec(None, true)), Ending::Failed);
        assert_eq!(ending(&rec(Some("error"), false)), Ending::Failed);
        assert_eq!(ending(&rec(Some("denied"), false)), Ending::Failed);
        assert_eq!(ending(&rec(Some("skipped"), true)), Ending::Skipped);
    }
}
