//! OpenTelemetry export (AEP-0005 §3): an event as an OTLP LogRecord (the OTel Events
//! model: a LogRecord with `event_name`), the severity table both ways, and the
//! protobuf messages of an OTLP/HTTP export request.
//!
//! [`to_log_record`] is the §3.2 table row by row: `time` to `time_unix_nano`, the
//! `dev.aep.` event name shared with the CE bridge, the §3.4 severity, `traceparent` to
//! `trace_id`/`span_id`/`flags`, `agent` to the resource's `service.name` (overridable
//! for a shared relay) and `aep.agent_id`, the other envelope attributes to `aep.*`
//! attributes, `data` members named `gen_ai.*` hoisted to top-level attributes
//! verbatim, and the rest of `data` as the `body`. The exporter's `max_capture` applies
//! first ([`crate::CaptureLimit`], §3.3).
//!
//! ```
//! use aep_bridge::otlp::{to_log_record, OtlpOptions};
//! use aep_core::Event;
//!
//! let event: Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":3,"data":{"gen_ai.usage.input_tokens":142,"status":"success"}}"#.parse()?;
//! let record = to_log_record(&event, &OtlpOptions::default())?;
//! assert_eq!(record.event_name(), "dev.aep.tool.completed");
//! assert_eq!(record.time_unix_nano(), 1_783_073_704_221_000_000);
//! assert_eq!(record.attribute("gen_ai.usage.input_tokens"), Some(&serde_json::json!(142)));
//! assert_eq!(record.body(), Some(&serde_json::json!({"status": "success"})));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use aep_core::validate::{unix_nanos, TraceParent};
use aep_core::{Event, Severity};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1 as proto_logs;
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde_json::{json, Map, Value};

use crate::ce::TYPE_ROOT;
use crate::{attrs, CaptureLimit, MapError};

/// An OTLP severity: `severity_text` and `severity_number` (AEP-0005 §3.4).
///
/// ```
/// use aep_bridge::otlp::severity_to_otlp;
/// let s = severity_to_otlp(aep_core::Severity::Notice);
/// assert_eq!((s.text, s.number), ("INFO2", 10));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OtlpSeverity {
    /// `severity_text`.
    pub text: &'static str,
    /// `severity_number` (the OTel Logs Data Model's 1-24 scale).
    pub number: i32,
}

/// The AEP-0005 §3.4 table: an AEP severity as OTLP.
///
/// ```
/// use aep_bridge::otlp::severity_to_otlp;
/// use aep_core::Severity;
/// assert_eq!(severity_to_otlp(Severity::Critical).text, "FATAL");
/// assert_eq!(severity_to_otlp(Severity::Warning).number, 13);
/// ```
pub fn severity_to_otlp(severity: Severity) -> OtlpSeverity {
    let (text, number) = match severity {
        Severity::Debug => ("DEBUG", 5),
        Severity::Info => ("INFO", 9),
        Severity::Notice => ("INFO2", 10),
        Severity::Warning => ("WARN", 13),
        Severity::Error => ("ERROR", 17),
        Severity::Critical => ("FATAL", 21),
    };
    OtlpSeverity { text, number }
}

/// The inverse of the §3.4 table: OTLP's 24 levels bucketed back to the six AEP levels
/// (1-8 `debug`, 9 `info`, 10-12 `notice`, 13-16 `warning`, 17-20 `error`, 21-24
/// `critical`); `None` outside 1-24 (0 is "unspecified").
///
/// ```
/// use aep_bridge::otlp::severity_from_otlp;
/// use aep_core::Severity;
/// assert_eq!(severity_from_otlp(12), Some(Severity::Notice));
/// assert_eq!(severity_from_otlp(24), Some(Severity::Critical));
/// assert_eq!(severity_from_otlp(0), None);
/// ```
pub fn severity_from_otlp(number: i32) -> Option<Severity> {
    Some(match number {
        1..=8 => Severity::Debug,
        9 => Severity::Info,
        10..=12 => Severity::Notice,
        13..=16 => Severity::Warning,
        17..=20 => Severity::Error,
        21..=24 => Severity::Critical,
        _ => return None,
    })
}

/// Options of the OTLP projection. Defaults: `max_capture` `metadata` with
/// [`crate::CapturePolicy::DropData`]; `service.name` from each event's `agent`.
///
/// ```
/// use aep_bridge::otlp::OtlpOptions;
/// use aep_bridge::CaptureLimit;
/// let opts = OtlpOptions::new().capture(CaptureLimit::new(aep_core::Capture::Full)).service_name("shared-relay");
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtlpOptions {
    pub(crate) capture: CaptureLimit,
    pub(crate) service_name: Option<String>,
}

impl OtlpOptions {
    /// The defaults.
    ///
    /// ```
    /// assert_eq!(aep_bridge::otlp::OtlpOptions::new(), Default::default());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    aep_core::setters! {
        /// The capture ceiling (AEP-0005 §3.3).
        ///
        /// ```
        /// let o = aep_bridge::otlp::OtlpOptions::new().capture(aep_bridge::CaptureLimit::new(aep_core::Capture::None));
        /// # let _ = o;
        /// ```
        pub fn capture(limit: CaptureLimit) => capture = limit;

        /// One `service.name` for every record instead of each event's `agent` (a relay
        /// shared by many agents, §3.2); `aep.agent_id` still names the agent.
        ///
        /// ```
        /// let o = aep_bridge::otlp::OtlpOptions::new().service_name("fleet");
        /// # let _ = o;
        /// ```
        pub fn service_name(name: impl Into<String>) => service_name = Some(name.into());
    }

    /// The `service.name` of a record or span of `agent`'s.
    pub(crate) fn service_for(&self, agent: &str) -> String {
        self.service_name
            .clone()
            .unwrap_or_else(|| agent.to_owned())
    }
}

/// One event as an OTLP LogRecord, before protobuf: what [`to_log_record`] builds.
///
/// [`LogRecord::to_data_model`] writes it as the JSON the conformance pins use
/// (`fixtures/conformance/otlp/otlp-expected.json`); [`LogRecord::to_proto`] as the
/// protobuf message.
///
/// ```
/// use aep_bridge::otlp::{to_log_record, OtlpOptions};
/// let e = aep_core::Event::new("1", "agent.idle", "2026-07-03T10:00:00Z", "aep://h/agent/a", "a");
/// let r = to_log_record(&e, &OtlpOptions::default())?;
/// assert_eq!(r.service_name(), "a");
/// assert_eq!(r.to_data_model()["attributes"]["aep.capture"], "metadata");
/// # Ok::<(), aep_bridge::MapError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    time_unix_nano: u64,
    event_name: String,
    severity: Severity,
    service_name: String,
    attributes: Vec<(String, Value)>,
    trace: Option<TraceParent>,
    body: Option<Value>,
}

impl LogRecord {
    /// `time_unix_nano`.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// assert_eq!(r.time_unix_nano(), 1_000_000_000);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn time_unix_nano(&self) -> u64 {
        self.time_unix_nano
    }

    /// `event_name`: [`TYPE_ROOT`] and the event's type.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// assert_eq!(r.event_name(), "dev.aep.agent.idle");
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn event_name(&self) -> &str {
        &self.event_name
    }

    /// The AEP severity the record's `severity_text`/`severity_number` come from.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// assert_eq!(r.severity(), aep_core::Severity::Info);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// The resource's `service.name`.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// assert_eq!(r.service_name(), "a");
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn service_name(&self) -> &str {
        &self.service_name
    }

    /// The attributes in order: the envelope's `aep.*`, then the hoisted `gen_ai.*`.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// assert_eq!(r.attributes().next().map(|(k, _)| k), Some("aep.agent_id"));
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn attributes(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + '_ {
        attrs::pairs(&self.attributes)
    }

    /// One attribute.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// assert_eq!(r.attribute("aep.event_id"), Some(&serde_json::json!("1")));
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn attribute(&self, key: &str) -> Option<&Value> {
        attrs::get(&self.attributes, key)
    }

    /// The trace context the event carried (`traceparent`).
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// assert!(r.trace().is_none());
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn trace(&self) -> Option<&TraceParent> {
        self.trace.as_ref()
    }

    /// The body: what remains of the surviving `data` once `gen_ai.*` is hoisted;
    /// `None` when nothing does.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// assert!(r.body().is_none());
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn body(&self) -> Option<&Value> {
        self.body.as_ref()
    }

    /// The record in the JSON form of the AEP-0005 §5 conformance pins: flat
    /// `time_unix_nano`, `event_name`, `severity_text`, `severity_number`, `resource`
    /// and `attributes` maps, hex `trace_id`/`span_id`, numeric `flags`, `body`.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// let v = r.to_data_model();
    /// assert_eq!(v["severity_number"], 9);
    /// assert_eq!(v["resource"]["service.name"], "a");
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn to_data_model(&self) -> Value {
        let sev = severity_to_otlp(self.severity);
        let mut out = json!({
            "time_unix_nano": self.time_unix_nano,
            "event_name": self.event_name,
            "severity_text": sev.text,
            "severity_number": sev.number,
            "resource": {"service.name": self.service_name},
            "attributes": self.attributes.iter().cloned().collect::<Map<String, Value>>(),
        });
        if let (Some(tp), Some(map)) = (&self.trace, out.as_object_mut()) {
            map.insert("trace_id".to_owned(), Value::from(hex(&tp.trace_id())));
            map.insert("span_id".to_owned(), Value::from(hex(&tp.span_id())));
            map.insert("flags".to_owned(), Value::from(tp.flags()));
        }
        if let (Some(body), Some(map)) = (&self.body, out.as_object_mut()) {
            map.insert("body".to_owned(), body.clone());
        }
        out
    }

    /// The protobuf LogRecord (`opentelemetry.proto.logs.v1.LogRecord`). The resource
    /// is not part of it: [`logs_request`] groups records by `service.name`.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "agent.idle", "1970-01-01T00:00:01Z", "s", "a");
    /// # let r = aep_bridge::otlp::to_log_record(&e, &Default::default())?;
    /// let p = r.to_proto();
    /// assert_eq!(p.event_name, "dev.aep.agent.idle");
    /// assert_eq!(p.severity_number, 9);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn to_proto(&self) -> proto_logs::LogRecord {
        let sev = severity_to_otlp(self.severity);
        let (trace_id, span_id, flags) = match &self.trace {
            Some(tp) => (
                tp.trace_id().to_vec(),
                tp.span_id().to_vec(),
                u32::from(tp.flags()),
            ),
            None => (Vec::new(), Vec::new(), 0),
        };
        proto_logs::LogRecord {
            time_unix_nano: self.time_unix_nano,
            observed_time_unix_nano: 0,
            severity_number: sev.number,
            severity_text: sev.text.to_owned(),
            body: self.body.as_ref().map(any_value),
            attributes: key_values(&self.attributes),
            dropped_attributes_count: 0,
            flags,
            trace_id,
            span_id,
            event_name: self.event_name.clone(),
        }
    }
}

/// Projects one event as an OTLP LogRecord (AEP-0005 §3.2), after the capture ceiling
/// (§3.3).
///
/// Fails for an event whose `time` is not an RFC 3339 date-time at or after 1970
/// ([`MapError::Time`]) or whose `traceparent` is malformed ([`MapError::TraceParent`]):
/// a relay validates both, so such an event came from somewhere that does not.
///
/// ```
/// use aep_bridge::otlp::{to_log_record, OtlpOptions};
/// use aep_bridge::MapError;
/// let bad = aep_core::Event::new("1", "agent.idle", "yesterday", "s", "a");
/// assert!(matches!(to_log_record(&bad, &OtlpOptions::default()), Err(MapError::Time { .. })));
/// ```
pub fn to_log_record(event: &Event, options: &OtlpOptions) -> Result<LogRecord, MapError> {
    let egress = options.capture.apply(event);
    let e = egress.event();
    let time_unix_nano = time_nanos(e)?;
    let trace = trace_parent(e)?;
    let mut attributes: Vec<(String, Value)> = Vec::with_capacity(16);
    let mut put = |key: &str, value: Value| attributes.push((key.to_owned(), value));
    put("aep.agent_id", Value::from(e.agent()));
    put("aep.event_id", Value::from(e.id()));
    put("aep.capture", Value::from(e.capture().as_str()));
    put("aep.source", Value::from(e.source()));
    let text = |v: Option<&str>| v.map(Value::from);
    for (key, value) in [
        ("aep.session_id", text(e.session())),
        ("aep.run_id", text(e.run())),
        ("aep.step", text(e.step())),
        ("aep.sequence", e.seq().map(Value::from)),
        ("aep.epoch", e.epoch_attr().map(Value::from)),
        ("aep.causation_id", text(e.cause())),
        ("aep.subject", text(e.subject())),
    ] {
        if let Some(v) = value {
            put(key, v);
        }
    }
    let body = match egress.data() {
        Some(Value::Object(members)) => {
            let mut body = Map::new();
            for (k, v) in members {
                // The OTel-mirror rule (§3.2): `gen_ai.*` members light up in backends as
                // attributes, verbatim.
                if k.starts_with("gen_ai.") {
                    put(k, v.clone());
                } else {
                    body.insert(k.clone(), v.clone());
                }
            }
            (!body.is_empty()).then_some(Value::Object(body))
        }
        other => other.cloned(),
    };
    Ok(LogRecord {
        time_unix_nano,
        event_name: format!("{TYPE_ROOT}{}", e.event_type()),
        severity: e.severity(),
        service_name: options.service_for(e.agent()),
        attributes,
        trace,
        body,
    })
}

/// An event's `time` in nanoseconds since 1970.
pub(crate) fn time_nanos(event: &Event) -> Result<u64, MapError> {
    unix_nanos(event.time())
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| MapError::Time {
            id: event.id().to_owned(),
            time: event.time().to_owned(),
        })
}

/// An event's `traceparent`, read.
pub(crate) fn trace_parent(event: &Event) -> Result<Option<TraceParent>, MapError> {
    event
        .traceparent()
        .map(|tp| {
            TraceParent::parse(tp).ok_or_else(|| MapError::TraceParent {
                id: event.id().to_owned(),
                value: tp.to_owned(),
            })
        })
        .transpose()
}

/// The instrumentation scope of everything this crate exports.
pub(crate) fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: env!("CARGO_PKG_NAME").to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        attributes: Vec::new(),
        dropped_attributes_count: 0,
    }
}

/// A resource naming `service.name`.
pub(crate) fn resource(service_name: &str) -> Resource {
    Resource {
        attributes: vec![KeyValue {
            key: "service.name".to_owned(),
            value: Some(any_value(&Value::from(service_name))),
            key_strindex: 0,
        }],
        dropped_attributes_count: 0,
        entity_refs: Vec::new(),
    }
}

/// Groups items by `service.name`, first seen first, keeping their order within a group.
pub(crate) fn by_service<T>(items: &[T], service: impl Fn(&T) -> &str) -> Vec<(&str, Vec<&T>)> {
    let mut groups: Vec<(&str, Vec<&T>)> = Vec::new();
    for item in items {
        let name = service(item);
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, group)) => group.push(item),
            None => groups.push((name, vec![item])),
        }
    }
    groups
}

/// An OTLP/HTTP logs export request (`POST /v1/logs`): one `ResourceLogs` per
/// `service.name`, first seen first, each with one scope (this crate).
///
/// ```
/// use aep_bridge::otlp::{logs_request, to_log_record};
/// use prost::Message;
/// let a = aep_core::Event::new("1", "agent.idle", "2026-07-03T10:00:00Z", "s", "a");
/// let b = aep_core::Event::new("2", "agent.idle", "2026-07-03T10:00:01Z", "s", "b");
/// let records = [to_log_record(&a, &Default::default())?, to_log_record(&b, &Default::default())?];
/// let request = logs_request(&records);
/// assert_eq!(request.resource_logs.len(), 2);
/// assert!(!request.encode_to_vec().is_empty());
/// # Ok::<(), aep_bridge::MapError>(())
/// ```
pub fn logs_request(records: &[LogRecord]) -> ExportLogsServiceRequest {
    let resource_logs = by_service(records, |r| r.service_name.as_str())
        .into_iter()
        .map(|(service, group)| proto_logs::ResourceLogs {
            resource: Some(resource(service)),
            scope_logs: vec![proto_logs::ScopeLogs {
                scope: Some(scope()),
                log_records: group.into_iter().map(LogRecord::to_proto).collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        })
        .collect();
    ExportLogsServiceRequest { resource_logs }
}

/// A JSON value as an OTLP `AnyValue`: strings, booleans, integers (within `i64`) and
/// other numbers (as doubles), arrays and objects (as key-value lists); `null` is the
/// empty `AnyValue`.
///
/// ```
/// use aep_bridge::otlp::any_value;
/// use aep_bridge::proto::common::v1::any_value::Value;
/// assert_eq!(any_value(&serde_json::json!(142)).value, Some(Value::IntValue(142)));
/// assert_eq!(any_value(&serde_json::json!(0.5)).value, Some(Value::DoubleValue(0.5)));
/// assert_eq!(any_value(&serde_json::Value::Null).value, None);
/// ```
pub fn any_value(value: &Value) -> AnyValue {
    let value = match value {
        Value::Null => None,
        Value::Bool(b) => Some(any_value::Value::BoolValue(*b)),
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => any_value::Value::IntValue(i),
            None => any_value::Value::DoubleValue(n.as_f64().unwrap_or(f64::NAN)),
        }),
        Value::String(s) => Some(any_value::Value::StringValue(s.clone())),
        Value::Array(items) => Some(any_value::Value::ArrayValue(ArrayValue {
            values: items.iter().map(any_value).collect(),
        })),
        Value::Object(members) => Some(any_value::Value::KvlistValue(KeyValueList {
            values: members
                .iter()
                .map(|(k, v)| KeyValue {
                    key: k.clone(),
                    value: Some(any_value(v)),
                    key_strindex: 0,
                })
                .collect(),
        })),
    };
    AnyValue { value }
}

/// Attributes as OTLP key-values.
pub(crate) fn key_values(attributes: &[(String, Value)]) -> Vec<KeyValue> {
    attributes
        .iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: Some(any_value(v)),
            key_strindex: 0,
        })
        .collect()
}

/// Lowercase hex, as the pins write ids.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_severity_table_inverts_on_its_own_numbers() {
        for s in Severity::ALL {
            assert_eq!(severity_from_otlp(severity_to_otlp(s).number), Some(s));
        }
        let buckets: Vec<Option<Severity>> = (0..=25).map(severity_from_otlp).collect();
        assert!(buckets.windows(2).skip(1).take(23).all(|w| w[0] <= w[1]));
        assert_eq!(severity_from_otlp(-1), None);
        assert_eq!(severity_from_otlp(25), None);
    }

    #[test]
    fn a_pre_epoch_time_or_a_bad_traceparent_is_refused() {
        let old = Event::new("1", "agent.idle", "1969-12-31T23:59:59Z", "s", "a");
        assert!(matches!(
            to_log_record(&old, &OtlpOptions::default()),
            Err(MapError::Time { .. })
        ));
        let tp = Event::new("1", "agent.idle", "2026-07-03T10:00:00Z", "s", "a")
            .with_traceparent("00-xyz");
        assert!(matches!(
            to_log_record(&tp, &OtlpOptions::default()),
            Err(MapError::TraceParent { .. })
        ));
    }

    #[test]
    fn capture_none_and_above_the_ceiling_export_no_body() {
        let e = Event::new("1", "tool.failed", "2026-07-03T10:00:00Z", "s", "a")
            .with_data(json!({"gen_ai.usage.input_tokens": 3, "error": {"type": "X"}}));
        let none = e.clone().with_capture(aep_core::Capture::None);
        let r = to_log_record(&none, &OtlpOptions::default()).unwrap();
        assert!(r.body().is_none() && r.attribute("gen_ai.usage.input_tokens").is_none());
        let full = e.with_capture(aep_core::Capture::Full);
        let r = to_log_record(&full, &OtlpOptions::default()).unwrap();
        assert!(r.body().is_none() && r.attribute("gen_ai.usage.input_tokens").is_none());
        let wide = OtlpOptions::new().capture(CaptureLimit::new(aep_core::Capture::Full));
        let r = to_log_record(&full, &wide).unwrap();
        assert_eq!(r.attribute("gen_ai.usage.input_tokens"), Some(&json!(3)));
    }
}
