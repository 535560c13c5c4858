//! `aep sink --out DIR`: durable capture, one JSONL file per session, positions
//! committed only after the data is on disk.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aep::protocol::resume::{Position, Positions};
use aep::protocol::{Dedupe, Event};
use aep::{ResumePosition, SubscribeOptions};
use serde_json::json;

use crate::exit::{Exit, Failure, Outcome};
use crate::filter::SourceArgs;
use crate::follow::{Follow, Step};
use crate::state::StateFile;
use crate::term;

/// Capture a relay's events durably: one JSONL file per session in DIR.
///
/// Writes are batched (at most 500 ms or 64 events) and each batch is fsynced before
/// its positions are committed to the state file, so a crash leaves the state behind
/// the files, never ahead. On restart a torn last line (a write cut by the crash) is cut
/// off, and each session resumes after the highest `(epoch, seq)` its file holds (a
/// backfill written later does not move it back, AEP-0003 §7): the relay replays what
/// the files lost, and ids already written are not written again. SIGINT and
/// SIGTERM flush, sync, save and exit 0.
///
/// A session's file is `DIR/SESSION.jsonl`, the session name with every byte outside
/// `[A-Za-z0-9_-]` written `%XX`. With `--rotate-mb`, a full file is renamed
/// `SESSION.UNIXTIME.jsonl` and a new one started. Agent-scoped events (no session:
/// liveness, never buffered by a relay) are not captured.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: SourceArgs,
    /// The capture directory (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The state file [default: DIR/.sink-state.json].
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Rotate a session's file once it reaches this many MiB.
    #[arg(long, value_name = "MB")]
    rotate_mb: Option<u64>,
    /// `all`: also capture what the relay holds of sessions the files do not have yet.
    #[arg(long, value_name = "all", value_parser = ["all"])]
    from: Option<String>,
}

/// Longest a written event waits for its fsync.
const FLUSH_EVERY: Duration = Duration::from_millis(500);
/// Events that trigger a flush before the deadline.
const FLUSH_AT: usize = 64;
/// Ids remembered across restarts, read from the tail of each file.
const TAIL_BYTES: u64 = 4 << 20;

/// Runs the subcommand.
pub async fn run(args: Args) -> Outcome {
    let filter = args.source.filter.build()?;
    let mut capture = Capture::open(&args.out, args.rotate_mb.map(|mb| mb << 20))?;
    let state = StateFile::new(
        args.state
            .clone()
            .unwrap_or_else(|| args.out.join(".sink-state.json")),
        // sink has no --no-resume: the files keep the position of every session they hold
        "remove it to start over; each session with a capture file resumes from what its file holds",
    );
    // the files are the authority; the state only speaks for sessions with no file
    let mut positions: Positions = state.load()?.into_iter().collect();
    for p in capture.recovered() {
        positions.remove(p.session());
        positions.insert(p);
    }
    let resume = positions.to_vec();
    capture.committed = positions;
    let opts = SubscribeOptions::new().filter(filter);
    let opts = if args.from.is_some() {
        // `all` rides a request only while no position exists (AEP-0003 §5)
        if resume.is_empty() {
            opts.from_all()
        } else {
            opts.from_positions(resume)
        }
    } else if resume.is_empty() {
        opts
    } else {
        opts.from_positions(resume)
    };
    term::note(format!(
        "sink: capturing {} into {}",
        args.source.relay.base(),
        args.out.display()
    ));
    let mut follow = Follow::start(&args.source.relay, opts);
    let failure = loop {
        match follow.next().await {
            Step::End(failure) => break failure,
            Step::Event(event) => {
                capture.take(event);
                if capture.pending() >= FLUSH_AT {
                    follow.not_due();
                    if let Err(f) = capture.flush(&state) {
                        break Some(f);
                    }
                } else {
                    follow.due_in(FLUSH_EVERY);
                }
            }
            Step::Due => {
                if let Err(f) = capture.flush(&state) {
                    break Some(f);
                }
            }
        }
    };
    let failure = follow.close().or(failure);
    let flushed = capture.flush(&state);
    crate::term::print_json(&json!({
        "events": capture.written,
        "sessions": capture.committed.len(),
        "out": args.out.display().to_string(),
    }));
    match (failure, flushed) {
        (Some(f), _) | (None, Err(f)) => Err(f),
        (None, Ok(())) => Ok(Exit::Success),
    }
}

/// The capture directory: open files, events waiting for their fsync, the committed
/// positions and the ids already written.
struct Capture {
    dir: PathBuf,
    rotate: Option<u64>,
    files: HashMap<String, Open>,
    pending: Vec<Event>,
    /// Per session, the highest position written: a backfill below it (AEP-0003 §7)
    /// is written but does not move it back.
    committed: Positions,
    recovered: Vec<ResumePosition>,
    written_ids: Dedupe,
    written: u64,
}

struct Open {
    file: File,
    path: PathBuf,
    size: u64,
}

/// A file error: exit 6, naming the file.
fn file_error(path: &Path, what: &str, e: std::io::Error) -> Failure {
    Failure::input(format!("cannot {what} {}: {e}", path.display()))
}

impl Capture {
    /// Opens `dir`, repairs each live file's torn tail, and reads back what the files
    /// already hold.
    fn open(dir: &Path, rotate: Option<u64>) -> Result<Capture, Failure> {
        std::fs::create_dir_all(dir).map_err(|e| file_error(dir, "create", e))?;
        let mut capture = Capture {
            dir: dir.to_owned(),
            rotate,
            files: HashMap::new(),
            pending: Vec::new(),
            committed: Positions::new(),
            recovered: Vec::new(),
            written_ids: Dedupe::with_capacity(200_000),
            written: 0,
        };
        let entries = std::fs::read_dir(dir).map_err(|e| file_error(dir, "list", e))?;
        for entry in entries {
            let path = entry.map_err(|e| file_error(dir, "list", e))?.path();
            let Some(session) = live_session(&path) else {
                continue;
            };
            if let Some(at) = capture.recover(&path)? {
                capture
                    .recovered
                    .push(ResumePosition::new(session, at.epoch(), at.seq()));
            }
        }
        Ok(capture)
    }

    /// The resume positions the files hold.
    fn recovered(&self) -> Vec<ResumePosition> {
        self.recovered.clone()
    }

    /// Cuts a torn last line off `path` and returns the highest position its tail
    /// holds (not the last line's: that may be a backfill), noting the ids of the tail
    /// as written.
    fn recover(&mut self, path: &Path) -> Result<Option<Position>, Failure> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| file_error(path, "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| file_error(path, "read", e))?
            .len();
        let start = len.saturating_sub(TAIL_BYTES);
        file.seek(SeekFrom::Start(start))
            .map_err(|e| file_error(path, "read", e))?;
        let mut tail = Vec::new();
        file.read_to_end(&mut tail)
            .map_err(|e| file_error(path, "read", e))?;
        let keep = match tail.iter().rposition(|b| *b == b'\n') {
            Some(i) => i + 1,
            None if start == 0 => 0,
            None => tail.len(), // one line longer than the tail: leave it
        };
        if keep < tail.len() {
            let cut = tail.len() - keep;
            term::warn(format!(
                "{}: cut a torn last line ({cut} bytes) left by an interrupted write",
                path.display()
            ));
            file.set_len(start + keep as u64)
                .and_then(|()| file.sync_all())
                .map_err(|e| file_error(path, "repair", e))?;
            tail.truncate(keep);
        }
        let mut highest = None;
        // the first line of a tail read from the middle may be partial: skip it
        let lines = tail.split(|b| *b == b'\n').skip(usize::from(start > 0));
        for line in lines.filter(|l| !l.is_empty()) {
            if let Ok(e) = Event::from_slice(line) {
                self.written_ids.insert_event(&e);
                highest = highest.max(Position::of(&e));
            }
        }
        Ok(highest)
    }

    fn take(&mut self, event: Event) {
        if event.session().is_none() || !self.written_ids.insert_event(&event) {
            return;
        }
        self.pending.push(event);
    }

    fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Writes what is pending, syncs every file written, then commits the positions.
    fn flush(&mut self, state: &StateFile) -> Result<(), Failure> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut touched: Vec<String> = Vec::new();
        for event in std::mem::take(&mut self.pending) {
            let Some(session) = event.session().map(str::to_owned) else {
                continue;
            };
            let mut line = event.to_json();
            line.push('\n');
            let open = self.file(&session, line.len() as u64)?;
            open.file
                .write_all(line.as_bytes())
                .map_err(|e| file_error(&open.path, "write", e))?;
            open.size += line.len() as u64;
            self.committed.observe(&event);
            if !touched.contains(&session) {
                touched.push(session);
            }
            self.written += 1;
        }
        for session in &touched {
            if let Some(open) = self.files.get(session) {
                open.file
                    .sync_data()
                    .map_err(|e| file_error(&open.path, "sync", e))?;
            }
        }
        state
            .save(&self.committed.to_vec())
            .map_err(|e| file_error(state.path(), "write", e))
    }

    /// The open file of `session`, rotated first when `incoming` bytes would take it
    /// past the bound.
    fn file(&mut self, session: &str, incoming: u64) -> Result<&mut Open, Failure> {
        let full = match (self.rotate, self.files.get(session)) {
            (Some(bound), Some(open)) => open.size > 0 && open.size + incoming > bound,
            _ => false,
        };
        if full {
            if let Some(open) = self.files.remove(session) {
                open.file
                    .sync_all()
                    .map_err(|e| file_error(&open.path, "sync", e))?;
                let rotated = self.rotated_name(session);
                std::fs::rename(&open.path, &rotated)
                    .map_err(|e| file_error(&open.path, "rotate", e))?;
            }
        }
        if !self.files.contains_key(session) {
            let path = self.dir.join(format!("{}.jsonl", file_stem(session)));
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| file_error(&path, "open", e))?;
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            self.files
                .insert(session.to_owned(), Open { file, path, size });
        }
        self.files
            .get_mut(session)
            .ok_or_else(|| Failure::input(format!("no file for session {session}")))
    }

    fn rotated_name(&self, session: &str) -> PathBuf {
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let stem = file_stem(session);
        let mut path = self.dir.join(format!("{stem}.{stamp}.jsonl"));
        let mut n = 1;
        while path.exists() {
            path = self.dir.join(format!("{stem}.{stamp}-{n}.jsonl"));
            n += 1;
        }
        path
    }
}

/// A session name as a file name: `[A-Za-z0-9_-]` as is, every other byte `%XX`, so
/// no name climbs out of the directory and a live file has no dot in its stem.
pub fn file_stem(session: &str) -> String {
    aep::protocol::percent::encode(session.as_bytes(), |b| {
        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
    })
}

/// The session of a live capture file (`STEM.jsonl`, no dot in the stem); rotated
/// files (`STEM.TIME.jsonl`) and anything else are not live.
fn live_session(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".jsonl")?;
    if stem.is_empty() || stem.contains('.') {
        return None;
    }
    // every `%` starts the two hex digits of one byte, as `file_stem` wrote it
    aep::protocol::percent::decode(stem)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a panic is the failure report

    use super::*;

    fn event(id: &str, seq: u64) -> Event {
        Event::new(id, "tool.requested", "2026-07-03T10:00:00Z", "aep://t", "a")
            .with_session("s")
            .with_seq(seq)
    }

    #[test]
    fn a_backfill_neither_moves_the_state_nor_the_recovery_back() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("state.json"), "start over");
        let mut capture = Capture::open(dir.path(), None).unwrap();
        capture.take(event("a", 5));
        capture.take(event("b", 2)); // a backfill below the high-water mark
        capture.flush(&state).unwrap();
        assert_eq!(state.load().unwrap(), [ResumePosition::new("s", 0, 5)]);
        assert_eq!(file_lines(&dir.path().join("s.jsonl")), 2, "both written");
        drop(capture);
        let reopened = Capture::open(dir.path(), None).unwrap();
        assert_eq!(reopened.recovered(), [ResumePosition::new("s", 0, 5)]);
    }

    fn file_lines(path: &Path) -> usize {
        std::fs::read_to_string(path).unwrap().lines().count()
    }

    #[test]
    fn session_names_round_trip_through_file_names() {
        for s in ["s_8f2c", "a/b", "../up", "dots.in.name", "ünï", "%41", ""] {
            let stem = file_stem(s);
            assert!(!stem.contains('/') && !stem.contains('.'), "{stem}");
            if !s.is_empty() {
                let path = PathBuf::from(format!("{stem}.jsonl"));
                assert_eq!(live_session(&path).as_deref(), Some(s));
            }
        }
        assert_eq!(live_session(Path::new("s1.1700000000.jsonl")), None);
        assert_eq!(live_session(Path::new(".sink-state.json")), None);
        for torn in ["bad%zz.jsonl", "short%4.jsonl", "%%41.jsonl", "%.jsonl"] {
            assert_eq!(live_session(Path::new(torn)), None, "{torn}");
        }
    }
}
