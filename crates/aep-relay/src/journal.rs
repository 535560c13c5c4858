//! Durable replay (`--data-dir`): each session's buffer survives a restart.
//!
//! Every event admitted to a buffer is appended, as received, to an append-only JSONL
//! log per session (`{data-dir}/{session}.jsonl`, AEP-0003 §3.1's own durable format).
//! An evicted session's log is removed. At start the logs are read back through the same
//! admission as live ingest (so buffer depth and `(source, id)` dedupe hold), then each
//! log is rewritten with only what the buffer kept. A log that grows past four buffers
//! is trimmed to its last two while running.
//!
//! Writes happen on one background thread, so ingest never waits for the disk; a
//! graceful shutdown flushes everything. A crash loses at most what was queued.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use bytes::Bytes;

use crate::hub::{parse_line, Incoming};
use crate::proto::Disposition;
use crate::store::Store;

enum Op {
    Append(String, Bytes),
    Remove(String),
    Flush(mpsc::Sender<()>),
}

/// The writer of the per-session logs.
#[derive(Debug)]
pub(crate) struct Journal {
    tx: mpsc::Sender<Op>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::Append(s, b) => write!(f, "Append({s}, {} bytes)", b.len()),
            Op::Remove(s) => write!(f, "Remove({s})"),
            Op::Flush(_) => f.write_str("Flush"),
        }
    }
}

/// A session name as one safe file name: safe names pass unchanged, anything else is
/// percent-encoded, so a wire-chosen `session` can never escape the directory.
pub(crate) fn file_name(session: &str) -> String {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-';
    let plain = session
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric())
        && session.bytes().all(safe);
    let mut out = String::with_capacity(session.len() + 6);
    if plain {
        out.push_str(session);
    } else {
        for (i, b) in session.bytes().enumerate() {
            if safe(b) && !(i == 0 && b == b'.') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out.push_str(".jsonl");
    out
}

impl Journal {
    /// Reads every log in `dir` into `store`, compacts the logs, and starts the writer.
    pub(crate) fn open(dir: &Path, store: &mut Store, buffer: usize) -> io::Result<Journal> {
        fs::create_dir_all(dir)?;
        let mut logs: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                let modified = fs::metadata(&path)?.modified()?;
                logs.push((modified, path));
            }
        }
        // oldest first, so the least recently written session is evicted first again
        logs.sort();
        let mut restored = 0usize;
        for (_, path) in &logs {
            let mut session = None;
            for line in BufReader::new(File::open(path)?).lines() {
                let line = line?;
                let Ok(Incoming {
                    encoded,
                    disposition: Disposition::Buffered,
                    ..
                }) = parse_line(line.as_bytes(), false)
                else {
                    continue;
                };
                if let Some(s) = encoded.session().map(str::to_owned) {
                    let s = s.as_str();
                    if store.admit(s, encoded).admitted {
                        restored += 1;
                    }
                    session = Some(s.to_owned());
                }
            }
            match session {
                Some(s) => compact(dir, path, &s, store)?,
                None => fs::remove_file(path)?,
            }
        }
        tracing::info!(dir = %dir.display(), sessions = store.len(), events = restored, "replay buffers restored");
        let (tx, rx) = mpsc::channel();
        let dir = dir.to_owned();
        let thread = std::thread::Builder::new()
            .name("aep-relay-journal".into())
            .spawn(move || write_loop(&dir, &rx, buffer))?;
        Ok(Journal {
            tx,
            thread: Some(thread),
        })
    }

    pub(crate) fn append(&self, session: &str, json: Bytes) {
        let _ = self.tx.send(Op::Append(session.to_owned(), json));
    }

    pub(crate) fn remove(&self, session: &str) {
        let _ = self.tx.send(Op::Remove(session.to_owned()));
    }

    /// Waits until everything queued so far is written.
    pub(crate) fn flush(&self) {
        let (tx, rx) = mpsc::channel();
        if self.tx.send(Op::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.flush();
        let (tx, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.tx, tx));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Rewrites one log with exactly what the buffer holds of `session`.
fn compact(dir: &Path, path: &Path, session: &str, store: &Store) -> io::Result<()> {
    let part = store.replay(session, 0, -1);
    if part.events.is_empty() {
        return fs::remove_file(path);
    }
    let tmp = dir.join(format!(".{}.tmp", file_name(session)));
    let mut out = io::BufWriter::new(File::create(&tmp)?);
    for e in &part.events {
        out.write_all(&e.json())?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    drop(out);
    let target = dir.join(file_name(session));
    fs::rename(&tmp, &target)?;
    if target != path {
        let _ = fs::remove_file(path);
    }
    Ok(())
}

fn write_loop(dir: &Path, rx: &mpsc::Receiver<Op>, buffer: usize) {
    let mut lines: HashMap<String, usize> = HashMap::new();
    let keep = buffer.saturating_mul(2).max(1);
    let mut pending: Vec<Op> = Vec::new();
    while let Ok(op) = rx.recv() {
        pending.push(op);
        pending.extend(rx.try_iter());
        // group consecutive appends per session: one open and one write per group
        let mut batch: Vec<(String, Vec<u8>)> = Vec::new();
        for op in pending.drain(..) {
            match op {
                Op::Append(session, json) => {
                    match batch.last_mut().filter(|(s, _)| *s == session) {
                        Some((_, buf)) => {
                            buf.extend_from_slice(&json);
                            buf.push(b'\n');
                        }
                        None => {
                            let mut buf = json.to_vec();
                            buf.push(b'\n');
                            batch.push((session, buf));
                        }
                    }
                    if let Some(n) = lines.get_mut(&batch[batch.len() - 1].0) {
                        *n += 1;
                    } else {
                        lines.insert(batch[batch.len() - 1].0.clone(), 1);
                    }
                }
                Op::Remove(session) => {
                    write_batch(dir, &mut batch);
                    lines.remove(&session);
                    let _ = fs::remove_file(dir.join(file_name(&session)));
                }
                Op::Flush(done) => {
                    write_batch(dir, &mut batch);
                    let _ = done.send(());
                }
            }
        }
        write_batch(dir, &mut batch);
        for (session, n) in lines.iter_mut() {
            if *n > keep * 2 {
                if let Err(e) = trim(&dir.join(file_name(session)), keep) {
                    tracing::warn!(error = %e, "could not trim a replay log");
                }
                *n = keep;
            }
        }
    }
}

fn write_batch(dir: &Path, batch: &mut Vec<(String, Vec<u8>)>) {
    for (session, buf) in batch.drain(..) {
        let path = dir.join(file_name(&session));
        let written = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(&buf));
        if let Err(e) = written {
            tracing::warn!(error = %e, path = %path.display(), "could not append to a replay log");
        }
    }
}

/// Keeps the last `keep` lines of a log.
fn trim(path: &Path, keep: usize) -> io::Result<()> {
    let text = fs::read(path)?;
    let count = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    let skip = count.saturating_sub(keep);
    let kept: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .skip(skip)
        .collect();
    let tmp = path.with_extension("jsonl.tmp");
    let mut out = io::BufWriter::new(File::create(&tmp)?);
    for line in kept {
        out.write_all(line)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    drop(out);
    fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::file_name;

    #[test]
    fn session_names_cannot_escape_the_directory() {
        assert_eq!(file_name("s_k1"), "s_k1.jsonl");
        assert_eq!(file_name("01J0ABC"), "01J0ABC.jsonl");
        assert_eq!(file_name("../etc/passwd"), "%2E.%2Fetc%2Fpasswd.jsonl");
        assert_eq!(file_name("a/b"), "a%2Fb.jsonl");
        assert_eq!(file_name(".."), "%2E..jsonl");
        assert!(!file_name("x\0y").contains('\0'));
    }
}
