//! [`Acks`]: what a control target owes the commands it decided, core's target state
//! machine and the sessions' emitters its acks go through (AEP-0004 §3, §7). Below the
//! target, its attention loop and its steering: each of them decides through it, so
//! none of them reaches into another.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use aep_core::control::{self as core, CommandKey, TargetOutput};
use aep_core::Event;
use smallvec::SmallVec;

use super::error::ControlError;
use crate::emit::{self, Attrs, SessionEmitter};

/// An ack as emitted, with the session emitter it went through.
pub(super) type Minted = (Arc<Event>, Arc<SessionEmitter>);

/// Core's target and the emitters of the attached sessions, under the target's one lock.
pub(super) struct Acks {
    pub(super) core: core::ControlTarget,
    /// Weak: the emit sink's connection task holds the target as its command hook, and
    /// the session holds the sink; a strong reference would keep all of them alive after
    /// the agent let go.
    pub(super) sessions: HashMap<String, Weak<SessionEmitter>>,
}

impl Acks {
    /// No session attached yet.
    pub(super) fn new(core: core::ControlTarget) -> Acks {
        Acks {
            core,
            sessions: HashMap::new(),
        }
    }

    /// The emitter of an attached session, while the agent holds it.
    pub(super) fn session(&self, name: &str) -> Option<Arc<SessionEmitter>> {
        self.sessions.get(name).and_then(Weak::upgrade)
    }

    /// Carries out everything the core target asked for: acks are minted through the
    /// session's emitter and recorded; recorded acks are re-sent as they were. Returns
    /// the commands awaiting a decision and, when `mine` is given, how minting its ack
    /// went.
    pub(super) fn drain(
        &mut self,
        mine: Option<&CommandKey>,
    ) -> (
        SmallVec<[core::IncomingCommand; 1]>,
        Option<Result<Minted, ControlError>>,
    ) {
        let mut decide = SmallVec::new();
        let mut minted = None;
        while let Some(out) = self.core.poll_output() {
            match out {
                TargetOutput::Decide(incoming) => decide.push(incoming),
                TargetOutput::EmitAck(ack) => {
                    let key = ack.key();
                    let session = ack.session().unwrap_or_default();
                    let data = ack.data();
                    let result = match self.session(session) {
                        None => Err(ControlError::UnknownSession(session.to_owned())),
                        Some(s) => s
                            .emit_attrs(
                                ack.ack_type(),
                                emit::payload_of(&data),
                                Attrs {
                                    cause: Some(ack.cause()),
                                    ..Attrs::default()
                                },
                            )
                            .map(|event| (Arc::new(event), s))
                            .map_err(ControlError::from),
                    };
                    match &result {
                        // Shared, not copied: the record and the handler's `Accepted`
                        // hold the one ack.
                        Ok((event, _)) => {
                            if let Err(e) = self.core.record(key, Arc::clone(event)) {
                                tracing::warn!(error = %e, "ack not recorded");
                            }
                        }
                        // No ack left: forgotten, so a redelivery is decided again
                        // rather than waiting on a record that will never come.
                        Err(e) => {
                            tracing::warn!(error = %e, command = key.id(), "ack not emitted");
                            let _ = self.core.abandon(key);
                        }
                    }
                    if mine == Some(key) {
                        minted = Some(result);
                    }
                }
                TargetOutput::Redeliver(ack) => {
                    let session = ack.session().unwrap_or_default();
                    match self.session(session) {
                        Some(s) => {
                            if let Err(e) = s.redeliver(&ack) {
                                tracing::warn!(error = %e, "recorded ack not re-sent");
                            }
                        }
                        None => tracing::warn!(session, "recorded ack for a detached session"),
                    }
                }
                other => {
                    tracing::warn!(output = ?other, "target output this driver does not know")
                }
            }
        }
        (decide, minted)
    }
}
