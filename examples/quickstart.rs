//! The first command to run: an agent and a dashboard talking through a relay.
//!
//! ```text
//! cargo run --example quickstart                  # starts an embedded relay
//! cargo run --example quickstart -- --url http://127.0.0.1:8787 [--token T]
//! ```
//!
//! 1. starts the embedded relay (unless `--url` names one);
//! 2. a dashboard subscribes over SSE with an attr-match filter (AEP-0003 §6) on the
//!    session about to run, and connects a control client (AEP-0004);
//! 3. an agent emits that session over WebSocket: session, run, two tool calls and an
//!    attention request (AEP-0002 §7);
//! 4. the dashboard sees the request live and answers it with a
//!    `control.attention.respond` command; the agent accepts it, records the answer,
//!    resolves the request and carries on; the dashboard gets the ack;
//! 5. the dashboard folds everything it saw with `aep::protocol::projection` and prints the
//!    projected state.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use aep::control::{ControlOptions, ControlTarget, RejectReason, SendOptions};
use aep::protocol::projection::StateProjection;
use aep::protocol::{Event, Severity};
use aep::{Client, EmitOptions, Emitter, Notice, SubscribeOptions, WsSinkOptions};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::{mpsc, Notify};

mod common;
pub use common::Args;

type BoxError = Box<dyn Error + Send + Sync>;

/// The whole exchange must finish well within this; a stuck relay fails the run.
const DEADLINE: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    quickstart(common::parse_args("quickstart")?).await
}

/// The whole example; `tests/it/examples.rs` runs it too.
pub async fn quickstart(args: Args) -> Result<(), BoxError> {
    // 1. A relay: the embedded one unless the caller named another. Control needs an
    //    authenticated binding (AEP-0004 §4.1), so the embedded relay gets a token.
    let (url, token, relay) = match args.url {
        Some(url) => (url, args.token, None),
        None => {
            let token = args.token.unwrap_or_else(|| "quickstart".to_owned());
            let relay = aep::relay::Relay::builder()
                .token(token.as_str())
                .start()
                .await?;
            (relay.url().to_owned(), Some(token), Some(relay))
        }
    };
    println!("relay      {url}");

    let session_id = format!(
        "quickstart-{}",
        aep::protocol::envelope::new_ulid(std::time::SystemTime::now())
    );
    let result = tokio::time::timeout(DEADLINE, run(&url, token, &session_id)).await;
    if let Some(relay) = relay {
        relay.shutdown().await?;
    }
    match result {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("the exchange did not finish within {DEADLINE:?}").into()),
    }
}

/// The relay at `url`, with the token if there is one.
fn client(url: &str, token: Option<&str>) -> Client {
    match token {
        Some(t) => Client::new(url).token(t),
        None => Client::new(url),
    }
}

async fn run(url: &str, token: Option<String>, session_id: &str) -> Result<(), BoxError> {
    // 2. The dashboard subscribes first; `Connected` says the relay holds the
    //    subscription, so nothing the agent emits afterwards can be missed.
    let connected = Arc::new(Notify::new());
    let options = SubscribeOptions::new()
        .filter(json!({
            "session": session_id,
            "type": ["session.*", "run.*", "tool.*", "attention.*", "control.*"],
        }))
        .on_notice({
            let connected = connected.clone();
            move |notice| match notice {
                Notice::Connected { .. } => connected.notify_one(),
                Notice::Error(e) => eprintln!("dashboard  {e}"),
                _ => {}
            }
        });
    // One client of the relay; the dashboard's subscription and its control client
    // are opened on it.
    let relay = client(url, token.as_deref()).identity("quickstart-dashboard", "localhost");
    let mut feed = relay.subscribe(options);
    connected.notified().await;
    // The dashboard's control client: commands out, acks back (AEP-0004).
    let console = relay.control(ControlOptions::new()).await?;

    let agent = tokio::spawn(agent(url.to_owned(), token, session_id.to_owned()));

    // 4-5. The dashboard: print each event, answer the attention request, fold.
    let mut projection = StateProjection::new();
    while let Some(event) = feed.next().await {
        print_event(&event);
        projection.apply(&event);
        match event.event_type() {
            "attention.requested" => {
                let answer = json!({"answer": {"choice": "allow"}});
                println!("dashboard  answers {} with {answer}", event.id());
                let respond = SendOptions::new().subject(event.id()).data(answer);
                match console
                    .send("control.attention.respond", session_id, respond)
                    .await
                {
                    Ok(ack) => println!("dashboard  command accepted (ack {})", ack.id()),
                    Err(e) => {
                        agent.abort();
                        return Err(format!("the agent did not accept the answer: {e}").into());
                    }
                }
            }
            "session.ended" => break,
            _ => {}
        }
    }
    feed.close();
    console.close().await;
    agent.await??;

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

/// Step 3, the agent: one session over the WebSocket sink; control commands for the session
/// arrive on the same connection.
async fn agent(url: String, token: Option<String>, session_id: String) -> Result<(), BoxError> {
    // The target acks each command exactly once (AEP-0004 §3) and hands the accepted
    // ones to this handler; `answered` wakes the agent's own flow.
    let (answered_tx, mut answered) = mpsc::channel::<()>(1);
    let target = ControlTarget::new(["control.attention.respond"], move |cmd| {
        let answered_tx = answered_tx.clone();
        async move {
            let Some(request) = cmd.event().subject().map(str::to_owned) else {
                let _ = cmd.reject(RejectReason::Invalid, "subject names no attention request");
                return;
            };
            let answer = cmd.event().data().and_then(|d| d.get("answer").cloned());
            let Ok(accepted) = cmd.accept() else { return };
            // The lifecycle carries the request's id as `subject`; `cause` is the
            // immediate cause: the command, then the answer (AEP-0002 §7.2 rule 1).
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
            let _ = answered_tx.send(()).await;
        }
    });
    let options =
        WsSinkOptions::new("quickstart-agent", "localhost/1").command_hook(target.clone());
    let sink = client(&url, token.as_deref()).ws_sink(options)?;
    let emitter = Emitter::new("quickstart-agent", "localhost", sink);
    let session = target.attach(emitter.session(session_id));
    let run = EmitOptions::new().run("r1");

    // The first event claims the session on this connection: its commands route here.
    session.emit("session.started", json!({"cwd": "/work/demo"}))?;
    session.emit_with(
        "run.started",
        json!({"trigger": "user", "prompt": "tidy the repo"}),
        run.clone(),
    )?;
    for (call, tool) in [("c1", "list_files"), ("c2", "delete_file")] {
        let tool = json!({"name": tool, "call_id": call});
        session.emit_with("tool.requested", json!({"tool": tool}), run.clone())?;
        if call == "c2" {
            // Deleting needs a human: ask, then wait for the answer (AEP-0002 §7).
            session.emit_with(
                "attention.requested",
                json!({"kind": "permission", "prompt": "Delete notes.txt?", "options": ["allow", "deny"]}),
                run.clone().severity(Severity::Notice),
            )?;
            answered.recv().await.ok_or("the control target stopped")?;
        }
        session.emit_with(
            "tool.completed",
            json!({"tool": tool, "status": "ok", "duration_ms": 3}),
            run.clone(),
        )?;
    }
    session.emit_with("run.finished", json!({"summary": "tidied"}), run)?;
    session.emit("session.ended", json!({"reason": "normal", "runs": 1}))?;
    emitter.close().await;
    let stats = emitter.stats();
    if stats.delivered != stats.accepted {
        return Err(format!("delivered {} of {} events", stats.delivered, stats.accepted).into());
    }
    Ok(())
}

fn print_event(event: &Event) {
    let position = event.seq().map(|s| format!("#{s}")).unwrap_or_default();
    println!(
        "dashboard  {position:>4} {:<26} {}",
        event.event_type(),
        event.id()
    );
}
