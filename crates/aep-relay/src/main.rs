//! The `aep-relay` binary: the flags and environment variables of
//! [`aep_relay::cli::RelayArgs`] (the reference relay's, and this relay's own), the
//! listening address printed as the first line of stdout (so `--port 0` is usable).

use std::process::ExitCode;

use aep_relay::cli::{self, RelayArgs};
use clap::Parser;

/// An Agent Event Protocol (AEP 0.1) relay: HTTP ingest, SSE and WebSocket fan-out,
/// replay, control routing.
#[derive(Debug, Parser)]
#[command(name = "aep-relay", version, after_help = cli::AFTER_HELP)]
struct Cli {
    #[command(flatten)]
    relay: RelayArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match cli.relay.config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("aep-relay: {e}");
            return ExitCode::from(2);
        }
    };
    cli::init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("aep-relay: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::serve(config, "aep-relay", cli::shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aep-relay: {e}");
            ExitCode::FAILURE
        }
    }
}
