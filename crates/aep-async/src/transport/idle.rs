//! The idle timeout of a reader on tokio's clock: core's [`Liveness`] with one timer.
//!
//! A reader notes every read with [`IdleTimer::heard`] (a clock read, no timer work)
//! and selects on [`IdleTimer::tick`] beside its reads; the timer is re-armed only when
//! it fires, so a busy connection costs one clock read per read and nothing more.

use std::pin::Pin;
use std::time::Duration;

use aep_core::liveness::{Liveness, Tick};
use tokio::time::{Instant, Sleep};

use crate::error::TransportError;

/// The liveness of one connection and the timer that wakes its reader.
#[derive(Debug)]
pub(crate) struct IdleTimer {
    live: Liveness,
    sleep: Pin<Box<Sleep>>,
}

/// What an [`IdleTimer`] says when it fires.
#[derive(Debug)]
pub(crate) enum Idle {
    /// Silent for a heartbeat: a reader that can sends a `ping` (AEP-0003 §3.5 rule 5).
    Ping,
    /// Silent for the idle timeout: drop the connection with this error.
    Dead(TransportError),
}

impl IdleTimer {
    /// A connection heard from now, dead after `timeout` of silence.
    pub(crate) fn new(timeout: Duration) -> Self {
        let now = Instant::now();
        let live = Liveness::new(now.into_std(), timeout);
        let sleep = Box::pin(tokio::time::sleep_until(Instant::from_std(
            live.poll_timeout(),
        )));
        IdleTimer { live, sleep }
    }

    /// The peer sent something.
    pub(crate) fn heard(&mut self) {
        self.live.heard(Instant::now().into_std());
    }

    /// Waits until the connection has been silent for a heartbeat (`Ping`) or for the
    /// idle timeout (`Dead`). Cancel-safe: a reader selects on it beside its reads.
    pub(crate) async fn tick(&mut self) -> Idle {
        loop {
            self.sleep.as_mut().await;
            let now = Instant::now();
            let tick = self.live.poll(now.into_std());
            let next = Instant::from_std(self.live.poll_timeout());
            self.sleep.as_mut().reset(next);
            match tick {
                Tick::Wait => {}
                Tick::Ping => return Idle::Ping,
                Tick::Dead => {
                    return Idle::Dead(TransportError::timeout(format!(
                        "the relay sent nothing, not even a heartbeat, for {} s (the idle \
                         timeout: AEP-0003 §3.3 and §3.5 have a relay ping at least every \
                         30 s); reconnecting",
                        self.live.idle_timeout().as_secs()
                    )));
                }
            }
        }
    }
}
