//! Whether the peer of a connection is still there (AEP-0003 §3.3 rule 4, §3.5 rule 5):
//! [`Liveness`].
//!
//! An endpoint writes a heartbeat at least every [`HEARTBEAT_INTERVAL`] (a `: ping`
//! comment on SSE, a `ping` frame on WebSocket), so a connection that has brought
//! nothing for [`MISSED_HEARTBEATS`] of them is dead, whatever TCP says: a relay that
//! sent its headers and then went silent, or a half-open socket after a network
//! partition. The default idle timeout is [`IDLE_TIMEOUT`], §3.5 rule 5's 90 s.
//!
//! On WebSocket a reader can ask as well as wait: after a heartbeat interval of silence
//! it sends a `ping`, which the endpoint must answer (`pong`, §3.5 rule 5), so an
//! endpoint that does not ping on its own is not taken for dead. On SSE it can only wait.
//!
//! Sans-IO: time comes in as an argument; [`Liveness::poll_timeout`] says when to call
//! [`Liveness::poll`] next.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use aep_core::liveness::{Liveness, Tick, IDLE_TIMEOUT};
//!
//! let t0 = Instant::now();
//! let mut live = Liveness::new(t0, IDLE_TIMEOUT);
//! assert_eq!(live.poll(t0 + Duration::from_secs(29)), Tick::Wait);
//! assert_eq!(live.poll(t0 + Duration::from_secs(30)), Tick::Ping);
//! live.heard(t0 + Duration::from_secs(31)); // the pong, or anything else
//! assert_eq!(live.poll(t0 + Duration::from_secs(100)), Tick::Ping);
//! assert_eq!(live.poll(t0 + Duration::from_secs(121)), Tick::Dead);
//! ```

use std::time::{Duration, Instant};

/// The longest an endpoint goes between heartbeats: SSE's `: ping` "at least every
/// 30 s" (AEP-0003 §3.3 rule 4), WebSocket's RECOMMENDED `ping` interval (§3.5 rule 5).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);

/// How many heartbeats in a row a connection may miss before it is dead.
pub const MISSED_HEARTBEATS: u32 = 3;

/// The default idle timeout: [`MISSED_HEARTBEATS`] × [`HEARTBEAT_INTERVAL`], 90 s, the
/// RECOMMENDED liveness timeout of AEP-0003 §3.5 rule 5.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The idle timeout for an endpoint whose heartbeat comes every `interval`: a connection
/// silent for [`MISSED_HEARTBEATS`] of them is dead.
///
/// ```
/// use std::time::Duration;
/// use aep_core::liveness::{idle_timeout_for, HEARTBEAT_INTERVAL, IDLE_TIMEOUT};
/// assert_eq!(idle_timeout_for(HEARTBEAT_INTERVAL), IDLE_TIMEOUT);
/// assert_eq!(idle_timeout_for(Duration::from_secs(25)), Duration::from_secs(75));
/// ```
pub fn idle_timeout_for(interval: Duration) -> Duration {
    interval.saturating_mul(MISSED_HEARTBEATS)
}

/// What [`Liveness::poll`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// Nothing to do until [`Liveness::poll_timeout`].
    Wait,
    /// Silent for a heartbeat interval: a reader that can, sends a `ping` now (AEP-0003
    /// §3.5 rule 5); one that cannot (SSE) waits on.
    Ping,
    /// Silent for the idle timeout: the connection is dead; close it and reconnect.
    Dead,
}

/// The liveness of one connection: when it was last heard from, and what that means
/// now.
///
/// ```
/// use std::time::{Duration, Instant};
/// use aep_core::liveness::{Liveness, Tick};
///
/// let t0 = Instant::now();
/// let mut live = Liveness::new(t0, Duration::from_secs(9));
/// assert_eq!(live.poll_timeout(), t0 + Duration::from_secs(3));
/// assert_eq!(live.poll(t0 + Duration::from_secs(3)), Tick::Ping);
/// assert_eq!(live.poll(t0 + Duration::from_secs(4)), Tick::Wait);
/// assert_eq!(live.poll_timeout(), t0 + Duration::from_secs(6));
/// assert_eq!(live.poll(t0 + Duration::from_secs(9)), Tick::Dead);
/// ```
#[derive(Debug, Clone)]
pub struct Liveness {
    idle_timeout: Duration,
    ping_every: Duration,
    heard: Instant,
    pinged: Option<Instant>,
}

impl Liveness {
    /// A connection opened (or last heard from) at `now`, dead after `idle_timeout` of
    /// silence, pinged after each third of it.
    pub fn new(now: Instant, idle_timeout: Duration) -> Liveness {
        Liveness {
            idle_timeout,
            ping_every: idle_timeout / MISSED_HEARTBEATS,
            heard: now,
            pinged: None,
        }
    }

    /// The idle timeout.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The peer sent something at `now` (an event, a frame, a comment, a heartbeat: any
    /// byte shows it is there).
    pub fn heard(&mut self, now: Instant) {
        self.heard = now;
        self.pinged = None;
    }

    /// When [`Liveness::poll`] next has something to say.
    pub fn poll_timeout(&self) -> Instant {
        self.ping_at().min(self.dead_at())
    }

    /// What the silence until `now` means.
    pub fn poll(&mut self, now: Instant) -> Tick {
        if now >= self.dead_at() {
            return Tick::Dead;
        }
        if now >= self.ping_at() {
            self.pinged = Some(now);
            return Tick::Ping;
        }
        Tick::Wait
    }

    fn dead_at(&self) -> Instant {
        later(self.heard, self.idle_timeout)
    }

    fn ping_at(&self) -> Instant {
        later(self.pinged.unwrap_or(self.heard), self.ping_every)
    }
}

/// `at + d`, or the far future when that is past what an `Instant` holds: a timeout too
/// large to add is no timeout.
fn later(at: Instant, d: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(100 * 365 * 86_400);
    at.checked_add(d.min(FAR))
        .or_else(|| at.checked_add(Duration::from_secs(86_400)))
        .unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_silent_peer_is_pinged_twice_then_dead() {
        let t0 = Instant::now();
        let mut live = Liveness::new(t0, IDLE_TIMEOUT);
        let ticks: Vec<_> = [10, 30, 31, 60, 61, 89, 90]
            .map(|s| live.poll(t0 + S(s)))
            .to_vec();
        use Tick::*;
        assert_eq!(ticks, [Wait, Ping, Wait, Ping, Wait, Wait, Dead]);
    }

    #[test]
    fn hearing_anything_starts_the_count_over() {
        let t0 = Instant::now();
        let mut live = Liveness::new(t0, S(90));
        for s in (20..1000).step_by(20) {
            live.heard(t0 + S(s));
            assert_eq!(live.poll(t0 + S(s + 19)), Tick::Wait);
        }
        assert_eq!(live.poll_timeout(), t0 + S(980) + S(30));
    }

    #[test]
    fn an_endless_timeout_never_kills() {
        let t0 = Instant::now();
        let mut live = Liveness::new(t0, Duration::MAX);
        assert_eq!(live.poll(t0 + S(10 * 365 * 86_400)), Tick::Wait);
        assert!(live.poll_timeout() > t0 + S(10 * 365 * 86_400));
    }
}
