//! Embedded relays for integration tests (feature `relay`).

use std::io;
use std::sync::mpsc;
use std::thread;

use aep_relay::{Relay, RelayBuilder, RelayHandle};
use tokio::sync::oneshot;

/// Starts an embedded relay on `127.0.0.1:0` with the reference defaults, on the
/// current tokio runtime: one line in an async test.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let relay = aep_testing::start_relay().await?;
/// assert!(relay.url().starts_with("http://127.0.0.1:"));
/// relay.shutdown().await?;
/// # Ok(()) }
/// ```
pub async fn start_relay() -> io::Result<RelayHandle> {
    Relay::builder().start().await
}

/// An embedded relay on its own thread and runtime, for synchronous tests (and
/// `aep-blocking` code). Dropping it shuts the relay down gracefully and joins the
/// thread.
///
/// ```
/// let relay = aep_testing::ThreadRelay::start()?;
/// assert!(relay.url().starts_with("http://127.0.0.1:"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
#[must_use = "dropping the relay shuts it down"]
pub struct ThreadRelay {
    url: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<io::Result<()>>>,
}

impl ThreadRelay {
    /// Starts a relay with the reference defaults.
    pub fn start() -> io::Result<ThreadRelay> {
        ThreadRelay::start_with(Relay::builder())
    }

    /// Starts a relay configured by `builder` (a token, a small buffer, ...).
    ///
    /// ```
    /// let relay = aep_testing::ThreadRelay::start_with(aep_testing::relay::Relay::builder().buffer(8))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_with(builder: RelayBuilder) -> io::Result<ThreadRelay> {
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name("aep-test-relay".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()?;
                rt.block_on(async move {
                    let relay = match builder.start().await {
                        Ok(relay) => relay,
                        Err(e) => {
                            let _ = ready_tx.send(Err(io::Error::new(e.kind(), e.to_string())));
                            return Err(e);
                        }
                    };
                    let _ = ready_tx.send(Ok(relay.url().to_owned()));
                    let _ = stop_rx.await;
                    relay.shutdown().await
                })
            })?;
        let url = match ready_rx.recv() {
            Ok(Ok(url)) => url,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(match thread.join() {
                    Ok(Err(e)) => e,
                    _ => io::Error::other("the relay thread exited before it started"),
                })
            }
        };
        Ok(ThreadRelay {
            url,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The base URL, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Shuts the relay down and waits for it; reports a failed shutdown.
    pub fn shutdown(mut self) -> io::Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the relay thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for ThreadRelay {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}
