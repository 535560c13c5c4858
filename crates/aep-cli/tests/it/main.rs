//! The integration tests of `aep-cli`, one binary: each module was a test
//! binary of its own, and linking each against the whole dependency graph was most of
//! CI's time (issue 30).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod bulk;
mod cli;
mod common;
mod conformance;
mod control;
mod doctor;
mod emit;
mod hook;
mod hostile;
mod mcp;
mod permission;
mod project_timeline;
mod relay;
mod replay;
mod setup;
mod sink;
mod tail;
mod tls;
mod validate;
