//! Fixtures for the integration tests: relays to run against and misbehaving servers.
//!
//! Scenarios are written against [`Relay`], so they run the same against the reference
//! relay (Node, `../shared/tools/reference-relay.sh`, [`ReferenceRelay`]) and the embedded
//! Rust relay ([`RustRelay`]); the scenarios themselves are in `scenarios.rs`.
//!
//! The reference relay needs what a clone of this repository alone does not have: the
//! shared directory (`AEP_SHARED`, by default `../shared` beside the workspace root) and a
//! working `node`. Without them its tests skip at once, saying so
//! ([`ReferenceRelay::skip`]); with `AEP_REQUIRE_EXTERNAL=1` (as `.ci/run` sets) a skip
//! is a failure instead.
#![allow(dead_code, unused_imports, clippy::unwrap_used)]

use std::net::TcpListener as StdListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use aep_test_support::external;

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

/// A port nobody listens on right now, for the reference relay (a child process, which
/// cannot take a bound socket from us).
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

const SCRIPT: &str = "tools/reference-relay.sh";

/// What the reference relay lacks here, if anything: its script under the shared
/// directory, or a `node` that runs. Probed once per test binary.
fn reference_relay_missing() -> Option<&'static str> {
    static MISSING: OnceLock<Option<String>> = OnceLock::new();
    MISSING
        .get_or_init(|| match external::shared_file(SCRIPT) {
            Err(why) => Some(why),
            Ok(_) => external::program_missing("node"),
        })
        .as_deref()
}

impl ReferenceRelay {
    /// Whether the calling test must skip because the reference relay cannot run here
    /// (see [`external::skip_for`]).
    pub fn skip() -> bool {
        external::skip_for(reference_relay_missing())
    }

    pub async fn start(cfg: RelayConfig) -> Self {
        Self::start_on(free_port(), cfg).await
    }

    /// A relay that will listen on a free port but is not started yet.
    pub fn stopped(cfg: RelayConfig) -> Self {
        ReferenceRelay {
            port: free_port(),
            cfg,
            child: None,
        }
    }

    pub async fn start_on(port: u16, cfg: RelayConfig) -> Self {
        let mut r = Self::stopped(cfg);
        r.port = port;
        r.spawn();
        r.wait_ready().await;
        r
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new("bash");
        cmd.arg(external::shared_dir().join(SCRIPT))
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

    pub async fn wait_ready(&mut self) {
        for _ in 0..400 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
            {
                return;
            }
            // A relay that exited will not come up: say so now, not after the whole wait.
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "the reference relay exited ({status}) before listening on port {}; run {} by hand to see why",
                    self.port,
                    external::shared_dir().join(SCRIPT).display()
                );
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

pub use aep_test_support::servers::{sse_response, status_response, Scripted, Silent};
/// Collects notices for assertions.
pub type Notices = aep_test_support::wait::Recorder;

/// The embedded Rust relay (`aep_relay`), started in this test's runtime on a port it
/// holds until dropped (stopped, it refuses connections). `kill` and `restart` block in
/// place on the runtime, so scenarios using them need the multi-threaded flavour (every
/// scenario uses it).
pub struct RustRelay(aep_test_support::relay::TestRelay);

impl RustRelay {
    /// Never: the embedded relay needs nothing beyond Cargo.
    pub fn skip() -> bool {
        false
    }

    pub async fn start(cfg: RelayConfig) -> Self {
        let mut r = Self::stopped(cfg);
        r.start_now().await;
        r
    }

    /// A relay that holds its port but does not serve yet.
    pub fn stopped(cfg: RelayConfig) -> Self {
        let mut config =
            aep_relay::RelayConfig::default().with_buffer(cfg.buffer.unwrap_or(10_000));
        if let Some(t) = &cfg.token {
            config = config.with_token(t.clone());
        }
        if let Some(n) = cfg.max_from {
            config = config.with_max_from(n);
        }
        RustRelay(aep_test_support::relay::TestRelay::stopped(config).unwrap())
    }

    pub async fn start_now(&mut self) {
        self.0.restart().await.unwrap();
    }
}

impl Relay for RustRelay {
    fn url(&self) -> String {
        self.0.url()
    }
    fn kill(&mut self) {
        // Its buffers go with it (no data_dir), as with the reference relay's crash.
        tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(self.0.stop()));
    }
    fn restart(&mut self) {
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(self.start_now())
        });
    }
}

/// The embedded Rust relay on `127.0.0.1:0`, wanting `token`.
pub async fn token_relay(token: &str) -> aep_relay::RelayHandle {
    aep_relay::Relay::builder()
        .token(token)
        .start()
        .await
        .unwrap()
}
