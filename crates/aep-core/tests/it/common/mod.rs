//! What several of aep-core's integration tests share: the golden corpus read as
//! events; arbitrary JSON for their property tests, each test choosing the scalars, the
//! member names and the size; a command sender with a command pending.
#![allow(dead_code, clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::time::Instant;

use aep_core::control::ControlSender;
use aep_core::Event;
use proptest::prelude::*;
use serde_json::Value;

/// The golden corpus: one event a line (`fixtures/conformance/golden/golden.jsonl`).
pub const GOLDEN: &str = include_str!("../../../../../fixtures/conformance/golden/golden.jsonl");

/// The lines of a JSON Lines text, blank ones left out.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim().is_empty())
}

/// The events of a JSON Lines text, one a line; a line that does not parse fails the
/// test, naming it.
pub fn events(text: &str) -> Vec<Event> {
    lines(text)
        .map(|l| l.parse().unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// A console's sender with one `control.pause` for `session` pending, sent at `t` with
/// the id `id`.
pub fn sender_with_pending(t: Instant, session: &str, id: &str) -> ControlSender {
    let mut s = ControlSender::new("console", "h");
    s.send(t, s.command("control.pause", session).build(id, "t"))
        .unwrap();
    s
}

/// Text made of `len` pieces, each one of `pieces`: near the grammar a test aims at, so
/// that much of it parses and the rest misses narrowly.
pub fn joined(
    pieces: &'static [&'static str],
    len: std::ops::Range<usize>,
) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), len).prop_map(|parts| parts.concat())
}

/// How far arbitrary JSON grows: nesting `depth`, about `size` values in all
/// (`prop_recursive`'s budget), and arrays and objects of fewer than `width` items.
pub struct Shape {
    pub depth: u32,
    pub size: u32,
    pub width: usize,
}

/// JSON scalars: `null`, booleans, integers over the whole `i64` and `u64` ranges,
/// numbers from `floats` (a non-finite one is `null`, as serde_json converts it), and
/// strings from `strings`.
pub fn scalars(
    floats: impl Strategy<Value = f64> + 'static,
    strings: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        floats.prop_map(Value::from),
        strings.prop_map(Value::String),
    ]
    .boxed()
}

/// Arbitrary JSON: `leaf` values, and arrays and objects of them (member names from
/// `key`) nested as `shape` allows.
pub fn json(
    leaf: BoxedStrategy<Value>,
    key: impl Strategy<Value = String> + 'static,
    shape: Shape,
) -> BoxedStrategy<Value> {
    let key = key.boxed();
    let width = shape.width;
    leaf.prop_recursive(shape.depth, shape.size, width as u32, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..width).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..width)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
    .boxed()
}
