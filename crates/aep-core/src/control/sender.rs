//! The sending side: command envelopes, correlation by `cause`, retries and the
//! synthesized `timeout` (AEP-0004 §2, §3, §6, §7).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{is_command_type, Nack, ACCEPTED, DEFAULT_ACK_WINDOW, DEFAULT_RETRIES, REJECTED};
use crate::dedupe::CompactId;
use crate::event::{slot, Event};
use crate::frame::{ErrorFrame, Frame};
use crate::level::Capture;

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
    // The text goes straight into the event (`set_str`), not through a `String` first.
    crate::setters! {
        /// Narrows the target to a run.
        pub fn run(run: impl AsRef<str>) => self.event.set_str(slot::RUN, Some(run.as_ref()));

        /// Sets `subject` (for `control.attention.respond`: the `attention.requested` id,
        /// AEP-0004 §6).
        pub fn subject(subject: impl AsRef<str>) =>
            self.event.set_str(slot::SUBJECT, Some(subject.as_ref()));

        /// Sets `cause`: the event that prompted the command (AEP-0004 §6).
        pub fn cause(cause: impl AsRef<str>) =>
            self.event.set_str(slot::CAUSE, Some(cause.as_ref()));

        /// Sets the payload.
        pub fn data(data: Value) => self.event.set_data(data);

        /// Sets `capture` (default `metadata`, as the other SDKs write it).
        pub fn capture(capture: Capture) => self.event.set_capture(Some(capture));
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
    #[must_use = "the command is sent by ControlSender::send"]
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
    #[must_use = "the command is sent by ControlSender::send"]
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
    /// Shared with every transmission queued for it ([`ControlSender::poll_transmit`]):
    /// a retry is the identical envelope (AEP-0004 §2.3), so no copy is made.
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
        let source = crate::SourceUri::new(host.as_ref(), &agent);
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

    crate::setters! {
        /// Sets the default [`SendPolicy`] for [`send`](Self::send).
        #[must_use]
        pub fn with_policy(policy: SendPolicy) => policy = policy;
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
    /// Takes the event by reference or by value: an accepted command settles with the
    /// ack itself ([`Settled::result`]), so a borrowed ack is copied then, and an owned
    /// one is kept as it came.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::{control::ControlSender, Event};
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c2", "t"))?;
    /// let ack = |cause| Event::new("a1", "control.accepted", "t", "aep://t/agent/a", "a")
    ///     .with_session("s1").with_seq(3).with_cause(cause);
    /// assert!(s.handle_event(&ack("c1")));
    /// assert!(s.poll_settled().unwrap().result.is_ok());
    /// assert!(!s.handle_event(&ack("c1"))); // settled once; later acks are ignored
    /// assert!(s.handle_event(ack("c2"))); // by value: settles without a copy
    /// assert_eq!(s.poll_settled().unwrap().result.unwrap().cause(), Some("c2"));
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn handle_event<'e>(&mut self, event: impl Into<Cow<'e, Event>>) -> bool {
        match event.into() {
            Cow::Owned(event) => self.handle_ack(event),
            // Copied only when it settles a command.
            Cow::Borrowed(event) => self.acks_pending(event) && self.handle_ack(event.clone()),
        }
    }

    /// [`handle_event`](Self::handle_event) for an owned event: an accepted command
    /// settles with it as it is.
    fn handle_ack(&mut self, event: Event) -> bool {
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

    /// Whether `event` acks a pending command (AEP-0004 §6).
    fn acks_pending(&self, event: &Event) -> bool {
        let ty = event.event_type();
        (ty == ACCEPTED || ty == REJECTED)
            && event.cause().is_some_and(|c| self.pending.contains(c))
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
    /// alike. The envelope is shared with the pending command, so retries and
    /// [`pending_commands`](Self::pending_commands) hand out the same one; take a copy
    /// with `Arc::unwrap_or_clone` where an owned [`Event`] is needed.
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::control::ControlSender;
    /// let mut s = ControlSender::new("console", "h");
    /// s.send(Instant::now(), s.command("control.pause", "s1").build("c1", "t"))?;
    /// let wire = s.poll_transmit().unwrap();
    /// assert_eq!(wire.id(), "c1");
    /// assert_eq!(s.pending_commands(), [&*wire]);
    /// assert!(s.poll_transmit().is_none());
    /// # Ok::<(), aep_core::control::SendError>(())
    /// ```
    pub fn poll_transmit(&mut self) -> Option<Arc<Event>> {
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
