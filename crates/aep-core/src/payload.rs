//! Payload types, one per registered type of AEP-0002 §4, generated from the schema
//! registry.
//!
//! Field names are those of the wire (dotted OTel GenAI names such as
//! `gen_ai.usage.input_tokens` become `gen_ai_usage_input_tokens`); optional fields are
//! `Option`s never written as `null`; members a schema does not name are kept in `extra`
//! (the schemas are open, AEP-0002 §5.4), so decoding a payload and encoding it again
//! gives the same JSON value. JSON Schema `number`s are [`serde_json::Number`]s, so an
//! integer stays an integer through a round trip; `integer`s are `u64` where the schema
//! sets `minimum: 0`, `i64` otherwise. Each field's doc names its `x-aep-capture` level
//! (AEP-0002 §5.1); the same annotations drive down-leveling through
//! [`crate::schema`].
//!
//! ```
//! use aep_core::payload::{Payload, PayloadType, ToolRequested};
//! let event: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"tool.requested","time":"t","source":"s","agent":"a","data":{"tool":{"name":"Bash","call_id":"t_91"},"args_digest":"a3f9"}}"#.parse()?;
//! let Payload::ToolRequested(p) = Payload::from_event(&event)? else { panic!("typed") };
//! assert_eq!(p.tool.name, "Bash");
//! assert_eq!(ToolRequested::EVENT_TYPE, "tool.requested");
//! // The same, straight from the event:
//! let p: ToolRequested = event.payload()?;
//! assert_eq!(p.args_digest.as_deref(), Some("a3f9"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::Event;

// The payload types themselves, `Payload` and `PAYLOAD_TYPES`, generated from the
// schemas by aep-codegen.
mod registered;

pub use registered::*;

/// Whether a payload value counts as present where the mappings read one (AEP-0005:
/// a tool's `call_id`, a schema's `data`): not `null`, `false`, zero, or empty. This is
/// the reference mappings' (Python's) truthiness, which the bridge and the conformance
/// checks of its mappings both follow.
///
/// ```
/// use aep_core::payload::truthy;
/// use serde_json::json;
/// assert!(truthy(&json!("t_91")) && truthy(&json!([0])) && truthy(&json!(0.5)));
/// assert!(!truthy(&json!(null)) && !truthy(&json!("")) && !truthy(&json!(0)) && !truthy(&json!({})));
/// assert!(truthy(&json!(true)) && truthy(&json!({ "a": null })) && truthy(&json!(-1)));
/// assert!(!truthy(&json!(false)) && !truthy(&json!([])) && !truthy(&json!(-0.0)));
/// ```
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A generated payload type and the registered type it belongs to.
///
/// ```
/// use aep_core::payload::{PayloadType, RunFinished};
/// let mut event = aep_core::Event::new("1", RunFinished::EVENT_TYPE, "t", "s", "a");
/// event.set_payload(&RunFinished { duration_ms: Some(120), ..Default::default() })?;
/// assert_eq!(event.data(), Some(serde_json::json!({"duration_ms": 120})));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait PayloadType: Serialize + DeserializeOwned {
    /// The registered type string, e.g. `tool.requested`.
    const EVENT_TYPE: &'static str;
}

/// A member the schema allows as an object or a string (e.g. `tool.completed` `result`).
///
/// ```
/// use aep_core::payload::TextOrObject;
/// let v: TextOrObject = serde_json::from_str(r#""ok""#)?;
/// assert_eq!(v, TextOrObject::Text("ok".into()));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TextOrObject {
    /// A JSON string.
    Text(String),
    /// A JSON object.
    Object(Map<String, Value>),
}

/// `data` that does not match the payload schema of its registered type.
///
/// ```
/// use aep_core::payload::Payload;
/// let raw = serde_json::value::RawValue::from_string(r#"{"state":"asleep"}"#.into())?;
/// let err = Payload::from_raw("agent.presence", Some(&raw)).unwrap_err();
/// assert_eq!(err.event_type(), "agent.presence");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[error("`data` of a `{event_type}` event does not match its payload schema (AEP-0002 §5): {source}; read it as JSON with `Event::data` instead")]
pub struct PayloadError {
    event_type: String,
    source: serde_json::Error,
}

impl PayloadError {
    /// The event type whose payload failed to decode.
    pub fn event_type(&self) -> &str {
        &self.event_type
    }
}

fn decode<T: DeserializeOwned>(event_type: &str, text: &str) -> Result<T, PayloadError> {
    serde_json::from_str(text).map_err(|source| PayloadError {
        event_type: event_type.to_owned(),
        source,
    })
}

impl Payload {
    /// The typed payload of `event`: its `data` decoded by its `type`.
    ///
    /// ```
    /// use aep_core::payload::Payload;
    /// let event: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"session.ended","time":"t","source":"s","agent":"a","session":"s1","data":{"runs":3}}"#.parse()?;
    /// let Payload::SessionEnded(p) = Payload::from_event(&event)? else { panic!("typed") };
    /// assert_eq!(p.runs, Some(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_event(event: &Event) -> Result<Payload, PayloadError> {
        Payload::from_raw(event.event_type(), event.data_raw())
    }
}
