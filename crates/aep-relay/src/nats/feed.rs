//! The live feed of a relay of the cluster: every event any relay of the fleet admits,
//! this relay's own included, for live fan-out (AEP-0003 §5: a reader on relay B
//! receives what relay A took), as the storage contract's `Feed` asks (`storage`).
//!
//! The hub parks it while this relay has no live subscription (its gate,
//! `storage::FeedGate`): the consumer is dropped, so the stream delivers nothing to a
//! relay nobody reads from live, and each opening starts a consumer from the sequence
//! after the one the hub names (what the new subscription's replay covers). While
//! open, two sources, merged in one task:
//!
//! - the stored events, in stream order, from an ordered push consumer (the server
//!   pushes them as it stores them, flow-controlled, rather than in pulled windows;
//!   the client recreates it across a gap or a reconnect) on every session's subject,
//!   starting after the stream sequence the gate's opening names (the bound of the
//!   replay of the subscription that opened it, so that what replays serve and what
//!   the feed delivers meet without a gap or an overlap). Whatever ends or breaks the
//!   consumer (a reconnect, a server restart), the task creates it again from the
//!   sequence after the last one it delivered, and skips anything at or before it: no
//!   gap, no repeat;
//! - the redeliveries the relays announce ([`Cluster::announce_duplicates`]), which
//!   JetStream never delivers to a consumer but fan-out forwards all the same. Each is
//!   stamped with the last sequence fed, so it never moves the bound a new
//!   subscription's replay takes from the feed past what the consumer has delivered;
//!   and each is forwarded only once the consumer has delivered its stored copy (the
//!   sequence its announcement names), held until then ([`Held`]). A redelivery that
//!   overtook its original handed a reader a session's later event before the earlier
//!   ones still on their way from the stream (AEP-0001 §7, AEP-0003 §7: a session's
//!   events in `seq` order): the WebSocket sink's re-claim after a reconnect sends the
//!   session's last event again at once, and its announcement outran the consumer on a
//!   loaded relay. A single relay forwards a duplicate after its original, always.
//!
//! **The stream is a trust boundary** (issue 31): any NATS client allowed to publish on
//! the fleet's subjects can put a message there, so nothing read from it is delivered
//! on the word of whoever wrote it. Every message, of the feed, of the announced
//! redeliveries and of a replay (`store`), passes [`accept`]: the acceptance of HTTP
//! ingest itself (`line::parse_line`, the envelope rules of `proto`, not a copy), then
//! what ingest would have stored (a sequenced session event: never a command or a
//! live event), on its session's subject. What fails is never delivered, counted per
//! kind (`/healthz`'s `stream_refused`) and logged once per kind; an announcement
//! that does not say where its stored copy is (`Aep-Seq`) is `unplaced`. The NATS
//! authorization that keeps everyone but the fleet's relays off the subjects is the
//! README's ("Scaling out").

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer;
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::cluster::{Cluster, SEQUENCE_HEADER};
use super::names::{session_token, StreamName};
use crate::encoded::Encoded;
use crate::line::{parse_line, LineError};
use crate::proto::Disposition;
use crate::storage::{Admitted, Feed, FeedGate, Gate};

/// Stored events read ahead of fan-out per run.
const RUN: usize = 256;

/// How long the feed waits before creating its consumer again after a failure.
const RETRY: Duration = Duration::from_millis(250);

/// How often the feed looks at the connection, to resume as soon as it is back.
const WATCH: Duration = Duration::from_millis(100);

/// Most announced redeliveries held for their stored copies at once (see [`Held`]).
const HELD: usize = 4096;

/// The feed of `cluster` and its gate: parked until the hub opens the gate, then from
/// the stream sequence after the one the gate names; `stamp` is raised to each sequence
/// delivered; what [`accept`] refuses is counted in `refused`. It runs until its
/// receiver or its gate is dropped.
pub(crate) fn feed(
    cluster: Cluster,
    stamp: Arc<AtomicU64>,
    refused: Arc<Refused>,
) -> (Feed, FeedGate) {
    let (gate, opened) = watch::channel(Gate::parked(0));
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(run(cluster, stamp, refused, opened, tx));
    (Box::pin(rx), gate)
}

/// Why a message read from the stream is not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not JSON (or not UTF-8): ingest's `400` `bad-json`.
    NotJson,
    /// JSON, but an envelope ingest refuses (`400` `invalid-event`): a command with a
    /// `seq`, a missing attribute, a bad type, ...
    InvalidEvent,
    /// An envelope ingest accepts but never stores: a command, an agent-scoped or
    /// unsequenced event (live only), which no relay publishes to the stream.
    NotStored,
    /// A stored event on a subject that is not its session's (a relay publishes each on
    /// its own session's, `names::session_token`): it would be replayed under the wrong
    /// session.
    WrongSubject,
    /// An announced redelivery without the stream sequence of its stored copy
    /// (`Aep-Seq`, which every relay writes): the feed cannot tell whether it would
    /// overtake its original.
    Unplaced,
}

impl Refusal {
    const ALL: [Refusal; 5] = [
        Refusal::NotJson,
        Refusal::InvalidEvent,
        Refusal::NotStored,
        Refusal::WrongSubject,
        Refusal::Unplaced,
    ];

    /// Its name in `/healthz` and the log.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::NotJson => "not-json",
            Refusal::InvalidEvent => "invalid-event",
            Refusal::NotStored => "not-stored",
            Refusal::WrongSubject => "wrong-subject",
            Refusal::Unplaced => "unplaced",
        }
    }
}

/// The messages of the stream refused since the relay started, per kind; each kind is
/// logged the first time only (a poisoned stream replayed by every reader would
/// otherwise write its every message into the log).
#[derive(Debug, Default)]
pub(crate) struct Refused {
    counts: [AtomicU64; 5],
    told: [AtomicBool; 5],
}

impl Refused {
    fn note(&self, kind: Refusal, subject: &str, detail: &str) {
        let at = kind as usize;
        self.counts[at].fetch_add(1, Ordering::Relaxed);
        if !self.told[at].swap(true, Ordering::Relaxed) {
            tracing::warn!(
                kind = kind.as_str(),
                %subject,
                detail,
                "a message of the NATS stream fails the relay's acceptance: not delivered, counted in /healthz (stream_refused); further ones of this kind are counted, not logged. Is something other than the fleet's relays publishing to the stream? See the README's NATS authorization"
            );
        }
    }

    /// How many of each kind.
    pub(crate) fn count(&self, kind: Refusal) -> u64 {
        self.counts[kind as usize].load(Ordering::Relaxed)
    }

    /// `/healthz`'s `stream_refused`: the count of each kind.
    pub(crate) fn to_json(&self) -> Map<String, Value> {
        Refusal::ALL
            .iter()
            .map(|kind| (kind.as_str().to_owned(), Value::from(self.count(*kind))))
            .collect()
    }
}

/// Where a message was read: the stream's subjects, or the announced redeliveries'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// `{stream}.s.{token}`: the feed and replays.
    Stored,
    /// `{stream}.d.{token}`: a relay's announcement of a redelivery.
    Announced,
}

/// An event read from the stream on `subject`, delivered only if HTTP ingest would have
/// accepted and stored it there: the same acceptance (`line::parse_line`, which runs
/// `proto`'s envelope rules), a sequenced session event, on its session's subject. What
/// fails is counted in `refused` (see the module documentation) and `None`.
pub(crate) fn accept(
    name: &StreamName,
    via: Via,
    subject: &str,
    payload: &[u8],
    refused: &Refused,
) -> Option<Encoded> {
    let incoming = match parse_line(payload, false) {
        Ok(incoming) => incoming,
        Err(LineError::Json(detail)) => {
            refused.note(Refusal::NotJson, subject, &detail);
            return None;
        }
        Err(LineError::Invalid(detail)) => {
            refused.note(Refusal::InvalidEvent, subject, &detail);
            return None;
        }
    };
    if incoming.disposition != Disposition::Buffered {
        let detail = format!("{:?}", incoming.disposition);
        refused.note(Refusal::NotStored, subject, &detail);
        return None;
    }
    let session = incoming.session().unwrap_or_default();
    let kind = match via {
        Via::Stored => "s",
        Via::Announced => "d",
    };
    let on_its_subject = subject
        .strip_prefix(name.as_str())
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(|rest| rest.strip_prefix(kind))
        .and_then(|rest| rest.strip_prefix('.'))
        .is_some_and(|token| token == session_token(session));
    if !on_its_subject {
        let detail = format!("session {session:?}");
        refused.note(Refusal::WrongSubject, subject, &detail);
        return None;
    }
    Some(incoming.encoded)
}

/// A relay's announced redelivery that [`accept`] takes, and the stream sequence of its
/// stored copy; `None` (counted) otherwise.
fn read_announcement(
    cluster: &Cluster,
    refused: &Refused,
    message: &async_nats::Message,
) -> Option<(u64, Encoded)> {
    let event = accept(
        cluster.name(),
        Via::Announced,
        &message.subject,
        &message.payload,
        refused,
    )?;
    let sequence = message
        .headers
        .as_ref()
        .and_then(|headers| headers.get(SEQUENCE_HEADER))
        .and_then(|value| value.as_str().parse::<u64>().ok());
    let Some(sequence) = sequence else {
        refused.note(Refusal::Unplaced, &message.subject, "no Aep-Seq header");
        return None;
    };
    Some((sequence, event))
}

/// Forwards redeliveries (at the stamp fed last, under the gate's current opening);
/// `false` once the relay has stopped.
async fn forward(
    events: Vec<Encoded>,
    delivered: u64,
    generation: u64,
    tx: &mut mpsc::Sender<Admitted>,
) -> bool {
    if events.is_empty() {
        return true;
    }
    let again = Admitted {
        events,
        stamp: delivered,
        generation,
    };
    tx.send(again).await.is_ok()
}

/// The announced redeliveries whose stored copy the consumer has not delivered yet, by
/// that copy's stream sequence: each goes out right after the run that delivers it (or
/// goes past it, the copy dropped meanwhile), never before, so a reader gets a
/// session's events in stream order and each redelivery after its original, as a
/// single relay forwards them. At most [`HELD`]: past that an announcement is let go,
/// which loses no event (its stored copy is delivered, in order), only a copy.
#[derive(Debug, Default)]
struct Held {
    by_sequence: BTreeMap<u64, Vec<Encoded>>,
    len: usize,
}

impl Held {
    /// What to forward now of a redelivery whose stored copy is at `sequence`, the
    /// consumer having delivered through `delivered`: the event itself when its copy was
    /// delivered already, else nothing (it is held, or let go when full).
    fn place(&mut self, sequence: u64, event: Encoded, delivered: u64) -> Option<Encoded> {
        if sequence <= delivered {
            return Some(event);
        }
        if self.len >= HELD {
            tracing::debug!(
                sequence,
                "announced redeliveries held to the bound: one let go"
            );
            return None;
        }
        self.by_sequence.entry(sequence).or_default().push(event);
        self.len += 1;
        None
    }

    /// The held redeliveries whose stored copies the consumer has now delivered (through
    /// `delivered`), in stream order of those copies.
    fn release(&mut self, delivered: u64) -> Vec<Encoded> {
        if self.len == 0 {
            return Vec::new();
        }
        let later = self.by_sequence.split_off(&delivered.saturating_add(1));
        let due = std::mem::replace(&mut self.by_sequence, later);
        let events: Vec<Encoded> = due.into_values().flatten().collect();
        self.len -= events.len();
        events
    }
}

async fn run(
    cluster: Cluster,
    stamp: Arc<AtomicU64>,
    refused: Arc<Refused>,
    mut gate: watch::Receiver<Gate>,
    mut tx: mpsc::Sender<Admitted>,
) {
    // subscribed before the consumer starts: no redelivery is missed meanwhile
    let mut duplicates = loop {
        match cluster
            .client()
            .subscribe(cluster.name().duplicates_wildcard())
            .await
        {
            Ok(subscription) => break subscription,
            Err(e) => {
                tracing::warn!(error = %e, "subscribing to the cluster's redeliveries; retrying");
                tokio::time::sleep(RETRY).await;
            }
        }
    };
    let mut delivered = 0;
    let mut generation = 0;
    loop {
        // Parked until the hub opens the gate (a live subscription registers): nothing
        // is read from the stream meanwhile. A redelivery is still forwarded, under the
        // current opening (the hub drops it if nobody reads).
        let opened = loop {
            let now = *gate.borrow_and_update();
            if let Some(after) = now.after {
                break (after, now.generation);
            }
            tokio::select! {
                changed = gate.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                announced = duplicates.next() => {
                    let Some(message) = announced else {
                        tracing::warn!("the cluster's redeliveries are no longer received");
                        return;
                    };
                    // nobody reads live while parked: no order to keep
                    let events = read_announcement(&cluster, &refused, &message).map(|(_, e)| e);
                    if !forward(events.into_iter().collect(), delivered, now.generation, &mut tx).await {
                        return;
                    }
                }
            }
        };
        // a new opening reads from where it says; the same one again goes on from
        // where the feed was
        if opened.1 != generation {
            (delivered, generation) = opened;
        }
        if !read(
            &cluster,
            &stamp,
            &refused,
            &mut gate,
            &mut duplicates,
            &mut tx,
            &mut delivered,
            generation,
        )
        .await
        {
            return;
        }
    }
}

/// Reads the stream from `delivered + 1` under opening `generation` until the gate
/// changes (`true`) or the relay has stopped (`false`). Whatever ends or breaks the
/// consumer, it is created again from the sequence after the last one delivered.
#[allow(clippy::too_many_arguments)] // the feed task's state, lent for one reading
async fn read(
    cluster: &Cluster,
    stamp: &AtomicU64,
    refused: &Refused,
    gate: &mut watch::Receiver<Gate>,
    duplicates: &mut async_nats::Subscriber,
    tx: &mut mpsc::Sender<Admitted>,
    delivered: &mut u64,
    generation: u64,
) -> bool {
    // kept across a consumer created again: the same opening goes on
    let mut held = Held::default();
    loop {
        match gate.has_changed() {
            Ok(false) => {}
            Ok(true) => return true,
            // the hub is gone
            Err(_) => return false,
        }
        let created = cluster
            .stream()
            .create_consumer(consumer::push::OrderedConfig {
                deliver_subject: cluster.client().new_inbox(),
                filter_subject: cluster.name().sessions_wildcard(),
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: delivered.saturating_add(1),
                },
                ..Default::default()
            })
            .await;
        let messages = match created {
            Ok(consumer) => consumer.messages().await,
            Err(e) => {
                tracing::warn!(error = %e, from = *delivered + 1, "creating the live feed's consumer; retrying");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let mut messages = match messages {
            Ok(messages) => messages.ready_chunks(RUN),
            Err(e) => {
                tracing::warn!(error = %e, "reading the live feed; retrying");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        // A server restart loses the consumer without ending its stream until
        // heartbeats are missed: once the connection is back, start over at once.
        let mut watch = tokio::time::interval(WATCH);
        let mut was_down = false;
        loop {
            tokio::select! {
                changed = gate.changed() => {
                    // parked, or opened again from elsewhere: the consumer goes
                    return changed.is_ok();
                }
                _ = watch.tick() => {
                    if tx.is_closed() {
                        // the relay has stopped: its connection goes with this task
                        return false;
                    }
                    if !cluster.is_connected() {
                        was_down = true;
                    } else if was_down {
                        tracing::info!(after = *delivered, "NATS is back: the live feed resumes");
                        break;
                    }
                }
                run = messages.next() => {
                    let Some(run) = run else { break };
                    let mut events = Vec::with_capacity(run.len());
                    let mut last = *delivered;
                    let mut broken = false;
                    for message in run {
                        let message = match message {
                            Ok(message) => message,
                            Err(e) => {
                                tracing::warn!(error = %e, after = last, "the live feed broke; resuming");
                                broken = true;
                                break;
                            }
                        };
                        let Ok(info) = message.info() else { continue };
                        let sequence = info.stream_sequence;
                        // a consumer created again may repeat what was delivered
                        if sequence <= last {
                            continue;
                        }
                        last = sequence;
                        events.extend(accept(
                            cluster.name(),
                            Via::Stored,
                            &message.subject,
                            &message.payload,
                            refused,
                        ));
                    }
                    if last > *delivered {
                        *delivered = last;
                        stamp.fetch_max(last, Ordering::AcqRel);
                        if !events.is_empty() {
                            let admitted = Admitted { events, stamp: last, generation };
                            if tx.send(admitted).await.is_err() {
                                return false;
                            }
                        }
                        // the redeliveries of what this run delivered, after it
                        if !forward(held.release(last), last, generation, tx).await {
                            return false;
                        }
                    }
                    if broken {
                        break;
                    }
                }
                announced = duplicates.next() => {
                    let Some(message) = announced else {
                        // the client is gone: nothing more will come
                        tracing::warn!("the cluster's redeliveries are no longer received");
                        return false;
                    };
                    // forwarded now only if its stored copy was fed already: else it
                    // would overtake the events the consumer has yet to deliver
                    let now = read_announcement(cluster, refused, &message)
                        .and_then(|(sequence, event)| held.place(sequence, event, *delivered));
                    if !forward(now.into_iter().collect(), *delivered, generation, tx).await {
                        return false;
                    }
                }
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use bytes::Bytes;

    use super::*;
    use crate::nats::cluster::{NatsOptions, Outgoing};
    use crate::nats::names::message_id;
    use aep_test_support::nats::NatsServer;

    fn options(url: &str) -> NatsOptions {
        NatsOptions::new(&crate::NatsCluster::new(url).stream("FEED"), 100).unwrap()
    }

    fn event(cluster: &Cluster, id: &str, seq: u64) -> Outgoing {
        let json = format!(
            r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"s","seq":{seq},"data":{{}}}}"#
        );
        Outgoing {
            subject: cluster.name().session_subject("s").into(),
            message_id: message_id("aep://t/agent/a", id),
            payload: Bytes::from(json),
        }
    }

    async fn next(feed: &mut Feed) -> Admitted {
        tokio::time::timeout(Duration::from_secs(10), feed.next())
            .await
            .expect("an item within 10 s")
            .unwrap()
    }

    async fn nothing_within(feed: &mut Feed, ms: u64) {
        let got = tokio::time::timeout(Duration::from_millis(ms), feed.next()).await;
        assert!(
            got.is_err(),
            "fed: {:?}",
            got.ok().flatten().map(|a| ids(&a))
        );
    }

    fn ids(admitted: &Admitted) -> Vec<String> {
        admitted
            .events
            .iter()
            .map(|e| {
                let json: serde_json::Value = serde_json::from_slice(&e.json()).unwrap();
                json["id"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    const PLAIN: &str = r#"{"aep":"0.1","id":"e1","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"s","seq":3,"severity":"warning","data":{}}"#;

    fn name() -> StreamName {
        StreamName::parse("FEED").unwrap()
    }

    /// A stored event is framed as ingest framed it (an escaped one too), on its
    /// session's subject, stored or announced.
    #[test]
    fn a_stored_event_is_framed_as_ingest_framed_it() {
        let escaped = PLAIN.replace(r#""id":"e1""#, r#""id":"\u00651""#);
        let refused = Refused::default();
        for json in [PLAIN, escaped.as_str()] {
            let ingested = crate::line::parse_line(json.as_bytes(), false)
                .unwrap()
                .encoded;
            for (via, subject) in [(Via::Stored, "FEED.s.s"), (Via::Announced, "FEED.d.s")] {
                let fed =
                    accept(&name(), via, subject, json.as_bytes(), &refused).expect("an event");
                assert_eq!(fed.sse(), ingested.sse());
                assert_eq!(fed.key(), ingested.key());
                assert_eq!(fed.position(), ingested.position());
                assert_eq!(fed.severity(), ingested.severity());
                assert_eq!(fed.session(), Some("s"));
            }
        }
        assert_eq!(
            refused.to_json(),
            serde_json::json!({
                "not-json": 0, "invalid-event": 0, "not-stored": 0, "wrong-subject": 0,
                "unplaced": 0,
            })
            .as_object()
            .unwrap()
            .clone()
        );
    }

    /// What HTTP ingest refuses, or would not store, or what sits on another session's
    /// subject, is never delivered from the stream, and counted by kind: the cases of
    /// the ingest tests.
    #[test]
    fn what_ingest_would_refuse_is_never_delivered_and_counted() {
        let refused = Refused::default();
        let command = r#"{"aep":"0.1","id":"c1","type":"control.pause","time":"2026-07-03T10:15:04.221Z","source":"aep://t/console","agent":"console","session":"s"}"#;
        let cases: Vec<(String, &str, Refusal)> = vec![
            ("garbage".into(), "FEED.s.s", Refusal::NotJson),
            ("\u{ff}\u{fe}".into(), "FEED.s.s", Refusal::NotJson),
            (
                r#"{"not":"an event"}"#.into(),
                "FEED.s.s",
                Refusal::InvalidEvent,
            ),
            // a command with a seq: ingest's `400 ... commands carry session and never seq`
            (
                command.replace(r#""session":"s""#, r#""session":"s","seq":1"#),
                "FEED.s.s",
                Refusal::InvalidEvent,
            ),
            (
                PLAIN.replace(r#""seq":3"#, r#""seq":-1"#),
                "FEED.s.s",
                Refusal::InvalidEvent,
            ),
            (
                PLAIN.replace("progress.status", "Progress.Status"),
                "FEED.s.s",
                Refusal::InvalidEvent,
            ),
            // valid, but never stored: a command without a seq, a live event
            (command.into(), "FEED.s.s", Refusal::NotStored),
            (
                PLAIN
                    .replace(r#""session":"s","seq":3,"#, "")
                    .replace("progress.status", "agent.heartbeat"),
                "FEED.s.s",
                Refusal::NotStored,
            ),
            // another session's subject
            (PLAIN.into(), "FEED.s.other", Refusal::WrongSubject),
        ];
        for (json, subject, kind) in &cases {
            let before = refused.count(*kind);
            assert!(
                accept(&name(), Via::Stored, subject, json.as_bytes(), &refused).is_none(),
                "delivered: {json}"
            );
            assert_eq!(refused.count(*kind), before + 1, "{kind:?}: {json}");
        }
        // announced on another session's subject, or on the stored ones' prefix
        for subject in ["FEED.d.other", "FEED.s.s", "OTHER.d.s"] {
            assert!(accept(&name(), Via::Announced, subject, PLAIN.as_bytes(), &refused).is_none());
        }
        assert_eq!(refused.count(Refusal::WrongSubject), 4);
        // every kind `accept` refuses was told once: the flag is set after the first
        // (`unplaced` is the announcements' reading, tested with its header below)
        let told = |kind: Refusal| refused.told[kind as usize].load(Ordering::Relaxed);
        assert!(Refusal::ALL[..4].iter().all(|kind| told(*kind)));
        assert!(!told(Refusal::Unplaced));
    }

    /// Every relay's feed carries every admission, its own included, once, from after
    /// the sequence it was opened at; a redelivery is forwarded at the sequence already
    /// fed, never past it.
    #[tokio::test]
    async fn every_relay_feeds_on_every_admission_its_own_included() {
        let Some(server) = NatsServer::start_or_skip() else {
            return;
        };
        let a = Cluster::connect(&options(&server.url())).await.unwrap();
        let b = Cluster::connect(&options(&server.url())).await.unwrap();
        // stored before the feeds start: not fed (replay serves it)
        a.publish(&[event(&a, "e0", 0)]).await.unwrap();
        let after = b.last_sequence().await.unwrap();
        let stamp = Arc::new(AtomicU64::new(after));
        let (mut a_feed, a_gate) = feed(a.clone(), stamp.clone(), Arc::default());
        let (mut b_feed, b_gate) = feed(b.clone(), Arc::new(AtomicU64::new(after)), Arc::default());
        for gate in [&a_gate, &b_gate] {
            gate.send_replace(Gate {
                after: Some(after),
                generation: 1,
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;

        let batch = [event(&a, "e1", 1), event(&a, "e2", 2)];
        a.publish(&batch).await.unwrap();
        for fed in [&mut a_feed, &mut b_feed] {
            let mut got = Vec::new();
            let mut last = 0;
            while got.len() < 2 {
                let admitted = next(fed).await;
                last = admitted.stamp;
                got.extend(ids(&admitted));
            }
            assert_eq!(got, ["e1", "e2"]);
            assert_eq!(last, 3);
        }
        assert_eq!(stamp.load(Ordering::Acquire), 3);

        // A's retry of e1: stored once, its announcement fed to both at stamp 3
        let again = a.publish(&batch[..1]).await.unwrap();
        assert!(again[0].duplicate);
        a.announce_duplicates(&[(&batch[0], again[0].sequence)])
            .await
            .unwrap();
        for fed in [&mut a_feed, &mut b_feed] {
            let dup = next(fed).await;
            assert_eq!((ids(&dup), dup.stamp), (vec!["e1".to_owned()], 3));
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(300), b_feed.next())
                .await
                .is_err(),
            "fed twice"
        );
    }

    /// An announced redelivery whose stored copy the feed has not delivered yet is held
    /// until it has: a reader gets a session's events in stream order, the copy after
    /// its original, however much sooner the announcement arrives than the consumer's
    /// messages (the WebSocket sink's re-claim of a session after a reconnect, whose
    /// announcement outran a loaded relay's consumer: a reader saw seq 399, then 380).
    #[tokio::test]
    async fn a_redelivery_never_overtakes_its_stored_copy() {
        let Some(server) = NatsServer::start_or_skip() else {
            return;
        };
        let a = Cluster::connect(&options(&server.url())).await.unwrap();
        let (mut fed, gate) = feed(a.clone(), Arc::default(), Arc::default());
        gate.send_replace(Gate {
            after: Some(0),
            generation: 1,
        });
        // fed: the consumer reads, and the redeliveries' subscription (made first) too
        a.publish(&[event(&a, "e0", 0)]).await.unwrap();
        assert_eq!(ids(&next(&mut fed).await), ["e0"]);

        // e2's redelivery announced, its stored copy at sequence 3, before the stream
        // has delivered sequences 2 and 3 here (here: before they are even stored)
        let batch = [event(&a, "e1", 1), event(&a, "e2", 2)];
        a.announce_duplicates(&[(&batch[1], 3)]).await.unwrap();
        a.client().flush().await.unwrap();
        nothing_within(&mut fed, 300).await;
        a.publish(&batch).await.unwrap();
        let mut got = Vec::new();
        let mut stamps = Vec::new();
        while got.len() < 3 {
            let admitted = next(&mut fed).await;
            stamps.push(admitted.stamp);
            got.extend(ids(&admitted));
        }
        assert_eq!(got, ["e1", "e2", "e2"], "the copy after its original");
        assert!(stamps.iter().all(|s| *s <= 3), "{stamps:?}");
        nothing_within(&mut fed, 300).await;

        // one whose copy was fed already goes at once
        a.announce_duplicates(&[(&batch[0], 2)]).await.unwrap();
        let again = next(&mut fed).await;
        assert_eq!((ids(&again), again.stamp), (vec!["e1".to_owned()], 3));
    }

    /// What is held waits for the consumer to deliver its stored copy, goes out in the
    /// order of those copies, and never holds more than the bound.
    #[test]
    fn held_redeliveries_wait_for_their_copies_within_the_bound() {
        let copy = |id: &str, seq| {
            crate::line::parse_line(
                PLAIN
                    .replace("e1", id)
                    .replace(r#""seq":3"#, &format!(r#""seq":{seq}"#))
                    .as_bytes(),
                false,
            )
            .unwrap()
            .encoded
        };
        let key = |e: &Encoded| e.key();
        let mut held = Held::default();
        // fed through 10: one at or before it goes at once
        assert_eq!(
            held.place(10, copy("a", 1), 10).map(|e| e.key()),
            Some(copy("a", 1).key())
        );
        assert!(held.place(14, copy("c", 3), 10).is_none());
        assert!(held.place(12, copy("b", 2), 10).is_none());
        assert!(held.place(14, copy("c", 3), 10).is_none());
        assert!(held.release(11).is_empty());
        let out: Vec<_> = held.release(12).iter().map(key).collect();
        assert_eq!(out, [copy("b", 2).key()]);
        // past the copy (dropped from the stream meanwhile), it goes all the same
        let out: Vec<_> = held.release(20).iter().map(key).collect();
        assert_eq!(out, [copy("c", 3).key(), copy("c", 3).key()]);
        assert!(held.release(u64::MAX).is_empty());

        for n in 0..HELD as u64 {
            assert!(held.place(100 + n, copy("d", n), 0).is_none());
        }
        // full: let go, not held, not forwarded ahead of its copy
        assert!(held.place(50, copy("e", 0), 0).is_none());
        assert_eq!(held.release(u64::MAX).len(), HELD);
    }

    /// An announcement that does not say where its stored copy is cannot be placed
    /// after it: never fed, counted as `unplaced`.
    #[tokio::test]
    async fn an_announcement_without_its_sequence_is_refused_unplaced() {
        let Some(server) = NatsServer::start_or_skip() else {
            return;
        };
        let a = Cluster::connect(&options(&server.url())).await.unwrap();
        let refused = Arc::new(Refused::default());
        let (mut fed, gate) = feed(a.clone(), Arc::default(), refused.clone());
        gate.send_replace(Gate {
            after: Some(0),
            generation: 1,
        });
        a.publish(&[event(&a, "e0", 0)]).await.unwrap();
        assert_eq!(ids(&next(&mut fed).await), ["e0"]);
        let unplaced = event(&a, "e0", 0);
        let subject = a.name().duplicate_subject(&unplaced.subject);
        a.client().publish(subject, unplaced.payload).await.unwrap();
        a.client().flush().await.unwrap();
        aep_test_support::wait::until("the announcement refused", || {
            refused.count(Refusal::Unplaced) == 1
        })
        .await;
        nothing_within(&mut fed, 300).await;
    }

    /// A parked feed reads nothing from the stream; opened, it reads from after the
    /// stamp the opening names (what a new subscription's replay covers), under the
    /// opening's number, never what it had read before.
    #[tokio::test]
    async fn a_parked_feed_reads_nothing_and_opens_after_the_stamp_it_is_given() {
        let Some(server) = NatsServer::start_or_skip() else {
            return;
        };
        let a = Cluster::connect(&options(&server.url())).await.unwrap();
        let stamp = Arc::new(AtomicU64::new(0));
        let (mut fed, gate) = feed(a.clone(), stamp.clone(), Arc::default());
        a.publish(&[event(&a, "e1", 1)]).await.unwrap();
        nothing_within(&mut fed, 300).await;
        let open = |after, generation| Gate {
            after: Some(after),
            generation,
        };
        gate.send_replace(open(0, 1));
        let first = next(&mut fed).await;
        assert_eq!(
            (ids(&first), first.stamp, first.generation),
            (vec!["e1".to_owned()], 1, 1)
        );

        gate.send_replace(Gate {
            after: None,
            generation: 1,
        });
        // time for the feed to drop its consumer, on a busy machine too
        tokio::time::sleep(Duration::from_millis(500)).await;
        a.publish(&[event(&a, "e2", 2), event(&a, "e3", 3)])
            .await
            .unwrap();
        nothing_within(&mut fed, 300).await;
        assert_eq!(stamp.load(Ordering::Acquire), 1, "parked, nothing read");

        // opened after e2, which the new subscription's replay serves
        gate.send_replace(open(2, 2));
        let resumed = next(&mut fed).await;
        assert_eq!(
            (ids(&resumed), resumed.stamp, resumed.generation),
            (vec!["e3".to_owned()], 3, 2)
        );
        a.publish(&[event(&a, "e4", 4)]).await.unwrap();
        let live = next(&mut fed).await;
        assert_eq!(
            (ids(&live), live.stamp, live.generation),
            (vec!["e4".to_owned()], 4, 2)
        );
        nothing_within(&mut fed, 300).await;

        // the gate dropped (the relay stopped): the feed ends
        drop(gate);
        let end = tokio::time::timeout(Duration::from_secs(5), fed.next()).await;
        assert!(matches!(end, Ok(None)), "the feed ends with its gate");
    }
}
