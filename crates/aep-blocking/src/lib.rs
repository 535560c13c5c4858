//! aep-blocking: see the crate README.
