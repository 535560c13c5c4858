//! Control state machines: sender correlation and target dedupe (AEP-0004).
//!
//! Both sides are sans-IO state machines in the style of `quinn-proto`: they read no
//! clock and touch no socket. Time comes in as a `now: Instant` argument; input is fed
//! with `handle_*` methods; output is taken with `poll_*` methods; the next deadline is
//! [`ControlSender::poll_timeout`] / [`ControlTarget::poll_timeout`]. After feeding any
//! input, drain every `poll_*` method, then sleep until `poll_timeout()` (or the next
//! input) and call `handle_timeout(now)`.
//!
//! - [`ControlSender`] builds commands (no `seq`, `session` addressing, the sender's
//!   `source`, AEP-0004 §2), correlates acks by `cause` (§6), resends the identical
//!   envelope when the ack window closes (§2.3), and settles every command exactly once:
//!   accepted, rejected (§3), refused by the relay (§4.2), or the locally synthesized
//!   `timeout` (§3).
//! - [`ControlTarget`] dedupes commands on `(source, id)`, nacks types outside `accepts`
//!   as `unsupported` (§4.2), asks the application for exactly one decision per
//!   command, and answers a redelivery with the recorded ack, byte-identical (§3).
//!
//! ```
//! use std::time::Instant;
//! use aep_core::control::{ControlSender, ControlTarget, Decision, TargetOutput};
//! use aep_core::Event;
//!
//! let t0 = Instant::now();
//! let mut sender = ControlSender::new("console", "ops-host");
//! let cmd = sender.command("control.pause", "s1").build("01JCMD", "2026-07-03T10:00:00.000Z");
//! sender.send(t0, cmd)?;
//! let wire = sender.poll_transmit().unwrap();
//!
//! let mut target = ControlTarget::new(["control.pause"]);
//! target.handle_command(t0, wire)?;
//! let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
//! target.decide(incoming.key(), Decision::Accept)?;
//! let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
//! // The session's emitter mints the ack as an ordinary sequenced event:
//! let ack_event = Event::new("01JACK", ack.ack_type(), "2026-07-03T10:00:00.100Z", "aep://h/agent/a/session/s1", "a")
//!     .with_session("s1").with_seq(7).with_cause(ack.cause()).with_data(ack.data());
//! target.record(ack.key(), ack_event.clone())?;
//!
//! assert!(sender.handle_event(&ack_event));
//! let settled = sender.poll_settled().unwrap();
//! assert_eq!(settled.command_id, "01JCMD");
//! assert!(settled.result.is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::hash_map::Entry;
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use compact_str::CompactString;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dedupe::CompactId;
use crate::event::Event;
use crate::frame::{ErrorFrame, Frame};
use crate::level::Capture;
use crate::types::EventType;
use crate::FastMap;

pub use crate::frame::DEFAULT_ACK_WINDOW;

/// How many times a sender resends a command after the ack window closes, by default
/// (as the Python and TypeScript SDKs): three transmissions in all.
///
/// ```
/// use aep_core::control::{SendPolicy, DEFAULT_ACK_WINDOW, DEFAULT_RETRIES};
/// assert_eq!(SendPolicy::default(), SendPolicy::new(DEFAULT_ACK_WINDOW, DEFAULT_RETRIES));
/// ```
pub const DEFAULT_RETRIES: u32 = 2;

/// How many commands a target remembers for dedupe and re-acknowledgement, by default
/// (as the Python and TypeScript SDKs).
///
/// ```
/// use aep_core::control::{TargetConfig, DEFAULT_DEDUPE_CAPACITY};
/// let config = TargetConfig::new(["control.pause"]).with_dedupe_capacity(DEFAULT_DEDUPE_CAPACITY / 10);
/// assert!(format!("{config:?}").contains("1000"));
/// ```
pub const DEFAULT_DEDUPE_CAPACITY: usize = 10_000;

/// The ack types (AEP-0004 §3).
///
/// ```
/// use aep_core::control::{Decision, ACCEPTED};
/// assert_eq!(Decision::Accept.ack_type(), ACCEPTED);
/// ```
pub const ACCEPTED: &str = "control.accepted";
/// The ack types (AEP-0004 §3).
///
/// ```
/// use aep_core::control::{Decision, RejectReason, REJECTED};
/// assert_eq!(Decision::reject(RejectReason::Busy, "later").ack_type(), REJECTED);
/// ```
pub const REJECTED: &str = "control.rejected";

/// Whether `ty` is a well-formed command type: [`EventType::is_command`] on a string.
///
/// ```
/// use aep_core::control::is_command_type;
/// assert!(is_command_type("control.cancel"));
/// assert!(is_command_type("control.frobnicate"));
/// assert!(is_command_type("x.acme.control.reboot"));
/// assert!(!is_command_type("control.accepted"));
/// assert!(!is_command_type("run.started"));
/// ```
pub fn is_command_type(ty: &str) -> bool {
    EventType::parse(ty).is_ok_and(|t| t.is_command())
}

// ---------------------------------------------------------------------------
// Reasons and nacks
// ---------------------------------------------------------------------------

/// The `reason` of a `control.rejected` ack: the closed wire set of AEP-0004 §3
/// (`schemas/registry/nack-reasons.json`).
///
/// ```
/// use aep_core::control::RejectReason;
/// assert_eq!("busy".parse::<RejectReason>().unwrap(), RejectReason::Busy);
/// assert!("timeout".parse::<RejectReason>().is_err()); // sender-synthesized only
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RejectReason {
    /// The type is not in the target's `accepts` (AEP-0004 §4.2).
    Unsupported,
    /// Deployment policy denies this sender (AEP-0004 §4.3).
    Unauthorized,
    /// The target cannot take it now.
    Busy,
    /// The agent declines: a first-class, non-error outcome (AEP-0004 §2.4).
    Refused,
    /// The command is malformed.
    Invalid,
}

impl RejectReason {
    /// Every wire reason.
    ///
    /// ```
    /// use aep_core::control::RejectReason;
    /// let wire: Vec<&str> = RejectReason::ALL.iter().map(|r| r.as_str()).collect();
    /// assert_eq!(wire, ["unsupported", "unauthorized", "busy", "refused", "invalid"]);
    /// ```
    pub const ALL: [RejectReason; 5] = [
        RejectReason::Unsupported,
        RejectReason::Unauthorized,
        RejectReason::Busy,
        RejectReason::Refused,
        RejectReason::Invalid,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            RejectReason::Unsupported => "unsupported",
            RejectReason::Unauthorized => "unauthorized",
            RejectReason::Busy => "busy",
            RejectReason::Refused => "refused",
            RejectReason::Invalid => "invalid",
        }
    }
}

/// A string outside the closed reject-reason set.
///
/// ```
/// use aep_core::control::RejectReason;
/// let err = "timeout".parse::<RejectReason>().unwrap_err();
/// assert!(err.to_string().contains("unknown reject reason `timeout`"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reject reason `{0}`: expected one of unsupported, unauthorized, busy, refused, invalid (AEP-0004 §3)")]
pub struct UnknownReason(String);

impl FromStr for RejectReason {
    type Err = UnknownReason;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RejectReason::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownReason(s.to_owned()))
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a command was not accepted, as the sender sees it: a wire reason, or `timeout`,
/// which the sender synthesizes itself when the ack window closes on the last attempt
/// (AEP-0004 §3) and which never appears on the wire.
///
/// ```
/// use aep_core::control::{NackReason, RejectReason};
/// assert_eq!(NackReason::from(RejectReason::Refused), NackReason::Refused);
/// assert_eq!(NackReason::Timeout.as_str(), "timeout");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NackReason {
    /// See [`RejectReason::Unsupported`].
    Unsupported,
    /// See [`RejectReason::Unauthorized`].
    Unauthorized,
    /// See [`RejectReason::Busy`].
    Busy,
    /// See [`RejectReason::Refused`].
    Refused,
    /// See [`RejectReason::Invalid`]; also every unrecognized wire reason or relay code.
    Invalid,
    /// No ack within the window on any attempt; synthesized locally.
    Timeout,
}

impl NackReason {
    /// The spelling the other SDKs use.
    pub const fn as_str(self) -> &'static str {
        match self {
            NackReason::Unsupported => "unsupported",
            NackReason::Unauthorized => "unauthorized",
            NackReason::Busy => "busy",
            NackReason::Refused => "refused",
            NackReason::Invalid => "invalid",
            NackReason::Timeout => "timeout",
        }
    }
}

impl From<RejectReason> for NackReason {
    fn from(r: RejectReason) -> NackReason {
        match r {
            RejectReason::Unsupported => NackReason::Unsupported,
            RejectReason::Unauthorized => NackReason::Unauthorized,
            RejectReason::Busy => NackReason::Busy,
            RejectReason::Refused => NackReason::Refused,
            RejectReason::Invalid => NackReason::Invalid,
        }
    }
}

impl fmt::Display for NackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a nack came from.
///
/// ```
/// use aep_core::control::{Nack, NackOrigin};
/// assert_eq!(Nack::timeout("no ack").origin(), &NackOrigin::Synthesized);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum NackOrigin {
    /// The target's `control.rejected` ack event.
    Target(Box<Event>),
    /// A relay's `cause`-correlated `error` frame (AEP-0004 §4.2).
    Relay(Box<ErrorFrame>),
    /// The sender itself: the ack window closed on the last attempt, or the connection
    /// was closed with the command pending.
    Synthesized,
}

/// A command that was not accepted (AEP-0004 §3, §4.2).
///
/// Unrecognized wire reasons and relay codes normalize to [`NackReason::Invalid`], with
/// the original spelling kept at the front of the detail (`"no-route: ..."`), as the
/// Python and TypeScript SDKs do.
///
/// ```
/// use aep_core::control::{Nack, NackReason};
/// use aep_core::frame::{ErrorCode, ErrorFrame};
/// let nack = Nack::from_error_frame(&ErrorFrame::new(ErrorCode::NoRoute).with_detail("no emitter owns s1"));
/// assert_eq!(nack.reason(), NackReason::Invalid);
/// assert_eq!(nack.detail(), Some("no-route: no emitter owns s1"));
/// assert_eq!(nack.to_string(), "command nacked: invalid (no-route: no emitter owns s1)");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("command nacked: {reason}{}", detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
pub struct Nack {
    reason: NackReason,
    detail: Option<String>,
    origin: NackOrigin,
}

impl Nack {
    /// The reason.
    pub fn reason(&self) -> NackReason {
        self.reason
    }

    /// The detail, when one was given.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// Where the nack came from.
    pub fn origin(&self) -> &NackOrigin {
        &self.origin
    }

    /// Whether the sender synthesized this nack (never on the wire).
    pub fn is_synthesized(&self) -> bool {
        matches!(self.origin, NackOrigin::Synthesized)
    }

    /// A synthesized `timeout` nack.
    pub fn timeout(detail: impl Into<String>) -> Nack {
        Nack {
            reason: NackReason::Timeout,
            detail: Some(detail.into()),
            origin: NackOrigin::Synthesized,
        }
    }

    /// The nack a `control.rejected` event states. A missing or unknown `reason` reads
    /// as `invalid`.
    ///
    /// ```
    /// use aep_core::control::{Nack, NackReason};
    /// use aep_core::Event;
    /// let ack = Event::new("a", "control.rejected", "t", "s", "a")
    ///     .with_data(serde_json::json!({"reason": "refused", "detail": "not now"}));
    /// let nack = Nack::from_rejected(&ack);
    /// assert_eq!((nack.reason(), nack.detail()), (NackReason::Refused, Some("not now")));
    /// ```
    pub fn from_rejected(ack: &Event) -> Nack {
        #[derive(Deserialize)]
        struct Rejected {
            reason: Option<Value>,
            detail: Option<Value>,
        }
        let body: Option<Rejected> = ack.payload().ok();
        let (raw_reason, detail) = match body {
            Some(b) => (b.reason, b.detail.map(text_of)),
            None => (None, None),
        };
        let raw_reason = raw_reason.map(text_of);
        let (reason, detail) = normalize(raw_reason.as_deref(), detail);
        Nack {
            reason,
            detail,
            origin: NackOrigin::Target(Box::new(ack.clone())),
        }
    }

    /// The nack a relay's `error` frame states (AEP-0004 §4.2): its `code` when that is a
    /// reason, else `invalid` with the code kept in the detail.
    ///
    /// ```
    /// use aep_core::control::{Nack, NackReason};
    /// use aep_core::frame::{ErrorCode, ErrorFrame};
    /// let nack = Nack::from_error_frame(&ErrorFrame::new(ErrorCode::NoRoute).with_cause("c1"));
    /// assert_eq!(nack.reason(), NackReason::Invalid);
    /// assert!(nack.detail().is_some_and(|d| d.starts_with("no-route")));
    /// assert!(!nack.is_synthesized());
    /// ```
    pub fn from_error_frame(frame: &ErrorFrame) -> Nack {
        let (reason, detail) = normalize(Some(frame.code.as_str()), frame.detail.clone());
        Nack {
            reason,
            detail,
            origin: NackOrigin::Relay(Box::new(frame.clone())),
        }
    }
}

fn text_of(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A wire reason or relay code to a [`NackReason`]: the five wire reasons map to
/// themselves; anything else (including a wire `timeout`, which is sender-only) is
/// `invalid`, with the original spelling prefixed to the detail.
fn normalize(raw: Option<&str>, detail: Option<String>) -> (NackReason, Option<String>) {
    match raw.map(RejectReason::from_str) {
        Some(Ok(r)) => (r.into(), detail),
        None => (NackReason::Invalid, detail),
        Some(Err(UnknownReason(code))) => {
            let detail = match detail {
                Some(d) if !d.is_empty() => format!("{code}: {d}"),
                _ => code,
            };
            (NackReason::Invalid, Some(detail))
        }
    }
}

// ---------------------------------------------------------------------------
// Sender
// ---------------------------------------------------------------------------

/// Timing of one command: how long to wait for an ack, and how often to resend.
///
/// ```
/// use aep_core::control::SendPolicy;
/// let p = SendPolicy::default();
/// assert_eq!((p.ack_window.as_millis(), p.retries), (10_000, 2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SendPolicy {
    /// How long each transmission waits for an ack (default 10 s, AEP-0004 §3; use the
    /// target's declared `ack_window_ms` when known).
    pub ack_window: Duration,
    /// Resends after the first transmission (default 2).
    pub retries: u32,
}

impl SendPolicy {
    /// A policy with this window and retry count.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use aep_core::control::{ControlSender, SendPolicy};
    /// let t0 = Instant::now();
    /// let mut s = ControlSender::new("console", "h").with_policy(SendPolicy::new(Duration::from_secs(2), 1));
    /// s.send(t0, s.command("control.pause", "s1").build("c1", "t"))?;
    /// assert_eq!(s.poll_timeout(), Some(t0 + Duration::from_secs(2)));
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn new(ack_window: Duration, retries: u32) -> SendPolicy {
        SendPolicy {
            ack_window,
            retries,
        }
    }
}

impl Default for SendPolicy {
    fn default() -> SendPolicy {
        SendPolicy::new(DEFAULT_ACK_WINDOW, DEFAULT_RETRIES)
    }
}

/// Why a command could not be sent.
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::{ControlSender, SendError};
/// let mut s = ControlSender::new("console", "h");
/// let cmd = s.command("control.pause", "s1").build("c1", "t");
/// s.send(Instant::now(), cmd.clone())?;
/// assert_eq!(s.send(Instant::now(), cmd), Err(SendError::AlreadyPending("c1".into())));
/// # Ok::<(), SendError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The `type` is not a command type (AEP-0004 §2 rule 1).
    #[error("`{0}` is not a command type: commands are `control.{{verb}}` or `x.{{vendor}}.control.{{verb}}` (AEP-0004 §2)")]
    NotACommand(String),
    /// Commands address the target by `session` (AEP-0004 §2 rule 2).
    #[error(
        "command `{0}` has no `session`: commands address their target by session (AEP-0004 §2)"
    )]
    MissingSession(String),
    /// Commands must omit `seq` (AEP-0004 §2 rule 2).
    #[error("command `{0}` carries `seq`: the sender does not own the target session's order (AEP-0004 §2)")]
    HasSeq(String),
    /// A command with this `id` is already pending; retries are the sender's job.
    #[error(
        "command `{0}` is already pending: retries reuse the pending command, never a second send"
    )]
    AlreadyPending(String),
}

/// Builds a command envelope; see [`ControlSender::command`].
///
/// ```
/// use aep_core::control::ControlSender;
/// let sender = ControlSender::new("telegram-sink", "bot-1");
/// let cmd = sender.command("control.cancel", "s1")
///     .run("r2")
///     .data(serde_json::json!({"scope": "run"}))
///     .build("01JCMD", "2026-07-03T10:00:00.000Z");
/// assert_eq!(cmd.to_json(), r#"{"aep":"0.1","id":"01JCMD","type":"control.cancel","time":"2026-07-03T10:00:00.000Z","source":"aep://bot-1/agent/telegram-sink","agent":"telegram-sink","session":"s1","run":"r2","capture":"metadata","data":{"scope":"run"}}"#);
/// assert_eq!(cmd.seq(), None);
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until build()"]
pub struct CommandBuilder {
    /// The envelope so far, its `id` and `time` empty until [`build`](Self::build):
    /// the text goes into the event once, not into a `String` per attribute first.
    event: Event,
}

/// What the command will carry; `id` and `time` are left out, as they are not minted
/// until [`build`](CommandBuilder::build).
///
/// ```
/// use aep_core::control::ControlSender;
/// let b = ControlSender::new("console", "h").command("control.pause", "s1").run("r1");
/// let shown = format!("{b:?}");
/// assert!(shown.contains(r#"type: "control.pause""#) && shown.contains(r#"run: Some("r1")"#));
/// assert!(!shown.contains("time"));
/// ```
impl fmt::Debug for CommandBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.event;
        f.debug_struct("CommandBuilder")
            .field("type", &e.event_type())
            .field("source", &e.source())
            .field("agent", &e.agent())
            .field("session", &e.session())
            .field("run", &e.run())
            .field("subject", &e.subject())
            .field("cause", &e.cause())
            .field("capture", &e.capture())
            .field("data", &e.data_raw())
            .finish()
    }
}

impl CommandBuilder {
    /// Narrows the target to a run.
    pub fn run(mut self, run: impl AsRef<str>) -> Self {
        self.event = self.event.with_run(run);
        self
    }

    /// Sets `subject` (for `control.attention.respond`: the `attention.requested` id,
    /// AEP-0004 §6).
    pub fn subject(mut self, subject: impl AsRef<str>) -> Self {
        self.event = self.event.with_subject(subject);
        self
    }

    /// Sets `cause`: the event that prompted the command (AEP-0004 §6).
    pub fn cause(mut self, cause: impl AsRef<str>) -> Self {
        self.event = self.event.with_cause(cause);
        self
    }

    /// Sets the payload.
    pub fn data(mut self, data: Value) -> Self {
        self.event = self.event.with_data(data);
        self
    }

    /// Sets `capture` (default `metadata`, as the other SDKs write it).
    pub fn capture(mut self, capture: Capture) -> Self {
        self.event = self.event.with_capture(capture);
        self
    }

    /// The envelope stamped at `now`: a fresh monotonic ULID as its `id`
    /// ([`crate::envelope::new_ulid`]) and `now` as its RFC 3339 `time`, as every
    /// sender mints a command.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use aep_core::control::ControlSender;
    /// let s = ControlSender::new("console", "h");
    /// let at = UNIX_EPOCH + Duration::from_millis(1_783_073_704_221);
    /// let a = s.command("control.pause", "s1").build_at(at);
    /// let b = s.command("control.pause", "s1").build_at(at);
    /// assert_eq!(a.time(), "2026-07-03T10:15:04.221Z");
    /// assert!(a.id() < b.id() && a.id().len() == 26);
    /// ```
    pub fn build_at(self, now: std::time::SystemTime) -> Event {
        crate::envelope::with_id_and_time(now, |id, time| self.build(id, time))
    }

    /// The envelope, with the caller's fresh `id` (the idempotency key, AEP-0004 §2.3:
    /// a ULID's text, say) and RFC 3339 `time`. No `seq`, ever. Most callers want
    /// [`build_at`](Self::build_at), which mints both.
    ///
    /// ```
    /// use aep_core::control::ControlSender;
    /// let s = ControlSender::new("console", "h");
    /// let id = ulid::Ulid::new().to_string();
    /// let cmd = s.command("control.pause", "s1").build(&id, "2026-07-03T10:00:00.000Z");
    /// assert_eq!(cmd.id(), id);
    /// ```
    pub fn build(self, id: impl AsRef<str>, time: impl AsRef<str>) -> Event {
        let mut e = self.event;
        e.set_id(id);
        e.set_time(time);
        e
    }
}

/// A settled command: accepted (the `control.accepted` event) or nacked.
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::ControlSender;
/// let mut s = ControlSender::new("console", "h");
/// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
/// s.handle_close("connection lost");
/// let settled = s.poll_settled().unwrap();
/// assert_eq!(settled.command_id, "c1");
/// assert!(settled.result.unwrap_err().is_synthesized());
/// # Ok::<(), aep_core::control::SendError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Settled {
    /// The command's `id`.
    pub command_id: String,
    /// The ack event, or why the command was not accepted.
    pub result: Result<Event, Nack>,
}

#[derive(Debug)]
struct Pending {
    /// The command's `id` when it fits inline (30 bytes: a ULID does), held in the table
    /// itself: a lookup compares it without following two pointers (the `Arc`, then the
    /// event's text) into memory that a thousand commands in flight have likely pushed
    /// out of cache. A longer id is read from the command, so no id costs an allocation.
    id: Option<CompactId>,
    /// Shared with the transmissions queued for it (`poll_transmit_shared`); only
    /// `poll_transmit` hands out a copy.
    command: Arc<Event>,
    policy: SendPolicy,
    deadline: Instant,
    transmissions: u32,
    order: u64,
}

/// The pending commands by `id`, kept inline with each entry when short and read from
/// the command when not: no key string is allocated per command.
#[derive(Default)]
struct PendingSet {
    table: hashbrown::HashTable<Pending>,
    hasher: foldhash::fast::RandomState,
}

impl fmt::Debug for PendingSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.table.iter().map(|p| p.command.id()))
            .finish()
    }
}

impl Pending {
    fn id_bytes(&self) -> &[u8] {
        match &self.id {
            Some(inline) => inline.as_bytes(),
            None => self.command.id().as_bytes(),
        }
    }
}

impl PendingSet {
    /// The one hash of an id: over its bytes, whether read from an entry or asked for.
    fn hash(hasher: &foldhash::fast::RandomState, id: &[u8]) -> u64 {
        std::hash::BuildHasher::hash_one(hasher, id)
    }

    fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    fn get(&self, id: &str) -> Option<&Pending> {
        let id = id.as_bytes();
        self.table
            .find(Self::hash(&self.hasher, id), |p| p.id_bytes() == id)
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Pending> {
        let id = id.as_bytes();
        let hash = Self::hash(&self.hasher, id);
        self.table.find_mut(hash, |p| p.id_bytes() == id)
    }

    fn insert(&mut self, pending: Pending) {
        let hash = Self::hash(&self.hasher, pending.id_bytes());
        let hasher = &self.hasher;
        self.table
            .insert_unique(hash, pending, |p| Self::hash(hasher, p.id_bytes()));
    }

    fn remove(&mut self, id: &str) -> Option<Pending> {
        let id = id.as_bytes();
        let hash = Self::hash(&self.hasher, id);
        self.table
            .find_entry(hash, |p| p.id_bytes() == id)
            .ok()
            .map(|e| e.remove().0)
    }

    fn values(&self) -> impl Iterator<Item = &Pending> {
        self.table.iter()
    }

    fn len(&self) -> usize {
        self.table.len()
    }
}

/// The sending side of control (AEP-0004 §2, §3, §7): correlation, retries, timeouts.
///
/// Feed every inbound event to [`handle_event`](Self::handle_event) and every inbound
/// frame to [`handle_frame`](Self::handle_frame); write every command from
/// [`poll_transmit`](Self::poll_transmit) to the duplex; collect outcomes from
/// [`poll_settled`](Self::poll_settled); call [`handle_timeout`](Self::handle_timeout)
/// at [`poll_timeout`](Self::poll_timeout).
///
/// Every transmission of a command is the identical envelope (same `id`, same `source`),
/// so the target's `(source, id)` dedupe makes retries safe and elicits the recorded ack
/// (AEP-0004 §2.3, §3). Each command settles exactly once; acks that arrive later are
/// ignored.
///
/// ```
/// use std::time::{Duration, Instant};
/// use aep_core::control::{ControlSender, NackReason};
///
/// let t0 = Instant::now();
/// let mut s = ControlSender::new("console", "ops-host");
/// s.send(t0, s.command("control.pause", "s1").build("c1", "2026-07-03T10:00:00.000Z"))?;
/// assert_eq!(s.poll_timeout(), Some(t0 + Duration::from_secs(10)));
/// // Silence: two resends of the identical envelope, then the synthesized timeout.
/// let first = s.poll_transmit().unwrap();
/// for k in 1..=2 {
///     s.handle_timeout(t0 + Duration::from_secs(10 * k));
///     assert_eq!(s.poll_transmit().unwrap().to_json(), first.to_json());
/// }
/// s.handle_timeout(t0 + Duration::from_secs(30));
/// let nack = s.poll_settled().unwrap().result.unwrap_err();
/// assert_eq!(nack.reason(), NackReason::Timeout);
/// assert!(nack.is_synthesized());
/// # Ok::<(), aep_core::control::SendError>(())
/// ```
#[derive(Debug)]
pub struct ControlSender {
    source: String,
    agent: String,
    policy: SendPolicy,
    pending: PendingSet,
    next_order: u64,
    transmit: VecDeque<Arc<Event>>,
    settled: VecDeque<Settled>,
}

impl ControlSender {
    /// A sender speaking as `agent` on `host`: commands carry `agent` and the source
    /// `aep://{host}/agent/{agent}` (AEP-0004 §2 rule 2: `agent` names the sender).
    pub fn new(agent: impl Into<String>, host: impl AsRef<str>) -> ControlSender {
        let agent = agent.into();
        let source = format!("aep://{}/agent/{agent}", host.as_ref());
        ControlSender::with_source(agent, source)
    }

    /// A sender with an explicit `source` URI.
    ///
    /// ```
    /// let s = aep_core::control::ControlSender::with_source("console", "aep://h/agent/console");
    /// assert_eq!(s.source(), "aep://h/agent/console");
    /// ```
    pub fn with_source(agent: impl Into<String>, source: impl Into<String>) -> ControlSender {
        ControlSender {
            source: source.into(),
            agent: agent.into(),
            policy: SendPolicy::default(),
            pending: PendingSet::default(),
            next_order: 0,
            transmit: VecDeque::new(),
            settled: VecDeque::new(),
        }
    }

    /// Sets the default [`SendPolicy`] for [`send`](Self::send).
    pub fn with_policy(mut self, policy: SendPolicy) -> ControlSender {
        self.policy = policy;
        self
    }

    /// The sender's `source`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The sender's `agent`.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The default policy.
    pub fn policy(&self) -> SendPolicy {
        self.policy
    }

    /// Starts a command of `command_type` addressed to `session`, from this sender.
    pub fn command(
        &self,
        command_type: impl AsRef<str>,
        session: impl AsRef<str>,
    ) -> CommandBuilder {
        let ty = command_type.as_ref();
        CommandBuilder {
            event: Event::from_strs("", ty, "", &self.source, &self.agent)
                .with_session(session)
                .with_capture(Capture::Metadata),
        }
    }

    /// Sends `command` under the default policy: queues its first transmission and
    /// starts the ack window at `now`.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::ControlSender;
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// assert!(s.is_pending("c1"));
    /// assert_eq!(s.poll_transmit().map(|e| e.id().to_owned()), Some("c1".into()));
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn send(&mut self, now: Instant, command: Event) -> Result<(), SendError> {
        self.send_with(now, command, self.policy)
    }

    /// Sends `command` under `policy`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use aep_core::control::{ControlSender, SendError, SendPolicy};
    /// let mut s = ControlSender::new("c", "h");
    /// let t0 = Instant::now();
    /// let cmd = s.command("control.pause", "s1").build("c1", "t");
    /// s.send_with(t0, cmd.clone(), SendPolicy::new(Duration::from_secs(1), 0))?;
    /// assert_eq!(s.send(t0, cmd), Err(SendError::AlreadyPending("c1".into())));
    /// # Ok::<(), SendError>(())
    /// ```
    pub fn send_with(
        &mut self,
        now: Instant,
        command: Event,
        policy: SendPolicy,
    ) -> Result<(), SendError> {
        let id = || command.id().to_owned();
        if !is_command_type(command.event_type()) {
            return Err(SendError::NotACommand(command.event_type().to_owned()));
        }
        if command.session().is_none() {
            return Err(SendError::MissingSession(id()));
        }
        if command.seq().is_some() {
            return Err(SendError::HasSeq(id()));
        }
        if self.pending.contains(command.id()) {
            return Err(SendError::AlreadyPending(id()));
        }
        let command = Arc::new(command);
        self.transmit.push_back(Arc::clone(&command));
        let order = self.next_order;
        self.next_order += 1;
        self.pending.insert(Pending {
            id: CompactId::inline(command.id()),
            command,
            policy,
            deadline: now + policy.ack_window,
            transmissions: 1,
            order,
        });
        Ok(())
    }

    /// Feeds an inbound event. Returns whether it settled a pending command: a
    /// `control.accepted` or `control.rejected` whose `cause` is a pending command's
    /// `id` (AEP-0004 §6). Everything else is ignored.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::{control::ControlSender, Event};
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// let ack = Event::new("a1", "control.accepted", "t", "aep://t/agent/a", "a")
    ///     .with_session("s1").with_seq(3).with_cause("c1");
    /// assert!(s.handle_event(&ack));
    /// assert!(s.poll_settled().unwrap().result.is_ok());
    /// assert!(!s.handle_event(&ack)); // settled once; later acks are ignored
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn handle_event(&mut self, event: &Event) -> bool {
        let Some((cause, accepted)) = self.take_acked(event) else {
            return false;
        };
        let result = if accepted {
            Ok(event.clone())
        } else {
            Err(Nack::from_rejected(event))
        };
        self.settled.push_back(Settled {
            command_id: cause.to_owned(),
            result,
        });
        true
    }

    /// As [`handle_event`](Self::handle_event), taking the event: an accepted command
    /// settles with it as it came, without a copy.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::{control::ControlSender, Event};
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// let ack = Event::new("a1", "control.accepted", "t", "aep://t/agent/a", "a")
    ///     .with_session("s1").with_seq(3).with_cause("c1");
    /// assert!(s.handle_event_owned(ack));
    /// assert_eq!(s.poll_settled().unwrap().result.unwrap().id(), "a1");
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn handle_event_owned(&mut self, event: Event) -> bool {
        let Some((cause, accepted)) = self.take_acked(&event) else {
            return false;
        };
        let command_id = cause.to_owned();
        let result = if accepted {
            Ok(event)
        } else {
            Err(Nack::from_rejected(&event))
        };
        self.settled.push_back(Settled { command_id, result });
        true
    }

    /// Forgets the pending command `event` acks, if any (AEP-0004 §6); returns its id
    /// and whether the ack accepts it.
    fn take_acked<'e>(&mut self, event: &'e Event) -> Option<(&'e str, bool)> {
        let ty = event.event_type();
        if ty != ACCEPTED && ty != REJECTED {
            return None;
        }
        let cause = event.cause()?;
        self.pending.remove(cause)?;
        Some((cause, ty == ACCEPTED))
    }

    /// Feeds an inbound frame. Returns whether it settled a pending command: an `error`
    /// frame whose `cause` is a pending command's `id` refuses that command, whatever
    /// its code (AEP-0004 §4.2). Other frames are ignored.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::{ControlSender, NackReason};
    /// use aep_core::frame::{ErrorCode, ErrorFrame, Frame};
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// assert!(s.handle_frame(&Frame::Error(ErrorFrame::new(ErrorCode::Unauthorized).with_cause("c1"))));
    /// assert_eq!(s.poll_settled().unwrap().result.unwrap_err().reason(), NackReason::Unauthorized);
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn handle_frame(&mut self, frame: &Frame) -> bool {
        match frame {
            Frame::Error(e) => self.handle_error_frame(e),
            _ => false,
        }
    }

    /// Feeds an inbound `error` frame; see [`handle_frame`](Self::handle_frame).
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::ControlSender;
    /// use aep_core::frame::{ErrorCode, ErrorFrame};
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// // An error frame about another command settles nothing.
    /// assert!(!s.handle_error_frame(&ErrorFrame::new(ErrorCode::NoRoute).with_cause("c9")));
    /// assert!(s.is_pending("c1"));
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn handle_error_frame(&mut self, frame: &ErrorFrame) -> bool {
        let Some(cause) = frame.cause.as_deref() else {
            return false;
        };
        if !self.pending.contains(cause) {
            return false;
        }
        self.settle(cause.to_owned(), Err(Nack::from_error_frame(frame)));
        true
    }

    /// Advances time: every command whose window has closed is resent (identical
    /// envelope) while retries remain, else settled as a synthesized `timeout`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use aep_core::control::{ControlSender, SendPolicy};
    /// let t0 = Instant::now();
    /// let mut s = ControlSender::new("console", "h").with_policy(SendPolicy::new(Duration::from_secs(1), 0));
    /// s.send(t0, s.command("control.pause", "s1").build("c1", "t"))?;
    /// s.handle_timeout(t0 + Duration::from_millis(999));
    /// assert!(s.is_pending("c1")); // the window is still open
    /// s.handle_timeout(t0 + Duration::from_secs(1));
    /// assert!(s.poll_settled().unwrap().result.unwrap_err().is_synthesized());
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut due: Vec<(Instant, u64, String)> = self
            .pending
            .values()
            .filter(|p| p.deadline <= now)
            .map(|p| (p.deadline, p.order, p.command.id().to_owned()))
            .collect();
        due.sort();
        for (_, _, id) in due {
            let Some(p) = self.pending.get_mut(&id) else {
                continue;
            };
            if p.transmissions <= p.policy.retries {
                p.transmissions += 1;
                p.deadline = now + p.policy.ack_window;
                self.transmit.push_back(Arc::clone(&p.command));
            } else {
                let detail = format!(
                    "no ack within {} ms x {}",
                    p.policy.ack_window.as_millis(),
                    p.transmissions
                );
                self.settle(id, Err(Nack::timeout(detail)));
            }
        }
    }

    /// The connection is gone: settles every pending command as a synthesized
    /// `timeout` carrying `detail`, as the Python SDK does when its duplex closes.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::{ControlSender, NackReason};
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// s.handle_close("socket closed");
    /// let nack = s.poll_settled().unwrap().result.unwrap_err();
    /// assert_eq!((nack.reason(), nack.is_synthesized()), (NackReason::Timeout, true));
    /// assert_eq!(s.pending_len(), 0);
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn handle_close(&mut self, detail: &str) {
        let mut ids: Vec<(u64, String)> = self
            .pending
            .values()
            .map(|p| (p.order, p.command.id().to_owned()))
            .collect();
        ids.sort();
        self.transmit.clear();
        for (_, id) in ids {
            self.settle(id, Err(Nack::timeout(detail)));
        }
    }

    /// The next command transmission to write to the duplex, first sends and retries
    /// alike.
    pub fn poll_transmit(&mut self) -> Option<Event> {
        self.transmit.pop_front().map(Arc::unwrap_or_clone)
    }

    /// As [`poll_transmit`](Self::poll_transmit), without copying the envelope: the
    /// pending command and its transmissions share it.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::ControlSender;
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// let wire = s.poll_transmit_shared().unwrap();
    /// assert_eq!(wire.id(), "c1");
    /// assert_eq!(s.pending_commands(), [&*wire]);
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn poll_transmit_shared(&mut self) -> Option<Arc<Event>> {
        self.transmit.pop_front()
    }

    /// The next settled command.
    pub fn poll_settled(&mut self) -> Option<Settled> {
        self.settled.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called: the earliest
    /// ack-window deadline, or `None` with nothing pending.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.deadline).min()
    }

    /// Whether the command with this `id` is still awaiting its ack.
    pub fn is_pending(&self, command_id: &str) -> bool {
        self.pending.contains(command_id)
    }

    /// How many commands await their ack.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// The commands awaiting their ack, in the order they were sent: what to transmit
    /// again, unchanged, on a new connection.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::ControlSender;
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// s.send(Instant::now(), s.command("control.resume", "s1").build("c2", "t"))?;
    /// let ids: Vec<&str> = s.pending_commands().iter().map(|c| c.id()).collect();
    /// assert_eq!(ids, ["c1", "c2"]);
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn pending_commands(&self) -> Vec<&Event> {
        let mut pending: Vec<&Pending> = self.pending.values().collect();
        pending.sort_by_key(|p| p.order);
        pending.into_iter().map(|p| &*p.command).collect()
    }

    fn settle(&mut self, id: String, result: Result<Event, Nack>) {
        self.pending.remove(&id);
        self.settled.push_back(Settled {
            command_id: id,
            result,
        });
    }
}

// ---------------------------------------------------------------------------
// Target
// ---------------------------------------------------------------------------

/// The dedupe key of a command: `(source, id)` (AEP-0001 §7.4, AEP-0004 §2.3).
///
/// ```
/// use aep_core::control::CommandKey;
/// let k = CommandKey::new("aep://h/agent/console", "c1");
/// assert_eq!((k.source(), k.id()), ("aep://h/agent/console", "c1"));
/// // The same characters split differently are another command.
/// assert_ne!(CommandKey::new("aep://h/a", "bc"), CommandKey::new("aep://h/ab", "c"));
/// ```
///
/// Cheap to clone: the target keeps a key in its dedupe map, its eviction order, its
/// deadline queue and every output about the command, so both strings live in one
/// shared buffer.
#[derive(Clone, Eq)]
pub struct CommandKey {
    /// `source` then `id`, back to back.
    text: Arc<str>,
    /// Where `id` starts in `text`.
    split: usize,
}

impl PartialEq for CommandKey {
    fn eq(&self, other: &Self) -> bool {
        // Clones of one key share their text, and the target's tables hold clones (the
        // dedupe map, its eviction order): comparing the pointers first spares reading
        // text long out of cache. `Arc`'s own shortcut does not apply to `Arc<str>`.
        self.split == other.split
            && (Arc::ptr_eq(&self.text, &other.text) || self.text == other.text)
    }
}

// Written out beside `PartialEq`, and hashing what it compares: equal keys hash equal.
impl std::hash::Hash for CommandKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state);
        self.split.hash(state);
    }
}

impl fmt::Debug for CommandKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandKey")
            .field("source", &self.source())
            .field("id", &self.id())
            .finish()
    }
}

impl CommandKey {
    /// A key.
    pub fn new(source: impl AsRef<str>, id: impl AsRef<str>) -> CommandKey {
        CommandKey::from_parts(source.as_ref(), id.as_ref())
    }

    fn from_parts(source: &str, id: &str) -> CommandKey {
        // Joined on the stack when short, as they nearly always are: `Arc<str>` copies
        // its text into its own allocation, so a joined `String` would be a second one
        // per command.
        let mut buf = [0u8; 128];
        let joined = buf
            .get_mut(..source.len() + id.len())
            .and_then(|dst| {
                let (a, b) = dst.split_at_mut(source.len());
                a.copy_from_slice(source.as_bytes());
                b.copy_from_slice(id.as_bytes());
                std::str::from_utf8(dst).ok()
            })
            .map(Arc::from);
        CommandKey {
            text: joined.unwrap_or_else(|| Arc::from([source, id].concat())),
            split: source.len(),
        }
    }

    /// The key of `command`.
    ///
    /// ```
    /// use aep_core::control::{CommandKey, ControlSender};
    /// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
    /// let key = CommandKey::of(&cmd);
    /// assert_eq!((key.source(), key.id()), ("aep://h/agent/console", "c1"));
    /// assert_eq!(key, CommandKey::new("aep://h/agent/console", "c1"));
    /// ```
    pub fn of(command: &Event) -> CommandKey {
        CommandKey::from_parts(command.source(), command.id())
    }

    /// The command's `source`.
    pub fn source(&self) -> &str {
        self.text.get(..self.split).unwrap_or_default()
    }

    /// The command's `id`: the `cause` of its ack.
    pub fn id(&self) -> &str {
        self.text.get(self.split..).unwrap_or_default()
    }
}

/// A target's one decision about a command (AEP-0004 §3).
///
/// ```
/// use aep_core::control::{Decision, RejectReason};
/// let d = Decision::reject(RejectReason::Refused, "operator is away");
/// assert_eq!(d.ack_type(), "control.rejected");
/// assert_eq!(d.data(), serde_json::json!({"reason": "refused", "detail": "operator is away"}));
/// assert_eq!(Decision::Accept.data(), serde_json::json!({}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The target will attempt the command.
    Accept,
    /// The target will not.
    Reject {
        /// Why.
        reason: RejectReason,
        /// Optional human-readable detail (`[redacted]` capture class, AEP-0004 §3).
        detail: Option<String>,
    },
}

impl Decision {
    /// A rejection with a detail.
    pub fn reject(reason: RejectReason, detail: impl Into<String>) -> Decision {
        Decision::Reject {
            reason,
            detail: Some(detail.into()),
        }
    }

    /// The ack event type embodying this decision.
    pub fn ack_type(&self) -> &'static str {
        match self {
            Decision::Accept => ACCEPTED,
            Decision::Reject { .. } => REJECTED,
        }
    }

    /// The ack payload: `{}` or `{"reason", "detail"?}` (AEP-0004 §3).
    pub fn data(&self) -> Value {
        let mut m = Map::new();
        if let Decision::Reject { reason, detail } = self {
            m.insert("reason".to_owned(), Value::from(reason.as_str()));
            if let Some(d) = detail {
                m.insert("detail".to_owned(), Value::from(d.as_str()));
            }
        }
        Value::Object(m)
    }
}

/// A new command the application must decide on, exactly once, with
/// [`ControlTarget::decide`].
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::{ControlSender, ControlTarget, Decision, TargetOutput};
/// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
/// let mut target = ControlTarget::new(["control.pause"]);
/// target.handle_command(Instant::now(), cmd)?;
/// let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
/// assert_eq!(incoming.command().id(), "c1");
/// target.decide(incoming.key(), Decision::Accept)?;
/// # Ok::<(), aep_core::control::TargetError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct IncomingCommand {
    key: CommandKey,
    command: Event,
}

impl IncomingCommand {
    /// The dedupe key to decide under.
    pub fn key(&self) -> &CommandKey {
        &self.key
    }

    /// The command as received.
    pub fn command(&self) -> &Event {
        &self.command
    }

    /// Takes the command.
    pub fn into_command(self) -> Event {
        self.command
    }
}

/// An ack decision to mint: the session's emitter turns it into an ordinary sequenced
/// session event of type [`ack_type`](Self::ack_type), payload [`data`](Self::data) and
/// `cause` [`cause`](Self::cause) (AEP-0004 §2 rule 2, §3), sends it, and hands the
/// emitted event back with [`ControlTarget::record`] so redeliveries re-send it
/// byte-identically.
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::{ControlSender, ControlTarget, Decision, TargetOutput};
/// use aep_core::Event;
/// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
/// let mut target = ControlTarget::new(["control.pause"]);
/// target.handle_command(Instant::now(), cmd.clone())?;
/// let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
/// target.decide(incoming.key(), Decision::Accept)?;
/// let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
/// assert_eq!((ack.ack_type(), ack.cause(), ack.session()), ("control.accepted", "c1", Some("s1")));
/// let event = Event::new("a1", ack.ack_type(), "t", "aep://agent-host/agent/a", "a")
///     .with_session("s1").with_seq(7).with_cause(ack.cause()).with_data(ack.data());
/// target.record(ack.key(), event.clone())?;
/// // A redelivery now gets the recorded ack back, byte for byte (AEP-0004 §3).
/// target.handle_command(Instant::now(), cmd)?;
/// assert_eq!(target.poll_output(), Some(TargetOutput::Redeliver(event)));
/// # Ok::<(), aep_core::control::TargetError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AckToEmit {
    key: CommandKey,
    session: Option<CompactString>,
    decision: Decision,
}

impl AckToEmit {
    /// The command's key, to [`record`](ControlTarget::record) the emitted ack under.
    pub fn key(&self) -> &CommandKey {
        &self.key
    }

    /// The ack's `cause`: the command's `id` (AEP-0004 §6).
    pub fn cause(&self) -> &str {
        self.key.id()
    }

    /// The session the command addressed, where the ack belongs.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The decision.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// `control.accepted` or `control.rejected`.
    pub fn ack_type(&self) -> &'static str {
        self.decision.ack_type()
    }

    /// The ack payload.
    pub fn data(&self) -> Value {
        self.decision.data()
    }
}

/// What a [`ControlTarget`] asks its driver to do.
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::{ControlSender, ControlTarget, TargetOutput};
/// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
/// let mut target = ControlTarget::new(["control.pause"]);
/// target.handle_command(Instant::now(), cmd)?;
/// assert!(matches!(target.poll_output(), Some(TargetOutput::Decide(_))));
/// assert_eq!(target.poll_output(), None);
/// # Ok::<(), aep_core::control::TargetError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum TargetOutput {
    /// A new command of an accepted type: decide on it ([`ControlTarget::decide`]).
    Decide(IncomingCommand),
    /// Mint, send and [`record`](ControlTarget::record) this ack.
    EmitAck(AckToEmit),
    /// Re-send this recorded ack exactly as it was first sent (AEP-0004 §3).
    Redeliver(Event),
}

/// What [`ControlTarget::handle_command`] made of a delivery.
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::{ControlSender, ControlTarget, Delivery};
/// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
/// let mut target = ControlTarget::new(["control.pause"]);
/// assert_eq!(target.handle_command(Instant::now(), cmd.clone())?, Delivery::New);
/// // Not decided yet: the duplicate is answered by the one ack still to come.
/// assert_eq!(target.handle_command(Instant::now(), cmd)?, Delivery::DuplicatePending);
/// # Ok::<(), aep_core::control::TargetError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A new command of an accepted type; a [`TargetOutput::Decide`] is queued.
    New,
    /// A new command outside `accepts`; an `unsupported` [`TargetOutput::EmitAck`] is
    /// queued (AEP-0004 §4.2).
    Unsupported,
    /// A redelivery of an acknowledged command; a [`TargetOutput::Redeliver`] of the
    /// recorded ack is queued.
    Redelivered,
    /// A redelivery while the decision is pending: the one forthcoming ack answers it.
    DuplicatePending,
}

/// Why the target refused an input.
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::{CommandKey, ControlTarget, Decision, TargetError};
/// use aep_core::Event;
/// let mut target = ControlTarget::new(["control.pause"]);
/// let event = Event::new("e1", "tool.completed", "t", "aep://h/agent/a", "a");
/// assert_eq!(target.handle_command(Instant::now(), event), Err(TargetError::NotACommand("tool.completed".into())));
/// assert!(target.decide(&CommandKey::new("aep://h", "nope"), Decision::Accept).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// [`ControlTarget::handle_command`] was fed an event that is not a command.
    #[error("`{0}` is not a command type; only `control.{{verb}}` and `x.{{vendor}}.control.{{verb}}` events are commands (AEP-0004 §2)")]
    NotACommand(String),
    /// [`ControlTarget::decide`] for a command not awaiting a decision: never
    /// delivered, forgotten, or already decided (one decision per command, AEP-0004 §3).
    #[error("command `{0}` is not awaiting a decision (unknown, forgotten, or already decided: AEP-0004 §3 allows one decision per command)")]
    NotAwaitingDecision(String),
    /// [`ControlTarget::record`] for a command with no ack being minted.
    #[error("command `{0}` has no ack awaiting its record")]
    NotAwaitingRecord(String),
    /// The recorded ack's `cause` is not the command's `id`.
    #[error("ack for command `{id}` has cause {cause:?}; an ack's cause is its command's id (AEP-0004 §6)")]
    CauseMismatch {
        /// The command id.
        id: String,
        /// The ack's cause.
        cause: Option<String>,
    },
}

/// Configuration of a [`ControlTarget`].
///
/// ```
/// use aep_core::control::TargetConfig;
/// let c = TargetConfig::new(["control.pause", "control.resume"]).with_dedupe_capacity(100);
/// assert_eq!(c.dedupe_capacity, 100);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TargetConfig {
    /// The command types the target declares in `hello.capabilities.control.accepts`;
    /// authoritative (AEP-0004 §4.2).
    pub accepts: Vec<String>,
    /// How many acknowledged commands are remembered for dedupe and re-ack, oldest
    /// forgotten first (default 10 000). A forgotten command's redelivery reads as new
    /// (AEP-0004 §3). Commands awaiting a decision or a record are not forgotten (one
    /// whose ack cannot be emitted is [`ControlTarget::abandon`]ed by its driver).
    pub dedupe_capacity: usize,
    /// How long the application may take to decide before the target rejects the
    /// command `busy` itself, so that every command is acked within the window
    /// (AEP-0004 §7). Default: the 10 s ack window. `None` waits forever.
    pub decision_window: Option<Duration>,
}

impl TargetConfig {
    /// A configuration accepting `accepts`, with the defaults.
    pub fn new<I, S>(accepts: I) -> TargetConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        TargetConfig {
            accepts: accepts.into_iter().map(Into::into).collect(),
            dedupe_capacity: DEFAULT_DEDUPE_CAPACITY,
            decision_window: Some(DEFAULT_ACK_WINDOW),
        }
    }

    /// Whether `command_type` is declared in [`accepts`](Self::accepts) (AEP-0004 §4.2).
    ///
    /// ```
    /// let config = aep_core::control::TargetConfig::new(["control.pause"]);
    /// assert!(config.accepts("control.pause") && !config.accepts("control.cancel"));
    /// ```
    pub fn accepts(&self, command_type: &str) -> bool {
        self.accepts.iter().any(|t| t == command_type)
    }

    /// Sets the dedupe capacity.
    pub fn with_dedupe_capacity(mut self, capacity: usize) -> TargetConfig {
        self.dedupe_capacity = capacity;
        self
    }

    /// Sets the decision window.
    ///
    /// ```
    /// use std::time::Duration;
    /// use aep_core::control::{ControlTarget, TargetConfig};
    /// let target = ControlTarget::with_config(TargetConfig::new(["control.pause"]).with_decision_window(Some(Duration::from_secs(5))));
    /// assert!(target.accepts("control.pause") && !target.accepts("control.cancel"));
    /// ```
    pub fn with_decision_window(mut self, window: Option<Duration>) -> TargetConfig {
        self.decision_window = window;
        self
    }
}

#[derive(Debug)]
enum Slot {
    /// Awaiting the application's decision.
    Deciding {
        deadline: Option<Instant>,
        session: Option<CompactString>,
    },
    /// Decided; the ack is being minted.
    Minting,
    /// The ack as emitted, shared with whoever emitted it.
    Recorded(Arc<Event>),
}

/// The receiving side of control (AEP-0004 §2.3, §3, §4.2, §7).
///
/// Feed each inbound command to [`handle_command`](Self::handle_command), then drain
/// [`poll_output`](Self::poll_output):
/// - [`TargetOutput::Decide`]: call [`decide`](Self::decide) (now or later; within the
///   decision window) and carry the command out if you accept it;
/// - [`TargetOutput::EmitAck`]: mint the ack through the session's emitter, send it, and
///   [`record`](Self::record) the emitted event;
/// - [`TargetOutput::Redeliver`]: send the event as is.
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::{ControlSender, ControlTarget, Delivery, TargetOutput};
///
/// let cmd = ControlSender::new("console", "h").command("control.cancel", "s1").build("c1", "t");
/// let mut target = ControlTarget::new(["control.pause"]);
/// assert_eq!(target.handle_command(Instant::now(), cmd.clone())?, Delivery::Unsupported);
/// let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
/// assert_eq!(ack.data(), serde_json::json!({"reason": "unsupported"}));
/// // Until the ack is recorded, a redelivery waits for it.
/// assert_eq!(target.handle_command(Instant::now(), cmd)?, Delivery::DuplicatePending);
/// # Ok::<(), aep_core::control::TargetError>(())
/// ```
#[derive(Debug)]
pub struct ControlTarget {
    config: TargetConfig,
    /// Dedupe state and the recorded ack live in one entry because AEP-0004 §3 retains
    /// the ack exactly as long as the dedupe state; `dedupe::Dedupe` is a set and could
    /// not carry the ack or tell which key it evicted.
    slots: FastMap<CommandKey, Slot>,
    /// Recorded keys, oldest first: the eviction order.
    recorded: VecDeque<CommandKey>,
    /// Decision deadlines in arrival order, which is deadline order since the window is
    /// fixed; entries whose command was decided meanwhile are skipped lazily.
    deadlines: VecDeque<(Instant, CommandKey)>,
    output: VecDeque<TargetOutput>,
}

impl ControlTarget {
    /// A target accepting `accepts`, with the default configuration.
    pub fn new<I, S>(accepts: I) -> ControlTarget
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ControlTarget::with_config(TargetConfig::new(accepts))
    }

    /// A target with `config`.
    pub fn with_config(config: TargetConfig) -> ControlTarget {
        ControlTarget {
            config,
            slots: FastMap::default(),
            recorded: VecDeque::new(),
            deadlines: VecDeque::new(),
            output: VecDeque::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TargetConfig {
        &self.config
    }

    /// Whether `command_type` is in `accepts`.
    pub fn accepts(&self, command_type: &str) -> bool {
        self.config.accepts(command_type)
    }

    /// Feeds one delivery of a command, at `now`.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::{ControlSender, ControlTarget, Delivery};
    /// let sender = ControlSender::new("console", "h");
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// let pause = sender.command("control.pause", "s1").build("c1", "t");
    /// let stop = sender.command("control.cancel", "s1").build("c2", "t");
    /// assert_eq!(target.handle_command(Instant::now(), pause)?, Delivery::New);
    /// assert_eq!(target.handle_command(Instant::now(), stop)?, Delivery::Unsupported);
    /// # Ok::<(), aep_core::control::TargetError>(())
    /// ```
    pub fn handle_command(
        &mut self,
        now: Instant,
        command: Event,
    ) -> Result<Delivery, TargetError> {
        if !is_command_type(command.event_type()) {
            return Err(TargetError::NotACommand(command.event_type().to_owned()));
        }
        let key = CommandKey::of(&command);
        // Dedupe comes first: a redelivered unsupported command gets its recorded nack,
        // not a second decision (AEP-0004 §3).
        let vacant = match self.slots.entry(key.clone()) {
            Entry::Occupied(slot) => {
                return Ok(match slot.get() {
                    Slot::Recorded(ack) => {
                        self.output
                            .push_back(TargetOutput::Redeliver((**ack).clone()));
                        Delivery::Redelivered
                    }
                    Slot::Deciding { .. } | Slot::Minting => Delivery::DuplicatePending,
                });
            }
            Entry::Vacant(vacant) => vacant,
        };
        let session = command.session().map(CompactString::from);
        if !self.config.accepts(command.event_type()) {
            vacant.insert(Slot::Minting);
            self.output.push_back(TargetOutput::EmitAck(AckToEmit {
                key,
                session,
                decision: Decision::Reject {
                    reason: RejectReason::Unsupported,
                    detail: None,
                },
            }));
            return Ok(Delivery::Unsupported);
        }
        let deadline = self.config.decision_window.map(|w| now + w);
        vacant.insert(Slot::Deciding { deadline, session });
        if let Some(d) = deadline {
            self.deadlines.push_back((d, key.clone()));
        }
        self.output
            .push_back(TargetOutput::Decide(IncomingCommand { key, command }));
        Ok(Delivery::New)
    }

    /// Records the application's one decision about a command it was asked to decide;
    /// queues the [`TargetOutput::EmitAck`].
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::{ControlSender, ControlTarget, Decision, RejectReason, TargetOutput};
    /// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// target.handle_command(Instant::now(), cmd)?;
    /// let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
    /// target.decide(incoming.key(), Decision::reject(RejectReason::Busy, "mid-run"))?;
    /// assert!(target.decide(incoming.key(), Decision::Accept).is_err()); // one decision per command
    /// # Ok::<(), aep_core::control::TargetError>(())
    /// ```
    pub fn decide(&mut self, key: &CommandKey, decision: Decision) -> Result<(), TargetError> {
        let session = match self.slots.get_mut(key) {
            Some(slot @ Slot::Deciding { .. }) => {
                let Slot::Deciding { session, .. } = std::mem::replace(slot, Slot::Minting) else {
                    return Err(TargetError::NotAwaitingDecision(key.id().to_owned()));
                };
                session
            }
            _ => return Err(TargetError::NotAwaitingDecision(key.id().to_owned())),
        };
        self.output.push_back(TargetOutput::EmitAck(AckToEmit {
            key: key.clone(),
            session,
            decision,
        }));
        self.prune_deadlines();
        Ok(())
    }

    /// Drops decided commands from the front of the deadline queue.
    fn prune_deadlines(&mut self) {
        while let Some((d, k)) = self.deadlines.front() {
            match self.slots.get(k) {
                Some(Slot::Deciding {
                    deadline: Some(dd), ..
                }) if dd == d => break,
                _ => {
                    self.deadlines.pop_front();
                }
            }
        }
    }

    /// Records the ack event as emitted, so a redelivery of the command re-sends it
    /// byte-identically (AEP-0004 §3). Forgets the oldest records beyond the capacity.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::{CommandKey, ControlTarget};
    /// use aep_core::Event;
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// let ack = Event::new("a1", "control.accepted", "t", "aep://h", "a").with_cause("c1");
    /// // Nothing is being minted for this command, so there is nothing to record.
    /// assert!(target.record(&CommandKey::new("aep://c", "c1"), ack).is_err());
    /// ```
    pub fn record(&mut self, key: &CommandKey, ack: Event) -> Result<(), TargetError> {
        self.record_shared(key, Arc::new(ack))
    }

    /// As [`record`](Self::record), keeping a shared ack: a driver that also hands the
    /// emitted ack to its application records it without a copy.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Instant;
    /// use aep_core::control::{ControlSender, ControlTarget, Decision, TargetOutput};
    /// use aep_core::Event;
    /// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// target.handle_command(Instant::now(), cmd.clone())?;
    /// let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
    /// target.decide(incoming.key(), Decision::Accept)?;
    /// let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
    /// let event = Arc::new(Event::new("a1", ack.ack_type(), "t", "aep://h/agent/a", "a").with_cause(ack.cause()));
    /// target.record_shared(ack.key(), Arc::clone(&event))?;
    /// target.handle_command(Instant::now(), cmd)?;
    /// assert_eq!(target.poll_output(), Some(TargetOutput::Redeliver((*event).clone())));
    /// # Ok::<(), aep_core::control::TargetError>(())
    /// ```
    pub fn record_shared(&mut self, key: &CommandKey, ack: Arc<Event>) -> Result<(), TargetError> {
        if ack.cause() != Some(key.id()) {
            return Err(TargetError::CauseMismatch {
                id: key.id().to_owned(),
                cause: ack.cause().map(str::to_owned),
            });
        }
        match self.slots.get_mut(key) {
            Some(slot @ Slot::Minting) => *slot = Slot::Recorded(ack),
            _ => return Err(TargetError::NotAwaitingRecord(key.id().to_owned())),
        }
        self.recorded.push_back(key.clone());
        while self.recorded.len() > self.config.dedupe_capacity {
            if let Some(old) = self.recorded.pop_front() {
                self.slots.remove(&old);
            }
        }
        Ok(())
    }

    /// Forgets a command whose ack could not be emitted (its session has no emitter, the
    /// sink is closed), so it does not stay awaiting a record forever: no ack left the
    /// target, and a redelivery reads as new and is decided again (AEP-0004 §3: one ack
    /// per command is what was never sent).
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::{ControlSender, ControlTarget, Decision, Delivery, TargetOutput};
    /// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// target.handle_command(Instant::now(), cmd.clone())?;
    /// let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
    /// target.decide(incoming.key(), Decision::Accept)?;
    /// let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
    /// // ... emitting the ack failed
    /// target.abandon(ack.key())?;
    /// assert_eq!(target.remembered(), 0);
    /// assert_eq!(target.handle_command(Instant::now(), cmd)?, Delivery::New);
    /// # Ok::<(), aep_core::control::TargetError>(())
    /// ```
    pub fn abandon(&mut self, key: &CommandKey) -> Result<(), TargetError> {
        match self.slots.get(key) {
            Some(Slot::Minting) => {
                self.slots.remove(key);
                Ok(())
            }
            _ => Err(TargetError::NotAwaitingRecord(key.id().to_owned())),
        }
    }

    /// Advances time: commands still undecided past the decision window are rejected
    /// `busy` by the target itself, so every command is acked (AEP-0004 §7).
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some((d, _)) = self.deadlines.front() {
            if *d > now {
                break;
            }
            let Some((due, key)) = self.deadlines.pop_front() else {
                break;
            };
            // Only a command still deciding under this very deadline is due; a stale
            // entry (decided, or forgotten and delivered anew) is skipped.
            let still_due = matches!(
                self.slots.get(&key),
                Some(Slot::Deciding { deadline: Some(d), .. }) if *d == due
            );
            if !still_due {
                continue;
            }
            let _ = self.decide(
                &key,
                Decision::reject(RejectReason::Busy, "no decision within the ack window"),
            );
        }
        self.prune_deadlines();
    }

    /// The next thing to do.
    pub fn poll_output(&mut self) -> Option<TargetOutput> {
        self.output.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.front().map(|(d, _)| *d)
    }

    /// How many commands the target remembers (recorded, deciding or minting).
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::{ControlSender, ControlTarget};
    /// let sender = ControlSender::new("console", "h");
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// for id in ["c1", "c2", "c1"] {
    ///     target.handle_command(Instant::now(), sender.command("control.pause", "s1").build(id, "t"))?;
    /// }
    /// assert_eq!(target.remembered(), 2); // deduplicated on (source, id)
    /// # Ok::<(), aep_core::control::TargetError>(())
    /// ```
    pub fn remembered(&self) -> usize {
        self.slots.len()
    }
}
