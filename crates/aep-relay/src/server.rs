//! Starting and stopping a relay: [`run`] for a listener you own, [`Relay::builder`] for a
//! relay in the background with a handle.

use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

use crate::config::RelayConfig;
use crate::hub::Hub;

/// Serves a relay on `listener` until `shutdown` completes, then shuts down gracefully:
/// SSE subscribers are told `: shutting-down`, WebSockets are closed with 1001, and the
/// call returns once connections are drained (or after the drain timeout).
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
    let drain_timeout = config.drain_timeout;
    let hub = Arc::new(Hub::new(config)?);
    tracing::info!(
        addr = ?listener.local_addr().ok(),
        buffer = hub.config.buffer,
        auth = hub.config.token.is_some(),
        "aep-relay serving"
    );
    let app = Router::new()
        .fallback(crate::http::handle)
        .with_state(hub.clone());
    let started = Arc::new(Notify::new());
    let signal = {
        let hub = hub.clone();
        let started = started.clone();
        async move {
            shutdown.await;
            tracing::info!("shutting down");
            hub.shutdown();
            started.notify_one();
        }
    };
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let serve = axum::serve(listener, app)
        .with_graceful_shutdown(signal)
        .into_future();
    tokio::pin!(serve);
    tokio::select! {
        result = &mut serve => result?,
        () = async { started.notified().await; tokio::time::sleep(drain_timeout).await } => {
            tracing::warn!("connections still open after the drain timeout; closing anyway");
            hub.flush_journal();
            return Ok(());
        }
    }
    tracing::debug!("http server drained");
    // upgraded WebSockets outlive the HTTP server: wait for their close handshakes
    let deadline = tokio::time::Instant::now() + drain_timeout;
    while hub.open_connections() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hub.flush_journal();
    tracing::debug!("relay stopped");
    Ok(())
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

/// Configures and starts a relay in the background (see [`Relay::builder`]).
#[derive(Debug, Clone)]
pub struct RelayBuilder {
    config: RelayConfig,
    bind: String,
}

impl RelayBuilder {
    /// Replaces the whole configuration (the bind address stays the builder's).
    pub fn config(mut self, config: RelayConfig) -> Self {
        self.config = config;
        self
    }

    /// The address to listen on (default `127.0.0.1:0`, a free port).
    pub fn bind(mut self, addr: impl Into<String>) -> Self {
        self.bind = addr.into();
        self
    }

    /// See [`RelayConfig::with_buffer`].
    pub fn buffer(mut self, events: usize) -> Self {
        self.config = self.config.with_buffer(events);
        self
    }

    /// See [`RelayConfig::with_token`].
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.config = self.config.with_token(token);
        self
    }

    /// See [`RelayConfig::with_max_sessions`].
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.config = self.config.with_max_sessions(sessions);
        self
    }

    /// See [`RelayConfig::with_max_body`].
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.config = self.config.with_max_body(bytes);
        self
    }

    /// See [`RelayConfig::with_max_batch`].
    pub fn max_batch(mut self, events: usize) -> Self {
        self.config = self.config.with_max_batch(events);
        self
    }

    /// See [`RelayConfig::with_max_from`].
    pub fn max_from(mut self, positions: usize) -> Self {
        self.config = self.config.with_max_from(positions);
        self
    }

    /// See [`RelayConfig::with_data_dir`].
    pub fn data_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.config = self.config.with_data_dir(dir);
        self
    }

    /// See [`RelayConfig::with_heartbeat`].
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.config = self.config.with_heartbeat(every);
        self
    }

    /// Binds and starts serving on the current tokio runtime.
    pub async fn start(self) -> io::Result<RelayHandle> {
        let listener = TcpListener::bind(&self.bind).await?;
        let local_addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(run(listener, self.config, async move {
            let _ = rx.await;
        }));
        Ok(RelayHandle {
            local_addr,
            url: base_url(local_addr),
            stop: Some(tx),
            task: Some(task),
        })
    }
}

fn base_url(addr: SocketAddr) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        std::net::IpAddr::V4(ip) => ip.to_string(),
    };
    format!("http://{host}:{}", addr.port())
}

/// A running relay. Dropping it asks the relay to shut down; [`RelayHandle::shutdown`]
/// also waits until it has.
#[derive(Debug)]
pub struct RelayHandle {
    local_addr: SocketAddr,
    url: String,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl RelayHandle {
    /// The base URL, e.g. `http://127.0.0.1:41234` (append `/events`, `/stream`, ...).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The WebSocket URL of `/socket`.
    pub fn socket_url(&self) -> String {
        format!("ws{}/socket", self.url.trim_start_matches("http"))
    }

    /// The address the relay listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
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
