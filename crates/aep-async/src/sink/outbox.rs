//! The bounded, order-keeping queue shared by the network sinks (AEP-0003 §8.4).
//!
//! Accepted events are serialized once, at `accept`, onto the end of a chain of buffers
//! (chunks), each line ended by `\n`. A delivery task takes a run of them as a single
//! [`Batch`]: a run inside one chunk is split off it without a copy (the NDJSON body of
//! an HTTP request is the run itself, a WebSocket frame a slice of it); a run across
//! chunks is copied once. Nothing is allocated or freed per event on the hot path (with
//! a command hook, the claimed session's name aside), which matters because `accept`
//! runs on the caller's thread and delivery on a runtime worker: memory allocated on one
//! thread and freed on another is the slow path of most allocators. Chunks, not one
//! growing buffer, because a buffer that had runs split off it copies everything still
//! queued when it next grows: with a backlog (an emitter faster than its relay) that is
//! a copy of the backlog per batch.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use aep_core::{Event, Severity};
use bytes::{Bytes, BytesMut};
use tokio::sync::{watch, Notify};

use super::{DeliveryReport, DeliveryStats, ReportHandler};
use crate::error::EmitError;

pub(crate) fn default_handler() -> ReportHandler {
    Arc::new(|report| tracing::warn!(%report, "aep delivery"))
}

/// The smallest and largest chunk: a new chunk is sized to the bytes already queued,
/// so a quiet emitter holds little memory and a backlog takes few chunks.
const CHUNK_MIN: usize = 16 * 1024;
const CHUNK_MAX: usize = 1024 * 1024;

/// The scratch kept between pushes, at most.
const SCRATCH_KEEP: usize = 64 * 1024;

thread_local! {
    /// Where `push` serializes before taking the lock, so the lock is held for a copy,
    /// not for a serialization. Taken out while in use: a push that finds it gone (one
    /// nested in another, or one while the thread's locals are torn down) serializes
    /// into a fresh buffer, which is then kept.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// What a queued event says about the session it carries, for a sink that re-claims
/// sessions after a reconnect (AEP-0004 §4): read from the event when it is accepted,
/// so the sink never parses its own output to learn it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) session: Box<str>,
    /// `session.ended`: the session is let go, not claimed.
    pub(crate) ends: bool,
}

/// One queued line: its length in the buffer (with its `\n`), and whether it was dropped
/// under pressure (its bytes stay in the buffer until taken or compacted).
#[derive(Debug, Clone)]
struct Item {
    len: usize,
    severity: Severity,
    live: bool,
    claim: Option<Claim>,
}

/// A run of queued lines taken for delivery, in acceptance order, sharing one buffer.
#[derive(Debug)]
pub(crate) struct Batch {
    /// The lines, each followed by `\n`.
    body: Bytes,
    /// Where each line ends in `body` (exclusive, before its `\n`).
    ends: Vec<usize>,
    /// The claims of the lines that carry one, by line index.
    claims: Vec<(usize, Claim)>,
}

impl Batch {
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The lines as NDJSON: each line followed by `\n`.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn ndjson(&self) -> Bytes {
        self.body.clone()
    }

    /// Each line with what it claims, if anything: the batch is used up, so the claims
    /// move out rather than being copied.
    #[cfg_attr(not(feature = "ws"), allow(dead_code))]
    pub(crate) fn into_lines_with_claims(self) -> impl Iterator<Item = (Bytes, Option<Claim>)> {
        let Batch { body, ends, claims } = self;
        let mut claims = claims.into_iter().peekable();
        let mut start = 0;
        ends.into_iter().enumerate().map(move |(i, end)| {
            let line = body.slice(start..end);
            start = end + 1;
            (line, claims.next_if(|(at, _)| *at == i).map(|(_, c)| c))
        })
    }

    /// Each line, without its `\n`, sharing the batch's buffer.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn lines(&self) -> impl Iterator<Item = Bytes> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let line = self.body.slice(start..end);
            start = end + 1;
            line
        })
    }
}

#[derive(Debug, Default)]
struct OutboxState {
    /// The queued lines' bytes, back to back in acceptance order, across chunks (a line
    /// never spans two).
    chunks: VecDeque<BytesMut>,
    /// One item per line in `chunks`; a dropped line stays as a dead item so order and
    /// absolute positions are kept without shifting.
    items: VecDeque<Item>,
    /// Absolute position of `items[0]`.
    head: u64,
    /// Absolute positions of live `debug`/`info` lines, oldest first: what goes first.
    droppable: VecDeque<u64>,
    live: usize,
    bytes: usize,
    stats: DeliveryStats,
    closed: bool,
    urgent: bool,
}

impl OutboxState {
    /// Lines dropped but still held as items, until taken or compacted away.
    fn dead(&self) -> usize {
        self.items.len() - self.live
    }
}

/// The bounded, order-keeping queue between `accept` and a delivery task.
pub(crate) struct Outbox {
    state: Mutex<OutboxState>,
    capacity: usize,
    wake: Notify,
    settled: watch::Sender<u64>,
    pub(crate) report: ReportHandler,
    wake_events: usize,
    wake_bytes: usize,
}

impl fmt::Debug for Outbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbox")
            .field("capacity", &self.capacity)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Outbox {
    pub(crate) fn new(capacity: usize, report: ReportHandler) -> Self {
        Outbox {
            state: Mutex::new(OutboxState::default()),
            capacity: capacity.max(1),
            wake: Notify::new(),
            settled: watch::channel(0).0,
            report,
            wake_events: 1,
            wake_bytes: usize::MAX,
        }
    }

    /// Wake the delivery task only when the queue becomes non-empty or reaches a full
    /// batch, not on every event: a task woken per event spends its CPU on wake-ups.
    #[cfg(feature = "http")]
    pub(crate) fn wake_at(mut self, events: usize, bytes: usize) -> Self {
        self.wake_events = events.max(1);
        self.wake_bytes = bytes.max(1);
        self
    }

    fn lock(&self) -> MutexGuard<'_, OutboxState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn stats(&self) -> DeliveryStats {
        self.lock().stats
    }

    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn push(&self, event: &Event) -> Result<(), EmitError> {
        self.push_claiming(event, None)
    }

    /// [`push`](Self::push), noting what the event claims.
    pub(crate) fn push_claiming(
        &self,
        event: &Event,
        claim: Option<Claim>,
    ) -> Result<(), EmitError> {
        let mut line = SCRATCH.try_with(Cell::take).unwrap_or_default();
        line.clear();
        event.write_json(&mut line);
        line.push(b'\n');
        let pushed = self.enqueue(&line, event.severity(), claim);
        // one huge event should not pin its size for the thread's lifetime
        if line.capacity() <= SCRATCH_KEEP {
            let _ = SCRATCH.try_with(|s| s.set(line));
        }
        let (dropped, wake) = pushed?;
        self.settle_report(dropped);
        if wake {
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Queues one serialized line (ending in `\n`); returns the drop to report, if any,
    /// and whether to wake the delivery task.
    #[allow(clippy::type_complexity)]
    fn enqueue(
        &self,
        line: &[u8],
        severity: Severity,
        claim: Option<Claim>,
    ) -> Result<(Option<(Severity, u64)>, bool), EmitError> {
        let mut st = self.lock();
        if st.closed {
            return Err(EmitError::Closed);
        }
        st.stats.accepted += 1;
        let mut dropped = None;
        if st.live >= self.capacity {
            let queued = match Self::drop_oldest_droppable(&mut st) {
                Some(sev) => Some(sev),
                None if severity.is_droppable() => None,
                // Nothing droppable anywhere: the oldest event goes, and is reported,
                // never silently (AEP-0003 §8.4).
                None => Some(Self::drop_oldest(&mut st).unwrap_or(severity)),
            };
            st.stats.dropped += 1;
            let total = st.stats.dropped;
            match queued {
                Some(sev) => dropped = Some((sev, total)),
                None => return Ok((Some((severity, total)), false)),
            }
            Self::compact_if_sparse(&mut st);
        }
        let abs = st.head + st.items.len() as u64;
        if severity.is_droppable() {
            st.droppable.push_back(abs);
        }
        st.live += 1;
        st.bytes += line.len();
        match st.chunks.back_mut() {
            Some(chunk) if chunk.capacity() - chunk.len() >= line.len() => {
                chunk.extend_from_slice(line);
            }
            _ => {
                let size = st.bytes.clamp(CHUNK_MIN, CHUNK_MAX).max(line.len());
                let mut chunk = BytesMut::with_capacity(size);
                chunk.extend_from_slice(line);
                st.chunks.push_back(chunk);
            }
        }
        st.items.push_back(Item {
            len: line.len(),
            severity,
            live: true,
            claim,
        });
        let wake = st.live == 1 || st.live >= self.wake_events || st.bytes >= self.wake_bytes;
        Ok((dropped, wake))
    }

    fn settle_report(&self, dropped: Option<(Severity, u64)>) {
        if let Some((severity, total)) = dropped {
            tracing::debug!(%severity, total, "outbox full: dropped an event (AEP-0003 §8.4)");
            (self.report)(DeliveryReport::Dropped { severity, total });
            self.settled.send_modify(|n| *n += 1);
        }
    }

    /// Marks a live item dead; its bytes stay in the buffer until taken or compacted.
    fn kill(st: &mut OutboxState, idx: usize) -> Option<Severity> {
        let item = st.items.get_mut(idx)?;
        if !item.live {
            return None;
        }
        item.live = false;
        let (len, severity) = (item.len, item.severity);
        st.live -= 1;
        st.bytes -= len;
        Some(severity)
    }

    fn drop_oldest_droppable(st: &mut OutboxState) -> Option<Severity> {
        while let Some(abs) = st.droppable.pop_front() {
            let Some(idx) = abs.checked_sub(st.head) else {
                continue;
            };
            if let Some(sev) = Self::kill(st, idx as usize) {
                return Some(sev);
            }
        }
        None
    }

    fn drop_oldest(st: &mut OutboxState) -> Option<Severity> {
        let idx = st.items.iter().position(|i| i.live)?;
        let severity = Self::kill(st, idx)?;
        // Everything up to it is dead now: let it go, or every drop in an outage of
        // notices would scan the same dead lines again.
        Self::discard_front(st, idx + 1);
        Some(severity)
    }

    /// Removes the first `n` items, all dead, and their bytes.
    fn discard_front(st: &mut OutboxState, n: usize) {
        let mut span: usize = st.items.drain(..n).map(|i| i.len).sum();
        st.head += n as u64;
        while span > 0 {
            let many = st.chunks.len() > 1;
            let Some(front) = st.chunks.front_mut() else {
                break;
            };
            if front.len() <= span {
                span -= front.len();
                if many {
                    st.chunks.pop_front();
                } else {
                    front.clear();
                }
            } else {
                bytes::Buf::advance(front, span);
                span = 0;
            }
        }
    }

    /// Under sustained pressure with no delivery (a relay down for hours), dead lines
    /// would pile up without bound: once they outnumber both the live ones and 1,024,
    /// the chunks and the items are rebuilt from the live lines alone. Amortized O(1)
    /// per drop.
    fn compact_if_sparse(st: &mut OutboxState) {
        if st.dead() <= st.live.max(1024) {
            return;
        }
        let mut buf = BytesMut::with_capacity(st.bytes);
        let mut items = VecDeque::with_capacity(st.live);
        let mut droppable = VecDeque::new();
        let chunks: Vec<&[u8]> = st.chunks.iter().map(|c| &c[..]).collect();
        for (item, line) in st.items.iter().zip(Lines::new(&chunks, &st.items)) {
            if item.live {
                buf.extend_from_slice(line);
                if item.severity.is_droppable() {
                    droppable.push_back(st.head + items.len() as u64);
                }
                items.push_back(item.clone());
            }
        }
        st.chunks = VecDeque::from([buf]);
        st.items = items;
        st.droppable = droppable;
    }

    /// Takes up to `max_events` lines (and about `max_bytes`: at least one line), in
    /// order.
    pub(crate) fn take(&self, max_events: usize, max_bytes: usize) -> Batch {
        let mut st = self.lock();
        // The run to take: its items, its span in the buffer, whether it holds dead ones.
        let (mut n, mut span, mut taken, mut size, mut holes) = (0, 0, 0, 0, false);
        for item in &st.items {
            if taken == max_events {
                break;
            }
            if item.live {
                if taken > 0 && size + item.len > max_bytes {
                    break;
                }
                taken += 1;
                size += item.len;
            } else {
                holes = true;
            }
            n += 1;
            span += item.len;
        }
        // Split the run off the chunks it lies in: whole chunks, then the head of one.
        let mut pieces: Vec<Bytes> = Vec::new();
        let mut left = span;
        while left > 0 {
            let Some(front) = st.chunks.front_mut() else {
                break;
            };
            if front.is_empty() {
                // a drained chunk kept for its spare room, with newer chunks behind it
                st.chunks.pop_front();
                continue;
            }
            if front.len() > left {
                pieces.push(front.split_to(left).freeze());
                break;
            }
            left -= front.len();
            let whole = front.split().freeze();
            if st.chunks.len() > 1 {
                st.chunks.pop_front();
            }
            pieces.push(whole);
        }
        let mut ends = Vec::with_capacity(taken);
        let body = match pieces.as_slice() {
            [one] if !holes => {
                let mut at = 0;
                for item in st.items.iter().take(n) {
                    at += item.len;
                    ends.push(at - 1);
                }
                one.clone()
            }
            _ => {
                let mut body = BytesMut::with_capacity(size);
                let views: Vec<&[u8]> = pieces.iter().map(|p| &p[..]).collect();
                for (item, line) in st.items.iter().take(n).zip(Lines::new(&views, &st.items)) {
                    if item.live {
                        body.extend_from_slice(line);
                        ends.push(body.len() - 1);
                    }
                }
                body.freeze()
            }
        };
        let (mut claims, mut line) = (Vec::new(), 0);
        for item in st.items.drain(..n) {
            if !item.live {
                continue;
            }
            if let Some(claim) = item.claim {
                if claims.is_empty() {
                    // one allocation of the size needed, not a doubling series that
                    // overshoots it (see the WS sink's TAKE_CHUNK)
                    claims.reserve_exact(taken - line);
                }
                claims.push((line, claim));
            }
            line += 1;
        }
        st.head += n as u64;
        st.live -= taken;
        st.bytes -= size;
        // positions are pushed in order (and rebuilt in order by compaction), so the
        // ones taken are at the front
        while st.droppable.front().is_some_and(|&a| a < st.head) {
            st.droppable.pop_front();
        }
        if st.live == 0 {
            st.urgent = false;
        }
        Batch { body, ends, claims }
    }

    /// (live events, queued bytes, closed, urgent)
    pub(crate) fn level(&self) -> (usize, usize, bool, bool) {
        let st = self.lock();
        (st.live, st.bytes, st.closed, st.urgent)
    }

    pub(crate) async fn wait_for_work(&self) {
        loop {
            let notified = self.wake.notified();
            let (live, _, closed, _) = self.level();
            if live > 0 || closed {
                return;
            }
            notified.await;
        }
    }

    /// Woken when new events arrive, on flush and on close.
    #[cfg(feature = "http")]
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }

    pub(crate) fn settle(&self, delivered: u64, rejected: u64) {
        {
            let mut st = self.lock();
            st.stats.delivered += delivered;
            st.stats.rejected += rejected;
        }
        self.settled.send_modify(|n| *n += delivered + rejected);
    }

    pub(crate) async fn flush(&self) {
        let target = {
            let mut st = self.lock();
            st.urgent = true;
            st.stats.accepted
        };
        self.wake.notify_one();
        let mut rx = self.settled.subscribe();
        let _ = rx.wait_for(|&n| n >= target).await;
    }

    pub(crate) async fn close(&self) {
        self.mark_closed();
        self.flush().await;
    }

    pub(crate) fn mark_closed(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }

    /// Reports what is left when the delivery task is torn down by the runtime.
    pub(crate) fn abandon(&self) {
        let left = {
            let mut st = self.lock();
            let left = st.live as u64;
            st.items.clear();
            st.chunks.clear();
            st.droppable.clear();
            st.live = 0;
            st.bytes = 0;
            st.stats.rejected += left;
            left
        };
        if left > 0 {
            (self.report)(DeliveryReport::Abandoned { events: left });
            self.settled.send_modify(|n| *n += left);
        }
    }
}

/// Calls [`Outbox::abandon`] when the delivery task's future is dropped before it
/// finished (runtime shutdown), so no accepted event disappears unreported.
pub(crate) struct AbandonGuard(pub(crate) Arc<Outbox>);

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

/// The bytes of each item's line, in order, walking chunks whose lines never straddle
/// a chunk boundary.
struct Lines<'a> {
    chunks: &'a [&'a [u8]],
    items: std::collections::vec_deque::Iter<'a, Item>,
    chunk: usize,
    at: usize,
}

impl<'a> Lines<'a> {
    fn new(chunks: &'a [&'a [u8]], items: &'a VecDeque<Item>) -> Self {
        Lines {
            chunks,
            items: items.iter(),
            chunk: 0,
            at: 0,
        }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let len = self.items.next()?.len;
        loop {
            let chunk = self.chunks.get(self.chunk)?;
            if let Some(line) = chunk.get(self.at..self.at + len) {
                self.at += len;
                return Some(line);
            }
            self.chunk += 1;
            self.at = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(i: u64, sev: Severity) -> Event {
        Event::new(
            format!("{i}"),
            "tool.called",
            "t",
            "aep://h/agent/a/session/s",
            "a",
        )
        .with_seq(i)
        .with_severity(sev)
    }

    #[test]
    fn full_queue_drops_debug_info_first_and_counts() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let outbox = Outbox::new(
            3,
            Arc::new(move |r| {
                if let DeliveryReport::Dropped { severity, .. } = r {
                    s2.lock().unwrap().push(severity);
                }
            }),
        );
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        outbox.push(&ev(1, Severity::Info)).unwrap();
        outbox.push(&ev(2, Severity::Error)).unwrap();
        outbox.push(&ev(3, Severity::Warning)).unwrap(); // evicts #1 (info)
        outbox.push(&ev(4, Severity::Debug)).unwrap(); // no room, itself droppable
        let kept: Vec<_> = outbox
            .take(10, usize::MAX)
            .lines()
            .map(|l| Event::from_slice(&l).unwrap().seq().unwrap())
            .collect();
        assert_eq!(kept, vec![0, 2, 3]);
        assert_eq!(*seen.lock().unwrap(), vec![Severity::Info, Severity::Debug]);
        let stats = outbox.stats();
        assert_eq!((stats.accepted, stats.dropped), (5, 2));
    }

    #[test]
    fn full_of_notices_drops_oldest_reported() {
        let outbox = Outbox::new(2, Arc::new(|_| {}));
        for i in 0..3 {
            outbox.push(&ev(i, Severity::Error)).unwrap();
        }
        let kept: Vec<_> = outbox
            .take(10, usize::MAX)
            .lines()
            .map(|l| Event::from_slice(&l).unwrap().seq().unwrap())
            .collect();
        assert_eq!(kept, vec![1, 2]);
        assert_eq!(outbox.stats().dropped, 1);
    }

    #[test]
    fn take_respects_byte_budget_and_order() {
        let outbox = Outbox::new(100, Arc::new(|_| {}));
        for i in 0..10 {
            outbox.push(&ev(i, Severity::Info)).unwrap();
        }
        let one = outbox.take(100, 1);
        assert_eq!(one.len(), 1, "at least one line per batch");
        let rest = outbox.take(4, usize::MAX);
        assert_eq!(rest.len(), 4);
        assert_eq!(
            Event::from_slice(&rest.lines().next().unwrap())
                .unwrap()
                .seq(),
            Some(1)
        );
    }

    #[test]
    fn a_run_with_dropped_lines_is_delivered_without_them() {
        let outbox = Outbox::new(4, Arc::new(|_| {}));
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        outbox.push(&ev(1, Severity::Info)).unwrap();
        outbox.push(&ev(2, Severity::Notice)).unwrap();
        outbox.push(&ev(3, Severity::Debug)).unwrap();
        outbox.push(&ev(4, Severity::Error)).unwrap(); // evicts #1
        outbox.push(&ev(5, Severity::Error)).unwrap(); // evicts #3
        let batch = outbox.take(3, usize::MAX);
        let seqs: Vec<_> = batch
            .lines()
            .map(|l| Event::from_slice(&l).unwrap().seq().unwrap())
            .collect();
        assert_eq!(seqs, vec![0, 2, 4]);
        // The body is exactly those lines as NDJSON, nothing of the dropped ones.
        let body = batch.ndjson();
        assert_eq!(body.iter().filter(|&&b| b == b'\n').count(), 3);
        assert!(body.ends_with(b"\n"));
        let rest = outbox.take(10, usize::MAX);
        assert_eq!(rest.len(), 1);
        assert_eq!(
            Event::from_slice(&rest.lines().next().unwrap())
                .unwrap()
                .seq(),
            Some(5)
        );
        assert!(outbox.take(10, usize::MAX).is_empty());
        let st = outbox.lock();
        let queued: usize = st.chunks.iter().map(BytesMut::len).sum();
        assert_eq!((st.live, st.bytes, st.dead(), queued), (0, 0, 0, 0));
    }

    #[test]
    fn dropped_lines_do_not_pile_up_while_nothing_is_taken() {
        // A relay down for a long time: the queue is full, every new event evicts an
        // older droppable one, and the delivery task takes nothing.
        let outbox = Outbox::new(10, Arc::new(|_| {}));
        for i in 0..50_000 {
            // claims ride through compaction with their lines
            let claim = Claim {
                session: i.to_string().into(),
                ends: false,
            };
            outbox
                .push_claiming(&ev(i, Severity::Info), Some(claim))
                .unwrap();
        }
        {
            let st = outbox.lock();
            assert_eq!(st.live, 10);
            assert!(st.items.len() <= 10 + 1025, "{} items kept", st.items.len());
            let one = ev(0, Severity::Info).to_json().len() + 1;
            assert!(
                st.chunks.iter().map(BytesMut::len).sum::<usize>() <= (10 + 1025) * (one + 8),
                "{} bytes kept",
                st.chunks.iter().map(BytesMut::len).sum::<usize>()
            );
        }
        // And what is left is the newest ten, in order, each with its own claim.
        let batch = outbox.take(100, usize::MAX);
        let mut seqs = Vec::new();
        for (line, claim) in batch.into_lines_with_claims() {
            let seq = Event::from_slice(&line).unwrap().seq().unwrap();
            assert_eq!(claim.map(|c| c.session.to_string()), Some(seq.to_string()));
            seqs.push(seq);
        }
        assert_eq!(seqs, (49_990..50_000).collect::<Vec<_>>());
        assert_eq!(outbox.stats().dropped, 49_990);
    }

    #[test]
    fn lines_are_the_events_serialized() {
        let outbox = Outbox::new(10, Arc::new(|_| {}));
        let events: Vec<_> = (0..3).map(|i| ev(i, Severity::Notice)).collect();
        for e in &events {
            outbox.push(e).unwrap();
        }
        let batch = outbox.take(10, usize::MAX);
        let lines: Vec<_> = batch.lines().collect();
        let want: Vec<_> = events.iter().map(Event::to_json).collect();
        assert_eq!(lines, want.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
        let mut ndjson = want.join("\n");
        ndjson.push('\n');
        assert_eq!(batch.ndjson(), ndjson.as_bytes());
    }

    #[test]
    fn runs_across_chunks_come_out_whole_and_in_order() {
        let outbox = Outbox::new(100_000, Arc::new(|_| {}));
        let events: Vec<_> = (0..3_000).map(|i| ev(i, Severity::Notice)).collect();
        let mut want = events.iter().map(Event::to_json);
        let mut pushed = 0;
        let mut got = 0;
        // Interleave pushes and takes of odd sizes so runs start and end anywhere.
        for (round, take) in [1, 7, 100, 333, 1, 2_000, 5, 10_000].iter().enumerate() {
            for e in events.iter().skip(pushed).take(400 * (round + 1)) {
                outbox.push(e).unwrap();
                pushed += 1;
            }
            if round == 0 {
                assert!(outbox.lock().chunks.len() > 1, "the test spans chunks");
            }
            let batch = outbox.take(*take, usize::MAX);
            for line in batch.lines() {
                assert_eq!(line, want.next().unwrap().as_bytes(), "line {got}");
                got += 1;
            }
        }
        assert_eq!(pushed, 3_000);
        let rest = outbox.take(usize::MAX, usize::MAX);
        for line in rest.lines() {
            assert_eq!(line, want.next().unwrap().as_bytes(), "line {got}");
            got += 1;
        }
        assert_eq!(got, 3_000);
        assert!(want.next().is_none());
    }

    #[test]
    fn claims_follow_their_lines_past_dropped_ones() {
        let outbox = Outbox::new(3, Arc::new(|_| {}));
        let claim = |s: &str| {
            Some(Claim {
                session: s.into(),
                ends: false,
            })
        };
        outbox
            .push_claiming(&ev(0, Severity::Info), claim("a"))
            .unwrap();
        outbox
            .push_claiming(&ev(1, Severity::Notice), None)
            .unwrap();
        outbox
            .push_claiming(&ev(2, Severity::Notice), claim("b"))
            .unwrap();
        outbox
            .push_claiming(&ev(3, Severity::Notice), claim("c"))
            .unwrap(); // evicts #0
        let batch = outbox.take(10, usize::MAX);
        let seqs: Vec<_> = batch
            .lines()
            .map(|l| Event::from_slice(&l).unwrap().seq().unwrap())
            .collect();
        assert_eq!(seqs, vec![1, 2, 3]);
        let claims: Vec<_> = batch
            .into_lines_with_claims()
            .map(|(_, c)| c.map(|c| c.session))
            .collect();
        assert_eq!(claims, vec![None, Some("b".into()), Some("c".into())]);
    }

    fn assert_consistent(outbox: &Outbox) {
        let st = outbox.lock();
        let live = st.items.iter().filter(|i| i.live).count();
        let bytes: usize = st.items.iter().filter(|i| i.live).map(|i| i.len).sum();
        let all: usize = st.items.iter().map(|i| i.len).sum();
        let queued: usize = st.chunks.iter().map(BytesMut::len).sum();
        assert_eq!((st.live, st.bytes, queued), (live, bytes, all));
    }

    #[test]
    fn an_outage_of_notices_keeps_no_dead_lines_to_scan() {
        // Nothing droppable queued: each push drops the oldest line, which must not leave
        // dead lines at the front for the next drop to walk past again.
        let outbox = Outbox::new(10, Arc::new(|_| {}));
        for i in 0..5_000 {
            outbox.push(&ev(i, Severity::Notice)).unwrap();
            assert_eq!(outbox.lock().dead(), 0, "after push {i}");
            assert_consistent(&outbox);
        }
        let seqs: Vec<_> = outbox
            .take(100, usize::MAX)
            .lines()
            .map(|l| Event::from_slice(&l).unwrap().seq().unwrap())
            .collect();
        assert_eq!(seqs, (4_990..5_000).collect::<Vec<_>>());
    }

    /// The outbox against a plain model of its rules, over random pushes (mixed
    /// severities, some lines of tens of KiB so runs cross chunks, claims on some) and
    /// takes (any count and byte budget): same lines, same order, claims on the right
    /// lines, counters that add up after every step.
    #[test]
    fn the_outbox_follows_its_model() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let severities = [
            Severity::Debug,
            Severity::Info,
            Severity::Notice,
            Severity::Error,
        ];
        for capacity in [1usize, 3, 50, 2_000] {
            let outbox = Outbox::new(capacity, Arc::new(|_| {}));
            let mut model: VecDeque<(u64, Severity)> = VecDeque::new();
            let mut next = 0u64;
            for _ in 0..20_000 {
                if rnd(3) != 0 {
                    let sev = severities[rnd(4) as usize];
                    let pad = if rnd(200) == 0 {
                        20_000 + rnd(40_000)
                    } else {
                        rnd(300)
                    };
                    let e = ev(next, sev).with_session("x".repeat(pad as usize));
                    // every other line claims, so a claim lost or misplaced shows
                    let claim = (next % 2 == 0).then(|| Claim {
                        session: next.to_string().into(),
                        ends: false,
                    });
                    outbox.push_claiming(&e, claim).unwrap();
                    if model.len() >= capacity {
                        if let Some(i) = model.iter().position(|(_, s)| s.is_droppable()) {
                            model.remove(i);
                            model.push_back((next, sev));
                        } else if !sev.is_droppable() {
                            model.pop_front();
                            model.push_back((next, sev));
                        }
                    } else {
                        model.push_back((next, sev));
                    }
                    next += 1;
                } else {
                    let max_events = [0, 1, 2, 7, 24, 1_000][rnd(6) as usize];
                    let max_bytes = [0, 1, 500, 20_000, usize::MAX][rnd(5) as usize];
                    let batch = outbox.take(max_events, max_bytes);
                    let got: Vec<u64> = batch
                        .lines()
                        .map(|l| Event::from_slice(&l).unwrap().seq().unwrap())
                        .collect();
                    let body = batch.ndjson();
                    let newlines = body.iter().filter(|&&b| b == b'\n').count();
                    assert_eq!(newlines, got.len());
                    for ((_, c), seq) in batch.into_lines_with_claims().zip(&got) {
                        assert_eq!(c.is_some(), seq % 2 == 0, "line {seq}");
                        if let Some(c) = c {
                            assert_eq!(&*c.session, seq.to_string());
                        }
                    }
                    let had = model.len();
                    assert!(got.len() <= had.min(max_events), "capacity {capacity}");
                    if max_bytes == usize::MAX {
                        assert_eq!(got.len(), had.min(max_events), "takes all it may");
                    }
                    // the byte budget holds, but a batch always carries one line
                    assert!(got.len() <= 1 || body.len() <= max_bytes);
                    if max_events > 0 && had > 0 {
                        assert!(!got.is_empty(), "at least one line per batch");
                    }
                    let want: Vec<u64> = model.drain(..got.len()).map(|(s, _)| s).collect();
                    assert_eq!(got, want, "capacity {capacity}");
                }
                assert_consistent(&outbox);
            }
            let rest: Vec<u64> = outbox
                .take(usize::MAX, usize::MAX)
                .lines()
                .map(|l| Event::from_slice(&l).unwrap().seq().unwrap())
                .collect();
            assert_eq!(rest, model.iter().map(|(s, _)| *s).collect::<Vec<_>>());
        }
    }
}
