//! [`OutcomeEvent`]: an event a target-side state machine asks its driver to emit in the
//! session it serves: the outcome of a command or of a request, cause-linked to it
//! (AEP-0004 §1, §6).

use serde_json::Value;

/// An event to emit through the session's emitter: its type, its payload, its `subject`
/// and its `cause`. The attention loop (`attention.answered`, `attention.resolved`,
/// `attention.timeout`) and steering (`x.{vendor}.instruction.delivered`, `.dropped`)
/// hand their events to their driver this way; the driver stamps the envelope.
///
/// ```
/// use aep_core::control::OutcomeEvent;
/// use serde_json::json;
/// let e = OutcomeEvent::new("attention.resolved", json!({"resolution": "answered"}), "01JCMD")
///     .with_subject("01JREQ");
/// assert_eq!((e.event_type(), e.cause(), e.subject()), ("attention.resolved", "01JCMD", Some("01JREQ")));
/// assert_eq!(e.data()["resolution"], "answered");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeEvent {
    event_type: String,
    data: Value,
    subject: Option<String>,
    cause: String,
}

impl OutcomeEvent {
    /// An event of `event_type` with `data`, caused by the event `cause`.
    pub fn new(event_type: impl Into<String>, data: Value, cause: impl Into<String>) -> Self {
        OutcomeEvent {
            event_type: event_type.into(),
            data,
            subject: None,
            cause: cause.into(),
        }
    }

    crate::setters! {
        /// The same with a `subject`.
        #[must_use]
        pub fn with_subject(subject: impl Into<String>) => subject = Some(subject.into());
    }

    /// The event type.
    pub fn event_type(&self) -> &str {
        &self.event_type
    }

    /// The payload.
    pub fn data(&self) -> &Value {
        &self.data
    }

    /// The `subject`, when the event has one.
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The `cause`: the id of the command or request this event follows from.
    pub fn cause(&self) -> &str {
        &self.cause
    }
}
