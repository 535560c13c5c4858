//! [`Client`]: where the relay is and how to reach it, the one way into every connection,
//! for synchronous code; the blocking face of [`aep_async::Client`].

use std::time::Duration;

#[cfg(feature = "ws")]
use aep_async::control::{ControlOptions, DuplexOptions};
#[cfg(any(feature = "sse", feature = "ws"))]
use aep_async::SubscribeOptions;
#[cfg(feature = "ws")]
use aep_async::WsSinkOptions;

use crate::error::Error;
use crate::runtime::Runtime;

/// One relay, or several of one cluster ([`Relays`](crate::Relays)), and how to reach
/// it; every connection is opened on it, as on an [`aep_async::Client`], whose settings
/// and defaults it shares. What it opens runs on its [`Runtime`]: the
/// [shared](Runtime::shared) one, or the one given with [`Client::runtime`].
///
/// | call | opens | returns |
/// |---|---|---|
/// | [`subscribe`](Client::subscribe) (`sse` or `ws`) | a subscription | [`Subscription`](crate::Subscription) |
/// | [`ws_connection`](Client::ws_connection) (`ws`) | one WebSocket for many subscriptions | [`WsConnection`](crate::subscribe::WsConnection) |
/// | [`http_sink`](Client::http_sink) (`http`) | batched HTTP ingest | [`HttpSink`](crate::HttpSink) |
/// | [`ws_sink`](Client::ws_sink) (`ws`) | the WebSocket binding as an emitter | [`WsSink`](crate::WsSink) |
/// | [`control`](Client::control) (`ws`) | a command sender, `hello` done | [`ControlClient`](crate::ControlClient) |
/// | [`duplex`](Client::duplex) (`ws`) | a raw WebSocket, `hello` done | [`Duplex`](crate::Duplex) |
/// | [`lifecycle`](Client::lifecycle) (`ws`) | a lifecycle-model WebSocket, `hello` done | [`LifecycleConnection`](crate::lifecycle::LifecycleConnection) |
///
/// Each fails only where the async call fails, or when the shared runtime has to be
/// started and cannot be; the three that wait for a connection (`control`, `duplex`,
/// `lifecycle`) refuse with [`Error::InsideRuntime`] inside a tokio runtime.
///
/// ```no_run
/// use std::time::Duration;
/// use aep_blocking::{Client, Emitter, HttpSinkOptions, SubscribeOptions};
///
/// let relay = Client::new(["http://10.0.0.1:8787", "http://10.0.0.2:8787"])
///     .token("secret")
///     .connect_timeout(Duration::from_secs(5));
/// let emitter = Emitter::new("coder", "host-a", relay.http_sink(HttpSinkOptions::new())?);
/// emitter.session("s1").emit("session.started", serde_json::json!({}))?;
/// emitter.flush()?;
/// for event in relay.subscribe(SubscribeOptions::new().from_all().history_only())? {
///     println!("{}", event.id());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a client does nothing until something is opened on it"]
pub struct Client {
    inner: aep_async::Client,
    runtime: Option<Runtime>,
}

impl Client {
    /// A client of the relay at `relays`, or of the relays of one cluster in order of
    /// preference: [`aep_async::Client::new`].
    pub fn new(relays: impl Into<crate::Relays>) -> Client {
        Client::from_async(aep_async::Client::new(relays))
    }

    /// A client with the settings of an async one (say, with its own `reqwest`
    /// client).
    ///
    /// ```
    /// let relay = aep_blocking::Client::from_async(aep_async::Client::new("http://h:8787").token("t"));
    /// # let _ = relay;
    /// ```
    pub fn from_async(inner: aep_async::Client) -> Client {
        Client {
            inner,
            runtime: None,
        }
    }

    aep_core::setters! {
        /// The runtime what is opened runs on, instead of the [shared](Runtime::shared) one.
        ///
        /// ```
        /// let rt = aep_blocking::Runtime::new()?;
        /// let relay = aep_blocking::Client::new("http://h:8787").runtime(&rt);
        /// # let _ = relay;
        /// # Ok::<(), aep_blocking::Error>(())
        /// ```
        pub fn runtime(runtime: &Runtime) => runtime = Some(runtime.clone());
    }

    /// Trusts the private roots in `pem` besides the public ones, on every
    /// connection: [`aep_async::Client::tls_ca_pem`], whose docs give the errors.
    /// Feature `rustls`.
    ///
    /// ```no_run
    /// # fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let pem = std::fs::read("ca.pem")?;
    /// let client = aep_blocking::Client::new("https://relay.internal:8787").tls_ca_pem(&pem)?;
    /// # let _ = client; Ok(()) }
    /// ```
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    pub fn tls_ca_pem(mut self, pem: impl AsRef<[u8]>) -> Result<Self, crate::TlsCaError> {
        self.inner = self.inner.tls_ca_pem(pem)?;
        Ok(self)
    }

    /// The bearer token: [`aep_async::Client::token`].
    pub fn token(self, token: impl Into<String>) -> Self {
        self.with(|c| c.token(token))
    }

    /// The bound over establishing a connection:
    /// [`aep_async::Client::connect_timeout`].
    pub fn connect_timeout(self, timeout: Duration) -> Self {
        self.with(|c| c.connect_timeout(timeout))
    }

    /// The reconnect backoff: [`aep_async::Client::backoff`].
    pub fn backoff(self, initial: Duration, max: Duration) -> Self {
        self.with(|c| c.backoff(initial, max))
    }

    /// Who the client says it is: [`aep_async::Client::identity`].
    pub fn identity(self, agent: impl Into<String>, host: impl Into<String>) -> Self {
        self.with(|c| c.identity(agent, host))
    }

    /// What every reader takes from the relay: [`aep_async::Client::read_limits`].
    ///
    /// ```
    /// use aep_blocking::{Client, ReadLimits};
    /// let client = Client::new("http://h:8787").read_limits(ReadLimits::new().max_event(1 << 20));
    /// # let _ = client;
    /// ```
    pub fn read_limits(self, limits: crate::ReadLimits) -> Self {
        self.with(|c| c.read_limits(limits))
    }

    /// The async client underneath.
    pub fn as_async(&self) -> &aep_async::Client {
        &self.inner
    }

    /// The relays, in order of preference.
    pub fn relays(&self) -> &crate::Relays {
        self.inner.relays()
    }

    fn with(mut self, f: impl FnOnce(aep_async::Client) -> aep_async::Client) -> Self {
        self.inner = f(self.inner);
        self
    }

    /// The runtime to open on: the one given, or the shared one.
    #[cfg_attr(
        not(any(feature = "http", feature = "sse", feature = "ws")),
        allow(dead_code)
    )]
    fn rt(&self) -> Result<Runtime, Error> {
        match &self.runtime {
            Some(rt) => Ok(rt.clone()),
            None => Runtime::shared(),
        }
    }

    /// Subscribes with `options`: [`aep_async::Client::subscribe`], read from this
    /// thread. Returns at once; connecting happens in the background.
    #[cfg(any(feature = "sse", feature = "ws"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sse", feature = "ws"))))]
    pub fn subscribe(&self, options: SubscribeOptions) -> Result<crate::Subscription, Error> {
        let rt = self.rt()?;
        let inner = rt.enter(|| self.inner.subscribe(options));
        Ok(crate::subscribe::Receiver::new(inner, rt))
    }

    /// One WebSocket for many subscriptions: [`aep_async::Client::ws_connection`].
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn ws_connection(&self) -> Result<crate::subscribe::WsConnection, Error> {
        let rt = self.rt()?;
        let inner = rt.enter(|| self.inner.ws_connection());
        Ok(crate::subscribe::WsConnection::new(inner, rt))
    }

    /// Starts an HTTP sink: [`aep_async::Client::http_sink`], delivering on the
    /// runtime.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub fn http_sink(&self, options: aep_async::HttpSinkOptions) -> Result<crate::HttpSink, Error> {
        self.start(|c| c.http_sink(options))
    }

    /// Starts a WebSocket sink: [`aep_async::Client::ws_sink`], delivering on the
    /// runtime.
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn ws_sink(&self, options: WsSinkOptions) -> Result<crate::WsSink, Error> {
        self.start(|c| c.ws_sink(options))
    }

    /// Starts a sink of the async crate with `start`, delivering on the runtime.
    #[cfg(any(feature = "http", feature = "ws"))]
    fn start<S>(
        &self,
        start: impl FnOnce(&aep_async::Client) -> Result<S, aep_async::TransportError>,
    ) -> Result<crate::NetSink<S>, Error> {
        let rt = self.rt()?;
        let inner = rt.enter(|| start(&self.inner))?;
        Ok(crate::sink::NetSink::new(inner, rt))
    }

    /// Connects a control client and waits for its `hello`:
    /// [`aep_async::Client::control`].
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn control(&self, options: ControlOptions) -> Result<crate::ControlClient, Error> {
        let (inner, rt) = self.open(|c| async move { c.control(options).await })?;
        Ok(crate::ControlClient::new(inner, rt))
    }

    /// Opens a duplex and waits for its `hello`: [`aep_async::Client::duplex`].
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn duplex(&self, options: DuplexOptions) -> Result<crate::Duplex, Error> {
        let (inner, rt) = self.open(|c| async move { c.duplex(options).await })?;
        Ok(crate::Duplex::new(inner, rt))
    }

    /// Opens a lifecycle connection and waits for its `hello`:
    /// [`aep_async::Client::lifecycle`].
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn lifecycle(&self) -> Result<crate::lifecycle::LifecycleConnection, Error> {
        let (inner, rt) = self.open(|c| async move { c.lifecycle().await })?;
        Ok(crate::lifecycle::LifecycleConnection::new(inner, rt))
    }

    /// Opens a connection that waits for its `hello` with `open`, on the runtime,
    /// blocking until it is open.
    #[cfg(feature = "ws")]
    fn open<T, F>(&self, open: impl FnOnce(aep_async::Client) -> F) -> Result<(T, Runtime), Error>
    where
        F: std::future::Future<Output = Result<T, aep_async::TransportError>> + Send + 'static,
        T: Send + 'static,
    {
        let rt = self.rt()?;
        let opened = rt.block_on(open(self.inner.clone()))??;
        Ok((opened, rt))
    }
}
