//! Sends one control command (AEP-0004) and prints its ack or nack as JSON.
//!
//! ```text
//! cargo run --example control -- --url URL [--token T] --session S TYPE [--data JSON]
//!     [--run R] [--subject ID] [--ack-window-ms MS] [--retries N]
//! ```
//!
//! `TYPE` is a command type; a short name gets the `control.` prefix (`pause` is
//! `control.pause`). Prints the `control.accepted` event and exits 0, or prints
//! `{"nack": {"reason", "detail", "synthesized"}}` and exits 1. Exits 2 on bad usage or
//! a transport failure.

use std::process::ExitCode;
use std::time::Duration;

use aep::control::{ControlError, ControlOptions, SendOptions};
use aep::Client;
use serde_json::json;

mod common;

const USAGE: &str = "usage: control --url URL [--token T] --session S TYPE [--data JSON] [--run R] [--subject ID] [--ack-window-ms MS] [--retries N]";

struct Args {
    url: String,
    token: Option<String>,
    session: String,
    command_type: String,
    options: SendOptions,
}

fn parse() -> Result<Args, String> {
    let (mut url, mut token, mut session, mut command_type) = (None, None, None, None);
    let mut options = SendOptions::new();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        if !arg.starts_with("--") {
            command_type = Some(arg);
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--url" => url = Some(value),
            "--token" => token = Some(value),
            "--session" => session = Some(value),
            "--data" => {
                options = options.data(
                    serde_json::from_str(&value).map_err(|e| format!("--data is not JSON: {e}"))?,
                )
            }
            "--run" => options = options.run(value),
            "--subject" => options = options.subject(value),
            "--ack-window-ms" => {
                let ms = value.parse().map_err(|e| format!("--ack-window-ms: {e}"))?;
                options = options.ack_window(Duration::from_millis(ms));
            }
            "--retries" => {
                options = options.retries(value.parse().map_err(|e| format!("--retries: {e}"))?)
            }
            _ => return Err(format!("unknown flag {arg}")),
        }
    }
    let command_type = command_type.ok_or("TYPE is required")?;
    let command_type = if command_type.starts_with("control.") || command_type.contains(".control.")
    {
        command_type
    } else {
        format!("control.{command_type}")
    };
    Ok(Args {
        url: url.ok_or("--url is required")?,
        token,
        session: session.ok_or("--session is required")?,
        command_type,
        options,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(args) = common::or_usage("control", USAGE, parse()) else {
        return ExitCode::from(2);
    };
    let mut relay = Client::new(&args.url).identity("aep-example-control", "localhost");
    if let Some(t) = &args.token {
        relay = relay.token(t);
    }
    let client = match relay.control(ControlOptions::new()).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("control: {e}");
            return ExitCode::from(2);
        }
    };
    let result = client
        .send(&args.command_type, &args.session, args.options)
        .await;
    client.close().await;
    match result {
        Ok(ack) => {
            println!("{}", ack.to_json());
            ExitCode::SUCCESS
        }
        Err(ControlError::Nack(n)) => {
            println!(
                "{}",
                json!({"nack": {"reason": n.reason().as_str(), "detail": n.detail(), "synthesized": n.is_synthesized()}})
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("control: {e}");
            ExitCode::from(2)
        }
    }
}
