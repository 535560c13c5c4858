//! # aep-bridge: AEP events in CloudEvents, OpenTelemetry and OCSF
//!
//! The bridges of AEP-0005, on aep-core's [`Event`](aep_core::Event): adopters ingest
//! CloudEvents, OpenTelemetry and OCSF, not AEP.
//!
//! | module | what | spec |
//! |---|---|---|
//! | [`ce`] | CloudEvents 1.0: forward, inverse (bit-identical), structured and binary HTTP modes | AEP-0005 §1-2 |
//! | [`otlp`] | OTLP LogRecords, the severity table both ways, the protobuf export request | §3 |
//! | [`spans`] | sessions, runs and tool calls as OTLP spans with the GenAI conventions (beyond the spec) | §3.1 defers it |
//! | [`ocsf`] | OCSF 1.8.0 records for the security-relevant families | §4 |
//! | [`capture`] | the exporters' `max_capture` | §3.3, §4.6 |
//! | `export` (feature `export`) | OTLP/HTTP exporter, CloudEvents HTTP sink, OCSF JSONL writer: relay consumers | §3.5 |
//!
//! The mappings are pure functions (no IO, no clock): the conformance runner, the
//! exporters and a user's own pipeline call the same ones.
//!
//! ```
//! use aep_bridge::{ce, ocsf, otlp};
//! use aep_core::Event;
//!
//! let event: Event = r#"{"aep":"0.1","id":"01J","type":"session.started","time":"2026-07-03T10:14:00.000Z","source":"aep://host-a/agent/coder","agent":"coder","session":"s1","seq":0,"data":{"gen_ai.request.model":"m-1"}}"#.parse()?;
//!
//! let cloud_event = ce::to_cloudevent(&event)?;
//! assert_eq!(ce::from_cloudevent(&cloud_event)?.event, event);
//!
//! let log = otlp::to_log_record(&event, &otlp::OtlpOptions::default())?;
//! assert_eq!(log.attribute("gen_ai.request.model"), Some(&serde_json::json!("m-1")));
//!
//! let record = ocsf::to_ocsf(&event, &ocsf::OcsfOptions::default())?.unwrap();
//! assert_eq!(record.class_uid(), 3002); // Authentication: Logon
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Where the spec and its pins disagree
//!
//! AEP-0005 §3.3 says an event above `max_capture` is down-leveled; the conformance
//! pins drop all of its `data`. The default ([`CapturePolicy::DropData`]) matches the
//! pins; [`CapturePolicy::Downlevel`] is the text's reading. See [`capture`].
//!
//! ## Features
//!
//! `export` (default): the exporters, on aep-async and reqwest. `rustls` (default) or
//! `native-tls`: TLS for `https://` endpoints. Without `export` the crate is the pure
//! mappings and the OTLP message types.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod attrs;
pub mod capture;
pub mod ce;
pub mod ocsf;
pub mod otlp;
pub mod spans;

#[cfg(feature = "export")]
#[cfg_attr(docsrs, doc(cfg(feature = "export")))]
pub mod export;

/// The OTLP protobuf messages (`opentelemetry-proto`'s prost types: `logs`, `trace`,
/// `common`, `resource`, `collector`), for callers that build or read requests.
///
/// ```
/// use aep_bridge::proto::collector::logs::v1::ExportLogsServiceRequest;
/// assert!(ExportLogsServiceRequest::default().resource_logs.is_empty());
/// ```
pub use opentelemetry_proto::tonic as proto;

pub use capture::{CaptureLimit, CapturePolicy};

/// Why an event could not be projected: what a relay would have refused, arriving from
/// somewhere that did not check.
///
/// ```
/// use aep_bridge::MapError;
/// let e = aep_core::Event::new("01J", "agent.idle", "not a time", "s", "a");
/// let err = aep_bridge::otlp::to_log_record(&e, &Default::default()).unwrap_err();
/// assert!(matches!(err, MapError::Time { .. }));
/// assert!(err.to_string().contains("01J"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// `time` is not an RFC 3339 date-time at or after 1970 (AEP-0001 §5.1), so it has
    /// no `time_unix_nano`.
    #[error("event {id}: time `{time}` is not an RFC 3339 date-time at or after 1970 (AEP-0001 §5.1); the event cannot be exported")]
    Time {
        /// The event's id.
        id: String,
        /// Its `time`.
        time: String,
    },
    /// `traceparent` is not a W3C Trace Context value (AEP-0001 §5.1).
    #[error("event {id}: traceparent `{value}` is not a W3C traceparent (AEP-0001 §5.1); the event cannot be exported")]
    TraceParent {
        /// The event's id.
        id: String,
        /// Its `traceparent`.
        value: String,
    },
}
