//! The subscription filter: fields, JSON shape, validation, matching, lowering.

use std::fmt;

use serde_json::{Map, Value};

use super::delivery::DeliveryMode;
use super::pattern::{PatternError, TypePattern};
use super::serde_via_value;
use super::{CONVERSATION_ATTR, TARGET_ATTR, TASK_ATTR, TOPIC_ATTR};
use crate::event::Event;
use crate::filter::{extension_string, Filter};
use crate::names::{self, display_as_str};

/// A field of the subscription filter, in the document's order.
///
/// ```
/// use aep_core::subscription::Field;
/// assert_eq!(Field::SessionId.as_str(), "session_id");
/// assert_eq!(Field::SessionId.envelope_attribute(), Some("session"));
/// assert_eq!(Field::Target.envelope_attribute(), Some("aeptarget"));
/// assert_eq!(Field::FromCursor.envelope_attribute(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// `types`: event type patterns.
    Types,
    /// `source`: event source identity.
    Source,
    /// `target`: event target identity.
    Target,
    /// `topic`: routing topic.
    Topic,
    /// `session_id`: session scope.
    SessionId,
    /// `conversation_id`: conversation scope.
    ConversationId,
    /// `task_id`: task scope.
    TaskId,
    /// `from_cursor`: replay starting point.
    FromCursor,
    /// `delivery_mode`: requested delivery guarantee.
    DeliveryMode,
}

impl Field {
    /// Every field, in the document's order.
    pub const ALL: &'static [Field] = &[
        Field::Types,
        Field::Source,
        Field::Target,
        Field::Topic,
        Field::SessionId,
        Field::ConversationId,
        Field::TaskId,
        Field::FromCursor,
        Field::DeliveryMode,
    ];

    /// The JSON name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Field::Types => "types",
            Field::Source => "source",
            Field::Target => "target",
            Field::Topic => "topic",
            Field::SessionId => "session_id",
            Field::ConversationId => "conversation_id",
            Field::TaskId => "task_id",
            Field::FromCursor => "from_cursor",
            Field::DeliveryMode => "delivery_mode",
        }
    }

    /// The AEP envelope attribute a matching field reads: `type`, `source`, `session`,
    /// or the extension attributes [`TARGET_ATTR`], [`TOPIC_ATTR`],
    /// [`CONVERSATION_ATTR`], [`TASK_ATTR`]. `None` for `from_cursor` and
    /// `delivery_mode`, which do not match events.
    pub const fn envelope_attribute(self) -> Option<&'static str> {
        match self {
            Field::Types => Some("type"),
            Field::Source => Some("source"),
            Field::Target => Some(TARGET_ATTR),
            Field::Topic => Some(TOPIC_ATTR),
            Field::SessionId => Some("session"),
            Field::ConversationId => Some(CONVERSATION_ATTR),
            Field::TaskId => Some(TASK_ATTR),
            Field::FromCursor | Field::DeliveryMode => None,
        }
    }

    /// The string-valued fields that match an exact envelope value: those of
    /// [`Field::ALL`] from `source` to `task_id`, in the slots of `SubscriptionFilter::exact`.
    const EXACT: &'static [Field] = Field::ALL.split_at(7).0.split_at(1).1;
}

// `SubscriptionFilter::exact` has a slot for each of them: a field added to `ALL`
// between `source` and `task_id` must move these bounds and that array's length
const _: () = assert!(matches!(
    Field::EXACT,
    [Field::Source, _, _, _, _, Field::TaskId]
));

display_as_str!(Field);

/// Why a subscription request was refused. The message (`Display`) is what goes into
/// `subscription.rejected`'s `error.message`, and names the field at fault.
///
/// ```
/// use aep_core::subscription::{SubscriptionError, SubscriptionFilter};
/// let err = SubscriptionFilter::from_value(&serde_json::json!({"types": []})).unwrap_err();
/// assert_eq!(err.to_string(), "`types` must not be an empty array");
/// assert_eq!(err.field(), Some("types"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscriptionError {
    /// The request's payload is not a JSON object.
    #[error("`payload` must be a JSON object: the subscription filter")]
    NotAnObject,
    /// A field the document does not define.
    #[error("unknown field `{0}`: a subscription filter has types, source, target, topic, session_id, conversation_id, task_id, from_cursor, delivery_mode")]
    UnknownField(String),
    /// A field of the wrong JSON type.
    #[error("`{field}` must be {expected}")]
    WrongType {
        /// The field.
        field: Field,
        /// What it accepts.
        expected: &'static str,
    },
    /// `[]`.
    #[error("`{0}` must not be an empty array")]
    EmptyArray(Field),
    /// `""`, alone or in an array.
    #[error("`{0}` must not contain an empty string")]
    EmptyString(Field),
    /// A malformed type pattern.
    #[error("`types` pattern rejected: {0}")]
    Pattern(#[from] PatternError),
    /// An unknown delivery mode.
    #[error(transparent)]
    DeliveryMode(#[from] super::delivery::UnknownDeliveryMode),
    /// `{}`, or only `from_cursor` / `delivery_mode`: the document's own message.
    #[error("subscription must include at least one filter criterion")]
    NoCriterion,
    /// Criteria, but none of `types`, `source`, `target`, `topic`.
    #[error("subscription must include at least one filter criterion: one of types, source, target or topic")]
    NoPrimaryCriterion,
    /// `from_cursor` on a producer without replay (the document's detail).
    #[error("replay not supported")]
    ReplayNotSupported,
    /// A malformed `from_cursor`.
    #[error(transparent)]
    Cursor(#[from] super::cursor::CursorError),
}

impl SubscriptionError {
    /// The field at fault, when one is.
    pub fn field(&self) -> Option<&str> {
        match self {
            SubscriptionError::NotAnObject
            | SubscriptionError::NoCriterion
            | SubscriptionError::NoPrimaryCriterion => None,
            SubscriptionError::UnknownField(f) => Some(f),
            SubscriptionError::WrongType { field, .. }
            | SubscriptionError::EmptyArray(field)
            | SubscriptionError::EmptyString(field) => Some(field.as_str()),
            SubscriptionError::Pattern(_) => Some("types"),
            SubscriptionError::DeliveryMode(_) => Some("delivery_mode"),
            SubscriptionError::ReplayNotSupported | SubscriptionError::Cursor(_) => {
                Some("from_cursor")
            }
        }
    }

    /// Whether asking again unchanged could succeed: never, for these reasons.
    pub fn retryable(&self) -> bool {
        false
    }
}

/// A string-valued field's value: one string or an array of strings, shape kept so the
/// filter writes back as it was read. Matches when any value equals the envelope's.
///
/// ```
/// use aep_core::subscription::Values;
/// let one = Values::from("agent:researcher");
/// let many = Values::from(vec!["a", "b"]);
/// assert!(many.contains("b") && !one.is_array() && many.is_array());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Values {
    items: Box<[String]>,
    array: bool,
}

impl Values {
    /// Whether `value` is one of the values.
    #[inline]
    pub fn contains(&self, value: &str) -> bool {
        self.items.iter().any(|v| v == value)
    }

    /// The values.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.items.iter().map(String::as_str)
    }

    /// Whether the JSON form is an array.
    pub fn is_array(&self) -> bool {
        self.array
    }

    fn to_value(&self) -> Value {
        match (&*self.items, self.array) {
            ([one], false) => Value::String(one.clone()),
            (items, _) => Value::Array(items.iter().cloned().map(Value::String).collect()),
        }
    }

    fn from_json(field: Field, v: &Value) -> Result<Values, SubscriptionError> {
        let wrong = || SubscriptionError::WrongType {
            field,
            expected: "a string or an array of strings",
        };
        let (items, array) = match v {
            Value::String(s) => (vec![s.clone()], false),
            Value::Array(a) if a.is_empty() => return Err(SubscriptionError::EmptyArray(field)),
            Value::Array(a) => (
                a.iter()
                    .map(|x| x.as_str().map(str::to_owned).ok_or_else(wrong))
                    .collect::<Result<Vec<_>, _>>()?,
                true,
            ),
            _ => return Err(wrong()),
        };
        if items.iter().any(String::is_empty) {
            return Err(SubscriptionError::EmptyString(field));
        }
        Ok(Values {
            items: items.into_boxed_slice(),
            array,
        })
    }
}

impl From<&str> for Values {
    fn from(s: &str) -> Self {
        Values {
            items: Box::new([s.to_owned()]),
            array: false,
        }
    }
}

impl From<String> for Values {
    fn from(s: String) -> Self {
        Values {
            items: Box::new([s]),
            array: false,
        }
    }
}

impl<S: Into<String>> From<Vec<S>> for Values {
    fn from(v: Vec<S>) -> Self {
        Values {
            items: v.into_iter().map(Into::into).collect(),
            array: true,
        }
    }
}

impl<S: Into<String>, const N: usize> From<[S; N]> for Values {
    fn from(v: [S; N]) -> Self {
        Values {
            items: v.into_iter().map(Into::into).collect(),
            array: true,
        }
    }
}

/// A subscription filter of the subscription model: which events a consumer wants.
///
/// Fields (all optional, each string-valued one a string or an array of strings):
/// `types` (patterns, see [`TypePattern`]), `source`, `target`, `topic`, `session_id`,
/// `conversation_id`, `task_id` (exact values), `from_cursor` (a [`super::Cursor`]),
/// `delivery_mode` (a [`DeliveryMode`]).
///
/// An event matches when every specified matching field matches; a filter that
/// specifies none of the seven matching fields matches nothing. A producer also requires
/// one of `types`, `source`, `target`, `topic` ([`SubscriptionFilter::validate`]).
///
/// Mapping to the AEP envelope: `types` -> `type`, `source` -> `source`, `session_id`
/// -> `session`, and `target`, `topic`, `conversation_id`, `task_id` -> the extension
/// attributes `aeptarget`, `aeptopic`, `aepconversationid`, `aeptaskid` (AEP-0001 §5.4
/// names; an emitter sets them with [`Event::set_extension`]).
///
/// ```
/// use aep_core::subscription::SubscriptionFilter;
/// let f: SubscriptionFilter = serde_json::from_str(r#"{"types":["tool.*.progress"],"target":"agent:researcher"}"#)?;
/// let mut e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"tool.call.progress","time":"t","source":"s","agent":"a"}"#.parse()?;
/// assert!(!f.matches(&e));
/// e.set_extension("aeptarget", "agent:researcher".into())?;
/// assert!(f.matches(&e));
/// assert_eq!(serde_json::to_string(&f)?, r#"{"types":["tool.*.progress"],"target":"agent:researcher"}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SubscriptionFilter {
    types: Option<Types>,
    /// In `Field::EXACT` order (source .. task_id).
    exact: [Option<Values>; 6],
    from_cursor: Option<String>,
    delivery_mode: Option<DeliveryMode>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Types {
    values: Values,
    patterns: Box<[TypePattern]>,
    /// Some pattern is `*`.
    all: bool,
}

impl Types {
    fn new(values: Values) -> Result<Types, SubscriptionError> {
        let patterns = values
            .iter()
            .map(TypePattern::parse)
            .collect::<Result<Box<[_]>, _>>()?;
        let all = patterns.iter().any(TypePattern::is_all);
        Ok(Types {
            values,
            patterns,
            all,
        })
    }

    #[inline]
    fn matches(&self, event_type: &str) -> bool {
        self.all || self.patterns.iter().any(|p| p.matches(event_type))
    }
}

/// Whether the envelope attribute of an exact field holds one of `values`.
#[inline]
fn field_matches(field: Field, values: &Values, event: &Event) -> bool {
    match field {
        Field::Source => values.contains(event.source()),
        Field::SessionId => event.session().is_some_and(|s| values.contains(s)),
        _ => field
            .envelope_attribute()
            .and_then(|attr| extension_string(event, attr))
            .is_some_and(|v| values.contains(&v)),
    }
}

impl SubscriptionFilter {
    /// An empty filter (which matches nothing until a field is set).
    pub fn new() -> SubscriptionFilter {
        SubscriptionFilter::default()
    }

    /// Sets `types`, refusing malformed patterns.
    ///
    /// ```
    /// use aep_core::subscription::SubscriptionFilter;
    /// let f = SubscriptionFilter::new().with_types(["memory.*", "context.*"])?;
    /// assert_eq!(f.types().unwrap().len(), 2);
    /// assert!(SubscriptionFilter::new().with_types("a..b").is_err());
    /// # Ok::<(), aep_core::subscription::SubscriptionError>(())
    /// ```
    pub fn with_types(mut self, types: impl Into<Values>) -> Result<Self, SubscriptionError> {
        self.types = Some(Types::new(types.into())?);
        Ok(self)
    }

    /// Sets one of the exact string fields (`source`, `target`, `topic`, `session_id`,
    /// `conversation_id`, `task_id`).
    ///
    /// ```
    /// use aep_core::subscription::{Field, SubscriptionFilter};
    /// let f = SubscriptionFilter::new().with(Field::Topic, "tasks.task_01")?;
    /// assert_eq!(f.get(Field::Topic).unwrap().iter().next(), Some("tasks.task_01"));
    /// assert!(SubscriptionFilter::new().with(Field::Types, "x").is_err());
    /// # Ok::<(), aep_core::subscription::SubscriptionError>(())
    /// ```
    pub fn with(
        mut self,
        field: Field,
        values: impl Into<Values>,
    ) -> Result<Self, SubscriptionError> {
        let values = values.into();
        let slot = Field::EXACT
            .iter()
            .position(|f| *f == field)
            .and_then(|i| self.exact.get_mut(i))
            .ok_or(SubscriptionError::WrongType {
                field,
                expected: "set with its own method (types, from_cursor, delivery_mode)",
            })?;
        if values.items.is_empty() {
            return Err(SubscriptionError::EmptyArray(field));
        }
        if values.items.iter().any(String::is_empty) {
            return Err(SubscriptionError::EmptyString(field));
        }
        *slot = Some(values);
        Ok(self)
    }

    crate::setters! {
        /// Sets `from_cursor` (checked against the producer's cursor form on request).
        #[must_use]
        pub fn with_from_cursor(cursor: impl Into<String>) => from_cursor = Some(cursor.into());

        /// Sets `delivery_mode`.
        #[must_use]
        pub fn with_delivery_mode(mode: DeliveryMode) => delivery_mode = Some(mode);
    }

    /// The `types` patterns.
    pub fn types(&self) -> Option<&[TypePattern]> {
        self.types.as_ref().map(|t| &*t.patterns)
    }

    /// The values of an exact string field (`None` for `types`, `from_cursor`,
    /// `delivery_mode`, or when unset).
    pub fn get(&self, field: Field) -> Option<&Values> {
        let i = Field::EXACT.iter().position(|f| *f == field)?;
        self.exact.get(i)?.as_ref()
    }

    /// `from_cursor`.
    pub fn from_cursor(&self) -> Option<&str> {
        self.from_cursor.as_deref()
    }

    /// `delivery_mode` as requested.
    pub fn delivery_mode(&self) -> Option<DeliveryMode> {
        self.delivery_mode
    }

    /// Whether no field at all is set (`{}`).
    pub fn is_empty(&self) -> bool {
        !self.has_matching_field() && self.from_cursor.is_none() && self.delivery_mode.is_none()
    }

    fn has_matching_field(&self) -> bool {
        self.types.is_some() || self.exact.iter().any(Option::is_some)
    }

    /// The producer's check on request: at least one of `types`, `source`, `target`,
    /// `topic` (with the document's message for `{}`).
    ///
    /// ```
    /// use aep_core::subscription::{Field, SubscriptionError, SubscriptionFilter};
    /// assert_eq!(SubscriptionFilter::new().validate(), Err(SubscriptionError::NoCriterion));
    /// let scoped = SubscriptionFilter::new().with(Field::SessionId, "sess_01")?;
    /// assert_eq!(scoped.validate(), Err(SubscriptionError::NoPrimaryCriterion));
    /// # Ok::<(), SubscriptionError>(())
    /// ```
    pub fn validate(&self) -> Result<(), SubscriptionError> {
        if !self.has_matching_field() {
            return Err(SubscriptionError::NoCriterion);
        }
        let primary = self.types.is_some()
            || [Field::Source, Field::Target, Field::Topic]
                .iter()
                .any(|f| self.get(*f).is_some());
        if primary {
            Ok(())
        } else {
            Err(SubscriptionError::NoPrimaryCriterion)
        }
    }

    /// Whether the event matches: every specified field matches; nothing matches a
    /// filter without matching fields. Does not allocate (except to decode an escaped
    /// extension string).
    #[inline]
    pub fn matches(&self, event: &Event) -> bool {
        if !self.has_matching_field() {
            return false;
        }
        if let Some(types) = &self.types {
            if !types.matches(event.event_type()) {
                return false;
            }
        }
        Field::EXACT.iter().zip(&self.exact).all(|(field, values)| {
            values
                .as_ref()
                .is_none_or(|v| field_matches(*field, v, event))
        })
    }

    /// Reads a filter from its JSON, refusing unknown fields, wrong types, empty arrays
    /// and strings, malformed patterns and unknown delivery modes, each error naming
    /// the field. (The at-least-one-criterion rule is [`SubscriptionFilter::validate`].)
    ///
    /// ```
    /// use aep_core::subscription::SubscriptionFilter;
    /// use serde_json::json;
    /// let err = SubscriptionFilter::from_value(&json!({"types": "a.*", "priority": 1})).unwrap_err();
    /// assert_eq!(err.field(), Some("priority"));
    /// let err = SubscriptionFilter::from_value(&json!({"delivery_mode": "exactly_once"})).unwrap_err();
    /// assert_eq!(err.field(), Some("delivery_mode"));
    /// ```
    pub fn from_value(value: &Value) -> Result<SubscriptionFilter, SubscriptionError> {
        let Value::Object(map) = value else {
            return Err(SubscriptionError::NotAnObject);
        };
        let mut filter = SubscriptionFilter::new();
        for (key, v) in map {
            let field = names::find(Field::ALL, Field::as_str, key)
                .ok_or_else(|| SubscriptionError::UnknownField(key.clone()))?;
            match field {
                Field::Types => filter.types = Some(Types::new(Values::from_json(field, v)?)?),
                Field::FromCursor => match v {
                    Value::String(s) if s.is_empty() => {
                        return Err(SubscriptionError::EmptyString(field))
                    }
                    Value::String(s) => filter.from_cursor = Some(s.clone()),
                    _ => {
                        return Err(SubscriptionError::WrongType {
                            field,
                            expected: "a string",
                        })
                    }
                },
                Field::DeliveryMode => match v {
                    Value::String(s) => filter.delivery_mode = Some(s.parse()?),
                    _ => {
                        return Err(SubscriptionError::WrongType {
                            field,
                            expected: "one of \"best_effort\", \"at_least_once\", \"replayable\"",
                        })
                    }
                },
                _ => filter = filter.with(field, Values::from_json(field, v)?)?,
            }
        }
        Ok(filter)
    }

    /// The filter's JSON, fields in the document's order, each in the shape it was given.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        if let Some(t) = &self.types {
            map.insert("types".into(), t.values.to_value());
        }
        for (field, values) in Field::EXACT.iter().zip(&self.exact) {
            if let Some(v) = values {
                map.insert(field.as_str().into(), v.to_value());
            }
        }
        if let Some(c) = &self.from_cursor {
            map.insert("from_cursor".into(), Value::String(c.clone()));
        }
        if let Some(m) = self.delivery_mode {
            map.insert("delivery_mode".into(), m.as_str().into());
        }
        Value::Object(map)
    }

    /// Lowers the filter to what any AEP-0003 relay can evaluate: an attr-match wire
    /// filter plus a residual predicate applied locally, such that an event matches
    /// this filter exactly when it matches both.
    ///
    /// On the wire: exact types and `prefix.*` patterns (literal `[a-z0-9_-]` segments),
    /// `source`, `session`, and the extension attributes. A pattern with an inner `*`
    /// goes on the wire as its literal prefix (`tool.*.progress` as `tool.*`, a
    /// superset) and is checked exactly by the residual; a pattern attr-match cannot
    /// narrow at all (`*`, `*.completed`) drops `type` from the wire. A value
    /// containing `*` (which attr-match refuses outside `type`) is checked by the
    /// residual only.
    ///
    /// ```
    /// use aep_core::subscription::{Field, SubscriptionFilter};
    /// let f = SubscriptionFilter::new()
    ///     .with_types(["tool.*.progress", "run.*"])?
    ///     .with(Field::SessionId, "sess_01")?;
    /// let lowered = f.lower();
    /// assert_eq!(lowered.wire().to_json(), r#"{"type":["tool.*","run.*"],"session":"sess_01"}"#);
    /// assert!(!lowered.residual().is_trivial());
    /// # Ok::<(), aep_core::subscription::SubscriptionError>(())
    /// ```
    #[must_use]
    pub fn lower(&self) -> Lowered {
        let mut wire = Map::new();
        let mut residual = Residual {
            nothing: !self.has_matching_field(),
            types: None,
            fields: Vec::new(),
        };
        if let Some(types) = &self.types {
            let mut exact = true;
            let mut lowered = Vec::new();
            for p in types.patterns.iter() {
                match (p.as_attr_match(), p.attr_match_superset()) {
                    (Some(s), _) => lowered.push(s.to_owned()),
                    (None, Some(superset)) => {
                        exact = false;
                        lowered.push(superset);
                    }
                    (None, None) => {
                        exact = false;
                        lowered.clear();
                        break;
                    }
                }
            }
            if !lowered.is_empty() && !types.all {
                let value = match (lowered.len(), types.values.is_array()) {
                    (1, false) => Value::String(lowered.remove(0)),
                    _ => Value::Array(lowered.into_iter().map(Value::String).collect()),
                };
                wire.insert("type".into(), value);
            }
            if !exact && !types.all {
                residual.types = Some(types.clone());
            }
        }
        for (field, values) in Field::EXACT.iter().zip(&self.exact) {
            let (Some(values), Some(attr)) = (values, field.envelope_attribute()) else {
                continue;
            };
            if values.iter().any(|v| v.contains('*')) {
                residual.fields.push((*field, values.clone()));
            } else {
                wire.insert(attr.into(), values.to_value());
            }
        }
        // Every key above is filterable and every value a non-empty string without `*`,
        // so the wire filter always compiles; `all()` is the fail-safe superset.
        let wire = Filter::from_map(wire).unwrap_or_else(|_| Filter::all());
        Lowered { wire, residual }
    }
}

/// A subscription filter lowered for an AEP-0003 relay: see
/// [`SubscriptionFilter::lower`].
///
/// ```
/// use aep_core::subscription::SubscriptionFilter;
/// let lowered = SubscriptionFilter::new().with_types("*.completed")?.lower();
/// assert!(lowered.wire().is_empty()); // attr-match cannot narrow `*.completed`
/// let e = aep_core::Event::new("1", "tool.completed", "t", "s", "a");
/// assert!(lowered.matches(&e));
/// assert!(!lowered.residual().matches(&aep_core::Event::new("1", "tool.failed", "t", "s", "a")));
/// # Ok::<(), aep_core::subscription::SubscriptionError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Lowered {
    wire: Filter,
    residual: Residual,
}

impl Lowered {
    /// The attr-match filter to send (`subscribe` frame or SSE `filter`).
    pub fn wire(&self) -> &Filter {
        &self.wire
    }

    /// The predicate to apply locally to what the relay delivers.
    pub fn residual(&self) -> &Residual {
        &self.residual
    }

    /// Both halves: wire filter and residual.
    pub fn matches(&self, event: &Event) -> bool {
        self.wire.matches(event) && self.residual.matches(event)
    }
}

/// The part of a subscription filter attr-match cannot express, checked locally.
///
/// ```
/// use aep_core::subscription::SubscriptionFilter;
/// let exact = SubscriptionFilter::new().with_types(["tool.call.*", "run.started"])?.lower();
/// assert!(exact.residual().is_trivial()); // attr-match says it all
/// # Ok::<(), aep_core::subscription::SubscriptionError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Residual {
    /// The filter had no matching field: nothing matches.
    nothing: bool,
    types: Option<Types>,
    fields: Vec<(Field, Values)>,
}

impl Residual {
    /// Whether the residual accepts every event the wire filter lets through.
    pub fn is_trivial(&self) -> bool {
        !self.nothing && self.types.is_none() && self.fields.is_empty()
    }

    /// Whether the event passes the residual.
    pub fn matches(&self, event: &Event) -> bool {
        !self.nothing
            && self
                .types
                .as_ref()
                .is_none_or(|t| t.matches(event.event_type()))
            && self
                .fields
                .iter()
                .all(|(field, values)| field_matches(*field, values, event))
    }
}

impl fmt::Debug for SubscriptionFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SubscriptionFilter")
            .field(&self.to_value().to_string())
            .finish()
    }
}

serde_via_value!(SubscriptionFilter);

impl TryFrom<&Value> for SubscriptionFilter {
    type Error = SubscriptionError;
    fn try_from(value: &Value) -> Result<Self, Self::Error> {
        SubscriptionFilter::from_value(value)
    }
}
