//! # aep-relay: an Agent Event Protocol relay, embeddable and standalone
//!
//! An AEP-0003 relay: emitters `POST /events` (or speak WebSocket), consumers read
//! `GET /stream` (SSE) or subscribe on `/socket`, every session keeps a bounded replay
//! buffer, and control commands are routed to the one connection that owns their session
//! (AEP-0004 §4). It matches the reference relay surface for surface and limit for limit,
//! with the same environment variables, and adds a flow-controlled replay and a
//! backpressure policy that never drops anything for a reader that keeps up, while a
//! reader that does not read holds up no one and costs at most its hard bound. Limits of
//! its own bound what one party may take (connections, header and `hello` time, `hello`
//! size, subscriptions per connection, replay bytes; see [`RelayConfig`]), and with a
//! data directory a `2xx` means the events are on disk ([`Fsync`]).
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
//! - `server`: [`run`] (serve a listener until a future completes), [`Server`] (restore,
//!   then serve), [`Relay::builder`] and [`RelayHandle`]; the accept loop, with the
//!   connection limit and the header-read timeout.
//! - `http`: the HTTP surface (ingest, discovery, SSE, `/healthz`, `/connections`, CORS,
//!   the auth wall); `ws`: the WebSocket binding.
//! - `hub`: the shared state and the order in which events reach it; `line`: one event
//!   read and checked; `encoded`: its frame; `admission`: what happens to each event;
//!   `routing`: connections, claims, commands, the roster; `fanout`: live delivery;
//!   `outbox`: per-reader queues and backpressure.
//! - `storage`: the replay store's trait; `memory`: the per-session replay buffers;
//!   `journal`: durable replay (`--data-dir`), one file of stored events per session,
//!   written before an ingest is answered.
//! - `nats` (feature `nats`): the relay cluster on NATS JetStream, a store several
//!   relays share and its feed; [`NatsCluster`] (always) is its option.
//! - `subscriptions`: the subscription model's lifecycle on `/socket` (below).
//! - `proto`: the one seam to `aep-core` (validation, attr-match, down-leveling, frames).
//!
//! ## A cluster on NATS JetStream
//!
//! With [`NatsCluster`] ([`RelayBuilder::nats`], `--nats URL`; the crate's feature
//! `nats`) several relays share one JetStream stream and any of them answers the whole
//! protocol: an ingest is `202` once JetStream acknowledged every event (`503` while
//! NATS is unreachable, `413` past its `max_payload`), `(source, id)` is deduped across
//! relays within the dedupe horizon, replay is served from the stream, and every relay
//! fans out live what any of them ingests. What differs from a single relay:
//! `--buffer` is the stream's and every relay must agree with it; `--max-sessions` does
//! not bound the stream, and `--max-session-bytes` and `--max-store-bytes` are refused
//! (bound the stream with the server's `max_bytes`/`max_age`); dedupe lasts the horizon,
//! not the buffer; `from=all` serves sessions interleaved in admission order;
//! `--data-dir` is refused. The README's "Scaling out" section has the commands.
//!
//! ## The subscription model on `/socket`
//!
//! Beside the AEP-0003 frames (`hello`, `subscribe`/`subscribed`, `unsubscribe`,
//! `roster`, `ping`, `error`, …) and events, a connection that has said `hello` may use
//! the lifecycle of [`aep_core::subscription`]. Its messages are `{"type", "payload"}`
//! objects whose dotted types look like event types; the relay recognizes the five
//! names before anything else and never ingests or fans them out.
//!
//! | consumer sends | relay answers |
//! |---|---|
//! | `subscription.requested` (payload: the filter) | `subscription.created`, then deliveries; or `subscription.rejected`, its message naming the field at fault |
//! | `subscription.cancelled` (`subscription_id`) | `subscription.cancelled`, after which nothing more is delivered for it (nothing for an id the connection does not hold) |
//! | | `subscription.expired` when [`RelayConfig::with_subscription_ttl`] passes |
//! | a malformed `subscription.cancelled` | an `error` frame, code `invalid-message` |
//! | `created`, `rejected` or `expired` (a producer's messages) | nothing: ignored like an unknown frame |
//!
//! A delivery is `{"subscription_id":"sub_0001","delivery":{"mode":"at_least_once"},
//! "event":{…}}` ([`aep_core::subscription::DeliveredEvent`]), the envelope forwarded byte for
//! byte; it is the only message on the socket without a `type`. A `from_cursor`
//! (`{session}:{epoch}:{seq}`, the SSE id) older than the replay buffer is preceded by
//! the AEP-0003 `replay-exhausted` frame with `sub` set to the subscription id.
//!
//! The connection is the session: ids are unique on it and closing it cancels all its
//! subscriptions. The relay honors every mode up to `replayable` (requests are never
//! upgraded). Under backpressure (AEP-0003 §8.4) `best_effort` deliveries of `debug` and
//! `info` events may be dropped; `at_least_once` and `replayable` ones are never
//! dropped: past the hard bound the reader is disconnected (`closing`, close 1013) and
//! resumes from its own positions. `replayable` with `from_cursor` serves the buffered
//! events after the cursor, then goes live, each event once.
#![warn(missing_docs)]

mod admission;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;
pub mod config;
mod console;
mod delivery;
mod directory;
mod encoded;
mod exposure;
mod fanout;
mod http;
mod hub;
mod journal;
mod line;
mod memory;
mod nats;
mod outbox;
mod peers;
mod proto;
mod response;
mod routing;
mod server;
mod storage;
mod subscriptions;
mod tls;
mod ws;

pub use config::{ConfigError, Fsync, NatsCluster, RelayConfig, Token};
pub use server::{run, Relay, RelayBuilder, RelayHandle, Server};
pub use tls::{TlsFiles, TlsReloader};
