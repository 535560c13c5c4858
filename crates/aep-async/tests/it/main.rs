//! The integration tests of `aep-async`, one binary: each module was a test
//! binary of its own, and linking each against the whole dependency graph was most of
//! CI's time (issue 30).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod attention;
mod common;
mod control;
mod control_reclaim;
mod control_sender;
mod emit;
mod emit_wait;
mod epoch;
mod failover;
mod hostile_relay;
mod http_sink;
mod hub;
mod reference_relay;
mod rust_relay;
mod steering;
mod subscription_filter;
mod tls;
mod ws_sink_refusals;
