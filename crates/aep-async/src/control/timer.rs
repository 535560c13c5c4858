//! The one timer task a sans-IO state machine needs: sleep until its `poll_timeout`,
//! call `handle_timeout`, repeat; re-armed when an earlier deadline appears.

use std::sync::{Arc, Weak};
use std::time::Instant;

use tokio::sync::Notify;

/// A state machine with deadlines, driven by [`spawn`].
pub(crate) trait Timed: Send + Sync + 'static {
    /// The next deadline; also records it as the armed one (see [`Arm`]).
    fn next_deadline(&self) -> Option<Instant>;
    /// Time has reached `now`.
    fn fire(&self, now: Instant);
}

/// Whether a new deadline needs the timer woken: only when it is earlier than the one
/// the timer sleeps toward, so a steady stream of commands costs no wake-ups.
#[derive(Debug, Default)]
pub(crate) struct Arm {
    armed: Option<Instant>,
    started: bool,
}

impl Arm {
    /// Records what the timer now sleeps toward.
    pub(crate) fn set(&mut self, deadline: Option<Instant>) {
        self.armed = deadline;
    }

    /// Whether `deadline` is earlier than the armed one (the timer must be woken).
    pub(crate) fn earlier(&self, deadline: Option<Instant>) -> bool {
        match (deadline, self.armed) {
            (Some(d), Some(a)) => d < a,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// Returns true once: the first caller starts the timer task.
    pub(crate) fn start(&mut self) -> bool {
        !std::mem::replace(&mut self.started, true)
    }
}

/// Runs the timer of `target` on the current runtime until `target` is dropped. Returns
/// false when there is no runtime to run it on.
pub(crate) fn spawn<T: Timed>(target: Weak<T>, wake: Arc<Notify>) -> bool {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    rt.spawn(async move {
        loop {
            let deadline = match target.upgrade() {
                Some(t) => t.next_deadline(),
                None => return,
            };
            match deadline {
                Some(d) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(d.into()) => {}
                        () = wake.notified() => continue,
                    }
                }
                None => {
                    wake.notified().await;
                    continue;
                }
            }
            match target.upgrade() {
                Some(t) => t.fire(now()),
                None => return,
            }
        }
    });
    true
}

/// The clock the state machines are fed: tokio's, so a runtime with paused time
/// (`tokio::time::pause`) drives them deterministically.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}
