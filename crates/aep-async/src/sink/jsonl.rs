//! The JSONL binding (AEP-0003 §3.1): append one event per line to a file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use aep_core::Event;

use super::{DeliveryStats, Sink, SinkFuture};
use crate::error::EmitError;

/// Appends each event as one compact JSON line, written with a single `write` call on
/// a file opened in append mode, so a concurrent `tail -f` (or a second writer on the
/// same path) never sees a torn line (AEP-0003 §3.1 rule 1).
///
/// Write errors fail the emitting call ([`EmitError::Io`]): a capture file that cannot
/// be written is broken at the producing boundary. Every `accept` reaches the kernel
/// before returning, so `flush` and `close` have nothing to wait for and dropping the
/// sink loses nothing.
///
/// ```
/// use aep_async::{Emitter, JsonlSink};
///
/// let path = std::env::temp_dir().join(format!("aep-jsonl-doc-{}.jsonl", std::process::id()));
/// let emitter = Emitter::new("a", "h", JsonlSink::open(&path)?);
/// emitter.emit("agent.heartbeat", None::<()>)?;
/// let text = std::fs::read_to_string(&path)?;
/// assert_eq!(text.lines().count(), 1);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct JsonlSink {
    path: PathBuf,
    file: File,
    closed: AtomicBool,
    written: AtomicU64,
}

impl JsonlSink {
    /// Opens (creating if needed) `path` for appending.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(JsonlSink {
            path,
            file,
            closed: AtomicBool::new(false),
            written: AtomicU64::new(0),
        })
    }

    /// The file being appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Sink for JsonlSink {
    fn accept(&self, event: &Event) -> Result<(), EmitError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(EmitError::Closed);
        }
        let mut line = Vec::with_capacity(256);
        event.write_json(&mut line);
        line.push(b'\n');
        // One write(2) on an O_APPEND file: a regular file takes the whole line at once
        // (AEP-0003 §3.1 rule 1); a short write would be a torn line, so it is an error.
        let n = (&self.file).write(&line)?;
        if n != line.len() {
            return Err(EmitError::Io(std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                format!("short write: {n} of {} bytes", line.len()),
            )));
        }
        self.written.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn flush(&self) -> SinkFuture<'_> {
        Box::pin(async {})
    }

    fn close(&self) -> SinkFuture<'_> {
        self.closed.store(true, Ordering::Release);
        Box::pin(async {})
    }

    fn stats(&self) -> DeliveryStats {
        let n = self.written.load(Ordering::Relaxed);
        DeliveryStats {
            accepted: n,
            delivered: n,
            ..DeliveryStats::default()
        }
    }
}
