//! The OpenCode plugin bus, shared by OpenCode and its fork Kilo Code (which carries
//! the OpenCode table whole on its own identity): one mapping, the vendor token and
//! the fork's extra moments as parameters.

use aep_core::Severity;
use serde_json::{json, Value};

use crate::channel::ChannelMode;
use crate::draft::Draft;
use crate::family::{self, client, held_permission, requested};
use crate::form;
use crate::json::{at, get, s, s_at};
use crate::naming::{snake, vendor_type};

/// Which vendor and which of its surfaces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bus {
    /// The vendor token and client name.
    pub(crate) vendor: &'static str,
    /// Whether the `>=7.4.6` Kilo Code ask/settle moments (`permission.asked`,
    /// `question.asked`, `question.replied`) are known.
    pub(crate) asks: bool,
}

impl Bus {
    /// Maps one plugin moment: `{kind: "bus", event}`, `{kind: "tool.before" |
    /// "tool.after", input, output}` or `{kind: "permission.ask", permission}`.
    pub(crate) fn map(self, p: &Value) -> Vec<Draft> {
        match s(p, "kind") {
            Some(kind @ ("tool.before" | "tool.after")) => {
                let input = get(p, "input").unwrap_or(&Value::Null);
                let (name, call) = (s(input, "tool").unwrap_or("unknown"), s(input, "callID"));
                let d = if kind == "tool.before" {
                    requested(name, call, at(p, &["output", "args"]))
                } else {
                    // The typed hook payload has no error surface: always a completion.
                    family::completed(name, call, at(p, &["output", "output"]))
                };
                vec![d.on_session(s(input, "sessionID"))]
            }
            Some("permission.ask") => {
                let perm = get(p, "permission").unwrap_or(&Value::Null);
                let d = held_permission(
                    self.vendor,
                    s(perm, "type").unwrap_or("unknown"),
                    s(perm, "title").or(s(perm, "pattern")),
                )
                .with_attention_key(s(perm, "id"))
                .on_session(s(perm, "sessionID"));
                vec![d]
            }
            _ => {
                let event = get(p, "event").unwrap_or(p);
                self.event(event, ChannelMode::Primary, true)
                    .into_iter()
                    .collect()
            }
        }
    }

    /// Maps one bus event. `plugin`: the plugin adapter's surface (permission asks held
    /// and answerable; the bus's own `permission.updated` silent against the held hook);
    /// otherwise the SSE channel in `mode`.
    pub(crate) fn event(self, e: &Value, mode: ChannelMode, plugin: bool) -> Option<Draft> {
        let ty = s(e, "type").unwrap_or("unknown");
        let props = get(e, "properties").unwrap_or(&Value::Null);
        let session = s(props, "sessionID")
            .or(s_at(props, &["info", "sessionID"]))
            .or(s_at(props, &["info", "id"]));
        let family_type = vendor_type(
            self.vendor,
            &ty.split('.').map(snake).collect::<Vec<_>>().join("."),
        );
        let mapped = self.primary(ty, props, &family_type, plugin);
        let d = match mode {
            ChannelMode::Primary => mapped?,
            // The companion channel: only the channel-visible vendor family; moments the
            // primary mapping keeps vendor-scoped keep their shape.
            ChannelMode::Companion => match mapped {
                Some(d) if d.event_type().starts_with("x.") => d,
                _ => Draft::new(family_type).severity(Severity::Debug),
            },
        };
        Some(d.on_session(session))
    }

    fn primary(self, ty: &str, props: &Value, family_type: &str, plugin: bool) -> Option<Draft> {
        let vendor = self.vendor;
        let info = get(props, "info").unwrap_or(&Value::Null);
        Some(match ty {
            "session.created" => {
                let parent = s(info, "parentID");
                Draft::new("session.started")
                    .meta("client", client(vendor, s(info, "version")))
                    .meta_opt("parent", parent.map(|p| json!({"session": p})))
                    .content_opt("label", get(info, "title").cloned())
                    .content_opt("cwd", get(info, "directory").cloned())
            }
            "session.deleted" => family::ended_normal(),
            "session.idle" => Draft::new("run.finished"),
            "session.compacted" => Draft::new("session.compacted"),
            "session.status" => Draft::new("progress.status")
                .content_opt("message", at(props, &["status", "message"]).cloned())
                .subject_opt(s_at(props, &["status", "type"])),
            // Vendor-scoped at error severity: OpenCode does not say whether the turn
            // dies, and run.failed would assert exactly that.
            "session.error" => Draft::new(format!("x.{vendor}.session.error"))
                .meta_opt("type", at(props, &["error", "name"]).cloned())
                .content_opt("message", at(props, &["error", "data", "message"]).cloned())
                .severity(Severity::Error),
            "message.updated" => match s(info, "role") {
                Some("user") => family::run_started(None),
                role => Draft::new(format!("x.{vendor}.message.updated"))
                    .meta_opt("role", role.map(|r| json!(r)))
                    .usage(
                        at(info, &["tokens", "input"]),
                        at(info, &["tokens", "output"]),
                    )
                    .severity(Severity::Debug),
            },
            // The held `permission.ask` hook carries this moment on the plugin surface.
            "permission.updated" if plugin => return None,
            "permission.updated" => read_only_permission(vendor, props),
            "permission.replied" => Draft::new("attention.resolved")
                .meta("resolution", json!("answered"))
                .subject_opt(s(props, "permissionID"))
                .with_attention_key(s(props, "permissionID")),
            "permission.asked" if self.asks => {
                let d = read_only_permission(vendor, props);
                if plugin {
                    // The >=7.4.6 reply route's own enum, verbatim.
                    d.meta(
                        "options",
                        json!([
                            {"id": "once", "label": "Allow once"},
                            {"id": "always", "label": "Always allow"},
                            {"id": "reject", "label": "Reject"}
                        ]),
                    )
                    .meta("respond_via", json!(["control"]))
                } else {
                    d
                }
            }
            "question.asked" if self.asks => {
                let fields =
                    form::ask_user_question(get(props, "questions").unwrap_or(&Value::Null), true);
                let (content, structural) = form::fields(&fields);
                let d = Draft::new("attention.requested")
                    .meta("kind", json!("form"))
                    .meta("prompt", json!(form::asks(vendor, fields.len())))
                    .both("fields", content, structural)
                    .subject_opt(s(props, "id"))
                    .with_attention_key(s(props, "id"));
                if plugin {
                    d.meta("respond_via", json!(["control"]))
                } else {
                    d
                }
            }
            "question.replied" if self.asks => Draft::new("attention.resolved")
                .meta("resolution", json!("answered"))
                .subject_opt(s(props, "requestID"))
                .with_attention_key(s(props, "requestID")),
            // A snapshot, not a transition: the session runtime diffs consecutive
            // snapshots ([`diff_todos`]).
            "todo.updated" => return None,
            "file.edited" => Draft::new(format!("x.{vendor}.file.edited"))
                .content_opt("file", get(props, "file").cloned())
                .severity(Severity::Debug),
            "command.executed" => Draft::new(format!("x.{vendor}.command.executed"))
                .meta_opt("name", get(props, "name").cloned())
                .content_opt("arguments", get(props, "arguments").cloned())
                .severity(Severity::Debug),
            _ => Draft::new(family_type.to_owned()).severity(Severity::Debug),
        })
    }
}

/// The bus's permission ask as a card with no answer affordance (read-only).
fn read_only_permission(vendor: &str, props: &Value) -> Draft {
    family::permission(
        vendor,
        s(props, "type").unwrap_or("unknown"),
        s(props, "title").or(s(props, "pattern")),
    )
    .with_attention_key(s(props, "id"))
}

/// The transitions between two todo snapshots: a new id is planned, a move to
/// `completed` completes; removals and other churn stay silent (the registry has no
/// snapshot type). Task content is gated `redacted`.
pub(crate) fn diff_todos(prev: &Value, next: &Value) -> Vec<Draft> {
    let empty = Vec::new();
    let prev = prev.as_array().unwrap_or(&empty);
    let status_of = |id: &str| {
        prev.iter()
            .find(|t| s(t, "id") == Some(id))
            .map(|t| s(t, "status").unwrap_or(""))
    };
    let mut out = Vec::new();
    for todo in next.as_array().unwrap_or(&empty) {
        let Some(id) = s(todo, "id") else { continue };
        let title = get(todo, "content").cloned().unwrap_or(Value::Null);
        let before = status_of(id);
        if before.is_none() {
            out.push(
                Draft::new("progress.task.planned")
                    .content_in(&["task", "title"], title.clone())
                    .subject(id),
            );
        }
        if s(todo, "status") == Some("completed") && before != Some("completed") {
            out.push(
                Draft::new("progress.task.completed")
                    .content_in(&["task", "title"], title)
                    .subject(id),
            );
        }
    }
    out
}
