//! `aep relay`: the relay, with the flags and environment variables of `aep-relay`
//! from their one definition in the relay's library (`aep_relay::cli`).

use crate::exit::{describe, Exit, Failure, Outcome};

/// Run a relay: HTTP ingest, SSE and WebSocket fan-out, replay, control routing.
///
/// The same flags and `AEP_*` variables as the `aep-relay` binary, the cluster
/// (`--nats`) included. It listens on 127.0.0.1 unless `--host` says otherwise, and
/// beyond loopback refuses to start without `--token` (or `--insecure-open-relay`).
/// The first line of stdout is `aep relay listening on http://ADDR ...` (`https://`
/// with `--tls-cert`; so `--port 0` is usable); logs go to stderr (`RUST_LOG`, default
/// info); SIGHUP reads the TLS files again; SIGINT or SIGTERM drains and exits 0.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    relay: aep_relay::cli::RelayArgs,
}

/// Runs the subcommand until SIGINT or SIGTERM.
pub async fn run(args: Args) -> Outcome {
    // every value was parsed when clap read it; a refusal here is still a usage error
    let config = args
        .relay
        .config()
        .map_err(|e| Failure::usage(e.to_string()))?;
    let addr = config.addr();
    aep_relay::cli::init_logging();
    aep_relay::cli::serve(config, "aep relay", crate::signal::shutdown())
        .await
        .map_err(|e| {
            Failure::input(format!(
                "the relay cannot serve on {addr}: {}",
                describe(&e)
            ))
        })?;
    Ok(Exit::Success)
}
