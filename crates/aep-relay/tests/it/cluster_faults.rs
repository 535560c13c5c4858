//! The relay cluster under the faults of issue 20 ("Faults to test"), with a real
//! `nats-server` and real relay processes (`aep-relay --nats URL --nats-stream NAME`):
//!
//! - one relay of three killed with SIGKILL under load: emitters given every relay go on
//!   posting, subscriptions given several relays resume on another, and the user sees
//!   each event once, in order; the retried batches are stored once (a raw `from=all`
//!   replay shows each `(source, id)` once);
//! - `nats-server` killed for a few seconds under load: ingest answers `503` meanwhile,
//!   the relays reconnect by themselves once it is back on the same port and store, and
//!   every event that got a `202` is in the stream.
//!
//! (Two relays receiving the same batch is in the storage backend's own tests.)
//! Without a usable `nats-server` these tests skip, saying why; `.ci/run` installs one
//! and sets `AEP_REQUIRE_EXTERNAL=1`, which makes a skip a failure.
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep_async::{
    Client, Emitter, HttpSinkOptions, SessionEmitter, SubscribeOptions, Subscription, Transport,
    WsSinkOptions,
};
use aep_core::Event;
use aep_test_support::events::{json_event, session_id};
use aep_test_support::nats::NatsServer;
use aep_test_support::process::RelayProcess;
use aep_test_support::sse::take_messages;
use aep_test_support::wait::Recorder;
use futures::StreamExt;
use serde_json::json;

const TOKEN: &str = "faults";
const MS: fn(u64) -> Duration = Duration::from_millis;
/// Events each session may hold: more than any test here posts to one, so a replay of
/// everything sees everything.
const BUFFER: &str = "20000";
/// How long a test waits for what a working cluster does in a few seconds.
const PATIENCE: Duration = Duration::from_secs(90);

/// A stream of its own for each test, so tests share no state through the server.
fn stream_name() -> String {
    format!("F{}", ulid::Ulid::new())
}

/// A relay process of the cluster on `nats` and `stream`.
fn relay(nats: &NatsServer, stream: &str) -> RelayProcess {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aep-relay"));
    command
        .args(["--port", "0", "--host", "127.0.0.1", "--token", TOKEN])
        .args([
            "--buffer",
            BUFFER,
            "--nats",
            &nats.url(),
            "--nats-stream",
            stream,
        ])
        .env("RUST_LOG", "warn");
    RelayProcess::spawn(command).unwrap_or_else(|why| panic!("a cluster relay: {why}"))
}

/// Every event the relay at `url` replays (`from=all`, `live=0`), as the wire carries
/// them: no client dedupe in between, so a copy stored twice shows twice.
async fn stored(url: &str) -> Vec<serde_json::Value> {
    let response = reqwest::Client::new()
        .get(format!("{url}/stream?from=all&live=0"))
        .bearer_auth(TOKEN)
        .timeout(PATIENCE)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "replay from {url}");
    let mut body = response.text().await.unwrap();
    body.push_str("\n\n");
    take_messages(&mut body)
        .into_iter()
        .filter(|m| m.data.is_some())
        .map(|m| m.json())
        .filter(|v| v.get("aep").is_some())
        .collect()
}

/// `(source, id)` of every event in `events`, with how often each occurs.
fn counted<'a>(events: impl IntoIterator<Item = &'a serde_json::Value>) -> HashMap<Key, usize> {
    let mut n = HashMap::new();
    for e in events {
        *n.entry(key_of(e)).or_default() += 1;
    }
    n
}

type Key = (String, String);

fn key_of(e: &serde_json::Value) -> Key {
    let field = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
    (field("source"), field("id"))
}

/// The relays in `urls`, starting from the one at `first`.
fn from(urls: &[String], first: usize) -> Vec<String> {
    urls.iter()
        .cycle()
        .skip(first)
        .take(urls.len())
        .cloned()
        .collect()
}

/// A subscription to every relay of `relays` (the first preferred) over `transport`,
/// reading agent `agent`'s events.
fn reader(
    relays: Vec<String>,
    transport: Transport,
    agent: &str,
    notices: &Recorder,
) -> Subscription {
    Client::new(relays)
        .token(TOKEN)
        .backoff(MS(20), MS(200))
        .subscribe(
            SubscribeOptions::new()
                .transport(transport)
                .filter(json!({ "agent": agent }))
                .on_notice(notices.handler()),
        )
}

/// Reads `sub` until it has delivered `want` events, or nothing came for 20 s.
async fn read(mut sub: Subscription, want: usize) -> Vec<Event> {
    let mut got = Vec::with_capacity(want);
    while got.len() < want {
        match tokio::time::timeout(Duration::from_secs(20), sub.next()).await {
            Ok(Some(event)) => got.push(event),
            Ok(None) | Err(_) => break,
        }
    }
    got
}

/// The `(session, seq)` runs of the stored events `held` that `got` lacks, for a
/// failure to show where delivery broke.
fn missed(got: &[Event], held: &[serde_json::Value]) -> String {
    let seen: HashSet<&str> = got.iter().map(Event::id).collect();
    let mut runs: Vec<(String, u64, u64)> = Vec::new();
    for e in held {
        if seen.contains(e["id"].as_str().unwrap_or_default()) {
            continue;
        }
        let session = e["session"].as_str().unwrap_or_default().to_owned();
        let seq = e["seq"].as_u64().unwrap_or_default();
        match runs.last_mut() {
            Some((s, _, last)) if *s == session && *last + 1 == seq => *last = seq,
            _ => runs.push((session, seq, seq)),
        }
    }
    let last: HashMap<&str, u64> = got
        .iter()
        .filter_map(|e| Some((e.session()?, e.seq()?)))
        .collect();
    format!("missing (session, first seq, last seq): {runs:?}; last seq read per session: {last:?}")
}

/// Where a session's order broke: the `seq`s the reader was handed around the `at`th
/// event it read, and the order the stream holds them in (`held`, a raw replay in
/// stream order), around `seq`.
fn neighbourhood(got: &[Event], at: usize, held: &[serde_json::Value], seq: u64) -> String {
    let session = got[at].session().unwrap_or_default();
    let of_session = |e: &&Event| e.session() == Some(session);
    let read: Vec<u64> = got[..at + 1]
        .iter()
        .filter(of_session)
        .filter_map(Event::seq)
        .collect();
    let read_tail = &read[read.len().saturating_sub(30)..];
    let after: Vec<u64> = got[at + 1..]
        .iter()
        .filter(of_session)
        .filter_map(Event::seq)
        .take(30)
        .collect();
    let stored: Vec<u64> = held
        .iter()
        .filter(|e| e["session"].as_str() == Some(session))
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    let around = stored.iter().position(|s| *s == seq).unwrap_or_default();
    let stored_near = &stored[around.saturating_sub(30)..(around + 30).min(stored.len())];
    format!(
        "seqs read up to it: ..{read_tail:?}; read next: {after:?}; the stream's order near it: {stored_near:?}"
    )
}

/// What a user must see: each emitted event once, each session's in `seq` order.
fn assert_each_once_in_order(
    reader: &str,
    got: &[Event],
    emitted: &HashSet<String>,
    held: &[serde_json::Value],
    context: &str,
) {
    let mut seen = HashSet::new();
    let mut last: HashMap<String, u64> = HashMap::new();
    for (at, e) in got.iter().enumerate() {
        assert!(
            seen.insert(e.id().to_owned()),
            "{reader}: {} delivered twice",
            e.id()
        );
        let session = e.session().unwrap_or_default().to_owned();
        let seq = e.seq().unwrap_or_default();
        let before = last.insert(session.clone(), seq);
        assert!(
            before.is_none_or(|b| b < seq),
            "{reader}: session {session} went from seq {before:?} to {seq}; {}; {context}",
            neighbourhood(got, at, held, seq)
        );
    }
    let missing: Vec<_> = emitted.difference(&seen).collect();
    assert!(
        missing.is_empty(),
        "{reader}: {} of {} events never delivered ({context})",
        missing.len(),
        emitted.len(),
    );
    assert_eq!(seen.len(), emitted.len(), "{reader}: events nobody emitted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_one_relay_of_three_under_load_loses_nothing_and_doubles_nothing() {
    let Some(nats) = NatsServer::start_or_skip() else {
        return;
    };
    let stream = stream_name();
    let mut relays: Vec<RelayProcess> = (0..3).map(|_| relay(&nats, &stream)).collect();
    let urls: Vec<String> = relays.iter().map(|r| r.url().to_owned()).collect();
    let agent = "faults-kill";
    const EACH: usize = 1200;

    // Everyone prefers relay A (urls[0]), the one that dies.
    let notices = [Recorder::default(), Recorder::default()];
    let sse = reader(urls.clone(), Transport::Sse, agent, &notices[0]);
    let ws = reader(
        vec![urls[0].clone(), urls[2].clone(), urls[1].clone()],
        Transport::WebSocket,
        agent,
        &notices[1],
    );
    for n in &notices {
        n.wait_for("Connected").await;
    }
    // Users reading as events come (what a subscription's resume positions follow).
    let readers = [
        tokio::spawn(read(sse, 2 * EACH)),
        tokio::spawn(read(ws, 2 * EACH)),
    ];

    let reports = Recorder::default();
    let http = Client::new(urls.clone())
        .token(TOKEN)
        .http_sink(
            HttpSinkOptions::new()
                .batch(|b| b.max_items(40).linger(MS(5)))
                .queue_capacity(100_000)
                .on_report(reports.handler())
                .retry(|r| r.backoff(MS(20), MS(200))),
        )
        .unwrap();
    let ws_sink = Client::new(from(&urls, 0))
        .token(TOKEN)
        .backoff(MS(20), MS(200))
        .ws_sink(
            WsSinkOptions::new(agent, "h/ws")
                .queue_capacity(100_000)
                .on_report(reports.handler()),
        )
        .unwrap();
    let emitters = [
        Emitter::new(agent, "h-http", http),
        Emitter::new(agent, "h-ws", ws_sink),
    ];
    let sessions: Vec<SessionEmitter> = emitters.iter().map(|e| e.session(session_id())).collect();

    // Under load: both emitters post all along; A is killed a third of the way in.
    let mut emitted = HashSet::new();
    for n in 0..EACH {
        for session in &sessions {
            let event = session.emit("progress.status", json!({ "n": n })).unwrap();
            emitted.insert(event.id().to_owned());
        }
        if n % 20 == 19 {
            tokio::time::sleep(MS(10)).await;
        }
        if n == EACH / 3 {
            relays[0].kill();
        }
    }
    for emitter in &emitters {
        tokio::time::timeout(PATIENCE, emitter.close())
            .await
            .expect("the emitters deliver everything to the surviving relays");
    }
    // every event settled as delivered, once: none refused, none dropped, none pending
    let each = EACH as u64;
    for (name, emitter) in ["HTTP", "WS"].iter().zip(&emitters) {
        let stats = emitter.stats();
        assert_eq!(
            (
                stats.accepted,
                stats.delivered,
                stats.rejected,
                stats.dropped
            ),
            (each, each, 0, 0),
            "the {name} emitter: {:?}",
            reports.all()
        );
    }

    assert!(
        reports.any("Retrying"),
        "the kill reached no emitter: {:?}",
        reports.all()
    );

    // The stream, read raw from each survivor: every retried batch was stored once.
    let mut held = Vec::new();
    for url in &urls[1..] {
        held = stored(url).await;
        let copies = counted(&held);
        let twice: Vec<_> = copies.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "{url} replays copies: {twice:?}");
        let ids: HashSet<String> = copies.keys().map(|(_, id)| id.clone()).collect();
        assert_eq!(ids, emitted, "{url} replays what was emitted");
    }

    // What the users saw.
    let [sse_got, ws_got] = readers;
    let (sse_got, ws_got) = (sse_got.await.unwrap(), ws_got.await.unwrap());
    for (name, got, notices) in [
        ("SSE reader", &sse_got, &notices[0]),
        ("WS reader", &ws_got, &notices[1]),
    ] {
        let context = format!("{}; its notices: {:?}", missed(got, &held), notices.all());
        assert_each_once_in_order(name, got, &emitted, &held, &context);
    }
    for (n, reader) in notices.iter().enumerate() {
        let resumed = reader
            .all()
            .iter()
            .any(|n| n.starts_with("Connected { resume: ") && !n.contains("resume: 0"));
        assert!(
            resumed,
            "reader {n} resumed on another relay from its positions: {:?}",
            reader.all()
        );
    }
    assert!(!relays[0].is_running());
    for relay in &mut relays[1..] {
        assert!(relay.is_running(), "a survivor died: {}", relay.log());
    }
}

/// What each relay of `urls` answers a batch of one fresh event, now.
async fn probe(urls: &[String]) -> Vec<u16> {
    let mut statuses = Vec::with_capacity(urls.len());
    for url in urls {
        let event = json_event("progress.status", &session_id(), 1);
        let r = aep_test_support::http::post_ndjson(url, TOKEN, &[event]).await;
        statuses.push(r.status().as_u16());
    }
    statuses
}

/// One poster's record: each request's status and the `(source, id)` of its events,
/// when it was sent and when it was answered.
#[derive(Debug, Default)]
struct Posted {
    answers: Vec<Answer>,
}

#[derive(Debug)]
struct Answer {
    sent: Instant,
    answered: Instant,
    status: u16,
    body: String,
    keys: Vec<Key>,
}

/// Posts batches of 10 fresh events of one session to `url` every 20 ms until `stop`,
/// counting the batches refused with `503` in `refused`.
async fn poster(url: String, stop: Arc<AtomicBool>, refused: Arc<AtomicUsize>) -> Posted {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let session = session_id();
    let mut seq = 0;
    let mut posted = Posted::default();
    while !stop.load(Ordering::Relaxed) {
        let batch: Vec<serde_json::Value> = (0..10)
            .map(|_| {
                seq += 1;
                json_event("progress.status", &session, seq)
            })
            .collect();
        let sent = Instant::now();
        let response = client
            .post(format!("{url}/events"))
            .bearer_auth(TOKEN)
            .header("aep-version", "0.1")
            .header("content-type", "application/x-ndjson")
            .body(aep_test_support::events::ndjson(&batch))
            .send()
            .await;
        let (status, body) = match response {
            Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
            Err(e) => (0, e.to_string()),
        };
        if status == 503 {
            refused.fetch_add(1, Ordering::Relaxed);
        }
        posted.answers.push(Answer {
            sent,
            answered: Instant::now(),
            status,
            body,
            keys: batch.iter().map(key_of).collect(),
        });
        tokio::time::sleep(MS(20)).await;
    }
    posted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn while_nats_is_down_ingest_answers_503_and_nothing_acknowledged_is_lost() {
    let Some(mut nats) = NatsServer::start_or_skip() else {
        return;
    };
    let stream = stream_name();
    let mut relays: Vec<RelayProcess> = (0..2).map(|_| relay(&nats, &stream)).collect();
    let urls: Vec<String> = relays.iter().map(|r| r.url().to_owned()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let refused: Vec<Arc<AtomicUsize>> = urls.iter().map(|_| Arc::default()).collect();
    let posters: Vec<_> = urls
        .iter()
        .zip(&refused)
        .map(|(url, refused)| {
            tokio::spawn(poster(url.clone(), Arc::clone(&stop), Arc::clone(refused)))
        })
        .collect();

    tokio::time::sleep(MS(800)).await;
    nats.kill();
    let down = Instant::now();
    // Down for a few seconds, and until each poster has had a batch refused: a batch in
    // flight when the server died waits up to the relay's NATS timeout (5 s) for its
    // acknowledgements, so a fixed outage shorter than that may see none refused.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while probe(&urls).await.iter().any(|s| *s != 503)
        || refused.iter().any(|n| n.load(Ordering::Relaxed) == 0)
    {
        assert!(
            Instant::now() < deadline,
            "ingest still answers other than 503 20 s after nats-server died"
        );
        tokio::time::sleep(MS(100)).await;
    }
    nats.restart().unwrap();
    let up = Instant::now();
    let outage = up - down;

    // The relays reconnect by themselves: each takes batches again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deadline = Instant::now() + PATIENCE;
    loop {
        if probe(&urls).await.iter().all(|s| *s == 202) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the relays did not take events again within {PATIENCE:?} of nats-server's restart"
        );
        tokio::time::sleep(MS(200)).await;
    }
    tokio::time::sleep(MS(500)).await;
    stop.store(true, Ordering::Relaxed);

    let mut acknowledged = Vec::new();
    for (url, task) in urls.iter().zip(posters) {
        let posted = task.await.unwrap();
        let statuses: Vec<u16> = posted.answers.iter().map(|a| a.status).collect();
        for Answer {
            sent,
            answered,
            status,
            body,
            ..
        } in &posted.answers
        {
            assert!(
                *status == 202 || *status == 503,
                "{url} answered {status} ({body}) across nats-server's outage of {outage:?}"
            );
            if *status == 503 {
                // AEP-0003 §3.2.4: a 5xx the emitter retries; the body says why
                assert!(
                    body.contains(r#""error":"storage-unavailable""#),
                    "{url}: a 503 that does not say the store is unavailable: {body}"
                );
            }
            // sent after nats-server was gone, answered before it was back: nothing
            // could have stored it
            assert!(
                !(*status == 202 && *sent > down && *answered < up),
                "{url} acknowledged a batch sent {:?} into nats-server's outage of {outage:?}",
                *sent - down
            );
        }
        assert!(
            statuses.contains(&503),
            "{url} never answered 503 while nats-server was down {outage:?}: {statuses:?}"
        );
        let after: Vec<u16> = posted
            .answers
            .iter()
            .filter(|a| a.answered > up)
            .map(|a| a.status)
            .collect();
        assert!(
            after.contains(&202),
            "{url} took nothing after nats-server came back: {after:?}"
        );
        acknowledged.extend(
            posted
                .answers
                .into_iter()
                .filter(|a| a.status == 202)
                .flat_map(|a| a.keys),
        );
    }

    // What got a 202 is stored, once, and every relay replays it.
    for url in &urls {
        let held = counted(&stored(url).await);
        let lost: Vec<_> = acknowledged
            .iter()
            .filter(|k| !held.contains_key(*k))
            .collect();
        assert!(
            lost.is_empty(),
            "{url}: {} of {} acknowledged events are not in the stream, e.g. {:?}",
            lost.len(),
            acknowledged.len(),
            lost.first()
        );
        let twice: Vec<_> = held.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "{url} replays copies: {twice:?}");
    }
    for relay in &mut relays {
        assert!(
            relay.is_running(),
            "a relay died with nats-server: {}",
            relay.log()
        );
    }
}
