//! [`AttentionDesk`]: a target's pending attention requests and what each answer,
//! deadline and withdrawal makes of them (AEP-0002 §7, AEP-0004 §5-6, AEP-0006, AEP-0008).

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::answer::{Answer, InvalidAnswer};
use super::request::{AttentionRequest, RequestError};
use crate::control::{Decision, OutcomeEvent, RejectReason};
use crate::event::Event;
use crate::gating::gate_form_values;
use crate::payload::{AttentionAnswered, AttentionAnsweredVia, ControlAttentionRespond};
use crate::{Capture, FastMap};

/// The command type that answers a request (AEP-0004 §5).
///
/// ```
/// assert_eq!(aep_core::attention::RESPOND, "control.attention.respond");
/// ```
pub const RESPOND: &str = "control.attention.respond";

/// One pending request.
#[derive(Debug)]
struct Pending {
    request: AttentionRequest,
    /// The form's fields as JSON, for the AEP-0006 values rule and gating.
    fields: Value,
    opened: Instant,
    deadline: Option<Instant>,
}

/// What [`AttentionDesk::respond`] made of a `control.attention.respond`.
///
/// ```
/// use std::time::Instant;
/// use aep_core::attention::{AttentionDesk, Respond};
/// use aep_core::control::ControlSender;
/// let mut desk = AttentionDesk::new();
/// let cmd = ControlSender::new("console", "h").command("control.attention.respond", "s1").build("c1", "t");
/// assert!(matches!(desk.respond(Instant::now(), &cmd), Respond::NotPending));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Respond {
    /// No request of the command's session with the command's `subject` is pending
    /// here: not this desk's to decide.
    NotPending,
    /// The answer does not answer the request: nack it
    /// ([`Rejected::decision`]); the request stays pending (AEP-0006).
    Rejected(Rejected),
    /// Answered: accept the command, then emit [`Answered::answered`] and
    /// [`Answered::resolved`], in that order.
    Answered(Box<Answered>),
}

/// A respond that does not answer its request.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    request: String,
    problem: InvalidAnswer,
}

impl Rejected {
    /// The request's id.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// What is wrong with the answer.
    pub fn problem(&self) -> &InvalidAnswer {
        &self.problem
    }

    /// The decision to ack the command with: `invalid`, the problem as detail.
    pub fn decision(&self) -> Decision {
        Decision::reject(RejectReason::Invalid, self.problem.to_string())
    }
}

/// A request answered by a command: the answer applied and the lifecycle events to emit.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    session: String,
    request: String,
    command: String,
    by: String,
    answer: Answer,
    fields: Value,
    latency: Duration,
}

impl Answered {
    /// The session of the request.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The request's id.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// The answer applied.
    pub fn answer(&self) -> &Answer {
        &self.answer
    }

    /// Takes the answer applied.
    pub fn into_answer(self) -> Answer {
        self.answer
    }

    /// How long the request waited.
    pub fn latency(&self) -> Duration {
        self.latency
    }

    /// The decision to ack the command with: accepted.
    pub fn decision(&self) -> Decision {
        Decision::Accept
    }

    /// `attention.answered` (AEP-0002 §5.3): the answer applied, `by` the command's
    /// sender, `via: "control"`, `subject` the request, `cause` the command (AEP-0004
    /// §6). A form's values are gated for an emitter whose capture ceiling is
    /// `ceiling` (AEP-0006: free text only at `redacted` and above).
    pub fn answered(&self, ceiling: Capture) -> OutcomeEvent {
        let mut answer = self.answer.to_payload();
        if let Some(values) = &answer.values {
            answer.values = Some(gate_form_values(
                &self.fields,
                &Value::Object(values.clone()),
                ceiling,
            ));
        }
        let payload = AttentionAnswered {
            answer,
            by: Some(self.by.clone()),
            via: Some(AttentionAnsweredVia::Control),
            extra: Map::new(),
        };
        let data = serde_json::to_value(payload).unwrap_or(Value::Null);
        OutcomeEvent::new("attention.answered", data, &self.command).with_subject(&self.request)
    }

    /// `attention.resolved{resolution:"answered", latency_ms}`, `subject` the request,
    /// `cause` the command.
    pub fn resolved(&self) -> OutcomeEvent {
        OutcomeEvent::new(
            "attention.resolved",
            json!({"resolution": "answered", "latency_ms": millis(self.latency)}),
            &self.command,
        )
        .with_subject(&self.request)
    }
}

/// A request closed without an answer: timed out, or withdrawn. Emit
/// [`event`](Self::event): its terminal (AEP-0002 §7 rule 2).
#[derive(Debug, Clone, PartialEq)]
pub struct Closed {
    session: String,
    request: String,
    event: OutcomeEvent,
}

impl Closed {
    /// The session of the request.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The request's id.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// The terminal event: `attention.timeout{after_ms}` or
    /// `attention.resolved{resolution:"dismissed"}`, `subject` and `cause` the request.
    pub fn event(&self) -> &OutcomeEvent {
        &self.event
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The pending attention requests of a target, by `(session, request id)`: the
/// attention loop of AEP-0002 §7 as a sans-IO state machine.
///
/// The driver emits `attention.requested` (the payload of
/// [`AttentionRequest::payload_at`], severity `notice` or above), then
/// [`open`](Self::open)s the request under the id it was emitted with, holding off
/// commands meanwhile. Each `control.attention.respond` goes to
/// [`respond`](Self::respond) before anything else decides it: an answer that does
/// not answer its request is nacked `invalid` and the request stays pending (AEP-0006);
/// an answer is accepted, then `attention.answered` and `attention.resolved` are emitted,
/// cause-linked to the command. A request past its deadline is closed by
/// [`expire`](Self::expire) or [`handle_timeout`](Self::handle_timeout) with
/// `attention.timeout`; one the agent stops waiting on by [`withdraw`](Self::withdraw)
/// with `attention.resolved{resolution:"dismissed"}`. Every request reaches exactly one
/// terminal: whichever of these comes first removes it.
///
/// ```
/// use std::time::{Duration, Instant};
/// use aep_core::attention::{AttentionDesk, AttentionRequest, Respond};
/// use aep_core::control::ControlSender;
/// use aep_core::Capture;
/// use serde_json::json;
///
/// let t0 = Instant::now();
/// let mut desk = AttentionDesk::new();
/// desk.open(t0, "s1", "01JREQ", AttentionRequest::permission("Deploy?").timeout(Duration::from_secs(60)))?;
///
/// let respond = |id: &str, answer: serde_json::Value| {
///     ControlSender::new("console", "ops").command("control.attention.respond", "s1")
///         .subject("01JREQ").data(json!({"answer": answer})).build(id, "t")
/// };
/// // An option the request does not offer: nacked, still pending.
/// let Respond::Rejected(r) = desk.respond(t0, &respond("c1", json!({"option": "maybe"}))) else { panic!() };
/// assert_eq!(r.decision().ack_type(), "control.rejected");
/// assert!(desk.is_pending("s1", "01JREQ"));
///
/// let Respond::Answered(a) = desk.respond(t0, &respond("c2", json!({"text": "Allow"}))) else { panic!() };
/// assert!(a.answer().is("allow"));
/// let answered = a.answered(Capture::Metadata);
/// assert_eq!((answered.event_type(), answered.cause(), answered.subject()), ("attention.answered", "c2", Some("01JREQ")));
/// assert_eq!(answered.data()["answer"], json!({"option": "allow"}));
/// assert_eq!(a.resolved().data()["resolution"], "answered");
/// assert!(!desk.is_pending("s1", "01JREQ"));
/// # Ok::<(), aep_core::attention::RequestError>(())
/// ```
#[derive(Debug, Default)]
pub struct AttentionDesk {
    pending: FastMap<(String, String), Pending>,
}

impl AttentionDesk {
    /// An empty desk.
    pub fn new() -> AttentionDesk {
        AttentionDesk::default()
    }

    /// Opens `request`, emitted in `session` as the event `request_id`, at `now`; its
    /// deadline is `now` plus its timeout. Refused when the request is not well formed
    /// ([`AttentionRequest::check`]), cannot be answered by control, or its id is
    /// pending already.
    pub fn open(
        &mut self,
        now: Instant,
        session: &str,
        request_id: &str,
        request: AttentionRequest,
    ) -> Result<(), RequestError> {
        request.check()?;
        if !request.answerable_by_control() {
            return Err(RequestError::NotAnswerableByControl);
        }
        let key = (session.to_owned(), request_id.to_owned());
        if self.pending.contains_key(&key) {
            return Err(RequestError::AlreadyPending(request_id.to_owned()));
        }
        let fields = serde_json::to_value(request.fields()).unwrap_or(Value::Null);
        let deadline = request.timeout_after().and_then(|t| now.checked_add(t));
        self.pending.insert(
            key,
            Pending {
                request,
                fields,
                opened: now,
                deadline,
            },
        );
        Ok(())
    }

    /// Checks a command against the request it answers (its `session` and `subject`,
    /// AEP-0004 §5): not pending here, rejected (the request stays pending), or answered
    /// (the request is closed).
    pub fn respond(&mut self, now: Instant, command: &Event) -> Respond {
        if command.event_type() != RESPOND {
            return Respond::NotPending;
        }
        let (Some(session), Some(subject)) = (command.session(), command.subject()) else {
            return Respond::NotPending;
        };
        let key = (session.to_owned(), subject.to_owned());
        let Some(pending) = self.pending.get(&key) else {
            return Respond::NotPending;
        };
        let checked = command
            .payload::<ControlAttentionRespond>()
            .map_err(|e| InvalidAnswer::Malformed(e.to_string()))
            .and_then(|p| pending.request.check_answer(&p.answer));
        match checked {
            Err(problem) => Respond::Rejected(Rejected {
                request: subject.to_owned(),
                problem,
            }),
            Ok(answer) => {
                let Some(pending) = self.pending.remove(&key) else {
                    return Respond::NotPending;
                };
                Respond::Answered(Box::new(Answered {
                    answer: answer.matched(&key.1, command.agent()),
                    session: key.0,
                    request: key.1,
                    command: command.id().to_owned(),
                    by: command.agent().to_owned(),
                    fields: pending.fields,
                    latency: now.saturating_duration_since(pending.opened),
                }))
            }
        }
    }

    /// Closes the request with `attention.timeout` if it is still pending and its
    /// deadline is at or before `now`.
    pub fn expire(&mut self, now: Instant, session: &str, request_id: &str) -> Option<Closed> {
        let key = (session.to_owned(), request_id.to_owned());
        let due = self
            .pending
            .get(&key)
            .and_then(|p| p.deadline)
            .is_some_and(|d| d <= now);
        if !due {
            return None;
        }
        let pending = self.pending.remove(&key)?;
        Some(timed_out(key, &pending))
    }

    /// Closes every request whose deadline is at or before `now`, with
    /// `attention.timeout`.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<Closed> {
        let due: Vec<(String, String)> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline.is_some_and(|d| d <= now))
            .map(|(k, _)| k.clone())
            .collect();
        due.into_iter()
            .filter_map(|key| {
                let pending = self.pending.remove(&key)?;
                Some(timed_out(key, &pending))
            })
            .collect()
    }

    /// Withdraws a pending request: the agent no longer waits for it, so it closes with
    /// `attention.resolved{resolution:"dismissed"}` (AEP-0002 §7 rule 2). `None` when it
    /// is not pending (answered or timed out already).
    ///
    /// ```
    /// use std::time::Instant;
    /// use aep_core::attention::{AttentionDesk, AttentionRequest};
    /// let mut desk = AttentionDesk::new();
    /// desk.open(Instant::now(), "s1", "r1", AttentionRequest::input("Which branch?"))?;
    /// let closed = desk.withdraw("s1", "r1").unwrap();
    /// assert_eq!(closed.event().data()["resolution"], "dismissed");
    /// assert!(desk.withdraw("s1", "r1").is_none());
    /// # Ok::<(), aep_core::attention::RequestError>(())
    /// ```
    pub fn withdraw(&mut self, session: &str, request_id: &str) -> Option<Closed> {
        let key = (session.to_owned(), request_id.to_owned());
        self.pending.remove(&key)?;
        let event = OutcomeEvent::new(
            "attention.resolved",
            json!({"resolution": "dismissed"}),
            request_id,
        )
        .with_subject(request_id);
        Some(Closed {
            session: key.0,
            request: key.1,
            event,
        })
    }

    /// The earliest deadline of a pending request.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().filter_map(|p| p.deadline).min()
    }

    /// The deadline of one pending request.
    pub fn deadline(&self, session: &str, request_id: &str) -> Option<Instant> {
        self.pending
            .get(&(session.to_owned(), request_id.to_owned()))
            .and_then(|p| p.deadline)
    }

    /// Whether the request is pending.
    pub fn is_pending(&self, session: &str, request_id: &str) -> bool {
        self.pending
            .contains_key(&(session.to_owned(), request_id.to_owned()))
    }

    /// How many requests are pending.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

fn timed_out(key: (String, String), pending: &Pending) -> Closed {
    let after = pending.request.timeout_after().unwrap_or_default();
    let event = OutcomeEvent::new(
        "attention.timeout",
        json!({"after_ms": millis(after)}),
        &key.1,
    )
    .with_subject(&key.1);
    Closed {
        session: key.0,
        request: key.1,
        event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::FormField;
    use crate::control::ControlSender;

    fn respond(session: &str, subject: &str, id: &str, answer: Value) -> Event {
        ControlSender::new("console", "ops")
            .command(RESPOND, session)
            .subject(subject)
            .data(json!({ "answer": answer }))
            .build(id, "2026-07-03T10:00:00.000Z")
    }

    #[test]
    fn a_request_reaches_exactly_one_terminal() {
        let t0 = Instant::now();
        let mut desk = AttentionDesk::new();
        let r = AttentionRequest::input("?").timeout(Duration::from_secs(5));
        desk.open(t0, "s", "r", r.clone()).unwrap();
        assert_eq!(
            desk.open(t0, "s", "r", r.clone()),
            Err(RequestError::AlreadyPending("r".into()))
        );
        // Not yet due.
        assert!(desk.expire(t0 + Duration::from_secs(4), "s", "r").is_none());
        assert_eq!(desk.poll_timeout(), Some(t0 + Duration::from_secs(5)));
        let closed = desk.expire(t0 + Duration::from_secs(5), "s", "r").unwrap();
        assert_eq!(closed.event().event_type(), "attention.timeout");
        assert_eq!(closed.event().data(), &json!({"after_ms": 5000}));
        assert_eq!(
            (closed.event().subject(), closed.event().cause()),
            (Some("r"), "r")
        );
        // Gone: a late answer is not this desk's, a withdrawal closes nothing.
        assert_eq!(
            desk.respond(t0, &respond("s", "r", "c", json!({"text": "late"}))),
            Respond::NotPending
        );
        assert!(desk.withdraw("s", "r").is_none());

        desk.open(t0, "s", "r2", r).unwrap();
        let closed = desk.handle_timeout(t0 + Duration::from_secs(9));
        assert_eq!(closed.len(), 1);
        assert!(desk.is_empty());
    }

    #[test]
    fn answers_route_by_session_and_subject() {
        let t0 = Instant::now();
        let mut desk = AttentionDesk::new();
        desk.open(t0, "s1", "r", AttentionRequest::input("?"))
            .unwrap();
        assert_eq!(
            desk.respond(t0, &respond("s2", "r", "c", json!({"text": "x"}))),
            Respond::NotPending
        );
        assert_eq!(
            desk.respond(t0, &respond("s1", "other", "c", json!({"text": "x"}))),
            Respond::NotPending
        );
        let Respond::Rejected(r) = desk.respond(t0, &respond("s1", "r", "c", json!("no object")))
        else {
            panic!()
        };
        assert!(matches!(r.problem(), InvalidAnswer::Malformed(_)));
        let later = t0 + Duration::from_millis(1500);
        let Respond::Answered(a) =
            desk.respond(later, &respond("s1", "r", "c2", json!({"text": "main"})))
        else {
            panic!()
        };
        assert_eq!(a.latency(), Duration::from_millis(1500));
        assert_eq!(a.resolved().data()["latency_ms"], 1500);
        assert_eq!(a.answered(Capture::Redacted).data()["by"], "console");
        assert_eq!(a.answered(Capture::Redacted).data()["via"], "control");
        assert_eq!(
            (a.answer().request_id(), a.answer().by()),
            (Some("r"), Some("console"))
        );
    }

    #[test]
    fn form_values_are_gated_at_the_ceiling() {
        let t0 = Instant::now();
        let mut desk = AttentionDesk::new();
        let form = AttentionRequest::form("Deploy")
            .field(FormField::string("why", "Why"))
            .field(FormField::number("n", "N"))
            .field(FormField::select("db", "DB").choice("pg", "PG"));
        desk.open(t0, "s", "r", form).unwrap();
        let Respond::Answered(a) = desk.respond(
            t0,
            &respond(
                "s",
                "r",
                "c",
                json!({"values": {"why": "secret reasons", "n": 2, "db": "pg"}}),
            ),
        ) else {
            panic!()
        };
        let low = a.answered(Capture::Metadata);
        assert_eq!(low.data()["answer"]["values"], json!({"n": 2, "db": "pg"}));
        let high = a.answered(Capture::Redacted);
        assert_eq!(high.data()["answer"]["values"]["why"], "secret reasons");
        // The agent gets every value, whatever the ceiling.
        assert_eq!(a.answer().values().map(Map::len), Some(3));
    }

    #[test]
    fn unanswerable_and_malformed_requests_are_refused() {
        let mut desk = AttentionDesk::new();
        let oob =
            AttentionRequest::permission("?").respond_via([crate::attention::RespondVia::Oob]);
        assert_eq!(
            desk.open(Instant::now(), "s", "r", oob),
            Err(RequestError::NotAnswerableByControl)
        );
        assert_eq!(
            desk.open(Instant::now(), "s", "r", AttentionRequest::form("x")),
            Err(RequestError::FormWithoutFields)
        );
        assert!(desk.is_empty());
    }
}
