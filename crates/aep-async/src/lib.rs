//! # aep-async: the Agent Event Protocol on tokio
//!
//! Emit events to a relay and consume them, with the protocol's delivery rules built
//! in: an [`Emitter`] that owns `(epoch, seq)` and never blocks or fails its host because
//! a relay is down, and a [`Subscription`] that is a [`futures::Stream`] of events with
//! `(source, id)` dedupe, resume positions and exact reconnects.
//!
//! ```no_run
//! use aep_async::{subscribe, Emitter, HttpSink, SubscribeOptions};
//! use futures::StreamExt;
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let emitter = Emitter::new("coder", "host-a", HttpSink::builder("http://127.0.0.1:8787").build()?);
//! let session = emitter.session("s1");
//! session.emit("session.started", json!({"cwd": "/work"}))?;
//! emitter.flush().await;
//!
//! let mut sub = subscribe("http://127.0.0.1:8787", SubscribeOptions::new().from_all().history_only());
//! while let Some(event) = sub.next().await {
//!     println!("{}", event.to_json());
//! }
//! # Ok(()) }
//! ```
//!
//! ## Layout
//!
//! - [`hub`]: [`Hub`], an in-process producer of the subscription model
//!   ([`aep_core::subscription`]), each subscriber a `Stream` of deliveries.
//! - `remote` (feature `ws`): `LifecycleConnection`, the subscription lifecycle
//!   against a relay's WebSocket (the Rust relay's), each subscription a `Stream`.
//! - [`error`]: [`TransportError`] (network, HTTP status, parse) and [`EmitError`].
//! - [`emit`]: [`Emitter`], [`SessionEmitter`], [`EmitOptions`].
//! - [`sink`]: the [`Sink`] trait; [`JsonlSink`], `HttpSink` (feature `http`), `WsSink`
//!   (feature `ws`); the bounded outbox that drops `debug`/`info` first.
//! - [`control`]: [`ControlClient`], [`ControlSender`], [`ControlTarget`], [`Duplex`]
//!   (AEP-0004 commands and acks).
//! - [`subscribe`](mod@subscribe): [`subscribe()`], [`SubscribeOptions`], [`Subscription`],
//!   [`Notice`]; SSE (feature `sse`) and WebSocket (feature `ws`) transports.
//!
//! ## Features
//!
//! `http` (HTTP emit), `sse` (SSE subscriptions), `ws` (WebSocket sink and
//! subscriptions), `rustls` (default TLS) or `native-tls`. All but `native-tls` are on
//! by default; each builds alone.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod control;
pub mod emit;
pub mod error;
pub mod hub;
#[cfg(feature = "ws")]
pub mod remote;
pub mod sink;
pub mod subscribe;
mod transport;

pub use aep_core::resume::ResumePosition;
#[cfg(feature = "ws")]
pub use control::{open_duplex, ClientOptions, ControlClient, Duplex, DuplexOptions};
pub use control::{Command, ControlError, ControlSender, ControlTarget, NackError, SendOptions};
pub use emit::{EmitOptions, Emitter, EmitterBuilder, SessionEmitter};
pub use error::{EmitError, TransportError, TransportErrorKind};
pub use hub::{Hub, HubSession, Subscriber};
#[cfg(feature = "ws")]
pub use remote::{LifecycleConnection, RemoteSubscriber};
#[cfg(feature = "http")]
pub use sink::http::{HttpSink, HttpSinkBuilder};
#[cfg(feature = "ws")]
pub use sink::ws::{CommandHook, WsSink, WsSinkBuilder};
pub use sink::{DeliveryReport, DeliveryStats, JsonlSink, ReportHandler, Sink, SinkFuture};
pub use subscribe::{subscribe, From, Notice, SubscribeOptions, Subscription, Transport};
