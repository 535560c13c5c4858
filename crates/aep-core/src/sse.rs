//! The SSE framing a consumer reads (AEP-0003 §3.3), bounded: [`SseDecoder`].
//!
//! An SSE body is lines; a blank line ends a message, whose `data:` lines joined by
//! `\n` are the event JSON (§3.3 rule 2); a line starting with `:` is a comment, and the
//! protocol's markers travel as comments (`: replay-exhausted ...`, `: replay-complete`,
//! the `: ping` heartbeat, rules 3-4), so the decoder hands comments on rather than
//! discarding them as a browser's `EventSource` does. `event:` repeats the type and
//! `id:` the position, both read from the event itself; other fields are ignored.
//!
//! The peer decides how long a line and a message are, so the decoder bounds both:
//! a line past `max_line` bytes, or a message whose data passes `max_event` bytes, is an
//! [`SseError`] naming the bound, found before the bytes past it are kept. Memory is at
//! most one line and one message's data, whatever the peer sends; a reader ends the
//! connection on the error (the stream cannot be trusted to be framed after it).
//!
//! Sans-IO: feed it body chunks in order, as they come, split anywhere.
//!
//! ```
//! use aep_core::sse::{SseDecoder, SseError, SseItem};
//!
//! let mut decoder = SseDecoder::new(64, 32);
//! let mut items = Vec::new();
//! decoder.feed(b": ping\n\nevent: a.b\ndata: {\"x\"", |i| items.push(format!("{i:?}")))?;
//! assert!(decoder.is_mid_message()); // a cut here would lose half an event
//! decoder.feed(b":1}\n\n", |i| items.push(format!("{i:?}")))?;
//! assert_eq!(items, [r#"Comment("ping")"#, r#"Data("{\"x\":1}")"#]);
//! assert!(!decoder.is_mid_message());
//!
//! let endless = vec![b'a'; 100];
//! assert_eq!(decoder.feed(&endless, |_| {}), Err(SseError::LineTooLong { max: 64 }));
//! # Ok::<(), SseError>(())
//! ```

use std::fmt;

/// The default bound on one event: 16 MiB, the largest body a relay takes by default
/// (`aep-relay --max-body`), so any event a relay accepted with its defaults is read.
pub const DEFAULT_MAX_EVENT: usize = 16 << 20;

/// The default bound on one line: a `data:` line carrying an event of
/// [`DEFAULT_MAX_EVENT`] bytes, with 1 KiB to spare for its field name.
pub const DEFAULT_MAX_LINE: usize = DEFAULT_MAX_EVENT + 1024;

/// One item of an SSE body.
#[derive(PartialEq, Eq)]
pub enum SseItem<'a> {
    /// The `data:` lines of one message, joined by `\n` (the event JSON, §3.3 rule 2).
    Data(&'a [u8]),
    /// A comment line without its colon and surrounding whitespace (a marker or the
    /// heartbeat, §3.3 rules 3-4); invalid UTF-8 replaced.
    Comment(&'a str),
}

impl fmt::Debug for SseItem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseItem::Data(d) => f
                .debug_tuple("Data")
                .field(&String::from_utf8_lossy(d))
                .finish(),
            SseItem::Comment(c) => f.debug_tuple("Comment").field(c).finish(),
        }
    }
}

/// A bound of [`SseDecoder`] that the peer's bytes passed.
///
/// ```
/// use aep_core::sse::SseError;
/// let e = SseError::EventTooLarge { max: 1024 };
/// assert_eq!(e.max(), 1024);
/// assert!(e.to_string().contains("max_event"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line (up to its `\n`) passed `max` bytes.
    #[error(
        "an SSE line passed the max_line bound of {max} bytes: the peer is not framing \
         events (raise max_line if its events are that large)"
    )]
    LineTooLong {
        /// The bound.
        max: usize,
    },
    /// One message's data passed `max` bytes.
    #[error(
        "an SSE message's data passed the max_event bound of {max} bytes (raise max_event \
         if the relay's events are that large)"
    )]
    EventTooLarge {
        /// The bound.
        max: usize,
    },
}

impl SseError {
    /// The bound that was passed, in bytes.
    pub fn max(self) -> usize {
        match self {
            SseError::LineTooLong { max } | SseError::EventTooLarge { max } => max,
        }
    }
}

/// An incremental, bounded SSE decoder: feed it body chunks in order.
///
/// ```
/// use aep_core::sse::{SseDecoder, SseItem, DEFAULT_MAX_LINE};
///
/// let mut decoder = SseDecoder::default();
/// assert_eq!(decoder.max_line(), DEFAULT_MAX_LINE);
/// let mut data = Vec::new();
/// decoder.feed(b"data: one\r\ndata: two\r\n\r\n", |item| {
///     if let SseItem::Data(d) = item {
///         data.push(d.to_vec());
///     }
/// })?;
/// assert_eq!(data, [b"one\ntwo".to_vec()]);
/// # Ok::<(), aep_core::sse::SseError>(())
/// ```
#[derive(Debug)]
pub struct SseDecoder {
    /// The start of a line whose end has not come yet.
    line: Vec<u8>,
    /// The data of the message being read.
    data: Vec<u8>,
    has_data: bool,
    /// A field line came since the last blank line: a message is open.
    in_message: bool,
    max_line: usize,
    max_event: usize,
}

impl Default for SseDecoder {
    /// Bounded by [`DEFAULT_MAX_LINE`] and [`DEFAULT_MAX_EVENT`].
    fn default() -> Self {
        SseDecoder::new(DEFAULT_MAX_LINE, DEFAULT_MAX_EVENT)
    }
}

impl SseDecoder {
    /// A decoder taking lines of at most `max_line` bytes (without the line break) and
    /// messages of at most `max_event` bytes of data.
    pub fn new(max_line: usize, max_event: usize) -> SseDecoder {
        SseDecoder {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            in_message: false,
            max_line,
            max_event,
        }
    }

    /// The bound on a line, in bytes.
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// The bound on one message's data, in bytes.
    pub fn max_event(&self) -> usize {
        self.max_event
    }

    /// Reads `chunk`, calling `on` for each complete item in order. On an error the
    /// decoder starts over empty (what it held is dropped): the caller ends the stream.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        mut on: impl FnMut(SseItem<'_>),
    ) -> Result<(), SseError> {
        let result = loop {
            if chunk.is_empty() {
                break Ok(());
            }
            // memchr: a word at a time over what is mostly event JSON
            let Some(nl) = memchr::memchr(b'\n', chunk) else {
                if self.line.len() + chunk.len() > self.max_line {
                    break Err(SseError::LineTooLong { max: self.max_line });
                }
                self.line.extend_from_slice(chunk);
                break Ok(());
            };
            let (head, tail) = chunk.split_at(nl);
            chunk = tail.get(1..).unwrap_or_default();
            if self.line.len() + head.len() > self.max_line {
                break Err(SseError::LineTooLong { max: self.max_line });
            }
            let step = if self.line.is_empty() {
                self.line_done(head, &mut on)
            } else {
                self.line.extend_from_slice(head);
                let line = std::mem::take(&mut self.line);
                let step = self.line_done(&line, &mut on);
                self.line = line;
                self.line.clear();
                step
            };
            if let Err(e) = step {
                break Err(e);
            }
        };
        if result.is_err() {
            *self = SseDecoder::new(self.max_line, self.max_event);
        }
        result
    }

    /// Whether a message or a line has begun and not ended: a stream that ends here was
    /// cut in the middle of it.
    pub fn is_mid_message(&self) -> bool {
        self.in_message || !self.line.is_empty()
    }

    fn line_done(&mut self, line: &[u8], on: &mut impl FnMut(SseItem<'_>)) -> Result<(), SseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if self.has_data {
                on(SseItem::Data(&self.data));
                self.data.clear();
                self.has_data = false;
            }
            self.in_message = false;
            return Ok(());
        }
        if let Some(comment) = line.strip_prefix(b":") {
            let text = String::from_utf8_lossy(comment);
            on(SseItem::Comment(text.trim()));
            return Ok(());
        }
        self.in_message = true;
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            let joined = self.data.len() + usize::from(self.has_data) + value.len();
            if joined > self.max_event {
                return Err(SseError::EventTooLarge {
                    max: self.max_event,
                });
            }
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(decoder: &mut SseDecoder, chunks: &[&[u8]]) -> Result<Vec<String>, SseError> {
        let mut out = Vec::new();
        for c in chunks {
            decoder.feed(c, |item| {
                out.push(match item {
                    SseItem::Data(d) => format!("D{}", String::from_utf8_lossy(d)),
                    SseItem::Comment(c) => format!("C{c}"),
                })
            })?;
        }
        Ok(out)
    }

    #[test]
    fn parses_across_chunk_boundaries() {
        let out = collect(
            &mut SseDecoder::default(),
            &[
                b"event: a.b\nda",
                b"ta: {\"x\":1}\nid: s:0:1\n\n: replay-exh",
                b"austed s 0:5\r\n\r\ndata:one\ndata: two\n\n",
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                "D{\"x\":1}".to_owned(),
                "Creplay-exhausted s 0:5".to_owned(),
                "Done\ntwo".to_owned()
            ]
        );
    }

    #[test]
    fn blank_lines_without_data_emit_nothing() {
        let mut d = SseDecoder::default();
        assert!(collect(&mut d, &[b"\n\n\nid: x\n\n"]).unwrap().is_empty());
        assert!(!d.is_mid_message());
    }

    #[test]
    fn a_line_at_the_bound_passes_and_one_byte_more_does_not() {
        let mut d = SseDecoder::new(10, 100);
        // "data: 1234" is 10 bytes (a line is counted up to its `\n`)
        assert_eq!(collect(&mut d, &[b"data: 1234\n\n"]).unwrap(), ["D1234"]);
        let err = collect(&mut d, &[b"data: 12345\n\n"]).unwrap_err();
        assert_eq!(err, SseError::LineTooLong { max: 10 });
    }

    #[test]
    fn an_endless_line_is_refused_before_it_is_kept() {
        let mut d = SseDecoder::new(1000, 1000);
        let piece = [b'x'; 300];
        let mut fed = 0;
        let err = loop {
            match d.feed(&piece, |_| {}) {
                Ok(()) => fed += 1,
                Err(e) => break e,
            }
            assert!(d.line.len() <= 1000);
        };
        assert_eq!(fed, 3);
        assert_eq!(err, SseError::LineTooLong { max: 1000 });
        // an endless comment is a line like any other
        let mut d = SseDecoder::new(1000, 1000);
        let comment = [b':'; 1001];
        assert_eq!(
            d.feed(&comment, |_| {}),
            Err(SseError::LineTooLong { max: 1000 })
        );
    }

    #[test]
    fn an_event_is_bounded_over_its_data_lines() {
        let mut d = SseDecoder::new(100, 10);
        // 5 + 1 (the joining \n) + 4 = 10: taken
        assert_eq!(
            collect(&mut d, &[b"data: 12345\ndata: 6789\n\n"]).unwrap(),
            ["D12345\n6789"]
        );
        let err = collect(&mut d, &[b"data: 12345\ndata: 67890\n\n"]).unwrap_err();
        assert_eq!(err, SseError::EventTooLarge { max: 10 });
        assert_eq!(err.max(), 10);
        // many short data lines, never a blank one
        let mut d = SseDecoder::new(100, 1000);
        let line = b"data: xxxxxxxxxx\n".repeat(200);
        assert_eq!(
            d.feed(&line, |_| {}),
            Err(SseError::EventTooLarge { max: 1000 })
        );
        assert!(d.data.is_empty(), "dropped after the error");
    }

    #[test]
    fn a_cut_is_mid_message_until_the_blank_line() {
        let mut d = SseDecoder::default();
        collect(&mut d, &[b": ping\n"]).unwrap();
        assert!(!d.is_mid_message());
        collect(&mut d, &[b"event: a.b\n"]).unwrap();
        assert!(d.is_mid_message());
        collect(&mut d, &[b"data: {}\n"]).unwrap();
        assert!(d.is_mid_message());
        collect(&mut d, &[b"\n"]).unwrap();
        assert!(!d.is_mid_message());
        collect(&mut d, &[b": rep"]).unwrap();
        assert!(d.is_mid_message(), "half a line");
    }
}
