//! The runtime every blocking call is a message to: one tokio runtime on a background
//! thread (or a handle the caller provides).

use std::fmt;
use std::future::Future;
use std::sync::{mpsc, Arc, Mutex, Weak};
use std::thread;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::error::Error;

/// A tokio runtime that blocking calls hand their work to.
///
/// [`Runtime::new`] starts a `current_thread` runtime on its own background thread;
/// [`Runtime::from_handle`] uses a runtime the caller already drives (a multi-thread
/// runtime, or a current-thread one running `block_on` on some other thread). Cheap to
/// clone; every object built on a runtime holds a clone, so the runtime lives as long as
/// anything needs it. When the last clone goes, an owned runtime's thread is told to
/// stop: no `Drop` here needs a runtime or blocks.
///
/// Constructors that take no runtime use [`Runtime::shared`], one process-wide runtime
/// started on first use and stopped once nothing holds it.
///
/// ```
/// use aep_blocking::Runtime;
///
/// let rt = Runtime::new()?;
/// let answer = rt.block_on(async { 6 * 7 })?;
/// assert_eq!(answer, 42);
/// # Ok::<(), aep_blocking::Error>(())
/// ```
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    handle: tokio::runtime::Handle,
    /// Dropping it stops the owned runtime's thread; `None` for a borrowed handle.
    stop: Mutex<Option<oneshot::Sender<()>>>,
    thread: Option<thread::ThreadId>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("owned", &self.inner.thread.is_some())
            .finish()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Sending needs no runtime; the thread shuts its runtime down by itself.
        if let Some(stop) = self.stop.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = stop.send(());
        }
    }
}

static SHARED: Mutex<Weak<Inner>> = Mutex::new(Weak::new());

impl Runtime {
    /// Starts a runtime on a new background thread named `aep-blocking`.
    ///
    /// Fails with [`Error::Runtime`] when the thread or the runtime cannot be created.
    pub fn new() -> Result<Runtime, Error> {
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name("aep-blocking".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(rt.handle().clone()));
                rt.block_on(async {
                    let _ = stop_rx.await;
                });
                // Tasks still running (a sink's delivery) get a moment to notice.
                rt.shutdown_timeout(Duration::from_millis(100));
            })
            .map_err(Error::Runtime)?;
        let handle = ready_rx
            .recv()
            .map_err(|_| Error::Runtime(std::io::Error::other("runtime thread exited")))?
            .map_err(Error::Runtime)?;
        Ok(Runtime {
            inner: Arc::new(Inner {
                handle,
                stop: Mutex::new(Some(stop_tx)),
                thread: Some(thread.thread().id()),
            }),
        })
    }

    /// Uses a runtime the caller drives. Blocking calls spawn their work on it and wait
    /// for the reply, so the runtime must be running on some other thread.
    ///
    /// ```
    /// let tokio_rt = tokio::runtime::Runtime::new().unwrap();
    /// let rt = aep_blocking::Runtime::from_handle(tokio_rt.handle().clone());
    /// assert_eq!(rt.block_on(async { 1 })?, 1);
    /// # Ok::<(), aep_blocking::Error>(())
    /// ```
    pub fn from_handle(handle: tokio::runtime::Handle) -> Runtime {
        Runtime {
            inner: Arc::new(Inner {
                handle,
                stop: Mutex::new(None),
                thread: None,
            }),
        }
    }

    /// The process-wide runtime the plain constructors use, started on first use.
    ///
    /// ```
    /// let a = aep_blocking::Runtime::shared()?;
    /// let b = aep_blocking::Runtime::shared()?;
    /// assert!(a.same_as(&b));
    /// # Ok::<(), aep_blocking::Error>(())
    /// ```
    pub fn shared() -> Result<Runtime, Error> {
        let mut slot = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(inner) = slot.upgrade() {
            return Ok(Runtime { inner });
        }
        let rt = Runtime::new()?;
        *slot = Arc::downgrade(&rt.inner);
        Ok(rt)
    }

    /// Whether both are the same runtime.
    ///
    /// ```
    /// let a = aep_blocking::Runtime::new()?;
    /// assert!(a.same_as(&a.clone()));
    /// # Ok::<(), aep_blocking::Error>(())
    /// ```
    pub fn same_as(&self, other: &Runtime) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The tokio handle, to mix async code in.
    ///
    /// ```
    /// let rt = aep_blocking::Runtime::new()?;
    /// let _guard = rt.handle().enter();
    /// # Ok::<(), aep_blocking::Error>(())
    /// ```
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.inner.handle
    }

    /// Runs `future` on the runtime and blocks the calling thread for its output.
    ///
    /// Called from inside any tokio runtime it returns [`Error::InsideRuntime`] at once
    /// instead of blocking a worker thread (which could deadlock) or panicking.
    pub fn block_on<F>(&self, future: F) -> Result<F::Output, Error>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.call(future, None)
    }

    /// [`Runtime::block_on`] that gives up after `timeout` with [`Error::Timeout`]; the
    /// future is then dropped on the runtime.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = aep_blocking::Runtime::new()?;
    /// let slow = rt.block_on_timeout(std::future::pending::<()>(), Duration::from_millis(10));
    /// assert!(matches!(slow, Err(aep_blocking::Error::Timeout(_))));
    /// # Ok::<(), aep_blocking::Error>(())
    /// ```
    pub fn block_on_timeout<F>(&self, future: F, timeout: Duration) -> Result<F::Output, Error>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.call(future, Some(timeout))
    }

    fn call<F>(&self, future: F, timeout: Option<Duration>) -> Result<F::Output, Error>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        refuse_inside_runtime()?;
        let (tx, rx) = mpsc::sync_channel(1);
        self.inner.handle.spawn(async move {
            let out = match timeout {
                Some(d) => tokio::time::timeout(d, future).await.ok(),
                None => Some(future.await),
            };
            let _ = tx.send(out);
        });
        match rx.recv() {
            Ok(Some(out)) => Ok(out),
            Ok(None) => Err(Error::Timeout(timeout.unwrap_or_default())),
            // The task was dropped unfinished: the runtime is shutting down.
            Err(_) => Err(Error::RuntimeGone),
        }
    }

    /// Polls `future` on the calling thread inside the runtime's context: for futures
    /// that borrow the caller's state (a subscription's stream). IO and timers are
    /// driven by the runtime's own thread.
    pub(crate) fn poll_here<F: Future>(&self, future: F) -> Result<F::Output, Error> {
        refuse_inside_runtime()?;
        Ok(self.inner.handle.block_on(future))
    }

    /// Runs a non-blocking constructor that needs a runtime context (it spawns tasks).
    pub(crate) fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        let _guard = self.inner.handle.enter();
        f()
    }
}

/// Blocking a thread that drives a tokio runtime stalls every task on it (or deadlocks a
/// current-thread runtime); tokio itself panics there. Refuse before either happens.
pub(crate) fn refuse_inside_runtime() -> Result<(), Error> {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => Err(Error::InsideRuntime),
        Err(_) => Ok(()),
    }
}
