//! Readers that do not read (AEP-0003 §8.4): they never hold up an emitter or another
//! reader, and they cost at most the hard bound.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;

/// An SSE reader that sends its request and then never reads a byte, with a small
/// receive window so the relay's side fills quickly.
async fn stuck_reader(relay: &aep_relay::RelayHandle) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(relay.local_addr()).await.unwrap();
    let request =
        format!("GET /stream HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// Thirty SSE readers that never read, an emitter flooding one session: another
/// emitter's one-event POST to another session is answered at once. (Each reader past
/// its soft bound used to be waited for in turn, a lag grace each: 30 s.) The bound
/// checks for a hang; it is not a measurement.
#[tokio::test]
async fn readers_that_never_read_hold_up_no_emitter() {
    let relay = builder().start().await.unwrap();
    let mut readers = Vec::new();
    for _ in 0..30 {
        readers.push(stuck_reader(&relay).await);
    }
    for _ in 0..500 {
        if subscribers(&relay).await == 30 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(subscribers(&relay).await, 30);

    let flood = {
        let url = relay.url().to_owned();
        let flooded = session();
        tokio::spawn(async move {
            let pad = "x".repeat(2000);
            for batch in 0..16u64 {
                let events: Vec<Value> = (0..500)
                    .map(|i| {
                        let event = ev("progress.status", &flooded, batch * 500 + i);
                        with(event, "data", json!({ "pad": pad }))
                    })
                    .collect();
                let r = post_ndjson_at(&url, &events).await.unwrap();
                assert_eq!(r.status(), 202);
            }
        })
    };
    // the readers' sockets are full and their queues past the soft bound by now
    tokio::time::sleep(Duration::from_secs(2)).await;
    let started = Instant::now();
    let other: Value = ev("session.started", &session(), 0);
    let answer = client()
        .post(format!("{}/events", relay.url()))
        .bearer_auth(TOKEN)
        .header("aep-version", "0.1")
        .header("content-type", "application/json")
        .body(other.to_string())
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .expect("the POST is answered");
    let took = started.elapsed();
    assert_eq!(answer.status(), 202);
    assert!(
        took < Duration::from_secs(10),
        "a one-event POST waited {took:?} behind readers that never read"
    );
    flood.await.unwrap();
    drop(readers);
    relay.shutdown().await.unwrap();
}

/// The peak memory these floods may cost the relay: the hard bound (8 MiB) and the
/// socket buffers, far under what they reached unbounded (512 MiB and 412 MiB).
const PEAK_MIB: u64 = 150;

/// Whether this platform shows a process's peak memory: Linux must (a skip there would
/// hide a broken test), elsewhere the test says why it skips.
fn peak_rss_readable(relay: &RelayProcess, test: &str) -> bool {
    let readable = relay.peak_rss_kib().is_some();
    if cfg!(target_os = "linux") {
        assert!(readable, "{test}: /proc/PID/status shows no VmHWM");
    } else if !readable {
        eprintln!(
            "skipped: {test} because the relay's peak RSS is read from /proc/PID/status (Linux)"
        );
    }
    readable
}

/// Waits until the relay holds `n` WebSocket connections; `false` after `within`.
async fn connections_fall_to(relay: &RelayProcess, n: u64, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if relay.health().await["connections"].as_u64() == Some(n) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn hello(ws: &mut Ws, role: &str, capabilities: Value) {
    ws.send(&json!({
        "type": "hello", "versions": ["0.1"], "role": role,
        "identity": { "agent": "agent-a", "instance": "i-1" },
        "capabilities": capabilities,
    }))
    .await;
    assert_eq!(ws.recv().await.unwrap()["type"], "hello");
}

/// An emitter's hello declares 1 MB of `capabilities.emits`, and a consumer that never
/// reads asks for the roster 500 times: every reply counts toward the consumer's hard
/// bound, so it is disconnected there and the relay's memory stays bounded (the replies
/// were queued at a size of 0: 512 MiB in 3 s, never returned).
#[tokio::test]
async fn a_roster_flood_from_a_reader_that_never_reads_is_cut_at_the_hard_bound() {
    use futures::SinkExt;
    let relay = RelayProcess::start(&["--max-hello", "2097152", "--drain-timeout-ms", "1000"]);
    if !peak_rss_readable(&relay, "the roster flood") {
        return;
    }
    let emits: Vec<String> = (0..55_000).map(|i| format!("x.category{i:06}")).collect();
    let mut emitter = Ws::connect_url(&relay.socket_url()).await;
    hello(&mut emitter, "emitter", json!({ "emits": emits })).await;
    let s = session();
    emitter.send(&ev("session.started", &s, 0)).await;
    // a consumer that reads sees the claim, with its declarations, once
    let mut probe = Ws::connect_url(&relay.socket_url()).await;
    hello(&mut probe, "consumer", json!({})).await;
    let mut entries = 0;
    for _ in 0..100 {
        probe.send(&json!({ "type": "roster", "id": "r" })).await;
        let reply = probe.recv().await.unwrap();
        entries = reply["entries"].as_array().unwrap().len();
        if entries == 1 {
            assert_eq!(
                reply["entries"][0]["emits"].as_array().unwrap().len(),
                55_000
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(entries, 1, "the claim never showed in the roster");
    drop(probe);
    assert!(connections_fall_to(&relay, 1, Duration::from_secs(10)).await);

    let mut flood = Ws::connect_url(&relay.socket_url()).await;
    hello(&mut flood, "consumer", json!({})).await;
    for i in 0..500 {
        let request = json!({ "type": "roster", "id": format!("r-{i}") }).to_string();
        if flood
            .stream
            .feed(Message::Text(request.into()))
            .await
            .is_err()
        {
            break;
        }
    }
    let _ = flood.stream.flush().await;
    assert!(
        connections_fall_to(&relay, 1, Duration::from_secs(30)).await,
        "the consumer that never reads was not disconnected"
    );
    let peak = relay.peak_rss_kib().unwrap() / 1024;
    eprintln!("roster flood: peak RSS {peak} MiB");
    assert!(peak < PEAK_MIB, "peak RSS {peak} MiB under a roster flood");
    drop(emitter);
}

/// Two million `ping` frames from a peer that never reads: the `pong` replies count
/// toward its hard bound, so it is disconnected there (they were queued at a size of 0:
/// 412 MiB, never disconnected).
#[tokio::test]
async fn a_ping_flood_from_a_reader_that_never_reads_is_cut_at_the_hard_bound() {
    use futures::SinkExt;
    let relay = RelayProcess::start(&["--drain-timeout-ms", "1000"]);
    if !peak_rss_readable(&relay, "the ping flood") {
        return;
    }
    let mut ws = Ws::connect_url(&relay.socket_url()).await;
    hello(&mut ws, "consumer", json!({})).await;
    let ping = r#"{"type":"ping","t":1}"#;
    let mut sent = 0u32;
    while sent < 2_000_000 {
        if ws.stream.feed(Message::Text(ping.into())).await.is_err() {
            break;
        }
        sent += 1;
        if sent % 1024 == 0 && ws.stream.flush().await.is_err() {
            break;
        }
    }
    assert!(
        connections_fall_to(&relay, 0, Duration::from_secs(30)).await,
        "the peer that never reads was not disconnected"
    );
    let peak = relay.peak_rss_kib().unwrap() / 1024;
    eprintln!(
        "ping flood: {sent} pings sent before the relay cut the peer off; peak RSS {peak} MiB"
    );
    assert!(sent < 2_000_000, "the relay took every ping");
    assert!(peak < PEAK_MIB, "peak RSS {peak} MiB under a ping flood");
}

/// An SSE reader that never reads is disconnected past the hard bound, even though its
/// socket takes nothing more: the connection is dropped once the drain timeout passes,
/// and its subscription with it.
#[tokio::test]
async fn an_sse_reader_that_never_reads_is_dropped_past_the_hard_bound() {
    let config = aep_relay::RelayConfig::default()
        .with_token(TOKEN)
        .with_buffer(8)
        .with_soft_backpressure(16 << 10)
        .with_hard_backpressure(256 << 10)
        .with_drain_timeout(Duration::from_millis(300));
    let relay = builder().config(config).start().await.unwrap();
    let reader = stuck_reader(&relay).await;
    for _ in 0..500 {
        if subscribers(&relay).await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let s = session();
    let pad = "x".repeat(2000);
    let mut gone = false;
    // `notice` is never dropped: the reader's queue can only grow to the hard bound
    for batch in 0..50u64 {
        let events: Vec<Value> = (0..100)
            .map(|i| {
                let event = with(
                    ev("progress.status", &s, batch * 100 + i),
                    "severity",
                    json!("notice"),
                );
                with(event, "data", json!({ "pad": pad }))
            })
            .collect();
        assert_eq!(post_ndjson(&relay, &events).await.status(), 202);
        if subscribers(&relay).await == 0 {
            gone = true;
            break;
        }
    }
    for _ in 0..200 {
        if gone {
            break;
        }
        gone = subscribers(&relay).await == 0;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "a reader past the hard bound was held");
    drop(reader);
    relay.shutdown().await.unwrap();
}
