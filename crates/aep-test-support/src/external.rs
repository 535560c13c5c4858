//! Tests that need what Cargo does not bring: the protocol's shared directory (the
//! reference relay, the live checker), Node, `rustfmt`.
//!
//! The convention: `AEP_SHARED` names the shared directory (by default `shared` beside the
//! workspace root, that is `../shared` from it). Where something is missing, such a test
//! skips at once, printing `skipped: TEST because WHY` on stderr; with
//! `AEP_REQUIRE_EXTERNAL=1` (as `.ci/run` sets) the skip is a failure instead, so that CI,
//! which provides everything, cannot pass by skipping.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The shared directory: `AEP_SHARED` (when set and not empty), or `shared` beside the
/// workspace root.
pub fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AEP_SHARED").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    // crates/aep-test-support -> crates -> the workspace root -> the directory holding it
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match manifest.ancestors().nth(3) {
        Some(beside) => beside.join("shared"),
        None => manifest.join("../../../shared"),
    }
}

/// `relative` under the shared directory, or why it is not there.
pub fn shared_file(relative: &str) -> Result<PathBuf, String> {
    let path = shared_dir().join(relative);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is absent (AEP_SHARED names the shared directory)",
            path.display()
        ))
    }
}

/// Why `program --version` does not run here, if it does not: a program that is absent
/// and one that cannot run are the same to a test.
pub fn program_missing(program: impl AsRef<OsStr>) -> Option<String> {
    let program = program.as_ref();
    let probe = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match probe {
        Ok(status) if status.success() => None,
        Ok(status) => Some(format!(
            "`{} --version` failed ({status})",
            program.to_string_lossy()
        )),
        Err(e) => Some(format!(
            "{} cannot be started ({e})",
            program.to_string_lossy()
        )),
    }
}

/// Whether the calling test must skip because `missing` says what it lacks: prints
/// `skipped: TEST because ...` on stderr and returns `true`. With
/// `AEP_REQUIRE_EXTERNAL=1` it panics instead.
///
/// ```
/// assert!(!aep_test_support::external::skip_for(None));
/// ```
pub fn skip_for(missing: Option<&str>) -> bool {
    let Some(why) = missing else {
        return false;
    };
    let current = std::thread::current();
    let test = current.name().unwrap_or("this test");
    if std::env::var_os("AEP_REQUIRE_EXTERNAL").is_some_and(|v| v == "1") {
        panic!("{test} cannot run: {why} (AEP_REQUIRE_EXTERNAL=1 makes this a failure)");
    }
    // Straight to stderr: the test harness captures `eprintln!` of a passing test.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {test} because {why} (AEP_REQUIRE_EXTERNAL=1 makes this a failure)"
    );
    true
}
