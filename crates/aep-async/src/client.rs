//! [`Client`]: where the relay is and how to reach it, the one way into every connection
//! this crate opens. Build it once, then call what you want on it: subscribe, emit over
//! HTTP or WebSocket, send commands, open a duplex or a lifecycle connection.

use std::fmt;
use std::time::Duration;

use crate::limits::ReadLimits;
use crate::relays::Relays;
use crate::transport::BackoffPolicy;

/// One relay, or several of one cluster ([`Relays`]), and how to reach it: the bearer
/// token, the connect timeout, the reconnect backoff, the identity declared at `hello`
/// and what a reader takes from the relay ([`ReadLimits`]). Every connection of this crate is opened from a `Client`, the way an
/// `async_nats::Client` is connected once and then subscribed and published on.
///
/// Building one does no IO and cannot fail: a relay that is down when the client is
/// made is no error (an emitter must never fail its host for it). Each entry point
/// connects in its own way, and each fails over between the relays the same way
/// (stay on the one that works; after a failure, the next one at once; the backoff once
/// every one has failed):
///
/// | call | what it opens | returns |
/// |---|---|---|
/// | [`subscribe`](Client::subscribe) (`sse` or `ws`) | an SSE or WebSocket subscription, in the background | [`Subscription`](crate::Subscription) |
/// | [`ws_connection`](Client::ws_connection) (`ws`) | one WebSocket for many subscriptions, in the background | [`WsConnection`](crate::subscribe::ws::WsConnection) |
/// | [`http_sink`](Client::http_sink) (`http`) | batched `POST {base}/events`, in the background | [`HttpSink`](crate::HttpSink) |
/// | [`ws_sink`](Client::ws_sink) (`ws`) | the WebSocket binding as an emitter, in the background | [`WsSink`](crate::WsSink) |
/// | [`control`](Client::control) (`ws`) | a command sender's WebSocket, `hello` done | [`ControlClient`](crate::ControlClient) |
/// | [`duplex`](Client::duplex) (`ws`) | a raw WebSocket, `hello` done | [`Duplex`](crate::control::Duplex) |
/// | [`lifecycle`](Client::lifecycle) (`ws`) | a lifecycle-model WebSocket, `hello` done | [`LifecycleConnection`](crate::lifecycle::LifecycleConnection) |
///
/// The three that return a connection (`control`, `duplex`, `lifecycle`) try the relays
/// in order, each within the connect timeout, and fail only when none answers, with the
/// first refusal (a `4xx` says more than an absent relay) or else the last error. The
/// others return at once and connect in the background.
///
/// What is left unset takes each connection's own default:
///
/// | setting | subscriptions, `WsConnection` | `WsSink` | control client | duplex, lifecycle |
/// |---|---|---|---|---|
/// | connect timeout | 30 s | 10 s (also how long `close` waits for confirmation) | 30 s | 30 s |
/// | backoff | 500 ms doubling to 10 s | 500 ms doubling to 10 s | 100 ms doubling to 5 s | (no reconnects) |
/// | identity (agent, host) | `aep-rust-consumer`, `localhost` | the sink's own | `aep-rust-control`, `localhost` | `aep-rust-control`, `localhost` |
/// | read limits | [`ReadLimits::new`] | [`ReadLimits::new`] | [`ReadLimits::new`] | [`ReadLimits::new`] |
///
/// The HTTP sink's requests are bound by its own
/// [`request_timeout`](crate::HttpSinkOptions::request_timeout) and retried on its
/// [`RetryPolicy`](crate::delivery::RetryPolicy), not by these.
///
/// ```
/// use std::time::Duration;
/// use aep_async::Client;
///
/// let client = Client::new(["http://10.0.0.1:8787", "http://10.0.0.2:8787"])
///     .token("secret")
///     .connect_timeout(Duration::from_secs(5))
///     .backoff(Duration::from_millis(200), Duration::from_secs(5))
///     .identity("console", "ops-host");
/// assert_eq!(client.relays().len(), 2);
/// assert!(!format!("{client:?}").contains("secret"));
/// ```
///
/// ```no_run
/// use aep_async::{Client, Emitter, HttpSinkOptions, SubscribeOptions};
/// use futures::StreamExt;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::new("http://127.0.0.1:8787").token("secret");
/// let emitter = Emitter::new("coder", "host-a", client.http_sink(HttpSinkOptions::new())?);
/// emitter.session("s1").emit("session.started", serde_json::json!({}))?;
/// emitter.flush().await;
/// let mut sub = client.subscribe(SubscribeOptions::new().from_all().history_only());
/// while let Some(event) = sub.next().await {
///     println!("{}", event.id());
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use = "a client does nothing until something is opened on it"]
pub struct Client {
    relays: Relays,
    token: Option<String>,
    connect_timeout: Option<Duration>,
    backoff: Option<BackoffPolicy>,
    identity: Option<(String, String)>,
    limits: ReadLimits,
    #[cfg(any(feature = "http", feature = "sse"))]
    http: Option<reqwest::Client>,
    #[cfg(feature = "rustls")]
    tls: Option<crate::tls::TlsRoots>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Client");
        d.field("relays", &self.relays)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("backoff", &self.backoff)
            .field("identity", &self.identity)
            .field("read_limits", &self.limits);
        #[cfg(feature = "rustls")]
        d.field("tls_ca", &self.tls);
        d.finish()
    }
}

impl Client {
    /// A client of the relay at `relays` (`http://127.0.0.1:8787`), or of the relays of
    /// one cluster in order of preference; nothing set, every connection's defaults.
    ///
    /// ```
    /// let client = aep_async::Client::new("http://127.0.0.1:8787");
    /// assert_eq!(client.relays().first(), Some("http://127.0.0.1:8787"));
    /// ```
    pub fn new(relays: impl Into<Relays>) -> Client {
        Client {
            relays: relays.into(),
            token: None,
            connect_timeout: None,
            backoff: None,
            identity: None,
            limits: ReadLimits::new(),
            #[cfg(any(feature = "http", feature = "sse"))]
            http: None,
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }

    aep_core::setters! {
        /// The bearer token every connection sends (`Authorization: Bearer`, never in the
        /// URL; AEP-0003 §8.1). Control needs one (an authenticated binding, AEP-0004 §4.1).
        ///
        /// ```
        /// let client = aep_async::Client::new("http://h:8787").token("secret");
        /// # let _ = client;
        /// ```
        pub fn token(token: impl Into<String>) => token = Some(token.into());

        /// One bound over establishing a connection: TCP connect, TLS and the response
        /// headers of an SSE request, or the upgrade and the `hello` exchange of a
        /// WebSocket. Expiry is a timeout ([`TransportError::is_timeout`]), retried by what
        /// reconnects. Default: see the table above.
        ///
        /// Keep it above the relay's heartbeat interval: a relay may hold back SSE response
        /// headers until its first write (the reference relay does, with a 25 s `: ping`),
        /// so a shorter bound turns an idle stream into reconnects.
        ///
        /// [`TransportError::is_timeout`]: crate::TransportError::is_timeout
        ///
        /// ```
        /// let client = aep_async::Client::new("http://h:8787").connect_timeout(std::time::Duration::from_secs(5));
        /// # let _ = client;
        /// ```
        pub fn connect_timeout(timeout: Duration) => connect_timeout = Some(timeout);
    }

    /// The delays between reconnects once every relay has failed: `initial`, doubling
    /// to `max` (a `max` below `initial` is `initial`). Default: see the table above.
    ///
    /// ```
    /// use std::time::Duration;
    /// let client = aep_async::Client::new("http://h:8787").backoff(Duration::from_millis(50), Duration::from_secs(1));
    /// # let _ = client;
    /// ```
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = Some(BackoffPolicy::new(initial, max));
        self
    }

    /// Who the client says it is: the `identity` of its `hello` (agent, and the host as
    /// the instance), and for the control client the commands' `agent` and `source`
    /// `aep://{host}/agent/{agent}` (AEP-0004 §2 rule 2). A sink declares the emitter's
    /// identity instead ([`WsSinkOptions::new`](crate::WsSinkOptions::new)).
    ///
    /// ```
    /// let client = aep_async::Client::new("http://h:8787").identity("console", "ops-host");
    /// # let _ = client;
    /// ```
    pub fn identity(mut self, agent: impl Into<String>, host: impl Into<String>) -> Self {
        self.identity = Some((agent.into(), host.into()));
        self
    }

    aep_core::setters! {
        /// What every reader of this client takes from the relay before it drops the
        /// connection (and reconnects where it does): the longest SSE line, the largest
        /// event, WebSocket message and frame, and the idle timeout, the relay's heartbeat
        /// silence past which a stream is dead ([`ReadLimits`], whose docs give the
        /// defaults). A relay that passes a bound gets a typed error naming it
        /// ([`TransportError::limit_exceeded`](crate::TransportError::limit_exceeded)), never
        /// unbounded memory.
        ///
        /// ```
        /// use std::time::Duration;
        /// use aep_async::{Client, ReadLimits};
        /// let client = Client::new("http://h:8787")
        ///     .read_limits(ReadLimits::new().max_event(4 << 20).heartbeat(Duration::from_secs(60)));
        /// # let _ = client;
        /// ```
        pub fn read_limits(limits: ReadLimits) => limits = limits;

        /// A `reqwest::Client` of the caller's (proxies, TLS roots, pools) for the HTTP
        /// bindings: SSE subscriptions and the HTTP sink. Without one, each of them builds
        /// a default one. Features `http` or `sse`.
        ///
        /// ```
        /// let client = aep_async::Client::new("http://h:8787").http_client(reqwest::Client::new());
        /// # let _ = client;
        /// ```
        #[cfg(any(feature = "http", feature = "sse"))]
        #[cfg_attr(docsrs, doc(cfg(any(feature = "http", feature = "sse"))))]
        pub fn http_client(client: reqwest::Client) => http = Some(client);
    }

    /// Trusts the root certificates in `pem` (one or more `BEGIN CERTIFICATE` blocks:
    /// a private CA's) besides the public ones, on every connection opened from this
    /// client: SSE subscriptions, the HTTP sink and every WebSocket (sink,
    /// subscriptions, control, duplex, lifecycle). Calls add up. Feature `rustls`.
    ///
    /// The PEM is parsed here: no certificate, a broken block or a certificate that
    /// cannot be a root is a [`TlsCaError`](crate::TlsCaError). A client of the
    /// caller's ([`Client::http_client`]) keeps its own roots: give it the CA
    /// yourself. Without the CA, a relay whose certificate a private CA signed fails
    /// every connection with an error saying its certificate is not trusted.
    ///
    /// ```no_run
    /// # fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let pem = std::fs::read("ca.pem")?;
    /// let client = aep_async::Client::new("https://relay.internal:8787")
    ///     .tls_ca_pem(&pem)?
    ///     .token("secret");
    /// # let _ = client; Ok(()) }
    /// ```
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    pub fn tls_ca_pem(mut self, pem: impl AsRef<[u8]>) -> Result<Self, crate::TlsCaError> {
        self.tls = Some(crate::tls::TlsRoots::with_pem(
            self.tls.as_ref(),
            pem.as_ref(),
        )?);
        Ok(self)
    }

    /// The relays, in order of preference.
    pub fn relays(&self) -> &Relays {
        &self.relays
    }

    /// The settings of one connection: the client's, where it set them, else
    /// `defaults`.
    #[cfg_attr(
        not(any(feature = "http", feature = "sse", feature = "ws")),
        allow(dead_code)
    )]
    pub(crate) fn link(&self, defaults: Defaults) -> Link {
        let (agent, host) = self
            .identity
            .clone()
            .unwrap_or_else(|| (defaults.agent.to_owned(), defaults.host.to_owned()));
        Link {
            relays: self.relays.clone(),
            token: self.token.clone(),
            connect_timeout: self.connect_timeout.unwrap_or(defaults.connect_timeout),
            backoff: self.backoff.unwrap_or(defaults.backoff),
            agent,
            host,
            limits: self.limits,
            #[cfg(feature = "ws")]
            tls: self.ws_tls(),
        }
    }

    /// The TLS every WebSocket of this client is opened with.
    #[cfg(feature = "ws")]
    fn ws_tls(&self) -> WsTls {
        #[cfg(feature = "rustls")]
        return WsTls(self.tls.as_ref().map(|t| t.config.clone()));
        #[cfg(not(feature = "rustls"))]
        WsTls::default()
    }

    /// The HTTP client the HTTP bindings use: the caller's, or a default one.
    #[cfg(any(feature = "http", feature = "sse"))]
    pub(crate) fn http(&self) -> Result<reqwest::Client, crate::TransportError> {
        match &self.http {
            Some(c) => Ok(c.clone()),
            None => {
                #[allow(unused_mut)]
                let mut builder = reqwest::Client::builder();
                #[cfg(feature = "rustls")]
                if let Some(tls) = &self.tls {
                    let certs = tls.reqwest_certificates().map_err(|e| {
                        crate::TransportError::network("building the HTTP client", e)
                    })?;
                    for cert in certs {
                        builder = builder.add_root_certificate(cert);
                    }
                }
                builder
                    .build()
                    .map_err(|e| crate::TransportError::network("building the HTTP client", e))
            }
        }
    }
}

/// What one kind of connection uses where the [`Client`] leaves a setting unset.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Defaults {
    pub(crate) connect_timeout: Duration,
    pub(crate) backoff: BackoffPolicy,
    pub(crate) agent: &'static str,
    pub(crate) host: &'static str,
}

#[cfg_attr(
    not(any(feature = "http", feature = "sse", feature = "ws")),
    allow(dead_code)
)]
impl Defaults {
    /// Subscriptions and the `WsConnection`: the Python SDK's.
    pub(crate) const CONSUMER: Defaults = Defaults {
        connect_timeout: Duration::from_secs(30),
        backoff: BackoffPolicy::new(Duration::from_millis(500), Duration::from_secs(10)),
        agent: "aep-rust-consumer",
        host: "localhost",
    };
    /// The WebSocket sink (its identity is the sink's own).
    #[cfg(feature = "ws")]
    pub(crate) const WS_SINK: Defaults = Defaults {
        connect_timeout: Duration::from_secs(10),
        ..Defaults::CONSUMER
    };
    /// The control client, the duplex and the lifecycle connection: a command's ack
    /// waits on a reconnect, so it comes back soon.
    #[cfg(feature = "ws")]
    pub(crate) const CONTROL: Defaults = Defaults {
        connect_timeout: Duration::from_secs(30),
        backoff: BackoffPolicy::new(Duration::from_millis(100), Duration::from_secs(5)),
        agent: "aep-rust-control",
        host: "localhost",
    };
}

/// One connection's settings, resolved: where, with what token, within what time, on
/// what reconnect schedule, as whom. No `Debug`: it holds the token.
// The identity is read by the WebSocket connections only, everything by some binding.
#[cfg_attr(not(feature = "ws"), allow(dead_code))]
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) relays: Relays,
    pub(crate) token: Option<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) backoff: BackoffPolicy,
    pub(crate) agent: String,
    pub(crate) host: String,
    pub(crate) limits: ReadLimits,
    /// The TLS of every WebSocket: the client's private roots, if any.
    #[cfg(feature = "ws")]
    pub(crate) tls: WsTls,
}

/// The TLS a WebSocket is opened with: tokio-tungstenite's default (the webpki roots, or
/// the platform's with `native-tls`), or a configuration trusting the client's private
/// roots too ([`Client::tls_ca_pem`](crate::Client::tls_ca_pem)). Declared beside
/// [`Link`], which carries it to `transport::ws`.
#[cfg(feature = "ws")]
#[derive(Clone, Default)]
pub(crate) struct WsTls(
    #[cfg(feature = "rustls")] pub(crate) Option<std::sync::Arc<rustls::ClientConfig>>,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "ws")]
    #[test]
    fn unset_settings_take_the_connection_defaults() {
        let link = Client::new("http://a").link(Defaults::WS_SINK);
        assert_eq!(link.connect_timeout, Duration::from_secs(10));
        assert_eq!(link.backoff, Defaults::CONSUMER.backoff);
        assert_eq!(link.agent, "aep-rust-consumer");
        assert_eq!(link.token, None);
    }

    #[test]
    fn set_settings_win_over_every_default() {
        let client = Client::new(["http://a", "http://b"])
            .token("t")
            .connect_timeout(Duration::from_millis(5))
            .backoff(Duration::from_millis(7), Duration::from_millis(1))
            .identity("me", "here");
        #[cfg(feature = "ws")]
        let all = [Defaults::CONSUMER, Defaults::WS_SINK, Defaults::CONTROL];
        #[cfg(not(feature = "ws"))]
        let all = [Defaults::CONSUMER];
        for d in all {
            let link = client.link(d);
            assert_eq!(link.connect_timeout, Duration::from_millis(5));
            assert_eq!(
                link.backoff,
                BackoffPolicy::new(Duration::from_millis(7), Duration::ZERO)
            );
            assert_eq!((link.agent.as_str(), link.host.as_str()), ("me", "here"));
            assert_eq!(link.token.as_deref(), Some("t"));
            assert_eq!(link.relays.len(), 2);
        }
    }
}
