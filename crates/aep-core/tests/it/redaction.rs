//! The AEP-0003 §9.4 redaction corpus (`fixtures/conformance/redaction/cases.json`), the
//! §9.3 digests pinned by the mapping fixtures, and properties of the pipeline on hostile
//! input: it never panics, and running it twice changes nothing the first run left.
// A test fails by panicking: unwrapping the corpus plumbing is the report.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::PathBuf;
use std::sync::LazyLock;

use aep_core::redact::{canonical_json, ContentDigest, RedactOptions, Redactor};
use common::{scalars, Shape};
use proptest::prelude::*;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance")
}

fn corpus() -> Value {
    let path = fixtures().join("redaction/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The options of one case, with the operator home pinned as the protocol's runner pins it.
fn options(case: &Value) -> RedactOptions {
    let mut opts = case.get("opts").cloned().unwrap_or_else(|| json!({}));
    if opts.get("home").is_none() {
        opts["home"] = json!("/nonexistent-home");
    }
    serde_json::from_value(opts).unwrap()
}

/// Why `out` fails the case's `must_contain` / `must_not_contain` lists, if it does.
fn violations(case: &Value, out: &str) -> Vec<String> {
    let list = |key: &str| -> Vec<String> {
        case.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut why = Vec::new();
    for s in list("must_contain") {
        if !out.contains(&s) {
            why.push(format!("missing {s:?}"));
        }
    }
    for s in list("must_not_contain") {
        if out.contains(&s) {
            why.push(format!("leaked {s:?}"));
        }
    }
    why
}

fn cases<'c>(corpus: &'c Value, class: &str) -> &'c [Value] {
    corpus[class]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Runs every case of `class` through `redact` and judges the output.
fn run_class(class: &str, size: usize, label: &str, redact: impl Fn(&Redactor, &Value) -> String) {
    let corpus = corpus();
    let cases = cases(&corpus, class);
    assert_eq!(
        cases.len(),
        size,
        "the corpus changed size: update this test"
    );
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let out = redact(&Redactor::new(options(case)).unwrap(), &case["input"]);
        let why = violations(case, &out);
        assert!(why.is_empty(), "{label}: {name}: {why:?} in {out:?}");
    }
}

#[test]
fn every_text_case_of_the_corpus() {
    run_class("text_cases", 28, "redact text", |r, input| {
        r.redact_text(input.as_str().unwrap()).into_owned()
    });
}

#[test]
fn every_value_case_of_the_corpus() {
    run_class("value_cases", 5, "redact value", |r, input| {
        r.redact_value(input).to_string()
    });
}

#[test]
fn value_redaction_keeps_keys_and_structure() {
    let r = Redactor::new(RedactOptions::default()).unwrap();
    let input =
        json!({"config": {"API_KEY": "zz00zz11", "Password": null, "n": [1, {"token": {"a": 1}}]}});
    assert_eq!(
        r.redact_value(&input),
        json!({"config": {"API_KEY": "[REDACTED:secret]", "Password": null, "n": [1, {"token": "[REDACTED:secret]"}]}})
    );
}

#[test]
fn configured_names_reach_text_and_keys() {
    let r = Redactor::new(RedactOptions::new().secret_name("DEPLOY_KEY")).unwrap();
    assert_eq!(
        r.redact_value(&json!({"deploy_key": "v", "note": "DEPLOY_KEY: 'x y'"})),
        json!({"deploy_key": "[REDACTED:secret]", "note": "DEPLOY_KEY: '[REDACTED:secret]'"})
    );
}

/// Every digest the protocol's mapping fixtures pin, recomputed from the native content
/// those fixtures carry: the canonical JSON of §9.3 is sorted, compact, UTF-8.
#[test]
fn digests_pinned_by_the_mapping_fixtures() {
    let pins: [(Value, &str); 8] = [
        (
            json!({"command": "npm test"}),
            "9178ac939ad908d8fd89e97596cdc0e5",
        ),
        (json!("ok 42 tests"), "9623cdc86ee0e1f01e338bc35845417f"),
        (
            json!({"output": "ok 42 tests"}),
            "7811f89e5155f3d9b75fba7dc9ca3048",
        ),
        // Sorted keys: the native order is output, exit_code.
        (
            json!({"output": "total 0", "exit_code": 0}),
            "23b8f930346a70ec5e43f5c98cc78c5e",
        ),
        // Non-ASCII written as itself, not \u-escaped.
        (
            json!("Done — the suite is green."),
            "221343a0569de713ac436fff133d8f58",
        ),
        (json!("oracle-test\n"), "0e6ed1271cd74959ce2d21fed82aa351"),
        (
            json!([{"type": "text", "text": "fix the failing build"}]),
            "fbc514e9fc7d86fd1ebd3442af65801d",
        ),
        (json!({}), "44136fa355b3678a1146ad16f7e8649e"),
    ];
    for (content, want) in pins {
        assert_eq!(ContentDigest::of(&content).to_hex(), want, "{content}");
    }
    assert_eq!(
        ContentDigest::of_text("oracle-test\n").to_hex(),
        "0e6ed1271cd74959ce2d21fed82aa351"
    );
}

#[test]
fn digest_precedes_redaction() {
    let r = Redactor::new(RedactOptions::default()).unwrap();
    let (a, b) = ("password=one-secret", "password=other-secret");
    assert_eq!(r.redact_text(a), r.redact_text(b));
    assert_ne!(ContentDigest::of_text(a), ContentDigest::of_text(b));
}

/// The emitter path of AEP-0003 §9.1: the ceiling policy picks the level, the
/// down-leveler prunes, and the pipeline redacts what a `redacted` landing keeps.
#[test]
fn ceiling_downlevel_and_pipeline_compose() {
    use aep_core::capture::downlevel_redacting;
    use aep_core::ceiling::CaptureCeiling;
    use aep_core::{Capture, Event};

    let redactor = Redactor::new(RedactOptions::default()).unwrap();
    let ceiling = CaptureCeiling::default()
        .with_override("tool.*", Capture::Redacted)
        .unwrap();
    let mut event = Event::new("1", "tool.completed", "t", "aep://h/agent/a/session/s", "a")
        .with_capture(Capture::Full)
        .with_data(json!({"tool": {"name": "Bash"}, "result": "token=abc", "result_redacted": "token=abc in /home/bob"}));
    let level = ceiling.for_event(&event);
    let honored = downlevel_redacting(&mut event, level, |v: &mut Value| {
        redactor.redact_value_in_place(v)
    });
    assert_eq!(honored, Capture::Redacted);
    assert_eq!(event.capture(), Capture::Redacted);
    assert_eq!(
        event.data(),
        Some(json!({"tool": {"name": "Bash"}, "result_redacted": "token=[REDACTED:secret] in ~"}))
    );
}

/// Fragments that wake the patterns up, so generated text exercises them far more often
/// than uniformly random characters would.
fn spicy() -> impl Strategy<Value = String> {
    let fragments = prop::sample::select(vec![
        "password",
        "token",
        "API_KEY",
        "x-api-key",
        "authorization",
        "Bearer ",
        "bearer ",
        "Basic ",
        "=",
        ":",
        " : ",
        "\"",
        "'",
        "\\",
        "\\\"",
        "\n",
        " ",
        "\t",
        "--",
        "-",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "-----BEGIN ",
        "PRIVATE KEY-----",
        "AKIA",
        "IOSFODNN7EXAMPLE",
        "eyJ",
        ".",
        "ghp_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "sk-",
        "sk_live_",
        "AIza",
        "https://",
        "u:p@",
        "/home/",
        "/Users/",
        "C:\\Users\\",
        "~",
        "alice",
        "@",
        "example.com",
        "+1",
        "(",
        ")",
        "555",
        "123",
        "4567",
        "0",
        "9",
        "[REDACTED:secret]",
        "[REDACTED:pii]",
        "é",
        "日本",
        "\u{0}",
        "abcdefghijklmnopqrstuvwxyz0123456789",
    ]);
    prop::collection::vec(
        prop_oneof![fragments.prop_map(str::to_owned), any::<String>()],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

fn json_values() -> impl Strategy<Value = Value> {
    let shape = Shape {
        depth: 4,
        size: 64,
        width: 8,
    };
    let keys = prop_oneof![spicy(), Just("token".to_owned())];
    common::json(scalars(any::<f64>(), spicy()), keys, shape)
}

fn pipeline() -> &'static Redactor {
    static PIPELINE: LazyLock<Redactor> = LazyLock::new(|| {
        Redactor::new(
            RedactOptions::new()
                .home("/home/op")
                .extend_secret_values(["s3cr3t-value"])
                .secret_name("DEPLOY_KEY"),
        )
        .unwrap()
    });
    &PIPELINE
}

proptest! {
    // 256 cases by default; PROPTEST_CASES=20000 for a longer hunt.
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn text_never_panics_and_is_idempotent(text in spicy()) {
        let r = pipeline();
        let once = r.redact_text(&text).into_owned();
        let twice = r.redact_text(&once).into_owned();
        prop_assert_eq!(twice, once);
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = pipeline().redact_text(&text);
    }

    #[test]
    fn values_never_panic_and_are_idempotent(value in json_values()) {
        let r = pipeline();
        let once = r.redact_value(&value);
        prop_assert_eq!(r.redact_value(&once), once.clone());
        let _ = canonical_json(&value);
    }

    #[test]
    fn digest_ignores_member_order(members in prop::collection::vec((spicy(), json_values()), 0..8)) {
        let forward: serde_json::Map<String, Value> = members.iter().cloned().collect();
        let backward: serde_json::Map<String, Value> = members.into_iter().rev().collect();
        // Duplicate keys keep the last value in each order; compare only when that agrees.
        prop_assume!(forward.iter().all(|(k, v)| backward.get(k) == Some(v)));
        prop_assert_eq!(
            ContentDigest::of(&Value::Object(forward)),
            ContentDigest::of(&Value::Object(backward))
        );
    }
}
