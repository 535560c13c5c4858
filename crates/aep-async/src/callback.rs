//! A caller's callback held in a `Debug` type: [`Callback`] shows only that one is
//! set, since a closure has nothing else to show, so the options holding one (a sink's
//! report handler, a subscription's notice handler) derive `Debug` rather than list
//! their other fields by hand.

use std::fmt;
use std::ops::Deref;

/// A callback (an `Arc<dyn Fn(..)>` such as [`ReportHandler`](crate::ReportHandler)),
/// `Debug` as `Callback(..)`; it derefs to what it holds, so it is called as that is.
#[derive(Clone)]
pub(crate) struct Callback<F>(pub(crate) F);

impl<F> Deref for Callback<F> {
    type Target = F;

    fn deref(&self) -> &F {
        &self.0
    }
}

impl<F> fmt::Debug for Callback<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Callback(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// It calls through to what it holds and shows nothing of it.
    #[test]
    fn calls_through_and_shows_only_that_it_is_set() {
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        let handler: Arc<dyn Fn(usize) + Send + Sync> = Arc::new(move |n| {
            counter.fetch_add(n, Ordering::Relaxed);
        });
        let callback = Callback(handler);
        (callback.clone())(2);
        callback(3);
        assert_eq!(seen.load(Ordering::Relaxed), 5);
        assert_eq!(format!("{callback:?}"), "Callback(..)");
        assert_eq!(format!("{:?}", Some(callback)), "Some(Callback(..))");
    }
}
