//! `aep send`, `aep respond`, `aep cancel`: the control sender of AEP-0004, with the
//! exit codes scripts branch on (0 accepted, 3 nacked, 4 timeout, 5 relay).

use std::time::Duration;

use aep::control::{
    ControlClient, ControlError, ControlOptions, NackOrigin, NackReason, SendOptions,
};
use aep::protocol::control::is_command_type;
use aep::protocol::Capture;
use serde_json::{json, Value};

use crate::args::{json_object, millis, RelayArgs};
use crate::exit::{describe, Exit, Failure, Outcome};
use crate::term;

/// The ack window and retries every control subcommand takes.
#[derive(Debug, Clone, clap::Args)]
pub struct SendArgs {
    #[command(flatten)]
    relay: RelayArgs,
    /// How long each transmission waits for the ack, in milliseconds (AEP-0004 §3).
    #[arg(long, value_name = "MS", default_value = "10000", value_parser = millis)]
    ack_window: Duration,
    /// Resends of the identical envelope (same id) after the first transmission.
    #[arg(long, value_name = "N", default_value_t = 2)]
    retries: u32,
}

/// Send a control command to a session and wait for its ack.
///
/// Prints the `control.accepted` event on stdout and exits 0; a nack (the target's
/// `control.rejected`, or the relay's refusal on its behalf, such as `no-route` when no
/// connection holds the session) exits 3 with the reason on stderr; no ack within
/// `(1 + retries)` windows exits 4.
#[derive(Debug, clap::Args)]
pub struct Send {
    /// The command type: `control.pause`, or `pause` for short.
    #[arg(value_name = "TYPE")]
    command_type: String,
    /// The target session.
    #[arg(long, value_name = "SESSION")]
    session: String,
    /// The payload, a JSON object.
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    data: Option<Value>,
    /// Narrow the command to a run.
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
    /// The command's `subject`.
    #[arg(long, value_name = "ID")]
    subject: Option<String>,
    /// The declared capture of the payload (default metadata).
    #[arg(long, value_name = "LEVEL")]
    capture: Option<Capture>,
    #[command(flatten)]
    send: SendArgs,
}

/// Answer an attention request (`control.attention.respond`, AEP-0004 §6).
///
/// `subject` and `cause` are the request id. A free-text answer (`--text`, or form
/// `--values`) is declared at capture `redacted`; a bare option id stays `metadata`.
/// Exit codes as `aep send`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("answer").required(true))]
pub struct Respond {
    /// The session that raised the request.
    #[arg(value_name = "SESSION")]
    session: String,
    /// The id of the `attention.requested` event.
    #[arg(value_name = "REQUEST")]
    request: String,
    /// Choose one of the request's options by id.
    #[arg(long, value_name = "ID", group = "answer")]
    option: Option<String>,
    /// Answer in free text.
    #[arg(long, value_name = "TEXT", group = "answer")]
    text: Option<String>,
    /// Answer a form: a JSON object of field id to value (AEP-0006).
    #[arg(long, value_name = "JSON", group = "answer", value_parser = json_object)]
    values: Option<Value>,
    #[command(flatten)]
    send: SendArgs,
}

/// Cancel a run, or the whole session (`control.cancel`, AEP-0004 §5).
///
/// Exit codes as `aep send`.
#[derive(Debug, clap::Args)]
pub struct Cancel {
    /// The target session.
    #[arg(value_name = "SESSION")]
    session: String,
    /// The run to cancel; without it, the whole session.
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
    /// Why, for the people reading the session (declared at capture `redacted`).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    #[command(flatten)]
    send: SendArgs,
}

/// Runs `aep send`.
pub async fn send(args: Send) -> Outcome {
    let command_type = command_type(&args.command_type)?;
    let opts = given(SendOptions::new(), args.data, SendOptions::data);
    let opts = given(opts, args.run, SendOptions::run);
    let opts = given(opts, args.subject, SendOptions::subject);
    let opts = given(opts, args.capture, SendOptions::capture);
    deliver(&args.send, &command_type, &args.session, opts).await
}

/// Runs `aep respond`.
pub async fn respond(args: Respond) -> Outcome {
    let (answer, capture) = match (args.option, args.text, args.values) {
        (Some(id), _, _) => (json!({"option": id}), Capture::Metadata),
        (_, Some(text), _) => (json!({"text": text}), Capture::Redacted),
        (_, _, Some(values)) => (json!({"values": values}), Capture::Redacted),
        _ => return Err(Failure::usage("give one of --option, --text, --values")),
    };
    let opts = SendOptions::new()
        .subject(&args.request)
        .cause(&args.request)
        .data(json!({"answer": answer}))
        .capture(capture);
    deliver(&args.send, "control.attention.respond", &args.session, opts).await
}

/// Runs `aep cancel`.
pub async fn cancel(args: Cancel) -> Outcome {
    let scope = if args.run.is_some() { "run" } else { "session" };
    let mut data = json!({"scope": scope});
    let mut opts = SendOptions::new();
    if let Some(reason) = args.reason {
        data["reason"] = Value::from(reason);
        opts = opts.capture(Capture::Redacted);
    }
    let opts = given(opts, args.run, SendOptions::run);
    deliver(&args.send, "control.cancel", &args.session, opts.data(data)).await
}

/// `opts` with `set` applied where the flag was given: a flag left out leaves
/// `SendOptions`' default.
fn given<T>(
    opts: SendOptions,
    flag: Option<T>,
    set: fn(SendOptions, T) -> SendOptions,
) -> SendOptions {
    match flag {
        Some(value) => set(opts, value),
        None => opts,
    }
}

/// `control.pause`, or `pause` for short; anything else that is no command type is a
/// usage error.
fn command_type(given: &str) -> Result<String, Failure> {
    if is_command_type(given) {
        return Ok(given.to_owned());
    }
    let long = format!("control.{given}");
    if is_command_type(&long) {
        return Ok(long);
    }
    Err(Failure::usage(format!(
        "`{given}` is not a command type (AEP-0004 §2: control.* or x.VENDOR.control.*)"
    )))
}

/// Connects as a control console; a relay that cannot be reached or refuses the token
/// is exit 5.
pub async fn connect(relay: &RelayArgs) -> Result<ControlClient, Failure> {
    relay
        .client()
        .identity("aep-cli", crate::host())
        .connect_timeout(Duration::from_secs(10))
        .control(ControlOptions::new())
        .await
        .map_err(|e| match e.status() {
            Some(401 | 403) => Failure::relay(format!(
                "the relay at {} refused the token ({}); control needs an authenticated binding (AEP-0004 §4.1): pass --token or set AEP_TOKEN",
                relay.base(),
                describe(&e)
            )),
            _ => Failure::relay(format!(
                "cannot reach the relay at {}: {}; {}",
                relay.base(),
                describe(&e),
                crate::probe::CHECK_URL
            )),
        })
}

async fn deliver(args: &SendArgs, command_type: &str, session: &str, opts: SendOptions) -> Outcome {
    let client = connect(&args.relay).await?;
    let opts = opts.ack_window(args.ack_window).retries(args.retries);
    let result = client.send(command_type, session, opts).await;
    client.close().await;
    match result {
        Ok(ack) => {
            term::note(format!(
                "{command_type} accepted by {} (ack {})",
                ack.source(),
                ack.id()
            ));
            println!("{}", ack.to_json());
            Ok(Exit::Success)
        }
        Err(ControlError::Nack(nack)) if nack.reason() == NackReason::Timeout => Err(Failure::new(
            Exit::Timeout,
            format!(
                "no ack for {command_type} to session {session} within {} windows of {} ms: {nack}",
                args.retries + 1,
                args.ack_window.as_millis()
            ),
        )),
        Err(ControlError::Nack(nack)) => {
            let by = match nack.origin() {
                NackOrigin::Target(ack) => {
                    println!("{}", ack.to_json());
                    "the target"
                }
                NackOrigin::Relay(_) => "the relay on the target's behalf",
                _ => "the sender",
            };
            let detail = nack.detail().map(|d| format!(" ({d})")).unwrap_or_default();
            Err(Failure::new(
                Exit::Nacked,
                format!(
                    "{command_type} to session {session} nacked by {by}: {}{detail}",
                    nack.reason()
                ),
            ))
        }
        Err(ControlError::Command(e)) => Err(Failure::usage(format!("not sent: {e}"))),
        Err(e) => Err(Failure::relay(format!(
            "{command_type} to session {session} not settled: {}",
            describe(&e)
        ))),
    }
}
