//! The narrow seam between the relay and the protocol rules of `aep-core`.
//!
//! Every protocol decision the relay makes goes through one function here: validating an
//! envelope, matching an attr-match filter, down-leveling to a capture ceiling, and the
//! shape of the WebSocket frames and of the discovery document. The relay itself only
//! moves bytes.

use aep_core::capture::honored_level;
use aep_core::frame::{
    Capabilities, ControlCapability, Discovery, Endpoints, ErrorCode, ErrorFrame, Frame, Hello,
    Identity, ReplayCapability, ReplayExhausted, Role,
};
use aep_core::resume::{Position, ResumePosition};
use aep_core::types::{claims_session_parsed, EventType};
use aep_core::validate::{validate_envelope, validate_envelope_view, Issue, Rule};
use aep_core::{Capture, EnvelopeView, Event};
use serde_json::Value;

// ---- envelope ----------------------------------------------------------------------

/// What the relay does with an accepted event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Disposition {
    /// A command (AEP-0004 §2): routed to one target, fanned out for audit, never buffered.
    Command,
    /// Agent-scoped or unsequenced: live fan-out only, no replay position.
    Live,
    /// A sequenced session event: buffered, then fanned out.
    Buffered,
}

/// Checks an envelope the way a relay must before accepting it (AEP-0003 §3.2.3: envelope
/// validation; payload schemas are the consumer's business) and says what to do with it.
/// The error is the detail of the 400 / `invalid-event` answer.
pub(crate) fn check_envelope(event: &Event) -> Result<Disposition, String> {
    decide(
        validate_envelope(event),
        event.event_type(),
        event.session(),
        event.seq(),
    )
}

/// [`check_envelope`] for an envelope read in place (the ingest fast path).
pub(crate) fn check_view(view: &EnvelopeView<'_>) -> Result<Disposition, String> {
    decide(
        validate_envelope_view(view),
        view.event_type(),
        view.session(),
        view.seq(),
    )
}

fn decide(
    issues: Vec<Issue>,
    event_type: &str,
    session: Option<&str>,
    seq: Option<u64>,
) -> Result<Disposition, String> {
    let tolerated = |rule: Rule| {
        // a type outside the thirteen categories is forwarded, as the reference relay
        // does: consumers MUST tolerate unknown types (AEP-0001 §6) and a relay is not a
        // terminal consumer; only a type that is not dotted lowercase at all is refused
        rule == Rule::TypeSyntax && aep_core::types::is_dotted_lowercase(event_type)
    };
    // the envelope rules only: `data` is never decoded on the ingest path
    if let Some(issue) = issues.into_iter().find(|i| !tolerated(i.rule())) {
        return Err(issue.to_string());
    }
    // The session goes into the SSE `id:` line verbatim; a line break in it would forge
    // fields of the stream every reader parses (AEP-0003 §3.3).
    if session.is_some_and(|s| !aep_core::resume::sse_line_safe(s)) {
        return Err("session holds CR, LF or NUL, which the SSE binding cannot carry in an id: line (AEP-0003 §3.3)".into());
    }
    // validate_envelope's scoping rule (AEP-0001 §5.2, AEP-0004 §2.2) held above for
    // every well-formed type; what is left is where the event goes
    let parsed = EventType::parse(event_type).ok();
    Ok(if parsed.as_ref().is_some_and(EventType::is_command) {
        Disposition::Command
    } else if claims_session_parsed(parsed.as_ref(), session.is_some(), seq.is_some()) {
        Disposition::Buffered
    } else {
        Disposition::Live
    })
}

// ---- attr-match ----------------------------------------------------------------------

pub(crate) use aep_core::filter::Filter;

/// Parses and validates a filter object (AEP-0003 §6), failing closed.
pub(crate) fn parse_filter(value: &Value) -> Result<Filter, String> {
    Filter::from_value(value).map_err(|e| e.to_string())
}

// ---- capture ----------------------------------------------------------------------

/// Down-levels `event` to a subscription's capture ceiling (AEP-0003 §6.4, AEP-0001
/// §8.2); `None` when the event already sits at or below it and goes out unchanged.
pub(crate) fn downlevel(event: &Event, ceiling: Capture) -> Option<Event> {
    lowers(event.capture(), Some(ceiling)).then(|| aep_core::capture::downlevel(event, ceiling))
}

/// Whether a reader's capture ceiling (none: no ceiling) lowers an event held at `held`;
/// when not, the event goes out exactly as received.
pub(crate) fn lowers(held: Capture, ceiling: Option<Capture>) -> bool {
    ceiling.is_some_and(|c| honored_level(held, c) != held)
}

// ---- frames and discovery ------------------------------------------------------------

/// The versions this relay speaks: core's.
pub(crate) use aep_core::binding::VERSIONS;

/// The capabilities this relay declares in `hello` and discovery (AEP-0003 §3.4, §4):
/// `replay_depth` events replayed per session.
pub(crate) fn capabilities(replay_depth: usize) -> Capabilities {
    let mut caps = Capabilities::default();
    caps.filters = Some(vec!["attr-match".to_owned()]);
    caps.replay = Some(ReplayCapability::new(replay_depth as u64, true));
    caps.capture = Some(Capture::ALL.to_vec());
    caps.control = Some(ControlCapability::accepting(Vec::<String>::new()));
    caps.roster = Some(serde_json::Map::new());
    caps.experimental = Some(serde_json::Map::new());
    caps
}

/// The discovery document (AEP-0003 §3.4) of a relay replaying `replay_depth` events
/// per session.
pub(crate) fn discovery(replay_depth: usize) -> Discovery {
    let mut doc = Discovery::new(Endpoints::standard());
    doc.role = Some(Role::Collector);
    doc.capabilities = Some(capabilities(replay_depth));
    doc
}

/// The relay's `hello` reply: exactly one selected version (AEP-0003 §4 rule 1), and
/// the capabilities of a relay replaying `replay_depth` events per session.
pub(crate) fn hello_reply(replay_depth: usize, version: &str) -> String {
    let hello = Hello::new(Role::Both)
        .with_versions([version])
        .with_identity(Identity::new("aep-relay"))
        .with_capabilities(capabilities(replay_depth));
    Frame::Hello(Box::new(hello)).to_json()
}

/// An `error` frame (AEP-0003 §2, §6.5; AEP-0004 §4.2). `id` echoes a request, `cause`
/// names the command or event refused.
pub(crate) fn error_frame(
    code: ErrorCode,
    id: Option<&str>,
    cause: Option<&str>,
    detail: Option<&str>,
) -> String {
    let mut frame = ErrorFrame::new(code);
    if let Some(id) = id {
        frame = frame.with_id(id);
    }
    if let Some(cause) = cause {
        frame = frame.with_cause(cause);
    }
    if let Some(detail) = detail {
        frame = frame.with_detail(detail);
    }
    Frame::Error(frame).to_json()
}

/// The `version-unsupported` refusal, listing the versions spoken (AEP-0003 §4 rule 1).
pub(crate) fn version_unsupported_frame() -> String {
    Frame::Error(ErrorFrame::new(ErrorCode::VersionUnsupported).with_versions(VERSIONS)).to_json()
}

/// A `replay-exhausted` frame (AEP-0003 §5).
pub(crate) fn replay_exhausted_frame(sub: &str, session: &str, earliest: Position) -> String {
    let frame = ReplayExhausted::new(sub, session, earliest.epoch(), earliest.seq());
    Frame::ReplayExhausted(frame).to_json()
}

/// The SSE comment that declares the same gap (AEP-0003 §3.3.3).
pub(crate) fn replay_exhausted_comment(session: &str, earliest: Position) -> String {
    let at = ResumePosition::new(session, earliest.epoch(), earliest.seq());
    aep_core::resume::replay_exhausted_comment(&at)
}

/// A `closing` frame (AEP-0003 §3.5.4).
pub(crate) fn closing_frame(reason: &str) -> String {
    Frame::Closing(aep_core::frame::Closing::new(reason)).to_json()
}

/// A `ping` frame carrying `t`.
pub(crate) fn ping_frame(t: u64) -> String {
    Frame::ping(t).to_json()
}

/// The length of `value` as compact JSON, counted without writing it anywhere: what a
/// frame will cost (a `roster` reply, a cluster's claims message) before it is built.
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // counting cannot fail, and the protocol types always serialize
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
