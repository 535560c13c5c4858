//! Durable replay (`--data-dir`): the in-memory buffers mirrored to disk, so each
//! session's buffer survives a restart and an emitter's `2xx` means its events are on
//! disk. [`Journal`] is the second [`Storage`]: it admits into a [`Memory`] and answers
//! once the new events are written.
//!
//! The journal is a set of files, one per session, named from a digest of the session
//! name (`{readable prefix}-{32 hex digits}.jsonl`, so a name of any length fits); each
//! line is one stored event's JSON as received, which holds the session name itself.
//! A torn write is a cut line.
//!
//! - **Writing.** Lines reach the disk on one writer thread, grouped: every append
//!   queued while the previous group was written goes out in the next one, one write
//!   per file, and with [`Fsync::Always`] one `fdatasync` per file per group. Each
//!   admission resolves with its own group, so its answer follows the write [`Fsync`]
//!   promises. A failed append is undone (the file cut back to its length before), its
//!   events taken back out of the buffers and the admission answered [`Unstored`], so a
//!   full disk is answered `507`, nothing is half-stored, and the same events sent again
//!   are admitted anew.
//! - **Eviction.** An evicted session's file is removed; a file that grows past four
//!   buffers is cut to its last two while running.
//! - **Restart.** Every `*.jsonl` file is read back through the same admission as live
//!   ingest (buffer bounds and `(source, id)` dedupe hold). A line that is not a whole
//!   stored event (cut inside a character, an invalid byte, not JSON) is skipped,
//!   reported, and kept in `{file}.damaged`; the rest replays. Then each session's file
//!   is rewritten with what the buffer kept. Writing may fail (a full disk): that is
//!   reported and the files are left as they were, and the relay serves what it read.
//!
//! [`Disk`] is the seam: every write goes through it, so a test can make the disk full.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::config::Fsync;
use crate::encoded::Encoded;
use crate::line::{parse_line, Incoming};
use crate::memory::{Memory, Store};
use crate::proto::Disposition;
use crate::storage::{
    Admitting, Limits, Outcome, Outcomes, Replay, ReplayFrom, Stamp, Storage, Unstored,
};

/// Where the journal's bytes go: the one place that writes, so a test can fail it.
pub(crate) trait Disk: Send + fmt::Debug + 'static {
    /// Appends `lines` (whole lines, each ending in `\n`) to `file`, creating it: all of
    /// them, or none (a failed write leaves the file as it was). A file whose last line
    /// was cut by a torn write gets that line ended first, so it stays one damaged line.
    fn append(&mut self, file: &Path, lines: &[u8]) -> io::Result<()>;

    /// Makes what was written to `file` durable (`fdatasync`), and its directory entry
    /// when the file is new.
    fn sync(&mut self, file: &Path) -> io::Result<()>;

    /// Replaces `file` with `lines`, each followed by `\n`, durably and atomically: a
    /// temporary file, synced, renamed over it.
    fn replace(&mut self, file: &Path, lines: &[Bytes]) -> io::Result<()>;

    /// Removes `file`; one that is not there is removed already.
    fn remove(&mut self, file: &Path) -> io::Result<()>;
}

/// The file system.
#[derive(Debug, Default)]
pub(crate) struct Fs {
    /// Files created since their directory was last synced.
    created: HashSet<PathBuf>,
}

impl Disk for Fs {
    fn append(&mut self, file: &Path, lines: &[u8]) -> io::Result<()> {
        let mut f = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(file)?;
        let before = f.metadata()?.len();
        if before == 0 {
            self.created.insert(file.to_owned());
        }
        let mut torn = false;
        if before > 0 {
            let mut last = [0u8; 1];
            f.seek(SeekFrom::Start(before - 1))?;
            f.read_exact(&mut last)?;
            torn = last[0] != b'\n';
        }
        let written = if torn {
            f.write_all(b"\n").and_then(|()| f.write_all(lines))
        } else {
            f.write_all(lines)
        };
        if let Err(e) = written {
            // all or nothing: what part of it went out is taken back
            let _ = f.set_len(before);
            return Err(e);
        }
        Ok(())
    }

    fn sync(&mut self, file: &Path) -> io::Result<()> {
        File::open(file)?.sync_data()?;
        if self.created.remove(file) {
            sync_dir(file)?;
        }
        Ok(())
    }

    fn replace(&mut self, file: &Path, lines: &[Bytes]) -> io::Result<()> {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("log");
        let tmp = file.with_file_name(format!(".{name}.tmp"));
        let written = (|| {
            let mut out = io::BufWriter::new(File::create(&tmp)?);
            for line in lines {
                out.write_all(line)?;
                out.write_all(b"\n")?;
            }
            out.into_inner().map_err(|e| e.into_error())?.sync_data()
        })();
        if let Err(e) = written.and_then(|()| fs::rename(&tmp, file)) {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        self.created.remove(file);
        sync_dir(file)
    }

    fn remove(&mut self, file: &Path) -> io::Result<()> {
        self.created.remove(file);
        match fs::remove_file(file) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

/// Syncs the directory holding `file`, so a file created or renamed there survives a
/// crash of the machine (a no-op where directories cannot be opened).
fn sync_dir(file: &Path) -> io::Result<()> {
    #[cfg(unix)]
    if let Some(dir) = file.parent() {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// A session's file name: a readable prefix of the name (letters, digits, `-`, `_`) and
/// the first 16 bytes of its SHA-256 in hex, so any name, of any length or alphabet,
/// is one safe file name that cannot escape the directory.
pub(crate) fn file_name(session: &str) -> String {
    let prefix: String = session
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(40)
        .collect();
    let digest = aep_core::redact::ContentDigest::of_text(session).to_hex();
    if prefix.is_empty() {
        format!("{digest}.jsonl")
    } else {
        format!("{prefix}-{digest}.jsonl")
    }
}

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
        done: tokio::sync::oneshot::Sender<io::Result<()>>,
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

/// The replay buffers, mirrored to the session files of a data directory.
#[derive(Debug)]
pub(crate) struct Journal {
    memory: Memory,
    files: Files,
}

/// The writer of the session files: what is queued goes out on its thread, in order.
#[derive(Debug)]
struct Files {
    tx: mpsc::Sender<Op>,
    thread: Option<JoinHandle<()>>,
}

impl Journal {
    /// Reads every session file in `dir` into fresh buffers bounded by
    /// `options.limits`, rewrites the files with what the buffers kept, and starts the
    /// writer. Fails only when `dir` cannot be created or read; a write that fails here
    /// is reported and the relay goes on.
    pub(crate) fn open(
        dir: &Path,
        options: Options,
        mut disk: Box<dyn Disk>,
    ) -> io::Result<Journal> {
        let memory = Memory::new(options.limits);
        restore(dir, &mut memory.lock(), &mut *disk)?;
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
        Ok(Journal {
            memory,
            files: Files {
                tx,
                thread: Some(thread),
            },
        })
    }
}

impl Storage for Journal {
    /// Admits into the buffers, and queues the new events' lines; an evicted session's
    /// file is removed, in the buffers' order (under their lock), and its lines of this
    /// batch go with it rather than being written after its file is gone.
    fn admit(&self, events: &[&Encoded]) -> Admitting {
        let mut store = self.memory.lock();
        let mut outcomes = Outcomes::new();
        let mut held: Vec<Encoded> = Vec::new();
        for event in events {
            let admission = store.admit(event);
            for gone in admission.evicted {
                held.retain(|e| e.session() != Some(&*gone));
                self.files.remove(gone);
            }
            if admission.outcome == Outcome::Held {
                held.push((*event).clone());
            }
            outcomes.push(admission.outcome);
        }
        if held.is_empty() {
            return Admitting::Done(outcomes);
        }
        let (done, written) = tokio::sync::oneshot::channel();
        let withdraw = held.clone();
        self.files.send(Op::Append { events: held, done });
        drop(store);
        let memory = self.memory.clone();
        Admitting::Pending(Box::pin(async move {
            let failed = match written.await {
                Ok(Ok(())) => return Ok(outcomes),
                Ok(Err(e)) => e,
                Err(_) => io::Error::other("the journal writer has stopped"),
            };
            // not stored: taken back, so the emitter's retry is admitted anew. Live
            // readers may have had them meanwhile: to them the retry is a duplicate, as
            // AEP-0001 §7.4 allows
            let mut store = memory.lock();
            for event in &withdraw {
                store.withdraw(event);
            }
            Err(Unstored(failed))
        }))
    }

    fn stamp(&self) -> Stamp {
        self.memory.stamp()
    }

    fn replay(&self, from: ReplayFrom, upto: Stamp) -> Replay {
        self.memory.replay(from, upto)
    }

    fn sessions(&self) -> usize {
        self.memory.sessions()
    }

    fn held_bytes(&self) -> usize {
        self.memory.held_bytes()
    }

    fn flush(&self) {
        self.files.flush();
    }
}

impl Files {
    /// Queues `op`; one the writer can no longer take is answered as failed.
    fn send(&self, op: Op) {
        if let Err(mpsc::SendError(Op::Append { done, .. })) = self.tx.send(op) {
            let _ = done.send(Err(io::Error::other("the journal writer has stopped")));
        }
    }

    /// Removes an evicted session's file.
    fn remove(&self, session: Arc<str>) {
        self.send(Op::Remove(session));
    }

    /// Waits until everything queued so far is written.
    fn flush(&self) {
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

/// Reads every session file in `dir` into `store` and rewrites the files with what it
/// kept (see the module documentation).
fn restore(dir: &Path, store: &mut Store, disk: &mut dyn Disk) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with('.') && name.ends_with(".tmp") {
            // a rewrite cut short: the file it was replacing is still whole
            let _ = disk.remove(&path);
            continue;
        }
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        match fs::metadata(&path) {
            Ok(meta) if meta.is_file() => files.push((meta.modified()?, path)),
            Ok(_) => {
                tracing::warn!(file = %path.display(), "not a regular file: not read");
            }
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot be read: skipped");
            }
        }
    }
    // oldest first, so the least recently written session is evicted first again
    files.sort();
    let (mut restored, mut damaged) = (0usize, 0usize);
    for (_, path) in &files {
        let read = read_file(path, store)?;
        restored += read.restored;
        damaged += read.damaged.len();
        if !read.damaged.is_empty() {
            report_damage(disk, path, &read.damaged);
        }
    }
    let compacted = compact(dir, &files, store, disk);
    tracing::info!(
        dir = %dir.display(),
        sessions = store.len(),
        events = restored,
        damaged_lines = damaged,
        compacted,
        "replay buffers restored"
    );
    Ok(())
}

/// What one file gave back.
#[derive(Debug, Default)]
struct FileRead {
    restored: usize,
    /// Line numbers (from 1) and bytes of the lines that are not whole stored events.
    damaged: Vec<(usize, Vec<u8>)>,
}

/// Admits every whole stored event of one file into `store`.
fn read_file(path: &Path, store: &mut Store) -> io::Result<FileRead> {
    let mut read = FileRead::default();
    let mut lines = BufReader::new(File::open(path)?);
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        if lines.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        // a last line without its `\n` is a torn write, whatever it reads as
        let whole = line.last() == Some(&b'\n');
        if whole {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) && whole {
            continue;
        }
        let event = match parse_line(&line, false) {
            Ok(Incoming {
                encoded,
                disposition: Disposition::Buffered,
                ..
            }) if whole => encoded,
            _ => {
                read.damaged.push((number, std::mem::take(&mut line)));
                continue;
            }
        };
        if store.admit(&event).outcome == Outcome::Held {
            read.restored += 1;
        }
    }
    Ok(read)
}

/// Reports the lines of `path` that were skipped, and keeps them in `{path}.damaged`.
fn report_damage(disk: &mut dyn Disk, path: &Path, damaged: &[(usize, Vec<u8>)]) {
    let numbers: Vec<usize> = damaged.iter().map(|(n, _)| *n).take(10).collect();
    let aside = path.with_extension("jsonl.damaged");
    tracing::warn!(
        file = %path.display(),
        lines = damaged.len(),
        first = ?numbers,
        kept_in = %aside.display(),
        "skipped journal lines that are not whole events (a torn write or a damaged byte); the rest replays"
    );
    let mut kept = Vec::new();
    for (_, line) in damaged {
        kept.extend_from_slice(line);
        kept.push(b'\n');
    }
    if let Err(e) = disk.append(&aside, &kept) {
        tracing::warn!(file = %aside.display(), error = %e, "could not keep the damaged lines");
    }
}

/// Rewrites each held session's file with exactly what the store holds, then removes
/// every file read that is no session's file now (evicted, or under an older name).
/// When a rewrite fails nothing is removed: the files stay as they were, whole. Whether
/// every rewrite was done.
fn compact(
    dir: &Path,
    read: &[(std::time::SystemTime, PathBuf)],
    store: &Store,
    disk: &mut dyn Disk,
) -> bool {
    let mut targets = HashSet::new();
    let mut done = true;
    for (session, events) in store.by_recency() {
        let target = dir.join(file_name(session));
        let lines: Vec<Bytes> = events.map(Encoded::json).collect();
        if let Err(e) = disk.replace(&target, &lines) {
            tracing::warn!(
                file = %target.display(),
                error = %e,
                "could not rewrite a session's journal; the files are left as they were"
            );
            done = false;
        }
        targets.insert(target);
    }
    if done {
        for (_, path) in read {
            if !targets.contains(path) {
                if let Err(e) = disk.remove(path) {
                    tracing::warn!(file = %path.display(), error = %e, "could not remove an old journal file");
                }
            }
        }
    }
    done
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
    waiting: Vec<(tokio::sync::oneshot::Sender<io::Result<()>>, Vec<usize>)>,
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
        done: tokio::sync::oneshot::Sender<io::Result<()>>,
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

/// A disk that fills up on command, for the tests of what a full disk does.
#[cfg(test)]
pub(crate) mod testing {
    use std::fs;
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;

    use super::{Disk, Fs};

    /// A disk that fills up on command and records what it synced.
    #[derive(Debug, Clone, Default)]
    pub(crate) struct Faulty {
        pub(crate) full: Arc<AtomicBool>,
        pub(crate) synced: Arc<Mutex<Vec<PathBuf>>>,
    }

    impl Faulty {
        fn check(&self) -> io::Result<()> {
            if self.full.load(Ordering::SeqCst) {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "No space left on device (injected)",
                ));
            }
            Ok(())
        }
    }

    impl Disk for Faulty {
        fn append(&mut self, file: &Path, lines: &[u8]) -> io::Result<()> {
            self.check()?;
            Fs::default().append(file, lines)
        }
        fn sync(&mut self, file: &Path) -> io::Result<()> {
            self.synced.lock().unwrap().push(file.to_owned());
            Fs::default().sync(file)
        }
        fn replace(&mut self, file: &Path, lines: &[Bytes]) -> io::Result<()> {
            self.check()?;
            Fs::default().replace(file, lines)
        }
        fn remove(&mut self, file: &Path) -> io::Result<()> {
            Fs::default().remove(file)
        }
    }

    pub(crate) struct TempDir(pub(crate) PathBuf);

    impl TempDir {
        pub(crate) fn new() -> TempDir {
            let dir = std::env::temp_dir().join(format!("aep-journal-{}", ulid::Ulid::new()));
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_session_name_is_one_safe_file_name() {
        let digest = |s: &str| aep_core::redact::ContentDigest::of_text(s).to_hex();
        assert_eq!(file_name("s_k1"), format!("s_k1-{}.jsonl", digest("s_k1")));
        for name in ["../etc/passwd", "a/b", "..", ".hidden", "x\0y", "", "é"] {
            let file = file_name(name);
            assert!(!file.starts_with('.'), "{file}");
            assert!(
                file.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "{file}"
            );
            assert!(file.ends_with(&format!("{}.jsonl", digest(name))), "{file}");
        }
        // a name of any length: the file name stays short, and names stay apart
        let long = "s".repeat(300);
        assert!(file_name(&long).len() < 100);
        assert_ne!(file_name(&long), file_name(&"s".repeat(301)));
    }

    use std::sync::atomic::Ordering;

    use aep_core::resume::{ReplayStart, ResumeFrom};

    use super::testing::{Faulty, TempDir};
    use crate::storage::Replayed;

    const LIMITS: Limits = Limits {
        events: 100,
        session_bytes: 1 << 20,
        sessions: 100,
        bytes: 1 << 24,
    };

    fn options(fsync: Fsync) -> Options {
        Options {
            fsync,
            interval: Duration::from_secs(60),
            limits: LIMITS,
        }
    }

    fn line(session: &str, seq: u64, data: &str) -> String {
        format!(
            r#"{{"aep":"0.1","id":"e{seq}","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"{session}","seq":{seq},"data":{{"t":"{data}"}}}}"#
        )
    }

    /// The seqs `storage` holds of `session`.
    fn held(storage: &dyn Storage, session: &str) -> Vec<u64> {
        let from = ResumeFrom::new(session, ReplayStart::EARLIEST);
        crate::memory::tests::replayed(storage, ReplayFrom::Sessions(vec![from]))
            .into_iter()
            .filter_map(|item| match item {
                Replayed::Event(e) => e.position().map(|p| p.seq()),
                Replayed::Gap { .. } => None,
            })
            .collect()
    }

    fn event(session: &str, seq: u64, data: &str) -> Encoded {
        parse_line(line(session, seq, data).as_bytes(), false)
            .unwrap()
            .encoded
    }

    /// A line cut inside a UTF-8 character, one with an invalid byte and a last line
    /// torn by a crash are skipped, reported and kept aside; every other line replays,
    /// and the session's file is rewritten with exactly those.
    #[test]
    fn damaged_lines_are_skipped_and_kept_aside_and_the_rest_replays() {
        let dir = TempDir::new();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(line("s", 1, "ok").as_bytes());
        bytes.push(b'\n');
        let cut = line("s", 2, "été");
        let at = cut.find('é').unwrap() + 1; // inside the two bytes of é
        bytes.extend_from_slice(&cut.as_bytes()[..at]);
        bytes.push(b'\n');
        let mut invalid = line("s", 3, "xyz").into_bytes();
        let x = invalid.iter().position(|&b| b == b'x').unwrap();
        invalid[x] = 0xff;
        bytes.extend_from_slice(&invalid);
        bytes.push(b'\n');
        bytes.extend_from_slice(line("s", 4, "ok").as_bytes());
        bytes.push(b'\n');
        let torn = line("s", 5, "ok");
        bytes.extend_from_slice(&torn.as_bytes()[..torn.len() - 1]);
        let old = dir.0.join("s.jsonl");
        fs::write(&old, &bytes).unwrap();

        let journal =
            Journal::open(&dir.0, options(Fsync::Batch), Box::new(Fs::default())).unwrap();
        assert_eq!(held(&journal, "s"), [1, 4]);
        drop(journal);
        let rewritten = fs::read_to_string(dir.0.join(file_name("s"))).unwrap();
        assert_eq!(
            rewritten,
            format!("{}\n{}\n", line("s", 1, "ok"), line("s", 4, "ok"))
        );
        assert!(!old.exists(), "the file under its old name was replaced");
        let aside = fs::read(dir.0.join("s.jsonl.damaged")).unwrap();
        assert_eq!(
            aside
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count(),
            3
        );
    }

    /// On a disk that cannot be written at start the relay still restores what it
    /// reads, and leaves the files as they were.
    #[test]
    fn a_full_disk_at_start_leaves_the_files_whole_and_restores_them() {
        let dir = TempDir::new();
        let path = dir.0.join("old-name.jsonl");
        let text = format!("{}\n{}\n", line("s", 1, "a"), line("s", 2, "b"));
        fs::write(&path, &text).unwrap();
        let disk = Faulty::default();
        disk.full.store(true, Ordering::SeqCst);
        let journal = Journal::open(&dir.0, options(Fsync::Batch), Box::new(disk)).unwrap();
        assert_eq!(held(&journal, "s"), [1, 2]);
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
        drop(journal);
    }

    /// An admission the disk cannot take is answered with the error, leaves the file as
    /// it was and the buffers without it, so the same event is admitted anew once the
    /// disk has room; with `always`, the answer comes after the sync.
    #[tokio::test]
    async fn an_admission_is_answered_after_its_write_or_with_why_not() {
        let dir = TempDir::new();
        let disk = Faulty::default();
        let journal =
            Journal::open(&dir.0, options(Fsync::Always), Box::new(disk.clone())).unwrap();
        let (e1, e2) = (event("s", 1, "x"), event("s", 2, "x"));
        let outcomes = journal.admit(&[&e1]).stored().await.unwrap();
        assert_eq!(outcomes.as_slice(), [Outcome::Held]);
        let file = dir.0.join(file_name("s"));
        assert_eq!(
            disk.synced.lock().unwrap().as_slice(),
            std::slice::from_ref(&file),
            "synced before the answer"
        );
        // a duplicate is answered at once: nothing to write
        assert!(matches!(journal.admit(&[&e1]), Admitting::Done(d) if d[0] == Outcome::Duplicate));
        disk.full.store(true, Ordering::SeqCst);
        let unstored = journal.admit(&[&e2]).stored().await.unwrap_err();
        assert_eq!(unstored.0.kind(), io::ErrorKind::StorageFull);
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            format!("{}\n", line("s", 1, "x"))
        );
        assert_eq!(held(&journal, "s"), [1], "taken back out of the buffers");
        disk.full.store(false, Ordering::SeqCst);
        let outcomes = journal.admit(&[&e2]).stored().await.unwrap();
        assert_eq!(outcomes.as_slice(), [Outcome::Held]);
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            format!("{}\n{}\n", line("s", 1, "x"), line("s", 2, "x"))
        );
    }

    /// A session evicted to make room loses its file, and its lines of the same batch
    /// are not written after the file is gone.
    #[tokio::test]
    async fn an_evicted_session_leaves_no_file_behind() {
        let dir = TempDir::new();
        let mut options = options(Fsync::Never);
        options.limits.sessions = 1;
        let journal = Journal::open(&dir.0, options, Box::new(Fs::default())).unwrap();
        let batch = [event("a", 1, "x"), event("b", 1, "x"), event("c", 1, "x")];
        let outcomes = journal
            .admit(&batch.iter().collect::<Vec<_>>())
            .stored()
            .await
            .unwrap();
        assert_eq!(outcomes.len(), 3);
        journal.flush();
        let mut files: Vec<String> = fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files, [file_name("c")]);
        assert_eq!(journal.sessions(), 1);
    }

    /// A file whose last line was torn gets that line ended before anything is
    /// appended, so one damaged line stays one.
    #[test]
    fn an_append_after_a_torn_line_starts_a_line_of_its_own() {
        let dir = TempDir::new();
        let file = dir.0.join("f.jsonl");
        fs::write(&file, b"{\"torn").unwrap();
        Fs::default().append(&file, b"{\"whole\":1}\n").unwrap();
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "{\"torn\n{\"whole\":1}\n"
        );
    }
}
