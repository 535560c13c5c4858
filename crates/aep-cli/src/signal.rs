//! The end a person asks for: Ctrl-C, or SIGTERM from a supervisor.

/// Resolves on SIGINT or SIGTERM (SIGINT alone where there is no SIGTERM): the relay's
/// own, so `aep relay` and the subcommands that follow a relay stop alike.
pub use aep_relay::cli::shutdown_signal as shutdown;
