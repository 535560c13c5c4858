//! JSONL input: a file or stdin (`-`), read line by line with line numbers, so every
//! complaint names the file and the line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use aep::protocol::Event;

use crate::exit::Failure;

/// An open JSONL source.
pub struct Input {
    name: String,
    reader: Box<dyn BufRead + Send>,
    len: Option<u64>,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input").field("name", &self.name).finish()
    }
}

/// One non-blank line: its 1-based number and its bytes (line break removed).
#[derive(Debug)]
pub struct Line {
    /// 1-based line number in the input.
    pub number: usize,
    /// The bytes of the line, without the line break.
    pub bytes: Vec<u8>,
    /// Bytes read from the input so far, line breaks included (for progress).
    pub offset: u64,
}

impl Input {
    /// Opens `path`, or stdin for `-`. A missing or unreadable file is exit 6.
    pub fn open(path: &Path) -> Result<Input, Failure> {
        if path.as_os_str() == "-" {
            return Ok(Input {
                name: "stdin".into(),
                reader: Box::new(BufReader::with_capacity(1 << 16, std::io::stdin())),
                len: None,
            });
        }
        let name = path.display().to_string();
        let file =
            File::open(path).map_err(|e| Failure::input(format!("cannot read {name}: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| Failure::input(format!("cannot read {name}: {e}")))?;
        if meta.is_dir() {
            return Err(Failure::input(format!(
                "cannot read {name}: it is a directory, not a JSONL file"
            )));
        }
        Ok(Input {
            name,
            reader: Box::new(BufReader::with_capacity(1 << 16, file)),
            len: Some(meta.len()),
        })
    }

    /// An input over bytes already in memory (tests, embedded data).
    #[cfg(test)]
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Input {
        let len = bytes.len() as u64;
        Input {
            name: name.into(),
            reader: Box::new(std::io::Cursor::new(bytes)),
            len: Some(len),
        }
    }

    /// The file's name as given, or `stdin`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The size in bytes, for a file.
    pub fn len(&self) -> Option<u64> {
        self.len
    }

    /// The next non-blank line, `None` at the end; a read error is exit 6, naming the
    /// line it happened on.
    pub fn next_line(
        &mut self,
        number: &mut usize,
        offset: &mut u64,
    ) -> Option<Result<Line, Failure>> {
        loop {
            let mut bytes = Vec::new();
            *number += 1;
            match self.reader.by_ref().read_until(b'\n', &mut bytes) {
                Ok(0) => return None,
                Ok(n) => {
                    *offset += n as u64;
                    while matches!(bytes.last(), Some(b'\n' | b'\r')) {
                        bytes.pop();
                    }
                    if bytes.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Some(Ok(Line {
                        number: *number,
                        bytes,
                        offset: *offset,
                    }));
                }
                Err(e) => {
                    return Some(Err(Failure::input(format!(
                        "{}:{}: cannot read: {e}",
                        self.name, number
                    ))))
                }
            }
        }
    }

    /// Every non-blank line, in order.
    pub fn lines(mut self) -> impl Iterator<Item = Result<Line, Failure>> {
        let (mut number, mut offset) = (0usize, 0u64);
        std::iter::from_fn(move || self.next_line(&mut number, &mut offset))
    }
}

/// `FILE:LINE`.
pub fn at(name: &str, line: usize) -> String {
    format!("{name}:{line}")
}

/// Parses a line as an AEP event; a line that is not one is exit 6, naming where.
pub fn event(name: &str, line: &Line) -> Result<Event, Failure> {
    Event::from_slice(&line.bytes)
        .map_err(|e| Failure::input(format!("{}: not an AEP event: {e}", at(name, line.number))))
}

/// Reads every event of `path` (or stdin), stopping at the first line that is not one.
pub fn read_events(path: &Path) -> Result<Vec<Event>, Failure> {
    let input = Input::open(path)?;
    let name = input.name().to_owned();
    input
        .lines()
        .map(|line| line.and_then(|line| event(&name, &line)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_numbers_without_blanks_or_line_breaks() {
        let input = Input::from_bytes("t", b"a\r\n\n  \nb\nc".to_vec());
        let lines: Vec<Line> = input.lines().map(|l| l.expect("a line")).collect();
        let got: Vec<(usize, &[u8], u64)> = lines
            .iter()
            .map(|l| (l.number, l.bytes.as_slice(), l.offset))
            .collect();
        assert_eq!(
            got,
            [(1, &b"a"[..], 3), (4, &b"b"[..], 9), (5, &b"c"[..], 10)]
        );
    }

    #[test]
    fn a_line_that_is_not_an_event_names_file_and_line() {
        let line = Line {
            number: 7,
            bytes: b"{\"aep\":".to_vec(),
            offset: 0,
        };
        let err = event("capture.jsonl", &line).expect_err("not an event");
        assert_eq!(err.exit(), crate::exit::Exit::Input);
        assert!(err
            .to_string()
            .starts_with("capture.jsonl:7: not an AEP event"));
    }
}
