//! An agent instrumented with `tracing`: its spans appear on a relay as AEP events
//! through `aep::tracing`'s layer, and it asks a person once (AEP-0002 §7) in the same
//! session, answered by a console in the same program.
//!
//! ```text
//! cargo run --example traced_agent                  # starts an embedded relay
//! cargo run --example traced_agent -- --url http://127.0.0.1:8787 [--token T]
//! ```
//!
//! 1. starts the embedded relay (unless `--url` names one);
//! 2. a console subscribes over SSE to the session about to run, and opens a control
//!    client (AEP-0004);
//! 3. the agent process opens one session over the WebSocket sink, attached to a
//!    `ControlTarget` (commands for the session come back on that connection), and
//!    installs one `tracing` subscriber whose AEP layer emits on that very session. Its
//!    loop writes spans in the OpenTelemetry GenAI conventions (`invoke_agent`, `chat`,
//!    `execute_tool`), as rig and other agent frameworks do, and emits nothing itself,
//!    except once: before running the tool it asks for permission with
//!    `ControlTarget::ask`;
//! 4. the console prints the events: the run, its model calls (steps), the tool call
//!    with its call id, name and argument digest, and the attention request, which it
//!    answers `allow`. The layer's events and the ask's share one session's positions:
//!    one epoch, `seq` increasing.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use aep::control::{ControlOptions, ControlTarget, RejectReason, SendOptions};
use aep::protocol::attention::{AttentionRequest, ALLOW};
use aep::protocol::Event;
use aep::tracing::AepLayer;
use aep::{Client, Emitter, Notice, SessionEmitter, SubscribeOptions, WsSinkOptions};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::Notify;
use tracing::instrument::WithSubscriber;
use tracing::{info_span, Instrument};
use tracing_subscriber::layer::SubscriberExt;

mod common;
pub use common::Args;

type BoxError = Box<dyn Error + Send + Sync>;

/// The whole exchange must finish well within this; a stuck relay fails the run.
const DEADLINE: Duration = Duration::from_secs(30);

/// The types the console must see, in order.
const EXPECTED: [&str; 11] = [
    "run.started",
    "run.step.started",
    "run.step.finished",
    "tool.requested",
    "attention.requested",
    "attention.answered",
    "attention.resolved",
    "tool.completed",
    "run.step.started",
    "run.step.finished",
    "run.finished",
];

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    traced_agent(common::parse_args("traced_agent")?).await
}

/// The whole example; `tests/it/examples.rs` runs it too.
pub async fn traced_agent(args: Args) -> Result<(), BoxError> {
    // 1. A relay: the embedded one unless the caller named another. Control needs an
    //    authenticated binding (AEP-0004 §4.1), so the embedded relay gets a token.
    let (url, token, relay) = match args.url {
        Some(url) => (url, args.token, None),
        None => {
            let token = args.token.unwrap_or_else(|| "traced-agent".to_owned());
            let relay = aep::relay::Relay::builder()
                .token(token.as_str())
                .start()
                .await?;
            (relay.url().to_owned(), Some(token), Some(relay))
        }
    };
    println!("relay      {url}");
    let conversation = format!(
        "traced-{}",
        aep::protocol::envelope::new_ulid(std::time::SystemTime::now())
    );
    let result = tokio::time::timeout(DEADLINE, run(&url, token, &conversation)).await;
    if let Some(relay) = relay {
        relay.shutdown().await?;
    }
    match result {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("the exchange did not finish within {DEADLINE:?}").into()),
    }
}

async fn run(url: &str, token: Option<String>, conversation: &str) -> Result<(), BoxError> {
    // 2. The console subscribes first; `Connected` says the relay holds the
    //    subscription, so nothing the agent emits afterwards can be missed.
    let connected = Arc::new(Notify::new());
    let options = SubscribeOptions::new()
        .filter(json!({"session": conversation, "type": ["run.*", "tool.*", "attention.*"]}))
        .on_notice({
            let connected = connected.clone();
            move |notice| match notice {
                Notice::Connected { .. } => connected.notify_one(),
                Notice::Error(e) => eprintln!("console    {e}"),
                _ => {}
            }
        });
    let relay = match &token {
        Some(t) => Client::new(url).token(t.as_str()),
        None => Client::new(url),
    };
    let mut feed = relay.subscribe(options);
    connected.notified().await;
    let console = relay.control(ControlOptions::new()).await?;

    // 3. The agent process. Answers to its attention requests come back as commands on
    //    its sink's connection, to the target; what no `ask` waits on is refused.
    let target = ControlTarget::new(["control.attention.respond"], |cmd| async move {
        let _ = cmd.reject(RejectReason::Invalid, "no request of that id is pending");
    });
    let sink = relay
        .ws_sink(WsSinkOptions::new("traced-agent", "localhost/1").command_hook(target.clone()))?;
    let emitter = Emitter::new("traced-agent", "localhost", sink);
    // One session: the layer emits the spans' events on it, the agent asks on it.
    let session = target.attach(emitter.session(conversation));
    let subscriber =
        tracing_subscriber::registry().with(AepLayer::on_session(session.clone()).build());
    let agent = tokio::spawn(
        agent(target, session, "What is the weather in Paris?").with_subscriber(subscriber),
    );

    // 4. The console: the spans and the ask, as events; it answers the request.
    let mut seen = Vec::new();
    let mut positions = Vec::new();
    while let Some(event) = feed.next().await {
        print_event(&event);
        seen.push(event.event_type().to_owned());
        positions.push((event.epoch(), event.seq()));
        match event.event_type() {
            "attention.requested" => {
                let answer = SendOptions::new()
                    .subject(event.id())
                    .data(json!({"answer": {"option": ALLOW}}));
                let ack = console
                    .send("control.attention.respond", conversation, answer)
                    .await?;
                println!(
                    "console         answered {ALLOW}, acked by {}",
                    ack.event_type()
                );
            }
            "run.finished" => break,
            _ => {}
        }
    }
    feed.close();
    console.close().await;
    let answer = agent.await??;
    println!("agent      answered {answer:?}");
    emitter.close().await;
    if seen != EXPECTED {
        return Err(format!("the console saw {seen:?}, not {EXPECTED:?}").into());
    }
    // The layer's events and the ask's are one session's: one epoch, `seq` increasing.
    let one_session = positions
        .windows(2)
        .all(|w| w[0].0 == w[1].0 && w[0].1 < w[1].1);
    if !one_session {
        return Err(format!("positions not one session's: {positions:?}").into());
    }
    Ok(())
}

/// The agent's loop, instrumented as an agent framework instruments it; it emits
/// nothing itself but its one question. The "model" is a stand-in that asks for the
/// weather tool once.
async fn agent(
    target: ControlTarget,
    session: Arc<SessionEmitter>,
    prompt: &str,
) -> Result<String, BoxError> {
    let run = info_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "weather-bot",
        gen_ai.conversation.id = session.session(),
    );
    async {
        let mut observations: Vec<String> = Vec::new();
        loop {
            let reply = model(prompt, &observations).await;
            match reply {
                Reply::Call { id, name, args } => {
                    observations.push(tool(&target, &session, &id, &name, &args).await?);
                }
                Reply::Answer(text) => return Ok::<_, BoxError>(text),
            }
        }
    }
    .instrument(run)
    .await
}

enum Reply {
    Call {
        id: String,
        name: String,
        args: serde_json::Value,
    },
    Answer(String),
}

/// One model call: a `chat` span with the model and the tokens it used.
async fn model(prompt: &str, observations: &[String]) -> Reply {
    let span = info_span!(
        "chat",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = "stand-in-1",
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
    );
    async {
        tokio::task::yield_now().await;
        let span = tracing::Span::current();
        span.record(
            "gen_ai.usage.input_tokens",
            (prompt.len() + 10 * observations.len()) as u64,
        );
        span.record("gen_ai.usage.output_tokens", 8u64);
        match observations.first() {
            None => Reply::Call {
                id: "call-1".to_owned(),
                name: "get_weather".to_owned(),
                args: json!({"city": "Paris"}),
            },
            Some(seen) => Reply::Answer(format!("The weather in Paris: {seen}.")),
        }
    }
    .instrument(span)
    .await
}

/// One tool execution: an `execute_tool` span with the call id, name and arguments.
/// The tool runs once a person allows it: `ask` emits `attention.requested` in the
/// session the layer emits on, and returns the answer the console sent.
async fn tool(
    target: &ControlTarget,
    session: &Arc<SessionEmitter>,
    id: &str,
    name: &str,
    args: &serde_json::Value,
) -> Result<String, BoxError> {
    let span = info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = id,
        gen_ai.tool.call.arguments = %args,
    );
    async {
        let question = AttentionRequest::permission(format!("Run {name} with {args}?"))
            .timeout(Duration::from_secs(20));
        let answer = target.ask(session, question).await?;
        if !answer.is(ALLOW) {
            return Ok("not allowed to look".to_owned());
        }
        Ok::<_, BoxError>("sunny, 21 °C".to_owned())
    }
    .instrument(span)
    .await
}

fn print_event(event: &Event) {
    let position = event.seq().map(|s| format!("#{s}")).unwrap_or_default();
    let detail = match event.event_type() {
        t if t.starts_with("tool.") => event
            .data()
            .and_then(|d| d.get("tool").cloned())
            .map(|t| t.to_string())
            .unwrap_or_default(),
        t if t.starts_with("run.step.") => format!("step {}", event.step().unwrap_or("?")),
        t if t.starts_with("attention.") => {
            format!("request {}", event.subject().unwrap_or(event.id()))
        }
        _ => format!("run {}", event.run().unwrap_or("?")),
    };
    println!(
        "console    {position:>4} {:<20} {detail}",
        event.event_type()
    );
}
