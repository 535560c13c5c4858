//! The in-memory replay store: bounded per-session buffers (AEP-0003 §5), the relay's
//! default [`Storage`].
//!
//! Each buffered event is held once, as the SSE message the relay writes for it; the
//! WebSocket frame is a slice of the same allocation. Admission dedupes on
//! `(source, id)` (AEP-0001 §7.4) through a 128-bit digest of the pair, so the index
//! costs a few dozen bytes per event whatever the ids look like. A replay reads the
//! buffers a run of events at a time under the store's own lock, so it holds nothing of
//! them between runs and never holds up ingest for long.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use aep_core::resume::{Position, ReplayStart};
use futures::Stream;
use smallvec::SmallVec;

use crate::encoded::Encoded;
use crate::storage::{Admitting, Limits, Outcome, Replay, ReplayFrom, Replayed, Stamp, Storage};

/// Session names and dedupe digests are chosen on the wire: a seeded hasher, and
/// foldhash rather than SipHash because both are looked up once per ingested event.
type Hasher = foldhash::fast::RandomState;

/// Events one replay reads under the lock at a time, and hands on as one run.
const RUN: usize = 256;

/// One buffered event and when it was admitted.
#[derive(Debug)]
struct Held {
    event: Encoded,
    stamp: Stamp,
}

impl Held {
    /// Where it sits in its session (AEP-0001 §7): the store holds only sequenced
    /// session events, which all have a position.
    fn position(&self) -> Position {
        self.event.position().unwrap_or(Position::new(0, 0))
    }

    /// Its place in the session's buffer: by position, then (for two events at one
    /// position, a collision the buffer keeps) by admission.
    fn order(&self) -> (Position, Stamp) {
        (self.position(), self.stamp)
    }

    /// What the byte bounds count for it: its frame and its entry.
    fn bytes(&self) -> usize {
        self.event.frame_len() + std::mem::size_of::<Held>()
    }
}

#[derive(Debug)]
struct Session {
    /// The map's key, shared.
    name: Arc<str>,
    /// Which buffer of the name this is: a session evicted whole and written again is a
    /// new one, and a replay that had begun on the old one has lost what it had left.
    generation: u64,
    events: VecDeque<Held>,
    ids: HashSet<(u64, u64), Hasher>,
    /// What its events hold ([`Held::bytes`]).
    bytes: usize,
    /// The store's tick when last written; 0 before the first write.
    touched: u64,
    /// The furthest event evicted from the front: a replay that had not reached it has
    /// lost events to eviction.
    evicted_through: Option<(Position, Stamp)>,
}

impl Session {
    /// Drops the oldest event (the lowest position); the bytes it held.
    fn pop_oldest(&mut self) -> Option<usize> {
        let dropped = self.events.pop_front()?;
        self.ids.remove(&dropped.event.key());
        let order = Some(dropped.order());
        if order > self.evicted_through {
            self.evicted_through = order;
        }
        let bytes = dropped.bytes();
        self.bytes -= bytes;
        Some(bytes)
    }
}

/// What [`Store::admit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admission {
    pub(crate) outcome: Outcome,
    /// The sessions evicted to make room (for a new session, or for the bytes).
    pub(crate) evicted: SmallVec<[Arc<str>; 1]>,
}

/// All session buffers, least recently written evicted first.
#[derive(Debug)]
pub(crate) struct Store {
    sessions: HashMap<Arc<str>, Session, Hasher>,
    recency: BTreeMap<u64, Arc<str>>,
    tick: u64,
    /// Sessions created, the last one's [`Session::generation`].
    generations: u64,
    /// The stamp of the latest admission.
    stamp: Stamp,
    /// What every session's events hold.
    held: usize,
    limits: Limits,
    /// Of the sessions evicted whole, the newest position each held, the latest
    /// [`Limits::sessions`] of them: a reader resuming one of them is told of the gap
    /// (`replay-exhausted`, AEP-0003 §5) rather than given nothing in silence.
    dropped: HashMap<Arc<str>, Position, Hasher>,
    /// Those sessions, oldest eviction first (the bound's order).
    dropped_order: VecDeque<Arc<str>>,
}

/// The buffer generation of a session the store remembers only as evicted.
const DROPPED: u64 = u64::MAX;

impl Store {
    fn new(limits: Limits) -> Store {
        Store {
            sessions: HashMap::default(),
            recency: BTreeMap::new(),
            tick: 0,
            generations: 0,
            stamp: 0,
            held: 0,
            limits,
            dropped: HashMap::default(),
            dropped_order: VecDeque::new(),
        }
    }

    /// Sessions held.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Buffers one sequenced session event; a duplicate when `(source, id)` is already
    /// held. The newest event of a session is always kept, whatever its size: every
    /// bound evicts older ones, or other sessions, first.
    pub(crate) fn admit(&mut self, event: &Encoded) -> Admission {
        let mut evicted = SmallVec::new();
        let Some(session) = event.session() else {
            debug_assert!(false, "an event without a position offered for replay");
            return Admission {
                outcome: Outcome::Duplicate,
                evicted,
            };
        };
        if !self.sessions.contains_key(session) {
            if self.sessions.len() >= self.limits.sessions.max(1) {
                if let Some(oldest) = self.evict_oldest() {
                    evicted.push(oldest);
                }
            }
            let name: Arc<str> = Arc::from(session);
            self.generations += 1;
            let held = Session {
                name: name.clone(),
                generation: self.generations,
                events: VecDeque::new(),
                ids: HashSet::default(),
                bytes: 0,
                touched: 0,
                evicted_through: None,
            };
            self.sessions.insert(name, held);
        }
        let Some(s) = self.sessions.get_mut(session) else {
            return Admission {
                outcome: Outcome::Duplicate,
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
                outcome: Outcome::Duplicate,
                evicted,
            };
        }
        self.stamp += 1;
        let held = Held {
            event: event.clone(),
            stamp: self.stamp,
        };
        // events almost always arrive in order: insert from the tail
        let position = held.position();
        let mut i = s.events.len();
        while i > 0 && s.events.get(i - 1).is_some_and(|e| e.position() > position) {
            i -= 1;
        }
        let bytes = held.bytes();
        s.events.insert(i, held);
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
            outcome: Outcome::Held,
            evicted,
        }
    }

    /// Takes back an event admitted before (its durable write failed), so the same
    /// event sent again is admitted anew; nothing when it is no longer held.
    pub(crate) fn withdraw(&mut self, event: &Encoded) {
        let Some(s) = event.session().and_then(|name| self.sessions.get_mut(name)) else {
            return;
        };
        if !s.ids.remove(&event.key()) {
            return;
        }
        // just admitted: near the tail
        if let Some(i) = s.events.iter().rposition(|e| e.event.key() == event.key()) {
            if let Some(gone) = s.events.remove(i) {
                let bytes = gone.bytes();
                s.bytes -= bytes;
                self.held -= bytes;
            }
        }
    }

    /// Evicts the least recently written session, remembering the newest position it
    /// held.
    fn evict_oldest(&mut self) -> Option<Arc<str>> {
        let (_, oldest) = self.recency.pop_first()?;
        if let Some(gone) = self.sessions.remove(&oldest) {
            self.held -= gone.bytes;
            if let Some(newest) = gone.events.back().map(Held::position) {
                self.remember_dropped(oldest.clone(), newest);
            }
        }
        Some(oldest)
    }

    fn remember_dropped(&mut self, session: Arc<str>, newest: Position) {
        if self.dropped.insert(session.clone(), newest).is_none() {
            self.dropped_order.push_back(session);
        }
        while self.dropped_order.len() > self.limits.sessions.max(1) {
            if let Some(forgotten) = self.dropped_order.pop_front() {
                self.dropped.remove(&forgotten);
            }
        }
    }

    /// Every held session, least recently written first, with its events in order.
    pub(crate) fn by_recency(
        &self,
    ) -> impl Iterator<Item = (&Arc<str>, impl Iterator<Item = &Encoded>)> {
        self.recency.values().filter_map(|name| {
            let s = self.sessions.get(name)?;
            Some((&s.name, s.events.iter().map(|h| &h.event)))
        })
    }

    /// The buffer `session` is held in, and the newest position of it admitted at or
    /// before `upto`: what a replay that begins now has to serve of it. None when
    /// nothing is.
    /// A session held no more (evicted whole) promises what it held, in a buffer no
    /// replay can find: the replay declares the gap.
    fn promised(&self, session: &str, upto: Stamp) -> Option<(u64, Position)> {
        let Some(s) = self.sessions.get(session) else {
            return self.dropped.get(session).map(|newest| (DROPPED, *newest));
        };
        // in position order: the first from the back admitted by `upto` is the newest
        let newest = s.events.iter().rev().find(|h| h.stamp <= upto)?;
        Some((s.generation, newest.position()))
    }

    /// Moves `part` on by at most [`RUN`] events, putting what it serves into `out`;
    /// `true` once the part is served whole.
    fn serve(&self, part: &mut Part, upto: Stamp, out: &mut VecDeque<Replayed>) -> bool {
        let held = self.sessions.get(&part.session);
        let s = match (held, part.promised) {
            (Some(s), Some((generation, _))) if s.generation == generation => s,
            // evicted before the replay began: a start that named a position asked for
            // what is gone (AEP-0003 §5, eviction included)
            (_, Some((DROPPED, newest))) => {
                if let Some(earliest) = part.start.resumes_after_dropped(newest) {
                    out.push_back(Replayed::Gap {
                        session: part.session.clone(),
                        earliest,
                    });
                }
                return true;
            }
            // the buffer the replay began on was evicted whole (and maybe written anew
            // since, with events live fan-out delivers): what it had not served is lost
            (_, Some((_, newest))) => {
                let lost = part.start.includes(newest) && part.last.is_none_or(|(p, _)| p < newest);
                if part.declares_gaps && lost {
                    // nothing of what it was to serve is held: the session goes on
                    // after the newest of it, in live delivery (AEP-0003 §5)
                    out.push_back(Replayed::Gap {
                        session: part.session.clone(),
                        earliest: Position::new(newest.epoch(), newest.seq().saturating_add(1)),
                    });
                }
                return true;
            }
            (Some(s), None) => s,
            (None, None) => return true,
        };
        let earliest = || {
            s.events
                .iter()
                .find(|h| h.stamp <= upto)
                .map(Held::position)
        };
        match part.last {
            // the request predates what is held (AEP-0003 §5)
            None if part.declares_gaps => {
                if let Some(earliest) = earliest().filter(|e| part.start.declares_gap(*e)) {
                    out.push_back(Replayed::Gap {
                        session: s.name.clone(),
                        earliest,
                    });
                }
            }
            // events the reader had not reached were evicted meanwhile
            Some(last) if part.declares_gaps && s.evicted_through > Some(last) => {
                if let Some(earliest) = earliest() {
                    out.push_back(Replayed::Gap {
                        session: s.name.clone(),
                        earliest,
                    });
                }
                part.last = s.evicted_through;
            }
            _ => {}
        }
        let from = match part.last {
            None => s
                .events
                .partition_point(|h| !part.start.includes(h.position())),
            Some(last) => s.events.partition_point(|h| h.order() <= last),
        };
        let mut events = Vec::new();
        let mut whole = true;
        for (visited, held) in s.events.range(from..).enumerate() {
            if visited == RUN {
                whole = false;
                break;
            }
            part.last = Some(held.order());
            // admitted later: live fan-out delivers it
            if held.stamp <= upto {
                events.push(held.event.clone());
            }
        }
        if !events.is_empty() {
            out.push_back(Replayed::Events {
                session: s.name.clone(),
                events,
            });
        }
        whole
    }
}

/// The in-memory store, shared by the relay and every replay being served.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    store: Arc<Mutex<Store>>,
}

impl Memory {
    /// Empty buffers with `limits`.
    pub(crate) fn new(limits: Limits) -> Memory {
        Memory {
            store: Arc::new(Mutex::new(Store::new(limits))),
        }
    }

    /// The buffers, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Store> {
        // a panic elsewhere must not take the relay down with it: the store stays usable
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Storage for Memory {
    fn admit(&self, events: &[&Encoded]) -> Admitting {
        let mut store = self.lock();
        Admitting::Done(events.iter().map(|e| store.admit(e).outcome).collect())
    }

    fn stamp(&self) -> Stamp {
        self.lock().stamp
    }

    fn replay(&self, from: ReplayFrom, upto: Stamp) -> Replay {
        let (parts, all) = match from {
            ReplayFrom::All => (VecDeque::new(), true),
            ReplayFrom::Sessions(sessions) => {
                // what each named session has to serve, read as the replay begins: a
                // session evicted whole before the replay reaches it is a declared gap
                let store = self.lock();
                let parts = sessions
                    .into_iter()
                    .map(|from| {
                        let mut part = Part::new(Arc::from(from.session()), from.start(), true);
                        part.promised = store.promised(from.session(), upto);
                        part
                    })
                    .collect();
                (parts, false)
            }
        };
        Box::pin(MemoryReplay {
            memory: self.clone(),
            parts,
            all,
            upto,
            ready: VecDeque::new(),
        })
    }

    fn sessions(&self) -> usize {
        self.lock().len()
    }

    fn held_bytes(&self) -> usize {
        self.lock().held
    }
}

/// Where a replay is in one session.
#[derive(Debug)]
struct Part {
    session: Arc<str>,
    start: ReplayStart,
    /// The order of the last event visited; none before the first run.
    last: Option<(Position, Stamp)>,
    /// Replay-all never declares a gap (AEP-0003 §5 rule 2).
    declares_gaps: bool,
    /// Of a request that names positions, the session's buffer and its newest position
    /// the replay is to serve ([`Store::promised`]), read when the replay began.
    promised: Option<(u64, Position)>,
}

impl Part {
    fn new(session: Arc<str>, start: ReplayStart, declares_gaps: bool) -> Part {
        Part {
            session,
            start,
            last: None,
            declares_gaps,
            promised: None,
        }
    }
}

/// A replay of the in-memory store: always ready, a run of events read per lock.
#[derive(Debug)]
struct MemoryReplay {
    memory: Memory,
    parts: VecDeque<Part>,
    /// Replay-all whose sessions are not listed yet: listed at the first read, so a
    /// replay nobody reads costs nothing.
    all: bool,
    upto: Stamp,
    ready: VecDeque<Replayed>,
}

impl MemoryReplay {
    fn next_item(&mut self) -> Option<Replayed> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if std::mem::take(&mut self.all) {
                let store = self.memory.lock();
                self.parts = store
                    .by_recency()
                    .map(|(name, _)| Part::new(name.clone(), ReplayStart::EARLIEST, false))
                    .collect();
                continue;
            }
            let part = self.parts.front_mut()?;
            if self.memory.lock().serve(part, self.upto, &mut self.ready) {
                self.parts.pop_front();
            }
        }
    }
}

impl Stream for MemoryReplay {
    // never an error: what is held in memory is always read
    type Item = std::io::Result<Replayed>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.next_item().map(Ok))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::encoded::tests::framed;
    use aep_core::resume::ResumeFrom;
    use futures::StreamExt;

    fn limits(events: usize, sessions: usize) -> Limits {
        Limits {
            events,
            session_bytes: usize::MAX,
            sessions,
            bytes: usize::MAX,
        }
    }

    fn ev(id: &str, epoch: u64, seq: u64) -> Encoded {
        framed("s", id, epoch, seq)
    }

    fn after(epoch: u64, seq: u64) -> ReplayStart {
        ReplayStart::After(Position::new(epoch, seq))
    }

    /// One item of a replay, its runs taken apart.
    #[derive(Debug)]
    pub(crate) enum Item {
        Gap {
            session: Arc<str>,
            earliest: Position,
        },
        Event(Encoded),
    }

    /// The items of a replay, each event on its own.
    pub(crate) fn flatten(replayed: Vec<std::io::Result<Replayed>>) -> Vec<Item> {
        replayed
            .into_iter()
            .flat_map(|item| match item {
                Ok(Replayed::Gap { session, earliest }) => vec![Item::Gap { session, earliest }],
                Ok(Replayed::Events { events, .. }) => {
                    events.into_iter().map(Item::Event).collect()
                }
                Err(e) => panic!("a store in memory never fails a replay: {e}"),
            })
            .collect()
    }

    /// Everything a replay of `from` serves now, read whole.
    pub(crate) fn replayed(storage: &dyn Storage, from: ReplayFrom) -> Vec<Item> {
        let replay = storage.replay(from, storage.stamp());
        flatten(futures::executor::block_on(replay.collect()))
    }

    /// The `(session, seq)` of every event `from` replays, and every gap as
    /// `(session, u64::MAX)` followed by the earliest seq.
    fn served(storage: &dyn Storage, from: ReplayFrom) -> Vec<(String, u64)> {
        replayed(storage, from)
            .into_iter()
            .flat_map(|item| match item {
                Item::Gap { session, earliest } => vec![
                    (session.to_string(), u64::MAX),
                    (session.to_string(), earliest.seq()),
                ],
                Item::Event(e) => {
                    let seq = e.position().map(Position::seq).unwrap_or_default();
                    vec![(e.session().unwrap_or_default().to_owned(), seq)]
                }
            })
            .collect()
    }

    /// The seqs `start` replays of session `session`.
    fn seqs(storage: &dyn Storage, session: &str, start: ReplayStart) -> Vec<u64> {
        let from = ReplayFrom::Sessions(vec![ResumeFrom::new(session, start)]);
        served(storage, from)
            .into_iter()
            .filter(|(_, seq)| *seq != u64::MAX)
            .map(|(_, seq)| seq)
            .collect()
    }

    fn admit(memory: &Memory, event: Encoded) -> Outcome {
        match memory.admit(&[&event]) {
            Admitting::Done(outcomes) => outcomes[0],
            Admitting::Pending(_) => panic!("the memory store answers at once"),
        }
    }

    #[test]
    fn admission_dedupes_and_evicts_oldest_position() {
        let memory = Memory::new(limits(3, 10));
        for i in 0..5 {
            assert_eq!(admit(&memory, ev(&format!("e{i}"), 0, i)), Outcome::Held);
        }
        assert_eq!(admit(&memory, ev("e4", 0, 4)), Outcome::Duplicate);
        let from = |start| ReplayFrom::Sessions(vec![ResumeFrom::new("s", start)]);
        let s = |seq| ("s".to_owned(), seq);
        // after 0: 1 is gone, so the gap is declared before what is held
        assert_eq!(
            served(&memory, from(after(0, 0))),
            [s(u64::MAX), s(2), s(2), s(3), s(4)]
        );
        assert_eq!(served(&memory, from(after(0, 1))), [s(2), s(3), s(4)]);
        assert_eq!(
            served(&memory, from(ReplayStart::EARLIEST)),
            [s(2), s(3), s(4)]
        );
    }

    #[test]
    fn late_event_is_sorted_in() {
        let memory = Memory::new(limits(10, 10));
        admit(&memory, ev("a", 0, 2));
        admit(&memory, ev("b", 0, 1));
        admit(&memory, ev("c", 1, 0));
        let from = ReplayFrom::Sessions(vec![ResumeFrom::new("s", ReplayStart::EARLIEST)]);
        let order: Vec<Option<Position>> = replayed(&memory, from)
            .into_iter()
            .map(|item| match item {
                Item::Event(e) => e.position(),
                Item::Gap { .. } => None,
            })
            .collect();
        let want = [(0, 1), (0, 2), (1, 0)].map(|(e, s)| Some(Position::new(e, s)));
        assert_eq!(order, want);
    }

    #[test]
    fn least_recently_written_session_is_evicted() {
        let memory = Memory::new(limits(10, 2));
        memory.lock().admit(&framed("a", "1", 0, 0));
        memory.lock().admit(&framed("b", "2", 0, 0));
        memory.lock().admit(&framed("a", "3", 0, 1));
        let admission = memory.lock().admit(&framed("c", "4", 0, 0));
        assert_eq!(admission.evicted.as_slice(), [Arc::from("b")]);
        assert_eq!(memory.sessions(), 2);
        assert!(seqs(&memory, "b", ReplayStart::EARLIEST).is_empty());
        let sessions: Vec<String> = served(&memory, ReplayFrom::All)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        assert_eq!(sessions, ["a", "a", "c"], "least recently written first");
    }

    /// The byte bounds evict as the count bounds do: a session's oldest events first,
    /// then the least recently written sessions, and never the newest event.
    #[test]
    fn bytes_are_bounded_per_session_and_over_all() {
        let size = Held {
            event: ev("e0", 0, 0),
            stamp: 0,
        }
        .bytes();
        let memory = Memory::new(Limits {
            events: 100,
            session_bytes: 3 * size,
            sessions: 100,
            bytes: 5 * size,
        });
        let held = |session: &str| seqs(&memory, session, ReplayStart::EARLIEST);
        for i in 0..5 {
            assert_eq!(
                admit(&memory, framed("a", &format!("e{i}"), 0, i)),
                Outcome::Held
            );
        }
        assert_eq!(held("a"), [2, 3, 4], "a session's oldest go first");
        assert_eq!(memory.held_bytes(), 3 * size);
        admit(&memory, framed("b", "b0", 0, 0));
        admit(&memory, framed("b", "b1", 0, 1));
        assert_eq!(memory.held_bytes(), 5 * size);
        // one more anywhere passes the total: the least recently written session goes
        let admission = memory.lock().admit(&framed("b", "b2", 0, 2));
        assert_eq!(admission.evicted.as_slice(), [Arc::from("a")]);
        assert_eq!(held("b"), [0, 1, 2]);
        assert_eq!(memory.held_bytes(), 3 * size);
        // an event larger than every bound is still held, alone
        let memory = Memory::new(Limits {
            events: 100,
            session_bytes: size / 2,
            sessions: 100,
            bytes: size / 2,
        });
        memory.lock().admit(&framed("a", "x", 0, 0));
        let admission = memory.lock().admit(&framed("c", "y", 0, 0));
        assert_eq!(admission.evicted.as_slice(), [Arc::from("a")]);
        assert_eq!(seqs(&memory, "c", ReplayStart::EARLIEST), [0]);
        memory.lock().admit(&framed("c", "z", 0, 1));
        assert_eq!(seqs(&memory, "c", ReplayStart::EARLIEST), [1]);
    }

    /// A replay serves what was admitted up to its stamp, whatever comes later, and
    /// reads the buffers as it goes: a replay of a full store copies nothing up front.
    #[test]
    fn a_replay_serves_what_was_admitted_before_it_and_reads_lazily() {
        let memory = Memory::new(limits(1000, 10));
        for i in 0..600 {
            admit(&memory, ev(&format!("e{i}"), 0, i));
        }
        let upto = memory.stamp();
        let from = ReplayFrom::Sessions(vec![ResumeFrom::new("s", ReplayStart::EARLIEST)]);
        let mut replay = memory.replay(from, upto);
        // a late event below the tail and a new one, admitted after the replay began:
        // both go to live readers, neither to this replay
        admit(&memory, ev("late", 0, 10_000));
        admit(&memory, ev("e-dup-position", 0, 3));
        let mut seqs = Vec::new();
        while let Some(item) = futures::executor::block_on(replay.next()) {
            for item in flatten(vec![item]) {
                if let Item::Event(e) = item {
                    seqs.push(e.position().map(Position::seq).unwrap_or_default());
                }
            }
        }
        assert_eq!(seqs, (0..600).collect::<Vec<u64>>());
    }

    /// Events evicted before a slow replay reaches them are declared as a gap for a
    /// request that names a position, and silently absent for replay-all.
    #[test]
    fn a_replay_overtaken_by_eviction_declares_the_gap() {
        let memory = Memory::new(limits(300, 10));
        for i in 0..300 {
            admit(&memory, ev(&format!("e{i}"), 0, i));
        }
        let from = ReplayFrom::Sessions(vec![ResumeFrom::new("s", after(0, 0))]);
        let mut replay = memory.replay(from, memory.stamp());
        let mut all = memory.replay(ReplayFrom::All, memory.stamp());
        let first = futures::executor::block_on(replay.next());
        assert!(
            matches!(first, Some(Ok(Replayed::Events { .. }))),
            "{first:?}"
        );
        let _ = futures::executor::block_on(all.next());
        // the first run is read; 280 more events push most of the rest out
        for i in 300..580 {
            admit(&memory, ev(&format!("e{i}"), 0, i));
        }
        let rest = flatten(futures::executor::block_on(replay.collect()));
        let gaps: Vec<Position> = rest
            .iter()
            .filter_map(|item| match item {
                Item::Gap { earliest, .. } => Some(*earliest),
                Item::Event(_) => None,
            })
            .collect();
        assert_eq!(gaps, [Position::new(0, 280)]);
        let rest_all = flatten(futures::executor::block_on(all.collect()));
        assert!(rest_all.iter().all(|i| matches!(i, Item::Event(_))));
    }

    /// The gaps in what a replay serves from now on, read whole.
    fn gaps(replay: Replay) -> Vec<Position> {
        flatten(futures::executor::block_on(replay.collect()))
            .into_iter()
            .filter_map(|item| match item {
                Item::Gap { earliest, .. } => Some(earliest),
                Item::Event(_) => None,
            })
            .collect()
    }

    /// A session evicted whole while a replay that names a position is under way (or
    /// before it starts) is a declared gap, after the newest position the replay was to
    /// serve; a replay that had nothing left of it, or replay-all, declares none.
    #[test]
    fn a_session_evicted_whole_mid_replay_declares_the_gap() {
        let memory = Memory::new(limits(1000, 1));
        for i in 0..300 {
            admit(&memory, ev(&format!("e{i}"), 0, i));
        }
        let named = |start| ReplayFrom::Sessions(vec![ResumeFrom::new("s", start)]);
        let mut begun = memory.replay(named(after(0, 0)), memory.stamp());
        let first = futures::executor::block_on(begun.next());
        assert!(
            matches!(first, Some(Ok(Replayed::Events { .. }))),
            "{first:?}"
        );
        let unread = memory.replay(named(after(0, 0)), memory.stamp());
        let nothing_left = memory.replay(named(after(0, 299)), memory.stamp());
        let mut all = memory.replay(ReplayFrom::All, memory.stamp());
        let _ = futures::executor::block_on(all.next());
        // another session takes the only place, then "s" is written anew
        admit(&memory, framed("t", "t0", 0, 0));
        admit(&memory, ev("e300", 0, 300));
        assert_eq!(gaps(begun), [Position::new(0, 300)]);
        assert_eq!(gaps(unread), [Position::new(0, 300)]);
        assert_eq!(gaps(nothing_left), []);
        assert_eq!(gaps(all), []);
    }

    /// A session evicted whole before a reader resumes it: the reader is told of the
    /// gap (`replay-exhausted` after the newest position it held), not given nothing in
    /// silence; one that had seen it all, or a session never held, hears of no gap; the
    /// store remembers as many evicted sessions as it holds sessions.
    #[test]
    fn resuming_a_session_evicted_before_the_replay_declares_the_gap() {
        let memory = Memory::new(limits(1000, 2));
        for i in 0..10 {
            admit(&memory, ev(&format!("e{i}"), 0, i));
        }
        admit(&memory, framed("t", "t0", 0, 0));
        admit(&memory, framed("u", "u0", 0, 0)); // "s" goes
        let named =
            |session: &str, start| ReplayFrom::Sessions(vec![ResumeFrom::new(session, start)]);
        assert_eq!(
            gaps(memory.replay(named("s", after(0, 4)), memory.stamp())),
            [Position::new(0, 10)]
        );
        assert_eq!(
            gaps(memory.replay(named("s", after(0, 9)), memory.stamp())),
            []
        );
        assert_eq!(
            gaps(memory.replay(named("never", after(0, 4)), memory.stamp())),
            []
        );
        // replay-all names no position: no gap
        assert_eq!(gaps(memory.replay(ReplayFrom::All, memory.stamp())), []);
        // two more evictions: "s" is forgotten, the two latest remembered
        admit(&memory, framed("v", "v0", 0, 3));
        admit(&memory, framed("w", "w0", 0, 5));
        assert_eq!(memory.lock().dropped.len(), 2);
        assert_eq!(
            gaps(memory.replay(named("s", after(0, 4)), memory.stamp())),
            []
        );
        assert_eq!(
            gaps(memory.replay(named("u", after(0, 0)), memory.stamp())).len()
                + gaps(memory.replay(named("t", after(0, 0)), memory.stamp())).len(),
            0,
            "they had seen what was dropped"
        );
        // the start of an epoch asks for what is held: no gap, as for a held session
        assert_eq!(
            gaps(memory.replay(named("t", ReplayStart::EARLIEST), memory.stamp())),
            []
        );
    }

    /// A withdrawn event is no longer held, and the same event is admitted anew.
    #[test]
    fn a_withdrawn_event_can_be_admitted_again() {
        let memory = Memory::new(limits(10, 10));
        let e = ev("e1", 0, 1);
        admit(&memory, e.clone());
        memory.lock().withdraw(&e);
        assert!(seqs(&memory, "s", ReplayStart::EARLIEST).is_empty());
        assert_eq!(memory.held_bytes(), 0);
        assert_eq!(admit(&memory, e), Outcome::Held);
    }
}
