//! A test server's background task that ends with the server: aborted when dropped, so
//! a server a test lets go stops accepting at once instead of outliving the test.

use std::future::Future;

/// A spawned task, aborted when this handle is dropped.
///
/// Hold it in a test server's struct in place of a `JoinHandle` and a hand-written
/// `Drop`: the accept loop ends with the server.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use aep_test_support::task::AbortOnDrop;
///
/// let accept_loop = AbortOnDrop::spawn(std::future::pending::<()>());
/// drop(accept_loop); // the pending loop is aborted, not leaked
/// # }
/// ```
#[derive(Debug)]
pub struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    /// Spawns `task` on the current runtime.
    pub fn spawn(task: impl Future<Output = ()> + Send + 'static) -> AbortOnDrop {
        AbortOnDrop(tokio::spawn(task))
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
