//! A real agent loop: rig's agent runtime (rig-agent 0.44) with its OpenAI provider on
//! the reqwest transport, against an OpenAI-compatible mock server the test starts on
//! `127.0.0.1:0`. The model first calls a tool, then answers; rig's spans go through
//! the layer into a `MemorySink`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aep_core::redact::ContentDigest;
use aep_core::{Capture, Event};
use aep_testing::MemorySink;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use rig_agent::tool::{Tool, ToolContext};
use rig_agent::AgentBuilder;
use rig_core::providers::openai::OpenAIConfig;
use serde_json::{json, Value};
use std::future::IntoFuture;
use tracing_subscriber::layer::SubscriberExt;

use crate::{assert_stream, assert_valid, data, types};

/// The arguments the mock model calls the tool with.
const ARGS: &str = r#"{"city":"Paris"}"#;

/// The mock's answer to a chat completion: a tool call while the conversation has no
/// tool result yet, then a final answer.
async fn chat_completion(
    State(calls): State<Arc<AtomicUsize>>,
    Json(body): Json<Value>,
) -> Json<Value> {
    let n = calls.fetch_add(1, Ordering::SeqCst);
    let answered = body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    let (message, finish) = if answered {
        (
            json!({"role": "assistant", "content": "It is sunny in Paris."}),
            "stop",
        )
    } else {
        (
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_weather_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ARGS},
            }]}),
            "tool_calls",
        )
    };
    Json(json!({
        "id": format!("chatcmpl-{n}"),
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-mock",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20 + n, "completion_tokens": 7, "total_tokens": 27 + n},
    }))
}

/// The mock server on a port of its own; stopped when dropped.
struct MockOpenAi {
    base_url: String,
    calls: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl MockOpenAi {
    async fn start() -> MockOpenAi {
        let calls = Arc::new(AtomicUsize::new(0));
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completion))
            .with_state(calls.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        MockOpenAi {
            base_url,
            calls,
            task,
        }
    }
}

impl Drop for MockOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(serde::Deserialize)]
struct WeatherArgs {
    city: String,
}

/// The tool the model calls; `fails` makes it fail.
struct GetWeather {
    fails: bool,
}

#[derive(Debug)]
struct Unreachable;

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the weather service is unreachable")
    }
}

impl std::error::Error for Unreachable {}

impl Tool for GetWeather {
    const NAME: &'static str = "get_weather";
    type Args = WeatherArgs;
    type Output = String;
    type Error = Unreachable;

    fn description(&self) -> String {
        "The weather in a city".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    }

    async fn call(&self, _: &mut ToolContext, args: WeatherArgs) -> Result<String, Unreachable> {
        if self.fails {
            Err(Unreachable)
        } else {
            Ok(format!("sunny in {}", args.city))
        }
    }
}

/// Runs one prompt through a rig agent under the layer; `conversation` wraps the run
/// in the caller's own `invoke_agent` span naming it, which rig adopts as the run.
async fn run_agent(
    fails: bool,
    conversation: Option<&str>,
    capture: Capture,
) -> (Vec<Event>, String, usize) {
    let mock = MockOpenAi::start().await;
    let sink = MemorySink::new();
    let emitter = aep_async::Emitter::builder("rig-agent", "host-t")
        .capture(capture)
        .build(sink.clone());
    let subscriber = tracing_subscriber::registry().with(
        aep_tracing::AepLayer::builder(emitter)
            .session("default")
            .build(),
    );
    let _guard = tracing::subscriber::set_default(subscriber);

    let model = OpenAIConfig::new("test-key")
        .with_base_url(mock.base_url.as_str())
        .connect(rig_reqwest::ReqwestClient::default())
        .chat("gpt-mock");
    let agent = AgentBuilder::new(model)
        .preamble("You answer weather questions.")
        .record_content_telemetry(true)
        .tool(GetWeather { fails })
        .build();
    let prompt = agent.prompt("What is the weather in Paris?").max_turns(3);
    let answer = match conversation {
        Some(id) => {
            let span = tracing::info_span!(
                "invoke_agent",
                gen_ai.operation.name = "invoke_agent",
                gen_ai.conversation.id = id,
            );
            // rig takes the span current when the run starts as its agent span.
            span.in_scope(|| prompt.into_future()).await
        }
        None => prompt.await,
    };
    let answer = answer
        .map(|a| a.to_string())
        .unwrap_or_else(|e| format!("error: {e}"));
    let calls = mock.calls.load(Ordering::SeqCst);
    (sink.events(), answer, calls)
}

fn only<'a>(events: &'a [Event], ty: &str) -> &'a Event {
    let found: Vec<_> = events.iter().filter(|e| e.event_type() == ty).collect();
    assert_eq!(found.len(), 1, "one {ty} in {:?}", types(events));
    found[0]
}

#[tokio::test]
async fn a_rig_agent_that_calls_a_tool_then_answers_emits_the_run_its_steps_and_the_tool() {
    let (events, answer, calls) = run_agent(false, Some("conv-rig-1"), Capture::Metadata).await;
    assert_eq!(answer, "It is sunny in Paris.");
    assert_eq!(calls, 2, "a tool call, then the answer");
    assert_stream(
        &events,
        &[
            "run.started",
            "run.step.started",
            "run.step.finished",
            "tool.requested",
            "tool.completed",
            "run.step.started",
            "run.step.finished",
            "run.finished",
        ],
    );
    // The session is the conversation id; every event is in the one run.
    let run = events[0].run().unwrap();
    assert!(events
        .iter()
        .all(|e| e.session() == Some("conv-rig-1") && e.run() == Some(run)));

    let requested = only(&events, "tool.requested");
    assert_eq!(
        data(requested, "/tool"),
        Some(json!({"name": "get_weather", "call_id": "call_weather_1"}))
    );
    assert_eq!(requested.subject(), Some("get_weather"));
    let args: Value = serde_json::from_str(ARGS).unwrap();
    assert_eq!(
        data(requested, "/args_digest"),
        Some(json!(ContentDigest::of(&args).to_hex()))
    );
    assert_eq!(data(requested, "/args"), None, "metadata: no content");
    let completed = only(&events, "tool.completed");
    assert_eq!(completed.cause(), Some(requested.id()));
    assert_eq!(data(completed, "/status"), Some(json!("success")));
    assert!(data(completed, "/result_digest").is_some());

    // The model calls: rig records the model and the tokens on its chat spans.
    assert_eq!(
        data(&events[2], "/gen_ai.request.model"),
        Some(json!("gpt-mock"))
    );
    assert_eq!(
        data(&events[2], "/gen_ai.usage.input_tokens"),
        Some(json!(20))
    );
    assert_eq!((events[1].step(), events[6].step()), (Some("1"), Some("2")));
    let finished = only(&events, "run.finished");
    assert_eq!(finished.cause(), Some(events[0].id()));
    assert_eq!(
        data(finished, "/gen_ai.usage.input_tokens"),
        Some(json!(41)),
        "the steps' sum: the adopted span records no usage of its own"
    );
}

#[tokio::test]
async fn a_failing_tool_is_tool_failed_and_rigs_own_run_span_goes_to_the_default_session() {
    let (events, answer, _) = run_agent(true, None, Capture::Full).await;
    assert_eq!(answer, "It is sunny in Paris.", "the model answers anyway");
    assert_valid(&events);
    assert!(
        events.iter().all(|e| e.session() == Some("default")),
        "rig's own invoke_agent span names no conversation"
    );
    let failed = only(&events, "tool.failed");
    assert_eq!(
        data(failed, "/tool"),
        Some(json!({"name": "get_weather", "call_id": "call_weather_1"}))
    );
    assert_eq!(data(failed, "/error/type"), Some(json!("other")));
    let requested = only(&events, "tool.requested");
    assert_eq!(
        data(requested, "/args"),
        Some(json!({"city": "Paris"})),
        "full capture"
    );
    assert_eq!(
        data(only(&events, "run.started"), "/prompt"),
        Some(json!("What is the weather in Paris?"))
    );
    assert_eq!(only(&events, "run.finished").run(), events[0].run());
}
