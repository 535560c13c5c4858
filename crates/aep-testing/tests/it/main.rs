//! The integration tests of `aep-testing`, one binary (issue 30: each test binary links
//! the whole dependency graph).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod smoke;
