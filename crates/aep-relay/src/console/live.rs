//! `GET /console/api/live`: the console's state to one page, as newline-delimited
//! JSON messages: the first whole, each later one what changed since the page's last.
//!
//! A message is built only when the page's connection takes the previous one, so a
//! page that reads slowly gets fewer, larger messages, never a queue: what changed is
//! read from the state (a version per session), not buffered per page.
//!
//! A message: `generation` (a new one means "take the state whole": `full` is then
//! set), `sessions` (summaries matching the page's filter), `gone` (keys that changed
//! and no longer match), `inbox` (every pending request of the fleet, oldest first, at
//! most [`INBOX_MAX`]; only when it changed), `roster` (the claimants and what they
//! accept; only when it changed), `watched` (the session the page has open, in detail,
//! when it changed), `counts`, and `control` (whether the relay routes commands: it
//! needs a token, AEP-0004 §4.1).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use aep_core::frame::RosterEntry;
use aep_core::projection::SessionSummary;
use aep_core::subscription::TypePattern;
use aep_core::Severity;
use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::engine::{Engine, Key, SessionIndex, State};
use super::json_response;
use super::Console;
use crate::hub::Hub;

/// The most inbox entries one message carries (`inbox_total` says how many there are).
pub(crate) const INBOX_MAX: usize = 500;

/// Between messages when nothing changes: a page (and any proxy) knows the stream lives.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// Between two progress lines while the state reads the store.
const PROGRESS: Duration = Duration::from_secs(1);

/// The page's session filter: every given part must match.
#[derive(Debug, Default)]
struct SessionFilter {
    /// A case-insensitive part of the agent.
    agent: Option<String>,
    /// A type pattern (the subscription model's, `tool.*`) one folded type matches.
    types: Option<TypePattern>,
    /// The least severity one folded event reached.
    severity: Option<Severity>,
    /// A case-insensitive part of the source, session, agent, last type or a pending
    /// request's prompt.
    text: Option<String>,
}

impl SessionFilter {
    fn parse(query: &HashMap<String, String>) -> Result<SessionFilter, String> {
        let given = |name: &str| query.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        Ok(SessionFilter {
            agent: given("agent").map(str::to_lowercase),
            types: given("type")
                .map(|t| {
                    TypePattern::parse(t)
                        .map_err(|e| format!("`type` {t:?} is not a type pattern: {e}"))
                })
                .transpose()?,
            severity: given("severity")
                .map(|s| {
                    s.parse::<Severity>().map_err(|_| {
                        format!("`severity` {s:?} is none of debug, info, notice, warning, error, critical")
                    })
                })
                .transpose()?,
            text: given("q").map(str::to_lowercase),
        })
    }

    fn matches(&self, s: &SessionSummary<'_>, index: Option<&SessionIndex>) -> bool {
        let has = |hay: &str, needle: &str| hay.to_lowercase().contains(needle);
        if self.agent.as_deref().is_some_and(|a| !has(s.agent(), a)) {
            return false;
        }
        if let Some(pattern) = &self.types {
            if !index.is_some_and(|i| i.types.iter().any(|t| pattern.matches(t))) {
                return false;
            }
        }
        if let Some(least) = self.severity {
            if index.is_none_or(|i| i.severity < least) {
                return false;
            }
        }
        if let Some(text) = &self.text {
            let found = has(s.source(), text)
                || has(s.session(), text)
                || has(s.agent(), text)
                || s.last_activity().is_some_and(|a| has(a.event_type(), text))
                || s.pending()
                    .any(|p| p.request().prompt().is_some_and(|q| has(q, text)));
            if !found {
                return false;
            }
        }
        true
    }
}

/// What one page has been sent.
#[derive(Debug)]
struct Page {
    filter: SessionFilter,
    watch: Option<Key>,
    generation: u64,
    seen: u64,
    inbox_seen: u64,
    roster_seen: u64,
}

/// A session's line in the list: read in place from the fold, nothing of its runs,
/// requests or tool calls copied.
fn summary(s: &SessionSummary<'_>) -> Value {
    json!({
        "source": s.source(),
        "session": s.session(),
        "agent": s.agent(),
        "status": s.status(),
        "started": s.started(),
        "ended": s.ended(),
        "position": s.position(),
        "last_activity": s.last_activity(),
        "pending": s.pending_count(),
        "runs": s.run_count(),
        "tools": s.tool_count(),
        "claimed": s.claimants() > 0,
    })
}

/// The roster grouped by claimant: who is connected, which sessions it claims, and
/// which commands it accepts (AEP-0003 §4.1, AEP-0004 §4.2).
fn roster(entries: &[RosterEntry]) -> Value {
    type Group<'a> = (Option<&'a str>, Option<&'a str>, Value, Vec<&'a str>);
    let mut by: Vec<Group<'_>> = Vec::new();
    for e in entries {
        let accepts = json!(e.control.as_ref().and_then(|c| c.accepts.as_ref()));
        let at = by.iter().position(|(agent, instance, acc, _)| {
            *agent == e.agent.as_deref() && *instance == e.instance.as_deref() && *acc == accepts
        });
        match at.and_then(|i| by.get_mut(i)) {
            Some(group) => group.3.push(&e.session),
            None => by.push((
                e.agent.as_deref(),
                e.instance.as_deref(),
                accepts,
                vec![&e.session],
            )),
        }
    }
    Value::Array(
        by.into_iter()
            .map(|(agent, instance, accepts, sessions)| {
                json!({"agent": agent, "instance": instance, "accepts": accepts, "sessions": sessions})
            })
            .collect(),
    )
}

/// The next message for `page`, or `None` when nothing it reads changed.
fn message(st: &State, page: &mut Page, control: bool, force: bool) -> Option<Value> {
    let full = page.generation != st.generation;
    let mut out = Map::new();
    let mut sessions = Vec::new();
    let mut gone = Vec::new();
    if full {
        for s in st.projection.summaries() {
            let key = (s.source().to_owned(), s.session().to_owned());
            if page.filter.matches(&s, st.index.get(&key)) {
                sessions.push(summary(&s));
            }
        }
    } else {
        for key in st.changed_since(page.seen) {
            let Some(s) = st.projection.summary(&key.0, &key.1) else {
                continue;
            };
            if page.filter.matches(&s, st.index.get(key)) {
                sessions.push(summary(&s));
            } else {
                gone.push(json!([key.0, key.1]));
            }
        }
    }
    let inbox_changed = full || st.inbox_version > page.inbox_seen;
    let roster_changed = full || st.roster_version > page.roster_seen;
    let watched = page
        .watch
        .as_ref()
        .filter(|key| full || st.changed_after(key, page.seen));
    if !force && sessions.is_empty() && gone.is_empty() && !inbox_changed && !roster_changed {
        page.seen = st.version;
        return None;
    }
    out.insert("generation".into(), json!(st.generation));
    out.insert("full".into(), json!(full));
    out.insert("sessions".into(), Value::Array(sessions));
    out.insert("gone".into(), Value::Array(gone));
    if inbox_changed {
        let inbox = st.projection.inbox();
        out.insert("inbox_total".into(), json!(inbox.len()));
        let shown: Vec<_> = inbox.iter().take(INBOX_MAX).collect();
        out.insert("inbox".into(), json!(shown));
    }
    if roster_changed {
        out.insert("roster".into(), roster(&st.roster));
    }
    if let Some(key) = watched {
        let detail = st
            .projection
            .session(&key.0, &key.1)
            .map(|s| serde_json::to_value(s.detailed()).unwrap_or(Value::Null));
        out.insert("watched".into(), detail.unwrap_or(Value::Null));
    }
    out.insert(
        "counts".into(),
        json!({"sessions": st.projection.session_count(), "events": st.events}),
    );
    out.insert("control".into(), json!(control));
    page.generation = st.generation;
    page.seen = st.version;
    page.inbox_seen = st.inbox_version;
    page.roster_seen = st.roster_version;
    Some(Value::Object(out))
}

/// Counts a live page while its stream lives.
struct Watching(Arc<Engine>);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.watchers.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

fn line(value: &Value) -> Bytes {
    let mut text = value.to_string();
    text.push('\n');
    Bytes::from(text)
}

/// The stream (`live`), or its first message alone (`/state`: once the state is
/// ready, [`READY_WAIT`](super::READY_WAIT) at most, else `503 not-ready`).
///
/// A live stream opened before the state is ready says so, `{"loading": true,
/// "events": N}` (the events of the store folded so far) at once and every second, and
/// sends the state whole once it is.
pub(crate) async fn stream(
    hub: &Arc<Hub>,
    console: &Console,
    query: &HashMap<String, String>,
    live: bool,
) -> Response {
    let filter = match SessionFilter::parse(query) {
        Ok(f) => f,
        Err(detail) => return super::bad_request(detail),
    };
    let watch = match (query.get("watch_source"), query.get("watch_session")) {
        (Some(source), Some(session)) => Some((source.clone(), session.clone())),
        _ => None,
    };
    let control = console.limits.control;
    let mut page = Page {
        filter,
        watch,
        generation: 0,
        seen: 0,
        inbox_seen: 0,
        roster_seen: 0,
    };
    if !live {
        let first = super::read_state(hub, console, |st| message(st, &mut page, control, true));
        return match first.await {
            // forced, `message` always has one
            Ok(first) => json_response(StatusCode::OK, &first.unwrap_or_default()),
            Err(refused) => refused,
        };
    }
    let engine = console.engine(hub);
    engine.watchers.fetch_add(1, Ordering::AcqRel);
    let changed = engine.subscribe();
    let watching = Watching(engine);
    let body = futures::stream::unfold(
        (watching, changed, page, true),
        move |(watching, mut changed, mut page, mut first)| async move {
            loop {
                if !first {
                    let ready = watching.0.is_ready();
                    let wait = if ready { KEEPALIVE } else { PROGRESS };
                    match tokio::time::timeout(wait, changed.changed()).await {
                        Ok(Ok(())) => {}
                        // the state stopped (the relay is shutting down): the page
                        // reconnects and a new one starts
                        Ok(Err(_)) => return None,
                        Err(_) => {
                            let ping = if ready {
                                json!({"keepalive": true})
                            } else {
                                json!({"loading": true, "events": watching.0.loading()})
                            };
                            return Some((
                                Ok::<Bytes, Infallible>(line(&ping)),
                                (watching, changed, page, false),
                            ));
                        }
                    }
                    if !watching.0.is_running() {
                        return None;
                    }
                }
                changed.borrow_and_update();
                let next = match watching.0.lock().as_ref() {
                    Some(st) => message(st, &mut page, control, first).map(|v| line(&v)),
                    None if first => Some(line(
                        &json!({"loading": true, "events": watching.0.loading()}),
                    )),
                    None => None,
                };
                if let Some(bytes) = next {
                    return Some((Ok(bytes), (watching, changed, page, false)));
                }
                first = false;
            }
        },
    );
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ndjson"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        Body::from_stream(body),
    )
        .into_response()
}
