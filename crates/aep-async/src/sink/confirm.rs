//! Confirming what a WebSocket sink wrote (AEP-0003 §3.5 rule 5): the binding has no
//! per-event acknowledgement, so the sink asks with a `ping` after its writes and reads
//! the relay's `pong` as one.

use std::collections::VecDeque;
use std::time::Duration;

use aep_core::event::EnvelopeView;
use aep_core::frame::{Frame, IngestRefusal};
use aep_core::Event;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Utf8Bytes;

use crate::transport::BackoffPolicy;

/// The events written since the relay last confirmed, and the `ping` that asks it to.
///
/// A relay answers a connection's messages in order, so the `pong` to a `ping` written
/// after some events says those events were read and handled (AEP-0003 §3.5 rule 5 asks
/// every party to answer a `ping`; this crate's relay answers it after ingesting what
/// came before, stored). One `ping` is out at a time, and unless a `flush` waits, one
/// every [`QUIET`] at most: a command's ack is not followed by a `ping` of its own (each
/// costs the relay and the sink a message to read, which showed in the control round
/// trip). An event counts as delivered when it is confirmed; one
/// whose `ping` went unanswered for the connect timeout counts as delivered when that
/// passes (a relay may not answer), and is still written again after a reconnect.
///
/// Handled is not stored: a relay that could not take an event says so with an `error`
/// frame whose `cause` is the event's `id`, before the `pong`. Such an event is not
/// delivered: it is written again, same bytes, after a delay when the refusal is
/// transient (`limit-exceeded`: a full disk), and counted rejected when it is not
/// (`invalid-event`), as [`IngestRefusal`] decides for both bindings.
#[derive(Debug)]
pub(super) struct Unconfirmed {
    /// The events written and not confirmed, in the order written.
    events: VecDeque<Entry>,
    /// At most this many are kept; past it the oldest are let go (counted as delivered):
    /// a relay that never answers costs bounded memory.
    cap: usize,
    /// The `ping` out: its token, how many events at the front it confirms, and when
    /// waiting for it ends.
    asked: Option<(u64, usize, Instant)>,
    next_token: u64,
    patience: Duration,
    /// No `ping` before this unless asked urgently.
    next_ask: Instant,
    /// Where the search for the event an `error` frame names starts: the relay answers
    /// in order, so the events before the last one named were answered already, and a
    /// burst of refusals costs one pass over the events, not one each.
    seek: usize,
    /// Refused for now and confirmed so: written again at `again_at`.
    again: Vec<(Utf8Bytes, bool)>,
    again_at: Option<Instant>,
    /// The delay before writing refused events again: the reconnect schedule's
    /// doubling, one step per refusal in a row, back to the first delay once a `pong`
    /// confirms with none.
    retry: BackoffPolicy,
    retries: u32,
}

/// One event written: its text (whose `id` an `error` frame's `cause` names), whether
/// it was counted as delivered already, and how the relay refused it, if it did.
#[derive(Debug)]
struct Entry {
    text: Utf8Bytes,
    counted: bool,
    refused: Option<IngestRefusal>,
}

/// What a `pong` (or a relay's silence) settled.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Settled {
    /// Events newly counted as delivered.
    pub(super) delivered: u64,
    /// Events refused for good, newly counted as rejected.
    pub(super) rejected: u64,
    /// Events refused for now, to be written again.
    pub(super) again: u64,
}

/// How long after a `ping` the next one waits, unless someone waits for delivery.
pub(super) const QUIET: Duration = Duration::from_millis(5);

/// The `t` of the sink's confirming `ping`s: a string no relay's own heartbeat uses.
fn confirm_token(n: u64) -> String {
    format!("aep-sink-{n}")
}

/// Whether the event written as `text` has the `id` `cause`: read in place, or parsed
/// where the in-place reading does not take the line.
fn has_id(text: &str, cause: &str) -> bool {
    match EnvelopeView::read(text) {
        Some(view) => view.id() == cause,
        None => text.parse::<Event>().is_ok_and(|e| e.id() == cause),
    }
}

impl Unconfirmed {
    /// `retry`: the schedule of the delays before writing refused events again.
    pub(super) fn new(cap: usize, patience: Duration, retry: BackoffPolicy) -> Self {
        Unconfirmed {
            events: VecDeque::new(),
            cap: cap.max(1),
            asked: None,
            next_token: 0,
            patience,
            next_ask: Instant::now(),
            seek: 0,
            again: Vec::new(),
            again_at: None,
            retry,
            retries: 0,
        }
    }

    /// Notes events about to be written (`counted`: already counted as delivered, as an
    /// event written again may be), before the write, so that one that fails leaves them
    /// here for the next connection ([`Unconfirmed::take_for_resend`]); returns how many
    /// it let go uncounted past the bound, now delivered.
    pub(super) fn written(&mut self, texts: impl IntoIterator<Item = (Utf8Bytes, bool)>) -> u64 {
        let mut let_go = 0;
        for (text, counted) in texts {
            if self.events.len() == self.cap {
                if let Some(Entry { counted: false, .. }) = self.events.pop_front() {
                    let_go += 1;
                }
                self.seek = self.seek.saturating_sub(1);
                if let Some((_, n, _)) = &mut self.asked {
                    *n = n.saturating_sub(1);
                }
            }
            self.events.push_back(Entry {
                text,
                counted,
                refused: None,
            });
        }
        let_go
    }

    /// The relay refused the event whose `id` is `cause` (an `error` frame's `cause`):
    /// notes how, for the `pong` that follows; says whether such an event waits here.
    pub(super) fn refused(&mut self, cause: &str, how: IngestRefusal) -> bool {
        let (after, before) = (self.seek..self.events.len(), 0..self.seek);
        let Some(at) = after.chain(before).find(|&i| {
            self.events
                .get(i)
                .is_some_and(|e| e.refused.is_none() && has_id(&e.text, cause))
        }) else {
            return false;
        };
        if let Some(entry) = self.events.get_mut(at) {
            entry.refused = Some(how);
        }
        self.seek = at + 1;
        true
    }

    /// The `ping` to write now, if events wait for confirmation, none is out, and the
    /// last was [`QUIET`] ago or `urgent` (a `flush` or `close` waits).
    pub(super) fn ask(&mut self, urgent: bool) -> Option<String> {
        if self.asked.is_some() || self.events.is_empty() {
            return None;
        }
        let now = Instant::now();
        if !urgent && now < self.next_ask {
            return None;
        }
        self.next_token += 1;
        self.asked = Some((self.next_token, self.events.len(), now + self.patience));
        self.next_ask = now + QUIET;
        Some(Frame::ping(confirm_token(self.next_token)).to_json())
    }

    /// When waiting for the `ping` out ends.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.asked.map(|(_, _, by)| by)
    }

    /// When the sink has something to do for confirmation without anything arriving:
    /// give up waiting for the `ping` out, write refused events again, or write the
    /// `ping` held back.
    pub(super) fn timer(&self) -> Option<Instant> {
        let confirm = match self.asked {
            Some((_, _, by)) => Some(by),
            None => (!self.events.is_empty()).then_some(self.next_ask),
        };
        match (confirm, self.again_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A `pong` arrived: if it answers our `ping`, what it covers is settled: delivered,
    /// rejected, or kept to be written again ([`Unconfirmed::due`]).
    pub(super) fn pong(&mut self, t: Option<&serde_json::Value>) -> Settled {
        let Some((token, n, _)) = self.asked else {
            return Settled::default();
        };
        if t.and_then(|t| t.as_str()) != Some(confirm_token(token).as_str()) {
            return Settled::default();
        }
        self.asked = None;
        let n = n.min(self.events.len());
        self.seek = self.seek.saturating_sub(n);
        let answered: Vec<Entry> = self.events.drain(..n).collect();
        self.settle(answered)
    }

    /// Counts what the relay answered for: delivered unless refused; refused for now
    /// goes to be written again after the retry delay.
    fn settle(&mut self, answered: impl IntoIterator<Item = Entry>) -> Settled {
        let mut settled = Settled::default();
        for entry in answered {
            match (entry.refused, entry.counted) {
                (None, false) => settled.delivered += 1,
                (Some(IngestRefusal::Permanent), false) => settled.rejected += 1,
                (Some(IngestRefusal::Transient), counted) => {
                    settled.again += 1;
                    self.again.push((entry.text, counted));
                }
                (_, true) => {}
            }
        }
        if settled.again > 0 {
            self.retries += 1;
            let delay = self.retry.delay(self.retries - 1);
            self.again_at.get_or_insert(Instant::now() + delay);
        } else if settled.delivered > 0 {
            self.retries = 0;
        }
        settled
    }

    /// The refused events to write again, if their delay has passed (or `urgent`: the
    /// sink is closing).
    pub(super) fn due(&mut self, urgent: bool) -> Vec<(Utf8Bytes, bool)> {
        match self.again_at {
            Some(at) if urgent || at <= Instant::now() => {
                self.again_at = None;
                std::mem::take(&mut self.again)
            }
            _ => Vec::new(),
        }
    }

    /// The `ping` out went unanswered for the connect timeout: what waits counts as
    /// delivered (it stays, to be written again after a reconnect), except what the
    /// relay refused, which is settled as a `pong` would.
    pub(super) fn presume_taken(&mut self) -> Settled {
        self.asked = None;
        let mut refused = Vec::new();
        let mut kept = VecDeque::with_capacity(self.events.len());
        for entry in self.events.drain(..) {
            if entry.refused.is_some() {
                refused.push(entry);
            } else {
                kept.push_back(entry);
            }
        }
        self.events = kept;
        self.seek = 0;
        let mut settled = self.settle(refused);
        for entry in self.events.iter_mut().filter(|e| !e.counted) {
            entry.counted = true;
            settled.delivered += 1;
        }
        settled
    }

    /// A new connection: nothing is out, and everything unconfirmed (refused events
    /// first, the oldest) is to be written again.
    pub(super) fn take_for_resend(&mut self) -> Vec<(Utf8Bytes, bool)> {
        self.asked = None;
        self.seek = 0;
        self.again_at = None;
        let mut all = std::mem::take(&mut self.again);
        all.extend(self.events.drain(..).map(|e| (e.text, e.counted)));
        all
    }

    /// Events not counted as delivered yet.
    pub(super) fn uncounted(&self) -> u64 {
        let waiting = self.events.iter().filter(|e| !e.counted).count();
        let again = self.again.iter().filter(|(_, counted)| !counted).count();
        (waiting + again) as u64
    }

    /// Gives up on the events refused for now (the sink closes): returns how many were
    /// not counted yet.
    pub(super) fn give_up(&mut self) -> u64 {
        self.again_at = None;
        self.again.drain(..).filter(|(_, counted)| !counted).count() as u64
    }

    /// Refusals for now in a row: the attempt that failed is one more.
    pub(super) fn retries(&self) -> u32 {
        self.retries
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETRY_FIRST: Duration = Duration::from_millis(100);
    fn retry() -> BackoffPolicy {
        BackoffPolicy::new(RETRY_FIRST, Duration::from_secs(1))
    }

    fn delivered(n: u64) -> Settled {
        Settled {
            delivered: n,
            ..Settled::default()
        }
    }

    fn fresh(texts: &[&str]) -> Vec<(Utf8Bytes, bool)> {
        texts.iter().map(|t| (Utf8Bytes::from(*t), false)).collect()
    }

    fn texts(u: &Unconfirmed) -> Vec<String> {
        u.events.iter().map(|e| e.text.to_string()).collect()
    }

    /// One `ping` out at a time; its `pong` confirms (and counts delivered) what was
    /// written before it, not what came after; a `pong` of someone else's `ping`
    /// confirms nothing; an event written again is not counted twice.
    #[test]
    fn a_pong_confirms_what_its_ping_followed() {
        let mut u = Unconfirmed::new(10, Duration::from_secs(1), retry());
        assert_eq!(u.ask(true), None, "nothing to confirm");
        u.written(fresh(&["a", "b"]));
        let ping = u.ask(true).unwrap();
        assert_eq!(ping, r#"{"type":"ping","t":"aep-sink-1"}"#);
        assert!(u.deadline().is_some());
        assert_eq!(u.ask(true), None, "one out at a time");
        u.written(fresh(&["c"]));
        assert_eq!(u.pong(Some(&serde_json::json!(17))), delivered(0));
        assert_eq!(u.pong(None), delivered(0));
        assert_eq!(texts(&u), ["a", "b", "c"]);
        assert_eq!(u.pong(Some(&serde_json::json!("aep-sink-1"))), delivered(2));
        assert_eq!(texts(&u), ["c"]);
        assert!(u.ask(true).unwrap().contains("aep-sink-2"));
        let resend = u.take_for_resend();
        assert_eq!(resend, fresh(&["c"]));
        assert!(u.is_empty() && u.asked.is_none());
        u.written([(Utf8Bytes::from("c"), true)]);
        let _ = u.ask(true);
        assert_eq!(
            u.pong(Some(&serde_json::json!("aep-sink-3"))),
            delivered(0),
            "counted before"
        );
    }

    /// Unless urgent, a `ping` waits [`QUIET`] after the last one; the timer says when.
    /// (The clock is paused: a real one may pass the 5 ms between two lines.)
    #[tokio::test(start_paused = true)]
    async fn pings_keep_a_quiet_interval_unless_urgent() {
        let mut u = Unconfirmed::new(10, Duration::from_secs(1), retry());
        assert_eq!(u.timer(), None);
        u.written(fresh(&["a"]));
        assert!(u.ask(false).is_some(), "the first at once");
        assert_eq!(u.timer(), u.deadline());
        u.pong(Some(&serde_json::json!("aep-sink-1")));
        u.written(fresh(&["b"]));
        assert_eq!(u.ask(false), None, "within the quiet interval");
        let at = u.timer().unwrap();
        assert!(
            at > Instant::now() && at <= Instant::now() + QUIET,
            "{at:?}"
        );
        assert!(u.ask(true).is_some(), "a flush waits: at once");
    }

    /// A silent relay: what waits counts as delivered, and stays for a resend.
    #[test]
    fn an_unanswered_ping_presumes_the_events_taken() {
        let mut u = Unconfirmed::new(10, Duration::from_secs(1), retry());
        u.written(fresh(&["a", "b"]));
        let _ = u.ask(true);
        assert_eq!(u.uncounted(), 2);
        assert_eq!(u.presume_taken(), delivered(2));
        assert_eq!((u.uncounted(), u.deadline()), (0, None));
        assert_eq!(texts(&u), ["a", "b"]);
        assert_eq!(u.presume_taken(), delivered(0));
    }

    /// Past its bound the oldest are let go (counted delivered), and the `ping` out
    /// covers only what is left.
    #[test]
    fn unconfirmed_events_are_bounded() {
        let mut u = Unconfirmed::new(2, Duration::from_secs(1), retry());
        u.written(fresh(&["a", "b"]));
        let _ = u.ask(true);
        assert_eq!(u.written(fresh(&["c", "d"])), 2);
        assert_eq!(texts(&u), ["c", "d"]);
        assert_eq!(u.pong(Some(&serde_json::json!("aep-sink-1"))), delivered(0));
        assert_eq!(texts(&u), ["c", "d"], "a and b were let go; c and d wait");
    }

    fn event(id: &str) -> Utf8Bytes {
        let e = Event::new(
            id,
            "tool.called",
            "2026-07-03T10:15:05.000Z",
            "aep://h/agent/a",
            "a",
        );
        Utf8Bytes::from(e.to_json())
    }

    /// An `error` frame naming an event it waits for marks it: a transient refusal is
    /// kept to be written again after the retry delay, a permanent one counted
    /// rejected; the rest of what the `pong` covers is delivered. A `cause` naming
    /// nothing waiting marks nothing.
    #[tokio::test(start_paused = true)]
    async fn a_refused_event_is_not_counted_delivered() {
        let mut u = Unconfirmed::new(10, Duration::from_secs(5), retry());
        u.written([
            (event("a"), false),
            (event("b"), false),
            (event("c"), false),
        ]);
        let _ = u.ask(true);
        assert!(!u.refused("zzz", IngestRefusal::Transient));
        assert!(u.refused("b", IngestRefusal::Transient));
        assert!(!u.refused("b", IngestRefusal::Transient), "marked once");
        assert!(u.refused("c", IngestRefusal::Permanent));
        let settled = u.pong(Some(&serde_json::json!("aep-sink-1")));
        assert_eq!(
            settled,
            Settled {
                delivered: 1,
                rejected: 1,
                again: 1
            }
        );
        assert_eq!(u.uncounted(), 1, "b waits to be written again");
        assert_eq!((u.retries(), u.is_empty()), (1, true));
        assert!(u.due(false).is_empty(), "not before its delay");
        assert_eq!(u.timer(), Some(Instant::now() + RETRY_FIRST));
        tokio::time::advance(RETRY_FIRST).await;
        let again = u.due(false);
        assert_eq!(again, [(event("b"), false)]);
        // refused again: the delay doubles; taken: it is delivered, and the delay resets
        u.written(again);
        let _ = u.ask(true);
        assert!(u.refused("b", IngestRefusal::Transient));
        assert_eq!(u.pong(Some(&serde_json::json!("aep-sink-2"))).again, 1);
        assert_eq!(u.timer(), Some(Instant::now() + RETRY_FIRST * 2));
        let again = u.due(true);
        u.written(again);
        let _ = u.ask(true);
        assert_eq!(u.pong(Some(&serde_json::json!("aep-sink-3"))), delivered(1));
        assert_eq!((u.retries(), u.uncounted()), (0, 0));
    }

    /// Refused events go first after a reconnect; silence from the relay settles what
    /// it refused as a `pong` would, and what it refused for now can be given up.
    #[tokio::test(start_paused = true)]
    async fn refused_events_survive_a_reconnect_and_silence() {
        let mut u = Unconfirmed::new(10, Duration::from_secs(5), retry());
        u.written([(event("a"), false), (event("b"), false)]);
        let _ = u.ask(true);
        assert!(u.refused("a", IngestRefusal::Transient));
        assert_eq!(
            u.presume_taken(),
            Settled {
                delivered: 1,
                rejected: 0,
                again: 1
            }
        );
        let resend = u.take_for_resend();
        assert_eq!(resend, [(event("a"), false), (event("b"), true)]);
        u.written(resend);
        let _ = u.ask(true);
        assert!(u.refused("a", IngestRefusal::Transient));
        assert_eq!(u.pong(Some(&serde_json::json!("aep-sink-2"))).again, 1);
        assert_eq!(u.give_up(), 1);
        assert_eq!((u.uncounted(), u.timer()), (0, None));
    }

    /// Whatever the order of writes, `pong`s (ours or stale), refusals, silences,
    /// reconnects, retries and give-ups, each event is settled at most once: what was
    /// settled plus what is not counted yet is always what was written, and once a
    /// relay confirms everything it is exactly that (delivered + rejected + given up
    /// never past accepted). Driven as the sink drives it: what `take_for_resend` and
    /// `due` hand out is written again.
    #[test]
    fn each_event_is_settled_once_in_any_interleaving() {
        // a small deterministic generator (xorshift): the same interleavings each run
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for round in 0..200 {
            let mut u = Unconfirmed::new(1 + next(6) as usize, Duration::from_secs(1), retry());
            let (mut accepted, mut settled, mut token) = (0u64, 0u64, None::<String>);
            let add = |s: Settled| s.delivered + s.rejected;
            for step in 0..300 {
                match next(9) {
                    0 | 1 => {
                        let k = 1 + next(3);
                        let new: Vec<_> = (0..k)
                            .map(|i| (event(&format!("e{}", accepted + i)), false))
                            .collect();
                        accepted += k;
                        settled += u.written(new);
                    }
                    2 => {
                        if let Some(ping) = u.ask(true) {
                            let v: serde_json::Value = serde_json::from_str(&ping).unwrap();
                            token = v["t"].as_str().map(str::to_owned);
                        }
                    }
                    3 => {
                        // ours, or a stale one from before a reconnect
                        let t = token
                            .take()
                            .filter(|_| next(4) > 0)
                            .unwrap_or("aep-sink-0".into());
                        settled += add(u.pong(Some(&serde_json::json!(t))));
                    }
                    4 => {
                        let id = format!("e{}", next(accepted.max(1)));
                        let how =
                            [IngestRefusal::Transient, IngestRefusal::Permanent][next(2) as usize];
                        u.refused(&id, how);
                    }
                    5 => settled += add(u.presume_taken()),
                    6 => {
                        let resend = u.take_for_resend();
                        settled += u.written(resend);
                    }
                    7 => {
                        let again = u.due(true);
                        settled += u.written(again);
                    }
                    _ => settled += u.give_up(),
                }
                assert_eq!(
                    settled + u.uncounted(),
                    accepted,
                    "round {round}, step {step}: {u:?}"
                );
            }
            // a relay that takes everything: all of it settles, once
            while u.uncounted() > 0 {
                let resend = u.take_for_resend();
                settled += u.written(resend);
                let ping: serde_json::Value = serde_json::from_str(&u.ask(true).unwrap()).unwrap();
                settled += add(u.pong(Some(&ping["t"])));
            }
            assert_eq!(settled, accepted, "round {round}");
        }
    }
}
