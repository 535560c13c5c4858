//! The console's state: aep-core's fold ([`StateProjection`]) of every event the relay
//! holds and receives (in a cluster, every relay's), fed by a subscription of its own
//! (`from=all`, then live), and the roster, read from the hub as a `roster` reply would
//! be. Pages read it; none of it is computed anywhere else.
//!
//! It runs only while a page uses it: started by the first request, it stops once no
//! live page has read it for [`LINGER`], and its memory goes with it.
//!
//! It is ready once the store's replay is folded whole: the replay is folded aside and
//! the state put in place at its end (a marker queued behind the replay says when), so
//! a page never sees a half-read store. While it runs, its memory is bounded by what
//! the relay holds: once it has folded more than twice what its replay held (at least
//! twice the store's byte limit) plus 64 MiB, it reads the store again, as it does when
//! its subscription lagged (a dropped event would leave the fold wrong) or was cut off;
//! meanwhile pages keep the state they had.
//!
//! What changed is kept by version (`changes`), so a page is sent the sessions that
//! changed since its last message without a look at the others.
//!
//! The relay never waits for it: its queue has no lag grace and room for a burst
//! ([`QUEUE`]), so ingest goes on at its own pace while the fold catches up.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use aep_core::frame::{decode_slice, Frame, RosterEntry};
use aep_core::projection::StateProjection;
use aep_core::{Message, Severity};
use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::encoded::Binding;
use crate::hub::{Hub, ReplayAsk, SubscribeRequest};
use crate::outbox::{Bounds, Drain, End, Outbox, Piece};
use crate::proto::Filter;

/// How long the state outlives the last page that read it.
pub(crate) const LINGER: Duration = Duration::from_secs(30);

/// How often the roster is read again.
const ROSTER_EVERY: Duration = Duration::from_millis(500);

/// Distinct event types remembered per session, for the type filter.
const TYPES_PER_SESSION: usize = 32;

/// What the engine queues behind its replay: no event or frame reads so (an event is a
/// JSON object), so its arrival says the replay before it is folded.
const REPLAYED: &[u8] = b":console-replayed";

/// Room above twice the replay's bytes before the state reads the store again.
const HEADROOM: usize = 64 << 20;

/// The engine's queue: an ingest never waits for the console (no lag grace), and a
/// burst the fold has not caught up with waits here, up to this many bytes; past it
/// the fold would miss events, so it reads the store again (AEP-0003 §8.4 bounds a
/// reader; this reader is the relay's own and recovers from the store instead).
const QUEUE: Bounds = Bounds {
    soft: 64 << 20,
    hard: 96 << 20,
    grace: Duration::ZERO,
};

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

impl SessionIndex {
    /// Notes one folded event of type `ty` at `severity`.
    fn note(&mut self, ty: &str, severity: Severity) {
        self.severity = self.severity.max(severity);
        if self.types.len() < TYPES_PER_SESSION && !self.types.iter().any(|t| &**t == ty) {
            self.types.push(ty.into());
        }
    }
}

/// The folded state and what changed in it, under one lock.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) projection: StateProjection,
    /// New whenever the state is read from the store: pages take it whole.
    pub(crate) generation: u64,
    /// Bumped by every batch folded.
    pub(crate) version: u64,
    /// The version at which each session last changed.
    touched: HashMap<Key, u64>,
    /// The same, ordered by version: what changed after a version, read without a look
    /// at the sessions that did not.
    changes: BTreeSet<(u64, Key)>,
    pub(crate) index: HashMap<Key, SessionIndex>,
    /// The version at which the pending requests last changed.
    pub(crate) inbox_version: u64,
    /// The roster, as the hub answers it, and the version at which it last changed.
    pub(crate) roster: Vec<RosterEntry>,
    pub(crate) roster_version: u64,
    /// Events folded since the state last read the store.
    pub(crate) events: u64,
    bytes: usize,
    /// The session the last event folded into, and the version it was touched at.
    last: Option<(Key, u64)>,
}

impl State {
    fn new(generation: u64) -> State {
        State {
            projection: StateProjection::new(),
            generation,
            version: 1,
            touched: HashMap::new(),
            changes: BTreeSet::new(),
            index: HashMap::new(),
            inbox_version: 1,
            roster: Vec::new(),
            roster_version: 1,
            events: 0,
            bytes: 0,
            last: None,
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
        let ty = event.event_type();
        if ty.starts_with("attention.") {
            self.inbox_version = self.version;
        }
        let severity = event.severity();
        // a batch's events mostly follow one session: its key found once, not per event
        let same = self.last.as_ref().is_some_and(|(key, version)| {
            *version == self.version && key.0 == event.source() && key.1 == session
        });
        if same {
            if let Some(index) = self.last.as_ref().and_then(|(k, _)| self.index.get_mut(k)) {
                index.note(ty, severity);
            }
            return;
        }
        let key = (event.source().to_owned(), session.to_owned());
        self.index
            .entry(key.clone())
            .or_default()
            .note(ty, severity);
        self.touch(key.clone());
        self.last = Some((key, self.version));
    }

    /// Records that `key` changed at the current version.
    fn touch(&mut self, key: Key) {
        let version = self.version;
        match self.touched.get_mut(&key) {
            // a batch touches a session once, however many of its events it holds
            Some(v) if *v == version => {}
            Some(v) => {
                let old = std::mem::replace(v, version);
                self.changes.remove(&(old, key.clone()));
                self.changes.insert((version, key));
            }
            None => {
                self.touched.insert(key.clone(), version);
                self.changes.insert((version, key));
            }
        }
    }

    /// The sessions that changed after version `seen`, oldest change first.
    pub(crate) fn changed_since(&self, seen: u64) -> impl Iterator<Item = &Key> {
        let from = (seen.saturating_add(1), (String::new(), String::new()));
        self.changes.range(from..).map(|(_, key)| key)
    }

    /// Whether `key` changed after version `seen`.
    pub(crate) fn changed_after(&self, key: &Key, seen: u64) -> bool {
        self.touched.get(key).is_some_and(|&v| v > seen)
    }

    /// Takes `entries` as the roster; the sessions whose claims differ are changed.
    fn set_roster(&mut self, entries: Vec<RosterEntry>) {
        let by_session = |entries: &[RosterEntry]| {
            let mut m: BTreeMap<String, Vec<RosterEntry>> = BTreeMap::new();
            for e in entries {
                m.entry(e.session.clone()).or_default().push(e.clone());
            }
            m
        };
        let (old, new) = (by_session(&self.roster), by_session(&entries));
        let differ: BTreeSet<&str> = old
            .iter()
            .filter(|(s, claims)| new.get(*s) != Some(*claims))
            .chain(
                new.iter()
                    .filter(|(s, claims)| old.get(*s) != Some(*claims)),
            )
            .map(|(s, _)| s.as_str())
            .collect();
        self.projection.set_roster(&entries);
        self.version += 1;
        self.roster_version = self.version;
        let keys: Vec<Key> = self
            .index
            .keys()
            .filter(|(_, session)| differ.contains(session.as_str()))
            .cloned()
            .collect();
        for key in keys {
            self.touch(key);
        }
        self.roster = entries;
    }
}

/// The running state of one relay's console.
#[derive(Debug)]
pub(crate) struct Engine {
    /// `None` until the store's replay is folded the first time.
    state: Mutex<Option<State>>,
    /// The version after each batch: pages wait on it.
    changed: watch::Sender<u64>,
    /// Events folded of a replay not put in place yet (for a page's progress line).
    loading: AtomicU64,
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

/// The state, once ready, under its lock.
pub(crate) type Ready<'a> = MutexGuard<'a, Option<State>>;

impl Engine {
    /// Starts the state of `hub`'s console: its subscription and the task that folds
    /// it. `max_roster`: the largest roster reply read; `store_bytes`: the store's byte
    /// bound (the fold is rebuilt past twice it and some room).
    pub(crate) fn start(hub: &Arc<Hub>, max_roster: usize, store_bytes: usize) -> Arc<Engine> {
        let (changed, _) = watch::channel(0);
        let engine = Arc::new(Engine {
            state: Mutex::new(None),
            changed,
            loading: AtomicU64::new(0),
            watchers: AtomicUsize::new(0),
            used: AtomicU64::new(0),
            born: Instant::now(),
            stop: CancellationToken::new(),
            max_roster,
            bound: store_bytes.saturating_mul(2).saturating_add(HEADROOM),
        });
        tokio::spawn(run(hub.clone(), engine.clone()));
        engine
    }

    /// The state under its lock: `None` until it is ready.
    pub(crate) fn lock(&self) -> Ready<'_> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the store's replay has been folded whole.
    pub(crate) fn is_ready(&self) -> bool {
        self.lock().is_some()
    }

    /// Events folded so far of the replay being read.
    pub(crate) fn loading(&self) -> u64 {
        self.loading.load(Ordering::Relaxed)
    }

    /// Waits until the state is ready, `within` at most; whether it is.
    pub(crate) async fn wait_ready(&self, within: Duration) -> bool {
        let mut changed = self.subscribe();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.is_ready() {
                return true;
            }
            if !self.is_running() {
                return false;
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                _ => return self.is_ready(),
            }
        }
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

    fn notify(&self) {
        self.changed.send_modify(|v| *v += 1);
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
        let ended = follow(&hub, &engine, generation).await;
        if matches!(ended, Ended::Stop) || hub.is_shutting_down() {
            break;
        }
        generation += 1;
        tracing::debug!(generation, "console: reading the store again");
    }
    engine.stop.cancel();
    engine.notify();
}

/// Folds one subscription (`from=all`, then live) until it must end: the replay into a
/// state of its own, put in place once whole, then each live batch in place.
async fn follow(hub: &Arc<Hub>, engine: &Engine, generation: u64) -> Ended {
    let (outbox, rx) = Outbox::new(QUEUE, CancellationToken::new());
    let mut request = SubscribeRequest::new(Binding::Ws, Filter::default());
    request.replay = ReplayAsk {
        all: true,
        ..ReplayAsk::default()
    };
    let id = hub.subscribe(&outbox, request);
    // behind the replay in the queue, so it arrives once the replay is read
    let marker = Bytes::from_static(REPLAYED);
    let queued = outbox.push_frame(marker.clone());
    let mut bound = engine.bound;
    let mut drain = Drain::new(rx, outbox.clone(), Duration::from_secs(3600));
    let mut roster = tokio::time::interval(ROSTER_EVERY);
    roster.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut building = Some(State::new(generation));
    engine.loading.store(0, Ordering::Relaxed);
    let ended = loop {
        if !queued {
            break Ended::Rebuild;
        }
        tokio::select! {
            piece = drain.next() => {
                let Some(piece) = piece else { break Ended::Rebuild };
                let mut over = false;
                let mut replayed = false;
                {
                    let in_place = building.is_none();
                    let mut guard = None;
                    let st = match building.as_mut() {
                        Some(st) => st,
                        None => match guard.insert(engine.lock()).as_mut() {
                            Some(st) => st,
                            None => break Ended::Rebuild,
                        },
                    };
                    st.version += 1;
                    let mut next = Some(piece);
                    // everything ready now folds under one lock, one wake-up for pages
                    while let Some(piece) = next.take() {
                        match piece {
                            Piece::Data(bytes) if bytes == marker => {
                                replayed = true;
                                break;
                            }
                            Piece::Data(bytes) => st.fold(&bytes),
                            Piece::Heartbeat => {}
                            Piece::End(_) => {
                                over = true;
                                break;
                            }
                        }
                        next = drain.try_next();
                    }
                    // the replay is what the store holds, however much that is
                    if in_place && st.bytes > bound {
                        over = true;
                    }
                    if !in_place {
                        engine.loading.store(st.events, Ordering::Relaxed);
                    }
                }
                if replayed {
                    if let Some(mut fresh) = building.take() {
                        bound = bound.max(fresh.bytes.saturating_mul(2).saturating_add(HEADROOM));
                        let mut slot = engine.lock();
                        // the roster carries over until it is read again below
                        if let Some(old) = slot.as_ref() {
                            fresh.projection.set_roster(&old.roster);
                            fresh.roster = old.roster.clone();
                        }
                        *slot = Some(fresh);
                        drop(slot);
                        read_roster(hub, engine);
                    }
                }
                if building.is_none() {
                    engine.notify();
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
    let mut slot = engine.lock();
    let Some(st) = slot.as_mut() else { return };
    if st.roster != entries {
        st.set_roster(entries);
        drop(slot);
        engine.notify();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, ty: &str, session: &str, seq: u64) -> Vec<u8> {
        format!(
            r#"{{"aep":"0.1","id":"{id}","type":"{ty}","time":"2026-07-22T06:00:00.000Z","source":"aep://t","agent":"a","session":"{session}","seq":{seq}}}"#
        )
        .into_bytes()
    }

    fn key(session: &str) -> Key {
        ("aep://t".to_owned(), session.to_owned())
    }

    #[test]
    fn a_page_reads_only_the_sessions_that_changed_since_its_last_message() {
        let mut st = State::new(1);
        for s in 0..100 {
            st.version += 1;
            st.fold(&event(
                &format!("e{s}"),
                "session.started",
                &format!("s{s}"),
                0,
            ));
        }
        let seen = st.version;
        st.version += 1;
        // one batch, three events of two sessions
        st.fold(&event("x1", "progress.status", "s7", 1));
        st.fold(&event("x2", "progress.status", "s7", 2));
        st.fold(&event("x3", "progress.status", "s42", 1));
        let changed: Vec<&Key> = st.changed_since(seen).collect();
        assert_eq!(changed, [&key("s42"), &key("s7")]);
        assert!(st.changed_after(&key("s7"), seen) && !st.changed_after(&key("s8"), seen));
        // each session is held once in the change log, at its latest version
        assert_eq!(st.changes.len(), 100);
        assert_eq!(st.changed_since(0).count(), 100);
    }

    #[test]
    fn a_roster_change_touches_only_the_sessions_whose_claims_changed() {
        use aep_core::frame::{Hello, Identity, Role};
        let mut st = State::new(1);
        for s in ["s1", "s2", "s3"] {
            st.version += 1;
            st.fold(&event(s, "session.started", s, 0));
        }
        let hello = Hello::new(Role::Emitter).with_identity(Identity::new("a"));
        st.set_roster(vec![RosterEntry::claimed("s2", &hello)]);
        let seen = st.version;
        let changed: Vec<&Key> = st.changed_since(seen - 1).collect();
        assert_eq!(changed, [&key("s2")]);
        assert_eq!(
            st.projection
                .summary("aep://t", "s2")
                .map(|s| s.claimants()),
            Some(1)
        );
        // the same roster again changes nothing; another claim changes its session only
        st.set_roster(vec![
            RosterEntry::claimed("s2", &hello),
            RosterEntry::claimed("s3", &hello),
        ]);
        let changed: Vec<&Key> = st.changed_since(seen).collect();
        assert_eq!(changed, [&key("s3")]);
    }
}
