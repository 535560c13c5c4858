//! Per-session bounded replay buffers (AEP-0003 §5).
//!
//! Each buffered event is held once, as the SSE message the relay writes for it; the
//! WebSocket frame is a slice of the same allocation. Admission dedupes on
//! `(source, id)` (AEP-0001 §7.4) through a 128-bit digest of the pair, so the index
//! costs a few dozen bytes per event whatever the ids look like.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;

use aep_core::Severity;
use bytes::Bytes;
use smallvec::SmallVec;

/// One event as the relay holds and sends it. Held by value: a clone shares the frame
/// (a reference count), so no separate allocation wraps it.
#[derive(Debug, Clone)]
pub(crate) struct Encoded {
    /// `event: {type}\ndata: {json}\n[id: {s}:{e}:{q}\n]\n`.
    sse: Bytes,
    data_at: u32,
    data_len: u32,
    /// Where the session name sits in the `id:` line (0: no position; the frame starts
    /// with `event:`, so a session never sits at 0, and an empty name stays an answer).
    session_at: u32,
    session_len: u32,
    pub(crate) epoch: u64,
    pub(crate) seq: u64,
    /// Two halves rather than a `u128`: 8-byte alignment keeps the struct at 88 bytes.
    key: (u64, u64),
    /// What backpressure may drop (AEP-0003 §8.4) without parsing the event again.
    pub(crate) severity: Severity,
}

/// Digest of `(source, id)`: two 64-bit foldhash digests of the pair under independent
/// fixed seeds (fixed, so a restored journal keys its events as before). foldhash rather
/// than SipHash: this runs once per ingested event.
fn dedupe_key(source: &str, id: &str) -> (u64, u64) {
    let half = |seed: u64| foldhash::quality::FixedState::with_seed(seed).hash_one((source, id));
    (half(0x9e37_79b9_7f4a_7c15), half(0xc2b2_ae3d_27d4_eb4f))
}

impl Encoded {
    /// Frames one event. `json` must be a single line (no `\n` or `\r`).
    pub(crate) fn new(
        json: &[u8],
        event_type: &str,
        position: Option<(&str, u64, u64)>,
        source: &str,
        id: &str,
        severity: Severity,
    ) -> Encoded {
        // the exact size: a full buffer becomes `Bytes` without a separate shared header
        // until the first clone, and an event nobody reads never gets one
        let id_len = position.map_or(0, |(session, e, s)| {
            session.len() + decimal_len(e) + decimal_len(s) + 7
        });
        let mut sse = Vec::with_capacity(json.len() + event_type.len() + 16 + id_len);
        sse.extend_from_slice(b"event: ");
        sse.extend_from_slice(event_type.as_bytes());
        sse.extend_from_slice(b"\ndata: ");
        let data_at = sse.len();
        sse.extend_from_slice(json);
        sse.push(b'\n');
        let (mut epoch, mut seq) = (0, 0);
        let (mut session_at, mut session_len) = (0, 0);
        if let Some((session, e, s)) = position {
            // written by hand: `write!` costs more than the rest of the framing together
            sse.extend_from_slice(b"id: ");
            (session_at, session_len) = (sse.len(), session.len());
            sse.extend_from_slice(session.as_bytes());
            sse.push(b':');
            push_decimal(&mut sse, e);
            sse.push(b':');
            push_decimal(&mut sse, s);
            sse.push(b'\n');
            (epoch, seq) = (e, s);
        }
        sse.push(b'\n');
        debug_assert_eq!(
            sse.len(),
            sse.capacity(),
            "the frame size is computed exactly"
        );
        Encoded {
            sse: Bytes::from(sse),
            data_at: u32::try_from(data_at).unwrap_or(u32::MAX),
            data_len: u32::try_from(json.len()).unwrap_or(u32::MAX),
            session_at: u32::try_from(session_at).unwrap_or(u32::MAX),
            session_len: u32::try_from(session_len).unwrap_or(u32::MAX),
            epoch,
            seq,
            key: dedupe_key(source, id),
            severity,
        }
    }

    /// The SSE message.
    pub(crate) fn sse(&self) -> Bytes {
        self.sse.clone()
    }

    /// The event JSON, as received (the WebSocket frame text).
    pub(crate) fn json(&self) -> Bytes {
        let at = self.data_at as usize;
        self.sse.slice(at..at + self.data_len as usize)
    }

    /// The session of a positioned event, read back from its `id:` line.
    pub(crate) fn session(&self) -> Option<&str> {
        if self.session_at == 0 {
            return None;
        }
        let at = self.session_at as usize;
        let bytes = self.sse.get(at..at + self.session_len as usize)?;
        std::str::from_utf8(bytes).ok()
    }

    /// Bytes held for this event, for memory accounting.
    pub(crate) fn held_bytes(&self) -> usize {
        self.sse.len() + std::mem::size_of::<Encoded>()
    }

    fn position(&self) -> i128 {
        position(self.epoch, i128::from(self.seq))
    }
}

/// Digits of `n` in decimal.
fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The total order of positions: epoch-major, as the reference relay's
/// `epoch * 2^40 + seq`.
fn position(epoch: u64, seq: i128) -> i128 {
    (i128::from(epoch) << 40) + seq
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
        self.ids.remove(&dropped.key);
        let bytes = dropped.held_bytes();
        self.bytes -= bytes;
        Some(bytes)
    }
}

/// What a resume position yields from one session (AEP-0003 §5).
#[derive(Debug, Clone)]
pub(crate) struct ReplayPart {
    pub(crate) session: Arc<str>,
    /// The earliest held position, when the request predates it (the gap to declare).
    pub(crate) exhausted: Option<(u64, u64)>,
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
        if !s.ids.insert(event.key) {
            return Admission {
                admitted: false,
                evicted,
            };
        }
        // events almost always arrive in order: insert from the tail
        let at = event.position();
        let mut i = s.events.len();
        while i > 0 && s.events[i - 1].position() > at {
            i -= 1;
        }
        let bytes = event.held_bytes();
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
        if !s.ids.remove(&event.key) {
            return;
        }
        // just admitted: near the tail
        if let Some(at) = s.events.iter().rposition(|e| e.key == event.key) {
            if let Some(gone) = s.events.remove(at) {
                let bytes = gone.held_bytes();
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

    /// The events of `session` strictly after `(epoch, seq)`; `seq` -1 asks from the
    /// start. The gap is declared when the earliest held event lies beyond the next
    /// position asked for (AEP-0003 §5).
    pub(crate) fn replay(&self, session: &str, epoch: u64, seq: i64) -> ReplayPart {
        let Some((name, s)) = self.sessions.get_key_value(session) else {
            return ReplayPart {
                session: Arc::from(session),
                exhausted: None,
                events: Vec::new(),
            };
        };
        let after = position(epoch, i128::from(seq));
        let start = s.events.partition_point(|e| e.position() <= after);
        let exhausted = s
            .events
            .front()
            .filter(|first| seq >= 0 && first.position() > after + 1)
            .map(|first| (first.epoch, first.seq));
        ReplayPart {
            session: name.clone(),
            exhausted,
            events: s.events.range(start..).cloned().collect(),
        }
    }

    /// Every held session from its earliest position, least recently written first
    /// (replay-all, AEP-0003 §5: never a replay-exhausted).
    pub(crate) fn replay_all(&self) -> Vec<ReplayPart> {
        self.recency
            .values()
            .map(|name| {
                let mut part = self.replay(name, 0, -1);
                part.exhausted = None;
                part
            })
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
        Encoded::new(
            format!(r#"{{"id":"{id}"}}"#).as_bytes(),
            "progress.status",
            Some(("s", epoch, seq)),
            "src",
            id,
            Severity::Info,
        )
    }

    #[test]
    fn admission_dedupes_and_evicts_oldest_position() {
        let mut store = Store::new(limits(3, 10));
        for i in 0..5 {
            assert!(store.admit("s", ev(&format!("e{i}"), 0, i)).admitted);
        }
        assert!(!store.admit("s", ev("e4", 0, 4)).admitted);
        let part = store.replay("s", 0, 0);
        let seqs: Vec<u64> = part.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![2, 3, 4]);
        assert_eq!(part.exhausted, Some((0, 2)));
        assert_eq!(store.replay("s", 0, 1).exhausted, None);
        assert_eq!(store.replay("s", 0, -1).exhausted, None);
        assert_eq!(store.replay("s", 0, -1).events.len(), 3);
    }

    #[test]
    fn late_event_is_sorted_in() {
        let mut store = Store::new(limits(10, 10));
        store.admit("s", ev("a", 0, 2));
        store.admit("s", ev("b", 0, 1));
        store.admit("s", ev("c", 1, 0));
        let seqs: Vec<(u64, u64)> = store
            .replay("s", 0, -1)
            .events
            .iter()
            .map(|e| (e.epoch, e.seq))
            .collect();
        assert_eq!(seqs, vec![(0, 1), (0, 2), (1, 0)]);
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
        assert!(store.replay("b", 0, -1).events.is_empty());
        let order: Vec<String> = store
            .replay_all()
            .iter()
            .map(|p| p.session.to_string())
            .collect();
        assert_eq!(order, vec!["a", "c"]);
    }

    #[test]
    fn positions_are_written_in_decimal() {
        for n in [0, 7, 10, 99, 1_000_001, u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
            assert_eq!(decimal_len(n), out.len());
        }
    }

    #[test]
    fn encoded_frames_share_one_allocation() {
        let e = ev("x", 1, 7);
        assert_eq!(&e.json()[..], br#"{"id":"x"}"#);
        assert_eq!(
            &e.sse()[..],
            b"event: progress.status\ndata: {\"id\":\"x\"}\nid: s:1:7\n\n"
        );
        assert_eq!(e.session(), Some("s"));
        let unnamed = Encoded::new(b"{}", "t.x", Some(("", 0, 1)), "src", "i", Severity::Info);
        assert_eq!(unnamed.session(), Some(""));
        assert_eq!(
            Encoded::new(b"{}", "t.x", None, "src", "i", Severity::Info).session(),
            None
        );
    }

    /// The byte bounds evict as the count bounds do: a session's oldest events first,
    /// then the least recently written sessions, and never the newest event.
    #[test]
    fn bytes_are_bounded_per_session_and_over_all() {
        let size = ev("e0", 0, 0).held_bytes();
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
                .replay(s, 0, -1)
                .events
                .iter()
                .map(|e| e.seq)
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
