//! Replay cursors.

use std::fmt;
use std::str::FromStr;

use crate::resume::{split_id, IdFault, ResumePosition};

/// A replay position: the SSE `id` form of AEP-0003 §3.3, `{session}:{epoch}:{seq}`.
///
/// `from_cursor` asks for replay of the events *after* this position in that session.
/// The session part may itself contain `:`; the last two parts are the epoch and seq.
/// It names a [`ResumePosition`], the position an SSE client resumes from, and converts
/// into one; only the errors, worded for `from_cursor`, are its own.
///
/// ```
/// use aep_core::resume::ResumePosition;
/// use aep_core::subscription::Cursor;
/// let c: Cursor = "s_8f2c:3:187".parse()?;
/// assert_eq!((c.session(), c.epoch(), c.seq()), ("s_8f2c", 3, 187));
/// assert_eq!(c.to_string(), "s_8f2c:3:187");
/// assert_eq!(ResumePosition::from(c), ResumePosition::new("s_8f2c", 3, 187));
/// let err = "stream_01:42".parse::<Cursor>().unwrap_err();
/// assert!(err.to_string().contains("{session}:{epoch}:{seq}"));
/// # Ok::<(), aep_core::subscription::CursorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor(ResumePosition);

/// Why a cursor was refused; the message says what the form is.
///
/// ```
/// use aep_core::subscription::Cursor;
/// let err = Cursor::parse("s1:0:-1").unwrap_err();
/// assert_eq!(err.to_string(), "`from_cursor` `s1:0:-1` is malformed: seq `-1` is not a non-negative integer");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CursorError {
    /// Not three `:`-separated parts.
    #[error("`from_cursor` `{0}` is malformed: expected {{session}}:{{epoch}}:{{seq}}, e.g. `s_8f2c:0:42`")]
    Shape(String),
    /// The session part is empty.
    #[error("`from_cursor` `{0}` is malformed: the session before {{epoch}}:{{seq}} is empty")]
    EmptySession(String),
    /// The epoch is not a non-negative integer.
    #[error("`from_cursor` `{cursor}` is malformed: epoch `{part}` is not a non-negative integer")]
    Epoch {
        /// The whole cursor.
        cursor: String,
        /// The offending part.
        part: String,
    },
    /// The seq is not a non-negative integer.
    #[error("`from_cursor` `{cursor}` is malformed: seq `{part}` is not a non-negative integer")]
    Seq {
        /// The whole cursor.
        cursor: String,
        /// The offending part.
        part: String,
    },
}

impl Cursor {
    /// A cursor at `(epoch, seq)` of `session`.
    pub fn new(session: impl Into<String>, epoch: u64, seq: u64) -> Cursor {
        Cursor(ResumePosition::new(session, epoch, seq))
    }

    /// Parses `{session}:{epoch}:{seq}`.
    pub fn parse(text: &str) -> Result<Cursor, CursorError> {
        let (session, epoch, seq) = split_id(text).map_err(|fault| {
            let cursor = text.to_owned();
            match fault {
                IdFault::Separators => CursorError::Shape(cursor),
                IdFault::EmptySession => CursorError::EmptySession(cursor),
                IdFault::Epoch(part) => CursorError::Epoch {
                    cursor,
                    part: part.to_owned(),
                },
                IdFault::Seq(part) => CursorError::Seq {
                    cursor,
                    part: part.to_owned(),
                },
            }
        })?;
        Ok(Cursor::new(session, epoch, seq))
    }

    /// The session.
    pub fn session(&self) -> &str {
        self.0.session()
    }
    /// The epoch.
    pub fn epoch(&self) -> u64 {
        self.0.epoch()
    }
    /// The seq.
    pub fn seq(&self) -> u64 {
        self.0.seq()
    }

    /// The same position, as the resume machinery of [`crate::resume`] takes it.
    ///
    /// ```
    /// use aep_core::{resume::ResumePosition, subscription::Cursor};
    /// let c = Cursor::new("s1", 2, 42);
    /// assert_eq!(c.resume_position(), &ResumePosition::new("s1", 2, 42));
    /// ```
    pub fn resume_position(&self) -> &ResumePosition {
        &self.0
    }
}

impl From<Cursor> for ResumePosition {
    fn from(cursor: Cursor) -> ResumePosition {
        cursor.0
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Cursor {
    type Err = CursorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Cursor::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(Cursor::parse("a:b:0:7").unwrap(), Cursor::new("a:b", 0, 7));
        // the SSE `id` reader reads the same position from the same text
        for text in ["a:b:0:7", "s_8f2c:3:187", "s:18446744073709551615:0"] {
            let cursor = Cursor::parse(text).unwrap();
            assert_eq!(cursor.to_string(), text);
            let position: ResumePosition = text.parse().unwrap();
            assert_eq!(cursor.resume_position(), &position);
            assert_eq!(ResumePosition::from(cursor), position);
        }
        let err = |text| Cursor::parse(text).unwrap_err();
        for text in ["", "s:1"] {
            assert!(matches!(err(text), CursorError::Shape(_)), "{text}");
        }
        assert!(matches!(err(":1:2"), CursorError::EmptySession(_)));
        for text in ["s:x:2", "s:+1:2"] {
            assert!(matches!(err(text), CursorError::Epoch { .. }), "{text}");
        }
        for text in ["s:1:-2", "s:1:18446744073709551616", "s:1:"] {
            assert!(matches!(err(text), CursorError::Seq { .. }), "{text}");
        }
    }
}
