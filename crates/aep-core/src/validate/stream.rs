//! The cross-event rules: what only a sequence of events can break.
//!
//! The rules a state projection surfaces (dedupe, ordering, terminal exclusivity,
//! pending attention) are the projection's own: [`StateProjection`] folds the events and
//! its violations become issues here. This module adds what projection does not track:
//! ack decisions per command and the AEP-0006 form `values` rule.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::Value;

use super::{validate_event, Issue, Rule};
use crate::attention::FormProblem;
use crate::event::Event;
use crate::level::Capture;
use crate::projection::{StateProjection, Violation};
use crate::types::EventType;

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
///   ([`Rule::EndedWithPendingAttention`], AEP-0002 §7.2). These are the violations of
///   [`StateProjection`], which this validator drives.
/// - One ack decision per command (AEP-0004 §3), keyed `(ack source, cause)`
///   ([`Rule::AckExclusivity`]); with [`StreamValidator::require_acks`], every command
///   must be acked by [`StreamValidator::finish`] ([`Rule::CommandUnacked`]).
/// - An `attention.answered` for a `kind: "form"` request keeps the `values` rules of
///   AEP-0006 ([`Rule::FormValues`]).
///
/// Single-event rules are not re-run here; see [`validate_stream`] for both. Memory
/// grows with the distinct `(source, id)` pairs, sessions and commands seen: this is a
/// validator for streams and corpora, not a long-running dedupe set.
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
    projection: StateProjection,
    /// `(ack source, cause)` -> the id of the first ack.
    acks: HashMap<(String, String), String>,
    /// `(session, command id)` of every ack's cause.
    acked: HashSet<(String, String)>,
    /// `(session, command id)` of every command, in arrival order, once each.
    commands: Vec<(String, String)>,
    command_set: HashSet<(String, String)>,
    /// Open `kind: "form"` requests by `(source, session, request id)`.
    forms: HashMap<(String, String, String), Form>,
}

struct Form {
    /// The request's `data.fields`.
    fields: Value,
    /// The `attention.answered` ids already judged, so a redelivery is judged once.
    judged: HashSet<String>,
}

impl fmt::Debug for StreamValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamValidator")
            .field("require_acks", &self.require_acks)
            .field("projection", &self.projection)
            .field("commands", &self.commands.len())
            .field("open_forms", &self.forms.len())
            .finish()
    }
}

impl StreamValidator {
    /// A validator with nothing seen, not requiring acks.
    ///
    /// ```
    /// let mut v = aep_core::validate::StreamValidator::new();
    /// assert!(v.finish().is_empty());
    /// ```
    pub fn new() -> StreamValidator {
        StreamValidator::default()
    }

    crate::setters! {
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
        #[must_use]
        pub fn require_acks(on: bool) => require_acks = on;
    }

    /// Folds one event, returning the issues it raises against what came before.
    ///
    /// ```
    /// use aep_core::{Event, validate::{Rule, StreamValidator}};
    /// let a: Event = r#"{"aep":"0.1","id":"1","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":4}"#.parse()?;
    /// let b: Event = r#"{"aep":"0.1","id":"1","type":"progress.status","time":"2026-07-03T10:00:01Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":5}"#.parse()?;
    /// let mut v = StreamValidator::new();
    /// assert!(v.push(&a).is_empty());
    /// assert_eq!(v.push(&b)[0].rule(), Rule::IdCollision); // same (source, id), other content
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
    pub fn push(&mut self, event: &Event) -> Vec<Issue> {
        let before = self.projection.violations().len();
        self.projection.apply(event);
        let mut out: Vec<Issue> = self
            .projection
            .violations()
            .get(before..)
            .unwrap_or_default()
            .iter()
            .map(issue_of)
            .collect();
        if out.iter().any(|i| i.rule() == Rule::IdCollision) {
            // The projection dropped the collider; so does everything else here.
            return out;
        }

        let Some(t) = EventType::parse(event.event_type()).ok() else {
            return out;
        };
        let (source, id) = (event.source(), event.id());
        if t.is_command() {
            if let Some(session) = event.session() {
                let key = (session.to_owned(), id.to_owned());
                if self.command_set.insert(key.clone()) {
                    self.commands.push(key);
                }
            }
            return out;
        }
        if t.is_ack() {
            self.ack(event, &mut out);
        }
        let Some(session) = event.session() else {
            return out;
        };
        let form_key = |request: &str| (source.to_owned(), session.to_owned(), request.to_owned());
        match t.as_str() {
            "attention.requested" => {
                if let Some(Value::Object(mut data)) = event.data() {
                    if data.get("kind").and_then(Value::as_str) == Some("form") {
                        let fields = data.remove("fields").unwrap_or(Value::Null);
                        let form = Form {
                            fields,
                            judged: HashSet::new(),
                        };
                        self.forms.entry(form_key(id)).or_insert(form);
                    }
                }
            }
            "attention.resolved" | "attention.timeout" => {
                if let Some(subject) = event.subject() {
                    self.forms.remove(&form_key(subject));
                }
            }
            "attention.answered" => {
                let form = event
                    .subject()
                    .and_then(|s| self.forms.get_mut(&form_key(s)));
                if let (Some(form), Some(data)) = (form, event.data()) {
                    let values = data.get("answer").and_then(|a| a.get("values"));
                    if let (Some(values), true) = (values, form.judged.insert(id.to_owned())) {
                        form_values(id, &form.fields, values, event.capture(), &mut out);
                    }
                }
            }
            _ => {}
        }
        out
    }

    fn ack(&mut self, event: &Event, out: &mut Vec<Issue>) {
        let Some(cause) = event.cause() else {
            return;
        };
        if let Some(session) = event.session() {
            self.acked.insert((session.to_owned(), cause.to_owned()));
        }
        // A second ack under the first's id is a redelivery (or a collision the
        // projection already reported); under another id it is a second decision.
        let key = (event.source().to_owned(), cause.to_owned());
        match self.acks.get(&key) {
            Some(first) if first != event.id() => out.push(Issue::new(
                Rule::AckExclusivity,
                Some("cause".to_owned()),
                format!(
                    "{} is a second ack decision for command {cause} (first: {first}); a retried command is re-acked with the recorded ack, never re-decided",
                    event.id()
                ),
                "AEP-0004 §3",
            )),
            Some(_) => {}
            None => {
                self.acks.insert(key, event.id().to_owned());
            }
        }
    }

    /// Ends the stream, returning the issues only the end can show (unacked commands,
    /// when [`require_acks`](StreamValidator::require_acks) is on).
    ///
    /// ```
    /// use aep_core::{Event, validate::StreamValidator};
    /// let cmd: Event = r#"{"aep":"0.1","id":"c1","type":"control.cancel","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/mc","agent":"mc","session":"s"}"#.parse()?;
    /// let mut lenient = StreamValidator::new();
    /// lenient.push(&cmd);
    /// assert!(lenient.finish().is_empty()); // acks not required
    /// # Ok::<(), aep_core::EventParseError>(())
    /// ```
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

/// The issue for a projection violation.
fn issue_of(v: &Violation) -> Issue {
    let (rule, attr, message, section) = match v {
        Violation::IdCollision { source, id } => (
            Rule::IdCollision,
            "id",
            format!("({source}, {id}) names two different events; ids are unique per source"),
            "AEP-0001 §7.4",
        ),
        Violation::RunTerminalExclusivity {
            source,
            session,
            run,
        } => (
            Rule::RunTerminalExclusivity,
            "run",
            format!("a second terminal for run {run} of session {session} from {source}"),
            "AEP-0002 §2",
        ),
        Violation::SessionTerminalExclusivity { source, session } => (
            Rule::SessionTerminalExclusivity,
            "type",
            format!("a second session.ended for session {session} from {source}"),
            "AEP-0002 §2",
        ),
        Violation::EndedWithPendingAttention {
            source,
            session,
            pending,
        } => (
            Rule::EndedWithPendingAttention,
            "type",
            format!("session {session} from {source} ended with {pending} attention request(s) pending; close each with attention.resolved or attention.timeout first"),
            "AEP-0002 §7.2",
        ),
        Violation::EpochRegression {
            source,
            session,
            id,
        } => (
            Rule::EpochRegression,
            "epoch",
            format!("{id} moves session {session} from {source} to an earlier epoch; epochs are never reused"),
            "AEP-0001 §7.2",
        ),
        Violation::SeqRegression {
            source,
            session,
            id,
        } => (
            Rule::SeqRegression,
            "seq",
            format!("{id} does not advance seq in session {session} from {source}; a new epoch is declared, never inferred"),
            "AEP-0001 §7.2",
        ),
    };
    debug_assert_eq!(rule.as_str(), v.rule());
    Issue::new(rule, Some(attr.to_owned()), message, section)
}

/// The AEP-0006 `values` rules (AEP-0002 §5.3), as [`crate::attention::form_problems`]
/// states them for a target checking an answer: each value has its field's shape, a
/// `select` value is a `choices[].id` unless the field allows `other` free text, and
/// every required field is answered. Required coverage is judged only at `redacted` or
/// `full`: below that, free-text values are gated out by design; a key that names no
/// field is the answering target's to refuse, not a fault of the record.
fn form_values(id: &str, fields: &Value, values: &Value, capture: Capture, out: &mut Vec<Issue>) {
    let Value::Object(values) = values else {
        // The payload schema reports a non-object `values`.
        return;
    };
    for problem in crate::attention::form_problems(fields, values) {
        match problem {
            FormProblem::Missing { .. } if capture < Capture::Redacted => continue,
            FormProblem::UnknownField { .. } => continue,
            _ => {}
        }
        out.push(Issue::new(
            Rule::FormValues,
            Some(format!("data.answer.values.{}", problem.field())),
            format!("{id}: {problem}"),
            "AEP-0006",
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(json: &str) -> Event {
        json.parse().unwrap()
    }

    /// Pushes `events`, in order, into a new validator: none raises an issue.
    fn no_issue(events: &[&Event]) {
        let mut v = StreamValidator::new();
        for (n, event) in events.iter().enumerate() {
            let issues = v.push(event);
            assert!(issues.is_empty(), "event {n}: {issues:?}");
        }
    }

    #[test]
    fn exact_redelivery_is_not_a_second_terminal() {
        let end = ev(
            r#"{"aep":"0.1","id":"e","type":"session.ended","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":0}"#,
        );
        no_issue(&[&end, &end]);
    }

    #[test]
    fn sessions_are_emitter_scoped() {
        let a = ev(
            r#"{"aep":"0.1","id":"1","type":"progress.status","time":"t","source":"aep://a","agent":"a","session":"s","seq":4}"#,
        );
        let b = ev(
            r#"{"aep":"0.1","id":"1","type":"progress.status","time":"t","source":"aep://b","agent":"b","session":"s","seq":0}"#,
        );
        no_issue(&[&a, &b]);
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
    fn redelivered_acks_and_answers_are_judged_once() {
        let cmd = ev(
            r#"{"aep":"0.1","id":"c","type":"control.pause","time":"t","source":"aep://mc","agent":"mc","session":"s"}"#,
        );
        let ack = ev(
            r#"{"aep":"0.1","id":"k","type":"control.accepted","time":"t","source":"aep://a","agent":"a","session":"s","seq":0,"cause":"c"}"#,
        );
        let req = ev(
            r#"{"aep":"0.1","id":"q","type":"attention.requested","time":"t","source":"aep://a","agent":"a","session":"s","seq":1,"capture":"redacted","data":{"kind":"form","prompt":"p","fields":[{"id":"1","type":"select","label":"L","choices":[{"id":"1","label":"a"}]}]}}"#,
        );
        let ans = ev(
            r#"{"aep":"0.1","id":"n","type":"attention.answered","subject":"q","time":"t","source":"aep://a","agent":"a","session":"s","seq":2,"capture":"redacted","data":{"answer":{"values":{"1":"nope"}}}}"#,
        );
        let mut v = StreamValidator::new().require_acks(true);
        for e in [&cmd, &ack, &cmd, &ack, &req] {
            assert!(v.push(e).is_empty(), "{e}");
        }
        assert_eq!(v.push(&ans)[0].rule(), Rule::FormValues);
        assert!(v.push(&ans).is_empty());
        assert!(v.finish().is_empty());
    }

    #[test]
    fn every_projection_violation_is_a_rule() {
        let s = || "x".to_owned();
        for v in [
            Violation::IdCollision {
                source: s(),
                id: s(),
            },
            Violation::RunTerminalExclusivity {
                source: s(),
                session: s(),
                run: s(),
            },
            Violation::SessionTerminalExclusivity {
                source: s(),
                session: s(),
            },
            Violation::EndedWithPendingAttention {
                source: s(),
                session: s(),
                pending: 1,
            },
            Violation::EpochRegression {
                source: s(),
                session: s(),
                id: s(),
            },
            Violation::SeqRegression {
                source: s(),
                session: s(),
                id: s(),
            },
        ] {
            let issue = issue_of(&v);
            assert_eq!(issue.rule().as_str(), v.rule());
            assert!(issue.rule().is_stream());
        }
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
