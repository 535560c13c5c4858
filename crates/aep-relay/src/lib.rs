//! aep-relay: see the crate README.
