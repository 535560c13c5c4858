//! `Event::write_json` writes exactly what serde_json writes for the same event: the
//! direct writer is a fast path, never a second dialect.
#![allow(clippy::unwrap_used)]

use aep_core::{Capture, Event, Severity};
use proptest::prelude::*;

fn same_bytes(e: &Event) {
    let direct = e.to_json();
    let via_serde = serde_json::to_string(e).unwrap();
    assert_eq!(direct, via_serde);
    let back = Event::from_slice(direct.as_bytes()).unwrap();
    assert_eq!(&back, e);
}

#[test]
fn golden_lines_write_the_same_both_ways() {
    let golden = include_str!("../../../../fixtures/conformance/golden/golden.jsonl");
    let mut n = 0;
    for line in golden.lines().filter(|l| !l.trim().is_empty()) {
        let e = Event::from_slice(line.as_bytes()).unwrap();
        assert_eq!(e.to_json(), line);
        same_bytes(&e);
        n += 1;
    }
    assert!(n >= 64, "{n}");
}

#[test]
fn escapes_match_serde_json() {
    for text in [
        "plain",
        "",
        "quote \" inside",
        "back\\slash",
        "nl\nline\ttab\r\u{8}\u{c}",
        "\u{0}\u{1f}\u{7f}",
        "unicode é ✓ 𝄞",
        "</script>",
    ] {
        let mut e = Event::new(text, text, text, text, text)
            .with_session(text)
            .with_subject(text)
            .with_severity(Severity::Warning)
            .with_capture(Capture::Full)
            .with_seq(u64::MAX)
            .with_epoch(0);
        e.set_extension("xnote", serde_json::json!(text)).unwrap();
        same_bytes(&e);
    }
    // A foreign key that needs escaping, read from the wire.
    let line =
        r#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","we\"ird\n":1}"#;
    let e = Event::from_slice(line.as_bytes()).unwrap();
    assert_eq!(e.to_json(), line);
    same_bytes(&e);
}

proptest! {
    #[test]
    fn any_strings_write_the_same_both_ways(
        id in any::<String>(),
        source in "\\PC*",
        session in proptest::option::of(any::<String>()),
        cause in proptest::option::of("[\\x00-\\x7f]*"),
        seq in proptest::option::of(any::<u64>()),
        data in proptest::option::of(any::<String>()),
    ) {
        let mut e = Event::new(id, "tool.called", "t", source, "a");
        e.set_session(session);
        e.set_cause(cause);
        e.set_seq(seq);
        if let Some(d) = data {
            e.set_data(serde_json::json!({ "text": d }));
        }
        same_bytes(&e);
    }
}
