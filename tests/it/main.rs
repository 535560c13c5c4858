//! The facade's integration tests, one binary: the examples run against the embedded
//! relay, and the workspace-wide rules every source file keeps (its size, its row in
//! ARCHITECTURE.md, imports that run one way).

#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests: a failed unwrap is a failed test
// Each example is compiled as it stands, so each brings its own copy of `examples/common`.
#![allow(clippy::duplicate_mod)]

mod architecture;
mod examples;
mod import_circles;
mod module_size;
