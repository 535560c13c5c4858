//! The permission loop of `aep hook` (AEP-0002 §7, AEP-0004 §5-6): a held moment
//! ([`aep_adapters::hold::Hold`]) waits for a `control.attention.respond` while the
//! agent waits on the hook, and the answer comes back in the agent's decision format.
//!
//! The request was mapped, stamped and delivered like every hook's events (the session
//! state under its lock, the spool, the relay). Then the hook opens a WebSocket to the
//! relay as an emitter that accepts `control.attention.respond` and sends the request
//! again on it: the relay routes a session's commands to the connection that carried
//! its events (AEP-0004 §4), and the copy is dropped on its `(source, id)` (AEP-0001
//! §7.4), as the SDK's WebSocket sink re-claims its sessions after a reconnect. A
//! respond sent in the moment between the request's delivery and that claim is refused
//! `no-route` by the relay: the responder sends it again.
//!
//! Every rule is aep-core's: `control::ControlTarget` dedupes the commands and decides
//! one ack each (a redelivery gets the recorded ack back), `attention::AttentionDesk`
//! checks each answer against the request (AEP-0006, AEP-0008: `check_answer`), nacks
//! `invalid` what does not answer it (the request stays pending) and closes the request
//! once: answered (`control.accepted`, `attention.answered`, `attention.resolved`, each
//! cause-linked to the command) or, at the end of `--hold`, `attention.timeout`, and the
//! agent's neutral reply leaves the decision to its own prompt.
//!
//! Why not the SDK's `ControlTarget::ask`, which drives the same desk: its events take
//! their positions from a `SessionEmitter`'s own counter, and a hook's positions belong
//! to the session's state file, shared with the agent's other hooks (which go on while
//! this one waits, without the session's lock). So each event this loop emits is
//! stamped by the state ([`SessionState::outcome`]) under the session's lock, spooled,
//! and delivered like any hook's, a crash costing a gap, never a reused position.

use std::time::{Duration, Instant};

use aep::protocol::attention::{Answer, AttentionDesk, Respond, RESPOND};
use aep::protocol::control::{ControlTarget, Decision, OutcomeEvent, RejectReason, TargetOutput};
use aep::protocol::envelope::EnvelopeFactory;
use aep::protocol::{Capture, Event};
use aep::sink::Sink;
use aep::{CommandHook, WsSinkOptions};
use aep_adapters::hold::Hold;
use aep_adapters::Posture;
use tokio::sync::mpsc;

use crate::args::RelayArgs;
use crate::hookstore::HookDir;
use crate::spool::Spool;

/// Commands waiting for the loop; past this a flood is dropped (the sender's retry
/// brings a command back, and a dropped one is decided then).
const INBOX: usize = 64;

/// How long the loop gives the relay to take each batch of its events.
const DELIVERY: Duration = Duration::from_secs(2);

/// The commands the relay hands the hook's socket, into the loop.
#[derive(Debug)]
struct Inbox(mpsc::Sender<Event>);

impl CommandHook for Inbox {
    fn accepts(&self) -> Vec<String> {
        vec![RESPOND.to_owned()]
    }
    fn command(&self, command: Event) {
        let _ = self.0.try_send(command);
    }
}

/// One held moment, between the request's delivery and the agent's reply.
#[derive(Debug)]
pub struct Loop<'a> {
    /// The hook directory (session state, spool).
    pub dir: &'a HookDir,
    /// The relay.
    pub relay: &'a RelayArgs,
    /// The agent (`claude-code`, ...).
    pub agent: &'a str,
    /// The session.
    pub session: &'a str,
    /// The capture posture events are lowered to.
    pub posture: &'a Posture,
    /// Names the emitter and reads the clock.
    pub factory: &'a EnvelopeFactory,
    /// The held moment.
    pub hold: &'a Hold,
    /// The `attention.requested` event, as delivered.
    pub request: &'a Event,
}

/// One event the loop decided, before the session state stamps it.
struct Out {
    key: Option<String>,
    event_type: String,
    data: serde_json::Value,
    cause: Option<String>,
    subject: Option<String>,
    asked: Capture,
}

impl Out {
    fn of(outcome: &OutcomeEvent, key: &str, asked: Capture) -> Out {
        Out {
            key: Some(key.to_owned()),
            event_type: outcome.event_type().to_owned(),
            data: outcome.data().clone(),
            cause: Some(outcome.cause().to_owned()),
            subject: outcome.subject().map(str::to_owned),
            asked,
        }
    }
}

impl Loop<'_> {
    /// Waits until `until` for an answer; `Some` is the answer applied, `None` left the
    /// decision to the agent (no answer in time, no relay to wait on). Every event it
    /// emits is spooled and delivered before it returns.
    pub async fn wait(&self, until: Instant) -> Result<Option<Answer>, String> {
        let request_id = self.request.id().to_owned();
        let (tx, mut inbox) = mpsc::channel(INBOX);
        let instance = format!("{}/{}", crate::host(), std::process::id());
        let sink = self
            .relay
            .client()
            .ws_sink(WsSinkOptions::new(self.agent, instance).command_hook(Inbox(tx)))
            .map_err(|e| format!("{}: {e}", self.relay.base()))?;
        // The claim: the request again, on the socket its answer is to come back on.
        sink.accept(self.request)
            .map_err(|e| format!("claiming session {}: {e}", self.session))?;
        let hold_for = until.saturating_duration_since(Instant::now());
        let mut desk = AttentionDesk::new();
        desk.open(
            Instant::now(),
            self.session,
            &request_id,
            self.hold.request().clone().timeout(hold_for),
        )
        .map_err(|e| format!("the request cannot be held: {e}"))?;
        let mut target = ControlTarget::new([RESPOND]);
        let answer = loop {
            let command = tokio::select! {
                c = inbox.recv() => c,
                () = tokio::time::sleep_until(until.into()) => None,
            };
            let Some(command) = command else {
                // The hold is over (or the socket's task is gone): the request times out.
                let now = Instant::now().max(until);
                if let Some(closed) = desk.expire(now, self.session, &request_id) {
                    let out = Out::of(closed.event(), self.hold.key(), Capture::Metadata);
                    let events = self.stamp(vec![out])?;
                    self.send(&events).await?;
                }
                break None;
            };
            if target.handle_command(Instant::now(), command).is_err() {
                continue;
            }
            if let Some(answer) = self.decide(&mut desk, &mut target).await? {
                break Some(answer);
            }
        };
        // What was to go on the socket went (the claim); the events went by the spool.
        let _ = tokio::time::timeout(Duration::from_millis(500), sink.close()).await;
        Ok(answer)
    }

    /// Carries out what the target asks: each new command decided by the desk, acks
    /// minted and recorded, recorded acks sent again. `Some` once the request is
    /// answered.
    async fn decide(
        &self,
        desk: &mut AttentionDesk,
        target: &mut ControlTarget,
    ) -> Result<Option<Answer>, String> {
        let mut answer = None;
        let mut after = Vec::new();
        while let Some(out) = target.poll_output() {
            match out {
                TargetOutput::Decide(incoming) => {
                    let decision = match desk.respond(Instant::now(), incoming.command()) {
                        Respond::Answered(a) => {
                            let ceiling = self.posture.ceiling_for("attention.answered");
                            // Asked at `full`, lowered to the ceiling when stamped.
                            after.push(Out::of(
                                &a.answered(ceiling),
                                self.hold.key(),
                                Capture::Full,
                            ));
                            after.push(Out::of(&a.resolved(), self.hold.key(), Capture::Metadata));
                            let decision = a.decision();
                            answer = Some((*a).into_answer());
                            decision
                        }
                        Respond::Rejected(r) => r.decision(),
                        _ => Decision::reject(
                            RejectReason::Invalid,
                            "no request of that id is pending in this hook",
                        ),
                    };
                    let _ = target.decide(incoming.key(), decision);
                }
                TargetOutput::EmitAck(ack) => {
                    let data = ack.data();
                    let asked = ack.capture();
                    let out = Out {
                        key: None,
                        event_type: ack.ack_type().to_owned(),
                        data,
                        cause: Some(ack.cause().to_owned()),
                        subject: None,
                        asked,
                    };
                    // AEP-0004 §1: the ack first, then the outcome.
                    let mut outs = vec![out];
                    outs.append(&mut after);
                    let events = self.stamp(outs)?;
                    match events.first() {
                        Some(ack_event) => {
                            let _ = target.record(ack.key(), ack_event.clone());
                        }
                        None => {
                            let _ = target.abandon(ack.key());
                        }
                    }
                    self.send(&events).await?;
                }
                TargetOutput::Redeliver(ack) => {
                    // The recorded ack, byte for byte (AEP-0004 §3).
                    self.spool()
                        .append(&[ack.to_string()], Instant::now() + DELIVERY)
                        .map_err(|e| format!("spooling: {e}"))?;
                    self.send(&[ack]).await?;
                }
                _ => {}
            }
        }
        Ok(answer)
    }

    /// Stamps `outs` at the session's next positions under its lock and spools them,
    /// in order; what the state settled already is left out.
    fn stamp(&self, outs: Vec<Out>) -> Result<Vec<Event>, String> {
        let deadline = Instant::now() + DELIVERY;
        let _guard = self
            .dir
            .lock_session(self.agent, self.session, deadline)
            .map_err(|e| format!("{}: {e}", self.dir.root().display()))?
            .ok_or_else(|| format!("session {} stayed locked", self.session))?;
        let mut state = self.dir.load_session(self.agent, self.session);
        let events: Vec<Event> = outs
            .into_iter()
            .filter_map(|o| {
                state.outcome(
                    o.key.as_deref(),
                    &o.event_type,
                    o.data,
                    o.cause.as_deref(),
                    o.subject.as_deref(),
                    o.asked,
                    self.posture,
                    self.factory,
                )
            })
            .collect();
        self.dir
            .save_session(self.agent, &state)
            .map_err(|e| format!("saving the session state: {e}"))?;
        let lines: Vec<String> = events.iter().map(ToString::to_string).collect();
        self.spool()
            .append(&lines, deadline)
            .map_err(|e| format!("spooling: {e}"))?;
        Ok(events)
    }

    fn spool(&self) -> Spool {
        Spool::new(self.dir.spool(self.relay.base()))
    }

    /// Delivers the spool, which holds `events` (and whatever waited before them).
    async fn send(&self, events: &[Event]) -> Result<(), String> {
        if events.is_empty() {
            return Ok(());
        }
        let done = self
            .spool()
            .deliver(self.relay, Instant::now() + DELIVERY)
            .await;
        match done.stopped {
            Some(why) if done.pending > 0 => {
                Err(format!("{why} ({} events spooled)", done.pending))
            }
            _ => Ok(()),
        }
    }
}
