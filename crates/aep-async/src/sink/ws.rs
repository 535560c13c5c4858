//! The WebSocket binding for emitters (AEP-0003 §3.5): `hello` as emitter, events as
//! text frames, inbound control commands handed to a [`CommandHook`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use aep_core::frame::{ErrorFrame, Frame, IngestRefusal, Message as AepMessage, Role};
use aep_core::{Event, EventType};
use futures::stream::SplitSink;
use futures::{FutureExt, SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tracing::Instrument;

use super::confirm::{Settled, Unconfirmed};
use super::{
    default_handler, AbandonGuard, Claim, DeliveryReport, DeliveryStats, Outbox, ReportHandler,
    ReserveFuture, Sink, SinkFuture,
};
use crate::callback::Callback;
use crate::client::{Client, Defaults, Link};
use crate::error::{EmitError, TransportError};
use crate::limits::ReadLimits;
use crate::transport::ws::{
    classify, close_socket, hello, open, ws_error, Inbound, WsRead, WsStream,
};
use crate::transport::Failover;

/// Receives control commands (AEP-0004) that arrive on an emitter's socket.
///
/// The control layer's `ControlTarget` implements it; anything else may too.
///
/// ```
/// use aep_async::CommandHook;
/// use aep_core::Event;
///
/// #[derive(Debug)]
/// struct Log;
/// impl CommandHook for Log {
///     fn accepts(&self) -> Vec<String> { vec!["control.attention.respond".into()] }
///     fn command(&self, command: Event) { eprintln!("command {}", command.id()); }
/// }
/// ```
pub trait CommandHook: Send + Sync + fmt::Debug + 'static {
    /// The command types declared at `hello` (`capabilities.control.accepts`); the
    /// declaration is authoritative: the endpoint nacks anything else (AEP-0004 §4.2).
    fn accepts(&self) -> Vec<String>;
    /// The ack window declared at `hello` (`capabilities.control.ack_window_ms`,
    /// AEP-0004 §3); `None` declares none, which reads as the 10 s default.
    fn ack_window(&self) -> Option<Duration> {
        None
    }
    /// One inbound command addressed to this emitter. Called on the connection task:
    /// hand long work off.
    fn command(&self, command: Event);
    /// Whether this hook still answers for `session`. After a reconnect the sink claims
    /// again only the sessions it holds, so a session the agent let go of is refused
    /// `no-route` by the relay at once instead of timing out here. Defaults to `true`.
    fn holds(&self, session: &str) -> bool {
        let _ = session;
        true
    }
}

/// What a [`WsSink`] declares and does beyond connecting (where, with what token,
/// within what connect timeout and on what reconnect schedule is the [`Client`]'s).
///
/// ```
/// use aep_async::WsSinkOptions;
/// let options = WsSinkOptions::new("coder", "host-a/1").queue_capacity(1000);
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
#[must_use = "options do nothing until passed to Client::ws_sink"]
pub struct WsSinkOptions {
    agent: String,
    instance: String,
    queue_capacity: usize,
    give_up_after: Option<Duration>,
    hook: Option<Arc<dyn CommandHook>>,
    report: Callback<ReportHandler>,
}

impl WsSinkOptions {
    /// A sink declaring `identity.agent` and `instance` at `hello`, with a queue of
    /// 10 000 events, a waiting emit that gives up after 60 s without delivery, no
    /// command hook, and reports to `tracing` at `warn`.
    pub fn new(agent: impl Into<String>, instance: impl Into<String>) -> Self {
        WsSinkOptions {
            agent: agent.into(),
            instance: instance.into(),
            queue_capacity: 10_000,
            give_up_after: Some(Duration::from_secs(60)),
            hook: None,
            report: Callback(default_handler()),
        }
    }
    aep_core::setters! {
        /// Bound of the outbox (default 10 000). When it is full, `accept` (and `emit`)
        /// drops `debug`/`info` first (AEP-0003 §8.4), while [`reserve`](Sink::reserve)
        /// (and `emit_wait`) waits for room.
        pub fn queue_capacity(n: usize) => queue_capacity = n.max(1);
        /// How long the waiting path ([`reserve`](Sink::reserve), `emit_wait`) waits on a
        /// full queue while nothing is delivered (the relay unreachable, or not reading)
        /// before the relay counts as gone and the wait fails with [`EmitError::Stalled`]
        /// (default 60 s; `None` waits for as long as it takes). The sink itself gives
        /// nothing up while it is open: what is queued is sent after the next reconnect (at
        /// `close`, see [`Client::connect_timeout`]).
        pub fn give_up_after(d: Option<Duration>) => give_up_after = d;
        /// Where inbound commands go; its `accepts` are declared at `hello`.
        pub fn command_hook(hook: impl CommandHook) => hook = Some(Arc::new(hook));
        /// Where [`DeliveryReport`]s go (default: `tracing` at `warn`).
        pub fn on_report(f: impl Fn(DeliveryReport) + Send + Sync + 'static) => report = Callback(Arc::new(f));
    }
}

impl Client {
    /// Starts a [`WsSink`] to the client's relays on the current runtime. Feature `ws`.
    ///
    /// The client's connect timeout (default 10 s here) bounds the handshake and
    /// `hello` exchange, and also how long `close` waits for the relay to confirm the
    /// last events written, and how long it goes on writing again events the relay
    /// refuses for now (`limit-exceeded`) before it gives them up
    /// ([`DeliveryReport::GaveUp`]). Its backoff (default 500 ms doubling to 10 s) spaces
    /// the reconnects, and the writing again of an event the relay refused for now (its
    /// disk is full), doubling per refusal in a row.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), aep_async::TransportError> {
    /// use aep_async::{Client, WsSinkOptions};
    /// let sink = Client::new("http://127.0.0.1:8787").ws_sink(WsSinkOptions::new("coder", "host-a/1"))?;
    /// # let _ = sink; Ok(()) }
    /// ```
    pub fn ws_sink(&self, options: WsSinkOptions) -> Result<WsSink, TransportError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| TransportError::network("Client::ws_sink needs a tokio runtime", e))?;
        if self.relays().is_empty() {
            return Err(TransportError::network_msg(
                "the client was given no relay URL",
            ));
        }
        let link = self.link(Defaults::WS_SINK);
        let outbox = Arc::new(
            Outbox::new(options.queue_capacity, options.report.0.clone())
                .patience(options.give_up_after),
        );
        let span =
            tracing::info_span!("aep_ws_sink", relays = %link.relays, agent = %options.agent);
        let claims = options.hook.is_some();
        let worker = Worker {
            outbox: outbox.clone(),
            unsent: Vec::new(),
            claims: HashMap::new(),
            unconfirmed: Unconfirmed::new(
                options.queue_capacity,
                link.connect_timeout,
                link.backoff,
            ),
            flush_waits: false,
            last_refusal: None,
            cfg: options,
            link,
        };
        runtime.spawn(worker.run().instrument(span));
        Ok(WsSink { outbox, claims })
    }
}

/// Emits over the WebSocket binding: connects to `{base}/socket`, says `hello` as an
/// emitter (declaring the hook's `accepts`), then sends each event as a text frame, in
/// order. Reconnects with backoff (given several relays of a cluster,
/// [`Relays`](crate::Relays), to
/// the next one at once); events not yet written are sent after the new `hello`.
/// `error` frames the endpoint sends back are reported.
///
/// **Delivered means confirmed.** The WS binding has no per-event acknowledgement, so
/// after its writes the sink sends a `ping` (one at a time, at most one per 5 ms unless
/// a `flush` or `close` waits for delivery); a relay reads a connection's messages in
/// order and answers the `ping` after the events before it, so its `pong` says those
/// events were taken (by this crate's relay: stored). Except those it refused before it
/// with an `error` frame whose `cause` is the event's `id`: such an event is written
/// again, same bytes, after the reconnect delay when the refusal is transient
/// (`limit-exceeded`, a full disk: a [`DeliveryReport::Retrying`] each time), and
/// counted rejected when it is not (`invalid-event`: a [`DeliveryReport::Rejected`]),
/// as an HTTP sink treats a 5xx and a 4xx ([`IngestRefusal`]); at `close`, what is
/// still refused after the connect timeout is given up ([`DeliveryReport::GaveUp`]).
/// Events count as delivered ([`DeliveryStats`], `flush`, `close`) once confirmed; from a relay that leaves a `ping` unanswered for
/// the connect timeout (it may not answer them), once that passes. Events not confirmed
/// (at most `queue_capacity` of them) are written again, same bytes and ids, first
/// thing on the next connection, so a relay that dies with events in its socket buffer
/// loses none of them: at-least-once, and consumers (and a cluster's store) drop the
/// copies on their `(source, id)` (AEP-0001 §7.4).
///
/// **Sessions after a reconnect.** A relay routes a command to the connection that
/// carried its session's events (AEP-0004 §4), and a new connection has carried none.
/// With a command hook, the sink therefore re-sends each session's last event,
/// unchanged, right after the new `hello`, so commands reach the agent again without
/// waiting for its next emit; consumers drop the copy on its `(source, id)`. Sessions
/// whose last event was `session.ended`, and sessions the hook no longer holds
/// ([`CommandHook::holds`]: for a `ControlTarget`, whose `SessionEmitter` was dropped),
/// are not claimed again, so their commands are refused `no-route` at once.
///
/// **Drop:** as for `HttpSink`, dropping the last handle closes the sink and the task
/// keeps sending what was accepted while the runtime runs (and while the endpoint is
/// reachable); leftovers at runtime shutdown are reported as
/// [`DeliveryReport::Abandoned`].
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = aep_async::Client::new("http://127.0.0.1:8787");
/// let sink = client.ws_sink(aep_async::WsSinkOptions::new("coder", "host-a/1"))?;
/// let emitter = aep_async::Emitter::new("coder", "host-a", sink);
/// emitter.session("s").emit("session.started", serde_json::json!({}))?;
/// emitter.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct WsSink {
    outbox: Arc<Outbox>,
    /// Whether accepted events note their session claims (with a command hook).
    claims: bool,
}

impl Drop for WsSink {
    fn drop(&mut self) {
        self.outbox.mark_closed();
    }
}

impl Sink for WsSink {
    fn accept(&self, event: &Event) -> Result<(), EmitError> {
        let claim = if self.claims { claim_of(event) } else { None };
        self.outbox.push_claiming(event, claim)
    }
    fn reserve(&self) -> ReserveFuture<'_> {
        Box::pin(self.outbox.reserve())
    }
    fn accept_reserved(&self, event: &Event) -> Result<(), EmitError> {
        let claim = if self.claims { claim_of(event) } else { None };
        self.outbox.push_reserved(event, claim)
    }
    fn release(&self) {
        self.outbox.release();
    }
    fn flush(&self) -> SinkFuture<'_> {
        Box::pin(self.outbox.flush())
    }
    fn close(&self) -> SinkFuture<'_> {
        Box::pin(self.outbox.close())
    }
    fn stats(&self) -> DeliveryStats {
        self.outbox.stats()
    }
}

struct Worker {
    outbox: Arc<Outbox>,
    cfg: WsSinkOptions,
    /// Where, with what token, within what time, on what schedule.
    link: Link,
    /// Taken from the outbox and not yet written, with what each claims. Moved to
    /// `unconfirmed` before the write, so that a write that fails leaves each event in
    /// one place, to be written once on the next connection.
    unsent: Vec<(Utf8Bytes, Option<Claim>)>,
    /// With a command hook: per session, the last event flushed that claims it.
    claims: HashMap<String, Utf8Bytes>,
    /// Written, and not yet confirmed by the relay's `pong`: written again after a
    /// reconnect.
    unconfirmed: Unconfirmed,
    /// A `flush` waits for what was taken: its confirmation is asked for at once.
    flush_waits: bool,
    /// The last transient refusal of an event, for the report of giving up at close.
    last_refusal: Option<TransportError>,
}

/// How many inbound messages already received are handled before the sink writes: the
/// acks of a burst of commands go out in runs of this many, so the relay forwards the
/// first while the rest are decided (256 here held a run back; the control bench gained
/// about a sixth with runs of 32 to 64 at each hop).
const READ_BATCH: usize = 64;
/// How many events one write carries at most.
const WRITE_BATCH: usize = 1024;
/// Events taken from the outbox at a time: a take's claims list (32 bytes a line) stays
/// under glibc's 1 KiB large-request threshold, past which every allocation
/// consolidates the allocator's fast bins.
const TAKE_CHUNK: usize = 24;

/// What an event says about its session for re-claiming after a reconnect: a session
/// event claims it unless it is a command (routed, never a claim) or agent-scoped (no
/// session); `session.ended` lets it go.
fn claim_of(event: &Event) -> Option<Claim> {
    let session = event.session()?;
    let ty = EventType::parse(event.event_type()).ok();
    if !aep_core::types::claims_session_parsed(ty.as_ref(), true, event.seq().is_some()) {
        return None;
    }
    Some(Claim {
        session: session.into(),
        ends: ty.is_some_and(|t| t.ends_session()),
    })
}

/// Notes what `sent` events claim in `claims`: per session, the last event that claims
/// it is kept (a copy, not a slice, which would keep the whole outbox run it came from
/// alive as long as the session lasts); a session that has ended is not claimed again,
/// which also bounds the map to the live sessions.
fn note_claims(claims: &mut HashMap<String, Utf8Bytes>, sent: &[(Utf8Bytes, Option<Claim>)]) {
    // the last claim per session in this write, and which line carries it
    let mut last: HashMap<&str, Option<usize>> = HashMap::new();
    for (i, (_, claim)) in sent.iter().enumerate() {
        if let Some(claim) = claim {
            last.insert(&claim.session, (!claim.ends).then_some(i));
        }
    }
    for (session, at) in last {
        match at.and_then(|i| sent.get(i)) {
            None => {
                claims.remove(session);
            }
            Some((text, _)) => {
                let own = Utf8Bytes::from(text.as_str());
                match claims.get_mut(session) {
                    Some(slot) => *slot = own,
                    None => {
                        claims.insert(session.to_owned(), own);
                    }
                }
            }
        }
    }
}

/// The text of one outbox line, without copying it.
fn text(line: bytes::Bytes) -> Utf8Bytes {
    // The outbox holds serializer output, which is UTF-8: the fallback is never taken.
    Utf8Bytes::try_from(line.clone())
        .unwrap_or_else(|_| String::from_utf8_lossy(&line).into_owned().into())
}

impl Drop for Worker {
    /// The runtime shut down under the task: what it took from the outbox and did not
    /// see delivered is reported, as the outbox reports what it still holds.
    fn drop(&mut self) {
        let left = self.unsent.len() as u64 + self.unconfirmed.uncounted();
        if left > 0 {
            (self.outbox.report)(DeliveryReport::Abandoned { events: left });
            self.outbox.settle(0, left);
        }
    }
}

impl Worker {
    async fn run(mut self) {
        let _abandon = AbandonGuard(self.outbox.clone());
        let accepts = self.cfg.hook.as_ref().map(|h| h.accepts());
        let mut hello = hello(Role::Emitter, &self.cfg.agent, &self.cfg.instance, accepts);
        if let (Some(window), Some(caps)) = (
            self.cfg.hook.as_ref().and_then(|h| h.ack_window()),
            hello.capabilities.as_mut(),
        ) {
            caps.control = caps.control.take().map(|c| c.with_ack_window(window));
        }
        let mut failover = Failover::new(self.link.relays.clone(), self.link.backoff);
        loop {
            let (live, _, closed, _) = self.outbox.level();
            // A closed sink chases what it has not counted delivered; what it presumed
            // taken from a silent relay is not sent again once the emitter is gone.
            if closed && live == 0 && self.unsent.is_empty() && self.unconfirmed.uncounted() == 0 {
                break;
            }
            let base = failover.current().unwrap_or_default().to_owned();
            // The relay's messages to an emitter (commands, pongs) are bounded as every
            // reader's; its confirmation pings stand for the idle timeout.
            let opened = open(
                &base,
                self.link.token.as_deref(),
                self.link.connect_timeout,
                &hello,
                &ReadLimits::new(),
                &self.link.tls,
            )
            .await;
            let error = match opened {
                Ok((ws, _)) => {
                    tracing::info!(relay = %failover.shown(), "connected as emitter");
                    failover.succeeded();
                    match self.serve(ws).await {
                        Ok(()) => break,
                        Err(e) => e,
                    }
                }
                Err(e) => e,
            };
            // what waits: to write again (not counted delivered yet), and still queued
            let pending =
                self.unconfirmed.uncounted() as usize + self.unsent.len() + self.outbox.level().0;
            (self.outbox.report)(DeliveryReport::Retrying {
                error,
                events: pending,
                attempt: 0,
            });
            tokio::time::sleep(failover.failed()).await;
        }
        tracing::debug!("ws sink closed");
    }

    /// Sends until closed and drained (`Ok`) or the socket fails (`Err`).
    async fn serve(&mut self, ws: WsStream) -> Result<(), TransportError> {
        let (mut write, mut read) = ws.split();
        // What the last relay did not confirm goes first, in its order, same bytes: it
        // may have died with it unread (a cluster's other relay, or the same relay
        // restarted, stores each `(source, id)` once, AEP-0001 §7.4).
        let resend = self.unconfirmed.take_for_resend();
        if !resend.is_empty() {
            self.write_noted(&mut write, &resend).await?;
            tracing::debug!(events = resend.len(), "unconfirmed events written again");
            self.ask_confirmation(&mut write, true).await?;
            write.flush().await.map_err(ws_error)?;
        }
        // A relay learns which sessions a connection holds from the session events sent
        // on it (the live claims of AEP-0003 §4.1 that route commands, AEP-0004 §4): a
        // new connection holds none. Re-sending each session's last event, unchanged,
        // claims them all again before anything newer goes out, so commands route at
        // once instead of being refused `no-route` until the agent next emits. A
        // consumer that saw the event before drops the copy on its `(source, id)`
        // (AEP-0001 §7.4), as it does any at-least-once redelivery.
        if let Some(hook) = &self.cfg.hook {
            self.claims.retain(|session, _| hook.holds(session));
        }
        if !self.claims.is_empty() {
            for last in self.claims.values() {
                write
                    .feed(Message::Text(last.clone()))
                    .await
                    .map_err(ws_error)?;
            }
            write.flush().await.map_err(ws_error)?;
            tracing::debug!(sessions = self.claims.len(), "sessions claimed again");
        }
        loop {
            if !self.unsent.is_empty() {
                // Noted as written (and what they claim) before they are: should the
                // socket fail on the way, they are written again on the next connection
                // from there, once. Kept in `unsent` as well, they went twice and the
                // relay's `pong` counted both copies delivered. Delivered once the relay
                // confirms them (`pong`), or is presumed to.
                let mut sent = std::mem::take(&mut self.unsent);
                let let_go = self
                    .unconfirmed
                    .written(sent.iter().map(|(text, _)| (text.clone(), false)));
                self.outbox.settle(let_go, 0);
                note_claims(&mut self.claims, &sent);
                for (text, _) in &sent {
                    write
                        .feed(Message::Text(text.clone()))
                        .await
                        .map_err(ws_error)?;
                }
                // at once when a flush (or close) waits for them
                let urgent = std::mem::take(&mut self.flush_waits) || self.outbox.level().2;
                self.ask_confirmation(&mut write, urgent).await?;
                write.flush().await.map_err(ws_error)?;
                tracing::trace!(events = sent.len(), "written");
                // its allocation serves the next take
                sent.clear();
                self.unsent = sent;
            }
            // a flush that came with nothing to write asks about what was written before
            if std::mem::take(&mut self.flush_waits)
                && self.ask_confirmation(&mut write, true).await?
            {
                write.flush().await.map_err(ws_error)?;
            }
            let (live, _, closed, _) = self.outbox.level();
            if closed && live == 0 {
                self.await_confirmation(&mut write, &mut read).await?;
                close_socket(&mut write, "emitter closed").await;
                return Ok(());
            }
            let timer = self.unconfirmed.timer();
            tokio::select! {
                () = tokio::time::sleep_until(timer.unwrap_or_else(Instant::now)), if timer.is_some() => {
                    if self.unconfirmed.deadline().is_some_and(|by| by <= Instant::now()) {
                        let settled = self.unconfirmed.presume_taken();
                        tracing::debug!(events = settled.delivered, "no pong within the connect timeout; counted as delivered");
                        self.settle(&settled);
                    } else {
                        let again = self.write_again(&mut write, false).await?;
                        if self.ask_confirmation(&mut write, again).await? {
                            write.flush().await.map_err(ws_error)?;
                        }
                    }
                }
                () = self.outbox.wait_for_work() => {
                    // read before the take, which clears it once the queue is empty
                    self.flush_waits |= self.outbox.level().3;
                    while self.unsent.len() < WRITE_BATCH {
                        let batch = self.outbox.take(TAKE_CHUNK, usize::MAX);
                        if batch.is_empty() {
                            break;
                        }
                        for (line, claim) in batch.into_lines_with_claims() {
                            self.unsent.push((text(line), claim));
                        }
                    }
                }
                msg = read.next() => {
                    let mut replies = self.read_one(msg, &mut write).await?;
                    // Then whatever else has already arrived, before writing: the acks
                    // those commands produce go out in one write, not one each.
                    for _ in 1..READ_BATCH {
                        let Some(msg) = read.next().now_or_never() else { break };
                        replies |= self.read_one(msg, &mut write).await?;
                    }
                    // a `pong` that confirmed some may leave later writes to ask about
                    replies |= self.ask_confirmation(&mut write, false).await?;
                    if replies {
                        write.flush().await.map_err(ws_error)?;
                    }
                }
            }
        }
    }

    /// Queues (without flushing) a `ping` asking the relay to confirm what was written,
    /// unless one is out, nothing waits, or (not `urgent`) the last was too recent; says
    /// whether it did.
    async fn ask_confirmation(
        &mut self,
        write: &mut SplitSink<WsStream, Message>,
        urgent: bool,
    ) -> Result<bool, TransportError> {
        match self.unconfirmed.ask(urgent) {
            Some(ping) => {
                write.feed(Message::text(ping)).await.map_err(ws_error)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Before an orderly close: waits, up to the connect timeout, for the relay to
    /// confirm what was written and is not counted delivered yet. A connection lost meanwhile is an `Err`, and the
    /// unconfirmed events go to the next connection; a relay that stays silent is
    /// closed on anyway (it may not answer `ping`s).
    async fn await_confirmation(
        &mut self,
        write: &mut SplitSink<WsStream, Message>,
        read: &mut futures::stream::SplitStream<WsStream>,
    ) -> Result<(), TransportError> {
        // events the relay keeps refusing for now are chased this long, no longer
        let give_up_at = Instant::now() + self.link.connect_timeout;
        while self.unconfirmed.uncounted() > 0 {
            let again = self.write_again(write, false).await?;
            if self.ask_confirmation(write, true).await? || again {
                write.flush().await.map_err(ws_error)?;
            }
            let wake = self
                .unconfirmed
                .timer()
                .map_or(give_up_at, |at| at.min(give_up_at));
            match tokio::time::timeout_at(wake, read.next()).await {
                Ok(msg) => {
                    if self.read_one(msg, write).await? {
                        write.flush().await.map_err(ws_error)?;
                    }
                }
                Err(_)
                    if wake >= give_up_at
                        || self.unconfirmed.deadline().is_some_and(|by| by <= wake) =>
                {
                    let settled = self.unconfirmed.presume_taken();
                    tracing::warn!(
                        events = settled.delivered,
                        "closing without the relay's confirmation of the last events"
                    );
                    self.settle(&settled);
                    let lost = self.unconfirmed.give_up();
                    if lost > 0 {
                        let error = self.last_refusal.as_ref().map_or_else(
                            || TransportError::network_msg("refused by the relay for now"),
                            TransportError::copy,
                        );
                        (self.outbox.report)(DeliveryReport::GaveUp {
                            error,
                            events: lost as usize,
                        });
                        self.outbox.give_up(lost);
                    }
                    return Ok(());
                }
                // refused events are due to be written again
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// Writes (without flushing) the events the relay refused for now, once their delay
    /// has passed (`urgent`: at once); says whether it wrote any.
    async fn write_again(
        &mut self,
        write: &mut SplitSink<WsStream, Message>,
        urgent: bool,
    ) -> Result<bool, TransportError> {
        let again = self.unconfirmed.due(urgent);
        if again.is_empty() {
            return Ok(false);
        }
        self.write_noted(write, &again).await?;
        tracing::debug!(events = again.len(), "refused events written again");
        Ok(true)
    }

    /// Writes (without flushing) events written before, noting them unconfirmed first:
    /// should this connection fail too, they wait for the next one rather than being
    /// lost with `texts`.
    async fn write_noted(
        &mut self,
        write: &mut SplitSink<WsStream, Message>,
        texts: &[(Utf8Bytes, bool)],
    ) -> Result<(), TransportError> {
        let let_go = self.unconfirmed.written(texts.iter().cloned());
        self.outbox.settle(let_go, 0);
        for (text, _) in texts {
            write
                .feed(Message::Text(text.clone()))
                .await
                .map_err(ws_error)?;
        }
        Ok(())
    }

    /// Counts what the relay settled; what it refused for now waits to be written again.
    fn settle(&self, settled: &Settled) {
        self.outbox.settle(settled.delivered, settled.rejected);
    }

    /// An `error` frame whose `cause` names an event waiting for confirmation: that
    /// event is not delivered (AEP-0003 §3.5: the relay handled it and did not store
    /// it). Reported now, settled when the `pong` after it comes. Says whether it named
    /// such an event.
    fn refusal(&mut self, e: &ErrorFrame) -> bool {
        let Some(cause) = e.cause.as_deref() else {
            return false;
        };
        let how = IngestRefusal::of_code(&e.code);
        if !self.unconfirmed.refused(cause, how) {
            return false;
        }
        let error = TransportError::refused(
            &e.code,
            format!(
                "the relay did not take event {cause}: {} {}",
                e.code.as_str(),
                e.detail.as_deref().unwrap_or_default()
            ),
        );
        match how {
            IngestRefusal::Transient => {
                tracing::info!(%error, "event refused for now; writing it again later, same id");
                self.last_refusal = Some(error.copy());
                (self.outbox.report)(DeliveryReport::Retrying {
                    error,
                    events: 1,
                    attempt: self.unconfirmed.retries() + 1,
                });
            }
            IngestRefusal::Permanent => {
                tracing::warn!(%error, "event rejected");
                (self.outbox.report)(DeliveryReport::Rejected { error, events: 1 });
            }
        }
        true
    }

    /// Handles one read from the socket; queues (without flushing) any reply, and says
    /// whether it did.
    async fn read_one(
        &mut self,
        msg: WsRead,
        write: &mut SplitSink<WsStream, Message>,
    ) -> Result<bool, TransportError> {
        let reply = match classify(msg) {
            Inbound::End(e) => {
                return Err(e.unwrap_or_else(|| {
                    TransportError::network_msg("socket closed by the endpoint")
                }))
            }
            Inbound::Message(m) => self.inbound(m),
            Inbound::Reply(pong) => Some(pong),
            Inbound::Closing(c) => {
                tracing::info!(reason = ?c.reason, "the endpoint is closing the connection");
                None
            }
            Inbound::Binary(error) | Inbound::Undecodable(_, error) => {
                (self.outbox.report)(DeliveryReport::Endpoint { error });
                None
            }
            Inbound::Nothing => None,
        };
        match reply {
            Some(reply) => {
                write.feed(Message::text(reply)).await.map_err(ws_error)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Handles one inbound message; returns the reply to send, if any.
    fn inbound(&mut self, message: AepMessage) -> Option<String> {
        match message {
            AepMessage::Event(event) => {
                let is_command = EventType::parse(event.event_type()).is_ok_and(|t| t.is_command());
                match (&self.cfg.hook, is_command) {
                    (Some(hook), true) => hook.command(event),
                    _ => tracing::debug!(event_type = event.event_type(), "ignoring inbound event"),
                }
                None
            }
            AepMessage::Frame(Frame::Error(e)) if self.refusal(&e) => None,
            AepMessage::Frame(Frame::Error(e)) => {
                (self.outbox.report)(DeliveryReport::Endpoint {
                    error: TransportError::network_msg(format!(
                        "endpoint error frame: {} {}",
                        e.code.as_str(),
                        e.detail.unwrap_or_default()
                    )),
                });
                None
            }
            AepMessage::Frame(Frame::Pong(pong)) => {
                let settled = self.unconfirmed.pong(pong.t.as_ref());
                self.settle(&settled);
                None
            }
            // other frames (unknown ones included) are ignored (AEP-0003 §2)
            AepMessage::Frame(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(ty: &str, session: Option<&str>, seq: Option<u64>) -> Option<(String, bool)> {
        let mut e = Event::new("1", ty, "t", "aep://h/agent/a", "a");
        e.set_session(session.map(str::to_owned));
        e.set_seq(seq);
        claim_of(&e).map(|c| (c.session.to_string(), c.ends))
    }

    /// Per session the last claiming line is kept; a session's end forgets it, within
    /// one write and across writes; lines without a claim change nothing.
    #[test]
    fn the_last_claim_per_session_is_kept_until_the_session_ends() {
        let line = |text: &str, session: &str, ends: bool| {
            let claim = Claim {
                session: session.into(),
                ends,
            };
            (Utf8Bytes::from(text), Some(claim))
        };
        let mut claims = HashMap::new();
        note_claims(
            &mut claims,
            &[
                line("a1", "a", false),
                line("b1", "b", false),
                (Utf8Bytes::from("x"), None),
                line("a2", "a", false),
            ],
        );
        let texts = |c: &HashMap<String, Utf8Bytes>| {
            let mut v: Vec<(String, String)> =
                c.iter().map(|(k, t)| (k.clone(), t.to_string())).collect();
            v.sort();
            v
        };
        assert_eq!(
            texts(&claims),
            [("a".into(), "a2".into()), ("b".into(), "b1".into())]
        );
        note_claims(
            &mut claims,
            &[line("b2", "b", false), line("b3", "b", true)],
        );
        assert_eq!(texts(&claims), [("a".to_owned(), "a2".to_owned())]);
        note_claims(
            &mut claims,
            &[line("a3", "a", true), line("a4", "a", false)],
        );
        assert_eq!(
            texts(&claims),
            [("a".to_owned(), "a4".to_owned())],
            "claimed again after"
        );
    }

    /// What the sink re-claims after a reconnect is what a relay counts as a claim
    /// (`aep_core::types::claims_session`): sequenced events, unknown categories
    /// included; never commands, agent-scoped or unsequenced ones.
    #[test]
    fn claims_follow_the_core_rule() {
        assert_eq!(
            claim("tool.called", Some("s"), Some(1)),
            Some(("s".into(), false))
        );
        assert_eq!(
            claim("session.ended", Some("s"), Some(9)),
            Some(("s".into(), true))
        );
        assert_eq!(
            claim("widget.spun", Some("s"), Some(2)),
            Some(("s".into(), false))
        );
        assert_eq!(claim("tool.called", Some("s"), None), None);
        assert_eq!(claim("control.pause", Some("s"), None), None);
        assert_eq!(claim("attention.routed", Some("s"), None), None);
        assert_eq!(claim("agent.heartbeat", None, None), None);
    }
}
