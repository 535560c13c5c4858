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
use std::sync::OnceLock;

use aep_test_support::{external, reference};

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

/// A port nobody listens on right now, for a reference relay that must have an address
/// before it exists (a client started first); the one place a port is released and
/// bound again, as nothing can hold a port for a process not yet started.
pub fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The reference relay as a child process ([`aep_test_support::reference`]).
pub struct ReferenceRelay(reference::ReferenceRelay);

/// Why the reference relay cannot run here, if so. Probed once per test binary.
fn reference_relay_missing() -> Option<&'static str> {
    static MISSING: OnceLock<Option<String>> = OnceLock::new();
    MISSING
        .get_or_init(reference::ReferenceRelay::missing)
        .as_deref()
}

fn reference_options(cfg: RelayConfig, port: u16) -> reference::ReferenceOptions {
    reference::ReferenceOptions {
        token: cfg.token,
        buffer: cfg.buffer,
        port,
        env: cfg
            .max_from
            .map(|n| ("AEP_MAX_FROM".to_owned(), n.to_string()))
            .into_iter()
            .collect(),
        ..Default::default()
    }
}

impl ReferenceRelay {
    /// Whether the calling test must skip because the reference relay cannot run here
    /// (see [`external::skip_for`]).
    pub fn skip() -> bool {
        external::skip_for(reference_relay_missing())
    }

    /// One listening on a port it took.
    pub async fn start(cfg: RelayConfig) -> Self {
        let mut r = ReferenceRelay(reference::ReferenceRelay::new(reference_options(cfg, 0)));
        r.start_now().await;
        r
    }

    /// A relay that will listen on a free port but is not started yet.
    pub fn stopped(cfg: RelayConfig) -> Self {
        ReferenceRelay(reference::ReferenceRelay::new(reference_options(
            cfg,
            free_port(),
        )))
    }

    pub async fn start_now(&mut self) {
        tokio::task::block_in_place(|| self.0.start_now()).unwrap();
    }
}

impl Relay for ReferenceRelay {
    fn url(&self) -> String {
        self.0.url()
    }
    fn kill(&mut self) {
        self.0.kill();
    }
    fn restart(&mut self) {
        tokio::task::block_in_place(|| self.0.start_now()).unwrap();
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

/// A console connected to `url` with `token` once the relay routes commands for
/// `session` (its claim is live), waiting at most 20 s.
#[cfg(feature = "ws")]
pub async fn console_for(
    url: &str,
    token: &str,
    session: &str,
) -> aep_async::control::ControlClient {
    use std::time::Duration;
    let client = aep_async::Client::new(url)
        .token(token)
        .connect_timeout(Duration::from_secs(10))
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
        .control(aep_async::control::ControlOptions::new())
        .await
        .unwrap();
    wait_claimed(&client, session).await;
    client
}

/// How many live claims the relay reports for `session` (its roster, AEP-0003 §4.1).
#[cfg(feature = "ws")]
pub async fn claims(client: &aep_async::control::ControlClient, session: &str) -> usize {
    client
        .roster()
        .await
        .unwrap()
        .iter()
        .filter(|e| e.session == session)
        .count()
}

/// Polls until the relay reports `want` claims on `session`; false after
/// [`PATIENCE`](aep_test_support::wait::PATIENCE).
#[cfg(feature = "ws")]
pub async fn until_claims(
    client: &aep_async::control::ControlClient,
    session: &str,
    want: usize,
) -> bool {
    let deadline = std::time::Instant::now() + aep_test_support::wait::PATIENCE;
    while std::time::Instant::now() < deadline {
        if claims(client, session).await == want {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}

/// Waits until the relay routes commands for `session` (one live claim); panics after
/// [`PATIENCE`](aep_test_support::wait::PATIENCE).
#[cfg(feature = "ws")]
pub async fn wait_claimed(client: &aep_async::control::ControlClient, session: &str) {
    assert!(
        until_claims(client, session, 1).await,
        "session {session} never claimed"
    );
}

/// A WebSocket subscribed live to `session`, its `subscribed` frame read.
#[cfg(feature = "ws")]
pub async fn watch_session(url: &str, token: &str, session: &str) -> aep_async::control::Duplex {
    use aep_core::frame::{Frame, Message, Subscribe};
    let mut watch = aep_async::Client::new(url)
        .token(token)
        .duplex(aep_async::control::DuplexOptions::new())
        .await
        .unwrap();
    let sub = Subscribe::new("w", serde_json::json!({ "session": session }));
    watch
        .send(&Message::Frame(Frame::Subscribe(sub)))
        .await
        .unwrap();
    loop {
        match watch.recv().await.unwrap().unwrap() {
            Message::Frame(f) if f.frame_type() == "subscribed" => return watch,
            _ => {}
        }
    }
}

/// The next event of type `ty` on `watch`, within 20 s.
#[cfg(feature = "ws")]
pub async fn next_of(watch: &mut aep_async::control::Duplex, ty: &str) -> aep_core::Event {
    let wait = async {
        loop {
            if let aep_core::frame::Message::Event(e) = watch.recv().await.unwrap().unwrap() {
                if e.event_type() == ty {
                    return e;
                }
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("no {ty} within 20 s"))
}

/// An agent on a relay of its own: a control target hooked to its `WsSink`, its
/// session started and claimed, a console routed to it and a watch on the session's
/// events: where the control-loop tests (attention, steering) start.
#[cfg(feature = "ws")]
pub struct AgentLoop {
    pub relay: aep_relay::RelayHandle,
    pub target: aep_async::control::ControlTarget,
    pub emitter: aep_async::Emitter,
    pub session: std::sync::Arc<aep_async::SessionEmitter>,
    pub console: aep_async::control::ControlClient,
    pub watch: aep_async::control::Duplex,
    pub name: String,
}

#[cfg(feature = "ws")]
impl AgentLoop {
    /// A relay wanting `token`, and `agent` on it with `target`, its emitter made by
    /// `emitter` from the sink, holding the session `name`.
    pub async fn start(
        token: &str,
        agent: &str,
        target: aep_async::control::ControlTarget,
        emitter: impl FnOnce(aep_async::WsSink) -> aep_async::Emitter,
        name: &str,
    ) -> AgentLoop {
        let relay = token_relay(token).await;
        let options = aep_async::WsSinkOptions::new(agent, "host/1").command_hook(target.clone());
        let sink = aep_async::Client::new(relay.url())
            .token(token)
            .ws_sink(options)
            .unwrap();
        let emitter = emitter(sink);
        let session = target.attach(emitter.session(name));
        session
            .emit("session.started", serde_json::json!({}))
            .unwrap();
        emitter.flush().await;
        let watch = watch_session(relay.url(), token, name).await;
        let console = console_for(relay.url(), token, name).await;
        AgentLoop {
            relay,
            target,
            emitter,
            session,
            console,
            watch,
            name: name.to_owned(),
        }
    }

    /// The next event of type `ty` on the session.
    pub async fn next(&mut self, ty: &str) -> aep_core::Event {
        next_of(&mut self.watch, ty).await
    }

    /// Closes the console, the watch and the emitter (delivering what it holds).
    pub async fn close(self) {
        self.console.close().await;
        self.watch.close().await;
        self.emitter.close().await;
    }
}
