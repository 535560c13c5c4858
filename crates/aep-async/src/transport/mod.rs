//! The client side of the bindings every loop of this crate shares: the WebSocket layer
//! (`ws`: connect and `hello` under one timeout, message classification, `ping`
//! answered, binary refused, orderly `closing`), the reconnect schedule (also the HTTP
//! sink's retry schedule) and the choice of relay among several ([`Failover`]).
//!
//! Each loop (the WebSocket sink, WebSocket subscriptions, the control client and
//! `Duplex`, the lifecycle connection, the SSE subscription) keeps only what is its own:
//! what it sends and what a message means to it.

use std::time::Duration;

#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
use tokio::time::Instant;

#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
use crate::relays::Relays;

#[cfg(any(feature = "sse", feature = "ws"))]
pub(crate) mod idle;
#[cfg(feature = "ws")]
pub(crate) mod ws;

#[cfg_attr(
    not(any(feature = "http", feature = "sse", feature = "ws")),
    allow(dead_code)
)]
/// The delay before reconnect attempt `attempt` (0 for the first after a success):
/// `initial` doubling per attempt, never above `max` (nor below `initial`).
///
/// A pure function of the attempt number, so the schedule is stated and tested once
/// and every loop waits the same way.
pub(crate) fn reconnect_delay(initial: Duration, max: Duration, attempt: u32) -> Duration {
    let max = max.max(initial);
    // 2^attempt, saturating: past 2^31 every delay is the ceiling anyway.
    let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
    initial.saturating_mul(factor).min(max)
}

/// The bounds of a reconnect (or retry) schedule as a builder keeps them, from its
/// `backoff` setter: the first delay and the ceiling, which is never
/// below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BackoffPolicy {
    initial: Duration,
    max: Duration,
}

#[cfg_attr(
    not(any(feature = "http", feature = "sse", feature = "ws")),
    allow(dead_code)
)]
impl BackoffPolicy {
    pub(crate) const fn new(initial: Duration, max: Duration) -> Self {
        // `Ord::max` is not `const`
        let max = if max.as_nanos() < initial.as_nanos() {
            initial
        } else {
            max
        };
        BackoffPolicy { initial, max }
    }

    /// The first delay.
    pub(crate) fn initial(self) -> Duration {
        self.initial
    }

    /// The ceiling.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn max(self) -> Duration {
        self.max
    }

    /// The delay before attempt `attempt` (0 for the first): [`reconnect_delay`].
    pub(crate) fn delay(self, attempt: u32) -> Duration {
        reconnect_delay(self.initial, self.max, attempt)
    }
}

/// The reconnect schedule of one loop: counts failed attempts since the last success.
#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    policy: BackoffPolicy,
    attempt: u32,
}

#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
impl Backoff {
    pub(crate) fn new(policy: BackoffPolicy) -> Self {
        Backoff { policy, attempt: 0 }
    }

    /// A connection succeeded: the next failure waits `initial` again.
    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
    }

    /// The delay before the next attempt, counting this one.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let d = self.policy.delay(self.attempt);
        self.attempt = self.attempt.saturating_add(1);
        d
    }
}

/// Which relay of a [`Relays`] list a loop talks to, and how long it waits before its
/// next attempt: the failover rule of every client of this crate, stated once.
///
/// A loop stays on the relay that works. After a failed attempt it moves to the next
/// relay, and tries it at once while some relay has not failed since the last success;
/// once every one has, it waits the backoff before each further attempt, doubling as a
/// single relay's reconnects do. With one relay this is exactly the reconnect schedule
/// of [`Backoff`].
///
/// A success followed by a failure within the backoff's first delay (a relay that takes
/// a connection and drops it at once) does not count as one for moving on at once: were
/// every relay to do that, the loop would otherwise go round them without a pause.
#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
#[derive(Debug, Clone)]
pub(crate) struct Failover {
    relays: Relays,
    at: usize,
    /// Attempts failed in a row since the last success.
    failures: usize,
    backoff: Backoff,
    /// The last success: when, and the failures counted before it (what a failure
    /// that follows it too soon goes on from).
    last_success: Option<(Instant, usize)>,
}

#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
impl Failover {
    pub(crate) fn new(relays: Relays, policy: BackoffPolicy) -> Self {
        Failover {
            relays,
            at: 0,
            failures: 0,
            backoff: Backoff::new(policy),
            last_success: None,
        }
    }

    /// The base URL to try now; `None` for an empty list (nothing to connect to).
    pub(crate) fn current(&self) -> Option<&str> {
        self.relays.at(self.at)
    }

    /// The current relay as a log line or an error may show it: without credentials
    /// ([`aep_core::redact::redact_urls`]).
    // the readers' and the WebSocket sink's (features `sse`, `ws`)
    #[cfg_attr(not(any(feature = "sse", feature = "ws")), allow(dead_code))]
    pub(crate) fn shown(&self) -> String {
        aep_core::redact::redact_urls(self.current().unwrap_or_default()).into_owned()
    }

    /// The attempt on the current relay succeeded: stay, and start the schedule over.
    pub(crate) fn succeeded(&mut self) {
        self.last_success = Some((Instant::now(), self.failures));
        self.failures = 0;
        self.backoff.reset();
    }

    /// The attempt on the current relay failed: move to the next one, and say how long
    /// to wait before trying it.
    pub(crate) fn failed(&mut self) -> Duration {
        let n = self.relays.len().max(1);
        self.at = (self.at + 1) % n;
        if let Some((at, before)) = self.last_success.take() {
            if at.elapsed() < self.backoff.policy.initial() {
                self.failures = before;
            }
        }
        self.failures = self.failures.saturating_add(1);
        if self.failures < n {
            Duration::ZERO
        } else {
            self.backoff.next_delay()
        }
    }
}

// Only the SSE loop reads these: it gives up a history pass once every relay failed,
// and pauses after a stream that ended in order.
#[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
#[cfg_attr(not(feature = "sse"), allow(dead_code))]
impl Failover {
    /// The relays.
    pub(crate) fn relays(&self) -> &Relays {
        &self.relays
    }

    /// Whether every relay has failed since the last success (a loop that gives up
    /// rather than going round again stops here).
    pub(crate) fn exhausted(&self) -> bool {
        self.failures >= self.relays.len().max(1)
    }

    /// The current relay ended a connection in order: how long to wait before trying it
    /// again (the backoff's next delay).
    pub(crate) fn pause(&mut self) -> Duration {
        self.backoff.next_delay()
    }
}

#[cfg(all(test, any(feature = "http", feature = "sse", feature = "ws")))]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn policy(initial_ms: u64, max_ms: u64) -> BackoffPolicy {
        BackoffPolicy::new(MS(initial_ms), MS(max_ms))
    }

    #[test]
    fn the_schedule_doubles_from_initial_up_to_max() {
        let delays: Vec<_> = (0..8)
            .map(|n| reconnect_delay(MS(500), MS(10_000), n))
            .collect();
        assert_eq!(
            delays,
            [500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000].map(MS)
        );
    }

    #[test]
    fn the_schedule_saturates_instead_of_overflowing() {
        assert_eq!(reconnect_delay(MS(100), MS(5000), u32::MAX), MS(5000));
        assert_eq!(
            reconnect_delay(Duration::MAX, Duration::MAX, 40),
            Duration::MAX
        );
        // a ceiling below the first delay is the first delay
        assert_eq!(reconnect_delay(MS(300), MS(10), 3), MS(300));
        assert_eq!(reconnect_delay(Duration::ZERO, MS(10), 5), Duration::ZERO);
    }

    #[test]
    fn a_policy_keeps_its_ceiling_at_or_above_the_first_delay() {
        assert_eq!(policy(300, 10), policy(300, 300));
        assert_eq!(policy(300, 10).initial(), MS(300));
        assert_eq!(policy(300, 10).delay(4), MS(300));
        assert_eq!(
            policy(100, 1000).delay(2),
            reconnect_delay(MS(100), MS(1000), 2)
        );
    }

    #[test]
    fn backoff_counts_attempts_and_a_success_resets_it() {
        let mut b = Backoff::new(policy(100, 1000));
        let first: Vec<_> = (0..5).map(|_| b.next_delay()).collect();
        assert_eq!(first, [100, 200, 400, 800, 1000].map(MS));
        b.reset();
        assert_eq!(b.next_delay(), MS(100));
    }

    #[test]
    fn one_relay_fails_over_to_itself_on_the_backoff_schedule() {
        let mut f = Failover::new(Relays::from("http://a"), policy(100, 1000));
        let delays: Vec<_> = (0..4).map(|_| f.failed()).collect();
        assert_eq!(delays, [100, 200, 400, 800].map(MS));
        assert_eq!(f.current(), Some("http://a"));
        f.succeeded();
        assert_eq!(f.failed(), MS(100));
    }

    #[tokio::test(start_paused = true)]
    async fn several_relays_are_tried_at_once_then_round_on_the_backoff() {
        let mut f = Failover::new(Relays::from(["a", "b", "c"]), policy(100, 1000));
        assert_eq!(f.current(), Some("a"));
        // a and b fail: the next relay each time, at once
        assert_eq!((f.failed(), f.current()), (Duration::ZERO, Some("b")));
        assert_eq!((f.failed(), f.current()), (Duration::ZERO, Some("c")));
        assert!(!f.exhausted());
        // c fails too: every relay has failed, so round again after the backoff
        assert_eq!((f.failed(), f.current()), (MS(100), Some("a")));
        assert!(f.exhausted());
        assert_eq!((f.failed(), f.current()), (MS(200), Some("b")));
        // b works and later drops: c at once, b's schedule starts over
        f.succeeded();
        tokio::time::advance(MS(100)).await;
        assert_eq!((f.failed(), f.current()), (Duration::ZERO, Some("c")));
        assert_eq!((f.failed(), f.current()), (Duration::ZERO, Some("a")));
        assert_eq!((f.failed(), f.current()), (MS(100), Some("b")));
    }

    /// Relays that each take a connection and drop it at once are gone round on the
    /// backoff, not in a tight loop; one that worked for a while is left at once.
    #[tokio::test(start_paused = true)]
    async fn a_success_that_fails_at_once_does_not_count() {
        let mut f = Failover::new(Relays::from(["a", "b"]), policy(100, 1000));
        f.succeeded();
        assert_eq!((f.failed(), f.current()), (Duration::ZERO, Some("b")));
        f.succeeded();
        // b dropped it at once too: every relay has failed, so the backoff
        assert_eq!((f.failed(), f.current()), (MS(100), Some("a")));
        f.succeeded();
        assert_eq!(f.failed(), MS(100));
        f.succeeded();
        tokio::time::advance(MS(100)).await;
        // b worked for the backoff's first delay: a at once
        assert_eq!((f.failed(), f.current()), (Duration::ZERO, Some("a")));
    }

    #[test]
    fn no_relay_is_no_url() {
        let mut f = Failover::new(Relays::new(Vec::<String>::new()), policy(1, 1));
        assert_eq!(f.current(), None);
        assert_eq!(f.failed(), MS(1));
        assert!(f.relays().is_empty());
    }
}
