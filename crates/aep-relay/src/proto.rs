//! The narrow seam between the relay and the protocol rules of `aep-core`.
//!
//! Every protocol decision the relay makes goes through one function here: validating an
//! envelope, matching an attr-match filter, down-leveling to a capture ceiling, and the
//! shape of the WebSocket frames and of the discovery document. The relay itself only
//! moves bytes.

use aep_core::types::EventType;
use aep_core::{Capture, Event, Severity};
use serde_json::{json, Map, Value};

use crate::config::RelayConfig;

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

/// Checks an envelope the way a relay must before accepting it (AEP-0003 §3.2.3) and says
/// what to do with it. The error is the detail of the 400 / `invalid-event` answer.
// TODO(core): use aep_core::validate when merged.
pub(crate) fn check_envelope(event: &Event) -> Result<Disposition, String> {
    if event.aep() != aep_core::AEP_VERSION {
        return Err(format!("unsupported aep version: {}", event.aep()));
    }
    for (name, value) in [
        ("id", event.id()),
        ("type", event.event_type()),
        ("time", event.time()),
        ("source", event.source()),
        ("agent", event.agent()),
    ] {
        if value.is_empty() {
            return Err(format!("missing/invalid {name}"));
        }
    }
    let ty = EventType::parse(event.event_type())
        .map_err(|_| format!("bad type syntax: {}", event.event_type()))?;
    if ty.is_agent_scoped() {
        if event.session().is_some() || event.seq().is_some() {
            return Err("agent-scoped events omit session/seq".into());
        }
        return Ok(Disposition::Live);
    }
    if event.session().is_none() {
        return Err(if ty.is_command() {
            "command events require session (target)".into()
        } else {
            "session required".into()
        });
    }
    if ty.is_foreign_emitter() {
        if event.seq().is_some() {
            return Err(if ty.is_command() {
                "command events omit seq".into()
            } else {
                format!("{} omits seq", event.event_type())
            });
        }
        return Ok(if ty.is_command() {
            Disposition::Command
        } else {
            Disposition::Live
        });
    }
    if event.seq().is_none() {
        return Err("seq required (integer >= 0)".into());
    }
    Ok(Disposition::Buffered)
}

// ---- attr-match ----------------------------------------------------------------------

/// A validated attr-match filter (AEP-0003 §6).
// TODO(core): use aep_core::filter when merged.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    members: Vec<(String, Predicate)>,
}

#[derive(Debug, Clone)]
enum Predicate {
    AnyOf(Vec<Value>),
    Severity {
        gte: Option<Severity>,
        lte: Option<Severity>,
    },
}

const FILTERABLE: [&str; 12] = [
    "id", "type", "subject", "source", "agent", "session", "run", "step", "epoch", "cause",
    "severity", "capture",
];

impl Filter {
    /// Parses and validates a filter object; fails closed on any unknown key or shape.
    pub(crate) fn parse(value: &Value) -> Result<Filter, String> {
        let Some(object) = value.as_object() else {
            return Err("filter must be a JSON object".into());
        };
        let mut members = Vec::with_capacity(object.len());
        for (key, pred) in object {
            if matches!(key.as_str(), "time" | "seq" | "aep" | "data" | "traceparent") {
                return Err(format!("attribute not filterable: {key}"));
            }
            if !FILTERABLE.contains(&key.as_str())
                && aep_core::event::check_extension_name(key).is_err()
            {
                return Err(format!("unknown filter key: {key}"));
            }
            if key == "severity" {
                if let Some(cmp) = pred.as_object() {
                    let bound = |k: &str| -> Result<Option<Severity>, String> {
                        match cmp.get(k) {
                            None => Ok(None),
                            Some(v) => v
                                .as_str()
                                .and_then(|s| s.parse().ok())
                                .map(Some)
                                .ok_or_else(|| format!("unknown severity level: {v}")),
                        }
                    };
                    if cmp.keys().any(|k| k != "gte" && k != "lte") || cmp.is_empty() {
                        return Err("severity comparison allows gte/lte only".into());
                    }
                    let (gte, lte) = (bound("gte")?, bound("lte")?);
                    members.push((key.clone(), Predicate::Severity { gte, lte }));
                    continue;
                }
            }
            let alternatives = match pred {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            if alternatives.is_empty() {
                return Err(format!("empty inclusion array on {key}"));
            }
            for alt in &alternatives {
                match alt {
                    Value::String(s) if s.contains('*') => {
                        if key != "type" {
                            return Err(format!("glob patterns are only legal on \"type\" ({key})"));
                        }
                        let prefix = s.strip_suffix(".*").unwrap_or("");
                        if prefix.is_empty()
                            || prefix.split('.').any(|seg| {
                                seg.is_empty()
                                    || !seg.bytes().all(|b| {
                                        b.is_ascii_lowercase()
                                            || b.is_ascii_digit()
                                            || b == b'_'
                                            || b == b'-'
                                    })
                            })
                        {
                            return Err(format!("bad type pattern: {s} (form: prefix.*)"));
                        }
                    }
                    Value::String(_) | Value::Number(_) | Value::Bool(_) => {}
                    _ => return Err(format!("predicate values must be scalars ({key})")),
                }
            }
            members.push((key.clone(), Predicate::AnyOf(alternatives)));
        }
        Ok(Filter { members })
    }

    /// Whether the filter is `{}` (matches everything without looking).
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The `session` equality member, when the filter names one session.
    pub(crate) fn session(&self) -> Option<&str> {
        self.members.iter().find_map(|(k, p)| match p {
            Predicate::AnyOf(alts) if k == "session" && alts.len() == 1 => alts[0].as_str(),
            _ => None,
        })
    }

    /// Whether `event` matches every member (AEP-0003 §6.2).
    pub(crate) fn matches(&self, event: &Event) -> bool {
        self.members.iter().all(|(key, pred)| match pred {
            Predicate::Severity { gte, lte } => {
                let s = event.severity();
                gte.is_none_or(|g| s >= g) && lte.is_none_or(|l| s <= l)
            }
            Predicate::AnyOf(alts) => {
                let value: Option<Value> = match key.as_str() {
                    "id" => Some(event.id().into()),
                    "type" => Some(event.event_type().into()),
                    "subject" => event.subject().map(Into::into),
                    "source" => Some(event.source().into()),
                    "agent" => Some(event.agent().into()),
                    "session" => event.session().map(Into::into),
                    "run" => event.run().map(Into::into),
                    "step" => event.step().map(Into::into),
                    "epoch" => Some(event.epoch().into()),
                    "cause" => event.cause().map(Into::into),
                    "severity" => Some(event.severity().as_str().into()),
                    "capture" => Some(event.capture().as_str().into()),
                    other => event.extension(other),
                };
                let Some(value) = value else { return false };
                alts.iter().any(|alt| match (key.as_str(), alt, &value) {
                    ("type", Value::String(p), Value::String(t)) if p.ends_with(".*") => {
                        t.starts_with(&p[..p.len() - 1])
                    }
                    _ => *alt == value,
                })
            }
        })
    }
}

// ---- capture ----------------------------------------------------------------------

/// Down-levels `event` to a subscription's capture ceiling (AEP-0003 §6.4, AEP-0001
/// §8.2); `None` when the event already sits at or below it and goes out unchanged.
// TODO(core): use aep_core::capture when merged. Until then the conservative direction:
// below `full` the whole `data` is dropped rather than pruned field by field.
pub(crate) fn downlevel(event: &Event, ceiling: Capture) -> Option<Event> {
    let held = event.capture();
    if ceiling >= held {
        return None;
    }
    let target = if ceiling == Capture::Redacted && held == Capture::Full {
        Capture::Metadata
    } else {
        ceiling
    };
    let mut out = event.clone();
    out.set_capture(Some(target));
    out.set_data_raw(None);
    Some(out)
}

// ---- resume positions --------------------------------------------------------------

/// One `from` resume position (AEP-0003 §7): replay strictly after `(epoch, seq)`;
/// `seq` -1 asks for the session from its earliest held event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FromPosition {
    pub(crate) session: String,
    pub(crate) epoch: u64,
    pub(crate) seq: i64,
}

/// Reads a `from` array; a malformed member refuses the whole request (fail closed).
// TODO(core): use aep_core::resume when merged.
pub(crate) fn parse_from(value: &Value) -> Result<Vec<FromPosition>, String> {
    let Some(items) = value.as_array() else {
        return Err("from must be an array of resume positions or the string \"all\"".into());
    };
    items
        .iter()
        .map(|item| {
            let bad = || format!("bad resume position: {item}");
            let object = item.as_object().ok_or_else(bad)?;
            let session = object.get("session").and_then(Value::as_str).ok_or_else(bad)?;
            let epoch = match object.get("epoch") {
                None => 0,
                Some(v) => v.as_u64().ok_or_else(bad)?,
            };
            let seq = match object.get("seq") {
                None => -1,
                Some(v) => v.as_i64().filter(|s| *s >= -1).ok_or_else(bad)?,
            };
            Ok(FromPosition {
                session: session.to_owned(),
                epoch,
                seq,
            })
        })
        .collect()
}

/// Reads a `Last-Event-ID` header, `{session}:{epoch}:{seq}` (AEP-0003 §3.3.2).
pub(crate) fn parse_last_event_id(value: &str) -> Option<FromPosition> {
    let (rest, seq) = value.rsplit_once(':')?;
    let (session, epoch) = rest.rsplit_once(':')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if session.is_empty() || !digits(epoch) || !digits(seq) {
        return None;
    }
    Some(FromPosition {
        session: session.to_owned(),
        epoch: epoch.parse().ok()?,
        seq: seq.parse().ok()?,
    })
}

// ---- frames and discovery ------------------------------------------------------------

/// The capabilities this relay declares in `hello` and discovery (AEP-0003 §3.4, §4).
// TODO(core): use aep_core::frame when merged.
pub(crate) fn capabilities(config: &RelayConfig) -> Value {
    json!({
        "filters": ["attr-match"],
        "replay": { "buffer": config.buffer, "all": true },
        "capture": ["none", "metadata", "redacted", "full"],
        "control": { "accepts": [] },
        "roster": {},
        "experimental": {},
    })
}

/// The discovery document (AEP-0003 §3.4).
pub(crate) fn discovery(config: &RelayConfig) -> Value {
    json!({
        "aep": ["0.1"],
        "role": "collector",
        "endpoints": { "events": "/events", "stream": "/stream", "socket": "/socket" },
        "capabilities": capabilities(config),
    })
}

/// The relay's `hello` reply: exactly one selected version (AEP-0003 §4 rule 1).
pub(crate) fn hello_reply(config: &RelayConfig) -> Value {
    json!({
        "type": "hello",
        "versions": ["0.1"],
        "role": "both",
        "identity": { "agent": "aep-relay" },
        "capabilities": capabilities(config),
    })
}

/// Whether a client `hello` offers a version this relay speaks.
pub(crate) fn offers_supported_version(hello: &Value) -> bool {
    hello
        .get("versions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|x| x == "0.1"))
}

/// An `error` frame (AEP-0003 §2, §6.5; AEP-0004 §4.2). `id` echoes a request, `cause`
/// names the command or event refused.
pub(crate) fn error_frame(
    code: &str,
    id: Option<&Value>,
    cause: Option<&str>,
    detail: Option<&str>,
) -> Value {
    let mut frame = Map::new();
    frame.insert("type".into(), "error".into());
    if let Some(id) = id {
        frame.insert("id".into(), id.clone());
    }
    frame.insert("code".into(), code.into());
    if let Some(cause) = cause {
        frame.insert("cause".into(), cause.into());
    }
    if let Some(detail) = detail {
        frame.insert("detail".into(), detail.into());
    }
    Value::Object(frame)
}

/// The `version-unsupported` refusal, listing the versions spoken (AEP-0003 §4 rule 1).
pub(crate) fn version_unsupported_frame() -> Value {
    json!({ "type": "error", "code": "version-unsupported", "versions": ["0.1"] })
}

/// A `replay-exhausted` frame (AEP-0003 §5).
pub(crate) fn replay_exhausted_frame(sub: &Value, session: &str, epoch: u64, seq: u64) -> Value {
    json!({
        "type": "replay-exhausted",
        "sub": sub,
        "session": session,
        "earliest": { "epoch": epoch, "seq": seq },
    })
}

/// The SSE comment that declares the same gap (AEP-0003 §3.3.3).
pub(crate) fn replay_exhausted_comment(session: &str, epoch: u64, seq: u64) -> String {
    format!(": replay-exhausted {session} {epoch}:{seq}\n\n")
}

/// A `closing` frame with the last delivered positions (AEP-0003 §3.5.4).
pub(crate) fn closing_frame(reason: &str, delivered: Vec<Value>) -> Value {
    json!({ "type": "closing", "reason": reason, "delivered": delivered })
}

/// Whether a WebSocket text frame is an Event rather than a frame: its `type` has a dot
/// (AEP-0003 §2).
pub(crate) fn is_event_frame(message: &Value) -> bool {
    message
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.contains('.'))
}
