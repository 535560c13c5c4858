//! The lifecycle messages: `subscription.requested`, `.created`, `.rejected`,
//! `.cancelled`, `.expired`, each `{"type": …, "payload": {…}}`.

use std::fmt;

use serde_json::{json, Map, Value};

use super::filter::{SubscriptionError, SubscriptionFilter};
use super::serde_via_value;

/// The error code of every rejection (the document's `subscription_rejected`).
pub const REJECTED_CODE: &str = "subscription_rejected";

/// One lifecycle message of the subscription model.
///
/// ```
/// use aep_core::subscription::LifecycleMessage;
/// let text = r#"{"type":"subscription.cancelled","payload":{"subscription_id":"sub_0001"}}"#;
/// let msg: LifecycleMessage = text.parse()?;
/// assert!(matches!(&msg, LifecycleMessage::Cancelled(c) if c.subscription_id() == "sub_0001"));
/// assert_eq!(msg.to_json(), text);
/// # Ok::<(), aep_core::subscription::MessageError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LifecycleMessage {
    /// Consumer -> producer: please subscribe with this filter.
    Requested(SubscriptionRequested),
    /// Producer -> consumer: subscribed.
    Created(SubscriptionCreated),
    /// Producer -> consumer: refused, with why.
    Rejected(SubscriptionRejected),
    /// Consumer -> producer: stop; producer -> consumer: stopped.
    Cancelled(SubscriptionCancelled),
    /// Producer -> consumer: the subscription reached its expiry.
    Expired(SubscriptionExpired),
}

/// A lifecycle message that could not be read; names the field at fault.
///
/// ```
/// use aep_core::subscription::LifecycleMessage;
/// let err = LifecycleMessage::from_json(r#"{"type":"subscription.cancelled","payload":{}}"#).unwrap_err();
/// assert_eq!(err.to_string(), "`payload.subscription_id` is required");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// Not JSON.
    #[error("lifecycle message is not valid JSON: {0}")]
    Syntax(String),
    /// Not a JSON object, or `payload` is not one where an object is required.
    #[error("`{0}` must be a JSON object")]
    NotAnObject(&'static str),
    /// A required field is missing.
    #[error("`{0}` is required")]
    Missing(&'static str),
    /// A field of the wrong JSON type.
    #[error("`{field}` must be {expected}")]
    WrongType {
        /// The field, as a path (`payload.subscription_id`).
        field: &'static str,
        /// What it accepts.
        expected: &'static str,
    },
    /// A `type` that is not one of the five lifecycle messages.
    #[error("`type` `{0}` is not a subscription lifecycle message")]
    UnknownType(String),
    /// A `filter` that is not a valid subscription filter.
    #[error("`payload.filter`: {0}")]
    Filter(SubscriptionError),
}

/// `subscription.requested`: the payload is the filter, kept as sent so that a
/// malformed one can be answered with a rejection naming its field.
///
/// ```
/// use aep_core::subscription::{LifecycleMessage, SubscriptionFilter, SubscriptionRequested};
/// let filter = SubscriptionFilter::new().with_types("memory.*")?;
/// let msg = LifecycleMessage::from(SubscriptionRequested::new(&filter));
/// assert_eq!(msg.to_json(), r#"{"type":"subscription.requested","payload":{"types":"memory.*"}}"#);
/// # Ok::<(), aep_core::subscription::SubscriptionError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionRequested {
    filter: Value,
}

impl SubscriptionRequested {
    /// A request for `filter`.
    pub fn new(filter: &SubscriptionFilter) -> Self {
        SubscriptionRequested {
            filter: filter.to_value(),
        }
    }

    /// A request carrying any JSON payload (what arrived on the wire).
    pub fn from_payload(payload: Value) -> Self {
        SubscriptionRequested { filter: payload }
    }

    /// The payload as sent.
    pub fn payload(&self) -> &Value {
        &self.filter
    }

    /// The payload read as a filter.
    pub fn filter(&self) -> Result<SubscriptionFilter, SubscriptionError> {
        SubscriptionFilter::from_value(&self.filter)
    }
}

/// `subscription.created`: the producer's confirmation.
///
/// ```
/// use aep_core::subscription::{SubscriptionCreated, SubscriptionFilter};
/// let created = SubscriptionCreated::new("sub_0001", SubscriptionFilter::new().with_types("memory.*")?, "2026-07-09T10:00:00Z", None);
/// assert_eq!(created.expires_at(), None);
/// # Ok::<(), aep_core::subscription::SubscriptionError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionCreated {
    subscription_id: String,
    /// Boxed to keep [`LifecycleMessage`] variants of similar size.
    filter: Box<SubscriptionFilter>,
    /// Outer `None`: absent; inner `None`: `null`.
    created_at: Option<Option<String>>,
    expires_at: Option<Option<String>>,
}

impl SubscriptionCreated {
    /// A confirmation; `expires_at` is written as `null` when there is no expiry.
    pub fn new(
        subscription_id: impl Into<String>,
        filter: SubscriptionFilter,
        created_at: impl Into<String>,
        expires_at: Option<String>,
    ) -> Self {
        SubscriptionCreated {
            subscription_id: subscription_id.into(),
            filter: Box::new(filter),
            created_at: Some(Some(created_at.into())),
            expires_at: Some(expires_at),
        }
    }
    /// The producer-assigned id.
    pub fn subscription_id(&self) -> &str {
        &self.subscription_id
    }
    /// The filter as accepted.
    pub fn filter(&self) -> &SubscriptionFilter {
        &self.filter
    }
    /// When it was created (RFC 3339).
    pub fn created_at(&self) -> Option<&str> {
        self.created_at.as_ref().and_then(Option::as_deref)
    }
    /// When it expires (RFC 3339), `None` for never.
    pub fn expires_at(&self) -> Option<&str> {
        self.expires_at.as_ref().and_then(Option::as_deref)
    }
}

/// `subscription.rejected`: `error.code` is `subscription_rejected` and the message names
/// the field at fault, or, for a producer's resource limit, `limit-exceeded` and the
/// message names the limit.
///
/// ```
/// use aep_core::subscription::{SubscriptionError, SubscriptionRejected};
/// let r = SubscriptionRejected::new(Some("sub_0001".into()), serde_json::json!({}), &SubscriptionError::NoCriterion);
/// assert_eq!(r.code(), "subscription_rejected");
/// assert_eq!(r.message(), "subscription must include at least one filter criterion");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionRejected {
    subscription_id: Option<String>,
    /// Boxed: a rejection travels in `Err`, which should stay small.
    filter: Box<Value>,
    message: String,
    code: String,
    retryable: bool,
}

impl SubscriptionRejected {
    /// A rejection of the request whose payload was `filter`, for `reason`.
    pub fn new(subscription_id: Option<String>, filter: Value, reason: &SubscriptionError) -> Self {
        SubscriptionRejected {
            subscription_id,
            filter: Box::new(filter),
            message: reason.to_string(),
            code: REJECTED_CODE.to_owned(),
            retryable: reason.retryable(),
        }
    }
    /// A refusal for a resource limit of the producer rather than for anything in the
    /// request: `error.code` is AEP-0003 §6.5's `limit-exceeded`, the message names the
    /// limit, and it is retryable (the limit may free up). No id is assigned.
    ///
    /// ```
    /// use aep_core::subscription::SubscriptionRejected;
    /// let filter = serde_json::json!({ "types": ["tool.*"] });
    /// let r = SubscriptionRejected::limit_exceeded(filter, "100 subscriptions on this connection");
    /// assert_eq!((r.code(), r.retryable()), ("limit-exceeded", true));
    /// assert_eq!(r.subscription_id(), None);
    /// ```
    pub fn limit_exceeded(filter: Value, detail: impl Into<String>) -> Self {
        SubscriptionRejected {
            subscription_id: None,
            filter: Box::new(filter),
            message: detail.into(),
            code: crate::frame::ErrorCode::LimitExceeded.as_str().to_owned(),
            retryable: true,
        }
    }
    /// The id the producer assigned to the request, when it did.
    pub fn subscription_id(&self) -> Option<&str> {
        self.subscription_id.as_deref()
    }
    /// The filter as requested.
    pub fn filter(&self) -> &Value {
        &self.filter
    }
    /// `error.code` (`subscription_rejected`, or `limit-exceeded` for
    /// [`SubscriptionRejected::limit_exceeded`]).
    pub fn code(&self) -> &str {
        &self.code
    }
    /// `error.message`: why, naming the field.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// `error.retryable`.
    pub fn retryable(&self) -> bool {
        self.retryable
    }
}

/// `subscription.cancelled`: a consumer's request, and the producer's confirmation.
///
/// ```
/// let c = aep_core::subscription::SubscriptionCancelled::new("sub_0001");
/// assert_eq!(c.subscription_id(), "sub_0001");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionCancelled {
    subscription_id: String,
}

impl SubscriptionCancelled {
    /// A cancellation of `subscription_id`.
    pub fn new(subscription_id: impl Into<String>) -> Self {
        SubscriptionCancelled {
            subscription_id: subscription_id.into(),
        }
    }
    /// The subscription.
    pub fn subscription_id(&self) -> &str {
        &self.subscription_id
    }
}

/// `subscription.expired`: same payload as a cancellation, initiated by the producer.
///
/// ```
/// let e = aep_core::subscription::SubscriptionExpired::new("sub_0001");
/// assert_eq!(e.subscription_id(), "sub_0001");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionExpired {
    subscription_id: String,
}

impl SubscriptionExpired {
    /// An expiry of `subscription_id`.
    pub fn new(subscription_id: impl Into<String>) -> Self {
        SubscriptionExpired {
            subscription_id: subscription_id.into(),
        }
    }
    /// The subscription.
    pub fn subscription_id(&self) -> &str {
        &self.subscription_id
    }
}

fn id_field(payload: &Map<String, Value>) -> Result<String, MessageError> {
    match payload.get("subscription_id") {
        None => Err(MessageError::Missing("payload.subscription_id")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(MessageError::WrongType {
            field: "payload.subscription_id",
            expected: "a string",
        }),
    }
}

fn time_field(
    payload: &Map<String, Value>,
    key: &str,
    field: &'static str,
) -> Result<Option<Option<String>>, MessageError> {
    match payload.get(key) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) => Ok(Some(Some(s.clone()))),
        Some(_) => Err(MessageError::WrongType {
            field,
            expected: "an RFC 3339 string or null",
        }),
    }
}

fn opt_time(v: &Option<String>) -> Value {
    v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()))
}

impl LifecycleMessage {
    /// The message's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            LifecycleMessage::Requested(_) => "subscription.requested",
            LifecycleMessage::Created(_) => "subscription.created",
            LifecycleMessage::Rejected(_) => "subscription.rejected",
            LifecycleMessage::Cancelled(_) => "subscription.cancelled",
            LifecycleMessage::Expired(_) => "subscription.expired",
        }
    }

    /// Whether a JSON object's `type` names a lifecycle message (so a connection can
    /// tell these apart from AEP events and frames before parsing).
    pub fn is_lifecycle_type(ty: &str) -> bool {
        matches!(
            ty,
            "subscription.requested"
                | "subscription.created"
                | "subscription.rejected"
                | "subscription.cancelled"
                | "subscription.expired"
        )
    }

    /// Whether `ty` names a message a consumer sends (`subscription.requested`,
    /// `subscription.cancelled`): a producer answers each, even a malformed one, while
    /// the messages only a producer sends are ignored when they reach one.
    ///
    /// ```
    /// use aep_core::subscription::LifecycleMessage;
    /// assert!(LifecycleMessage::is_consumer_type("subscription.cancelled"));
    /// assert!(!LifecycleMessage::is_consumer_type("subscription.expired"));
    /// ```
    pub fn is_consumer_type(ty: &str) -> bool {
        matches!(ty, "subscription.requested" | "subscription.cancelled")
    }

    /// Reads a message from a JSON value.
    pub fn from_value(value: &Value) -> Result<LifecycleMessage, MessageError> {
        let obj = value
            .as_object()
            .ok_or(MessageError::NotAnObject("message"))?;
        let ty = match obj.get("type") {
            None => return Err(MessageError::Missing("type")),
            Some(Value::String(s)) => s.as_str(),
            Some(_) => {
                return Err(MessageError::WrongType {
                    field: "type",
                    expected: "a string",
                })
            }
        };
        if !LifecycleMessage::is_lifecycle_type(ty) {
            return Err(MessageError::UnknownType(ty.to_owned()));
        }
        if ty == "subscription.requested" {
            // Whatever the payload, a request gets an answer: a missing or malformed
            // filter becomes a rejection naming it, not a parse error.
            let payload = obj.get("payload").cloned().unwrap_or(Value::Null);
            return Ok(LifecycleMessage::Requested(
                SubscriptionRequested::from_payload(payload),
            ));
        }
        let payload = obj.get("payload").ok_or(MessageError::Missing("payload"))?;
        let p = payload
            .as_object()
            .ok_or(MessageError::NotAnObject("payload"))?;
        Ok(match ty {
            "subscription.created" => {
                let filter = p
                    .get("filter")
                    .ok_or(MessageError::Missing("payload.filter"))?;
                LifecycleMessage::Created(SubscriptionCreated {
                    subscription_id: id_field(p)?,
                    filter: Box::new(
                        SubscriptionFilter::from_value(filter).map_err(MessageError::Filter)?,
                    ),
                    created_at: time_field(p, "created_at", "payload.created_at")?,
                    expires_at: time_field(p, "expires_at", "payload.expires_at")?,
                })
            }
            "subscription.rejected" => {
                let subscription_id = match p.get("subscription_id") {
                    None | Some(Value::Null) => None,
                    Some(_) => Some(id_field(p)?),
                };
                let error = p
                    .get("error")
                    .ok_or(MessageError::Missing("payload.error"))?
                    .as_object()
                    .ok_or(MessageError::NotAnObject("payload.error"))?;
                let text = |key: &str, field: &'static str| match error.get(key) {
                    None => Err(MessageError::Missing(field)),
                    Some(Value::String(s)) => Ok(s.clone()),
                    Some(_) => Err(MessageError::WrongType {
                        field,
                        expected: "a string",
                    }),
                };
                LifecycleMessage::Rejected(SubscriptionRejected {
                    subscription_id,
                    filter: Box::new(
                        p.get("filter")
                            .cloned()
                            .unwrap_or(Value::Object(Map::new())),
                    ),
                    code: text("code", "payload.error.code")?,
                    message: text("message", "payload.error.message")?,
                    retryable: match error.get("retryable") {
                        None => false,
                        Some(Value::Bool(b)) => *b,
                        Some(_) => {
                            return Err(MessageError::WrongType {
                                field: "payload.error.retryable",
                                expected: "a boolean",
                            })
                        }
                    },
                })
            }
            "subscription.cancelled" => {
                LifecycleMessage::Cancelled(SubscriptionCancelled::new(id_field(p)?))
            }
            _ => LifecycleMessage::Expired(SubscriptionExpired::new(id_field(p)?)),
        })
    }

    /// Reads a message from JSON text.
    pub fn from_json(text: &str) -> Result<LifecycleMessage, MessageError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| MessageError::Syntax(e.to_string()))?;
        LifecycleMessage::from_value(&value)
    }

    /// The message as a JSON value, fields in the document's order.
    pub fn to_value(&self) -> Value {
        let payload = match self {
            LifecycleMessage::Requested(r) => r.filter.clone(),
            LifecycleMessage::Created(c) => {
                let mut p = Map::new();
                p.insert("subscription_id".into(), c.subscription_id.clone().into());
                p.insert("filter".into(), c.filter.to_value());
                if let Some(t) = &c.created_at {
                    p.insert("created_at".into(), opt_time(t));
                }
                if let Some(t) = &c.expires_at {
                    p.insert("expires_at".into(), opt_time(t));
                }
                Value::Object(p)
            }
            LifecycleMessage::Rejected(r) => {
                let mut p = Map::new();
                if let Some(id) = &r.subscription_id {
                    p.insert("subscription_id".into(), id.clone().into());
                }
                p.insert("filter".into(), (*r.filter).clone());
                p.insert(
                    "error".into(),
                    json!({"code": r.code, "message": r.message, "retryable": r.retryable}),
                );
                Value::Object(p)
            }
            LifecycleMessage::Cancelled(c) => json!({"subscription_id": c.subscription_id}),
            LifecycleMessage::Expired(e) => json!({"subscription_id": e.subscription_id}),
        };
        json!({"type": self.type_name(), "payload": payload})
    }

    /// The compact JSON text.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

impl fmt::Display for LifecycleMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl std::str::FromStr for LifecycleMessage {
    type Err = MessageError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LifecycleMessage::from_json(s)
    }
}

serde_via_value!(LifecycleMessage);

/// Each message converts into its variant.
macro_rules! into_variant {
    ($($variant:ident($t:ty)),+ $(,)?) => {$(
        impl From<$t> for LifecycleMessage {
            fn from(m: $t) -> Self {
                LifecycleMessage::$variant(m)
            }
        }
    )+};
}

into_variant!(
    Created(SubscriptionCreated),
    Rejected(SubscriptionRejected),
    Cancelled(SubscriptionCancelled),
    Expired(SubscriptionExpired),
    Requested(SubscriptionRequested),
);
