//! Resume positions kept in a file between runs: written whole to a temporary file and
//! renamed over the old one, so a crash leaves the old state or the new, never half.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use aep::ResumePosition;
use serde_json::Value;

use crate::exit::Failure;

/// The largest state file read: a million sessions' positions fit. Anything larger is
/// not a state file (a `--state` pointing at the wrong file, `/dev/zero`), and is
/// refused before it is held in memory.
const MAX_STATE_BYTES: u64 = 64 << 20;

/// A file of resume positions: a JSON array of `{session, epoch, seq}` (the SDK's
/// `ResumePosition`). The reference CLI's map form, `{"SESSION": {"epoch": E, "seq":
/// S}}`, is read too.
#[derive(Debug, Clone)]
pub struct StateFile {
    path: PathBuf,
    /// How to start over when the file cannot be used: each subcommand has its own way.
    start_over: &'static str,
}

impl StateFile {
    /// The state file at `path`; `start_over` ends the message of a file that cannot be
    /// used (`remove it or pass --no-resume`).
    pub fn new(path: impl Into<PathBuf>, start_over: &'static str) -> StateFile {
        StateFile {
            path: path.into(),
            start_over,
        }
    }

    /// `NAME` in the user's data directory (`~/.local/share/aep/NAME` on Linux), if the
    /// platform has one.
    pub fn default_path(name: &str) -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("aep").join(name))
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved positions; none when the file does not exist. A file that cannot be
    /// read, is larger than 64 MiB, or is not a state file is exit 6, naming it and how
    /// to start over.
    pub fn load(&self) -> Result<Vec<ResumePosition>, Failure> {
        let shown = self.path.display();
        let unreadable = |e: std::io::Error| {
            Failure::input(format!(
                "cannot read the state file {shown}: {e}; {}",
                self.start_over
            ))
        };
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(unreadable(e)),
        };
        let mut text = String::new();
        file.take(MAX_STATE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(unreadable)?;
        if text.len() as u64 > MAX_STATE_BYTES {
            return Err(Failure::input(format!(
                "the state file {shown} is over {} MiB, more than any list of resume positions: check that it is the state file; {}",
                MAX_STATE_BYTES >> 20,
                self.start_over
            )));
        }
        let bad = |why: String| {
            Failure::input(format!(
                "the state file {shown} is not a list of resume positions ({why}); {}",
                self.start_over
            ))
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        match value {
            Value::Array(_) => serde_json::from_value(value).map_err(|e| bad(e.to_string())),
            Value::Object(map) => map
                .into_iter()
                .map(|(session, at)| {
                    let field = |k: &str| at.get(k).and_then(Value::as_u64);
                    // a missing epoch is 0; one that is there must be a number
                    let epoch = match at.get("epoch") {
                        None => Some(0),
                        Some(_) => field("epoch"),
                    };
                    match (epoch, field("seq")) {
                        (Some(epoch), Some(seq)) => Ok(ResumePosition::new(session, epoch, seq)),
                        _ => Err(bad(format!(
                            "`{session}` needs a seq and an epoch that are non-negative integers"
                        ))),
                    }
                })
                .collect(),
            _ => Err(bad("neither an array nor an object".into())),
        }
    }

    /// Replaces the saved positions, creating the directory if needed.
    pub fn save(&self, positions: &[ResumePosition]) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut file = std::fs::File::create(&tmp)?;
        serde_json::to_writer(&mut file, positions)?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &self.path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a panic is the failure report

    use super::*;

    fn load(text: &str) -> Result<Vec<ResumePosition>, Failure> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, text).unwrap();
        StateFile::new(&path, "start over").load()
    }

    #[test]
    fn the_array_and_the_map_form_are_read() {
        let saved = load(r#"[{"session":"a","epoch":2,"seq":7}]"#).unwrap();
        assert_eq!(saved, [ResumePosition::new("a", 2, 7)]);
        let saved = load(r#"{"a":{"epoch":2,"seq":7},"b":{"seq":1}}"#).unwrap();
        assert_eq!(
            saved,
            [
                ResumePosition::new("a", 2, 7),
                ResumePosition::new("b", 0, 1)
            ]
        );
    }

    #[test]
    fn garbage_is_exit_6_naming_the_file_and_how_to_start_over() {
        for garbage in [
            "",
            "{not json",
            r#"[{"session":"a","epoch":1,"se"#, // a write cut short
            "7",
            r#"[{"session":"a"}]"#,
            r#"{"a":{"epoch":1}}"#,
            r#"{"a":{"epoch":"x","seq":3}}"#,
            r#"{"a":{"epoch":-1,"seq":3}}"#,
            r#"{"a":5}"#,
        ] {
            refused(&load(garbage).expect_err(garbage), "state.json");
        }
    }

    /// Asserts `e` is exit 6, says `says`, and ends with how to start over.
    fn refused(e: &Failure, says: &str) {
        assert_eq!(e.exit(), crate::exit::Exit::Input, "{e}");
        let text = e.to_string();
        assert!(
            text.contains(says) && text.ends_with("; start over"),
            "{text}"
        );
    }

    #[test]
    fn a_file_too_large_to_be_a_state_file_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.json");
        // sparse: no disk is spent on it
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_STATE_BYTES + 1).unwrap();
        let e = StateFile::new(&path, "start over").load();
        refused(&e.expect_err("too large"), "huge.json is over 64 MiB");
    }

    #[test]
    fn a_missing_file_is_no_state_and_a_directory_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let missing = StateFile::new(dir.path().join("absent.json"), "start over");
        assert_eq!(missing.load().unwrap(), []);
        let e = StateFile::new(dir.path(), "start over").load();
        refused(&e.expect_err("a directory"), "cannot read the state file");
    }
}
