//! The receiving side: dedupe on `(source, id)`, `accepts` gating, one decision per
//! command and the recorded ack (AEP-0004 §2.3, §3, §4.2, §7).

use std::collections::hash_map::Entry;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use compact_str::CompactString;
use serde_json::{Map, Value};

use super::{
    is_command_type, RejectReason, ACCEPTED, DEFAULT_ACK_WINDOW, DEFAULT_DEDUPE_CAPACITY, REJECTED,
};
use crate::event::Event;
use crate::FastMap;

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

/// A target's one decision about a command (AEP-0004 §3). Exhaustive: an ack is
/// `control.accepted` or `control.rejected`, nothing else.
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

    /// The capture the ack is emitted at: a `detail` is in the `[redacted]` capture
    /// class (AEP-0004 §3), so an ack carrying one asks for `redacted` (an emitter with
    /// a lower ceiling drops the detail); any other ack is `metadata`.
    ///
    /// ```
    /// use aep_core::control::{Decision, RejectReason};
    /// use aep_core::Capture;
    /// assert_eq!(Decision::Accept.capture(), Capture::Metadata);
    /// assert_eq!(Decision::reject(RejectReason::Refused, "away").capture(), Capture::Redacted);
    /// let bare = Decision::Reject { reason: RejectReason::Refused, detail: None };
    /// assert_eq!(bare.capture(), Capture::Metadata);
    /// ```
    pub fn capture(&self) -> crate::Capture {
        match self {
            Decision::Reject {
                detail: Some(_), ..
            } => crate::Capture::Redacted,
            _ => crate::Capture::Metadata,
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

    /// The capture the ack is emitted at ([`Decision::capture`]).
    pub fn capture(&self) -> crate::Capture {
        self.decision.capture()
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
#[non_exhaustive]
pub enum TargetOutput {
    /// A new command of an accepted type: decide on it ([`ControlTarget::decide`]).
    Decide(IncomingCommand),
    /// Mint, send and [`record`](ControlTarget::record) this ack.
    EmitAck(AckToEmit),
    /// Re-send this recorded ack exactly as it was first sent (AEP-0004 §3).
    Redeliver(Event),
}

/// What [`ControlTarget::handle_command`] made of one delivery of a command: new, outside
/// `accepts`, a redelivery of an acknowledged command, or a duplicate still being decided
/// (AEP-0004 §3, §4.2).
///
/// ```
/// use std::time::Instant;
/// use aep_core::control::{ControlSender, ControlTarget, CommandDelivery};
/// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
/// let mut target = ControlTarget::new(["control.pause"]);
/// assert_eq!(target.handle_command(Instant::now(), cmd.clone())?, CommandDelivery::New);
/// // Not decided yet: the duplicate is answered by the one ack still to come.
/// assert_eq!(target.handle_command(Instant::now(), cmd)?, CommandDelivery::DuplicatePending);
/// # Ok::<(), aep_core::control::TargetError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandDelivery {
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
#[must_use = "a configuration does nothing until passed to `ControlTarget::with_config`"]
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

    crate::setters! {
        /// Sets the dedupe capacity.
        pub fn with_dedupe_capacity(capacity: usize) => dedupe_capacity = capacity;

        /// Sets the decision window.
        ///
        /// ```
        /// use std::time::Duration;
        /// use aep_core::control::{ControlTarget, TargetConfig};
        /// let target = ControlTarget::with_config(TargetConfig::new(["control.pause"]).with_decision_window(Some(Duration::from_secs(5))));
        /// assert!(target.accepts("control.pause") && !target.accepts("control.cancel"));
        /// ```
        pub fn with_decision_window(window: Option<Duration>) => decision_window = window;
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
/// use aep_core::control::{ControlSender, ControlTarget, CommandDelivery, TargetOutput};
///
/// let cmd = ControlSender::new("console", "h").command("control.cancel", "s1").build("c1", "t");
/// let mut target = ControlTarget::new(["control.pause"]);
/// assert_eq!(target.handle_command(Instant::now(), cmd.clone())?, CommandDelivery::Unsupported);
/// let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
/// assert_eq!(ack.data(), serde_json::json!({"reason": "unsupported"}));
/// // Until the ack is recorded, a redelivery waits for it.
/// assert_eq!(target.handle_command(Instant::now(), cmd)?, CommandDelivery::DuplicatePending);
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
    /// use aep_core::control::{ControlSender, ControlTarget, CommandDelivery};
    /// let sender = ControlSender::new("console", "h");
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// let pause = sender.command("control.pause", "s1").build("c1", "t");
    /// let stop = sender.command("control.cancel", "s1").build("c2", "t");
    /// assert_eq!(target.handle_command(Instant::now(), pause)?, CommandDelivery::New);
    /// assert_eq!(target.handle_command(Instant::now(), stop)?, CommandDelivery::Unsupported);
    /// # Ok::<(), aep_core::control::TargetError>(())
    /// ```
    pub fn handle_command(
        &mut self,
        now: Instant,
        command: Event,
    ) -> Result<CommandDelivery, TargetError> {
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
                        CommandDelivery::Redelivered
                    }
                    Slot::Deciding { .. } | Slot::Minting => CommandDelivery::DuplicatePending,
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
            return Ok(CommandDelivery::Unsupported);
        }
        let deadline = self.config.decision_window.map(|w| now + w);
        vacant.insert(Slot::Deciding { deadline, session });
        if let Some(d) = deadline {
            self.deadlines.push_back((d, key.clone()));
        }
        self.output
            .push_back(TargetOutput::Decide(IncomingCommand { key, command }));
        Ok(CommandDelivery::New)
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
    /// Takes the ack by value or shared: a driver that also hands the emitted ack to its
    /// application records the same `Arc` without a copy.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Instant;
    /// use aep_core::control::{CommandKey, ControlSender, ControlTarget, Decision, TargetOutput};
    /// use aep_core::Event;
    /// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// let stray = Event::new("a0", "control.accepted", "t", "aep://h", "a").with_cause("c0");
    /// // Nothing is being minted for this command, so there is nothing to record.
    /// assert!(target.record(&CommandKey::new("aep://c", "c0"), stray).is_err());
    ///
    /// target.handle_command(Instant::now(), cmd.clone())?;
    /// let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
    /// target.decide(incoming.key(), Decision::Accept)?;
    /// let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
    /// let event = Arc::new(Event::new("a1", ack.ack_type(), "t", "aep://h/agent/a", "a").with_cause(ack.cause()));
    /// target.record(ack.key(), Arc::clone(&event))?;
    /// target.handle_command(Instant::now(), cmd)?;
    /// assert_eq!(target.poll_output(), Some(TargetOutput::Redeliver((*event).clone())));
    /// # Ok::<(), aep_core::control::TargetError>(())
    /// ```
    pub fn record(
        &mut self,
        key: &CommandKey,
        ack: impl Into<Arc<Event>>,
    ) -> Result<(), TargetError> {
        let ack = ack.into();
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
    /// use aep_core::control::{ControlSender, ControlTarget, Decision, CommandDelivery, TargetOutput};
    /// let cmd = ControlSender::new("console", "h").command("control.pause", "s1").build("c1", "t");
    /// let mut target = ControlTarget::new(["control.pause"]);
    /// target.handle_command(Instant::now(), cmd.clone())?;
    /// let Some(TargetOutput::Decide(incoming)) = target.poll_output() else { panic!() };
    /// target.decide(incoming.key(), Decision::Accept)?;
    /// let Some(TargetOutput::EmitAck(ack)) = target.poll_output() else { panic!() };
    /// // ... emitting the ack failed
    /// target.abandon(ack.key())?;
    /// assert_eq!(target.remembered(), 0);
    /// assert_eq!(target.handle_command(Instant::now(), cmd)?, CommandDelivery::New);
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
