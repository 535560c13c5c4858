//! An agent instrumented with `tracing`, and nothing else: its spans appear on a relay
//! as AEP events through `aep::tracing`'s layer.
//!
//! ```text
//! cargo run --example traced_agent                  # starts an embedded relay
//! cargo run --example traced_agent -- --url http://127.0.0.1:8787 [--token T]
//! ```
//!
//! 1. starts the embedded relay (unless `--url` names one);
//! 2. a dashboard subscribes over SSE to the session about to run;
//! 3. the agent process installs one `tracing` subscriber with the AEP layer over an
//!    `Emitter` to the relay, and runs its loop. The loop knows nothing of AEP: it
//!    writes spans in the OpenTelemetry GenAI conventions (`invoke_agent`, `chat`,
//!    `execute_tool`), as rig and other agent frameworks do;
//! 4. the dashboard prints the events those spans became: the run, its model calls
//!    (steps) and the tool call with its call id, name and argument digest.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use aep::protocol::Event;
use aep::tracing::AepLayer;
use aep::{Client, Emitter, HttpSinkOptions, Notice, SubscribeOptions};
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

/// The types the dashboard must see, in order.
const EXPECTED: [&str; 8] = [
    "run.started",
    "run.step.started",
    "run.step.finished",
    "tool.requested",
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
    // 1. A relay: the embedded one unless the caller named another.
    let (url, relay) = match args.url {
        Some(url) => (url, None),
        None => {
            let relay = aep::relay::Relay::builder().start().await?;
            (relay.url().to_owned(), Some(relay))
        }
    };
    println!("relay      {url}");
    let conversation = format!(
        "traced-{}",
        aep::protocol::envelope::new_ulid(std::time::SystemTime::now())
    );
    let result = tokio::time::timeout(DEADLINE, run(&url, args.token, &conversation)).await;
    if let Some(relay) = relay {
        relay.shutdown().await?;
    }
    match result {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("the exchange did not finish within {DEADLINE:?}").into()),
    }
}

async fn run(url: &str, token: Option<String>, conversation: &str) -> Result<(), BoxError> {
    // 2. The dashboard subscribes first; `Connected` says the relay holds the
    //    subscription, so nothing the agent emits afterwards can be missed.
    let connected = Arc::new(Notify::new());
    let options = SubscribeOptions::new()
        .filter(json!({"session": conversation}))
        .on_notice({
            let connected = connected.clone();
            move |notice| match notice {
                Notice::Connected { .. } => connected.notify_one(),
                Notice::Error(e) => eprintln!("dashboard  {e}"),
                _ => {}
            }
        });
    let relay = match &token {
        Some(t) => Client::new(url).token(t.as_str()),
        None => Client::new(url),
    };
    let mut feed = relay.subscribe(options);
    connected.notified().await;

    // 3. The agent process: one subscriber, the AEP layer over an emitter to the relay.
    //    The conversation id on the agent's span is the AEP session.
    let sink = relay.http_sink(HttpSinkOptions::new())?;
    let emitter = Emitter::new("traced-agent", "localhost", sink);
    let subscriber =
        tracing_subscriber::registry().with(AepLayer::builder(emitter.clone()).build());
    let answer = agent(conversation, "What is the weather in Paris?")
        .with_subscriber(subscriber)
        .await;
    println!("agent      answered {answer:?}");
    emitter.flush().await;

    // 4. The dashboard: the spans, as events.
    let mut seen = Vec::new();
    while let Some(event) = feed.next().await {
        print_event(&event);
        seen.push(event.event_type().to_owned());
        if event.event_type() == "run.finished" {
            break;
        }
    }
    feed.close();
    emitter.close().await;
    if seen != EXPECTED {
        return Err(format!("the dashboard saw {seen:?}, not {EXPECTED:?}").into());
    }
    Ok(())
}

/// The agent's loop, instrumented as an agent framework instruments it; it emits
/// nothing itself. The "model" is a stand-in that asks for the weather tool once.
async fn agent(conversation: &str, prompt: &str) -> String {
    let run = info_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "weather-bot",
        gen_ai.conversation.id = conversation,
    );
    async {
        let mut observations: Vec<String> = Vec::new();
        loop {
            let reply = model(prompt, &observations).await;
            match reply {
                Reply::Call { id, name, args } => {
                    observations.push(tool(&id, &name, &args).await);
                }
                Reply::Answer(text) => return text,
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
async fn tool(id: &str, name: &str, args: &serde_json::Value) -> String {
    let span = info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = id,
        gen_ai.tool.call.arguments = %args,
    );
    async {
        tokio::task::yield_now().await;
        "sunny, 21 °C".to_owned()
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
        _ => format!("run {}", event.run().unwrap_or("?")),
    };
    println!(
        "dashboard  {position:>4} {:<20} {detail}",
        event.event_type()
    );
}
