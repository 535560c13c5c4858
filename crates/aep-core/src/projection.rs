//! State projection: fold events into per-session state.
