//! The integration tests of `aep-blocking`, one binary: each module was a test
//! binary of its own, and linking each against the whole dependency graph was most of
//! CI's time (issue 30).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod attention;
mod control;
mod emit_scope;
mod relay;
mod steering;
