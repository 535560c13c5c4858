//! Confirming what a WebSocket sink wrote (AEP-0003 §3.5 rule 5): the binding has no
//! per-event acknowledgement, so the sink asks with a `ping` after its writes and reads
//! the relay's `pong` as one.

use std::collections::VecDeque;
use std::time::Duration;

use aep_core::frame::Frame;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Utf8Bytes;

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
#[derive(Debug)]
pub(super) struct Unconfirmed {
    /// Each event's text, and whether it was counted as delivered already.
    events: VecDeque<(Utf8Bytes, bool)>,
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
}

/// How long after a `ping` the next one waits, unless someone waits for delivery.
pub(super) const QUIET: Duration = Duration::from_millis(5);

/// The `t` of the sink's confirming `ping`s: a string no relay's own heartbeat uses.
fn confirm_token(n: u64) -> String {
    format!("aep-sink-{n}")
}

impl Unconfirmed {
    pub(super) fn new(cap: usize, patience: Duration) -> Self {
        Unconfirmed {
            events: VecDeque::new(),
            cap: cap.max(1),
            asked: None,
            next_token: 0,
            patience,
            next_ask: Instant::now(),
        }
    }

    /// Notes events just written (`counted`: already counted as delivered, as an event
    /// written again is); returns how many it let go uncounted past the bound, now
    /// delivered.
    pub(super) fn written(&mut self, texts: impl IntoIterator<Item = (Utf8Bytes, bool)>) -> u64 {
        let mut let_go = 0;
        for entry in texts {
            if self.events.len() == self.cap {
                if let Some((_, false)) = self.events.pop_front() {
                    let_go += 1;
                }
                if let Some((_, n, _)) = &mut self.asked {
                    *n = n.saturating_sub(1);
                }
            }
            self.events.push_back(entry);
        }
        let_go
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
    /// give up waiting for the `ping` out, or write the one held back.
    pub(super) fn timer(&self) -> Option<Instant> {
        match self.asked {
            Some((_, _, by)) => Some(by),
            None => (!self.events.is_empty()).then_some(self.next_ask),
        }
    }

    /// A `pong` arrived: if it answers our `ping`, what it covers is confirmed; returns
    /// how many of those are newly delivered.
    pub(super) fn pong(&mut self, t: Option<&serde_json::Value>) -> u64 {
        let Some((token, n, _)) = self.asked else {
            return 0;
        };
        if t.and_then(|t| t.as_str()) != Some(confirm_token(token).as_str()) {
            return 0;
        }
        self.asked = None;
        let n = n.min(self.events.len());
        self.events
            .drain(..n)
            .filter(|(_, counted)| !counted)
            .count() as u64
    }

    /// The `ping` out went unanswered for the connect timeout: what waits counts as
    /// delivered (it stays, to be written again after a reconnect); returns how many.
    pub(super) fn presume_taken(&mut self) -> u64 {
        self.asked = None;
        let mut n = 0;
        for (_, counted) in self.events.iter_mut().filter(|(_, c)| !*c) {
            *counted = true;
            n += 1;
        }
        n
    }

    /// A new connection: nothing is out, and everything unconfirmed is to be written
    /// again.
    pub(super) fn take_for_resend(&mut self) -> Vec<(Utf8Bytes, bool)> {
        self.asked = None;
        self.events.drain(..).collect()
    }

    /// Events not counted as delivered yet.
    pub(super) fn uncounted(&self) -> u64 {
        self.events.iter().filter(|(_, counted)| !counted).count() as u64
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(texts: &[&str]) -> Vec<(Utf8Bytes, bool)> {
        texts.iter().map(|t| (Utf8Bytes::from(*t), false)).collect()
    }

    fn texts(u: &Unconfirmed) -> Vec<String> {
        u.events.iter().map(|(t, _)| t.to_string()).collect()
    }

    /// One `ping` out at a time; its `pong` confirms (and counts delivered) what was
    /// written before it, not what came after; a `pong` of someone else's `ping`
    /// confirms nothing; an event written again is not counted twice.
    #[test]
    fn a_pong_confirms_what_its_ping_followed() {
        let mut u = Unconfirmed::new(10, Duration::from_secs(1));
        assert_eq!(u.ask(true), None, "nothing to confirm");
        u.written(fresh(&["a", "b"]));
        let ping = u.ask(true).unwrap();
        assert_eq!(ping, r#"{"type":"ping","t":"aep-sink-1"}"#);
        assert!(u.deadline().is_some());
        assert_eq!(u.ask(true), None, "one out at a time");
        u.written(fresh(&["c"]));
        assert_eq!(u.pong(Some(&serde_json::json!(17))), 0);
        assert_eq!(u.pong(None), 0);
        assert_eq!(texts(&u), ["a", "b", "c"]);
        assert_eq!(u.pong(Some(&serde_json::json!("aep-sink-1"))), 2);
        assert_eq!(texts(&u), ["c"]);
        assert!(u.ask(true).unwrap().contains("aep-sink-2"));
        let resend = u.take_for_resend();
        assert_eq!(resend, fresh(&["c"]));
        assert!(u.is_empty() && u.asked.is_none());
        u.written([(Utf8Bytes::from("c"), true)]);
        let _ = u.ask(true);
        assert_eq!(
            u.pong(Some(&serde_json::json!("aep-sink-3"))),
            0,
            "counted before"
        );
    }

    /// Unless urgent, a `ping` waits [`QUIET`] after the last one; the timer says when.
    #[test]
    fn pings_keep_a_quiet_interval_unless_urgent() {
        let mut u = Unconfirmed::new(10, Duration::from_secs(1));
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
        let mut u = Unconfirmed::new(10, Duration::from_secs(1));
        u.written(fresh(&["a", "b"]));
        let _ = u.ask(true);
        assert_eq!(u.uncounted(), 2);
        assert_eq!(u.presume_taken(), 2);
        assert_eq!((u.uncounted(), u.deadline()), (0, None));
        assert_eq!(texts(&u), ["a", "b"]);
        assert_eq!(u.presume_taken(), 0);
    }

    /// Past its bound the oldest are let go (counted delivered), and the `ping` out
    /// covers only what is left.
    #[test]
    fn unconfirmed_events_are_bounded() {
        let mut u = Unconfirmed::new(2, Duration::from_secs(1));
        u.written(fresh(&["a", "b"]));
        let _ = u.ask(true);
        assert_eq!(u.written(fresh(&["c", "d"])), 2);
        assert_eq!(texts(&u), ["c", "d"]);
        assert_eq!(u.pong(Some(&serde_json::json!("aep-sink-1"))), 0);
        assert_eq!(texts(&u), ["c", "d"], "a and b were let go; c and d wait");
    }
}
