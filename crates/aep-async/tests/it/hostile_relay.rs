//! Every reader against a relay that lies (issue 32, point 1): servers written here that
//! send an endless line, an endless event, a message past the bound, headers and then
//! silence, a page that is not an SSE stream, or a stream cut in the middle of an
//! event. Each is refused with a typed error naming what went wrong, reported as a
//! notice, and retried on the reconnect backoff; memory stays within the bounds.
#![cfg(all(feature = "sse", feature = "ws"))]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aep_async::control::{ControlOptions, DuplexOptions};
use aep_async::{
    Client, Limit, Notice, ReadLimits, StartFrom, SubscribeOptions, Subscription, TransportError,
};
use aep_core::frame::{self, Frame, Hello, Message as AepMessage, Role};
use aep_core::resume::ResumePosition;
use aep_test_support::events::json_event;
use aep_test_support::task::AbortOnDrop;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// The head of an SSE answer whose body runs until the connection closes.
const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";

/// A hostile HTTP server: each connection's request head is read and kept, then
/// `script(n, request, socket)` runs for the `n`th connection (0-based).
struct Hostile {
    url: String,
    conns: Conns,
    _task: AbortOnDrop,
}

/// When each connection came, and its request head (empty on a WebSocket).
type Conns = Arc<Mutex<Vec<(Instant, String)>>>;

/// Notes a connection; returns its number (from 0).
fn record(conns: &Conns, at: Instant, head: String) -> usize {
    let mut seen = conns.lock().unwrap();
    seen.push((at, head));
    seen.len() - 1
}

impl Hostile {
    async fn start<F, Fut>(script: F) -> Hostile
    where
        F: Fn(usize, String, TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let script = Arc::new(script);
        Hostile::serve(move |mut sock, conns| {
            let at = Instant::now();
            let script = script.clone();
            async move {
                let Some(head) = read_head(&mut sock).await else {
                    return;
                };
                let n = record(&conns, at, head.clone());
                script(n, head, sock).await;
            }
        })
        .await
    }

    /// A hostile SSE endpoint: the head of an event stream is written on each
    /// connection, then `script(n, socket)` runs for the `n`th (0-based).
    async fn sse<F, Fut>(script: F) -> Hostile
    where
        F: Fn(usize, TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let script = Arc::new(script);
        Hostile::start(move |n, _, mut sock| {
            let script = script.clone();
            async move {
                let _ = sock.write_all(SSE_HEAD).await;
                script(n, sock).await;
            }
        })
        .await
    }

    /// The accept loop both servers share: `handle(socket, conns)` runs on a task of its
    /// own for each connection, and notes it in `conns`.
    async fn serve<F, Fut>(handle: F) -> Hostile
    where
        F: Fn(TcpStream, Conns) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let conns = Conns::default();
        let seen = conns.clone();
        let _task = AbortOnDrop::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(handle(sock, seen.clone()));
            }
        });
        Hostile { url, conns, _task }
    }

    fn count(&self) -> usize {
        self.conns.lock().unwrap().len()
    }

    /// The gaps between consecutive connections.
    fn gaps(&self) -> Vec<Duration> {
        let conns = self.conns.lock().unwrap();
        conns.windows(2).map(|w| w[1].0 - w[0].0).collect()
    }

    fn request(&self, n: usize) -> String {
        self.conns.lock().unwrap()[n].1.clone()
    }

    async fn wait_for_connections(&self, n: usize) {
        aep_test_support::wait::until(&format!("{n} connections"), || self.count() >= n).await;
    }
}

async fn read_head(sock: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            return Some(String::from_utf8_lossy(&buf).into_owned());
        }
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Writes `piece` until the peer goes away; how many bytes it took.
async fn write_forever(sock: &mut TcpStream, piece: &[u8]) -> usize {
    let mut sent = 0;
    while sock.write_all(piece).await.is_ok() {
        sent += piece.len();
    }
    sent
}

/// Reads what the client sends until it goes: the connection held open, saying nothing.
async fn hold_open(sock: &mut TcpStream) {
    let mut sink = [0u8; 64];
    while !matches!(sock.read(&mut sink).await, Ok(0) | Err(_)) {}
}

/// One SSE message carrying `event`.
async fn send_event(sock: &mut TcpStream, event: &serde_json::Value) {
    let _ = sock
        .write_all(format!("data: {event}\n\n").as_bytes())
        .await;
}

/// A subscription whose notices come out of a channel, typed.
fn subscribed(
    client: Client,
    options: SubscribeOptions,
) -> (Subscription, mpsc::UnboundedReceiver<Notice>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let options = options.on_notice(move |n| {
        let _ = tx.send(n);
    });
    (client.subscribe(options), rx)
}

/// The next `Notice::Error`, skipping other notices; fails after 20 s.
async fn next_error(notices: &mut mpsc::UnboundedReceiver<Notice>) -> TransportError {
    let wait = async {
        loop {
            match notices.recv().await {
                Some(Notice::Error(e)) => return e,
                Some(_) => continue,
                None => panic!("the subscription ended without an error notice"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .expect("an error notice within 20 s")
}

/// A client of `url` that reconnects soon.
fn fast(url: &str) -> Client {
    Client::new(url).backoff(MS(50), MS(400))
}

async fn next_event(sub: &mut Subscription) -> aep_core::Event {
    tokio::time::timeout(Duration::from_secs(20), sub.next())
        .await
        .expect("an event within 20 s")
        .expect("the subscription goes on")
}

/// A quiet stream the idle timeout must not cut: the event at seq 1 arrives over the one
/// connection opened, and no error was noticed on the way.
async fn assert_stayed_up(
    server: &Hostile,
    sub: &mut Subscription,
    notices: &mut mpsc::UnboundedReceiver<Notice>,
) {
    assert_eq!(next_event(sub).await.seq(), Some(1));
    assert_eq!(server.count(), 1, "one connection all along");
    while let Ok(n) = notices.try_recv() {
        assert!(!matches!(n, Notice::Error(_)), "{n:?}");
    }
}

#[tokio::test]
async fn an_endless_sse_line_is_refused_at_the_line_bound() {
    let taken = Arc::new(Mutex::new(Vec::new()));
    let counted = taken.clone();
    let server = Hostile::sse(move |_, mut sock| {
        let counted = counted.clone();
        async move {
            let _ = sock.write_all(b"data: ").await;
            let sent = write_forever(&mut sock, &[b'x'; 64 * 1024]).await;
            counted.lock().unwrap().push(sent);
        }
    })
    .await;
    let limits = ReadLimits::new().max_line(1 << 20);
    let (_sub, mut notices) = subscribed(
        fast(&server.url).read_limits(limits),
        SubscribeOptions::new(),
    );
    let e = next_error(&mut notices).await;
    let exceeded = e.limit_exceeded().expect("the bound is named");
    assert_eq!((exceeded.limit(), exceeded.max()), (Limit::Line, 1 << 20));
    assert!(e.to_string().contains("max_line"), "{e}");
    // the reader dropped the connection and came back for more
    server.wait_for_connections(2).await;
    aep_test_support::wait::until("the first connection to be dropped", || {
        !taken.lock().unwrap().is_empty()
    })
    .await;
    // what the server got rid of before the reader hung up: the bound and what the
    // socket buffers hold, never an unbounded amount
    let sent = taken.lock().unwrap()[0];
    assert!(
        sent < 64 << 20,
        "{sent} bytes written before the reader hung up"
    );
}

#[tokio::test]
async fn an_endless_comment_and_an_endless_event_name_their_bounds() {
    let server = Hostile::sse(|n, mut sock| async move {
        if n == 0 {
            let _ = sock.write_all(b":").await;
            write_forever(&mut sock, &[b' '; 16 * 1024]).await;
        } else {
            // short lines, never a blank one: one event that never ends
            write_forever(&mut sock, &b"data: xxxxxxxxxxxxxxxx\n".repeat(1000)).await;
        }
    })
    .await;
    let limits = ReadLimits::new().max_line(64 * 1024).max_event(256 * 1024);
    let (_sub, mut notices) = subscribed(
        fast(&server.url).read_limits(limits),
        SubscribeOptions::new(),
    );
    let line = next_error(&mut notices).await;
    assert_eq!(line.limit_exceeded().map(|l| l.limit()), Some(Limit::Line));
    let event = next_error(&mut notices).await;
    let exceeded = event.limit_exceeded().expect("the bound is named");
    assert_eq!(
        (exceeded.limit(), exceeded.max()),
        (Limit::Event, 256 * 1024)
    );
    assert!(event.to_string().contains("max_event"), "{event}");
}

/// Headers, then silence: dead after the idle timeout, and the subscription reconnects
/// and resumes from what it took.
#[tokio::test]
async fn a_silent_stream_is_dead_after_the_idle_timeout_and_resumed() {
    let server = Hostile::sse(|n, mut sock| async move {
        if n == 0 {
            send_event(&mut sock, &json_event("progress.status", "s-idle", 3)).await;
        }
        // then nothing, with the connection held open
        hold_open(&mut sock).await;
    })
    .await;
    let limits = ReadLimits::new().idle_timeout(MS(300));
    let (mut sub, mut notices) = subscribed(
        fast(&server.url).read_limits(limits),
        SubscribeOptions::new(),
    );
    let first = next_event(&mut sub).await;
    assert_eq!(first.seq(), Some(3));
    let e = next_error(&mut notices).await;
    assert!(e.is_timeout(), "{e:?}");
    assert!(e.to_string().contains("idle timeout"), "{e}");
    server.wait_for_connections(2).await;
    // the reconnect asks for what follows the event taken
    let second = server.request(1);
    let from = ResumePosition::new("s-idle", 0, 3);
    assert!(
        second.contains(&aep_core::resume::encode_from(&[from])),
        "{second}"
    );
}

/// A relay that pings keeps a quiet stream alive past the idle timeout.
#[tokio::test]
async fn heartbeats_keep_a_quiet_stream_alive() {
    let server = Hostile::sse(|_, mut sock| async move {
        // twelve heartbeats 250 ms apart: three seconds, past the idle timeout (with
        // room for a busy machine between two of them)
        for _ in 0..12 {
            let _ = sock.write_all(b": ping\n\n").await;
            tokio::time::sleep(MS(250)).await;
        }
        send_event(&mut sock, &json_event("progress.status", "s-hb", 1)).await;
        hold_open(&mut sock).await;
    })
    .await;
    let limits = ReadLimits::new().idle_timeout(MS(2000));
    let (mut sub, mut notices) = subscribed(
        Client::new(&server.url).read_limits(limits),
        SubscribeOptions::new(),
    );
    assert_stayed_up(&server, &mut sub, &mut notices).await;
}

/// `200 text/html`: refused as not an SSE stream, reported every time, and retried on
/// the backoff, each wait at least as long as the one before it.
#[tokio::test]
async fn a_page_that_is_not_an_sse_stream_is_refused_and_retried_on_the_backoff() {
    let server = Hostile::start(|_, _, mut sock| async move {
        let page = "<html>hello</html>";
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{page}",
            page.len()
        );
        let _ = sock.write_all(answer.as_bytes()).await;
        let _ = sock.shutdown().await;
    })
    .await;
    let (_sub, mut notices) = subscribed(
        Client::new(&server.url).backoff(MS(100), MS(800)),
        SubscribeOptions::new(),
    );
    for _ in 0..4 {
        let e = next_error(&mut notices).await;
        assert!(e.to_string().contains("not an SSE stream"), "{e}");
        assert!(e.to_string().contains("`text/html`"), "{e}");
    }
    server.wait_for_connections(5).await;
    let gaps = server.gaps();
    for (gap, least) in gaps.iter().zip([100, 200, 400, 800].map(MS)) {
        assert!(
            *gap >= least,
            "gaps {gaps:?}: the backoff paces the retries"
        );
    }
}

/// Half an event and the end: reported as a cut, retried on the backoff; the half is
/// never taken for an event.
#[tokio::test]
async fn a_stream_cut_mid_event_is_reported_and_retried_on_the_backoff() {
    let server = Hostile::sse(|_, mut sock| async move {
        let _ = sock
            .write_all(b"event: progress.status\ndata: {\"aep\":\"0.1\",")
            .await;
        let _ = sock.shutdown().await;
    })
    .await;
    let (mut sub, mut notices) = subscribed(
        Client::new(&server.url).backoff(MS(100), MS(800)),
        SubscribeOptions::new(),
    );
    for _ in 0..3 {
        let e = next_error(&mut notices).await;
        assert!(e.to_string().contains("middle of an event"), "{e}");
        assert!(e.is_network() && !e.is_timeout());
    }
    server.wait_for_connections(4).await;
    let gaps = server.gaps();
    for (gap, least) in gaps.iter().zip([100, 200, 400].map(MS)) {
        assert!(*gap >= least, "gaps {gaps:?}");
    }
    assert!(futures::FutureExt::now_or_never(sub.next()).is_none());
}

// --- WebSocket readers -------------------------------------------------------------

/// A hostile WebSocket endpoint: `script(n, socket)` runs once the `hello`s are
/// exchanged on the `n`th connection.
async fn ws_server<F, Fut>(script: F) -> Hostile
where
    F: Fn(usize, WebSocketStream<TcpStream>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let script = Arc::new(script);
    Hostile::serve(move |tcp, conns| {
        let n = record(&conns, Instant::now(), String::new());
        let script = script.clone();
        async move {
            let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                return;
            };
            if !matches!(ws.next().await, Some(Ok(Message::Text(_)))) {
                return;
            }
            let hello = Frame::Hello(Box::new(Hello::new(Role::Both))).to_json();
            if ws.send(Message::text(hello)).await.is_ok() {
                script(n, ws).await;
            }
        }
    })
    .await
}

/// Reads until the client goes; answers nothing.
async fn deaf(mut ws: WebSocketStream<TcpStream>) {
    while let Some(Ok(_)) = ws.next().await {}
}

#[tokio::test]
async fn a_websocket_message_past_the_bound_drops_the_connection() {
    let server = ws_server(|_, mut ws| async move {
        // the subscribe frame, then one message twice the bound
        let _ = ws.next().await;
        let big = format!(r#"{{"type":"x.big","pad":"{}"}}"#, "y".repeat(2 << 20));
        let _ = ws.send(Message::text(big)).await;
        deaf(ws).await;
    })
    .await;
    let limits = ReadLimits::new().max_frame(1 << 20);
    let options = SubscribeOptions::new().transport(aep_async::Transport::WebSocket);
    let (_sub, mut notices) = subscribed(fast(&server.url).read_limits(limits), options);
    let e = next_error(&mut notices).await;
    let exceeded = e.limit_exceeded().expect("the bound is named");
    assert_eq!((exceeded.limit(), exceeded.max()), (Limit::Frame, 1 << 20));
    assert!(e.to_string().contains("max_frame"), "{e}");
    server.wait_for_connections(2).await;
}

/// An endpoint that neither writes nor answers `ping`: pinged, then dead after the idle
/// timeout; the connection comes back.
#[tokio::test]
async fn a_silent_websocket_is_pinged_then_dropped() {
    let pings = Arc::new(Mutex::new(0usize));
    let counted = pings.clone();
    let server = ws_server(move |_, mut ws| {
        let counted = counted.clone();
        async move {
            while let Some(Ok(Message::Text(t))) = ws.next().await {
                if let Ok(AepMessage::Frame(Frame::Ping(_))) = frame::decode(t.as_str()) {
                    *counted.lock().unwrap() += 1;
                }
            }
        }
    })
    .await;
    let conn = fast(&server.url)
        .read_limits(ReadLimits::new().idle_timeout(MS(600)))
        .ws_connection();
    let (tx, mut notices) = mpsc::unbounded_channel();
    let _sub = conn.subscribe(SubscribeOptions::new().on_notice(move |n| {
        let _ = tx.send(n);
    }));
    let e = next_error(&mut notices).await;
    assert!(e.is_timeout(), "{e:?}");
    assert!(*pings.lock().unwrap() >= 1, "pinged before it was given up");
    server.wait_for_connections(2).await;
}

/// An endpoint that never pings on its own but answers `ping`s stays up.
#[tokio::test]
async fn a_quiet_websocket_that_answers_pings_stays_up() {
    let event = json_event("progress.status", "s-ws", 1).to_string();
    let server = ws_server(move |_, mut ws| {
        let event = event.clone();
        async move {
            let started = Instant::now();
            let mut sent = false;
            while let Some(Ok(Message::Text(t))) = ws.next().await {
                if let Ok(AepMessage::Frame(f @ Frame::Ping(_))) = frame::decode(t.as_str()) {
                    let pong = f.pong().unwrap().to_json();
                    let _ = ws.send(Message::text(pong)).await;
                }
                // past two idle timeouts, the event
                if !sent && started.elapsed() > MS(4500) {
                    let _ = ws.send(Message::text(event.clone())).await;
                    sent = true;
                }
            }
        }
    })
    .await;
    let options = SubscribeOptions::new().transport(aep_async::Transport::WebSocket);
    let client = Client::new(&server.url).read_limits(ReadLimits::new().idle_timeout(MS(2000)));
    let (mut sub, mut notices) = subscribed(client, options);
    assert_stayed_up(&server, &mut sub, &mut notices).await;
}

#[tokio::test]
async fn a_silent_endpoint_ends_a_duplex_with_a_timeout() {
    let server = ws_server(|_, ws| deaf(ws)).await;
    let client = Client::new(&server.url).read_limits(ReadLimits::new().idle_timeout(MS(300)));
    let mut duplex = client.duplex(DuplexOptions::new()).await.unwrap();
    let wait = tokio::time::timeout(Duration::from_secs(20), duplex.recv());
    let e = wait.await.unwrap().expect("an error").unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(duplex.recv().await.is_none());
}

#[tokio::test]
async fn a_silent_endpoint_makes_the_control_client_reconnect() {
    let server = ws_server(|_, ws| deaf(ws)).await;
    let client = fast(&server.url)
        .read_limits(ReadLimits::new().idle_timeout(MS(300)))
        .control(ControlOptions::new())
        .await
        .unwrap();
    server.wait_for_connections(2).await;
    drop(client);
}

/// What a subscription resumes from after the reader dropped a hostile connection is
/// what it took: the start positions ride the reconnect.
#[tokio::test]
async fn a_dropped_connection_resumes_from_the_start_positions() {
    let server = Hostile::sse(|n, mut sock| async move {
        if n == 0 {
            write_forever(&mut sock, &[b'x'; 16 * 1024]).await;
        }
        hold_open(&mut sock).await;
    })
    .await;
    let at = ResumePosition::new("s-from", 2, 9);
    let options = SubscribeOptions::new().start_from(StartFrom::Positions(vec![at.clone()]));
    let client = fast(&server.url).read_limits(ReadLimits::new().max_line(64 * 1024));
    let (_sub, mut notices) = subscribed(client, options);
    next_error(&mut notices).await;
    server.wait_for_connections(2).await;
    let expected = aep_core::resume::encode_from(&[at]);
    assert!(server.request(0).contains(&expected));
    assert!(server.request(1).contains(&expected));
}
