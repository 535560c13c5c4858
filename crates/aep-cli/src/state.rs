//! Resume positions kept in a file between runs: written whole to a temporary file and
//! renamed over the old one, so a crash leaves the old state or the new, never half.

use std::io::Write;
use std::path::{Path, PathBuf};

use aep::ResumePosition;
use serde_json::Value;

use crate::exit::Failure;

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
    /// read or is not a state file is exit 6, naming it and how to start over.
    pub fn load(&self) -> Result<Vec<ResumePosition>, Failure> {
        let shown = self.path.display();
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(Failure::input(format!(
                    "cannot read the state file {shown}: {e}; {}",
                    self.start_over
                )))
            }
        };
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
            "7",
            r#"[{"session":"a"}]"#,
            r#"{"a":{"epoch":1}}"#,
            r#"{"a":{"epoch":"x","seq":3}}"#,
            r#"{"a":{"epoch":-1,"seq":3}}"#,
            r#"{"a":5}"#,
        ] {
            let e = load(garbage).expect_err(garbage);
            assert_eq!(e.exit(), crate::exit::Exit::Input, "{garbage}");
            let text = e.to_string();
            assert!(
                text.contains("state.json") && text.ends_with("; start over"),
                "{garbage}: {text}"
            );
        }
    }

    #[test]
    fn a_missing_file_is_no_state_and_a_directory_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let missing = StateFile::new(dir.path().join("absent.json"), "start over");
        assert_eq!(missing.load().unwrap(), []);
        let e = StateFile::new(dir.path(), "start over")
            .load()
            .expect_err("a directory");
        assert_eq!(e.exit(), crate::exit::Exit::Input);
        assert!(
            e.to_string().starts_with("cannot read the state file"),
            "{e}"
        );
    }
}
