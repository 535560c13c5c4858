//! A restart (see the journal's documentation): every session file read back through
//! the same admission as live ingest, damaged lines kept aside, the files rewritten with
//! what the buffers kept.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::disk::{file_name, Disk};
use crate::encoded::Encoded;
use crate::line::{parse_line, Incoming};
use crate::memory::Store;
use crate::proto::Disposition;
use crate::storage::Outcome;

/// Reads every session file in `dir` into `store` and rewrites the files with what it
/// kept (see the module documentation).
pub(super) fn restore(dir: &Path, store: &mut Store, disk: &mut dyn Disk) -> io::Result<()> {
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
