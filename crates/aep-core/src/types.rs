//! Event types and what the registry says about them (AEP-0001 §6, AEP-0002 §3-4).
//!
//! An [`EventType`] is a parsed view of a `type` string: its category, its vendor (for
//! `x.{vendor}.{category}.{rest}` types), and the scoping facts every other module asks
//! about: is it a command, an ack, agent-scoped, a foreign-emitter event? The registry of
//! AEP-0002 §4 is [`REGISTRY`]; a test keeps it equal to
//! `fixtures/schemas/registry/types.json`.

use std::fmt;

/// The thirteen registered categories of AEP-0002 §3 (the `x` vendor namespace is not
/// a category of its own: a vendor type carries one of these after its vendor token,
/// or any other lowercase token).
pub const CATEGORIES: [&str; 13] = [
    "agent",
    "session",
    "run",
    "progress",
    "tool",
    "delegation",
    "attention",
    "resource",
    "error",
    "state",
    "assessment",
    "message",
    "control",
];

/// The core command types a relay routes to a session's owner (AEP-0004 §2).
pub const CORE_COMMANDS: [&str; 4] = [
    "control.attention.respond",
    "control.cancel",
    "control.pause",
    "control.resume",
];

/// Why a `type` string is outside the AEP-0001 §6 grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("type `{0}` is outside the AEP-0001 §6 grammar: a registered category followed by one or more dot-separated [a-z0-9_] segments, or x.{{vendor}}.{{category}}.{{rest}}")]
pub struct TypeSyntaxError(String);

impl TypeSyntaxError {
    /// The refused type string.
    pub fn type_str(&self) -> &str {
        &self.0
    }
}

/// A well-formed AEP event type, borrowed from its string.
///
/// ```
/// use aep_core::types::EventType;
///
/// let t = EventType::parse("x.claude-code.session.config_change")?;
/// assert_eq!(t.vendor(), Some("claude-code"));
/// assert_eq!(t.category(), "session");
/// assert_eq!(t.rest(), "config_change");
///
/// let cmd = EventType::parse("control.cancel")?;
/// assert!(cmd.is_command() && !cmd.is_ack());
/// assert!(EventType::parse("agent.heartbeat")?.is_agent_scoped());
/// assert!(EventType::parse("attention.routed")?.is_foreign_emitter());
/// assert!(EventType::parse("Tool.Completed").is_err());
/// # Ok::<(), aep_core::types::TypeSyntaxError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventType<'a> {
    raw: &'a str,
    /// Byte range of the vendor token, for `x.` types.
    vendor: Option<(usize, usize)>,
    /// Byte offset where the category starts.
    category_at: usize,
    /// Byte offset where the rest starts (after the category's dot).
    rest_at: usize,
}

fn is_segment(s: &str, allow_dash: bool) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || (allow_dash && b == b'-')
        })
}

impl<'a> EventType<'a> {
    /// Parses a `type` string against the AEP-0001 §6 grammar (the envelope schema's
    /// `type` pattern).
    pub fn parse(raw: &'a str) -> Result<EventType<'a>, TypeSyntaxError> {
        let err = || TypeSyntaxError(raw.to_owned());
        let mut segments = raw.split('.');
        let first = segments.next().ok_or_else(err)?;
        if first == "x" {
            let vendor = segments.next().ok_or_else(err)?;
            let category = segments.next().ok_or_else(err)?;
            let mut rest_count = 0;
            for s in segments {
                if !is_segment(s, false) {
                    return Err(err());
                }
                rest_count += 1;
            }
            if !is_segment(vendor, true) || !is_segment(category, false) || rest_count == 0 {
                return Err(err());
            }
            let category_at = 2 + vendor.len() + 1;
            Ok(EventType {
                raw,
                vendor: Some((2, 2 + vendor.len())),
                category_at,
                rest_at: category_at + category.len() + 1,
            })
        } else {
            if !CATEGORIES.contains(&first) {
                return Err(err());
            }
            let mut rest_count = 0;
            for s in segments {
                if !is_segment(s, false) {
                    return Err(err());
                }
                rest_count += 1;
            }
            if rest_count == 0 {
                return Err(err());
            }
            Ok(EventType {
                raw,
                vendor: None,
                category_at: 0,
                rest_at: first.len() + 1,
            })
        }
    }

    /// The whole type string.
    pub fn as_str(&self) -> &'a str {
        self.raw
    }

    /// The vendor token of an `x.{vendor}.…` type.
    pub fn vendor(&self) -> Option<&'a str> {
        self.vendor.map(|(a, b)| &self.raw[a..b])
    }

    /// Whether this is a vendor extension type.
    pub fn is_vendor(&self) -> bool {
        self.vendor.is_some()
    }

    /// The category token (for vendor types, the one after the vendor).
    pub fn category(&self) -> &'a str {
        &self.raw[self.category_at..self.rest_at - 1]
    }

    /// Everything after the category's dot.
    pub fn rest(&self) -> &'a str {
        &self.raw[self.rest_at..]
    }

    /// The type with any `x.{vendor}.` prefix removed: `{category}.{rest}`.
    pub fn bare(&self) -> &'a str {
        &self.raw[self.category_at..]
    }

    /// Whether this is a command delivered to a session's owner: a core command
    /// (AEP-0004 §2) or any vendor `x.{vendor}.control.*` type.
    pub fn is_command(&self) -> bool {
        match self.vendor {
            Some(_) => self.category() == "control",
            None => CORE_COMMANDS.contains(&self.raw),
        }
    }

    /// Whether this is a command acknowledgement: `control.accepted` or
    /// `control.rejected` (AEP-0004 §3).
    pub fn is_ack(&self) -> bool {
        matches!(self.raw, "control.accepted" | "control.rejected")
    }

    /// Whether this is agent-scoped (`agent.*`): no `session`, `run`, `step` or `seq`
    /// (AEP-0001 §5.2).
    pub fn is_agent_scoped(&self) -> bool {
        self.vendor.is_none() && self.category() == "agent"
    }

    /// Whether this is a foreign-emitter session event: carries `session` but never
    /// `seq`, because its emitter does not own the session's counter (AEP-0001 §5.2):
    /// commands and `attention.routed`.
    pub fn is_foreign_emitter(&self) -> bool {
        self.is_command() || self.raw == "attention.routed"
    }

    /// Whether events of this type must carry `session` and `seq`.
    pub fn is_sequenced(&self) -> bool {
        !self.is_agent_scoped() && !self.is_foreign_emitter()
    }

    /// The registry entry, for registered core types.
    pub fn registered(&self) -> Option<&'static RegisteredType> {
        lookup(self.raw)
    }
}

impl fmt::Display for EventType<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw)
    }
}

/// Registration status of a core type (AEP-0002 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeStatus {
    /// Every conformant emitter of the category emits it.
    Mandatory,
    /// Registered, emitted when it applies.
    Optional,
    /// Name reserved; the payload is deferred.
    Reserved,
}

/// Who emits a type, and so which scoping rules apply (AEP-0002 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeScope {
    /// Emitted by the session's owner, sequenced.
    Session,
    /// About the emitter itself; no session (AEP-0001 §5.2).
    Agent,
    /// Sent to a session's owner (AEP-0004).
    Command,
}

/// One row of the type registry (`fixtures/schemas/registry/types.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisteredType {
    /// The type string.
    pub name: &'static str,
    /// Registration status.
    pub status: TypeStatus,
    /// Scope.
    pub scope: TypeScope,
    /// The payload schema file under `schemas/types/`, when the payload is specified.
    pub schema: Option<&'static str>,
    /// One-line semantics.
    pub summary: &'static str,
}

/// Looks a type string up in the registry.
///
/// ```
/// use aep_core::types::{lookup, TypeScope};
/// assert_eq!(lookup("control.pause").map(|t| t.scope), Some(TypeScope::Command));
/// assert!(lookup("x.acme.tool.synced").is_none());
/// ```
pub fn lookup(name: &str) -> Option<&'static RegisteredType> {
    REGISTRY.iter().find(|t| t.name == name)
}

/// Every registered core type of AEP 0.1, in registry order.
pub static REGISTRY: &[RegisteredType] = &[
    RegisteredType {
        name: "session.started",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("session.started.schema.json"),
        summary: "a session began; carries lineage and client info",
    },
    RegisteredType {
        name: "session.ended",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("session.ended.schema.json"),
        summary: "terminal for a session",
    },
    RegisteredType {
        name: "run.started",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("run.started.schema.json"),
        summary: "an activation began within the session",
    },
    RegisteredType {
        name: "run.finished",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("run.finished.schema.json"),
        summary: "run reached success",
    },
    RegisteredType {
        name: "run.failed",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("run.failed.schema.json"),
        summary: "run reached failure (incl. rejection)",
    },
    RegisteredType {
        name: "run.cancelled",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("run.cancelled.schema.json"),
        summary: "run was cancelled — not a failure",
    },
    RegisteredType {
        name: "tool.requested",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("tool.requested.schema.json"),
        summary: "tool invocation about to execute",
    },
    RegisteredType {
        name: "tool.completed",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("tool.completed.schema.json"),
        summary: "tool invocation succeeded",
    },
    RegisteredType {
        name: "tool.failed",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("tool.failed.schema.json"),
        summary: "tool invocation errored",
    },
    RegisteredType {
        name: "tool.denied",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("tool.denied.schema.json"),
        summary: "tool invocation blocked pre-execution, no human loop",
    },
    RegisteredType {
        name: "attention.requested",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("attention.requested.schema.json"),
        summary: "the agent needs a human or policy delegate",
    },
    RegisteredType {
        name: "attention.answered",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("attention.answered.schema.json"),
        summary: "a response to the request was produced",
    },
    RegisteredType {
        name: "attention.resolved",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("attention.resolved.schema.json"),
        summary: "the request lifecycle closed",
    },
    RegisteredType {
        name: "attention.timeout",
        status: TypeStatus::Mandatory,
        scope: TypeScope::Session,
        schema: Some("attention.timeout.schema.json"),
        summary: "the request expired unanswered — terminal",
    },
    RegisteredType {
        name: "session.compacted",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("session.compacted.schema.json"),
        summary: "context compaction occurred; emitted once at completion",
    },
    RegisteredType {
        name: "run.step.started",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("run.step.started.schema.json"),
        summary: "sub-run phase began; sets envelope step",
    },
    RegisteredType {
        name: "run.step.finished",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("run.step.finished.schema.json"),
        summary: "sub-run phase ended",
    },
    RegisteredType {
        name: "progress.status",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("progress.status.schema.json"),
        summary: "free-form progress heartbeat for a run",
    },
    RegisteredType {
        name: "progress.task.planned",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("progress.task.planned.schema.json"),
        summary: "plan item created",
    },
    RegisteredType {
        name: "progress.task.completed",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("progress.task.completed.schema.json"),
        summary: "plan item completed",
    },
    RegisteredType {
        name: "progress.artifact.produced",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("progress.artifact.produced.schema.json"),
        summary: "an output artifact exists",
    },
    RegisteredType {
        name: "delegation.subagent.started",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("delegation.subagent.started.schema.json"),
        summary: "subagent lifecycle start",
    },
    RegisteredType {
        name: "delegation.subagent.stopped",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("delegation.subagent.stopped.schema.json"),
        summary: "subagent lifecycle stop",
    },
    RegisteredType {
        name: "attention.routed",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("attention.routed.schema.json"),
        summary: "a router/sink delivered the request onward (emitted by consumers)",
    },
    RegisteredType {
        name: "agent.presence",
        status: TypeStatus::Optional,
        scope: TypeScope::Agent,
        schema: Some("agent.presence.schema.json"),
        summary: "emitter presence changed",
    },
    RegisteredType {
        name: "agent.idle",
        status: TypeStatus::Optional,
        scope: TypeScope::Agent,
        schema: Some("agent.idle.schema.json"),
        summary: "agent became idle/awaiting work",
    },
    RegisteredType {
        name: "agent.health",
        status: TypeStatus::Optional,
        scope: TypeScope::Agent,
        schema: Some("agent.health.schema.json"),
        summary: "health report",
    },
    RegisteredType {
        name: "agent.heartbeat",
        status: TypeStatus::Optional,
        scope: TypeScope::Agent,
        schema: Some("agent.heartbeat.schema.json"),
        summary: "liveness tick",
    },
    RegisteredType {
        name: "error.raised",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("error.raised.schema.json"),
        summary: "fault outside tool/run terminals",
    },
    RegisteredType {
        name: "state.snapshot",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("state.snapshot.schema.json"),
        summary: "agent-owned state image",
    },
    RegisteredType {
        name: "state.delta",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("state.delta.schema.json"),
        summary: "agent-owned state JSON-Patch delta",
    },
    RegisteredType {
        name: "resource.retrieval.requested",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("resource.retrieval.requested.schema.json"),
        summary: "a retrieval against an external corpus is about to run (experimental)",
    },
    RegisteredType {
        name: "resource.retrieval.returned",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("resource.retrieval.returned.schema.json"),
        summary: "a retrieval produced documents with provenance (experimental)",
    },
    RegisteredType {
        name: "resource.retrieval.reranked",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("resource.retrieval.reranked.schema.json"),
        summary: "a rerank scored/reordered retrieved documents (experimental)",
    },
    RegisteredType {
        name: "resource.citation.recorded",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("resource.citation.recorded.schema.json"),
        summary: "a produced answer's citations: which claims cite which source spans (experimental)",
    },
    RegisteredType {
        name: "assessment.evaluation.recorded",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("assessment.evaluation.recorded.schema.json"),
        summary: "an automated/LLM-judge evaluation result about work (experimental)",
    },
    RegisteredType {
        name: "assessment.feedback.received",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("assessment.feedback.received.schema.json"),
        summary: "a human feedback signal about work: rating, label, comment, correction (experimental)",
    },
    RegisteredType {
        name: "assessment.guardrail.recorded",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("assessment.guardrail.recorded.schema.json"),
        summary: "an automated content-safety verdict already taken: a guardrail/filter fired on an input or output (experimental)",
    },
    RegisteredType {
        name: "message.user.submitted",
        status: TypeStatus::Reserved,
        scope: TypeScope::Session,
        schema: None,
        summary: "reserved for the message sub-profile (future AEP)",
    },
    RegisteredType {
        name: "message.agent.replied",
        status: TypeStatus::Reserved,
        scope: TypeScope::Session,
        schema: None,
        summary: "reserved for the message sub-profile (future AEP)",
    },
    RegisteredType {
        name: "control.attention.respond",
        status: TypeStatus::Optional,
        scope: TypeScope::Command,
        schema: Some("control.attention.respond.schema.json"),
        summary: "deliver an answer to an attention request (experimental profile)",
    },
    RegisteredType {
        name: "control.cancel",
        status: TypeStatus::Optional,
        scope: TypeScope::Command,
        schema: Some("control.cancel.schema.json"),
        summary: "request cancellation of a run or session (experimental profile)",
    },
    RegisteredType {
        name: "control.pause",
        status: TypeStatus::Optional,
        scope: TypeScope::Command,
        schema: Some("control.pause.schema.json"),
        summary: "request pause (experimental profile)",
    },
    RegisteredType {
        name: "control.resume",
        status: TypeStatus::Optional,
        scope: TypeScope::Command,
        schema: Some("control.resume.schema.json"),
        summary: "request resume (experimental profile)",
    },
    RegisteredType {
        name: "control.accepted",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("control.accepted.schema.json"),
        summary: "target will attempt the command; cause = command id (experimental profile)",
    },
    RegisteredType {
        name: "control.rejected",
        status: TypeStatus::Optional,
        scope: TypeScope::Session,
        schema: Some("control.rejected.schema.json"),
        summary: "target will not attempt the command; cause = command id (experimental profile)",
    },];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_matches_types_json() {
        let text = include_str!("../../../fixtures/schemas/registry/types.json");
        let doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let rows = doc["types"].as_array().unwrap();
        assert_eq!(rows.len(), REGISTRY.len());
        for (row, reg) in rows.iter().zip(REGISTRY) {
            assert_eq!(row["type"], reg.name);
            assert_eq!(row["schema"].as_str(), reg.schema);
            let scope = match reg.scope {
                TypeScope::Session => "session",
                TypeScope::Agent => "agent",
                TypeScope::Command => "command",
            };
            assert_eq!(row["scope"], scope);
            let status = match reg.status {
                TypeStatus::Mandatory => "mandatory",
                TypeStatus::Optional => "optional",
                TypeStatus::Reserved => "reserved",
            };
            assert_eq!(row["status"], status);
            assert_eq!(row["summary"], reg.summary);
        }
        let cats = include_str!("../../../fixtures/schemas/registry/categories.json");
        let cats: serde_json::Value = serde_json::from_str(cats).unwrap();
        let names: Vec<&str> = cats["categories"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .filter(|n| *n != "x")
            .collect();
        assert_eq!(names, CATEGORIES);
    }

    #[test]
    fn command_scope_agrees_with_registry() {
        for t in REGISTRY {
            let parsed = EventType::parse(t.name).unwrap();
            assert_eq!(
                parsed.is_command(),
                t.scope == TypeScope::Command,
                "{}",
                t.name
            );
            assert_eq!(
                parsed.is_agent_scoped(),
                t.scope == TypeScope::Agent,
                "{}",
                t.name
            );
            assert_eq!(parsed.registered(), Some(t));
        }
    }

    #[test]
    fn grammar() {
        for ok in [
            "tool.completed",
            "run.step.started",
            "x.acme.tool.synced",
            "x.claude-code.session.config_change",
            "x.acme.widget.a.b",
            "x.acme.control.reboot",
        ] {
            assert!(EventType::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "tool",
            "tool.",
            ".tool",
            "tool..completed",
            "Tool.completed",
            "widget.spun",
            "x.acme.tool",
            "x..tool.a",
            "x.acme.to-ol.a",
            "tool.comp-leted",
            "tool.completed ",
            "x",
        ] {
            assert!(EventType::parse(bad).is_err(), "{bad}");
        }
        let v = EventType::parse("x.acme.control.reboot").unwrap();
        assert!(v.is_command() && v.is_foreign_emitter() && !v.is_sequenced());
        assert_eq!(v.bare(), "control.reboot");
        let agent = EventType::parse("x.acme.agent.ping").unwrap();
        assert!(
            !agent.is_agent_scoped(),
            "only core agent.* is agent-scoped"
        );
        assert!(EventType::parse("control.accepted").unwrap().is_ack());
        assert!(EventType::parse("control.accepted").unwrap().is_sequenced());
    }
}
