//! # agenteventprotocol-sdk: the Rust SDK for the Agent Event Protocol
//!
//! One dependency; features pick what compiles. The tokio API sits at the crate root
//! (as `reqwest` does), the rest in modules:
//!
//! | path | feature | what |
//! |---|---|---|
//! | [`core`] | always | envelopes, filters, projection, control state machines (no IO) |
//! | `aep::{Emitter, subscribe, ..}` | `async` (default) | emit and consume on tokio |
//! | `aep::control` | `async` (`ws` for the client) | commands and acks (AEP-0004) |
//! | `aep::blocking` | `blocking` | the same API for synchronous code |
//! | `aep::relay` | `relay` | the embeddable relay |
//! | `aep::testing` | `testing` | relay-free test doubles |
//!
//! Transports: `http` (emit over HTTP), `sse` (subscribe over SSE), `ws` (WebSocket
//! emit, subscribe and control); TLS: `rustls` (default) or `native-tls`. The default is
//! `async` with every transport over rustls.
//!
//! ```no_run
//! # #[cfg(all(feature = "http", feature = "sse"))]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use aep::{subscribe, Emitter, HttpSink, SubscribeOptions};
//! use futures::StreamExt;
//! use serde_json::json;
//!
//! let emitter = Emitter::new("coder", "host-a", HttpSink::builder("http://127.0.0.1:8787").build()?);
//! emitter.session("s1").emit("session.started", json!({"cwd": "/work"}))?;
//! emitter.flush().await;
//!
//! let mut sub = subscribe("http://127.0.0.1:8787", SubscribeOptions::new().from_all().history_only());
//! while let Some(event) = sub.next().await {
//!     println!("{} {}", event.event_type(), event.id());
//! }
//! # Ok(()) }
//! ```
//!
//! ## Layout
//!
//! - [`core`]: `aep-sdk-core`, every protocol rule, sans-IO.
//! - crate root (feature `async`): everything `aep-async` exports, its `control`
//!   module included.
//! - `blocking` (feature `blocking`): `aep-blocking`.
//! - `relay` (feature `relay`): `aep-relay`.
//! - `testing` (feature `testing`): `aep-testing`.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use aep_core as core;

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use aep_async::*;
#[cfg(feature = "blocking")]
#[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
pub use aep_blocking as blocking;
#[cfg(feature = "relay")]
#[cfg_attr(docsrs, doc(cfg(feature = "relay")))]
pub use aep_relay as relay;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use aep_testing as testing;

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
