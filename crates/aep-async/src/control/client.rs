//! [`ControlClient`]: a [`ControlSender`] over its own WebSocket, with reconnects.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_core::control::{ACCEPTED, REJECTED};
use aep_core::frame::{
    ErrorFrame, Frame, Hello, IdFrame, Message as AepMessage, Role, RosterEntry, Subscribe,
};
use aep_core::Event;
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_tungstenite::tungstenite::Message;
use tracing::Instrument;

use super::error::ControlError;
use super::sender::{settlement, ControlSender, SendOptions};
use crate::client::{Client, Defaults, Link};
use crate::error::TransportError;
use crate::transport::idle::{Idle, IdleTimer};
use crate::transport::ws::{
    classify, close_socket, hello as crate_hello, open, open_first, ping_frame, ws_error, Inbound,
    WsStream,
};
use crate::transport::Failover;
use aep_core::control::Nack;

/// What a [`ControlClient`] does beyond connecting (where, with what token, as whom and
/// on what reconnect schedule is the [`Client`]'s).
///
/// ```
/// use std::time::Duration;
/// use aep_async::control::ControlOptions;
/// let opts = ControlOptions::new().roster_timeout(Duration::from_secs(5));
/// # let _ = opts;
/// ```
#[derive(Debug, Clone)]
#[must_use = "options do nothing until passed to Client::control"]
pub struct ControlOptions {
    roster_timeout: Duration,
}

impl Default for ControlOptions {
    fn default() -> Self {
        ControlOptions::new()
    }
}

impl ControlOptions {
    /// A roster timeout of 10 s.
    pub fn new() -> Self {
        ControlOptions {
            roster_timeout: Duration::from_secs(10),
        }
    }
    aep_core::setters! {
        /// How long [`ControlClient::roster`] waits for its reply (default 10 s).
        pub fn roster_timeout(timeout: Duration) => roster_timeout = timeout;
    }
}

type RosterReply = oneshot::Sender<Result<Vec<RosterEntry>, ControlError>>;
type SubscribeReply = oneshot::Sender<Result<(), ControlError>>;

enum Op {
    /// Make sure the acks of this session reach us.
    Subscribe(String, SubscribeReply),
    Roster(String, RosterReply),
    Close(oneshot::Sender<()>),
}

/// Command transmissions on their way to the connection task: a vector the task swaps
/// out whole, so a burst of commands costs one wake-up and one write, and no allocation
/// per command (a channel allocates a block every few dozen messages).
#[derive(Debug, Default)]
struct Outgoing {
    queue: Mutex<Vec<String>>,
    ready: Notify,
}

impl Outgoing {
    fn push(&self, text: String) {
        let was_empty = {
            let mut q = lock(&self.queue);
            q.push(text);
            q.len() == 1
        };
        // The task takes the whole queue, so only the first push after a take wakes it.
        if was_empty {
            self.ready.notify_one();
        }
    }

    /// Everything queued, leaving `spare` (emptied) in its place.
    fn take(&self, spare: &mut Vec<String>) {
        spare.clear();
        std::mem::swap(&mut *lock(&self.queue), spare);
    }
}

#[derive(Debug)]
struct Shared {
    ops: mpsc::UnboundedSender<Op>,
    hello: Mutex<Hello>,
    closed: AtomicBool,
    next_roster: AtomicU64,
    subscribed: Mutex<HashSet<String>>,
    roster_timeout: Duration,
}

/// Sends control commands over its own WebSocket (AEP-0004), as the Python SDK's
/// `ControlClient`: [`Client::control`] opens `{base}/socket` and completes the `hello`
/// as a consumer; [`send`](Self::send) subscribes to the target session's acks
/// (once per session: acks are ordinary session events, and a fresh subscriber only sees
/// live traffic), transmits the command and resolves to the `control.accepted` event or
/// a [`Nack`](ControlError::Nack). Any number of tasks may send at once; the handle is cheap to clone.
///
/// **Reconnects.** When the connection drops, the client reconnects in the background
/// (backoff from [`Client::backoff`]; given several relays of a cluster,
/// [`Relays`](crate::Relays), to the next one at once), says `hello` again, re-subscribes every
/// session, and retransmits every pending command unchanged (same `id` and `source`):
/// a target that already decided answers with its recorded ack (AEP-0004 §3), so a
/// command whose ack was lost with the connection still settles once. Pending commands
/// are never failed by the drop itself: each keeps its ack window and retries, and
/// settles as the synthesized `timeout` if no connection carries its ack in time.
/// Transmissions made while disconnected are written after the reconnect.
/// [`close`](Self::close) ends all of it: pending commands settle as the synthesized
/// `timeout` and later sends fail with [`ControlError::Closed`].
///
/// ```no_run
/// use aep_async::control::{ControlOptions, NackReason, SendOptions};
/// use aep_async::Client;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let relay = Client::new("http://127.0.0.1:8787").token("secret");
/// let control = relay.control(ControlOptions::new()).await?;
/// match control.send("control.cancel", "s1", SendOptions::new().run("r1")).await {
///     Ok(ack) => println!("accepted by {}", ack.source()),
///     Err(e) if e.nack().is_some_and(|n| n.reason() == NackReason::Unsupported) => {
///         println!("the target does not take cancels")
///     }
///     Err(e) => println!("not accepted: {e}"),
/// }
/// control.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ControlClient {
    sender: ControlSender,
    shared: Arc<Shared>,
}

impl Client {
    /// Connects a [`ControlClient`] and completes the `hello` exchange as a consumer,
    /// all within the connect timeout; given several relays, to the first that answers
    /// (see [`Client`]). A refused upgrade is an `Http` transport error (401 for a wrong
    /// token); silence past the timeout is a timeout ([`TransportError::is_timeout`]).
    /// Feature `ws`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), aep_async::TransportError> {
    /// use aep_async::control::ControlOptions;
    /// let relay = aep_async::Client::new("http://127.0.0.1:8787").token("secret");
    /// let control = relay.control(ControlOptions::new()).await?;
    /// # let _ = control; Ok(()) }
    /// ```
    pub async fn control(&self, options: ControlOptions) -> Result<ControlClient, TransportError> {
        let link = self.link(Defaults::CONTROL);
        let hello = crate_hello(Role::Consumer, &link.agent, &link.host, None);
        let mut failover = Failover::new(link.relays.clone(), link.backoff);
        let (ws, endpoint) = open_first(&mut failover, &link, &hello).await?;
        let (ops_tx, ops_rx) = mpsc::unbounded_channel();
        // Not the op channel: the connection task owns a clone of the sender, and a
        // channel handle here would keep it open (and the task alive) after every client
        // is dropped.
        let outgoing = Arc::new(Outgoing::default());
        let out = outgoing.clone();
        let sender = ControlSender::new(&link.agent, &link.host, move |cmd: &Event| {
            out.push(cmd.to_json());
        });
        let shared = Arc::new(Shared {
            ops: ops_tx,
            hello: Mutex::new(endpoint),
            closed: AtomicBool::new(false),
            next_roster: AtomicU64::new(0),
            subscribed: Mutex::new(HashSet::new()),
            roster_timeout: options.roster_timeout,
        });
        let span = tracing::info_span!("aep_control_client", relays = %link.relays);
        let task = Task {
            failover,
            link,
            hello,
            ops: ops_rx,
            sender: sender.clone(),
            shared: Arc::downgrade(&shared),
            sessions: HashMap::new(),
            next_sub: 0,
            rosters: HashMap::new(),
            outgoing,
            batch: Vec::new(),
        };
        tokio::spawn(task.run(ws).instrument(span));
        Ok(ControlClient { sender, shared })
    }
}

impl ControlClient {
    /// The endpoint's `hello` (the latest, after a reconnect).
    pub fn hello(&self) -> Hello {
        lock(&self.shared.hello).clone()
    }

    /// The underlying sender (its `source`, pending count).
    pub fn sender(&self) -> &ControlSender {
        &self.sender
    }

    /// Sends a command of `command_type` to `session` and waits for its settlement:
    /// the `control.accepted` event, or [`ControlError::Nack`] with the reason (a
    /// `control.rejected`; a relay `error` frame with matching `cause`, unknown codes
    /// read as `invalid`; or the synthesized `timeout` after `1 + retries` windows).
    pub async fn send(
        &self,
        command_type: &str,
        session: &str,
        options: SendOptions,
    ) -> Result<Event, ControlError> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(ControlError::Closed);
        }
        self.ensure_subscribed(session).await?;
        // Built here rather than by way of `send_command`, which holds the envelope
        // across the wait above: every send's future would grow by an `Event`.
        let command = self.sender.command(command_type, session, &options);
        let rx = self.sender.start(command, options.policy())?;
        settlement(rx).await
    }

    /// Sends an envelope you built (see [`ControlSender::command`]).
    pub async fn send_command(
        &self,
        command: Event,
        options: SendOptions,
    ) -> Result<Event, ControlError> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(ControlError::Closed);
        }
        if let Some(session) = command.session() {
            self.ensure_subscribed(session).await?;
        }
        let rx = self.sender.start(command, options.policy())?;
        settlement(rx).await
    }

    /// Subscribes to `session`'s acks unless done already. Only the first send to a
    /// session waits; its future is boxed so that every send's future stays small.
    async fn ensure_subscribed(&self, session: &str) -> Result<(), ControlError> {
        if lock(&self.shared.subscribed).contains(session) {
            return Ok(());
        }
        Box::pin(self.subscribe(session)).await
    }

    async fn subscribe(&self, session: &str) -> Result<(), ControlError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .ops
            .send(Op::Subscribe(session.to_owned(), tx))
            .map_err(|_| ControlError::Closed)?;
        rx.await.map_err(|_| ControlError::Closed)??;
        lock(&self.shared.subscribed).insert(session.to_owned());
        Ok(())
    }

    /// The endpoint's live-claim snapshot (AEP-0003 §4.1): one entry per session a
    /// connected emitter owns, with its declared `control` block. A snapshot, never a
    /// promise: the target's `accepts` at command time decides (AEP-0004 §4).
    ///
    /// Fails at once with [`ControlError::RosterUnsupported`] when the endpoint's
    /// `hello` did not advertise `capabilities.roster` (it would ignore the request);
    /// an in-band refusal is a [`ControlError::Nack`]; no reply within the roster
    /// timeout is the synthesized `timeout` nack.
    pub async fn roster(&self) -> Result<Vec<RosterEntry>, ControlError> {
        if !lock(&self.shared.hello).capabilities().supports_roster() {
            return Err(ControlError::RosterUnsupported);
        }
        let n = self.shared.next_roster.fetch_add(1, Ordering::Relaxed);
        let id = format!("roster-{n}");
        let (tx, rx) = oneshot::channel();
        self.shared
            .ops
            .send(Op::Roster(id, tx))
            .map_err(|_| ControlError::Closed)?;
        let window = self.shared.roster_timeout;
        match tokio::time::timeout(window, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(ControlError::Closed),
            Err(_) => Err(Nack::timeout(format!(
                "no roster reply within {} ms",
                window.as_millis()
            ))
            .into()),
        }
    }

    /// Closes in order (a `closing` frame, then the WebSocket close); pending commands
    /// settle as the synthesized `timeout` and later sends fail with
    /// [`ControlError::Closed`]. The close starts at the call; the future resolves once
    /// the socket is closed (dropping it does not stop the close). Idempotent: a second
    /// call resolves at once.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let closed = if self.shared.closed.swap(true, Ordering::AcqRel) {
            None
        } else {
            let (tx, rx) = oneshot::channel();
            let sent = self.shared.ops.send(Op::Close(tx)).is_ok();
            self.sender.close("control client closed");
            sent.then_some(rx)
        };
        async move {
            if let Some(rx) = closed {
                let _ = rx.await;
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct SessionSub {
    id: String,
    subscribed: bool,
    waiters: Vec<SubscribeReply>,
}

/// The connection task: owns the socket, the subscriptions and the roster waiters.
struct Task {
    /// The relay connected to, among the client's relays.
    failover: Failover,
    /// The token and the connect timeout of every reconnect.
    link: Link,
    hello: Hello,
    ops: mpsc::UnboundedReceiver<Op>,
    sender: ControlSender,
    shared: std::sync::Weak<Shared>,
    sessions: HashMap<String, SessionSub>,
    next_sub: u64,
    rosters: HashMap<String, RosterReply>,
    outgoing: Arc<Outgoing>,
    /// The last batch taken from `outgoing`, kept for its capacity.
    batch: Vec<String>,
}

type Write = futures::stream::SplitSink<WsStream, Message>;

enum Ended {
    /// Closed by us (close() or every handle dropped).
    Closed,
    /// The connection failed.
    Dropped(Option<TransportError>),
}

impl Task {
    async fn run(mut self, mut ws: WsStream) {
        loop {
            match self.serve(ws).await {
                Ended::Closed => break,
                Ended::Dropped(e) => {
                    tracing::warn!(error = ?e.map(|e| e.to_string()), "control connection dropped; reconnecting");
                }
            }
            for s in self.sessions.values_mut() {
                s.subscribed = false;
            }
            for (_, reply) in self.rosters.drain() {
                let _ = reply.send(Err(TransportError::network_msg(
                    "connection dropped before the roster reply",
                )
                .into()));
            }
            ws = loop {
                // the connection dropped, or the last attempt failed: the next relay
                let delay = self.failover.failed();
                let (base, token, hello) = (
                    self.failover.current().unwrap_or_default().to_owned(),
                    self.link.token.clone(),
                    self.hello.clone(),
                );
                let (timeout, limits) = (self.link.connect_timeout, self.link.limits);
                let tls = self.link.tls.clone();
                let attempt = async {
                    tokio::time::sleep(delay).await;
                    open(&base, token.as_deref(), timeout, &hello, &limits, &tls).await
                };
                tokio::pin!(attempt);
                let opened = loop {
                    tokio::select! {
                        r = &mut attempt => break Some(r),
                        op = self.ops.recv() => match op {
                            None | Some(Op::Close(_)) => break None,
                            Some(Op::Subscribe(session, reply)) => self.want(session, Some(reply)),
                            Some(Op::Roster(_, reply)) => {
                                let _ = reply.send(Err(TransportError::network_msg("not connected; reconnecting").into()));
                            }
                        },
                    }
                };
                match opened {
                    None => return self.finish(),
                    Some(Ok((ws, endpoint))) => {
                        if let Some(shared) = self.shared.upgrade() {
                            *lock(&shared.hello) = endpoint;
                        }
                        self.failover.succeeded();
                        break ws;
                    }
                    Some(Err(e)) => tracing::warn!(error = %e, "control reconnect failed"),
                }
            };
            tracing::info!("control connection re-established");
        }
        self.finish();
    }

    fn finish(&mut self) {
        for s in self.sessions.values_mut() {
            for w in s.waiters.drain(..) {
                let _ = w.send(Err(ControlError::Closed));
            }
        }
        for (_, reply) in self.rosters.drain() {
            let _ = reply.send(Err(ControlError::Closed));
        }
        self.sender.close("control client closed");
    }

    /// Registers interest in a session's acks.
    fn want(&mut self, session: String, reply: Option<SubscribeReply>) {
        let n = &mut self.next_sub;
        let sub = self.sessions.entry(session).or_insert_with(|| {
            *n += 1;
            SessionSub {
                id: format!("control-{}", *n),
                subscribed: false,
                waiters: Vec::new(),
            }
        });
        if let Some(r) = reply {
            if sub.subscribed {
                let _ = r.send(Ok(()));
            } else {
                sub.waiters.push(r);
            }
        }
    }
    fn subscribe_frame(session: &str, id: &str) -> String {
        // Only the acks: the target's other session events are not ours to carry.
        let filter = json!({"session": session, "type": [ACCEPTED, REJECTED]});
        Frame::Subscribe(Subscribe::new(id, filter)).to_json()
    }

    async fn serve(&mut self, ws: WsStream) -> Ended {
        let (mut write, mut read) = ws.split();
        // After a (re)connect: subscriptions first, so acks have somewhere to go, then
        // whatever waited, then every pending command again.
        let mut first: Vec<String> = self
            .sessions
            .iter()
            .map(|(s, sub)| Self::subscribe_frame(s, &sub.id))
            .collect();
        self.outgoing.take(&mut self.batch);
        first.append(&mut self.batch);
        for t in first {
            if let Err(e) = write.feed(Message::text(t)).await {
                return Ended::Dropped(Some(ws_error(e)));
            }
        }
        if let Err(e) = write.flush().await {
            return Ended::Dropped(Some(ws_error(e)));
        }
        if !self.sessions.is_empty() {
            self.sender.retransmit_pending();
        }
        let mut idle = IdleTimer::new(self.link.limits.idle());
        loop {
            tokio::select! {
                tick = idle.tick() => match tick {
                    Idle::Ping => {
                        if let Err(e) = write.send(Message::text(ping_frame())).await {
                            return Ended::Dropped(Some(ws_error(e)));
                        }
                    }
                    Idle::Dead(e) => return Ended::Dropped(Some(e)),
                },
                msg = read.next() => {
                    idle.heard();
                    match classify(msg) {
                        Inbound::Message(m) => self.inbound(m),
                        Inbound::Reply(text) => {
                            if let Err(e) = write.send(Message::text(text)).await {
                                return Ended::Dropped(Some(ws_error(e)));
                            }
                        }
                        Inbound::Nothing => {}
                        Inbound::Closing(c) => {
                            tracing::info!(reason = ?c.reason, "the endpoint is closing the connection");
                        }
                        Inbound::Binary(e) | Inbound::Undecodable(_, e) => {
                            tracing::warn!(error = %e, "ignoring a message");
                        }
                        Inbound::End(e) => return Ended::Dropped(e),
                    }
                }
                () = self.outgoing.ready.notified() => {
                    // The first command of a burst wakes this task, which the runtime
                    // then runs next, ahead of the tasks about to send the rest. Going to
                    // the back of the queue once lets them: a burst leaves in one write.
                    tokio::task::yield_now().await;
                    self.outgoing.take(&mut self.batch);
                    for text in self.batch.drain(..) {
                        if let Err(e) = write.feed(Message::text(text)).await {
                            return Ended::Dropped(Some(ws_error(e)));
                        }
                    }
                    if let Err(e) = write.flush().await {
                        return Ended::Dropped(Some(ws_error(e)));
                    }
                }
                op = self.ops.recv() => {
                    let Some(op) = op else {
                        close_socket(&mut write, "control client dropped").await;
                        return Ended::Closed;
                    };
                    // Write everything queued, then flush once: many commands in flight
                    // cost one flush, not one each.
                    let mut next = Some(op);
                    while let Some(op) = next.take() {
                        match self.write_op(&mut write, op).await {
                            Ok(true) => {}
                            Ok(false) => return Ended::Closed,
                            Err(e) => return Ended::Dropped(Some(e)),
                        }
                        next = self.ops.try_recv().ok();
                    }
                    if let Err(e) = write.flush().await {
                        return Ended::Dropped(Some(ws_error(e)));
                    }
                }
            }
        }
    }

    /// Queues one op on the socket; `Ok(false)` when the client is closing.
    async fn write_op(&mut self, write: &mut Write, op: Op) -> Result<bool, TransportError> {
        let text = match op {
            Op::Subscribe(session, reply) => {
                let known = self.sessions.contains_key(&session);
                self.want(session.clone(), Some(reply));
                if known {
                    return Ok(true);
                }
                let id = self
                    .sessions
                    .get(&session)
                    .map(|s| s.id.clone())
                    .unwrap_or_default();
                Self::subscribe_frame(&session, &id)
            }
            Op::Roster(id, reply) => {
                let text = Frame::RosterRequest(IdFrame::new(&id)).to_json();
                self.rosters.insert(id, reply);
                text
            }
            Op::Close(reply) => {
                close_socket(write, "closed by the client").await;
                let _ = reply.send(());
                return Ok(false);
            }
        };
        write.feed(Message::text(text)).await.map_err(ws_error)?;
        Ok(true)
    }

    fn inbound(&mut self, message: AepMessage) {
        match message {
            AepMessage::Event(event) => {
                self.sender.handle_event(event);
            }
            AepMessage::Frame(Frame::Subscribed(f)) => {
                if let Some(sub) = self.sessions.values_mut().find(|s| s.id == f.id) {
                    sub.subscribed = true;
                    for w in sub.waiters.drain(..) {
                        let _ = w.send(Ok(()));
                    }
                }
            }
            AepMessage::Frame(Frame::Roster(reply)) => {
                if let Some(w) = self.rosters.remove(&reply.id) {
                    let _ = w.send(Ok(reply.entries));
                }
            }
            AepMessage::Frame(Frame::Error(e)) => self.error_frame(e),
            AepMessage::Frame(other) => {
                tracing::debug!(frame = other.frame_type(), "ignoring frame");
            }
        }
    }

    /// An `error` frame answers a roster request or a subscription by `id`, or a
    /// command by `cause` (AEP-0003 §6.5, AEP-0004 §4.2).
    fn error_frame(&mut self, e: ErrorFrame) {
        if let Some(id) = e.id.as_deref() {
            if let Some(w) = self.rosters.remove(id) {
                let _ = w.send(Err(Nack::from_error_frame(&e).into()));
                return;
            }
            if let Some((session, _)) = self.sessions.iter().find(|(_, s)| s.id == id) {
                let session = session.clone();
                if let Some(sub) = self.sessions.remove(&session) {
                    for w in sub.waiters {
                        let _ = w.send(Err(Nack::from_error_frame(&e).into()));
                    }
                }
                return;
            }
        }
        if !self.sender.handle_error_frame(&e) {
            tracing::warn!(code = e.code.as_str(), detail = ?e.detail, "endpoint error frame");
        }
    }
}
