//! Hand-made spans, written the way an instrumented agent (or a framework) writes them.

use aep_core::redact::ContentDigest;
use aep_core::Capture;
use aep_tracing::{Attr, SpanKind};
use serde_json::json;
use tracing::field::Empty;
use tracing::{error_span, info_span};

use std::sync::Arc;

use aep_async::Emitter;
use aep_testing::MemorySink;
use aep_tracing::AepLayer;
use tracing_subscriber::layer::SubscriberExt;

use crate::{assert_stream, assert_valid, data, traced, types, ONE_TOOL_RUN};

const ARGS: &str = r#"{"query": "weather in Paris", "units": "metric"}"#;

/// One agent run the way the GenAI conventions describe it: a model call, three tool
/// calls (one succeeds, one fails, one a hook skips), a second model call.
fn agent_run(conversation: Option<&str>) {
    let run = info_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "weather-bot",
        gen_ai.conversation.id = conversation,
        gen_ai.prompt = "What is the weather in Paris?",
    );
    let _run = run.enter();
    info_span!(
        "chat",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = "gpt-test",
        gen_ai.usage.input_tokens = 12u64,
        gen_ai.usage.output_tokens = 5u64,
    )
    .in_scope(|| {});
    info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = "get_weather",
        gen_ai.tool.call.id = "call-1",
        gen_ai.tool.call.arguments = ARGS,
        gen_ai.tool.call.result = "sunny, 21C",
    )
    .in_scope(|| {});
    info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = "get_forecast",
        gen_ai.tool.call.id = "call-2",
        error.type = "timeout",
    )
    .in_scope(|| {});
    info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = "delete_city",
        gen_ai.tool.call.id = "call-3",
        gen_ai.tool.call.outcome = "skipped",
    )
    .in_scope(|| {});
    info_span!(
        "chat",
        gen_ai.operation.name = "chat",
        gen_ai.usage.input_tokens = 30u64,
        gen_ai.usage.output_tokens = 9u64,
    )
    .in_scope(|| {});
}

/// A conventional tool span (`execute_tool`) of the tool `name`, and nothing more.
fn tool_span(name: &str) -> tracing::Span {
    info_span!(
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name
    )
}

/// A conventional agent span (`invoke_agent`), and nothing more.
fn run_span() -> tracing::Span {
    info_span!("invoke_agent", gen_ai.operation.name = "invoke_agent")
}

#[test]
fn a_run_with_steps_and_tools_becomes_run_step_and_tool_events() {
    let (events, stats, ()) = traced(Capture::Metadata, |b| b, || agent_run(Some("conv-1")));
    assert_stream(
        &events,
        &[
            "run.started",
            "run.step.started",
            "run.step.finished",
            "tool.requested",
            "tool.completed",
            "tool.requested",
            "tool.failed",
            "tool.requested",
            "tool.denied",
            "run.step.started",
            "run.step.finished",
            "run.finished",
        ],
    );
    assert_eq!(stats.emitted, 12);
    assert_eq!((stats.failed, stats.refused), (0, 0));

    // One session (the conversation), one run, positions 0.. in order.
    let run = events[0].run().unwrap();
    for (n, e) in events.iter().enumerate() {
        assert_eq!(e.session(), Some("conv-1"));
        assert_eq!(e.run(), Some(run));
        assert_eq!(e.seq(), Some(n as u64));
        assert_eq!(e.capture(), Capture::Metadata);
        assert_eq!(
            e.traceparent(),
            None,
            "no OpenTelemetry layer, no traceparent"
        );
    }
    assert_eq!(
        data(&events[0], "/gen_ai.agent.name"),
        Some(json!("weather-bot"))
    );
    assert_eq!(
        data(&events[0], "/prompt"),
        None,
        "content stays out at metadata"
    );

    // Steps: numbered in the run, on the envelope; model and tokens on the finish.
    assert_eq!((events[1].step(), events[2].step()), (Some("1"), Some("1")));
    assert_eq!(
        (events[9].step(), events[10].step()),
        (Some("2"), Some("2"))
    );
    assert_eq!(data(&events[2], "/status"), Some(json!("success")));
    assert_eq!(
        data(&events[2], "/gen_ai.request.model"),
        Some(json!("gpt-test"))
    );
    assert_eq!(
        data(&events[2], "/gen_ai.usage.input_tokens"),
        Some(json!(12))
    );
    assert!(events[3].step().is_none(), "a tool outside a step has none");

    // Tools: name and call id, the name as subject, the args digest, the pair linked.
    let (requested, completed) = (&events[3], &events[4]);
    assert_eq!(
        data(requested, "/tool"),
        Some(json!({"name": "get_weather", "call_id": "call-1"}))
    );
    assert_eq!(requested.subject(), Some("get_weather"));
    let args: serde_json::Value = serde_json::from_str(ARGS).unwrap();
    assert_eq!(
        data(requested, "/args_digest"),
        Some(json!(ContentDigest::of(&args).to_hex()))
    );
    assert_eq!(data(requested, "/args"), None);
    assert_eq!(completed.cause(), Some(requested.id()));
    assert!(data(completed, "/duration_ms").unwrap().is_u64());
    assert_eq!(
        data(completed, "/result_digest"),
        Some(json!(ContentDigest::of_text("sunny, 21C").to_hex()))
    );
    assert_eq!(data(completed, "/result"), None);

    let failed = &events[6];
    assert_eq!(failed.cause(), Some(events[5].id()));
    assert_eq!(data(failed, "/error"), Some(json!({"type": "timeout"})));
    assert_eq!(failed.severity(), aep_core::Severity::Error);
    assert_eq!(data(&events[8], "/by"), Some(json!("policy")));

    // The run: its tokens are its steps' sum, as it recorded none itself.
    let finished = &events[11];
    assert_eq!(finished.cause(), Some(events[0].id()));
    assert_eq!(
        data(finished, "/gen_ai.usage.input_tokens"),
        Some(json!(42))
    );
    assert_eq!(
        data(finished, "/gen_ai.usage.output_tokens"),
        Some(json!(14))
    );
}

#[test]
fn a_conversation_met_again_continues_its_session_and_the_rest_go_to_the_default() {
    let (events, _, ()) = traced(
        Capture::Metadata,
        |b| b.session("main"),
        || {
            agent_run(Some("conv-7"));
            agent_run(None);
            agent_run(Some("conv-7"));
        },
    );
    assert_valid(&events);
    let in_session = |s: &str| {
        events
            .iter()
            .filter(|e| e.session() == Some(s))
            .collect::<Vec<_>>()
    };
    let conv = in_session("conv-7");
    assert_eq!(conv.len(), 24, "two runs of twelve events");
    assert!(
        conv.iter()
            .enumerate()
            .all(|(n, e)| e.seq() == Some(n as u64)),
        "the second run continues the first's positions"
    );
    assert_ne!(conv[0].run(), conv[12].run(), "two runs");
    let main = in_session("main");
    assert_eq!(main.len(), 12);
    assert_eq!(main[0].seq(), Some(0));
}

/// A layer built on the agent's own session: the spans naming none or naming it, and
/// what the agent emits itself, take that one session's positions in order; another
/// conversation goes to a session of the same emitter.
#[test]
fn a_layer_on_the_agents_session_shares_its_positions() {
    let sink = MemorySink::new();
    let emitter = Emitter::new("agent", "host-t", sink.clone());
    let session = Arc::new(emitter.session("conv-1"));
    let layer = AepLayer::on_session(session.clone()).build();
    let stats = layer.inner().stats_handle();
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        agent_run(None);
        tool_span("deploy").in_scope(|| {
            // the agent's own event while the tool's span is open
            let request =
                json!({"kind": "permission", "prompt": "Deploy?", "respond_via": ["control"]});
            session.emit("attention.requested", request).unwrap();
        });
        agent_run(Some("conv-1"));
        agent_run(Some("conv-2"));
    });
    let events = sink.events();
    assert_valid(&events);
    assert_eq!(
        stats.stats().emitted,
        12 * 3 + 2,
        "the agent's own event is not the layer's"
    );
    let conv1: Vec<_> = events
        .iter()
        .filter(|e| e.session() == Some("conv-1"))
        .collect();
    assert_eq!(conv1.len(), 12 * 2 + 3);
    assert!(
        conv1
            .iter()
            .enumerate()
            .all(|(n, e)| e.seq() == Some(n as u64)),
        "one counter: the agent's event and the spans'"
    );
    assert_eq!(
        types(&events)[12..15],
        ["tool.requested", "attention.requested", "tool.completed"]
    );
    assert_eq!(
        session.next_seq(),
        27,
        "the agent's handle saw every position taken"
    );
    let conv2 = events.iter().filter(|e| e.session() == Some("conv-2"));
    assert!(conv2
        .clone()
        .all(|e| e.agent() == "agent" && e.epoch() == 0));
    assert_eq!(conv2.count(), 12);
}

#[test]
fn the_default_session_is_fresh_for_each_layer() {
    let (a, _, ()) = traced(Capture::Metadata, |b| b, || agent_run(None));
    let (b, _, ()) = traced(Capture::Metadata, |b| b, || agent_run(None));
    assert_ne!(a[0].session(), b[0].session());
}

#[test]
fn spans_that_map_nothing_emit_nothing_and_keep_the_run_around_them() {
    let (events, stats, ()) = traced(
        Capture::Metadata,
        |b| b,
        || {
            info_span!("plain", user = "x").in_scope(|| {
                tracing::info!("nothing to see");
                info_span!("embeddings", gen_ai.operation.name = "embeddings").in_scope(|| {});
            });
            run_span().in_scope(|| {
                info_span!("middleware").in_scope(|| {
                    tool_span("t").in_scope(|| {});
                });
            });
        },
    );
    assert_stream(&events, &ONE_TOOL_RUN);
    assert_eq!(events[1].run(), events[0].run());
    assert_eq!(stats.emitted, 4);
}

#[test]
fn a_tool_named_after_entering_opens_at_its_first_exit_with_its_arguments() {
    use tracing_subscriber::layer::SubscriberExt;
    let sink = aep_testing::MemorySink::new();
    let layer = aep_tracing::layer(aep_async::Emitter::new("a", "h", sink.clone()));
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        // rig's shape: the span is entered, then its name, call id and arguments recorded.
        let span = info_span!(
            "execute_tool",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = Empty,
            gen_ai.tool.call.id = Empty,
            gen_ai.tool.call.arguments = Empty,
            gen_ai.tool.call.outcome = Empty,
        );
        {
            let _entered = span.enter();
            assert!(sink.is_empty(), "no name yet: nothing to request");
            span.record("gen_ai.tool.name", "search");
            span.record("gen_ai.tool.call.id", "c9");
            span.record("gen_ai.tool.call.arguments", r#"{"q":"x"}"#);
        }
        // The tool is awaiting: the span is exited, the request is out.
        assert_eq!(types(&sink.events()), ["tool.requested"]);
        let _entered = span.enter();
        span.record("gen_ai.tool.call.outcome", "success");
    });
    let events = sink.events();
    assert_stream(&events, &["tool.requested", "tool.completed"]);
    assert_eq!(
        data(&events[0], "/tool"),
        Some(json!({"name": "search", "call_id": "c9"}))
    );
    assert_eq!(
        data(&events[0], "/args_digest"),
        Some(json!(ContentDigest::of(&json!({"q": "x"})).to_hex()))
    );
    assert_eq!(data(&events[1], "/status"), Some(json!("success")));
}

#[test]
fn an_error_event_fails_the_span_it_happens_in() {
    let (events, _, ()) = traced(
        Capture::Metadata,
        |b| b,
        || {
            run_span().in_scope(|| {
                tool_span("fetch")
                    .in_scope(|| tracing::error!(error.type = "http_500", "upstream said 500"));
            });
            error_span!("invoke_agent", gen_ai.operation.name = "invoke_agent")
                .in_scope(|| tracing::error!("the model refused"));
        },
    );
    assert_stream(
        &events,
        &[
            "run.started",
            "tool.requested",
            "tool.failed",
            "run.finished",
            "run.started",
            "run.failed",
        ],
    );
    assert_eq!(
        data(&events[2], "/error"),
        Some(json!({"type": "http_500"})),
        "the message is free text: not at metadata"
    );
    assert_eq!(data(&events[5], "/reason"), Some(json!("error")));
}

#[test]
fn at_a_full_ceiling_the_content_goes_out_too() {
    let (events, _, ()) = traced(
        Capture::Full,
        |b| b,
        || {
            agent_run(None);
            run_span().in_scope(|| {
                tool_span("fetch").in_scope(|| tracing::error!("connection reset by peer"));
            });
        },
    );
    assert_valid(&events);
    assert_eq!(
        data(&events[0], "/prompt"),
        Some(json!("What is the weather in Paris?"))
    );
    assert_eq!(events[0].capture(), Capture::Full);
    let args: serde_json::Value = serde_json::from_str(ARGS).unwrap();
    assert_eq!(data(&events[3], "/args"), Some(args.clone()));
    assert_eq!(
        data(&events[3], "/args_digest"),
        Some(json!(ContentDigest::of(&args).to_hex()))
    );
    assert_eq!(data(&events[4], "/result"), Some(json!("sunny, 21C")));
    let failed = events
        .iter()
        .find(|e| e.event_type() == "tool.failed" && e.subject() == Some("fetch"))
        .unwrap();
    assert_eq!(
        data(failed, "/error/message"),
        Some(json!("connection reset by peer"))
    );
}

#[test]
fn at_a_redacted_ceiling_without_a_redactor_no_unredacted_text_goes_out() {
    let (events, _, ()) = traced(
        Capture::Redacted,
        |b| b,
        || {
            agent_run(None);
            tool_span("fetch").in_scope(|| tracing::error!("token=abc123 was refused"));
        },
    );
    assert_valid(&events);
    assert!(events.iter().all(|e| e.capture() <= Capture::Redacted));
    let lines: Vec<String> = events.iter().map(|e| e.to_json()).collect();
    assert!(!lines
        .iter()
        .any(|l| l.contains("abc123") || l.contains("weather in Paris?")));
}

#[test]
fn a_boolean_error_field_fails_the_span_only_when_true() {
    let (events, _, ()) = traced(
        Capture::Metadata,
        |b| b,
        || {
            for failed in [false, true] {
                info_span!(
                    "execute_tool",
                    gen_ai.operation.name = "execute_tool",
                    gen_ai.tool.name = "t",
                    error = failed
                )
                .in_scope(|| {});
            }
        },
    );
    assert_stream(
        &events,
        &[
            "tool.requested",
            "tool.completed",
            "tool.requested",
            "tool.failed",
        ],
    );
}

#[test]
fn content_past_the_bound_is_digested_and_not_carried() {
    let big = format!(r#"{{"blob": "{}"}}"#, "x".repeat(100));
    let (events, _, ()) = traced(
        Capture::Full,
        |b| b.max_content_bytes(64),
        || {
            info_span!(
                "execute_tool",
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = "t",
                gen_ai.tool.call.arguments = big.as_str()
            )
            .in_scope(|| {});
        },
    );
    assert_valid(&events);
    assert!(data(&events[0], "/args_digest").is_some());
    assert_eq!(data(&events[0], "/args"), None);
}

#[test]
fn names_and_fields_of_the_callers_map_code_that_ignores_the_conventions() {
    let (events, _, ()) = traced(
        Capture::Metadata,
        |b| {
            b.span_name("agent_loop", SpanKind::Run)
                .span_name("call_tool", SpanKind::Tool)
                .span_name("llm", SpanKind::Step)
                .field("tool", Attr::ToolName)
                .field("id", Attr::ToolCallId)
                .field("conversation", Attr::Session)
                .skip_operation("chat")
        },
        || {
            info_span!("agent_loop", conversation = "c-42").in_scope(|| {
                info_span!("llm").in_scope(|| {});
                // A conventional model call, left out by `skip_operation`.
                info_span!("chat", gen_ai.operation.name = "chat").in_scope(|| {});
                info_span!("call_tool", tool = "grep", id = 7u64).in_scope(|| {});
            });
        },
    );
    assert_stream(
        &events,
        &[
            "run.started",
            "run.step.started",
            "run.step.finished",
            "tool.requested",
            "tool.completed",
            "run.finished",
        ],
    );
    assert!(events.iter().all(|e| e.session() == Some("c-42")));
    assert_eq!(
        data(&events[3], "/tool"),
        Some(json!({"name": "grep", "call_id": "7"}))
    );
}

#[test]
fn refused_sessions_emit_nothing_and_say_why() {
    let (events, stats, ()) = traced(
        Capture::Metadata,
        |b| b.max_sessions(1),
        || {
            agent_run(Some("first"));
            agent_run(Some("second"));
            agent_run(Some("has a space"));
        },
    );
    assert_valid(&events);
    assert!(events.iter().all(|e| e.session() == Some("first")));
    assert_eq!(events.len(), 12);
    assert_eq!(stats.refused, 24, "every event of the two refused runs");
    let why = stats.last_error.unwrap();
    assert!(
        why.contains("has a space") && why.contains("not usable"),
        "{why}"
    );
}

#[test]
fn a_refusing_sink_is_counted_and_the_program_goes_on() {
    #[derive(Debug)]
    struct Closed;
    impl aep_async::Sink for Closed {
        fn accept(&self, _: &aep_core::Event) -> Result<(), aep_async::EmitError> {
            Err(aep_async::EmitError::Closed)
        }
        fn flush(&self) -> aep_async::SinkFuture<'_> {
            Box::pin(async {})
        }
        fn close(&self) -> aep_async::SinkFuture<'_> {
            Box::pin(async {})
        }
    }
    let layer = aep_tracing::AepLayer::builder(aep_async::Emitter::new("a", "h", Closed))
        .build::<tracing_subscriber::Registry>();
    let stats = layer.inner().stats_handle();
    use tracing_subscriber::layer::SubscriberExt;
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        agent_run(None)
    });
    let stats = stats.stats();
    assert_eq!((stats.emitted, stats.failed), (0, 12));
    assert!(stats.last_error.unwrap().contains("sink is closed"));
}

#[test]
fn spans_on_several_threads_keep_one_sessions_positions_unique() {
    let (events, stats, ()) = traced(
        Capture::Metadata,
        |b| b.session("shared"),
        || {
            let dispatch = tracing::dispatcher::get_default(|d| d.clone());
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let dispatch = dispatch.clone();
                    std::thread::spawn(move || {
                        tracing::dispatcher::with_default(&dispatch, || {
                            for _ in 0..25 {
                                agent_run(None);
                            }
                        })
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        },
    );
    assert_eq!(stats.emitted, 4 * 25 * 12);
    let mut seqs: Vec<u64> = events.iter().map(|e| e.seq().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..1200).collect::<Vec<_>>());
    assert_valid(&events);
}
