//! Reading and setting an [`Event`]'s attributes, with the AEP-0001 §5.1 defaults
//! applied by the accessors.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::extension::{check_extension_name, is_extension_value, raw};
use super::{slot, Event, ExtensionError, AEP_VERSION, DATA, EXT};
use crate::level::{Capture, Severity};

impl Event {
    /// A new event with the five required attributes besides `aep` (which is
    /// [`AEP_VERSION`]). Everything else is absent until set.
    ///
    /// An event's string attributes share one buffer addressed by 32-bit offsets: text
    /// past 4 GiB in all cannot be held, and an attribute that would end past it reads
    /// as empty (no relay accepts a line that large).
    ///
    /// ```
    /// use aep_core::Event;
    /// let e = Event::new("01J", "agent.heartbeat", "2026-07-03T10:00:00.000Z", "aep://h/agent/a", "a");
    /// assert_eq!(e.session(), None);
    /// assert_eq!(e.to_json(), r#"{"aep":"0.1","id":"01J","type":"agent.heartbeat","time":"2026-07-03T10:00:00.000Z","source":"aep://h/agent/a","agent":"a"}"#);
    /// ```
    pub fn new(
        id: impl AsRef<str>,
        event_type: impl AsRef<str>,
        time: impl AsRef<str>,
        source: impl AsRef<str>,
        agent: impl AsRef<str>,
    ) -> Event {
        Event::from_strs(
            id.as_ref(),
            event_type.as_ref(),
            time.as_ref(),
            source.as_ref(),
            agent.as_ref(),
        )
    }

    /// [`new`](Self::new) from borrowed text.
    pub(crate) fn from_strs(
        id: &str,
        event_type: &str,
        time: &str,
        source: &str,
        agent: &str,
    ) -> Event {
        // Room for the attributes a builder usually adds next (`session`, `cause`, ...),
        // so that they do not grow the text again.
        const ROOM: usize = 64;
        let len = AEP_VERSION.len() + id.len() + event_type.len() + time.len();
        let mut event = Event::with_capacity(len + source.len() + agent.len() + ROOM);
        event.append(slot::AEP, AEP_VERSION);
        event.append(slot::ID, id);
        event.append(slot::TYPE, event_type);
        event.append(slot::TIME, time);
        event.append(slot::SOURCE, source);
        event.append(slot::AGENT, agent);
        event
    }

    /// `aep`: the envelope version.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.aep(), "0.1");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn aep(&self) -> &str {
        self.required(slot::AEP)
    }
    /// `id`: unique per `source`; consumers dedupe on `(source, id)` (AEP-0001 §7).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.id(), "01J");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn id(&self) -> &str {
        self.required(slot::ID)
    }
    /// `type`, e.g. `tool.completed` or `x.acme.tool.synced`.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.event_type(), "tool.completed");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn event_type(&self) -> &str {
        self.required(slot::TYPE)
    }
    /// `subject`: the acted-upon entity.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.subject(), Some("t_91"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.subject(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn subject(&self) -> Option<&str> {
        self.str_at(slot::SUBJECT)
    }
    /// `time`: RFC 3339; display metadata only, never ordering authority.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.time(), "2026-07-03T10:15:04.221Z");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn time(&self) -> &str {
        self.required(slot::TIME)
    }
    /// `source`: the emitting agent or session, as a URI.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.source(), "aep://h/agent/a/session/s");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn source(&self) -> &str {
        self.required(slot::SOURCE)
    }
    /// `agent`: the stable logical identity of the emitter.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.agent(), "a");
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn agent(&self) -> &str {
        self.required(slot::AGENT)
    }
    /// `session`, absent on agent-scoped events.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.session(), Some("s"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.session(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn session(&self) -> Option<&str> {
        self.str_at(slot::SESSION)
    }
    /// `run`.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.run(), Some("r1"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.run(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn run(&self) -> Option<&str> {
        self.str_at(slot::RUN)
    }
    /// `step`.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.step(), Some("p1"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.step(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn step(&self) -> Option<&str> {
        self.str_at(slot::STEP)
    }
    /// `seq`, absent on agent-scoped and foreign-emitter events (AEP-0001 §5.2).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.seq(), Some(7));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.seq(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }
    /// `epoch`, defaulting to 0.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.epoch(), 2);
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.epoch(), 0);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        self.epoch.unwrap_or(0)
    }
    /// `epoch` as it is on the wire (`None` when absent).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.epoch_attr(), Some(2));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.epoch_attr(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn epoch_attr(&self) -> Option<u64> {
        self.epoch
    }
    /// `cause`: the `id` of the causing event.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.cause(), Some("01I"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.cause(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn cause(&self) -> Option<&str> {
        self.str_at(slot::CAUSE)
    }
    /// `traceparent`: W3C Trace Context.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.traceparent(), Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.traceparent(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn traceparent(&self) -> Option<&str> {
        self.str_at(slot::TRACEPARENT)
    }
    /// `severity`, defaulting to [`Severity::Info`].
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.severity(), aep_core::Severity::Notice);
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.severity(), aep_core::Severity::Info);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn severity(&self) -> Severity {
        self.severity.unwrap_or_default()
    }
    /// `severity` as it is on the wire.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.severity_attr(), Some(aep_core::Severity::Notice));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.severity_attr(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn severity_attr(&self) -> Option<Severity> {
        self.severity
    }
    /// `capture`, defaulting to [`Capture::Metadata`].
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.capture(), aep_core::Capture::Redacted);
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.capture(), aep_core::Capture::Metadata);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn capture(&self) -> Capture {
        self.capture.unwrap_or_default()
    }
    /// `capture` as it is on the wire.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.capture_attr(), Some(aep_core::Capture::Redacted));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.capture_attr(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn capture_attr(&self) -> Option<Capture> {
        self.capture
    }
    /// `data` exactly as received (or as last set).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{"load":0.5510}}"#.parse()?;
    /// assert_eq!(e.data_raw().map(|r| r.get()), Some(r#"{"load":0.5510}"#)); // spelling kept
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn data_raw(&self) -> Option<&RawValue> {
        self.data.as_deref()
    }
    /// `data` as a JSON value (`None` when absent).
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.data().map(|d| d["duration_ms"].clone()), Some(serde_json::json!(12)));
    /// let bare: aep_core::Event = r#"{"aep":"0.1","id":"02J","type":"agent.idle","time":"2026-07-03T10:15:05.000Z","source":"aep://h/agent/a","agent":"a"}"#.parse()?;
    /// assert_eq!(bare.data(), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn data(&self) -> Option<Value> {
        self.data
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }
    /// `data` decoded into a payload type, e.g. one of the generated payload types.
    ///
    /// An absent `data` decodes as an empty object, so payload types whose fields are
    /// all optional still decode.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// let p: aep_core::payload::ToolCompleted = e.payload()?;
    /// assert_eq!(p.tool.name, "Bash");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn payload<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match self.data.as_deref() {
            Some(raw) => serde_json::from_str(raw.get()),
            None => serde_json::from_str("{}"),
        }
    }

    /// `data` decoded by `type` (AEP-0002 §4-5): the generated payload type of a
    /// registered type, or [`Payload::Other`](crate::payload::Payload::Other) holding
    /// the JSON as it is for unregistered and vendor types.
    ///
    /// ```
    /// use aep_core::payload::Payload;
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","session":"s1","seq":0,"data":{"trigger":"user"}}"#.parse()?;
    /// let Payload::RunStarted(p) = e.typed_payload()? else { panic!("run.started is registered") };
    /// assert_eq!(p.trigger.map(|t| t.as_str()), Some("user"));
    ///
    /// let vendor: aep_core::Event = r#"{"aep":"0.1","id":"2","type":"x.acme.tool.synced","time":"t","source":"s","agent":"a","data":{"n":1}}"#.parse()?;
    /// assert_eq!(vendor.typed_payload()?, Payload::Other(serde_json::json!({"n": 1})));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn typed_payload(&self) -> Result<crate::payload::Payload, crate::payload::PayloadError> {
        crate::payload::Payload::from_event(self)
    }

    /// The extension attributes (AEP-0001 §5.4) in wire order, values as raw JSON.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// let names: Vec<&str> = e.extensions().map(|(name, _)| name).collect();
    /// assert_eq!(names, ["acmeregion"]);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn extensions(&self) -> impl ExactSizeIterator<Item = (&str, &RawValue)> + '_ {
        self.extensions.iter().map(|(k, v)| (k.as_str(), &**v))
    }

    /// One extension attribute's value as JSON.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","acmeregion":"eu-1"}"#.parse()?;
    /// assert_eq!(e.extension("acmeregion"), Some(serde_json::json!("eu-1")));
    /// assert_eq!(e.extension("other"), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn extension(&self, name: &str) -> Option<Value> {
        self.extension_raw(name)
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// One extension attribute's value as raw JSON.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.extension_raw("acmeregion").map(|r| r.get()), Some(r#""eu-1""#));
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    #[inline]
    pub fn extension_raw(&self, name: &str) -> Option<&RawValue> {
        self.extensions
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| &**v)
    }

    /// One extension attribute's value when it is a JSON string.
    ///
    /// ```
    /// let e: aep_core::Event = r#"{"aep":"0.1","id":"01J","type":"tool.completed","subject":"t_91","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","run":"r1","step":"p1","seq":7,"epoch":2,"cause":"01I","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","severity":"notice","capture":"redacted","acmeregion":"eu-1","data":{"tool":{"name":"Bash","call_id":"t_91"},"duration_ms":12}}"#.parse()?;
    /// assert_eq!(e.extension_str("acmeregion"), Some("eu-1"));
    /// assert_eq!(e.extension_str("acmezone"), None);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn extension_str(&self, name: &str) -> Option<&str> {
        let raw = self.extension_raw(name)?.get();
        // Cheap path for strings without escapes, which is what extension values are.
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        (!inner.contains('\\')).then_some(inner)
    }

    /// Sets an extension attribute, refusing what AEP-0001 §5.4 forbids. Replaces an
    /// existing value in place (keeping its position).
    ///
    /// ```
    /// use aep_core::Event;
    /// let mut e = Event::new("1", "agent.idle", "t", "s", "a");
    /// e.set_extension("acmeregion", "eu-1".into())?;
    /// assert!(e.set_extension("seq", 1.into()).is_err());
    /// assert!(e.set_extension("acmelist", serde_json::json!([1])).is_err());
    /// # Ok::<(), aep_core::ExtensionError>(())
    /// ```
    pub fn set_extension(&mut self, name: &str, value: Value) -> Result<(), ExtensionError> {
        check_extension_name(name)?;
        if !is_extension_value(&value) {
            return Err(ExtensionError::NonScalar(name.to_owned()));
        }
        let value = raw(&value);
        match self.extensions.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v = value,
            None => {
                self.extensions.push((name.to_owned(), value));
                if let Some(order) = self.order.take() {
                    let mut order = order.into_vec();
                    let at = order.iter().position(|&s| s == DATA).unwrap_or(order.len());
                    order.insert(at, EXT);
                    self.order = Some(order.into_boxed_slice());
                }
            }
        }
        Ok(())
    }

    /// Removes an extension attribute, returning whether it was present.
    ///
    /// ```
    /// let mut e: aep_core::Event = r#"{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","acmeregion":"eu-1"}"#.parse()?;
    /// assert!(e.remove_extension("acmeregion"));
    /// assert!(!e.remove_extension("acmeregion"));
    /// assert_eq!(e.extensions().len(), 0);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn remove_extension(&mut self, name: &str) -> bool {
        let Some(pos) = self.extensions.iter().position(|(k, _)| k == name) else {
            return false;
        };
        self.extensions.remove(pos);
        if let Some(order) = self.order.take() {
            let mut order = order.into_vec();
            if let Some(at) = order
                .iter()
                .enumerate()
                .filter(|&(_, &s)| s == EXT)
                .nth(pos)
            {
                order.remove(at.0);
            }
            self.order = Some(order.into_boxed_slice());
        }
        true
    }

    /// Sets `data` from a JSON value (`Value::Null` removes it).
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_data(serde_json::json!({"trigger": "user"}));
    /// assert!(e.to_json().ends_with(r#""data":{"trigger":"user"}}"#));
    /// e.set_data(serde_json::Value::Null);
    /// assert_eq!(e.data(), None);
    /// ```
    pub fn set_data(&mut self, data: Value) {
        self.set_slot_present(DATA, !data.is_null());
        self.data = (!data.is_null()).then(|| raw(&data));
    }

    /// Sets `data` from raw JSON text kept verbatim.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_data_raw(Some(serde_json::value::RawValue::from_string(r#"{"n":1.50}"#.into())?));
    /// assert!(e.to_json().ends_with(r#""data":{"n":1.50}}"#));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn set_data_raw(&mut self, data: Option<Box<RawValue>>) {
        self.set_slot_present(DATA, data.is_some());
        self.data = data;
    }

    /// Sets `data` from a serializable payload (e.g. a generated payload type).
    ///
    /// ```
    /// use aep_core::payload::{RunStarted, RunStartedTrigger};
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_payload(&RunStarted { trigger: Some(RunStartedTrigger::User), ..Default::default() })?;
    /// assert_eq!(e.data(), Some(serde_json::json!({"trigger": "user"})));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn set_payload<T: Serialize>(&mut self, payload: &T) -> Result<(), serde_json::Error> {
        let raw = serde_json::value::to_raw_value(payload)?;
        self.set_data_raw(Some(raw));
        Ok(())
    }

    /// Sets `capture` (`None` removes the attribute).
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_capture(Some(aep_core::Capture::Full));
    /// assert!(e.to_json().contains(r#""capture":"full""#));
    /// e.set_capture(None);
    /// assert_eq!(e.capture(), aep_core::Capture::Metadata);
    /// ```
    pub fn set_capture(&mut self, capture: Option<Capture>) {
        self.set_slot_present(slot::CAPTURE, capture.is_some());
        self.capture = capture;
    }

    /// Sets `severity` (`None` removes the attribute).
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_severity(Some(aep_core::Severity::Error));
    /// assert_eq!(e.severity(), aep_core::Severity::Error);
    /// e.set_severity(None);
    /// assert!(!e.to_json().contains("severity"));
    /// ```
    pub fn set_severity(&mut self, severity: Option<Severity>) {
        self.set_slot_present(slot::SEVERITY, severity.is_some());
        self.severity = severity;
    }

    /// Sets `id`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_id("01K");
    /// assert_eq!(e.id(), "01K");
    /// ```
    pub fn set_id(&mut self, id: impl AsRef<str>) {
        self.put(slot::ID, Some(id.as_ref()));
    }

    /// Sets `time`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_time("2026-07-03T10:00:00.000Z");
    /// assert_eq!(e.time(), "2026-07-03T10:00:00.000Z");
    /// ```
    pub fn set_time(&mut self, time: impl AsRef<str>) {
        self.put(slot::TIME, Some(time.as_ref()));
    }

    /// Sets `source`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_source("aep://h/agent/b");
    /// assert_eq!(e.source(), "aep://h/agent/b");
    /// ```
    pub fn set_source(&mut self, source: impl AsRef<str>) {
        self.put(slot::SOURCE, Some(source.as_ref()));
    }

    /// Sets `subject`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_subject(Some("t_1".into()));
    /// assert_eq!(e.subject(), Some("t_1"));
    /// e.set_subject(None);
    /// assert_eq!(e.subject(), None);
    /// ```
    pub fn set_subject(&mut self, v: Option<String>) {
        self.set_str(slot::SUBJECT, v.as_deref());
    }
    /// Sets `session`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_session(Some("s1".into()));
    /// assert_eq!(e.session(), Some("s1"));
    /// e.set_session(None);
    /// assert_eq!(e.session(), None);
    /// ```
    pub fn set_session(&mut self, v: Option<String>) {
        self.set_str(slot::SESSION, v.as_deref());
    }
    /// Sets `run`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_run(Some("r1".into()));
    /// assert_eq!(e.run(), Some("r1"));
    /// e.set_run(None);
    /// assert_eq!(e.run(), None);
    /// ```
    pub fn set_run(&mut self, v: Option<String>) {
        self.set_str(slot::RUN, v.as_deref());
    }
    /// Sets `step`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_step(Some("p1".into()));
    /// assert_eq!(e.step(), Some("p1"));
    /// e.set_step(None);
    /// assert_eq!(e.step(), None);
    /// ```
    pub fn set_step(&mut self, v: Option<String>) {
        self.set_str(slot::STEP, v.as_deref());
    }
    /// Sets `seq`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_seq(Some(0));
    /// assert_eq!(e.seq(), Some(0));
    /// e.set_seq(None);
    /// assert!(!e.to_json().contains("seq"));
    /// ```
    pub fn set_seq(&mut self, v: Option<u64>) {
        self.set_slot_present(slot::SEQ, v.is_some());
        self.seq = v;
    }
    /// Sets `epoch` (`None` removes the attribute; readers then see 0).
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_epoch(Some(1));
    /// assert_eq!(e.epoch(), 1);
    /// e.set_epoch(None);
    /// assert_eq!((e.epoch(), e.epoch_attr()), (0, None));
    /// ```
    pub fn set_epoch(&mut self, v: Option<u64>) {
        self.set_slot_present(slot::EPOCH, v.is_some());
        self.epoch = v;
    }
    /// Sets `cause`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_cause(Some("01I".into()));
    /// assert_eq!(e.cause(), Some("01I"));
    /// e.set_cause(None);
    /// assert_eq!(e.cause(), None);
    /// ```
    pub fn set_cause(&mut self, v: Option<String>) {
        self.set_str(slot::CAUSE, v.as_deref());
    }
    /// Sets `traceparent`.
    ///
    /// ```
    /// let mut e = aep_core::Event::new("1", "run.started", "t", "s", "a");
    /// e.set_traceparent(Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()));
    /// assert_eq!(e.traceparent(), Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    /// e.set_traceparent(None);
    /// assert_eq!(e.traceparent(), None);
    /// ```
    pub fn set_traceparent(&mut self, v: Option<String>) {
        self.set_str(slot::TRACEPARENT, v.as_deref());
    }

    crate::setters! {
        /// Builder form of [`Event::set_subject`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_subject("t_1");
        /// assert_eq!(e.subject(), Some("t_1"));
        /// ```
        #[must_use]
        pub fn with_subject(v: impl AsRef<str>) => self.set_str(slot::SUBJECT, Some(v.as_ref()));

        /// Builder form of [`Event::set_session`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_session("s1");
        /// assert_eq!(e.session(), Some("s1"));
        /// ```
        #[must_use]
        pub fn with_session(v: impl AsRef<str>) => self.set_str(slot::SESSION, Some(v.as_ref()));

        /// Builder form of [`Event::set_run`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_run("r1");
        /// assert_eq!(e.run(), Some("r1"));
        /// ```
        #[must_use]
        pub fn with_run(v: impl AsRef<str>) => self.set_str(slot::RUN, Some(v.as_ref()));

        /// Builder form of [`Event::set_step`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_step("p1");
        /// assert_eq!(e.step(), Some("p1"));
        /// ```
        #[must_use]
        pub fn with_step(v: impl AsRef<str>) => self.set_str(slot::STEP, Some(v.as_ref()));

        /// Builder form of [`Event::set_seq`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_session("s").with_seq(3);
        /// assert_eq!(e.seq(), Some(3));
        /// ```
        #[must_use]
        pub fn with_seq(v: u64) => self.set_seq(Some(v));

        /// Builder form of [`Event::set_epoch`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_epoch(2);
        /// assert!(e.to_json().ends_with(r#""epoch":2}"#));
        /// ```
        #[must_use]
        pub fn with_epoch(v: u64) => self.set_epoch(Some(v));

        /// Builder form of [`Event::set_cause`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_cause("01I");
        /// assert_eq!(e.cause(), Some("01I"));
        /// ```
        #[must_use]
        pub fn with_cause(v: impl AsRef<str>) => self.set_str(slot::CAUSE, Some(v.as_ref()));

        /// Builder form of [`Event::set_traceparent`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "run.started", "t", "s", "a").with_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        /// assert_eq!(e.traceparent(), Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
        /// ```
        #[must_use]
        pub fn with_traceparent(v: impl AsRef<str>) => self.set_str(slot::TRACEPARENT, Some(v.as_ref()));

        /// Builder form of [`Event::set_severity`].
        ///
        /// ```
        /// use aep_core::{Event, Severity};
        /// let e = Event::new("1", "error.raised", "t", "s", "a").with_severity(Severity::Critical);
        /// assert_eq!(e.severity_attr(), Some(Severity::Critical));
        /// ```
        #[must_use]
        pub fn with_severity(v: Severity) => self.set_severity(Some(v));

        /// Builder form of [`Event::set_capture`].
        ///
        /// ```
        /// use aep_core::{Capture, Event};
        /// let e = Event::new("1", "tool.completed", "t", "s", "a").with_capture(Capture::None);
        /// assert_eq!(e.capture(), Capture::None);
        /// ```
        #[must_use]
        pub fn with_capture(v: Capture) => self.set_capture(Some(v));

        /// Builder form of [`Event::set_data`].
        ///
        /// ```
        /// let e = aep_core::Event::new("1", "agent.idle", "t", "s", "a").with_data(serde_json::json!({}));
        /// assert!(e.to_json().ends_with(r#""data":{}}"#));
        /// ```
        #[must_use]
        pub fn with_data(data: Value) => self.set_data(data);
    }
}
