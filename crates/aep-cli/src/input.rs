//! JSONL input: a file or stdin (`-`), read line by line with line numbers, so every
//! complaint names the file and the line. A line is bounded ([`MAX_LINE`] unless the
//! caller says otherwise): `aep emit /dev/zero` is refused at line 1 after 16 MiB, not
//! read until the kernel kills it.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use aep::protocol::Event;

use crate::exit::Failure;

/// The longest line an input takes by default: 16 MiB, the largest body a relay takes
/// by default (`aep relay --max-body`), so a longer event would be refused anyway.
pub const MAX_LINE: usize = aep::protocol::sse::DEFAULT_MAX_EVENT;

/// An open JSONL source.
pub struct Input {
    name: String,
    reader: Box<dyn BufRead + Send>,
    len: Option<u64>,
    max_line: usize,
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
                max_line: MAX_LINE,
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
            max_line: MAX_LINE,
        })
    }

    aep::protocol::setters! {
        /// Bounds a line at `bytes` (its line break not counted) instead of [`MAX_LINE`].
        pub fn with_max_line(bytes: usize) => max_line = bytes;
    }

    /// An input over bytes already in memory (tests, embedded data).
    #[cfg(test)]
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Input {
        let len = bytes.len() as u64;
        Input {
            name: name.into(),
            reader: Box::new(std::io::Cursor::new(bytes)),
            len: Some(len),
            max_line: MAX_LINE,
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

    /// The next non-blank line, `None` at the end; a read error or a line past the
    /// bound is exit 6, naming the line it happened on.
    pub fn next_line(
        &mut self,
        number: &mut usize,
        offset: &mut u64,
    ) -> Option<Result<Line, Failure>> {
        loop {
            let mut bytes = Vec::new();
            *number += 1;
            // at most the bound, its `\r\n`, and one byte to tell a longer line
            let most = self.max_line as u64 + 3;
            match self
                .reader
                .by_ref()
                .take(most)
                .read_until(b'\n', &mut bytes)
            {
                Ok(0) => return None,
                Ok(n) => {
                    *offset += n as u64;
                    while matches!(bytes.last(), Some(b'\n' | b'\r')) {
                        bytes.pop();
                    }
                    if bytes.len() > self.max_line {
                        return Some(Err(Failure::input(format!(
                            "{}:{}: a line longer than {} bytes: a relay refuses an event \
                             that large with its default --max-body (413); --max-line raises \
                             this bound",
                            self.name, number, self.max_line
                        ))));
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
    fn a_line_past_the_bound_is_refused_with_its_number_without_being_kept() {
        let input = Input::from_bytes("t", b"ab\r\n12345\n123456\n".to_vec()).with_max_line(5);
        let got: Vec<_> = input.lines().collect();
        assert_eq!(
            got[0].as_ref().map(|l| l.bytes.clone()).ok(),
            Some(b"ab".to_vec())
        );
        assert_eq!(
            got[1].as_ref().map(|l| l.bytes.clone()).ok(),
            Some(b"12345".to_vec())
        );
        let err = got[2].as_ref().expect_err("past the bound");
        assert_eq!(err.exit(), crate::exit::Exit::Input);
        assert!(
            err.to_string()
                .starts_with("t:3: a line longer than 5 bytes"),
            "{err}"
        );
        // an endless line (no line break at all) stops at the bound
        let endless = Input::from_bytes("zero", vec![0u8; 1000]).with_max_line(10);
        let err = endless.lines().next().unwrap().expect_err("endless");
        assert!(
            err.to_string().starts_with("zero:1: a line longer than 10"),
            "{err}"
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
