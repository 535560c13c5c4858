//! The WebSocket binding (AEP-0003 §3.5): `hello` first, subscriptions multiplexed on one
//! connection, events in both directions, `roster`, `ping`/`pong`, and commands routed to
//! the one connection that claims their session (AEP-0004 §4).
//!
//! Each connection has a reader (this module's loop) and a writer task that drains the
//! connection's [`Outbox`]; everything sent toward the peer goes through that one queue,
//! so replies, replays and live events keep their order.

use std::sync::Arc;
use std::time::Duration;

use aep_core::frame::{self, DecodeError, ErrorCode, Frame, IdFrame, ReplayFrom, Subscribe};
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::encoded::Binding;
use crate::hub::{Hub, ReplayAsk, SubscribeRequest};
use crate::line::{read_event, LineError};
use crate::outbox::{Drain, End, Outbox, Piece};
use crate::proto::{self, Filter};
use crate::routing::Party;
use crate::subscriptions::{self, Lifecycle};
use aep_core::resume::ResumeFrom;
use aep_core::subscription::LifecycleMessage;

/// What a WebSocket connection is given of the configuration.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Largest message, in bytes.
    pub(crate) max_message: usize,
    /// Largest `hello`, in bytes.
    pub(crate) max_hello: usize,
    /// How long the connection may stay open without saying `hello`.
    pub(crate) hello_timeout: Duration,
    /// Interval of the `ping` frames.
    pub(crate) heartbeat: Duration,
    /// How long a writer stuck on a peer that does not read is kept.
    pub(crate) drain_timeout: Duration,
    /// The bytes the connection's queue may hold (the hard backpressure bound): no
    /// `roster` reply larger is built.
    pub(crate) max_queued: usize,
    /// Most resume positions in one `from`.
    pub(crate) max_from: usize,
    /// Events replayed per session, as the `hello` reply declares it.
    pub(crate) replay_depth: usize,
    /// The subscriptions the connection may hold, both kinds together.
    pub(crate) subscriptions: subscriptions::Limits,
}

/// Accepts the upgrade; incoming messages are capped at `limits.max_message`.
pub(crate) fn upgrade(hub: Arc<Hub>, limits: Limits, ws: WebSocketUpgrade) -> Response {
    let max = limits.max_message;
    // tungstenite zero-fills up to this much free buffer before every read; AEP
    // messages are small, and at the 128 KiB default the fill outweighs the read.
    ws.read_buffer_size(32 * 1024)
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| serve(hub, limits, socket))
}

async fn serve(hub: Arc<Hub>, limits: Limits, socket: WebSocket) {
    let (outbox, rx) = hub.outbox(CancellationToken::new());
    let conn = hub.connect(outbox.clone());
    if hub.is_shutting_down() {
        outbox.end(End::Shutdown);
    }
    let (sink, stream) = socket.split();
    let drain = Drain::new(rx, outbox.clone(), limits.heartbeat);
    let mut writer = tokio::spawn(write_loop(sink, drain, outbox.clone()));
    let reader = read_loop(&hub, &limits, conn, &outbox, stream);
    tokio::pin!(reader);
    // A writer stuck on a peer that does not read never finishes by itself: past the
    // drain timeout it is dropped, and the socket with it.
    let drain_timeout = limits.drain_timeout;
    let shed = outbox.shed().clone();
    tokio::select! {
        () = &mut reader => {
            outbox.end(End::Quiet);
            if tokio::time::timeout(drain_timeout, &mut writer).await.is_err() {
                writer.abort();
            }
        }
        _ = &mut writer => {
            // we closed: give the peer a moment to answer the close handshake
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        () = async { shed.cancelled().await; tokio::time::sleep(drain_timeout).await } => {
            // disconnected past the hard bound, and the peer did not take even what was
            // queued before the close (AEP-0003 §8.4)
            writer.abort();
        }
        () = hub.stopped().cancelled() => {
            // the relay stopped and this peer did not take its close within the drain
            writer.abort();
        }
    }
    hub.disconnect(conn);
}

async fn write_loop(
    mut sink: SplitSink<WebSocket, Message>,
    mut drain: Drain,
    outbox: Arc<Outbox>,
) {
    let text = |bytes: Bytes| Utf8Bytes::try_from(bytes).map(Message::Text);
    'outer: while let Some(mut piece) = drain.next().await {
        let mut fed = 0usize;
        loop {
            let message = match piece {
                Piece::Data(bytes) => match text(bytes) {
                    Ok(m) => m,
                    Err(_) => continue 'outer,
                },
                Piece::Heartbeat => {
                    let t = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_millis() as u64)
                        .unwrap_or_default();
                    Message::Text(proto::ping_frame(t).into())
                }
                Piece::End(how) => {
                    close(&mut sink, how).await;
                    break 'outer;
                }
            };
            if sink.feed(message).await.is_err() {
                break 'outer;
            }
            fed += 1;
            match drain.try_next() {
                Some(next) if fed < 512 => piece = next,
                Some(next) => {
                    if sink.flush().await.is_err() {
                        break 'outer;
                    }
                    fed = 0;
                    piece = next;
                }
                None => break,
            }
        }
        if sink.flush().await.is_err() {
            break;
        }
    }
    outbox.end(End::Quiet);
}

async fn close(sink: &mut SplitSink<WebSocket, Message>, how: End) {
    let (code, reason) = match how {
        End::Backpressure => {
            // positions are the consumer's own to track (AEP-0003 §3.5.4)
            let closing = proto::closing_frame("backpressure");
            let _ = sink.feed(Message::Text(closing.into())).await;
            (1013, "backpressure")
        }
        End::Shutdown => (1001, "shutting down"),
        End::ReplayFailed => (1011, "the replay store could not be read; resume"),
        End::Close(code, reason) => (code, reason),
        End::ReplayComplete | End::Quiet => {
            let _ = sink.flush().await;
            return;
        }
    };
    let _ = sink
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await;
}

/// Per-connection state the reader keeps.
#[derive(Debug)]
struct Session<'l> {
    limits: &'l Limits,
    hello: Option<Arc<Party>>,
    subscriptions: Lifecycle,
}

/// How many WebSocket messages one connection reads before it lets other tasks run.
const READ_RUN: usize = 64;

async fn read_loop(
    hub: &Arc<Hub>,
    limits: &Limits,
    conn: u64,
    outbox: &Arc<Outbox>,
    mut stream: SplitStream<WebSocket>,
) {
    let mut session = Session {
        limits,
        hello: None,
        subscriptions: Lifecycle::new(limits.subscriptions),
    };
    let mut since_yield = 0usize;
    let hello_by = tokio::time::Instant::now() + limits.hello_timeout;
    loop {
        let next = if session.hello.is_none() && !outbox.is_closed() {
            match tokio::time::timeout_at(hello_by, stream.next()).await {
                Ok(next) => next,
                Err(_) => {
                    // a socket that never says hello is not held (AEP-0003 §3.5 rule 1)
                    let detail = format!("no hello within {} ms", limits.hello_timeout.as_millis());
                    let frame =
                        proto::error_frame(ErrorCode::HelloRequired, None, None, Some(&detail));
                    send(outbox, frame);
                    outbox.end(End::Close(1002, "hello required"));
                    continue;
                }
            }
        } else {
            stream.next().await
        };
        let message = match next {
            Some(Ok(message)) => message,
            Some(Err(e)) => {
                if let Some(close) = closing_for(e) {
                    outbox.end(close);
                }
                break;
            }
            None => break,
        };
        // A burst that has arrived whole is read without ever waiting on the socket;
        // handing the runtime back every few messages lets the writers send what was
        // fanned out so far, so the next hop starts on it while this one reads on.
        since_yield += 1;
        if since_yield == READ_RUN {
            since_yield = 0;
            tokio::task::yield_now().await;
        }
        if outbox.is_closed() {
            continue;
        }
        let text = match message {
            Message::Text(text) => text,
            Message::Binary(_) => {
                // reserved in 0.1 (AEP-0003 §3.5.2)
                let frame =
                    proto::error_frame(ErrorCode::from("binary-unsupported"), None, None, None);
                send(outbox, frame);
                outbox.end(End::Close(1003, "binary frames are not supported"));
                continue;
            }
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        on_text(hub, conn, outbox, &mut session, text.as_str()).await;
    }
}

/// How to close after a message that could not be read: with the RFC 6455 §7.4.1 code
/// for what was wrong with it, so the peer learns why; `None` when the connection itself
/// is gone.
fn closing_for(e: axum::Error) -> Option<End> {
    use tungstenite::Error;
    let inner = e.into_inner();
    match inner.downcast_ref::<Error>()? {
        Error::Utf8(_) => Some(End::Close(1007, "a text message that is not UTF-8")),
        Error::Capacity(_) => Some(End::Close(1009, "message larger than this relay takes")),
        Error::Protocol(_) => Some(End::Close(1002, "WebSocket protocol error")),
        _ => None,
    }
}

fn send(outbox: &Outbox, frame: String) {
    outbox.push_frame(Bytes::from(frame));
}

async fn on_text(
    hub: &Arc<Hub>,
    conn: u64,
    outbox: &Arc<Outbox>,
    session: &mut Session<'_>,
    text: &str,
) {
    // After `hello`, events are the traffic: one that is accepted goes straight to
    // ingest, read once. Anything else (frames, subscription lifecycle messages, an
    // event to refuse) takes the general path below, which reads it as a `Value`; an
    // event's refusal is the one read here.
    let limits = session.limits;
    let max = limits.max_hello;
    if session.hello.is_none() && text.len() > max {
        // what a party declares is kept for the connection's life and copied into every
        // roster: its size is bounded before it is even read
        let detail = format!(
            "a hello of {} bytes; this relay takes {max} (AEP_MAX_HELLO)",
            text.len()
        );
        let frame = proto::error_frame(ErrorCode::LimitExceeded, None, None, Some(&detail));
        send(outbox, frame);
        outbox.end(End::Close(1009, "hello too large"));
        return;
    }
    let mut refusal = None;
    if session.hello.is_some() {
        let mut reading = None;
        match read_event(text, &mut reading) {
            Ok(incoming) => {
                let direct = incoming.routing().is_some_and(|(ty, _, _)| {
                    frame::is_event_type(ty) && !LifecycleMessage::is_lifecycle_type(ty)
                });
                if direct {
                    let stored = hub
                        .ingest(std::slice::from_ref(&incoming), Some(conn))
                        .await;
                    if let (Err(unstored), Some((_, _, id))) = (stored, incoming.routing()) {
                        // not stored (a full disk, NATS unreachable, an event larger than
                        // NATS takes): told in-band, the reason in the detail, so the
                        // emitter can send it again (the code set is closed, AEP-0003 §6)
                        let detail = unstored.detail();
                        let frame = proto::error_frame(
                            ErrorCode::LimitExceeded,
                            None,
                            Some(id),
                            Some(&detail),
                        );
                        send(outbox, frame);
                    }
                    return;
                }
            }
            Err(LineError::Invalid(detail) | LineError::Json(detail)) => refusal = Some(detail),
        }
    }
    let message = match serde_json::from_str::<Value>(text) {
        Ok(message) => message,
        Err(e) => {
            // serde's reason and position in the message as sent, as an HTTP ingest
            // gives for a line it cannot read
            let detail = e.to_string();
            let frame = proto::error_frame(ErrorCode::from("bad-json"), None, None, Some(&detail));
            send(outbox, frame);
            return;
        }
    };
    let ty = message.get("type").and_then(Value::as_str);
    let is_event = ty.is_some_and(frame::is_event_type);

    let Some(hello) = &session.hello else {
        on_hello(hub, conn, outbox, session, message, is_event);
        return;
    };

    if ty.is_some_and(LifecycleMessage::is_lifecycle_type) {
        let others = hub.subscriptions_of(conn, None);
        session
            .subscriptions
            .on_message(hub, outbox, &message, others);
        return;
    }

    if is_event {
        // After `hello` an event that was not ingested above was refused there: its
        // type reads the same in the envelope as in this `Value`.
        debug_assert!(refusal.is_some(), "an accepted event was not ingested");
        let detail =
            refusal.unwrap_or_else(|| "not an AEP envelope this relay can read".to_owned());
        let cause = message.get("id").and_then(Value::as_str);
        let frame =
            proto::error_frame(ErrorCode::from("invalid-event"), None, cause, Some(&detail));
        send(outbox, frame);
        return;
    }

    let frame = match Frame::from_value(message) {
        Ok(frame) => frame,
        Err(DecodeError::Frame(e)) => {
            // a malformed subscribe is refused in-band (AEP-0003 §6.5), any other ignored
            if let Some(refusal) = e.refusal() {
                send(outbox, Frame::Error(refusal).to_json());
            }
            return;
        }
        // unknown or unreadable frames are ignored (AEP-0003 §2)
        Err(_) => return,
    };
    match frame {
        Frame::Subscribe(request) => subscribe(
            hub,
            limits,
            conn,
            outbox,
            request,
            session.subscriptions.live(),
        ),
        Frame::Unsubscribe(IdFrame { id, .. }) => {
            hub.unsubscribe_ws(conn, &id);
            send(outbox, Frame::Unsubscribed(IdFrame::new(id)).to_json());
        }
        Frame::RosterRequest(IdFrame { id, .. }) => {
            if !hello.role().watches() {
                // watch-class: answered on consumer/both connections (AEP-0003 §4.1)
                let detail = "roster is answered on consumer/both connections";
                send(
                    outbox,
                    proto::error_frame(ErrorCode::Unauthorized, Some(&id), None, Some(detail)),
                );
            } else {
                // declarations relayed verbatim, as the claimants sent them (§4.1 rule 4);
                // a reply larger than the queue bound could never be sent: refused, so
                // it is never built whole
                let limit = limits.max_queued;
                match hub.roster_reply(&id, limit) {
                    Ok(reply) => send(outbox, reply),
                    Err(too_large) => {
                        let detail = format!(
                            "the roster reply passed {} bytes, more than this connection may have queued (--hard-backpressure {limit})",
                            too_large.at_least
                        );
                        let frame = proto::error_frame(
                            ErrorCode::LimitExceeded,
                            Some(&id),
                            None,
                            Some(&detail),
                        );
                        send(outbox, frame);
                    }
                }
            }
        }
        Frame::Ping(_) => {
            if let Some(pong) = frame.pong() {
                send(outbox, pong.to_json());
            }
        }
        // `pong` and unknown frame types are ignored (AEP-0003 §2)
        _ => {}
    }
}

/// The first message of a connection: a `hello` (AEP-0003 §3.5 rule 1, §4), or a
/// refusal and close.
fn on_hello(
    hub: &Arc<Hub>,
    conn: u64,
    outbox: &Arc<Outbox>,
    session: &mut Session<'_>,
    message: Value,
    is_event: bool,
) {
    let refuse = |code: ErrorCode, detail: Option<&str>, close: End| {
        send(outbox, proto::error_frame(code, None, None, detail));
        outbox.end(close);
    };
    let hello_required = End::Close(1002, "hello required");
    let offered = match Frame::from_value(message) {
        Ok(Frame::Hello(h)) if !is_event => h,
        _ => return refuse(ErrorCode::HelloRequired, None, hello_required),
    };
    let role = match offered.party_role() {
        Ok(role) => role,
        Err(other) => {
            let detail = format!(
                "role {:?} is not emitter, consumer or both (AEP-0003 §4 rule 2)",
                other.as_str()
            );
            return refuse(ErrorCode::HelloRequired, Some(&detail), hello_required);
        }
    };
    let Some(version) = offered.select_version(&proto::VERSIONS) else {
        send(outbox, proto::version_unsupported_frame());
        outbox.end(End::Close(1002, "version unsupported"));
        return;
    };
    let declared = Arc::new(Party::new(role, *offered));
    hub.hello(conn, declared.clone());
    session.hello = Some(declared);
    send(
        outbox,
        proto::hello_reply(session.limits.replay_depth, version),
    );
}

/// A `subscribe` frame (AEP-0003 §6.5): refused in-band from the closed code set, the
/// connection surviving; otherwise `subscribed`, the replay, then live delivery.
/// `others`: the subscription-model subscriptions the connection holds besides, which
/// count toward the same cap.
fn subscribe(
    hub: &Arc<Hub>,
    limits: &Limits,
    conn: u64,
    outbox: &Arc<Outbox>,
    request: Subscribe,
    others: usize,
) {
    let id = request.id;
    let refuse = |code: ErrorCode, detail: String| {
        send(
            outbox,
            proto::error_frame(code, Some(&id), None, Some(&detail)),
        );
    };
    // re-using an id replaces that subscription: it adds none
    let held = hub.subscriptions_of(conn, Some(&id)) + others;
    let max = limits.subscriptions.max;
    if held >= max {
        let detail = format!(
            "this connection holds {held} subscriptions, the most this relay fans out to on one (AEP_MAX_SUBSCRIPTIONS={max})"
        );
        return refuse(ErrorCode::LimitExceeded, detail);
    }
    let filter = match request.filter.as_ref().filter(|f| !f.is_null()) {
        None => Filter::default(),
        Some(f) => match proto::parse_filter(f) {
            Ok(filter) => filter,
            Err(detail) => return refuse(ErrorCode::InvalidFilter, detail),
        },
    };
    let mut ask = ReplayAsk::default();
    match request.from {
        None => {}
        Some(ReplayFrom::All) => ask.all = true,
        Some(ReplayFrom::Positions(positions)) => {
            let max = limits.max_from;
            if positions.len() > max {
                let detail = format!("from exceeds AEP_MAX_FROM={max} resume positions");
                return refuse(ErrorCode::LimitExceeded, detail);
            }
            ask.positions = positions.into_iter().map(ResumeFrom::from).collect();
        }
    }
    let subscribed = Frame::Subscribed(IdFrame::new(id.clone())).to_json();
    let mut subscription = SubscribeRequest::new(Binding::Ws, filter);
    subscription.capture = request.capture;
    subscription.replay = ask;
    subscription.first = Some(Bytes::from(subscribed));
    subscription.conn = Some((conn, id.clone()));
    subscription.sub = Some(id.clone());
    if let Err(full) = hub.subscribe_bounded(outbox, subscription) {
        refuse(ErrorCode::LimitExceeded, full.detail());
    }
}
