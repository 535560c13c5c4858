//! Who is connected and what each connection claimed, and where a command goes
//! (AEP-0004 §4): the WebSocket connections, their `hello` declarations, the sessions
//! they claimed by emitting, the `roster` of those claims (AEP-0003 §4.1), and the one
//! target of each command.
//!
//! Every protocol fact is read through `aep-core`: the declared role (`Role`), whether
//! a target accepts a command (`Acceptance`), a roster entry (`RosterEntry::claimed`).
//! The hub holds [`Connections`] under its lock: a command's target is decided there
//! ([`Connections::decide`]) and the decision carried out once the lock is free
//! ([`Decision::carry_out`]).
//!
//! Where the claims of *other* relays are is the `directory`'s: a single relay counts
//! none there, a relay of a cluster its control plane's copy of the others'.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use aep_core::frame::{Acceptance, ErrorCode, Frame, Hello, Role, RosterEntry, RosterReply};
use serde_json::{json, Value};

use crate::directory::{no_route, Alone, Directory, Elsewhere, Forward, Refusal, RelayId, Routed};
use crate::encoded::Binding;
use crate::line::Incoming;
use crate::outbox::{End, Outbox};
use crate::proto::{json_len, Disposition};

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

/// What routing decided for one command under the hub's lock, carried out by
/// [`Decision::carry_out`] once the lock is free: nothing is queued toward a reader
/// under the lock.
#[derive(Debug)]
pub(crate) struct Decision {
    verdict: Verdict,
    /// The sender's queue (a WebSocket connection of this relay), told of a refusal.
    sender: Option<Arc<Outbox>>,
}

#[derive(Debug)]
enum Verdict {
    /// Refused toward the sender: not fanned out.
    Refused(Refusal),
    /// Its one target here, or refused on that target's behalf (its declaration does
    /// not accept the type): fanned out for audit either way.
    Here(Result<Arc<Outbox>, Refusal>),
    /// Its one target is on `relay`.
    There(RelayId),
}

impl Decision {
    /// Carries the decision on `command` out: the command handed to its target here as
    /// received, byte for byte (AEP-0004 §4.4), or a refusal told to the sender with the
    /// command's `id` as `cause`, or the command made ready to forward.
    pub(crate) fn carry_out(self, command: &Incoming<'_>) -> Routed {
        let (_, session, command_id) = command.routing().unwrap_or_default();
        let tell = |refusal: &Refusal| {
            if let Some(sender) = &self.sender {
                sender.push_frame(refusal.frame(command_id));
            }
        };
        match self.verdict {
            Verdict::Refused(refusal) => {
                tell(&refusal);
                Routed::Refused(refusal)
            }
            Verdict::Here(Ok(target)) => {
                // the command as received, byte for byte (AEP-0004 §4.4): no filter,
                // no ceiling, the one frame a WebSocket target takes
                target.push_frame(command.encoded.frame(Binding::Ws));
                Routed::Here(Ok(()))
            }
            Verdict::Here(Err(refusal)) => {
                tell(&refusal);
                Routed::Here(Err(refusal))
            }
            Verdict::There(relay) => Routed::There(Forward {
                relay,
                session: session.unwrap_or_default().to_owned(),
                command_id: command_id.to_owned(),
                command: command.encoded.json(),
                sender: self.sender,
            }),
        }
    }
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

    /// Decides where a command goes (AEP-0004 §4): its one target here or, through the
    /// directory, on another relay of the cluster, or why it is refused. Nothing is
    /// queued here: [`Decision::carry_out`] does that once the hub's lock is free.
    /// `from_conn`: the connection that sent it (told of a refusal); `authenticated`:
    /// whether the binding carries a token at all (§4.1); `everywhere`: the other
    /// relays' claims count too (not for a command another relay forwarded, which
    /// counted them already).
    pub(crate) fn decide(
        &self,
        command: &Incoming<'_>,
        from_conn: Option<u64>,
        authenticated: bool,
        everywhere: bool,
    ) -> Decision {
        let sender = from_conn.and_then(|c| self.conns.get(&c));
        let decision = |verdict| Decision {
            verdict,
            sender: sender.map(|c| c.outbox.clone()),
        };
        // only a command is routed (AEP-0004 §2): anything else a peer of the cluster
        // sends on the control subjects is refused, never handed to a target; a
        // command is never buffered, so its parsed form or its reading is kept
        let routing = command
            .routing()
            .filter(|_| command.disposition == Disposition::Command);
        let Some((command_type, session, _)) = routing else {
            return decision(Verdict::Refused(Refusal {
                code: ErrorCode::from("invalid-event"),
                detail: "an event that is not a command, routed as one (AEP-0004 §2)".into(),
            }));
        };
        if !authenticated {
            return decision(Verdict::Refused(Refusal {
                code: ErrorCode::Unauthorized,
                detail: "control requires an authenticated binding (AEP-0004 §4.1); this relay runs without a token".into(),
            }));
        }
        let session = session.unwrap_or_default();
        decision(match self.target(session, everywhere) {
            Target::None => Verdict::Refused(no_route(session)),
            Target::Here(target) => Verdict::Here(accepting(target, command_type)),
            Target::There(relay) => Verdict::There(relay),
            Target::Ambiguous(n) => Verdict::Refused(ambiguous(n, session)),
        })
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

/// `target`'s queue, unless its declaration refuses `command_type`: refused on the
/// target's behalf only where its declaration is known (AEP-0004 §4.2); an undeclared
/// target decides for itself.
fn accepting(target: &Conn, command_type: &str) -> Result<Arc<Outbox>, Refusal> {
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
    Ok(target.outbox.clone())
}

/// The `ambiguous` refusal of a command for `session` that `n` live claims share
/// (AEP-0004 §4.5).
fn ambiguous(n: usize, session: &str) -> Refusal {
    Refusal {
        code: ErrorCode::Ambiguous,
        detail: format!("{n} connected emitters claim session {session}"),
    }
}

/// A `roster` reply (AEP-0003 §4.1) being built: one entry per live (connection,
/// session) claim, declarations relayed verbatim (rule 4), this relay's claims first,
/// then the other relays' (a cluster's; see `nats::control` for how that reads rule 3).
/// Its size is counted as each entry comes, and nothing is kept past `limit` bytes: a
/// reply no queue could take is refused rather than built.
#[derive(Debug)]
pub(crate) struct Roster {
    id: String,
    limit: usize,
    size: usize,
    entries: Vec<RosterEntry>,
}

impl Roster {
    /// The reply to request `id`, at most `limit` bytes.
    pub(crate) fn new(id: &str, limit: usize) -> Roster {
        Roster {
            id: id.to_owned(),
            limit,
            size: json_len(&Frame::Roster(RosterReply::new(id, Vec::new()))),
            entries: Vec::new(),
        }
    }

    /// Adds one entry; `false` once the reply has passed its limit (nothing more is
    /// kept then).
    pub(crate) fn push(&mut self, entry: RosterEntry) -> bool {
        if self.size > self.limit {
            return false;
        }
        // the entry and its separating comma
        self.size += json_len(&entry) + usize::from(!self.entries.is_empty());
        if self.size > self.limit {
            self.entries = Vec::new();
            return false;
        }
        self.entries.push(entry);
        true
    }

    /// The reply's JSON, or how far past its limit it went.
    pub(crate) fn reply(self) -> Result<String, RosterTooLarge> {
        if self.size > self.limit {
            return Err(RosterTooLarge {
                at_least: self.size,
            });
        }
        Ok(Frame::Roster(RosterReply::new(&self.id, self.entries)).to_json())
    }
}

/// The roster entries of `claims`, one per (connection, session) claim, in order.
pub(crate) fn entries_of(claims: &Claims) -> impl Iterator<Item = RosterEntry> + '_ {
    claims.iter().flat_map(|(party, sessions)| {
        sessions
            .iter()
            .map(|session| RosterEntry::claimed(&**session, &party.hello))
    })
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
        let roster_reply = |id: &str, claims: &Claims, limit: usize| {
            let mut roster = Roster::new(id, limit);
            entries_of(claims).all(|entry| roster.push(entry));
            roster.reply()
        };
        let reply = roster_reply("r-1", &claims, usize::MAX).unwrap();
        let parsed: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(parsed["type"], "roster");
        assert_eq!(parsed["entries"].as_array().unwrap().len(), 3);
        assert_eq!(parsed["entries"][1]["session"], "s\"2");
        assert_eq!(
            parsed["entries"][0]["control"]["accepts"][0],
            "control.pause"
        );
        assert_eq!(roster_reply("r-1", &claims, reply.len()).unwrap(), reply);
        let too_large = roster_reply("r-1", &claims, reply.len() - 1).unwrap_err();
        assert_eq!(too_large.at_least, reply.len());
        let empty = roster_reply("r-2", &Vec::new(), usize::MAX).unwrap();
        assert_eq!(empty, r#"{"type":"roster","id":"r-2","entries":[]}"#);
    }
}

#[cfg(test)]
mod decision_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use aep_core::frame::{Hello, Role};
    use tokio_util::sync::CancellationToken;

    use bytes::Bytes;
    use futures::future::BoxFuture;

    use super::*;
    use crate::directory::Claimants;
    use crate::line::parse_line;
    use crate::outbox::{Bounds, Drain, Piece};

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
        fn serve(
            self: Arc<Self>,
            _: std::sync::Weak<dyn Claimants>,
        ) -> Option<BoxFuture<'static, ()>> {
            None
        }
    }

    fn connect(conns: &mut Connections, id: u64, role: Role) -> Drain {
        let (outbox, rx) = Outbox::new(Bounds::UNBOUNDED, CancellationToken::new());
        conns.connect(id, outbox.clone());
        conns.hello(id, Arc::new(Party::new(role.clone(), Hello::new(role))));
        Drain::new(rx, outbox, std::time::Duration::from_secs(60))
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
        let route = |conns: &Connections, session: &str| {
            let command = command(session);
            conns
                .decide(&command, Some(2), true, true)
                .carry_out(&command)
        };
        // as a relay that forwarded it is answered
        let forwarded = |conns: &Connections, command: &Incoming<'_>| match conns
            .decide(command, None, true, false)
            .carry_out(command)
        {
            Routed::Here(answer) => answer,
            Routed::Refused(refusal) => Err(refusal),
            Routed::There(forward) => panic!("{forward:?}"),
        };

        assert!(matches!(route(&conns, "here"), Routed::Here(Ok(()))));
        assert_eq!(next_frame(&mut target).unwrap()["type"], "control.pause");
        assert!(matches!(route(&conns, "nowhere"), Routed::Refused(_)));
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
        assert!(matches!(route(&conns, "here"), Routed::Refused(_)));
        let refusal = next_frame(&mut sender).unwrap();
        assert_eq!(refusal["code"], "ambiguous");
        assert_eq!(refusal["detail"], "2 connected emitters claim session here");
        // forwarded here: this relay's claims decide, the others' were counted there
        assert_eq!(forwarded(&conns, &command("here")), Ok(()));
        assert_eq!(next_frame(&mut target).unwrap()["type"], "control.pause");
        assert_eq!(
            forwarded(&conns, &command("there")).unwrap_err().code,
            ErrorCode::NoRoute
        );

        *told.elsewhere.lock().unwrap() = Elsewhere {
            claims: 2,
            relay: Some(Arc::from("C")),
        };
        assert!(matches!(route(&conns, "there"), Routed::Refused(_)));
        assert_eq!(
            next_frame(&mut sender).unwrap()["detail"],
            "2 connected emitters claim session there"
        );

        // only a command is routed: another event sent as one (a lying or broken
        // peer on the control subjects) reaches no target
        let event = aep_test_support::events::json_event("session.ended", "here", 9);
        let event = parse_line(&serde_json::to_vec(&event).unwrap(), true).unwrap();
        let refusal = forwarded(&conns, &event).unwrap_err();
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
