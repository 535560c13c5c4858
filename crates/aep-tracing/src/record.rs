//! What a mapped span recorded, read with a `field::Visit`: each field is kept by its
//! meaning ([`Attr`]), replaced when recorded again, so a span's record is bounded by
//! its largest field whatever the span records.

use std::fmt::{self, Write as _};

use aep_core::redact::ContentDigest;
use serde_json::Value;
use tracing_core::field::{Field, Visit};

use crate::mapping::{Attr, Mapping, SpanKind};

/// A structural value (a name, an id, a model) is cut to this many bytes: it is
/// metadata, never content, and a span must not hold an unbounded copy of it.
pub(crate) const MAX_NAME_BYTES: usize = 1024;

/// Content recorded on a span (tool arguments or result): its digest, taken over the
/// original (AEP-0003 §9.3, before any redaction), and the content itself only when
/// the capture ceiling lets it out and it is no larger than the layer's bound.
#[derive(Debug, Clone)]
pub(crate) struct Content {
    pub(crate) digest: ContentDigest,
    pub(crate) value: Option<Value>,
}

impl Content {
    /// Recorded text: JSON is digested as the value it is (so the digest does not depend
    /// on its spacing or key order), anything else as a JSON string.
    fn of_text(text: &str, keep: bool, max_bytes: usize) -> Content {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => Content {
                digest: ContentDigest::of(&value),
                value: (keep && text.len() <= max_bytes).then_some(value),
            },
            Err(_) => Content {
                digest: ContentDigest::of_text(text),
                value: (keep && text.len() <= max_bytes).then(|| Value::String(text.to_owned())),
            },
        }
    }
}

/// The values a span recorded, by meaning.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    /// What the span's operation maps to (read when it is recorded: the value itself
    /// is not kept).
    pub(crate) operation: Option<SpanKind>,
    pub(crate) session: Option<String>,
    pub(crate) agent_name: Option<String>,
    pub(crate) tool_name: Option<String>,
    pub(crate) tool_call_id: Option<String>,
    pub(crate) args: Option<Content>,
    pub(crate) result: Option<Content>,
    pub(crate) outcome: Option<String>,
    pub(crate) error_type: Option<String>,
    /// Free text: kept only when the ceiling lets content out.
    pub(crate) error_message: Option<String>,
    /// The span said it failed (an error type or message, `otel.status_code=ERROR`, an
    /// `ERROR` event inside it).
    pub(crate) failed: bool,
    pub(crate) request_model: Option<String>,
    pub(crate) response_model: Option<String>,
    pub(crate) provider: Option<String>,
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: Option<u64>,
    /// Free text: kept only when the ceiling lets content out.
    pub(crate) prompt: Option<String>,
}

/// How a visit keeps what it reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keep {
    /// The capture ceiling lets content (free text, arguments, results) out.
    pub(crate) content: bool,
    /// Content larger than this is digested and not kept.
    pub(crate) max_content_bytes: usize,
}

/// Reads a span's fields (at creation and on each `record`) into its [`Recorded`].
pub(crate) struct Visitor<'a> {
    pub(crate) mapping: &'a Mapping,
    pub(crate) record: &'a mut Recorded,
    pub(crate) keep: Keep,
    /// Visiting an event: its `message` is the error's message.
    pub(crate) event: bool,
}

impl fmt::Debug for Visitor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Visitor")
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

impl Visitor<'_> {
    fn attr(&self, field: &Field) -> Option<Attr> {
        if self.event {
            // An `ERROR` event tells how its span failed, nothing else.
            if field.name() == "message" {
                return Some(Attr::ErrorMessage);
            }
            return self
                .mapping
                .attr_of(field.name())
                .filter(|a| matches!(a, Attr::ErrorType | Attr::ErrorMessage));
        }
        self.mapping.attr_of(field.name())
    }

    fn text(&mut self, attr: Attr, value: &str) {
        let keep = self.keep;
        let mapping = self.mapping;
        let r = &mut *self.record;
        let name = || Some(bounded(value, MAX_NAME_BYTES));
        match attr {
            Attr::Operation => r.operation = mapping.kind_of_operation(value),
            Attr::Session => r.session = name(),
            Attr::AgentName => r.agent_name = name(),
            Attr::ToolName => r.tool_name = name(),
            Attr::ToolCallId => r.tool_call_id = name(),
            Attr::ToolArguments => {
                r.args = Some(Content::of_text(
                    value,
                    keep.content,
                    keep.max_content_bytes,
                ))
            }
            Attr::ToolResult => {
                r.result = Some(Content::of_text(
                    value,
                    keep.content,
                    keep.max_content_bytes,
                ))
            }
            Attr::ToolOutcome => r.outcome = name(),
            Attr::ErrorType => {
                r.failed = true;
                r.error_type = name();
            }
            Attr::ErrorMessage => {
                r.failed = true;
                if keep.content {
                    r.error_message = Some(bounded(value, keep.max_content_bytes));
                }
            }
            Attr::Status => {
                if value.eq_ignore_ascii_case("error") {
                    r.failed = true;
                }
            }
            Attr::RequestModel => r.request_model = name(),
            Attr::ResponseModel => r.response_model = name(),
            Attr::Provider => r.provider = name(),
            Attr::InputTokens => r.input_tokens = value.trim().parse().ok(),
            Attr::OutputTokens => r.output_tokens = value.trim().parse().ok(),
            Attr::Prompt => {
                if keep.content {
                    r.prompt = Some(bounded(value, keep.max_content_bytes));
                }
            }
        }
    }

    fn number(&mut self, attr: Attr, value: u64) {
        match attr {
            Attr::InputTokens => self.record.input_tokens = Some(value),
            Attr::OutputTokens => self.record.output_tokens = Some(value),
            other => self.text(other, &value.to_string()),
        }
    }
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if let Some(attr) = self.attr(field) {
            self.text(attr, value);
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if let Some(attr) = self.attr(field) {
            self.number(attr, value);
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Some(attr) = self.attr(field) {
            match u64::try_from(value) {
                Ok(v) => self.number(attr, v),
                // A negative token count is no count.
                Err(_) if matches!(attr, Attr::InputTokens | Attr::OutputTokens) => {}
                Err(_) => self.text(attr, &value.to_string()),
            }
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        match self.attr(field) {
            // `error = true` fails the span; `error = false` says it did not fail.
            Some(Attr::ErrorType | Attr::ErrorMessage) => self.record.failed |= value,
            Some(attr) => self.text(attr, if value { "true" } else { "false" }),
            None => {}
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if let Some(attr) = self.attr(field) {
            self.text(attr, &value.to_string());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` and `?value` fields: formatted only when the field means something.
        if let Some(attr) = self.attr(field) {
            let mut text = String::new();
            let _ = write!(text, "{value:?}");
            self.text(attr, &text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_arguments_digest_as_the_value_they_are() {
        let spaced = Content::of_text(r#"{ "b": 1, "a": "x" }"#, false, 100);
        assert_eq!(spaced.digest, ContentDigest::of(&json!({"a": "x", "b": 1})));
        assert!(
            spaced.value.is_none(),
            "no content below the content ceiling"
        );
        let kept = Content::of_text(r#"{"a":1}"#, true, 100);
        assert_eq!(kept.value, Some(json!({"a": 1})));
        let too_big = Content::of_text(r#"{"a":1}"#, true, 3);
        assert!(too_big.value.is_none(), "digested, not kept");
        let text = Content::of_text("not json", true, 100);
        assert_eq!(text.digest, ContentDigest::of_text("not json"));
        assert_eq!(text.value, Some(json!("not json")));
    }

    #[test]
    fn names_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_NAME_BYTES);
        let cut = bounded(&long, MAX_NAME_BYTES);
        assert!(cut.len() <= MAX_NAME_BYTES && cut.chars().all(|c| c == 'é'));
        assert_eq!(bounded("short", 10), "short");
    }
}
