//! [`ControlTarget::ask`] for synchronous code: the attention loop of
//! [`aep_async::ControlTarget::ask`], waited on from a plain thread.

use aep_core::attention::{Answer, AttentionRequest};

use super::ControlTarget;
use crate::emit::SessionEmitter;
use crate::error::Error;

impl ControlTarget {
    /// Asks a person through the attention loop (AEP-0002 §7) and blocks until the
    /// answer, the request's timeout, or the runtime stops; see
    /// [`aep_async::ControlTarget::ask`] for the loop (the answer checked against the
    /// request, invalid ones nacked while the request stays pending, the lifecycle
    /// events emitted). A timeout is [`Error::Ask`] holding
    /// [`AskError::TimedOut`](aep_async::control::AskError::TimedOut), which
    /// [`Error::is_timeout`] tells. Waits on the session's emitter's runtime; refused
    /// with [`Error::InsideRuntime`] inside a tokio runtime. A plain-function handler of
    /// this target may ask: the answers go to the loop, never to the handler.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use aep_blocking::control::{ControlTarget, RejectReason};
    /// use aep_blocking::{Client, Emitter, WsSinkOptions};
    /// use aep_core::attention::{AttentionRequest, ALLOW};
    ///
    /// let target = ControlTarget::new(["control.attention.respond"], |cmd| {
    ///     let _ = cmd.reject(RejectReason::Invalid, "nothing of that id is pending");
    /// })?;
    /// let relay = Client::new("http://127.0.0.1:8787").token("secret");
    /// let sink = relay.ws_sink(WsSinkOptions::new("coder", "host-a/1").command_hook(target.clone()))?;
    /// let emitter = Emitter::new("coder", "host-a", sink);
    /// let session = target.attach(emitter.session("s1"));
    /// session.emit("session.started", serde_json::json!({}))?;
    /// let answer = target.ask(&session, AttentionRequest::permission("Deploy?").timeout(Duration::from_secs(60)))?;
    /// if answer.is(ALLOW) {
    ///     println!("deploying");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ask(
        &self,
        session: &SessionEmitter,
        request: AttentionRequest,
    ) -> Result<Answer, Error> {
        let runtime = session.emitter().waiter()?;
        let target = self.as_async().clone();
        let session = session.as_async().clone();
        Ok(runtime.block_on(async move { target.ask(&session, request).await })??)
    }
}
