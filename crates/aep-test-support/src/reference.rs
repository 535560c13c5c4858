//! The reference relay (the Node program under the shared directory,
//! `tools/reference-relay.sh`) as a child process, for the tests and benches that run the
//! SDK against it.
//!
//! It listens on a port of its own choosing: started with port 0, it takes one from the
//! system, and a preloaded hook (`node/bound-port.cjs`, which this module writes beside
//! it) records which in a file this module reads. Nothing binds a port, releases it and
//! hands it on. Restarted, it listens on the port it took the first time, so clients
//! holding its URL reconnect. Dropping it kills it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::disk::TempDir;
use crate::external;
use crate::process::ServerChild;

/// The start script, under the shared directory.
const SCRIPT: &str = "tools/reference-relay.sh";

/// The hook that records the port the relay took.
const HOOK: &str = include_str!("../node/bound-port.cjs");

/// How long the relay may take to listen (its first start installs its one dependency).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// What the reference relay is started with.
#[derive(Debug, Clone, Default)]
pub struct ReferenceOptions {
    /// `AEP_TOKEN`; none by default (auth off).
    pub token: Option<String>,
    /// `AEP_BUFFER`, events kept per session; the script's default (10,000) when `None`.
    pub buffer: Option<usize>,
    /// The port to listen on; 0 (the default) lets the relay take one.
    pub port: u16,
    /// The start script; `tools/reference-relay.sh` under the shared directory when `None`.
    pub script: Option<PathBuf>,
    /// More environment for the relay (`AEP_MAX_FROM`, `AEP_MAX_SESSIONS`...).
    pub env: Vec<(String, String)>,
}

/// The reference relay, started or not yet.
///
/// ```no_run
/// use aep_test_support::reference::{ReferenceOptions, ReferenceRelay};
/// if let Some(why) = ReferenceRelay::missing() {
///     eprintln!("skipped: {why}");
///     return;
/// }
/// let relay = ReferenceRelay::start(ReferenceOptions::default()).unwrap();
/// println!("the reference relay listens at {}", relay.url());
/// ```
#[derive(Debug)]
pub struct ReferenceRelay {
    options: ReferenceOptions,
    server: ServerChild,
    dir: TempDir,
}

impl ReferenceRelay {
    /// Why the reference relay cannot run here (its script or `node` absent), if so.
    pub fn missing() -> Option<String> {
        match external::shared_file(SCRIPT) {
            Err(why) => Some(why),
            Ok(_) => external::program_missing("node"),
        }
    }

    /// A relay not started yet, on `options.port` (0: the one it takes when started).
    pub fn new(options: ReferenceOptions) -> ReferenceRelay {
        ReferenceRelay {
            options,
            server: ServerChild::default(),
            dir: TempDir::new("reference-relay"),
        }
    }

    /// Starts one and waits until it listens.
    pub fn start(options: ReferenceOptions) -> Result<ReferenceRelay, String> {
        let mut relay = ReferenceRelay::new(options);
        relay.start_now()?;
        Ok(relay)
    }

    /// Starts this relay (again, on the port it took before, once it has one) and waits
    /// until it listens; an error says why it did not, with where to look.
    pub fn start_now(&mut self) -> Result<(), String> {
        let hook = self.dir.path().join("bound-port.cjs");
        let bound = self.dir.path().join("port");
        std::fs::write(&hook, HOOK).map_err(|e| format!("writing {}: {e}", hook.display()))?;
        let _ = std::fs::remove_file(&bound);
        let script = match &self.options.script {
            Some(script) => script.clone(),
            None => external::shared_dir().join(SCRIPT),
        };
        let mut preload = OsString::from("--require=");
        preload.push(&hook);
        if let Some(more) = std::env::var_os("NODE_OPTIONS").filter(|o| !o.is_empty()) {
            preload.push(" ");
            preload.push(more);
        }
        let port = self.port();
        let mut command = Command::new("bash");
        command
            .arg(&script)
            .arg(port.to_string())
            .arg(self.options.token.clone().unwrap_or_default())
            .arg(self.options.buffer.unwrap_or(10_000).to_string())
            .env("NODE_OPTIONS", preload)
            .env("AEP_BOUND_PORT_FILE", &bound)
            .envs(self.options.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // bash execs node: the child is the relay itself, and killing it stops it
        let read = |_pid| std::fs::read_to_string(&bound).ok()?.trim().parse().ok();
        match self.server.launch(&mut command, START_TIMEOUT, read) {
            Ok(_) => Ok(()),
            Err(why) => Err(format!(
                "the reference relay did not start: {why}; run {} {port} by hand to see why",
                script.display()
            )),
        }
    }

    /// Its address, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port())
    }

    /// The port it listens on (or will, or did; 0 before it first took one).
    pub fn port(&self) -> u16 {
        match self.server.port() {
            0 => self.options.port,
            taken => taken,
        }
    }

    /// The relay's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.server.pid()
    }

    /// Whether it runs (started, and has not exited).
    pub fn is_running(&mut self) -> bool {
        self.server.is_running()
    }

    /// Stops it with SIGTERM, SIGKILL if it has not exited within `grace`.
    pub fn terminate(&mut self, grace: Duration) {
        self.server.terminate(grace);
    }

    /// Kills it (SIGKILL) and reaps it; nothing if it is not running.
    pub fn kill(&mut self) {
        self.server.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Started on port 0 it names the port it took, answers there, and comes back on
    /// that port when started again.
    #[test]
    fn takes_a_port_and_keeps_it_across_a_restart() {
        if external::skip_for(ReferenceRelay::missing().as_deref()) {
            return;
        }
        let mut relay = ReferenceRelay::start(ReferenceOptions::default()).unwrap();
        let port = relay.port();
        assert_ne!(port, 0);
        assert!(relay.is_running());
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        relay.kill();
        assert!(!relay.is_running());
        assert!(relay.pid().is_none());
        relay.start_now().unwrap();
        assert_eq!(relay.port(), port);
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    }

    /// A script that exits at once is reported as such, not waited on for a minute.
    #[test]
    fn a_relay_that_exits_before_listening_is_an_error() {
        let dir = TempDir::new("reference-exits");
        let script = dir.path().join("exits.sh");
        std::fs::write(&script, "exit 3\n").unwrap();
        let options = ReferenceOptions {
            script: Some(script),
            ..Default::default()
        };
        let why = ReferenceRelay::start(options).unwrap_err();
        assert!(
            why.contains("exited (exit status: 3) before listening"),
            "{why}"
        );
    }
}
