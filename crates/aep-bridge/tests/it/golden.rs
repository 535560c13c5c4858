//! The pure mappings on the whole golden corpus: CloudEvents both ways and in both HTTP
//! modes, and the span mode (beyond the spec, so pinned here) on the golden sessions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use aep_bridge::ce::{from_cloudevent, to_cloudevent, CloudEvent};
use aep_bridge::spans::{Span, SpanAssembler, SpanOptions, SpanStatus};
use aep_bridge::{CaptureLimit, CapturePolicy};
use aep_core::Capture;
use aep_test_support::golden::events as golden;
use serde_json::json;

#[test]
fn every_golden_event_is_a_valid_cloudevent_that_maps_back_bit_for_bit() {
    for event in golden() {
        let ce = to_cloudevent(&event).unwrap();
        ce.check().unwrap_or_else(|e| panic!("{}: {e}", event.id()));
        let text = ce.to_json();
        let back = from_cloudevent(&CloudEvent::from_json(text.as_bytes()).unwrap()).unwrap();
        assert!(back.dropped.is_empty());
        assert_eq!(back.event.to_value(), event.to_value());
        assert_eq!(
            back.event.data_raw().map(|d| d.get()),
            event.data_raw().map(|d| d.get())
        );
        // `time` is the same string, `.000Z` and all.
        assert_eq!(back.event.time(), event.time());

        let (headers, body) = ce.to_http_binary();
        let headers = headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let binary =
            CloudEvent::from_http_binary(headers, body.as_deref().unwrap_or_default()).unwrap();
        assert_eq!(
            from_cloudevent(&binary).unwrap().event.to_value(),
            event.to_value()
        );
    }
}

#[test]
fn an_inbound_cloudevent_with_a_bad_table_value_is_refused_with_its_name() {
    let ce = to_cloudevent(&golden()[1]).unwrap();
    let bad = CloudEvent::from_json(
        ce.to_json()
            .replace(r#""aepsequence":1"#, r#""aepsequence":"one""#)
            .as_bytes(),
    )
    .unwrap();
    let err = from_cloudevent(&bad).unwrap_err();
    assert!(err.to_string().contains("aepsequence"), "{err}");
    let no_time = CloudEvent::from_json(
        ce.to_json()
            .replace(r#""time":"2026-07-03T10:14:01.000Z","#, "")
            .as_bytes(),
    )
    .unwrap();
    assert!(from_cloudevent(&no_time)
        .unwrap_err()
        .to_string()
        .contains("`time`"));
    let base64 = br#"{"specversion":"1.0","id":"1","source":"s","type":"dev.aep.agent.idle","data_base64":"AAEC"}"#;
    assert!(CloudEvent::from_json(base64).is_err());
    let text = br#"{"specversion":"1.0","id":"1","source":"s","type":"dev.aep.agent.idle","datacontenttype":"text/plain","data":"hi"}"#;
    assert!(CloudEvent::from_json(text).is_err());
}

fn spans(options: SpanOptions) -> (Vec<Span>, SpanAssembler) {
    let mut assembler = SpanAssembler::new(options);
    let mut done = Vec::new();
    for event in golden() {
        done.extend(assembler.push(&event).unwrap());
    }
    (done, assembler)
}

fn find<'a>(spans: &'a [Span], start_event: &str) -> &'a Span {
    spans
        .iter()
        .find(|s| s.attribute("aep.start_event_id") == Some(&json!(start_event)))
        .unwrap_or_else(|| panic!("no span started by {start_event}"))
}

#[test]
fn the_golden_sessions_as_spans() {
    let (done, assembler) = spans(SpanOptions::default());
    assert_eq!(done.len(), 10);
    assert_eq!((assembler.open(), assembler.abandoned()), (5, 0));
    assert_eq!(
        assembler.unpaired(),
        2,
        "s_cost's run.finished and tool.completed"
    );

    let session = find(&done, "01JX9YB0AAAA0000000000GOLD");
    assert_eq!(session.name(), "session claude-code");
    assert_eq!(
        session.attribute("gen_ai.conversation.id"),
        Some(&json!("s_8f2c"))
    );
    assert_eq!(
        session.attribute("gen_ai.request.model"),
        Some(&json!("claude-sonnet-5"))
    );
    assert_eq!(
        session.end_time_unix_nano() - session.start_time_unix_nano(),
        119_000_000_000
    );
    assert_eq!(
        session.events().len(),
        5,
        "attention, control and vendor events of the session"
    );

    let run = find(&done, "01JX9YB1BBBB0000000000GOLD");
    assert_eq!(run.name(), "invoke_agent claude-code");
    assert_eq!(run.parent_span_id(), Some(session.span_id()));
    assert_eq!(
        run.attribute("gen_ai.usage.input_tokens"),
        Some(&json!(9214))
    );
    assert_eq!(run.attribute("aep.outcome"), Some(&json!("finished")));
    assert_eq!(run.status(), &SpanStatus::Unset);
    assert!(run.links().is_empty(), "its cause is its parent");
    let names: Vec<&str> = run.events().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["dev.aep.attention.requested"]);

    let tool = find(&done, "01JX9YB2Z1QK0000000000GOLD");
    assert_eq!(tool.name(), "execute_tool Bash");
    assert_eq!(tool.parent_span_id(), Some(run.span_id()));
    assert_eq!(tool.trace_id(), session.trace_id());
    assert_eq!(tool.attribute("gen_ai.tool.call.id"), Some(&json!("t_91")));
    assert_eq!(
        tool.end_time_unix_nano() - tool.start_time_unix_nano(),
        1_221_000_000
    );

    let denied = done
        .iter()
        .find(|s| s.attribute("aep.outcome") == Some(&json!("denied")))
        .unwrap();
    assert_eq!(denied.start_time_unix_nano(), denied.end_time_unix_nano());
    assert_eq!(denied.status(), &SpanStatus::Error("tool.denied".into()));

    // tool.failed is at capture redacted: its payload (and the error type) does not
    // pass the default ceiling; the cause pairs it with its request all the same.
    let failed = find(&done, "01JX9YBKTRQ00000000000GOLD");
    assert_eq!(failed.status(), &SpanStatus::Error("tool.failed".into()));
    let failed_run = find(&done, "01JX9YBHRUN30000000000GOLD");
    assert_eq!(failed_run.status(), &SpanStatus::Error("tool_error".into()));
    assert_eq!(failed.parent_span_id(), Some(failed_run.span_id()));
}

#[test]
fn the_downlevel_policy_keeps_the_metadata_of_a_redacted_failure() {
    let limit = CaptureLimit::new(Capture::Metadata).policy(CapturePolicy::Downlevel);
    let (done, _) = spans(SpanOptions::new().capture(limit));
    let failed = find(&done, "01JX9YBKTRQ00000000000GOLD");
    assert_eq!(failed.status(), &SpanStatus::Error("io_error".into()));
    let json = serde_json::to_string(&failed.attributes().collect::<Vec<_>>()).unwrap();
    assert!(
        !json.contains("ENOSPC"),
        "the redacted message never leaves"
    );
}

#[test]
fn span_ids_are_the_same_on_every_run() {
    let (a, _) = spans(SpanOptions::default());
    let (b, _) = spans(SpanOptions::default());
    let ids = |s: &[Span]| {
        s.iter()
            .map(|s| (s.trace_id(), s.span_id()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&a), ids(&b));
}
