//! Admission: what happens to each accepted event of a batch (AEP-0003 §3.2, §5;
//! AEP-0004 §4). A sequenced session event claims its session for the connection that
//! sent it and goes to the replay store; a command is left to routing, which the hub
//! runs once the lock is free; and each is fanned out by the ingest that brought it, or
//! not.
//!
//! The hub runs it under its lock, so claims and the order of admissions are the ones
//! every reader sees.

use smallvec::SmallVec;

use crate::encoded::Encoded;
use crate::line::Incoming;
use crate::proto::Disposition;
use crate::routing::Connections;

/// What an ingest does with its batch, decided event by event in order.
#[derive(Debug, Default)]
pub(crate) struct Plan<'a> {
    /// The sequenced session events, in order, for the replay store.
    pub(crate) stored: SmallVec<[&'a Encoded; 16]>,
    /// Per event of the batch, whether this ingest fans it out; a command's, until
    /// routing refuses it.
    pub(crate) fan_out: SmallVec<[bool; 16]>,
    /// Whether the batch holds a command to route.
    pub(crate) commands: bool,
}

/// Decides a batch sent on connection `from_conn` (none: an HTTP ingest): records its
/// claims, and says what is stored and what fanned out. `fed`: the store's feed fans
/// out what it stores (a backend several relays share), so this ingest fans out only
/// what is not stored.
pub(crate) fn plan<'a, 't: 'a>(
    conns: &mut Connections,
    batch: impl IntoIterator<Item = &'a Incoming<'t>>,
    from_conn: Option<u64>,
    fed: bool,
) -> Plan<'a> {
    let mut plan = Plan::default();
    for incoming in batch {
        let go = match incoming.disposition {
            Disposition::Command => {
                plan.commands = true;
                true
            }
            Disposition::Live => true,
            Disposition::Buffered => {
                // the session is read only for a connection's claim: on a frame it costs
                // a UTF-8 check, and an HTTP ingest claims nothing
                if let Some(conn) = from_conn {
                    if let Some(session) = incoming.session() {
                        conns.claim(conn, session);
                    }
                }
                plan.stored.push(&incoming.encoded);
                // live fan-out forwards even a duplicate (AEP-0003 §5): the relay is not
                // a terminal consumer. A shared store's feed delivers it instead.
                !fed
            }
        };
        plan.fan_out.push(go);
    }
    plan
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use aep_core::frame::{Hello, Role};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::line::parse_line;
    use crate::outbox::{Bounds, Outbox};
    use crate::routing::Party;

    fn line(ty: &str, scope: &str) -> Vec<u8> {
        format!(r#"{{"aep":"0.1","id":"i-{ty}","type":"{ty}","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a"{scope},"data":{{}}}}"#).into_bytes()
    }

    /// A batch of a sequenced event, an agent-scoped one and a command: the first is
    /// stored and claims its session, the second only fanned out, the command left to
    /// routing; with a feed, the stored event is left to it.
    #[test]
    fn each_event_is_stored_routed_or_fanned_out_as_its_disposition_says() {
        let batch = [
            parse_line(&line("progress.status", r#","session":"s1","seq":1"#), true).unwrap(),
            parse_line(&line("agent.heartbeat", ""), true).unwrap(),
            parse_line(&line("control.pause", r#","session":"s1""#), true).unwrap(),
        ];
        for fed in [false, true] {
            let mut conns = Connections::default();
            let (outbox, _rx) = Outbox::new(Bounds::UNBOUNDED, CancellationToken::new());
            conns.connect(7, outbox);
            conns.hello(
                7,
                Arc::new(Party::new(Role::Emitter, Hello::new(Role::Emitter))),
            );
            let plan = plan(&mut conns, &batch, Some(7), fed);
            assert_eq!(plan.stored.len(), 1);
            assert!(std::ptr::eq(plan.stored[0], &batch[0].encoded));
            assert_eq!(plan.fan_out.as_slice(), [!fed, true, true]);
            assert!(plan.commands);
            let claims = conns.claims();
            assert_eq!(claims.len(), 1);
            assert_eq!(claims[0].1, [Arc::<str>::from("s1")]);
        }
    }
}
