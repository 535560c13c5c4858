//! Scratch directories and the full disk, for the tests of what storage does.

use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary directory, removed with what it
/// holds on drop.
///
/// ```
/// let dir = aep_test_support::disk::TempDir::new("doc");
/// assert!(dir.path().is_dir());
/// let kept = dir.path().to_owned();
/// drop(dir);
/// assert!(!kept.exists());
/// ```
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// `aep-{purpose}-{ulid}`, created.
    pub fn new(purpose: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("aep-{purpose}-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `/dev/full` (a device every write to fails with ENOSPC) is there to stand
/// for a full disk. Linux has it, and a Linux machine without it fails the test; on
/// another system the test is skipped, saying so.
pub fn dev_full_or_skip(test: &str) -> bool {
    let full = Path::new("/dev/full").exists();
    if cfg!(target_os = "linux") {
        assert!(full, "Linux without /dev/full");
    } else if !full {
        eprintln!("skipped: {test} because it needs /dev/full (Linux)");
    }
    full
}
