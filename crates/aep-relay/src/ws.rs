//! The WebSocket binding (AEP-0003 §3.5): `hello` first, subscriptions multiplexed on one
//! connection, events in both directions, `roster`, `ping`/`pong`, and commands routed to
//! the one connection that claims their session (AEP-0004 §4).
//!
//! Each connection has a reader (this module's loop) and a writer task that drains the
//! connection's [`Outbox`]; everything sent toward the peer goes through that one queue,
//! so replies, replays and live events keep their order.

use std::sync::Arc;
use std::time::Duration;

use aep_core::Capture;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Map, Value};

use crate::hub::{parse_event, Hello, Hub, LineError, ReplayAsk};
use crate::outbox::{Binding, Drain, End, Outbox, Piece};
use crate::proto::{self, Filter};

/// Accepts the upgrade; incoming messages are capped like an ingest body.
pub(crate) fn upgrade(hub: Arc<Hub>, ws: WebSocketUpgrade) -> Response {
    let max = hub.config.max_body.max(1024);
    ws.max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| serve(hub, socket))
}

fn frame_bytes(frame: &Value) -> Bytes {
    Bytes::from(frame.to_string())
}

async fn serve(hub: Arc<Hub>, socket: WebSocket) {
    let (outbox, rx) = hub.outbox();
    let conn = hub.connect(outbox.clone());
    if hub.is_shutting_down() {
        outbox.end(End::Shutdown);
    }
    let (sink, stream) = socket.split();
    let drain = Drain::new(rx, outbox.clone(), Binding::Ws, hub.config.heartbeat);
    let mut writer = tokio::spawn(write_loop(sink, drain, outbox.clone()));
    let reader = read_loop(&hub, conn, &outbox, stream);
    tokio::pin!(reader);
    tokio::select! {
        () = &mut reader => {
            outbox.end(End::Quiet);
            let _ = writer.await;
        }
        _ = &mut writer => {
            // we closed: give the peer a moment to answer the close handshake
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
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
                    Message::Text(json!({ "type": "ping", "t": t }).to_string().into())
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
            let closing = proto::closing_frame("backpressure", Vec::new());
            let _ = sink.feed(Message::Text(closing.to_string().into())).await;
            (1013, "backpressure")
        }
        End::Shutdown => (1001, "shutting down"),
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
#[derive(Debug, Default)]
struct Session {
    hello: Option<Hello>,
}

async fn read_loop(
    hub: &Arc<Hub>,
    conn: u64,
    outbox: &Arc<Outbox>,
    mut stream: SplitStream<WebSocket>,
) {
    let mut session = Session::default();
    while let Some(Ok(message)) = stream.next().await {
        if outbox.is_closed() {
            continue;
        }
        let text = match message {
            Message::Text(text) => text,
            Message::Binary(_) => {
                // reserved in 0.1 (AEP-0003 §3.5.2)
                send(outbox, &proto::error_frame("binary-unsupported", None, None, None));
                outbox.end(End::Close(1003, "binary frames are not supported"));
                continue;
            }
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        on_text(hub, conn, outbox, &mut session, text.as_str()).await;
    }
}

fn send(outbox: &Outbox, frame: &Value) {
    outbox.push_frame(frame_bytes(frame));
}

async fn on_text(hub: &Arc<Hub>, conn: u64, outbox: &Arc<Outbox>, session: &mut Session, text: &str) {
    let Ok(message) = serde_json::from_str::<Value>(text) else {
        send(outbox, &proto::error_frame("bad-json", None, None, None));
        return;
    };
    let is_event = proto::is_event_frame(&message);
    let frame_type = message.get("type").and_then(Value::as_str).unwrap_or("");

    let Some(hello) = &session.hello else {
        if is_event || frame_type != "hello" {
            send(outbox, &proto::error_frame("hello-required", None, None, None));
            outbox.end(End::Close(1002, "hello required"));
            return;
        }
        if !proto::offers_supported_version(&message) {
            send(outbox, &proto::version_unsupported_frame());
            outbox.end(End::Close(1002, "version unsupported"));
            return;
        }
        let hello = Hello::from_frame(&message);
        hub.hello(conn, hello.clone());
        session.hello = Some(hello);
        send(outbox, &proto::hello_reply(&hub.config));
        return;
    };

    if is_event {
        let cause = message.get("id").and_then(Value::as_str);
        match parse_event(text.as_bytes()) {
            Ok(incoming) => hub.ingest(std::slice::from_ref(&incoming), Some(conn)).await,
            Err(LineError::Invalid(detail) | LineError::Json(detail)) => send(
                outbox,
                &proto::error_frame("invalid-event", None, cause, Some(&detail)),
            ),
        }
        return;
    }

    let id = message.get("id");
    match frame_type {
        "subscribe" => subscribe(hub, conn, outbox, &message),
        "unsubscribe" => {
            let key = id.cloned().unwrap_or(Value::Null).to_string();
            hub.unsubscribe_ws(conn, &key);
            send(outbox, &reply("unsubscribed", id));
        }
        "roster" => {
            if hello.role == "emitter" {
                // watch-class: answered on consumer/both connections (AEP-0003 §4.1)
                send(
                    outbox,
                    &proto::error_frame(
                        "unauthorized",
                        Some(id.unwrap_or(&Value::Null)),
                        None,
                        Some("roster is answered on consumer/both connections"),
                    ),
                );
            } else {
                let mut frame = reply("roster", id);
                if let Some(object) = frame.as_object_mut() {
                    object.insert("entries".into(), Value::Array(hub.roster()));
                }
                send(outbox, &frame);
            }
        }
        "ping" => {
            let mut frame = Map::new();
            frame.insert("type".into(), "pong".into());
            if let Some(t) = message.get("t") {
                frame.insert("t".into(), t.clone());
            }
            send(outbox, &Value::Object(frame));
        }
        // `pong` and unknown frame types are ignored (AEP-0003 §2)
        _ => {}
    }
}

/// `{ "type": kind, "id": id }`, the id omitted when the request had none.
fn reply(kind: &str, id: Option<&Value>) -> Value {
    let mut frame = Map::new();
    frame.insert("type".into(), kind.into());
    if let Some(id) = id {
        frame.insert("id".into(), id.clone());
    }
    Value::Object(frame)
}

/// A `subscribe` frame (AEP-0003 §6.5): refused in-band from the closed code set, the
/// connection surviving; otherwise `subscribed`, the replay, then live delivery.
fn subscribe(hub: &Arc<Hub>, conn: u64, outbox: &Arc<Outbox>, message: &Value) {
    let id = message.get("id");
    let refuse = |code: &str, detail: String| {
        send(
            outbox,
            &proto::error_frame(code, Some(id.unwrap_or(&Value::Null)), None, Some(&detail)),
        );
    };
    let filter = match message.get("filter").filter(|f| !f.is_null()) {
        None => Filter::default(),
        Some(f) => match Filter::parse(f) {
            Ok(filter) => filter,
            Err(detail) => return refuse("invalid-filter", detail),
        },
    };
    let capture = match message.get("capture").filter(|c| !c.is_null()) {
        None => None,
        Some(c) => match c.as_str().and_then(|s| s.parse::<Capture>().ok()) {
            Some(capture) => Some(capture),
            None => return refuse("invalid-filter", format!("unknown capture level: {c}")),
        },
    };
    let mut ask = ReplayAsk::default();
    match message.get("from") {
        None => {}
        Some(Value::String(s)) if s == "all" => ask.all = true,
        Some(from @ Value::Array(items)) => {
            let max = hub.config.max_from();
            if items.len() > max {
                return refuse(
                    "limit-exceeded",
                    format!("from exceeds AEP_MAX_FROM={max} resume positions"),
                );
            }
            match proto::parse_from(from) {
                Ok(positions) => ask.positions = positions,
                Err(detail) => return refuse("invalid-filter", detail),
            }
        }
        Some(_) => {
            return refuse(
                "invalid-filter",
                "from must be an array of resume positions or the string \"all\"".into(),
            )
        }
    }
    let key = id.cloned().unwrap_or(Value::Null);
    hub.subscribe(
        outbox,
        Binding::Ws,
        Some((conn, key.to_string())),
        filter,
        capture,
        ask,
        Some(frame_bytes(&reply("subscribed", id))),
        Some(key),
        true,
    );
}
