//! `hello` and the capabilities it declares (AEP-0003 §4, AEP-0004 §3-4).

use std::str::FromStr;
use std::time::Duration;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::members::{object_serialize, put, strings, write_extra, Members};
use super::{FrameError, DEFAULT_ACK_WINDOW};
use crate::level::Capture;
use crate::names::open_set_as_str;

/// The party roles of `hello` (AEP-0003 §4 rule 2) and of the discovery document (§3.4).
///
/// ```
/// use aep_core::frame::Role;
/// assert_eq!("both".parse::<Role>().unwrap(), Role::Both);
/// assert_eq!("relay".parse::<Role>().unwrap(), Role::Other("relay".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Sends events.
    Emitter,
    /// Receives events.
    Consumer,
    /// Both.
    Both,
    /// The discovery document's role of an ingesting endpoint (AEP-0003 §3.4).
    Collector,
    /// A role outside the 0.1 vocabulary, kept as sent.
    Other(String),
}

impl Role {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Role::Emitter => "emitter",
            Role::Consumer => "consumer",
            Role::Both => "both",
            Role::Collector => "collector",
            Role::Other(s) => s,
        }
    }

    /// Whether this party may emit events (`emitter` or `both`).
    ///
    /// ```
    /// assert!(aep_core::frame::Role::Both.emits());
    /// ```
    pub fn emits(&self) -> bool {
        matches!(self, Role::Emitter | Role::Both)
    }

    /// Whether this party may watch (`consumer` or `both`): the roles that may ask for
    /// a `roster` or `subscribe` (AEP-0003 §4.1 rule 2).
    ///
    /// ```
    /// assert!(!aep_core::frame::Role::Emitter.watches());
    /// ```
    pub fn watches(&self) -> bool {
        matches!(self, Role::Consumer | Role::Both)
    }
}

impl Role {
    pub(super) fn from_wire(s: String) -> Role {
        match Role::from_str(&s) {
            Ok(Role::Other(_)) => Role::Other(s),
            Ok(known) => known,
            Err(never) => match never {},
        }
    }
}

impl FromStr for Role {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "emitter" => Role::Emitter,
            "consumer" => Role::Consumer,
            "both" => Role::Both,
            "collector" => Role::Collector,
            other => Role::Other(other.to_owned()),
        })
    }
}

open_set_as_str!(Role, Role::from_wire);

/// The `hello` frame (AEP-0003 §4).
///
/// ```
/// use aep_core::frame::{Capabilities, Hello, Identity, Role};
///
/// let mut caps = Capabilities::default();
/// caps.control = Some(aep_core::frame::ControlCapability::accepting(["control.cancel"]));
/// let hello = Hello::new(Role::Emitter)
///     .with_identity(Identity::new("claude-code").with_instance("host-a/7c1f"))
///     .with_capabilities(caps);
/// assert_eq!(
///     aep_core::frame::Frame::from(hello).to_json(),
///     r#"{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"claude-code","instance":"host-a/7c1f"},"capabilities":{"control":{"accepts":["control.cancel"]}}}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Hello {
    /// Versions in order of preference, newest first; a responder's has exactly one
    /// (AEP-0003 §4 rule 1). Absent on the wire reads as empty.
    pub versions: Vec<String>,
    /// The sender's role (AEP-0003 §4 rule 2). The reference relay reads an absent role
    /// as `both`.
    pub role: Option<Role>,
    /// Who is speaking (AEP-0003 §4 rule 3).
    pub identity: Option<Identity>,
    /// Declared capabilities (AEP-0003 §4 rules 4-6).
    pub capabilities: Option<Capabilities>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Hello {
    /// A `hello` offering version `0.1` in `role`.
    pub fn new(role: Role) -> Hello {
        Hello {
            versions: crate::binding::VERSIONS.map(str::to_owned).to_vec(),
            role: Some(role),
            identity: None,
            capabilities: None,
            extra: Map::new(),
        }
    }

    crate::setters! {
        /// Sets `identity`.
        #[must_use]
        pub fn with_identity(identity: Identity) => identity = Some(identity);

        /// Sets `capabilities`.
        #[must_use]
        pub fn with_capabilities(capabilities: Capabilities) => capabilities = Some(capabilities);
    }

    /// Sets `versions` (newest first).
    #[must_use]
    pub fn with_versions<I, S>(mut self, versions: I) -> Hello
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// The version a responder selects: the peer's most preferred version among
    /// `supported`, or `None`, which the responder answers with a
    /// `version-unsupported` error and close (AEP-0003 §4 rule 1).
    ///
    /// ```
    /// use aep_core::frame::{Hello, Role};
    /// let peer = Hello::new(Role::Consumer).with_versions(["0.2", "0.1"]);
    /// assert_eq!(peer.select_version(&["0.1"]), Some("0.1"));
    /// assert_eq!(peer.select_version(&["9.9"]), None);
    /// ```
    pub fn select_version<'a>(&self, supported: &[&'a str]) -> Option<&'a str> {
        self.versions
            .iter()
            .find_map(|v| supported.iter().find(|s| **s == v.as_str()).copied())
    }

    /// The declared capabilities, or the empty set when none were sent.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities.clone().unwrap_or_default()
    }

    /// The role a responder serves this party in (AEP-0003 §4 rule 2): `emitter`,
    /// `consumer` or `both`, an absent role read as `both` (as the reference relay reads
    /// it). Any other role is `Err`, carrying it: the responder refuses the `hello`.
    ///
    /// ```
    /// use aep_core::frame::{Hello, Role};
    /// assert_eq!(Hello::new(Role::Consumer).party_role(), Ok(Role::Consumer));
    /// let mut absent = Hello::new(Role::Emitter);
    /// absent.role = None;
    /// assert_eq!(absent.party_role(), Ok(Role::Both));
    /// assert_eq!(Hello::new(Role::Collector).party_role(), Err(Role::Collector));
    /// ```
    pub fn party_role(&self) -> Result<Role, Role> {
        match self.role.clone().unwrap_or(Role::Both) {
            role @ (Role::Emitter | Role::Consumer | Role::Both) => Ok(role),
            other => Err(other),
        }
    }

    pub(super) fn read(m: &mut Members<'_>) -> Result<Hello, FrameError> {
        let versions = m.opt_strings("versions")?.unwrap_or_default();
        let role = m.opt_str("role")?.map(Role::from_wire);
        let identity = match m.opt_object("identity")? {
            None => None,
            Some(map) => {
                let mut n = m.nested("identity".to_owned(), map);
                Some(Identity::read(&mut n)?)
            }
        };
        let capabilities = m.opt_object("capabilities")?.map(Capabilities::from_map);
        Ok(Hello {
            versions,
            role,
            identity,
            capabilities,
            extra: std::mem::take(&mut m.map),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("versions", &self.versions)?;
        put(m, "role", self.role.as_ref())?;
        put(m, "identity", self.identity.as_ref())?;
        put(m, "capabilities", self.capabilities.as_ref())?;
        write_extra(m, &self.extra)
    }
}

/// `hello.identity` (AEP-0003 §4 rule 3, §8.2).
///
/// ```
/// let id = aep_core::frame::Identity::new("claude-code");
/// assert_eq!(serde_json::to_string(&id).unwrap(), r#"{"agent":"claude-code"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Identity {
    /// REQUIRED for emitters: the envelope `agent` of the events it sends.
    pub agent: Option<String>,
    /// Disambiguates processes of one agent.
    pub instance: Option<String>,
    /// The JWS identity document (§8.3), kept as sent; `null` stays `null`.
    pub card: Option<Value>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Identity {
    /// An identity naming `agent`.
    pub fn new(agent: impl Into<String>) -> Identity {
        Identity {
            agent: Some(agent.into()),
            ..Identity::default()
        }
    }

    crate::setters! {
        /// Sets `instance`.
        #[must_use]
        pub fn with_instance(instance: impl Into<String>) => instance = Some(instance.into());
    }

    pub(super) fn read(m: &mut Members<'_>) -> Result<Identity, FrameError> {
        let agent = m.opt_str("agent")?;
        let instance = m.opt_str("instance")?;
        // `card: null` is the spec's own example; keep it distinct from absent.
        let card = m.map.shift_remove("card");
        Ok(Identity {
            agent,
            instance,
            card,
            extra: std::mem::take(&mut m.map),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "agent", self.agent.as_ref())?;
        put(m, "instance", self.instance.as_ref())?;
        put(m, "card", self.card.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(Identity);

/// Declared capabilities: `hello.capabilities` (AEP-0003 §4) and the discovery
/// document's `capabilities` (§3.4), which reuses the shape.
///
/// Reading never fails on content: unknown keys, and known keys whose value this crate
/// cannot read, land in [`extra`](Self::extra) verbatim (AEP-0003 §4 rule 4).
///
/// ```
/// use aep_core::frame::Capabilities;
/// let caps: Capabilities = serde_json::from_str(
///     r#"{"filters":["attr-match"],"roster":{},"futurecap":{"enabled":true},"control":{"accepts":["control.pause"]}}"#,
/// )?;
/// assert!(caps.supports_roster());
/// assert!(caps.accepts("control.pause"));
/// assert!(caps.extra.contains_key("futurecap"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Capabilities {
    /// Event categories the party emits (routing hints, AEP-0003 §4 rule 5).
    pub emits: Option<Vec<String>>,
    /// Capture levels offered.
    pub capture: Option<Vec<Capture>>,
    /// The control declaration; its `accepts` is authoritative (AEP-0004 §4.2).
    pub control: Option<ControlCapability>,
    /// Replay buffer facts (AEP-0003 §5).
    pub replay: Option<ReplayCapability>,
    /// Filter dialects (AEP-0003 §6).
    pub filters: Option<Vec<String>>,
    /// Present when the party answers `roster` frames (AEP-0003 §4.1 rule 1).
    pub roster: Option<Map<String, Value>>,
    /// The graduation namespace (AEP-0003 §4 rule 6).
    pub experimental: Option<Map<String, Value>>,
    /// Keys outside the 0.1 vocabulary, or known keys in an unreadable shape: kept and
    /// ignored.
    pub extra: Map<String, Value>,
}

impl Capabilities {
    /// Whether the party declared the `roster` frame (AEP-0003 §4.1 rule 1).
    ///
    /// ```
    /// use aep_core::frame::{decode, Frame, Message};
    /// let Message::Frame(Frame::Hello(h)) = decode(r#"{"type":"hello","versions":["0.1"],"role":"emitter","capabilities":{"roster":{}}}"#)? else { panic!() };
    /// assert!(h.capabilities().supports_roster());
    /// # Ok::<(), aep_core::frame::DecodeError>(())
    /// ```
    pub fn supports_roster(&self) -> bool {
        self.roster.is_some()
    }

    /// Whether `command_type` is in the declared `control.accepts` (AEP-0004 §4.2).
    pub fn accepts(&self, command_type: &str) -> bool {
        self.acceptance(command_type) == Acceptance::Accepted
    }

    /// What the declared `control.accepts` says of `command_type`
    /// ([`ControlCapability::acceptance`]); [`Acceptance::Undeclared`] without a
    /// `control` declaration.
    ///
    /// ```
    /// use aep_core::frame::{Acceptance, Capabilities};
    /// assert_eq!(Capabilities::default().acceptance("control.pause"), Acceptance::Undeclared);
    /// ```
    pub fn acceptance(&self, command_type: &str) -> Acceptance {
        self.control
            .as_ref()
            .map_or(Acceptance::Undeclared, |c| c.acceptance(command_type))
    }

    pub(super) fn from_map(map: Map<String, Value>) -> Capabilities {
        let mut caps = Capabilities::default();
        for (k, v) in map {
            let kept = match k.as_str() {
                "emits" => strings(v.clone()).map(|s| caps.emits = Some(s)),
                "capture" => serde_json::from_value(v.clone())
                    .ok()
                    .map(|c| caps.capture = Some(c)),
                "control" => match &v {
                    Value::Object(o) => {
                        ControlCapability::from_map(o.clone()).map(|c| caps.control = Some(c))
                    }
                    _ => None,
                },
                "replay" => match &v {
                    Value::Object(o) => {
                        ReplayCapability::from_map(o.clone()).map(|r| caps.replay = Some(r))
                    }
                    _ => None,
                },
                "filters" => strings(v.clone()).map(|s| caps.filters = Some(s)),
                "roster" => match &v {
                    Value::Object(o) => {
                        caps.roster = Some(o.clone());
                        Some(())
                    }
                    _ => None,
                },
                "experimental" => match &v {
                    Value::Object(o) => {
                        caps.experimental = Some(o.clone());
                        Some(())
                    }
                    _ => None,
                },
                _ => None,
            };
            if kept.is_none() {
                caps.extra.insert(k, v);
            }
        }
        caps
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "emits", self.emits.as_ref())?;
        put(m, "capture", self.capture.as_ref())?;
        put(m, "control", self.control.as_ref())?;
        put(m, "replay", self.replay.as_ref())?;
        put(m, "filters", self.filters.as_ref())?;
        put(m, "roster", self.roster.as_ref())?;
        put(m, "experimental", self.experimental.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(Capabilities);

impl<'de> Deserialize<'de> for Capabilities {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Capabilities::from_map(Map::deserialize(d)?))
    }
}

/// What a party's declared `control.accepts` says of one command type (AEP-0004 §4.2).
///
/// `accepts` is authoritative: a command whose type it does not list is nacked
/// `unsupported`, by the target, or by a relay on its behalf. A relay may refuse on a
/// target's behalf only when it knows the declaration (§4.2), so only
/// [`Refused`](Acceptance::Refused) is refused there; an
/// [`Undeclared`](Acceptance::Undeclared) target is forwarded the command and decides it
/// itself. A target decides [`Accepted`](Acceptance::Accepted) only: without a
/// declaration it accepts nothing (a control-capable target MUST declare, §7).
///
/// Closed: a type is listed, not listed, or there is no list.
///
/// ```
/// use aep_core::frame::{Acceptance, ControlCapability};
/// let declared = ControlCapability::accepting(["control.pause"]);
/// assert_eq!(declared.acceptance("control.cancel"), Acceptance::Refused);
/// assert!(!ControlCapability::default().accepts("control.cancel"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Acceptance {
    /// Listed in `accepts`.
    Accepted,
    /// Not listed in a declared `accepts`: nacked `unsupported`.
    Refused,
    /// No `accepts` declared: only the target itself decides (it accepts nothing).
    Undeclared,
}

/// `capabilities.control` (AEP-0003 §4, AEP-0004 §3-4).
///
/// ```
/// use aep_core::frame::{ControlCapability, DEFAULT_ACK_WINDOW};
/// let c = ControlCapability::accepting(["control.cancel"]);
/// assert!(c.accepts("control.cancel") && !c.accepts("control.pause"));
/// assert_eq!(c.ack_window(), DEFAULT_ACK_WINDOW);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ControlCapability {
    /// Command types the target accepts; anything else is nacked `unsupported`.
    pub accepts: Option<Vec<String>>,
    /// The ack window in milliseconds (default 10 000, AEP-0004 §3).
    pub ack_window_ms: Option<u64>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl ControlCapability {
    /// A declaration accepting exactly these command types.
    pub fn accepting<I, S>(types: I) -> ControlCapability
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ControlCapability {
            accepts: Some(types.into_iter().map(Into::into).collect()),
            ..ControlCapability::default()
        }
    }

    crate::setters! {
        /// Sets `ack_window_ms`.
        ///
        /// ```
        /// use std::time::Duration;
        /// use aep_core::frame::ControlCapability;
        /// let c = ControlCapability::accepting(["control.pause"]).with_ack_window(Duration::from_secs(3));
        /// assert_eq!(c.ack_window(), Duration::from_secs(3));
        /// assert!(c.accepts("control.pause") && !c.accepts("control.cancel"));
        /// ```
        #[must_use]
        pub fn with_ack_window(window: Duration) =>
            ack_window_ms = Some(u64::try_from(window.as_millis()).unwrap_or(u64::MAX));
    }

    /// Whether `command_type` is listed in `accepts`.
    pub fn accepts(&self, command_type: &str) -> bool {
        self.acceptance(command_type) == Acceptance::Accepted
    }

    /// What this declaration says of `command_type` (AEP-0004 §4.2): listed in
    /// `accepts`, not listed, or no `accepts` declared at all.
    ///
    /// ```
    /// use aep_core::frame::{Acceptance, ControlCapability};
    /// let c = ControlCapability::accepting(["control.cancel"]);
    /// assert_eq!(c.acceptance("control.cancel"), Acceptance::Accepted);
    /// assert_eq!(c.acceptance("control.pause"), Acceptance::Refused);
    /// assert_eq!(ControlCapability::default().acceptance("control.pause"), Acceptance::Undeclared);
    /// ```
    pub fn acceptance(&self, command_type: &str) -> Acceptance {
        match &self.accepts {
            None => Acceptance::Undeclared,
            Some(a) if a.iter().any(|t| t == command_type) => Acceptance::Accepted,
            Some(_) => Acceptance::Refused,
        }
    }

    /// The declared ack window, or the 10 s default (AEP-0004 §3).
    pub fn ack_window(&self) -> Duration {
        self.ack_window_ms
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_ACK_WINDOW)
    }

    /// `None` when a known member has an unreadable shape.
    pub(super) fn from_map(mut map: Map<String, Value>) -> Option<ControlCapability> {
        let accepts = match map.shift_remove("accepts") {
            None => None,
            Some(v) => Some(strings(v)?),
        };
        let ack_window_ms = match map.shift_remove("ack_window_ms") {
            None => None,
            Some(v) => Some(v.as_u64()?),
        };
        Some(ControlCapability {
            accepts,
            ack_window_ms,
            extra: map,
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "accepts", self.accepts.as_ref())?;
        put(m, "ack_window_ms", self.ack_window_ms.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(ControlCapability);

/// `capabilities.replay` (AEP-0003 §5).
///
/// ```
/// let r = aep_core::frame::ReplayCapability::new(10_000, true);
/// assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"buffer":10000,"all":true}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ReplayCapability {
    /// Buffer depth (events per session or global; the endpoint documents which).
    pub buffer: Option<u64>,
    /// Whether `from: "all"` (replay-all) is implemented.
    pub all: Option<bool>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl ReplayCapability {
    /// A declaration of `buffer` depth and replay-all support.
    pub fn new(buffer: u64, all: bool) -> ReplayCapability {
        ReplayCapability {
            buffer: Some(buffer),
            all: Some(all),
            extra: Map::new(),
        }
    }

    pub(super) fn from_map(mut map: Map<String, Value>) -> Option<ReplayCapability> {
        let buffer = match map.shift_remove("buffer") {
            None => None,
            Some(v) => Some(v.as_u64()?),
        };
        let all = match map.shift_remove("all") {
            None => None,
            Some(v) => Some(v.as_bool()?),
        };
        Some(ReplayCapability {
            buffer,
            all,
            extra: map,
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "buffer", self.buffer.as_ref())?;
        put(m, "all", self.all.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(ReplayCapability);
