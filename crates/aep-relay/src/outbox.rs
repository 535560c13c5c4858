//! The queue toward one SSE subscriber or one WebSocket connection, with backpressure
//! (AEP-0003 §8.4).
//!
//! Ingest pushes; the connection's writer drains. Everything queued counts toward the
//! bounds: events, and the frames the relay writes itself (`pong`, `roster`, `error`,
//! routed commands), each at its length plus a fixed cost per queue item, so a flood of
//! tiny frames is bounded like one of large events.
//!
//! Past the soft bound, one ingest at a time may wait for the reader, at most the lag
//! grace, so a reader that keeps up with a fast producer loses nothing; every other ingest
//! goes on without waiting, and so do the other readers (they were handed the whole batch
//! first). A reader still past the soft bound when the grace ends is lagging: `debug` and
//! `info` are dropped for it, counted, until it has drained to half the soft bound. Past
//! the hard bound it is disconnected: nothing more is queued, the writer gets what was
//! queued out with the close, and a connection that cannot take even that within the
//! drain timeout is dropped ([`Outbox::shed`]), so `notice` and above are never dropped
//! silently and a reader that never reads holds at most the hard bound.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aep_core::Severity;
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use smallvec::SmallVec;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::delivery::{Delivering, Reader};
use crate::encoded::Encoded;
use crate::proto;
use crate::storage::{Replay, Replayed};

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
    /// The replay store could not be read (an error ending its [`Replay`]): the stream
    /// ends so that the reader resumes from its positions (SSE: `: replay-failed`; WS: close
    /// 1011).
    ReplayFailed,
}

/// A replay to run inside the writer, so it is read from the store at the reader's pace
/// and precedes every live event queued after it.
pub(crate) struct ReplayJob {
    pub(crate) replay: Replay,
    /// Whom it is for: each replayed event framed for it (`delivery`).
    pub(crate) reader: Arc<Reader>,
    /// The WebSocket subscription id the markers echo; `None` on SSE.
    pub(crate) sub: Option<String>,
}

impl std::fmt::Debug for ReplayJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayJob")
            .field("reader", &self.reader)
            .field("sub", &self.sub)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(crate) enum Item {
    /// A frame, comment or command: never dropped.
    Frame(Bytes),
    /// A live event.
    Event(Bytes),
    /// Live events offered together, and what they cost.
    Events(Vec<Bytes>, usize),
    Replay(Box<ReplayJob>),
    End(End),
}

/// What one queue item costs beside its bytes: its slot in the channel and the shared
/// handle of its bytes, rounded up (a `pong` is 25 bytes of text in 100 of memory).
const ITEM_COST: usize = 64;
/// What each event of a run costs beside its bytes (its handle in the run's list).
const EVENT_COST: usize = std::mem::size_of::<Bytes>();

/// What queuing `bytes` as a frame costs toward the bounds.
fn frame_cost(bytes: &Bytes) -> usize {
    bytes.len() + ITEM_COST
}

/// What queuing `bytes` as a lone event costs: a run of one.
fn event_cost(bytes: &Bytes) -> usize {
    bytes.len() + EVENT_COST + ITEM_COST
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

impl Run {
    /// What the run costs toward the bounds once queued.
    fn cost(&self) -> usize {
        match self.events.len() {
            0 => 0,
            n => self.bytes + n * EVENT_COST + ITEM_COST,
        }
    }

    /// What adding an event of `len` bytes adds to [`Run::cost`].
    fn cost_of(&self, len: usize) -> usize {
        let first = if self.events.is_empty() { ITEM_COST } else { 0 };
        len + EVENT_COST + first
    }
}

/// A run is queued once it holds this much (the writer's chunk size) ...
const RUN_BYTES: usize = 64 * 1024;
/// ... or this many events, so a reader starts writing while ingest is still fanning out.
const RUN_EVENTS: usize = 256;

/// The backpressure bounds of one queue (AEP-0003 §8.4).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// Past this many bytes queued, `debug`/`info` may be dropped.
    pub(crate) soft: usize,
    /// Past this many, the reader is disconnected.
    pub(crate) hard: usize,
    /// How long one ingest waits for a reader past the soft bound.
    pub(crate) grace: Duration,
}

impl Bounds {
    /// A queue that never lags, drops or disconnects: drained at once by a task that
    /// applies a queue with real bounds downstream.
    pub(crate) const UNBOUNDED: Bounds = Bounds {
        soft: usize::MAX,
        hard: usize::MAX,
        grace: Duration::ZERO,
    };
}

/// The queue toward one reader.
#[derive(Debug)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Item>,
    queued: AtomicUsize,
    lagging: AtomicBool,
    /// An ingest is waiting for this reader: every other one goes on without waiting.
    paced: AtomicBool,
    closed: AtomicBool,
    dropped: AtomicU64,
    progress: Notify,
    /// Cancelled when the reader is disconnected past the hard bound.
    shed: CancellationToken,
    bounds: Bounds,
}

impl Outbox {
    /// A queue with `bounds`; `shed` is cancelled when its reader is disconnected past
    /// the hard bound (the connection's own token, so whoever serves the connection
    /// can drop it).
    pub(crate) fn new(
        bounds: Bounds,
        shed: CancellationToken,
    ) -> (Arc<Outbox>, mpsc::UnboundedReceiver<Item>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let outbox = Outbox {
            tx,
            queued: AtomicUsize::new(0),
            lagging: AtomicBool::new(false),
            paced: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            progress: Notify::new(),
            shed,
            bounds,
        };
        (Arc::new(outbox), rx)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Cancelled once the reader is disconnected past the hard bound: its connection
    /// gets the drain timeout to write what was queued, then is dropped.
    pub(crate) fn shed(&self) -> &CancellationToken {
        &self.shed
    }

    /// Events dropped toward this reader so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Bytes queued toward this reader (as counted for the bounds).
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Whether an item of `cost` may join `queued`: anything fits an empty queue, so one
    /// item larger than the bound still goes out alone.
    fn fits(&self, queued: usize, cost: usize) -> bool {
        queued == 0 || queued.saturating_add(cost) <= self.bounds.hard
    }

    fn enqueue(&self, item: Item, cost: usize) -> bool {
        self.queued.fetch_add(cost, Ordering::AcqRel);
        self.tx.send(item).is_ok()
    }

    /// Disconnects the reader past the hard bound (AEP-0003 §8.4): nothing more is
    /// queued, and whoever serves the connection is told to drop it.
    fn disconnect(&self) {
        tracing::debug!(
            queued = self.queued(),
            "subscriber past the hard bound: disconnecting"
        );
        self.end(End::Backpressure);
        self.shed.cancel();
    }

    /// Queues a frame that must not be dropped; past the hard bound the reader is
    /// disconnected instead. `false` when it was not queued.
    pub(crate) fn push_frame(&self, bytes: Bytes) -> bool {
        if self.is_closed() {
            return false;
        }
        let cost = frame_cost(&bytes);
        if !self.fits(self.queued(), cost) {
            self.disconnect();
            return false;
        }
        self.enqueue(Item::Frame(bytes), cost)
    }

    /// Queues a replay to run in the writer. Its events are read from the store as the
    /// writer takes them, so they do not count toward the bounds.
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

    /// Offers one live event (AEP-0003 §8.4) and queues it, waiting (the lag grace at
    /// most) when the reader must first catch up and no other ingest waits for it.
    pub(crate) async fn deliver(&self, bytes: Bytes, severity: Severity) -> Delivery {
        let mut run = Run::default();
        match self.offer_now(&mut run, bytes, severity) {
            Ok(delivery) => {
                self.flush(&mut run);
                delivery
            }
            Err(pacing) => pacing.run().await,
        }
    }

    /// Offers one live event (AEP-0003 §8.4) as part of `run`, without waiting;
    /// [`Outbox::flush`] queues what is left of the run. The bounds count the run as if
    /// it were queued already.
    ///
    /// `Err` when the reader is past the soft bound, not lagging, and nobody waits for
    /// it yet: the caller now does, through the [`Pacing`] returned, which holds this
    /// event; every later event of the caller's batch for this reader goes to it too, in
    /// order. To every other caller meanwhile the reader is lagging.
    pub(crate) fn offer_now(
        &self,
        run: &mut Run,
        bytes: Bytes,
        severity: Severity,
    ) -> Result<Delivery, Pacing<'_>> {
        self.admit(run, bytes, severity, false).map_err(|bytes| {
            let mut pacing = Pacing {
                outbox: self,
                events: VecDeque::new(),
            };
            pacing.push(bytes, severity);
            pacing
        })
    }

    /// Decides one event. `pacing`: the caller is the one ingest that waits for this
    /// reader; anyone else gets `Err` only after taking that role.
    fn admit(
        &self,
        run: &mut Run,
        bytes: Bytes,
        severity: Severity,
        pacing: bool,
    ) -> Result<Delivery, Bytes> {
        if self.is_closed() {
            *run = Run::default();
            return Ok(Delivery::Closed);
        }
        let queued = self.queued().saturating_add(run.cost());
        if !self.fits(queued, run.cost_of(bytes.len())) {
            // what was offered before goes out ahead of the end
            self.flush(run);
            self.disconnect();
            return Ok(Delivery::Closed);
        }
        if queued > self.bounds.soft {
            let lagging = self.lagging.load(Ordering::Acquire)
                || !(pacing
                    || self
                        .paced
                        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok());
            if !lagging {
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
        let cost = run.cost();
        run.bytes = 0;
        let mut events = std::mem::take(&mut run.events);
        let item = match events.len() {
            0 => return,
            1 => match events.pop() {
                Some(one) => Item::Event(one),
                None => return,
            },
            _ => Item::Events(events.into_vec(), cost),
        };
        self.enqueue(item, cost);
    }

    /// Waits until the writer has brought the queue under the soft bound, or the queue
    /// ended; `false` when `deadline` passed first.
    async fn wait_below_soft(&self, deadline: Instant) -> bool {
        loop {
            let notified = self.progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_closed() || self.queued() <= self.bounds.soft {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.queued() <= self.bounds.soft;
            }
        }
    }

    /// The writer took what cost `cost`.
    fn taken(&self, cost: usize) {
        if cost == 0 {
            return;
        }
        let left = self
            .queued
            .fetch_sub(cost, Ordering::AcqRel)
            .saturating_sub(cost);
        if left <= self.bounds.soft / 2 {
            self.lagging.store(false, Ordering::Release);
        }
        // only a wait for the queue to fall under the soft bound listens (and `notify_waiters`
        // takes a lock): nobody to tell while it stays above
        if left <= self.bounds.soft {
            self.progress.notify_waiters();
        }
    }
}

/// The one ingest waiting for a reader past its soft bound, and the events of its batch
/// that reader has not been given yet, in order. Dropping it lets another ingest wait.
#[derive(Debug)]
pub(crate) struct Pacing<'a> {
    outbox: &'a Outbox,
    events: VecDeque<(Bytes, Severity)>,
}

impl Pacing<'_> {
    /// Holds one more event of the batch for this reader, behind the others.
    pub(crate) fn push(&mut self, bytes: Bytes, severity: Severity) {
        self.events.push_back((bytes, severity));
    }

    /// Queues the held events as the writer makes room, waiting the lag grace at most:
    /// a reader not back under the soft bound by then is lagging and gets the rest as a
    /// lagging reader does. What became of the last event.
    pub(crate) async fn run(mut self) -> Delivery {
        let outbox = self.outbox;
        let deadline = Instant::now() + outbox.bounds.grace;
        let mut run = Run::default();
        let mut last = Delivery::Queued;
        while let Some((bytes, severity)) = self.events.pop_front() {
            match outbox.admit(&mut run, bytes, severity, true) {
                Ok(Delivery::Closed) => return Delivery::Closed,
                Ok(delivery) => last = delivery,
                Err(bytes) => {
                    // the writer can only catch up on what it has been given
                    outbox.flush(&mut run);
                    if !outbox.wait_below_soft(deadline).await {
                        tracing::debug!("subscriber lagging: dropping debug/info for it");
                        outbox.lagging.store(true, Ordering::Release);
                    }
                    self.events.push_front((bytes, severity));
                }
            }
        }
        outbox.flush(&mut run);
        last
    }
}

impl Drop for Pacing<'_> {
    fn drop(&mut self) {
        self.outbox.paced.store(false, Ordering::Release);
    }
}

/// The reading end of an [`Outbox`], driven by the connection's writer.
#[derive(Debug)]
pub(crate) struct Drain {
    rx: mpsc::UnboundedReceiver<Item>,
    outbox: Arc<Outbox>,
    /// The rest of a run taken from the queue.
    run: std::vec::IntoIter<Bytes>,
    /// A replay being written: nothing queued after it goes out before it ends.
    replay: Option<Box<ReplayJob>>,
    /// The run of replayed events being written, and their session.
    replaying: Option<(Arc<str>, std::vec::IntoIter<Encoded>)>,
    heartbeat: Duration,
    next_beat: Instant,
    done: bool,
}

impl Drain {
    /// The writer's end of `outbox` (whose items `rx` receives), a heartbeat every
    /// `heartbeat` while idle.
    pub(crate) fn new(
        rx: mpsc::UnboundedReceiver<Item>,
        outbox: Arc<Outbox>,
        heartbeat: Duration,
    ) -> Drain {
        Drain {
            rx,
            outbox,
            run: Vec::new().into_iter(),
            replay: None,
            replaying: None,
            heartbeat,
            next_beat: Instant::now() + heartbeat,
            done: false,
        }
    }

    /// The next piece to write, waiting for one (a heartbeat when idle); `None` once ended.
    pub(crate) async fn next(&mut self) -> Option<Piece> {
        loop {
            if let Some(ready) = self.ready() {
                return ready;
            }
            let beat = tokio::time::sleep_until(self.next_beat);
            let piece = if let Some(job) = self.replay.as_mut() {
                // a replay precedes whatever was queued after it
                tokio::select! {
                    biased;
                    item = job.replay.next() => self.replayed(item),
                    () = beat => self.beat(),
                }
            } else {
                tokio::select! {
                    item = self.rx.recv() => match item {
                        Some(item) => self.accept(item),
                        None => {
                            self.done = true;
                            return None;
                        }
                    },
                    () = beat => self.beat(),
                }
            };
            if piece.is_some() {
                return piece;
            }
        }
    }

    /// What comes next without asking the queue or the replay: `Some(None)` once
    /// ended, `Some(piece)` from the run being written, `None` when the queue (or the
    /// replay) decides.
    fn ready(&mut self) -> Option<Option<Piece>> {
        if self.done {
            return Some(None);
        }
        if let Some(bytes) = self.run.next() {
            return Some(Some(Piece::Data(bytes)));
        }
        self.next_replayed().map(Some)
    }

    /// The next piece if one is ready now, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<Piece> {
        loop {
            if let Some(ready) = self.ready() {
                return ready;
            }
            let piece = match self.replay.as_mut() {
                // a replay the store has not answered yet holds back what follows it
                Some(job) => {
                    let item = job.replay.next().now_or_never()?;
                    self.replayed(item)
                }
                None => {
                    let item = self.rx.try_recv().ok()?;
                    self.accept(item)
                }
            };
            if piece.is_some() {
                return piece;
            }
        }
    }

    /// A heartbeat, due now.
    fn beat(&mut self) -> Option<Piece> {
        self.next_beat = Instant::now() + self.heartbeat;
        Some(Piece::Heartbeat)
    }

    fn accept(&mut self, item: Item) -> Option<Piece> {
        match item {
            Item::Frame(bytes) => {
                self.outbox.taken(frame_cost(&bytes));
                Some(Piece::Data(bytes))
            }
            Item::Event(bytes) => {
                self.outbox.taken(event_cost(&bytes));
                Some(Piece::Data(bytes))
            }
            Item::Events(events, cost) => {
                self.outbox.taken(cost);
                self.run = events.into_iter();
                self.run.next().map(Piece::Data)
            }
            Item::Replay(job) => {
                self.replay = Some(job);
                // read by the caller's loop, which may wait for the store
                None
            }
            Item::End(how) => {
                self.done = true;
                Some(Piece::End(how))
            }
        }
    }

    /// What to write of one item of the running replay: a gap's marker, or nothing
    /// yet for a run of events (taken up by [`Drain::next_replayed`]) or the end.
    fn replayed(&mut self, item: Option<std::io::Result<Replayed>>) -> Option<Piece> {
        let job = self.replay.as_ref()?;
        match item {
            None => {
                self.replay = None;
                None
            }
            Some(Ok(Replayed::Gap { session, earliest })) => {
                let marker = match &job.sub {
                    Some(sub) => proto::replay_exhausted_frame(sub, &session, earliest),
                    None => proto::replay_exhausted_comment(&session, earliest),
                };
                Some(Piece::Data(Bytes::from(marker)))
            }
            Some(Ok(Replayed::Events { session, events })) => {
                // a filter of the session alone that does not take this one takes
                // nothing of the run
                if job.reader.filter.decide_session(Some(&session)) != Some(false) {
                    self.replaying = Some((session, events.into_iter()));
                }
                None
            }
            Some(Err(e)) => {
                // nothing queued after the replay may go out: live events past what it
                // did not send would move the reader's positions over a hole
                tracing::debug!(error = %e, "a replay failed: the reader's stream ends");
                self.replay = None;
                self.replaying = None;
                self.done = true;
                Some(Piece::End(End::ReplayFailed))
            }
        }
    }

    /// The next event of the replayed run the subscription takes, framed for it; `None`
    /// once the run is spent.
    fn next_replayed(&mut self) -> Option<Piece> {
        let (job, (session, events)) = (self.replay.as_ref()?, self.replaying.as_mut()?);
        for encoded in events.by_ref() {
            if let Some(bytes) = Delivering::stored(&encoded, session).frame_for(&job.reader) {
                return Some(Piece::Data(bytes));
            }
        }
        self.replaying = None;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outbox(soft: usize, hard: usize) -> (Arc<Outbox>, Drain) {
        let bounds = Bounds {
            soft,
            hard,
            grace: Duration::from_millis(20),
        };
        let (outbox, rx) = Outbox::new(bounds, CancellationToken::new());
        let drain = Drain::new(rx, outbox.clone(), Duration::from_secs(60));
        (outbox, drain)
    }

    #[tokio::test]
    async fn a_stalled_reader_loses_info_counted_and_keeps_notice() {
        // each 60-byte event costs 156 toward the bounds: two fit under the soft bound
        let (outbox, mut drain) = outbox(300, 1000);
        let line = Bytes::from(vec![b'x'; 60]);
        let expected = [
            (Severity::Info, Delivery::Queued),
            (Severity::Info, Delivery::Queued),
            // past the soft bound, nobody reading: after the grace it is lagging
            (Severity::Debug, Delivery::Dropped),
            (Severity::Info, Delivery::Dropped),
            (Severity::Notice, Delivery::Queued),
        ];
        for (n, (severity, delivery)) in expected.into_iter().enumerate() {
            let got = outbox.deliver(line.clone(), severity).await;
            assert_eq!(got, delivery, "event {n} ({severity:?})");
        }
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
        // 246 per event: the second passes the soft bound, the third the hard one
        let (outbox, mut drain) = outbox(100, 600);
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
        assert!(outbox.shed().is_cancelled(), "the connection is told to go");
        let mut pieces = Vec::new();
        while let Some(p) = drain.try_next() {
            pieces.push(p);
        }
        assert!(matches!(pieces.last(), Some(Piece::End(End::Backpressure))));
    }

    /// A replay the store could not finish ends the reader's stream where it broke
    /// off: what was queued after it (live events past the hole) never goes out, so
    /// the reader resumes from the positions it has instead of skipping what it missed.
    #[tokio::test]
    async fn a_replay_that_fails_ends_the_stream_before_anything_queued_after_it() {
        let (outbox, mut drain) = outbox(1 << 20, 8 << 20);
        let session: Arc<str> = Arc::from("s");
        let replayed = vec![
            Ok(Replayed::Events {
                session: session.clone(),
                events: vec![crate::encoded::tests::framed("s", "e0", 0, 0)],
            }),
            Err(std::io::Error::other("the store broke off")),
            Ok(Replayed::Events {
                session,
                events: vec![crate::encoded::tests::framed("s", "e1", 0, 1)],
            }),
        ];
        outbox.push_replay(ReplayJob {
            replay: futures::stream::iter(replayed).boxed(),
            reader: Arc::new(Reader {
                filter: crate::proto::Filter::default(),
                capture: None,
                binding: crate::encoded::Binding::Sse,
            }),
            sub: None,
        });
        let live = Bytes::from_static(b"data: live\n\n");
        assert_eq!(outbox.deliver(live, Severity::Info).await, Delivery::Queued);
        let mut pieces = Vec::new();
        while let Some(piece) = drain.try_next() {
            pieces.push(piece);
        }
        assert_eq!(pieces.len(), 2, "{pieces:?}");
        assert!(matches!(&pieces[0], Piece::Data(b) if b.windows(2).any(|w| w == b"e0")));
        assert!(matches!(pieces[1], Piece::End(End::ReplayFailed)));
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

    /// Frames the relay writes itself count like events: a peer that asks for `pong`
    /// after `pong` and never reads is disconnected at the hard bound (AEP-0003 §8.4).
    #[test]
    fn frames_count_toward_the_hard_bound() {
        let (outbox, mut drain) = outbox(1024, 64 * 1024);
        let pong = Bytes::from_static(br#"{"type":"pong","t":1}"#);
        let mut queued = 0;
        while outbox.push_frame(pong.clone()) {
            queued += 1;
            assert!(queued < 10_000, "frames never reached the hard bound");
        }
        assert_eq!(queued, 64 * 1024 / frame_cost(&pong));
        assert!(outbox.is_closed() && outbox.shed().is_cancelled());
        // what was queued goes out, then the end; the count returns to zero
        let mut frames = 0;
        while let Some(piece) = drain.try_next() {
            match piece {
                Piece::Data(_) => frames += 1,
                Piece::End(how) => assert_eq!(how, End::Backpressure),
                Piece::Heartbeat => {}
            }
        }
        assert_eq!(frames, queued);
        assert_eq!(outbox.queued(), 0);
    }

    /// One ingest at a time waits for a reader past the soft bound; to any other that
    /// reader is lagging meanwhile, so the other never waits (AEP-0003 §8.4).
    #[tokio::test]
    async fn only_one_ingest_waits_for_a_reader() {
        let (outbox, mut drain) = outbox(100, 100_000);
        let line = Bytes::from(vec![b'x'; 60]);
        assert_eq!(
            outbox.deliver(line.clone(), Severity::Info).await,
            Delivery::Queued
        );
        let mut first = Run::default();
        let Err(mut pacing) = outbox.offer_now(&mut first, line.clone(), Severity::Info) else {
            panic!("past the soft bound the first ingest waits");
        };
        pacing.push(line.clone(), Severity::Notice);
        let mut second = Run::default();
        let other = |run: &mut Run, severity| outbox.offer_now(run, line.clone(), severity).ok();
        assert_eq!(other(&mut second, Severity::Info), Some(Delivery::Dropped));
        assert_eq!(other(&mut second, Severity::Notice), Some(Delivery::Queued));
        outbox.flush(&mut second);
        assert_eq!(outbox.dropped(), 1);
        // the writer catches up: the waiting ingest queues what it held, in order
        let reader = async {
            let mut n = 0;
            while let Some(Piece::Data(_)) = drain.next().await {
                n += 1;
                if n == 4 {
                    break;
                }
            }
            n
        };
        let (delivery, n) = tokio::join!(pacing.run(), reader);
        assert_eq!((delivery, n), (Delivery::Queued, 4));
        // and released its place: the next ingest past the bound may wait again
        let mut third = Run::default();
        assert!(matches!(
            outbox.offer_now(&mut third, line.clone(), Severity::Info),
            Ok(Delivery::Queued)
        ));
        outbox.flush(&mut third);
        assert!(outbox
            .offer_now(&mut Run::default(), line, Severity::Info)
            .is_err());
    }
}
