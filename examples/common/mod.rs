//! What the examples share: the quickstart, blocking and subscriptions examples' command
//! line and the relay it names (or an embedded one), the dashboards' subscription and
//! their check of what they saw, and reading flags and reporting a bad command line for
//! the others.
// Each example uses its own share of this module.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Command-line options: `[--url URL] [--token T]`.
#[derive(Debug, Default)]
pub struct Args {
    /// A relay to use instead of the embedded one.
    pub url: Option<String>,
    /// Its bearer token.
    pub token: Option<String>,
}

/// Reads `[--url URL] [--token T]`; `example` names the program in the usage line.
pub fn parse_args(example: &str) -> Result<Args, String> {
    let mut args = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => args.url = Some(value()?),
            "--token" => args.token = Some(value()?),
            "-h" | "--help" => return Err(format!("usage: {example} [--url URL] [--token T]")),
            other => return Err(format!("unknown argument {other}; try --help")),
        }
    }
    Ok(args)
}

/// The command line after the program name as `(flag, value)` pairs: a flag takes the
/// argument after it as its value, except the `switches`, which take none (their value
/// is empty).
pub fn flags(switches: &[&str]) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = if switches.contains(&flag.as_str()) {
            String::new()
        } else {
            it.next().ok_or_else(|| format!("{flag} needs a value"))?
        };
        pairs.push((flag, value));
    }
    Ok(pairs)
}

/// The parsed command line, or `None` once the error (and `usage`, if any) is on
/// stderr: the example then exits with status 2.
pub fn or_usage<T>(example: &str, usage: &str, parsed: Result<T, String>) -> Option<T> {
    match parsed {
        Ok(args) => Some(args),
        Err(e) if usage.is_empty() => {
            eprintln!("{example}: {e}");
            None
        }
        Err(e) => {
            eprintln!("{example}: {e}\n{usage}");
            None
        }
    }
}

/// Runs `exchange` against the relay `args` names, or else against a relay embedded in
/// this process, started with the `--token` given or `token` (control needs an
/// authenticated binding, AEP-0004 §4.1) and shut down at the end, whatever came of
/// the exchange. `exchange` gets the relay's URL and token, and must finish within
/// `deadline`: a stuck relay fails the run.
pub async fn on_relay<F>(
    args: Args,
    token: &str,
    deadline: Duration,
    exchange: impl FnOnce(String, Option<String>) -> F,
) -> Result<(), BoxError>
where
    F: Future<Output = Result<(), BoxError>>,
{
    let (url, token, embedded) = match args.url {
        Some(url) => (url, args.token, None),
        None => {
            let token = args.token.unwrap_or_else(|| token.to_owned());
            let relay = aep::relay::Relay::builder()
                .token(token.as_str())
                .start()
                .await?;
            (relay.url().to_owned(), Some(token), Some(relay))
        }
    };
    println!("relay      {url}");
    let result = tokio::time::timeout(deadline, exchange(url, token)).await;
    if let Some(relay) = embedded {
        relay.shutdown().await?;
    }
    match result {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("the exchange did not finish within {deadline:?}").into()),
    }
}

/// `relay`'s subscription to `filter`, once the relay holds it (`Connected`), so that
/// nothing emitted afterwards can be missed; its errors are printed as `who`'s.
pub async fn subscribe_connected(
    relay: &aep::Client,
    filter: serde_json::Value,
    who: &'static str,
) -> aep::Subscription {
    let connected = Arc::new(tokio::sync::Notify::new());
    let options = aep::SubscribeOptions::new().filter(filter).on_notice({
        let connected = connected.clone();
        move |notice| match notice {
            aep::Notice::Connected { .. } => connected.notify_one(),
            aep::Notice::Error(e) => eprintln!("{who:<10} {e}"),
            _ => {}
        }
    });
    let feed = relay.subscribe(options);
    connected.notified().await;
    feed
}

/// Prints the state the dashboard folded, and fails unless it saw a session that ended
/// with no attention pending and no violation.
pub fn check_projection(
    projection: &aep::protocol::projection::StateProjection,
) -> Result<(), BoxError> {
    let state = projection.state();
    println!(
        "\nprojected state:\n{}",
        serde_json::to_string_pretty(&state)?
    );
    let session = state
        .sessions()
        .first()
        .ok_or("the dashboard saw no session")?;
    if !session.pending().is_empty() || !state.violations().is_empty() {
        return Err("the session ended with pending attention or violations".into());
    }
    Ok(())
}

/// The agent's side of a person's answer (AEP-0002 §7), as a control target's handler
/// does it: accepts the `control.attention.respond` command that names its request as
/// `subject` (rejecting one that names none), records the answer as
/// `attention.answered` and resolves the request with `attention.resolved`, in run
/// `r1`. Whether the command was accepted.
pub fn answer_attention(cmd: aep::control::Command) -> bool {
    let Some(request) = cmd.event().subject().map(str::to_owned) else {
        let _ = cmd.reject(
            aep::control::RejectReason::Invalid,
            "subject names no attention request",
        );
        return false;
    };
    let answer = cmd.event().data().and_then(|d| d.get("answer").cloned());
    let Ok(accepted) = cmd.accept() else {
        return false;
    };
    // The lifecycle carries the request's id as `subject`; `cause` is the immediate
    // cause: the command, then the answer (AEP-0002 §7.2 rule 1).
    let about = aep::EmitOptions::new().run("r1").subject(request);
    let answer = answer.unwrap_or_else(|| serde_json::json!({}));
    let data = serde_json::json!({"answer": answer, "via": "control"});
    if let Ok(answer) = accepted.emit_with("attention.answered", data, about.clone()) {
        let resolved = serde_json::json!({"resolution": "answered"});
        let _ =
            accepted
                .session()
                .emit_with("attention.resolved", resolved, about.cause(answer.id()));
    }
    true
}
