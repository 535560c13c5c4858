//! The console's state: aep-core's fold ([`StateProjection`]) of every event the relay
//! holds and receives (in a cluster, every relay's), fed by a subscription of its own
//! (`from=all`, then live), and the roster, read from the hub as a `roster` reply would
//! be. Pages read it; none of it is computed anywhere else.
//!
//! It runs only while a page uses it: started by the first request, it stops once no
//! live page has read it for [`LINGER`], and its memory goes with it. While it runs,
//! its memory is bounded by what the relay holds: once it has folded more than twice
//! the store's bytes (plus 64 MiB) since it last read the store, it starts again from
//! the store, as it does when its subscription lagged (a dropped event would leave the
//! fold wrong) or was cut off.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use aep_core::frame::{decode_slice, Frame, RosterEntry};
use aep_core::projection::StateProjection;
use aep_core::{Message, Severity};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::encoded::Binding;
use crate::hub::{Hub, ReplayAsk, SubscribeRequest};
use crate::outbox::{Drain, End, Piece};
use crate::proto::Filter;

/// How long the state outlives the last page that read it.
pub(crate) const LINGER: Duration = Duration::from_secs(30);

/// How often the roster is read again.
const ROSTER_EVERY: Duration = Duration::from_millis(500);

/// Distinct event types remembered per session, for the type filter.
const TYPES_PER_SESSION: usize = 32;

/// A session's key: `(source, session)` (AEP-0001 §5.2).
pub(crate) type Key = (String, String);

/// What the session filter reads of a session beyond its projected state.
#[derive(Debug, Default)]
pub(crate) struct SessionIndex {
    /// The distinct types folded, the first [`TYPES_PER_SESSION`].
    pub(crate) types: Vec<Box<str>>,
    /// The highest severity folded.
    pub(crate) severity: Severity,
}

/// The folded state and what changed in it, under one lock.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) projection: StateProjection,
    /// Bumped whenever the state starts again from the store: pages take it whole.
    pub(crate) generation: u64,
    /// Bumped by every batch folded.
    pub(crate) version: u64,
    /// The version at which each session last changed.
    pub(crate) touched: HashMap<Key, u64>,
    pub(crate) index: HashMap<Key, SessionIndex>,
    /// The version at which the pending requests last changed.
    pub(crate) inbox_version: u64,
    /// The roster, as the hub answers it, and the version at which it last changed.
    pub(crate) roster: Vec<RosterEntry>,
    pub(crate) roster_version: u64,
    /// Events folded since the state last read the store.
    pub(crate) events: u64,
    bytes: usize,
}

impl State {
    fn new(generation: u64) -> State {
        State {
            projection: StateProjection::new(),
            generation,
            version: 1,
            touched: HashMap::new(),
            index: HashMap::new(),
            inbox_version: 1,
            roster: Vec::new(),
            roster_version: 1,
            events: 0,
            bytes: 0,
        }
    }

    /// Folds one message of the subscription: an event, or a frame (ignored).
    fn fold(&mut self, bytes: &[u8]) {
        let Ok(Message::Event(event)) = decode_slice(bytes) else {
            return;
        };
        self.events += 1;
        self.bytes += bytes.len();
        self.projection.apply(&event);
        let Some(session) = event.session() else {
            return;
        };
        let key = (event.source().to_owned(), session.to_owned());
        let ty = event.event_type();
        if ty.starts_with("attention.") {
            self.inbox_version = self.version;
        }
        let index = self.index.entry(key.clone()).or_default();
        index.severity = index.severity.max(event.severity());
        if index.types.len() < TYPES_PER_SESSION && !index.types.iter().any(|t| &**t == ty) {
            index.types.push(ty.into());
        }
        self.touched.insert(key, self.version);
    }
}

/// The running state of one relay's console.
#[derive(Debug)]
pub(crate) struct Engine {
    state: Mutex<State>,
    /// The version after each batch: pages wait on it.
    changed: watch::Sender<u64>,
    /// Pages reading it live, and when a request last used it (ms since `born`).
    pub(crate) watchers: AtomicUsize,
    used: AtomicU64,
    born: Instant,
    stop: CancellationToken,
    /// The largest roster reply read.
    max_roster: usize,
    /// The bytes past which the fold is rebuilt: two stores' worth and some room (the
    /// witnesses of the fold are about the size of the events it read).
    bound: usize,
}

impl Engine {
    /// Starts the state of `hub`'s console: its subscription and the task that folds
    /// it. `max_roster`: the largest roster reply read; `store_bytes`: the store's byte
    /// bound (the fold is rebuilt past twice it and some room).
    pub(crate) fn start(hub: &Arc<Hub>, max_roster: usize, store_bytes: usize) -> Arc<Engine> {
        let (changed, _) = watch::channel(0);
        let engine = Arc::new(Engine {
            state: Mutex::new(State::new(1)),
            changed,
            watchers: AtomicUsize::new(0),
            used: AtomicU64::new(0),
            born: Instant::now(),
            stop: CancellationToken::new(),
            max_roster,
            bound: store_bytes.saturating_mul(2).saturating_add(64 << 20),
        });
        tokio::spawn(run(hub.clone(), engine.clone()));
        engine
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver woken after each folded batch.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Whether the task still runs (a stopped engine is replaced by a new one).
    pub(crate) fn is_running(&self) -> bool {
        !self.stop.is_cancelled()
    }

    /// A request used it now.
    pub(crate) fn touch(&self) {
        let now = self.born.elapsed().as_millis() as u64;
        self.used.store(now, Ordering::Relaxed);
    }

    fn idle(&self) -> bool {
        let used = Duration::from_millis(self.used.load(Ordering::Relaxed));
        self.watchers.load(Ordering::Acquire) == 0 && self.born.elapsed() > used + LINGER
    }
}

/// Why one subscription of the engine ended.
enum Ended {
    /// Idle or the relay stops: the engine is done.
    Stop,
    /// The fold may be wrong or too big: read the store again.
    Rebuild,
}

async fn run(hub: Arc<Hub>, engine: Arc<Engine>) {
    let mut generation = 1;
    loop {
        let ended = follow(&hub, &engine).await;
        if matches!(ended, Ended::Stop) || hub.is_shutting_down() {
            break;
        }
        generation += 1;
        tracing::debug!(generation, "console: reading the store again");
        *engine.lock() = State::new(generation);
        engine.changed.send_modify(|v| *v += 1);
    }
    engine.stop.cancel();
    engine.changed.send_modify(|v| *v += 1);
}

/// Folds one subscription (`from=all`, then live) until it must end.
async fn follow(hub: &Arc<Hub>, engine: &Engine) -> Ended {
    let (outbox, rx) = hub.outbox(CancellationToken::new());
    let mut request = SubscribeRequest::new(Binding::Ws, Filter::default());
    request.replay = ReplayAsk {
        all: true,
        ..ReplayAsk::default()
    };
    let id = hub.subscribe(&outbox, request);
    let bound = engine.bound;
    let mut drain = Drain::new(rx, outbox.clone(), Duration::from_secs(3600));
    let mut roster = tokio::time::interval(ROSTER_EVERY);
    roster.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ended = loop {
        tokio::select! {
            piece = drain.next() => {
                let Some(piece) = piece else { break Ended::Rebuild };
                let mut over = false;
                {
                    let mut st = engine.lock();
                    st.version += 1;
                    let mut next = Some(piece);
                    // everything ready now folds under one lock, one wake-up for pages
                    while let Some(piece) = next.take() {
                        match piece {
                            Piece::Data(bytes) => st.fold(&bytes),
                            Piece::Heartbeat => {}
                            Piece::End(_) => over = true,
                        }
                        if over {
                            break;
                        }
                        next = drain.try_next();
                    }
                    let version = st.version;
                    if st.bytes > bound {
                        over = true;
                    }
                    drop(st);
                    engine.changed.send_replace(version);
                }
                if over || outbox.dropped() > 0 {
                    break Ended::Rebuild;
                }
            }
            _ = roster.tick() => {
                read_roster(hub, engine);
                if engine.idle() {
                    break Ended::Stop;
                }
            }
        }
    };
    hub.unsubscribe(id);
    outbox.end(End::Shutdown);
    ended
}

/// Reads the roster as a `roster` request would get it (in a cluster, every relay's
/// claims) and records a change.
fn read_roster(hub: &Hub, engine: &Engine) {
    let limit = engine.max_roster;
    let entries = match hub.roster_reply("console", limit) {
        Ok(text) => match decode_slice(text.as_bytes()) {
            Ok(Message::Frame(Frame::Roster(reply))) => reply.entries,
            _ => return,
        },
        Err(_) => return,
    };
    let mut st = engine.lock();
    if st.roster != entries {
        st.projection.set_roster(&entries);
        st.roster = entries;
        st.version += 1;
        st.roster_version = st.version;
        // every session's claim may have changed
        let version = st.version;
        for v in st.touched.values_mut() {
            *v = version;
        }
        drop(st);
        engine.changed.send_replace(version);
    }
}
