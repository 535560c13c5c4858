//! Who is connected and what each connection claimed, and where a command goes
//! (AEP-0004 §4): the WebSocket connections, their `hello` declarations, the sessions
//! they claimed by emitting, the `roster` of those claims (AEP-0003 §4.1), and the one
//! target of each command.
//!
//! Every protocol fact is read through `aep-core`: the declared role (`Role`), whether
//! a target accepts a command (`Acceptance`), a roster entry (`RosterEntry::claimed`).
//! The hub holds [`Connections`] under its lock.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::sync::Arc;

use aep_core::frame::{Acceptance, ErrorCode, Frame, Hello, Role, RosterEntry, RosterReply};
use bytes::Bytes;
use serde_json::{json, Value};

use crate::line::Incoming;
use crate::outbox::{End, Outbox};
use crate::proto;

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

/// The relay's WebSocket connections.
#[derive(Debug, Default)]
pub(crate) struct Connections {
    conns: BTreeMap<u64, Conn>,
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
        self.conns
            .remove(&id)
            .map(|c| c.subs.into_values().collect())
            .unwrap_or_default()
    }

    /// Connection `id` emitted an event of `session`, which claims the session for it
    /// (AEP-0001 §5.2, AEP-0004 §4): its commands are routed there from now on.
    pub(crate) fn claim(&mut self, id: u64, session: &str) {
        if let Some(conn) = self.conns.get_mut(&id) {
            if !conn.claimed.contains(session) {
                let claim: Arc<str> = Arc::from(session);
                conn.claimed.insert(claim.clone());
                conn.sessions.push(claim);
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

    /// Routes a command to exactly one target (AEP-0004 §4); `true` when it is then fanned
    /// out for audit. Refusals answer the sender with a cause-correlated `error` frame.
    /// `authenticated`: whether the binding carries a token at all (§4.1).
    pub(crate) fn route(
        &self,
        command: &Incoming<'_>,
        from_conn: Option<u64>,
        authenticated: bool,
    ) -> bool {
        // a command is never buffered, so its parsed form or its reading is always kept
        let Some((command_type, session, command_id)) = command.routing() else {
            debug_assert!(false, "a command read without its attributes");
            return false;
        };
        let session = session.unwrap_or_default();
        let refuse = |code: ErrorCode, detail: String| {
            tracing::debug!(code = code.as_str(), session, "command refused");
            if let Some(conn) = from_conn.and_then(|c| self.conns.get(&c)) {
                let frame = proto::error_frame(code, None, Some(command_id), Some(&detail));
                conn.outbox.push_frame(Bytes::from(frame));
            }
        };
        if !authenticated {
            refuse(
                ErrorCode::Unauthorized,
                "control requires an authenticated binding (AEP-0004 §4.1); this relay runs without a token".into(),
            );
            return false;
        }
        let mut targets = self.conns.values().filter(|c| {
            c.party.as_ref().is_some_and(|p| p.role.emits()) && c.claimed.contains(session)
        });
        // the first two owners decide: none, exactly one, or ambiguous (counted only
        // then, so routing a command allocates nothing)
        match (targets.next(), targets.next()) {
            (None, _) => {
                refuse(
                    ErrorCode::NoRoute,
                    format!("no connected emitter owns session {session}"),
                );
                false
            }
            (Some(target), None) => {
                let acceptance = target
                    .party
                    .as_ref()
                    .map_or(Acceptance::Undeclared, |p| p.acceptance(command_type));
                // refused on the target's behalf only where its declaration is known
                // (AEP-0004 §4.2); an undeclared target decides for itself
                if acceptance == Acceptance::Refused {
                    refuse(
                        ErrorCode::Unsupported,
                        format!("target does not accept {command_type}"),
                    );
                } else {
                    // forwarded as received, byte for byte (AEP-0004 §4.4)
                    target.outbox.push_frame(command.encoded.json());
                }
                true
            }
            (Some(_), Some(_)) => {
                let n = 2 + targets.count();
                refuse(
                    ErrorCode::Ambiguous,
                    format!("{n} connected emitters claim session {session}"),
                );
                false
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

/// The `roster` reply to request `id` (AEP-0003 §4.1): one entry per live (connection,
/// session) claim, declarations relayed verbatim (rule 4). Never built past `limit`
/// bytes: a reply no queue could take is refused rather than built.
pub(crate) fn roster_reply(
    id: &str,
    claims: &Claims,
    limit: usize,
) -> Result<String, RosterTooLarge> {
    let mut size = json_len(&Frame::Roster(RosterReply::new(id, Vec::new())));
    let mut entries = Vec::new();
    for (party, sessions) in claims {
        for session in sessions {
            let entry = RosterEntry::claimed(&**session, &party.hello);
            // the entry and its separating comma
            size += json_len(&entry) + usize::from(!entries.is_empty());
            if size > limit {
                return Err(RosterTooLarge { at_least: size });
            }
            entries.push(entry);
        }
    }
    Ok(Frame::Roster(RosterReply::new(id, entries)).to_json())
}

/// The length of `value` as compact JSON, counted without writing it anywhere.
fn json_len(value: &impl serde::Serialize) -> usize {
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
