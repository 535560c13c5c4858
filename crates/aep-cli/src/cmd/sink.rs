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
/// `[A-Za-z0-9_-]` written `%XX`; a name whose file name would pass 200 bytes is cut to
/// a readable prefix, `~` and a digest of the whole name (the session's name is inside
/// the file, on every line). With `--rotate-mb`, a full file is renamed
/// `SESSION.UNIXTIME.jsonl` and a new one started. Agent-scoped events (no session:
/// liveness, never buffered by a relay) are not captured.
///
/// A session whose file cannot be written is reported on stderr and left out (its
/// position is not committed, so a later run asks the relay for it again); the other
/// sessions go on. Only a failure of the whole capture (the disk full or read-only,
/// the state file unwritable) ends the run, exit 6.
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
        "unwritten": capture.unwritten,
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
    /// Events of sessions whose file could not be written.
    unwritten: u64,
    /// The sessions reported as failing (each is reported once).
    failing: std::collections::HashSet<String>,
}

/// A failure to write one session's file: the file, what was being done, the error.
type SessionError = (PathBuf, &'static str, std::io::Error);

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
            unwritten: 0,
            failing: std::collections::HashSet::new(),
        };
        let entries = std::fs::read_dir(dir).map_err(|e| file_error(dir, "list", e))?;
        for entry in entries {
            let path = entry.map_err(|e| file_error(dir, "list", e))?.path();
            let Some(live) = live_session(&path) else {
                continue;
            };
            let Some((at, held)) = capture.recover(&path)? else {
                continue;
            };
            let session = match live {
                Live::Named(session) => session,
                // the name is the file's own: the one its events carry, if that is the
                // name this file is for
                Live::Hashed(stem) => match held {
                    Some(session) if file_stem(&session) == stem => session,
                    _ => {
                        term::warn(format!(
                            "{}: its events do not name the session its file name is for; \
                             left alone",
                            path.display()
                        ));
                        continue;
                    }
                },
            };
            capture
                .recovered
                .push(ResumePosition::new(session, at.epoch(), at.seq()));
        }
        Ok(capture)
    }

    /// The resume positions the files hold.
    fn recovered(&self) -> Vec<ResumePosition> {
        self.recovered.clone()
    }

    /// Cuts a torn last line off `path` and returns the highest position its tail
    /// holds (not the last line's: that may be a backfill) with the session of that
    /// event, noting the ids of the tail as written.
    fn recover(&mut self, path: &Path) -> Result<Option<(Position, Option<String>)>, Failure> {
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
        let mut highest: Option<(Position, Option<String>)> = None;
        // the first line of a tail read from the middle may be partial: skip it
        let lines = tail.split(|b| *b == b'\n').skip(usize::from(start > 0));
        for line in lines.filter(|l| !l.is_empty()) {
            if let Ok(e) = Event::from_slice(line) {
                self.written_ids.insert_event(&e);
                if let Some(at) = Position::of(&e) {
                    if highest.as_ref().is_none_or(|(h, _)| at > *h) {
                        highest = Some((at, e.session().map(str::to_owned)));
                    }
                }
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

    /// Writes what is pending, syncs every file written, then commits the positions of
    /// the sessions written. A session that cannot be written is reported and left out
    /// (its position stays where it was); a failure of the whole capture is the error.
    fn flush(&mut self, state: &StateFile) -> Result<(), Failure> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut touched: Vec<String> = Vec::new();
        let mut failed: Vec<String> = Vec::new();
        let mut written = Vec::new();
        for event in std::mem::take(&mut self.pending) {
            let Some(session) = event.session().map(str::to_owned) else {
                continue;
            };
            if failed.contains(&session) {
                self.unwritten += 1;
                continue;
            }
            match self.write(&session, &event) {
                Ok(()) => {
                    written.push(event);
                    if !touched.contains(&session) {
                        touched.push(session);
                    }
                }
                Err(e) => {
                    self.session_failed(&session, e)?;
                    self.unwritten += 1;
                    failed.push(session);
                }
            }
        }
        for session in &touched {
            if failed.contains(session) {
                continue;
            }
            let Some(open) = self.files.get(session) else {
                continue;
            };
            if let Err(e) = open.file.sync_data() {
                let e = (open.path.clone(), "sync", e);
                self.session_failed(session, e)?;
                failed.push(session.clone());
            }
        }
        for event in &written {
            if event
                .session()
                .is_some_and(|s| failed.iter().any(|f| f == s))
            {
                self.unwritten += 1;
            } else {
                self.committed.observe(event);
                self.written += 1;
            }
        }
        state
            .save(&self.committed.to_vec())
            .map_err(|e| file_error(state.path(), "write", e))
    }

    /// Appends one event to its session's file; on a failure the file is cut back to
    /// where it was, so no torn line is left in the middle of it.
    fn write(&mut self, session: &str, event: &Event) -> Result<(), SessionError> {
        let mut line = event.to_json();
        line.push('\n');
        let open = self.file(session, line.len() as u64)?;
        if let Err(e) = open.file.write_all(line.as_bytes()) {
            let _ = open.file.set_len(open.size);
            return Err((open.path.clone(), "write", e));
        }
        open.size += line.len() as u64;
        Ok(())
    }

    /// A session whose file failed: reported the first time, its file closed (the next
    /// flush tries again). A failure no session escapes (the disk full or read-only)
    /// ends the capture.
    fn session_failed(
        &mut self,
        session: &str,
        (path, what, e): SessionError,
    ) -> Result<(), Failure> {
        use std::io::ErrorKind::{ReadOnlyFilesystem, StorageFull};
        if matches!(e.kind(), StorageFull | ReadOnlyFilesystem) {
            return Err(file_error(&path, what, e));
        }
        self.files.remove(session);
        if self.failing.insert(session.to_owned()) {
            term::warn(format!(
                "cannot {what} {} ({e}): session {session} is not captured; the other \
                 sessions go on, and a later run asks the relay for it again",
                path.display()
            ));
        }
        Ok(())
    }

    /// The open file of `session`, rotated first when `incoming` bytes would take it
    /// past the bound.
    fn file(&mut self, session: &str, incoming: u64) -> Result<&mut Open, SessionError> {
        let full = match (self.rotate, self.files.get(session)) {
            (Some(bound), Some(open)) => open.size > 0 && open.size + incoming > bound,
            _ => false,
        };
        if full {
            if let Some(open) = self.files.remove(session) {
                open.file
                    .sync_all()
                    .map_err(|e| (open.path.clone(), "sync", e))?;
                let rotated = self.rotated_name(session);
                std::fs::rename(&open.path, &rotated)
                    .map_err(|e| (open.path.clone(), "rotate", e))?;
            }
        }
        if !self.files.contains_key(session) {
            let path = self.dir.join(format!("{}.jsonl", file_stem(session)));
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| (path.clone(), "open", e))?;
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            self.files
                .insert(session.to_owned(), Open { file, path, size });
        }
        let path = self.dir.clone();
        self.files.get_mut(session).ok_or_else(|| {
            let e = std::io::Error::other("no open file");
            (path, "open a file in", e)
        })
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

/// The longest file stem: with a rotation stamp (`.UNIXTIME-N`) and `.jsonl` a file
/// name stays well under the 255 bytes file systems allow.
const MAX_STEM: usize = 200;

/// A session name as a file name: `[A-Za-z0-9_-]` as is, every other byte `%XX`, so
/// no name climbs out of the directory and a live file has no dot in its stem. A name
/// whose stem would pass [`MAX_STEM`] bytes (any emitter chooses session names: 30 CJK
/// characters are 270 bytes encoded) is its first bytes, `~` and the hex of the first
/// 16 bytes of its SHA-256 (`~` is never kept by the encoding, so the two forms never
/// meet); that file's name is read back from its events.
pub fn file_stem(session: &str) -> String {
    let encoded = aep::protocol::percent::encode(session.as_bytes(), |b| {
        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
    });
    if encoded.len() <= MAX_STEM {
        return encoded;
    }
    let digest = aep::protocol::redact::ContentDigest::of_text(session).to_hex();
    let mut cut = MAX_STEM - 1 - digest.len();
    // a readable prefix: never half of a `%XX`, nor half of a character
    while let Some(at) = encoded[..cut].rfind('%').filter(|at| at + 3 > cut) {
        cut = at;
    }
    while continues_a_char(&encoded[cut..]) {
        cut -= 3;
    }
    format!("{}~{digest}", &encoded[..cut])
}

/// Whether `rest` starts with the `%XX` of a UTF-8 continuation byte (`10xxxxxx`).
fn continues_a_char(rest: &str) -> bool {
    rest.strip_prefix('%')
        .and_then(|hex| hex.get(..2))
        .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        .is_some_and(|b| b & 0xc0 == 0x80)
}

/// What the name of a live capture file says of its session.
#[derive(Debug, PartialEq, Eq)]
enum Live {
    /// The session, decoded from the name.
    Named(String),
    /// A long name's stem (prefix, `~`, digest): the session is read from the file.
    Hashed(String),
}

/// The session of a live capture file (`STEM.jsonl`, no dot in the stem); rotated
/// files (`STEM.TIME.jsonl`) and anything else are not live.
fn live_session(path: &Path) -> Option<Live> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".jsonl")?;
    if stem.is_empty() || stem.contains('.') {
        return None;
    }
    if stem.contains('~') {
        return Some(Live::Hashed(stem.to_owned()));
    }
    // every `%` starts the two hex digits of one byte, as `file_stem` wrote it
    aep::protocol::percent::decode(stem).map(Live::Named)
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

    #[test]
    fn a_long_name_is_a_bounded_file_name_read_back_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("state.json"), "start over");
        let long = "会话".repeat(60);
        let stem = file_stem(&long);
        assert!(stem.len() <= MAX_STEM, "{}", stem.len());
        assert!(
            stem.starts_with("%E4%BC%9A") && stem.contains('~'),
            "{stem}"
        );
        assert_ne!(file_stem(&format!("{long}x")), stem, "one name, one file");
        let mut capture = Capture::open(dir.path(), None).unwrap();
        capture.take(event("a", 4).with_session(&long));
        capture.flush(&state).unwrap();
        assert_eq!(file_lines(&dir.path().join(format!("{stem}.jsonl"))), 1);
        drop(capture);
        let reopened = Capture::open(dir.path(), None).unwrap();
        assert_eq!(reopened.recovered(), [ResumePosition::new(long, 0, 4)]);
    }

    #[test]
    fn a_stem_never_ends_in_half_an_escape() {
        for pad in 0..6 {
            let name = format!("{}{}", "a".repeat(pad), "é".repeat(100));
            let stem = file_stem(&name);
            let prefix = stem.split('~').next().unwrap();
            assert!(aep::protocol::percent::decode(prefix).is_some(), "{stem}");
        }
    }

    #[test]
    fn a_session_that_cannot_be_written_is_left_out_and_the_rest_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("state.json"), "start over");
        let mut capture = Capture::open(dir.path(), None).unwrap();
        // a directory where the session's file should be: opening it fails
        std::fs::create_dir(dir.path().join("blocked.jsonl")).unwrap();
        capture.take(event("x", 1).with_session("blocked"));
        capture.take(event("a", 1));
        capture.flush(&state).unwrap();
        assert_eq!(state.load().unwrap(), [ResumePosition::new("s", 0, 1)]);
        assert_eq!((capture.written, capture.unwritten), (1, 1));
        capture.take(event("b", 2));
        capture.flush(&state).unwrap();
        assert_eq!(file_lines(&dir.path().join("s.jsonl")), 2);
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
                assert_eq!(live_session(&path), Some(Live::Named(s.to_owned())));
            }
        }
        assert_eq!(live_session(Path::new("s1.1700000000.jsonl")), None);
        assert_eq!(live_session(Path::new(".sink-state.json")), None);
        for torn in ["bad%zz.jsonl", "short%4.jsonl", "%%41.jsonl", "%.jsonl"] {
            assert_eq!(live_session(Path::new(torn)), None, "{torn}");
        }
    }
}
