//! [`NatsCluster`]: how a relay joins a cluster on NATS JetStream, as plain data (the
//! cluster itself is `nats`), with the rules its values are checked by when set.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How a relay reaches its cluster's NATS JetStream and which stream it shares with
/// the other relays of its fleet: the option of
/// [`RelayBuilder::nats`](crate::RelayBuilder::nats) and
/// [`RelayConfig::with_nats`](crate::RelayConfig::with_nats), and of the `--nats*`
/// flags.
///
/// With it, the relay stores every event in the stream (no `--data-dir`): a `202`
/// means JetStream acknowledged it, any relay of the fleet replays it, and each relay
/// fans out live what any of them ingests. It needs the crate's feature `nats` (its
/// client needs rustc 1.89); a relay built without it refuses to start with one.
///
/// Defaults: stream `AEP` ([`NatsCluster::DEFAULT_STREAM`]), a dedupe horizon of
/// 120 s ([`NatsCluster::DEFAULT_DEDUPE_HORIZON`]), no credentials file, the system's
/// TLS roots, 5 s for a request or a publish acknowledgement
/// ([`NatsCluster::DEFAULT_TIMEOUT`]). `Debug` never shows a password of the URL.
///
/// ```
/// use std::time::Duration;
/// use aep_relay::NatsCluster;
///
/// let cluster = NatsCluster::new("tls://relay:s3cret@nats.internal:4222")
///     .stream("FLEET-A")
///     .creds("/etc/aep/relay.creds")
///     .tls_roots("/etc/aep/ca.pem")
///     .dedupe_horizon(Duration::from_secs(300));
/// assert_eq!(cluster.stream_name(), "FLEET-A");
/// assert!(!format!("{cluster:?}").contains("s3cret"));
/// let relay = aep_relay::Relay::builder().buffer(8).nats(cluster);
/// # drop(relay);
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NatsCluster {
    pub(crate) url: NatsUrl,
    pub(crate) stream: String,
    pub(crate) creds: Option<PathBuf>,
    pub(crate) tls_roots: Option<PathBuf>,
    pub(crate) dedupe_horizon: Duration,
    pub(crate) timeout: Duration,
}

impl NatsCluster {
    /// The stream (and first subject token) of a fleet unless told otherwise.
    pub const DEFAULT_STREAM: &'static str = "AEP";

    /// How long JetStream remembers a stored `(source, id)` by default: its own
    /// default `duplicate_window`.
    pub const DEFAULT_DEDUPE_HORIZON: Duration = Duration::from_secs(120);

    /// How long a JetStream request or a publish acknowledgement may take by default;
    /// past it the ingest is answered `503`.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

    /// A cluster on the NATS server(s) at `url`: `nats://host:port` or
    /// `tls://host:port`, several comma-separated, a `user:password@` (or a token,
    /// `TOKEN@`) allowed, percent-encoded as in any URL. The credentials are handed to
    /// the client apart from the address, so that neither its connection nor its log
    /// ever carries them in a URL; every server of the list takes the same ones.
    ///
    /// ```
    /// let cluster = aep_relay::NatsCluster::new("nats://127.0.0.1:4222");
    /// assert_eq!(cluster.url(), "nats://127.0.0.1:4222");
    /// assert_eq!(cluster.stream_name(), "AEP");
    /// ```
    pub fn new(url: impl Into<String>) -> NatsCluster {
        NatsCluster {
            url: NatsUrl(url.into()),
            stream: NatsCluster::DEFAULT_STREAM.to_owned(),
            creds: None,
            tls_roots: None,
            dedupe_horizon: NatsCluster::DEFAULT_DEDUPE_HORIZON,
            timeout: NatsCluster::DEFAULT_TIMEOUT,
        }
    }

    aep_core::setters! {
        /// The stream the fleet shares, also the first token of its subjects (default
        /// `AEP`): 1 to 32 ASCII letters, digits, `-` or `_`, so that several fleets (and
        /// test runs) share one NATS apart. A name outside that is refused at start.
        ///
        /// ```
        /// let cluster = aep_relay::NatsCluster::new("nats://127.0.0.1:4222").stream("FLEET-B");
        /// assert_eq!(cluster.stream_name(), "FLEET-B");
        /// ```
        pub fn stream(name: impl Into<String>) => stream = name.into();

        /// A NATS credentials file (a user JWT and its nkey seed), for a secured server
        /// (default: none).
        ///
        /// ```
        /// let cluster = aep_relay::NatsCluster::new("tls://nats:4222").creds("/etc/aep/relay.creds");
        /// assert!(cluster.creds_file().is_some());
        /// ```
        pub fn creds(file: impl Into<PathBuf>) => creds = Some(file.into());

        /// PEM roots to verify the server's certificate with; TLS is then required
        /// (default: the system's roots, TLS as the URL says).
        ///
        /// ```
        /// let cluster = aep_relay::NatsCluster::new("tls://nats:4222").tls_roots("/etc/aep/ca.pem");
        /// assert!(cluster.tls_roots_file().is_some());
        /// ```
        pub fn tls_roots(pem: impl Into<PathBuf>) => tls_roots = Some(pem.into());

        /// How long a stored `(source, id)` keeps a copy from being stored again, whichever
        /// relay it is sent to (default 120 s; AEP-0001 §7.4): the stream's
        /// `duplicate_window`. An emitter's retry later than that is stored a second time.
        /// What bounds it: the server keeps every message id of the horizon in memory, so
        /// its memory grows with ingest rate times horizon; and every relay of a fleet must
        /// use the stream's value (a relay that disagrees is refused at start). Whole
        /// seconds; at least one.
        ///
        /// ```
        /// use std::time::Duration;
        /// let cluster = aep_relay::NatsCluster::new("nats://127.0.0.1:4222")
        ///     .dedupe_horizon(Duration::from_secs(600));
        /// assert_eq!(cluster.dedupe_horizon_duration(), Duration::from_secs(600));
        /// ```
        pub fn dedupe_horizon(horizon: Duration) =>
            dedupe_horizon = Duration::from_secs(horizon.as_secs().max(1));

        /// How long a JetStream request or a publish acknowledgement may take (default
        /// 5 s): an ingest not acknowledged within it is answered `503`.
        ///
        /// ```
        /// use std::time::Duration;
        /// let cluster = aep_relay::NatsCluster::new("nats://127.0.0.1:4222").timeout(Duration::from_secs(2));
        /// # drop(cluster);
        /// ```
        pub fn timeout(timeout: Duration) => timeout = timeout;
    }

    /// The server URL(s), as given.
    ///
    /// ```
    /// assert_eq!(aep_relay::NatsCluster::new("nats://n:4222").url(), "nats://n:4222");
    /// ```
    pub fn url(&self) -> &str {
        &self.url.0
    }

    /// The stream's name.
    ///
    /// ```
    /// assert_eq!(aep_relay::NatsCluster::new("nats://n:4222").stream_name(), "AEP");
    /// ```
    pub fn stream_name(&self) -> &str {
        &self.stream
    }

    /// The credentials file, when set.
    ///
    /// ```
    /// assert!(aep_relay::NatsCluster::new("nats://n:4222").creds_file().is_none());
    /// ```
    pub fn creds_file(&self) -> Option<&Path> {
        self.creds.as_deref()
    }

    /// The PEM roots, when set.
    ///
    /// ```
    /// assert!(aep_relay::NatsCluster::new("nats://n:4222").tls_roots_file().is_none());
    /// ```
    pub fn tls_roots_file(&self) -> Option<&Path> {
        self.tls_roots.as_deref()
    }

    /// The dedupe horizon.
    ///
    /// ```
    /// let cluster = aep_relay::NatsCluster::new("nats://n:4222");
    /// assert_eq!(cluster.dedupe_horizon_duration(), aep_relay::NatsCluster::DEFAULT_DEDUPE_HORIZON);
    /// ```
    pub fn dedupe_horizon_duration(&self) -> Duration {
        self.dedupe_horizon
    }

    /// Whether `url` is one this option takes: every comma-separated part `nats://` or
    /// `tls://` with a host.
    pub(crate) fn is_url(url: &str) -> bool {
        !url.trim().is_empty()
            && url.split(',').all(|part| {
                let part = part.trim();
                ["nats://", "tls://"].iter().any(|scheme| {
                    part.strip_prefix(scheme)
                        .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
                })
            })
    }

    /// The stream name, if it can name a stream (see [`check_stream_name`]); refused as
    /// a relay's start is.
    pub(crate) fn stream_name_checked(&self) -> Result<&str, std::io::Error> {
        check_stream_name(&self.stream)
            .map(|()| self.stream.as_str())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    }
}

/// Whether `name` can name a cluster's stream and head its subjects: 1 to 32 ASCII
/// letters, digits, `-` or `_`. Stricter than the server (which refuses `.`, `*`, `>`,
/// whitespace and path separators), so that the name is a plain subject token as well
/// and never starts with the server's reserved `$`. The one rule: `--nats-stream` is
/// checked by it when set, the cluster's stream name (`nats::names`) when a relay joins.
pub(crate) fn check_stream_name(name: &str) -> Result<(), BadStreamName> {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    if (1..=32).contains(&name.len()) && name.bytes().all(plain) {
        Ok(())
    } else {
        Err(BadStreamName(name.to_owned()))
    }
}

/// Why a stream name was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadStreamName(String);

impl fmt::Display for BadStreamName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` cannot name the NATS stream: use 1 to 32 ASCII letters, digits, `-` or `_` (it is also the subjects' first token)",
            self.0
        )
    }
}

impl std::error::Error for BadStreamName {}

/// What a `user:password@` or `token@` of a cluster's URL says.
// read by the cluster's connection (feature `nats`)
#[cfg_attr(not(feature = "nats"), allow(dead_code))]
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum UrlCredentials {
    /// `user:password@`.
    User { user: String, password: String },
    /// `token@`: NATS's token authentication.
    Token(String),
}

impl fmt::Debug for UrlCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlCredentials::User { user, .. } => f
                .debug_struct("User")
                .field("user", user)
                .field("password", &"<redacted>")
                .finish(),
            UrlCredentials::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

impl NatsCluster {
    /// The server URLs without their credentials, and the credentials, to be handed to
    /// the client apart (a URL's `user:password@` would otherwise reach its log, and
    /// async-nats authenticates with its options only); or why they cannot be: servers
    /// given different credentials, or a userinfo that does not decode.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    pub(crate) fn split_credentials(&self) -> Result<(String, Option<UrlCredentials>), String> {
        let mut found: Option<UrlCredentials> = None;
        let mut urls = Vec::new();
        for part in self.url.0.split(',') {
            let part = part.trim();
            let (scheme, rest) = part.split_once("://").unwrap_or(("", part));
            let (userinfo, host) = match rest.rsplit_once('@') {
                Some((userinfo, host)) => (Some(userinfo), host),
                None => (None, rest),
            };
            urls.push(format!("{scheme}://{host}"));
            let Some(userinfo) = userinfo else { continue };
            let undecodable = || {
                format!(
                    "the credentials of the NATS URL {} do not decode: percent-encode them (RFC 3986), or use --nats-creds",
                    redact_url(part)
                )
            };
            let credentials = match userinfo.split_once(':') {
                Some((user, password)) => UrlCredentials::User {
                    user: aep_core::percent::decode(user).ok_or_else(undecodable)?,
                    password: aep_core::percent::decode(password).ok_or_else(undecodable)?,
                },
                None => UrlCredentials::Token(
                    aep_core::percent::decode(userinfo).ok_or_else(undecodable)?,
                ),
            };
            match &found {
                Some(first) if *first != credentials => {
                    return Err("the NATS URLs carry different credentials: a relay connects to every server of its list as one user; give them once, or use --nats-creds".into());
                }
                _ => found = Some(credentials),
            }
        }
        Ok((urls.join(","), found))
    }
}

/// `url`, a comma-separated list of NATS servers, with each server's credentials
/// (`user:password@`, `token@`, a credential-named query value) replaced by aep-core's
/// rule for URLs in diagnostics ([`aep_core::redact::redact_urls`]), server by server:
/// core reads one URL up to white space, and a list has none between its servers.
pub(crate) fn redact_url(url: &str) -> String {
    url.split(',')
        .map(aep_core::redact::redact_urls)
        .collect::<Vec<_>>()
        .join(",")
}

/// A cluster's NATS URL list as given, credentials included (the client is handed them
/// apart, [`NatsCluster::split_credentials`]); shown, by `Debug` or `Display`, with any
/// `user:password@` or `token@` redacted.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct NatsUrl(pub(crate) String);

impl fmt::Debug for NatsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&redact_url(&self.0), f)
    }
}

impl fmt::Display for NatsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_nats_or_tls_and_passwords_never_shown() {
        for good in [
            "nats://127.0.0.1:4222",
            "tls://n:4222",
            "nats://u:p@a:1, nats://b:2",
        ] {
            assert!(NatsCluster::is_url(good), "{good}");
        }
        for bad in [
            "",
            "http://n:4222",
            "127.0.0.1:4222",
            "nats://",
            "nats://a,x",
        ] {
            assert!(!NatsCluster::is_url(bad), "{bad}");
        }
        let shown = format!(
            "{:?}",
            NatsCluster::new("nats://u:s3cret@a:1,tls://v:pw@b:2")
        );
        assert!(
            !shown.contains("s3cret") && !shown.contains("pw@"),
            "{shown}"
        );
        assert!(shown.contains("nats://[REDACTED:secret]@a:1"), "{shown}");
        assert!(shown.contains("tls://[REDACTED:secret]@b:2"), "{shown}");
        assert_eq!(redact_url("nats://h:4222"), "nats://h:4222");
        // the URL alone, as an error carries it, is redacted the same
        let url = NatsUrl("nats://u:s3cret@a:1".into());
        assert_eq!(url.to_string(), "nats://[REDACTED:secret]@a:1");
        assert_eq!(format!("{url:?}"), r#""nats://[REDACTED:secret]@a:1""#);
    }

    /// A URL's credentials are taken out of it, decoded, and handed apart; the same on
    /// every server, or refused.
    #[test]
    fn credentials_are_taken_out_of_the_url() {
        let split = |url: &str| NatsCluster::new(url).split_credentials();
        assert_eq!(
            split("nats://h:4222").unwrap(),
            ("nats://h:4222".into(), None)
        );
        let (urls, credentials) =
            split("nats://relay:p%40ss:w0rd@h:4222, tls://relay:p%40ss:w0rd@g:4222").unwrap();
        assert_eq!(urls, "nats://h:4222,tls://g:4222");
        assert_eq!(
            credentials,
            Some(UrlCredentials::User {
                user: "relay".into(),
                password: "p@ss:w0rd".into()
            })
        );
        assert!(!format!("{credentials:?}").contains("p@ss"));
        let (urls, token) = split("nats://s3cret@h:4222,nats://g:1").unwrap();
        assert_eq!(urls, "nats://h:4222,nats://g:1");
        assert_eq!(token, Some(UrlCredentials::Token("s3cret".into())));
        assert!(!format!("{token:?}").contains("s3cret"));
        let e = split("nats://a:x@h:1,nats://b:y@g:2").unwrap_err();
        assert!(e.contains("different credentials"), "{e}");
        let e = split("nats://a:%zz@h:1").unwrap_err();
        assert!(e.contains("do not decode") && !e.contains("%zz"), "{e}");
    }

    #[test]
    fn a_horizon_is_whole_seconds_and_a_stream_name_is_checked_at_start() {
        let c = NatsCluster::new("nats://n:1").dedupe_horizon(Duration::from_millis(1500));
        assert_eq!(c.dedupe_horizon_duration(), Duration::from_secs(1));
        let c = c.dedupe_horizon(Duration::ZERO);
        assert_eq!(c.dedupe_horizon_duration(), Duration::from_secs(1));
        assert!(c.clone().stream("a.b").stream_name_checked().is_err());
        assert!(c.stream_name_checked().is_ok());
    }
}
