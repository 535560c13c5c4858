//! Fan-out (AEP-0003 §5, §8.4): the live subscriptions, and each accepted event offered
//! to every one in turn, as `delivery` frames it for that reader.
//!
//! The loop never waits: each reader is handed its events in runs, and afterwards one
//! wait, all at once, for the readers that must catch up (`outbox::Pacing`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aep_core::Severity;
use bytes::Bytes;
use smallvec::SmallVec;

use crate::delivery::{Delivering, Reader};
use crate::encoded::Binding;
use crate::line::Incoming;
use crate::outbox::{self, End, Outbox, Pacing};

/// A live subscription: one SSE stream, or one `subscribe` on a WebSocket.
#[derive(Debug)]
pub(crate) struct Sub {
    pub(crate) id: u64,
    /// The WebSocket connection it was made on; none for an SSE stream.
    pub(crate) conn: Option<u64>,
    pub(crate) reader: Arc<Reader>,
    pub(crate) outbox: Arc<Outbox>,
}

/// The live subscriptions by hub id: adding or removing one costs the same whatever
/// their number (a list copied per change took 70 s for 50,000).
#[derive(Debug)]
pub(crate) struct Subscribers {
    subs: BTreeMap<u64, Arc<Sub>>,
    /// The list ingest fans out to without the lock, built again by the first ingest
    /// after a change.
    list: Option<Arc<[Arc<Sub>]>>,
    /// How many need each event parsed ([`Reader::needs_parsed`]), readable without
    /// the lock through [`Subscribers::parsing`].
    parsing: Arc<AtomicUsize>,
}

impl Default for Subscribers {
    fn default() -> Subscribers {
        Subscribers {
            subs: BTreeMap::new(),
            list: None,
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
        self.subs.insert(sub.id, Arc::new(sub));
        self.list = None;
    }

    pub(crate) fn remove(&mut self, id: u64) {
        if let Some(sub) = self.subs.remove(&id) {
            if sub.reader.needs_parsed() {
                self.parsing.fetch_sub(1, Ordering::AcqRel);
            }
            self.list = None;
        }
    }

    /// The list to fan out to.
    pub(crate) fn list(&mut self) -> Arc<[Arc<Sub>]> {
        let subs = &self.subs;
        self.list
            .get_or_insert_with(|| subs.values().cloned().collect())
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
pub(crate) async fn fan_out<'a, 't: 'a, I>(subs: &[Arc<Sub>], events: I)
where
    I: IntoIterator<Item = &'a Incoming<'t>>,
{
    let mut runs = Runs::new(subs);
    for incoming in events {
        let mut delivering = Delivering::new(incoming);
        let severity = delivering.severity();
        for (at, sub) in subs.iter().enumerate() {
            if sub.outbox.is_closed() {
                continue;
            }
            if let Some(bytes) = delivering.frame_for(&sub.reader) {
                runs.offer(at, &sub.outbox, bytes, severity);
            }
        }
    }
    // every reader has what it could take; only now wait for those that must catch up
    runs.flush_all();
    runs.pace().await;
}

/// The runs of one fan-out, one per reader queue. Subscriptions on one connection share
/// its queue, so they share a run: the connection then gets a session's events in ingest
/// order whichever subscriptions matched them (AEP-0003 §7 resumes by high-water mark).
/// Dropping it flushes what it holds, so an ingest whose request is cancelled still
/// delivers every event it had accepted for a reader that could take it.
struct Runs<'a> {
    // Inline for a handful of readers: this is built for every WebSocket event.
    outboxes: SmallVec<[&'a Outbox; 4]>,
    runs: SmallVec<[outbox::Run; 4]>,
    /// Per run, when this ingest waits for that reader: the rest of the batch for it.
    pacing: SmallVec<[Option<Pacing<'a>>; 4]>,
    /// Subscription index -> index into `runs`.
    run_of: SmallVec<[usize; 8]>,
}

impl<'a> Runs<'a> {
    fn new(subs: &'a [Arc<Sub>]) -> Runs<'a> {
        let mut outboxes: SmallVec<[&'a Outbox; 4]> = SmallVec::new();
        // A WS event is ingested alone, so this runs per event: a scan for the usual
        // handful of subscriptions, a map past that.
        let mut by_queue: HashMap<*const Outbox, usize> = HashMap::new();
        let small = subs.len() <= 8;
        let run_of = subs
            .iter()
            .map(|sub| {
                let queue: &'a Outbox = &sub.outbox;
                if small {
                    if let Some(at) = outboxes.iter().position(|o| std::ptr::eq(*o, queue)) {
                        return at;
                    }
                    outboxes.push(queue);
                    return outboxes.len() - 1;
                }
                *by_queue.entry(queue as *const Outbox).or_insert_with(|| {
                    outboxes.push(queue);
                    outboxes.len() - 1
                })
            })
            .collect();
        let runs = outboxes.iter().map(|_| outbox::Run::default()).collect();
        let pacing = outboxes.iter().map(|_| None).collect();
        Runs {
            outboxes,
            runs,
            pacing,
            run_of,
        }
    }

    /// Offers one event to subscription `sub`'s queue without waiting. A reader that
    /// must first catch up (and that no other ingest waits for) is held for
    /// [`Runs::pace`], with every later event of the batch for it, in order.
    fn offer(&mut self, sub: usize, outbox: &'a Outbox, bytes: Bytes, severity: Severity) {
        let Some(run) = self.run_of.get(sub).copied() else {
            return;
        };
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
