//! [`EpochStore`]: the last epoch each `(agent, session)` took, in one small file per
//! user, so a restarted producer never writes at a position an earlier run used
//! (AEP-0001 §7 rule 2).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The variable naming the directory of the per-user state (the epoch store's file is
/// `epochs.json` in it).
///
/// ```
/// assert_eq!(aep_async::emit::STATE_DIR_VAR, "AEP_STATE_DIR");
/// ```
pub const STATE_DIR_VAR: &str = "AEP_STATE_DIR";

/// The file name of the store in the state directory.
const FILE: &str = "epochs.json";

/// The largest store file read: 4096 entries take about 400 KiB. A larger one is not
/// this store's (or is damaged) and is set aside unread.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// What the file says it is.
const FORMAT: &str = "aep-epochs/1";

/// Why the store could not give an epoch.
///
/// ```
/// use aep_async::emit::EpochError;
/// assert!(EpochError::NoLocation.to_string().contains("AEP_STATE_DIR"));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum EpochError {
    /// Neither `AEP_STATE_DIR` nor a per-user directory of the platform is known.
    #[error("no per-user state directory is known for the epoch store: set AEP_STATE_DIR to a directory")]
    NoLocation,
    /// A file operation failed.
    #[error("epoch store {path}: {action}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: Arc<io::Error>,
    },
    /// Another process held the lock for longer than the store waits.
    #[error("epoch store {path}: another process held its lock for {waited:?}; if none is running, remove {path}.lock")]
    Locked {
        /// The store's file.
        path: PathBuf,
        /// How long the store waited.
        waited: Duration,
    },
}

/// One `(agent, session)` and the last epoch it took.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    agent: String,
    session: String,
    epoch: u64,
}

/// The file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Content {
    format: String,
    /// The largest epoch of an entry evicted for room: an `(agent, session)` not in the
    /// file may be one of them, so it starts above it.
    floor: u64,
    /// Least recently taken first.
    sessions: Vec<Entry>,
}

/// The last epoch each `(agent, session)` took, kept in one JSON file per user under a
/// file lock (AEP-0001 §7 rule 2: an emitter MUST increment `epoch` on restart and MUST
/// NOT reuse an earlier one within a session, "which takes durable epoch memory or a
/// monotonic seed such as a startup timestamp").
///
/// It keeps both: [`next_epoch`](Self::next_epoch) gives the current Unix time in
/// milliseconds, or one more than the last epoch the pair took if that is larger (a
/// restart within the same millisecond, a clock set back), and records it. So epochs
/// keep increasing across restarts, processes and crashes, and a store that cannot be
/// written leaves the timestamp seed, which an emitter falls back on.
///
/// **Where**: `epochs.json` in `$AEP_STATE_DIR` when set, else in the platform's
/// per-user state directory, `aep` in it: `$XDG_STATE_HOME/aep` or
/// `~/.local/state/aep` on Linux, `~/Library/Application Support/aep` on macOS,
/// `%LOCALAPPDATA%\aep` on Windows ([`default_path`](Self::default_path)). The lock is
/// `epochs.json.lock` beside it; a write goes to a temporary file renamed over the old
/// one, so a crash leaves the old store or the new. A damaged file is set aside as
/// `epochs.json.damaged` and the store starts over from the timestamp seed.
///
/// **Bounded**: the 4096 pairs most recently started are kept
/// ([`capacity`](Self::capacity)); an evicted pair that starts again begins above the
/// largest epoch ever evicted.
///
/// ```
/// use aep_async::emit::EpochStore;
/// # let dir = std::env::temp_dir().join(format!("aep-epoch-doc-{}", std::process::id()));
/// let store = EpochStore::at(dir.join("epochs.json"));
/// let first = store.next_epoch("coder", "s1")?;
/// let second = store.next_epoch("coder", "s1")?;
/// assert!(second > first);
/// assert_eq!(store.last_epoch("coder", "s1")?, Some(second));
/// assert_eq!(store.last_epoch("coder", "s2")?, None);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), aep_async::emit::EpochError>(())
/// ```
#[derive(Debug, Clone)]
pub struct EpochStore {
    path: PathBuf,
    capacity: usize,
    lock_wait: Duration,
}

impl EpochStore {
    /// How many `(agent, session)` pairs a store keeps, by default.
    pub const DEFAULT_CAPACITY: usize = 4096;

    /// A store in the file `path` (created, with its directory, when first written).
    pub fn at(path: impl Into<PathBuf>) -> EpochStore {
        EpochStore {
            path: path.into(),
            capacity: Self::DEFAULT_CAPACITY,
            lock_wait: Duration::from_secs(10),
        }
    }

    /// The user's store, at [`default_path`](Self::default_path).
    ///
    /// ```
    /// use aep_async::emit::{EpochError, EpochStore};
    /// match EpochStore::user() {
    ///     Ok(store) => assert!(store.path().ends_with("epochs.json")),
    ///     Err(EpochError::NoLocation) => println!("no home directory: set AEP_STATE_DIR"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), aep_async::emit::EpochError>(())
    /// ```
    pub fn user() -> Result<EpochStore, EpochError> {
        Self::default_path()
            .map(EpochStore::at)
            .ok_or(EpochError::NoLocation)
    }

    /// `epochs.json` in `$AEP_STATE_DIR`, or in `aep` in the platform's per-user state
    /// directory (`dirs::state_dir`, else `dirs::data_local_dir`); `None` when neither
    /// is known.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os(STATE_DIR_VAR).filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join(FILE));
        }
        dirs::state_dir()
            .or_else(dirs::data_local_dir)
            .map(|d| d.join("aep").join(FILE))
    }

    aep_core::setters! {
        /// Keeps the `capacity` pairs most recently started (at least one).
        pub fn capacity(capacity: usize) => capacity = capacity.max(1);

        /// How long to wait for another process's lock before [`EpochError::Locked`]
        /// (default 10 s).
        pub fn lock_wait(wait: Duration) => lock_wait = wait;
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the next epoch of `(agent, session)` and records it: the current Unix time
    /// in milliseconds, or more when the pair (or an evicted one) took that much
    /// already.
    pub fn next_epoch(&self, agent: &str, session: &str) -> Result<u64, EpochError> {
        self.next_epoch_at(agent, session, SystemTime::now())
    }

    /// [`next_epoch`](Self::next_epoch) with the clock reading `now`.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use aep_async::emit::EpochStore;
    /// # let dir = std::env::temp_dir().join(format!("aep-epoch-at-{}", std::process::id()));
    /// let store = EpochStore::at(dir.join("epochs.json"));
    /// let later = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
    /// assert_eq!(store.next_epoch_at("a", "s", later)?, 2_000_000_000_000);
    /// // The clock set back a day: the epoch still increases.
    /// assert_eq!(store.next_epoch_at("a", "s", later - Duration::from_secs(86_400))?, 2_000_000_000_001);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), aep_async::emit::EpochError>(())
    /// ```
    pub fn next_epoch_at(
        &self,
        agent: &str,
        session: &str,
        now: SystemTime,
    ) -> Result<u64, EpochError> {
        let _lock = self.lock()?;
        let mut content = self.read()?;
        let at = content
            .sessions
            .iter()
            .position(|e| e.agent == agent && e.session == session);
        let last = at.map(|i| content.sessions.remove(i).epoch);
        let epoch = [
            Some(unix_millis(now)),
            last.map(|e| e.saturating_add(1)),
            Some(content.floor.saturating_add(1)),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or_default();
        content.sessions.push(Entry {
            agent: agent.to_owned(),
            session: session.to_owned(),
            epoch,
        });
        let over = content.sessions.len().saturating_sub(self.capacity);
        for evicted in content.sessions.drain(..over) {
            content.floor = content.floor.max(evicted.epoch);
        }
        self.write(&content)?;
        Ok(epoch)
    }

    /// The last epoch `(agent, session)` took, if the store holds it.
    pub fn last_epoch(&self, agent: &str, session: &str) -> Result<Option<u64>, EpochError> {
        let _lock = self.lock()?;
        Ok(self
            .read()?
            .sessions
            .iter()
            .find(|e| e.agent == agent && e.session == session)
            .map(|e| e.epoch))
    }

    fn io(&self, path: &Path, action: &'static str) -> impl Fn(io::Error) -> EpochError {
        let path = path.to_owned();
        move |e| EpochError::Io {
            path: path.clone(),
            action,
            source: Arc::new(e),
        }
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(suffix);
        self.path.with_file_name(name)
    }

    /// Takes the lock file's exclusive lock, waiting at most `lock_wait`; released when
    /// the returned file is dropped.
    fn lock(&self) -> Result<File, EpochError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(self.io(dir, "creating its directory"))?;
        }
        let path = self.sibling(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(self.io(&path, "opening its lock file"))?;
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            // Through the trait: std's inherent `File::try_lock` (rustc 1.89) would
            // shadow it where it exists.
            match fs4::FileExt::try_lock(&file) {
                Ok(()) => return Ok(file),
                Err(fs4::TryLockError::WouldBlock) => {}
                Err(fs4::TryLockError::Error(e)) => {
                    return Err(self.io(&path, "locking")(e));
                }
            }
            if started.elapsed() >= self.lock_wait {
                return Err(EpochError::Locked {
                    path: self.path.clone(),
                    waited: self.lock_wait,
                });
            }
            // A holder keeps the lock for one read and one write: a short wait, backing
            // off a little, is all another process ever needs.
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// The store's content; empty when there is no file. A file that is not a store is
    /// set aside and the store starts over (the timestamp seed keeps epochs above what
    /// it held).
    fn read(&self) -> Result<Content, EpochError> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(fresh()),
            Err(e) => return Err(self.io(&self.path, "reading")(e)),
        };
        let mut text = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(self.io(&self.path, "reading"))?;
        let parsed = (text.len() as u64 <= MAX_FILE_BYTES)
            .then(|| serde_json::from_slice::<Content>(&text).ok())
            .flatten()
            .filter(|c| c.format == FORMAT);
        match parsed {
            Some(content) => Ok(content),
            None => {
                let aside = self.sibling(".damaged");
                tracing::warn!(
                    path = %self.path.display(),
                    aside = %aside.display(),
                    "the epoch store is damaged: set aside, starting over from the clock"
                );
                std::fs::rename(&self.path, &aside)
                    .map_err(self.io(&self.path, "setting the damaged file aside"))?;
                Ok(fresh())
            }
        }
    }

    /// Writes `content` whole to a temporary file, then renames it over the store.
    fn write(&self, content: &Content) -> Result<(), EpochError> {
        let tmp = self.sibling(&format!(".tmp-{}", std::process::id()));
        let text = serde_json::to_vec(content).map_err(|e| EpochError::Io {
            path: self.path.clone(),
            action: "serializing",
            source: Arc::new(io::Error::other(e)),
        })?;
        let written = File::create(&tmp).and_then(|mut f| {
            f.write_all(&text)?;
            f.sync_all()
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.io(&tmp, "writing")(e));
        }
        std::fs::rename(&tmp, &self.path).map_err(self.io(&self.path, "replacing"))?;
        // The rename is durable once the directory is: a lost update could hand an
        // epoch out twice after a power cut.
        #[cfg(unix)]
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(())
    }
}

fn fresh() -> Content {
    Content {
        format: FORMAT.to_owned(),
        ..Content::default()
    }
}

fn unix_millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The epoch an emitter takes when its store fails: the timestamp seed AEP-0001 §7
/// names, kept increasing within the process.
pub(crate) fn fallback_epoch() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = unix_millis(SystemTime::now());
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last.saturating_add(1));
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn dir(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("aep-epoch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        Dir(d)
    }
    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn pairs_are_apart_and_epochs_only_increase() {
        let d = dir("pairs");
        let store = EpochStore::at(d.0.join("epochs.json"));
        assert_eq!(store.next_epoch_at("a", "s", at(10)).unwrap(), 10_000);
        assert_eq!(store.next_epoch_at("a", "s", at(10)).unwrap(), 10_001);
        assert_eq!(store.next_epoch_at("a", "s", at(5)).unwrap(), 10_002);
        assert_eq!(store.next_epoch_at("b", "s", at(5)).unwrap(), 5_000);
        assert_eq!(store.next_epoch_at("a", "t", at(5)).unwrap(), 5_000);
        assert_eq!(store.next_epoch_at("a", "s", at(20)).unwrap(), 20_000);
        assert_eq!(store.last_epoch("b", "s").unwrap(), Some(5_000));
    }

    #[test]
    fn eviction_keeps_a_floor() {
        let d = dir("evict");
        let store = EpochStore::at(d.0.join("epochs.json")).capacity(2);
        store.next_epoch_at("a", "s1", at(100)).unwrap();
        store.next_epoch_at("a", "s1", at(100)).unwrap(); // 100_001
        store.next_epoch_at("a", "s2", at(1)).unwrap();
        store.next_epoch_at("a", "s3", at(1)).unwrap(); // evicts s1
        assert_eq!(store.last_epoch("a", "s1").unwrap(), None);
        // s1 comes back with the clock behind: above everything evicted.
        assert_eq!(store.next_epoch_at("a", "s1", at(1)).unwrap(), 100_002);
    }

    #[test]
    fn a_damaged_file_is_set_aside() {
        let d = dir("damaged");
        std::fs::create_dir_all(&d.0).unwrap();
        let path = d.0.join("epochs.json");
        std::fs::write(&path, b"{not json").unwrap();
        let store = EpochStore::at(&path);
        assert_eq!(store.next_epoch_at("a", "s", at(7)).unwrap(), 7_000);
        assert_eq!(
            std::fs::read(d.0.join("epochs.json.damaged")).unwrap(),
            b"{not json"
        );
        // Another format is not this store's either.
        std::fs::write(&path, br#"{"format": "other", "floor": 0, "sessions": []}"#).unwrap();
        assert_eq!(store.last_epoch("a", "s").unwrap(), None);
    }

    #[test]
    fn a_held_lock_is_waited_for_then_refused() {
        let d = dir("locked");
        let store = EpochStore::at(d.0.join("epochs.json")).lock_wait(Duration::from_millis(30));
        let held = store.lock().unwrap();
        let err = store.next_epoch("a", "s").unwrap_err();
        assert!(matches!(err, EpochError::Locked { .. }), "{err}");
        drop(held);
        store.next_epoch("a", "s").unwrap();
    }

    #[test]
    fn concurrent_takers_never_share_an_epoch() {
        let d = dir("concurrent");
        let path = d.0.join("epochs.json");
        let taken: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let store = EpochStore::at(&path);
                    s.spawn(move || {
                        (0..25)
                            .map(|_| store.next_epoch_at("a", "s", at(1)).unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let mut sorted = taken.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 100);
        assert_eq!(sorted.last(), Some(&1_099));
    }

    #[test]
    fn the_fallback_increases() {
        let a = fallback_epoch();
        let b = fallback_epoch();
        assert!(b > a);
    }
}
