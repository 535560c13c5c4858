//! Per-session bounded replay buffers (AEP-0003 §5).
//!
//! Each buffered event is held once, as the SSE message the relay writes for it; the
//! WebSocket frame is a slice of the same allocation. Admission dedupes on
//! `(source, id)` (AEP-0001 §7.4) through a 128-bit digest of the pair, so the index
//! costs a few dozen bytes per event whatever the ids look like.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use aep_core::resume::{Position, ReplayStart};
use smallvec::SmallVec;

use crate::encoded::Encoded;

/// What the store counts for one buffered event: its frame and its entry.
fn held_bytes(event: &Encoded) -> usize {
    event.frame_len() + std::mem::size_of::<Encoded>()
}

/// Where a buffered event sits in its session's order (AEP-0001 §7): the store holds
/// only sequenced session events, which all have one.
fn at(event: &Encoded) -> Position {
    event.position().unwrap_or(Position::new(0, 0))
}

/// Session names and dedupe digests are chosen on the wire: a seeded hasher, and
/// foldhash rather than SipHash because both are looked up once per ingested event.
type Hasher = foldhash::fast::RandomState;

#[derive(Debug)]
struct Session {
    /// The map's key, shared.
    name: Arc<str>,
    events: VecDeque<Encoded>,
    ids: HashSet<(u64, u64), Hasher>,
    /// What its events hold ([`Encoded::held_bytes`]).
    bytes: usize,
    /// The store's tick when last written; 0 before the first write.
    touched: u64,
}

impl Session {
    /// Drops the oldest event (the lowest position).
    fn pop_oldest(&mut self) -> Option<usize> {
        let dropped = self.events.pop_front()?;
        self.ids.remove(&dropped.key());
        let bytes = held_bytes(&dropped);
        self.bytes -= bytes;
        Some(bytes)
    }
}

/// What a resume position yields from one session (AEP-0003 §5).
#[derive(Debug, Clone)]
pub(crate) struct ReplayPart {
    pub(crate) session: Arc<str>,
    /// The earliest held position, when the request predates it (the gap to declare).
    pub(crate) exhausted: Option<Position>,
    pub(crate) events: Vec<Encoded>,
}

/// What [`Store::admit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admission {
    /// The event was new and is now held.
    pub(crate) admitted: bool,
    /// The sessions evicted to make room (for a new session, or for the bytes).
    pub(crate) evicted: SmallVec<[Arc<str>; 1]>,
}

/// The bounds of the replay store (AEP-0003 §5): per session, its oldest events go
/// first; over all, the least recently written sessions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Events per session.
    pub(crate) events: usize,
    /// Bytes per session.
    pub(crate) session_bytes: usize,
    /// Sessions.
    pub(crate) sessions: usize,
    /// Bytes over all sessions.
    pub(crate) bytes: usize,
}

/// All session buffers, least recently written evicted first.
#[derive(Debug)]
pub(crate) struct Store {
    sessions: HashMap<Arc<str>, Session, Hasher>,
    recency: BTreeMap<u64, Arc<str>>,
    tick: u64,
    /// What every session's events hold.
    held: usize,
    limits: Limits,
}

impl Store {
    pub(crate) fn new(limits: Limits) -> Store {
        Store {
            sessions: HashMap::default(),
            recency: BTreeMap::new(),
            tick: 0,
            held: 0,
            limits,
        }
    }

    /// Sessions held.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Buffers one event of `session`; not admitted when `(source, id)` is already held.
    /// The newest event of a session is always kept, whatever its size: every bound
    /// evicts older ones, or other sessions, first.
    pub(crate) fn admit(&mut self, session: &str, event: Encoded) -> Admission {
        let mut evicted = SmallVec::new();
        if !self.sessions.contains_key(session) {
            if self.sessions.len() >= self.limits.sessions.max(1) {
                if let Some(oldest) = self.evict_oldest() {
                    evicted.push(oldest);
                }
            }
            let name: Arc<str> = Arc::from(session);
            let held = Session {
                name: name.clone(),
                events: VecDeque::new(),
                ids: HashSet::default(),
                bytes: 0,
                touched: 0,
            };
            self.sessions.insert(name, held);
        }
        let Some(s) = self.sessions.get_mut(session) else {
            return Admission {
                admitted: false,
                evicted,
            };
        };
        // refreshed on every write, duplicates included: eviction drops the session
        // written least recently, never an active one. A session that is already the
        // most recent keeps its place (the same order, without two tree updates per event)
        if s.touched == 0 || s.touched != self.tick {
            self.tick += 1;
            if s.touched != 0 {
                self.recency.remove(&s.touched);
            }
            s.touched = self.tick;
            self.recency.insert(self.tick, s.name.clone());
        }
        if !s.ids.insert(event.key()) {
            return Admission {
                admitted: false,
                evicted,
            };
        }
        // events almost always arrive in order: insert from the tail
        let position = at(&event);
        let mut i = s.events.len();
        while i > 0 && at(&s.events[i - 1]) > position {
            i -= 1;
        }
        let bytes = held_bytes(&event);
        s.events.insert(i, event);
        s.bytes += bytes;
        self.held += bytes;
        while s.events.len() > self.limits.events
            || (s.bytes > self.limits.session_bytes && s.events.len() > 1)
        {
            match s.pop_oldest() {
                Some(freed) => self.held -= freed,
                None => break,
            }
        }
        // over all sessions: the least recently written go first, this one last
        while self.held > self.limits.bytes && self.sessions.len() > 1 {
            match self.evict_oldest() {
                Some(oldest) => evicted.push(oldest),
                None => break,
            }
        }
        if self.held > self.limits.bytes {
            if let Some(s) = self.sessions.get_mut(session) {
                while self.held > self.limits.bytes && s.events.len() > 1 {
                    match s.pop_oldest() {
                        Some(freed) => self.held -= freed,
                        None => break,
                    }
                }
            }
        }
        Admission {
            admitted: true,
            evicted,
        }
    }

    /// Takes back an event admitted before (its journal write failed), so the same
    /// event sent again is admitted anew; nothing when it is no longer held.
    pub(crate) fn withdraw(&mut self, session: &str, event: &Encoded) {
        let Some(s) = self.sessions.get_mut(session) else {
            return;
        };
        if !s.ids.remove(&event.key()) {
            return;
        }
        // just admitted: near the tail
        if let Some(i) = s.events.iter().rposition(|e| e.key() == event.key()) {
            if let Some(gone) = s.events.remove(i) {
                let bytes = held_bytes(&gone);
                s.bytes -= bytes;
                self.held -= bytes;
            }
        }
    }

    /// Evicts the least recently written session.
    fn evict_oldest(&mut self) -> Option<Arc<str>> {
        let (_, oldest) = self.recency.pop_first()?;
        if let Some(gone) = self.sessions.remove(&oldest) {
            self.held -= gone.bytes;
        }
        Some(oldest)
    }

    /// The events of `session` from `start` on. The gap is declared when the earliest
    /// held event lies beyond the next position asked for (AEP-0003 §5).
    pub(crate) fn replay(&self, session: &str, start: ReplayStart) -> ReplayPart {
        let Some((name, s)) = self.sessions.get_key_value(session) else {
            return ReplayPart {
                session: Arc::from(session),
                exhausted: None,
                events: Vec::new(),
            };
        };
        let first = s.events.partition_point(|e| !start.includes(at(e)));
        let exhausted = s
            .events
            .front()
            .map(at)
            .filter(|earliest| start.declares_gap(*earliest));
        ReplayPart {
            session: name.clone(),
            exhausted,
            events: s.events.range(first..).cloned().collect(),
        }
    }

    /// Every held session from its earliest position, least recently written first
    /// (replay-all, AEP-0003 §5: never a replay-exhausted).
    pub(crate) fn replay_all(&self) -> Vec<ReplayPart> {
        self.recency
            .values()
            .map(|name| self.replay(name, ReplayStart::EARLIEST))
            .collect()
    }

    /// Total bytes held by buffered events (SSE messages and their index entries).
    pub(crate) fn held_bytes(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(events: usize, sessions: usize) -> Limits {
        Limits {
            events,
            session_bytes: usize::MAX,
            sessions,
            bytes: usize::MAX,
        }
    }

    fn ev(id: &str, epoch: u64, seq: u64) -> Encoded {
        crate::encoded::tests::framed("s", id, epoch, seq)
    }

    fn after(epoch: u64, seq: u64) -> ReplayStart {
        ReplayStart::After(Position::new(epoch, seq))
    }

    fn seq(e: &Encoded) -> u64 {
        at(e).seq()
    }

    #[test]
    fn admission_dedupes_and_evicts_oldest_position() {
        let mut store = Store::new(limits(3, 10));
        for i in 0..5 {
            assert!(store.admit("s", ev(&format!("e{i}"), 0, i)).admitted);
        }
        assert!(!store.admit("s", ev("e4", 0, 4)).admitted);
        let part = store.replay("s", after(0, 0));
        let seqs: Vec<u64> = part.events.iter().map(seq).collect();
        assert_eq!(seqs, vec![2, 3, 4]);
        assert_eq!(part.exhausted, Some(Position::new(0, 2)));
        assert_eq!(store.replay("s", after(0, 1)).exhausted, None);
        assert_eq!(store.replay("s", ReplayStart::EARLIEST).exhausted, None);
        assert_eq!(store.replay("s", ReplayStart::EARLIEST).events.len(), 3);
    }

    #[test]
    fn late_event_is_sorted_in() {
        let mut store = Store::new(limits(10, 10));
        store.admit("s", ev("a", 0, 2));
        store.admit("s", ev("b", 0, 1));
        store.admit("s", ev("c", 1, 0));
        let seqs: Vec<Position> = store
            .replay("s", ReplayStart::EARLIEST)
            .events
            .iter()
            .map(at)
            .collect();
        let want = [(0, 1), (0, 2), (1, 0)].map(|(e, s)| Position::new(e, s));
        assert_eq!(seqs, want);
    }

    #[test]
    fn least_recently_written_session_is_evicted() {
        let mut store = Store::new(limits(10, 2));
        store.admit("a", ev("1", 0, 0));
        store.admit("b", ev("2", 0, 0));
        store.admit("a", ev("3", 0, 1));
        let admission = store.admit("c", ev("4", 0, 0));
        assert_eq!(admission.evicted.as_slice(), [Arc::from("b")]);
        assert_eq!(store.len(), 2);
        assert!(store.replay("b", ReplayStart::EARLIEST).events.is_empty());
        let order: Vec<String> = store
            .replay_all()
            .iter()
            .map(|p| p.session.to_string())
            .collect();
        assert_eq!(order, vec!["a", "c"]);
    }

    /// The byte bounds evict as the count bounds do: a session's oldest events first,
    /// then the least recently written sessions, and never the newest event.
    #[test]
    fn bytes_are_bounded_per_session_and_over_all() {
        let size = held_bytes(&ev("e0", 0, 0));
        let mut store = Store::new(Limits {
            events: 100,
            session_bytes: 3 * size,
            sessions: 100,
            bytes: 5 * size,
        });
        for i in 0..5 {
            assert!(store.admit("a", ev(&format!("e{i}"), 0, i)).admitted);
        }
        let seqs = |store: &Store, s: &str| -> Vec<u64> {
            store
                .replay(s, ReplayStart::EARLIEST)
                .events
                .iter()
                .map(seq)
                .collect()
        };
        assert_eq!(seqs(&store, "a"), [2, 3, 4], "a session's oldest go first");
        assert_eq!(store.held_bytes(), 3 * size);
        store.admit("b", ev("b0", 0, 0));
        store.admit("b", ev("b1", 0, 1));
        assert_eq!(store.held_bytes(), 5 * size);
        // one more anywhere passes the total: the least recently written session goes
        let admission = store.admit("b", ev("b2", 0, 2));
        assert_eq!(admission.evicted.as_slice(), [Arc::from("a")]);
        assert_eq!(seqs(&store, "b"), [0, 1, 2]);
        assert_eq!(store.held_bytes(), 3 * size);
        // an event larger than every bound is still held, alone
        let mut store = Store::new(Limits {
            events: 100,
            session_bytes: size / 2,
            sessions: 100,
            bytes: size / 2,
        });
        store.admit("a", ev("x", 0, 0));
        let admission = store.admit("c", ev("y", 0, 0));
        assert_eq!(admission.evicted.as_slice(), [Arc::from("a")]);
        assert_eq!(seqs(&store, "c"), [0]);
        store.admit("c", ev("z", 0, 1));
        assert_eq!(seqs(&store, "c"), [1]);
    }
}
