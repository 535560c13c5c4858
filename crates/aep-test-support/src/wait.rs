//! Waiting for a condition with a deadline: a test that waits for something that never
//! happens fails with what it saw, instead of hanging.

use std::time::{Duration, Instant};

/// How long a helper waits before it fails the test: only a broken implementation waits
/// this long.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Polls `done` until it holds; panics with `what` after [`PATIENCE`].
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "waited {PATIENCE:?} for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// [`until`] for a plain thread.
pub fn until_blocking(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "waited {PATIENCE:?} for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Records what a callback receives (a notice, a delivery report), as its `Debug` text,
/// for assertions that wait for one.
#[derive(Debug, Clone, Default)]
pub struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Recorder {
    /// A callback that records into this recorder.
    pub fn handler<T: std::fmt::Debug>(&self) -> impl Fn(T) + Send + Sync + 'static + use<T> {
        let log = self.0.clone();
        move |x| log.lock().unwrap().push(format!("{x:?}"))
    }
    /// Everything recorded so far.
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    /// Whether something recorded contains `needle`.
    pub fn any(&self, needle: &str) -> bool {
        self.0.lock().unwrap().iter().any(|n| n.contains(needle))
    }
    /// Waits until something recorded contains `needle`; panics with what was recorded
    /// after [`PATIENCE`].
    pub async fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self.seen_by(needle, deadline) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    /// [`Recorder::wait_for`] for a plain thread.
    pub fn wait_for_blocking(&self, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self.seen_by(needle, deadline) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    /// Whether `needle` was recorded; panics with what was if `deadline` has passed.
    fn seen_by(&self, needle: &str, deadline: Instant) -> bool {
        let seen = self.any(needle);
        assert!(
            seen || Instant::now() < deadline,
            "nothing recorded contains {needle:?}: {:?}",
            self.all()
        );
        seen
    }
}
