//! Mission control: a live web console served by the relay itself (issue 35), on with
//! [`RelayConfig::with_console`](crate::RelayConfig::with_console), `--console on` or
//! `AEP_CONSOLE=on`.
//!
//! `GET /console` is the page (module `assets`: embedded, strict CSP, strong ETag); it
//! holds no protocol rule. Everything it shows is read from the relay under its token:
//!
//! | endpoint | what |
//! |---|---|
//! | `GET /console/api/live` | newline-delimited JSON: the state whole, then what changed (sessions filtered by `agent`, `type` pattern, `severity`, `q` text; the inbox; the roster; the session named by `watch_source`/`watch_session` in detail); `{"loading": true, "events": N}` while the state reads the store |
//! | `GET /console/api/state` | the first of those messages, once the state has read the store (`503 not-ready` after 10 s) |
//! | `GET /console/api/timeline` | one session (`source`, `session`) from the store in `(epoch, seq)` order, placed in runs and tool calls, gaps and `replay-exhausted` said, each event's JSON |
//! | `POST /console/api/respond` | `{source, session, request, answer}`: `control.attention.respond`; `200` with the ack, `409` with the nack |
//! | `POST /console/api/cancel` | `{session, run, source?, reason?}`: `control.cancel` of a run, the same way |
//!
//! Refusals are JSON `{"error", "detail"}` saying what to send instead: `400` a missing
//! or malformed member or parameter, `404` an unknown session (or path), `405` the
//! wrong method, `409` a request not pending (or not answerable over control,
//! AEP-0008) or a command the agent or the relay rejected, `413` a body past 64 KiB,
//! `415` a body that is not `application/json`, `503` while the state reads the store,
//! `504` a command no ack answered (AEP-0004 §3). No `2xx` for what was not done.
//!
//! The state is aep-core's fold ([`aep_core::projection::StateProjection`]) of what
//! the relay holds and receives (module `engine`); commands are aep-core's
//! [`ControlSender`](aep_core::ControlSender)'s (module `control`), routed as any
//! connection's. In a NATS cluster each relay's console shows the fleet: the store, the
//! feed, the roster and command routing are the fleet's.
//!
//! The token: the page is public (it holds no data); every `/console/api/` request
//! passes the relay's auth wall with `Authorization: Bearer`, never a query parameter,
//! so access logs never see it. The page takes it from the URL's fragment
//! (`/console#token=...`, which a browser never sends) or from a form, keeps it in the
//! tab's `sessionStorage`, and clears the fragment from the address bar and history.

mod assets;
mod control;
mod engine;
mod live;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use aep_core::control::NackOrigin;
use aep_core::frame::{decode_slice, Frame};
use aep_core::projection::Timeline;
use aep_core::resume::{Position, ReplayStart, ResumeFrom};
use aep_core::Message;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::encoded::Binding;
use crate::hub::{Hub, ReplayAsk, SubscribeRequest};
use crate::outbox::{Drain, End, Piece};
use crate::response::json as json_response;

use control::{Ask, Control};
use engine::Engine;

/// The largest body a console `POST` may carry.
const MAX_BODY: usize = 64 * 1024;

/// The most events one timeline answer holds (the latest ones).
const MAX_TIMELINE: usize = 10_000;

/// The most bytes of event JSON one timeline answer holds (the latest events).
const MAX_TIMELINE_BYTES: usize = 8 << 20;

/// How long a timeline reads the store before it answers with what it has.
const TIMELINE_WAIT: Duration = Duration::from_secs(10);

/// What the console is given of the configuration.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Limits {
    /// Whether `/console` is served at all.
    pub(crate) enabled: bool,
    /// Whether the relay routes commands (it has a token, AEP-0004 §4.1): the page
    /// offers answers only then.
    pub(crate) control: bool,
    /// The largest `roster` reply read (the hard backpressure bound, as for a
    /// connection's).
    pub(crate) max_roster: usize,
    /// The store's byte bound: the fold is rebuilt past twice it and some room.
    pub(crate) store_bytes: usize,
}

/// A relay's console: off, or the state and the command task it starts on demand. The
/// server holds it beside the HTTP surface, which hands it the requests for
/// `/console`.
#[derive(Debug, Default)]
pub(crate) struct Console {
    limits: Limits,
    engine: Mutex<Option<Arc<Engine>>>,
    control: Control,
}

impl Console {
    /// The console `limits` ask for.
    pub(crate) fn new(limits: Limits) -> Console {
        Console {
            limits,
            ..Console::default()
        }
    }

    /// The running state, started if it is not.
    fn engine(&self, hub: &Arc<Hub>) -> Arc<Engine> {
        let mut slot = self.engine.lock().unwrap_or_else(PoisonError::into_inner);
        let engine = match slot.as_ref().filter(|e| e.is_running()) {
            Some(engine) => engine.clone(),
            None => {
                let engine = Engine::start(hub, self.limits.max_roster, self.limits.store_bytes);
                *slot = Some(engine.clone());
                engine
            }
        };
        engine.touch();
        engine
    }
}

/// The page's files: public, before the auth wall (they hold no data). `None` when the
/// path is none of them or the console is off.
pub(crate) fn asset(
    console: &Console,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Option<Response> {
    if !console.limits.enabled || !(method == Method::GET || method == Method::HEAD) {
        return None;
    }
    assets::find(path).map(|a| a.respond(headers))
}

/// Whether `path` is the console's API (answered by [`api`] behind the auth wall).
pub(crate) fn is_api(path: &str) -> bool {
    path.starts_with("/console/api/")
}

/// The console's API, behind the auth wall: each path's method (else `405`), a `POST`'s
/// body JSON (else `415`) and at most [`MAX_BODY`] (else `413`).
pub(crate) async fn api(
    hub: Arc<Hub>,
    console: &Console,
    method: Method,
    path: &str,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    if !console.limits.enabled {
        return StatusCode::NOT_FOUND.into_response();
    }
    let allowed = match path {
        "/console/api/live" | "/console/api/state" | "/console/api/timeline" => Method::GET,
        "/console/api/respond" | "/console/api/cancel" => Method::POST,
        _ => {
            return with_headers(json_response(
                StatusCode::NOT_FOUND,
                &json!({"error": "not-found", "detail": format!("{path} is none of the console's endpoints: live, state, timeline, respond, cancel")}),
            ))
        }
    };
    if method != allowed {
        let mut refused = json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &json!({"error": "method-not-allowed", "detail": format!("{path} takes {allowed} only")}),
        );
        if let Ok(allow) = HeaderValue::from_str(allowed.as_str()) {
            refused.headers_mut().insert(header::ALLOW, allow);
        }
        return with_headers(refused);
    }
    let response = match path {
        "/console/api/live" => live::stream(&hub, console, query, true).await,
        "/console/api/state" => live::stream(&hub, console, query, false).await,
        "/console/api/timeline" => timeline(&hub, console, query).await,
        _ => match read_json(headers, body).await {
            Err(refused) => refused,
            Ok(body) if path == "/console/api/respond" => respond(&hub, console, &body).await,
            Ok(body) => cancel(&hub, console, &body).await,
        },
    };
    with_headers(response)
}

/// What every answer of the API carries: the page's security headers, and no caching.
fn with_headers(mut response: Response) -> Response {
    assets::security_headers(response.headers_mut());
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A `400` naming what is wrong and what to send instead.
fn bad_request(detail: impl Into<String>) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &json!({ "error": "bad-request", "detail": detail.into() }),
    )
}

/// How long a request waits for the state to read the store before it is answered
/// `503 not-ready`.
pub(crate) const READY_WAIT: Duration = Duration::from_secs(10);

/// `read` of the state once it has folded the store's replay ([`READY_WAIT`] at most),
/// under the engine's lock; the `503` while it is still reading the store.
#[allow(clippy::result_large_err)]
pub(crate) async fn read_state<T>(
    hub: &Arc<Hub>,
    console: &Console,
    read: impl FnOnce(&engine::State) -> T,
) -> Result<T, Response> {
    let engine = console.engine(hub);
    if !engine.wait_ready(READY_WAIT).await {
        return Err(not_ready(&engine));
    }
    let read = engine.lock().as_ref().map(read);
    read.ok_or_else(|| not_ready(&engine))
}

/// `503`: the state is still reading the store (or the relay stops); retry.
pub(crate) fn not_ready(engine: &Engine) -> Response {
    let mut response = json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        &json!({
            "error": "not-ready",
            "detail": format!("the console is still reading the relay's store ({} events folded so far); retry in a moment", engine.loading()),
        }),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// A `POST`'s body: JSON (`Content-Type: application/json`, so a cross-site form or a
/// simple request can never post one without a preflight the relay does not grant), at
/// most [`MAX_BODY`].
#[allow(clippy::result_large_err)]
async fn read_json(headers: &HeaderMap, body: Body) -> Result<Value, Response> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(json_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &json!({"error": "unsupported-media-type", "detail": "send the body as Content-Type: application/json"}),
        ));
    }
    let too_large = || {
        json_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            &json!({"error": "payload-too-large", "detail": format!("a console request is at most {MAX_BODY} bytes"), "max_bytes": MAX_BODY}),
        )
    };
    // refused before a byte of it is read when it says its length
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| too_large())?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(bad_request("the body is a JSON object")),
        Err(e) => Err(bad_request(format!("the body is not JSON: {e}"))),
    }
}

// the refusal is answered at once, never kept: its size costs nothing
#[allow(clippy::result_large_err)]
fn text_member<'a>(body: &'a Value, name: &str) -> Result<&'a str, Response> {
    body.get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad_request(format!("`{name}` is required: a non-empty string")))
}

// ---- commands ------------------------------------------------------------------------

/// `POST /console/api/respond`: answers a pending attention request of the console's
/// state with `control.attention.respond` (AEP-0004 §5, AEP-0002 §5.3): `subject` and
/// `cause` the request's id, `data.answer` the page's `option`, `text` or `values`.
async fn respond(hub: &Arc<Hub>, console: &Console, body: &Value) -> Response {
    let (source, session, request) = match (
        text_member(body, "source"),
        text_member(body, "session"),
        text_member(body, "request"),
    ) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
    };
    let answer = match body.get("answer") {
        Some(Value::Object(answer)) => answer,
        _ => {
            return bad_request("`answer` is required: an object with `option`, `text` or `values`")
        }
    };
    for (key, value) in answer {
        let ok = match key.as_str() {
            "option" | "text" => value.is_string(),
            "values" => value.is_object(),
            _ => false,
        };
        if !ok {
            return bad_request(format!(
                "`answer.{key}`: an answer holds `option` (a string), `text` (a string) or `values` (an object) (AEP-0002 §5.3)"
            ));
        }
    }
    if answer.is_empty() {
        return bad_request("`answer` is empty: give `option`, `text` or `values`");
    }
    // only what the state holds pending, and only over control where it may be
    let pending = read_state(hub, console, |st| {
        st.projection.summary(source, session).map(|s| {
            s.pending()
                .find(|p| p.id() == request)
                .map(|p| p.request().answerable())
        })
    })
    .await;
    let pending = match pending {
        Err(refused) => return refused,
        Ok(None) => return unknown_session(session, Some(source)),
        Ok(Some(pending)) => pending,
    };
    match pending {
        None => {
            return json_response(
                StatusCode::CONFLICT,
                &json!({"error": "not-pending", "detail": format!("request {request} of session {session} is not pending: it was resolved, timed out, or never asked")}),
            );
        }
        Some(false) => {
            return json_response(
                StatusCode::CONFLICT,
                &json!({"error": "not-answerable", "detail": "the request's respond_via does not list control: its answer arrives out of band (AEP-0008)"}),
            );
        }
        Some(true) => {}
    }
    let command = Control::builder()
        .command("control.attention.respond", session)
        .subject(request)
        .cause(request)
        .data(json!({ "answer": answer }))
        .build_at(SystemTime::now());
    send(hub, console, command).await
}

/// `404`: neither the state nor the roster knows the session.
fn unknown_session(session: &str, source: Option<&str>) -> Response {
    let from = source.map(|s| format!(" from {s}")).unwrap_or_default();
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"error": "unknown-session", "detail": format!("no session {session}{from} is held by the relay or claimed by a connected agent; check the session (and source) or reload the list")}),
    )
}

/// An optional string member: absent or `null` is `None`, anything but a non-empty
/// string is refused.
#[allow(clippy::result_large_err)]
fn optional_text<'a>(body: &'a Value, name: &str) -> Result<Option<&'a str>, Response> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
        Some(_) => Err(bad_request(format!(
            "`{name}`, when given, is a non-empty string"
        ))),
    }
}

/// `POST /console/api/cancel`: `control.cancel` of one run (AEP-0004 §5) of a session
/// the relay holds or an agent claims (`source` narrows it when given).
async fn cancel(hub: &Arc<Hub>, console: &Console, body: &Value) -> Response {
    let (session, run) = match (text_member(body, "session"), text_member(body, "run")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let (source, reason) = match (optional_text(body, "source"), optional_text(body, "reason")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let known = read_state(hub, console, |st| {
        let held = match source {
            Some(src) => st.projection.summary(src, session).is_some(),
            None => st.index.keys().any(|(_, s)| s == session),
        };
        held || st.roster.iter().any(|e| e.session == session)
    })
    .await;
    match known {
        Err(refused) => return refused,
        Ok(false) => return unknown_session(session, source),
        Ok(true) => {}
    }
    let mut data = json!({ "scope": "run" });
    if let Some(reason) = reason {
        data["reason"] = json!(reason);
    }
    let command = Control::builder()
        .command("control.cancel", session)
        .run(run)
        .data(data)
        .build_at(SystemTime::now());
    send(hub, console, command).await
}

/// Sends `command` and answers with how it settled: `200` `accepted` with the ack's id;
/// `409` `rejected` with the reason, the detail and who said so (`target`: the agent's
/// `control.rejected`; `relay`: its refusal, `no-route` or `ambiguous`); `504` for the
/// sender's synthesized `timeout` (no ack within the window on any attempt). Never a
/// `2xx` for a command that was not accepted.
async fn send(hub: &Arc<Hub>, console: &Console, command: aep_core::Event) -> Response {
    let id = command.id().to_owned();
    let (reply, settled) = tokio::sync::oneshot::channel();
    let tx = console.control.sender(hub);
    if tx.try_send(Ask { command, reply }).is_err() {
        return json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"error": "busy", "detail": format!("{} commands are in flight already; retry once some are settled", control::MAX_IN_FLIGHT)}),
        );
    }
    match settled.await {
        Ok(Ok(ack)) => json_response(
            StatusCode::OK,
            &json!({"outcome": "accepted", "command": id, "ack": ack.id()}),
        ),
        Ok(Err(nack)) => {
            let (by, status) = match nack.origin() {
                NackOrigin::Target(_) => ("target", StatusCode::CONFLICT),
                NackOrigin::Relay(_) => ("relay", StatusCode::CONFLICT),
                _ => ("sender", StatusCode::GATEWAY_TIMEOUT),
            };
            json_response(
                status,
                &json!({
                    "outcome": "rejected",
                    "command": id,
                    "reason": nack.reason().as_str(),
                    "detail": nack.detail(),
                    "by": by,
                }),
            )
        }
        Err(_) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"error": "stopped", "detail": "the relay stopped before the command settled; send it again"}),
        ),
    }
}

// ---- timeline ------------------------------------------------------------------------

/// `GET /console/api/timeline?session=S[&source=SRC][&after=EPOCH:SEQ][&limit=N]`: the
/// session's events the store holds, in `(epoch, seq)` order (after `after` when
/// given: then a `replay-exhausted` is reported when the store no longer holds what
/// follows it), placed by aep-core's [`Timeline`]; the latest `limit` of them
/// (default and at most 10,000).
async fn timeline(hub: &Arc<Hub>, console: &Console, query: &HashMap<String, String>) -> Response {
    let Some(session) = query.get("session").filter(|s| !s.is_empty()) else {
        return bad_request("`session` is required");
    };
    let source = query.get("source").filter(|s| !s.is_empty());
    let start = match query.get("after").filter(|s| !s.is_empty()) {
        None => ReplayStart::EARLIEST,
        Some(after) => {
            let parsed = after
                .split_once(':')
                .and_then(|(e, s)| Some(Position::new(e.parse().ok()?, s.parse().ok()?)));
            match parsed {
                Some(p) => ReplayStart::After(p),
                None => return bad_request("`after` is EPOCH:SEQ, two non-negative integers"),
            }
        }
    };
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => MAX_TIMELINE,
        Some(l) => match l.parse::<usize>() {
            Ok(n) => n.clamp(1, MAX_TIMELINE),
            Err(_) => {
                return bad_request(format!("`limit` is a count of events, 1 to {MAX_TIMELINE}"))
            }
        },
    };
    let Ok(filter) = crate::proto::parse_filter(&json!({ "session": session })) else {
        return bad_request("`session` cannot be filtered on");
    };
    let (outbox, rx) = hub.outbox(CancellationToken::new());
    let mut request = SubscribeRequest::new(Binding::Ws, filter);
    request.replay = ReplayAsk {
        positions: vec![ResumeFrom::new(session.clone(), start)],
        ..ReplayAsk::default()
    };
    request.live = false;
    request.sub = Some("console".to_owned());
    hub.subscribe(&outbox, request);
    outbox.end(End::ReplayComplete);
    let mut drain = Drain::new(rx, outbox, Duration::from_secs(3600));

    let mut placer = Timeline::new();
    // each kept event with its JSON's length: the answer holds the latest `limit`
    // events, MAX_TIMELINE_BYTES of their JSON at most
    let mut kept: std::collections::VecDeque<(Value, usize)> = std::collections::VecDeque::new();
    let mut kept_bytes = 0usize;
    let (mut omitted, mut exhausted, mut first) = (0usize, Value::Null, None);
    let (mut complete, mut seen) = (false, 0usize);
    let deadline = tokio::time::Instant::now() + TIMELINE_WAIT;
    while let Ok(Some(piece)) = tokio::time::timeout_at(deadline, drain.next()).await {
        let bytes = match piece {
            Piece::Data(bytes) => bytes,
            Piece::Heartbeat => continue,
            Piece::End(end) => {
                complete = end == End::ReplayComplete;
                break;
            }
        };
        let event = match decode_slice(&bytes) {
            Ok(Message::Event(event)) => event,
            Ok(Message::Frame(Frame::ReplayExhausted(r))) => {
                exhausted = json!({"epoch": r.earliest.epoch(), "seq": r.earliest.seq()});
                continue;
            }
            _ => continue,
        };
        if source.is_some_and(|s| s != event.source()) {
            continue;
        }
        let position = Position::of(&event);
        if first.is_none() {
            first = position;
        }
        seen += 1;
        let placed = placer.place(&event);
        kept_bytes += bytes.len();
        kept.push_back((
            json!({
                "id": event.id(),
                "type": event.event_type(),
                "time": event.time(),
                "source": event.source(),
                "position": position,
                "severity": event.severity(),
                "subject": event.subject(),
                "run": placed.run(),
                "tool": placed.tool(),
                "gap": placed.gap(),
                "json": String::from_utf8_lossy(&bytes),
            }),
            bytes.len(),
        ));
        while kept.len() > limit || (kept_bytes > MAX_TIMELINE_BYTES && kept.len() > 1) {
            if let Some((_, len)) = kept.pop_front() {
                kept_bytes -= len;
                omitted += 1;
            }
        }
    }
    // from the start, the first held event not at the start of its epoch says the
    // store no longer holds (or never got) what came before it
    let missing_before = match (start, first) {
        (ReplayStart::EpochStart(_), Some(p)) if p.seq() > 0 => {
            json!({"epoch": p.epoch(), "seq": p.seq()})
        }
        _ => Value::Null,
    };
    // the session's folded state beside its events: runs and tool calls with their
    // status and duration, from the same fold the list shows
    let engine = console.engine(hub);
    let ready = engine.wait_ready(READY_WAIT).await;
    let (state, claimed) = match engine.lock().as_ref() {
        Some(st) => (
            source.and_then(|src| {
                st.projection
                    .session(src, session)
                    .and_then(|s| serde_json::to_value(s.detailed()).ok())
            }),
            st.roster.iter().any(|e| &e.session == session),
        ),
        None => (None, false),
    };
    if ready && seen == 0 && state.is_none() && !claimed && complete {
        return unknown_session(session, source.map(String::as_str));
    }
    let events: Vec<Value> = kept.into_iter().map(|(event, _)| event).collect();
    json_response(
        StatusCode::OK,
        &json!({
            "session": session,
            "source": source,
            "state": state,
            "events": events,
            "omitted": omitted,
            "exhausted": exhausted,
            "missing_before": missing_before,
            // the store did not answer whole within TIMELINE_WAIT: what it gave
            "incomplete": !complete,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_console_that_is_off_serves_nothing() {
        let off = Console::default();
        assert!(asset(&off, &Method::GET, "/console", &HeaderMap::new()).is_none());
        let on = Console::new(Limits {
            enabled: true,
            ..Limits::default()
        });
        assert!(asset(&on, &Method::GET, "/console", &HeaderMap::new()).is_some());
        assert!(asset(&on, &Method::POST, "/console", &HeaderMap::new()).is_none());
        assert!(asset(&on, &Method::GET, "/console/nope.js", &HeaderMap::new()).is_none());
    }
}
