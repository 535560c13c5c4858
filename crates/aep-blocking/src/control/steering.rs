//! [`Instructions`] for synchronous code: a steered session's instructions
//! ([`aep_async::control::Instructions`]) read from a plain thread.

use std::time::Duration;

use aep_core::steering::Instruction;
use futures::FutureExt;

use super::ControlTarget;
use crate::emit::SessionEmitter;
use crate::error::Error;
use crate::runtime::Runtime;

/// The instructions of one session, oldest first, for synchronous code: an
/// [`Iterator`] that blocks for the next one and ends when the session is detached.
/// Each instruction taken is audited `x.{vendor}.instruction.delivered`; dropping it
/// drops what is still queued, each audited `x.{vendor}.instruction.dropped` (see
/// [`aep_async::control::Instructions`]).
///
/// ```no_run
/// use aep_blocking::control::{ControlTarget, Steering};
/// use aep_blocking::{Client, Emitter, WsSinkOptions};
///
/// let builder = aep_async::ControlTarget::builder(["control.cancel"]).steering(Steering::new("acme")?);
/// let target = ControlTarget::with_builder(builder, |cmd| { let _ = cmd.accept(); })?;
/// let relay = Client::new("http://127.0.0.1:8787").token("secret");
/// let sink = relay.ws_sink(WsSinkOptions::new("coder", "host-a/1").command_hook(target.clone()))?;
/// let emitter = Emitter::new("coder", "host-a", sink);
/// let session = target.attach(emitter.session("s1"));
/// session.emit("session.started", serde_json::json!({}))?;
/// for instruction in target.instructions(&session)? {
///     println!("{}", instruction.text());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Instructions {
    inner: aep_async::control::Instructions,
    runtime: Runtime,
}

impl Instructions {
    /// Blocks for the next instruction; `Ok(None)` once the session is detached.
    /// Refused with [`Error::InsideRuntime`] inside a tokio runtime.
    pub fn recv(&mut self) -> Result<Option<Instruction>, Error> {
        let inner = &mut self.inner;
        self.runtime.poll_here(inner.next())
    }

    /// [`Instructions::recv`] waiting at most `timeout` ([`Error::Timeout`]; nothing
    /// is lost).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<Instruction>, Error> {
        let inner = &mut self.inner;
        let next = async move { tokio::time::timeout(timeout, inner.next()).await };
        self.runtime
            .poll_here(next)?
            .map_err(|_| Error::Timeout(timeout))
    }

    /// The next instruction if one waits, without blocking (works anywhere).
    pub fn try_recv(&mut self) -> Option<Instruction> {
        self.inner.next().now_or_never().flatten()
    }

    /// How many instructions wait.
    pub fn waiting(&self) -> usize {
        self.inner.waiting()
    }
}

impl Iterator for Instructions {
    type Item = Instruction;

    /// The next instruction; `None` once the session is detached (or when called inside
    /// a runtime, where it cannot block).
    fn next(&mut self) -> Option<Instruction> {
        self.recv().ok().flatten()
    }
}

impl ControlTarget {
    /// The instructions consumers send `session` (the steering given to the async
    /// builder, [`aep_async::control::ControlTargetBuilder::steering`]); see
    /// [`aep_async::ControlTarget::instructions`]. Blocking reads wait on the session's
    /// emitter's runtime.
    pub fn instructions(&self, session: &SessionEmitter) -> Result<Instructions, Error> {
        let runtime = session.emitter().waiter()?;
        let inner = self.as_async().instructions(session.as_async())?;
        Ok(Instructions { inner, runtime })
    }
}
