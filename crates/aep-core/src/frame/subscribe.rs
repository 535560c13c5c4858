//! Subscriptions and the roster: `subscribe`, the `id`-only frames, `roster`, and the
//! `replay-exhausted` marker (AEP-0003 §4.1, §5, §6.5).

use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use super::members::{object_serialize, put, write_extra, Members};
use super::{ControlCapability, FrameError, Hello};
use crate::level::Capture;
use crate::resume::{Position, ResumePosition};

/// A frame whose only member is `id`: `subscribed`, `unsubscribe`, `unsubscribed` and
/// the `roster` request.
///
/// ```
/// use aep_core::frame::{Frame, IdFrame};
/// assert_eq!(Frame::Unsubscribe(IdFrame::new("sub-1")).to_json(), r#"{"type":"unsubscribe","id":"sub-1"}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IdFrame {
    /// The subscription or request id.
    pub id: String,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl IdFrame {
    /// A frame carrying `id`.
    pub fn new(id: impl Into<String>) -> IdFrame {
        IdFrame {
            id: id.into(),
            extra: Map::new(),
        }
    }

    pub(super) fn read(m: &mut Members<'_>) -> Result<IdFrame, FrameError> {
        Ok(IdFrame {
            id: m.req_str("id")?,
            extra: std::mem::take(&mut m.map),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("id", &self.id)?;
        write_extra(m, &self.extra)
    }
}

/// The `subscribe` frame (AEP-0003 §6.5).
///
/// `filter` is the attr-match filter as sent; validate it with the `filter` module and
/// answer `invalid-filter` when it fails (fail closed, AEP-0003 §6.2). An absent
/// filter is the empty filter, which matches every event (§6.1).
///
/// ```
/// use aep_core::frame::{Frame, ReplayFrom, Subscribe};
/// use aep_core::resume::ResumePosition;
/// use aep_core::Capture;
/// use serde_json::json;
///
/// let s = Subscribe::new("sub-1", json!({"session": "s_8f2c"}))
///     .with_from(ReplayFrom::Positions(vec![ResumePosition::new("s_8f2c", 3, 187)]))
///     .with_capture(Capture::Metadata);
/// assert_eq!(
///     Frame::Subscribe(s).to_json(),
///     r#"{"type":"subscribe","id":"sub-1","filter":{"session":"s_8f2c"},"from":[{"session":"s_8f2c","epoch":3,"seq":187}],"capture":"metadata"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Subscribe {
    /// The subscription id, echoed by `subscribed` / `error`.
    pub id: String,
    /// The attr-match filter, unvalidated.
    pub filter: Option<Value>,
    /// Replay before live delivery (AEP-0003 §5, §6.5).
    pub from: Option<ReplayFrom>,
    /// The capture ceiling (AEP-0003 §6.4).
    pub capture: Option<Capture>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Subscribe {
    /// A subscription `id` over `filter`.
    pub fn new(id: impl Into<String>, filter: Value) -> Subscribe {
        Subscribe {
            id: id.into(),
            filter: Some(filter),
            from: None,
            capture: None,
            extra: Map::new(),
        }
    }

    crate::setters! {
        /// Sets `from`.
        ///
        /// ```
        /// use aep_core::frame::{Frame, ReplayFrom, Subscribe};
        /// use aep_core::Capture;
        /// let sub = Subscribe::new("sub-1", serde_json::json!({"type": "tool.*"}))
        ///     .with_from(ReplayFrom::All)
        ///     .with_capture(Capture::Metadata);
        /// assert_eq!(Frame::from(sub).to_json(), r#"{"type":"subscribe","id":"sub-1","filter":{"type":"tool.*"},"from":"all","capture":"metadata"}"#);
        /// ```
        #[must_use]
        pub fn with_from(from: ReplayFrom) => from = Some(from);

        /// Sets the capture ceiling.
        #[must_use]
        pub fn with_capture(capture: Capture) => capture = Some(capture);
    }

    pub(super) fn read(m: &mut Members<'_>) -> Result<Subscribe, FrameError> {
        let id = m.req_str("id")?;
        let filter = m.take("filter");
        let from = match m.take("from") {
            None => None,
            Some(Value::String(s)) if s == "all" => Some(ReplayFrom::All),
            Some(Value::Array(items)) => {
                let mut positions = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let Value::Object(map) = item else {
                        return Err(m.err(
                            &format!("from[{i}]"),
                            "must be a {session, epoch, seq} object",
                        ));
                    };
                    let mut n = m.nested(format!("from[{i}]"), map);
                    positions.push(read_position(&mut n)?);
                }
                Some(ReplayFrom::Positions(positions))
            }
            Some(_) => {
                return Err(m.err(
                    "from",
                    "must be an array of {session, epoch, seq} positions or the string \"all\" (AEP-0003 §6.5)",
                ))
            }
        };
        let capture = match m.opt_str("capture")? {
            None => None,
            Some(c) => Some(
                c.parse::<Capture>()
                    .map_err(|e| m.err("capture", format!("{e}")))?,
            ),
        };
        Ok(Subscribe {
            id,
            filter,
            from,
            capture,
            extra: std::mem::take(&mut m.map),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("id", &self.id)?;
        put(m, "filter", self.filter.as_ref())?;
        match &self.from {
            None => {}
            Some(ReplayFrom::All) => m.serialize_entry("from", "all")?,
            Some(ReplayFrom::Positions(p)) => m.serialize_entry("from", p)?,
        }
        put(m, "capture", self.capture.as_ref())?;
        write_extra(m, &self.extra)
    }
}

/// Where a subscription's replay starts (AEP-0003 §5, §6.5). Exhaustive: §6.5 allows an
/// array of positions or `"all"`, and anything else is refused `invalid-filter`.
///
/// ```
/// use aep_core::frame::ReplayFrom;
/// assert!(matches!(ReplayFrom::All, ReplayFrom::All));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayFrom {
    /// After each of these positions, per session (the resume module's tokens).
    Positions(Vec<ResumePosition>),
    /// Every held session from its earliest held position (`"all"`).
    All,
}

/// Reads one `from` entry `{session, epoch, seq}` (AEP-0003 §6.5); an absent `epoch`
/// reads as 0.
fn read_position(m: &mut Members<'_>) -> Result<ResumePosition, FrameError> {
    let session = m.req_str("session")?;
    let epoch = m.opt_u64("epoch")?.unwrap_or(0);
    let seq = m.req_u64("seq")?;
    Ok(ResumePosition::new(session, epoch, seq))
}

/// The `roster` reply (AEP-0003 §4.1).
///
/// ```
/// use aep_core::frame::{decode, Frame, Message};
/// let m = decode(r#"{"type":"roster","id":"r-1","entries":[{"session":"s_8f2c","agent":"claude-code","control":{"accepts":["control.attention.respond"],"ack_window_ms":10000}}]}"#)?;
/// let Message::Frame(Frame::Roster(r)) = m else { panic!() };
/// assert!(r.entries[0].control.as_ref().unwrap().accepts("control.attention.respond"));
/// # Ok::<(), aep_core::frame::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RosterReply {
    /// The request's `id`, echoed.
    pub id: String,
    /// One entry per live claim; a repeated `session` is the multi-claimant state.
    pub entries: Vec<RosterEntry>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl RosterReply {
    /// A reply to request `id`.
    pub fn new(id: impl Into<String>, entries: Vec<RosterEntry>) -> RosterReply {
        RosterReply {
            id: id.into(),
            entries,
            extra: Map::new(),
        }
    }

    pub(super) fn read(m: &mut Members<'_>) -> Result<RosterReply, FrameError> {
        let id = m.req_str("id")?;
        let entries = match m.take("entries") {
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let Value::Object(map) = item else {
                        return Err(m.err(&format!("entries[{i}]"), "must be an object"));
                    };
                    let mut n = m.nested(format!("entries[{i}]"), map);
                    out.push(RosterEntry::read(&mut n)?);
                }
                out
            }
            _ => return Err(m.err("entries", "must be an array of entries")),
        };
        Ok(RosterReply {
            id,
            entries,
            extra: std::mem::take(&mut m.map),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("entries", &self.entries)?;
        write_extra(m, &self.extra)
    }
}

/// One live emitter claim in a `roster` reply: declarations relayed verbatim
/// (AEP-0003 §4.1 rule 4).
///
/// ```
/// let e = aep_core::frame::RosterEntry::new("s_8f2c");
/// assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"session":"s_8f2c"}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RosterEntry {
    /// The claimed session.
    pub session: String,
    /// `hello.identity.agent` of the claiming connection.
    pub agent: Option<String>,
    /// `hello.identity.instance` of the claiming connection.
    pub instance: Option<String>,
    /// That connection's declared `capabilities.control`.
    pub control: Option<ControlCapability>,
    /// That connection's declared `capabilities.emits`.
    pub emits: Option<Vec<String>>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl RosterEntry {
    /// An entry for `session` with nothing declared.
    pub fn new(session: impl Into<String>) -> RosterEntry {
        RosterEntry {
            session: session.into(),
            agent: None,
            instance: None,
            control: None,
            emits: None,
            extra: Map::new(),
        }
    }

    /// The entry of one live claim of `session` by the party that said `hello`
    /// (AEP-0003 §4.1 rule 4): `agent` and `instance` from its identity, `control` and
    /// `emits` from its capabilities, each as declared and absent when it was not; no
    /// other member.
    ///
    /// ```
    /// use aep_core::frame::{Capabilities, ControlCapability, Hello, Identity, Role, RosterEntry};
    ///
    /// let mut caps = Capabilities::default();
    /// caps.control = Some(ControlCapability::accepting(["control.pause"]));
    /// let hello = Hello::new(Role::Emitter)
    ///     .with_identity(Identity::new("claude-code"))
    ///     .with_capabilities(caps);
    /// assert_eq!(
    ///     serde_json::to_string(&RosterEntry::claimed("s1", &hello))?,
    ///     r#"{"session":"s1","agent":"claude-code","control":{"accepts":["control.pause"]}}"#
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn claimed(session: impl Into<String>, hello: &Hello) -> RosterEntry {
        let identity = hello.identity.as_ref();
        let capabilities = hello.capabilities.as_ref();
        RosterEntry {
            session: session.into(),
            agent: identity.and_then(|i| i.agent.clone()),
            instance: identity.and_then(|i| i.instance.clone()),
            control: capabilities.and_then(|c| c.control.clone()),
            emits: capabilities.and_then(|c| c.emits.clone()),
            extra: Map::new(),
        }
    }

    pub(super) fn read(m: &mut Members<'_>) -> Result<RosterEntry, FrameError> {
        let session = m.req_str("session")?;
        let agent = m.opt_str("agent")?;
        let instance = m.opt_str("instance")?;
        let control = match m.opt_object("control")? {
            None => None,
            Some(o) => Some(
                ControlCapability::from_map(o)
                    .ok_or_else(|| m.err("control", "must be a control declaration"))?,
            ),
        };
        let emits = m.opt_strings("emits")?;
        Ok(RosterEntry {
            session,
            agent,
            instance,
            control,
            emits,
            extra: std::mem::take(&mut m.map),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("session", &self.session)?;
        put(m, "agent", self.agent.as_ref())?;
        put(m, "instance", self.instance.as_ref())?;
        put(m, "control", self.control.as_ref())?;
        put(m, "emits", self.emits.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(RosterEntry);

/// The `replay-exhausted` frame: a resume position predates the buffer; delivery
/// continues from `earliest` (AEP-0003 §5).
///
/// ```
/// use aep_core::frame::{Frame, ReplayExhausted};
/// let f = Frame::ReplayExhausted(ReplayExhausted::new("sub-1", "s", 0, 42));
/// assert_eq!(f.to_json(), r#"{"type":"replay-exhausted","sub":"sub-1","session":"s","earliest":{"epoch":0,"seq":42}}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplayExhausted {
    /// The subscription id.
    pub sub: String,
    /// The session whose position predates the buffer.
    pub session: String,
    /// The earliest held `(epoch, seq)`.
    pub earliest: Position,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl ReplayExhausted {
    /// The marker for subscription `sub`, session `session`, earliest `(epoch, seq)`.
    pub fn new(
        sub: impl Into<String>,
        session: impl Into<String>,
        epoch: u64,
        seq: u64,
    ) -> ReplayExhausted {
        ReplayExhausted {
            sub: sub.into(),
            session: session.into(),
            earliest: Position::new(epoch, seq),
            extra: Map::new(),
        }
    }

    pub(super) fn read(m: &mut Members<'_>) -> Result<ReplayExhausted, FrameError> {
        let sub = m.req_str("sub")?;
        let session = m.req_str("session")?;
        let Some(map) = m.opt_object("earliest")? else {
            return Err(m.err(
                "earliest",
                "is missing (an {epoch, seq} object is required)",
            ));
        };
        let mut n = m.nested("earliest".to_owned(), map);
        let epoch = n.opt_u64("epoch")?.unwrap_or(0);
        let earliest = Position::new(epoch, n.req_u64("seq")?);
        Ok(ReplayExhausted {
            sub,
            session,
            earliest,
            extra: std::mem::take(&mut m.map),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("sub", &self.sub)?;
        m.serialize_entry("session", &self.session)?;
        m.serialize_entry("earliest", &self.earliest)?;
        write_extra(m, &self.extra)
    }
}
