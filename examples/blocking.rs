//! The quickstart's flow in synchronous code, with `aep::blocking`: no `async`, no
//! `.await`; one background runtime does the IO.
//!
//! ```text
//! cargo run --example blocking                  # starts an embedded relay
//! cargo run --example blocking -- --url http://127.0.0.1:8787 [--token T]
//! ```
//!
//! A dashboard subscribes with a filter and connects a control client; an agent thread
//! emits a session over WebSocket and raises an attention request; the dashboard
//! answers it with `control.attention.respond`, the agent's plain-function handler
//! accepts it and resolves the request; the dashboard prints the projected state.

use std::error::Error;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use aep::blocking::control::{ControlOptions, ControlTarget, RejectReason, SendOptions};
use aep::blocking::{
    Client, EmitOptions, Emitter, Notice, Runtime, SubscribeOptions, WsSinkOptions,
};
use aep::protocol::projection::StateProjection;
use aep::protocol::Severity;
use serde_json::json;

mod common;
pub use common::Args;

type BoxError = Box<dyn Error + Send + Sync>;

/// How long any one wait may take before the example gives up.
const PATIENCE: Duration = Duration::from_secs(30);

fn main() -> Result<(), BoxError> {
    blocking(common::parse_args("blocking")?)
}

/// The whole example; `tests/it/examples.rs` runs it too.
pub fn blocking(args: Args) -> Result<(), BoxError> {
    // The embedded relay is async code: run it on a blocking runtime's thread. Control
    // needs an authenticated binding (AEP-0004 §4.1), hence the token.
    let runtime = Runtime::new()?;
    let (url, token, relay) = match args.url {
        Some(url) => (url, args.token, None),
        None => {
            let token = args.token.unwrap_or_else(|| "quickstart".to_owned());
            let builder = aep::relay::Relay::builder().token(token.as_str());
            let relay = runtime.block_on(builder.start())??;
            (relay.url().to_owned(), Some(token), Some(relay))
        }
    };
    println!("relay      {url}");
    let outcome = dashboard(&url, token);
    if let Some(relay) = relay {
        runtime.block_on(relay.shutdown())??;
    }
    outcome
}

fn dashboard(url: &str, token: Option<String>) -> Result<(), BoxError> {
    let session_id = format!("blocking-{}", std::process::id());
    let (connected_tx, connected) = mpsc::sync_channel(1);
    let options = SubscribeOptions::new()
        .filter(
            json!({"session": session_id, "type": ["session.*", "run.*", "tool.*", "attention.*"]}),
        )
        .on_notice(move |n| match n {
            Notice::Connected { .. } => {
                let _ = connected_tx.try_send(());
            }
            Notice::Error(e) => eprintln!("dashboard  {e}"),
            _ => {}
        });
    let relay = client(url, token.as_deref()).identity("blocking-dashboard", "localhost");
    let mut feed = relay.subscribe(options)?;
    connected.recv_timeout(PATIENCE)?;
    let console = relay.control(ControlOptions::new())?;

    let agent = {
        let (url, session_id) = (url.to_owned(), session_id.clone());
        thread::spawn(move || agent(&url, token, &session_id))
    };

    let mut projection = StateProjection::new();
    loop {
        let event = feed.recv_timeout(PATIENCE)?;
        println!(
            "dashboard  #{:<3} {}",
            event.seq().unwrap_or_default(),
            event.event_type()
        );
        projection.apply(&event);
        match event.event_type() {
            "attention.requested" => {
                let respond = SendOptions::new()
                    .subject(event.id())
                    .data(json!({"answer": {"choice": "allow"}}));
                let ack = console.send("control.attention.respond", &session_id, respond)?;
                println!("dashboard  answer accepted (ack {})", ack.id());
            }
            "session.ended" => break,
            _ => {}
        }
    }
    feed.close();
    console.close();
    agent.join().map_err(|_| "the agent thread panicked")??;

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

/// The relay at `url`, with the token if there is one.
fn client(url: &str, token: Option<&str>) -> Client {
    match token {
        Some(t) => Client::new(url).token(t),
        None => Client::new(url),
    }
}

fn agent(url: &str, token: Option<String>, session_id: &str) -> Result<(), BoxError> {
    // The handler is a plain function; it runs off the connection's task.
    let (answered_tx, answered) = mpsc::sync_channel(1);
    let target = ControlTarget::new(["control.attention.respond"], move |cmd| {
        let Some(request) = cmd.event().subject().map(str::to_owned) else {
            let _ = cmd.reject(RejectReason::Invalid, "subject names no attention request");
            return;
        };
        let answer = cmd.event().data().and_then(|d| d.get("answer").cloned());
        let Ok(accepted) = cmd.accept() else { return };
        let about = EmitOptions::new().run("r1").subject(request);
        let data = json!({"answer": answer.unwrap_or_else(|| json!({})), "via": "control"});
        if let Ok(answer) = accepted.emit_with("attention.answered", data, about.clone()) {
            let resolved = json!({"resolution": "answered"});
            let _ = accepted.session().emit_with(
                "attention.resolved",
                resolved,
                about.cause(answer.id()),
            );
        }
        let _ = answered_tx.try_send(());
    })?;
    let options = WsSinkOptions::new("blocking-agent", "localhost/1").command_hook(target.clone());
    let sink = client(url, token.as_deref()).ws_sink(options)?;
    let emitter = Emitter::new("blocking-agent", "localhost", sink);
    let session = target.attach(emitter.session(session_id));
    let run = EmitOptions::new().run("r1");

    session.emit("session.started", json!({"cwd": "/work/demo"}))?;
    session.emit_with("run.started", json!({"trigger": "user"}), run.clone())?;
    let tool = json!({"name": "delete_file", "call_id": "c1"});
    session.emit_with("tool.requested", json!({"tool": tool}), run.clone())?;
    session.emit_with(
        "attention.requested",
        json!({"kind": "permission", "prompt": "Delete notes.txt?", "options": ["allow", "deny"]}),
        run.clone().severity(Severity::Notice),
    )?;
    answered.recv_timeout(PATIENCE)?;
    session.emit_with(
        "tool.completed",
        json!({"tool": tool, "status": "ok"}),
        run.clone(),
    )?;
    session.emit_with("run.finished", json!({}), run)?;
    session.emit("session.ended", json!({"reason": "normal"}))?;
    emitter.close()?;
    Ok(())
}
