//! The first command to run: an agent and a dashboard talking through a relay.
//!
//! ```text
//! cargo run --example quickstart                  # starts an embedded relay
//! cargo run --example quickstart -- --url http://127.0.0.1:8787 [--token T]
//! ```
//!
//! 1. starts the embedded relay (unless `--url` names one);
//! 2. a dashboard subscribes over SSE with an attr-match filter (AEP-0003 §6) on the
//!    session about to run;
//! 3. an agent emits that session over HTTP: session, run, two tool calls and an
//!    attention request (AEP-0002 §7);
//! 4. the dashboard sees the request live and answers it; the agent records the answer
//!    and resolves the request;
//! 5. the dashboard folds everything it saw with `aep::core::projection` and prints the
//!    projected state.
//!
//! The answer travels over an in-process channel for now: the control client
//! (AEP-0004 `control.attention.respond`) replaces it once it lands, and the agent says
//! `via: "oob"` accordingly (AEP-0002 §7.2).

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use aep::core::projection::StateProjection;
use aep::core::Event;
use aep::{subscribe, EmitOptions, Emitter, HttpSink, Notice, SubscribeOptions};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

type BoxError = Box<dyn Error + Send + Sync>;

/// The whole exchange must finish well within this; a stuck relay fails the run.
const DEADLINE: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct Args {
    url: Option<String>,
    token: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => args.url = Some(value()?),
            "--token" => args.token = Some(value()?),
            "-h" | "--help" => return Err("usage: quickstart [--url URL] [--token T]".into()),
            other => return Err(format!("unknown argument {other}; try --help")),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = parse_args()?;
    // 1. A relay: the embedded one unless the caller named another.
    let relay = match &args.url {
        Some(_) => None,
        None => Some(aep::relay::Relay::builder().start().await?),
    };
    let url = match (&args.url, &relay) {
        (Some(url), _) => url.clone(),
        (None, Some(relay)) => relay.url().to_owned(),
        (None, None) => unreachable!("a relay was started when no --url was given"),
    };
    println!("relay      {url}");

    let session_id = format!("quickstart-{}", std::process::id());
    let result = tokio::time::timeout(DEADLINE, run(&url, args.token, &session_id)).await;
    if let Some(relay) = relay {
        relay.shutdown().await?;
    }
    match result {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("the exchange did not finish within {DEADLINE:?}").into()),
    }
}

async fn run(url: &str, token: Option<String>, session_id: &str) -> Result<(), BoxError> {
    // 2. The dashboard subscribes first; `Connected` says the relay holds the
    //    subscription, so nothing the agent emits afterwards can be missed.
    let connected = Arc::new(Notify::new());
    let mut options = SubscribeOptions::new()
        .filter(json!({
            "session": session_id,
            "type": ["session.*", "run.*", "tool.*", "attention.*"],
        }))
        .on_notice({
            let connected = connected.clone();
            move |notice| match notice {
                Notice::Connected { .. } => connected.notify_one(),
                Notice::Error(e) => eprintln!("dashboard  {e}"),
                _ => {}
            }
        });
    if let Some(t) = &token {
        options = options.token(t.clone());
    }
    let mut feed = subscribe(url, options);
    connected.notified().await;

    // The dashboard's answers travel back to the agent on this channel.
    let (answers_tx, answers_rx) = mpsc::channel::<(String, Value)>(1);
    let agent = tokio::spawn(agent(
        url.to_owned(),
        token,
        session_id.to_owned(),
        answers_rx,
    ));

    // 4-5. The dashboard: print each event, answer the attention request, fold.
    let mut projection = StateProjection::new();
    while let Some(event) = feed.next().await {
        print_event(&event);
        projection.apply(&event);
        match event.event_type() {
            "attention.requested" => {
                let answer = json!({"choice": "allow"});
                println!("dashboard  answers {} with {answer}", event.id());
                answers_tx.send((event.id().to_owned(), answer)).await?;
            }
            "session.ended" => break,
            _ => {}
        }
    }
    feed.close();
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

/// 3. The agent: one session over the HTTP sink.
async fn agent(
    url: String,
    token: Option<String>,
    session_id: String,
    mut answers: mpsc::Receiver<(String, Value)>,
) -> Result<(), BoxError> {
    let mut sink = HttpSink::builder(&url);
    if let Some(t) = token {
        sink = sink.token(t);
    }
    let emitter = Emitter::new("quickstart-agent", "localhost", sink.build()?);
    let session = emitter.session(session_id);
    let run = EmitOptions::new().run("r1");

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
            let ask = session.emit_with(
                "attention.requested",
                json!({"kind": "permission", "prompt": "Delete notes.txt?", "options": ["allow", "deny"]}),
                run.clone().severity(aep::core::Severity::Notice),
            )?;
            emitter.flush().await;
            let (asked, answer) = answers.recv().await.ok_or("the dashboard hung up")?;
            debug_assert_eq!(asked, ask.id());
            // The lifecycle carries the request's id as `subject`, and its immediate
            // cause as `cause` (AEP-0002 §7.2 rule 1).
            let about = run.clone().subject(ask.id());
            let answered = session.emit_with(
                "attention.answered",
                json!({"answer": answer, "via": "oob"}),
                about.clone().cause(ask.id()),
            )?;
            session.emit_with(
                "attention.resolved",
                json!({"resolution": "answered"}),
                about.cause(answered.id()),
            )?;
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
        "dashboard  {position:>4} {:<20} {}",
        event.event_type(),
        event.id()
    );
}
