//! aep-adapters' integration tests, one module per concern.

mod hostile;
mod posture;
mod sessions;
