//! The integration tests of `aep-relay`, one binary: each module was a test
//! binary of its own, and linking each against the whole dependency graph was most of
//! CI's time (issue 30).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod backpressure;
mod buffer;
#[cfg(feature = "nats")]
mod cluster;
// Mission control on a NATS fleet: every relay's console shows the fleet.
#[cfg(feature = "nats")]
mod cluster_console;
mod common;
// Issue 20's faults: real nats-server, real relay processes (the binary, hence `cli`).
#[cfg(all(feature = "nats", feature = "cli"))]
mod cluster_faults;
// Issue 31: the stream as a trust boundary, NATS authorization, credentials in URLs.
#[cfg(all(feature = "nats", feature = "cli"))]
mod cluster_trust;
mod console;
mod console_api;
mod control;
mod durable;
mod ingest;
mod limits;
mod listener;
mod sse;
mod subscription_index;
mod subscriptions;
mod surface;
mod tls;
mod ws;
