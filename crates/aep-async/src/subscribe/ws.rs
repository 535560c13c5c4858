//! The WebSocket binding for consumers (AEP-0003 §3.5, §6.5): several subscriptions
//! multiplexed on one connection, re-subscribed with their positions after a reconnect.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aep_core::frame::{self, Frame, IdFrame, Message as AepMessage, ReplayFrom, Role};
use aep_core::{Event, Filter};
use futures::{FutureExt, SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tracing::Instrument;

use super::{unavailable, Notice, Shared, StartFrom, SubscribeOptions, Subscription};
use crate::client::{Client, Defaults, Link};
use crate::error::TransportError;
use crate::transport::idle::{Idle, IdleTimer};
use crate::transport::ws::{
    classify, close_socket, hello, open, ping_frame, ws_error, Inbound, WsStream,
};
use crate::transport::Failover;

/// One WebSocket connection carrying any number of subscriptions (AEP-0003 §6.5).
///
/// Each [`WsConnection::subscribe`] sends a `subscribe` frame; events are routed to
/// every subscription whose filter they match (an endpoint sends an event once per
/// matching subscription, and each subscription's dedupe collapses the copies). After a
/// reconnect every subscription is sent again with its own positions; given several
/// relays ([`Relays`](crate::Relays)), a reconnect after a failure goes to the next one.
/// A slow reader of one subscription slows the connection for all of them. Opened with
/// [`Client::ws_connection`].
///
/// `live=false` (history-only) is an SSE feature: such a subscription ends at once
/// with a notice.
///
/// ```no_run
/// use aep_async::{Client, SubscribeOptions};
/// use serde_json::json;
///
/// # async fn run() {
/// let conn = Client::new("http://127.0.0.1:8787").token("secret").ws_connection();
/// let attention = conn.subscribe(SubscribeOptions::new().filter(json!({"type": "attention.*"})));
/// let errors = conn.subscribe(SubscribeOptions::new().filter(json!({"type": "error.*"})));
/// # let _ = (attention, errors); }
/// ```
#[derive(Debug, Clone)]
#[must_use = "the connection ends when its last handle and subscription are dropped"]
pub struct WsConnection {
    cmd: Option<mpsc::UnboundedSender<Command>>,
    next_id: Arc<AtomicU64>,
}

impl Client {
    /// Opens one WebSocket for many subscriptions ([`WsConnection`]), in the background
    /// on the current runtime: it connects, and reconnects until every handle and every
    /// subscription on it is gone. Feature `ws`.
    ///
    /// ```no_run
    /// # async fn run() {
    /// let conn = aep_async::Client::new("http://127.0.0.1:8787").ws_connection();
    /// let sub = conn.subscribe(aep_async::SubscribeOptions::new());
    /// # let _ = sub; }
    /// ```
    pub fn ws_connection(&self) -> WsConnection {
        WsConnection::start(self.link(Defaults::CONSUMER))
    }
}

impl WsConnection {
    /// Starts the connection task on the current runtime; without one, every
    /// subscription on the connection ends at once, saying why.
    pub(crate) fn start(link: Link) -> WsConnection {
        let next_id = Arc::new(AtomicU64::new(0));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return WsConnection { cmd: None, next_id };
        };
        let (cmd, rx) = mpsc::unbounded_channel();
        let span = tracing::info_span!("aep_ws_connection", relays = %link.relays);
        runtime.spawn(ConnTask::new(link, rx).run().instrument(span));
        WsConnection {
            cmd: Some(cmd),
            next_id,
        }
    }

    /// Adds a subscription on this connection. The `transport` of `options` is the
    /// connection's.
    pub fn subscribe(&self, options: SubscribeOptions) -> Subscription {
        let Some(cmd) = &self.cmd else {
            return unavailable(&options, "Client::ws_connection needs a tokio runtime");
        };
        if !options.live {
            return unavailable(
                &options,
                "history-only (live=false) subscriptions need the SSE transport",
            );
        }
        let id = format!("sub-{}", self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let (mut sub, shared, tx) = Subscription::new(&options);
        let entry = SubEntry {
            id: id.clone(),
            route: Filter::from_value(&options.filter).ok(),
            pending_all: options.from == StartFrom::All,
            options,
            shared,
            tx,
            from_cap: None,
            sent_from: 0,
            sent_all: false,
        };
        // A failed send means the task is gone: the entry (and its sender) is dropped
        // with the error, so the stream simply ends.
        let _ = cmd.send(Command::Subscribe(Box::new(entry)));
        let cmd = cmd.clone();
        sub.set_on_close(move || {
            let _ = cmd.send(Command::Unsubscribe(id));
        });
        sub
    }
}

enum Command {
    Subscribe(Box<SubEntry>),
    Unsubscribe(String),
}

struct SubEntry {
    id: String,
    // The filter parsed for routing; `None` when it does not parse, which the endpoint
    // refuses too (`invalid-filter`), so nothing is routed to it meanwhile.
    route: Option<Filter>,
    options: SubscribeOptions,
    shared: Arc<Shared>,
    tx: mpsc::Sender<Vec<Event>>,
    pending_all: bool,
    from_cap: Option<usize>,
    sent_from: usize,
    sent_all: bool,
}

impl fmt::Debug for SubEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubEntry").field("id", &self.id).finish()
    }
}

impl SubEntry {
    fn frame(&mut self) -> String {
        let positions = self.shared.resume_positions();
        let use_all = self.pending_all && positions.is_empty();
        let start = self
            .from_cap
            .map_or(0, |cap| positions.len().saturating_sub(cap));
        let head = positions.get(start..).unwrap_or_default();
        self.sent_all = use_all;
        self.sent_from = if use_all { 0 } else { head.len() };
        let mut sub = frame::Subscribe::new(self.id.clone(), self.options.filter.clone());
        if use_all {
            sub = sub.with_from(ReplayFrom::All);
        } else if !head.is_empty() {
            sub = sub.with_from(ReplayFrom::Positions(head.to_vec()));
        }
        if let Some(c) = self.options.capture {
            sub = sub.with_capture(c);
        }
        Frame::Subscribe(sub).to_json()
    }
}

struct ConnTask {
    cfg: Link,
    rx: mpsc::UnboundedReceiver<Command>,
    subs: HashMap<String, SubEntry>,
}

enum Flow {
    Reconnect(TransportError),
    Stop,
}

impl ConnTask {
    fn new(cfg: Link, rx: mpsc::UnboundedReceiver<Command>) -> Self {
        ConnTask {
            cfg,
            rx,
            subs: HashMap::new(),
        }
    }

    async fn run(mut self) {
        let mut failover = Failover::new(self.cfg.relays.clone(), self.cfg.backoff);
        let hello = hello(Role::Consumer, &self.cfg.agent, &self.cfg.host, None);
        let tls = self.cfg.tls.clone();
        let (token, timeout, limits) = (
            self.cfg.token.clone(),
            self.cfg.connect_timeout,
            self.cfg.limits,
        );
        let mut attempt = 0u32;
        loop {
            if attempt > 0 {
                tracing::info!(
                    attempt,
                    subscriptions = self.subs.len(),
                    relay = %failover.shown(),
                    "reconnecting"
                );
            }
            attempt += 1;
            let base = failover.current().unwrap_or_default().to_owned();
            let opened = tokio::select! {
                r = open(&base, token.as_deref(), timeout, &hello, &limits, &tls) => Some(r),
                () = self.wait_commands_forever() => None,
            };
            let error = match opened {
                None => return,
                Some(Ok((ws, _hello))) => {
                    tracing::info!(relay = %failover.shown(), "connected");
                    match self.serve(ws, &mut failover).await {
                        Flow::Stop => return,
                        Flow::Reconnect(e) => e,
                    }
                }
                Some(Err(e)) => e,
            };
            for sub in self.subs.values() {
                sub.shared.notify(Notice::Error(error.copy()));
            }
            let delay = failover.failed();
            let sleep = tokio::time::sleep(delay);
            tokio::pin!(sleep);
            loop {
                tokio::select! {
                    _ = &mut sleep => break,
                    cmd = self.rx.recv() => match cmd {
                        Some(cmd) => self.apply_offline(cmd),
                        None => return,
                    },
                }
            }
        }
    }

    /// Applies commands while connecting; returns once every handle is gone.
    async fn wait_commands_forever(&mut self) {
        while let Some(cmd) = self.rx.recv().await {
            self.apply_offline(cmd);
        }
    }

    fn apply_offline(&mut self, cmd: Command) {
        match cmd {
            Command::Subscribe(entry) => {
                self.subs.insert(entry.id.clone(), *entry);
            }
            Command::Unsubscribe(id) => {
                self.subs.remove(&id);
            }
        }
    }

    async fn serve(&mut self, ws: WsStream, failover: &mut Failover) -> Flow {
        let (mut write, mut read) = ws.split();
        let mut idle = IdleTimer::new(self.cfg.limits.idle());
        for sub in self.subs.values_mut() {
            let f = sub.frame();
            if let Err(e) = write.send(Message::text(f)).await {
                return Flow::Reconnect(ws_error(e));
            }
        }
        loop {
            let mut outgoing: Vec<String> = Vec::new();
            tokio::select! {
                cmd = self.rx.recv() => match cmd {
                    None => {
                        close_socket(&mut write, "every subscription closed").await;
                        return Flow::Stop;
                    }
                    Some(Command::Subscribe(mut entry)) => {
                        outgoing.push(entry.frame());
                        self.subs.insert(entry.id.clone(), *entry);
                    }
                    Some(Command::Unsubscribe(id)) => {
                        if self.subs.remove(&id).is_some() {
                            outgoing.push(Frame::Unsubscribe(IdFrame::new(id)).to_json());
                        }
                    }
                },
                tick = idle.tick() => match tick {
                    Idle::Ping => outgoing.push(ping_frame()),
                    Idle::Dead(e) => return Flow::Reconnect(e),
                },
                msg = read.next() => {
                    let mut batches: HashMap<String, Vec<Event>> = HashMap::new();
                    let mut next = Some(msg);
                    let mut taken = 0;
                    // Take what is already buffered before handing batches over.
                    while let Some(msg) = next.take() {
                        match classify(msg) {
                            Inbound::Message(AepMessage::Event(event)) => self.route(event, &mut batches),
                            Inbound::Message(AepMessage::Frame(f)) => {
                                self.handle_frame(f, &mut outgoing, failover);
                            }
                            Inbound::Reply(pong) => outgoing.push(pong),
                            Inbound::Closing(c) => {
                                let reason = c.reason.unwrap_or_default();
                                for sub in self.subs.values() {
                                    sub.shared.notify(Notice::Closing { reason: reason.clone() });
                                }
                            }
                            Inbound::Binary(err) | Inbound::Undecodable(_, err) => {
                                for sub in self.subs.values() {
                                    sub.shared.notify(Notice::Error(err.copy()));
                                }
                            }
                            Inbound::Nothing => {}
                            Inbound::End(e) => {
                                return Flow::Reconnect(e.unwrap_or_else(|| {
                                    TransportError::network_msg("socket closed by the endpoint")
                                }))
                            }
                        }
                        taken += 1;
                        if taken < 512 {
                            next = read.next().now_or_never();
                        }
                    }
                    for (id, batch) in batches {
                        let Some(sub) = self.subs.get(&id) else { continue };
                        sub.shared.received(&batch);
                        if sub.tx.send(batch).await.is_err() {
                            self.subs.remove(&id);
                            outgoing.push(Frame::Unsubscribe(IdFrame::new(id)).to_json());
                        }
                    }
                    // Heard now, after the hand-over: the time a subscriber took to
                    // make room was not the relay's silence.
                    idle.heard();
                }
            }
            for f in outgoing {
                if let Err(e) = write.send(Message::text(f)).await {
                    return Flow::Reconnect(ws_error(e));
                }
            }
        }
    }

    fn handle_frame(&mut self, frame: Frame, outgoing: &mut Vec<String>, failover: &mut Failover) {
        match frame {
            Frame::Subscribed(ack) => {
                if let Some(sub) = self.subs.get_mut(&ack.id) {
                    sub.pending_all = false;
                    failover.succeeded();
                    tracing::info!(sub = %ack.id, resume = sub.sent_from, all = sub.sent_all, "subscribed");
                    sub.shared.notify(Notice::Connected {
                        resume: sub.sent_from,
                        all: sub.sent_all,
                    });
                }
            }
            Frame::Error(e) => {
                let Some(id) = e.id.clone() else {
                    tracing::warn!(code = e.code.as_str(), "error frame from the endpoint");
                    return;
                };
                let Some(sub) = self.subs.get_mut(&id) else {
                    return;
                };
                sub.shared.notify(Notice::Refused {
                    code: e.code.as_str().to_owned(),
                    detail: e.detail.clone(),
                });
                if sub.sent_all {
                    // `from=all` refused (AEP-0003 §5): live-only from here.
                    sub.pending_all = false;
                    sub.shared.notify(Notice::AllRefused);
                    outgoing.push(sub.frame());
                } else if sub.sent_from > 0 {
                    let cap = sub.sent_from / 2;
                    sub.from_cap = Some(cap);
                    sub.shared.notify(Notice::ResumeShrunk { cap });
                    outgoing.push(sub.frame());
                } else {
                    // Refused with nothing to shrink: the subscription is over.
                    self.subs.remove(&id);
                }
            }
            Frame::ReplayExhausted(x) => {
                if let Some(sub) = self.subs.get(&x.sub) {
                    sub.shared.notify(Notice::ReplayExhausted {
                        session: x.session,
                        earliest: x.earliest,
                    });
                }
            }
            // `unsubscribed`, `pong`, and unknown frames are ignored (AEP-0003 §2);
            // `ping` and `closing` were taken by the transport.
            _ => {}
        }
    }

    /// Hands an event to every subscription whose filter it matches: the endpoint sends
    /// it once per matching subscription without naming it, and each subscription's
    /// dedupe collapses the copies.
    fn route(&self, event: Event, batches: &mut HashMap<String, Vec<Event>>) {
        let matching: Vec<&String> = self
            .subs
            .iter()
            .filter(|(_, s)| s.route.as_ref().is_some_and(|f| f.matches(&event)))
            .map(|(id, _)| id)
            .collect();
        if let Some((last, rest)) = matching.split_last() {
            for id in rest {
                batches
                    .entry((*id).clone())
                    .or_default()
                    .push(event.clone());
            }
            batches.entry((*last).clone()).or_default().push(event);
        }
    }
}
