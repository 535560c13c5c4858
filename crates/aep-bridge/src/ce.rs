//! CloudEvents 1.0 (AEP-0005 §1-2): the forward mapping (AEP → CE), its inverse, the
//! JSON structured mode and the HTTP binary content mode.
//!
//! The AEP envelope is CE-isomorphic by design, so the mapping is five rules and one
//! table ([`ATTRIBUTES`]): constants (B1), pass-through (B2), the `dev.aep.` type root
//! (B3), the `aep*` extension table plus verbatim AEP extension attributes (B4), and the
//! Distributed Tracing `traceparent` (B5). The inverse ([`from_cloudevent`]) gives back
//! the original event bit for bit modulo member order: `time` stays the string it was
//! (no date type reformats `.000Z`), and `data` stays the raw JSON text it arrived as.
//!
//! ```
//! use aep_bridge::ce::{from_cloudevent, to_cloudevent, CloudEvent};
//! use aep_core::Event;
//!
//! let event: Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"Bash","time":"2026-07-03T10:15:04.000Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":3,"data":{"duration_ms":1240}}"#.parse()?;
//! let ce = to_cloudevent(&event)?;
//! assert_eq!(ce.ty(), "dev.aep.tool.completed");
//! let line = ce.to_json();
//! assert!(line.contains(r#""aepsessionid":"s","aepsequence":3"#));
//!
//! let back = from_cloudevent(&CloudEvent::from_json(line.as_bytes())?)?;
//! assert_eq!(back.event, event);
//! assert!(back.dropped.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use aep_core::event::{check_extension_name, ExtensionError};
use aep_core::{percent, Capture, Event, Severity};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::attrs;

/// The reverse-DNS root every AEP type maps under (AEP-0005 B3): `tool.completed` is
/// `dev.aep.tool.completed` in CloudEvents and the OTLP `event_name` (§3.2).
///
/// ```
/// assert_eq!(aep_bridge::ce::TYPE_ROOT, "dev.aep.");
/// ```
pub const TYPE_ROOT: &str = "dev.aep.";

/// The CloudEvents version written and read (B1).
///
/// ```
/// assert_eq!(aep_bridge::ce::SPECVERSION, "1.0");
/// ```
pub const SPECVERSION: &str = "1.0";

/// The B4 table: each AEP attribute and the CE extension attribute it maps to, in the
/// table's order (`traceparent` maps unprefixed, B5).
///
/// ```
/// use aep_bridge::ce::ATTRIBUTES;
/// assert!(ATTRIBUTES.contains(&("seq", "aepsequence")));
/// assert_eq!(ATTRIBUTES.len(), 10);
/// ```
pub const ATTRIBUTES: [(&str, &str); 10] = [
    ("aep", "aepversion"),
    ("agent", "aepagentid"),
    ("session", "aepsessionid"),
    ("run", "aeprunid"),
    ("step", "aepstep"),
    ("seq", "aepsequence"),
    ("epoch", "aepepoch"),
    ("cause", "aepcausationid"),
    ("severity", "aepseverity"),
    ("capture", "aepcapture"),
];

/// The CE attributes the mapping itself writes besides the table: an AEP extension
/// attribute of one of these names could not ride the CE event unambiguously.
const WRITTEN: [&str; 4] = [
    "specversion",
    "datacontenttype",
    "data_base64",
    "dataschema",
];

/// The content type of `data` (B1).
const JSON: &str = "application/json";

/// Why a CloudEvent could not be read, or an event could not be mapped either way.
///
/// ```
/// use aep_bridge::ce::{from_cloudevent, CeError, CloudEvent};
/// let foreign = CloudEvent::from_json(br#"{"specversion":"1.0","id":"F1","source":"s","type":"com.example.thing"}"#)?;
/// assert!(matches!(from_cloudevent(&foreign), Err(CeError::Foreign { .. })));
/// # Ok::<(), CeError>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CeError {
    /// The CE `type` is not under [`TYPE_ROOT`]: lifting foreign CE traffic into AEP is
    /// an adapter's job, not the bridge's (AEP-0005 §2 rule 3).
    #[error("CloudEvent type `{ty}` is not under `dev.aep.`: foreign CloudEvents are out of the bridge's scope (AEP-0005 §2 rule 3); lift them with an adapter")]
    Foreign {
        /// The foreign `type`.
        ty: String,
    },
    /// A required attribute is absent.
    #[error("CloudEvent lacks `{0}`, which the mapping requires (CloudEvents 1.0 §3.1; AEP-0005 §1 table)")]
    Missing(&'static str),
    /// An attribute carries a value of the wrong type or outside its value set.
    #[error("CloudEvent attribute `{name}` must be {expected}")]
    Invalid {
        /// The attribute.
        name: String,
        /// What it must be.
        expected: &'static str,
    },
    /// `specversion` is not `1.0`.
    #[error("CloudEvent specversion `{0}` is not supported: this bridge reads CloudEvents 1.0")]
    SpecVersion(String),
    /// `data` is not JSON (`data_base64`, or a `datacontenttype` that is not JSON): an
    /// AEP `data` is a JSON value.
    #[error("CloudEvent data is not JSON ({0}); AEP data is a JSON value (AEP-0001 §5.1)")]
    NotJson(String),
    /// An AEP extension attribute is named like an attribute the mapping writes, so the
    /// CE event could not be mapped back unambiguously.
    #[error("AEP extension attribute `{0}` is named like a CloudEvents attribute the mapping writes (AEP-0005 §1 B1, B4); rename it")]
    Reserved(String),
    /// The input is not a CloudEvent in JSON structured mode.
    #[error("not a CloudEvent in JSON structured mode: {0}")]
    Json(#[from] serde_json::Error),
    /// The attributes do not make a readable AEP event (AEP-0001 §5).
    #[error("the CloudEvent does not carry a readable AEP event: {0}")]
    Event(#[from] aep_core::EventParseError),
    /// An HTTP header of binary content mode could not be decoded.
    #[error("CloudEvents HTTP header `{0}` is not valid percent-encoded UTF-8")]
    Header(String),
}

/// A CloudEvents 1.0 event: the required and optional context attributes, the
/// extension attributes in order, and `data` kept as raw JSON text.
///
/// Read one from structured mode with [`CloudEvent::from_json`] or from binary mode with
/// [`CloudEvent::from_http_binary`]; write it with [`CloudEvent::to_json`] or
/// [`CloudEvent::to_http_binary`].
///
/// ```
/// use aep_bridge::ce::CloudEvent;
/// let ce = CloudEvent::from_json(br#"{"specversion":"1.0","id":"1","source":"s","type":"dev.aep.agent.idle","aepagentid":"a","data":{"n":1.50}}"#)?;
/// assert_eq!(ce.extension("aepagentid"), Some(&serde_json::json!("a")));
/// assert_eq!(ce.data().map(|d| d.get()), Some(r#"{"n":1.50}"#));
/// # Ok::<(), aep_bridge::ce::CeError>(())
/// ```
#[derive(Clone)]
pub struct CloudEvent {
    id: String,
    source: String,
    ty: String,
    subject: Option<String>,
    time: Option<String>,
    datacontenttype: Option<String>,
    extensions: Vec<(String, Value)>,
    data: Option<Box<RawValue>>,
}

impl CloudEvent {
    /// A CloudEvent with the three required attributes besides `specversion`.
    ///
    /// ```
    /// let ce = aep_bridge::ce::CloudEvent::new("1", "urn:s", "com.example.ping");
    /// assert_eq!(ce.to_json(), r#"{"specversion":"1.0","id":"1","source":"urn:s","type":"com.example.ping"}"#);
    /// ```
    pub fn new(id: impl Into<String>, source: impl Into<String>, ty: impl Into<String>) -> Self {
        CloudEvent {
            id: id.into(),
            source: source.into(),
            ty: ty.into(),
            subject: None,
            time: None,
            datacontenttype: None,
            extensions: Vec::new(),
            data: None,
        }
    }

    /// `id`.
    ///
    /// ```
    /// assert_eq!(aep_bridge::ce::CloudEvent::new("1", "s", "t").id(), "1");
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `source`.
    ///
    /// ```
    /// assert_eq!(aep_bridge::ce::CloudEvent::new("1", "s", "t").source(), "s");
    /// ```
    pub fn source(&self) -> &str {
        &self.source
    }

    /// `type`.
    ///
    /// ```
    /// assert_eq!(aep_bridge::ce::CloudEvent::new("1", "s", "t").ty(), "t");
    /// ```
    pub fn ty(&self) -> &str {
        &self.ty
    }

    /// `subject`, when present.
    ///
    /// ```
    /// assert_eq!(aep_bridge::ce::CloudEvent::new("1", "s", "t").subject(), None);
    /// ```
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// `time`, when present, as the string it was (never reformatted).
    ///
    /// ```
    /// assert_eq!(aep_bridge::ce::CloudEvent::new("1", "s", "t").time(), None);
    /// ```
    pub fn time(&self) -> Option<&str> {
        self.time.as_deref()
    }

    /// `datacontenttype`, when present.
    ///
    /// ```
    /// assert_eq!(aep_bridge::ce::CloudEvent::new("1", "s", "t").datacontenttype(), None);
    /// ```
    pub fn datacontenttype(&self) -> Option<&str> {
        self.datacontenttype.as_deref()
    }

    /// Every other context attribute (extensions, and optional CE attributes such as
    /// `dataschema`), in order.
    ///
    /// ```
    /// let ce = aep_bridge::ce::CloudEvent::new("1", "s", "t").with_extension("acmeregion", "eu-1");
    /// assert_eq!(ce.extensions().count(), 1);
    /// ```
    pub fn extensions(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + '_ {
        attrs::pairs(&self.extensions)
    }

    /// One extension attribute.
    ///
    /// ```
    /// let ce = aep_bridge::ce::CloudEvent::new("1", "s", "t").with_extension("aepsequence", 4);
    /// assert_eq!(ce.extension("aepsequence"), Some(&serde_json::json!(4)));
    /// ```
    pub fn extension(&self, name: &str) -> Option<&Value> {
        attrs::get(&self.extensions, name)
    }

    /// `data`, as the raw JSON text it carries.
    ///
    /// ```
    /// assert!(aep_bridge::ce::CloudEvent::new("1", "s", "t").data().is_none());
    /// ```
    pub fn data(&self) -> Option<&RawValue> {
        self.data.as_deref()
    }

    aep_core::setters! {
        /// Sets `subject`.
        ///
        /// ```
        /// let ce = aep_bridge::ce::CloudEvent::new("1", "s", "t").with_subject("Bash");
        /// assert_eq!(ce.subject(), Some("Bash"));
        /// ```
        pub fn with_subject(subject: impl Into<String>) => subject = Some(subject.into());

        /// Sets `time` (kept as given).
        ///
        /// ```
        /// let ce = aep_bridge::ce::CloudEvent::new("1", "s", "t").with_time("2026-07-03T10:00:00.000Z");
        /// assert_eq!(ce.time(), Some("2026-07-03T10:00:00.000Z"));
        /// ```
        pub fn with_time(time: impl Into<String>) => time = Some(time.into());
    }

    /// Sets an extension attribute (replacing one of the same name in place).
    ///
    /// ```
    /// let ce = aep_bridge::ce::CloudEvent::new("1", "s", "t").with_extension("x", 1).with_extension("x", 2);
    /// assert_eq!(ce.extension("x"), Some(&serde_json::json!(2)));
    /// ```
    pub fn with_extension(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        let name = name.into();
        let value = value.into();
        match self.extensions.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => *v = value,
            None => self.extensions.push((name, value)),
        }
        self
    }

    /// Sets `data` (JSON) and `datacontenttype: application/json`.
    ///
    /// ```
    /// let ce = aep_bridge::ce::CloudEvent::new("1", "s", "t").with_data(&serde_json::json!({"n": 1}));
    /// assert_eq!(ce.datacontenttype(), Some("application/json"));
    /// ```
    pub fn with_data(mut self, data: &Value) -> Self {
        self.data = serde_json::value::to_raw_value(data).ok();
        self.datacontenttype = Some(JSON.to_owned());
        self
    }

    /// Whether this is a valid CloudEvents 1.0 event in the JSON format (AEP-0005 §5
    /// item 2): non-empty `id`, `source` and `type`; attribute names of 1 to 20
    /// lowercase letters or digits; extension values that are strings, booleans or
    /// integers within the CE `Integer` range (32-bit signed). Returns the first
    /// problem.
    ///
    /// ```
    /// use aep_bridge::ce::CloudEvent;
    /// assert!(CloudEvent::new("1", "s", "t").with_extension("aepsequence", 3).check().is_ok());
    /// assert!(CloudEvent::new("1", "s", "t").with_extension("aep_seq", 3).check().is_err());
    /// assert!(CloudEvent::new("1", "s", "t").with_extension("big", 1u64 << 40).check().is_err());
    /// ```
    pub fn check(&self) -> Result<(), CeError> {
        for (name, value) in [
            ("id", &self.id),
            ("source", &self.source),
            ("type", &self.ty),
        ] {
            if value.is_empty() {
                return Err(CeError::Invalid {
                    name: name.to_owned(),
                    expected: "a non-empty string (CloudEvents 1.0 §3.1)",
                });
            }
        }
        for (name, value) in &self.extensions {
            let legal_name = (1..=20).contains(&name.len())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            if !legal_name {
                return Err(CeError::Invalid {
                    name: name.clone(),
                    expected: "named with 1 to 20 lowercase ASCII letters or digits (CloudEvents 1.0 §3.1.1)",
                });
            }
            let legal_value = match value {
                Value::String(_) | Value::Bool(_) => true,
                Value::Number(n) => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
                _ => false,
            };
            if !legal_value {
                return Err(CeError::Invalid {
                    name: name.clone(),
                    expected: "a string, a boolean or an integer within -2^31..2^31 (CloudEvents 1.0 §3.1.1 type system)",
                });
            }
        }
        Ok(())
    }

    /// Reads a CloudEvent in JSON structured mode (`application/cloudevents+json`).
    /// `data` is kept as raw JSON text; `data_base64` and a non-JSON `datacontenttype`
    /// are refused (an AEP `data` is JSON).
    ///
    /// ```
    /// use aep_bridge::ce::{CeError, CloudEvent};
    /// assert!(matches!(CloudEvent::from_json(b"[1]"), Err(CeError::Json(_))));
    /// assert!(matches!(CloudEvent::from_json(br#"{"specversion":"0.3","id":"1","source":"s","type":"t"}"#), Err(CeError::SpecVersion(_))));
    /// ```
    pub fn from_json(bytes: &[u8]) -> Result<CloudEvent, CeError> {
        let wire: Wire = serde_json::from_slice(bytes)?;
        wire.into_event()
    }

    /// Reads the JSON batched mode (`application/cloudevents-batch+json`): an array of
    /// structured-mode events, each read as [`CloudEvent::from_json`] reads one (its
    /// `data` kept as raw text).
    ///
    /// ```
    /// use aep_bridge::ce::CloudEvent;
    /// let batch = CloudEvent::from_json_batch(br#"[{"specversion":"1.0","id":"1","source":"s","type":"t","data":{"n":1.50}}]"#)?;
    /// assert_eq!(batch[0].data().map(|d| d.get()), Some(r#"{"n":1.50}"#));
    /// assert!(CloudEvent::from_json_batch(b"{}").is_err());
    /// # Ok::<(), aep_bridge::ce::CeError>(())
    /// ```
    pub fn from_json_batch(bytes: &[u8]) -> Result<Vec<CloudEvent>, CeError> {
        let items: Vec<Box<RawValue>> = serde_json::from_slice(bytes)?;
        items
            .iter()
            .map(|raw| CloudEvent::from_json(raw.get().as_bytes()))
            .collect()
    }

    /// The JSON structured-mode text of this event: `specversion`, `id`, `source`,
    /// `type`, `subject`, `time`, `datacontenttype`, the extensions in order, `data`.
    ///
    /// ```
    /// let ce = aep_bridge::ce::CloudEvent::new("1", "s", "t").with_extension("aepagentid", "a");
    /// assert_eq!(ce.to_json(), r#"{"specversion":"1.0","id":"1","source":"s","type":"t","aepagentid":"a"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        // Serializing string keys, scalar values and validated raw JSON cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The HTTP binary content mode (CloudEvents HTTP binding §3.1): one `ce-` header per
    /// context attribute, values percent-encoded where the binding asks; `content-type`
    /// from `datacontenttype`; the body is `data`. Header names are lowercase.
    ///
    /// In binary mode every value is a string; [`CloudEvent::from_http_binary`] gives
    /// the AEP table's integers (`aepsequence`, `aepepoch`) their type back, and leaves
    /// other extension values strings.
    ///
    /// ```
    /// let ce = aep_bridge::ce::CloudEvent::new("1", "s", "dev.aep.agent.idle")
    ///     .with_extension("aepsequence", 4)
    ///     .with_data(&serde_json::json!({"n": 1}));
    /// let (headers, body) = ce.to_http_binary();
    /// assert!(headers.contains(&("ce-aepsequence".to_owned(), "4".to_owned())));
    /// assert!(headers.contains(&("content-type".to_owned(), "application/json".to_owned())));
    /// assert_eq!(body.as_deref(), Some(&br#"{"n":1}"#[..]));
    /// ```
    pub fn to_http_binary(&self) -> (Vec<(String, String)>, Option<Vec<u8>>) {
        let mut headers = vec![
            ("ce-specversion".to_owned(), SPECVERSION.to_owned()),
            ("ce-id".to_owned(), percent_encode(&self.id)),
            ("ce-source".to_owned(), percent_encode(&self.source)),
            ("ce-type".to_owned(), percent_encode(&self.ty)),
        ];
        let optional = [("ce-subject", &self.subject), ("ce-time", &self.time)];
        for (name, value) in optional {
            if let Some(v) = value {
                headers.push((name.to_owned(), percent_encode(v)));
            }
        }
        for (name, value) in &self.extensions {
            let text = match value {
                Value::String(s) => percent_encode(s),
                other => percent_encode(&other.to_string()),
            };
            headers.push((format!("ce-{name}"), text));
        }
        if let Some(ct) = &self.datacontenttype {
            headers.push(("content-type".to_owned(), ct.clone()));
        }
        let body = self.data.as_ref().map(|d| d.get().as_bytes().to_vec());
        (headers, body)
    }

    /// Reads the HTTP binary content mode: `ce-*` headers (names case-insensitive,
    /// values percent-decoded), `content-type` as `datacontenttype`, the body as `data`
    /// (which must be JSON). Other headers are ignored.
    ///
    /// ```
    /// use aep_bridge::ce::CloudEvent;
    /// let headers = [("CE-SpecVersion", "1.0"), ("ce-id", "1"), ("ce-source", "s"), ("ce-type", "dev.aep.agent.idle"),
    ///                ("ce-aepsequence", "4"), ("ce-acmenote", "a%20b"), ("content-type", "application/json")];
    /// let ce = CloudEvent::from_http_binary(headers, br#"{"n":1}"#)?;
    /// assert_eq!(ce.extension("aepsequence"), Some(&serde_json::json!(4)));
    /// assert_eq!(ce.extension("acmenote"), Some(&serde_json::json!("a b")));
    /// assert_eq!(CloudEvent::from_json(ce.to_json().as_bytes())?.to_json(), ce.to_json());
    /// # Ok::<(), aep_bridge::ce::CeError>(())
    /// ```
    pub fn from_http_binary<'h>(
        headers: impl IntoIterator<Item = (&'h str, &'h str)>,
        body: &[u8],
    ) -> Result<CloudEvent, CeError> {
        let mut wire = Wire::default();
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            if lower == "content-type" {
                wire.attributes
                    .push(("datacontenttype".to_owned(), Value::from(value.trim())));
                continue;
            }
            let Some(attr) = lower.strip_prefix("ce-") else {
                continue;
            };
            let text = percent_decode(value).ok_or_else(|| CeError::Header(name.to_owned()))?;
            let typed = if INTEGER_ATTRIBUTES.contains(&attr) {
                text.parse::<u64>().map_or(Value::from(text), Value::from)
            } else {
                Value::from(text)
            };
            wire.attributes.push((attr.to_owned(), typed));
        }
        if !body.is_empty() {
            let text = std::str::from_utf8(body)
                .map_err(|_| CeError::NotJson("the body is not UTF-8".to_owned()))?;
            let raw = RawValue::from_string(text.trim().to_owned())
                .map_err(|e| CeError::NotJson(format!("the body is not JSON: {e}")))?;
            wire.data = Some(raw);
        }
        wire.into_event()
    }
}

/// The table's attributes whose CE type is `Integer` (binary mode carries them as text).
const INTEGER_ATTRIBUTES: [&str; 2] = ["aepsequence", "aepepoch"];

impl PartialEq for CloudEvent {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.source == other.source
            && self.ty == other.ty
            && self.subject == other.subject
            && self.time == other.time
            && self.datacontenttype == other.datacontenttype
            && self.extensions == other.extensions
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl fmt::Debug for CloudEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl fmt::Display for CloudEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl Serialize for CloudEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("specversion", SPECVERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("source", &self.source)?;
        map.serialize_entry("type", &self.ty)?;
        if let Some(v) = &self.subject {
            map.serialize_entry("subject", v)?;
        }
        if let Some(v) = &self.time {
            map.serialize_entry("time", v)?;
        }
        if let Some(v) = &self.datacontenttype {
            map.serialize_entry("datacontenttype", v)?;
        }
        for (k, v) in &self.extensions {
            map.serialize_entry(k, v)?;
        }
        if let Some(d) = &self.data {
            map.serialize_entry("data", d)?;
        }
        map.end()
    }
}

/// A CloudEvent as read, before its attributes are sorted out.
#[derive(Default)]
struct Wire {
    attributes: Vec<(String, Value)>,
    data: Option<Box<RawValue>>,
    base64: bool,
}

impl Wire {
    fn into_event(self) -> Result<CloudEvent, CeError> {
        let mut ce = CloudEvent::new("", "", "");
        let (mut id, mut source, mut ty, mut version) = (None, None, None, None);
        for (name, value) in self.attributes {
            let text = |v: Value| match v {
                Value::String(s) => Ok(s),
                _ => Err(CeError::Invalid {
                    name: name.clone(),
                    expected: "a string",
                }),
            };
            match name.as_str() {
                "specversion" => version = Some(text(value)?),
                "id" => id = Some(text(value)?),
                "source" => source = Some(text(value)?),
                "type" => ty = Some(text(value)?),
                "subject" => ce.subject = Some(text(value)?),
                "time" => ce.time = Some(text(value)?),
                "datacontenttype" => ce.datacontenttype = Some(text(value)?),
                _ => ce.extensions.push((name, value)),
            }
        }
        match version.as_deref() {
            Some(SPECVERSION) => {}
            Some(other) => return Err(CeError::SpecVersion(other.to_owned())),
            None => return Err(CeError::Missing("specversion")),
        }
        ce.id = id.ok_or(CeError::Missing("id"))?;
        ce.source = source.ok_or(CeError::Missing("source"))?;
        ce.ty = ty.ok_or(CeError::Missing("type"))?;
        if self.base64 {
            return Err(CeError::NotJson("data_base64".to_owned()));
        }
        if let (Some(ct), Some(_)) = (&ce.datacontenttype, &self.data) {
            if !is_json_media_type(ct) {
                return Err(CeError::NotJson(format!("datacontenttype `{ct}`")));
            }
        }
        ce.data = self.data;
        Ok(ce)
    }
}

/// `application/json`, `text/json` or any `+json` media type, parameters ignored.
fn is_json_media_type(ct: &str) -> bool {
    let essence = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == JSON || essence == "text/json" || essence.ends_with("+json")
}

impl<'de> Deserialize<'de> for Wire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct WireVisitor;
        impl<'de> Visitor<'de> for WireVisitor {
            type Value = Wire;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a CloudEvent (a JSON object)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Wire, A::Error> {
                let mut wire = Wire::default();
                while let Some(key) = map.next_key::<String>()? {
                    let duplicate = key == "data" && wire.data.is_some()
                        || wire.attributes.iter().any(|(k, _)| *k == key);
                    if duplicate {
                        return Err(de::Error::custom(format_args!(
                            "duplicate attribute `{key}`"
                        )));
                    }
                    match key.as_str() {
                        "data" => wire.data = Some(map.next_value()?),
                        "data_base64" => {
                            map.next_value::<de::IgnoredAny>()?;
                            wire.base64 = true;
                        }
                        _ => {
                            let value: Value = map.next_value()?;
                            wire.attributes.push((key, value));
                        }
                    }
                }
                Ok(wire)
            }
        }
        d.deserialize_map(WireVisitor)
    }
}

/// Maps an AEP event to a CloudEvent (AEP-0005 §1, rules B1-B5).
///
/// Absent optional attributes produce no CE attribute; AEP extension attributes pass
/// through verbatim, after the table. Fails only for an extension attribute named like
/// a CE attribute the mapping writes ([`CeError::Reserved`]), which could not be mapped
/// back.
///
/// ```
/// use aep_bridge::ce::to_cloudevent;
/// let e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"x.acme.foo.bar","time":"2026-07-03T10:00:00.000Z","source":"aep://h/agent/a","agent":"a","acmeregion":"eu-1"}"#.parse()?;
/// let ce = to_cloudevent(&e)?;
/// assert_eq!(ce.ty(), "dev.aep.x.acme.foo.bar");
/// assert_eq!(ce.to_json(), r#"{"specversion":"1.0","id":"1","source":"aep://h/agent/a","type":"dev.aep.x.acme.foo.bar","time":"2026-07-03T10:00:00.000Z","aepversion":"0.1","aepagentid":"a","acmeregion":"eu-1"}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_cloudevent(event: &Event) -> Result<CloudEvent, CeError> {
    let mut ce = CloudEvent::new(
        event.id(),
        event.source(),
        format!("{TYPE_ROOT}{}", event.event_type()),
    );
    ce.subject = event.subject().map(str::to_owned);
    ce.time = Some(event.time().to_owned());
    if event.data_raw().is_some() {
        ce.datacontenttype = Some(JSON.to_owned());
    }
    let text = |v: Option<&str>| v.map(Value::from);
    let values: [Option<Value>; 10] = [
        Some(Value::from(event.aep())),
        Some(Value::from(event.agent())),
        text(event.session()),
        text(event.run()),
        text(event.step()),
        event.seq().map(Value::from),
        event.epoch_attr().map(Value::from),
        text(event.cause()),
        event.severity_attr().map(|s| Value::from(s.as_str())),
        event.capture_attr().map(|c| Value::from(c.as_str())),
    ];
    ce.extensions
        .reserve(values.len() + event.extensions().len() + 1);
    for ((_, name), value) in ATTRIBUTES.iter().zip(values) {
        if let Some(v) = value {
            ce.extensions.push(((*name).to_owned(), v));
        }
    }
    if let Some(tp) = event.traceparent() {
        ce.extensions
            .push(("traceparent".to_owned(), Value::from(tp)));
    }
    for (name, raw) in event.extensions() {
        if WRITTEN.contains(&name) || ATTRIBUTES.iter().any(|(_, ce)| *ce == name) {
            return Err(CeError::Reserved(name.to_owned()));
        }
        let value: Value = serde_json::from_str(raw.get())?;
        ce.extensions.push((name.to_owned(), value));
    }
    ce.data = event.data_raw().map(ToOwned::to_owned);
    Ok(ce)
}

/// The result of the inverse mapping: the AEP event and the CE attributes that could
/// not ride it.
///
/// ```
/// use aep_bridge::ce::{from_cloudevent, CloudEvent};
/// let ce = CloudEvent::new("1", "aep://h/agent/a", "dev.aep.agent.idle")
///     .with_time("2026-07-03T10:00:00.000Z")
///     .with_extension("aepagentid", "a")
///     .with_extension("Bad-Name", "x");
/// let inverse = from_cloudevent(&ce)?;
/// assert_eq!(inverse.event.agent(), "a");
/// assert_eq!(inverse.dropped[0].name, "Bad-Name");
/// # Ok::<(), aep_bridge::ce::CeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Inverse {
    /// The AEP event.
    pub event: Event,
    /// Attributes dropped because they cannot be AEP extension attributes (AEP-0005 §2
    /// rule 2), with the reason: the diagnostic the rule asks for.
    pub dropped: Vec<Dropped>,
}

/// One CE attribute the inverse mapping dropped, and why.
///
/// ```
/// use aep_bridge::ce::Dropped;
/// use aep_core::event::ExtensionError;
/// let d = Dropped { name: "aep_bad".into(), reason: ExtensionError::BadName("aep_bad".into()) };
/// assert!(d.to_string().contains("aep_bad"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The CE attribute's name.
    pub name: String,
    /// Why it cannot be an AEP extension attribute (AEP-0001 §5.4).
    pub reason: ExtensionError,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CE attribute `{}` dropped: {}", self.name, self.reason)
    }
}

/// Maps a CloudEvent back to the AEP event it carries (AEP-0005 §2).
///
/// Drops the B1 constants, strips the B3 root, reverses the B4/B5 table and passes B2
/// through, so `from_cloudevent(&to_cloudevent(e)?)?.event == e` for every event `e`.
/// Other attributes become AEP extension attributes when their names and values are
/// legal ones (AEP-0001 §5.4: unknown `aep*` names from a newer minor version
/// included), and are otherwise dropped and listed in [`Inverse::dropped`].
///
/// Errors: a foreign `type` ([`CeError::Foreign`], §2 rule 3); no `time` or no
/// `aepagentid` ([`CeError::Missing`]: an AEP event requires both); a table attribute
/// of the wrong type or outside its value set ([`CeError::Invalid`]).
///
/// ```
/// use aep_bridge::ce::{from_cloudevent, CeError, CloudEvent};
/// let ce = CloudEvent::new("1", "s", "dev.aep.agent.idle").with_time("t").with_extension("aepagentid", "a")
///     .with_extension("aepseverity", "loud");
/// assert!(matches!(from_cloudevent(&ce), Err(CeError::Invalid { .. })));
/// ```
pub fn from_cloudevent(ce: &CloudEvent) -> Result<Inverse, CeError> {
    let ty = ce
        .ty
        .strip_prefix(TYPE_ROOT)
        .ok_or_else(|| CeError::Foreign { ty: ce.ty.clone() })?;
    let time = ce.time.as_deref().ok_or(CeError::Missing("time"))?;
    let attr = |name: &str| ce.extension(name);
    let string = |name: &'static str| -> Result<Option<&str>, CeError> {
        match attr(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(CeError::Invalid {
                name: name.to_owned(),
                expected: "a string",
            }),
        }
    };
    let integer = |name: &'static str| -> Result<Option<u64>, CeError> {
        match attr(name) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or(CeError::Invalid {
                name: name.to_owned(),
                expected: "a non-negative integer",
            }),
        }
    };
    let agent = string("aepagentid")?.ok_or(CeError::Missing("aepagentid"))?;
    let severity: Option<Severity> = parsed(
        "aepseverity",
        string("aepseverity")?,
        "one of debug, info, notice, warning, error, critical",
    )?;
    let capture: Option<Capture> = parsed(
        "aepcapture",
        string("aepcapture")?,
        "one of none, metadata, redacted, full",
    )?;
    let traceparent = match attr("traceparent") {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => {
            return Err(CeError::Invalid {
                name: "traceparent".to_owned(),
                expected: "a string",
            })
        }
    };

    // The event is written as JSON and read back, so that `aep` and `data` keep their
    // exact text (the inverse is bit-identical, §2 rule 1).
    let mut out = Vec::with_capacity(256 + ce.data.as_ref().map_or(0, |d| d.get().len()));
    let mut w = JsonObject::new(&mut out);
    w.string(
        "aep",
        string("aepversion")?.unwrap_or(aep_core::AEP_VERSION),
    );
    w.string("id", &ce.id);
    w.string("type", ty);
    if let Some(subject) = &ce.subject {
        w.string("subject", subject);
    }
    w.string("time", time);
    w.string("source", &ce.source);
    w.string("agent", agent);
    for (name, value) in [
        ("session", string("aepsessionid")?),
        ("run", string("aeprunid")?),
        ("step", string("aepstep")?),
    ] {
        if let Some(v) = value {
            w.string(name, v);
        }
    }
    if let Some(seq) = integer("aepsequence")? {
        w.raw("seq", &seq.to_string());
    }
    if let Some(epoch) = integer("aepepoch")? {
        w.raw("epoch", &epoch.to_string());
    }
    if let Some(cause) = string("aepcausationid")? {
        w.string("cause", cause);
    }
    if let Some(tp) = traceparent {
        w.string("traceparent", tp);
    }
    if let Some(s) = severity {
        w.string("severity", s.as_str());
    }
    if let Some(c) = capture {
        w.string("capture", c.as_str());
    }
    let mut dropped = Vec::new();
    for (name, value) in &ce.extensions {
        let mapped = name == "traceparent" || ATTRIBUTES.iter().any(|(_, c)| c == name);
        if mapped {
            continue;
        }
        match check_extension_name(name) {
            Ok(()) if aep_core::event::is_extension_value(value) => {
                w.value(name, value);
            }
            Ok(()) => dropped.push(Dropped {
                name: name.clone(),
                reason: ExtensionError::NonScalar(name.clone()),
            }),
            Err(reason) => dropped.push(Dropped {
                name: name.clone(),
                reason,
            }),
        }
    }
    if let Some(data) = &ce.data {
        w.raw("data", data.get());
    }
    w.end();
    let event = Event::from_slice(&out)?;
    Ok(Inverse { event, dropped })
}

/// A JSON object written member by member.
struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> JsonObject<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        JsonObject { out, first: true }
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.quoted(key);
        self.out.push(b':');
    }

    fn quoted(&mut self, text: &str) {
        // Writing a `str` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *self.out, text);
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        self.quoted(value);
    }

    fn value(&mut self, key: &str, value: &Value) {
        self.key(key);
        let _ = serde_json::to_writer(&mut *self.out, value);
    }

    fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.out.extend_from_slice(json.as_bytes());
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

/// The extension `name`'s string `value` read as a `T`; an error saying it is not
/// `expected` when it does not read.
fn parsed<T: std::str::FromStr>(
    name: &str,
    value: Option<&str>,
    expected: &'static str,
) -> Result<Option<T>, CeError> {
    value
        .map(|s| {
            s.parse().map_err(|_| CeError::Invalid {
                name: name.to_owned(),
                expected,
            })
        })
        .transpose()
}

/// Percent-encodes a header value as the CloudEvents HTTP binding §3.1.3.2 asks: space,
/// `"`, `%` and every byte outside printable ASCII.
fn percent_encode(value: &str) -> String {
    percent::encode(value.as_bytes(), |b| {
        (0x21..=0x7e).contains(&b) && b != b'"' && b != b'%'
    })
}

/// The inverse of [`percent_encode`]; `None` for a broken escape or non-UTF-8 bytes.
fn percent_decode(value: &str) -> Option<String> {
    percent::decode(value.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encoding_round_trips() {
        for text in ["plain", "a b", "100%", "quote\"d", "naïve", "tab\there", ""] {
            let enc = percent_encode(text);
            assert!(enc.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{enc}");
            assert_eq!(percent_decode(&enc).as_deref(), Some(text));
        }
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%ff"), None, "not UTF-8");
    }

    #[test]
    fn media_types() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/vnd.x+json",
            "TEXT/JSON",
        ] {
            assert!(is_json_media_type(ok), "{ok}");
        }
        for bad in ["text/plain", "application/octet-stream", ""] {
            assert!(!is_json_media_type(bad), "{bad}");
        }
    }
}
