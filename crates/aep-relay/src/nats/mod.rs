//! The relay cluster on NATS JetStream (feature `nats`, issue 20): several relays share
//! one stream, so any of them answers the whole protocol.
//!
//! This module grows into the JetStream storage backend; today it holds the names every
//! relay of a cluster must compute alike ([`names`]).
// Nothing uses the names yet: the backend that does comes with the storage trait.
#![allow(dead_code)]

pub(crate) mod names;
