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
//!   per file, and with [`Fsync::Always`](crate::Fsync::Always) one `fdatasync` per file per group. Each
//!   admission resolves with its own group, so its answer follows the write [`Fsync`](crate::Fsync)
//!   promises. A failed append is undone (the file cut back to its length before), its
//!   events taken back out of the buffers and the admission answered [`Unstored`], so a
//!   full disk is answered `507`, nothing is half-stored, and the same events sent again
//!   are admitted anew. A batch over several sessions whose write fails on one file is
//!   unstored whole, but the other files keep what was written to them: a restart reads
//!   those events back, and the emitter's retry of them is a duplicate then (AEP-0001
//!   §7.4), never a loss.
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

mod disk;
mod restore;
mod writer;

use std::io;
use std::path::Path;

use crate::encoded::Encoded;
use crate::memory::Memory;
use crate::storage::{Admitting, Outcome, Outcomes, Replay, ReplayFrom, Stamp, Storage, Unstored};
#[cfg(test)]
pub(crate) use disk::testing;
pub(crate) use disk::{Disk, Fs};
use writer::Files;
pub(crate) use writer::Options;

/// The replay buffers, mirrored to the session files of a data directory.
#[derive(Debug)]
pub(crate) struct Journal {
    memory: Memory,
    files: Files,
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
        restore::restore(dir, &mut memory.lock(), &mut *disk)?;
        let files = Files::start(dir, options, disk)?;
        Ok(Journal { memory, files })
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
        let withdraw = held.clone();
        let written = self.files.append(held);
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
            Err(Unstored::new(failed))
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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::time::Duration;

    use super::disk::file_name;
    use super::*;
    use crate::config::Fsync;
    use crate::line::parse_line;
    use crate::storage::Limits;

    use std::sync::atomic::Ordering;

    use aep_core::resume::{ReplayStart, ResumeFrom};

    use super::testing::{Faulty, TempDir};
    use crate::memory::tests::Item;

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
                Item::Event(e) => e.position().map(|p| p.seq()),
                Item::Gap { .. } => None,
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

    /// A journal syncing every write (`always`) in a new directory, on a disk whose
    /// faults the test injects.
    fn on_faulty_disk() -> (TempDir, Faulty, Journal) {
        let dir = TempDir::new();
        let disk = Faulty::default();
        let journal =
            Journal::open(&dir.0, options(Fsync::Always), Box::new(disk.clone())).unwrap();
        (dir, disk, journal)
    }

    /// An admission the disk cannot take is answered with the error, leaves the file as
    /// it was and the buffers without it, so the same event is admitted anew once the
    /// disk has room; with `always`, the answer comes after the sync.
    #[tokio::test]
    async fn an_admission_is_answered_after_its_write_or_with_why_not() {
        let (dir, disk, journal) = on_faulty_disk();
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
        assert_eq!(unstored.error.kind(), io::ErrorKind::StorageFull);
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

    /// A batch over two sessions whose second file cannot be written is answered
    /// unstored whole: the buffers hold none of it, though the first file keeps its
    /// line. The emitter's retry is admitted anew, and a restart then holds each event
    /// once (the first file's two copies deduped as live ingest dedupes).
    #[tokio::test]
    async fn a_batch_failing_on_one_of_its_files_is_unstored_whole_and_its_retry_held_once() {
        let (dir, disk, journal) = on_faulty_disk();
        let batch = [event("a", 1, "x"), event("b", 1, "x")];
        let batch: Vec<&Encoded> = batch.iter().collect();
        disk.full_for
            .lock()
            .unwrap()
            .push(dir.0.join(file_name("b")));
        let unstored = journal.admit(&batch).stored().await.unwrap_err();
        assert_eq!(unstored.error.kind(), io::ErrorKind::StorageFull);
        assert_eq!((held(&journal, "a"), held(&journal, "b")), (vec![], vec![]));
        assert!(!dir.0.join(file_name("b")).exists());
        disk.full_for.lock().unwrap().clear();
        let outcomes = journal.admit(&batch).stored().await.unwrap();
        assert_eq!(outcomes.as_slice(), [Outcome::Held, Outcome::Held]);
        drop(journal);
        let journal = Journal::open(&dir.0, options(Fsync::Always), Box::new(disk)).unwrap();
        assert_eq!(
            (held(&journal, "a"), held(&journal, "b")),
            (vec![1], vec![1])
        );
    }

    /// A rewrite cut short by a crash leaves its temporary file beside the whole one it
    /// was replacing: a restart removes it and reads the whole file.
    #[test]
    fn a_rewrite_cut_short_is_discarded_and_the_file_it_replaced_replays() {
        let dir = TempDir::new();
        let name = file_name("s");
        fs::write(dir.0.join(&name), format!("{}\n", line("s", 1, "a"))).unwrap();
        // of another file, so that the rewrite of this one at start does not reuse it
        let tmp = dir.0.join(format!(".{}.tmp", file_name("t")));
        fs::write(&tmp, line("t", 9, "cut short")).unwrap();
        let journal =
            Journal::open(&dir.0, options(Fsync::Batch), Box::new(Fs::default())).unwrap();
        assert_eq!(
            (held(&journal, "s"), held(&journal, "t")),
            (vec![1], vec![])
        );
        assert!(!tmp.exists());
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
}
