//! The embedded relay for tests, on a port it holds from creation to drop.
//!
//! Stopping a relay and starting it again must not give its port away in between: a
//! test that binds port 0, releases it and binds again races every other test for it.
//! [`TestRelay`] binds once and keeps the socket. While stopped it accepts connections
//! and closes them at once, as a machine with nothing listening refuses them, so a
//! client sees its connection fail rather than hang.

use std::io;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::time::Duration;

use aep_relay::RelayConfig;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// An embedded relay that can be stopped ("crashed": its buffers go with it) and
/// started again on the same address.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// use aep_test_support::relay::TestRelay;
/// let mut relay = TestRelay::start(aep_relay::RelayConfig::default()).await?;
/// let url = relay.url();
/// relay.stop().await;
/// relay.restart().await?;
/// assert_eq!(relay.url(), url);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestRelay {
    listener: StdListener,
    addr: SocketAddr,
    config: RelayConfig,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Serving: the stop signal and the relay's task.
    Up(oneshot::Sender<()>, JoinHandle<io::Result<()>>),
    /// Stopped: the task that closes every connection.
    Down(JoinHandle<()>),
    /// Between the two.
    Idle,
}

impl TestRelay {
    /// A relay on `127.0.0.1:0` with `config`, not serving yet: connections to it fail
    /// until [`TestRelay::restart`]. Needs a tokio runtime.
    pub fn stopped(config: RelayConfig) -> io::Result<TestRelay> {
        let listener = StdListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let mut relay = TestRelay {
            listener,
            addr,
            // A short drain: a stop stands for a crash, nothing should linger after it.
            config: config.with_drain_timeout(Duration::from_millis(200)),
            state: State::Idle,
        };
        relay.refuse()?;
        Ok(relay)
    }

    /// A relay on `127.0.0.1:0` with `config`, serving.
    pub async fn start(config: RelayConfig) -> io::Result<TestRelay> {
        let mut relay = TestRelay::stopped(config)?;
        relay.restart().await?;
        Ok(relay)
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address it holds.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether it is serving.
    pub fn is_up(&self) -> bool {
        matches!(self.state, State::Up(..))
    }

    /// Stops serving (connections are closed, buffers lost); the port stays held and
    /// refuses connections until [`TestRelay::restart`].
    pub async fn stop(&mut self) {
        if let State::Up(..) = self.state {
            if let State::Up(stop, task) = std::mem::replace(&mut self.state, State::Idle) {
                let _ = stop.send(());
                let _ = task.await;
            }
        }
        // Binding again is not needed: the socket is ours. Only a failing dup of it
        // could stop the refusal, and then connections wait instead of failing.
        let _ = self.refuse();
    }

    /// Starts serving again (from empty buffers) on the same address.
    pub async fn restart(&mut self) -> io::Result<()> {
        self.stop().await;
        if let State::Down(refuser) = std::mem::replace(&mut self.state, State::Idle) {
            refuser.abort();
            let _ = refuser.await;
        }
        let listener = tokio::net::TcpListener::from_std(self.listener.try_clone()?)?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(aep_relay::run(listener, self.config.clone(), async move {
            let _ = stopped.await;
        }));
        self.state = State::Up(stop, task);
        Ok(())
    }

    fn refuse(&mut self) -> io::Result<()> {
        if !matches!(self.state, State::Idle) {
            return Ok(());
        }
        let listener = tokio::net::TcpListener::from_std(self.listener.try_clone()?)?;
        self.state = State::Down(tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                drop(conn);
            }
        }));
        Ok(())
    }
}

impl Drop for TestRelay {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Up(stop, task) => {
                let _ = stop.send(());
                drop(task);
            }
            State::Down(refuser) => refuser.abort(),
            State::Idle => {}
        }
    }
}
