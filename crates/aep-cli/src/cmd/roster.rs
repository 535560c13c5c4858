//! `aep roster`: who holds which session right now (AEP-0003 §4.1).

use aep::control::ControlError;
use serde_json::Value;

use crate::args::RelayArgs;
use crate::exit::{describe, Exit, Failure, Outcome};
use crate::render;

/// The live claims of a relay: each session a connected emitter holds, with its agent,
/// instance and the command types it accepts.
///
/// A snapshot, never a promise: the target's `accepts` at command time decides.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    relay: RelayArgs,
    /// Print the entries as a JSON array on stdout instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    let client = super::control::connect(&args.relay).await?;
    let result = client.roster().await;
    client.close().await;
    let entries = result.map_err(|e| match e {
        ControlError::RosterUnsupported => Failure::relay(format!(
            "the relay at {} does not offer a roster (no capabilities.roster in its hello)",
            args.relay.base()
        )),
        other => Failure::relay(format!(
            "no roster from {}: {}",
            args.relay.base(),
            describe(&other)
        )),
    })?;
    if args.json {
        let list: Vec<Value> = entries
            .iter()
            .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
            .collect();
        crate::term::print_json_pretty(&Value::Array(list));
        return Ok(Exit::Success);
    }
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let accepts = e
                .control
                .as_ref()
                .and_then(|c| c.accepts.as_ref())
                .map(|a| a.join(","))
                .unwrap_or_else(|| "-".into());
            vec![
                e.session.clone(),
                e.agent.clone().unwrap_or_else(|| "-".into()),
                e.instance.clone().unwrap_or_else(|| "-".into()),
                accepts,
            ]
        })
        .collect();
    let mut out = anstream::stdout();
    let _ = std::io::Write::write_all(
        &mut out,
        render::table(&["SESSION", "AGENT", "INSTANCE", "ACCEPTS"], &rows).as_bytes(),
    );
    if rows.is_empty() {
        crate::term::note("no emitter holds a session");
    }
    Ok(Exit::Success)
}
