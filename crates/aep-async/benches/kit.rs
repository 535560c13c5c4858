//! The agent author's kit, measured (issue 33): what the emit-scope rule costs each
//! emit, and what one `ControlTarget::ask` costs end to end over a real relay.
//!
//! ```text
//! cargo bench -p aep-async --bench kit
//! ```
//!
//! - `scope/check`: the rule alone, as every emit runs it (`EventType::parse`, then
//!   `emit_scope`, AEP-0001 §5.2), for a session type, an agent type and a command;
//!   `scope/emit` is a whole `SessionEmitter::emit` of a `tool.completed` into a sink
//!   that serializes it (what `HttpSink::accept` does before queueing), for scale.
//! - `ask/round_trip`: one attention request asked and answered through the embedded
//!   relay: `attention.requested` emitted over the WebSocket sink, read by a console
//!   subscribed to the session (SSE), answered with `control.attention.respond`
//!   through its control client, routed by the relay to the agent's connection,
//!   checked and acked by the target, `attention.answered` and `attention.resolved`
//!   emitted, and `ask` returns. Everything runs on one machine: the figure is the
//!   SDK's and the relay's latency, no network's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aep_async::control::{ControlOptions, ControlTarget, RejectReason, SendOptions};
use aep_async::{Client, Emitter, Notice, SessionEmitter, SubscribeOptions, WsSinkOptions};
use aep_core::attention::{AttentionRequest, ALLOW};
use aep_core::types::EventType;
use criterion::{criterion_group, criterion_main, Criterion};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::Notify;

mod common;
use common::SerializingSink;

fn scope(c: &mut Criterion) {
    let mut group = c.benchmark_group("scope");
    for ty in ["tool.completed", "agent.heartbeat", "control.pause"] {
        group.bench_function(format!("check/{ty}"), |b| {
            b.iter(|| EventType::parse(black_box(ty)).map(|t| t.emit_scope()))
        });
    }
    let session =
        Emitter::new("bench-agent", "bench-host", SerializingSink::default()).session("bench");
    let payload = json!({"tool": {"name": "grep", "call_id": "call-1"}, "duration_ms": 3});
    group.bench_function("emit/tool.completed", |b| {
        b.iter(|| black_box(session.emit("tool.completed", &payload).unwrap()))
    });
    group.finish();
}

/// An agent that asks on `session`, and a console that answers every request `allow`.
struct Rig {
    rt: tokio::runtime::Runtime,
    target: ControlTarget,
    session: Arc<SessionEmitter>,
    emitter: Emitter,
    _relay: aep_relay::RelayHandle,
}

const TOKEN: &str = "kit-bench";
const SESSION: &str = "kit-bench";

fn rig() -> Rig {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (relay, target, session, emitter) = rt.block_on(async {
        let relay = aep_relay::Relay::builder()
            .token(TOKEN)
            .start()
            .await
            .unwrap();
        let client = Client::new(relay.url()).token(TOKEN);
        let target = ControlTarget::new(["control.attention.respond"], |cmd| async move {
            let _ = cmd.reject(RejectReason::Invalid, "no request of that id is pending");
        });
        let sink = client
            .ws_sink(WsSinkOptions::new("kit-agent", "bench/1").command_hook(target.clone()))
            .unwrap();
        let emitter = Emitter::new("kit-agent", "bench", sink);
        let session = target.attach(emitter.session(SESSION));
        // The first event claims the session on the agent's connection.
        session.emit("session.started", json!({})).unwrap();
        emitter.flush().await;

        // The console: a subscription to the session's requests, and a control client
        // once the relay routes the session's commands.
        let connected = Arc::new(Notify::new());
        let options = SubscribeOptions::new()
            .filter(json!({"session": SESSION, "type": "attention.requested"}))
            .on_notice({
                let connected = connected.clone();
                move |notice| {
                    if let Notice::Connected { .. } = notice {
                        connected.notify_one();
                    }
                }
            });
        let mut feed = client.subscribe(options);
        connected.notified().await;
        let console = client.control(ControlOptions::new()).await.unwrap();
        while !console
            .roster()
            .await
            .unwrap()
            .iter()
            .any(|e| e.session == SESSION)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::spawn(async move {
            while let Some(request) = feed.next().await {
                let answer = SendOptions::new()
                    .subject(request.id())
                    .data(json!({"answer": {"option": ALLOW}}));
                console
                    .send("control.attention.respond", SESSION, answer)
                    .await
                    .expect("the agent acks the answer");
            }
        });
        (relay, target, session, emitter)
    });
    Rig {
        rt,
        target,
        session,
        emitter,
        _relay: relay,
    }
}

fn ask(c: &mut Criterion) {
    let rig = rig();
    let mut group = c.benchmark_group("ask");
    group.bench_function("round_trip", |b| {
        b.iter_custom(|iters| {
            rig.rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let request = AttentionRequest::permission("Run `make deploy`?")
                        .timeout(Duration::from_secs(30));
                    let answer = rig.target.ask(&rig.session, request).await.unwrap();
                    assert!(answer.is(ALLOW));
                }
                start.elapsed()
            })
        })
    });
    group.finish();
    rig.rt.block_on(rig.emitter.close());
}

criterion_group! {
    name = benches;
    // A shared machine: short, repeated samples; the median and its spread are what
    // PERFORMANCE.md reports.
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = scope, ask
}
criterion_main!(benches);
