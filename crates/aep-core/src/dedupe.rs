//! Bounded `(source, id)` dedupe (AEP-0001 §7.4).
//!
//! Delivery is at-least-once, so a terminal consumer drops events it has already seen,
//! keyed `(source, id)`: two emitters may mint the same id. A stream is unbounded and
//! the memory must not be, so [`Dedupe`] remembers the most recent `capacity` keys and
//! forgets the oldest first. A redelivery older than that passes as new: keep the
//! capacity above the number of events a reconnect may replay.
//!
//! ```
//! use aep_core::dedupe::Dedupe;
//!
//! let mut seen = Dedupe::with_capacity(2);
//! assert!(seen.insert("aep://a", "e1"));
//! assert!(!seen.insert("aep://a", "e1")); // redelivery
//! assert!(seen.insert("aep://b", "e1")); // another emitter's id
//! assert!(seen.insert("aep://a", "e2")); // evicts (aep://a, e1)
//! assert!(!seen.contains("aep://a", "e1"));
//! ```

use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::Event;

/// Ids up to this many bytes (a ULID is 26) are stored inline, without an allocation.
const INLINE: usize = 30;

/// An id kept without an allocation when short: the key of the dedupe ring here, of
/// the projection's `(source, id)` memory, and of the control sender's pending set.
#[derive(Clone)]
pub(crate) enum CompactId {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl CompactId {
    pub(crate) fn new(id: &str) -> CompactId {
        let src = id.as_bytes();
        match u8::try_from(src.len()) {
            Ok(len) if src.len() <= INLINE => {
                let mut bytes = [0u8; INLINE];
                if let Some(dst) = bytes.get_mut(..src.len()) {
                    dst.copy_from_slice(src);
                }
                CompactId::Inline { len, bytes }
            }
            _ => CompactId::Heap(src.into()),
        }
    }

    /// The id inline, or `None` when it is too long to be held without an allocation.
    pub(crate) fn inline(id: &str) -> Option<CompactId> {
        (id.len() <= INLINE).then(|| CompactId::new(id))
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            CompactId::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            CompactId::Heap(b) => b,
        }
    }
}

impl fmt::Debug for CompactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        String::from_utf8_lossy(self.as_bytes()).fmt(f)
    }
}

impl PartialEq for CompactId {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for CompactId {}

/// Hashes as the bytes do, so maps keyed by it look up by `&[u8]`.
impl std::hash::Hash for CompactId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl std::borrow::Borrow<[u8]> for CompactId {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

#[derive(Debug)]
struct Slot {
    hash: u64,
    source: u32,
    id: CompactId,
}

/// Source strings held once each, counted by the slots that name them, so memory
/// follows the distinct sources in the window, not the stream.
#[derive(Debug, Default)]
struct Sources {
    ids: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    /// name and reference count per index; `None` when free
    names: Vec<Option<(Box<str>, usize)>>,
    free: Vec<u32>,
    last: Option<u32>,
}

impl Sources {
    fn find(&self, source: &str) -> Option<u32> {
        if let Some(at) = self.last {
            if matches!(self.names.get(at as usize), Some(Some((name, _))) if &**name == source) {
                return Some(at);
            }
        }
        self.ids.get(source).copied()
    }

    fn acquire(&mut self, source: &str) -> u32 {
        let at = match self.find(source) {
            Some(at) => at,
            None => {
                let at = match self.free.pop() {
                    Some(at) => at,
                    None => {
                        self.names.push(None);
                        self.names.len() as u32 - 1
                    }
                };
                if let Some(slot) = self.names.get_mut(at as usize) {
                    *slot = Some((source.into(), 0));
                }
                self.ids.insert(source.into(), at);
                at
            }
        };
        if let Some(Some((_, count))) = self.names.get_mut(at as usize) {
            *count += 1;
        }
        self.last = Some(at);
        at
    }

    fn release(&mut self, at: u32) {
        let Some(entry) = self.names.get_mut(at as usize) else {
            return;
        };
        if let Some((name, count)) = entry {
            *count -= 1;
            if *count == 0 {
                self.ids.remove(&**name);
                *entry = None;
                self.free.push(at);
                if self.last == Some(at) {
                    self.last = None;
                }
            }
        }
    }
}

/// A bounded set of `(source, id)` keys, oldest evicted first.
///
/// Memory is proportional to the capacity: a ring of at most `capacity` slots (ids up
/// to 30 bytes inline, so inserting allocates nothing once the ring is full) plus a
/// hash index over them, and one copy of each distinct source in the window. Keys
/// compare exactly; hashing uses a per-set random key.
///
/// ```
/// use aep_core::{dedupe::Dedupe, Event};
///
/// let mut seen = Dedupe::new();
/// assert_eq!(seen.capacity(), Dedupe::DEFAULT_CAPACITY);
/// let e = Event::new("01J", "agent.idle", "t", "aep://h", "a");
/// assert!(seen.insert_event(&e));
/// assert!(!seen.insert_event(&e));
/// assert_eq!(seen.len(), 1);
/// ```
pub struct Dedupe {
    capacity: usize,
    hasher: foldhash::fast::RandomState,
    index: HashTable<u32>,
    ring: Vec<Slot>,
    /// The oldest slot, overwritten next once the ring is full.
    oldest: usize,
    sources: Sources,
}

impl fmt::Debug for Dedupe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dedupe")
            .field("capacity", &self.capacity)
            .field("len", &self.ring.len())
            .finish_non_exhaustive()
    }
}

impl Default for Dedupe {
    fn default() -> Self {
        Dedupe::new()
    }
}

impl Dedupe {
    /// The default capacity: 50,000 keys, the window of the Python and TypeScript SDKs'
    /// subscribers (a few MiB).
    ///
    /// ```
    /// use aep_core::Dedupe;
    /// assert_eq!(Dedupe::new().capacity(), Dedupe::DEFAULT_CAPACITY);
    /// ```
    pub const DEFAULT_CAPACITY: usize = 50_000;

    /// A set of [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY) keys.
    pub fn new() -> Dedupe {
        Dedupe::with_capacity(Dedupe::DEFAULT_CAPACITY)
    }

    /// A set remembering the last `capacity` keys. Capacity 0 remembers nothing:
    /// every insert is new.
    ///
    /// ```
    /// use aep_core::Dedupe;
    /// let mut d = Dedupe::with_capacity(2);
    /// for id in ["a", "b", "c"] {
    ///     assert!(d.insert("aep://h", id));
    /// }
    /// assert_eq!(d.len(), 2);
    /// assert!(!d.contains("aep://h", "a")); // the oldest was forgotten
    /// ```
    pub fn with_capacity(capacity: usize) -> Dedupe {
        // Memory grows with use up to the capacity; u32 slot numbers bound it.
        let capacity = capacity.min(u32::MAX as usize);
        Dedupe {
            capacity,
            hasher: foldhash::fast::RandomState::default(),
            index: HashTable::new(),
            ring: Vec::new(),
            oldest: 0,
            sources: Sources::default(),
        }
    }

    /// How many keys the set remembers, at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many keys it remembers now.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// Whether it remembers none.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    fn find(&self, hash: u64, source: u32, id: &[u8]) -> Option<u32> {
        let ring = &self.ring;
        self.index
            .find(hash, |&at| {
                ring.get(at as usize)
                    .is_some_and(|s| s.source == source && s.id.as_bytes() == id)
            })
            .copied()
    }

    /// Whether `(source, id)` is remembered.
    ///
    /// ```
    /// use aep_core::Dedupe;
    /// let mut d = Dedupe::new();
    /// d.insert("aep://h", "e1");
    /// assert!(d.contains("aep://h", "e1") && !d.contains("aep://h", "e2"));
    /// ```
    pub fn contains(&self, source: &str, id: &str) -> bool {
        let Some(src) = self.sources.find(source) else {
            return false;
        };
        let hash = self.hasher.hash_one((source, id));
        self.find(hash, src, id.as_bytes()).is_some()
    }

    /// Remembers `(source, id)`; returns whether it was new. When the set is full the
    /// oldest key is forgotten.
    ///
    /// ```
    /// use aep_core::Dedupe;
    /// let mut d = Dedupe::new();
    /// assert!(d.insert("aep://h/a", "01J"));
    /// assert!(!d.insert("aep://h/a", "01J"));
    /// assert!(d.insert("aep://h/b", "01J")); // scope is (source, id), never bare id
    /// ```
    pub fn insert(&mut self, source: &str, id: &str) -> bool {
        let hash = self.hasher.hash_one((source, id));
        if let Some(src) = self.sources.find(source) {
            if self.find(hash, src, id.as_bytes()).is_some() {
                return false;
            }
        }
        if self.capacity == 0 {
            return true;
        }
        let src = self.sources.acquire(source);
        let slot = Slot {
            hash,
            source: src,
            id: CompactId::new(id),
        };
        let at = if self.ring.len() < self.capacity {
            self.ring.push(slot);
            self.ring.len() - 1
        } else {
            let at = self.oldest;
            self.oldest = (at + 1) % self.capacity;
            self.evict(at);
            if let Some(old) = self.ring.get_mut(at) {
                *old = slot;
            }
            at
        };
        let ring = &self.ring;
        self.index.insert_unique(hash, at as u32, |&s| {
            ring.get(s as usize).map_or(0, |s| s.hash)
        });
        true
    }

    /// Drops slot `at` from the index and its source from the source table.
    fn evict(&mut self, at: usize) {
        let Some(old) = self.ring.get(at) else {
            return;
        };
        if let Ok(entry) = self.index.find_entry(old.hash, |&s| s as usize == at) {
            entry.remove();
        }
        self.sources.release(old.source);
    }

    /// [`insert`](Self::insert) for an event's `(source, id)`.
    ///
    /// ```
    /// use aep_core::{Dedupe, Event};
    /// let e = Event::new("e1", "tool.requested", "t", "aep://h", "a");
    /// let mut d = Dedupe::new();
    /// assert!(d.insert_event(&e) && d.contains_event(&e) && !d.insert_event(&e));
    /// ```
    pub fn insert_event(&mut self, event: &Event) -> bool {
        self.insert(event.source(), event.id())
    }

    /// [`contains`](Self::contains) for an event's `(source, id)`.
    pub fn contains_event(&self, event: &Event) -> bool {
        self.contains(event.source(), event.id())
    }

    /// Forgets every key; the capacity stays.
    ///
    /// ```
    /// use aep_core::Dedupe;
    /// let mut d = Dedupe::new();
    /// d.insert("aep://h", "e1");
    /// d.clear();
    /// assert!(d.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.index.clear();
        self.ring.clear();
        self.oldest = 0;
        self.sources = Sources::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_first_and_forgets_evicted_sources() {
        let mut d = Dedupe::with_capacity(3);
        for i in 0..3 {
            assert!(d.insert(&format!("src{i}"), "e"));
        }
        assert!(d.insert("src3", "e"));
        assert!(!d.contains("src0", "e"));
        assert!(d.contains("src1", "e") && d.contains("src3", "e"));
        assert_eq!(d.len(), 3);
        assert!(d.sources.find("src0").is_none());
        assert_eq!(d.sources.ids.len(), 3);
        // the freed source slot is reused
        assert!(d.insert("src4", "e"));
        assert_eq!(d.sources.names.len(), 4);
    }

    #[test]
    fn long_ids_and_key_boundaries() {
        let long = "x".repeat(100);
        let mut d = Dedupe::with_capacity(10);
        assert!(d.insert("a", &long));
        assert!(!d.insert("a", &long));
        assert!(d.insert("a", &long[..99]));
        // the (source, id) boundary is part of the key
        assert!(d.insert("ab", "c"));
        assert!(d.insert("a", "bc"));
        assert!(!d.insert("ab", "c"));
        assert!(d.insert("a", ""));
        assert!(!d.insert("a", ""));
    }

    #[test]
    fn window_matches_a_model_over_a_long_stream() {
        let mut d = Dedupe::with_capacity(64);
        let mut model: std::collections::VecDeque<(String, String)> = Default::default();
        for i in 0u64..5000 {
            let key = (format!("s{}", i % 7), format!("id{}", (i * 7919) % 211));
            let expect_new = !model.contains(&key);
            assert_eq!(d.insert(&key.0, &key.1), expect_new, "step {i}");
            if expect_new {
                model.push_back(key);
                if model.len() > 64 {
                    model.pop_front();
                }
            }
            assert_eq!(d.len(), model.len());
        }
        assert!(d.sources.ids.len() <= 7);
    }

    #[test]
    fn capacity_zero_remembers_nothing() {
        let mut d = Dedupe::with_capacity(0);
        assert!(d.insert("a", "1"));
        assert!(d.insert("a", "1"));
        assert!(d.is_empty());
        d.clear();
    }
}
