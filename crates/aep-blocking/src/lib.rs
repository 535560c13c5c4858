//! # aep-blocking: the Agent Event Protocol for synchronous code
//!
//! The API of [`aep_async`], callable from plain threads, the way `reqwest::blocking`
//! wraps `reqwest`: one tokio [`Runtime`] on a background thread does the IO, and every
//! call that waits is a message to it with a reply. Nothing of the protocol is
//! re-implemented here: emitting, delivery, dedupe, resume and reconnects are the async
//! crate's, so the two behave the same.
//!
//! ```no_run
//! use aep_blocking::{Client, Emitter, HttpSinkOptions, SubscribeOptions};
//! use serde_json::json;
//!
//! let relay = Client::new("http://127.0.0.1:8787");
//! let emitter = Emitter::new("coder", "host-a", relay.http_sink(HttpSinkOptions::new())?);
//! emitter.session("s1").emit("session.started", json!({"cwd": "/work"}))?;
//! emitter.flush()?;
//!
//! for event in relay.subscribe(SubscribeOptions::new().from_all().history_only())? {
//!     println!("{} {}", event.event_type(), event.id());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Inside async code**, calls that wait return [`Error::InsideRuntime`] (or, for
//! `recv`, [`RecvError::InsideRuntime`]) instead of blocking a runtime thread: use
//! `aep_async` there. Calls that never wait (`emit`, `subscribe`, `try_recv`,
//! `positions`, `close` of a subscription) work anywhere; `close` of a connection only
//! starts the close there. No `Drop` needs a runtime. (Tokio's `spawn_blocking` threads
//! carry the runtime's context and count as inside; a [`ControlTarget`] handler runs on
//! a plain thread, so blocking calls work there.)
//!
//! ## Layout
//!
//! Module for module the async crate's, with the same names; what waits blocks instead.
//!
//! - [`client`](mod@client): [`Client`], the one way into every connection, as
//!   [`aep_async::Client`]; [`Client::runtime`] picks the [`Runtime`] (default: the
//!   shared one).
//! - [`runtime`](mod@runtime): [`Runtime`] (owned thread, caller's handle, or the shared
//!   one); besides the client, [`EmitterBuilder::build_on`] and
//!   [`ControlTarget::handle_on`] take one.
//! - [`error`](mod@error): [`Error`], whose `is_*` checks see through what it wraps.
//! - [`emit`](mod@emit): [`Emitter`], [`SessionEmitter`], [`EmitterBuilder`].
//! - [`sink`](mod@sink): `HttpSink` (feature `http`), `WsSink` (feature `ws`), [`JsonlSink`].
//! - `delivery` (feature `http`): the HTTP sink's batch and retry options.
//! - [`subscribe`](mod@subscribe): [`Subscription`], a [`Receiver`] with `recv`,
//!   `try_recv`, `recv_timeout` and `Iterator`; `WsConnection` (feature `ws`).
//! - [`control`](mod@control): `ControlClient` and `Duplex` (feature `ws`),
//!   [`ControlTarget`] with a plain-function handler.
//! - [`lifecycle`](mod@lifecycle): the subscription lifecycle model, the in-process
//!   [`lifecycle::Hub`] and `LifecycleConnection` (feature `ws`).
//!
//! ## Features
//!
//! The async crate's: `http`, `sse`, `ws`, `rustls` (default TLS) or `native-tls`; all
//! but `native-tls` on by default.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod client;
pub mod control;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod delivery;
pub mod emit;
pub mod error;
pub mod lifecycle;
pub mod runtime;
pub mod sink;
pub mod subscribe;

#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub use aep_async::TlsCaError;
pub use aep_async::{
    DeliveryReport, DeliveryStats, EmitAttrs, EmitError, EmitOptions, EmitPermit, EpochStore,
    Limit, LimitExceeded, Notice, ReadLimits, Relays, ResumePosition, StartFrom, SubscribeOptions,
    Transport, TransportError, TransportErrorKind,
};
pub use client::Client;
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use control::{ControlClient, Duplex};
pub use control::{ControlTarget, SendOptions};
pub use emit::{Emitter, EmitterBuilder, SessionEmitter};
pub use error::Error;
pub use runtime::Runtime;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use sink::{HttpSink, HttpSinkOptions};
pub use sink::{JsonlSink, NetSink, Sink};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use sink::{WsSink, WsSinkOptions};
pub use subscribe::{Receiver, RecvError, RecvTimeoutError, Subscription, TryRecvError};

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Runtime>();
    assert_send_sync::<Client>();
    assert_send_sync::<Emitter>();
    assert_send_sync::<SessionEmitter>();
    assert_send_sync::<ControlTarget>();
    assert_send_sync::<lifecycle::Hub>();
    #[cfg(feature = "ws")]
    {
        assert_send_sync::<ControlClient>();
        assert_send_sync::<WsSink>();
        assert_send_sync::<lifecycle::LifecycleConnection>();
    }
    #[cfg(feature = "http")]
    assert_send_sync::<HttpSink>();
    const fn assert_send<T: Send>() {}
    assert_send::<Subscription>();
    assert_send::<lifecycle::Subscriber>();
    #[cfg(feature = "ws")]
    assert_send::<lifecycle::RemoteSubscriber>();
};
