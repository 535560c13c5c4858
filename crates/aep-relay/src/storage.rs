//! The replay store behind one trait (AEP-0003 §5): what a relay keeps of each session so
//! that a consumer can resume, and what it promises about it.
//!
//! Two implementations today: the in-memory store (`memory`), the bounded per-session
//! buffers, and the journal (`journal`, `--data-dir`), the same buffers mirrored to one
//! file per session whose admission completes once the batch is on disk. Fan-out,
//! routing and the bindings see only this trait; the hub picks the implementation from
//! the configuration.
//!
//! The contract, and why each part has its shape:
//!
//! - **Admission is a batch, answered later.** [`Storage::admit`] takes a batch of
//!   sequenced session events in order and returns at once; the [`Admitting`] it gives
//!   resolves with one [`Outcome`] per event (held, or a duplicate of a held
//!   `(source, id)`, AEP-0001 §7.4) once the batch is as durable as the store promises,
//!   or with [`Unstored`], and then nothing of the batch is held. A store whose writes
//!   are remote and acknowledged later (a JetStream stream, whose server dedupes) fits
//!   the same shape: the answer is the acknowledgement.
//! - **Stamps order admissions.** Every held event has a [`Stamp`], larger for later
//!   admissions ([`Storage::stamp`] is the latest). The hub reads it while it registers
//!   a subscription, under the same lock live fan-out takes its list of readers under:
//!   a replay bounded by that stamp serves exactly the events fan-out had taken before,
//!   live fan-out everything after, so an event reaches a new subscriber once, never
//!   twice, never not at all. A store served from a stream can use the stream's
//!   sequence.
//! - **Replay is lazy.** [`Storage::replay`] returns a [`Replay`], a stream of runs read
//!   at the reader's pace: nothing of the buffer is copied up front, so a `from=all` over a full
//!   store costs a cursor, not a snapshot of every event. What is evicted before the
//!   reader reaches it is not sent; for a request that names a position the gap is then
//!   declared (`replay-exhausted`) as for one that predates the buffer. A store that
//!   cannot be read ends the replay with an error, which ends the reader's stream: never
//!   a replay cut short in silence.
//! - **Live events come from ingest, or from the backend.** A store that only this relay
//!   writes is a [`Backend`] without a [`Feed`]: the hub fans out what it admits as it
//!   admits it. A store several relays share (a cluster on one stream) gives a feed: every
//!   event admitted on any relay, this one's included, in stamp order, once each. The
//!   hub's ingest then leaves what it stores to the feed (it still routes commands and
//!   fans out the events it does not store), and a live subscription's replay is
//!   bounded by what the feed has delivered: one order, the stream's, in which replay
//!   and live delivery meet, so that each event reaches a new subscriber once. A replay
//!   with nothing live (`live=0`) has nothing to meet and serves what the store holds
//!   when read, so that what got a `2xx` on any relay is in it. The bindings,
//!   routing and fan-out are the same either way. The JetStream store (`nats::store`,
//!   feature `nats`) gives a feed; the hub's tests also drive this path with two
//!   relays on one shared in-memory store.
//! - **A feed nobody reads live may be parked.** A backend may give a [`FeedGate`]
//!   with its feed: the hub parks the feed while the relay has no live subscription
//!   (a relay that only takes events in then costs the stream no delivery of each
//!   one) and opens it when one registers, under the same lock, from the larger of
//!   what the feed had delivered and [`Storage::stamp`]: the subscription's replay is
//!   bounded by that stamp and the feed delivers what follows it, and whatever an
//!   earlier opening had read ahead is dropped ([`Admitted::generation`]).

use std::fmt;
use std::io;
use std::sync::Arc;

use aep_core::resume::{Position, ResumeFrom};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use smallvec::SmallVec;

use crate::encoded::Encoded;

/// An event's place in admission order (see the module documentation).
pub(crate) type Stamp = u64;

/// What admission did with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// New: held for replay.
    Held,
    /// Its `(source, id)` is held already (AEP-0001 §7.4): not held again. Live fan-out
    /// forwards it all the same (AEP-0003 §5: a relay is not a terminal consumer).
    Duplicate,
}

/// One outcome per admitted event, in order; inline for the usual batch (a WebSocket
/// admits one event at a time).
pub(crate) type Outcomes = SmallVec<[Outcome; 8]>;

/// Events accepted but not stored: nothing of the batch is held, and the emitter is
/// not told it was (AEP-0003 §3.2.3: a `2xx` means stored). The store's error says
/// what ran out ([`Unstored::kind`]), which says how the ingest answers.
#[derive(Debug)]
pub(crate) struct Unstored {
    pub(crate) error: io::Error,
}

/// Why a batch was not stored, as the ingest answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnstoredKind {
    /// The store is out of room (a full disk, a quota): `507`.
    Full,
    /// The store cannot be written now (NATS down, no acknowledgement in time, a
    /// write that failed otherwise); the same batch sent again shortly may be stored:
    /// `503`.
    Unavailable,
    /// An event is larger than the store takes: `413`, and the batch is never stored.
    TooLarge,
}

impl Unstored {
    /// Nothing of the batch was stored, for `error`'s reason; its kind says which
    /// answer that is: [`io::ErrorKind::StorageFull`] or `QuotaExceeded` a full store,
    /// [`io::ErrorKind::FileTooLarge`] an event larger than the store takes, anything
    /// else a store that cannot be written now.
    pub(crate) fn new(error: io::Error) -> Unstored {
        Unstored { error }
    }

    /// What ran out, read off the store's error.
    pub(crate) fn kind(&self) -> UnstoredKind {
        match self.error.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => UnstoredKind::Full,
            io::ErrorKind::FileTooLarge => UnstoredKind::TooLarge,
            _ => UnstoredKind::Unavailable,
        }
    }

    /// What the emitter is told, on either ingest binding: why, that nothing of what
    /// it sent was kept, and what to do about it (a retry for `Full` and `Unavailable`,
    /// AEP-0003 §3.2.4; never for `TooLarge`).
    pub(crate) fn detail(&self) -> String {
        let then = match self.kind() {
            UnstoredKind::Full => "send it again",
            UnstoredKind::Unavailable => "send it again shortly",
            UnstoredKind::TooLarge => "split or shrink the event, sending it again fails alike",
        };
        format!("{self}; nothing of it was stored, {then}")
    }
}

impl fmt::Display for Unstored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not stored: {}", self.error)
    }
}

/// A batch being admitted: its outcomes, now or once the store has them.
pub(crate) enum Admitting {
    /// Decided and as durable as promised already.
    Done(Outcomes),
    /// Decided once this resolves.
    Pending(BoxFuture<'static, Result<Outcomes, Unstored>>),
}

impl fmt::Debug for Admitting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Admitting::Done(outcomes) => f.debug_tuple("Done").field(outcomes).finish(),
            Admitting::Pending(_) => f.write_str("Pending"),
        }
    }
}

impl Admitting {
    /// The outcomes, once the batch is stored; or why it was not.
    pub(crate) async fn stored(self) -> Result<Outcomes, Unstored> {
        match self {
            Admitting::Done(outcomes) => Ok(outcomes),
            Admitting::Pending(pending) => pending.await,
        }
    }
}

/// What a replay serves (AEP-0003 §5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReplayFrom {
    /// Every held session from its earliest held event, least recently written first;
    /// never a gap (§5 rule 2).
    All,
    /// These sessions, in this order, each from where its entry says.
    Sessions(Vec<ResumeFrom>),
}

/// One item of a replay.
#[derive(Debug, Clone)]
pub(crate) enum Replayed {
    /// Events of `session` this replay asked for are no longer held; what follows of
    /// it starts at `earliest` (AEP-0003 §5, `replay-exhausted`). When the session was
    /// evicted whole, nothing of what the replay was to serve is held and `earliest` is
    /// the position after the newest of it: the session goes on in live delivery.
    Gap {
        session: Arc<str>,
        earliest: Position,
    },
    /// Held events of `session`, in order: a run of them, as the store reads them
    /// (the session named beside them, so that a reader's filter on it is decided
    /// without reading it back from each frame).
    Events {
        session: Arc<str>,
        events: Vec<Encoded>,
    },
}

/// A replay being served: its items in order, each session's events in `(epoch, seq)`
/// order, produced a run at a time as the reader takes them. An error is a store that
/// could not be read (its server unreachable, a read that broke off): nothing more of
/// this replay can be served, so the reader's stream ends there rather than go on to
/// live delivery past what it was not sent, and the reader resumes from the positions
/// it has (AEP-0003 §7). It is always the replay's last item.
pub(crate) type Replay = BoxStream<'static, io::Result<Replayed>>;

/// The bounds of a replay store (AEP-0003 §5): per session, its oldest events go first;
/// over all, the least recently written sessions. The newest event of a session is
/// always held, whatever its size.
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

/// A replay store (see the module documentation for the contract).
pub(crate) trait Storage: Send + Sync + fmt::Debug {
    /// Admits `events`, sequenced session events (each with a session and a position),
    /// in order.
    fn admit(&self, events: &[&Encoded]) -> Admitting;

    /// The stamp of the latest admission.
    fn stamp(&self) -> Stamp;

    /// The held events `from` asks for, admitted at or before `upto`.
    fn replay(&self, from: ReplayFrom, upto: Stamp) -> Replay;

    /// Sessions held.
    fn sessions(&self) -> usize;

    /// Bytes held for buffered events, as the byte bounds count them.
    fn held_bytes(&self) -> usize;

    /// Waits until everything admitted so far is written as durably as the store can
    /// (a shutdown's last step).
    fn flush(&self) {}

    /// What the store adds to `/healthz` (the cluster's: the stream's messages it
    /// refused); nothing by default.
    fn health(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}

/// Events admitted by any relay sharing a backend, as its [`Feed`] yields them for live
/// fan-out: a run in stamp order, the stamp of its last event, and the opening of the
/// [`FeedGate`] it was read under (0 for a feed without a gate).
#[derive(Debug)]
pub(crate) struct Admitted {
    pub(crate) events: Vec<Encoded>,
    pub(crate) stamp: Stamp,
    pub(crate) generation: u64,
}

/// Whether a relay's feed is read, as the hub last said through its [`FeedGate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gate {
    /// Read from the stamp after this one on; `None`: parked, nothing read.
    pub(crate) after: Option<Stamp>,
    /// Counts the openings: what a feed reads under an opening carries its number
    /// ([`Admitted::generation`]), so that the hub drops what an earlier opening had
    /// read ahead once a later one has started.
    pub(crate) generation: u64,
}

impl Gate {
    /// The feed parked after the gate's opening `generation` (0: not opened yet, a
    /// feed's first state): it reads nothing until the hub opens it again.
    pub(crate) fn parked(generation: u64) -> Gate {
        Gate {
            after: None,
            generation,
        }
    }
}

/// How the hub parks a shared backend's feed while this relay has no live subscription
/// and opens it again, from a stamp, when one comes: a relay nobody reads live from
/// (one that only takes in events) then costs the stream no delivery of every event.
/// The hub opens it under the lock a subscription registers under, from the stamp the
/// subscription's replay is bounded by, so replay and live delivery still meet.
pub(crate) type FeedGate = tokio::sync::watch::Sender<Gate>;

/// What a shared backend yields for live fan-out: every event admitted on any relay
/// after the backend was opened (its [`Storage::stamp`] then; with a [`FeedGate`], after
/// the stamp of the gate's latest opening, and nothing while it is parked), in stamp
/// order, once each, and never before [`Storage::replay`] can serve it; and the redeliveries among
/// them, duplicates of a held `(source, id)` stamped with the held copy's stamp, which
/// fan-out forwards all the same (AEP-0003 §5: a redelivery crosses every hop).
pub(crate) type Feed = BoxStream<'static, Admitted>;

/// A replay store and, when other relays write to it too, the feed of what they all
/// admit (see the module documentation).
pub(crate) struct Backend {
    pub(crate) storage: Box<dyn Storage>,
    pub(crate) feed: Option<Feed>,
    /// With a feed that can be parked: the hub parks it while nobody reads live.
    pub(crate) gate: Option<FeedGate>,
}

impl Backend {
    /// A store only this relay writes: fan-out delivers what ingest admits.
    pub(crate) fn local(storage: impl Storage + 'static) -> Backend {
        Backend {
            storage: Box::new(storage),
            feed: None,
            gate: None,
        }
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backend")
            .field("storage", &self.storage)
            .field("feed", &self.feed.is_some())
            .field("gate", &self.gate.is_some())
            .finish()
    }
}
