//! The integration tests of `aep-blocking`, one binary: each module was a test
//! binary of its own, and linking each against the whole dependency graph was most of
//! CI's time (issue 30).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

mod attention;
mod control;
mod emit_scope;
mod relay;
mod steering;

/// A console connected to `url` with `token` once the relay routes commands for
/// `session` (its claim is live): the blocking `console_for` of aep-async's tests.
pub fn console_for(url: &str, token: &str, session: &str) -> aep_blocking::control::ControlClient {
    let client = aep_blocking::Client::new(url)
        .token(token)
        .control(aep_blocking::control::ControlOptions::new())
        .unwrap();
    let claimed = || {
        client
            .roster()
            .unwrap()
            .iter()
            .any(|e| e.session == session)
    };
    aep_test_support::wait::until_blocking(&format!("{session} claimed"), claimed);
    client
}
