//! `aep`: the Agent Event Protocol (AEP 0.1) on the command line, built on the public API
//! of the Rust SDK (`agenteventprotocol-sdk`).
//!
//! One subcommand per module of `cmd`; `exit` holds the exit-code table every
//! subcommand shares, `term` where output goes and how it looks, `input` the JSONL
//! reader, `args` the flags several subcommands share.

mod args;
mod cmd;
mod confedit;
mod deliver;
mod epochs;
mod exit;
mod filter;
mod follow;
mod hold;
mod hookstore;
mod input;
mod probe;
mod render;
mod signal;
mod source;
mod spool;
mod state;
mod term;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use exit::{Exit, Outcome};

/// The Agent Event Protocol (AEP 0.1) on the command line: watch a relay, send and
/// check events, steer agents, capture and replay sessions.
#[derive(Debug, Parser)]
#[command(name = "aep", version, propagate_version = true, after_help = exit::TABLE)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Relay(cmd::relay::Args),
    Tail(cmd::tail::Args),
    Emit(cmd::emit::Args),
    Send(cmd::control::Send),
    Respond(cmd::control::Respond),
    Cancel(cmd::control::Cancel),
    Roster(cmd::roster::Args),
    Project(cmd::project::Args),
    Timeline(cmd::timeline::Args),
    Sink(cmd::sink::Args),
    Replay(cmd::replay::Args),
    Doctor(cmd::doctor::Args),
    Mcp(cmd::mcp::Args),
    Conformance(cmd::conformance::Args),
    Validate(cmd::validate::Args),
    Hook(cmd::hook::Args),
    Setup(cmd::setup::Args),
    Completions(cmd::completions::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Relay(a) => block_on(cmd::relay::run(a)),
        Command::Tail(a) => block_on(cmd::tail::run(a)),
        Command::Emit(a) => block_on(cmd::emit::run(a)),
        Command::Send(a) => block_on(cmd::control::send(a)),
        Command::Respond(a) => block_on(cmd::control::respond(a)),
        Command::Cancel(a) => block_on(cmd::control::cancel(a)),
        Command::Roster(a) => block_on(cmd::roster::run(a)),
        Command::Project(a) => block_on(cmd::project::run(a)),
        Command::Timeline(a) => block_on(cmd::timeline::run(a)),
        Command::Sink(a) => block_on(cmd::sink::run(a)),
        Command::Replay(a) => block_on(cmd::replay::run(a)),
        Command::Doctor(a) => block_on(cmd::doctor::run(a)),
        Command::Mcp(a) => block_on(cmd::mcp::run(a)),
        Command::Conformance(a) => cmd::conformance::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Hook(a) => cmd::hook::run(a),
        Command::Setup(a) => cmd::setup::run(a),
        Command::Completions(a) => cmd::completions::run(a),
    };
    finish(outcome)
}

/// Runs an async subcommand on a multi-threaded runtime (a relay, a sink's delivery
/// task and the subcommand's own loop run side by side).
fn block_on(command: impl std::future::Future<Output = Outcome>) -> Outcome {
    runtime()?.block_on(command)
}

/// The exit code, after the one line that says why a subcommand failed.
fn finish(outcome: Outcome) -> ExitCode {
    match outcome {
        Ok(exit) => exit.into(),
        Err(failure) => {
            term::error(&failure);
            failure.exit().into()
        }
    }
}

/// This machine's name, for the `source` of what `aep` emits (`aep://HOST/agent/..`).
pub fn host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        })
        .unwrap_or_else(|| "localhost".to_owned())
}

fn runtime() -> Result<tokio::runtime::Runtime, exit::Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            exit::Failure::new(Exit::Input, format!("cannot start the async runtime: {e}"))
        })
}
