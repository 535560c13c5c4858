//! Where the journal's bytes go: the [`Disk`] seam every write goes through (so a test
//! can make the disk full), the file system behind it, and the name of a session's file.

use std::collections::HashSet;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;

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

    /// A disk that fills up on command (whole, or for some files) and records what it
    /// synced.
    #[derive(Debug, Clone, Default)]
    pub(crate) struct Faulty {
        pub(crate) full: Arc<AtomicBool>,
        /// Files that cannot be written while the rest of the disk can.
        pub(crate) full_for: Arc<Mutex<Vec<PathBuf>>>,
        pub(crate) synced: Arc<Mutex<Vec<PathBuf>>>,
    }

    impl Faulty {
        fn check(&self, file: &Path) -> io::Result<()> {
            if self.full.load(Ordering::SeqCst)
                || self.full_for.lock().unwrap().iter().any(|f| f == file)
            {
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
            self.check(file)?;
            Fs::default().append(file, lines)
        }
        fn sync(&mut self, file: &Path) -> io::Result<()> {
            self.synced.lock().unwrap().push(file.to_owned());
            Fs::default().sync(file)
        }
        fn replace(&mut self, file: &Path, lines: &[Bytes]) -> io::Result<()> {
            self.check(file)?;
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
    use std::fs;

    use super::testing::TempDir;
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
