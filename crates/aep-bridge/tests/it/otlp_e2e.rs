//! The OTLP exporter end to end: the golden corpus emitted to an embedded relay,
//! subscribed by the exporter, posted as OTLP/HTTP protobuf (gzip, bearer token) to a
//! receiver that decodes with the official `opentelemetry-proto` Python package, an
//! implementation of the OTLP protos independent of this crate's.
//!
//! The receiver (`tests/otlp_receiver.py`) needs Python 3 and `opentelemetry-proto`
//! from PyPI; where they are missing the test prints why it skipped, unless
//! `AEP_REQUIRE_EXTERNAL=1` (set by `.ci/run`) makes a skip a failure.
#![cfg(feature = "export")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use aep_async::SubscribeOptions;
use aep_bridge::export::{HttpOptions, OtlpExporter, Signals};
use aep_relay::Relay;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance")
}

/// Skips with a printed reason, or fails where external tools are required.
fn skip(why: &str) {
    aep_test_support::external::skip_for(Some(why));
}

/// The Python receiver; killed (and its stdin closed) when dropped.
struct Receiver {
    child: Child,
    url: String,
    lines: mpsc::UnboundedReceiver<Value>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Receiver {
    async fn start(token: &str) -> Option<Receiver> {
        let probe = Command::new("python3")
            .args([
                "-c",
                "import opentelemetry.proto.collector.logs.v1.logs_service_pb2",
            ])
            .output()
            .await;
        if !probe.is_ok_and(|o| o.status.success()) {
            skip("python3 with the opentelemetry-proto package is not installed (pip install opentelemetry-proto)");
            return None;
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--token", token])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the receiver");
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), out.next_line())
            .await
            .expect("the receiver starts within 20 s")
            .unwrap()
            .expect("the receiver names its port");
        let port = first
            .strip_prefix("listening on ")
            .expect("listening on PORT");
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = out.next_line().await {
                let _ = tx.send(serde_json::from_str::<Value>(&line).unwrap());
            }
        });
        Some(Receiver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            lines,
        })
    }
}

fn golden() -> Vec<Value> {
    aep_test_support::golden::lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn rank(capture: &str) -> usize {
    ["none", "metadata", "redacted", "full"]
        .iter()
        .position(|c| *c == capture)
        .unwrap()
}

/// Every string in a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

async fn wait_for_subscriber(relay: &str) {
    let client = reqwest::Client::new();
    for _ in 0..200 {
        let body = client
            .get(format!("{relay}/healthz"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let health: Value = serde_json::from_slice(&body).unwrap_or_default();
        if health["subscribers"].as_u64().unwrap_or(0) >= 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the exporter never subscribed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_golden_corpus_arrives_as_log_records_and_spans_and_nothing_above_max_capture_leaks() {
    let Some(mut receiver) = Receiver::start("otlp-secret").await else {
        return;
    };
    let relay = Relay::builder().start().await.unwrap();
    let exporter = OtlpExporter::builder(&receiver.url)
        .signals(Signals::LogsAndSpans)
        .batch(|b| b.linger(Duration::from_millis(100)))
        .http(HttpOptions::new().bearer("otlp-secret"))
        .build()
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let relay_url = relay.url().to_owned();
    let export = tokio::spawn(async move {
        let stats = exporter
            .run_relay(
                &aep_async::Client::new(relay_url),
                SubscribeOptions::new(),
                stopped,
            )
            .await;
        (stats, exporter)
    });
    wait_for_subscriber(relay.url()).await;

    // The whole corpus in one NDJSON batch, as an emitter would post it.
    let body = std::fs::read(fixtures().join("golden/golden.jsonl")).unwrap();
    let ingest = reqwest::Client::new()
        .post(format!("{}/events", relay.url()))
        .header("content-type", "application/x-ndjson")
        .header("AEP-Version", "0.1")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(ingest.status(), 202);

    // The relay fans every event out to a consumer except the two commands, which it
    // routes to their targets (AEP-0004).
    let golden = golden();
    let delivered: Vec<&Value> = golden
        .iter()
        .filter(|e| {
            let ty = aep_core::EventType::parse(e["type"].as_str().unwrap()).unwrap();
            !ty.is_command()
        })
        .collect();
    assert_eq!(delivered.len(), 62);
    let expected_spans = 10;

    let mut logs: BTreeMap<(String, String), Value> = BTreeMap::new();
    let mut spans: Vec<Value> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while logs.len() < delivered.len() || spans.len() < expected_spans {
        let line = tokio::time::timeout_at(deadline, receiver.lines.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "timed out with {} records and {} spans",
                    logs.len(),
                    spans.len()
                )
            })
            .expect("the receiver is running");
        assert_eq!(line["encoding"], "gzip");
        assert_eq!(line["content_type"], "application/x-protobuf");
        for record in line["logs"].as_array().into_iter().flatten() {
            let key = (
                record["attributes"]["aep.source"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                record["attributes"]["aep.event_id"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
            assert!(
                logs.insert(key, record.clone()).is_none(),
                "one record per event"
            );
        }
        spans.extend(line["spans"].as_array().into_iter().flatten().cloned());
    }
    stop.send(()).unwrap();
    let (stats, _exporter) = export.await.unwrap();
    relay.shutdown().await.unwrap();

    // The pinned projections arrive exactly as pinned (AEP-0005 §5 item 3).
    let pins: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("otlp/otlp-expected.json")).unwrap(),
    )
    .unwrap();
    for (i, pin) in pins.as_object().unwrap() {
        let event = &golden[i.parse::<usize>().unwrap()];
        let key = (
            event["source"].as_str().unwrap().to_owned(),
            event["id"].as_str().unwrap().to_owned(),
        );
        assert_eq!(&logs[&key], pin, "golden[{i}]");
    }

    // Every delivered event arrived as its LogRecord, and nothing above the default
    // max_capture (metadata) left: no body, no payload attribute, no payload string.
    let severities =
        json!({"debug": 5, "info": 9, "notice": 10, "warning": 13, "error": 17, "critical": 21});
    for event in &delivered {
        let key = (
            event["source"].as_str().unwrap().to_owned(),
            event["id"].as_str().unwrap().to_owned(),
        );
        let record = &logs[&key];
        let ty = event["type"].as_str().unwrap();
        assert_eq!(record["event_name"], format!("dev.aep.{ty}"));
        assert_eq!(record["resource"]["service.name"], event["agent"]);
        assert_eq!(
            record["severity_number"],
            severities[event["severity"].as_str().unwrap_or("info")]
        );
        let data = event.get("data").cloned().unwrap_or(json!({}));
        let hoisted: BTreeMap<&String, &Value> = record["attributes"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("gen_ai."))
            .collect();
        if rank(event["capture"].as_str().unwrap_or("metadata")) > rank("metadata") {
            assert!(
                record.get("body").is_none(),
                "{ty}: a body above max_capture"
            );
            assert!(
                hoisted.is_empty(),
                "{ty}: payload attributes above max_capture"
            );
            let mut envelope = Vec::new();
            let mut shown = (*event).clone();
            shown.as_object_mut().unwrap().remove("data");
            strings(&shown, &mut envelope);
            let mut payload = Vec::new();
            strings(&data, &mut payload);
            let mut exported = Vec::new();
            strings(record, &mut exported);
            let from_envelope = |s: &String| envelope.iter().any(|e| e.contains(s.as_str()));
            for s in payload.iter().filter(|s| s.len() >= 4 && !from_envelope(s)) {
                assert!(
                    !exported.iter().any(|x| x.contains(s.as_str())),
                    "{ty}: `{s}` leaked"
                );
            }
        } else {
            let members = data.as_object().unwrap();
            let body: serde_json::Map<String, Value> = members
                .iter()
                .filter(|(k, _)| !k.starts_with("gen_ai."))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            match record.get("body") {
                Some(b) => assert_eq!(b, &Value::Object(body), "{ty}"),
                None => assert!(body.is_empty(), "{ty}: the body is missing"),
            }
            for (k, v) in members.iter().filter(|(k, _)| k.starts_with("gen_ai.")) {
                assert_eq!(hoisted.get(k), Some(&v), "{ty}: {k} not hoisted");
            }
        }
    }

    // Spans: the two finished sessions, their runs (and the epoch session's run) and
    // tool calls, nested; failures marked; only metadata-level payload members.
    let by_id: BTreeMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap(), s))
        .collect();
    let mut names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "execute_tool Bash",
            "execute_tool Bash",
            "execute_tool Write",
            "invoke_agent claude-code",
            "invoke_agent claude-code",
            "invoke_agent claude-code",
            "invoke_agent claude-code",
            "invoke_agent claude-code",
            "session claude-code",
            "session claude-code",
        ]
    );
    for s in &spans {
        let parent = s["parent_span_id"].as_str().unwrap();
        let attrs = &s["attributes"];
        let name = s["name"].as_str().unwrap();
        if name.starts_with("session") {
            assert_eq!(parent, "", "a session span is a root");
            continue;
        }
        if attrs["aep.session_id"] == "s_epoch" {
            continue; // its session never ended: its run is a root of the same trace
        }
        let up = by_id
            .get(parent)
            .unwrap_or_else(|| panic!("{name}: parent {parent} not exported"));
        assert_eq!(
            up["trace_id"], s["trace_id"],
            "{name}: one trace per session"
        );
        let want = if name.starts_with("execute_tool") {
            "invoke_agent"
        } else {
            "session"
        };
        assert!(
            up["name"].as_str().unwrap().starts_with(want),
            "{name} under {}",
            up["name"]
        );
        assert!(s["end_time_unix_nano"].as_u64() >= s["start_time_unix_nano"].as_u64());
        let op = if name.starts_with("execute_tool") {
            "execute_tool"
        } else {
            "invoke_agent"
        };
        assert_eq!(attrs["gen_ai.operation.name"], op);
    }
    let errors: Vec<&str> = spans
        .iter()
        .filter(|s| s["status"]["code"] == 2)
        .map(|s| s["attributes"]["aep.outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        errors.len(),
        3,
        "run.failed, tool.failed, tool.denied: {errors:?}"
    );
    let completed = spans
        .iter()
        .find(|s| s["attributes"]["aep.outcome"] == "completed")
        .expect("the tool.completed span");
    assert_eq!(completed["attributes"]["gen_ai.usage.input_tokens"], 142);
    assert_eq!(completed["attributes"]["gen_ai.tool.call.id"], "t_91");

    // The counters agree: every event mapped, every record exported, nothing pending.
    assert_eq!(stats.events, 62);
    assert_eq!(stats.records, 62 + expected_spans as u64);
    assert_eq!(stats.exported, stats.records);
    assert_eq!(
        (stats.unmapped, stats.rejected, stats.failed, stats.dropped),
        (0, 0, 0, 0)
    );
    assert_eq!(stats.pending(), 0);
    assert_eq!(
        stats.abandoned, 5,
        "the s_epoch session and the four runs of s_dup_* and s_shared stay open"
    );
}

#[tokio::test]
async fn a_wrong_token_is_a_rejection_counted_not_a_retry_loop() {
    let Some(receiver) = Receiver::start("right").await else {
        return;
    };
    let exporter = OtlpExporter::builder(&receiver.url)
        .batch(|b| b.linger(Duration::ZERO))
        .http(HttpOptions::new().bearer("wrong"))
        .build()
        .unwrap();
    let event: aep_core::Event = std::fs::read_to_string(fixtures().join("golden/golden.jsonl"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let stats = exporter.run(futures::stream::iter([event])).await;
    assert_eq!((stats.records, stats.exported, stats.rejected), (1, 0, 1));
}
