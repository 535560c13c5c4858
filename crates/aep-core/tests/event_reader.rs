//! `Event` parsing reads the plain envelope directly and hands everything else to
//! serde_json. The two must never disagree: for any text, `text.parse::<Event>()` gives
//! what serde_json's own reading (`serde_json::from_str::<Event>`) gives, the same event
//! (attributes, wire order, bytes written back) or the same error.
#![allow(clippy::unwrap_used)] // test code: a broken case should fail loudly

use aep_core::{Event, EventParseError};
use proptest::prelude::*;

fn same(text: &str) -> Result<(), TestCaseError> {
    let direct = text.parse::<Event>();
    let serde: Result<Event, EventParseError> =
        serde_json::from_str::<Event>(text).map_err(Into::into);
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

#[test]
fn a_golden_line_reads_the_same_both_ways() {
    for line in include_str!("../../../fixtures/conformance/golden/golden.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        same(line).unwrap();
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
