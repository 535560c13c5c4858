//! aep-async: see the crate README.
