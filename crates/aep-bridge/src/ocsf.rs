//! The OCSF projection (AEP-0005 §4): AEP's security-relevant families as OCSF 1.8.0
//! records, for security-analytics backends.
//!
//! Three families project: sessions (Authentication 3002), tool activity (Process
//! Activity 1007) and human-attention outcomes (Detection Finding 2004); every other
//! event produces no record, by scope (§4.1). Each record is built from the envelope and
//! the payload that survives the capture ceiling, and nothing else (§4.3); a disposition
//! is claimed only where the AEP wire asserts the outcome (§4.5); `unmapped.aep` carries
//! the whole envelope, so the AEP identity is always recoverable.
//!
//! ```
//! use aep_bridge::ocsf::{to_ocsf, OcsfOptions};
//! use aep_core::Event;
//!
//! let denied: Event = r#"{"aep":"0.1","id":"01J","type":"tool.denied","subject":"Bash","time":"2026-07-03T10:15:12.500Z","source":"aep://host-a/agent/a","agent":"a","severity":"warning","data":{"tool":{"name":"Bash","call_id":"t_92"},"by":"policy"}}"#.parse()?;
//! let record = to_ocsf(&denied, &OcsfOptions::default())?.expect("tool.denied projects");
//! assert_eq!(record.class_uid(), 1007);
//! assert_eq!(record.type_uid(), 100701);
//! assert_eq!(record.get("disposition_id"), Some(&serde_json::json!(2))); // Blocked
//! assert_eq!(record.get("process"), Some(&serde_json::json!({"name": "Bash", "uid": "t_92"})));
//!
//! let progress = aep_core::Event::new("2", "progress.status", "2026-07-03T10:00:00Z", "s", "a");
//! assert!(to_ocsf(&progress, &OcsfOptions::default())?.is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use aep_core::payload::truthy;
// §4.3 `device.hostname`: the authority of the `source` URI, whatever its scheme.
use aep_core::source::authority;
use aep_core::{Event, Severity};
use serde_json::{json, Map, Value};

use crate::otlp::time_nanos;
use crate::{CaptureLimit, MapError};

/// The OCSF version the projection targets (AEP-0005 §4.1; re-checked per AEP release).
///
/// ```
/// assert_eq!(aep_bridge::ocsf::OCSF_VERSION, "1.8.0");
/// ```
pub const OCSF_VERSION: &str = "1.8.0";

/// One row of the §4.2 class table.
///
/// ```
/// use aep_bridge::ocsf::class_of;
/// let row = class_of("attention.timeout").unwrap();
/// assert_eq!((row.class_uid, row.activity_id, row.disposition_id), (2004, 3, Some(16)));
/// assert!(class_of("progress.status").is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClassRow {
    /// `class_uid`.
    pub class_uid: u32,
    /// `category_uid`: the class's OCSF category (3 IAM, 1 System Activity, 2 Findings).
    pub category_uid: u32,
    /// `activity_id`.
    pub activity_id: u32,
    /// `status_id`, where the table fixes one.
    pub status_id: Option<u32>,
    /// `disposition_id`, where the table fixes one (§4.5: only where the wire asserts
    /// the outcome).
    pub disposition_id: Option<u32>,
}

impl ClassRow {
    /// `type_uid := class_uid * 100 + activity_id` (§4.2).
    ///
    /// ```
    /// assert_eq!(aep_bridge::ocsf::class_of("session.ended").unwrap().type_uid(), 300202);
    /// ```
    pub fn type_uid(&self) -> u32 {
        self.class_uid * 100 + self.activity_id
    }
}

const fn row(
    class_uid: u32,
    category_uid: u32,
    activity_id: u32,
    status_id: Option<u32>,
    disposition_id: Option<u32>,
) -> ClassRow {
    ClassRow {
        class_uid,
        category_uid,
        activity_id,
        status_id,
        disposition_id,
    }
}

/// The §4.2 class table row of an AEP type; `None` for every type outside the three
/// families (which project to no record, §4.1). `attention.resolved`'s disposition
/// depends on its payload (§4.5) and is not in the row.
///
/// ```
/// assert_eq!(aep_bridge::ocsf::class_of("session.started").unwrap().class_uid, 3002);
/// assert!(aep_bridge::ocsf::class_of("x.acme.session.started").is_none());
/// ```
pub fn class_of(event_type: &str) -> Option<ClassRow> {
    Some(match event_type {
        "session.started" => row(3002, 3, 1, Some(1), None),
        "session.ended" => row(3002, 3, 2, Some(1), None),
        "tool.requested" => row(1007, 1, 1, None, None),
        "tool.completed" => row(1007, 1, 2, Some(1), None),
        "tool.failed" => row(1007, 1, 2, Some(2), None),
        "tool.denied" => row(1007, 1, 1, Some(2), Some(2)),
        "attention.requested" => row(2004, 2, 1, Some(1), None),
        "attention.answered" => row(2004, 2, 2, Some(2), None),
        "attention.resolved" => row(2004, 2, 3, Some(4), None),
        "attention.timeout" => row(2004, 2, 3, None, Some(16)),
        _ => return None,
    })
}

/// The §4.4 severity table: an AEP severity as OCSF `severity_id`.
///
/// ```
/// use aep_bridge::ocsf::severity_id;
/// use aep_core::Severity;
/// assert_eq!(severity_id(Severity::Debug), 1);
/// assert_eq!(severity_id(Severity::Critical), 5);
/// ```
pub fn severity_id(severity: Severity) -> u32 {
    match severity {
        Severity::Debug | Severity::Info => 1,
        Severity::Notice => 2,
        Severity::Warning => 3,
        Severity::Error => 4,
        Severity::Critical => 5,
    }
}

/// Options of the OCSF projection. Default: `max_capture` `metadata` with
/// [`crate::CapturePolicy::DropData`] (§4.6).
///
/// ```
/// let opts = aep_bridge::ocsf::OcsfOptions::new().capture(aep_bridge::CaptureLimit::new(aep_core::Capture::Redacted));
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OcsfOptions {
    capture: CaptureLimit,
}

impl OcsfOptions {
    /// The defaults.
    ///
    /// ```
    /// assert_eq!(aep_bridge::ocsf::OcsfOptions::new(), Default::default());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    aep_core::setters! {
        /// The capture ceiling (§4.6).
        ///
        /// ```
        /// let o = aep_bridge::ocsf::OcsfOptions::new().capture(aep_bridge::CaptureLimit::default());
        /// # let _ = o;
        /// ```
        pub fn capture(limit: CaptureLimit) => capture = limit;
    }
}

/// One OCSF record: a JSON object in the member order of the protocol's pins.
///
/// ```
/// use aep_bridge::ocsf::{to_ocsf, OcsfOptions};
/// let e = aep_core::Event::new("1", "session.started", "2026-07-03T10:14:00.000Z", "aep://h/agent/a", "a").with_session("s1");
/// let r = to_ocsf(&e, &OcsfOptions::default())?.unwrap();
/// assert_eq!(r.get("session"), Some(&serde_json::json!({"uid": "s1"})));
/// assert!(r.to_json().starts_with(r#"{"class_uid":3002,"category_uid":3,"activity_id":1,"type_uid":300201,"#));
/// # Ok::<(), aep_bridge::MapError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct OcsfRecord(Map<String, Value>);

impl OcsfRecord {
    /// `class_uid`.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "session.ended", "2026-07-03T10:14:00Z", "s", "a").with_session("s1");
    /// # let r = aep_bridge::ocsf::to_ocsf(&e, &Default::default())?.unwrap();
    /// assert_eq!(r.class_uid(), 3002);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn class_uid(&self) -> u64 {
        self.number("class_uid")
    }

    /// `activity_id`.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "session.ended", "2026-07-03T10:14:00Z", "s", "a").with_session("s1");
    /// # let r = aep_bridge::ocsf::to_ocsf(&e, &Default::default())?.unwrap();
    /// assert_eq!(r.activity_id(), 2);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn activity_id(&self) -> u64 {
        self.number("activity_id")
    }

    /// `type_uid`.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "session.ended", "2026-07-03T10:14:00Z", "s", "a").with_session("s1");
    /// # let r = aep_bridge::ocsf::to_ocsf(&e, &Default::default())?.unwrap();
    /// assert_eq!(r.type_uid(), 300202);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn type_uid(&self) -> u64 {
        self.number("type_uid")
    }

    /// One top-level member.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "session.ended", "2026-07-03T10:14:00Z", "s", "a").with_session("s1");
    /// # let r = aep_bridge::ocsf::to_ocsf(&e, &Default::default())?.unwrap();
    /// assert_eq!(r.get("message"), Some(&serde_json::json!("session.ended")));
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The record as a JSON object.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "session.ended", "2026-07-03T10:14:00Z", "s", "a").with_session("s1");
    /// # let r = aep_bridge::ocsf::to_ocsf(&e, &Default::default())?.unwrap();
    /// assert_eq!(r.as_map()["severity_id"], 1);
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The record as a JSON value.
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "session.ended", "2026-07-03T10:14:00Z", "s", "a").with_session("s1");
    /// # let r = aep_bridge::ocsf::to_ocsf(&e, &Default::default())?.unwrap();
    /// assert!(r.into_value().is_object());
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }

    /// One compact JSON line (without the line break).
    ///
    /// ```
    /// # let e = aep_core::Event::new("1", "session.ended", "2026-07-03T10:14:00Z", "s", "a").with_session("s1");
    /// # let r = aep_bridge::ocsf::to_ocsf(&e, &Default::default())?.unwrap();
    /// assert!(!r.to_json().contains('\n'));
    /// # Ok::<(), aep_bridge::MapError>(())
    /// ```
    pub fn to_json(&self) -> String {
        // A map of JSON values always serializes.
        serde_json::to_string(&self.0).unwrap_or_default()
    }

    fn number(&self, key: &str) -> u64 {
        self.0.get(key).and_then(Value::as_u64).unwrap_or_default()
    }
}

/// Projects one event onto its OCSF class (AEP-0005 §4.2-§4.6); `Ok(None)` for an
/// event outside the three families.
///
/// Fails for a projected event whose `time` is not an RFC 3339 date-time at or after
/// 1970 ([`MapError::Time`]).
///
/// ```
/// use aep_bridge::ocsf::{to_ocsf, OcsfOptions};
/// let answered = aep_core::Event::new("2", "attention.resolved", "2026-07-03T10:15:09.250Z", "aep://h/agent/a", "a")
///     .with_subject("01REQ")
///     .with_data(serde_json::json!({"resolution": "answered"}));
/// let r = to_ocsf(&answered, &OcsfOptions::default())?.unwrap();
/// assert_eq!(r.get("disposition_id"), None); // §4.5: the wire asserts no outcome
/// assert_eq!(r.get("finding_info"), Some(&serde_json::json!({"uid": "01REQ", "title": "attention.resolved"})));
/// # Ok::<(), aep_bridge::MapError>(())
/// ```
pub fn to_ocsf(event: &Event, options: &OcsfOptions) -> Result<Option<OcsfRecord>, MapError> {
    let Some(row) = class_of(event.event_type()) else {
        return Ok(None);
    };
    let egress = options.capture.apply(event);
    let e = egress.event();
    let data = egress.members();
    let millis = time_nanos(e)? / 1_000_000;
    let mut metadata = Map::new();
    metadata.insert("version".to_owned(), Value::from(OCSF_VERSION));
    metadata.insert("uid".to_owned(), Value::from(e.id()));
    metadata.insert("original_time".to_owned(), Value::from(e.time()));
    metadata.insert("product".to_owned(), json!({"name": e.agent()}));
    if let Some(cause) = e.cause() {
        metadata.insert("correlation_uid".to_owned(), Value::from(cause));
    }
    let mut envelope = e.to_value();
    if let Some(map) = envelope.as_object_mut() {
        map.remove("data");
    }
    let mut r = Map::new();
    r.insert("class_uid".to_owned(), Value::from(row.class_uid));
    r.insert("category_uid".to_owned(), Value::from(row.category_uid));
    r.insert("activity_id".to_owned(), Value::from(row.activity_id));
    r.insert("type_uid".to_owned(), Value::from(row.type_uid()));
    r.insert("time".to_owned(), Value::from(millis));
    r.insert(
        "severity_id".to_owned(),
        Value::from(severity_id(e.severity())),
    );
    r.insert("message".to_owned(), Value::from(e.event_type()));
    r.insert("metadata".to_owned(), Value::Null);
    r.insert("unmapped".to_owned(), json!({ "aep": envelope }));
    if let Some(status) = row.status_id {
        r.insert("status_id".to_owned(), Value::from(status));
    }
    let mut disposition = row.disposition_id;
    match row.class_uid {
        3002 => {
            r.insert("user".to_owned(), json!({"name": e.agent()}));
            r.insert("session".to_owned(), json!({"uid": e.session()}));
        }
        1007 => {
            r.insert("actor".to_owned(), json!({"app_name": e.agent()}));
            let device = match authority(e.source()) {
                Some(host) => json!({"type_id": 0, "hostname": host}),
                None => json!({"type_id": 0, "name": e.source()}),
            };
            r.insert("device".to_owned(), device);
            let mut process = Map::new();
            process.insert("name".to_owned(), Value::from(e.subject()));
            // The tool call id when the surviving payload carries it; never invented to
            // satisfy OCSF's pid/uid/cpid constraint (§4.3).
            let call_id = data
                .and_then(|d| d.get("tool"))
                .and_then(|t| t.get("call_id"))
                .filter(|id| truthy(id));
            if let Some(id) = call_id {
                process.insert("uid".to_owned(), id.clone());
            }
            r.insert("process".to_owned(), Value::Object(process));
        }
        _ => {
            // One finding per attention lifecycle: the request's id, its own on the
            // request, the `subject` on every later event (§4.2).
            let uid = if e.event_type() == "attention.requested" {
                Some(e.id())
            } else {
                e.subject()
            };
            r.insert(
                "finding_info".to_owned(),
                json!({"uid": uid, "title": e.event_type()}),
            );
            let dismissed = data
                .and_then(|d| d.get("resolution"))
                .is_some_and(|v| v == "dismissed");
            if e.event_type() == "attention.resolved" && dismissed {
                disposition = Some(16);
            }
        }
    }
    if let Some(d) = disposition {
        r.insert("disposition_id".to_owned(), Value::from(d));
        // The disposition attribute rides OCSF's security_control profile (§4.3).
        metadata.insert("profiles".to_owned(), json!(["security_control"]));
    }
    r.insert("metadata".to_owned(), Value::Object(metadata));
    if let (Some(d), Some(Value::Object(unmapped))) = (data, r.get_mut("unmapped")) {
        unmapped.insert("data".to_owned(), Value::Object(d.clone()));
    }
    Ok(Some(OcsfRecord(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_id_that_is_not_there_in_substance_is_no_process_uid() {
        // §4.3: the uid is the payload's call id, never an empty or zero stand-in.
        let denied = |call_id: Value| {
            let e = Event::new(
                "01J",
                "tool.denied",
                "2026-07-03T10:15:12.500Z",
                "aep://h/agent/a",
                "a",
            )
            .with_subject("Bash")
            .with_data(json!({"tool": {"name": "Bash", "call_id": call_id}, "by": "policy"}));
            let record = to_ocsf(&e, &OcsfOptions::default()).unwrap().unwrap();
            record.get("process").cloned()
        };
        for absent in [json!(""), json!(0), json!(null), json!(false)] {
            assert_eq!(
                denied(absent.clone()),
                Some(json!({"name": "Bash"})),
                "{absent}"
            );
        }
        assert_eq!(
            denied(json!("t_92")),
            Some(json!({"name": "Bash", "uid": "t_92"}))
        );
    }
}
