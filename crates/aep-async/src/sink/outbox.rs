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
//!
//! Two ways in. `push` never waits: a full queue drops `debug`/`info` first (AEP-0003
//! §8.4), counting every drop at once and reporting them coalesced, one report per burst
//! ([`DeliveryReport::Dropped`]). `reserve` then `push_reserved` waits for room instead
//! (the "block" of §8.4's block-or-drop): a reservation holds one place, which a `push`
//! counts as taken, so a reserved push never drops anything. A reservation fails rather
//! than waits forever: at close, and once the sink has delivered nothing for its
//! `patience` while events wait (its endpoint down or not reading).

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use aep_core::{Event, Severity};
use bytes::{Bytes, BytesMut};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

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

/// Drops are reported at most this often: one report per burst, with a count, rather than
/// one per event.
const DROP_REPORT_INTERVAL: Duration = Duration::from_secs(1);

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

/// Drops counted but not yet reported: the report of a burst.
#[derive(Debug, Clone, Copy)]
struct UnreportedDrops {
    events: u64,
    most_severe: Severity,
    /// When the report is due (the first drop of the burst plus the interval).
    due: Instant,
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
    /// Places held by reservations not yet used or released; a `push` counts them as
    /// taken.
    reserved: usize,
    unreported: Option<UnreportedDrops>,
    /// Since when the endpoint has settled nothing (delivered, or refused by the endpoint
    /// itself) while events were pending: set by the first reservation that has to wait,
    /// moved by each settlement, cleared by one (or a give-up) that leaves nothing
    /// pending. Never read or set on the plain push path, which takes no clock reading.
    idle_since: Option<Instant>,
}

/// What one push did (small, so that the push path moves no report around).
#[derive(Clone, Copy)]
struct Enqueued {
    /// An event (this one or an older one) was dropped to make room.
    dropped: bool,
    /// The burst's drop report is due.
    report_due: bool,
    /// The delivery task should be woken.
    wake: bool,
}

impl OutboxState {
    /// Lines dropped but still held as items, until taken or compacted away.
    fn dead(&self) -> usize {
        self.items.len() - self.live
    }

    /// Counts one drop toward the burst's report.
    fn note_drop(&mut self, severity: Severity) {
        self.stats.dropped += 1;
        match &mut self.unreported {
            Some(u) => {
                u.events += 1;
                u.most_severe = u.most_severe.max(severity);
            }
            None => {
                self.unreported = Some(UnreportedDrops {
                    events: 1,
                    most_severe: severity,
                    due: Instant::now() + DROP_REPORT_INTERVAL,
                });
            }
        }
    }

    /// Whether the burst's report is due (its interval has passed).
    fn drops_due(&self) -> bool {
        self.unreported.is_some_and(|u| Instant::now() >= u.due)
    }

    /// The drops to report now: all of them with `force`, else those of a burst whose
    /// interval has passed.
    fn drops_to_report(&mut self, force: bool) -> Option<DeliveryReport> {
        let u = self.unreported?;
        if !force && Instant::now() < u.due {
            return None;
        }
        self.unreported = None;
        Some(DeliveryReport::Dropped {
            events: u.events,
            most_severe: u.most_severe,
            total: self.stats.dropped,
        })
    }
}

/// The bounded, order-keeping queue between `accept` and a delivery task.
pub(crate) struct Outbox {
    state: Mutex<OutboxState>,
    capacity: usize,
    wake: Notify,
    /// Woken when places come free (a take, a released reservation) and at close.
    room: Notify,
    settled: watch::Sender<u64>,
    pub(crate) report: ReportHandler,
    wake_events: usize,
    wake_bytes: usize,
    /// How long a reservation waits on a sink that delivers nothing; `None`: for ever.
    patience: Option<Duration>,
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
            room: Notify::new(),
            settled: watch::channel(0).0,
            report,
            wake_events: 1,
            wake_bytes: usize::MAX,
            patience: None,
        }
    }

    aep_core::setters! {
        /// How long [`reserve`](Self::reserve) waits while the sink delivers nothing before
        /// it fails with [`EmitError::Stalled`] (`None`: for ever).
        pub(crate) fn patience(patience: Option<Duration>) => patience = patience;
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
        self.push_line(event, claim, false)
    }

    /// [`push_claiming`](Self::push_claiming) into the place a [`reserve`](Self::reserve)
    /// held, which it uses up whatever the outcome: nothing is dropped to make room.
    pub(crate) fn push_reserved(
        &self,
        event: &Event,
        claim: Option<Claim>,
    ) -> Result<(), EmitError> {
        self.push_line(event, claim, true)
    }

    fn push_line(
        &self,
        event: &Event,
        claim: Option<Claim>,
        reserved: bool,
    ) -> Result<(), EmitError> {
        let mut line = SCRATCH.try_with(Cell::take).unwrap_or_default();
        line.clear();
        event.write_json(&mut line);
        line.push(b'\n');
        let pushed = self.enqueue(&line, event.severity(), claim, reserved);
        // one huge event should not pin its size for the thread's lifetime
        if line.capacity() <= SCRATCH_KEEP {
            let _ = SCRATCH.try_with(|s| s.set(line));
        }
        let Enqueued {
            dropped,
            report_due,
            wake,
        } = pushed?;
        if dropped {
            // Settled at once, so that a flush does not wait for it; only its report
            // waits, to be coalesced with the rest of the burst.
            self.settled.send_modify(|n| *n += 1);
        }
        if report_due {
            self.report_drops(false);
        }
        if wake {
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Queues one serialized line (ending in `\n`).
    fn enqueue(
        &self,
        line: &[u8],
        severity: Severity,
        claim: Option<Claim>,
        reserved: bool,
    ) -> Result<Enqueued, EmitError> {
        let mut st = self.lock();
        if reserved {
            st.reserved = st.reserved.saturating_sub(1);
        }
        if st.closed {
            return Err(EmitError::Closed);
        }
        st.stats.accepted += 1;
        let mut dropped = false;
        // A held reservation counts as taken, so a reserved push always finds room.
        if st.live + st.reserved >= self.capacity {
            let queued = match Self::drop_oldest_droppable(&mut st) {
                Some(sev) => Some(sev),
                None if severity.is_droppable() => None,
                // Nothing droppable anywhere: the oldest event goes, and is reported,
                // never silently (AEP-0003 §8.4).
                None => Self::drop_oldest(&mut st),
            };
            match queued {
                Some(sev) => st.note_drop(sev),
                // The new event is the one to go: it is droppable while nothing queued
                // is, or every place is held by a reservation.
                None => {
                    st.note_drop(severity);
                    return Ok(Enqueued {
                        dropped: true,
                        report_due: st.drops_due(),
                        wake: false,
                    });
                }
            }
            dropped = true;
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
        Ok(Enqueued {
            dropped,
            report_due: dropped && st.drops_due(),
            wake,
        })
    }

    /// Hands a coalesced drop report to the handler (outside the lock).
    fn send_report(&self, report: Option<DeliveryReport>) {
        if let Some(report) = report {
            tracing::debug!(%report, "outbox full (AEP-0003 §8.4)");
            (self.report)(report);
        }
    }

    /// Reports the drops not yet reported: all of them with `force`, else those whose
    /// burst has lasted the report interval.
    fn report_drops(&self, force: bool) {
        let report = self.lock().drops_to_report(force);
        self.send_report(report);
    }

    /// Waits until the queue has a place for one more event that no reservation holds,
    /// and holds it for [`push_reserved`](Self::push_reserved) (or [`release`](Self::release)).
    ///
    /// Fails with [`EmitError::Closed`] once the sink is closed, and with
    /// [`EmitError::Stalled`] when it would wait while the sink has settled nothing for
    /// its `patience`. Cancel-safe: a future dropped before it resolves holds nothing.
    pub(crate) async fn reserve(&self) -> Result<(), EmitError> {
        loop {
            // Registered before the state is read: a place freed in between still wakes.
            let room = self.room.notified();
            let deadline = {
                let mut st = self.lock();
                if st.closed {
                    return Err(EmitError::Closed);
                }
                if st.live + st.reserved < self.capacity {
                    st.reserved += 1;
                    return Ok(());
                }
                // Waiting on the endpoint (events pending), not only on reservations.
                match self.patience {
                    Some(patience) if st.stats.pending() > 0 => {
                        let now = Instant::now();
                        let since = *st.idle_since.get_or_insert(now);
                        let idle = now.saturating_duration_since(since);
                        if idle >= patience {
                            return Err(EmitError::Stalled { idle });
                        }
                        Some(since + patience)
                    }
                    _ => None,
                }
            };
            match deadline {
                // Woken or not, the state is read again: progress moves the deadline.
                Some(at) => {
                    let _ = tokio::time::timeout_at(at, room).await;
                }
                None => room.await,
            }
        }
    }

    /// Gives back a place [`reserve`](Self::reserve) held and no push used.
    pub(crate) fn release(&self) {
        {
            let mut st = self.lock();
            st.reserved = st.reserved.saturating_sub(1);
        }
        self.room.notify_waiters();
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
        let report = st.drops_to_report(false);
        drop(st);
        if taken > 0 {
            self.room.notify_waiters();
        }
        self.send_report(report);
        Batch { body, ends, claims }
    }

    /// (live events, queued bytes, closed, urgent)
    pub(crate) fn level(&self) -> (usize, usize, bool, bool) {
        let st = self.lock();
        (st.live, st.bytes, st.closed, st.urgent)
    }

    /// Resolves once there are events to take, a flush waits, or the sink is closed.
    /// Meanwhile, the last report of a burst of drops is made when it falls due.
    pub(crate) async fn wait_for_work(&self) {
        loop {
            let notified = self.wake.notified();
            let due = {
                let st = self.lock();
                // a flush with nothing queued still wakes the worker: the WS sink asks
                // the relay to confirm what it wrote (the next take clears the flag)
                if st.live > 0 || st.closed || st.urgent {
                    return;
                }
                st.unreported.map(|u| u.due)
            };
            match due {
                Some(at) => {
                    if tokio::time::timeout_at(at, notified).await.is_err() {
                        self.report_drops(false);
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Woken when new events arrive, on flush and on close.
    #[cfg(feature = "http")]
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }

    /// Settles events the endpoint answered for: `delivered`, or `rejected` by the
    /// endpoint itself (a 4xx). Either is progress: the endpoint is there.
    pub(crate) fn settle(&self, delivered: u64, rejected: u64) {
        {
            let mut st = self.lock();
            st.stats.delivered += delivered;
            st.stats.rejected += rejected;
            if delivered + rejected > 0 {
                st.idle_since = (st.stats.pending() > 0).then(Instant::now);
            }
        }
        self.settled.send_modify(|n| *n += delivered + rejected);
    }

    /// Settles events given up on (retries out of time): lost, counted as rejected, and
    /// no progress, so a sink that only gives up stays idle for [`reserve`](Self::reserve).
    #[cfg(any(feature = "http", feature = "ws"))]
    pub(crate) fn give_up(&self, events: u64) {
        {
            let mut st = self.lock();
            st.stats.rejected += events;
            // Nothing waits on the endpoint any more: the stall ends here, and a later
            // wait (the endpoint may be back) gets its own patience.
            if st.stats.pending() == 0 {
                st.idle_since = None;
            }
        }
        self.settled.send_modify(|n| *n += events);
    }

    pub(crate) async fn flush(&self) {
        let (target, report) = {
            let mut st = self.lock();
            st.urgent = true;
            (st.stats.accepted, st.drops_to_report(true))
        };
        // Drops are settled already: their report comes before the flush returns.
        self.send_report(report);
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
        // Reservations waiting for room fail now: nothing more will be accepted.
        self.room.notify_waiters();
    }

    /// Reports what is left when the delivery task is torn down by the runtime.
    pub(crate) fn abandon(&self) {
        let (left, drops) = {
            let mut st = self.lock();
            let left = st.live as u64;
            st.items.clear();
            st.chunks.clear();
            st.droppable.clear();
            st.live = 0;
            st.bytes = 0;
            st.stats.rejected += left;
            // Nothing will deliver any more: refuse from now on rather than queue for
            // nobody, and let waiting reservations fail instead of waiting for ever.
            st.closed = true;
            (left, st.drops_to_report(true))
        };
        self.room.notify_waiters();
        self.send_report(drops);
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

    /// The `seq` of each event of `batch`, in order.
    fn seqs(batch: &Batch) -> Vec<u64> {
        batch
            .lines()
            .map(|l| Event::from_slice(&l).unwrap().seq().unwrap())
            .collect()
    }

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

    /// The `Dropped` reports a handler received: (events, most severe, total).
    type DropLog = Arc<Mutex<Vec<(u64, Severity, u64)>>>;

    fn drop_log() -> (ReportHandler, DropLog) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let handler: ReportHandler = Arc::new(move |r| {
            if let DeliveryReport::Dropped {
                events,
                most_severe,
                total,
            } = r
            {
                log.lock().unwrap().push((events, most_severe, total));
            }
        });
        (handler, seen)
    }

    #[test]
    fn full_queue_drops_debug_info_first_and_counts() {
        let (handler, seen) = drop_log();
        let outbox = Outbox::new(3, handler);
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        outbox.push(&ev(1, Severity::Info)).unwrap();
        outbox.push(&ev(2, Severity::Error)).unwrap();
        outbox.push(&ev(3, Severity::Warning)).unwrap(); // evicts #1 (info)
        outbox.push(&ev(4, Severity::Debug)).unwrap(); // no room, itself droppable
        assert_eq!(seqs(&outbox.take(10, usize::MAX)), vec![0, 2, 3]);
        let stats = outbox.stats();
        assert_eq!((stats.accepted, stats.dropped), (5, 2), "counted at once");
        assert!(
            seen.lock().unwrap().is_empty(),
            "reported per burst, not per drop"
        );
        outbox.report_drops(true);
        assert_eq!(*seen.lock().unwrap(), vec![(2, Severity::Info, 2)]);
    }

    /// A burst of drops is one report a second with its count, and its tail is reported
    /// when the delivery task next waits for work: the counts add up to every drop.
    #[tokio::test(start_paused = true)]
    async fn drop_reports_coalesce_per_burst() {
        let (handler, seen) = drop_log();
        let outbox = Arc::new(Outbox::new(1, handler));
        for i in 0..500 {
            outbox.push(&ev(i, Severity::Info)).unwrap();
        }
        assert!(seen.lock().unwrap().is_empty());
        tokio::time::advance(DROP_REPORT_INTERVAL).await;
        for i in 500..1_000 {
            outbox.push(&ev(i, Severity::Info)).unwrap();
        }
        // the first drop past the interval reports the burst so far
        assert_eq!(*seen.lock().unwrap(), vec![(500, Severity::Info, 500)]);
        assert_eq!(outbox.take(10, usize::MAX).len(), 1);
        // the queue is empty: the delivery task waits, and reports the tail when due
        let waiting = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.wait_for_work().await }
        });
        tokio::time::sleep(DROP_REPORT_INTERVAL + Duration::from_millis(1)).await;
        assert_eq!(
            *seen.lock().unwrap(),
            vec![(500, Severity::Info, 500), (499, Severity::Info, 999)]
        );
        assert_eq!(outbox.stats().dropped, 999);
        outbox.mark_closed();
        waiting.await.unwrap();
    }

    #[test]
    fn a_flush_reports_the_drops_before_it_waits() {
        let (handler, seen) = drop_log();
        let outbox = Outbox::new(1, handler);
        outbox.push(&ev(0, Severity::Error)).unwrap();
        outbox.push(&ev(1, Severity::Error)).unwrap(); // nothing droppable: #0 goes
        let flush = outbox.flush();
        futures::pin_mut!(flush);
        assert!(futures::FutureExt::now_or_never(&mut flush).is_none());
        assert_eq!(*seen.lock().unwrap(), vec![(1, Severity::Error, 1)]);
    }

    /// The futures of `reserve`, each polled once now.
    fn try_reserve(outbox: &Outbox) -> Option<Result<(), EmitError>> {
        futures::FutureExt::now_or_never(outbox.reserve())
    }

    /// A reservation waiting in a task of its own.
    fn reserve_in_task(outbox: &Arc<Outbox>) -> tokio::task::JoinHandle<Result<(), EmitError>> {
        let outbox = outbox.clone();
        tokio::spawn(async move { outbox.reserve().await })
    }

    #[tokio::test]
    async fn reservations_hold_places_and_reserved_pushes_never_drop() {
        let (handler, seen) = drop_log();
        let outbox = Outbox::new(3, handler);
        assert!(matches!(try_reserve(&outbox), Some(Ok(()))));
        assert!(matches!(try_reserve(&outbox), Some(Ok(()))));
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        assert!(try_reserve(&outbox).is_none(), "two held, one queued: full");
        // a push counts the held places as taken: the info event goes
        outbox.push(&ev(1, Severity::Info)).unwrap();
        assert_eq!(outbox.stats().dropped, 1);
        outbox.push_reserved(&ev(2, Severity::Debug), None).unwrap();
        outbox.push_reserved(&ev(3, Severity::Info), None).unwrap();
        assert_eq!(
            seqs(&outbox.take(10, usize::MAX)),
            vec![0, 2, 3],
            "the reserved ones dropped nothing"
        );
        assert_eq!(outbox.stats().dropped, 1);
        outbox.report_drops(true);
        assert_eq!(*seen.lock().unwrap(), vec![(1, Severity::Info, 1)]);
        // and every place is free again
        for _ in 0..3 {
            assert!(matches!(try_reserve(&outbox), Some(Ok(()))));
        }
        assert!(try_reserve(&outbox).is_none());
        outbox.release();
        assert!(matches!(try_reserve(&outbox), Some(Ok(()))));
    }

    #[tokio::test]
    async fn a_waiting_reservation_gets_the_place_a_take_frees() {
        let outbox = Arc::new(Outbox::new(2, Arc::new(|_| {})));
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        outbox.push(&ev(1, Severity::Notice)).unwrap();
        let waiting = reserve_in_task(&outbox);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        assert_eq!(outbox.take(1, usize::MAX).len(), 1);
        waiting.await.unwrap().unwrap();
        outbox.push_reserved(&ev(2, Severity::Info), None).unwrap();
        assert_eq!(outbox.stats().dropped, 0);
        assert_eq!(outbox.take(10, usize::MAX).len(), 2);
    }

    #[tokio::test]
    async fn closing_fails_waiting_and_later_reservations() {
        let outbox = Arc::new(Outbox::new(1, Arc::new(|_| {})));
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        let waiting = reserve_in_task(&outbox);
        tokio::task::yield_now().await;
        outbox.mark_closed();
        assert!(matches!(waiting.await.unwrap(), Err(EmitError::Closed)));
        assert!(matches!(try_reserve(&outbox), Some(Err(EmitError::Closed))));
        // a reserved push after the close uses its place up and is refused
        assert!(matches!(
            outbox.push_reserved(&ev(1, Severity::Notice), None),
            Err(EmitError::Closed)
        ));
    }

    #[tokio::test]
    async fn an_abandoned_outbox_fails_waiting_reservations() {
        let outbox = Arc::new(Outbox::new(1, Arc::new(|_| {})));
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        let waiting = reserve_in_task(&outbox);
        tokio::task::yield_now().await;
        drop(AbandonGuard(outbox.clone()));
        assert!(matches!(waiting.await.unwrap(), Err(EmitError::Closed)));
        assert_eq!(outbox.stats().rejected, 1);
    }

    /// Waiting is bounded by progress, not by a fixed time: each delivery restarts the
    /// patience, giving up does not.
    #[tokio::test(start_paused = true)]
    async fn a_sink_that_delivers_nothing_stalls_reservations_after_its_patience() {
        let patience = Duration::from_secs(60);
        let outbox = Arc::new(Outbox::new(2, Arc::new(|_| {})).patience(Some(patience)));
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        outbox.push(&ev(1, Severity::Notice)).unwrap();
        assert_eq!(outbox.take(1, usize::MAX).len(), 1); // #0 in flight
        assert!(matches!(try_reserve(&outbox), Some(Ok(()))));
        outbox
            .push_reserved(&ev(2, Severity::Notice), None)
            .unwrap();
        let started = Instant::now();
        let waiting = reserve_in_task(&outbox);
        tokio::time::sleep(Duration::from_secs(40)).await;
        outbox.settle(1, 0); // #0 delivered: the endpoint is there
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(
            !waiting.is_finished(),
            "progress at 40 s moved the deadline"
        );
        assert_eq!(outbox.take(1, usize::MAX).len(), 1); // #1 in flight
        let _ = waiting.await.unwrap(); // the place #1 left
        assert!(try_reserve(&outbox).is_none());
        outbox.give_up(1); // #1 given up: no progress
        let err = outbox.reserve().await.unwrap_err();
        let EmitError::Stalled { idle } = err else {
            panic!("{err:?}");
        };
        assert_eq!(idle, patience);
        assert_eq!(started.elapsed(), Duration::from_secs(100), "40 s + 60 s");
        // and at once from then on, while nothing is delivered
        assert!(matches!(
            try_reserve(&outbox),
            Some(Err(EmitError::Stalled { .. }))
        ));
    }

    /// A stall ends with what was pending: once every event waiting on the endpoint is
    /// given up, a later wait (the relay may be back) gets its own patience rather than
    /// failing at once for the idle time of the last outage.
    #[cfg(any(feature = "http", feature = "ws"))]
    #[tokio::test(start_paused = true)]
    async fn giving_up_everything_pending_ends_the_stall() {
        let patience = Duration::from_secs(60);
        let outbox = Arc::new(Outbox::new(1, Arc::new(|_| {})).patience(Some(patience)));
        outbox.push(&ev(0, Severity::Notice)).unwrap();
        assert_eq!(outbox.take(1, usize::MAX).len(), 1); // #0 in flight
        assert!(matches!(try_reserve(&outbox), Some(Ok(()))));
        outbox
            .push_reserved(&ev(1, Severity::Notice), None)
            .unwrap();
        let err = outbox.reserve().await.unwrap_err();
        assert!(matches!(err, EmitError::Stalled { .. }), "{err:?}");
        outbox.give_up(1); // #0
        assert_eq!(outbox.take(1, usize::MAX).len(), 1);
        outbox.give_up(1); // #1: nothing pending any more
        assert_eq!(outbox.stats().pending(), 0);
        tokio::time::sleep(Duration::from_secs(600)).await;
        outbox.push(&ev(2, Severity::Notice)).unwrap();
        let waiting = reserve_in_task(&outbox);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            !waiting.is_finished(),
            "failed at once: {:?}",
            waiting.await.unwrap()
        );
        assert_eq!(outbox.take(1, usize::MAX).len(), 1);
        outbox.settle(1, 0);
        waiting.await.unwrap().unwrap();
    }

    #[test]
    fn full_of_notices_drops_oldest_reported() {
        let outbox = Outbox::new(2, Arc::new(|_| {}));
        for i in 0..3 {
            outbox.push(&ev(i, Severity::Error)).unwrap();
        }
        assert_eq!(seqs(&outbox.take(10, usize::MAX)), vec![1, 2]);
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
        assert_eq!(seqs(&rest), (1..5).collect::<Vec<_>>());
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
        assert_eq!(seqs(&batch), [0, 2, 4]);
        // The body is exactly those lines as NDJSON, nothing of the dropped ones.
        let body = batch.ndjson();
        assert_eq!(body.iter().filter(|&&b| b == b'\n').count(), 3);
        assert!(body.ends_with(b"\n"));
        let rest = outbox.take(10, usize::MAX);
        assert_eq!(seqs(&rest), [5]);
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
        assert_eq!(seqs(&batch), [1, 2, 3]);
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
        assert_eq!(
            seqs(&outbox.take(100, usize::MAX)),
            (4_990..5_000).collect::<Vec<_>>()
        );
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
                    let got = seqs(&batch);
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
            let rest = seqs(&outbox.take(usize::MAX, usize::MAX));
            assert_eq!(rest, model.iter().map(|(s, _)| *s).collect::<Vec<_>>());
        }
    }
}
