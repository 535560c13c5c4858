//! The WebSocket emit sink claims its sessions again after a reconnect (AEP-0003 §4.1,
//! AEP-0004 §4): a relay routes a command only to a connection that holds the session,
//! and a new connection holds none until it carries one of the session's events.
#![cfg(feature = "ws")]
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::control::{ControlOptions, ControlTarget, SendOptions};
use aep_async::{Client, Emitter, WsSinkOptions};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::common::{claims, until_claims};

const TOKEN: &str = "t0ken";

/// A TCP pass-through to the relay whose connections can be cut, and which can refuse
/// new ones for a while (they are accepted and dropped at once).
struct Cutter {
    url: String,
    open: Arc<AtomicBool>,
    /// Connections passed through to the relay so far.
    passed: Arc<AtomicUsize>,
    pipes: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Cutter {
    async fn start(upstream: std::net::SocketAddr) -> Cutter {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let open = Arc::new(AtomicBool::new(true));
        let passed = Arc::new(AtomicUsize::new(0));
        let pipes: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (o, p, ps) = (open.clone(), passed.clone(), pipes.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !o.load(Ordering::SeqCst) {
                    continue; // dropped: the sink's connect fails and it backs off
                }
                let Ok(mut outbound) = TcpStream::connect(upstream).await else {
                    continue;
                };
                p.fetch_add(1, Ordering::SeqCst);
                ps.lock().unwrap().push(tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }));
            }
        });
        Cutter {
            url,
            open,
            passed,
            pipes,
            accept,
        }
    }

    /// Drops every connection passed through so far, both sides.
    fn cut(&self) {
        for pipe in self.pipes.lock().unwrap().drain(..) {
            pipe.abort();
        }
    }
}

impl Drop for Cutter {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnected_sink_claims_its_sessions_again_without_a_new_emit() {
    let relay = aep_relay::Relay::builder()
        .token(TOKEN)
        .start()
        .await
        .unwrap();
    let addr = relay
        .url()
        .trim_start_matches("http://")
        .parse::<std::net::SocketAddr>()
        .unwrap();
    let cutter = Cutter::start(addr).await;

    let decided = Arc::new(AtomicUsize::new(0));
    let d = decided.clone();
    let target = ControlTarget::new(["control.pause"], move |cmd| {
        d.fetch_add(1, Ordering::SeqCst);
        async move {
            cmd.accept().unwrap();
        }
    });
    // The agent reaches the relay through the cutter; the console connects directly.
    let sink = Client::new(&cutter.url)
        .token(TOKEN)
        .backoff(Duration::from_millis(20), Duration::from_millis(100))
        .ws_sink(WsSinkOptions::new("reclaim-agent", "host/1").command_hook(target.clone()))
        .unwrap();
    let emitter = Emitter::new("reclaim-agent", "host", sink);
    let session = target.attach(emitter.session("s-reclaim"));
    session.emit("session.started", json!({})).unwrap();
    // A second session the agent lets go of without ending it: the sink must not claim
    // it again, or the relay would route its commands here to time out.
    let gone = target.attach(emitter.session("s-gone"));
    gone.emit("session.started", json!({})).unwrap();
    emitter.flush().await;
    let emitted = emitter.stats().accepted;

    let client = Client::new(relay.url())
        .token(TOKEN)
        .backoff(Duration::from_millis(20), Duration::from_millis(100))
        .control(ControlOptions::new())
        .await
        .unwrap();
    assert!(until_claims(&client, "s-reclaim", 1).await, "never claimed");
    assert!(until_claims(&client, "s-gone", 1).await, "never claimed");
    drop(gone);

    // Cut the agent's connection and hold the way back shut until the relay has let go
    // of the old claim, so the claim seen next can only come from the new connection.
    cutter.open.store(false, Ordering::SeqCst);
    cutter.cut();
    assert!(
        until_claims(&client, "s-reclaim", 0).await,
        "the relay kept the dropped connection's claim"
    );
    cutter.open.store(true, Ordering::SeqCst);
    for _ in 0..1000 {
        if cutter.passed.load(Ordering::SeqCst) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        cutter.passed.load(Ordering::SeqCst) >= 2,
        "the sink did not reconnect"
    );

    // No emit since: the sink's reconnect alone claims the session again.
    assert!(
        until_claims(&client, "s-reclaim", 1).await,
        "the reconnected sink did not claim its session again"
    );
    let pause = |session| {
        let options = SendOptions::new().ack_window(Duration::from_secs(5));
        client.send("control.pause", session, options)
    };
    let ack = pause("s-reclaim").await.unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    assert_eq!(ack.session(), Some("s-reclaim"));
    assert_eq!(decided.load(Ordering::SeqCst), 1);
    assert_eq!(
        emitter.stats().accepted,
        emitted + 1,
        "the only event emitted since is the ack"
    );

    // The session let go of is not claimed again: the relay refuses at once.
    assert_eq!(claims(&client, "s-gone").await, 0);
    let refused = pause("s-gone").await.unwrap_err();
    assert!(refused.to_string().contains("no-route"), "{refused}");
    assert_eq!(decided.load(Ordering::SeqCst), 1);

    client.close().await;
    emitter.close().await;
    relay.shutdown().await.unwrap();
}
