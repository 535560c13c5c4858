//! The queue toward one SSE subscriber or one WebSocket connection, with backpressure
//! (AEP-0003 §8.4).
//!
//! Ingest pushes; the connection's writer drains. The queue counts the bytes it holds.
//! Past the soft bound, ingest first waits (up to the lag grace) for the writer to catch
//! up, so a reader that keeps up loses nothing however fast events arrive. One that stays
//! past the soft bound is lagging: `debug`/`info` are dropped for it and counted; past
//! the hard bound it is disconnected, so `notice` and above are never dropped silently.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aep_core::{Capture, Event, Severity};
use bytes::Bytes;
use smallvec::SmallVec;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use crate::proto::{self, Filter};
use crate::store::{Encoded, ReplayPart};

/// Which binding a queue writes to: SSE messages or WebSocket text frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    Sse,
    Ws,
}

/// How a queue ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// `live=0`: the replay is complete (`: replay-complete`).
    ReplayComplete,
    /// Past the hard bound (SSE: stream ends; WS: `closing` frame, close 1013).
    Backpressure,
    /// The relay is shutting down (SSE: `: shutting-down`; WS: close 1001).
    Shutdown,
    /// A protocol violation closes a WebSocket with this code and reason.
    Close(u16, &'static str),
    /// The peer is gone: stop without a word.
    Quiet,
}

/// A buffered replay to run inside the writer, so it streams at the reader's pace and
/// precedes every live event queued after it.
#[derive(Debug)]
pub(crate) struct ReplayJob {
    pub(crate) parts: Vec<ReplayPart>,
    pub(crate) filter: Arc<Filter>,
    pub(crate) capture: Option<Capture>,
    /// The WebSocket subscription id the markers echo; `None` on SSE.
    pub(crate) sub: Option<String>,
    /// Replay-all never declares a gap (AEP-0003 §5 rule 2).
    pub(crate) declare_gaps: bool,
}

#[derive(Debug)]
pub(crate) enum Item {
    /// A frame, comment or command: never dropped.
    Frame(Bytes),
    /// A live event.
    Event(Bytes),
    /// Live events offered together, and their total length.
    Events(Vec<Bytes>, usize),
    Replay(Box<ReplayJob>),
    End(End),
}

/// What a writer sends next.
#[derive(Debug)]
pub(crate) enum Piece {
    Data(Bytes),
    Heartbeat,
    End(End),
}

/// What became of one offered event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    Queued,
    Dropped,
    Closed,
}

/// Live events offered to one reader during one ingest batch and not queued yet: they
/// go out as one queue item, so a batch costs a send and a wakeup per run, not per event.
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// One event inline: a WebSocket ingest offers one at a time, and a run of one goes
    /// out as it is, so it should cost no list.
    events: SmallVec<[Bytes; 1]>,
    bytes: usize,
}

/// A run is queued once it holds this much (the writer's chunk size) ...
const RUN_BYTES: usize = 64 * 1024;
/// ... or this many events, so a reader starts writing while ingest is still fanning out.
const RUN_EVENTS: usize = 256;

/// The queue toward one reader.
#[derive(Debug)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Item>,
    queued: AtomicUsize,
    lagging: AtomicBool,
    closed: AtomicBool,
    dropped: AtomicU64,
    progress: Notify,
    soft: usize,
    hard: usize,
    grace: Duration,
}

impl Outbox {
    pub(crate) fn new(
        soft: usize,
        hard: usize,
        grace: Duration,
    ) -> (Arc<Outbox>, mpsc::UnboundedReceiver<Item>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let outbox = Outbox {
            tx,
            queued: AtomicUsize::new(0),
            lagging: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            progress: Notify::new(),
            soft,
            hard,
            grace,
        };
        (Arc::new(outbox), rx)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Events dropped toward this reader so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn enqueue(&self, item: Item, len: usize) -> bool {
        self.queued.fetch_add(len, Ordering::AcqRel);
        self.tx.send(item).is_ok()
    }

    /// Queues a frame that must not be dropped; past the hard bound the reader is
    /// disconnected instead.
    pub(crate) fn push_frame(&self, bytes: Bytes) -> bool {
        if self.is_closed() {
            return false;
        }
        if self.queued.load(Ordering::Acquire) > self.hard {
            self.end(End::Backpressure);
            return false;
        }
        self.enqueue(Item::Frame(bytes), 0)
    }

    /// Queues a replay to run in the writer.
    pub(crate) fn push_replay(&self, job: ReplayJob) {
        if !self.is_closed() {
            self.enqueue(Item::Replay(Box::new(job)), 0);
        }
    }

    /// Ends the queue once: the writer finishes what is queued, then ends as `how` says.
    pub(crate) fn end(&self, how: End) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            let _ = self.tx.send(Item::End(how));
            self.progress.notify_waiters();
        }
    }

    /// Offers one live event (AEP-0003 §8.4) and queues it.
    pub(crate) async fn deliver(&self, bytes: Bytes, severity: Severity) -> Delivery {
        let mut run = Run::default();
        let delivery = self.offer(&mut run, bytes, severity).await;
        self.flush(&mut run);
        delivery
    }

    /// Offers one live event (AEP-0003 §8.4) as part of `run`; [`Outbox::flush`] queues
    /// what is left of the run. The bounds count the run as if it were queued already.
    pub(crate) async fn offer(&self, run: &mut Run, bytes: Bytes, severity: Severity) -> Delivery {
        let mut bytes = bytes;
        loop {
            match self.offer_now(run, bytes, severity) {
                Ok(delivery) => return delivery,
                Err(back) => bytes = back,
            }
            // the writer can only catch up on what it has been given
            self.flush(run);
            if !self.wait_below_soft().await {
                tracing::debug!("subscriber lagging: dropping debug/info for it");
                self.lagging.store(true, Ordering::Release);
            }
        }
    }

    /// [`Outbox::offer`] without waiting: the event back when the queue is past the soft
    /// bound and the reader not yet declared lagging, so the caller must wait first.
    /// Every other case is decided here, synchronously, which is all but always.
    pub(crate) fn offer_now(
        &self,
        run: &mut Run,
        bytes: Bytes,
        severity: Severity,
    ) -> Result<Delivery, Bytes> {
        if self.is_closed() {
            *run = Run::default();
            return Ok(Delivery::Closed);
        }
        let queued = self.queued.load(Ordering::Acquire) + run.bytes;
        if queued > self.hard {
            tracing::debug!(queued, "subscriber past the hard bound: disconnecting");
            // what was offered before goes out ahead of the end
            self.flush(run);
            self.end(End::Backpressure);
            return Ok(Delivery::Closed);
        }
        if queued > self.soft {
            if !self.lagging.load(Ordering::Acquire) {
                return Err(bytes);
            }
            if severity.is_droppable() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(Delivery::Dropped);
            }
        }
        run.bytes += bytes.len();
        run.events.push(bytes);
        if run.bytes >= RUN_BYTES || run.events.len() >= RUN_EVENTS {
            self.flush(run);
        }
        Ok(Delivery::Queued)
    }

    /// Queues what `run` holds.
    pub(crate) fn flush(&self, run: &mut Run) {
        let len = std::mem::take(&mut run.bytes);
        let mut events = std::mem::take(&mut run.events);
        let item = match events.len() {
            0 => return,
            1 => match events.pop() {
                Some(one) => Item::Event(one),
                None => return,
            },
            _ => Item::Events(events.into_vec(), len),
        };
        self.enqueue(item, len);
    }

    /// Waits up to the lag grace for the writer to bring the queue under the soft bound.
    async fn wait_below_soft(&self) -> bool {
        let deadline = Instant::now() + self.grace;
        loop {
            let notified = self.progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_closed() || self.queued.load(Ordering::Acquire) <= self.soft {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.queued.load(Ordering::Acquire) <= self.soft;
            }
        }
    }

    /// The writer took `len` queued bytes.
    fn taken(&self, len: usize) {
        if len == 0 {
            return;
        }
        let left = self
            .queued
            .fetch_sub(len, Ordering::AcqRel)
            .saturating_sub(len);
        if left <= self.soft / 2 {
            self.lagging.store(false, Ordering::Release);
        }
        // only a wait for the queue to fall under the soft bound listens (and `notify_waiters`
        // takes a lock): nobody to tell while it stays above
        if left <= self.soft {
            self.progress.notify_waiters();
        }
    }
}

/// Renders one event for a binding under an optional capture ceiling.
pub(crate) fn render(
    encoded: &Encoded,
    event: &Event,
    capture: Option<Capture>,
    binding: Binding,
) -> Bytes {
    match capture.and_then(|c| proto::downlevel(event, c)) {
        Some(lowered) => {
            let again = crate::hub::encode(&lowered, lowered.to_json().as_bytes());
            pick(&again, binding)
        }
        None => pick(encoded, binding),
    }
}

/// The held frame of an event for a binding.
pub(crate) fn pick(encoded: &Encoded, binding: Binding) -> Bytes {
    match binding {
        Binding::Sse => encoded.sse(),
        Binding::Ws => encoded.json(),
    }
}

/// The reading end of an [`Outbox`], driven by the connection's writer.
#[derive(Debug)]
pub(crate) struct Drain {
    rx: mpsc::UnboundedReceiver<Item>,
    outbox: Arc<Outbox>,
    binding: Binding,
    /// The rest of a run taken from the queue.
    run: std::vec::IntoIter<Bytes>,
    replay: Option<ReplayCursor>,
    heartbeat: Duration,
    next_beat: Instant,
    done: bool,
}

#[derive(Debug)]
struct ReplayCursor {
    job: Box<ReplayJob>,
    part: usize,
    event: usize,
    marked: bool,
}

impl Drain {
    pub(crate) fn new(
        rx: mpsc::UnboundedReceiver<Item>,
        outbox: Arc<Outbox>,
        binding: Binding,
        heartbeat: Duration,
    ) -> Drain {
        Drain {
            rx,
            outbox,
            binding,
            run: Vec::new().into_iter(),
            replay: None,
            heartbeat,
            next_beat: Instant::now() + heartbeat,
            done: false,
        }
    }

    /// The next piece to write, waiting for one (a heartbeat when idle); `None` once ended.
    pub(crate) async fn next(&mut self) -> Option<Piece> {
        if self.done {
            return None;
        }
        if let Some(bytes) = self.run.next() {
            return Some(Piece::Data(bytes));
        }
        if let Some(piece) = self.next_replayed() {
            return Some(piece);
        }
        loop {
            let item = tokio::select! {
                item = self.rx.recv() => item,
                () = tokio::time::sleep_until(self.next_beat) => {
                    self.next_beat = Instant::now() + self.heartbeat;
                    return Some(Piece::Heartbeat);
                }
            };
            match item {
                None => {
                    self.done = true;
                    return None;
                }
                Some(item) => {
                    if let Some(piece) = self.accept(item) {
                        return Some(piece);
                    }
                }
            }
        }
    }

    /// The next piece if one is ready now, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<Piece> {
        if self.done {
            return None;
        }
        if let Some(bytes) = self.run.next() {
            return Some(Piece::Data(bytes));
        }
        if let Some(piece) = self.next_replayed() {
            return Some(piece);
        }
        loop {
            let item = self.rx.try_recv().ok()?;
            if let Some(piece) = self.accept(item) {
                return Some(piece);
            }
        }
    }

    fn accept(&mut self, item: Item) -> Option<Piece> {
        match item {
            Item::Frame(bytes) => Some(Piece::Data(bytes)),
            Item::Event(bytes) => {
                self.outbox.taken(bytes.len());
                Some(Piece::Data(bytes))
            }
            Item::Events(events, len) => {
                self.outbox.taken(len);
                self.run = events.into_iter();
                self.run.next().map(Piece::Data)
            }
            Item::Replay(job) => {
                self.replay = Some(ReplayCursor {
                    job,
                    part: 0,
                    event: 0,
                    marked: false,
                });
                self.next_replayed()
            }
            Item::End(how) => {
                self.done = true;
                Some(Piece::End(how))
            }
        }
    }

    fn next_replayed(&mut self) -> Option<Piece> {
        let binding = self.binding;
        let cursor = self.replay.as_mut()?;
        loop {
            let job = &cursor.job;
            let Some(part) = job.parts.get(cursor.part) else {
                self.replay = None;
                return None;
            };
            if !cursor.marked {
                cursor.marked = true;
                if let (true, Some((epoch, seq))) = (job.declare_gaps, part.exhausted) {
                    let marker = match &job.sub {
                        Some(sub) => Bytes::from(proto::replay_exhausted_frame(
                            sub,
                            &part.session,
                            epoch,
                            seq,
                        )),
                        None => {
                            Bytes::from(proto::replay_exhausted_comment(&part.session, epoch, seq))
                        }
                    };
                    return Some(Piece::Data(marker));
                }
            }
            let Some(encoded) = part.events.get(cursor.event) else {
                cursor.part += 1;
                cursor.event = 0;
                cursor.marked = false;
                continue;
            };
            cursor.event += 1;
            match (job.capture, job.filter.decide_session(Some(&part.session))) {
                (None, Some(true)) => return Some(Piece::Data(pick(encoded, binding))),
                (_, Some(false)) => continue,
                _ => {}
            }
            let json = encoded.json();
            if job.capture.is_none() {
                // nothing to lower: the verdict is read off the stored bytes when the
                // attributes the filter names are plain, else from the parsed event
                let hit = job.filter.decide_json(&json).unwrap_or_else(|| {
                    Event::from_slice(&json).is_ok_and(|e| job.filter.matches(&e))
                });
                if hit {
                    return Some(Piece::Data(pick(encoded, binding)));
                }
                continue;
            }
            let Ok(event) = Event::from_slice(&json) else {
                continue;
            };
            if job.filter.matches(&event) {
                return Some(Piece::Data(render(encoded, &event, job.capture, binding)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outbox(soft: usize, hard: usize) -> (Arc<Outbox>, Drain) {
        let (outbox, rx) = Outbox::new(soft, hard, Duration::from_millis(20));
        let drain = Drain::new(rx, outbox.clone(), Binding::Sse, Duration::from_secs(60));
        (outbox, drain)
    }

    #[tokio::test]
    async fn a_stalled_reader_loses_info_counted_and_keeps_notice() {
        let (outbox, mut drain) = outbox(100, 1000);
        let line = Bytes::from(vec![b'x'; 60]);
        assert_eq!(
            outbox.deliver(line.clone(), Severity::Info).await,
            Delivery::Queued
        );
        assert_eq!(
            outbox.deliver(line.clone(), Severity::Info).await,
            Delivery::Queued
        );
        // past the soft bound, nobody reading: after the grace it is lagging
        assert_eq!(
            outbox.deliver(line.clone(), Severity::Debug).await,
            Delivery::Dropped
        );
        assert_eq!(
            outbox.deliver(line.clone(), Severity::Info).await,
            Delivery::Dropped
        );
        assert_eq!(
            outbox.deliver(line.clone(), Severity::Notice).await,
            Delivery::Queued
        );
        assert_eq!(outbox.dropped(), 2);
        // draining below half the soft bound ends the lagging state
        let mut got = 0;
        while let Some(Piece::Data(_)) = drain.try_next() {
            got += 1;
        }
        assert_eq!(got, 3);
        assert_eq!(outbox.deliver(line, Severity::Info).await, Delivery::Queued);
    }

    #[tokio::test]
    async fn past_the_hard_bound_the_reader_is_disconnected_not_silently_dropped() {
        let (outbox, mut drain) = outbox(100, 200);
        let line = Bytes::from(vec![b'x'; 150]);
        for _ in 0..2 {
            assert_eq!(
                outbox.deliver(line.clone(), Severity::Error).await,
                Delivery::Queued
            );
        }
        assert_eq!(
            outbox.deliver(line.clone(), Severity::Error).await,
            Delivery::Closed
        );
        assert!(outbox.is_closed());
        let mut pieces = Vec::new();
        while let Some(p) = drain.try_next() {
            pieces.push(p);
        }
        assert!(matches!(pieces.last(), Some(Piece::End(End::Backpressure))));
    }

    #[tokio::test]
    async fn a_reader_that_catches_up_within_the_grace_loses_nothing() {
        let (outbox, mut drain) = outbox(100, 100_000);
        let reader = tokio::spawn(async move {
            let mut n = 0;
            while let Some(Piece::Data(_)) = drain.next().await {
                n += 1;
                tokio::task::yield_now().await;
            }
            n
        });
        for _ in 0..500 {
            let d = outbox
                .deliver(Bytes::from(vec![b'x'; 60]), Severity::Debug)
                .await;
            assert_eq!(d, Delivery::Queued);
        }
        outbox.end(End::Quiet);
        assert_eq!(reader.await.unwrap(), 500);
        assert_eq!(outbox.dropped(), 0);
    }

    #[tokio::test]
    async fn a_run_goes_out_in_order_in_pieces_of_bounded_size() {
        let (outbox, mut drain) = outbox(1 << 20, 8 << 20);
        let mut run = Run::default();
        for i in 0..300u32 {
            let bytes = Bytes::from(i.to_string());
            assert_eq!(
                outbox.offer_now(&mut run, bytes, Severity::Info).ok(),
                Some(Delivery::Queued)
            );
        }
        // the first 256 were queued as one run; the rest waits for the flush
        let mut got = Vec::new();
        while let Some(Piece::Data(b)) = drain.try_next() {
            got.push(String::from_utf8_lossy(&b).into_owned());
        }
        assert_eq!(got.len(), 256);
        outbox.flush(&mut run);
        while let Some(Piece::Data(b)) = drain.try_next() {
            got.push(String::from_utf8_lossy(&b).into_owned());
        }
        let want: Vec<String> = (0..300).map(|i| i.to_string()).collect();
        assert_eq!(got, want);
    }
}
