//! Commands from the console's pages (AEP-0004): built, correlated, retried and settled
//! by aep-core's [`ControlSender`], sent as a connection of the relay's own would send
//! them, so that they are routed (here, or to the relay of their target in a cluster)
//! and refused exactly as any other sender's.
//!
//! One task holds the sender while commands are in flight: a connection of the hub
//! (its `hello` a consumer's, identity `mission-control`), on whose queue the relay's
//! refusals arrive as `error` frames, and a subscription to the acks
//! (`control.accepted`, `control.rejected`) on the same queue. It ends once nothing has
//! been pending for [`IDLE`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use aep_core::control::{ControlSender, SendPolicy};
use aep_core::frame::{decode_slice, Hello, Identity, Role};
use aep_core::{Event, Message, Nack};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::encoded::Binding;
use crate::hub::{Hub, SubscribeRequest};
use crate::outbox::{Drain, End, Piece};
use crate::routing::Party;

/// How long the task outlives its last settled command.
const IDLE: Duration = Duration::from_secs(60);

/// Commands in flight at once; more are refused until some settle.
pub(crate) const MAX_IN_FLIGHT: usize = 256;

/// The agent name the console's commands carry.
pub(crate) const AGENT: &str = "mission-control";

/// How a command ended: its ack, or why it was not accepted (the target's
/// `control.rejected`, the relay's refusal, the synthesized `timeout`).
pub(crate) type Outcome = Result<Event, Nack>;

/// A command to send and where its settlement goes.
pub(crate) struct Ask {
    pub(crate) command: Event,
    pub(crate) reply: oneshot::Sender<Outcome>,
}

/// The sender's task, started on demand.
#[derive(Debug, Default)]
pub(crate) struct Control {
    tx: Mutex<Option<mpsc::Sender<Ask>>>,
}

impl Control {
    /// A sender for the relay of `hub`, started if it is not running.
    pub(crate) fn sender(&self, hub: &Arc<Hub>) -> mpsc::Sender<Ask> {
        let mut tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = tx.as_ref().filter(|t| !t.is_closed()) {
            return tx.clone();
        }
        let (sender, rx) = mpsc::channel(MAX_IN_FLIGHT);
        tokio::spawn(run(hub.clone(), rx));
        *tx = Some(sender.clone());
        sender
    }

    /// The command builder's sender side: the console's `source` and `agent`.
    pub(crate) fn builder() -> ControlSender {
        ControlSender::new(AGENT, "aep-relay")
    }
}

async fn run(hub: Arc<Hub>, mut asks: mpsc::Receiver<Ask>) {
    let (outbox, rx) = hub.outbox(CancellationToken::new());
    let conn = hub.connect(outbox.clone());
    let hello = Hello::new(Role::Consumer).with_identity(Identity::new(AGENT));
    hub.hello(conn, Arc::new(Party::new(Role::Consumer, hello)));
    // the acks, on the connection's own queue with its refusals: registered before any
    // command goes, so no ack can pass unseen
    let filter = crate::proto::parse_filter(&serde_json::json!({
        "type": ["control.accepted", "control.rejected"]
    }))
    .unwrap_or_default();
    let mut acks = SubscribeRequest::new(Binding::Ws, filter);
    acks.conn = Some((conn, "console-acks".to_owned()));
    hub.subscribe(&outbox, acks);
    let mut drain = Drain::new(rx, outbox.clone(), Duration::from_secs(3600));

    let mut sender = Control::builder().with_policy(SendPolicy::default());
    let mut waiting: HashMap<String, oneshot::Sender<Outcome>> = HashMap::new();
    let mut idle_since = Instant::now();
    loop {
        let deadline = sender
            .poll_timeout()
            .unwrap_or_else(|| idle_since.max(Instant::now()) + IDLE);
        tokio::select! {
            ask = asks.recv() => {
                let Some(Ask { command, reply }) = ask else { break };
                let id = command.id().to_owned();
                match sender.send(Instant::now(), command) {
                    Ok(()) => {
                        waiting.insert(id, reply);
                    }
                    Err(e) => {
                        let _ = reply.send(Err(Nack::timeout(e.to_string())));
                    }
                }
            }
            piece = drain.next() => match piece {
                Some(Piece::Data(bytes)) => match decode_slice(&bytes) {
                    Ok(Message::Event(event)) => {
                        sender.handle_event(event);
                    }
                    Ok(Message::Frame(frame)) => {
                        sender.handle_frame(&frame);
                    }
                    Err(_) => {}
                },
                Some(Piece::Heartbeat) => {}
                Some(Piece::End(_)) | None => {
                    sender.handle_close("the relay is shutting down");
                    settle(&mut sender, &mut waiting);
                    break;
                }
            },
            () = tokio::time::sleep_until(deadline.into()) => {
                if sender.pending_len() == 0 && idle_since.elapsed() >= IDLE {
                    break;
                }
                sender.handle_timeout(Instant::now());
            }
        }
        transmit(&hub, conn, &mut sender).await;
        settle(&mut sender, &mut waiting);
        if sender.pending_len() > 0 {
            idle_since = Instant::now();
        }
    }
    // whatever is still pending gets an answer before the connection goes
    sender.handle_close("the console's command task stopped");
    settle(&mut sender, &mut waiting);
    outbox.end(End::Shutdown);
    hub.disconnect(conn);
}

/// Sends every transmission the sender has queued (first sends and retries) through
/// the hub, as the connection `conn`.
async fn transmit(hub: &Hub, conn: u64, sender: &mut ControlSender) {
    while let Some(command) = sender.poll_transmit() {
        let line = command.to_json();
        match crate::line::parse_line(line.as_bytes(), true) {
            Ok(incoming) => {
                // a command is never stored: routing answers at once
                let _ = hub
                    .ingest(std::slice::from_ref(&incoming), Some(conn))
                    .await;
            }
            Err(e) => tracing::warn!(error = ?e, "console: a command the relay cannot read"),
        }
    }
}

fn settle(sender: &mut ControlSender, waiting: &mut HashMap<String, oneshot::Sender<Outcome>>) {
    while let Some(settled) = sender.poll_settled() {
        if let Some(reply) = waiting.remove(&settled.command_id) {
            let _ = reply.send(settled.result);
        }
    }
}
