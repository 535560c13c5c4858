//! Control (AEP-0004) and the roster (AEP-0003 §4.1) across a relay cluster: a command
//! sent to relay A reaches the target whose claim lives on relay C, `no-route` and
//! `ambiguous` are decided over every relay's claims, and a `roster` asked of any relay
//! lists the claims of all. The [`Directory`] of a relay of the cluster.
//!
//! # Design
//!
//! Each relay tells the others its claims, and keeps a copy of theirs; a command is
//! decided on that copy and sent to the one relay that holds its target, which decides
//! again on its own connections before handing it over. Core NATS only (no JetStream:
//! nothing here is stored), on subjects under the stream name, so fleets sharing one
//! server stay apart (`{stream}` below, `AEP` by default):
//!
//! - `{stream}.ctl.claims.{relay}`: a relay's claims, whole, each time they change: a
//!   `roster` frame (AEP-0003 §4.1, the core codec's) whose `id` is the relay, with its
//!   generation `gen` and, for claims that exceed the server's `max_payload`, `part`
//!   and `parts`. A copy is replaced only by a whole newer generation.
//! - `{stream}.ctl.beat.{relay}`: every heartbeat (1 s by default), the generation the
//!   relay last published. A relay that holds another generation of it (a message lost
//!   across a reconnect) or none asks for it again.
//! - `{stream}.ctl.sync`: "publish your claims again" (its payload the relay asked, or
//!   empty for every relay: what a relay asks once at start).
//! - `{stream}.ctl.cmd.{relay}`: a command forwarded to that relay, byte for byte as its
//!   sender wrote it (AEP-0004 §4.4), as a request; the reply is empty when the target
//!   got it, or the refusal's `{"code","detail"}`.
//!
//! # The decision, and what bounds it
//!
//! Relay A counts the live claims of the command's session on its own connections
//! (exactly as a single relay does) and in its copies of the others'. None: `no-route`.
//! Two or more: `ambiguous`, counting all. One here: delivered here. One on relay C:
//! forwarded to C, which counts its own claims again: the target is handed the command
//! only if C still holds exactly one claim, so a command reaches at most one target
//! (AEP-0004 §4.5) whatever the copies say; a refusal from C (`no-route`: the claim
//! went meanwhile; `ambiguous`: a second claim on C; `unsupported`: the target's
//! declared `accepts`) reaches the sender on A as a refusal made on A would, with the
//! command's `id` as `cause`.
//!
//! A copy can be behind; each way it can be errs toward a refusal, never toward a
//! second target:
//!
//! - **A claim made a moment ago** on C counts on A once C's claims message has crossed
//!   NATS (one publish after the claim, milliseconds on one network); until then a
//!   command to it is refused `no-route`, or, if another relay holds a claim too,
//!   delivered to that one rather than refused `ambiguous`. A claims message lost on a
//!   reconnect is asked for again at the next heartbeat: at most one heartbeat
//!   interval more.
//! - **A relay's death.** A relay stopped cleanly publishes, as its last step, that it
//!   holds no claim: the others stop counting its claims at once. A relay killed
//!   (`kill -9`, a machine lost) stops counting once `missed` heartbeats (3 by
//!   default) have not come: within `heartbeat × (missed + 1)`, 4 s by default.
//!   Before that, a command to a session claimed only there is answered `no-route` at
//!   once (its subscription is gone with its connection, so NATS answers "no
//!   responders", and all its claims are dropped then and there); until they are, one
//!   claimed there and elsewhere too is refused `ambiguous` (a denial, never a
//!   diversion, AEP-0004 §8). A relay that is only reconnecting to NATS answers "no
//!   responders" too: its claims count again from its next heartbeat, and meanwhile
//!   a session it claims beside another relay goes to the other claimant.
//! - **A relay cut off from NATS** routes on its own claims only once its copies
//!   expire (the same bound), and the others stop counting its claims after the same
//!   bound; both recover at the first heartbeat after the reconnection.
//! - **A relay that does not answer** (connected to NATS, its runtime stuck) has a
//!   command forwarded to it refused `no-route` after the forward timeout (5 s by
//!   default), saying so. The sender's connection waits meanwhile: its later messages
//!   are read after the refusal, so its commands keep their order.
//!
//! # How the cluster reads AEP-0003 §4.1
//!
//! A cluster answers as one endpoint: any relay's `roster` lists the live (connection,
//! session) claims of every relay of the fleet: its own first, then the others', one
//! entry each, declarations verbatim as each claimant's `hello` gave them (rule 4); a
//! session claimed on two relays shows twice (rule 5). That is rule 3's "the live
//! claims the answering endpoint terminates" read with the cluster as the endpoint,
//! which is what keeps it true that absence means *no live route*: the same claims
//! decide where a command goes. "Chained relays answer for themselves" still holds
//! between clusters and for a relay chained behind one. Live is as of each relay's
//! last claims message: a claim made a moment ago on another relay, or a relay killed
//! less than the bound above ago, is a snapshot's staleness (rule 6). The reply keeps
//! the single relay's size bound (the hard backpressure bound), counted over every
//! relay's entries.
//!
//! Audit: a routed command is fanned out to the live readers of the relay it was sent
//! to, as on a single relay; acknowledgements and outcomes are ordinary session events
//! of the target, which reach every relay's readers through the shared store.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use aep_core::frame::{self, ErrorCode, Frame, Message, RosterEntry, RosterReply};
use async_nats::RequestErrorKind;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::cluster::{Cluster, NatsOptions};
use super::names::StreamName;
use crate::directory::{no_route, Claimants, Directory, Elsewhere, Refusal, RelayId, Routed};
use crate::line::{read_event, LineError};
use crate::proto::json_len;

/// How a relay of a cluster keeps the others' claims. Not a flag: a relay judges the
/// others' silence by its own `heartbeat × missed`, so every relay of a fleet must
/// beat at the same pace; the defaults are what `--nats` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ControlOptions {
    /// How often a relay says it is alive and which generation of its claims it
    /// published. Default 1 s: it bounds how long a claims message lost across a
    /// reconnect goes unnoticed (one heartbeat) and, with `missed`, how long a killed
    /// relay's claims still count, for one message of a few bytes per relay a second.
    pub(crate) heartbeat: Duration,
    /// Heartbeats missed after which a relay's claims stop counting. Default 3: a beat
    /// or two lost or late (a reconnect, a stalled runtime) must not drop a live
    /// relay's claims, which would refuse its sessions `no-route`, or send a command
    /// for a session it claims beside another relay to the other claimant; more would
    /// keep a dead relay's claims counting longer (`heartbeat × (missed + 1)`, 4 s).
    pub(crate) missed: u32,
    /// How long a forwarded command may wait for the relay of its target, its sender
    /// waiting meanwhile (and how long a relay that stops waits for NATS to take its
    /// leaving). Default 5 s: the cluster's NATS request timeout
    /// (`NatsCluster::DEFAULT_TIMEOUT`), and half the default ack window (AEP-0004 §3,
    /// 10 s), so that a sender hears `no-route` before its own window closes on a
    /// synthesized `timeout`.
    pub(crate) forward_timeout: Duration,
}

impl Default for ControlOptions {
    fn default() -> Self {
        ControlOptions {
            heartbeat: ControlOptions::default_heartbeat(),
            missed: 3,
            forward_timeout: Duration::from_secs(5),
        }
    }
}

impl ControlOptions {
    /// The default heartbeat, 1 s.
    pub(crate) const fn default_heartbeat() -> Duration {
        Duration::from_secs(1)
    }

    /// How long after its last heartbeat a relay's claims still count.
    fn ttl(&self) -> Duration {
        self.heartbeat * self.missed.max(1)
    }
}

/// The subjects of a fleet's control plane (module documentation), pinned by tests:
/// every relay of a fleet must use the same.
#[derive(Debug, Clone)]
struct Subjects {
    prefix: String,
}

impl Subjects {
    fn new(stream: &str) -> Subjects {
        Subjects {
            prefix: format!("{stream}.ctl"),
        }
    }
    fn claims(&self, relay: &str) -> String {
        format!("{}.claims.{relay}", self.prefix)
    }
    fn beat(&self, relay: &str) -> String {
        format!("{}.beat.{relay}", self.prefix)
    }
    fn sync(&self) -> String {
        format!("{}.sync", self.prefix)
    }
    fn command(&self, relay: &str) -> String {
        format!("{}.cmd.{relay}", self.prefix)
    }
    /// The relay a `claims` or `beat` subject names.
    fn relay_of<'s>(&self, subject: &'s str) -> Option<&'s str> {
        let rest = subject.strip_prefix(&self.prefix)?.strip_prefix('.')?;
        let (_, relay) = rest.split_once('.')?;
        Some(relay)
    }
}

/// The most parts one relay's claims are split into.
const MAX_PARTS: usize = 1024;

/// One relay's claims as this relay knows them.
#[derive(Debug)]
struct Known {
    /// The generation of `entries` (0: none received yet).
    generation: u64,
    entries: Arc<[RosterEntry]>,
    /// Its last heartbeat or claims message.
    seen: Instant,
    /// The parts of a newer generation received so far.
    assembling: Option<(u64, Vec<Option<Vec<RosterEntry>>>)>,
    /// When its claims were last asked for again.
    asked: Option<Instant>,
}

impl Known {
    fn new(now: Instant) -> Known {
        Known {
            generation: 0,
            entries: Arc::from(Vec::new()),
            seen: now,
            assembling: None,
            asked: None,
        }
    }
}

/// The other relays' claims (the copy a relay decides on), each with when it was last
/// heard of; a relay not heard of for `ttl` no longer counts.
#[derive(Debug)]
struct Mirror {
    ttl: Duration,
    relays: BTreeMap<RelayId, Known>,
}

impl Mirror {
    fn new(ttl: Duration) -> Mirror {
        Mirror {
            ttl,
            relays: BTreeMap::new(),
        }
    }

    fn live(&self, now: Instant) -> impl Iterator<Item = (&RelayId, &Known)> {
        let ttl = self.ttl;
        self.relays
            .iter()
            .filter(move |(_, k)| now.saturating_duration_since(k.seen) <= ttl)
    }

    /// `relay` is alive and holds generation `gen`; whether to ask for its claims (a
    /// generation this copy lacks, asked at most once per `again`).
    fn beat(&mut self, relay: &str, generation: u64, now: Instant, again: Duration) -> bool {
        let known = self
            .relays
            .entry(Arc::from(relay))
            .or_insert_with(|| Known::new(now));
        known.seen = now;
        let behind = known.generation != generation;
        let due = known
            .asked
            .is_none_or(|at| now.saturating_duration_since(at) >= again);
        if behind && due {
            known.asked = Some(now);
        }
        behind && due
    }

    /// Part `part` of `parts` of `relay`'s claims of generation `gen`; whole, they
    /// replace what was known of it. Older generations are ignored.
    fn part(
        &mut self,
        relay: &str,
        generation: u64,
        (part, parts): (usize, usize),
        entries: Vec<RosterEntry>,
        now: Instant,
    ) {
        let known = self
            .relays
            .entry(Arc::from(relay))
            .or_insert_with(|| Known::new(now));
        known.seen = now;
        // a split no relay writes (past `MAX_PARTS`, 1 GiB at the default payload
        // limit) is dropped, so a hostile message asks for no memory
        if generation <= known.generation || part >= parts || parts > MAX_PARTS {
            return;
        }
        let slots = match &mut known.assembling {
            Some((g, slots)) if *g == generation && slots.len() == parts => slots,
            // a newer generation (or another split of it) starts over
            _ => &mut known.assembling.insert((generation, vec![None; parts])).1,
        };
        slots[part] = Some(entries);
        if slots.iter().all(Option::is_some) {
            let whole: Vec<RosterEntry> = slots.drain(..).flatten().flatten().collect();
            known.entries = Arc::from(whole);
            known.generation = generation;
            known.assembling = None;
        }
    }

    /// `relay` is gone (NATS knows nobody there): its claims no longer count.
    fn gone(&mut self, relay: &str) {
        self.relays.remove(relay);
    }

    /// Forgets the relays not heard of for `ttl`.
    fn expire(&mut self, now: Instant) {
        let ttl = self.ttl;
        self.relays
            .retain(|_, k| now.saturating_duration_since(k.seen) <= ttl);
    }

    fn elsewhere(&self, session: &str, now: Instant) -> Elsewhere {
        let mut found = Elsewhere::default();
        for (relay, known) in self.live(now) {
            let claims = known
                .entries
                .iter()
                .filter(|e| e.session == session)
                .count();
            if claims > 0 && found.relay.is_none() {
                found.relay = Some(relay.clone());
            }
            found.claims += claims;
        }
        found
    }

    fn entries(&self, now: Instant) -> Vec<Arc<[RosterEntry]>> {
        self.live(now)
            .filter(|(_, k)| !k.entries.is_empty())
            .map(|(_, k)| k.entries.clone())
            .collect()
    }
}

/// A relay's claims as the messages that carry them: roster frames of at most `max`
/// bytes each (one at least, empty when there is no claim); a claim larger than a
/// message alone is left out.
fn claims_messages(
    relay: &str,
    generation: u64,
    entries: Vec<RosterEntry>,
    max: usize,
) -> Vec<String> {
    // the frame around the entries, with room for the largest `part`/`parts` numbers
    let frame = |entries: Vec<RosterEntry>, part: usize, parts: usize| {
        let mut reply = RosterReply::new(relay, entries);
        reply.extra.insert("gen".into(), json!(generation));
        reply.extra.insert("part".into(), json!(part));
        reply.extra.insert("parts".into(), json!(parts));
        reply
    };
    let overhead = json_len(&Frame::Roster(frame(Vec::new(), usize::MAX, usize::MAX)));
    let budget = max.saturating_sub(overhead).max(1);
    let mut chunks: Vec<Vec<RosterEntry>> = vec![Vec::new()];
    let mut size = 0;
    for entry in entries {
        let len = json_len(&entry) + 1;
        if len > budget {
            // a claim no message can carry (its hello past the server's max_payload):
            // left out, so that the relay's other claims still reach the cluster;
            // commands from other relays to its session are refused `no-route`
            tracing::warn!(
                session = entry.session,
                bytes = len,
                max,
                "a claim too large for one NATS message is not told to the other relays"
            );
            continue;
        }
        let last = chunks.last_mut().expect("one chunk at least");
        if size + len > budget && !last.is_empty() {
            chunks.push(Vec::new());
            size = 0;
        }
        size += len;
        chunks.last_mut().expect("one chunk at least").push(entry);
    }
    let parts = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(part, entries)| Frame::Roster(frame(entries, part, parts)).to_json())
        .collect()
}

/// A claims message read back: the relay's generation, its part, its entries.
fn read_claims(payload: &[u8]) -> Option<(u64, (usize, usize), Vec<RosterEntry>)> {
    let text = std::str::from_utf8(payload).ok()?;
    let Ok(Message::Frame(Frame::Roster(reply))) = frame::decode(text) else {
        return None;
    };
    let number = |key: &str| reply.extra.get(key).and_then(Value::as_u64);
    let generation = number("gen")?;
    let part = usize::try_from(number("part")?).ok()?;
    let parts = usize::try_from(number("parts")?).ok()?;
    Some((generation, (part, parts), reply.entries))
}

/// The control plane of one relay of a cluster: its [`Directory`].
#[derive(Debug)]
pub(crate) struct NatsControl {
    client: async_nats::Client,
    subjects: Subjects,
    relay: RelayId,
    options: ControlOptions,
    mirror: Arc<Mutex<Mirror>>,
    /// The generation of this relay's claims: one more at each change.
    generation: AtomicU64,
    /// The generation last published, which heartbeats announce.
    published: AtomicU64,
    changed: Notify,
}

/// The directory of a relay that joins the cluster `options` name (what `--nats` asks
/// for): its control plane, on a NATS connection of its own, so that a command never
/// waits behind a batch of events being stored. Fails as the store's connection does
/// (the server, the stream's agreement), and must be called inside a tokio runtime.
pub(crate) fn open(options: &NatsOptions) -> std::io::Result<Arc<dyn Directory>> {
    let cluster = super::cluster::block_on_runtime(Cluster::connect(options))?;
    Ok(NatsControl::new(
        cluster.client().clone(),
        cluster.name(),
        ControlOptions::default(),
    ))
}

impl NatsControl {
    /// The control plane of a relay of the fleet `stream`, on `client`; a fresh name for
    /// the relay within the fleet.
    pub(crate) fn new(
        client: async_nats::Client,
        stream: &StreamName,
        options: ControlOptions,
    ) -> Arc<NatsControl> {
        Arc::new(NatsControl {
            client,
            subjects: Subjects::new(stream.as_str()),
            relay: Arc::from(ulid::Ulid::new().to_string()),
            options,
            mirror: Arc::new(Mutex::new(Mirror::new(options.ttl()))),
            generation: AtomicU64::new(1),
            published: AtomicU64::new(0),
            changed: Notify::new(),
        })
    }

    fn mirror(&self) -> std::sync::MutexGuard<'_, Mirror> {
        self.mirror.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes this relay's claims as `here` holds them now.
    async fn publish_claims(&self, here: &dyn Claimants) {
        // read before the claims: what is published holds at least this generation
        let generation = self.generation.load(Ordering::Acquire);
        let max = self.client.server_info().max_payload.max(4096);
        let subject = self.subjects.claims(&self.relay);
        let mut entries = Vec::new();
        here.claims(&mut |entry| {
            entries.push(entry);
            true
        });
        for message in claims_messages(&self.relay, generation, entries, max) {
            if let Err(e) = self.client.publish(subject.clone(), message.into()).await {
                tracing::warn!(error = %e, "publishing this relay's claims failed");
                return;
            }
        }
        self.published.store(generation, Ordering::Release);
    }

    /// Answers a command another relay forwarded: routed to this relay's claimant.
    async fn answer(&self, here: &dyn Claimants, message: async_nats::Message) {
        let Some(reply) = message.reply else {
            return;
        };
        let verdict = match std::str::from_utf8(&message.payload) {
            Ok(command) => route_forwarded(here, command),
            Err(_) => Err(Refusal {
                code: ErrorCode::from("invalid-event"),
                detail: "a forwarded command that is not UTF-8".into(),
            }),
        };
        let payload = match verdict {
            Ok(()) => Bytes::new(),
            Err(r) => {
                Bytes::from(json!({ "code": r.code.as_str(), "detail": r.detail }).to_string())
            }
        };
        if let Err(e) = self.client.publish(reply, payload).await {
            tracing::warn!(error = %e, "answering a forwarded command failed");
        }
    }

    /// Runs the plane until `here` is gone (looked at after each message and
    /// heartbeat; the connection itself reconnects for ever).
    async fn run(self: Arc<Self>, here: Weak<dyn Claimants>) {
        let subscribe = |subject: String| {
            let client = self.client.clone();
            async move { client.subscribe(subject).await }
        };
        let (claims, beats, syncs, commands) = match futures::try_join!(
            subscribe(self.subjects.claims("*")),
            subscribe(self.subjects.beat("*")),
            subscribe(self.subjects.sync()),
            subscribe(self.subjects.command(&self.relay)),
        ) {
            Ok(subscribed) => subscribed,
            Err(e) => {
                tracing::error!(error = %e, "the cluster's control plane could not subscribe; commands are routed on this relay only");
                return;
            }
        };
        let (mut claims, mut beats, mut syncs, mut commands) = (claims, beats, syncs, commands);
        // every relay publishes its claims again, this one's included
        if let Err(e) = self
            .client
            .publish(self.subjects.sync(), Bytes::new())
            .await
        {
            tracing::warn!(error = %e, "asking the cluster's claims failed");
        }
        let mut tick = tokio::time::interval(self.options.heartbeat);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let Some(here) = here.upgrade() else {
                return;
            };
            tokio::select! {
                () = self.changed.notified() => self.publish_claims(&*here).await,
                Some(message) = claims.next() => {
                    let Some(relay) = self.subjects.relay_of(&message.subject) else {
                        continue;
                    };
                    if *relay == *self.relay {
                        continue;
                    }
                    if let Some((generation, part, entries)) = read_claims(&message.payload) {
                        self.mirror().part(relay, generation, part, entries, Instant::now());
                    }
                }
                Some(message) = beats.next() => {
                    let Some(relay) = self.subjects.relay_of(&message.subject) else {
                        continue;
                    };
                    let generation = std::str::from_utf8(&message.payload)
                        .ok()
                        .and_then(|g| g.parse::<u64>().ok());
                    let Some(generation) = generation.filter(|_| *relay != *self.relay) else {
                        continue;
                    };
                    let ask = self
                        .mirror()
                        .beat(relay, generation, Instant::now(), self.options.heartbeat);
                    if ask {
                        let relay = Bytes::from(relay.to_owned());
                        let _ = self.client.publish(self.subjects.sync(), relay).await;
                    }
                }
                Some(message) = syncs.next() => {
                    let asked = &message.payload[..];
                    if asked.is_empty() || asked == self.relay.as_bytes() {
                        self.publish_claims(&*here).await;
                    }
                }
                Some(message) = commands.next() => self.answer(&*here, message).await,
                _ = tick.tick() => {
                    let generation = self.published.load(Ordering::Acquire).to_string();
                    let beat = self.subjects.beat(&self.relay);
                    if let Err(e) = self.client.publish(beat, generation.into()).await {
                        tracing::debug!(error = %e, "a heartbeat was not sent");
                    }
                    self.mirror().expire(Instant::now());
                }
                else => return,
            }
        }
    }
}

impl Directory for NatsControl {
    fn elsewhere(&self, session: &str) -> Elsewhere {
        self.mirror().elsewhere(session, Instant::now())
    }

    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_one();
    }

    fn entries(&self) -> Vec<Arc<[RosterEntry]>> {
        self.mirror().entries(Instant::now())
    }

    fn forward(
        &self,
        relay: RelayId,
        session: String,
        command: Bytes,
    ) -> BoxFuture<'static, Result<(), Refusal>> {
        let client = self.client.clone();
        let subject = self.subjects.command(&relay);
        let mirror = self.mirror.clone();
        let timeout = self.options.forward_timeout;
        Box::pin(async move {
            let request = async_nats::Request::new()
                .payload(command)
                .timeout(Some(timeout));
            let unreachable = |why: String| Refusal {
                code: ErrorCode::NoRoute,
                detail: format!("the relay holding the claim of session {session} {why}"),
            };
            match client.send_request(subject, request).await {
                Ok(reply) if reply.payload.is_empty() => Ok(()),
                Ok(reply) => {
                    Err(read_refusal(&reply.payload).unwrap_or_else(|| no_route(&session)))
                }
                Err(e) if e.kind() == RequestErrorKind::NoResponders => {
                    // its connection to NATS is gone, and its claims with it
                    mirror
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .gone(&relay);
                    Err(unreachable("is gone".into()))
                }
                Err(e) if e.kind() == RequestErrorKind::TimedOut => Err(unreachable(format!(
                    "did not answer within {} ms",
                    timeout.as_millis()
                ))),
                Err(e) => Err(unreachable(format!("could not be reached: {e}"))),
            }
        })
    }

    fn leave(&self) -> BoxFuture<'static, ()> {
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let max = self.client.server_info().max_payload.max(4096);
        let messages = claims_messages(&self.relay, generation, Vec::new(), max);
        let subject = self.subjects.claims(&self.relay);
        let client = self.client.clone();
        let wait = self.options.forward_timeout;
        Box::pin(async move {
            let told = async {
                for message in messages {
                    client.publish(subject.clone(), message.into()).await?;
                }
                client.flush().await.map_err(async_nats::Error::from)
            };
            match tokio::time::timeout(wait, told).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "telling the cluster this relay leaves failed; its claims stop counting when its heartbeats do"),
                Err(_) => tracing::warn!("NATS did not take this relay's leaving in time; its claims stop counting when its heartbeats do"),
            }
        })
    }

    fn serve(self: Arc<Self>, here: Weak<dyn Claimants>) -> Option<BoxFuture<'static, ()>> {
        Some(Box::pin(self.run(here)))
    }
}

/// Routes a command another relay forwarded (its JSON as the sender wrote it) to its
/// one target on this relay, deciding again on this relay's claims (the module
/// documentation says why): `Ok` once handed over, or the refusal to answer.
fn route_forwarded(here: &dyn Claimants, command: &str) -> Result<(), Refusal> {
    let mut reading = None;
    let incoming = read_event(command, &mut reading).map_err(|e| {
        let (LineError::Json(why) | LineError::Invalid(why)) = e;
        Refusal {
            code: ErrorCode::from("invalid-event"),
            detail: format!("a forwarded command that is not an AEP envelope: {why}"),
        }
    })?;
    match here.route(&incoming, None, true) {
        Routed::Here(answer) => answer,
        Routed::Refused(refusal) => Err(refusal),
        // decided on this relay's claims alone: never elsewhere
        Routed::There(forward) => Err(no_route(&forward.session)),
    }
}

/// A refusal as the relay of a target answered it.
fn read_refusal(payload: &[u8]) -> Option<Refusal> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    Some(Refusal {
        code: ErrorCode::from(value.get("code")?.as_str()?),
        detail: value.get("detail")?.as_str()?.to_owned(),
    })
}

#[cfg(test)]
mod tests;
