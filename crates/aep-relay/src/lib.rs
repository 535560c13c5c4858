//! # aep-relay: an Agent Event Protocol relay, embeddable and standalone
//!
//! An AEP-0003 relay: emitters `POST /events` (or speak WebSocket), consumers read
//! `GET /stream` (SSE) or subscribe on `/socket`, every session keeps a bounded replay
//! buffer, and control commands are routed to the one connection that owns their session
//! (AEP-0004 §4). It matches the reference relay surface for surface and limit for limit,
//! with the same environment variables, and adds a flow-controlled replay and a
//! backpressure policy that never drops anything for a reader that keeps up.
//!
//! Start one inside a test or a program:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let relay = aep_relay::Relay::builder().buffer(8).token("t").start().await?;
//! println!("emit to {}/events, consume from {}/stream", relay.url(), relay.url());
//! relay.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! or run the binary: `aep-relay --port 0 --token T --buffer 8` prints the address it
//! listens on as its first line.
//!
//! ## Layout
//!
//! - [`config`]: [`RelayConfig`], every limit with the reference default, and [`Token`]
//!   (compared in constant time, never printed).
//! - `server`: [`run`] (serve a listener until a future completes), [`Relay::builder`]
//!   and [`RelayHandle`].
//! - `http`: the HTTP surface (ingest, discovery, SSE, `/healthz`, `/connections`, CORS,
//!   the auth wall); `ws`: the WebSocket binding.
//! - `hub`: shared state, admission, routing, fan-out; `store`: the per-session replay
//!   buffers; `outbox`: per-reader queues and backpressure.
//! - `journal`: durable replay, an append-only JSONL log per session (`--data-dir`).
//! - `proto`: the one seam to `aep-core` (validation, attr-match, down-leveling, frames).
#![warn(missing_docs)]

pub mod config;
mod http;
mod hub;
mod journal;
mod outbox;
mod proto;
mod server;
mod store;
mod ws;

pub use config::{ConfigError, RelayConfig, Token};
pub use server::{run, Relay, RelayBuilder, RelayHandle};
