//! Readers that do not read (AEP-0003 §8.4): they never hold up an emitter or another
//! reader, and they cost at most the hard bound.
#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

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

async fn subscribers(relay: &aep_relay::RelayHandle) -> u64 {
    let r = client()
        .get(format!("{}/healthz", relay.url()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    body(r).await["subscribers"].as_u64().unwrap()
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
            for batch in 0..40u64 {
                let body: String = (0..500)
                    .map(|i| {
                        let event = ev("progress.status", &flooded, batch * 500 + i);
                        format!("{}\n", with(event, "data", json!({ "pad": pad })))
                    })
                    .collect();
                let r = client()
                    .post(format!("{url}/events"))
                    .bearer_auth(TOKEN)
                    .header("aep-version", "0.1")
                    .header("content-type", "application/x-ndjson")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
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
        took < Duration::from_secs(2),
        "a one-event POST waited {took:?} behind readers that never read"
    );
    flood.await.unwrap();
    drop(readers);
    relay.shutdown().await.unwrap();
}
