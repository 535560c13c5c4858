//! [`Duplex`]: the WebSocket binding with `hello` done, JSON messages in and out.

use std::time::Duration;

use aep_core::frame::{Hello, Identity, Message as AepMessage, Role};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tracing::Instrument;

use crate::error::TransportError;
use crate::limits::ReadLimits;
use crate::transport::idle::{Idle, IdleTimer};
use crate::transport::ws::{
    classify, close_socket, hello as crate_hello, open, ping_frame, ws_error, Inbound, WsStream,
};

/// How to open a [`Duplex`].
///
/// ```
/// use std::time::Duration;
/// use aep_async::control::DuplexOptions;
/// use aep_core::frame::Role;
/// let opts = DuplexOptions::new().token("secret").role(Role::Consumer).connect_timeout(Duration::from_secs(5));
/// # let _ = opts;
/// ```
#[derive(Clone)]
#[must_use]
pub struct DuplexOptions {
    pub(crate) token: Option<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) hello: Hello,
    pub(crate) limits: ReadLimits,
}

impl std::fmt::Debug for DuplexOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DuplexOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("hello", &self.hello)
            .field("read_limits", &self.limits)
            .finish()
    }
}

impl Default for DuplexOptions {
    fn default() -> Self {
        DuplexOptions::new()
    }
}

impl DuplexOptions {
    /// No token, a 30 s connect timeout, a consumer `hello` from `aep-rust-control`, and
    /// read limits [`ReadLimits::new`] (a message 16 MiB + 1 KiB, idle 90 s).
    pub fn new() -> Self {
        DuplexOptions {
            token: None,
            connect_timeout: Duration::from_secs(30),
            hello: crate_hello(Role::Consumer, "aep-rust-control", "aep-rust", None),
            limits: ReadLimits::new(),
        }
    }
    /// What the duplex takes from the endpoint: the largest WebSocket message and the
    /// idle timeout ([`ReadLimits`]). A message past the bound, or silence past the
    /// timeout (the duplex pings after a third of it), ends the connection:
    /// [`Duplex::recv`] gives the error, then `None`.
    pub fn read_limits(mut self, limits: ReadLimits) -> Self {
        self.limits = limits;
        self
    }
    /// The bearer token sent with the upgrade request (AEP-0003 §8.1).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }
    /// One bound over TCP connect, TLS, the upgrade and the `hello` wait (default 30 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
    /// The role declared at `hello`.
    pub fn role(mut self, role: Role) -> Self {
        self.hello.role = Some(role);
        self
    }
    /// The identity declared at `hello`.
    pub fn identity(mut self, agent: impl Into<String>, instance: impl Into<String>) -> Self {
        self.hello.identity = Some(Identity::new(agent).with_instance(instance));
        self
    }
    /// The whole `hello` to send (versions, role, identity, capabilities).
    pub fn hello(mut self, hello: Hello) -> Self {
        self.hello = hello;
        self
    }
}

enum Op {
    Send(String, oneshot::Sender<Result<(), TransportError>>),
    Close(oneshot::Sender<()>),
}

/// A JSON-message WebSocket to `{base}/socket` with the `hello` exchange done
/// (AEP-0003 §3.5, §4).
///
/// One task owns the socket: it answers `ping` frames (and WebSocket pings) itself,
/// hands every other message to [`recv`](Self::recv), and writes what
/// [`send`](Self::send) gives it, in order. [`close`](Self::close) sends a `closing`
/// frame and the WebSocket close, once; later calls return at once.
///
/// ```no_run
/// use aep_async::control::{open_duplex, DuplexOptions};
/// use aep_core::frame::{Frame, Message, IdFrame};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut duplex = open_duplex("http://127.0.0.1:8787", DuplexOptions::new().token("secret")).await?;
/// if duplex.hello().capabilities().supports_roster() {
///     duplex.send(&Message::Frame(Frame::RosterRequest(IdFrame::new("r1")))).await?;
///     while let Some(msg) = duplex.recv().await {
///         if let Ok(Message::Frame(Frame::Roster(reply))) = msg {
///             println!("{} live claims", reply.entries.len());
///             break;
///         }
///     }
/// }
/// duplex.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Duplex {
    ops: mpsc::UnboundedSender<Op>,
    inbound: mpsc::Receiver<Result<AepMessage, TransportError>>,
    hello: Hello,
}

/// Opens `{base}/socket` (`http(s)` becomes `ws(s)`), sends `options`' `hello` and
/// waits for the endpoint's, all under the one connect timeout.
///
/// A refused upgrade is [`TransportErrorKind::Http`](crate::TransportErrorKind::Http)
/// with the status (401 for a wrong token); an endpoint that never answers is a
/// `Network` error once the timeout passes.
pub async fn open_duplex(base: &str, options: DuplexOptions) -> Result<Duplex, TransportError> {
    let (ws, hello) = open(
        base,
        options.token.as_deref(),
        options.connect_timeout,
        &options.hello,
        &options.limits,
    )
    .await?;
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (in_tx, in_rx) = mpsc::channel(1024);
    let span = tracing::info_span!("aep_duplex", base = %aep_core::redact::redact_urls(base));
    tokio::spawn(serve(ws, ops_rx, in_tx, options.limits.idle()).instrument(span));
    Ok(Duplex {
        ops: ops_tx,
        inbound: in_rx,
        hello,
    })
}

impl Duplex {
    /// The endpoint's `hello`: its version, identity and capabilities.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Writes one event or frame.
    pub async fn send(&self, message: &AepMessage) -> Result<(), TransportError> {
        self.send_text(message.to_json()).await
    }

    /// Writes one JSON text as is.
    pub async fn send_text(&self, text: impl Into<String>) -> Result<(), TransportError> {
        let (tx, rx) = oneshot::channel();
        self.ops
            .send(Op::Send(text.into(), tx))
            .map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// The next event or frame from the endpoint, `None` once the connection is closed.
    /// An undecodable text message, or a binary one, is an `Err` of kind
    /// [`Parse`](crate::TransportErrorKind::Parse); the connection goes on.
    pub async fn recv(&mut self) -> Option<Result<AepMessage, TransportError>> {
        self.inbound.recv().await
    }

    /// Closes the connection in order: a `closing` frame, then the WebSocket close.
    /// Idempotent.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.ops.send(Op::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

fn closed() -> TransportError {
    TransportError::network_msg("the duplex is closed")
}

type Write = SplitSink<WsStream, Message>;

async fn serve(
    ws: WsStream,
    mut ops: mpsc::UnboundedReceiver<Op>,
    inbound: mpsc::Sender<Result<AepMessage, TransportError>>,
    idle_timeout: Duration,
) {
    let (mut write, mut read): (Write, SplitStream<WsStream>) = ws.split();
    let mut idle = IdleTimer::new(idle_timeout);
    loop {
        tokio::select! {
            tick = idle.tick() => match tick {
                Idle::Ping => {
                    if write.send(Message::text(ping_frame())).await.is_err() {
                        return;
                    }
                }
                Idle::Dead(e) => {
                    let _ = inbound.send(Err(e)).await;
                    close_socket(&mut write, "the endpoint went silent").await;
                    return;
                }
            },
            msg = read.next() => {
                match classify(msg) {
                    Inbound::Message(m) => {
                        // Nobody may read any more: pings are still answered until closed.
                        let _ = inbound.send(Ok(m)).await;
                    }
                    Inbound::Reply(text) => {
                        if write.send(Message::text(text)).await.is_err() {
                            return;
                        }
                    }
                    Inbound::Nothing => {}
                    Inbound::Closing(c) => {
                        // the endpoint's orderly close: the reader sees it, the end follows
                        let closing = AepMessage::Frame(aep_core::frame::Frame::Closing(c));
                        let _ = inbound.send(Ok(closing)).await;
                    }
                    Inbound::Binary(e) | Inbound::Undecodable(_, e) => {
                        let _ = inbound.send(Err(e)).await;
                    }
                    Inbound::End(e) => {
                        if let Some(e) = e {
                            let _ = inbound.send(Err(e)).await;
                        }
                        return;
                    }
                }
                // Heard now, after the hand-over: the time the reader took to make room
                // was not the endpoint's silence.
                idle.heard();
            }
            op = ops.recv() => match op {
                Some(Op::Send(text, reply)) => {
                    let r = write.send(Message::text(text)).await.map_err(ws_error);
                    let _ = reply.send(r);
                }
                Some(Op::Close(reply)) => {
                    close_socket(&mut write, "closed by the client").await;
                    let _ = reply.send(());
                    return;
                }
                None => {
                    close_socket(&mut write, "closed by the client").await;
                    return;
                }
            },
        }
    }
}
