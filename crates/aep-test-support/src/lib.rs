//! What the SDK's integration tests share, so each helper is written once (never
//! published).
//!
//! - [`mod@bench`]: the benches' knobs, read from the environment;
//! - [`events`]: events as parsed envelopes or as JSON values, and NDJSON bodies;
//! - [`golden`]: the conformance corpus's golden stream, as lines and as events;
//! - [`external`]: what a test needs beyond Cargo (the shared directory, Node, rustfmt),
//!   and skipping, saying why, where it is missing;
//! - [`http`]: posting events to a relay as a plain HTTP producer;
//! - [`nats`]: a real `nats-server` with JetStream on a port of its own choosing, for
//!   the relay cluster's tests;
//! - [`process`]: a relay as a process of its own (started, killed `-9`, its peak
//!   memory read), for the cluster's fault tests and bench;
//! - [`reference`](mod@reference): the reference relay (Node) as a child process on a port it took
//!   itself, for the tests and benches run against it;
//! - [`relay`]: the embedded relay on a port it holds for its whole life, so a test
//!   can stop it and start it again on the same address without racing anyone for the
//!   port;
//! - [`servers`]: servers that misbehave on purpose (silent, scripted) and canned
//!   HTTP responses;
//! - [`sse`]: an SSE parser for tests that read a stream by hand;
//! - [`task`]: a test server's background task, aborted when the server is dropped;
//! - [`tls`]: a private CA and the certificates it signs, made at run time;
//! - [`wait`]: polling a condition with a deadline, async or blocking.
#![allow(clippy::unwrap_used)]

pub mod bench;
pub mod browser;
pub mod disk;
pub mod events;
pub mod external;
pub mod golden;
pub mod http;
pub mod nats;
pub mod process;
pub mod reference;
pub mod relay;
pub mod servers;
pub mod sse;
pub mod task;
pub mod tls;
pub mod wait;
