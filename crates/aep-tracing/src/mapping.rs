//! Which spans count and what their fields mean: the OpenTelemetry GenAI semantic
//! conventions by default, plus the caller's span names, operation values and field
//! names for code that does not follow them.

use std::borrow::Cow;

use tracing_core::{Level, Metadata};

/// What a mapped span stands for, and so which AEP events it becomes (AEP-0002 §4).
///
/// ```
/// use aep_tracing::SpanKind;
/// assert_eq!(SpanKind::Tool.start_type(), Some("tool.requested"));
/// assert_eq!(SpanKind::Session.start_type(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpanKind {
    /// An agent invocation (`invoke_agent`): `run.started`, then `run.finished` or
    /// `run.failed`. Its events, and those of the spans inside it, carry its `run` id.
    Run,
    /// A model call (`chat`, `text_completion`, `generate_content`): `run.step.started`
    /// and `run.step.finished`, whose envelope `step` the spans inside it carry too.
    Step,
    /// A tool execution (`execute_tool`): `tool.requested`, then `tool.completed`,
    /// `tool.failed` or `tool.denied`.
    Tool,
    /// Emits nothing itself: a span that names the session (conversation) of the spans
    /// inside it.
    Session,
}

impl SpanKind {
    /// The type of the event that opens this kind of span, if it has one.
    pub fn start_type(self) -> Option<&'static str> {
        match self {
            SpanKind::Run => Some("run.started"),
            SpanKind::Step => Some("run.step.started"),
            SpanKind::Tool => Some("tool.requested"),
            SpanKind::Session => None,
        }
    }
}

/// What a span field means to the layer: the GenAI attribute it stands for.
///
/// The defaults ([`Attr::default_for`]) are the OpenTelemetry GenAI names as rig and
/// other instrumented frameworks write them; `Builder::field` maps other names.
///
/// ```
/// use aep_tracing::Attr;
/// assert_eq!(Attr::default_for("gen_ai.tool.call.id"), Some(Attr::ToolCallId));
/// assert_eq!(Attr::default_for("my.tool"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Attr {
    /// `gen_ai.operation.name`: decides the [`SpanKind`] (see `Builder::operation`).
    Operation,
    /// `gen_ai.conversation.id`, `session.id`: the AEP `session` of the span and of the
    /// spans inside it.
    Session,
    /// `gen_ai.agent.name`, carried on `run.started` as `gen_ai.agent.name`.
    AgentName,
    /// `gen_ai.tool.name`: `tool.name` and the event's `subject`.
    ToolName,
    /// `gen_ai.tool.call.id`: `tool.call_id`.
    ToolCallId,
    /// `gen_ai.tool.call.arguments` (JSON text): `args_digest` (AEP-0003 §9.3), and
    /// `args` when the capture ceiling allows content.
    ToolArguments,
    /// `gen_ai.tool.call.result`: `result_digest`, and `result` when the ceiling allows.
    ToolResult,
    /// `gen_ai.tool.call.outcome` (`success`, `error`, `denied`, `skipped`): which
    /// terminal a tool span ends with.
    ToolOutcome,
    /// `error.type`, `gen_ai.tool.error.type`, `exception.type`: the span failed;
    /// `error.type` of the terminal.
    ErrorType,
    /// `error.message`, `exception.message`, `error`: the span failed; `error.message`
    /// of the terminal when the ceiling allows content (it is free text).
    ErrorMessage,
    /// `otel.status_code`: `ERROR` (any case) marks the span failed.
    Status,
    /// `gen_ai.request.model`.
    RequestModel,
    /// `gen_ai.response.model`.
    ResponseModel,
    /// `gen_ai.provider.name` (or the older `gen_ai.system`).
    Provider,
    /// `gen_ai.usage.input_tokens`.
    InputTokens,
    /// `gen_ai.usage.output_tokens`.
    OutputTokens,
    /// `gen_ai.prompt`: `run.started`'s `prompt` when the ceiling allows content.
    Prompt,
}

impl Attr {
    /// The meaning of a field name under the GenAI conventions, if it has one.
    pub fn default_for(name: &str) -> Option<Attr> {
        Some(match name {
            "gen_ai.operation.name" => Attr::Operation,
            "gen_ai.conversation.id" | "session.id" => Attr::Session,
            "gen_ai.agent.name" => Attr::AgentName,
            "gen_ai.tool.name" => Attr::ToolName,
            "gen_ai.tool.call.id" => Attr::ToolCallId,
            "gen_ai.tool.call.arguments" => Attr::ToolArguments,
            "gen_ai.tool.call.result" => Attr::ToolResult,
            "gen_ai.tool.call.outcome" => Attr::ToolOutcome,
            "error.type" | "gen_ai.tool.error.type" | "exception.type" => Attr::ErrorType,
            "error.message" | "exception.message" | "error" => Attr::ErrorMessage,
            "otel.status_code" => Attr::Status,
            "gen_ai.request.model" => Attr::RequestModel,
            "gen_ai.response.model" => Attr::ResponseModel,
            "gen_ai.provider.name" | "gen_ai.system" => Attr::Provider,
            "gen_ai.usage.input_tokens" => Attr::InputTokens,
            "gen_ai.usage.output_tokens" => Attr::OutputTokens,
            "gen_ai.prompt" => Attr::Prompt,
            _ => return None,
        })
    }
}

/// The `gen_ai.operation.name` values of the GenAI conventions that map, and to what.
const OPERATIONS: [(&str, SpanKind); 5] = [
    ("invoke_agent", SpanKind::Run),
    ("chat", SpanKind::Step),
    ("text_completion", SpanKind::Step),
    ("generate_content", SpanKind::Step),
    ("execute_tool", SpanKind::Tool),
];

/// The caller's mapping on top of the defaults. The lists are short (what one
/// program configures), so a scan beats hashing; the caller's entries come first and
/// so override the defaults.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mapping {
    names: Vec<(Cow<'static, str>, SpanKind)>,
    operations: Vec<(Cow<'static, str>, Option<SpanKind>)>,
    fields: Vec<(Cow<'static, str>, Attr)>,
}

impl Mapping {
    pub(crate) fn span_name(&mut self, name: Cow<'static, str>, kind: SpanKind) {
        self.names.push((name, kind));
    }

    pub(crate) fn operation(&mut self, value: Cow<'static, str>, kind: Option<SpanKind>) {
        self.operations.insert(0, (value, kind));
    }

    pub(crate) fn field(&mut self, name: Cow<'static, str>, attr: Attr) {
        self.fields.insert(0, (name, attr));
    }

    /// The kind a span name maps to by configuration.
    pub(crate) fn kind_of_name(&self, name: &str) -> Option<SpanKind> {
        self.names
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, kind)| *kind)
    }

    /// The kind an operation value maps to: the caller's entry, else the convention's.
    pub(crate) fn kind_of_operation(&self, value: &str) -> Option<SpanKind> {
        if let Some((_, kind)) = self.operations.iter().find(|(v, _)| v == value) {
            return *kind;
        }
        OPERATIONS
            .iter()
            .find(|(v, _)| *v == value)
            .map(|(_, kind)| *kind)
    }

    /// What a field means: the caller's name, else the convention's.
    pub(crate) fn attr_of(&self, name: &str) -> Option<Attr> {
        if !self.fields.is_empty() {
            if let Some((_, attr)) = self.fields.iter().find(|(n, _)| n == name) {
                return Some(*attr);
            }
        }
        Attr::default_for(name)
    }

    /// Whether a field of this name can make a span count: its operation or session.
    fn is_trigger(&self, name: &str) -> bool {
        if !self.fields.is_empty() {
            if let Some((_, attr)) = self.fields.iter().find(|(n, _)| n == name) {
                return matches!(attr, Attr::Operation | Attr::Session);
            }
        }
        matches!(
            name,
            "gen_ai.operation.name" | "gen_ai.conversation.id" | "session.id"
        )
    }

    /// Whether a callsite can matter to the layer: a span that a name, an operation
    /// or a session could map, or an `ERROR` event (it fails the span it happens in).
    /// Everything else is filtered out before the layer sees it.
    pub(crate) fn may_map(&self, meta: &Metadata<'_>) -> bool {
        if meta.is_event() {
            return *meta.level() == Level::ERROR;
        }
        if !self.names.is_empty() && self.kind_of_name(meta.name()).is_some() {
            return true;
        }
        meta.fields().iter().any(|f| self.is_trigger(f.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conventions_operations_map_and_the_callers_override_them() {
        let mut m = Mapping::default();
        assert_eq!(m.kind_of_operation("invoke_agent"), Some(SpanKind::Run));
        assert_eq!(m.kind_of_operation("chat"), Some(SpanKind::Step));
        assert_eq!(m.kind_of_operation("execute_tool"), Some(SpanKind::Tool));
        assert_eq!(m.kind_of_operation("embeddings"), None);
        m.operation("chat".into(), None);
        m.operation("embeddings".into(), Some(SpanKind::Step));
        assert_eq!(m.kind_of_operation("chat"), None);
        assert_eq!(m.kind_of_operation("embeddings"), Some(SpanKind::Step));
    }

    #[test]
    fn a_callers_field_name_comes_before_the_convention() {
        let mut m = Mapping::default();
        assert_eq!(m.attr_of("tool"), None);
        m.field("tool".into(), Attr::ToolName);
        m.field("gen_ai.tool.name".into(), Attr::ToolCallId);
        assert_eq!(m.attr_of("tool"), Some(Attr::ToolName));
        assert_eq!(m.attr_of("gen_ai.tool.name"), Some(Attr::ToolCallId));
        assert_eq!(m.attr_of("gen_ai.tool.call.id"), Some(Attr::ToolCallId));
        assert!(!m.is_trigger("tool"));
        m.field("kind".into(), Attr::Operation);
        assert!(m.is_trigger("kind"));
        assert!(m.is_trigger("gen_ai.conversation.id"));
    }
}
