//! The writer of the session files: one thread that takes what admissions queue, in
//! order, and writes it in groups (see the journal's documentation).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::oneshot;

use super::disk::{file_name, Disk};
use crate::config::Fsync;
use crate::encoded::Encoded;
use crate::storage::Limits;

/// How the journal writes: the promise and the bounds of the buffers it mirrors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub(crate) fsync: Fsync,
    /// With [`Fsync::Batch`], how often written files are synced.
    pub(crate) interval: Duration,
    pub(crate) limits: Limits,
}

enum Op {
    /// Each event's JSON, one line, to its session's file.
    Append {
        events: Vec<Encoded>,
        done: oneshot::Sender<io::Result<()>>,
    },
    Remove(Arc<str>),
    Flush(mpsc::Sender<()>),
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Append { events, .. } => write!(f, "Append({} lines)", events.len()),
            Op::Remove(s) => write!(f, "Remove({s})"),
            Op::Flush(_) => f.write_str("Flush"),
        }
    }
}

/// The writer of the session files: what is queued goes out on its thread, in order.
#[derive(Debug)]
pub(super) struct Files {
    tx: mpsc::Sender<Op>,
    thread: Option<JoinHandle<()>>,
}

impl Files {
    /// Starts the writer of the files in `dir`.
    pub(super) fn start(dir: &Path, options: Options, disk: Box<dyn Disk>) -> io::Result<Files> {
        let (tx, rx) = mpsc::channel();
        let mut writer = Writer {
            dir: dir.to_owned(),
            disk,
            options,
            dirty: HashSet::new(),
            last_sync: Instant::now(),
            sizes: HashMap::new(),
        };
        let thread = std::thread::Builder::new()
            .name("aep-relay-journal".into())
            .spawn(move || writer.run(&rx))?;
        Ok(Files {
            tx,
            thread: Some(thread),
        })
    }

    /// Queues each event's JSON, one line, to its session's file; the answer says when
    /// they are written as [`Fsync`] promises, or why not.
    pub(super) fn append(&self, events: Vec<Encoded>) -> oneshot::Receiver<io::Result<()>> {
        let (done, written) = oneshot::channel();
        self.send(Op::Append { events, done });
        written
    }

    /// Queues `op`; one the writer can no longer take is answered as failed.
    fn send(&self, op: Op) {
        if let Err(mpsc::SendError(Op::Append { done, .. })) = self.tx.send(op) {
            let _ = done.send(Err(io::Error::other("the journal writer has stopped")));
        }
    }

    /// Removes an evicted session's file.
    pub(super) fn remove(&self, session: Arc<str>) {
        self.send(Op::Remove(session));
    }

    /// Waits until everything queued so far is written.
    pub(super) fn flush(&self) {
        let (tx, rx) = mpsc::channel();
        if self.tx.send(Op::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        self.flush();
        let (tx, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.tx, tx));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The writer thread's state.
#[derive(Debug)]
struct Writer {
    dir: PathBuf,
    disk: Box<dyn Disk>,
    options: Options,
    /// Files written since the last sync ([`Fsync::Batch`]).
    dirty: HashSet<PathBuf>,
    last_sync: Instant,
    /// Lines and bytes appended to each file since it was last cut to size.
    sizes: HashMap<PathBuf, (usize, usize)>,
}

/// One group of appends: the bytes per file, in first-append order, and who waits.
#[derive(Default)]
struct Group {
    files: Vec<(PathBuf, Vec<u8>)>,
    at: HashMap<PathBuf, usize>,
    waiting: Vec<(oneshot::Sender<io::Result<()>>, Vec<usize>)>,
}

impl Writer {
    fn run(&mut self, rx: &mpsc::Receiver<Op>) {
        let mut pending = Vec::new();
        loop {
            let first = if self.dirty.is_empty() {
                match rx.recv() {
                    Ok(op) => op,
                    Err(_) => break,
                }
            } else {
                let wait = self
                    .options
                    .interval
                    .saturating_sub(self.last_sync.elapsed());
                match rx.recv_timeout(wait) {
                    Ok(op) => op,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        self.sync_dirty();
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            };
            pending.push(first);
            pending.extend(rx.try_iter());
            let mut group = Group::default();
            for op in pending.drain(..) {
                match op {
                    Op::Append { events, done } => self.add(&mut group, &events, done),
                    Op::Remove(session) => {
                        self.commit(&mut group);
                        let path = self.dir.join(file_name(&session));
                        self.sizes.remove(&path);
                        self.dirty.remove(&path);
                        if let Err(e) = self.disk.remove(&path) {
                            tracing::warn!(file = %path.display(), error = %e, "could not remove an evicted session's journal");
                        }
                    }
                    Op::Flush(done) => {
                        self.commit(&mut group);
                        self.sync_dirty();
                        let _ = done.send(());
                    }
                }
            }
            self.commit(&mut group);
            if self.options.fsync == Fsync::Batch
                && self.last_sync.elapsed() >= self.options.interval
            {
                self.sync_dirty();
            }
            self.trim();
        }
        self.sync_dirty();
    }

    fn add(
        &mut self,
        group: &mut Group,
        events: &[Encoded],
        done: oneshot::Sender<io::Result<()>>,
    ) {
        let mut touched = Vec::new();
        let mut last: Option<(&str, usize)> = None;
        for event in events {
            // only sequenced session events are held, each with its session
            let session = event.session().unwrap_or_default();
            let at = match last {
                // a batch is mostly one session: its file is found once
                Some((s, at)) if s == session => at,
                _ => {
                    let path = self.dir.join(file_name(session));
                    let at = *group.at.entry(path.clone()).or_insert_with(|| {
                        group.files.push((path, Vec::new()));
                        group.files.len() - 1
                    });
                    last = Some((session, at));
                    at
                }
            };
            if let Some((_, buf)) = group.files.get_mut(at) {
                buf.extend_from_slice(&event.json());
                buf.push(b'\n');
            }
            if !touched.contains(&at) {
                touched.push(at);
            }
        }
        group.waiting.push((done, touched));
    }

    /// Writes a group, one append per file, syncs as the policy says, and answers
    /// everyone who waits on it: an ingest fails when any of its files did.
    fn commit(&mut self, group: &mut Group) {
        let mut failed: Vec<Option<(io::ErrorKind, String)>> =
            Vec::with_capacity(group.files.len());
        for (path, buf) in &group.files {
            let mut written = self.disk.append(path, buf);
            if written.is_ok() {
                match self.options.fsync {
                    Fsync::Always => written = self.disk.sync(path),
                    Fsync::Batch => {
                        self.dirty.insert(path.clone());
                    }
                    Fsync::Never => {}
                }
            }
            match written {
                Ok(()) => {
                    let lines = memchr::memchr_iter(b'\n', buf).count();
                    let size = self.sizes.entry(path.clone()).or_default();
                    size.0 += lines;
                    size.1 += buf.len();
                    failed.push(None);
                }
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "could not append to a session's journal");
                    failed.push(Some((e.kind(), e.to_string())));
                }
            }
        }
        for (done, files) in group.waiting.drain(..) {
            let error = files
                .iter()
                .find_map(|at| failed.get(*at).and_then(Option::as_ref));
            let result = match error {
                None => Ok(()),
                Some((kind, text)) => Err(io::Error::new(*kind, text.clone())),
            };
            let _ = done.send(result);
        }
        group.files.clear();
        group.at.clear();
    }

    fn sync_dirty(&mut self) {
        for path in self.dirty.drain() {
            if let Err(e) = self.disk.sync(&path) {
                tracing::warn!(file = %path.display(), error = %e, "could not sync a session's journal");
            }
        }
        self.last_sync = Instant::now();
    }

    /// Cuts a file that grew past four buffers (in events or bytes) to its last two.
    fn trim(&mut self) {
        let limits = self.options.limits;
        let keep_lines = limits.events.saturating_mul(2).max(1);
        let keep_bytes = limits.session_bytes.saturating_mul(2).max(1);
        let over: Vec<PathBuf> = self
            .sizes
            .iter()
            .filter(|(_, (lines, bytes))| {
                *lines > keep_lines.saturating_mul(2) || *bytes > keep_bytes.saturating_mul(2)
            })
            .map(|(path, _)| path.clone())
            .collect();
        for path in over {
            let kept = keep_tail(&path, keep_lines, keep_bytes).and_then(|tail| {
                let size = (tail.len(), tail.iter().map(|l| l.len() + 1).sum());
                self.disk.replace(&path, &tail).map(|()| size)
            });
            match kept {
                Ok(size) => {
                    self.sizes.insert(path.clone(), size);
                    self.dirty.remove(&path);
                }
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "could not cut a session's journal to size");
                    // tried again once it has grown as much again
                    self.sizes.insert(path, (keep_lines, keep_bytes));
                }
            }
        }
    }
}

/// The last whole lines of a file, at most `lines` of them and `bytes` in all.
fn keep_tail(path: &Path, lines: usize, bytes: usize) -> io::Result<Vec<Bytes>> {
    let text = Bytes::from(fs::read(path)?);
    let mut tail = Vec::new();
    let mut total = 0usize;
    for line in text.split(|&b| b == b'\n').rev().filter(|l| !l.is_empty()) {
        if tail.len() == lines || total + line.len() + 1 > bytes {
            break;
        }
        total += line.len() + 1;
        tail.push(text.slice_ref(line));
    }
    tail.reverse();
    Ok(tail)
}
