//! Fair connection slots (issue 32): how many connections each peer holds, so that one
//! peer cannot take every slot of `--max-connections` (idle sockets reopened as the
//! header timeout closes them starve everyone else), and the account of the
//! connections refused, counted for `/healthz` and logged at WARN at most once per
//! [`LOG_EVERY`].
//!
//! A peer is its address; an IPv6 peer is its /64, what one host is usually given (an
//! address of its own per connection costs it nothing within it), and an IPv4-mapped
//! IPv6 address is the IPv4 address it maps.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

/// At most one WARN line about refused connections per this long.
pub(crate) const LOG_EVERY: Duration = Duration::from_secs(10);

/// The peer a connection counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Peer(IpAddr);

impl Peer {
    pub(crate) fn of(ip: IpAddr) -> Peer {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                Peer(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
            v4 => Peer(v4),
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
            v4 => write!(f, "{v4}"),
        }
    }
}

/// The connections each peer holds, bounded per peer (0: no bound).
#[derive(Debug)]
pub(crate) struct Peers {
    max: usize,
    held: Mutex<HashMap<Peer, usize>>,
}

/// A connection's place under its peer's bound, given back when dropped.
#[derive(Debug)]
pub(crate) struct PeerSlot {
    peers: Arc<Peers>,
    peer: Peer,
}

impl Peers {
    pub(crate) fn new(max: usize) -> Arc<Peers> {
        Arc::new(Peers {
            max,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more connection of `peer`; `None` when it holds its bound.
    pub(crate) fn take(self: &Arc<Self>, peer: Peer) -> Option<PeerSlot> {
        if self.max == 0 {
            return Some(PeerSlot {
                peers: self.clone(),
                peer,
            });
        }
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let n = held.entry(peer).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            peers: self.clone(),
            peer,
        })
    }

    #[cfg(test)]
    fn holds(&self, peer: Peer) -> usize {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.get(&peer).copied().unwrap_or(0)
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        if self.peers.max == 0 {
            return;
        }
        let mut held = self
            .peers
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = held.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                // a peer gone costs nothing: the map holds the peers connected now
                held.remove(&self.peer);
            }
        }
    }
}

/// Why a connection was refused at accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its peer held `--max-connections-per-peer`: `429`.
    PeerBound,
    /// The relay held `--max-connections`: `503`.
    Full,
}

/// The connections refused since the relay started, for `/healthz`.
#[derive(Debug, Default)]
pub(crate) struct RefusedCounts {
    peer_bound: AtomicU64,
    full: AtomicU64,
}

impl RefusedCounts {
    /// `/healthz`'s `refused_connections`.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "per_peer": self.peer_bound.load(Ordering::Relaxed),
            "max_connections": self.full.load(Ordering::Relaxed),
        })
    }
}

/// The accept loop's account of refusals: counted at once, told at WARN at most once
/// per [`LOG_EVERY`] (the first refusal after a quiet interval at once, what follows
/// within the interval in one line when it ends), so a flood is seen in the log
/// without the log becoming the flood.
#[derive(Debug)]
pub(crate) struct RefusalLog {
    counts: Arc<RefusedCounts>,
    per_peer: usize,
    max: usize,
    /// Refused since the last line: per reason, and the peer refused most.
    peer_bound: u64,
    full: u64,
    by_peer: HashMap<Peer, u64>,
    last_line: Option<Instant>,
}

impl RefusalLog {
    pub(crate) fn new(counts: Arc<RefusedCounts>, per_peer: usize, max: usize) -> RefusalLog {
        RefusalLog {
            counts,
            per_peer,
            max,
            peer_bound: 0,
            full: 0,
            by_peer: HashMap::new(),
            last_line: None,
        }
    }

    /// Counts one refusal of `peer`'s connection, and tells it if a line is due.
    pub(crate) fn refused(&mut self, peer: Peer, why: Refused, now: Instant) {
        match why {
            Refused::PeerBound => {
                self.counts.peer_bound.fetch_add(1, Ordering::Relaxed);
                self.peer_bound += 1;
            }
            Refused::Full => {
                self.counts.full.fetch_add(1, Ordering::Relaxed);
                self.full += 1;
            }
        }
        // bounded: at most the peers refused within one interval, cleared at each line
        *self.by_peer.entry(peer).or_insert(0) += 1;
        if self
            .last_line
            .is_none_or(|last| now.duration_since(last) >= LOG_EVERY)
        {
            self.tell(now);
        }
    }

    /// Tells what was refused since the last line, if anything (the accept loop calls it
    /// every [`LOG_EVERY`]).
    pub(crate) fn tick(&mut self, now: Instant) {
        if self.peer_bound + self.full > 0
            && self
                .last_line
                .is_none_or(|last| now.duration_since(last) >= LOG_EVERY)
        {
            self.tell(now);
        }
    }

    fn tell(&mut self, now: Instant) {
        let busiest = self
            .by_peer
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(peer, n)| format!("{peer} ({n})"))
            .unwrap_or_default();
        let since = self.last_line.map_or_else(String::new, |last| {
            format!(" in the last {} s", now.duration_since(last).as_secs())
        });
        tracing::warn!(
            per_peer_bound = self.peer_bound,
            connection_limit = self.full,
            peers = self.by_peer.len(),
            busiest = %busiest,
            "refused {} connection(s){since}: {} from peers holding --max-connections-per-peer ({}), {} past --max-connections ({}); the busiest peer: {busiest}",
            self.peer_bound + self.full,
            self.peer_bound,
            self.per_peer,
            self.full,
            self.max,
        );
        self.peer_bound = 0;
        self.full = 0;
        self.by_peer.clear();
        self.last_line = Some(now);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_peer_is_its_address_or_its_ipv6_64() {
        assert_eq!(Peer::of(ip("10.0.0.1")), Peer::of(ip("::ffff:10.0.0.1")));
        assert_ne!(Peer::of(ip("10.0.0.1")), Peer::of(ip("10.0.0.2")));
        assert_eq!(
            Peer::of(ip("2001:db8:1:2::1")),
            Peer::of(ip("2001:db8:1:2:ffff::9"))
        );
        assert_ne!(
            Peer::of(ip("2001:db8:1:2::1")),
            Peer::of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            Peer::of(ip("2001:db8:1:2::1")).to_string(),
            "2001:db8:1:2::/64"
        );
        assert_eq!(Peer::of(ip("127.0.0.1")).to_string(), "127.0.0.1");
    }

    /// A peer holds at most its bound; a place given back is taken again; other peers
    /// are untouched; 0 bounds nothing.
    #[test]
    fn each_peer_holds_at_most_its_bound() {
        let peers = Peers::new(2);
        let (a, b) = (Peer::of(ip("10.0.0.1")), Peer::of(ip("10.0.0.2")));
        let first = peers.take(a).unwrap();
        let _second = peers.take(a).unwrap();
        assert!(peers.take(a).is_none());
        let _other = peers.take(b).unwrap();
        drop(first);
        assert_eq!(peers.holds(a), 1);
        let _again = peers.take(a).unwrap();
        assert!(peers.take(a).is_none());
        let unbounded = Peers::new(0);
        let held: Vec<_> = (0..100).map(|_| unbounded.take(a).unwrap()).collect();
        assert_eq!(held.len(), 100);
    }

    /// Every refusal is counted at once; the lines come at most once per interval, the
    /// refusals in between told in the next.
    #[test]
    fn refusals_are_counted_at_once_and_told_once_per_interval() {
        let counts = Arc::new(RefusedCounts::default());
        let mut log = RefusalLog::new(counts.clone(), 2, 10);
        let t0 = Instant::now();
        let a = Peer::of(ip("10.0.0.1"));
        log.refused(a, Refused::PeerBound, t0);
        assert_eq!(log.last_line, Some(t0), "the first refusal is told at once");
        for i in 0..5 {
            log.refused(a, Refused::PeerBound, t0 + Duration::from_secs(i));
        }
        log.refused(a, Refused::Full, t0 + Duration::from_secs(5));
        assert_eq!((log.peer_bound, log.full), (5, 1), "held for the next line");
        log.tick(t0 + Duration::from_secs(9));
        assert_eq!(log.last_line, Some(t0));
        log.tick(t0 + LOG_EVERY);
        assert_eq!(log.last_line, Some(t0 + LOG_EVERY));
        assert_eq!((log.peer_bound, log.full), (0, 0));
        assert_eq!(
            counts.to_json(),
            json!({ "per_peer": 6, "max_connections": 1 })
        );
    }
}
