//! End-to-end scenarios of issue 6 ("Done when") against the reference relay, plus the
//! fault cases that need a misbehaving server. The scenarios live in
//! `common/scenarios.rs`; `rust_relay.rs` runs the same ones against the Rust relay.
#![cfg(all(feature = "http", feature = "sse", feature = "ws"))]
#![allow(clippy::unwrap_used)]

use crate::common;

type TestRelay = common::ReferenceRelay;

include!("common/scenarios.rs");
