//! Starting and stopping a relay: [`run`] for a listener you own, [`Relay::builder`] for a
//! relay in the background with a handle.
//!
//! The server assembles the relay from its configuration: the replay store (the
//! journal, the in-memory buffers, or a cluster's stream with the directory of the
//! other relays' claims, `nats::join`), the hub over them, and the limits each part
//! is given of the configuration, which no part reads whole.
//!
//! The accept loop is the relay's own, on hyper's HTTP/1 connection: it refuses to
//! serve without a token beyond loopback unless told to (`exposure`), holds at most
//! `max_connections_per_peer` of one peer (one more gets `429`) and `max_connections` in
//! all (one more gets `503`), each refusal counted and logged at most once per interval
//! (`peers`), handshakes TLS when serving HTTPS (`tls`), closes a connection that does
//! not send its headers (or finish its handshake) within the header timeout, and can
//! drop one connection whose reader was disconnected past the hard bound (AEP-0003
//! §8.4).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use crate::config::{NatsCluster, RelayConfig};
use crate::console::{self, Console};
use crate::directory::{Alone, Claimants, Directory};
use crate::exposure::Posture;
use crate::http::{self, ConnectionShed};
use crate::hub::{self, Hub};
use crate::journal::{self, Disk, Fs, Journal};
use crate::memory::Memory;
use crate::outbox::Bounds;
use crate::peers::{Peer, PeerSlot, Peers, RefusalLog, Refused, LOG_EVERY};
use crate::storage::{self, Backend, Feed};
use crate::tls::{Tls, TlsReloader};
use crate::{nats, subscriptions, ws};

/// Serves a relay on `listener` until `shutdown` completes, then shuts down gracefully:
/// SSE subscribers are told `: shutting-down`, WebSockets are closed with 1001, and the
/// call returns once connections are drained (or after the drain timeout). A listener
/// beyond loopback without a token is refused at once (see
/// [`RelayConfig::with_insecure_open_relay`]).
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let config = aep_relay::RelayConfig::default().with_buffer(8);
/// aep_relay::run(listener, config, async { let _ = tokio::signal::ctrl_c().await; }).await
/// # }
/// ```
pub async fn run(
    listener: TcpListener,
    config: RelayConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    Server::open_async(config)
        .await?
        .run(listener, shutdown)
        .await
}

/// A relay ready to serve: its replay buffers restored from the data directory, if it
/// has one. Open it before saying it serves: the binary prints its address only once
/// [`Server::open`] has returned.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// let config = aep_relay::RelayConfig::default().with_data_dir("/var/lib/aep-relay");
/// let server = aep_relay::Server::open(config)?; // reads the journal: blocking
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// println!("listening on {}", listener.local_addr()?);
/// server.run(listener, async { let _ = tokio::signal::ctrl_c().await; }).await
/// # }
/// ```
pub struct Server {
    hub: Arc<Hub>,
    /// A shared store's feed, fanned out while the relay serves.
    feed: Option<Feed>,
    /// Where the other relays' claims are: told this relay's while it serves.
    directory: Arc<dyn Directory>,
    http: Arc<http::Limits>,
    /// The web console, which the HTTP surface hands `/console` to.
    console: Arc<Console>,
    limits: Limits,
    /// HTTPS and WSS, when serving them.
    tls: Option<Tls>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("hub", &self.hub)
            .field("feed", &self.feed.is_some())
            .field("directory", &self.directory)
            .field("http", &self.http)
            .field("console", &self.console)
            .field("limits", &self.limits)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// What the accept loop is given of the configuration.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_connections: usize,
    max_connections_per_peer: usize,
    /// Whether the listener may be beyond loopback (`exposure`).
    posture: Posture,
    header_timeout: Duration,
    drain_timeout: Duration,
}

impl Server {
    /// Reads the TLS certificate and key, if any, then restores what the data directory
    /// holds (it reads the journal: blocking). Fails when the TLS files cannot be used
    /// (unreadable, not PEM, a key that is not the certificate's) or the directory
    /// cannot be created or read, saying why; damaged lines, and files that cannot be
    /// rewritten (a full disk), are reported and do not stop it.
    pub fn open(config: RelayConfig) -> io::Result<Server> {
        Server::assemble(&config)
    }

    /// The relay `config` describes: its store (and, in a cluster, the directory of the
    /// other relays' claims), the hub over them, and each part's limits.
    fn assemble(config: &RelayConfig) -> io::Result<Server> {
        let tls = config.tls().map(Tls::open).transpose()?;
        let (backend, directory) = match config.nats() {
            Some(cluster) => nats::join(config, cluster)?,
            None => {
                let backend = open_local(config, Box::new(Fs::default()))?;
                (backend, Arc::new(Alone) as Arc<dyn Directory>)
            }
        };
        let (hub, feed) = Hub::new(hub_settings(config), backend, directory.clone());
        Ok(Server {
            hub: Arc::new(hub),
            feed,
            directory,
            http: Arc::new(http_limits(config)),
            console: Arc::new(Console::new(console::Limits {
                enabled: config.console(),
                control: config.token().is_some(),
                max_roster: config.hard_backpressure(),
                store_bytes: config.max_store_bytes(),
            })),
            limits: Limits {
                max_connections: config.max_connections().max(1),
                max_connections_per_peer: config.max_connections_per_peer(),
                posture: Posture::of(config),
                header_timeout: config.header_timeout(),
                drain_timeout: config.drain_timeout(),
            },
            tls,
        })
    }

    /// What reads the TLS certificate and key again while the relay serves (the
    /// binaries call it on `SIGHUP`); `None` for a relay serving plain HTTP.
    ///
    /// ```no_run
    /// # fn demo() -> std::io::Result<()> {
    /// let config = aep_relay::RelayConfig::default().with_tls("cert.pem", "key.pem");
    /// let server = aep_relay::Server::open(config)?;
    /// assert!(server.tls_reloader().is_some());
    /// # Ok(())
    /// # }
    /// ```
    pub fn tls_reloader(&self) -> Option<TlsReloader> {
        self.tls.as_ref().map(Tls::reloader)
    }

    /// Refuses `addr` as [`Server::run`] would, before anything is said to serve on it:
    /// an address beyond loopback without a token (see
    /// [`RelayConfig::with_insecure_open_relay`]).
    pub(crate) fn check_exposure(&self, addr: SocketAddr) -> io::Result<()> {
        self.limits.posture.check(addr).map(drop)
    }

    /// [`Server::open`] on the blocking pool.
    async fn open_async(config: RelayConfig) -> io::Result<Server> {
        tokio::task::spawn_blocking(move || Server::open(config))
            .await
            .map_err(io::Error::other)?
    }

    /// Serves on `listener` until `shutdown` completes; see [`run`]. Refuses at once a
    /// listener beyond loopback without a token (see
    /// [`RelayConfig::with_insecure_open_relay`]).
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        serve(self, listener, shutdown).await
    }
}

/// The store of a relay on its own: the journal with a data directory (restored, and
/// writing through `disk`), the in-memory buffers without one.
pub(crate) fn open_local(config: &RelayConfig, disk: Box<dyn Disk>) -> io::Result<Backend> {
    let limits = storage::Limits {
        events: config.buffer(),
        session_bytes: config.max_session_bytes(),
        sessions: config.max_sessions(),
        bytes: config.max_store_bytes(),
    };
    Ok(match config.data_dir() {
        Some(dir) => {
            let options = journal::Options {
                fsync: config.fsync(),
                interval: config.fsync_interval(),
                limits,
            };
            Backend::local(Journal::open(dir, options, disk)?)
        }
        None => Backend::local(Memory::new(limits)),
    })
}

/// The hub's part of the configuration.
pub(crate) fn hub_settings(config: &RelayConfig) -> hub::Settings {
    hub::Settings {
        bounds: Bounds {
            soft: config.soft_backpressure(),
            hard: config.hard_backpressure(),
            grace: config.lag_grace(),
        },
        control: config.token().is_some(),
        max_subscriptions: config.max_relay_subscriptions(),
    }
}

/// The HTTP surface's part of the configuration, and that of the WebSockets it hands
/// `/socket` to.
fn http_limits(config: &RelayConfig) -> http::Limits {
    http::Limits {
        token: config.token().cloned(),
        max_body: config.max_body(),
        max_batch: config.max_batch(),
        max_from: config.max_from(),
        heartbeat: config.heartbeat(),
        replay_depth: config.buffer(),
        ws: ws::Limits {
            // a WebSocket message is capped like an ingest body
            max_message: config.max_body().max(1024),
            max_hello: config.max_hello(),
            hello_timeout: config.hello_timeout(),
            heartbeat: config.heartbeat(),
            drain_timeout: config.drain_timeout(),
            max_queued: config.hard_backpressure(),
            max_from: config.max_from(),
            replay_depth: config.buffer(),
            subscriptions: subscriptions::Limits {
                max: config.max_subscriptions(),
                ttl: config.subscription_ttl(),
            },
        },
    }
}

async fn serve(
    server: Server,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let Server {
        hub,
        feed,
        directory,
        http,
        console,
        limits,
        tls,
    } = server;
    let addr = listener.local_addr()?;
    limits.posture.check(addr)?.warn(addr);
    let max = limits.max_connections;
    let per_peer = limits.max_connections_per_peer;
    tracing::info!(
        %addr,
        buffer = http.replay_depth,
        auth = http.token.is_some(),
        tls = tls.is_some(),
        max_connections = max,
        max_connections_per_peer = per_peer,
        "aep-relay serving"
    );
    warn_if_descriptors_short(max);
    // a store several relays share delivers what they admit through its feed
    let feeding = feed.map(|feed| {
        let hub = hub.clone();
        tokio::spawn(async move { hub.fan_out_feed(feed).await })
    });
    // a relay of a cluster tells its claims to the others and learns theirs
    let here: std::sync::Weak<dyn Claimants> = Arc::downgrade(&hub) as _;
    let controlling = directory.clone().serve(here).map(tokio::spawn);
    let limit = Arc::new(Semaphore::new(max));
    let peers = Peers::new(per_peer);
    let mut refusals = RefusalLog::new(hub.refused.clone(), per_peer, max);
    // what was refused within an interval is told when it ends, even if nothing follows
    let mut tell = tokio::time::interval(LOG_EVERY);
    tell.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (closing, closed) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (tcp, from) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // out of descriptors or a connection gone before it was accepted:
                    // the relay goes on serving what it holds
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = tell.tick() => {
                refusals.tick(tokio::time::Instant::now());
                continue;
            }
            () = &mut shutdown => break,
        };
        // the peer's bound first: a peer past it takes no slot of everyone's limit
        let peer = Peer::of(from.ip());
        let Some(slot) = peers.take(peer) else {
            refuse(&tcp, Refused::PeerBound, tls.is_some());
            refusals.refused(peer, Refused::PeerBound, tokio::time::Instant::now());
            continue;
        };
        let Ok(permit) = limit.clone().try_acquire_owned() else {
            refuse(&tcp, Refused::Full, tls.is_some());
            refusals.refused(peer, Refused::Full, tokio::time::Instant::now());
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let io = Held {
            tcp,
            _permit: permit,
            _peer: slot,
        };
        let serves = (hub.clone(), http.clone(), console.clone());
        tokio::spawn(connection(serves, limits, io, closed.clone(), tls.clone()));
    }
    tracing::info!("shutting down");
    hub.shutdown();
    let _ = closing.send(true);
    // every connection, upgraded WebSockets included, holds a permit until it closes
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    if tokio::time::timeout(limits.drain_timeout, limit.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("connections still open after the drain timeout; closing anyway");
    }
    hub.stopped().cancel();
    if let Some(feeding) = feeding {
        feeding.abort();
    }
    if let Some(controlling) = controlling {
        controlling.abort();
        // the others stop counting this relay's claims at once
        directory.leave().await;
    }
    hub.flush();
    tracing::debug!("relay stopped");
    Ok(())
}

/// Answers a connection refused at accept at once, without reading it (`429` past its
/// peer's bound, `503` past the limit), and closes it. Over TLS it is closed unanswered:
/// an answer would cost the handshake the refusal saves.
fn refuse(tcp: &TcpStream, why: Refused, tls: bool) {
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    const PEER: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    if !tls {
        let _ = tcp.try_write(match why {
            Refused::PeerBound => PEER,
            Refused::Full => BUSY,
        });
    }
}

/// Serves one connection, after its TLS handshake when serving HTTPS (bounded by the
/// header timeout, as the headers are: a peer that opens sockets and never finishes a
/// handshake holds them no longer than one that never sends headers).
async fn connection(
    serves: (Arc<Hub>, Arc<http::Limits>, Arc<Console>),
    server: Limits,
    io: Held,
    closed: watch::Receiver<bool>,
    tls: Option<Tls>,
) {
    let Some(tls) = tls else {
        return serve_http(serves, server, io, closed).await;
    };
    let header_timeout = server.header_timeout;
    let handshake = async {
        if header_timeout.is_zero() {
            Ok(tls.acceptor().accept(io).await)
        } else {
            tokio::time::timeout(header_timeout, tls.acceptor().accept(io)).await
        }
    };
    let stopped = serves.0.stopped().clone();
    let shaken = tokio::select! {
        shaken = handshake => shaken,
        () = stopped.cancelled() => return,
    };
    match shaken {
        Ok(Ok(stream)) => serve_http(serves, server, stream, closed).await,
        // a client that does not trust the certificate, a scanner, plain HTTP on the
        // TLS port: the client learns it from its own side; here, only at debug
        Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
        Err(_) => tracing::debug!("no TLS handshake within the header timeout: closed"),
    }
}

/// Serves HTTP/1.1 on one connection until it ends, the relay shuts down, or its reader
/// was disconnected past the hard bound and did not take what was queued within the
/// drain timeout.
async fn serve_http<I>(
    (hub, limits, console): (Arc<Hub>, Arc<http::Limits>, Arc<Console>),
    server: Limits,
    io: I,
    mut closed: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let shed = ConnectionShed::default();
    let service = {
        let hub = hub.clone();
        let shed = shed.clone();
        hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(shed.clone());
            let (hub, limits, console) = (hub.clone(), limits.clone(), console.clone());
            async move {
                let request = request.map(axum::body::Body::new);
                Ok::<_, Infallible>(http::handle(hub, limits, console, request).await)
            }
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    let header_timeout = server.header_timeout;
    http.timer(TokioTimer::new())
        .header_read_timeout((!header_timeout.is_zero()).then_some(header_timeout));
    let conn = http
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(conn);
    let drain = server.drain_timeout;
    let dropped = async {
        shed.0.cancelled().await;
        tokio::time::sleep(drain).await;
    };
    tokio::pin!(dropped);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            changed = closed.changed(), if !draining => {
                if changed.is_err() || *closed.borrow() {
                    draining = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = &mut dropped => return,
            () = hub.stopped().cancelled() => return,
        }
    }
}

/// A connection's socket with its places under the connection limit and its peer's
/// bound, which it gives back when closed (after an upgrade too: the WebSocket owns it
/// then).
#[derive(Debug)]
struct Held {
    tcp: TcpStream,
    _permit: OwnedSemaphorePermit,
    _peer: PeerSlot,
}

impl AsyncRead for Held {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// Warns when the process may open fewer files than connections it would serve (Linux
/// says how many in `/proc/self/limits`; elsewhere nothing is checked).
fn warn_if_descriptors_short(max_connections: usize) {
    let Ok(limits) = std::fs::read_to_string("/proc/self/limits") else {
        return;
    };
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse::<usize>().ok());
    if let Some(soft) = soft.filter(|soft| *soft < max_connections + 64) {
        tracing::warn!(
            open_files = soft,
            max_connections,
            "the open-file limit is below the connection limit: raise it (ulimit -n) or lower --max-connections"
        );
    }
}

/// Entry point of the library: `Relay::builder()`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let relay = aep_relay::Relay::builder().buffer(8).token("t").start().await?;
/// assert!(relay.url().starts_with("http://127.0.0.1:"));
/// relay.shutdown().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Relay;

impl Relay {
    /// A builder for a relay on `127.0.0.1:0` with the reference defaults.
    pub fn builder() -> RelayBuilder {
        RelayBuilder {
            config: RelayConfig::default(),
            bind: "127.0.0.1:0".to_owned(),
        }
    }
}

/// [`RelayBuilder`]'s setters that hand their argument to the [`RelayConfig`] setter of the
/// same meaning, the rule staying the configuration's: `fn name(arg: T) => with_name;`
/// makes `fn name(mut self, arg: T) -> Self { self.config = self.config.with_name(arg); self }`
/// (the shape [`aep_core::setters!`] cannot make: its value may not read `self`).
macro_rules! config_setters {
    ($(
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($arg:ident: $ty:ty) => $with:ident;
    )*) => {$(
        $(#[$meta])*
        $vis fn $name(mut self, $arg: $ty) -> Self {
            self.config = self.config.$with($arg);
            self
        }
    )*};
}

/// Configures and starts a relay in the background (see [`Relay::builder`]).
#[derive(Debug, Clone)]
pub struct RelayBuilder {
    config: RelayConfig,
    bind: String,
}

impl RelayBuilder {
    aep_core::setters! {
        /// Replaces the whole configuration (the bind address stays the builder's).
        pub fn config(config: RelayConfig) => config = config;

        /// The address to listen on (default `127.0.0.1:0`, a free port).
        pub fn bind(addr: impl Into<String>) => bind = addr.into();
    }

    config_setters! {
        /// See [`RelayConfig::with_buffer`].
        pub fn buffer(events: usize) => with_buffer;

        /// See [`RelayConfig::with_token`].
        pub fn token(token: impl Into<String>) => with_token;

        /// See [`RelayConfig::with_max_sessions`].
        pub fn max_sessions(sessions: usize) => with_max_sessions;

        /// See [`RelayConfig::with_max_body`].
        pub fn max_body(bytes: usize) => with_max_body;

        /// See [`RelayConfig::with_max_batch`].
        pub fn max_batch(events: usize) => with_max_batch;

        /// See [`RelayConfig::with_max_from`].
        pub fn max_from(positions: usize) => with_max_from;

        /// See [`RelayConfig::with_data_dir`].
        pub fn data_dir(dir: impl Into<std::path::PathBuf>) => with_data_dir;

        /// Joins a relay cluster on NATS JetStream (see [`NatsCluster`] and
        /// [`RelayConfig::with_nats`]): [`RelayBuilder::start`] connects, checks the stream,
        /// and fails when either cannot be done (or without the crate's feature `nats`).
        ///
        /// ```
        /// use aep_relay::{NatsCluster, Relay};
        /// let builder = Relay::builder().buffer(8).nats(NatsCluster::new("nats://127.0.0.1:4222").stream("FLEET"));
        /// # drop(builder);
        /// ```
        pub fn nats(cluster: NatsCluster) => with_nats;

        /// Serves mission control, the web console, at `/console` (see
        /// [`RelayConfig::with_console`]).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() -> std::io::Result<()> {
        /// let relay = aep_relay::Relay::builder().token("t").console(true).start().await?;
        /// println!("open {}/console#token=t", relay.url());
        /// relay.shutdown().await?;
        /// # Ok(())
        /// # }
        /// ```
        pub fn console(on: bool) => with_console;

        /// See [`RelayConfig::with_heartbeat`].
        pub fn heartbeat(every: Duration) => with_heartbeat;

        /// See [`RelayConfig::with_max_connections_per_peer`].
        pub fn max_connections_per_peer(connections: usize) => with_max_connections_per_peer;
    }

    /// Serves HTTPS and WSS with a PEM certificate chain and its key; see
    /// [`RelayConfig::with_tls`]. The handle's [`RelayHandle::url`] is then `https://`.
    ///
    /// ```no_run
    /// # async fn demo() -> std::io::Result<()> {
    /// let relay = aep_relay::Relay::builder().token("t").tls("cert.pem", "key.pem").start().await?;
    /// assert!(relay.url().starts_with("https://"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn tls(
        mut self,
        cert: impl Into<std::path::PathBuf>,
        key: impl Into<std::path::PathBuf>,
    ) -> Self {
        self.config = self.config.with_tls(cert, key);
        self
    }

    /// Lets the relay serve without a token beyond loopback; see
    /// [`RelayConfig::with_insecure_open_relay`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// // refused: beyond loopback, no token
    /// assert!(aep_relay::Relay::builder().bind("0.0.0.0:0").start().await.is_err());
    /// let open = aep_relay::Relay::builder().bind("0.0.0.0:0").insecure_open_relay().start().await?;
    /// open.shutdown().await
    /// # }
    /// ```
    pub fn insecure_open_relay(mut self) -> Self {
        self.config = self.config.with_insecure_open_relay(true);
        self
    }

    /// Reads the TLS files (if any), restores the data directory (if any), binds, and
    /// starts serving on the current tokio runtime; fails when any cannot be done, and
    /// on an address beyond loopback without a token (see
    /// [`RelayBuilder::insecure_open_relay`]).
    pub async fn start(self) -> io::Result<RelayHandle> {
        let server = Server::open_async(self.config).await?;
        let listener = TcpListener::bind(&self.bind).await?;
        let local_addr = listener.local_addr()?;
        server.check_exposure(local_addr)?;
        let tls = server.tls_reloader();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(listener, async move {
            let _ = rx.await;
        }));
        Ok(RelayHandle {
            local_addr,
            url: base_url(local_addr, tls.is_some()),
            tls,
            stop: Some(tx),
            task: Some(task),
        })
    }
}

/// The URL clients reach a relay listening on `addr` at (an unspecified address read as
/// this machine's loopback of its family).
fn base_url(addr: SocketAddr, tls: bool) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        std::net::IpAddr::V4(ip) => ip.to_string(),
    };
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{host}:{}", addr.port())
}

/// A running relay. Dropping it asks the relay to shut down; [`RelayHandle::shutdown`]
/// also waits until it has.
#[derive(Debug)]
pub struct RelayHandle {
    local_addr: SocketAddr,
    url: String,
    tls: Option<TlsReloader>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl RelayHandle {
    /// The base URL, e.g. `http://127.0.0.1:41234` (append `/events`, `/stream`, ...);
    /// `https://` when serving TLS.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The WebSocket URL of `/socket` (`wss://` when serving TLS).
    pub fn socket_url(&self) -> String {
        aep_core::binding::socket_url(&self.url)
    }

    /// The address the relay listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Reads the TLS certificate and key again (see [`TlsReloader`]); `None` for a relay
    /// serving plain HTTP.
    pub fn tls_reloader(&self) -> Option<&TlsReloader> {
        self.tls.as_ref()
    }

    /// Shuts the relay down gracefully and waits for it.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for RelayHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
