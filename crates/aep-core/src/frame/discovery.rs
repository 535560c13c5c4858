//! The HTTP discovery document (AEP-0003 §3.4).

use serde::de;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::members::{object_serialize, put, write_extra, Members};
use super::{Capabilities, FrameError, Role};
use crate::binding;

/// The HTTP discovery document served at `GET {base}/events` and `/.well-known/aep`
/// (AEP-0003 §3.4). Unknown members are kept in `extra` and otherwise ignored.
///
/// ```
/// use aep_core::frame::Discovery;
/// let doc: Discovery = serde_json::from_str(r#"{
///   "aep": ["0.1"], "role": "collector",
///   "endpoints": { "events": "/events", "stream": "/stream", "socket": "/socket" },
///   "capabilities": { "filters": ["attr-match"], "replay": { "buffer": 10000, "all": true } }
/// }"#)?;
/// assert_eq!(doc.endpoints.socket.as_deref(), Some("/socket"));
/// assert_eq!(doc.capabilities().replay.unwrap().all, Some(true));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Discovery {
    /// Supported versions.
    pub aep: Vec<String>,
    /// The endpoint's role (the reference relay says `collector`).
    pub role: Option<Role>,
    /// Binding paths.
    pub endpoints: Endpoints,
    /// Capabilities, in the `hello` shape.
    pub capabilities: Option<Capabilities>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Discovery {
    /// A document for version `0.1` with the given endpoints.
    ///
    /// ```
    /// use aep_core::frame::{Discovery, Endpoints};
    /// let d = Discovery::new(Endpoints::standard());
    /// assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"aep":["0.1"],"endpoints":{"events":"/events","stream":"/stream","socket":"/socket"}}"#);
    /// ```
    pub fn new(endpoints: Endpoints) -> Discovery {
        Discovery {
            aep: binding::VERSIONS.map(str::to_owned).to_vec(),
            role: None,
            endpoints,
            capabilities: None,
            extra: Map::new(),
        }
    }

    /// The declared capabilities, or the empty set.
    pub fn capabilities(&self) -> Capabilities {
        self.capabilities.clone().unwrap_or_default()
    }

    pub(super) fn from_map(map: Map<String, Value>) -> Result<Discovery, FrameError> {
        let mut m = Members::new("discovery", map);
        m.id = None;
        let aep = m
            .opt_strings("aep")?
            .ok_or_else(|| m.err("aep", "is missing (an array of versions is required)"))?;
        let role = m.opt_str("role")?.map(Role::from_wire);
        let Some(ep) = m.opt_object("endpoints")? else {
            return Err(m.err("endpoints", "is missing (an object is required)"));
        };
        let mut n = m.nested("endpoints".to_owned(), ep);
        let endpoints = Endpoints {
            events: n.opt_str("events")?,
            stream: n.opt_str("stream")?,
            socket: n.opt_str("socket")?,
            extra: n.rest(),
        };
        let capabilities = match m.take("capabilities") {
            None => None,
            Some(Value::Object(o)) => Some(Capabilities::from_map(o)),
            Some(_) => return Err(m.err("capabilities", "must be an object")),
        };
        Ok(Discovery {
            aep,
            role,
            endpoints,
            capabilities,
            extra: m.rest(),
        })
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("aep", &self.aep)?;
        put(m, "role", self.role.as_ref())?;
        m.serialize_entry("endpoints", &self.endpoints)?;
        put(m, "capabilities", self.capabilities.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(Discovery);

impl<'de> Deserialize<'de> for Discovery {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Discovery::from_map(Map::deserialize(d)?).map_err(de::Error::custom)
    }
}

/// `endpoints` of the discovery document: paths relative to the base URL.
///
/// ```
/// let e = aep_core::frame::Endpoints::standard();
/// assert_eq!(e.stream.as_deref(), Some("/stream"));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Endpoints {
    /// HTTP emit (and this document).
    pub events: Option<String>,
    /// SSE consume.
    pub stream: Option<String>,
    /// WebSocket duplex; absent when the endpoint has none.
    pub socket: Option<String>,
    /// Members outside the 0.1 vocabulary.
    pub extra: Map<String, Value>,
}

impl Endpoints {
    /// The paths of §3.4's example: `/events`, `/stream`, `/socket`.
    pub fn standard() -> Endpoints {
        Endpoints {
            events: Some(binding::EVENTS_PATH.to_owned()),
            stream: Some(binding::STREAM_PATH.to_owned()),
            socket: Some(binding::SOCKET_PATH.to_owned()),
            extra: Map::new(),
        }
    }

    pub(super) fn write_members<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        put(m, "events", self.events.as_ref())?;
        put(m, "stream", self.stream.as_ref())?;
        put(m, "socket", self.socket.as_ref())?;
        write_extra(m, &self.extra)
    }
}
object_serialize!(Endpoints);
