//! The WebSocket binding's client side (AEP-0003 §3.5, §4), once for every loop: the
//! only place in this crate that opens a WebSocket.
//!
//! - [`open`]: connect, upgrade, send our `hello` and wait for the endpoint's, all under
//!   one timeout;
//! - [`classify`]: what one read means: an AEP message, a `pong` to write back for a
//!   `ping` (§3.5 rule 5), the endpoint's `closing` (rule 4), a refused binary message
//!   (rule 2), an undecodable one, or the end of the connection;
//! - [`close_socket`]: our orderly close, a `closing` frame then the WebSocket close;
//! - [`ping_frame`]: the `ping` a reader sends after a heartbeat of silence, so that its
//!   idle timeout ([`ReadLimits`]) never takes a quiet endpoint for a dead one.
//!
//! Every socket is opened with the reader's [`ReadLimits`]: a message or a frame past
//! `max_frame` is refused by tungstenite before its payload is read, and ends the
//! connection with a [`TransportError::limit`] error naming the bound.

use std::time::Duration;

use aep_core::frame::{
    self, Capabilities, Closing, Frame, Hello, Identity, Message as AepMessage, Role,
};
use aep_core::Capture;
use futures::{Sink, SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::client::{Link, WsTls};
use crate::error::TransportError;
use crate::limits::{Limit, LimitExceeded, ReadLimits};
use crate::transport::Failover;

/// A client WebSocket, plain or TLS.
pub(crate) type WsStream = WebSocketStream<MaybeTlsStream<TcpStream>>;
/// What one read of a [`WsStream`] gives.
pub(crate) type WsRead = Option<Result<Message, tokio_tungstenite::tungstenite::Error>>;

/// The `hello` this crate sends (AEP-0003 §4): `accepts` is the control declaration of
/// an emitter with a command hook.
pub(crate) fn hello(
    role: Role,
    agent: &str,
    instance: &str,
    accepts: Option<Vec<String>>,
) -> Hello {
    let mut caps = Capabilities::default();
    caps.capture = Some(Capture::ALL.to_vec());
    caps.filters = Some(vec!["attr-match".to_owned()]);
    caps.control = accepts.map(frame::ControlCapability::accepting);
    Hello::new(role)
        .with_identity(Identity::new(agent).with_instance(instance))
        .with_capabilities(caps)
}

/// Opens `{base}/socket`, sends `hello` and waits for the endpoint's (AEP-0003 §3.5
/// rule 1, §4), all within `timeout`, reading no message or frame larger than `limits`
/// allows. Returns the socket and the endpoint's `hello`.
///
/// A refused upgrade is an `Http` error with its status; a `hello` refused with an
/// `error` frame, a socket closed before `hello` or any network failure on the way is
/// a `Network` error that [`TransportError::is_connect`] marks; silence past `timeout`
/// is a [`TransportError::is_timeout`] one.
pub(crate) async fn open(
    base: &str,
    token: Option<&str>,
    timeout: Duration,
    hello: &Hello,
    limits: &ReadLimits,
    tls: &WsTls,
) -> Result<(WsStream, Hello), TransportError> {
    let hello_text = Frame::Hello(Box::new(hello.clone())).to_json();
    let establish = async {
        let url = aep_core::binding::socket_url(base);
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| TransportError::network(format!("bad socket URL `{url}`"), e))?;
        if let Some(t) = token {
            let value = format!("Bearer {t}")
                .parse()
                .map_err(|e| TransportError::network("token is not a valid header value", e))?;
            request.headers_mut().insert(
                tokio_tungstenite::tungstenite::http::header::AUTHORIZATION,
                value,
            );
        }
        // TCP_NODELAY: AEP messages are small and often answered (commands, acks,
        // pongs); Nagle would hold one back behind an unacknowledged one. A 32 KiB read
        // buffer: tungstenite zero-fills up to `read_buffer_size` of free buffer before
        // each read, which at the 128 KiB default costs more than the read.
        let config = WebSocketConfig::default()
            .read_buffer_size(32 * 1024)
            .max_message_size(Some(limits.frame()))
            .max_frame_size(Some(limits.frame()));
        #[cfg(feature = "rustls")]
        let connected = match &tls.0 {
            Some(c) => {
                let connector = tokio_tungstenite::Connector::Rustls(c.clone());
                tokio_tungstenite::connect_async_tls_with_config(
                    request,
                    Some(config),
                    true,
                    Some(connector),
                )
                .await
            }
            None => tokio_tungstenite::connect_async_with_config(request, Some(config), true).await,
        };
        #[cfg(not(feature = "rustls"))]
        let connected = {
            let WsTls() = tls;
            tokio_tungstenite::connect_async_with_config(request, Some(config), true).await
        };
        let (mut ws, _) = connected.map_err(ws_error)?;
        ws.send(Message::text(hello_text)).await.map_err(ws_error)?;
        loop {
            match classify(ws.next().await) {
                Inbound::Message(AepMessage::Frame(Frame::Hello(h))) => return Ok((ws, *h)),
                Inbound::Message(AepMessage::Frame(Frame::Error(e))) => {
                    return Err(TransportError::network_msg(format!(
                        "hello refused: {} {}",
                        e.code.as_str(),
                        e.detail.unwrap_or_default()
                    )))
                }
                Inbound::Reply(pong) => {
                    ws.send(Message::text(pong)).await.map_err(ws_error)?;
                }
                Inbound::End(e) => {
                    return Err(e.unwrap_or_else(|| {
                        TransportError::network_msg("socket closed before hello")
                    }))
                }
                Inbound::Undecodable(_, e) => {
                    return Err(TransportError::parse(
                        "undecodable message where hello was due",
                        e,
                    ))
                }
                // The first frame is the endpoint's hello (§3.5 rule 1); anything else
                // before it is not ours to act on.
                Inbound::Message(_)
                | Inbound::Closing(_)
                | Inbound::Binary(_)
                | Inbound::Nothing => {}
            }
        }
    };
    match tokio::time::timeout(timeout, establish).await {
        Ok(r) => r.map_err(TransportError::while_connecting),
        Err(_) => Err(TransportError::timeout(format!(
            "WebSocket connect timeout after {} ms (connect, upgrade and hello)",
            timeout.as_millis()
        ))),
    }
}

/// A tungstenite error as a transport error: a refused upgrade keeps its status, a
/// message or frame past the reader's bound names it.
pub(crate) fn ws_error(e: tokio_tungstenite::tungstenite::Error) -> TransportError {
    use tokio_tungstenite::tungstenite::error::CapacityError;
    use tokio_tungstenite::tungstenite::Error as E;
    #[cfg(feature = "rustls")]
    {
        let untrusted = match &e {
            E::Tls(tokio_tungstenite::tungstenite::error::TlsError::Rustls(r)) => match &**r {
                rustls::Error::InvalidCertificate(why) => Some(crate::tls::describe(why)),
                _ => None,
            },
            other => crate::tls::untrusted(other),
        };
        if let Some(text) = untrusted {
            return TransportError::network(format!("WebSocket: {text}"), e);
        }
    }
    match e {
        E::Capacity(CapacityError::MessageTooLong { max_size, .. }) => {
            TransportError::limit(LimitExceeded::new(Limit::Frame, max_size))
        }
        E::Http(res) => {
            let status = res.status();
            TransportError::http(
                status.as_u16(),
                format!("WebSocket upgrade refused: {status}"),
            )
        }
        // "Unable to connect to {url}": the message keeps it redacted, the source
        // would keep it whole.
        E::Url(url) => TransportError::network_msg(format!("WebSocket: {url}")),
        other => TransportError::network(format!("WebSocket: {other}"), other),
    }
}

/// Opens the first relay of `failover` that answers, starting from its current one and
/// trying each once, every attempt within `link`'s connect timeout: how a connection
/// that the caller waits for (the control client, a duplex, a lifecycle connection)
/// fails over when it is opened. Fails only when none answers, with the first refusal
/// (a `4xx` says more than an absent relay: a wrong token) or else the last error.
pub(crate) async fn open_first(
    failover: &mut Failover,
    link: &Link,
    hello: &Hello,
) -> Result<(WsStream, Hello), TransportError> {
    let mut refusal: Option<TransportError> = None;
    let mut last = TransportError::network_msg("the client was given no relay URL");
    for _ in 0..link.relays.len() {
        let base = failover.current().unwrap_or_default().to_owned();
        match open(
            &base,
            link.token.as_deref(),
            link.connect_timeout,
            hello,
            &link.limits,
            &link.tls,
        )
        .await
        {
            Ok(opened) => {
                failover.succeeded();
                return Ok(opened);
            }
            Err(e) => {
                tracing::debug!(relay = %base, error = %e, "connect failed");
                if refusal.is_none() && e.status().is_some() {
                    refusal = Some(e);
                } else {
                    last = e;
                }
                failover.failed();
            }
        }
    }
    Err(refusal.unwrap_or(last))
}

/// What one inbound WebSocket message means to a reader.
// Lives for one match on the read path; boxing the large variant would cost an
// allocation per message for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Inbound {
    /// An AEP event or frame for the reader (`ping` and `closing` excepted).
    Message(AepMessage),
    /// A reply to write back: the `pong` for a `ping` (AEP-0003 §3.5 rule 5).
    Reply(String),
    /// The endpoint is closing deliberately (§3.5 rule 4); the socket ends next.
    Closing(Closing),
    /// A binary message, refused (§3.5 rule 2): dropped and reported, the connection
    /// goes on (the endpoint's own refusal of ours closes it; a client that did the same
    /// would only reconnect into the next one).
    Binary(TransportError),
    /// A text message that is not an AEP message, kept for a reader that speaks more
    /// than AEP on the socket (the subscription lifecycle).
    Undecodable(Utf8Bytes, TransportError),
    /// Nothing to do (a WebSocket-level ping or pong: tungstenite answers pings).
    Nothing,
    /// The connection ended (`None`: closed in order by the endpoint).
    End(Option<TransportError>),
}

/// A binary message of this many bytes arrived where JSON text was expected.
#[derive(Debug, thiserror::Error)]
#[error("binary message of {0} bytes")]
pub(crate) struct BinaryFrame(pub(crate) usize);

/// Classifies one read from the socket. An AEP `ping` is answered here, once for every
/// reader (AEP-0003 §3.5 rule 5).
pub(crate) fn classify(read: WsRead) -> Inbound {
    match read {
        None | Some(Ok(Message::Close(_))) => Inbound::End(None),
        Some(Err(e)) => Inbound::End(Some(ws_error(e))),
        Some(Ok(Message::Text(text))) => match frame::decode(text.as_str()) {
            Ok(AepMessage::Frame(f @ Frame::Ping(_))) => match f.pong() {
                Some(p) => Inbound::Reply(p.to_json()),
                None => Inbound::Nothing,
            },
            Ok(AepMessage::Frame(Frame::Closing(c))) => Inbound::Closing(c),
            Ok(m) => Inbound::Message(m),
            Err(e) => Inbound::Undecodable(
                text,
                TransportError::parse("undecodable WebSocket message; dropped", e),
            ),
        },
        Some(Ok(Message::Binary(b))) => Inbound::Binary(TransportError::parse(
            "binary WebSocket message refused: AEP messages are JSON text (AEP-0003 §3.5)",
            BinaryFrame(b.len()),
        )),
        Some(Ok(_)) => Inbound::Nothing,
    }
}

/// The `ping` a reader sends after a heartbeat interval of silence (AEP-0003 §3.5
/// rule 5), `t` the wall clock in milliseconds as the relays write theirs.
pub(crate) fn ping_frame() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Frame::ping(t).to_json()
}

/// Our orderly close (AEP-0003 §3.5 rule 4): a `closing` frame with `reason`, then the
/// WebSocket close handshake. Failures are ignored: the connection is going anyway.
pub(crate) async fn close_socket<S>(write: &mut S, reason: &str)
where
    S: Sink<Message> + Unpin,
{
    let closing = Frame::Closing(Closing::new(reason)).to_json();
    let _ = write.send(Message::text(closing)).await;
    let _ = write.close().await;
}

/// A real WebSocket server for the tests of the loops that read through this layer.
#[cfg(test)]
pub(crate) mod testing {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tokio::net::TcpListener;

    pub(crate) type Server = WebSocketStream<TcpStream>;

    /// A one-connection server: `script` runs with the accepted socket.
    pub(crate) async fn serve<F, Fut>(script: F) -> (String, tokio::task::JoinHandle<()>)
    where
        F: FnOnce(Server) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
            script(ws).await;
        });
        (url, task)
    }

    /// Reads the client's hello and answers with ours.
    pub(crate) async fn exchange_hello(ws: &mut Server) {
        let first = ws.next().await.unwrap().unwrap();
        let text = first.into_text().unwrap();
        assert!(matches!(
            frame::decode(text.as_str()),
            Ok(AepMessage::Frame(Frame::Hello(_)))
        ));
        let ours = Frame::Hello(Box::new(Hello::new(Role::Both))).to_json();
        ws.send(Message::text(ours)).await.unwrap();
    }
}

#[cfg(test)]
mod tests {
    //! The transport against a real WebSocket server on `127.0.0.1:0` that says what
    //! each test needs.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tokio::net::TcpListener;

    use super::testing::{exchange_hello, serve};

    fn client_hello() -> Hello {
        hello(Role::Consumer, "test", "transport", None)
    }

    /// `open` with the test's hello and default limits.
    async fn try_open(
        url: &str,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<(WsStream, Hello), TransportError> {
        open(
            url,
            token,
            timeout,
            &client_hello(),
            &ReadLimits::new(),
            &WsTls::default(),
        )
        .await
    }

    async fn open_client(url: &str) -> WsStream {
        try_open(url, None, Duration::from_secs(10))
            .await
            .unwrap()
            .0
    }

    #[tokio::test]
    async fn a_hello_that_never_comes_is_a_timeout() {
        let (url, server) = serve(|mut ws| async move {
            // read the client's hello, then say nothing until the client gives up
            let _ = ws.next().await;
            let _ = ws.next().await;
        })
        .await;
        let err = try_open(&url, None, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(err.is_timeout(), "{err}");
        assert!(err.is_network() && err.is_retryable());
        assert!(err.to_string().contains("200 ms"), "{err}");
        server.abort();
    }

    #[tokio::test]
    async fn a_socket_closed_before_hello_is_a_connect_error() {
        let (url, server) = serve(|mut ws| async move {
            let _ = ws.next().await;
            let _ = ws.close(None).await;
        })
        .await;
        let err = try_open(&url, None, Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(err.is_connect() && !err.is_timeout(), "{err:?}");
        server.await.unwrap();
    }

    #[tokio::test]
    async fn nobody_listening_is_a_connect_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let err = try_open(&url, None, Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(err.is_connect(), "{err:?}");
    }

    #[tokio::test]
    async fn a_ping_before_hello_is_answered_and_the_hello_still_taken() {
        let (url, server) = serve(|mut ws| async move {
            let _ = ws.next().await;
            ws.send(Message::text(r#"{"type":"ping","t":7}"#))
                .await
                .unwrap();
            let ours = Frame::Hello(Box::new(Hello::new(Role::Both))).to_json();
            ws.send(Message::text(ours)).await.unwrap();
            let pong = ws.next().await.unwrap().unwrap().into_text().unwrap();
            assert_eq!(pong.as_str(), r#"{"type":"pong","t":7}"#);
        })
        .await;
        let (_ws, endpoint) = try_open(&url, None, Duration::from_secs(10)).await.unwrap();
        assert_eq!(endpoint.role, Some(Role::Both));
        server.await.unwrap();
    }

    #[tokio::test]
    async fn classify_answers_ping_refuses_binary_and_reports_closing() {
        let (url, server) = serve(|mut ws| async move {
            exchange_hello(&mut ws).await;
            ws.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
            ws.send(Message::text(r#"{"type":"ping","t":"x"}"#))
                .await
                .unwrap();
            ws.send(Message::text("{not json")).await.unwrap();
            ws.send(Message::text(r#"{"type":"pong","t":1}"#))
                .await
                .unwrap();
            ws.send(Message::text(r#"{"type":"closing","reason":"restart"}"#))
                .await
                .unwrap();
            ws.close(None).await.unwrap();
            // until the client's close reply, or its end
            while let Some(Ok(_)) = ws.next().await {}
        })
        .await;
        let mut ws = open_client(&url).await;
        let binary = classify(ws.next().await);
        let Inbound::Binary(e) = binary else {
            panic!("{binary:?}")
        };
        assert_eq!(e.kind(), crate::TransportErrorKind::Parse);
        assert!(e.to_string().contains("binary"), "{e}");
        let ping = classify(ws.next().await);
        assert!(
            matches!(&ping, Inbound::Reply(p) if p == r#"{"type":"pong","t":"x"}"#),
            "{ping:?}"
        );
        let bad = classify(ws.next().await);
        assert!(
            matches!(&bad, Inbound::Undecodable(text, e) if text.as_str() == "{not json" && e.kind() == crate::TransportErrorKind::Parse),
            "{bad:?}"
        );
        let pong = classify(ws.next().await);
        assert!(
            matches!(pong, Inbound::Message(AepMessage::Frame(Frame::Pong(_)))),
            "{pong:?}"
        );
        let closing = classify(ws.next().await);
        assert!(
            matches!(&closing, Inbound::Closing(c) if c.reason.as_deref() == Some("restart")),
            "{closing:?}"
        );
        assert!(matches!(classify(ws.next().await), Inbound::End(None)));
        drop(ws);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn our_close_sends_closing_then_the_close_handshake() {
        let (url, server) = serve(|mut ws| async move {
            exchange_hello(&mut ws).await;
            let text = ws.next().await.unwrap().unwrap().into_text().unwrap();
            match frame::decode(text.as_str()) {
                Ok(AepMessage::Frame(Frame::Closing(c))) => {
                    assert_eq!(c.reason.as_deref(), Some("done"))
                }
                other => panic!("expected closing, got {other:?}"),
            }
            assert!(matches!(ws.next().await, Some(Ok(Message::Close(_)))));
        })
        .await;
        let ws = open_client(&url).await;
        let (mut write, _read) = ws.split();
        close_socket(&mut write, "done").await;
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_refused_upgrade_keeps_its_status() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 2048];
            let _ = tcp.read(&mut buf).await;
            let _ = tcp
                .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
                .await;
        });
        let err = try_open(&url, Some("wrong"), Duration::from_secs(10))
            .await
            .unwrap_err();
        assert_eq!(err.status(), Some(401), "{err:?}");
        assert!(!err.is_connect());
        server.await.unwrap();
    }
}
