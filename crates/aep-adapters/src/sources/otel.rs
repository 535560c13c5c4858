//! What the two OTel-inbound channels share: a LogRecord read over flattened
//! attributes, and the companion family that carries every record.

use serde_json::{Map, Value};

use crate::draft::Draft;
use crate::json::get;

/// The attributes of a record as the mapping reads them: `{resource, attributes}`.
pub(crate) struct Record<'a> {
    pub(crate) resource: &'a Value,
    pub(crate) attributes: &'a Value,
}

impl<'a> Record<'a> {
    pub(crate) fn of(input: &'a Value) -> Record<'a> {
        Record {
            resource: get(input, "resource").unwrap_or(&Value::Null),
            attributes: get(input, "attributes").unwrap_or(&Value::Null),
        }
    }

    /// An attribute (flat keys: `gen_ai.request.model` is one key).
    pub(crate) fn attr(&self, key: &str) -> Option<&'a Value> {
        get(self.attributes, key)
    }

    pub(crate) fn attr_str(&self, key: &str) -> Option<&'a str> {
        self.attr(key)?.as_str().filter(|s| !s.is_empty())
    }

    /// The record's `event.name`.
    pub(crate) fn name(&self) -> &'a str {
        self.attr_str("event.name").unwrap_or("")
    }

    /// A companion-family draft of `event_type`: every attribute but the identity ones
    /// (`skip`) at metadata, the content ones (`content`) gated `redacted`.
    pub(crate) fn family(&self, event_type: String, skip: &[&str], content: &[&str]) -> Draft {
        let mut d = Draft::new(event_type).severity(aep_core::Severity::Debug);
        let attrs: Map<String, Value> = self.attributes.as_object().cloned().unwrap_or_default();
        for (k, v) in attrs {
            if skip.contains(&k.as_str()) {
                continue;
            }
            d = if content.contains(&k.as_str()) {
                d.content(&k, v)
            } else {
                d.meta(&k, v)
            };
        }
        d
    }
}
