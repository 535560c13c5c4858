//! The seam between this relay's routing and the other relays of a cluster (AEP-0004 §4,
//! AEP-0003 §4.1), in both directions:
//!
//! - [`Directory`]: where the claims of the *other* relays are. Routing asks it how many
//!   claims a session has elsewhere and on which relay, the roster asks it for their
//!   entries, and a command whose one target is elsewhere is forwarded through it. A
//!   single relay's is [`Alone`] (nothing elsewhere, so its path is the single relay's);
//!   a relay of a cluster has its control plane's (`nats::control`).
//! - [`Claimants`]: what a directory is served by while the relay runs: this relay's own
//!   claims (to tell the others) and a command another relay forwarded here (routed to
//!   its one target here, or refused). The hub implements it, and routes every command it
//!   ingests through the same [`Claimants::route`], so a forwarded command and one sent
//!   here take one path.
//!
//! The server hands the directory to the hub, and the hub (as [`Claimants`]) to the
//! directory: neither knows the other's type.

use std::fmt;
use std::sync::{Arc, Weak};

use aep_core::frame::{ErrorCode, RosterEntry};
use bytes::Bytes;
use futures::future::BoxFuture;

use crate::line::Incoming;
use crate::outbox::Outbox;
use crate::proto;

/// The name of a relay within its cluster.
pub(crate) type RelayId = Arc<str>;

/// The live claims of a session on the other relays of a cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Elsewhere {
    /// How many (connection, session) claims.
    pub(crate) claims: usize,
    /// The relay holding one of them (the first found), when there is any.
    pub(crate) relay: Option<RelayId>,
}

/// Why a relay refused a command on its target's behalf (AEP-0004 §4.2): the code and
/// detail of the `error` frame the sender gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) code: ErrorCode,
    pub(crate) detail: String,
}

impl Refusal {
    /// The `error` frame that tells the sender of command `command_id`.
    pub(crate) fn frame(&self, command_id: &str) -> Bytes {
        Bytes::from(proto::error_frame(
            self.code.clone(),
            None,
            Some(command_id),
            Some(&self.detail),
        ))
    }
}

/// The `no-route` refusal of a command for `session` (AEP-0004 §4.2).
pub(crate) fn no_route(session: &str) -> Refusal {
    Refusal {
        code: ErrorCode::NoRoute,
        detail: format!("no connected emitter owns session {session}"),
    }
}

/// Where the claims of the other relays of a cluster are (AEP-0004 §4, AEP-0003 §4.1):
/// the one seam between routing and a cluster's control plane. This relay's own claims
/// are the routing table's; a directory knows the rest.
pub(crate) trait Directory: Send + Sync + fmt::Debug {
    /// The live claims of `session` the other relays hold.
    fn elsewhere(&self, session: &str) -> Elsewhere;

    /// This relay's claims changed (a session claimed, a claimant gone): the others are
    /// to learn it. Called under the hub's lock: it must not wait.
    fn changed(&self);

    /// The roster entries of the other relays' live claims, relay by relay.
    fn entries(&self) -> Vec<Arc<[RosterEntry]>>;

    /// Sends `command` (its bytes as received, AEP-0004 §4.4) to `relay`, which holds
    /// the one claim of `session`: `Ok` once that relay handed it to its target, or why
    /// it did not.
    fn forward(
        &self,
        relay: RelayId,
        session: String,
        command: Bytes,
    ) -> BoxFuture<'static, Result<(), Refusal>>;

    /// The relay stops: the others are told it holds no claim any more, so that they
    /// stop counting its claims at once rather than when its silence says so.
    fn leave(&self) -> BoxFuture<'static, ()>;

    /// What the directory runs while the relay serves, asking `here` for this relay's
    /// claims and routing what other relays forward through it, until `here` is gone;
    /// none for a single relay.
    fn serve(self: Arc<Self>, here: Weak<dyn Claimants>) -> Option<BoxFuture<'static, ()>>;
}

/// What a directory is served by: this relay's claimants, as the hub holds them.
pub(crate) trait Claimants: Send + Sync {
    /// Hands `take` the roster entry of each live claim on this relay (AEP-0003 §4.1
    /// rule 3: one per connection and session, declarations verbatim), in claim order,
    /// until it returns `false`. The entries are built from a snapshot, outside any lock.
    fn claims(&self, take: &mut dyn FnMut(RosterEntry) -> bool);

    /// Routes a command to its one target (AEP-0004 §4) and carries the decision out:
    /// handed to the target, a refusal told to `sender` (a WebSocket connection of this
    /// relay; none for an HTTP ingest or another relay), or, its target elsewhere, a
    /// [`Forward`] for the caller to send. `forwarded`: another relay of the cluster
    /// decided already, counting every relay's claims and the binding's token, so this
    /// one decides on its own claims alone.
    fn route(&self, command: &Incoming<'_>, sender: Option<u64>, forwarded: bool) -> Routed;
}

/// What became of a command ([`Claimants::route`]).
#[derive(Debug)]
pub(crate) enum Routed {
    /// Refused (the sender told): not fanned out.
    Refused(Refusal),
    /// Handed to its one target here, or refused on that target's behalf (`Err`, the
    /// sender told): fanned out for audit either way.
    Here(Result<(), Refusal>),
    /// Its one target is on another relay: fanned out for audit here, then forwarded.
    There(Forward),
}

/// A relay on its own: no other relay holds a claim (the single-relay path).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Alone;

impl Directory for Alone {
    fn elsewhere(&self, _session: &str) -> Elsewhere {
        Elsewhere::default()
    }

    fn changed(&self) {}

    fn entries(&self) -> Vec<Arc<[RosterEntry]>> {
        Vec::new()
    }

    fn forward(
        &self,
        _relay: RelayId,
        session: String,
        _command: Bytes,
    ) -> BoxFuture<'static, Result<(), Refusal>> {
        // never asked: a relay alone never routes elsewhere
        Box::pin(std::future::ready(Err(no_route(&session))))
    }

    fn leave(&self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }

    fn serve(self: Arc<Self>, _here: Weak<dyn Claimants>) -> Option<BoxFuture<'static, ()>> {
        None
    }
}

/// A command routed to another relay of the cluster, sent once the hub's lock is
/// released; a refusal from there answers the sender as one made here would.
#[derive(Debug)]
pub(crate) struct Forward {
    pub(crate) relay: RelayId,
    pub(crate) session: String,
    pub(crate) command_id: String,
    pub(crate) command: Bytes,
    /// The sender's queue, for a refusal.
    pub(crate) sender: Option<Arc<Outbox>>,
}

impl Forward {
    /// Sends the command through `directory`; a refusal goes to the sender.
    pub(crate) async fn send(self, directory: &dyn Directory) {
        let sent = directory
            .forward(self.relay, self.session.clone(), self.command)
            .await;
        if let (Err(refusal), Some(sender)) = (sent, self.sender) {
            tracing::debug!(
                code = refusal.code.as_str(),
                session = self.session,
                "command refused by the relay of its target"
            );
            sender.push_frame(refusal.frame(&self.command_id));
        }
    }
}
