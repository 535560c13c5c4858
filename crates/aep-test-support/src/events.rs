//! Events for tests: parsed ([`event`], [`session_event`]) or as JSON values for
//! endpoints that take bytes ([`json_event`], [`json_command`], [`ndjson`]).

use aep_core::Event;
use serde_json::{json, Value};

/// The `time` every test event carries.
pub const TIME: &str = "2026-07-09T10:00:00.000Z";

/// A fresh ULID, for an event id or a unique name.
pub fn id() -> String {
    ulid::Ulid::new().to_string()
}

/// A session id no other test uses.
pub fn session_id() -> String {
    format!("s-{}", id().to_lowercase())
}

/// An agent-scoped event of agent `agent-a` with the given id and type.
///
/// ```
/// let e = aep_test_support::events::event("e1", "agent.heartbeat");
/// assert_eq!((e.id(), e.agent()), ("e1", "agent-a"));
/// ```
pub fn event(id: &str, ty: &str) -> Event {
    Event::new(id, ty, TIME, "aep://test/agent/agent-a", "agent-a")
}

/// A session-scoped event at `seq` (epoch 0).
///
/// ```
/// let e = aep_test_support::events::session_event("e2", "tool.called", "s1", 4);
/// assert_eq!((e.session(), e.seq()), (Some("s1"), Some(4)));
/// ```
pub fn session_event(id: &str, ty: &str, session: &str, seq: u64) -> Event {
    event(id, ty).with_session(session).with_seq(seq)
}

/// A session-scoped event of agent `a` as a JSON value, with a fresh id.
///
/// ```
/// let e = aep_test_support::events::json_event("run.started", "s1", 2);
/// assert_eq!(e["seq"], 2);
/// ```
pub fn json_event(ty: &str, session: &str, seq: u64) -> Value {
    json!({
        "aep": "0.1", "id": id(), "type": ty, "time": TIME,
        "source": format!("aep://test/agent/a/session/{session}"), "agent": "a",
        "session": session, "seq": seq,
    })
}

/// A command (`control.*`) from a console to `session`, as a JSON value.
pub fn json_command(ty: &str, session: &str) -> Value {
    json!({
        "aep": "0.1", "id": id(), "type": ty, "time": TIME,
        "source": "aep://test/agent/console", "agent": "console", "session": session,
        "capture": "metadata",
    })
}

/// `event` with `key` set to `value`.
///
/// ```
/// use serde_json::json;
/// let e = aep_test_support::events::with(json!({"id": "x"}), "topic", json!("t"));
/// assert_eq!(e["topic"], "t");
/// ```
pub fn with(mut event: Value, key: &str, value: Value) -> Value {
    event[key] = value;
    event
}

/// An NDJSON body: one event a line.
///
/// ```
/// use serde_json::json;
/// assert_eq!(aep_test_support::events::ndjson(&[json!({"a": 1}), json!(2)]), "{\"a\":1}\n2\n");
/// ```
pub fn ndjson(events: &[Value]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}
