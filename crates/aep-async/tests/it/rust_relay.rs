//! End-to-end scenarios of issue 6 ("Done when") against the embedded Rust relay
//! (`aep_relay`), plus the fault cases that need a misbehaving server. The scenarios live in
//! `common/scenarios.rs`; `reference_relay.rs` runs the same ones against the reference relay.
#![cfg(all(feature = "http", feature = "sse", feature = "ws"))]
#![allow(clippy::unwrap_used)]

use crate::common;

type TestRelay = common::RustRelay;

include!("common/scenarios.rs");
