//! The shared state of one relay: the replay store, the live subscriptions and the
//! WebSocket connections, and the order in which accepted events reach them.
//!
//! One lock guards the subscriptions and the connections; it is held only for
//! bookkeeping, never across a write to a socket or a wait for the store. An ingest
//! admits its batch (admission, routing, the store's admission) and takes the list of
//! readers under it, and a subscription is registered and its replay bounded (by the
//! store's stamp) under it too, so every event reaches a new subscriber exactly once: by
//! replay or live, never both, never neither. With a store several relays share, its
//! feed takes the lock in place of ingest for the events it delivers, and is parked
//! while no live subscription reads it (see `storage`).
//!
//! Commands are routed once the lock is free, each through [`Claimants::route`], the
//! path a command another relay of a cluster forwards here takes too.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use aep_core::frame::RosterEntry;
use aep_core::resume::{ReplayStart, ResumeFrom};
use aep_core::Capture;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::admission;
use crate::delivery::Reader;
use crate::directory::{Claimants, Directory, Routed};
use crate::encoded::Binding;
use crate::fanout::{self, Sub, Subscribers};
use crate::line::Incoming;
use crate::outbox::{self, Bounds, End, Outbox, ReplayJob};
use crate::proto::{Disposition, Filter};
use crate::routing::{self, Connections, Party, Roster, RosterTooLarge};
use crate::storage::{
    Admitted, Admitting, Backend, Feed, FeedGate, Gate, ReplayFrom, Stamp, Storage, Unstored,
};

#[derive(Debug)]
struct State {
    subs: Subscribers,
    conns: Connections,
    /// With a feed: the stamp of the last event fan-out has taken from it, which bounds
    /// a new live subscription's replay (a `live=0` one reads all the store holds; none:
    /// ingest fans out, bounded by the store's stamp).
    fed: Option<Stamp>,
    /// With a gate: the feed is parked (no live subscription since it last delivered).
    parked: bool,
    /// When a refusal of the relay-wide bound was last told, and how many since.
    refusals_told: Option<Instant>,
    refusals_untold: u64,
    /// The gate's latest opening: what the feed read under an earlier one is dropped.
    generation: u64,
}

/// What a new subscription replays before going live (AEP-0003 §5).
#[derive(Debug, Default)]
pub(crate) struct ReplayAsk {
    pub(crate) positions: Vec<ResumeFrom>,
    pub(crate) all: bool,
    /// `live=0` also serves the history of the one session the filter names.
    pub(crate) filter_session: bool,
}

impl ReplayAsk {
    /// What the store is asked for, if anything.
    fn into_replay(self, filter: &Filter) -> Option<ReplayFrom> {
        if self.all {
            // holds the filter's session already: adding it again sent it twice
            return Some(ReplayFrom::All);
        }
        let mut sessions = self.positions;
        if let Some(session) = filter.session().filter(|_| self.filter_session) {
            if !sessions.iter().any(|p| p.session() == session) {
                sessions.push(ResumeFrom::new(session, ReplayStart::EARLIEST));
            }
        }
        (!sessions.is_empty()).then_some(ReplayFrom::Sessions(sessions))
    }
}

/// A subscription to register: one SSE stream, one WebSocket `subscribe`, or one of the
/// subscription model's (see [`Hub::subscribe`]).
#[derive(Debug)]
pub(crate) struct SubscribeRequest {
    pub(crate) binding: Binding,
    pub(crate) filter: Filter,
    pub(crate) capture: Option<Capture>,
    pub(crate) replay: ReplayAsk,
    /// Registered for live delivery after its replay; `false` (`live=0`): replay only.
    pub(crate) live: bool,
    /// The WebSocket connection it is made on and its id there: a later one of the
    /// same id replaces it, and closing the connection ends it.
    pub(crate) conn: Option<(u64, String)>,
    /// The subscription id its replay markers echo (`replay-exhausted`); none on SSE.
    pub(crate) sub: Option<String>,
    /// Queued before the replay (the `subscribed` frame).
    pub(crate) first: Option<Bytes>,
}

impl SubscribeRequest {
    /// A live subscription on `binding` with `filter`, replaying nothing, no ceiling.
    pub(crate) fn new(binding: Binding, filter: Filter) -> SubscribeRequest {
        SubscribeRequest {
            binding,
            filter,
            capture: None,
            replay: ReplayAsk::default(),
            live: true,
            conn: None,
            sub: None,
            first: None,
        }
    }
}

/// What the hub is given of the configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// The backpressure bounds of every reader's queue (AEP-0003 §8.4).
    pub(crate) bounds: Bounds,
    /// Whether commands are routed at all: control needs an authenticated binding, so
    /// a relay without a token refuses them (AEP-0004 §4.1).
    pub(crate) control: bool,
    /// Live subscriptions the relay holds at once, every reader together (issue 32):
    /// one more a client asks for is refused ([`Hub::subscribe_bounded`]).
    pub(crate) max_subscriptions: usize,
}

/// A live subscription refused because the relay holds the most it serves (issue 32),
/// as AEP-0003 §6.5 refuses a resource limit.
#[derive(Debug)]
pub(crate) struct Full {
    max: usize,
}

impl Full {
    /// What the refusal says: the limit hit, and what to do.
    pub(crate) fn detail(&self) -> String {
        let max = self.max;
        format!(
            "this relay holds {max} live subscriptions, the most it fans out to (AEP_MAX_RELAY_SUBSCRIPTIONS={max}): try again once others have ended, or ask its operator to raise the bound"
        )
    }
}

/// How often a refusal of the relay-wide bound is told at WARN, at most.
const WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// The relay's shared state.
#[derive(Debug)]
pub(crate) struct Hub {
    settings: Settings,
    state: Mutex<State>,
    storage: Box<dyn Storage>,
    /// Where the other relays' claims are (a cluster's control plane), or nowhere.
    directory: Arc<dyn Directory>,
    /// Parks and opens the feed (`storage::FeedGate`), when the store gives one.
    gate: Option<FeedGate>,
    started: Instant,
    next_id: AtomicU64,
    /// Live subscriptions that need each event parsed (a filter on more than the session,
    /// or a capture ceiling), readable without the lock.
    parsing: Arc<AtomicUsize>,
    shutting_down: AtomicBool,
    /// Cancelled once the drain timeout of a shutdown has passed: every connection still
    /// open then is dropped.
    stopped: CancellationToken,
    /// The connections the accept loop refused (`peers`), for `/healthz`.
    pub(crate) refused: Arc<crate::peers::RefusedCounts>,
    /// Live subscriptions refused by the relay-wide bound, for `/healthz`.
    refused_subscriptions: AtomicU64,
}

impl Hub {
    /// The shared state over `backend`, the other relays' claims where `directory`
    /// says (a relay of a cluster: commands routed and the roster answered
    /// cluster-wide), with the backend's feed, if it has one, for the server to fan out
    /// ([`Hub::fan_out_feed`]).
    pub(crate) fn new(
        settings: Settings,
        backend: Backend,
        directory: Arc<dyn Directory>,
    ) -> (Hub, Option<Feed>) {
        let subs = Subscribers::default();
        let Backend {
            storage,
            feed,
            gate,
        } = backend;
        let fed = feed.is_some().then(|| storage.stamp());
        let hub = Hub {
            settings,
            parsing: subs.parsing(),
            state: Mutex::new(State {
                subs,
                conns: Connections::new(directory.clone()),
                fed,
                // a feed with a gate starts parked: the first live subscription opens it
                parked: gate.is_some(),
                generation: 0,
                refusals_told: None,
                refusals_untold: 0,
            }),
            storage,
            directory,
            gate,
            started: Instant::now(),
            next_id: AtomicU64::new(1),
            shutting_down: AtomicBool::new(false),
            stopped: CancellationToken::new(),
            refused: Arc::default(),
            refused_subscriptions: AtomicU64::new(0),
        };
        (hub, feed)
    }

    /// Waits until the store has written everything admitted so far (a shutdown's last
    /// step).
    pub(crate) fn flush(&self) {
        self.storage.flush();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic elsewhere must not take the relay down with it: the state stays usable
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh queue sized by the configured bounds; `shed` is cancelled if its reader
    /// is disconnected past the hard bound (see [`Outbox::shed`]).
    pub(crate) fn outbox(
        &self,
        shed: CancellationToken,
    ) -> (
        Arc<Outbox>,
        tokio::sync::mpsc::UnboundedReceiver<outbox::Item>,
    ) {
        Outbox::new(self.settings.bounds, shed)
    }

    /// Whether a live subscription needs parsed events now; ingest keeps them only then.
    pub(crate) fn needs_parsed(&self) -> bool {
        self.parsing.load(Ordering::Acquire) > 0
    }

    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// Cancelled when the relay has stopped: what is still open closes at once.
    pub(crate) fn stopped(&self) -> &CancellationToken {
        &self.stopped
    }

    // ---- ingest -----------------------------------------------------------------------

    /// Accepts a batch already checked whole: admission and the store's admission under
    /// the lock; then, the lock free, its commands routed in order, fan-out in order
    /// (each subscriber getting its events in runs), the commands for other relays
    /// forwarded; then the store's answer.
    ///
    /// `Err` when the store could not keep the batch (a full disk): nothing of it is
    /// held then, so the emitter is not told it was stored, and its retry is admitted
    /// anew. Live readers may have had the events meanwhile: to them the retry is a
    /// duplicate, as AEP-0001 §7.4 allows.
    pub(crate) async fn ingest<'a, 't: 'a, I>(
        &self,
        batch: I,
        from_conn: Option<u64>,
    ) -> Result<(), Unstored>
    where
        I: IntoIterator<Item = &'a Incoming<'t>> + Clone,
    {
        let (subs, mut fan_out, commands, admitting) = {
            let mut st = self.lock();
            let fed = st.fed.is_some();
            let plan = admission::plan(&mut st.conns, batch.clone(), from_conn, fed);
            let admitting = match plan.stored.as_slice() {
                [] => Admitting::Done(Default::default()),
                stored => self.storage.admit(stored),
            };
            (st.subs.index(), plan.fan_out, plan.commands, admitting)
        };
        // commands, in order, once the lock is free; a refused one is not fanned out
        let mut forwards = Vec::new();
        if commands {
            for (incoming, go) in batch.clone().into_iter().zip(fan_out.iter_mut()) {
                if incoming.disposition != Disposition::Command {
                    continue;
                }
                let refused = match self.route(incoming, from_conn, false) {
                    Routed::Refused(refusal) => {
                        *go = false;
                        refusal
                    }
                    Routed::Here(Err(refusal)) => refusal,
                    Routed::Here(Ok(())) => continue,
                    Routed::There(forward) => {
                        forwards.push(forward);
                        continue;
                    }
                };
                tracing::debug!(
                    code = refused.code.as_str(),
                    session = incoming.session(),
                    detail = refused.detail,
                    "command refused"
                );
            }
        }
        if subs.len() > 0 {
            let events = batch
                .into_iter()
                .zip(fan_out)
                .filter_map(|(e, go)| go.then_some(e));
            fanout::fan_out(&subs, events).await;
        }
        // commands whose target another relay holds, in order, once the lock is free
        for forward in forwards {
            forward.send(&*self.directory).await;
        }
        admitting.stored().await.map(drop)
    }

    /// Fans out what a shared store's feed yields, until it ends (the server runs it
    /// while it serves).
    pub(crate) async fn fan_out_feed(&self, mut feed: Feed) {
        while let Some(admitted) = feed.next().await {
            self.fan_out_fed(admitted).await;
        }
    }

    async fn fan_out_fed(&self, admitted: Admitted) {
        let subs = {
            let mut st = self.lock();
            if admitted.generation != st.generation {
                // read ahead before the gate opened again, from a stamp the replays of
                // the subscriptions since then already cover
                return;
            }
            // a redelivery carries its held copy's stamp: forwarded, the bound kept
            st.fed = st.fed.max(Some(admitted.stamp));
            if st.subs.len() == 0 && !st.parked {
                if let Some(gate) = &self.gate {
                    // nobody reads live: the stream need not deliver every event here
                    st.parked = true;
                    gate.send_replace(Gate::parked(st.generation));
                }
            }
            st.subs.index()
        };
        if subs.len() > 0 {
            let batch: Vec<Incoming<'static>> =
                admitted.events.into_iter().map(Incoming::stored).collect();
            fanout::fan_out(&subs, &batch).await;
        }
    }

    // ---- subscriptions ------------------------------------------------------------------

    /// Registers a subscription (when `live`) and queues its replay, atomically with
    /// respect to fan-out, toward `outbox`; its hub id. The relay's own readers (the
    /// console) take this way, never refused; a client's subscription takes
    /// [`Hub::subscribe_bounded`].
    pub(crate) fn subscribe(&self, outbox: &Arc<Outbox>, request: SubscribeRequest) -> u64 {
        let st = self.lock();
        self.register(st, outbox, request)
    }

    /// [`Hub::subscribe`] within the relay-wide bound: a live subscription past it is
    /// refused, nothing queued (re-using a WebSocket subscription's id replaces it, and
    /// adds none); counted for `/healthz` and told at WARN at most once per 10 s.
    pub(crate) fn subscribe_bounded(
        &self,
        outbox: &Arc<Outbox>,
        request: SubscribeRequest,
    ) -> Result<u64, Full> {
        let mut st = self.lock();
        let max = self.settings.max_subscriptions;
        let replaces = request.conn.as_ref().is_some_and(|(conn, key)| {
            st.conns.subscriptions_of(*conn, Some(key)) < st.conns.subscriptions_of(*conn, None)
        });
        if request.live && !replaces && st.subs.len() >= max {
            self.refused_subscriptions.fetch_add(1, Ordering::Relaxed);
            st.refusals_untold += 1;
            let now = Instant::now();
            if st
                .refusals_told
                .is_none_or(|told| now.duration_since(told) >= WARN_EVERY)
            {
                tracing::warn!(
                    refused = st.refusals_untold,
                    max,
                    "live subscriptions refused: the relay holds the most it serves (--max-relay-subscriptions)"
                );
                st.refusals_told = Some(now);
                st.refusals_untold = 0;
            }
            return Err(Full { max });
        }
        Ok(self.register(st, outbox, request))
    }

    fn register(
        &self,
        mut st: MutexGuard<'_, State>,
        outbox: &Arc<Outbox>,
        request: SubscribeRequest,
    ) -> u64 {
        let SubscribeRequest {
            binding,
            filter,
            capture,
            replay,
            live,
            conn,
            sub,
            first,
        } = request;
        let replay = replay.into_replay(&filter);
        let reader = Arc::new(Reader {
            filter,
            capture,
            binding,
        });
        let id = self.id();
        if let Some(bytes) = first {
            outbox.push_frame(bytes);
        }
        if live && st.parked {
            self.open_feed(&mut st);
        }
        if let Some(from) = replay {
            let upto = match st.fed {
                // a live subscription's replay ends where the feed is, and live delivery
                // takes over there: each event once
                Some(fed) if live => fed,
                // with nothing live to meet, everything the shared store holds when read:
                // what got a 2xx on any relay (AEP-0003 §3.2.3) is there, however far
                // behind this relay's feed is
                Some(_) => Stamp::MAX,
                None => self.storage.stamp(),
            };
            outbox.push_replay(ReplayJob {
                replay: self.storage.replay(from, upto),
                reader: reader.clone(),
                sub,
            });
        }
        if live {
            let conn_id = conn.as_ref().map(|(c, _)| *c);
            if let Some((c, key)) = conn {
                // re-using an id replaces that subscription
                if let Some(old) = st.conns.add_subscription(c, key, id) {
                    st.subs.remove(old);
                }
            }
            st.subs.add(Sub {
                id,
                conn: conn_id,
                reader,
                outbox: outbox.clone(),
            });
        }
        id
    }

    /// Opens a parked feed for a live subscription about to register (under the lock):
    /// from the larger of what it had delivered and the store's stamp, which becomes
    /// the bound of the subscription's replay (see `storage`).
    fn open_feed(&self, st: &mut State) {
        let Some(gate) = &self.gate else { return };
        let after = st.fed.unwrap_or(0).max(self.storage.stamp());
        st.fed = Some(after);
        st.generation += 1;
        st.parked = false;
        gate.send_replace(Gate {
            after: Some(after),
            generation: st.generation,
        });
    }

    /// Removes one subscription by hub id (an SSE stream that ended).
    pub(crate) fn unsubscribe(&self, id: u64) {
        let mut st = self.lock();
        st.subs.remove(id);
    }

    /// Removes a WebSocket subscription by its client id; `false` when there was none.
    pub(crate) fn unsubscribe_ws(&self, conn: u64, key: &str) -> bool {
        let mut st = self.lock();
        let Some(id) = st.conns.remove_subscription(conn, key) else {
            return false;
        };
        st.subs.remove(id);
        true
    }

    // ---- connections --------------------------------------------------------------------

    pub(crate) fn connect(&self, outbox: Arc<Outbox>) -> u64 {
        let id = self.id();
        self.lock().conns.connect(id, outbox);
        id
    }

    pub(crate) fn hello(&self, conn: u64, party: Arc<Party>) {
        self.lock().conns.hello(conn, party);
    }

    pub(crate) fn disconnect(&self, conn: u64) {
        let mut st = self.lock();
        for id in st.conns.disconnect(conn) {
            st.subs.remove(id);
        }
    }

    /// WebSocket subscriptions (`subscribe`) a connection holds, but for `besides`.
    pub(crate) fn subscriptions_of(&self, conn: u64, besides: Option<&str>) -> usize {
        self.lock().conns.subscriptions_of(conn, besides)
    }

    /// The `roster` reply to request `id` (AEP-0003 §4.1), built outside the lock from
    /// a snapshot of the claims (in a cluster, the other relays' too) and never past
    /// `limit` bytes.
    pub(crate) fn roster_reply(&self, id: &str, limit: usize) -> Result<String, RosterTooLarge> {
        let mut roster = Roster::new(id, limit);
        let mut room = true;
        self.claims(&mut |entry| {
            room = roster.push(entry);
            room
        });
        if room {
            let elsewhere = self.directory.entries();
            let _ = elsewhere
                .iter()
                .flat_map(|relay| relay.iter())
                .all(|entry| roster.push(entry.clone()));
        }
        roster.reply()
    }

    // ---- introspection ------------------------------------------------------------------

    fn uptime(&self) -> u64 {
        (self.started.elapsed().as_millis() as u64 + 500) / 1000
    }

    /// `/healthz` counts.
    pub(crate) fn counts(&self) -> Value {
        let sessions = self.storage.sessions();
        let st = self.lock();
        let mut counts = json!({
            "sessions": sessions,
            "subscribers": st.subs.len(),
            "connections": st.conns.len(),
            "uptime_s": self.uptime(),
            "refused_connections": self.refused.to_json(),
            "max_subscriptions": self.settings.max_subscriptions,
            "refused_subscriptions": self.refused_subscriptions.load(Ordering::Relaxed),
        });
        if let Value::Object(counts) = &mut counts {
            counts.extend(self.storage.health());
        }
        counts
    }

    /// The `/connections` document.
    pub(crate) fn connections(&self) -> Value {
        let (sessions, held) = (self.storage.sessions(), self.storage.held_bytes());
        let st = self.lock();
        let connections = st.conns.describe();
        let sse = st.subs.sse();
        let dropped = st.subs.dropped();
        json!({
            "ok": true,
            "relay": {
                "sessions": sessions,
                "subscribers": st.subs.len(),
                "connections": st.conns.len(),
                "uptime_s": self.uptime(),
                "control": self.settings.control,
                "buffered_bytes": held,
                "dropped": dropped,
            },
            "connections": connections,
            "sse_subscribers": sse,
        })
    }

    /// Tells every reader the relay is going away (SSE `: shutting-down`, WS 1001).
    pub(crate) fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        let st = self.lock();
        st.subs.end_streams(End::Shutdown);
        st.conns.end_all(End::Shutdown);
    }
}

impl Claimants for Hub {
    fn claims(&self, take: &mut dyn FnMut(RosterEntry) -> bool) {
        // a snapshot under the lock; the entries (the declarations copied) built outside
        let claims = self.lock().conns.claims();
        for entry in routing::entries_of(&claims) {
            if !take(entry) {
                return;
            }
        }
    }

    fn route(&self, command: &Incoming<'_>, sender: Option<u64>, forwarded: bool) -> Routed {
        let authenticated = self.settings.control || forwarded;
        let decision = self
            .lock()
            .conns
            .decide(command, sender, authenticated, !forwarded);
        decision.carry_out(command)
    }
}

#[cfg(test)]
mod tests;
