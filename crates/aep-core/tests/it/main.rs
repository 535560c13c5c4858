//! The integration tests of `aep-core`, one binary: each module was a test
//! binary of its own, and linking each against the whole dependency graph was most of
//! CI's time (issue 30).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod attr_match;
mod bad_input;
mod common;
mod control;
mod downlevel;
mod event_reader;
mod event_type;
mod event_writer;
mod filter_pin;
mod fixtures;
mod frame;
mod gating;
mod no_panic;
mod payload;
mod projection;
mod redaction;
mod resume;
mod subscription;
mod validate;
mod validate_envelope;
