//! Fixtures for the integration tests: relays to run against and misbehaving servers.
//!
//! Scenarios are written against [`Relay`], so they run the same against the reference
//! relay (Node, `../shared/tools/reference-relay.sh`, [`ReferenceRelay`]) and the embedded
//! Rust relay ([`RustRelay`]); the scenarios themselves are in `scenarios.rs`.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_async::Notice;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A relay the scenarios can start, kill and restart on the same port.
pub trait Relay: Send {
    /// `http://127.0.0.1:PORT`
    fn url(&self) -> String;
    /// Stops the relay (its buffers are lost, as with a crash).
    fn kill(&mut self);
    /// Starts it again on the same port.
    fn restart(&mut self);
}

/// Relay options shared by every implementation.
#[derive(Debug, Clone, Default)]
pub struct RelayConfig {
    pub token: Option<String>,
    pub buffer: Option<usize>,
    pub max_from: Option<usize>,
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The reference relay as a child process.
pub struct ReferenceRelay {
    port: u16,
    cfg: RelayConfig,
    child: Option<Child>,
}

fn script() -> PathBuf {
    PathBuf::from(std::env::var("AEP_SHARED").unwrap_or_else(|_| "/work/shared".into()))
        .join("tools/reference-relay.sh")
}

impl ReferenceRelay {
    pub async fn start(cfg: RelayConfig) -> Self {
        Self::start_on(free_port(), cfg).await
    }

    /// A relay that will listen on `port` but is not started yet.
    pub fn stopped(port: u16, cfg: RelayConfig) -> Self {
        ReferenceRelay {
            port,
            cfg,
            child: None,
        }
    }

    pub async fn start_on(port: u16, cfg: RelayConfig) -> Self {
        let mut r = Self::stopped(port, cfg);
        r.spawn();
        r.wait_ready().await;
        r
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new("bash");
        cmd.arg(script())
            .arg(self.port.to_string())
            .arg(self.cfg.token.clone().unwrap_or_default())
            .arg(self.cfg.buffer.unwrap_or(10_000).to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(n) = self.cfg.max_from {
            cmd.env("AEP_MAX_FROM", n.to_string());
        }
        self.child = Some(cmd.spawn().expect("start the reference relay"));
    }

    pub async fn wait_ready(&self) {
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("reference relay did not come up on port {}", self.port);
    }

    pub async fn start_now(&mut self) {
        self.spawn();
        self.wait_ready().await;
    }
}

impl Relay for ReferenceRelay {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            // bash execs node, so the child pid is the relay itself.
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for ReferenceRelay {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A TCP server that accepts connections and never answers.
pub struct Silent {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Silent {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                held.push(sock);
            }
        });
        Silent {
            url: format!("http://{addr}"),
            task,
        }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A scripted HTTP server: `respond(request_head)` gives the whole raw response, after
/// which the connection is closed.
pub struct Scripted {
    pub url: String,
    pub requests: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Scripted {
    pub async fn start(respond: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let respond = Arc::new(respond);
        let task = tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let seen = seen.clone();
                let respond = respond.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    let text = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let len: usize = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < end + len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).into_owned();
                    seen.lock().unwrap().push(head.clone());
                    let out = respond(&head);
                    let _ = sock.write_all(&out).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        Scripted {
            url: format!("http://{addr}"),
            requests,
            task,
        }
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An SSE response with `body` and a close.
pub fn sse_response(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A bodyless response with `status`.
pub fn status_response(status: u16) -> Vec<u8> {
    format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").into_bytes()
}

/// Collects notices for assertions.
#[derive(Clone, Default)]
pub struct Notices(pub Arc<Mutex<Vec<String>>>);

impl Notices {
    pub fn handler(&self) -> impl Fn(Notice) + Send + Sync + 'static {
        let log = self.0.clone();
        move |n| log.lock().unwrap().push(format!("{n:?}"))
    }
    pub fn any(&self, needle: &str) -> bool {
        self.0.lock().unwrap().iter().any(|n| n.contains(needle))
    }
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub async fn wait_for(&self, needle: &str) {
        for _ in 0..400 {
            if self.any(needle) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no notice containing {needle:?}; got {:?}", self.all());
    }
}

/// The embedded Rust relay (`aep_relay`), started in this test's runtime. `kill` and
/// `restart` block in place on the runtime, so scenarios using them need the
/// multi-threaded flavour (every scenario uses it).
pub struct RustRelay {
    port: u16,
    cfg: RelayConfig,
    handle: Option<aep_relay::RelayHandle>,
}

impl RustRelay {
    pub async fn start(cfg: RelayConfig) -> Self {
        let mut r = Self::stopped(0, cfg);
        r.start_now().await;
        r
    }

    /// A relay that will listen on `port` but is not started yet.
    pub fn stopped(port: u16, cfg: RelayConfig) -> Self {
        RustRelay {
            port,
            cfg,
            handle: None,
        }
    }

    pub async fn start_now(&mut self) {
        // A short drain: `kill` stands for a crash, nothing should linger after it.
        let config =
            aep_relay::RelayConfig::default().with_drain_timeout(Duration::from_millis(200));
        let mut b = aep_relay::Relay::builder()
            .config(config)
            .bind(format!("127.0.0.1:{}", self.port))
            .buffer(self.cfg.buffer.unwrap_or(10_000));
        if let Some(t) = &self.cfg.token {
            b = b.token(t.clone());
        }
        if let Some(n) = self.cfg.max_from {
            b = b.max_from(n);
        }
        // The port was just released by `kill`; retry briefly until the bind succeeds.
        for _ in 0..100 {
            match b.clone().start().await {
                Ok(h) => {
                    self.port = h.local_addr().port();
                    self.handle = Some(h);
                    return;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        panic!("the Rust relay could not bind 127.0.0.1:{}", self.port);
    }
}

impl Relay for RustRelay {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
    fn kill(&mut self) {
        if let Some(h) = self.handle.take() {
            // Its buffers go with it (no data_dir), as with the reference relay's crash.
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(async {
                    let _ = h.shutdown().await;
                })
            });
        }
    }
    fn restart(&mut self) {
        self.kill();
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(self.start_now())
        });
    }
}
