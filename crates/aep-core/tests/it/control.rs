//! The control state machines (AEP-0004) driven against each other through a simulated
//! relay in simulated time: every exchange is deterministic, nothing sleeps.
//!
//! The harness writes every message as wire text and reads it back with
//! `frame::decode`, as a WebSocket peer would, so byte identity is checked on the wire.

// Test helpers outside #[test] fns panic on purpose: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use aep_core::control::{
    CommandDelivery, CommandKey, ControlSender, ControlTarget, Decision, NackOrigin, NackReason,
    RejectReason, SendError, SendPolicy, Settled, TargetConfig, TargetError, TargetOutput,
    DEFAULT_RETRIES,
};
use aep_core::frame::{self, CommandRefusal, ErrorCode, ErrorFrame, Frame, Message};
use aep_core::Event;
use common::sender_with_pending;
use proptest::prelude::*;
use serde_json::json;

const SESSION: &str = "s_8f2c";
const WINDOW: Duration = Duration::from_secs(10);

type Policy = Box<dyn FnMut(&Event) -> Option<Decision>>;

/// Sender <-> relay <-> target, with fault injection on the relay.
struct Sim {
    t0: Instant,
    now: Instant,
    sender: ControlSender,
    target: ControlTarget,
    /// The target's application: a decision now, or `None` to decide later.
    policy: Policy,
    /// Relay state.
    target_connected: bool,
    relay_knows_accepts: Option<Vec<String>>,
    drop_commands: usize,
    drop_acks: usize,
    duplicate_commands: bool,
    /// Per-message fates when set (true = drop / duplicate), consumed in order; the
    /// counters above apply once a schedule runs out.
    command_fates: VecDeque<(bool, bool)>,
    ack_fates: VecDeque<bool>,
    /// In flight, as wire text.
    to_target: VecDeque<String>,
    to_sender: VecDeque<String>,
    /// Observations.
    sent_commands: Vec<String>,
    acks_on_wire: Vec<String>,
    deferred: Vec<CommandKey>,
    executed: Vec<String>,
    deliveries: Vec<CommandDelivery>,
    settled: Vec<(Duration, Settled)>,
    /// The target session's emitter.
    seq: u64,
}

impl Sim {
    fn new(accepts: &[&str]) -> Sim {
        Sim::with_target(ControlTarget::new(accepts.iter().copied()))
    }

    fn with_target(target: ControlTarget) -> Sim {
        let t0 = Instant::now();
        Sim {
            t0,
            now: t0,
            sender: ControlSender::new("console", "ops-host"),
            target,
            policy: Box::new(|_| Some(Decision::Accept)),
            target_connected: true,
            relay_knows_accepts: None,
            drop_commands: 0,
            drop_acks: 0,
            duplicate_commands: false,
            command_fates: VecDeque::new(),
            ack_fates: VecDeque::new(),
            to_target: VecDeque::new(),
            to_sender: VecDeque::new(),
            sent_commands: Vec::new(),
            acks_on_wire: Vec::new(),
            deferred: Vec::new(),
            executed: Vec::new(),
            deliveries: Vec::new(),
            settled: Vec::new(),
            seq: 0,
        }
    }

    fn policy(mut self, p: impl FnMut(&Event) -> Option<Decision> + 'static) -> Sim {
        self.policy = Box::new(p);
        self
    }

    /// Sends a command of `ty` with id `id` at the current time.
    fn send(&mut self, ty: &str, id: &str) {
        let cmd = self
            .sender
            .command(ty, SESSION)
            .build(id, "2026-07-03T10:00:00.000Z");
        self.sender.send(self.now, cmd).unwrap();
    }

    fn elapsed(&self) -> Duration {
        self.now - self.t0
    }

    /// Moves everything that can move at the current time; returns whether anything did.
    fn step(&mut self) -> bool {
        let mut moved = false;
        // Sender -> relay.
        while let Some(cmd) = self.sender.poll_transmit() {
            moved = true;
            let text = cmd.to_json();
            self.sent_commands.push(text.clone());
            self.relay_route(text);
        }
        // Relay -> target.
        while let Some(text) = self.to_target.pop_front() {
            moved = true;
            let Ok(Message::Event(cmd)) = frame::decode(&text) else {
                panic!("relay forwarded a non-event: {text}")
            };
            let d = self.target.handle_command(self.now, cmd).unwrap();
            self.deliveries.push(d);
        }
        // Target application and emitter.
        while let Some(out) = self.target.poll_output() {
            moved = true;
            match out {
                TargetOutput::Decide(incoming) => match (self.policy)(incoming.command()) {
                    Some(decision) => {
                        if decision == Decision::Accept {
                            self.executed.push(incoming.command().id().to_owned());
                        }
                        self.target.decide(incoming.key(), decision).unwrap();
                    }
                    None => self.deferred.push(incoming.key().clone()),
                },
                TargetOutput::EmitAck(ack) => {
                    self.seq += 1;
                    let event = Event::new(
                        format!("ack-{}", self.seq),
                        ack.ack_type(),
                        "2026-07-03T10:00:01.000Z",
                        format!("aep://agent-host/agent/claude-code/session/{SESSION}"),
                        "claude-code",
                    )
                    .with_session(ack.session().unwrap_or(SESSION))
                    .with_seq(self.seq)
                    .with_cause(ack.cause())
                    .with_data(ack.data());
                    self.target.record(ack.key(), event.clone()).unwrap();
                    self.relay_ack(event.to_json());
                }
                TargetOutput::Redeliver(event) => self.relay_ack(event.to_json()),
                other => panic!("unexpected target output {other:?}"),
            }
        }
        // Relay -> sender.
        while let Some(text) = self.to_sender.pop_front() {
            moved = true;
            match frame::decode(&text).unwrap() {
                Message::Event(e) => {
                    self.sender.handle_event(&e);
                }
                Message::Frame(f) => {
                    self.sender.handle_frame(&f);
                }
            }
        }
        while let Some(s) = self.sender.poll_settled() {
            moved = true;
            self.settled.push((self.elapsed(), s));
        }
        moved
    }

    /// The reference relay's routing (server.cjs `routeCommand`), reduced to what the
    /// sender can observe.
    fn relay_route(&mut self, text: String) {
        let Ok(Message::Event(cmd)) = frame::decode(&text) else {
            panic!("sender wrote a non-event: {text}")
        };
        let refuse = |code: CommandRefusal, detail: &str| {
            Frame::from(ErrorFrame::command_refusal(cmd.id(), code).with_detail(detail)).to_json()
        };
        if !self.target_connected {
            let f = refuse(
                CommandRefusal::NoRoute,
                "no connected emitter owns session s_8f2c",
            );
            self.to_sender.push_back(f);
            return;
        }
        if let Some(accepts) = &self.relay_knows_accepts {
            if !accepts.iter().any(|t| t == cmd.event_type()) {
                let f = refuse(CommandRefusal::Unsupported, "target does not accept it");
                self.to_sender.push_back(f);
                return;
            }
        }
        let (drop, duplicate) = match self.command_fates.pop_front() {
            Some(fate) => fate,
            None if self.drop_commands > 0 => {
                self.drop_commands -= 1;
                (true, false)
            }
            None => (false, self.duplicate_commands),
        };
        if drop {
            return;
        }
        self.to_target.push_back(text.clone());
        if duplicate {
            self.to_target.push_back(text);
        }
    }

    fn relay_ack(&mut self, text: String) {
        self.acks_on_wire.push(text.clone());
        let drop = match self.ack_fates.pop_front() {
            Some(fate) => fate,
            None if self.drop_acks > 0 => {
                self.drop_acks -= 1;
                true
            }
            None => false,
        };
        if drop {
            return;
        }
        self.to_sender.push_back(text);
    }

    /// Runs to quiescence, jumping simulated time to each deadline.
    fn drive(&mut self) {
        for _ in 0..1000 {
            while self.step() {}
            let next = [self.sender.poll_timeout(), self.target.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            let Some(t) = next else { return };
            assert!(t >= self.now, "a deadline in the past");
            self.now = t;
            self.sender.handle_timeout(self.now);
            self.target.handle_timeout(self.now);
        }
        panic!("did not settle");
    }

    fn only_settled(&self) -> &Settled {
        assert_eq!(self.settled.len(), 1, "{:?}", self.settled);
        &self.settled[0].1
    }

    fn nack(&self) -> &aep_core::control::Nack {
        self.only_settled().result.as_ref().unwrap_err()
    }
}

/// Keys join `source` and `id` on the stack up to 128 bytes and on the heap past them;
/// both read back the same, hash the same, and a split in another place is another key.
#[test]
fn command_keys_of_any_length_read_back() {
    let mut seen = std::collections::HashSet::new();
    // 14 bytes of source plus the id: joined lengths 14 to 154, across the boundary
    for id_len in (0..=140).chain([400]) {
        let source = "aep://h/agent/";
        let id = "é".repeat(id_len / 2) + &"i".repeat(id_len % 2);
        let key = CommandKey::new(source, &id);
        assert_eq!((key.source(), key.id()), (source, id.as_str()), "{id_len}");
        assert_eq!(key, CommandKey::new(source, &id));
        assert_eq!(key, key.clone());
        assert!(
            seen.insert(key.clone()),
            "{id_len}: keys of different ids collide"
        );
        assert!(seen.contains(&CommandKey::new(source, &id)), "{id_len}");
        if let Some(first) = id.chars().next() {
            let moved = format!("{source}{first}");
            assert_ne!(
                key,
                CommandKey::new(moved, &id[first.len_utf8()..]),
                "{id_len}"
            );
        }
    }
}

/// Ids past the 30 bytes the sender holds inline (a UUID is 36) are found by the id
/// the command carries: settled by their ack, and refused when sent twice while pending.
#[test]
fn long_command_ids_settle_by_their_ack() {
    for id in [
        "0123456789abcdefghijklmnopqrstu",      // 31 bytes
        "123e4567-e89b-12d3-a456-426614174000", // a UUID
        "c".repeat(300).as_str(),
    ] {
        let t = Instant::now();
        let mut s = sender_with_pending(t, "s1", id);
        assert!(s.is_pending(id));
        assert!(s
            .send(t, s.command("control.pause", "s1").build(id, "t"))
            .is_err());
        let ack = Event::new("a1", "control.accepted", "t", "aep://t/agent/a", "a")
            .with_session("s1")
            .with_seq(1)
            .with_cause(id);
        assert!(s.handle_event(&ack), "{id}");
        assert_eq!(s.poll_settled().unwrap().command_id, id);
        assert!(!s.is_pending(id));
    }
}

/// A `control.pause` (id `c1`) sent through a fresh simulation that accepts it, with
/// `fault` set up first, and driven until it settles.
fn pause_through(fault: impl FnOnce(&mut Sim)) -> Sim {
    let mut sim = Sim::new(&["control.pause"]);
    fault(&mut sim);
    sim.send("control.pause", "c1");
    sim.drive();
    sim
}

#[test]
fn accepted() {
    let sim = pause_through(|_| {});
    let s = sim.only_settled();
    assert_eq!(s.command_id, "c1");
    let ack = s.result.as_ref().unwrap();
    assert_eq!(ack.event_type(), "control.accepted");
    assert_eq!(ack.cause(), Some("c1"));
    assert_eq!(
        ack.seq(),
        Some(1),
        "acks are ordinary sequenced session events"
    );
    assert_eq!(sim.settled[0].0, Duration::ZERO, "settled without waiting");
    assert_eq!(sim.executed, ["c1"]);
    assert_eq!(sim.sent_commands.len(), 1);
    // The command on the wire: no seq, session addressing, the sender's source.
    let cmd: Event = sim.sent_commands[0].parse().unwrap();
    assert_eq!(cmd.seq(), None);
    assert_eq!(cmd.session(), Some(SESSION));
    assert_eq!(cmd.source(), "aep://ops-host/agent/console");
    assert_eq!(cmd.agent(), "console");
    assert_eq!(sim.sender.pending_len(), 0);
    assert_eq!(sim.sender.poll_timeout(), None);
}

#[test]
fn rejected_with_reason_and_detail() {
    let mut sim = Sim::new(&["control.cancel"]).policy(|_| {
        Some(Decision::reject(
            RejectReason::Refused,
            "the agent is mid-commit",
        ))
    });
    sim.send("control.cancel", "c1");
    sim.drive();
    let nack = sim.nack();
    assert_eq!(nack.reason(), NackReason::Refused);
    assert_eq!(nack.detail(), Some("the agent is mid-commit"));
    assert!(!nack.is_synthesized());
    let NackOrigin::Target(ack) = nack.origin() else {
        panic!()
    };
    assert_eq!(
        ack.data(),
        Some(json!({"reason": "refused", "detail": "the agent is mid-commit"}))
    );
    assert!(sim.executed.is_empty());
}

#[test]
fn every_reject_reason_reaches_the_sender() {
    for reason in RejectReason::ALL {
        let mut sim = Sim::new(&["control.pause"]).policy(move |_| {
            Some(Decision::Reject {
                reason,
                detail: None,
            })
        });
        sim.send("control.pause", "c1");
        sim.drive();
        assert_eq!(sim.nack().reason(), NackReason::from(reason));
        assert_eq!(sim.nack().detail(), None);
    }
}

#[test]
fn unsupported_is_nacked_by_the_target() {
    let mut sim = Sim::new(&["control.attention.respond"]);
    sim.send("control.pause", "c1");
    sim.drive();
    assert_eq!(sim.nack().reason(), NackReason::Unsupported);
    assert!(matches!(sim.nack().origin(), NackOrigin::Target(_)));
    assert_eq!(sim.deliveries, [CommandDelivery::Unsupported]);
    assert!(sim.executed.is_empty(), "never executed");
    // An unregistered verb is a command too, and unsupported.
    let mut sim = Sim::new(&["control.pause"]);
    sim.send("control.frobnicate", "c2");
    sim.drive();
    assert_eq!(sim.nack().reason(), NackReason::Unsupported);
}

#[test]
fn lost_ack_is_recovered_by_the_retry() {
    let sim = pause_through(|sim| sim.drop_acks = 1);
    // One decision, one execution, one distinct ack event, sent twice byte-identically.
    assert_eq!(sim.executed, ["c1"]);
    assert_eq!(
        sim.deliveries,
        [CommandDelivery::New, CommandDelivery::Redelivered]
    );
    assert_eq!(sim.acks_on_wire.len(), 2);
    assert_eq!(sim.acks_on_wire[0], sim.acks_on_wire[1]);
    // The retry was the identical envelope, one window later.
    assert_eq!(sim.sent_commands.len(), 2);
    assert_eq!(sim.sent_commands[0], sim.sent_commands[1]);
    assert_eq!(sim.settled[0].0, WINDOW);
    let ack = sim.only_settled().result.as_ref().unwrap();
    assert_eq!(ack.to_json(), sim.acks_on_wire[0]);
}

#[test]
fn lost_command_is_recovered_by_the_retry() {
    let sim = pause_through(|sim| sim.drop_commands = 2);
    assert!(sim.only_settled().result.is_ok());
    assert_eq!(sim.settled[0].0, 2 * WINDOW, "accepted on the last attempt");
    assert_eq!(sim.sent_commands.len(), 3);
    assert!(sim.sent_commands.iter().all(|c| *c == sim.sent_commands[0]));
    assert_eq!(sim.deliveries, [CommandDelivery::New]);
}

#[test]
fn silence_times_out_after_every_retry() {
    let sim = pause_through(|sim| sim.drop_commands = usize::MAX);
    let nack = sim.nack();
    assert_eq!(nack.reason(), NackReason::Timeout);
    assert!(nack.is_synthesized());
    assert_eq!(nack.detail(), Some("no ack within 10000 ms x 3"));
    assert_eq!(sim.settled[0].0, WINDOW * (1 + DEFAULT_RETRIES));
    assert_eq!(sim.sent_commands.len(), 1 + DEFAULT_RETRIES as usize);
    assert!(sim.sent_commands.iter().all(|c| *c == sim.sent_commands[0]));
    assert!(
        sim.acks_on_wire.is_empty(),
        "timeout never goes on the wire"
    );
}

#[test]
fn custom_policy_and_late_acks() {
    let mut sim = Sim::new(&["control.pause"]);
    sim.sender = ControlSender::new("console", "ops-host")
        .with_policy(SendPolicy::new(Duration::from_millis(1500), 0));
    // The application takes longer than the sender waits.
    sim = sim.policy(|_| None);
    sim.send("control.pause", "c1");
    sim.drive();
    // Sender: one transmission, then timeout at 1.5 s. Target: busy at its own 10 s window.
    assert_eq!(sim.settled[0].0, Duration::from_millis(1500));
    assert_eq!(sim.nack().reason(), NackReason::Timeout);
    assert_eq!(sim.sent_commands.len(), 1);
    assert_eq!(sim.acks_on_wire.len(), 1);
    let late: Event = sim.acks_on_wire[0].parse().unwrap();
    assert_eq!(
        late.data(),
        Some(json!({"reason": "busy", "detail": "no decision within the ack window"}))
    );
    // The late ack did not settle anything a second time.
    assert_eq!(sim.settled.len(), 1);
    assert!(!sim.sender.handle_event(&late));
}

#[test]
fn duplicate_delivery_while_pending_is_answered_by_the_one_ack() {
    let mut sim = Sim::new(&["control.pause"]).policy(|_| None);
    sim.duplicate_commands = true;
    sim.send("control.pause", "c1");
    while sim.step() {}
    assert_eq!(
        sim.deliveries,
        [CommandDelivery::New, CommandDelivery::DuplicatePending]
    );
    assert!(sim.acks_on_wire.is_empty(), "no ack for the duplicate");
    // The application decides once, later (within the window).
    sim.now += Duration::from_secs(3);
    let key = sim.deferred.pop().unwrap();
    sim.target.decide(&key, Decision::Accept).unwrap();
    assert_eq!(
        sim.target.decide(&key, Decision::Accept),
        Err(TargetError::NotAwaitingDecision("c1".into())),
        "exactly one decision"
    );
    sim.drive();
    assert_eq!(sim.acks_on_wire.len(), 1);
    assert!(sim.only_settled().result.is_ok());
    assert_eq!(sim.settled[0].0, Duration::from_secs(3));
}

#[test]
fn redelivered_command_gets_the_recorded_ack_byte_identically() {
    let mut sim = pause_through(|sim| sim.duplicate_commands = true);
    // Both copies arrived before the ack was minted: the second waited for it.
    assert_eq!(
        sim.deliveries,
        [CommandDelivery::New, CommandDelivery::DuplicatePending]
    );
    // A later redelivery (a replayed capture, say) elicits the recorded ack.
    let cmd: Event = sim.sent_commands[0].parse().unwrap();
    assert_eq!(
        sim.target.handle_command(sim.now, cmd).unwrap(),
        CommandDelivery::Redelivered
    );
    let Some(TargetOutput::Redeliver(ack)) = sim.target.poll_output() else {
        panic!()
    };
    assert_eq!(ack.to_json(), sim.acks_on_wire[0]);
    assert_eq!(sim.executed, ["c1"], "never re-executed");
}

#[test]
fn relay_error_frames_settle_by_cause() {
    // no-route: the code normalizes to invalid, kept at the front of the detail.
    let sim = pause_through(|sim| sim.target_connected = false);
    let nack = sim.nack();
    assert_eq!(nack.reason(), NackReason::Invalid);
    assert_eq!(
        nack.detail(),
        Some("no-route: no connected emitter owns session s_8f2c")
    );
    let NackOrigin::Relay(frame) = nack.origin() else {
        panic!()
    };
    assert_eq!(frame.code, ErrorCode::NoRoute);
    assert_eq!(
        sim.settled[0].0,
        Duration::ZERO,
        "a stated refusal is not a timeout"
    );
    assert_eq!(sim.sent_commands.len(), 1, "no retry after a refusal");

    // unsupported on the target's behalf keeps its reason.
    let sim = pause_through(|sim| {
        sim.relay_knows_accepts = Some(vec!["control.attention.respond".into()])
    });
    assert_eq!(sim.nack().reason(), NackReason::Unsupported);
    assert_eq!(sim.nack().detail(), Some("target does not accept it"));
    assert!(sim.deliveries.is_empty(), "never reached the target");

    // Error frames for other commands, or without cause, settle nothing.
    let t = Instant::now();
    let mut sender = sender_with_pending(t, "s", "mine");
    for f in [
        ErrorFrame::new(ErrorCode::NoRoute).with_cause("theirs"),
        ErrorFrame::new(ErrorCode::InvalidFilter).with_id("mine"),
    ] {
        assert!(!sender.handle_frame(&Frame::Error(f)));
    }
    assert!(!sender.handle_frame(&Frame::ping(1)));
    assert!(sender.is_pending("mine"));
    // Codes that are reasons map to themselves; ambiguous is invalid.
    for (code, reason) in [
        ("unauthorized", NackReason::Unauthorized),
        ("busy", NackReason::Busy),
        ("refused", NackReason::Refused),
        ("ambiguous", NackReason::Invalid),
        ("timeout", NackReason::Invalid),
    ] {
        let mut s = sender_with_pending(t, "s", "c");
        let frame = ErrorFrame::new(ErrorCode::from(code)).with_cause("c");
        assert!(s.handle_error_frame(&frame));
        let nack = s.poll_settled().unwrap().result.unwrap_err();
        assert_eq!(nack.reason(), reason, "{code}");
    }
}

#[test]
fn rejected_acks_with_odd_payloads() {
    let t = Instant::now();
    for (data, reason, detail) in [
        (Some(json!({})), NackReason::Invalid, None),
        (None, NackReason::Invalid, None),
        (
            Some(json!({"reason": "overloaded"})),
            NackReason::Invalid,
            Some("overloaded"),
        ),
        (
            Some(json!({"reason": "timeout", "detail": "x"})),
            NackReason::Invalid,
            Some("timeout: x"),
        ),
        (Some(json!({"reason": 5})), NackReason::Invalid, Some("5")),
        (Some(json!([1])), NackReason::Invalid, None),
        (
            Some(json!({"reason": "busy", "detail": {"retry_in": 5}})),
            NackReason::Busy,
            Some(r#"{"retry_in":5}"#),
        ),
    ] {
        let mut s = sender_with_pending(t, "s", "c");
        let mut ack = Event::new("a", "control.rejected", "t", "src", "agent")
            .with_session("s")
            .with_seq(1)
            .with_cause("c");
        if let Some(d) = data.clone() {
            ack = ack.with_data(d);
        }
        assert!(s.handle_event(&ack));
        let nack = s.poll_settled().unwrap().result.unwrap_err();
        assert_eq!((nack.reason(), nack.detail()), (reason, detail), "{data:?}");
    }
}

#[test]
fn sender_ignores_what_is_not_its_ack() {
    let mut s = sender_with_pending(Instant::now(), "s", "c");
    let base = Event::new("a", "control.accepted", "t", "src", "agent")
        .with_session("s")
        .with_seq(1);
    assert!(!s.handle_event(&base), "no cause");
    assert!(!s.handle_event(base.clone().with_cause("other")));
    assert!(!s.handle_event(Event::new("b", "run.started", "t", "src", "agent").with_cause("c")));
    assert!(s.poll_settled().is_none());
    assert!(s.handle_event(base.clone().with_cause("c")));
    assert!(!s.handle_event(base.with_cause("c")), "settles once");
    assert_eq!(s.poll_settled().unwrap().command_id, "c");
    assert!(s.poll_settled().is_none());
}

#[test]
fn send_refuses_non_commands() {
    let t = Instant::now();
    let mut s = ControlSender::new("console", "h");
    let ok = s.command("control.pause", "s").build("c", "t");
    assert_eq!(
        s.send(
            t,
            Event::new("x", "run.started", "t", "src", "a").with_session("s")
        ),
        Err(SendError::NotACommand("run.started".into()))
    );
    assert_eq!(
        s.send(
            t,
            Event::new("x", "control.accepted", "t", "src", "a").with_session("s")
        ),
        Err(SendError::NotACommand("control.accepted".into()))
    );
    assert_eq!(
        s.send(t, Event::new("x", "control.pause", "t", "src", "a")),
        Err(SendError::MissingSession("x".into()))
    );
    assert_eq!(
        s.send(t, ok.clone().with_seq(1)),
        Err(SendError::HasSeq("c".into()))
    );
    assert_eq!(s.pending_len(), 0);
    s.send(t, ok.clone()).unwrap();
    assert_eq!(s.send(t, ok), Err(SendError::AlreadyPending("c".into())));
    // Vendor commands are commands.
    s.send(t, s.command("x.acme.control.reboot", "s").build("v", "t"))
        .unwrap();
    // Each error says what to do.
    assert!(SendError::HasSeq("c".into())
        .to_string()
        .contains("AEP-0004 §2"));
}

#[test]
fn close_settles_everything_as_synthesized() {
    let t = Instant::now();
    let mut s = ControlSender::new("console", "h");
    for id in ["a", "b"] {
        s.send(t, s.command("control.pause", "s").build(id, "t"))
            .unwrap();
    }
    s.handle_close("duplex closed");
    let ids: Vec<_> = std::iter::from_fn(|| s.poll_settled())
        .map(|st| {
            let nack = st.result.unwrap_err();
            assert!(nack.is_synthesized());
            assert_eq!(nack.detail(), Some("duplex closed"));
            st.command_id
        })
        .collect();
    assert_eq!(ids, ["a", "b"]);
    assert!(s.poll_transmit().is_none());
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn many_commands_time_out_in_send_order() {
    let mut sim = Sim::new(&["control.pause"]);
    sim.drop_commands = usize::MAX;
    for i in 0..5 {
        sim.send("control.pause", &format!("c{i}"));
    }
    sim.drive();
    let ids: Vec<_> = sim
        .settled
        .iter()
        .map(|(_, s)| s.command_id.as_str())
        .collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4"]);
    assert_eq!(sim.sent_commands.len(), 15);
}

#[test]
fn dedupe_memory_is_bounded_and_forgets_oldest_first() {
    let target =
        ControlTarget::with_config(TargetConfig::new(["control.pause"]).with_dedupe_capacity(2));
    let mut sim = Sim::with_target(target);
    for id in ["c1", "c2", "c3"] {
        sim.send("control.pause", id);
    }
    sim.drive();
    assert_eq!(sim.target.remembered(), 2);
    // c1 was forgotten: its redelivery is a new command (AEP-0004 §3); c3 is remembered.
    let cmd = |id: &str| {
        sim.sender
            .command("control.pause", SESSION)
            .build(id, "2026-07-03T10:00:00.000Z")
    };
    let (c1, c3) = (cmd("c1"), cmd("c3"));
    assert_eq!(
        sim.target.handle_command(sim.now, c3).unwrap(),
        CommandDelivery::Redelivered
    );
    assert_eq!(
        sim.target.handle_command(sim.now, c1).unwrap(),
        CommandDelivery::New
    );
}

#[test]
fn dedupe_is_per_source() {
    let t = Instant::now();
    let mut target = ControlTarget::new(["control.pause"]);
    let a = ControlSender::new("alice", "h")
        .command("control.pause", "s")
        .build("same", "t");
    let b = ControlSender::new("bob", "h")
        .command("control.pause", "s")
        .build("same", "t");
    assert_eq!(target.handle_command(t, a).unwrap(), CommandDelivery::New);
    assert_eq!(target.handle_command(t, b).unwrap(), CommandDelivery::New);
}

#[test]
fn target_refuses_misuse() {
    let t = Instant::now();
    let mut target = ControlTarget::new(["control.pause"]);
    let ack = Event::new("a", "control.accepted", "t", "s", "a").with_cause("c1");
    assert_eq!(
        target.handle_command(t, ack.clone()),
        Err(TargetError::NotACommand("control.accepted".into()))
    );
    let key = CommandKey::new("src", "c1");
    assert_eq!(
        target.decide(&key, Decision::Accept),
        Err(TargetError::NotAwaitingDecision("c1".into()))
    );
    assert_eq!(
        target.record(&key, ack.clone()),
        Err(TargetError::NotAwaitingRecord("c1".into()))
    );
    let cmd = ControlSender::new("c", "h")
        .command("control.pause", "s")
        .build("c1", "t");
    let key = CommandKey::of(&cmd);
    target.handle_command(t, cmd).unwrap();
    assert!(matches!(
        target.poll_output(),
        Some(TargetOutput::Decide(_))
    ));
    assert!(
        matches!(
            target.record(&key, ack.clone()),
            Err(TargetError::NotAwaitingRecord(_))
        ),
        "no record before the decision"
    );
    target.decide(&key, Decision::Accept).unwrap();
    assert!(matches!(
        target.record(&key, ack.clone().with_cause("other")),
        Err(TargetError::CauseMismatch { .. })
    ));
    target.record(&key, ack.clone()).unwrap();
    assert!(matches!(
        target.record(&key, ack),
        Err(TargetError::NotAwaitingRecord(_))
    ));
}

#[test]
fn decision_window_can_be_disabled() {
    let t = Instant::now();
    let mut target =
        ControlTarget::with_config(TargetConfig::new(["control.pause"]).with_decision_window(None));
    let cmd = ControlSender::new("c", "h")
        .command("control.pause", "s")
        .build("c1", "t");
    target.handle_command(t, cmd).unwrap();
    assert_eq!(target.poll_timeout(), None);
    target.handle_timeout(t + Duration::from_secs(3600));
    assert!(matches!(
        target.poll_output(),
        Some(TargetOutput::Decide(_))
    ));
    assert!(target.poll_output().is_none(), "no automatic decision");
}

#[test]
fn decision_deadlines_skip_decided_commands() {
    let t = Instant::now();
    let mut target = ControlTarget::new(["control.pause"]);
    let sender = ControlSender::new("c", "h");
    let a = sender.command("control.pause", "s").build("a", "t");
    let b = sender.command("control.pause", "s").build("b", "t");
    let (ka, kb) = (CommandKey::of(&a), CommandKey::of(&b));
    target.handle_command(t, a).unwrap();
    target
        .handle_command(t + Duration::from_secs(1), b)
        .unwrap();
    assert_eq!(target.poll_timeout(), Some(t + WINDOW));
    target.decide(&ka, Decision::Accept).unwrap();
    assert_eq!(
        target.poll_timeout(),
        Some(t + WINDOW + Duration::from_secs(1))
    );
    target.handle_timeout(t + WINDOW + Duration::from_secs(1));
    let outs: Vec<_> = std::iter::from_fn(|| target.poll_output()).collect();
    let busy: Vec<_> = outs
        .iter()
        .filter_map(|o| match o {
            TargetOutput::EmitAck(a) if a.decision() != &Decision::Accept => Some(a.key().clone()),
            _ => None,
        })
        .collect();
    assert_eq!(busy, [kb]);
    assert_eq!(target.poll_timeout(), None);
}

/// The two commands of the golden stream (`fixtures/conformance/golden/golden.jsonl`):
/// the builder writes them byte for byte, their acks settle them, and a target decides
/// each once.
#[test]
fn golden_stream_commands() {
    let golden = include_str!("../../../../fixtures/conformance/golden/golden.jsonl");
    let events: Vec<Event> = golden.lines().map(|l| l.parse().unwrap()).collect();
    let line = |id: &str| golden.lines().find(|l| l.contains(id)).unwrap();

    let respond = ControlSender::with_source("telegram-sink", "aep://host-b/agent/telegram-sink")
        .command("control.attention.respond", "s_8f2c")
        .subject("01JX9YB4RQ000000000000GOLD")
        .cause("01JX9YB4RQ000000000000GOLD")
        .data(json!({"answer": {"option": "allow"}}))
        .build("01JX9YB6CMD00000000000GOLD", "2026-07-03T10:15:09.000Z");
    assert_eq!(
        respond.to_json(),
        line("\"id\":\"01JX9YB6CMD00000000000GOLD\"")
    );
    let cancel =
        ControlSender::with_source("mission-control", "aep://host-b/agent/mission-control")
            .command("control.cancel", "s_8f2c")
            .run("r_0044")
            .cause("01JX9YBRATO00000000000GOLD")
            .capture(aep_core::Capture::Redacted)
            .data(json!({"scope": "run", "reason": "stuck waiting on permission"}))
            .build("01JX9YBSCCL00000000000GOLD", "2026-07-03T10:15:58.000Z");
    assert_eq!(
        cancel.to_json(),
        line("\"id\":\"01JX9YBSCCL00000000000GOLD\"")
    );

    // A sender holding both settles each on its ack from the stream, ignoring the rest.
    let t = Instant::now();
    let mut sender = ControlSender::new("any", "h");
    sender.send(t, respond.clone()).unwrap();
    sender.send(t, cancel.clone()).unwrap();
    let settling: Vec<_> = events.iter().filter(|&e| sender.handle_event(e)).collect();
    assert_eq!(settling.len(), 2);
    let settled: Vec<_> = std::iter::from_fn(|| sender.poll_settled()).collect();
    assert!(settled.iter().all(|s| s.result.is_ok()));
    assert_eq!(sender.pending_len(), 0);

    // A target accepting both decides each exactly once, whatever the redeliveries.
    let mut target = ControlTarget::new(["control.attention.respond", "control.cancel"]);
    let mut decisions = 0;
    for cmd in [&respond, &cancel, &respond, &cancel] {
        target.handle_command(t, cmd.clone()).unwrap();
        while let Some(out) = target.poll_output() {
            if let TargetOutput::Decide(incoming) = out {
                decisions += 1;
                target.decide(incoming.key(), Decision::Accept).unwrap();
            }
        }
    }
    assert_eq!(decisions, 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the relay loses or duplicates, and whatever the target decides: every
    /// command settles exactly once, is decided at most once, every transmission is the
    /// identical envelope, and an accepted command's ack is the one the target recorded.
    #[test]
    fn any_fault_schedule_keeps_the_invariants(
        commands in 1usize..5,
        command_fates in proptest::collection::vec((any::<bool>(), any::<bool>()), 0..16),
        ack_fates in proptest::collection::vec(any::<bool>(), 0..16),
        reject in any::<bool>(),
        accepts_pause in any::<bool>(),
    ) {
        let accepts: &[&str] = if accepts_pause { &["control.pause"] } else { &["control.cancel"] };
        let mut sim = Sim::new(accepts).policy(move |_| {
            Some(if reject { Decision::reject(RejectReason::Busy, "later") } else { Decision::Accept })
        });
        sim.command_fates = command_fates.into();
        sim.ack_fates = ack_fates.into();
        let ids: Vec<String> = (0..commands).map(|i| format!("c{i}")).collect();
        for id in &ids {
            sim.send("control.pause", id);
        }
        sim.drive();

        let mut settled: Vec<&str> = sim.settled.iter().map(|(_, s)| s.command_id.as_str()).collect();
        settled.sort_unstable();
        prop_assert_eq!(settled, ids.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(sim.sender.pending_len(), 0);
        for id in &ids {
            let sends: Vec<&String> = sim.sent_commands.iter().filter(|c| c.contains(&format!("\"id\":\"{id}\""))).collect();
            prop_assert!(!sends.is_empty() && sends.len() <= 1 + DEFAULT_RETRIES as usize);
            prop_assert!(sends.iter().all(|c| *c == sends[0]));
            // One distinct ack per command, however often it crossed the wire.
            let mut acks: Vec<&String> = sim.acks_on_wire.iter().filter(|a| a.contains(&format!("\"cause\":\"{id}\""))).collect();
            acks.dedup();
            prop_assert!(acks.len() <= 1, "{:?}", acks);
        }
        prop_assert!(sim.executed.len() <= commands);
        let mut executed = sim.executed.clone();
        executed.sort_unstable();
        executed.dedup();
        prop_assert_eq!(executed.len(), sim.executed.len(), "executed twice");
        for (_, s) in &sim.settled {
            match &s.result {
                Ok(ack) => {
                    prop_assert!(accepts_pause && !reject);
                    prop_assert_eq!(ack.cause(), Some(s.command_id.as_str()));
                    prop_assert!(sim.acks_on_wire.contains(&ack.to_json()));
                }
                Err(nack) if nack.is_synthesized() => prop_assert_eq!(nack.reason(), NackReason::Timeout),
                Err(nack) => {
                    let want = if !accepts_pause { NackReason::Unsupported } else { NackReason::Busy };
                    prop_assert_eq!(nack.reason(), want);
                }
            }
        }
    }
}
