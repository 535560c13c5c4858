//! The consumer side of the subscription lifecycle model against a relay: see the
//! module docs of [`crate::lifecycle`].

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use aep_core::frame::Role;
use aep_core::subscription::{
    DeliveredEvent, LifecycleMessage, SubscriptionCancelled, SubscriptionCreated,
    SubscriptionFilter, SubscriptionRequested,
};
use futures::{SinkExt, Stream, StreamExt};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::hub::{Ended, Rejected};
use crate::client::{Client, Defaults};
use crate::error::TransportError;
use crate::transport::idle::{Idle, IdleTimer};
use crate::transport::ws::{
    classify, close_socket, hello, open_first, ping_frame, Inbound, WsStream,
};
use crate::transport::Failover;

/// Why a remote subscription was not created.
///
/// ```
/// use aep_async::lifecycle::SubscribeError;
/// let err = SubscribeError::Closed;
/// assert_eq!(err.to_string(), "the connection to the relay is closed");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The relay answered `subscription.rejected`.
    #[error(transparent)]
    Rejected(#[from] Rejected),
    /// The connection ended before the answer.
    #[error("the connection to the relay is closed")]
    Closed,
}

type Created = (
    SubscriptionCreated,
    mpsc::Receiver<DeliveredEvent>,
    Arc<Mutex<Option<Ended>>>,
);

enum Command {
    Request(
        SubscriptionFilter,
        oneshot::Sender<Result<Created, SubscribeError>>,
    ),
    Cancel(String, Option<oneshot::Sender<SubscriptionCancelled>>),
}

/// A WebSocket connection to a relay speaking the subscription lifecycle, opened with
/// [`Client::lifecycle`]. It does not reconnect: when it ends, its subscriptions end
/// with [`Ended::SessionClosed`] and the next connection is opened the same way (on
/// another relay, given several).
///
/// ```no_run
/// use aep_async::Client;
/// use aep_core::subscription::{DeliveryMode, SubscriptionFilter};
/// use futures::StreamExt;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let conn = Client::new("http://127.0.0.1:8787").token("token").lifecycle().await?;
/// let filter = SubscriptionFilter::new()
///     .with_types("tool.*.progress")?
///     .with_delivery_mode(DeliveryMode::AtLeastOnce);
/// let mut sub = conn.subscribe(&filter).await?;
/// while let Some(delivery) = sub.next().await {
///     println!("{} at {}", delivery.event().id(), delivery.mode());
/// }
/// # Ok(()) }
/// ```
#[must_use = "dropping the connection cancels its subscriptions"]
pub struct LifecycleConnection {
    commands: mpsc::UnboundedSender<Command>,
    close: CancellationToken,
    /// Told once the connection task has closed the socket.
    done: Arc<tokio::sync::Notify>,
}

impl fmt::Debug for LifecycleConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LifecycleConnection")
            .field("open", &!self.commands.is_closed())
            .finish()
    }
}

impl Drop for LifecycleConnection {
    fn drop(&mut self) {
        self.close.cancel();
    }
}

impl Client {
    /// Opens a [`LifecycleConnection`]: `{base}/socket` as a consumer, `hello`
    /// exchanged within the connect timeout; given several relays, the first that
    /// answers (see [`Client`]). Feature `ws`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), aep_async::TransportError> {
    /// let conn = aep_async::Client::new("http://127.0.0.1:8787").token("t").lifecycle().await?;
    /// conn.close().await;
    /// # Ok(()) }
    /// ```
    pub async fn lifecycle(&self) -> Result<LifecycleConnection, TransportError> {
        let link = self.link(Defaults::CONTROL);
        let hello = hello(Role::Consumer, &link.agent, &link.host, None);
        let mut failover = Failover::new(link.relays.clone(), link.backoff);
        let (ws, _) = open_first(&mut failover, &link, &hello).await?;
        let (commands, rx) = mpsc::unbounded_channel();
        let close = CancellationToken::new();
        let done = Arc::new(tokio::sync::Notify::new());
        tokio::spawn(run(ws, rx, close.clone(), done.clone(), link.limits.idle()));
        Ok(LifecycleConnection {
            commands,
            close,
            done,
        })
    }
}

impl LifecycleConnection {
    /// Closes the connection in order (a `closing` frame, then the WebSocket close),
    /// which ends every subscription on it. The close starts at the call; the future
    /// resolves once the socket is closed (dropping it does not stop the close).
    /// Idempotent; dropping the connection closes it too, without waiting.
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let (done, commands) = (self.done.clone(), self.commands.clone());
        self.close.cancel();
        async move {
            let notified = done.notified();
            tokio::pin!(notified);
            // registered before looking, so a task that ends meanwhile is not missed: it
            // drops its receiver, then tells
            notified.as_mut().enable();
            if !commands.is_closed() {
                notified.await;
            }
        }
    }

    /// Sends `subscription.requested` with `filter` and waits for the answer.
    pub async fn subscribe(
        &self,
        filter: &SubscriptionFilter,
    ) -> Result<RemoteSubscriber, SubscribeError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::Request(filter.clone(), tx))
            .map_err(|_| SubscribeError::Closed)?;
        let (created, deliveries, ended) = rx.await.map_err(|_| SubscribeError::Closed)??;
        Ok(RemoteSubscriber {
            commands: self.commands.clone(),
            created,
            deliveries,
            ended,
            cancelled: false,
        })
    }
}

/// One subscription created by the relay: a [`Stream`] of [`DeliveredEvent`]s, ending after
/// a cancel, an expiry or the connection's close ([`RemoteSubscriber::ended`]).
/// Dropping it cancels the subscription.
///
/// ```no_run
/// # async fn run(mut sub: aep_async::lifecycle::RemoteSubscriber) {
/// let confirmed = sub.cancel().await;
/// assert!(confirmed.is_some() || sub.ended().is_some());
/// # }
/// ```
#[must_use = "a subscription is cancelled when dropped"]
pub struct RemoteSubscriber {
    commands: mpsc::UnboundedSender<Command>,
    created: SubscriptionCreated,
    deliveries: mpsc::Receiver<DeliveredEvent>,
    ended: Arc<Mutex<Option<Ended>>>,
    cancelled: bool,
}

impl fmt::Debug for RemoteSubscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteSubscriber")
            .field("id", &self.id())
            .field("ended", &self.ended())
            .finish()
    }
}

impl RemoteSubscriber {
    /// The relay-assigned id.
    pub fn id(&self) -> &str {
        self.created.subscription_id()
    }

    /// The `subscription.created` answer.
    pub fn created(&self) -> &SubscriptionCreated {
        &self.created
    }

    /// Why the subscription ended, once it has.
    pub fn ended(&self) -> Option<Ended> {
        *self.ended.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `subscription.cancelled` and waits for the relay's confirmation (`None`
    /// when the subscription had already ended). Deliveries already received are still
    /// yielded.
    pub async fn cancel(&mut self) -> Option<SubscriptionCancelled> {
        if self.ended().is_some() {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        self.cancelled = true;
        self.commands
            .send(Command::Cancel(self.id().to_owned(), Some(tx)))
            .ok()?;
        rx.await.ok()
    }
}

impl Drop for RemoteSubscriber {
    fn drop(&mut self) {
        if !self.cancelled && self.ended().is_none() {
            let _ = self
                .commands
                .send(Command::Cancel(self.id().to_owned(), None));
        }
    }
}

impl Stream for RemoteSubscriber {
    type Item = DeliveredEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<DeliveredEvent>> {
        self.get_mut().deliveries.poll_recv(cx)
    }
}

struct Live {
    tx: mpsc::Sender<DeliveredEvent>,
    ended: Arc<Mutex<Option<Ended>>>,
}

impl Live {
    fn end(self, how: Ended) {
        self.ended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(how);
    }
}

/// The connection task: writes requests, reads answers and deliveries.
async fn run(
    mut ws: WsStream,
    mut commands: mpsc::UnboundedReceiver<Command>,
    close: CancellationToken,
    done: Arc<tokio::sync::Notify>,
    idle_timeout: std::time::Duration,
) {
    let mut idle = IdleTimer::new(idle_timeout);
    // The relay answers requests in the order it reads them.
    let mut pending: VecDeque<oneshot::Sender<Result<Created, SubscribeError>>> = VecDeque::new();
    let mut cancels: HashMap<String, oneshot::Sender<SubscriptionCancelled>> = HashMap::new();
    let mut live: HashMap<String, Live> = HashMap::new();
    loop {
        tokio::select! {
            () = close.cancelled() => break,
            command = commands.recv() => {
                let Some(command) = command else { break };
                let message: LifecycleMessage = match command {
                    Command::Request(filter, reply) => {
                        pending.push_back(reply);
                        SubscriptionRequested::new(&filter).into()
                    }
                    // already ended (say, expired meanwhile): the relay would not answer
                    Command::Cancel(id, _) if !live.contains_key(&id) => continue,
                    Command::Cancel(id, reply) => {
                        if let Some(reply) = reply {
                            cancels.insert(id.clone(), reply);
                        }
                        SubscriptionCancelled::new(id).into()
                    }
                };
                if ws.send(Message::text(message.to_json())).await.is_err() {
                    break;
                }
            }
            tick = idle.tick() => match tick {
                Idle::Ping => {
                    if ws.send(Message::text(ping_frame())).await.is_err() {
                        break;
                    }
                }
                Idle::Dead(e) => {
                    tracing::warn!(error = %e, "the relay went silent; closing the lifecycle connection");
                    break;
                }
            },
            incoming = ws.next() => {
                idle.heard();
                // Lifecycle messages and deliveries are not AEP messages: they come as
                // `Undecodable`; the transport answers `ping` (AEP-0003 §3.5 rule 5).
                let text = match classify(incoming) {
                    Inbound::Undecodable(text, _) => text,
                    Inbound::Reply(pong) => {
                        if ws.send(Message::text(pong)).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    Inbound::End(_) => break,
                    Inbound::Closing(c) => {
                        tracing::info!(reason = ?c.reason, "the relay is closing the connection");
                        continue;
                    }
                    Inbound::Binary(e) => {
                        tracing::warn!(error = %e, "ignoring a message");
                        continue;
                    }
                    // AEP-0003 frames and events (replay-exhausted, pong): nothing to do
                    Inbound::Message(_) | Inbound::Nothing => continue,
                };
                let Ok(value) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                if value.get("delivery").is_some() {
                    let Ok(delivery) = DeliveredEvent::from_json(text.as_str()) else { continue };
                    if let Some(sub) = live.get(delivery.subscription_id()) {
                        // waiting here is the backpressure the relay sees; a close
                        // does not wait for a reader that never reads
                        tokio::select! {
                            _ = sub.tx.send(delivery) => {}
                            () = close.cancelled() => break,
                        }
                        // and not the relay's silence
                        idle.heard();
                    }
                    continue;
                }
                let Ok(message) = LifecycleMessage::from_value(&value) else {
                    tracing::debug!("ignoring a message that is no lifecycle message");
                    continue;
                };
                match message {
                    LifecycleMessage::Created(created) => {
                        let (tx, rx) = mpsc::channel(256);
                        let ended = Arc::new(Mutex::new(None));
                        live.insert(
                            created.subscription_id().to_owned(),
                            Live { tx, ended: ended.clone() },
                        );
                        if let Some(reply) = pending.pop_front() {
                            let _ = reply.send(Ok((created, rx, ended)));
                        }
                    }
                    LifecycleMessage::Rejected(rejected) => {
                        if let Some(reply) = pending.pop_front() {
                            let _ = reply.send(Err(Rejected::new(rejected).into()));
                        }
                    }
                    LifecycleMessage::Cancelled(c) => {
                        if let Some(sub) = live.remove(c.subscription_id()) {
                            sub.end(Ended::Cancelled);
                        }
                        if let Some(reply) = cancels.remove(c.subscription_id()) {
                            let _ = reply.send(c);
                        }
                    }
                    LifecycleMessage::Expired(e) => {
                        if let Some(sub) = live.remove(e.subscription_id()) {
                            sub.end(Ended::Expired);
                        }
                        cancels.remove(e.subscription_id());
                    }
                    // A consumer's own message echoed, or one a later model adds.
                    _ => {}
                }
            }
        }
    }
    for (_, sub) in live.drain() {
        sub.end(Ended::SessionClosed);
    }
    close_socket(&mut ws, "lifecycle connection closed").await;
    // the receiver goes first, so a `close` that finds the channel open is told
    drop(commands);
    done.notify_waiters();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::transport::ws::testing::{exchange_hello, serve};

    /// The lifecycle connection reads through the transport layer: it answers an AEP
    /// `ping` (AEP-0003 §3.5 rule 5), and a refused binary message does not end it.
    #[tokio::test]
    async fn answers_ping_and_survives_a_binary_message() {
        let (url, server) = serve(|mut ws| async move {
            exchange_hello(&mut ws).await;
            ws.send(Message::binary(vec![0u8; 4])).await.unwrap();
            for t in [1, 2] {
                let ping = format!(r#"{{"type":"ping","t":{t}}}"#);
                ws.send(Message::text(ping)).await.unwrap();
                let wait = std::time::Duration::from_secs(10);
                let read = tokio::time::timeout(wait, ws.next()).await;
                let pong = read.expect("a pong").unwrap().unwrap().into_text().unwrap();
                assert_eq!(pong.as_str(), format!(r#"{{"type":"pong","t":{t}}}"#));
            }
        })
        .await;
        let conn = Client::new(url).lifecycle().await.unwrap();
        server.await.unwrap();
        conn.close().await;
        conn.close().await;
    }
}
