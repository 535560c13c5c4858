//! Fan-out (AEP-0003 §5, §8.4): the live subscriptions, and each accepted event offered
//! to the ones that can take it, as `delivery` frames it for that reader.
//!
//! An event is offered only to the subscriptions filed under its own session, agent and
//! type category, and to those that pin nothing (`index`), in hub-id order. The loop
//! never waits: each reader is handed its events in runs, and afterwards one wait, all
//! at once, for the readers that must catch up (`outbox::Pacing`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aep_core::filter::PinAttr;
use aep_core::Severity;
use bytes::Bytes;
use smallvec::SmallVec;

use crate::delivery::{Delivering, Reader};
use crate::encoded::Binding;
use crate::line::Incoming;
use crate::outbox::{self, End, Outbox, Pacing};

mod index;

pub(crate) use index::Index;
use index::Merged;

/// A live subscription: one SSE stream, or one `subscribe` on a WebSocket.
#[derive(Debug)]
pub(crate) struct Sub {
    pub(crate) id: u64,
    /// The WebSocket connection it was made on; none for an SSE stream.
    pub(crate) conn: Option<u64>,
    pub(crate) reader: Arc<Reader>,
    pub(crate) outbox: Arc<Outbox>,
}

/// The live subscriptions by hub id, and filed by what their filters pin: adding or
/// removing one costs the same whatever their number (a list copied per change took
/// 70 s for 50,000).
#[derive(Debug)]
pub(crate) struct Subscribers {
    subs: BTreeMap<u64, Arc<Sub>>,
    index: Index,
    /// The index ingest fans out to without the lock, taken by the first ingest after a
    /// change (a copy of the index's maps, sharing their lists).
    snapshot: Option<Arc<Index>>,
    /// How many need each event parsed ([`Reader::needs_parsed`]), readable without
    /// the lock through [`Subscribers::parsing`].
    parsing: Arc<AtomicUsize>,
}

impl Default for Subscribers {
    fn default() -> Subscribers {
        Subscribers {
            subs: BTreeMap::new(),
            index: Index::default(),
            snapshot: None,
            parsing: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Subscribers {
    /// Live subscriptions.
    pub(crate) fn len(&self) -> usize {
        self.subs.len()
    }

    /// The count of subscriptions that need each event parsed, shared: ingest reads it
    /// without the lock to decide whether to keep parsed events.
    pub(crate) fn parsing(&self) -> Arc<AtomicUsize> {
        self.parsing.clone()
    }

    pub(crate) fn add(&mut self, sub: Sub) {
        if sub.reader.needs_parsed() {
            self.parsing.fetch_add(1, Ordering::AcqRel);
        }
        let sub = Arc::new(sub);
        self.index.add(&sub);
        self.subs.insert(sub.id, sub);
        self.snapshot = None;
    }

    pub(crate) fn remove(&mut self, id: u64) {
        if let Some(sub) = self.subs.remove(&id) {
            if sub.reader.needs_parsed() {
                self.parsing.fetch_sub(1, Ordering::AcqRel);
            }
            self.index.remove(&sub);
            self.snapshot = None;
        }
    }

    /// The index to fan out to, as it is now.
    pub(crate) fn index(&mut self) -> Arc<Index> {
        let index = &self.index;
        self.snapshot
            .get_or_insert_with(|| Arc::new(index.clone()))
            .clone()
    }

    /// SSE streams among them.
    pub(crate) fn sse(&self) -> usize {
        self.subs
            .values()
            .filter(|s| s.reader.binding == Binding::Sse)
            .count()
    }

    /// Events dropped toward their readers so far (AEP-0003 §8.4).
    pub(crate) fn dropped(&self) -> u64 {
        self.subs.values().map(|s| s.outbox.dropped()).sum()
    }

    /// Ends the queue of every SSE stream (a WebSocket's queue is its connection's).
    pub(crate) fn end_streams(&self, how: End) {
        for sub in self.subs.values().filter(|s| s.conn.is_none()) {
            sub.outbox.end(how);
        }
    }
}

/// Hands each live subscription the events it takes, in order, then waits for the
/// readers that must catch up.
pub(crate) async fn fan_out<'a, 't: 'a, I>(index: &Index, events: I)
where
    I: IntoIterator<Item = &'a Incoming<'t>>,
{
    let mut runs = Runs::default();
    for incoming in events {
        let mut delivering = Delivering::new(incoming);
        let severity = delivering.severity();
        for sub in offered(index, &mut delivering) {
            if sub.outbox.is_closed() {
                continue;
            }
            if let Some(bytes) = delivering.frame_for(&sub.reader) {
                runs.offer(&sub.outbox, bytes, severity);
            }
        }
    }
    // every reader has what it could take; only now wait for those that must catch up
    runs.flush_all();
    runs.pace().await;
}

/// The subscriptions an event is offered to: those filed under its keys, and those that
/// pin nothing, in hub-id order. A key is read only where some subscription pins it.
fn offered<'i>(index: &'i Index, delivering: &mut Delivering<'_>) -> Merged<'i> {
    let mut lists: [&'i [Arc<Sub>]; 4] = [index.unpinned(), &[], &[], &[]];
    for (list, attr) in lists.iter_mut().skip(1).zip(PinAttr::ALL) {
        if index.pins(attr) {
            if let Some(key) = delivering.pin_key(attr) {
                *list = index.filed(attr, key);
            }
        }
    }
    Merged::new(lists)
}

/// The runs of one fan-out, one per reader queue. Subscriptions on one connection share
/// its queue, so they share a run: the connection then gets a session's events in ingest
/// order whichever subscriptions matched them (AEP-0003 §7 resumes by high-water mark).
/// Dropping it flushes what it holds, so an ingest whose request is cancelled still
/// delivers every event it had accepted for a reader that could take it.
#[derive(Default)]
struct Runs<'a> {
    // Inline for a handful of readers: this is built for every WebSocket event.
    outboxes: SmallVec<[&'a Outbox; 4]>,
    runs: SmallVec<[outbox::Run; 4]>,
    /// Per run, when this ingest waits for that reader: the rest of the batch for it.
    pacing: SmallVec<[Option<Pacing<'a>>; 4]>,
    /// Queue (its address) -> index into `runs`, once there are more than [`SCAN`].
    by_queue: HashMap<usize, usize>,
}

/// Queues found by a scan of the list; past that, a map.
const SCAN: usize = 8;

impl<'a> Runs<'a> {
    /// The run of `queue`, made the first time one of its subscriptions takes an event:
    /// an ingest costs the readers it reaches, not every reader.
    fn run_of(&mut self, queue: &'a Outbox) -> usize {
        let key = std::ptr::from_ref(queue) as usize;
        if self.by_queue.is_empty() {
            if let Some(at) = self.outboxes.iter().position(|o| std::ptr::eq(*o, queue)) {
                return at;
            }
            if self.outboxes.len() >= SCAN {
                let known = self.outboxes.iter().enumerate();
                self.by_queue
                    .extend(known.map(|(at, o)| (std::ptr::from_ref(*o) as usize, at)));
            }
        } else if let Some(&at) = self.by_queue.get(&key) {
            return at;
        }
        let at = self.outboxes.len();
        self.outboxes.push(queue);
        self.runs.push(outbox::Run::default());
        self.pacing.push(None);
        if !self.by_queue.is_empty() {
            self.by_queue.insert(key, at);
        }
        at
    }

    /// Offers one event to a subscription's queue without waiting. A reader that
    /// must first catch up (and that no other ingest waits for) is held for
    /// [`Runs::pace`], with every later event of the batch for it, in order.
    fn offer(&mut self, outbox: &'a Outbox, bytes: Bytes, severity: Severity) {
        let run = self.run_of(outbox);
        let (Some(pending), Some(pacing)) = (self.runs.get_mut(run), self.pacing.get_mut(run))
        else {
            return;
        };
        if let Some(held) = pacing {
            held.push(bytes, severity);
            return;
        }
        if let Err(held) = outbox.offer_now(pending, bytes, severity) {
            // what this reader was given before goes out ahead of what it waits for
            outbox.flush(pending);
            *pacing = Some(held);
        }
    }

    fn flush_all(&mut self) {
        for (outbox, run) in self.outboxes.iter().zip(self.runs.iter_mut()) {
            outbox.flush(run);
        }
    }

    /// Waits for the readers that must catch up, all at once: the lag grace at most,
    /// whatever their number (AEP-0003 §8.4).
    async fn pace(&mut self) {
        let mut waits = self.pacing.iter_mut().filter_map(Option::take);
        let Some(first) = waits.next() else {
            return;
        };
        match waits.next() {
            None => {
                first.run().await;
            }
            Some(second) => {
                let all: Vec<_> = [first, second]
                    .into_iter()
                    .chain(waits)
                    .map(Pacing::run)
                    .collect();
                futures::future::join_all(all).await;
            }
        }
    }
}

impl Drop for Runs<'_> {
    fn drop(&mut self) {
        self.flush_all();
    }
}
