//! The cross-event rules: what only a sequence of events can break.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{validate_event, Issue, Rule};
use crate::event::Event;
use crate::level::Capture;
use crate::types::EventType;

/// A digest of an event's content, independent of attribute order and whitespace, so a
/// redelivered event is told from a different event under the same `(source, id)`.
type Fingerprint = [u8; 16];

/// Incremental validation of the cross-event rules over events in arrival order.
///
/// - `(source, id)` names one event (AEP-0001 §7.4): an exact repeat is a redelivery
///   and is skipped silently; a different event under the same pair is an
///   [`Rule::IdCollision`] and is not folded.
/// - Per `(source, session)` (session identity is emitter-scoped, AEP-0001 §5.2):
///   `(epoch, seq)` never goes back ([`Rule::EpochRegression`], [`Rule::SeqRegression`],
///   AEP-0001 §7.2); at most one terminal per run and one `session.ended`
///   ([`Rule::RunTerminalExclusivity`], [`Rule::SessionTerminalExclusivity`], AEP-0002 §2
///   convention 5); no attention request left open at `session.ended`
///   ([`Rule::EndedWithPendingAttention`], AEP-0002 §7.2).
/// - One ack decision per command (AEP-0004 §3), keyed `(ack source, cause)`
///   ([`Rule::AckExclusivity`]); with [`StreamValidator::require_acks`], every command
///   must be acked by [`StreamValidator::finish`] ([`Rule::CommandUnacked`]).
/// - An `attention.answered` for a `kind: "form"` request keeps the `values` rules of
///   AEP-0006 ([`Rule::FormValues`]).
///
/// Commands and `agent.*` events never enter session state: a command carries the
/// sender's `source` and no `seq`. Single-event rules are not re-run here; see
/// [`validate_stream`] for both. Memory grows with the distinct `(source, id)` pairs,
/// sessions and commands seen: this is a validator for streams and corpora, not a
/// long-running dedupe set.
///
/// ```
/// use aep_core::{Event, validate::{StreamValidator, Rule}};
///
/// let first: Event = r#"{"aep":"0.1","id":"a","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":5}"#.parse()?;
/// let late: Event = r#"{"aep":"0.1","id":"b","type":"progress.status","time":"2026-07-03T10:00:01Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":3}"#.parse()?;
/// let mut v = StreamValidator::new();
/// assert!(v.push(&first).is_empty());
/// assert!(v.push(&first).is_empty()); // an exact redelivery
/// assert_eq!(v.push(&late)[0].rule(), Rule::SeqRegression);
/// assert!(v.finish().is_empty());
/// # Ok::<(), aep_core::EventParseError>(())
/// ```
#[derive(Default)]
pub struct StreamValidator {
    require_acks: bool,
    seen: HashMap<(String, String), Fingerprint>,
    sessions: HashMap<(String, String), SessionState>,
    /// `(ack source, cause)` -> the first ack's fingerprint.
    acks: HashMap<(String, String), Fingerprint>,
    /// `(session, command id)` of every ack's cause.
    acked: HashSet<(String, String)>,
    /// `(session, command id)` of every command, in arrival order.
    commands: Vec<(String, String)>,
}

#[derive(Default)]
struct SessionState {
    /// The last `(epoch, seq)` folded.
    position: Option<(u64, u64)>,
    ended: bool,
    /// Open attention requests, in request order.
    pending: Vec<String>,
    terminated_runs: HashSet<String>,
    /// `data.fields` of open `kind: "form"` requests, by request id.
    forms: HashMap<String, Value>,
}

impl fmt::Debug for StreamValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamValidator")
            .field("require_acks", &self.require_acks)
            .field("events", &self.seen.len())
            .field("sessions", &self.sessions.len())
            .field("commands", &self.commands.len())
            .finish()
    }
}

const RUN_TERMINALS: [&str; 3] = ["run.finished", "run.failed", "run.cancelled"];

impl StreamValidator {
    /// A validator with nothing seen, not requiring acks.
    pub fn new() -> StreamValidator {
        StreamValidator::default()
    }

    /// Whether [`finish`](StreamValidator::finish) reports commands no ack answered. Off
    /// by default: a live stream may end before an ack arrives, or a relay may answer a
    /// command with an `error` frame, which is not an event. A complete recorded stream
    /// (the golden corpus) turns it on.
    ///
    /// ```
    /// use aep_core::{Event, validate::{StreamValidator, Rule}};
    /// let cmd: Event = r#"{"aep":"0.1","id":"c1","type":"control.pause","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/mc","agent":"mc","session":"s"}"#.parse()?;
    /// let mut v = StreamValidator::new().require_acks(true);
    /// assert!(v.push(&cmd).is_empty());
    /// assert_eq!(v.finish()[0].rule(), Rule::CommandUnacked);
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn require_acks(mut self, on: bool) -> StreamValidator {
        self.require_acks = on;
        self
    }

    /// Folds one event, returning the issues it raises against what came before.
    pub fn push(&mut self, event: &Event) -> Vec<Issue> {
        let mut out = Vec::new();
        let fp = fingerprint(event);
        let key = (event.source().to_owned(), event.id().to_owned());
        match self.seen.get(&key) {
            Some(prior) if *prior == fp => return out,
            Some(_) => {
                out.push(Issue::new(
                    Rule::IdCollision,
                    Some("id".to_owned()),
                    format!(
                        "({}, {}) names two different events; ids are unique per source",
                        event.source(),
                        event.id()
                    ),
                    "AEP-0001 §7.4",
                ));
                return out;
            }
            None => {
                self.seen.insert(key, fp);
            }
        }

        let parsed = EventType::parse(event.event_type()).ok();
        let session = event.session();
        if let Some(t) = parsed {
            if t.is_command() {
                if let Some(session) = session {
                    self.commands
                        .push((session.to_owned(), event.id().to_owned()));
                }
                return out;
            }
            if t.is_ack() {
                self.ack(event, fp, &mut out);
            }
            if t.is_agent_scoped() {
                return out;
            }
        }
        let Some(session) = session else {
            return out;
        };
        let state = self
            .sessions
            .entry((event.source().to_owned(), session.to_owned()))
            .or_default();
        state.fold(event, &mut out);
        out
    }

    fn ack(&mut self, event: &Event, fp: Fingerprint, out: &mut Vec<Issue>) {
        let Some(cause) = event.cause() else {
            return;
        };
        if let Some(session) = event.session() {
            self.acked.insert((session.to_owned(), cause.to_owned()));
        }
        let key = (event.source().to_owned(), cause.to_owned());
        match self.acks.get(&key) {
            Some(prior) if *prior != fp => out.push(Issue::new(
                Rule::AckExclusivity,
                Some("cause".to_owned()),
                format!(
                    "{} is a second ack decision for command {cause}; a retried command is re-acked with the recorded ack, never re-decided",
                    event.id()
                ),
                "AEP-0004 §3",
            )),
            Some(_) => {}
            None => {
                self.acks.insert(key, fp);
            }
        }
    }

    /// Ends the stream, returning the issues only the end can show (unacked commands,
    /// when [`require_acks`](StreamValidator::require_acks) is on).
    pub fn finish(&mut self) -> Vec<Issue> {
        if !self.require_acks {
            return Vec::new();
        }
        self.commands
            .iter()
            .filter(|c| !self.acked.contains(*c))
            .map(|(session, id)| {
                Issue::new(
                    Rule::CommandUnacked,
                    Some("id".to_owned()),
                    format!("command {id} to session {session} has no control.accepted or control.rejected"),
                    "AEP-0004 §3",
                )
            })
            .collect()
    }
}

impl SessionState {
    fn fold(&mut self, event: &Event, out: &mut Vec<Issue>) {
        let id = event.id();
        if let Some(seq) = event.seq() {
            let epoch = event.epoch();
            if let Some((last_epoch, last_seq)) = self.position {
                if epoch < last_epoch {
                    out.push(Issue::new(
                        Rule::EpochRegression,
                        Some("epoch".to_owned()),
                        format!("{id} has epoch {epoch} after epoch {last_epoch}; epochs are never reused"),
                        "AEP-0001 §7.2",
                    ));
                } else if epoch == last_epoch && seq <= last_seq {
                    out.push(Issue::new(
                        Rule::SeqRegression,
                        Some("seq".to_owned()),
                        format!("{id} has seq {seq} after seq {last_seq} in epoch {epoch}; a new epoch is declared, never inferred"),
                        "AEP-0001 §7.2",
                    ));
                }
            }
            // The position follows the last event folded, as resume positions do.
            self.position = Some((epoch, seq));
        }

        let ty = event.event_type();
        match ty {
            "session.ended" => {
                if self.ended {
                    out.push(Issue::new(
                        Rule::SessionTerminalExclusivity,
                        Some("type".to_owned()),
                        format!("{id} is a second session.ended for this session"),
                        "AEP-0002 §2",
                    ));
                } else {
                    self.ended = true;
                    if !self.pending.is_empty() {
                        out.push(Issue::new(
                            Rule::EndedWithPendingAttention,
                            Some("type".to_owned()),
                            format!(
                                "{id} ends the session with attention still pending: {}; close each with attention.resolved or attention.timeout first",
                                self.pending.join(", ")
                            ),
                            "AEP-0002 §7.2",
                        ));
                    }
                }
            }
            t if RUN_TERMINALS.contains(&t) => {
                if let Some(run) = event.run() {
                    if !self.terminated_runs.insert(run.to_owned()) {
                        out.push(Issue::new(
                            Rule::RunTerminalExclusivity,
                            Some("run".to_owned()),
                            format!("{id} ({t}) is a second terminal for run {run}"),
                            "AEP-0002 §2",
                        ));
                    }
                }
            }
            "attention.requested" => {
                self.pending.push(id.to_owned());
                if let Some(Value::Object(mut data)) = event.data() {
                    if data.get("kind").and_then(Value::as_str) == Some("form") {
                        let fields = data.remove("fields").unwrap_or(Value::Null);
                        self.forms.insert(id.to_owned(), fields);
                    }
                }
            }
            "attention.resolved" | "attention.timeout" => {
                // `attention.answered` does not close a request: resolution is the
                // emitter's own `attention.resolved` (AEP-0002 §7.2).
                if let Some(subject) = event.subject() {
                    self.pending.retain(|p| p != subject);
                    self.forms.remove(subject);
                }
            }
            "attention.answered" => {
                let fields = event.subject().and_then(|s| self.forms.get(s));
                if let (Some(fields), Some(data)) = (fields, event.data()) {
                    let values = data.get("answer").and_then(|a| a.get("values"));
                    if let Some(values) = values {
                        form_values(id, fields, values, event.capture(), out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The AEP-0006 `values` rules (AEP-0002 §5.3): each value has its field's shape, a
/// `select` value is a `choices[].id` unless the field allows `other` free text, and
/// every required field is answered. Required coverage is judged only at `redacted` or
/// `full`: below that, free-text values are gated out by design.
fn form_values(id: &str, fields: &Value, values: &Value, capture: Capture, out: &mut Vec<Issue>) {
    let Value::Object(values) = values else {
        // The payload schema reports a non-object `values`.
        return;
    };
    let fields = fields.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut problem = |field: &str, message: String| {
        out.push(Issue::new(
            Rule::FormValues,
            Some(format!("data.answer.values.{field}")),
            format!("{id}: {message}"),
            "AEP-0006",
        ));
    };
    for field in fields {
        let Some(fid) = field.get("id").and_then(Value::as_str) else {
            continue;
        };
        let flag = |name: &str| field.get(name).and_then(Value::as_bool).unwrap_or(false);
        let Some(value) = values.get(fid) else {
            if flag("required") && capture >= Capture::Redacted {
                problem(fid, format!("required field `{fid}` is not answered"));
            }
            continue;
        };
        match field.get("type").and_then(Value::as_str) {
            Some("string") if !value.is_string() => {
                problem(fid, format!("field `{fid}` is a string field"));
            }
            Some("number") if !value.is_number() => {
                problem(fid, format!("field `{fid}` is a number field"));
            }
            Some("boolean") if !value.is_boolean() => {
                problem(fid, format!("field `{fid}` is a boolean field"));
            }
            Some("select") => {
                let choices: Vec<&str> = field
                    .get("choices")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|c| c.get("id").and_then(Value::as_str))
                    .collect();
                let answers = match value {
                    Value::Array(many) => many.as_slice(),
                    one => std::slice::from_ref(one),
                };
                let other = flag("other");
                let bad = answers.iter().find(|a| match a.as_str() {
                    Some(s) => !choices.contains(&s) && !other,
                    None => true,
                });
                if let Some(bad) = bad {
                    problem(
                        fid,
                        format!("{bad} is not a choices[].id of select field `{fid}`, which does not allow other free text"),
                    );
                }
            }
            _ => {}
        }
    }
}

/// Runs the single-event rules on every event and the cross-event rules on the stream
/// (with [`StreamValidator::require_acks`] as given), returning every issue in order.
///
/// ```
/// use aep_core::{Event, validate::{validate_stream, Rule}};
///
/// let lines = [
///     r#"{"aep":"0.1","id":"1","type":"run.failed","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","run":"r","seq":0,"data":{"reason":"error"}}"#,
///     r#"{"aep":"0.1","id":"2","type":"run.failed","time":"2026-07-03T10:00:01Z","source":"aep://h/agent/a","agent":"a","session":"s","run":"r","seq":1,"data":{"reason":"error"}}"#,
/// ];
/// let events: Vec<Event> = lines.iter().map(|l| l.parse()).collect::<Result<_, _>>()?;
/// let issues = validate_stream(&events, false);
/// assert_eq!(issues.len(), 1);
/// assert_eq!(issues[0].rule(), Rule::RunTerminalExclusivity);
/// # Ok::<(), aep_core::EventParseError>(())
/// ```
pub fn validate_stream<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    require_acks: bool,
) -> Vec<Issue> {
    let mut v = StreamValidator::new().require_acks(require_acks);
    let mut out = Vec::new();
    for event in events {
        out.extend(validate_event(event));
        out.extend(v.push(event));
    }
    out.extend(v.finish());
    out
}

/// SHA-256 over a canonical rendering of the event (object members sorted by name, no
/// whitespace), truncated to 128 bits. Walks with an explicit stack, so no nesting depth
/// can overflow the call stack.
fn fingerprint(event: &Event) -> Fingerprint {
    let value = event.to_value();
    let mut sink = HashSink(Sha256::new());
    let mut stack: Vec<Step<'_>> = vec![Step::Value(&value)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(t) => sink.0.update(t.as_bytes()),
            Step::Key(k) => {
                sink.json(k);
                sink.0.update(b":");
            }
            Step::Value(v) => match v {
                Value::Object(map) => {
                    let mut members: Vec<(&String, &Value)> = map.iter().collect();
                    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    sink.0.update(b"{");
                    stack.push(Step::Text("}"));
                    for (i, (k, v)) in members.into_iter().enumerate().rev() {
                        stack.push(Step::Value(v));
                        stack.push(Step::Key(k));
                        if i > 0 {
                            stack.push(Step::Text(","));
                        }
                    }
                }
                Value::Array(items) => {
                    sink.0.update(b"[");
                    stack.push(Step::Text("]"));
                    for (i, v) in items.iter().enumerate().rev() {
                        stack.push(Step::Value(v));
                        if i > 0 {
                            stack.push(Step::Text(","));
                        }
                    }
                }
                scalar => sink.json(scalar),
            },
        }
    }
    let digest = sink.0.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    out
}

/// Feeds JSON text straight into the digest, without building strings.
struct HashSink(Sha256);

impl HashSink {
    fn json<T: serde::Serialize + ?Sized>(&mut self, v: &T) {
        // Writing into a hasher cannot fail, and scalars and strings always serialize.
        let _ = serde_json::to_writer(&mut *self, v);
    }
}

impl std::io::Write for HashSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum Step<'a> {
    Value(&'a Value),
    Key(&'a String),
    Text(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(json: &str) -> Event {
        json.parse().unwrap()
    }

    #[test]
    fn fingerprint_ignores_member_order_only() {
        let a = ev(
            r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","data":{"x":1,"y":[1,{"b":2,"a":1}]}}"#,
        );
        let b = ev(
            r#"{"aep":"0.1","id":"1","time":"t","type":"run.started","source":"s","agent":"a","data":{"y":[1,{"a":1,"b":2}],"x":1}}"#,
        );
        let c = ev(
            r#"{"aep":"0.1","id":"1","type":"run.started","time":"t","source":"s","agent":"a","data":{"x":1,"y":[{"a":1,"b":2},1]}}"#,
        );
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    #[test]
    fn exact_redelivery_is_not_a_second_terminal() {
        let end = ev(
            r#"{"aep":"0.1","id":"e","type":"session.ended","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":0}"#,
        );
        let mut v = StreamValidator::new();
        assert!(v.push(&end).is_empty());
        assert!(v.push(&end).is_empty());
    }

    #[test]
    fn sessions_are_emitter_scoped() {
        let a = ev(
            r#"{"aep":"0.1","id":"1","type":"progress.status","time":"t","source":"aep://a","agent":"a","session":"s","seq":4}"#,
        );
        let b = ev(
            r#"{"aep":"0.1","id":"1","type":"progress.status","time":"t","source":"aep://b","agent":"b","session":"s","seq":0}"#,
        );
        let mut v = StreamValidator::new();
        assert!(v.push(&a).is_empty());
        assert!(v.push(&b).is_empty());
    }

    #[test]
    fn resolved_clears_pending_and_answered_does_not() {
        let req = ev(
            r#"{"aep":"0.1","id":"q","type":"attention.requested","time":"t","source":"s:","agent":"a","session":"s","seq":0,"data":{"kind":"input","prompt":"p"}}"#,
        );
        let ans = ev(
            r#"{"aep":"0.1","id":"n","type":"attention.answered","subject":"q","time":"t","source":"s:","agent":"a","session":"s","seq":1,"data":{"answer":{"text":"x"}}}"#,
        );
        let res = ev(
            r#"{"aep":"0.1","id":"r","type":"attention.resolved","subject":"q","time":"t","source":"s:","agent":"a","session":"s","seq":2}"#,
        );
        let end = |seq: u64| {
            ev(&format!(
                r#"{{"aep":"0.1","id":"e{seq}","type":"session.ended","time":"t","source":"s:","agent":"a","session":"s","seq":{seq}}}"#
            ))
        };
        let mut v = StreamValidator::new();
        v.push(&req);
        v.push(&ans);
        let mut probe = StreamValidator::new();
        probe.push(&req);
        probe.push(&ans);
        assert_eq!(
            probe.push(&end(2))[0].rule(),
            Rule::EndedWithPendingAttention
        );
        assert!(v.push(&res).is_empty());
        assert!(v.push(&end(3)).is_empty());
    }

    #[test]
    fn form_values_rules() {
        let fields = serde_json::json!([
            {"id": "n", "type": "number", "label": "N", "required": true},
            {"id": "s", "type": "string", "label": "S", "required": true},
            {"id": "m", "type": "select", "label": "M", "multi": true, "choices": [{"id": "1", "label": "a"}]},
            {"id": "o", "type": "select", "label": "O", "other": true, "choices": [{"id": "1", "label": "a"}]}
        ]);
        let run = |values: Value, capture| {
            let mut out = Vec::new();
            form_values("x", &fields, &values, capture, &mut out);
            out.into_iter()
                .map(|i| i.attr().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
        };
        let ok = serde_json::json!({"n": 1, "s": "t", "m": ["1"], "o": "free"});
        assert!(run(ok, Capture::Full).is_empty());
        // Below redacted, free text is gated out: a missing string field is expected.
        assert!(run(serde_json::json!({"n": 1}), Capture::Metadata).is_empty());
        assert_eq!(
            run(serde_json::json!({"n": 1}), Capture::Redacted),
            ["data.answer.values.s"]
        );
        assert_eq!(
            run(serde_json::json!({"n": "1", "s": "t"}), Capture::Full),
            ["data.answer.values.n"]
        );
        assert_eq!(
            run(
                serde_json::json!({"n": 1, "s": "t", "m": ["1", "2"]}),
                Capture::Full
            ),
            ["data.answer.values.m"]
        );
        assert_eq!(
            run(serde_json::json!({"n": 1, "s": "t", "o": 7}), Capture::Full),
            ["data.answer.values.o"]
        );
    }
}
