//! The HTTP delivery options, as [`aep_async::delivery`]: the worker itself runs on the
//! [`Runtime`](crate::Runtime) inside the HTTP sink, so only what configures it is
//! named here ([`HttpSinkOptions::batch`](crate::HttpSinkOptions::batch) and
//! [`HttpSinkOptions::retry`](crate::HttpSinkOptions::retry) take them).
//!
//! ```
//! use std::time::Duration;
//! use aep_blocking::HttpSinkOptions;
//! let options = HttpSinkOptions::new()
//!     .batch(|b| b.max_items(100))
//!     .retry(|r| r.give_up_after(Some(Duration::from_secs(5))));
//! # let _ = options;
//! ```

pub use aep_async::delivery::{BatchOptions, RetryPolicy, Retryable};
