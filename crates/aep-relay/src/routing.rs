//! Who is connected and what each connection claimed, and where a command goes
//! (AEP-0004 §4): the WebSocket connections, their `hello` declarations, the sessions
//! they claimed by emitting, the `roster` of those claims (AEP-0003 §4.1), and the one
//! target of each command.
//!
//! Every protocol fact is read through `aep-core`: the declared role (`Role`), whether
//! a target accepts a command (`Acceptance`), a roster entry (`RosterEntry::claimed`).
//! The hub holds [`Connections`] under its lock.
//!
//! Where the claims of *other* relays are is behind one trait, [`Directory`]: a single
//! relay has none ([`Alone`], today's path: a command's target and the roster are this
//! relay's connections and nothing else), a relay of a cluster asks its control plane
//! (`nats::control`, feature `nats`), which counts the claims the other relays hold and
//! forwards a command to the one relay that holds its target's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;

use aep_core::frame::{Acceptance, ErrorCode, Frame, Hello, Role, RosterEntry, RosterReply};
use bytes::Bytes;
use serde_json::{json, Value};

use crate::line::Incoming;
use crate::outbox::{End, Outbox};
use crate::proto::{self, Disposition};

/// What a WebSocket peer declared in its `hello` (AEP-0003 §4), read once.
#[derive(Debug)]
pub(crate) struct Party {
    /// `emitter`, `consumer` or `both` ([`Hello::party_role`]).
    role: Role,
    hello: Hello,
}

impl Party {
    /// The declarations of `hello`, whose role was read as `role`.
    pub(crate) fn new(role: Role, hello: Hello) -> Party {
        Party { role, hello }
    }

    /// The declared role.
    pub(crate) fn role(&self) -> &Role {
        &self.role
    }

    /// What its declared `control.accepts` says of `command_type` (AEP-0004 §4.2).
    fn acceptance(&self, command_type: &str) -> Acceptance {
        self.hello
            .capabilities
            .as_ref()
            .map_or(Acceptance::Undeclared, |c| c.acceptance(command_type))
    }
}

#[derive(Debug)]
struct Conn {
    outbox: Arc<Outbox>,
    party: Option<Arc<Party>>,
    /// Claimed sessions, in claim order ...
    sessions: Vec<Arc<str>>,
    /// ... and as a set: a claim is looked up for every event the connection sends.
    claimed: HashSet<Arc<str>>,
    /// Subscription id (as sent) -> hub subscription id.
    subs: HashMap<String, u64>,
}

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

/// Where the claims of the other relays of a cluster are (AEP-0004 §4, AEP-0003 §4.1):
/// the one seam between routing and a cluster's control plane. This relay's own claims
/// are [`Connections`]'; a directory knows the rest.
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

    /// What the directory runs while the relay of `hub` serves (none for a single relay).
    fn serve(self: Arc<Self>, hub: Weak<crate::hub::Hub>) -> Option<BoxFuture<'static, ()>>;
}

/// A relay on its own: no other relay holds a claim (today's single-relay path).
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

    fn serve(self: Arc<Self>, _hub: Weak<crate::hub::Hub>) -> Option<BoxFuture<'static, ()>> {
        None
    }
}

/// The `no-route` refusal of a command for `session` (AEP-0004 §4.2).
pub(crate) fn no_route(session: &str) -> Refusal {
    Refusal {
        code: ErrorCode::NoRoute,
        detail: format!("no connected emitter owns session {session}"),
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
            let frame = proto::error_frame(
                refusal.code,
                None,
                Some(&self.command_id),
                Some(&refusal.detail),
            );
            sender.push_frame(Bytes::from(frame));
        }
    }
}

/// What routing did with a command.
#[derive(Debug)]
pub(crate) enum Routed {
    /// Refused toward the sender: not fanned out.
    Refused,
    /// Handed to (or refused on behalf of) its one target here: fanned out for audit.
    Here,
    /// Its one target is on another relay: fanned out for audit here, then forwarded.
    There(Forward),
}

/// The one target of a command, as this relay's claims and the directory's say.
enum Target<'a> {
    None,
    Here(&'a Conn),
    There(RelayId),
    Ambiguous(usize),
}

/// The relay's WebSocket connections.
#[derive(Debug)]
pub(crate) struct Connections {
    conns: BTreeMap<u64, Conn>,
    /// Where the other relays' claims are.
    directory: Arc<dyn Directory>,
}

impl Default for Connections {
    fn default() -> Self {
        Connections::new(Arc::new(Alone))
    }
}

/// The live claims a `roster` reply lists: each claimant's declarations and sessions.
pub(crate) type Claims = Vec<(Arc<Party>, Vec<Arc<str>>)>;

/// A `roster` reply that would not fit a reader's queue however empty.
#[derive(Debug)]
pub(crate) struct RosterTooLarge {
    /// The bytes it reached before the building stopped.
    pub(crate) at_least: usize,
}

impl Connections {
    /// No connections yet; the other relays' claims are where `directory` says.
    pub(crate) fn new(directory: Arc<dyn Directory>) -> Connections {
        Connections {
            conns: BTreeMap::new(),
            directory,
        }
    }

    /// Connections held.
    pub(crate) fn len(&self) -> usize {
        self.conns.len()
    }

    /// A new connection `id` writing to `outbox`, before its `hello`.
    pub(crate) fn connect(&mut self, id: u64, outbox: Arc<Outbox>) {
        let conn = Conn {
            outbox,
            party: None,
            sessions: Vec::new(),
            claimed: HashSet::new(),
            subs: HashMap::new(),
        };
        self.conns.insert(id, conn);
    }

    /// What connection `id` declared in its `hello`.
    pub(crate) fn hello(&mut self, id: u64, party: Arc<Party>) {
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.party = Some(party);
        }
    }

    /// Forgets connection `id` and its claims; the hub ids of its subscriptions.
    pub(crate) fn disconnect(&mut self, id: u64) -> Vec<u64> {
        let Some(conn) = self.conns.remove(&id) else {
            return Vec::new();
        };
        if !conn.sessions.is_empty() {
            self.directory.changed();
        }
        conn.subs.into_values().collect()
    }

    /// Connection `id` emitted an event of `session`, which claims the session for it
    /// (AEP-0001 §5.2, AEP-0004 §4): its commands are routed there from now on.
    pub(crate) fn claim(&mut self, id: u64, session: &str) {
        if let Some(conn) = self.conns.get_mut(&id) {
            if !conn.claimed.contains(session) {
                let claim: Arc<str> = Arc::from(session);
                conn.claimed.insert(claim.clone());
                conn.sessions.push(claim);
                self.directory.changed();
            }
        }
    }

    /// Registers subscription `key` of connection `id` as hub subscription `sub`; the
    /// hub id of the one it replaces (a re-used id), if any.
    pub(crate) fn add_subscription(&mut self, id: u64, key: String, sub: u64) -> Option<u64> {
        self.conns.get_mut(&id)?.subs.insert(key, sub)
    }

    /// Removes subscription `key` of connection `id`; its hub id, if it had one.
    pub(crate) fn remove_subscription(&mut self, id: u64, key: &str) -> Option<u64> {
        self.conns.get_mut(&id)?.subs.remove(key)
    }

    /// WebSocket subscriptions (`subscribe`) connection `id` holds, but for `besides`.
    pub(crate) fn subscriptions_of(&self, id: u64, besides: Option<&str>) -> usize {
        let Some(c) = self.conns.get(&id) else {
            return 0;
        };
        c.subs.len() - usize::from(besides.is_some_and(|key| c.subs.contains_key(key)))
    }

    /// Routes a command to exactly one target (AEP-0004 §4), here or, through the
    /// directory, on another relay of the cluster. Refusals answer the sender with a
    /// cause-correlated `error` frame. `authenticated`: whether the binding carries a
    /// token at all (§4.1).
    pub(crate) fn route(
        &self,
        command: &Incoming<'_>,
        from_conn: Option<u64>,
        authenticated: bool,
    ) -> Routed {
        // a command is never buffered, so its parsed form or its reading is always kept
        let Some((command_type, session, command_id)) = command.routing() else {
            debug_assert!(false, "a command read without its attributes");
            return Routed::Refused;
        };
        let session = session.unwrap_or_default();
        let sender = from_conn.and_then(|c| self.conns.get(&c));
        let refuse = |refusal: Refusal| {
            tracing::debug!(code = refusal.code.as_str(), session, "command refused");
            if let Some(conn) = sender {
                let frame =
                    proto::error_frame(refusal.code, None, Some(command_id), Some(&refusal.detail));
                conn.outbox.push_frame(Bytes::from(frame));
            }
        };
        if !authenticated {
            refuse(Refusal {
                code: ErrorCode::Unauthorized,
                detail: "control requires an authenticated binding (AEP-0004 §4.1); this relay runs without a token".into(),
            });
            return Routed::Refused;
        }
        match self.target(session, true) {
            Target::None => {
                refuse(no_route(session));
                Routed::Refused
            }
            Target::Here(target) => {
                if let Err(refusal) = deliver(target, command_type, command) {
                    refuse(refusal);
                }
                Routed::Here
            }
            Target::There(relay) => Routed::There(Forward {
                relay,
                session: session.to_owned(),
                command_id: command_id.to_owned(),
                command: command.encoded.json(),
                sender: sender.map(|c| c.outbox.clone()),
            }),
            Target::Ambiguous(n) => {
                refuse(ambiguous(n, session));
                Routed::Refused
            }
        }
    }

    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    /// Routes a command another relay of the cluster forwarded, its target being here
    /// when it looked (AEP-0004 §4): handed to that one target, or why not (the claim
    /// gone meanwhile, a second one made, the type not accepted).
    pub(crate) fn route_forwarded(&self, command: &Incoming<'_>) -> Result<(), Refusal> {
        // only a command is routed (AEP-0004 §2): anything else a peer of the cluster
        // sends on the control subjects is refused, never handed to a target
        let routing = command
            .routing()
            .filter(|_| command.disposition == Disposition::Command);
        let Some((command_type, session, _)) = routing else {
            return Err(Refusal {
                code: ErrorCode::from("invalid-event"),
                detail: "a forwarded event that is not a command (AEP-0004 §2)".into(),
            });
        };
        let session = session.unwrap_or_default();
        // the forwarding relay counted the others' claims already
        match self.target(session, false) {
            Target::Here(target) => deliver(target, command_type, command),
            Target::None | Target::There(_) => Err(no_route(session)),
            Target::Ambiguous(n) => Err(ambiguous(n, session)),
        }
    }

    /// The one target of a command for `session`: this relay's claimants and, when
    /// `everywhere`, the other relays' ones the directory counts.
    fn target(&self, session: &str, everywhere: bool) -> Target<'_> {
        let mut targets = self.conns.values().filter(|c| {
            c.party.as_ref().is_some_and(|p| p.role.emits()) && c.claimed.contains(session)
        });
        // the first two owners decide: none, exactly one, or ambiguous (counted only
        // then, so routing a command allocates nothing)
        let (first, second) = (targets.next(), targets.next());
        let elsewhere = if everywhere {
            self.directory.elsewhere(session)
        } else {
            Elsewhere::default()
        };
        match (first, second, elsewhere) {
            (None, _, Elsewhere { claims: 0, .. }) => Target::None,
            (Some(target), None, Elsewhere { claims: 0, .. }) => Target::Here(target),
            (
                None,
                _,
                Elsewhere {
                    claims: 1,
                    relay: Some(relay),
                },
            ) => Target::There(relay),
            (first, second, elsewhere) => {
                let here = match (first, second) {
                    (Some(_), Some(_)) => 2 + targets.count(),
                    (Some(_), None) => 1,
                    _ => 0,
                };
                Target::Ambiguous(here + elsewhere.claims)
            }
        }
    }

    /// The live emitter claims (AEP-0003 §4.1 rule 3): each claimant's declarations and
    /// the sessions it claimed, in claim order.
    pub(crate) fn claims(&self) -> Claims {
        self.conns
            .values()
            .filter_map(|c| {
                let party = c.party.as_ref().filter(|p| p.role.emits())?;
                Some((party.clone(), c.sessions.clone()))
            })
            .collect()
    }

    /// The `/connections` entries of the connections that said `hello`.
    pub(crate) fn describe(&self) -> Vec<Value> {
        self.conns
            .values()
            .filter_map(|c| {
                let party = c.party.as_ref()?;
                let capabilities = party.hello.capabilities.as_ref();
                let control = capabilities.and_then(|c| c.control.as_ref());
                Some(json!({
                    "role": party.role,
                    "identity": party.hello.identity,
                    "accepts": control.and_then(|c| c.accepts.as_ref()),
                    "sessions": c.sessions.iter().map(|s| &**s).collect::<Vec<&str>>(),
                    "subscriptions": c.subs.len(),
                }))
            })
            .collect()
    }

    /// Ends every connection's queue as `how` says.
    pub(crate) fn end_all(&self, how: End) {
        for conn in self.conns.values() {
            conn.outbox.end(how);
        }
    }
}

/// Hands `command` to `target`, unless its declaration refuses the type: refused on
/// the target's behalf only where its declaration is known (AEP-0004 §4.2); an
/// undeclared target decides for itself.
fn deliver(target: &Conn, command_type: &str, command: &Incoming<'_>) -> Result<(), Refusal> {
    let acceptance = target
        .party
        .as_ref()
        .map_or(Acceptance::Undeclared, |p| p.acceptance(command_type));
    if acceptance == Acceptance::Refused {
        return Err(Refusal {
            code: ErrorCode::Unsupported,
            detail: format!("target does not accept {command_type}"),
        });
    }
    // forwarded as received, byte for byte (AEP-0004 §4.4)
    target.outbox.push_frame(command.encoded.json());
    Ok(())
}

/// The `ambiguous` refusal of a command for `session` that `n` live claims share
/// (AEP-0004 §4.5).
fn ambiguous(n: usize, session: &str) -> Refusal {
    Refusal {
        code: ErrorCode::Ambiguous,
        detail: format!("{n} connected emitters claim session {session}"),
    }
}

/// The `roster` reply to request `id` (AEP-0003 §4.1): one entry per live (connection,
/// session) claim, declarations relayed verbatim (rule 4), this relay's `claims` first,
/// then the other relays' entries (`elsewhere`, a cluster's; see `nats::control` for
/// how that reads rule 3). Never built past `limit` bytes: a reply no queue could take
/// is refused rather than built.
pub(crate) fn roster_reply(
    id: &str,
    claims: &Claims,
    elsewhere: &[Arc<[RosterEntry]>],
    limit: usize,
) -> Result<String, RosterTooLarge> {
    let mut size = json_len(&Frame::Roster(RosterReply::new(id, Vec::new())));
    let mut entries = Vec::new();
    let there = elsewhere.iter().flat_map(|relay| relay.iter().cloned());
    for entry in entries_of(claims).chain(there) {
        // the entry and its separating comma
        size += json_len(&entry) + usize::from(!entries.is_empty());
        if size > limit {
            return Err(RosterTooLarge { at_least: size });
        }
        entries.push(entry);
    }
    Ok(Frame::Roster(RosterReply::new(id, entries)).to_json())
}

/// The roster entries of `claims`, one per (connection, session) claim, in order.
pub(crate) fn entries_of(claims: &Claims) -> impl Iterator<Item = RosterEntry> + '_ {
    claims.iter().flat_map(|(party, sessions)| {
        sessions
            .iter()
            .map(|session| RosterEntry::claimed(&**session, &party.hello))
    })
}

/// The length of `value` as compact JSON, counted without writing it anywhere.
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // counting cannot fail, and the protocol types always serialize
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use aep_core::frame::{Capabilities, ControlCapability, Identity};

    fn party(agent: &str, emits: usize) -> Arc<Party> {
        let mut caps = Capabilities::default();
        caps.control = Some(ControlCapability::accepting(["control.pause"]));
        caps.emits = Some((0..emits).map(|i| format!("category-{i}")).collect());
        let hello = Hello::new(Role::Emitter)
            .with_identity(Identity::new(agent))
            .with_capabilities(caps);
        Arc::new(Party::new(Role::Emitter, hello))
    }

    /// A roster is the core frame, its size counted exactly: a reply that fits the limit
    /// to the byte is built, one byte less refuses it.
    #[test]
    fn a_roster_is_built_up_to_its_limit_and_no_further() {
        let claims: Claims = vec![
            (party("a", 2), vec![Arc::from("s1"), Arc::from("s\"2")]),
            (party("b", 0), vec![Arc::from("s3")]),
        ];
        let reply = roster_reply("r-1", &claims, &[], usize::MAX).unwrap();
        let parsed: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(parsed["type"], "roster");
        assert_eq!(parsed["entries"].as_array().unwrap().len(), 3);
        assert_eq!(parsed["entries"][1]["session"], "s\"2");
        assert_eq!(
            parsed["entries"][0]["control"]["accepts"][0],
            "control.pause"
        );
        assert_eq!(
            roster_reply("r-1", &claims, &[], reply.len()).unwrap(),
            reply
        );
        let too_large = roster_reply("r-1", &claims, &[], reply.len() - 1).unwrap_err();
        assert_eq!(too_large.at_least, reply.len());
        let empty = roster_reply("r-2", &Vec::new(), &[], usize::MAX).unwrap();
        assert_eq!(empty, r#"{"type":"roster","id":"r-2","entries":[]}"#);
    }
}

#[cfg(test)]
mod directory_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use aep_core::frame::{Hello, Role};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::line::parse_line;
    use crate::outbox::{Binding, Bounds, Drain, Piece};

    /// A directory that says what it is told of the other relays, and counts changes.
    #[derive(Debug, Default)]
    struct Told {
        elsewhere: Mutex<Elsewhere>,
        changes: AtomicUsize,
    }

    impl Directory for Told {
        fn elsewhere(&self, _session: &str) -> Elsewhere {
            self.elsewhere.lock().unwrap().clone()
        }
        fn changed(&self) {
            self.changes.fetch_add(1, Ordering::SeqCst);
        }
        fn entries(&self) -> Vec<Arc<[RosterEntry]>> {
            Vec::new()
        }
        fn forward(
            &self,
            _: RelayId,
            _: String,
            _: Bytes,
        ) -> BoxFuture<'static, Result<(), Refusal>> {
            unreachable!("routing only decides")
        }
        fn leave(&self) -> BoxFuture<'static, ()> {
            Box::pin(std::future::ready(()))
        }
        fn serve(self: Arc<Self>, _: Weak<crate::hub::Hub>) -> Option<BoxFuture<'static, ()>> {
            None
        }
    }

    fn connect(conns: &mut Connections, id: u64, role: Role) -> Drain {
        let (outbox, rx) = Outbox::new(Bounds::UNBOUNDED, CancellationToken::new());
        conns.connect(id, outbox.clone());
        conns.hello(id, Arc::new(Party::new(role.clone(), Hello::new(role))));
        Drain::new(rx, outbox, Binding::Ws, std::time::Duration::from_secs(60))
    }

    fn next_frame(drain: &mut Drain) -> Option<Value> {
        match drain.try_next() {
            Some(Piece::Data(bytes)) => Some(serde_json::from_slice(&bytes).unwrap()),
            _ => None,
        }
    }

    fn command(session: &str) -> crate::line::Incoming<'static> {
        let line = serde_json::to_vec(&aep_test_support::events::json_command(
            "control.pause",
            session,
        ))
        .unwrap();
        parse_line(&line, true).unwrap()
    }

    /// Claims here and elsewhere are counted together: one in all is delivered here or
    /// forwarded to the relay that holds it, two are ambiguous wherever they are, none
    /// is no-route; a relay asked to route a forwarded command counts its own alone.
    #[test]
    fn a_commands_target_is_decided_over_this_relays_claims_and_the_others() {
        let told = Arc::new(Told::default());
        let mut conns = Connections::new(told.clone());
        let mut target = connect(&mut conns, 1, Role::Emitter);
        let mut sender = connect(&mut conns, 2, Role::Consumer);
        conns.claim(1, "here");
        conns.claim(1, "here");
        assert_eq!(told.changes.load(Ordering::SeqCst), 1, "a new claim, once");
        let route =
            |conns: &Connections, session: &str| conns.route(&command(session), Some(2), true);

        assert!(matches!(route(&conns, "here"), Routed::Here));
        assert_eq!(next_frame(&mut target).unwrap()["type"], "control.pause");
        assert!(matches!(route(&conns, "nowhere"), Routed::Refused));
        assert_eq!(next_frame(&mut sender).unwrap()["code"], "no-route");

        *told.elsewhere.lock().unwrap() = Elsewhere {
            claims: 1,
            relay: Some(Arc::from("C")),
        };
        match route(&conns, "there") {
            Routed::There(forward) => {
                assert_eq!(&*forward.relay, "C");
                assert_eq!(forward.session, "there");
                assert!(forward.sender.is_some());
            }
            other => panic!("{other:?}"),
        }
        assert!(next_frame(&mut target).is_none() && next_frame(&mut sender).is_none());
        assert!(matches!(route(&conns, "here"), Routed::Refused));
        let refusal = next_frame(&mut sender).unwrap();
        assert_eq!(refusal["code"], "ambiguous");
        assert_eq!(refusal["detail"], "2 connected emitters claim session here");
        // forwarded here: this relay's claims decide, the others' were counted there
        assert_eq!(conns.route_forwarded(&command("here")), Ok(()));
        assert_eq!(next_frame(&mut target).unwrap()["type"], "control.pause");
        assert_eq!(
            conns.route_forwarded(&command("there")).unwrap_err().code,
            ErrorCode::NoRoute
        );

        *told.elsewhere.lock().unwrap() = Elsewhere {
            claims: 2,
            relay: Some(Arc::from("C")),
        };
        assert!(matches!(route(&conns, "there"), Routed::Refused));
        assert_eq!(
            next_frame(&mut sender).unwrap()["detail"],
            "2 connected emitters claim session there"
        );

        // only a command is routed: another event sent as one (a lying or broken
        // peer on the control subjects) reaches no target
        let event = aep_test_support::events::json_event("session.ended", "here", 9);
        let event = parse_line(&serde_json::to_vec(&event).unwrap(), true).unwrap();
        let refusal = conns.route_forwarded(&event).unwrap_err();
        assert_eq!(refusal.code.as_str(), "invalid-event", "{refusal:?}");
        assert!(next_frame(&mut target).is_none(), "nothing delivered");

        conns.disconnect(2);
        assert_eq!(
            told.changes.load(Ordering::SeqCst),
            1,
            "a sender's going changes no claim"
        );
        conns.disconnect(1);
        assert_eq!(told.changes.load(Ordering::SeqCst), 2, "a claimant's does");
    }
}
