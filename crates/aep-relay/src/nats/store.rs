//! The replay store on the cluster's JetStream stream: a [`Storage`] and its
//! [`Feed`](crate::storage::Feed) (see `storage` for the contract), so that any relay
//! of a fleet answers replay and live delivery as a single relay would.
//!
//! - **Admission** publishes the batch, in admission order, each event on its
//!   session's subject with `Nats-Msg-Id` the digest of its `(source, id)`
//!   ([`super::names::message_id`]): JetStream stores it once within the dedupe horizon,
//!   whichever relay it was sent to (AEP-0001 §7.4). The batch resolves once JetStream
//!   has acknowledged every event (a duplicate from the acknowledgement's flag), so a
//!   `202` means stored (AEP-0003 §3.2.3); NATS unreachable, or an acknowledgement not
//!   in time, is [`Unstored`] (`503`), an event larger than the server's `max_payload`
//!   is refused before anything is published (`413`). Batches are sent one after
//!   another by one task, in the order the hub admitted them, and their
//!   acknowledgements awaited meanwhile; the redeliveries among them are announced to
//!   every relay's feed ([`Cluster::announce_duplicates`]).
//! - **Stamps** are stream sequences; the stamp is the latest the relay has seen: its
//!   own acknowledgements, its feed, and the stream's last sequence read every 2 s
//!   (what a parked feed opens after, so that a new live reader starts from about
//!   now, not from where the feed was parked).
//! - **Replay** reads the stream: a session's subject (the stream keeps its newest
//!   `--buffer` events, `max_messages_per_subject`), in `(epoch, seq)` order, from its
//!   `from` position, with `replay-exhausted` when what was asked for was dropped;
//!   `from=all`, every session's subject in stream order (admission order), never a gap.
//!   A read that fails ends the replay with an error (the reader's stream
//!   ends and it resumes), never a replay cut short in silence.
//! - **The feed** is [`feed::feed`]: every relay's admissions, this one's included,
//!   while the hub keeps its gate open (a live subscription on this relay); parked,
//!   the stream delivers nothing to this relay.

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aep_core::resume::{Position, ResumeFrom};
use aep_core::{EnvelopeView, Event};
use futures::{FutureExt, StreamExt};
use tokio::sync::{mpsc, oneshot};

use super::cluster::{block_on_runtime, Cluster, ClusterError, NatsOptions, Outgoing, Published};
use super::feed::{self, Refused, Via};
use super::names::{message_id, StreamName};
use crate::encoded::Encoded;
use crate::storage::{
    Admitting, Backend, FeedGate, Outcome, Outcomes, Replay, ReplayFrom, Replayed, Stamp, Storage,
    Unstored,
};

/// How often the session and byte counts of `/healthz` are read from the stream.
const COUNTS_EVERY: Duration = Duration::from_secs(2);

/// Connects as `options` say (the stream checked against the relay's `--buffer`) and
/// opens the store and its feed. Blocking: it runs the connection on the current tokio
/// runtime from a thread of its own, so it may be called from anywhere in one.
pub(crate) fn open(options: &NatsOptions) -> std::io::Result<Backend> {
    let (store, feed, gate) = block_on_runtime(NatsStore::open(options))?;
    Ok(Backend {
        storage: Box::new(store),
        feed: Some(feed),
        gate: Some(gate),
    })
}

/// One batch for the publishing task.
struct Job {
    events: Vec<Encoded>,
    done: oneshot::Sender<Result<Vec<Published>, ClusterError>>,
}

/// The store: the connection, the publishing task's queue, and what was last seen.
#[derive(Debug)]
pub(crate) struct NatsStore {
    cluster: Cluster,
    jobs: mpsc::UnboundedSender<Job>,
    stamp: Arc<AtomicU64>,
    counts: Arc<Counts>,
    /// The stream's messages that failed the acceptance of ingest (`feed::accept`), in
    /// the feed and in replays.
    refused: Arc<Refused>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("events", &self.events.len())
            .finish()
    }
}

/// The stream's sessions and bytes, as last read.
#[derive(Debug, Default)]
struct Counts {
    sessions: AtomicUsize,
    bytes: AtomicUsize,
}

impl NatsStore {
    /// Connects and checks the stream, then starts the publishing task, the feed (parked
    /// until its gate opens it, from the stream's last sequence now at the earliest: the
    /// store's stamp) and the counts' refresher.
    pub(crate) async fn open(
        options: &NatsOptions,
    ) -> Result<(NatsStore, crate::storage::Feed, FeedGate), ClusterError> {
        let cluster = Cluster::connect(options).await?;
        let last = cluster.last_sequence().await?;
        let stamp = Arc::new(AtomicU64::new(last));
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(publish(cluster.clone(), queue, stamp.clone()));
        let counts = Arc::new(Counts::default());
        tokio::spawn(refresh_counts(
            cluster.clone(),
            Arc::downgrade(&counts),
            stamp.clone(),
        ));
        let refused = Arc::new(Refused::default());
        let (feed, gate) = feed::feed(cluster.clone(), stamp.clone(), refused.clone());
        let store = NatsStore {
            cluster,
            jobs,
            stamp,
            counts,
            refused,
        };
        Ok((store, feed, gate))
    }
}

/// Publishes the batches in the order they were admitted, each acknowledged while the
/// next is sent; answers each with its acknowledgements and announces its redeliveries.
async fn publish(cluster: Cluster, mut queue: mpsc::UnboundedReceiver<Job>, stamp: Arc<AtomicU64>) {
    while let Some(job) = queue.recv().await {
        let mut subjects = Subjects::default();
        let batch: Vec<Outgoing> = job
            .events
            .iter()
            .map(|event| outgoing(cluster.name(), event, &mut subjects))
            .collect();
        // Sending waits only for room in the client's queue, which a connection lost
        // mid-batch stops draining: past the timeout the batch is answered 503 (what
        // was sent of it is stored once, whenever it goes, and a retry is deduped).
        let sent = tokio::time::timeout(cluster.timeout(), cluster.send(&batch)).await;
        let acks = match sent {
            Ok(Ok(acks)) => acks,
            Ok(Err(e)) => {
                let _ = job.done.send(Err(e));
                continue;
            }
            Err(_) => {
                let late = ClusterError::Publish {
                    reason: format!(
                        "the batch could not be sent within {} ms",
                        cluster.timeout().as_millis()
                    ),
                };
                let _ = job.done.send(Err(late));
                continue;
            }
        };
        let cluster = cluster.clone();
        let stamp = stamp.clone();
        tokio::spawn(async move {
            let published = acks.await;
            if let Ok(published) = &published {
                if let Some(last) = published.iter().map(|p| p.sequence).max() {
                    stamp.fetch_max(last, Ordering::AcqRel);
                }
                let again: Vec<_> = batch
                    .iter()
                    .zip(published)
                    .filter(|(_, p)| p.duplicate)
                    .map(|(m, p)| (m, p.sequence))
                    .collect();
                if !again.is_empty() {
                    // at most once, as a single relay's live fan-out is: stored already
                    if let Err(e) = cluster.announce_duplicates(&again).await {
                        tracing::warn!(error = %e, "announcing redeliveries to the cluster");
                    }
                }
            }
            let _ = job.done.send(published);
        });
    }
}

/// Reads the stream's session and byte counts every [`COUNTS_EVERY`] while the store
/// lives, and raises the stamp to its last sequence: while the feed is parked nothing
/// else moves it for the other relays' events, and the next live subscription's feed
/// starts after it (a replay up to it serves what is before: all of it is stored).
async fn refresh_counts(cluster: Cluster, counts: std::sync::Weak<Counts>, stamp: Arc<AtomicU64>) {
    loop {
        let Some(held) = counts.upgrade() else { return };
        let mut stream = cluster.stream().clone();
        if let Ok(info) = stream.info().await {
            let narrow = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
            held.sessions
                .store(narrow(info.state.subjects_count), Ordering::Relaxed);
            held.bytes
                .store(narrow(info.state.bytes), Ordering::Relaxed);
            stamp.fetch_max(info.state.last_sequence, Ordering::AcqRel);
        }
        drop(held);
        tokio::time::sleep(COUNTS_EVERY).await;
    }
}

/// The subject of the session last published to: a batch is mostly one session's.
#[derive(Debug, Default)]
struct Subjects {
    last: Option<(String, async_nats::Subject)>,
}

impl Subjects {
    fn of(&mut self, name: &StreamName, session: &str) -> async_nats::Subject {
        match &self.last {
            Some((last, subject)) if last == session => subject.clone(),
            _ => {
                let subject = async_nats::Subject::from(name.session_subject(session));
                self.last = Some((session.to_owned(), subject.clone()));
                subject
            }
        }
    }
}

/// The message of one sequenced session event: its session's subject, the digest of
/// its `(source, id)`, its JSON as received.
fn outgoing(name: &StreamName, event: &Encoded, subjects: &mut Subjects) -> Outgoing {
    let json = event.json();
    // read back from the JSON rather than kept beside every event of every store: only
    // this store needs them
    let read = std::str::from_utf8(&json)
        .ok()
        .and_then(EnvelopeView::read)
        .map(|view| message_id(view.source(), view.id()));
    let id = read.unwrap_or_else(|| match Event::from_slice(&json) {
        Ok(parsed) => message_id(parsed.source(), parsed.id()),
        // never: the event was checked at ingest. Its framing's digest still dedupes a
        // retry to this relay.
        Err(_) => format!("{:016x}{:016x}", event.key().0, event.key().1),
    });
    Outgoing {
        subject: subjects.of(name, event.session().unwrap_or_default()),
        message_id: id,
        payload: json,
    }
}

/// What a failed admission answers (`storage::Unstored`): an event past the server's
/// `max_payload` larger than the store takes, anything else a store unreachable now.
fn unstored(error: ClusterError) -> Unstored {
    let kind = match error {
        ClusterError::TooLarge { .. } => io::ErrorKind::FileTooLarge,
        _ => io::ErrorKind::Other,
    };
    Unstored::new(io::Error::new(kind, error.to_string()))
}

/// What an admission answers once the publishing task has stopped (the relay stops).
fn stopped() -> Unstored {
    Unstored::new(io::Error::other("the relay's NATS publisher has stopped"))
}

impl Storage for NatsStore {
    fn admit(&self, events: &[&Encoded]) -> Admitting {
        let (done, answer) = oneshot::channel();
        let job = Job {
            events: events.iter().map(|e| (*e).clone()).collect(),
            done,
        };
        if self.jobs.send(job).is_err() {
            return Admitting::Pending(Box::pin(async move { Err(stopped()) }));
        }
        Admitting::Pending(
            answer
                .map(|answer| match answer {
                    Ok(Ok(published)) => Ok(published
                        .iter()
                        .map(|p| {
                            if p.duplicate {
                                Outcome::Duplicate
                            } else {
                                Outcome::Held
                            }
                        })
                        .collect::<Outcomes>()),
                    Ok(Err(e)) => Err(unstored(e)),
                    Err(_) => Err(stopped()),
                })
                .boxed(),
        )
    }

    fn stamp(&self) -> Stamp {
        self.stamp.load(Ordering::Acquire)
    }

    fn replay(&self, from: ReplayFrom, upto: Stamp) -> Replay {
        let cluster = self.cluster.clone();
        let refused = self.refused.clone();
        match from {
            ReplayFrom::All => replay_all(cluster, refused, upto),
            ReplayFrom::Sessions(sessions) => futures::stream::iter(sessions)
                .then(move |from| replay_session(cluster.clone(), refused.clone(), from, upto))
                .flat_map(futures::stream::iter)
                .boxed(),
        }
    }

    fn sessions(&self) -> usize {
        self.counts.sessions.load(Ordering::Relaxed)
    }

    fn held_bytes(&self) -> usize {
        self.counts.bytes.load(Ordering::Relaxed)
    }

    fn health(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut health = serde_json::Map::new();
        health.insert("stream_refused".into(), self.refused.to_json().into());
        health
    }
}

/// Every session's held events through `upto`, in stream order, a run per session
/// while consecutive events share one; never a gap (AEP-0003 §5 rule 2). What fails
/// ingest's acceptance is skipped and counted in `refused` (`feed::accept`).
fn replay_all(cluster: Cluster, refused: Arc<Refused>, upto: Stamp) -> Replay {
    let wildcard = cluster.name().sessions_wildcard();
    let name = cluster.name().clone();
    futures::stream::once(async move { cluster.read(&wildcard, 1, upto).await })
        .flat_map(|read| match read {
            Ok(read) => read.ready_chunks(RUN).boxed(),
            Err(e) => futures::stream::iter([vec![Err(e)]]).boxed(),
        })
        .map(move |chunk| {
            let mut runs: Vec<io::Result<Replayed>> = Vec::new();
            for stored in chunk {
                let stored = match stored {
                    Ok(stored) => stored,
                    Err(e) => {
                        // the reader's stream ends here (storage::Replay)
                        tracing::warn!(error = %e, "replaying from NATS failed: the reader's stream ends");
                        runs.push(Err(io::Error::other(e)));
                        break;
                    }
                };
                let Some(event) =
                    feed::accept(&name, Via::Stored, &stored.subject, &stored.payload, &refused)
                else {
                    continue;
                };
                let Some(session) = event.session() else {
                    continue;
                };
                match runs.last_mut() {
                    Some(Ok(Replayed::Events { session: s, events })) if **s == *session => {
                        events.push(event)
                    }
                    _ => runs.push(Ok(Replayed::Events {
                        session: Arc::from(session),
                        events: vec![event],
                    })),
                }
            }
            futures::stream::iter(runs)
        })
        .flatten()
        .boxed()
}

/// Events one replay reads ahead at a time.
const RUN: usize = 256;

/// What `from` asks of one session, through `upto`: its held events after its
/// position in `(epoch, seq)` order, preceded by a gap when the oldest held is past
/// what was asked for (AEP-0003 §5, `replay-exhausted`). A session holds at most
/// `--buffer` events, read whole. What fails ingest's acceptance is skipped and counted
/// in `refused` (`feed::accept`).
async fn replay_session(
    cluster: Cluster,
    refused: Arc<Refused>,
    from: ResumeFrom,
    upto: Stamp,
) -> Vec<io::Result<Replayed>> {
    let subject = cluster.name().session_subject(from.session());
    let mut events = Vec::new();
    let read = match cluster.read(&subject, 1, upto).await {
        Ok(mut read) => loop {
            match read.next().await {
                Some(Ok(stored)) => events.extend(feed::accept(
                    cluster.name(),
                    Via::Stored,
                    &stored.subject,
                    &stored.payload,
                    &refused,
                )),
                Some(Err(e)) => break Err(e),
                None => break Ok(()),
            }
        },
        Err(e) => Err(e),
    };
    if let Err(e) = read {
        // what was read is not served either: the reader resumes from its position
        tracing::warn!(error = %e, session = from.session(), "replaying from NATS failed: the reader's stream ends");
        return vec![Err(io::Error::other(e))];
    }
    // stream order is admission order; two relays may have admitted a session's
    // events out of position order
    events.sort_by_key(|e: &Encoded| e.position().unwrap_or(Position::new(0, 0)));
    let session: Arc<str> = Arc::from(from.session());
    let start = from.start();
    let mut out = Vec::new();
    if let Some(earliest) = events.first().and_then(Encoded::position) {
        if start.declares_gap(earliest) {
            out.push(Ok(Replayed::Gap {
                session: session.clone(),
                earliest,
            }));
        }
    }
    let wanted: Vec<Encoded> = events
        .into_iter()
        .filter(|e| e.position().is_some_and(|p| start.includes(p)))
        .collect();
    for run in wanted.chunks(RUN) {
        out.push(Ok(Replayed::Events {
            session: session.clone(),
            events: run.to_vec(),
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use aep_core::resume::ReplayStart;
    use aep_test_support::nats::NatsServer;

    use super::*;
    use crate::nats::names::StreamName;

    fn options(url: &str) -> NatsOptions {
        let cluster = crate::NatsCluster::new(url)
            .stream("STORE")
            .timeout(Duration::from_secs(1));
        NatsOptions::new(&cluster, 100).unwrap()
    }

    fn event(id: &str, seq: u64) -> Encoded {
        let json = format!(
            r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"s","seq":{seq},"data":{{}}}}"#
        );
        crate::line::parse_line(json.as_bytes(), false)
            .unwrap()
            .encoded
    }

    async fn replayed(store: &NatsStore, from: ReplayFrom) -> Vec<std::io::Result<Replayed>> {
        let replay = store.replay(from, Stamp::MAX).collect();
        tokio::time::timeout(Duration::from_secs(20), replay)
            .await
            .expect("a replay that ends within 20 s")
    }

    fn served(items: &[std::io::Result<Replayed>]) -> (usize, bool) {
        let events = items
            .iter()
            .map(|item| match item {
                Ok(Replayed::Events { events, .. }) => events.len(),
                _ => 0,
            })
            .sum();
        (events, matches!(items.last(), Some(Err(_))))
    }

    /// An event's `Nats-Msg-Id` is the digest of its `(source, id)` however its JSON
    /// spells them: an escape (which the in-place reading leaves to the parser) gives
    /// the same id, so a retry to another relay is deduped all the same (AEP-0001 §7.4).
    #[test]
    fn the_message_id_is_the_digest_of_source_and_id_however_spelt() {
        let name = StreamName::parse("STORE").unwrap();
        let mut subjects = Subjects::default();
        let plain = outgoing(&name, &event("e1", 1), &mut subjects);
        assert_eq!(plain.message_id, message_id("aep://t/agent/a", "e1"));
        let json = String::from_utf8(event("e1", 1).json().to_vec())
            .unwrap()
            .replace(r#""id":"e1""#, r#""id":"\u00651""#);
        let escaped = crate::line::parse_line(json.as_bytes(), false)
            .unwrap()
            .encoded;
        assert!(EnvelopeView::read(std::str::from_utf8(&escaped.json()).unwrap()).is_none());
        assert_eq!(
            outgoing(&name, &escaped, &mut subjects).message_id,
            plain.message_id
        );
        assert_eq!(plain.subject.as_str(), name.session_subject("s"));
        // the subject kept for the last session is never another session's
        let other = String::from_utf8(event("e2", 2).json().to_vec())
            .unwrap()
            .replace(r#""session":"s""#, r#""session":"t""#);
        let other = crate::line::parse_line(other.as_bytes(), false)
            .unwrap()
            .encoded;
        let subject = |event: &Encoded, subjects: &mut Subjects| {
            outgoing(&name, event, subjects).subject.to_string()
        };
        assert_eq!(subject(&other, &mut subjects), name.session_subject("t"));
        assert_eq!(
            subject(&event("e3", 3), &mut subjects),
            name.session_subject("s")
        );
    }

    /// A replay the stream cannot answer (NATS down) is declared, as its last item,
    /// never cut short in silence: a reader told nothing would take the live events
    /// that follow and move its position past what it missed.
    #[tokio::test]
    async fn a_replay_nats_cannot_answer_ends_failed() {
        let Some(mut server) = NatsServer::start_or_skip() else {
            return;
        };
        let (store, _feed, _gate) = NatsStore::open(&options(&server.url())).await.unwrap();
        let batch = [event("e0", 0), event("e1", 1)];
        store
            .admit(&batch.iter().collect::<Vec<_>>())
            .stored()
            .await
            .unwrap();
        let session = || {
            ReplayFrom::Sessions(vec![ResumeFrom::new(
                "s",
                ReplayStart::After(Position::new(0, 0)),
            )])
        };
        assert_eq!(served(&replayed(&store, session()).await), (1, false));
        assert_eq!(served(&replayed(&store, ReplayFrom::All).await), (2, false));

        server.kill();
        for _ in 0..2000 {
            if !store.cluster.is_connected() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(served(&replayed(&store, session()).await), (0, true));
        assert_eq!(served(&replayed(&store, ReplayFrom::All).await), (0, true));
    }
}
