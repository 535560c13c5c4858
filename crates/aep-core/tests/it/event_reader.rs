//! `Event` parsing reads the plain envelope directly and hands everything else to
//! serde_json. The two must never disagree: for any text, `text.parse::<Event>()` gives
//! what serde_json's own reading (`serde_json::from_str::<Event>`) gives, the same event
//! (attributes, wire order, bytes written back) or the same error.
#![allow(clippy::unwrap_used)] // test code: a broken case should fail loudly

use crate::common;

use aep_core::validate::{validate_envelope, validate_envelope_view};
use aep_core::{EnvelopeView, Event, EventParseError};
use common::{joined, scalars, Shape};
use proptest::prelude::*;

/// Where the in-place view reads a line, serde_json reads the same event from it, and the
/// envelope rules say the same of both.
fn view_agrees(text: &str, serde: &Result<Event, EventParseError>) -> Result<(), TestCaseError> {
    let Some(view) = EnvelopeView::read(text) else {
        return Ok(());
    };
    let Ok(e) = serde else {
        return Err(TestCaseError::fail(format!(
            "{text}: view read, serde {serde:?}"
        )));
    };
    prop_assert_eq!(view.id(), e.id());
    prop_assert_eq!(view.event_type(), e.event_type());
    prop_assert_eq!(view.source(), e.source());
    prop_assert_eq!(view.agent(), e.agent());
    prop_assert_eq!(view.time(), e.time());
    prop_assert_eq!(view.session(), e.session());
    prop_assert_eq!(
        (view.subject(), view.run(), view.step()),
        (e.subject(), e.run(), e.step())
    );
    prop_assert_eq!(
        (view.cause(), view.traceparent()),
        (e.cause(), e.traceparent())
    );
    prop_assert_eq!((view.seq(), view.epoch()), (e.seq(), e.epoch()));
    prop_assert_eq!(
        (view.severity(), view.capture()),
        (e.severity(), e.capture())
    );
    prop_assert_eq!(view.data_raw(), e.data_raw().map(|r| r.get()));
    let ext: Vec<(&str, &str)> = e.extensions().map(|(k, v)| (k, v.get())).collect();
    prop_assert_eq!(view.extensions().collect::<Vec<_>>(), ext);
    let issues = |v: Vec<aep_core::Issue>| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    prop_assert_eq!(
        issues(validate_envelope_view(&view)),
        issues(validate_envelope(e)),
        "{}",
        text
    );
    Ok(())
}

fn same(text: &str) -> Result<(), TestCaseError> {
    let direct = text.parse::<Event>();
    let serde: Result<Event, EventParseError> =
        serde_json::from_str::<Event>(text).map_err(Into::into);
    view_agrees(text, &serde)?;
    match (&direct, &serde) {
        (Ok(a), Ok(b)) => {
            prop_assert_eq!(a, b, "{}", text);
            prop_assert_eq!(a.to_json(), b.to_json(), "{}", text);
        }
        (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string(), "{}", text),
        _ => prop_assert!(false, "{text}: direct {direct:?}, serde {serde:?}"),
    }
    Ok(())
}

/// Keys, spelled plainly or not, core or extension, and now and then twice.
const KEYS: &[&str] = &[
    r#""aep""#,
    r#""id""#,
    r#""type""#,
    r#""time""#,
    r#""source""#,
    r#""agent""#,
    r#""session""#,
    r#""subject""#,
    r#""run""#,
    r#""step""#,
    r#""cause""#,
    r#""traceparent""#,
    r#""seq""#,
    r#""epoch""#,
    r#""severity""#,
    r#""capture""#,
    r#""data""#,
    r#""acme""#,
    r#""region""#,
    r#""ag\u0065nt""#,
    r#""se\"q""#,
];

/// Values of every shape an attribute can be given, valid or not for it.
const VALUES: &[&str] = &[
    r#""0.1""#,
    r#""a""#,
    r#""tool.called""#,
    r#""2026-01-01T00:00:00.000Z""#,
    r#""aep://h/agent/a/session/s""#,
    r#""a\"b""#,
    r#""\u00e9t\u00e9""#,
    r#""été""#,
    "\"tab\there\"",
    r#""""#,
    r#""notice""#,
    r#""error""#,
    r#""full""#,
    r#""Notice""#,
    "0",
    "7",
    "18446744073709551615",
    "18446744073709551616",
    "-1",
    "-0",
    "007",
    "1.0",
    "1e2",
    "true",
    "null",
    "[]",
    r#"{"tool":"bash","args":{"cmd":"ls -la"}}"#,
    r#"{"n":1e400}"#,
    r#"{"t":"\udcff"}"#,
    r#"{"deep":[[[[[[[[[[1]]]]]]]]]]}"#,
    r#"{"a":1,}"#,
    r#"{"a" 1}"#,
    // unterminated, so the separator after them lands inside the string: a reader that
    // took the backslash or the control character for the closing quote would go on
    r#""x\"#,
    "\"y\u{1}",
    r#""z\\"#,
];

const WS: &[&str] = &["", " ", "\n", "\t ", "\r\n  "];

/// A well-formed base so that most generated texts are real envelopes.
const BASE: &[(&str, &str)] = &[
    ("aep", r#""0.1""#),
    ("id", r#""01JBENCH""#),
    ("type", r#""tool.called""#),
    ("time", r#""2026-01-01T00:00:00.000Z""#),
    ("source", r#""aep://h/agent/a/session/s""#),
    ("agent", r#""a""#),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4_000))]

    #[test]
    fn direct_and_serde_readings_agree(
        base in prop::collection::vec(any::<bool>(), BASE.len()),
        extra in prop::collection::vec((0..KEYS.len(), 0..VALUES.len()), 0..6),
        shuffle in any::<u64>(),
        ws in prop::collection::vec(0..WS.len(), 8),
        tail in 0..4usize,
    ) {
        let mut members: Vec<String> = BASE
            .iter()
            .zip(&base)
            .filter(|(_, keep)| **keep || shuffle % 7 != 0)
            .map(|((k, v), _)| format!("\"{k}\":{v}"))
            .collect();
        members.extend(extra.iter().map(|&(k, v)| format!("{}:{}", KEYS[k], VALUES[v])));
        // a cheap, seeded reordering
        let n = members.len();
        if n > 1 && shuffle % 3 != 0 {
            for i in 0..n {
                let j = (shuffle.rotate_left(i as u32 * 7) as usize) % n;
                members.swap(i, j);
            }
        }
        let w = |i: usize| WS[ws[i % ws.len()]];
        let body = members.join(&format!("{},{}", w(1), w(2)));
        let text = format!("{}{{{}{}{}}}{}", w(0), w(3), body, w(4), ["", " ", "x", ","][tail]);
        same(&text)?;
    }

    /// Arbitrary text never panics either reading, and they agree on it.
    #[test]
    fn arbitrary_text(text in ".{0,80}") {
        same(&text)?;
    }
}

/// JSON-ish text for `data`: valid values and near misses, token by token.
const DATA_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    " ",
    "\n",
    r#""k""#,
    r#""a\"b""#,
    r#""\u00e9""#,
    r#""\uZZ00""#,
    r#""\q""#,
    "\"",
    "0",
    "-1",
    "01",
    "1.5",
    "1.",
    ".5",
    "1e400",
    "1E+2",
    "2e",
    "-",
    "true",
    "tru",
    "null",
    "false",
    "nul",
    "\"\u{1}\"",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6_000))]

    /// `data` built from tokens: where the view takes it, serde_json does too, and it
    /// keeps the same bytes.
    #[test]
    fn data_text_reads_the_same_both_ways(data in joined(DATA_TOKENS, 1..14)) {
        let text = format!(
            r#"{{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{data}}}"#
        );
        same(&text)?;
    }

    /// Any JSON value serde_json writes, compact or pretty, is read by the view, and
    /// kept byte for byte: the fast path is not a narrow one.
    #[test]
    fn written_json_is_read_in_place(value in json_value(), pretty in any::<bool>()) {
        let data = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let text = format!(
            r#"{{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{data},"acme":{data}}}"#
        );
        let view = EnvelopeView::read(&text);
        prop_assert!(view.is_some(), "{}", text);
        prop_assert_eq!(view.unwrap().data_raw(), Some(data.as_str()));
        same(&text)?;
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let floats = any::<f64>().prop_filter("finite", |f| f.is_finite());
    let shape = Shape {
        depth: 6,
        size: 48,
        width: 6,
    };
    common::json(scalars(floats, ".{0,12}"), ".{0,6}", shape)
}

/// Near misses a token generator rarely builds: mismatched or unclosed brackets, a
/// member without its colon, a key that is not a string, a literal cut short.
#[test]
fn malformed_data_is_never_read_in_place() {
    for data in [
        "[1}",
        "{\"a\":1]",
        "[}",
        "{]",
        "[[1]}",
        "{\"a\":[1}}",
        "[1,2",
        "{\"a\" 1}",
        "{1:2}",
        "{\"a\":}",
        "[,1]",
        "tru",
        "nul",
        "-",
        "1e",
        "\"\\u12\"",
        "{\"a\":1,}",
    ] {
        let text = format!(
            r#"{{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{data}}}"#
        );
        assert!(EnvelopeView::read(&text).is_none(), "{text}");
        same(&text).unwrap();
    }
}

#[test]
fn a_golden_line_reads_the_same_both_ways() {
    for line in include_str!("../../../../fixtures/conformance/golden/golden.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        same(line).unwrap();
        assert!(EnvelopeView::read(line).is_some(), "{line}");
    }
}

#[test]
fn deep_data_reads_the_same_both_ways() {
    for depth in [100, 126, 127, 128, 129, 200, 5_000] {
        let data = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let text = format!(
            r#"{{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{data}}}"#
        );
        same(&text).unwrap();
    }
}
