//! # agenteventprotocol-sdk: the Rust SDK for the Agent Event Protocol
//!
//! One dependency; features pick what compiles. The tokio API's everyday types sit at
//! the crate root (as `reqwest` does), the rest in modules:
//!
//! | path | feature | what |
//! |---|---|---|
//! | [`protocol`] | always | envelopes, filters, projection, control state machines (no IO) |
//! | `aep::{Client, Emitter, ..}` | `async` (default) | emit and consume on tokio: a `Client` opens every connection |
//! | `aep::{client, emit, sink, delivery, subscribe, error}` | `async` (`http` for `delivery`) | the same, with every option type |
//! | `aep::control` | `async` (`ws` for the client) | commands and acks (AEP-0004) |
//! | `aep::lifecycle` | `async` (`ws` for a relay) | the subscription lifecycle model: `Hub`, `LifecycleConnection` |
//! | `aep::blocking` | `blocking` | the same API for synchronous code |
//! | `aep::relay` | `relay` | the embeddable relay |
//! | `aep::testing` | `testing` | relay-free test doubles |
//! | `aep::bridge` | `bridge` | CloudEvents, OpenTelemetry (OTLP) and OCSF bridges and exporters (AEP-0005) |
//! | `aep::tracing` | `tracing` | a `tracing_subscriber::Layer`: an instrumented agent's spans as AEP events |
//!
//! Transports: `http` (emit over HTTP), `sse` (subscribe over SSE), `ws` (WebSocket
//! emit, subscribe and control); TLS: `rustls` (default) or `native-tls`. The default is
//! `async` with every transport over rustls. An item that needs a feature says so in
//! its docs; naming a transport that is compiled out does not compile.
//!
//! ```no_run
//! # #[cfg(all(feature = "http", feature = "sse"))]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use aep::{Client, Emitter, HttpSinkOptions, SubscribeOptions};
//! use futures::StreamExt;
//! use serde_json::json;
//!
//! let relay = Client::new("http://127.0.0.1:8787");
//! let emitter = Emitter::new("coder", "host-a", relay.http_sink(HttpSinkOptions::new())?);
//! emitter.session("s1").emit("session.started", json!({"cwd": "/work"}))?;
//! emitter.flush().await;
//!
//! let mut sub = relay.subscribe(SubscribeOptions::new().from_all().history_only());
//! while let Some(event) = sub.next().await {
//!     println!("{} {}", event.event_type(), event.id());
//! }
//! # Ok(()) }
//! ```
//!
//! ## Layout
//!
//! - [`protocol`]: `aep-sdk-core`, every protocol rule, sans-IO. (Not `core`: under
//!   `use aep::*` that would shadow the `core` crate, as an `aep::From` would the
//!   prelude's `From`.)
//! - crate root (feature `async`): the everyday names of `aep-async`, listed one by one
//!   below (nothing that would shadow the prelude under `use aep::*`); its modules
//!   `client`, `emit`, `sink`, `delivery`, `subscribe`, `control`, `lifecycle` and
//!   `error` hold the rest.
//! - `blocking` (feature `blocking`): `aep-blocking`.
//! - `relay` (feature `relay`): `aep-relay`.
//! - `testing` (feature `testing`): `aep-testing`.
//! - `bridge` (feature `bridge`): `aep-bridge`.
//! - `tracing` (feature `tracing`): `aep-tracing`.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use aep_core as protocol;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use aep_async::delivery;
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use aep_async::{client, control, emit, error, lifecycle, sink, subscribe};

// The everyday names at the root, one by one: a name added to aep-async does not reach
// `use aep::*` users unless it is listed here.
#[cfg(all(feature = "async", feature = "rustls"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "async", feature = "rustls"))))]
pub use aep_async::{tls, TlsCaError};
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use aep_async::{
    Client, ControlError, ControlSender, ControlTarget, DeliveryReport, DeliveryStats, EmitAttrs,
    EmitError, EmitOptions, EmitPermit, Emitter, EmitterBuilder, JsonlSink, Limit, LimitExceeded,
    Notice, ReadLimits, Relays, ReportHandler, ReserveFuture, ResumePosition, SessionEmitter, Sink,
    SinkFuture, StartFrom, SubscribeOptions, Subscription, Transport, TransportError,
    TransportErrorKind,
};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use aep_async::{CommandHook, ControlClient, WsSink, WsSinkOptions};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use aep_async::{HttpSink, HttpSinkOptions};
#[cfg(feature = "blocking")]
#[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
pub use aep_blocking as blocking;
#[cfg(feature = "bridge")]
#[cfg_attr(docsrs, doc(cfg(feature = "bridge")))]
pub use aep_bridge as bridge;
#[cfg(feature = "relay")]
#[cfg_attr(docsrs, doc(cfg(feature = "relay")))]
pub use aep_relay as relay;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use aep_testing as testing;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub use aep_tracing as tracing;

/// The AEP version this SDK implements (`"0.1"`).
///
/// ```
/// assert_eq!(aep::SPEC_VERSION, "0.1");
/// ```
pub const SPEC_VERSION: &str = aep_core::AEP_VERSION;

/// The README's Rust examples, compiled as doctests so the README cannot drift from the
/// API.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
