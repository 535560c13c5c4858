//! aep-testing: see the crate README.
