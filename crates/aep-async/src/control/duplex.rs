//! [`Duplex`]: the WebSocket binding with `hello` done, JSON messages in and out.

use std::future::Future;

use aep_core::frame::{Hello, Message as AepMessage, Role};
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tracing::Instrument;

use crate::client::{Client, Defaults};
use crate::error::TransportError;
use crate::transport::idle::{Idle, IdleTimer};
use crate::transport::ws::{
    classify, close_socket, hello as crate_hello, open_first, ping_frame, ws_error, Inbound,
    WsStream,
};
use crate::transport::Failover;

/// What a [`Duplex`] declares at `hello` beyond the [`Client`]'s identity.
///
/// ```
/// use aep_async::control::DuplexOptions;
/// use aep_core::frame::Role;
/// let opts = DuplexOptions::new().role(Role::Emitter);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "options do nothing until passed to Client::duplex"]
pub struct DuplexOptions {
    role: Option<Role>,
    hello: Option<Hello>,
}

impl DuplexOptions {
    /// A consumer `hello` with the client's identity.
    pub fn new() -> Self {
        DuplexOptions::default()
    }
    aep_core::setters! {
        /// The role declared at `hello` (default consumer).
        pub fn role(role: Role) => role = Some(role);
        /// The whole `hello` to send (versions, role, identity, capabilities), instead of
        /// the one made from the client's identity and [`DuplexOptions::role`].
        pub fn hello(hello: Hello) => hello = Some(hello);
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
/// frame and the WebSocket close, once; later calls return at once. It does not
/// reconnect: when it ends, open the next one (on another relay, given several).
///
/// ```no_run
/// use aep_async::control::DuplexOptions;
/// use aep_async::Client;
/// use aep_core::frame::{Frame, Message, IdFrame};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let relay = Client::new("http://127.0.0.1:8787").token("secret");
/// let mut duplex = relay.duplex(DuplexOptions::new()).await?;
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

impl Client {
    /// Opens a [`Duplex`]: `{base}/socket` (`http(s)` becomes `ws(s)`), our `hello` sent
    /// and the endpoint's awaited, all under the one connect timeout; given several
    /// relays, the first that answers (see [`Client`]). Feature `ws`.
    ///
    /// A refused upgrade is [`TransportErrorKind::Http`](crate::TransportErrorKind::Http)
    /// with the status (401 for a wrong token); an endpoint that never answers is a
    /// timeout ([`TransportError::is_timeout`]) once the connect timeout passes.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), aep_async::TransportError> {
    /// use aep_async::control::DuplexOptions;
    /// let relay = aep_async::Client::new(["http://10.0.0.1:8787", "http://10.0.0.2:8787"]);
    /// let duplex = relay.token("secret").duplex(DuplexOptions::new()).await?;
    /// println!("{:?}", duplex.hello().identity);
    /// # Ok(()) }
    /// ```
    pub async fn duplex(&self, options: DuplexOptions) -> Result<Duplex, TransportError> {
        let link = self.link(Defaults::CONTROL);
        let hello = options.hello.unwrap_or_else(|| {
            let role = options.role.unwrap_or(Role::Consumer);
            crate_hello(role, &link.agent, &link.host, None)
        });
        let mut failover = Failover::new(link.relays.clone(), link.backoff);
        let (ws, hello) = open_first(&mut failover, &link, &hello).await?;
        let (ops_tx, ops_rx) = mpsc::unbounded_channel();
        let (in_tx, in_rx) = mpsc::channel(1024);
        let span = tracing::info_span!("aep_duplex", relay = failover.current());
        tokio::spawn(serve(ws, ops_rx, in_tx, link.limits.idle()).instrument(span));
        Ok(Duplex {
            ops: ops_tx,
            inbound: in_rx,
            hello,
        })
    }
}

impl Duplex {
    /// The endpoint's `hello`: its version, identity and capabilities.
    pub fn hello(&self) -> Hello {
        self.hello.clone()
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

    /// Closes the connection in order: a `closing` frame, then the WebSocket close. The
    /// close starts at the call; the future resolves once the socket is closed
    /// (dropping it does not stop the close). Idempotent.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let sent = self.ops.send(Op::Close(tx)).is_ok();
        async move {
            if sent {
                let _ = rx.await;
            }
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
    idle_timeout: std::time::Duration,
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
