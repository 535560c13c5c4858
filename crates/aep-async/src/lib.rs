//! # aep-async: the Agent Event Protocol on tokio
//!
//! Emit events to a relay and consume them, with the protocol's delivery rules built
//! in: an [`Emitter`] that owns `(epoch, seq)` and never blocks or fails its host because
//! a relay is down, and a [`Subscription`] that is a [`futures::Stream`] of events with
//! `(source, id)` dedupe, resume positions and exact reconnects.
//!
//! One shape for every connection: a [`Client`] says where the relay is (or the relays
//! of a cluster, [`Relays`]) and how to reach it, and everything is opened on it:
//! `subscribe`, `http_sink`, `ws_sink`, `ws_connection`, `control`, `duplex`,
//! `lifecycle`, each taking the options of what it opens.
//!
//! ```no_run
//! use aep_async::{Client, Emitter, HttpSinkOptions, SubscribeOptions};
//! use futures::StreamExt;
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let relay = Client::new("http://127.0.0.1:8787");
//! let emitter = Emitter::new("coder", "host-a", relay.http_sink(HttpSinkOptions::new())?);
//! let session = emitter.session("s1");
//! session.emit("session.started", json!({"cwd": "/work"}))?;
//! emitter.flush().await;
//!
//! let mut sub = relay.subscribe(SubscribeOptions::new().from_all().history_only());
//! while let Some(event) = sub.next().await {
//!     println!("{}", event.to_json());
//! }
//! # Ok(()) }
//! ```
//!
//! ## Layout
//!
//! - [`client`](mod@client): [`Client`], the one way in: where, with what token, within
//!   what connect timeout, on what backoff, as whom.
//! - [`emit`]: [`Emitter`], [`SessionEmitter`], [`EmitOptions`], [`EmitPermit`]
//!   (`emit` never waits; `emit_wait` waits for room instead of dropping);
//!   [`EpochStore`], the per-user record of the epochs sessions took.
//! - [`sink`]: the [`Sink`] trait; [`JsonlSink`], `HttpSink` (feature `http`), `WsSink`
//!   (feature `ws`); the bounded outbox that drops `debug`/`info` first, or makes a
//!   waiting producer wait.
//! - `delivery` (feature `http`): the one HTTP delivery worker (`HttpDelivery`) under
//!   the HTTP sink and the bridge's exporters, its `BatchOptions` and `RetryPolicy`.
//! - [`subscribe`](mod@subscribe): [`Client::subscribe`], [`SubscribeOptions`],
//!   [`Subscription`], [`Notice`]: the event stream of AEP-0003 over SSE (feature `sse`)
//!   or WebSocket (feature `ws`, with `Client::ws_connection` to multiplex).
//! - [`control`]: `ControlClient` and `Duplex` (feature `ws`), [`ControlSender`],
//!   [`ControlTarget`] (AEP-0004 commands and acks).
//! - [`lifecycle`]: the subscription lifecycle model (requested, created or rejected,
//!   cancelled, expired; delivery modes): [`lifecycle::Hub`] in process,
//!   `lifecycle::LifecycleConnection` (feature `ws`) against a relay that serves it.
//! - [`error`]: [`TransportError`] (network, HTTP status, parse) and [`EmitError`].
//! - [`Relays`]: one relay's URL, or several of one cluster that every connection fails
//!   over between.
//! - [`ReadLimits`]: what every reader takes from a relay (the longest SSE line, the
//!   largest event and WebSocket message, the idle timeout) before it drops the
//!   connection and reconnects; [`LimitExceeded`] names the bound passed.
//!
//! Every WebSocket of the crate is opened and read through one internal transport layer
//! (`hello`, `ping`, `closing`, binary refusal, the reconnect schedule), so every loop
//! behaves the same on the wire.
//!
//! ## Features
//!
//! `http` (HTTP emit), `sse` (SSE subscriptions), `ws` (WebSocket sink, subscriptions,
//! control and the lifecycle connection), `rustls` (default TLS) or `native-tls`. All
//! but `native-tls` are on by default; each builds alone. An item that needs a feature
//! says so in its docs.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod callback;
pub mod client;
pub mod control;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod delivery;
pub mod emit;
pub mod error;
pub mod lifecycle;
mod limits;
mod relays;
pub mod sink;
pub mod subscribe;
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub mod tls;
mod transport;

pub use aep_core::resume::ResumePosition;
pub use client::Client;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use control::ControlClient;
pub use control::{ControlError, ControlSender, ControlTarget};
pub use emit::{
    EmitAttrs, EmitOptions, EmitPermit, Emitter, EmitterBuilder, EpochStore, SessionEmitter,
};
pub use error::{EmitError, TransportError, TransportErrorKind};
pub use limits::{Limit, LimitExceeded, ReadLimits};
pub use relays::Relays;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use sink::http::{HttpSink, HttpSinkOptions};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use sink::ws::{CommandHook, WsSink, WsSinkOptions};
pub use sink::{
    DeliveryReport, DeliveryStats, JsonlSink, ReportHandler, ReserveFuture, Sink, SinkFuture,
};
pub use subscribe::{Notice, StartFrom, SubscribeOptions, Subscription, Transport};
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub use tls::TlsCaError;

// What a user shares across tasks and threads must stay shareable: a change that makes
// one of these !Send or !Sync fails here, not in a user's build.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Emitter>();
    assert_send_sync::<SessionEmitter>();
    assert_send_sync::<JsonlSink>();
    assert_send_sync::<ControlSender>();
    assert_send_sync::<ControlTarget>();
    assert_send_sync::<ControlError>();
    assert_send_sync::<EmitError>();
    assert_send_sync::<TransportError>();
    assert_send_sync::<SubscribeOptions>();
    assert_send_sync::<Relays>();
    assert_send_sync::<EpochStore>();
    assert_send_sync::<Client>();
    assert_send_sync::<lifecycle::Hub>();
    assert_send_sync::<lifecycle::HubSession>();
    #[cfg(feature = "http")]
    assert_send_sync::<HttpSink>();
    #[cfg(feature = "ws")]
    {
        assert_send_sync::<WsSink>();
        assert_send_sync::<ControlClient>();
        assert_send_sync::<control::Duplex>();
        assert_send_sync::<subscribe::ws::WsConnection>();
        assert_send_sync::<lifecycle::LifecycleConnection>();
    }
    const fn assert_send<T: Send>() {}
    assert_send::<Subscription>();
    assert_send::<EmitPermit<'static>>();
    assert_send::<lifecycle::Subscriber>();
    assert_send::<control::Instructions>();
    #[cfg(feature = "ws")]
    assert_send::<lifecycle::RemoteSubscriber>();
};
