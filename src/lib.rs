//! # agenteventprotocol-sdk: the Rust SDK for the Agent Event Protocol
//!
//! One dependency, features to pick the pieces: [`core`] (always), `async`
//! (default), `blocking`, `relay`, `testing`.
#![warn(missing_docs)]

pub use aep_core as core;

#[cfg(feature = "async")]
pub use aep_async as r#async;
#[cfg(feature = "blocking")]
pub use aep_blocking as blocking;
#[cfg(feature = "relay")]
pub use aep_relay as relay;
#[cfg(feature = "testing")]
pub use aep_testing as testing;
