//! Where `aep hook` keeps what outlives one hook process: the per-user state
//! directory, one state file per agent session under a file lock, the log of what it
//! refused.
//!
//! The directory (`--state-dir`, `AEP_HOOK_DIR`) defaults to `aep/hook` in the user's
//! state directory: `$XDG_STATE_HOME/aep/hook` (`~/.local/state/aep/hook`) on Linux,
//! `~/Library/Application Support/aep/hook` on macOS, `%LOCALAPPDATA%\aep\hook` on
//! Windows. Inside:
//!
//! - `sessions/{agent}/{session}.json`: the session's `SessionState` (its epoch, next
//!   `seq`, open run and tools, pending attention), `{session}.lock` beside it;
//! - `spool/{relay}/`: the events not yet delivered to that relay (see `spool`);
//! - `hook.log`: one line per payload refused or state replaced, cut to its newest
//!   half past 1 MiB.
//!
//! Positions never repeat (AEP-0001 §7): a state is saved before its events are
//! spooled, so a crash in between costs a gap, never a reused `seq`; a state that is
//! missing or unreadable is replaced by a new one whose epoch is the next the user's
//! `EpochStore` gives the `(agent, session)` (issue 33: every producer of `aep` takes its
//! epochs there, `emit`, `mcp` and `replay` too), above every epoch an earlier state of
//! that session took, even with the clock set back. Without a store (no per-user
//! directory, a store that cannot be written), the time in milliseconds, the store's
//! own fallback.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aep::emit::EpochStore;
use aep_adapters::session::SessionState;

/// The per-user default, when the platform has one.
pub fn default_dir() -> Option<PathBuf> {
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .map(|d| d.join("aep").join("hook"))
}

/// A file name for any text: `[A-Za-z0-9_-]` as is, every other byte `%XX` (the rule
/// `aep sink` names its files by), so no session or URL climbs out of its directory.
pub fn file_stem(text: &str) -> String {
    let stem = crate::cmd::sink::file_stem(text);
    if stem.is_empty() {
        "%00".to_owned()
    } else {
        stem
    }
}

/// An exclusive lock on a file, held until dropped (the descriptor closes; a process
/// that dies releases it too).
#[derive(Debug)]
pub struct Locked(#[allow(dead_code)] File);

/// Takes the exclusive lock on `path` (created if missing), waiting until `deadline`.
/// `Ok(None)`: another process held it the whole time.
pub fn lock(path: &Path, deadline: Instant) -> io::Result<Option<Locked>> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    let mut pause = Duration::from_millis(1);
    loop {
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => return Ok(Some(Locked(file))),
            Err(fs4::TryLockError::WouldBlock) => {}
            Err(fs4::TryLockError::Error(e)) => return Err(e),
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        // The holders keep a lock for one map and a few local writes: short waits.
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Writes `bytes` to `path` whole or not at all: a temporary file beside it, synced,
/// renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, path)
}

/// The milliseconds since the Unix epoch: the seed of a new epoch.
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The state directory of `aep hook`.
#[derive(Debug, Clone)]
pub struct HookDir {
    root: PathBuf,
    /// Where a new state takes its epoch.
    epochs: Option<EpochStore>,
}

/// A state file past this is not one this code wrote: replaced, not read.
const MAX_STATE: u64 = 16 << 20;

/// Where `hook.log` is cut.
const MAX_LOG: u64 = 1 << 20;

impl HookDir {
    /// The directory at `root`, its new states' epochs from the user's `EpochStore`.
    pub fn new(root: impl Into<PathBuf>) -> HookDir {
        HookDir {
            root: root.into(),
            epochs: EpochStore::user().ok(),
        }
    }

    aep::protocol::setters! {
        /// The same directory, new states taking their epochs from `store`.
        #[cfg(test)]
        pub fn epoch_store(store: EpochStore) => epochs = Some(store);
    }

    /// The epoch of a new state of `(agent, session)`: the next of the epoch store, else
    /// the time in milliseconds (logged).
    fn next_epoch(&self, agent: &str, session: &str) -> u64 {
        let Some(store) = &self.epochs else {
            return now_millis();
        };
        store.next_epoch(agent, session).unwrap_or_else(|e| {
            self.log(&format!("{e}; the new epoch is the time in milliseconds"));
            now_millis()
        })
    }

    /// Its path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of the spool for the relay at `base`.
    pub fn spool(&self, base: &str) -> PathBuf {
        self.root.join("spool").join(file_stem(base))
    }

    fn session_path(&self, agent: &str, session: &str, ext: &str) -> PathBuf {
        self.root
            .join("sessions")
            .join(file_stem(agent))
            .join(format!("{}.{ext}", file_stem(session)))
    }

    /// Locks one session's state until `deadline`; `None` if it stayed locked.
    pub fn lock_session(
        &self,
        agent: &str,
        session: &str,
        deadline: Instant,
    ) -> io::Result<Option<Locked>> {
        lock(&self.session_path(agent, session, "lock"), deadline)
    }

    /// Loads a session's state (hold its lock). A missing state is a new one; an
    /// unreadable one is logged and replaced; both start the next epoch of the epoch
    /// store.
    pub fn load_session(&self, agent: &str, session: &str) -> SessionState {
        let path = self.session_path(agent, session, "json");
        let fresh = || SessionState::new(session, self.next_epoch(agent, session));
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return fresh(),
            Err(e) => {
                self.log(&format!(
                    "{}: unreadable ({e}); a new epoch starts",
                    path.display()
                ));
                return fresh();
            }
        };
        let mut text = String::new();
        let read = Read::by_ref(&mut file)
            .take(MAX_STATE + 1)
            .read_to_string(&mut text);
        let parsed = match read {
            Ok(n) if (n as u64) <= MAX_STATE => {
                serde_json::from_str::<SessionState>(&text).map_err(|e| e.to_string())
            }
            Ok(_) => Err("larger than a state file can be".to_owned()),
            Err(e) => Err(e.to_string()),
        };
        match parsed {
            Ok(state) if state.session() == session => state,
            Ok(_) => {
                self.log(&format!(
                    "{}: another session's state; a new epoch starts",
                    path.display()
                ));
                fresh()
            }
            Err(e) => {
                self.log(&format!(
                    "{}: not a session state ({e}); a new epoch starts",
                    path.display()
                ));
                fresh()
            }
        }
    }

    /// Saves a session's state (hold its lock), whole or not at all.
    pub fn save_session(&self, agent: &str, state: &SessionState) -> io::Result<()> {
        let path = self.session_path(agent, state.session(), "json");
        let bytes = serde_json::to_vec(state).map_err(io::Error::other)?;
        write_atomic(&path, &bytes)
    }

    /// Appends one line to `hook.log` (best effort: a log that cannot be written must not
    /// fail the hook), cut to its newest half past 1 MiB.
    pub fn log(&self, line: &str) {
        let path = self.root.join("hook.log");
        let _ = fs::create_dir_all(&self.root);
        if fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG) {
            if let Ok(text) = fs::read(&path) {
                let half = text.len() / 2;
                let from = text[half..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(text.len(), |i| half + i + 1);
                let _ = write_atomic(&path, &text[from..]);
            }
        }
        let stamp = aep::protocol::envelope::rfc3339_millis(SystemTime::now());
        let mut text: String = line.chars().filter(|c| *c != '\n').take(2000).collect();
        text = format!("{stamp} {text}\n");
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(&path) {
            let _ = f.write_all(text.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a panic is the failure report

    use super::*;

    #[test]
    fn a_lost_or_broken_state_starts_a_later_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let store = EpochStore::at(dir.path().join("state/epochs.json"));
        let hooks = HookDir::new(dir.path()).epoch_store(store);
        let first = hooks.load_session("codex", "s/../1");
        hooks.save_session("codex", &first).unwrap();
        assert_eq!(hooks.load_session("codex", "s/../1"), first);
        // the file name never climbs out
        assert!(dir
            .path()
            .join("sessions/codex/s%2F%2E%2E%2F1.json")
            .is_file());
        std::fs::write(
            dir.path().join("sessions/codex/s%2F%2E%2E%2F1.json"),
            "{nope",
        )
        .unwrap();
        let again = hooks.load_session("codex", "s/../1");
        assert!(again.epoch() > first.epoch());
        let log = std::fs::read_to_string(dir.path().join("hook.log")).unwrap();
        assert!(log.contains("not a session state"), "{log}");
    }

    #[test]
    fn a_lost_state_takes_the_epoch_store_s_next_epoch_never_a_used_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = EpochStore::at(dir.path().join("state/epochs.json"));
        // An earlier state's epoch from a clock a day ahead: the clock alone would go
        // back below it.
        let ahead = SystemTime::now() + Duration::from_secs(86_400);
        let earlier = store.next_epoch_at("claude-code", "s1", ahead).unwrap();
        let hooks = HookDir::new(dir.path().join("hook")).epoch_store(store.clone());
        let mut state = hooks.load_session("claude-code", "s1");
        assert_eq!(state.epoch(), earlier + 1);
        let payload = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "go"});
        let factory = aep::protocol::envelope::EnvelopeFactory::new(
            "aep://h/agent/claude-code",
            "claude-code",
        );
        let used = state.apply(
            aep_adapters::Source::ClaudeCode,
            &aep_adapters::Moment::new(&payload),
            &aep_adapters::Posture::default(),
            &factory,
        );
        hooks.save_session("claude-code", &state).unwrap();
        // The state file is lost: the next state starts above every position used.
        std::fs::remove_dir_all(dir.path().join("hook/sessions")).unwrap();
        let again = hooks.load_session("claude-code", "s1");
        assert!(again.epoch() > used[0].epoch());
        assert_eq!(
            store.last_epoch("claude-code", "s1").unwrap(),
            Some(again.epoch())
        );
    }

    #[test]
    fn a_held_lock_is_waited_for_until_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = lock(&path, Instant::now()).unwrap();
        assert!(held.is_some());
        let other = lock(&path, Instant::now() + Duration::from_millis(30)).unwrap();
        assert!(other.is_none());
        drop(held);
        assert!(lock(&path, Instant::now()).unwrap().is_some());
    }
}
