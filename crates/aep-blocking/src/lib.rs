//! # aep-blocking: the Agent Event Protocol for synchronous code
//!
//! The API of [`aep_async`], callable from plain threads, the way `reqwest::blocking`
//! wraps `reqwest`: one tokio [`Runtime`] on a background thread does the IO, and every
//! call that waits is a message to it with a reply. Nothing of the protocol is
//! re-implemented here: emitting, delivery, dedupe, resume and reconnects are the async
//! crate's, so the two behave the same.
//!
//! ```no_run
//! use aep_blocking::{subscribe, Emitter, HttpSink, SubscribeOptions};
//! use serde_json::json;
//!
//! let emitter = Emitter::new("coder", "host-a", HttpSink::builder("http://127.0.0.1:8787").build()?);
//! emitter.session("s1").emit("session.started", json!({"cwd": "/work"}))?;
//! emitter.flush()?;
//!
//! let sub = subscribe("http://127.0.0.1:8787", SubscribeOptions::new().from_all().history_only())?;
//! for event in sub {
//!     println!("{} {}", event.event_type(), event.id());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Inside async code**, calls that wait return [`Error::InsideRuntime`] (or, for
//! `recv`, [`RecvError::InsideRuntime`]) instead of blocking a runtime thread: use
//! `aep_async` there. Calls that never wait (`emit`, `subscribe`, `try_recv`,
//! `positions`, `close` of a subscription) work anywhere. No `Drop` needs a runtime.
//! (Tokio's `spawn_blocking` threads carry the runtime's context and count as inside;
//! a [`ControlTarget`] handler runs on a plain thread, so blocking calls work there.)
//!
//! ## Layout
//!
//! - [`runtime`](mod@runtime): [`Runtime`] (owned thread, caller's handle, or the shared one).
//!   Every call that needs a runtime takes the shared one, and has an `_on` form whose
//!   first argument is the [`Runtime`] to use instead ([`subscribe_on`],
//!   [`EmitterBuilder::build_on`], `SinkBuilder::build_on`, `ControlClient::connect_on`,
//!   `open_duplex_on`, [`ControlTarget::handle_on`]).
//! - [`error`](mod@error): [`Error`].
//! - [`emit`](mod@emit): [`Emitter`], [`SessionEmitter`], [`EmitterBuilder`].
//! - [`sink`](mod@sink): `HttpSink` (feature `http`), `WsSink` (feature `ws`), [`JsonlSink`].
//! - [`subscribe`](mod@subscribe): [`subscribe()`], [`Subscription`] with `recv`,
//!   `try_recv`, `recv_timeout` and `Iterator`.
//! - [`control`](mod@control): `ControlClient` (`connect`/`send`/`roster`/`close`) and `Duplex`
//!   (feature `ws`), [`ControlTarget`] with a plain-function handler.
//!
//! ## Features
//!
//! The async crate's: `http`, `sse`, `ws`, `rustls` (default TLS) or `native-tls`; all
//! but `native-tls` on by default.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod control;
pub mod emit;
pub mod error;
pub mod runtime;
pub mod sink;
pub mod subscribe;

pub use aep_async::{
    DeliveryReport, DeliveryStats, EmitError, EmitOptions, EmitPermit, Limit, LimitExceeded,
    Notice, ReadLimits, Relays, ResumePosition, StartFrom, SubscribeOptions, Transport,
    TransportError, TransportErrorKind,
};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use control::{open_duplex, open_duplex_on, ControlClient, Duplex};
pub use control::{ControlTarget, SendOptions};
pub use emit::{Emitter, EmitterBuilder, SessionEmitter};
pub use error::Error;
pub use runtime::Runtime;
pub use sink::{AsyncSinkBuilder, JsonlSink, NetSink, Sink, SinkBuilder};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use sink::{HttpSink, HttpSinkBuilder};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub use sink::{WsSink, WsSinkBuilder};
#[cfg(any(feature = "sse", feature = "ws"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sse", feature = "ws"))))]
pub use subscribe::{subscribe, subscribe_on};
pub use subscribe::{RecvError, RecvTimeoutError, Subscription, TryRecvError};

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Runtime>();
    assert_send_sync::<Emitter>();
    assert_send_sync::<SessionEmitter>();
    assert_send_sync::<ControlTarget>();
    #[cfg(feature = "ws")]
    {
        assert_send_sync::<ControlClient>();
        assert_send_sync::<WsSink>();
    }
    #[cfg(feature = "http")]
    assert_send_sync::<HttpSink>();
    const fn assert_send<T: Send>() {}
    assert_send::<Subscription>();
};
