//! A mapped span's AEP events, built from what it recorded: the opening event when
//! the span starts, the terminal when it closes (AEP-0002 §2: paired, the terminal's
//! `cause` the opening event's `id`). Payloads are aep-core's registered types, so
//! they are the registry's shapes by construction.

use std::sync::Arc;

use aep_async::{EmitError, EmitOptions, SessionEmitter};
use aep_core::payload::{
    RunFailed, RunFailedError, RunFinished, RunStarted, RunStepFinished, RunStepStarted,
    TextOrObject, ToolCompleted, ToolCompletedTool, ToolDenied, ToolDeniedBy, ToolDeniedTool,
    ToolFailed, ToolFailedError, ToolFailedTool, ToolRequested, ToolRequestedTool,
};
use aep_core::{Capture, Event, Severity};
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

impl Common<'_> {
    fn options(&self) -> EmitOptions {
        let mut opts = EmitOptions::new();
        if let Some(run) = &self.scope.run {
            opts = opts.run(run.id.as_str());
        }
        if let Some(step) = &self.scope.step {
            opts = opts.step(&**step);
        }
        if let Some(tp) = self.traceparent {
            opts = opts.traceparent(tp);
        }
        opts
    }

    /// Options for an event that carries content fields when `with_content`.
    fn asking(&self, with_content: bool) -> EmitOptions {
        let opts = self.options();
        if with_content {
            opts.capture(Capture::Full)
        } else {
            opts
        }
    }
}

/// The tool's name: recorded, or else the span's own name (the schema requires one,
/// AEP-0002 §5.2 `tool_ref`).
fn tool_name(rec: &Recorded, span_name: &str) -> String {
    rec.tool_name
        .clone()
        .unwrap_or_else(|| span_name.to_owned())
}

/// The `gen_ai.*` members a step carries beyond its schema (open, AEP-0002 §5.4), named
/// verbatim as AEP-0001 §5.1's mirror rule asks.
fn gen_ai_members(rec: &Recorded) -> Map<String, Value> {
    let mut extra = Map::new();
    for (name, value) in [
        ("gen_ai.provider.name", &rec.provider),
        ("gen_ai.request.model", &rec.request_model),
        ("gen_ai.response.model", &rec.response_model),
    ] {
        if let Some(v) = value {
            extra.insert(name.to_owned(), Value::String(v.clone()));
        }
    }
    for (name, value) in [
        ("gen_ai.usage.input_tokens", rec.input_tokens),
        ("gen_ai.usage.output_tokens", rec.output_tokens),
    ] {
        if let Some(v) = value {
            extra.insert(name.to_owned(), Value::from(v));
        }
    }
    extra
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
            let opts = common.asking(data.prompt.is_some());
            session.emit_with("run.started", data, opts)
        }
        SpanKind::Step => session.emit_with(
            "run.step.started",
            RunStepStarted::default(),
            common.options(),
        ),
        SpanKind::Tool => {
            let name = tool_name(rec, span_name);
            let args = rec.args.as_ref();
            let data = ToolRequested {
                tool: ToolRequestedTool {
                    name: name.clone(),
                    call_id: rec.tool_call_id.clone(),
                    ..ToolRequestedTool::default()
                },
                args_digest: args.map(|a| a.digest.to_hex()),
                args: args.filter(|_| common.content).and_then(|a| a.object()),
                ..ToolRequested::default()
            };
            let opts = common.asking(data.args.is_some()).subject(name);
            session.emit_with("tool.requested", data, opts)
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
    let with_cause = |opts: EmitOptions| match started {
        Some(id) => opts.cause(id),
        None => opts,
    };
    let duration = Some(duration_ms);
    let message = rec.error_message.clone().filter(|_| common.content);
    Some(match (kind, ending(rec)) {
        (SpanKind::Session, _) => return None,
        (SpanKind::Run, Ending::Failed) => {
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
            let opts = common.asking(has_message).severity(Severity::Error);
            session.emit_with("run.failed", data, with_cause(opts))
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
            session.emit_with("run.finished", data, with_cause(common.options()))
        }
        (SpanKind::Step, ending) => {
            let mut data = RunStepFinished {
                status: Some(
                    if ending == Ending::Failed {
                        "error"
                    } else {
                        "success"
                    }
                    .to_owned(),
                ),
                extra: gen_ai_members(rec),
            };
            data.extra
                .insert("duration_ms".to_owned(), Value::from(duration_ms));
            session.emit_with("run.step.finished", data, with_cause(common.options()))
        }
        (SpanKind::Tool, Ending::Skipped) => {
            let name = tool_name(rec, span_name);
            let data = ToolDenied {
                tool: ToolDeniedTool {
                    name: name.clone(),
                    call_id: rec.tool_call_id.clone(),
                    ..ToolDeniedTool::default()
                },
                by: ToolDeniedBy::Policy,
                rule: None,
                extra: Map::new(),
            };
            let opts = common.options().subject(name);
            session.emit_with("tool.denied", data, with_cause(opts))
        }
        (SpanKind::Tool, Ending::Failed) => {
            let name = tool_name(rec, span_name);
            let has_message = message.is_some();
            let data = ToolFailed {
                tool: ToolFailedTool {
                    name: name.clone(),
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
            let opts = common
                .asking(has_message)
                .subject(name)
                .severity(Severity::Error);
            session.emit_with("tool.failed", data, with_cause(opts))
        }
        (SpanKind::Tool, Ending::Succeeded) => {
            let name = tool_name(rec, span_name);
            let result = rec.result.as_ref();
            let data = ToolCompleted {
                tool: ToolCompletedTool {
                    name: name.clone(),
                    call_id: rec.tool_call_id.clone(),
                    ..ToolCompletedTool::default()
                },
                duration_ms: duration,
                status: rec.outcome.clone(),
                result_digest: result.map(|r| r.digest.to_hex()),
                result: result
                    .filter(|_| common.content)
                    .and_then(|r| match &r.value {
                        Some(Value::Object(m)) => Some(TextOrObject::Object(m.clone())),
                        Some(Value::String(s)) => Some(TextOrObject::Text(s.clone())),
                        // Another JSON value (a number, an array) as the text it was.
                        Some(other) => Some(TextOrObject::Text(other.to_string())),
                        None => None,
                    }),
                gen_ai_usage_input_tokens: rec.input_tokens,
                gen_ai_usage_output_tokens: rec.output_tokens,
                ..ToolCompleted::default()
            };
            let opts = common.asking(data.result.is_some()).subject(name);
            session.emit_with("tool.completed", data, with_cause(opts))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
