//! The HTTP surface: ingest (AEP-0003 §3.2), discovery (§3.4), SSE (§3.3), health and
//! introspection, the auth wall, and the hand-off of `/socket` upgrades.
//!
//! One handler dispatches in the reference relay's order: `/healthz` and CORS preflight
//! before the auth wall, every other surface behind it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use aep_core::binding;
use aep_core::resume::{FromError, FromParam, ResumePosition};
use aep_core::Capture;
use axum::body::Body;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Query, Request};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use serde_json::{json, Value};

use crate::config::Token;
use crate::console::{self, Console};
use crate::encoded::Binding;
use crate::hub::{Full, Hub, ReplayAsk, SubscribeRequest};
use crate::line::{parse_line, Incoming, LineError};
use crate::outbox::{Drain, End, Piece};
use crate::proto::{self, Filter};
use crate::response::json as json_response;
use crate::storage::{Unstored, UnstoredKind};
use crate::ws;

/// What the HTTP surface is given of the configuration.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// The bearer token every surface but `/healthz` and CORS preflight asks for
    /// (AEP-0003 §8.1); none: no auth wall.
    pub(crate) token: Option<Token>,
    /// Largest `POST /events` body, in bytes.
    pub(crate) max_body: usize,
    /// Most events in one batch.
    pub(crate) max_batch: usize,
    /// Most resume positions in one `from`.
    pub(crate) max_from: usize,
    /// Interval of the SSE `: ping` comments.
    pub(crate) heartbeat: Duration,
    /// Events replayed per session, as discovery declares it.
    pub(crate) replay_depth: usize,
    /// What each upgraded `/socket` is given.
    pub(crate) ws: ws::Limits,
}

/// The one connection an HTTP request came on: cancelling it ends the connection (a
/// reader disconnected past the hard bound whose socket takes nothing more). The
/// accept loop puts it in each request's extensions.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnectionShed(pub(crate) tokio_util::sync::CancellationToken);

const ALLOW_ORIGIN: (header::HeaderName, HeaderValue) = (
    header::ACCESS_CONTROL_ALLOW_ORIGIN,
    HeaderValue::from_static("*"),
);

/// Whether the request carries the token: `Authorization: Bearer` or, for clients that
/// cannot set headers, `?access_token=` (AEP-0003 §8.1). Never logged.
fn authorized(limits: &Limits, headers: &HeaderMap, query: &HashMap<String, String>) -> bool {
    let Some(token) = &limits.token else {
        return true;
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.as_bytes().strip_prefix(b"Bearer "));
    if bearer.is_some_and(|b| token.matches(b)) {
        return true;
    }
    query
        .get("access_token")
        .is_some_and(|t| token.matches(t.as_bytes()))
}

/// The one entry point of every request; `console` answers `/console` (when on).
pub(crate) async fn handle(
    hub: Arc<Hub>,
    limits: Arc<Limits>,
    console: Arc<Console>,
    request: Request,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let query: HashMap<String, String> = Query::try_from_uri(&parts.uri)
        .map(|Query(q)| q)
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    let method = parts.method.clone();

    let upgrade = parts
        .headers
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    if upgrade {
        if path != binding::SOCKET_PATH {
            return StatusCode::NOT_FOUND.into_response();
        }
        if !authorized(&limits, &parts.headers, &query) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        return match WebSocketUpgrade::from_request_parts(&mut parts, &hub).await {
            Ok(ws) => ws::upgrade(hub, limits.ws.clone(), ws),
            Err(rejection) => rejection.into_response(),
        };
    }

    // the console's page holds no data: public, like /healthz; its API is behind the wall
    if let Some(page) = console::asset(&console, &method, &path, &parts.headers) {
        return page;
    }
    // the one unauthenticated surface: probes cannot carry tokens; counts stay behind auth
    if method == Method::GET && path == "/healthz" {
        let mut body = json!({ "ok": true });
        if authorized(&limits, &parts.headers, &query) {
            if let (Some(b), Value::Object(counts)) = (body.as_object_mut(), hub.counts()) {
                b.extend(counts);
            }
        }
        return json_response(StatusCode::OK, &body);
    }
    // preflight carries no token by design; it grants only the right to ask
    if method == Method::OPTIONS && (path == binding::STREAM_PATH || path == "/connections") {
        return (
            StatusCode::NO_CONTENT,
            [
                ALLOW_ORIGIN,
                (
                    header::ACCESS_CONTROL_ALLOW_METHODS,
                    HeaderValue::from_static("GET, OPTIONS"),
                ),
                (
                    header::ACCESS_CONTROL_ALLOW_HEADERS,
                    HeaderValue::from_static("authorization, accept, content-type, last-event-id"),
                ),
                (
                    header::ACCESS_CONTROL_MAX_AGE,
                    HeaderValue::from_static("86400"),
                ),
            ],
        )
            .into_response();
    }
    // the refusal carries CORS so a browser consumer can read why it was refused
    if !authorized(&limits, &parts.headers, &query) {
        return (StatusCode::UNAUTHORIZED, [ALLOW_ORIGIN]).into_response();
    }

    match (method, path.as_str()) {
        (Method::GET, "/connections") => {
            let mut response = json_response(StatusCode::OK, &hub.connections());
            response
                .headers_mut()
                .insert(ALLOW_ORIGIN.0, ALLOW_ORIGIN.1);
            response
        }
        (Method::GET, binding::EVENTS_PATH | binding::WELL_KNOWN_PATH) => {
            let doc = proto::discovery(limits.replay_depth);
            let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            crate::response::json_text(StatusCode::OK, text)
        }
        (Method::POST, binding::EVENTS_PATH) => {
            post_events(hub, &limits, &parts.headers, body).await
        }
        (method, path) if console::is_api(path) => {
            console::api(hub, &console, method, path, &query, &parts.headers, body).await
        }
        (Method::GET, binding::STREAM_PATH) => {
            // dropped whole if its reader is disconnected and takes nothing more
            let shed = parts
                .extensions
                .get::<ConnectionShed>()
                .cloned()
                .unwrap_or_default();
            stream(hub, &limits, &parts.headers, &query, shed)
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

// ---- POST /events ----------------------------------------------------------------------

/// Keeps reading an over-size upload for a while after the 413 went out, so the client
/// reads the answer instead of a connection reset.
fn drain_rest(mut stream: axum::body::BodyDataStream, limit: usize) {
    tokio::spawn(async move {
        let mut read = 0usize;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, stream.next()).await {
            read += chunk.len();
            if read > limit {
                break;
            }
        }
    });
}

async fn post_events(hub: Arc<Hub>, limits: &Limits, headers: &HeaderMap, body: Body) -> Response {
    let version = headers.get(binding::VERSION_HEADER);
    if !version.is_some_and(|v| binding::is_supported_version(v.as_bytes())) {
        return json_response(
            StatusCode::UPGRADE_REQUIRED,
            &json!({ "versions": binding::VERSIONS }),
        );
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let ndjson = match content_type.as_str() {
        binding::JSON_CONTENT_TYPE => false,
        binding::NDJSON_CONTENT_TYPE => true,
        _ => return StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response(),
    };

    // answered before the upload is cut: a reset with no status line tells the emitter
    // nothing (AEP-0003 §3.2.3 lists 413)
    let max = limits.max_body;
    let too_large = || {
        let mut r = json_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            &json!({ "error": "payload-too-large", "max_bytes": max }),
        );
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        r
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let mut stream = body.into_data_stream();
    if declared.is_some_and(|n| n > max) {
        drain_rest(stream, max);
        return too_large();
    }
    // lines are parsed while the rest of the body still arrives, a segment at a time on
    // the blocking pool; each segment's bytes are released once it is parsed
    let mut split = Splitter::new(ndjson);
    let mut segment: Vec<Bytes> = Vec::new();
    let mut segments: Vec<tokio::task::JoinHandle<Parsed>> = Vec::new();
    let (mut received, mut lines) = (0usize, 0usize);
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        received += chunk.len();
        if received > max {
            drain_rest(stream, max);
            return too_large();
        }
        split.push(chunk, &mut segment);
        if segment.len() >= SEGMENT {
            let first = lines;
            lines += segment.len();
            let run = std::mem::take(&mut segment);
            // past the limit the batch is refused anyway: counted, not parsed
            if lines <= limits.max_batch {
                let hub = hub.clone();
                segments.push(tokio::task::spawn_blocking(move || {
                    parse_segment(&hub, first, &run)
                }));
            }
        }
    }
    split.finish(&mut segment);
    let total = lines + segment.len();
    if total > limits.max_batch {
        // work is per event, not per byte: refused whole, nothing ingested
        return json_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            &json!({ "error": "too-many-events", "max": limits.max_batch, "count": total }),
        );
    }
    let last = parse_segment(&hub, lines, &segment);
    drop(segment);
    let mut runs = Vec::with_capacity(segments.len() + 1);
    for task in segments {
        match task.await {
            Ok(parsed) => runs.push(parsed),
            // a fault of the relay's, not of the batch: nothing is ingested, and the
            // emitter retries the same bytes (a 5xx is retryable, AEP-0003 §3.2.3)
            Err(e) => {
                tracing::error!(error = %e, "a parsing task failed");
                return json_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({ "error": "internal", "detail": "parsing the batch failed in the relay; retry it" }),
                );
            }
        }
    }
    runs.push(last);
    let parts = match settle(runs) {
        Ok(parts) => parts,
        Err(Refusal::Json(detail)) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({ "error": "invalid-json", "detail": detail }),
            );
        }
        Err(Refusal::Invalid(line, detail)) => {
            // the batch is refused whole with the first failing line (AEP-0003 §3.2.3)
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({ "error": "invalid-event", "line": line, "detail": detail }),
            );
        }
    };
    // An accepted batch is fanned out whole even if its client goes away meanwhile: the
    // handler's future is dropped then, and stopping mid-batch would leave events stored
    // but never delivered to the readers that were live.
    let ingest = tokio::spawn(async move {
        let stored = hub.ingest(parts.iter().flatten(), None).await;
        if parts.len() > 1 {
            // freeing thousands of parsed events takes milliseconds: not ahead of the answer
            tokio::task::spawn_blocking(move || drop(parts));
        }
        stored
    });
    match ingest.await {
        Ok(Ok(())) => StatusCode::ACCEPTED.into_response(),
        // a 2xx means stored (--data-dir); a 5xx is retried (AEP-0003 §3.2.4)
        Ok(Err(unstored)) => unstored_response(&unstored),
        Err(_) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({ "error": "internal", "detail": "the batch's fan-out failed" }),
        ),
    }
}

/// The answer to a batch the store did not keep: nothing of it is stored, so never a
/// `2xx` (AEP-0003 §3.2.3); a `5xx` the emitter retries (§3.2.4), a `413` it does not.
fn unstored_response(unstored: &Unstored) -> Response {
    let (status, error) = match unstored.kind() {
        UnstoredKind::Full => (StatusCode::INSUFFICIENT_STORAGE, "insufficient-storage"),
        UnstoredKind::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "storage-unavailable"),
        UnstoredKind::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large"),
    };
    let detail = unstored.detail();
    let mut response = json_response(status, &json!({ "error": error, "detail": detail }));
    if unstored.kind() == UnstoredKind::Unavailable {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// Why a batch is refused: a line that is not JSON anywhere in it wins over the first
/// line that is JSON but not an acceptable event.
#[derive(Debug)]
enum Refusal {
    Json(String),
    Invalid(usize, String),
}

/// What one run of lines parsed to: the events, or its first refusal of each kind.
#[derive(Debug, Default)]
struct Parsed {
    events: Vec<Incoming<'static>>,
    json: Option<String>,
    invalid: Option<(usize, String)>,
}

/// Parses a run of lines that starts at line `first` of the batch. Once a line fails,
/// nothing more is kept: the batch is refused; only a later non-JSON line still matters.
fn parse_run<'a>(
    first: usize,
    keep: bool,
    lines: impl ExactSizeIterator<Item = &'a [u8]>,
) -> Parsed {
    let mut out = Parsed {
        events: Vec::with_capacity(lines.len()),
        ..Parsed::default()
    };
    for (i, line) in lines.enumerate() {
        match parse_line(line, keep) {
            Ok(incoming) if out.invalid.is_none() => out.events.push(incoming),
            Ok(_) => {}
            Err(LineError::Json(detail)) => {
                out.json = Some(detail);
                out.events = Vec::new();
                break;
            }
            Err(LineError::Invalid(detail)) => {
                if out.invalid.is_none() {
                    out.invalid = Some((first + i, detail));
                    out.events = Vec::new();
                }
            }
        }
    }
    out
}

/// Lines per parsing segment: big enough that a segment outweighs handing it to another
/// thread, small enough that a 10,000-line batch spreads over the cores.
const SEGMENT: usize = 2048;

fn parse_segment(hub: &Hub, first: usize, lines: &[Bytes]) -> Parsed {
    // read per segment: a subscriber arriving later is served by fan-out parsing again
    let keep = hub.needs_parsed();
    parse_run(first, keep, lines.iter().map(|l| &l[..]))
}

/// The batch's events in line order, or why it is refused.
fn settle(runs: Vec<Parsed>) -> Result<Vec<Vec<Incoming<'static>>>, Refusal> {
    if let Some(detail) = runs.iter().find_map(|r| r.json.clone()) {
        return Err(Refusal::Json(detail));
    }
    if let Some((line, detail)) = runs.iter().find_map(|r| r.invalid.clone()) {
        return Err(Refusal::Invalid(line, detail));
    }
    Ok(runs.into_iter().map(|r| r.events).collect())
}

/// Cuts a body into its event lines as the chunks arrive: NDJSON by line break, blank
/// lines skipped; a JSON body is one event. A line inside one chunk is a slice of it; only
/// a line that spans chunks is copied.
#[derive(Debug)]
struct Splitter {
    ndjson: bool,
    carry: BytesMut,
}

impl Splitter {
    fn new(ndjson: bool) -> Splitter {
        Splitter {
            ndjson,
            carry: BytesMut::new(),
        }
    }

    fn push(&mut self, chunk: Bytes, out: &mut Vec<Bytes>) {
        if !self.ndjson {
            self.carry.extend_from_slice(&chunk);
            return;
        }
        let mut start = 0;
        // memchr finds the line breaks a word at a time, not a byte at a time
        for end in memchr::memchr_iter(b'\n', &chunk) {
            let line = if self.carry.is_empty() {
                chunk.slice(start..end)
            } else {
                self.carry
                    .extend_from_slice(chunk.get(start..end).unwrap_or_default());
                self.carry.split().freeze()
            };
            Self::keep(line, out);
            start = end + 1;
        }
        if let Some(rest) = chunk.get(start..).filter(|r| !r.is_empty()) {
            self.carry.extend_from_slice(rest);
        }
    }

    fn finish(self, out: &mut Vec<Bytes>) {
        let rest = self.carry.freeze();
        if self.ndjson {
            Self::keep(rest, out);
        } else {
            out.push(rest);
        }
    }

    fn keep(line: Bytes, out: &mut Vec<Bytes>) {
        if !line.trim_ascii().is_empty() {
            out.push(line);
        }
    }
}

// ---- GET /stream -----------------------------------------------------------------------

fn refuse(message: impl Into<String>) -> Response {
    (StatusCode::BAD_REQUEST, [ALLOW_ORIGIN], message.into()).into_response()
}

/// Parses the subscription parameters of an SSE request (AEP-0003 §3.3.1).
fn stream_request(
    limits: &Limits,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Result<(Filter, Option<Capture>, ReplayAsk, bool), String> {
    let filter = match query.get("filter").filter(|f| !f.is_empty()) {
        None => Filter::default(),
        Some(text) => {
            let value: Value =
                serde_json::from_str(text).map_err(|_| "bad filter JSON".to_owned())?;
            proto::parse_filter(&value)?
        }
    };
    let capture = match query.get("capture").filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(
            c.parse::<Capture>()
                .map_err(|_| format!("unknown capture level: {c}"))?,
        ),
    };
    let live = query.get("live").map(String::as_str) != Some("0");
    let mut ask = ReplayAsk {
        filter_session: !live,
        ..ReplayAsk::default()
    };
    if let Some(text) = query.get("from").filter(|f| !f.is_empty()) {
        match FromParam::parse(text, limits.max_from) {
            Ok(FromParam::All) => ask.all = true,
            Ok(FromParam::Sessions(sessions)) => ask.positions = sessions,
            // the reference relay's answers, word for word
            Err(FromError::NotJson | FromError::NotAnArray) => return Err("bad from JSON".into()),
            Err(FromError::TooMany { .. }) => return Err("from too large".into()),
            Err(e) => return Err(e.to_string()),
        }
    }
    if !ask.all && ask.positions.is_empty() {
        if let Some(position) = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| ResumePosition::parse_sse_id(v).ok())
        {
            ask.positions.push(position.into());
        }
    }
    Ok((filter, capture, ask, live))
}

/// Unregisters an SSE subscription when its stream is dropped (the client went away).
struct SubGuard {
    hub: Arc<Hub>,
    id: Option<u64>,
}

impl Drop for SubGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.hub.unsubscribe(id);
        }
    }
}

const CHUNK: usize = 64 * 1024;

fn stream(
    hub: Arc<Hub>,
    limits: &Limits,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    shed: ConnectionShed,
) -> Response {
    let (filter, capture, ask, live) = match stream_request(limits, headers, query) {
        Ok(parsed) => parsed,
        Err(why) => return refuse(why),
    };
    let (outbox, rx) = hub.outbox(shed.0);
    let mut request = SubscribeRequest::new(Binding::Sse, filter);
    request.capture = capture;
    request.replay = ask;
    request.live = live;
    let id = match hub.subscribe_bounded(&outbox, request) {
        Ok(id) => id,
        Err(full) => return subscriptions_full(&full),
    };
    if !live {
        outbox.end(End::ReplayComplete);
    } else if hub.is_shutting_down() {
        outbox.end(End::Shutdown);
    }
    let guard = SubGuard {
        hub: hub.clone(),
        id: live.then_some(id),
    };
    let drain = Drain::new(rx, outbox, limits.heartbeat);
    let body = futures::stream::unfold(
        (drain, guard, false),
        |(mut drain, guard, over)| async move {
            if over {
                return None;
            }
            let first = drain.next().await?;
            // sized for a full chunk: growing from empty would copy it several times over
            let mut chunk = BytesMut::with_capacity(CHUNK + 8 * 1024);
            let mut over = write_piece(&mut chunk, first);
            while !over && chunk.len() < CHUNK {
                match drain.try_next() {
                    Some(piece) => over = write_piece(&mut chunk, piece),
                    None => break,
                }
            }
            Some((
                Ok::<Bytes, Infallible>(chunk.freeze()),
                (drain, guard, over),
            ))
        },
    );
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(binding::SSE_CONTENT_TYPE),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ALLOW_ORIGIN,
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// The answer to a stream the relay-wide subscription bound refused: a `503` the reader
/// retries after `Retry-After`, naming the limit (AEP-0003 §6.5's `limit-exceeded`).
fn subscriptions_full(full: &Full) -> Response {
    let body = json!({ "error": "limit-exceeded", "detail": full.detail() });
    let mut response = json_response(StatusCode::SERVICE_UNAVAILABLE, &body);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// Appends one piece to an SSE chunk; `true` when the stream ends after it.
fn write_piece(chunk: &mut BytesMut, piece: Piece) -> bool {
    match piece {
        Piece::Data(bytes) => {
            chunk.extend_from_slice(&bytes);
            false
        }
        Piece::Heartbeat => {
            chunk.extend_from_slice(binding::sse::HEARTBEAT.as_bytes());
            false
        }
        Piece::End(End::ReplayComplete) => {
            chunk.extend_from_slice(binding::sse::REPLAY_COMPLETE.as_bytes());
            true
        }
        Piece::End(End::Shutdown) => {
            chunk.extend_from_slice(binding::sse::SHUTTING_DOWN.as_bytes());
            true
        }
        Piece::End(End::ReplayFailed) => {
            // no `: replay-complete`: the reader resumes from its positions
            chunk.extend_from_slice(binding::sse::REPLAY_FAILED.as_bytes());
            true
        }
        Piece::End(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each way a store can fail a batch has its own answer, never a `2xx`: `507` and
    /// `503` (with `Retry-After`) the emitter retries (AEP-0003 §3.2.4), `413` it does
    /// not; each detail says why and what to do, as the WebSocket error frame's does.
    #[tokio::test]
    async fn each_kind_of_unstored_has_its_status_and_advice() {
        let cases = [
            (
                Unstored::new(std::io::Error::from(std::io::ErrorKind::StorageFull)),
                507,
                "insufficient-storage",
                "send it again",
                false,
            ),
            (
                Unstored::new(std::io::Error::other("NATS is unreachable")),
                503,
                "storage-unavailable",
                "send it again shortly",
                true,
            ),
            (
                Unstored::new(std::io::Error::new(
                    std::io::ErrorKind::FileTooLarge,
                    "larger than max_payload",
                )),
                413,
                "payload-too-large",
                "split or shrink",
                false,
            ),
        ];
        for (unstored, status, error, advice, retry_after) in cases {
            let response = unstored_response(&unstored);
            assert_eq!(response.status().as_u16(), status, "{unstored}");
            assert_eq!(
                response.headers().contains_key(header::RETRY_AFTER),
                retry_after,
                "{unstored}"
            );
            let body = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["error"], error, "{body}");
            let detail = body["detail"].as_str().unwrap();
            assert_eq!(detail, unstored.detail());
            assert!(detail.contains(advice), "{detail}");
            assert!(detail.contains(&unstored.error.to_string()), "{detail}");
        }
    }

    fn split(ndjson: bool, chunks: &[&str]) -> Vec<String> {
        let mut split = Splitter::new(ndjson);
        let mut out = Vec::new();
        for chunk in chunks {
            split.push(Bytes::copy_from_slice(chunk.as_bytes()), &mut out);
        }
        split.finish(&mut out);
        out.iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    }

    #[test]
    fn lines_are_cut_across_chunk_boundaries_and_blank_lines_skipped() {
        assert_eq!(
            split(true, &["{\"a\":1}\n{\"b\"", ":2}\n  \n", "\n{\"c\":3}"]),
            vec!["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
        );
        assert_eq!(split(true, &["{\"a\"", ":1", "}\n"]), vec!["{\"a\":1}"]);
        assert_eq!(split(true, &["\n\n", " "]), Vec::<String>::new());
    }

    #[test]
    fn a_json_body_is_one_event_whatever_its_line_breaks() {
        assert_eq!(split(false, &["{\"a\":\n", "1}\n"]), vec!["{\"a\":\n1}\n"]);
        assert_eq!(split(false, &[]), vec![""]);
    }
}
