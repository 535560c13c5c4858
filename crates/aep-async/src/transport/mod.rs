//! The client side of the bindings every loop of this crate shares: the WebSocket layer
//! (`ws`: connect and `hello` under one timeout, message classification, `ping`
//! answered, binary refused, orderly `closing`) and the reconnect schedule (also the
//! HTTP sink's retry schedule).
//!
//! Each loop (the WebSocket sink, WebSocket subscriptions, the control client and
//! `Duplex`, the lifecycle connection, the SSE subscription) keeps only what is its own:
//! what it sends and what a message means to it.

use std::time::Duration;

#[cfg(feature = "ws")]
pub(crate) mod ws;

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

/// The reconnect schedule of one loop: counts failed attempts since the last success.
#[cfg(any(feature = "sse", feature = "ws"))]
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    attempt: u32,
}

#[cfg(any(feature = "sse", feature = "ws"))]
impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            attempt: 0,
        }
    }

    /// A connection succeeded: the next failure waits `initial` again.
    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
    }

    /// The delay before the next attempt, counting this one.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let d = reconnect_delay(self.initial, self.max, self.attempt);
        self.attempt = self.attempt.saturating_add(1);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

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

    #[cfg(any(feature = "sse", feature = "ws"))]
    #[test]
    fn backoff_counts_attempts_and_a_success_resets_it() {
        let mut b = Backoff::new(MS(100), MS(1000));
        let first: Vec<_> = (0..5).map(|_| b.next_delay()).collect();
        assert_eq!(first, [100, 200, 400, 800, 1000].map(MS));
        b.reset();
        assert_eq!(b.next_delay(), MS(100));
    }
}
