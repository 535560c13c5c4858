//! The relay cluster on NATS JetStream (feature `nats`, issue 20): several relays share
//! one stream, so any of them answers the whole protocol.
//!
//! This module grows into the JetStream storage backend; today it holds the names every
//! relay of a cluster must compute alike ([`names`]) and the connection to the stream
//! they share ([`cluster`]: connect and check, publish a batch acknowledged, read back
//! in stream order) and a relay's live feed of what the others ingest ([`feed`]).
// Nothing outside this module uses it yet: the JetStream `Storage` (with a `Feed`, see
// `storage`) that builds on it is not written, and `--nats` is refused until it is. Its
// tests run in CI with `--features nats` against a real nats-server.
#![allow(dead_code)]

pub(crate) mod cluster;
pub(crate) mod feed;
pub(crate) mod names;
