//! Every limit of the relay, with the reference relay's defaults.
//!
//! The environment variables are the reference relay's (`AEP_PORT`, `AEP_HOST`,
//! `AEP_TOKEN`, `AEP_BUFFER`, `AEP_MAX_SESSIONS`, `AEP_MAX_BODY`, `AEP_MAX_BATCH`,
//! `AEP_MAX_FROM`), so a deployment script written for it works unchanged. One default
//! differs on purpose: the relay listens on loopback unless told otherwise, and refuses
//! to listen elsewhere without a token (see [`RelayConfig::with_insecure_open_relay`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

pub(crate) mod cluster;

use crate::tls::TlsFiles;
pub use cluster::NatsCluster;
use cluster::NatsUrl;

/// The bearer token of a relay (AEP-0003 §8.1).
///
/// Its `Debug` output never shows the secret, so a config can be logged whole.
///
/// ```
/// let token = aep_relay::Token::new("s3cret");
/// assert_eq!(format!("{token:?}"), "Token(<redacted>)");
/// assert!(token.matches(b"s3cret"));
/// assert!(!token.matches(b"s3cres"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Token {
        Token(secret.into())
    }

    /// Whether `presented` equals the secret, in time that depends only on the lengths
    /// (a plain `==` would leak the secret through its early exit).
    pub fn matches(&self, presented: &[u8]) -> bool {
        let expected = self.0.as_bytes();
        if presented.len() != expected.len() {
            return false;
        }
        let diff = presented
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }

    /// The secret itself, for a client that must present it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// When a durable relay (`--data-dir`) answers an ingest, against when its events are
/// on disk. In every mode the answer follows the write to the operating system, so a
/// relay killed (`kill -9`, a crash) loses no acknowledged event; the modes differ on a
/// crash of the machine.
///
/// ```
/// use aep_relay::Fsync;
/// assert_eq!("always".parse::<Fsync>(), Ok(Fsync::Always));
/// assert_eq!(Fsync::default(), Fsync::Batch);
/// assert!("sometimes".parse::<Fsync>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fsync {
    /// The answer follows `fdatasync`: nothing acknowledged is lost to a power cut.
    /// Ingests arriving together share one sync per file (group commit).
    Always,
    /// The answer follows the write; written files are synced every
    /// [`RelayConfig::with_fsync_interval`], so a power cut loses at most that much.
    #[default]
    Batch,
    /// The answer follows the write; the operating system syncs when it will.
    Never,
}

impl Fsync {
    /// The flag's spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::Batch => "batch",
            Fsync::Never => "never",
        }
    }
}

impl fmt::Display for Fsync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Fsync {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Fsync, ConfigError> {
        match s.trim() {
            "always" => Ok(Fsync::Always),
            "batch" => Ok(Fsync::Batch),
            "never" => Ok(Fsync::Never),
            _ => Err(ConfigError::new("fsync", s, "always, batch or never")),
        }
    }
}

/// The configuration of one relay: where it listens, who may talk to it, and every
/// resource limit.
///
/// Defaults are the reference relay's. Build one with [`RelayConfig::default`] and the
/// `with_*` methods, or read the reference relay's environment variables with
/// [`RelayConfig::from_env`].
///
/// ```
/// use aep_relay::RelayConfig;
///
/// let config = RelayConfig::default().with_buffer(8).with_token("t");
/// assert_eq!(config.buffer(), 8);
/// assert_eq!(config.max_from(), 500); // follows max_sessions unless set
/// assert!(!format!("{config:?}").contains("\"t\""));
/// ```
#[derive(Debug, Clone)]
pub struct RelayConfig {
    host: IpAddr,
    port: u16,
    token: Option<Token>,
    buffer: usize,
    max_sessions: usize,
    max_body: usize,
    max_batch: usize,
    max_from: Option<usize>,
    soft_backpressure: usize,
    hard_backpressure: usize,
    heartbeat: Duration,
    lag_grace: Duration,
    drain_timeout: Duration,
    data_dir: Option<PathBuf>,
    subscription_ttl: Option<Duration>,
    max_hello: usize,
    max_connections: usize,
    max_connections_per_peer: usize,
    header_timeout: Duration,
    hello_timeout: Duration,
    max_subscriptions: usize,
    max_relay_subscriptions: usize,
    max_session_bytes: usize,
    max_store_bytes: usize,
    fsync: Fsync,
    fsync_interval: Duration,
    /// A cluster's NATS; `Some` with an empty URL when only `--nats-*` flags were given
    /// (refused at start).
    nats: Option<NatsCluster>,
    /// Serves the web console at `/console` (`--console on`).
    console: bool,
    /// HTTPS and WSS with this certificate and key; `Some` with one path empty when only
    /// one of `--tls-cert`, `--tls-key` was given (refused at start).
    tls: Option<TlsFiles>,
    /// Serve without a token on an address beyond loopback (refused at start otherwise).
    insecure_open_relay: bool,
}

/// A value of a `AEP_*` variable or flag that is not what it should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {value:?} is not {expected}")]
pub struct ConfigError {
    name: String,
    value: String,
    expected: &'static str,
}

impl ConfigError {
    pub(crate) fn new(name: &str, value: &str, expected: &'static str) -> ConfigError {
        ConfigError {
            name: name.to_owned(),
            value: value.to_owned(),
            expected,
        }
    }
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            // loopback: what a relay exposes beyond this machine is the operator's choice
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 8787,
            token: None,
            buffer: 10_000,
            max_sessions: 500,
            max_body: 16 << 20,
            max_batch: 10_000,
            max_from: None,
            soft_backpressure: 1 << 20,
            hard_backpressure: 8 << 20,
            heartbeat: Duration::from_secs(25),
            lag_grace: Duration::from_secs(1),
            drain_timeout: Duration::from_secs(5),
            data_dir: None,
            subscription_ttl: None,
            max_hello: 64 << 10,
            max_connections: 4096,
            max_connections_per_peer: 256,
            header_timeout: Duration::from_secs(10),
            hello_timeout: Duration::from_secs(10),
            max_subscriptions: 100,
            max_relay_subscriptions: 50_000,
            max_session_bytes: 64 << 20,
            max_store_bytes: 512 << 20,
            fsync: Fsync::Batch,
            fsync_interval: Duration::from_secs(1),
            nats: None,
            console: false,
            tls: None,
            insecure_open_relay: false,
        }
    }
}

/// One setting as a command line and an environment name it: its flag, its variable
/// (the reference relay's where it has one), the value it takes, and what it does with
/// its default. [`RelayConfig::set`] parses every one; the `cli` feature builds the
/// flags of both relay binaries (`aep-relay`, `aep relay`) from this table.
#[derive(Debug, Clone, Copy)]
// without `cli`, only the variables are read: the flags and their help build no command
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct Setting {
    pub(crate) flag: &'static str,
    pub(crate) env: &'static str,
    pub(crate) value: &'static str,
    pub(crate) help: &'static str,
}

impl Setting {
    /// A switch (`--flag` alone, or `--flag=false`) rather than a flag with a value.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn is_switch(&self) -> bool {
        self.value.is_empty()
    }
}

const fn setting(
    flag: &'static str,
    env: &'static str,
    value: &'static str,
    help: &'static str,
) -> Setting {
    Setting {
        flag,
        env,
        value,
        help,
    }
}

/// Every setting: the reference relay's, then this relay's own.
pub(crate) static SETTINGS: &[Setting] = &[
    setting("port", "AEP_PORT", "N", "Port to listen on; 0 picks a free one [default: 8787]"),
    setting("host", "AEP_HOST", "IP", "Address to listen on; any but loopback needs --token (or --insecure-open-relay) [default: 127.0.0.1, this machine only]"),
    setting("token", "AEP_TOKEN", "TOKEN", "Bearer token required on every surface but /healthz; without one, control routing is disabled (AEP-0004 §4.1) [default: none]"),
    setting("insecure-open-relay", "AEP_INSECURE_OPEN_RELAY", "", "Serve without a token on an address beyond loopback: anyone who reaches it reads every event and writes into any session. Warned at every start [default: false, refused]"),
    setting("tls-cert", "AEP_TLS_CERT", "FILE", "Serve HTTPS and WSS with this PEM certificate chain (with --tls-key); re-read with the key on SIGHUP, open connections kept [default: none, plain HTTP]"),
    setting("tls-key", "AEP_TLS_KEY", "FILE", "The PEM private key of --tls-cert (PKCS#8, PKCS#1 or SEC1) [default: none]"),
    setting("buffer", "AEP_BUFFER", "N", "Events replayed per session [default: 10000]"),
    setting("max-sessions", "AEP_MAX_SESSIONS", "N", "Sessions held; the least recently written is evicted; with --nats only the default of --max-from (bound the stream with the server's limits) [default: 500]"),
    setting("max-body", "AEP_MAX_BODY", "BYTES", "Largest POST /events body; 413 beyond [default: 16777216]"),
    setting("max-batch", "AEP_MAX_BATCH", "N", "Events per NDJSON batch; 413 beyond [default: 10000]"),
    setting("max-from", "AEP_MAX_FROM", "N", "Resume positions per request [default: max-sessions]"),
    setting("data-dir", "AEP_DATA_DIR", "DIR", "Journal the replay buffers in DIR (one file per session), so they survive a restart; a 2xx only once written, 507 when the disk cannot take it [default: memory only]"),
    setting("soft-backpressure", "AEP_SOFT_BACKPRESSURE", "BYTES", "Bytes queued to a reader past which one ingest waits up to the lag grace, then the reader is lagging and loses debug/info [default: 1048576]"),
    setting("hard-backpressure", "AEP_HARD_BACKPRESSURE", "BYTES", "Bytes queued to a reader past which it is disconnected [default: 8388608]"),
    setting("heartbeat-ms", "AEP_HEARTBEAT_MS", "MS", "Between `: ping` comments and ping frames [default: 25000]"),
    setting("lag-grace-ms", "AEP_LAG_GRACE_MS", "MS", "How long one ingest waits for a reader past the soft bound [default: 1000]"),
    setting("drain-timeout-ms", "AEP_DRAIN_TIMEOUT_MS", "MS", "Graceful-shutdown limit; also what a reader disconnected past the hard bound gets to take what was queued [default: 5000]"),
    setting("subscription-ttl-ms", "AEP_SUBSCRIPTION_TTL_MS", "MS", "Subscription-model subscriptions expire after this [default: never]"),
    setting("max-hello", "AEP_MAX_HELLO", "BYTES", "Largest WebSocket hello; limit-exceeded and close 1009 beyond [default: 65536]"),
    setting("max-connections", "AEP_MAX_CONNECTIONS", "N", "Connections at once, every binding together; 503 and close beyond (keep ulimit -n above it) [default: 4096]"),
    setting("max-connections-per-peer", "AEP_MAX_CONNECTIONS_PER_PEER", "N", "Connections at once from one address (IPv6: one /64), so one peer cannot take every slot; 429 and close beyond, counted and logged; 0: no bound [default: 256]"),
    setting("header-timeout-ms", "AEP_HEADER_TIMEOUT_MS", "MS", "To send a request's headers, and to hold an idle keep-alive connection; 0: no limit [default: 10000]"),
    setting("hello-timeout-ms", "AEP_HELLO_TIMEOUT_MS", "MS", "A WebSocket may go this long without hello; hello-required and close 1002 past it [default: 10000]"),
    setting("max-subscriptions", "AEP_MAX_SUBSCRIPTIONS", "N", "Subscriptions on one WebSocket, subscribe and subscription.requested together; limit-exceeded beyond [default: 100]"),
    setting("max-relay-subscriptions", "AEP_MAX_RELAY_SUBSCRIPTIONS", "N", "Live subscriptions on this relay, every socket and stream together; one more is refused (limit-exceeded on a WebSocket, 503 on /stream) and counted on /healthz [default: 50000]"),
    setting("max-session-bytes", "AEP_MAX_SESSION_BYTES", "BYTES", "Bytes replayed per session; the oldest events are evicted, as past --buffer; refused with --nats (bound the stream with the server's limits) [default: 67108864]"),
    setting("max-store-bytes", "AEP_MAX_STORE_BYTES", "BYTES", "Bytes over all sessions; the least recently written sessions are evicted; refused with --nats (bound the stream with the server's limits) [default: 536870912]"),
    setting("fsync", "AEP_FSYNC", "MODE", "With --data-dir, what a 2xx waits for: always (fdatasync, group commit), batch (the write; files synced every interval), never (the write). Every mode survives kill -9; only always survives a power cut [default: batch]"),
    setting("fsync-interval-ms", "AEP_FSYNC_INTERVAL_MS", "MS", "Between syncs in batch mode [default: 1000]"),
    setting("nats", "AEP_NATS_URL", "URL", "Join a relay cluster on NATS JetStream at URL (nats://host:port or tls://host:port, several comma-separated): every event is stored in the stream (a 2xx once JetStream acknowledged it, 503 while NATS is unreachable), any relay of the fleet replays it and fans it out live. Not with --data-dir. Needs a relay built with feature `nats` [default: none, a single relay]"),
    setting("nats-creds", "AEP_NATS_CREDS", "FILE", "With --nats, the NATS credentials file (user JWT and nkey seed) [default: none]"),
    setting("nats-tls-ca", "AEP_NATS_TLS_CA", "FILE", "With --nats, PEM roots to verify the server's certificate with; TLS required [default: the system's roots]"),
    setting("nats-stream", "AEP_NATS_STREAM", "NAME", "With --nats, the stream the fleet shares and its subjects' first token, so several fleets share one NATS; --buffer must match what the stream holds [default: AEP]"),
    setting("console", "AEP_CONSOLE", "on|off", "Serve mission control, a live web console, at /console: sessions, timelines, the inbox of attention requests answered from the page, the roster; its API is behind --token; an embedded Relay serves it only when its builder says so [default: on]"),
    setting("nats-dedupe-horizon", "AEP_NATS_DEDUPE_HORIZON", "SECONDS", "With --nats, how long a stored (source, id) keeps a retry to any relay from being stored again (the stream's duplicate_window; the server holds every id of it in memory, so rate x horizon bounds it); every relay must agree [default: 120]"),
];

/// A switch's value: `true`/`1`/`yes`/`on` (what `--flag` alone means) or
/// `false`/`0`/`no`/`off`/empty.
fn parse_switch(name: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err(ConfigError::new(name, value, "true or false")),
    }
}

fn parse_num<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, ConfigError> {
    value
        .trim()
        .parse()
        .map_err(|_| ConfigError::new(name, value, "a non-negative integer"))
}

impl RelayConfig {
    /// The defaults overridden by the environment variables that are set: the
    /// reference relay's `AEP_PORT`, `AEP_HOST`, `AEP_TOKEN` (empty means no token),
    /// `AEP_BUFFER`, `AEP_MAX_SESSIONS`, `AEP_MAX_BODY`, `AEP_MAX_BATCH`, `AEP_MAX_FROM`,
    /// and this relay's own, one per flag: `--max-hello` reads `AEP_MAX_HELLO`, and so on
    /// (the binary's `--help` lists them).
    ///
    /// ```
    /// let config = aep_relay::RelayConfig::from_env()?;
    /// assert!(config.buffer() > 0);
    /// # Ok::<(), aep_relay::ConfigError>(())
    /// ```
    pub fn from_env() -> Result<RelayConfig, ConfigError> {
        RelayConfig::from_vars(|name| std::env::var(name).ok())
    }

    /// [`RelayConfig::from_env`] over any source of variables (tests, config files).
    ///
    /// ```
    /// let config = aep_relay::RelayConfig::from_vars(|name| match name {
    ///     "AEP_BUFFER" => Some("8".into()),
    ///     _ => None,
    /// })?;
    /// assert_eq!(config.buffer(), 8);
    /// # Ok::<(), aep_relay::ConfigError>(())
    /// ```
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<RelayConfig, ConfigError> {
        let mut config = RelayConfig::default();
        for setting in SETTINGS {
            if let Some(value) = get(setting.env) {
                config.set(setting.env, &value)?;
            }
        }
        Ok(config)
    }

    /// Sets one setting by its environment-variable name (`AEP_BUFFER`) or flag name
    /// (`buffer`, `max-body`); the one place that knows how each is spelled and parsed.
    ///
    /// ```
    /// let mut config = aep_relay::RelayConfig::default();
    /// config.set("max-batch", "50")?;
    /// assert_eq!(config.max_batch(), 50);
    /// assert!(config.set("buffer", "many").is_err());
    /// # Ok::<(), aep_relay::ConfigError>(())
    /// ```
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let key = name
            .trim_start_matches("AEP_")
            .trim_start_matches("--")
            .to_ascii_lowercase()
            .replace('_', "-");
        match key.as_str() {
            "port" => self.port = parse_num(name, value)?,
            "host" => {
                self.host = value
                    .trim()
                    .parse()
                    .map_err(|_| ConfigError::new(name, value, "an IP address"))?
            }
            "token" => self.token = (!value.is_empty()).then(|| Token::new(value)),
            "buffer" => self.buffer = parse_num(name, value)?,
            "max-sessions" => self.max_sessions = parse_num(name, value)?,
            "max-body" => self.max_body = parse_num(name, value)?,
            "max-batch" => self.max_batch = parse_num(name, value)?,
            "max-from" => self.max_from = Some(parse_num(name, value)?),
            "soft-backpressure" => self.soft_backpressure = parse_num(name, value)?,
            "hard-backpressure" => self.hard_backpressure = parse_num(name, value)?,
            "heartbeat-ms" => self.heartbeat = Duration::from_millis(parse_num(name, value)?),
            "lag-grace-ms" => self.lag_grace = Duration::from_millis(parse_num(name, value)?),
            "drain-timeout-ms" => {
                self.drain_timeout = Duration::from_millis(parse_num(name, value)?)
            }
            "subscription-ttl-ms" => {
                self.subscription_ttl = Some(Duration::from_millis(parse_num(name, value)?))
            }
            "data-dir" => self.data_dir = (!value.is_empty()).then(|| PathBuf::from(value)),
            "max-hello" => self.max_hello = parse_num(name, value)?,
            "max-connections" => self.max_connections = parse_num(name, value)?,
            "max-connections-per-peer" => self.max_connections_per_peer = parse_num(name, value)?,
            "insecure-open-relay" => self.insecure_open_relay = parse_switch(name, value)?,
            "tls-cert" => {
                self.tls_mut().cert = PathBuf::from(value.trim());
                self.tls = self.tls.take().filter(|t| !t.is_empty());
            }
            "tls-key" => {
                self.tls_mut().key = PathBuf::from(value.trim());
                self.tls = self.tls.take().filter(|t| !t.is_empty());
            }
            "header-timeout-ms" => {
                self.header_timeout = Duration::from_millis(parse_num(name, value)?)
            }
            "max-subscriptions" => self.max_subscriptions = parse_num(name, value)?,
            "max-relay-subscriptions" => self.max_relay_subscriptions = parse_num(name, value)?,
            "max-session-bytes" => self.max_session_bytes = parse_num(name, value)?,
            "max-store-bytes" => self.max_store_bytes = parse_num(name, value)?,
            "fsync" => {
                self.fsync = value
                    .parse()
                    .map_err(|_| ConfigError::new(name, value, "always, batch or never"))?
            }
            "fsync-interval-ms" => {
                self.fsync_interval = Duration::from_millis(parse_num(name, value)?)
            }
            "hello-timeout-ms" => {
                self.hello_timeout = Duration::from_millis(parse_num(name, value)?)
            }
            "nats" | "nats-url" => {
                let url = value.trim();
                if url.is_empty() {
                    self.nats = None;
                } else if NatsCluster::is_url(url) {
                    self.nats = Some(match self.nats.take() {
                        Some(cluster) => NatsCluster {
                            url: NatsUrl(url.to_owned()),
                            ..cluster
                        },
                        None => NatsCluster::new(url),
                    });
                } else {
                    return Err(ConfigError::new(
                        name,
                        value,
                        "a nats://host:port or tls://host:port URL",
                    ));
                }
            }
            "nats-creds" => {
                self.nats_mut().creds = (!value.is_empty()).then(|| PathBuf::from(value))
            }
            "nats-tls-ca" => {
                self.nats_mut().tls_roots = (!value.is_empty()).then(|| PathBuf::from(value))
            }
            "nats-stream" => {
                cluster::check_stream_name(value.trim()).map_err(|_| {
                    ConfigError::new(
                        name,
                        value,
                        "a stream name: 1 to 32 ASCII letters, digits, `-` or `_`",
                    )
                })?;
                self.nats_mut().stream = value.trim().to_owned();
            }
            "console" => {
                self.console = match value.trim() {
                    "on" | "true" | "1" => true,
                    "off" | "false" | "0" | "" => false,
                    _ => return Err(ConfigError::new(name, value, "on or off")),
                }
            }
            "nats-dedupe-horizon" => {
                let seconds: u64 = parse_num(name, value)?;
                if seconds == 0 {
                    return Err(ConfigError::new(name, value, "at least 1 (seconds)"));
                }
                self.nats_mut().dedupe_horizon = Duration::from_secs(seconds);
            }
            _ => return Err(ConfigError::new(name, value, "a known setting")),
        }
        Ok(())
    }

    /// The TLS files `--tls-cert` and `--tls-key` set, made (one path empty) by the first.
    fn tls_mut(&mut self) -> &mut TlsFiles {
        self.tls.get_or_insert_with(TlsFiles::default)
    }

    /// Serves HTTPS and WSS (rustls, HTTP/1.1) with the PEM certificate chain in `cert`
    /// and its private key in `key` (PKCS#8, PKCS#1 or SEC1) instead of plain HTTP
    /// (default: none). Both files are read when the relay opens: one that cannot be
    /// read or parsed, or a key that does not match the certificate, refuses the start
    /// with the reason. The `aep-relay` binary reads them again on `SIGHUP`
    /// ([`Server::tls_reloader`](crate::Server::tls_reloader)): new connections get
    /// the new certificate, open ones keep theirs.
    ///
    /// ```
    /// let config = aep_relay::RelayConfig::default().with_tls("/etc/aep/cert.pem", "/etc/aep/key.pem");
    /// assert_eq!(config.tls().map(|t| t.cert().to_str()), Some(Some("/etc/aep/cert.pem")));
    /// ```
    pub fn with_tls(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.tls = Some(TlsFiles::new(cert, key));
        self
    }

    /// The certificate and key HTTPS is served with, when set.
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    aep_core::setters! {
        /// Lets the relay serve without a token on an address beyond loopback (default:
        /// refused at start). Without a token anyone who can reach the address reads every
        /// event (prompts, tool output, at whatever capture the agents chose) and writes
        /// events into any session; the relay warns at every start it is open.
        ///
        /// ```
        /// use aep_relay::RelayConfig;
        /// let config = RelayConfig::default().with_addr("0.0.0.0:8787".parse()?).with_insecure_open_relay(true);
        /// assert!(config.insecure_open_relay());
        /// # Ok::<(), std::net::AddrParseError>(())
        /// ```
        pub fn with_insecure_open_relay(open: bool) => insecure_open_relay = open;
    }

    /// Whether the relay may serve without a token beyond loopback.
    pub fn insecure_open_relay(&self) -> bool {
        self.insecure_open_relay
    }

    aep_core::setters! {
        /// Connections served at once from one peer address (default 256; an IPv6 peer is
        /// its /64, what one host is usually given; 0: no bound). One more from that peer is
        /// answered `429` and closed at once, counted and logged at WARN once every 10 s,
        /// so one unauthenticated peer holding idle sockets cannot take the slots of
        /// [`RelayConfig::with_max_connections`] from everyone else. Clients on the relay's
        /// own machine share the loopback address: raise it for a box that runs more.
        ///
        /// ```
        /// let config = aep_relay::RelayConfig::default().with_max_connections_per_peer(32);
        /// assert_eq!(config.max_connections_per_peer(), 32);
        /// ```
        pub fn with_max_connections_per_peer(connections: usize) =>
            max_connections_per_peer = connections;
    }

    /// Connections served at once from one peer address (0: no bound).
    pub fn max_connections_per_peer(&self) -> usize {
        self.max_connections_per_peer
    }

    /// The cluster option the `--nats-*` flags set, made (without a URL) by the first.
    fn nats_mut(&mut self) -> &mut NatsCluster {
        self.nats.get_or_insert_with(|| NatsCluster::new(""))
    }

    aep_core::setters! {
        /// Stores every event in a NATS JetStream stream several relays share, instead of
        /// in memory: see [`NatsCluster`] (default: none, a single relay). Not with
        /// [`RelayConfig::with_data_dir`]; needs the crate's feature `nats`.
        ///
        /// ```
        /// use aep_relay::{NatsCluster, RelayConfig};
        /// let config = RelayConfig::default().with_buffer(8).with_nats(NatsCluster::new("nats://127.0.0.1:4222"));
        /// assert_eq!(config.nats().map(|c| c.stream_name()), Some("AEP"));
        /// ```
        pub fn with_nats(cluster: NatsCluster) => nats = Some(cluster);
    }

    /// The cluster this relay joins, when it joins one.
    ///
    /// ```
    /// assert!(aep_relay::RelayConfig::default().nats().is_none());
    /// ```
    pub fn nats(&self) -> Option<&NatsCluster> {
        self.nats.as_ref()
    }

    /// The address to bind: `host:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.host, self.port)
    }

    /// Binds `addr` (default `127.0.0.1:8787`: loopback, the reference relay's port). An
    /// address beyond loopback needs a token ([`RelayConfig::with_token`]) or
    /// [`RelayConfig::with_insecure_open_relay`].
    pub fn with_addr(mut self, addr: SocketAddr) -> Self {
        self.host = addr.ip();
        self.port = addr.port();
        self
    }

    aep_core::setters! {
        /// Requires this bearer token on every surface but `/healthz` and CORS preflight,
        /// and enables control routing (AEP-0004 §4.1: control needs an authenticated binding).
        pub fn with_token(token: impl Into<String>) => token = Some(Token::new(token));
    }

    /// The bearer token, when one is required.
    pub fn token(&self) -> Option<&Token> {
        self.token.as_ref()
    }

    aep_core::setters! {
        /// Replay depth per session, in events (default 10 000; AEP-0003 §5).
        pub fn with_buffer(events: usize) => buffer = events;
    }

    /// Replay depth per session, in events.
    pub fn buffer(&self) -> usize {
        self.buffer
    }

    aep_core::setters! {
        /// Sessions held at once; the least recently written is evicted first (default 500).
        pub fn with_max_sessions(sessions: usize) => max_sessions = sessions;
    }

    /// Sessions held at once.
    pub fn max_sessions(&self) -> usize {
        self.max_sessions
    }

    aep_core::setters! {
        /// Largest `POST /events` body in bytes, answered 413 beyond (default 16 MiB).
        pub fn with_max_body(bytes: usize) => max_body = bytes;
    }

    /// Largest `POST /events` body in bytes.
    pub fn max_body(&self) -> usize {
        self.max_body
    }

    aep_core::setters! {
        /// Most events in one NDJSON batch, which is refused whole beyond (default 10 000).
        pub fn with_max_batch(events: usize) => max_batch = events;
    }

    /// Most events in one NDJSON batch.
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    aep_core::setters! {
        /// Most resume positions in one `from` (default: `max_sessions`).
        pub fn with_max_from(positions: usize) => max_from = Some(positions);
    }

    /// Most resume positions in one `from`.
    pub fn max_from(&self) -> usize {
        self.max_from.unwrap_or(self.max_sessions)
    }

    aep_core::setters! {
        /// Bytes queued toward one subscriber beyond which `debug`/`info` events are dropped
        /// for it once it is lagging (default 1 MiB; AEP-0003 §8.4).
        pub fn with_soft_backpressure(bytes: usize) => soft_backpressure = bytes;

        /// Bytes queued toward one subscriber beyond which it is disconnected (default 8 MiB):
        /// `notice` and above are never dropped silently (AEP-0003 §8.4). Every frame counts,
        /// the relay's own (`pong`, `roster`, `error`) too, each with a fixed overhead; a
        /// disconnected reader gets the drain timeout to take what was queued, then its
        /// connection is dropped.
        pub fn with_hard_backpressure(bytes: usize) => hard_backpressure = bytes;

        /// Serves mission control, the web console, at `/console` (default off here; on in
        /// the `aep-relay` and `aep relay` binaries): the page is public (three static files,
        /// no data), its API (`/console/api/`) behind the token like every other surface.
        ///
        /// ```
        /// let config = aep_relay::RelayConfig::default().with_console(true);
        /// assert!(config.console());
        /// ```
        pub fn with_console(on: bool) => console = on;
    }

    /// What the `aep-relay` and `aep relay` binaries start from before their flags:
    /// the defaults, with the web console on (issue 35: every relay serves it).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn for_binaries() -> RelayConfig {
        RelayConfig::default().with_console(true)
    }

    /// Whether the web console is served (see [`RelayConfig::with_console`]).
    pub fn console(&self) -> bool {
        self.console
    }

    /// Bytes queued toward one subscriber beyond which `debug`/`info` may be dropped.
    ///
    /// ```
    /// let config = aep_relay::RelayConfig::default().with_soft_backpressure(1 << 16);
    /// assert_eq!(config.soft_backpressure(), 1 << 16);
    /// ```
    pub fn soft_backpressure(&self) -> usize {
        self.soft_backpressure
    }

    /// Bytes queued toward one subscriber beyond which it is disconnected.
    ///
    /// ```
    /// let config = aep_relay::RelayConfig::default().with_hard_backpressure(1 << 20);
    /// assert_eq!(config.hard_backpressure(), 1 << 20);
    /// ```
    pub fn hard_backpressure(&self) -> usize {
        self.hard_backpressure
    }

    aep_core::setters! {
        /// Interval of `: ping` comments and `ping` frames (default 25 s; AEP-0003 §3.3.4).
        pub fn with_heartbeat(every: Duration) => heartbeat = every;
    }

    /// Interval of `: ping` comments and `ping` frames.
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = aep_relay::RelayConfig::default().with_heartbeat(Duration::from_secs(5));
    /// assert_eq!(config.heartbeat(), Duration::from_secs(5));
    /// ```
    pub fn heartbeat(&self) -> Duration {
        self.heartbeat
    }

    aep_core::setters! {
        /// How long one ingest waits for a subscriber past the soft bound to drain before it
        /// is called lagging (default 1 s). A subscriber that reads at full speed is waited
        /// for and loses nothing; one that stays behind longer loses `debug`/`info`, counted.
        /// Every reader is handed what it can take before any wait, the waits for several
        /// readers run at once, and one ingest at a time waits for a given reader: no other
        /// ingest and no other reader ever waits on it.
        pub fn with_lag_grace(grace: Duration) => lag_grace = grace;
    }

    /// How long one ingest waits for a subscriber past the soft bound.
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = aep_relay::RelayConfig::default().with_lag_grace(Duration::from_millis(200));
    /// assert_eq!(config.lag_grace(), Duration::from_millis(200));
    /// ```
    pub fn lag_grace(&self) -> Duration {
        self.lag_grace
    }

    aep_core::setters! {
        /// Keeps every session's replay buffer in a journal under `dir`, one file per
        /// session, one stored event's JSON per line, so a restarted relay resumes what it
        /// held (default: memory only). An ingest is then answered `2xx` only once its
        /// events are written ([`RelayConfig::with_fsync`] says how far), and `507` with the
        /// reason when they could not be (a full disk); a damaged line is skipped at start
        /// and the rest replays.
        pub fn with_data_dir(dir: impl Into<PathBuf>) => data_dir = Some(dir.into());
    }

    /// The data directory of durable replay, when set.
    pub fn data_dir(&self) -> Option<&std::path::Path> {
        self.data_dir.as_deref()
    }

    aep_core::setters! {
        /// How long a graceful shutdown waits for connections to close (default 5 s), and how
        /// long a reader disconnected past the hard bound gets to take what was queued before
        /// its connection is dropped.
        pub fn with_drain_timeout(timeout: Duration) => drain_timeout = timeout;
    }

    /// How long a graceful shutdown, or a reader disconnected past the hard bound, is
    /// given to drain.
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = aep_relay::RelayConfig::default().with_drain_timeout(Duration::from_secs(1));
    /// assert_eq!(config.drain_timeout(), Duration::from_secs(1));
    /// ```
    pub fn drain_timeout(&self) -> Duration {
        self.drain_timeout
    }

    aep_core::setters! {
        /// How long a subscription of the subscription model lives before the relay sends
        /// `subscription.expired` (default: no expiry). See the crate docs on the lifecycle.
        ///
        /// ```
        /// use std::time::Duration;
        /// let config = aep_relay::RelayConfig::default().with_subscription_ttl(Duration::from_secs(60));
        /// assert_eq!(config.subscription_ttl(), Some(Duration::from_secs(60)));
        /// ```
        pub fn with_subscription_ttl(ttl: Duration) => subscription_ttl = Some(ttl);
    }

    /// The subscription expiry, when set.
    pub fn subscription_ttl(&self) -> Option<Duration> {
        self.subscription_ttl
    }

    aep_core::setters! {
        /// Largest WebSocket `hello` in bytes (default 64 KiB): what a party declares is
        /// kept for its connection's life and copied into every `roster` reply, so a larger
        /// one is refused (`limit-exceeded`) and the socket closed with 1009.
        ///
        /// ```
        /// let config = aep_relay::RelayConfig::default().with_max_hello(4096);
        /// assert_eq!(config.max_hello(), 4096);
        /// ```
        pub fn with_max_hello(bytes: usize) => max_hello = bytes;
    }

    /// Largest WebSocket `hello` in bytes.
    pub fn max_hello(&self) -> usize {
        self.max_hello
    }

    aep_core::setters! {
        /// Connections served at once, every binding together (default 4096); one more is
        /// answered `503` and closed at once, so a flood of idle connections cannot take
        /// the relay's file descriptors. Keep the process's open-file limit above it.
        ///
        /// ```
        /// let config = aep_relay::RelayConfig::default().with_max_connections(100);
        /// assert_eq!(config.max_connections(), 100);
        /// ```
        pub fn with_max_connections(connections: usize) => max_connections = connections;
    }

    /// Connections served at once.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    aep_core::setters! {
        /// How long a client may take to send a request's headers, and how long an idle
        /// keep-alive connection is held for its next request (default 10 s; zero: no
        /// limit). Past it the connection is closed.
        ///
        /// ```
        /// use std::time::Duration;
        /// let config = aep_relay::RelayConfig::default().with_header_timeout(Duration::from_secs(5));
        /// assert_eq!(config.header_timeout(), Duration::from_secs(5));
        /// ```
        pub fn with_header_timeout(timeout: Duration) => header_timeout = timeout;
    }

    /// How long a client may take to send a request's headers.
    pub fn header_timeout(&self) -> Duration {
        self.header_timeout
    }

    aep_core::setters! {
        /// How long a WebSocket may stay open without saying `hello` (default 10 s): past
        /// it the relay answers `hello-required` and closes, as for any other first frame
        /// (AEP-0003 §3.5 rule 1).
        ///
        /// ```
        /// use std::time::Duration;
        /// let config = aep_relay::RelayConfig::default().with_hello_timeout(Duration::from_secs(2));
        /// assert_eq!(config.hello_timeout(), Duration::from_secs(2));
        /// ```
        pub fn with_hello_timeout(timeout: Duration) => hello_timeout = timeout;
    }

    /// How long a WebSocket may stay open without saying `hello`.
    pub fn hello_timeout(&self) -> Duration {
        self.hello_timeout
    }

    aep_core::setters! {
        /// Subscriptions one WebSocket connection may hold at once, `subscribe` frames and
        /// `subscription.requested` messages together (default 100). One more is refused
        /// with `limit-exceeded` (AEP-0003 §6.5), the connection and its other
        /// subscriptions untouched.
        ///
        /// ```
        /// let config = aep_relay::RelayConfig::default().with_max_subscriptions(10);
        /// assert_eq!(config.max_subscriptions(), 10);
        /// ```
        pub fn with_max_subscriptions(subscriptions: usize) => max_subscriptions = subscriptions;
    }

    /// Subscriptions one WebSocket connection may hold at once.
    pub fn max_subscriptions(&self) -> usize {
        self.max_subscriptions
    }

    aep_core::setters! {
        /// Live subscriptions the whole relay may hold at once, every WebSocket and SSE
        /// stream together (default 50,000; issue 32). One more is refused as AEP-0003 §6.5
        /// refuses a resource limit: `limit-exceeded` on a WebSocket (`subscribe` or
        /// `subscription.requested`), `503` with `Retry-After` on `GET /stream`; each refusal
        /// is counted in `/healthz` (`refused_subscriptions`). A `live=0` replay holds no
        /// live subscription and is never refused.
        ///
        /// ```
        /// let config = aep_relay::RelayConfig::default().with_max_relay_subscriptions(40_000);
        /// assert_eq!(config.max_relay_subscriptions(), 40_000);
        /// ```
        pub fn with_max_relay_subscriptions(subscriptions: usize) =>
            max_relay_subscriptions = subscriptions;
    }

    /// Live subscriptions the whole relay may hold at once.
    pub fn max_relay_subscriptions(&self) -> usize {
        self.max_relay_subscriptions
    }

    aep_core::setters! {
        /// Bytes of replay buffer per session (default 64 MiB): past it the session's
        /// oldest events are evicted, as past [`RelayConfig::with_buffer`]'s count. An
        /// event is counted at what the relay holds for it (its frame and index entry).
        ///
        /// ```
        /// let config = aep_relay::RelayConfig::default().with_max_session_bytes(1 << 20);
        /// assert_eq!(config.max_session_bytes(), 1 << 20);
        /// ```
        pub fn with_max_session_bytes(bytes: usize) => max_session_bytes = bytes;
    }

    /// Bytes of replay buffer per session.
    pub fn max_session_bytes(&self) -> usize {
        self.max_session_bytes
    }

    aep_core::setters! {
        /// Bytes of replay buffer over all sessions (default 512 MiB): past it the least
        /// recently written sessions are evicted, as past
        /// [`RelayConfig::with_max_sessions`]'s count. The newest event of the session
        /// being written is always kept.
        ///
        /// ```
        /// let config = aep_relay::RelayConfig::default().with_max_store_bytes(64 << 20);
        /// assert_eq!(config.max_store_bytes(), 64 << 20);
        /// ```
        pub fn with_max_store_bytes(bytes: usize) => max_store_bytes = bytes;
    }

    /// Bytes of replay buffer over all sessions.
    pub fn max_store_bytes(&self) -> usize {
        self.max_store_bytes
    }

    aep_core::setters! {
        /// When a durable relay answers an ingest (default [`Fsync::Batch`]); see [`Fsync`].
        ///
        /// ```
        /// use aep_relay::{Fsync, RelayConfig};
        /// let config = RelayConfig::default().with_data_dir("/var/lib/aep").with_fsync(Fsync::Always);
        /// assert_eq!(config.fsync(), Fsync::Always);
        /// ```
        pub fn with_fsync(fsync: Fsync) => fsync = fsync;
    }

    /// When a durable relay answers an ingest.
    pub fn fsync(&self) -> Fsync {
        self.fsync
    }

    aep_core::setters! {
        /// How often [`Fsync::Batch`] syncs the files written (default 1 s).
        ///
        /// ```
        /// use std::time::Duration;
        /// let config = aep_relay::RelayConfig::default().with_fsync_interval(Duration::from_millis(200));
        /// assert_eq!(config.fsync_interval(), Duration::from_millis(200));
        /// ```
        pub fn with_fsync_interval(every: Duration) => fsync_interval = every;
    }

    /// How often [`Fsync::Batch`] syncs the files written.
    pub fn fsync_interval(&self) -> Duration {
        self.fsync_interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variable names a setting, and its flag spelling names the same one.
    #[test]
    fn every_variable_and_its_flag_set_a_setting() {
        let sample = |name: &str| match name {
            "AEP_HOST" => "127.0.0.1",
            "AEP_TOKEN" => "t",
            "AEP_DATA_DIR" => "/var/lib/aep",
            "AEP_FSYNC" => "always",
            "AEP_NATS_URL" => "nats://127.0.0.1:4222",
            "AEP_NATS_CREDS" | "AEP_NATS_TLS_CA" => "/etc/aep/x",
            "AEP_NATS_STREAM" => "FLEET",
            "AEP_TLS_CERT" | "AEP_TLS_KEY" => "/etc/aep/x.pem",
            "AEP_INSECURE_OPEN_RELAY" => "true",
            "AEP_CONSOLE" => "on",
            _ => "7",
        };
        for setting in SETTINGS {
            let name = setting.env;
            let mut config = RelayConfig::default();
            config.set(name, sample(name)).unwrap();
            let flag = name
                .trim_start_matches("AEP_")
                .to_ascii_lowercase()
                .replace('_', "-");
            // `--nats URL` is the issue's spelling of `AEP_NATS_URL`
            let flag = if flag == "nats-url" {
                "nats".into()
            } else {
                flag
            };
            assert_eq!(flag, setting.flag, "the flag is the variable's spelling");
            config.set(&flag, sample(name)).unwrap();
        }
        let config = RelayConfig::from_vars(|name| match name {
            "AEP_MAX_CONNECTIONS" => Some("9".into()),
            "AEP_FSYNC" => Some("never".into()),
            "AEP_HELLO_TIMEOUT_MS" => Some("250".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.max_connections(), 9);
        assert_eq!(config.fsync(), Fsync::Never);
        assert_eq!(config.hello_timeout(), Duration::from_millis(250));
        assert!(RelayConfig::default().set("fsync", "sometimes").is_err());
    }

    /// The `--nats*` flags build one cluster option, in whatever order they come, and
    /// refuse what no cluster could use.
    #[test]
    fn the_nats_flags_build_the_cluster_option() {
        let mut config = RelayConfig::default();
        config.set("AEP_NATS_STREAM", "FLEET").unwrap();
        config.set("nats-dedupe-horizon", "300").unwrap();
        config.set("--nats", "tls://u:pw@n:4222").unwrap();
        config.set("nats-creds", "/etc/aep/relay.creds").unwrap();
        let cluster = config.nats().unwrap();
        assert_eq!(
            (cluster.url(), cluster.stream_name()),
            ("tls://u:pw@n:4222", "FLEET")
        );
        assert_eq!(cluster.dedupe_horizon_duration(), Duration::from_secs(300));
        assert!(cluster.creds_file().is_some());
        assert!(!format!("{config:?}").contains("pw@"));
        for (flag, bad) in [
            ("nats", "http://n:4222"),
            ("nats", "n:4222"),
            ("nats-stream", "a.b"),
            ("nats-stream", ""),
            ("nats-dedupe-horizon", "0"),
            ("nats-dedupe-horizon", "soon"),
        ] {
            let err = RelayConfig::default().set(flag, bad).unwrap_err();
            assert!(err.to_string().contains(flag), "{err}");
        }
    }

    /// The `[default: ..]` each flag's help shows is the default `RelayConfig` has: the
    /// help is written by hand beside `Default`, and a default changed in one place
    /// only would have `--help` document a value the relay does not use.
    #[test]
    fn every_documented_default_is_the_configs_default() {
        // defaults that are an absence, not a value `set` takes
        let absent = [
            ("token", "none"),
            ("max-from", "max-sessions"),
            ("data-dir", "memory only"),
            ("subscription-ttl-ms", "never"),
            ("nats", "none, a single relay"),
            ("nats-creds", "none"),
            ("nats-tls-ca", "the system's roots"),
            ("tls-cert", "none, plain HTTP"),
            ("tls-key", "none"),
        ];
        // the flags document the binaries' defaults
        let default = format!("{:?}", RelayConfig::for_binaries());
        for setting in SETTINGS {
            let documented = setting
                .help
                .rsplit_once("[default: ")
                .and_then(|(_, d)| d.strip_suffix(']'))
                .unwrap_or_else(|| panic!("--{} documents no default", setting.flag));
            if absent.contains(&(setting.flag, documented)) {
                continue;
            }
            // `127.0.0.1, this machine only`: the value, then what it means
            let value = documented.split(',').next().unwrap_or(documented);
            let mut config = RelayConfig::for_binaries();
            config
                .set(setting.flag, value)
                .unwrap_or_else(|e| panic!("--{}'s documented default: {e}", setting.flag));
            // the `--nats-*` flags shape the cluster option, which exists once given
            let default = if setting.flag.starts_with("nats-") {
                format!(
                    "{:?}",
                    RelayConfig::for_binaries().with_nats(NatsCluster::new(""))
                )
            } else {
                default.clone()
            };
            assert_eq!(
                format!("{config:?}"),
                default,
                "--{} documents [default: {documented}]",
                setting.flag
            );
        }
    }
}
