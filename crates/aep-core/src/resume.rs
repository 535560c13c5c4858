//! Resume positions and the `from` budget split (AEP-0001 §7, AEP-0003 §3.3, §5, §7).
//!
//! A consumer resumes a session by naming the last `(epoch, seq)` it processed
//! ([`ResumePosition`]). This module holds:
//!
//! - [`Position`]: one `(epoch, seq)` point, ordered epoch first (AEP-0001 §7);
//! - [`ResumePosition`]: `(session, epoch, seq)`, its SSE `id:` form
//!   `{session}:{epoch}:{seq}` parsed and written (AEP-0003 §3.3), and its size on the
//!   wire;
//! - [`Positions`]: the latest position per session, as a subscriber tracks it,
//!   mergeable and persistable as JSON;
//! - [`FromBudget`]: the split of a position set between the live request and bounded
//!   replay-only drain requests, so that a large resume set never grows the `from`
//!   query parameter past what a server accepts.
//!
//! ```
//! use aep_core::resume::{FromBudget, Positions, ResumePosition};
//!
//! let mut positions = Positions::new();
//! positions.insert(ResumePosition::new("s-1", 0, 41));
//! positions.insert("s-2:1:7".parse::<ResumePosition>()?);
//! let all = positions.to_vec();
//! let plan = FromBudget::default().plan(&all, None);
//! assert_eq!(plan.live().len(), 2);
//! assert!(plan.chunks().is_empty());
//! # Ok::<(), aep_core::resume::SseIdError>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{percent, Event};

/// One point of a session's stream: `(epoch, seq)`, ordered epoch first, then seq
/// (AEP-0001 §7). An absent `epoch` attribute is epoch 0.
///
/// ```
/// use aep_core::resume::Position;
///
/// assert!(Position::new(1, 0) > Position::new(0, 99));
/// assert_eq!(serde_json::to_string(&Position::new(0, 4))?, r#"{"epoch":0,"seq":4}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Position {
    epoch: u64,
    seq: u64,
}

impl Position {
    /// The point `(epoch, seq)`.
    pub const fn new(epoch: u64, seq: u64) -> Position {
        Position { epoch, seq }
    }

    /// The epoch.
    pub const fn epoch(self) -> u64 {
        self.epoch
    }

    /// The sequence number within the epoch.
    pub const fn seq(self) -> u64 {
        self.seq
    }

    /// The position of a sequenced event (`seq` present), its `epoch` defaulting to 0.
    ///
    /// ```
    /// use aep_core::{resume::Position, Event};
    ///
    /// let e = Event::new("1", "tool.completed", "t", "aep://h", "a").with_session("s").with_seq(3);
    /// assert_eq!(Position::of(&e), Some(Position::new(0, 3)));
    /// ```
    pub fn of(event: &Event) -> Option<Position> {
        event.seq().map(|seq| Position::new(event.epoch(), seq))
    }
}

/// A resume token: the last `(epoch, seq)` processed in one session (AEP-0003 §7).
///
/// Serializes as the `{session, epoch, seq}` object of the `from` parameter
/// (AEP-0003 §3.3); [`Display`](fmt::Display) and [`FromStr`] use the SSE `id:` form
/// `{session}:{epoch}:{seq}`.
///
/// ```
/// use aep_core::resume::ResumePosition;
///
/// let p: ResumePosition = "urn:s:1:2:30".parse()?;
/// assert_eq!((p.session(), p.epoch(), p.seq()), ("urn:s:1", 2, 30));
/// assert_eq!(p.to_string(), "urn:s:1:2:30");
/// assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"session":"urn:s:1","epoch":2,"seq":30}"#);
/// # Ok::<(), aep_core::resume::SseIdError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResumePosition {
    session: String,
    epoch: u64,
    seq: u64,
}

/// Why a string is not an SSE `id:` of the form `{session}:{epoch}:{seq}`
/// (AEP-0003 §3.3), or why a position cannot be written as one.
///
/// ```
/// use aep_core::resume::{ResumePosition, SseIdError};
/// assert_eq!(ResumePosition::parse_sse_id("s1:x:3"), Err(SseIdError::BadEpoch("s1:x:3".into())));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseIdError {
    /// Fewer than two `:` separators.
    #[error("SSE id `{0}` is not `{{session}}:{{epoch}}:{{seq}}`: it needs two `:` separators")]
    MissingSeparator(String),
    /// Nothing before the epoch.
    #[error("SSE id `{0}` names no session: expected `{{session}}:{{epoch}}:{{seq}}` with a non-empty session")]
    EmptySession(String),
    /// The epoch is not a decimal integer that fits in 64 bits.
    #[error("SSE id `{0}` has an epoch that is not a decimal integer (0 to 2^64-1)")]
    BadEpoch(String),
    /// The seq is not a decimal integer that fits in 64 bits.
    #[error("SSE id `{0}` has a seq that is not a decimal integer (0 to 2^64-1)")]
    BadSeq(String),
    /// The session is empty or holds CR, LF or NUL, which an SSE `id:` line cannot
    /// carry (WHATWG SSE); resume such a session with the `from` parameter instead.
    #[error("session `{0:?}` cannot be written as an SSE id (empty, or holds CR, LF or NUL); resume it through `from`")]
    Unwritable(String),
}

fn decimal(s: &str) -> Option<u64> {
    // `u64::from_str` would also take a leading `+`; the relay's grammar is digits only.
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// What is wrong with a `{session}:{epoch}:{seq}` value, for each reader to word.
pub(crate) enum IdFault<'a> {
    /// Fewer than two `:` separators.
    Separators,
    /// Nothing before the epoch.
    EmptySession,
    /// This epoch is not a decimal integer that fits in 64 bits.
    Epoch(&'a str),
    /// This seq is not a decimal integer that fits in 64 bits.
    Seq(&'a str),
}

/// Splits the SSE `id:` form `{session}:{epoch}:{seq}` (AEP-0003 §3.3), which
/// subscription cursors reuse. Sessions may contain `:`, epochs and seqs cannot, so the
/// value splits at its last two `:` (the reference relay's `^(.+):(\d+):(\d+)$`).
pub(crate) fn split_id(id: &str) -> Result<(&str, u64, u64), IdFault<'_>> {
    let mut parts = id.rsplitn(3, ':');
    let (Some(seq), Some(epoch), Some(session)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(IdFault::Separators);
    };
    if session.is_empty() {
        return Err(IdFault::EmptySession);
    }
    let epoch = decimal(epoch).ok_or(IdFault::Epoch(epoch))?;
    let seq = decimal(seq).ok_or(IdFault::Seq(seq))?;
    Ok((session, epoch, seq))
}

impl ResumePosition {
    /// The position `(epoch, seq)` in `session`.
    pub fn new(session: impl Into<String>, epoch: u64, seq: u64) -> ResumePosition {
        ResumePosition {
            session: session.into(),
            epoch,
            seq,
        }
    }

    /// The position of a session-scoped, sequenced event (`session` and `seq` present).
    ///
    /// ```
    /// use aep_core::{resume::ResumePosition, Event};
    ///
    /// let e = Event::new("1", "run.started", "t", "aep://h", "a").with_session("s").with_seq(1);
    /// assert_eq!(ResumePosition::of(&e), Some(ResumePosition::new("s", 0, 1)));
    /// assert_eq!(ResumePosition::of(&Event::new("2", "agent.idle", "t", "aep://h", "a")), None);
    /// ```
    pub fn of(event: &Event) -> Option<ResumePosition> {
        let session = event.session()?;
        let seq = event.seq()?;
        Some(ResumePosition::new(session, event.epoch(), seq))
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The seq.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// `(epoch, seq)` without the session.
    pub fn position(&self) -> Position {
        Position::new(self.epoch, self.seq)
    }

    /// Parses an SSE `id:` (or `Last-Event-ID`) value `{session}:{epoch}:{seq}`.
    ///
    /// Sessions may contain `:`, epochs and seqs cannot, so the value splits at its
    /// last two `:`: `a:b:1:2` is session `a:b`, epoch 1, seq 2 (the same reading as
    /// the reference relay's `^(.+):(\d+):(\d+)$`).
    ///
    /// ```
    /// use aep_core::resume::{ResumePosition, SseIdError};
    ///
    /// assert_eq!(ResumePosition::parse_sse_id("a:b:1:2")?.session(), "a:b");
    /// assert!(matches!(ResumePosition::parse_sse_id("s:1"), Err(SseIdError::MissingSeparator(_))));
    /// assert!(matches!(ResumePosition::parse_sse_id("s:+1:2"), Err(SseIdError::BadEpoch(_))));
    /// # Ok::<(), SseIdError>(())
    /// ```
    pub fn parse_sse_id(id: &str) -> Result<ResumePosition, SseIdError> {
        let (session, epoch, seq) = split_id(id).map_err(|fault| {
            let id = id.to_owned();
            match fault {
                IdFault::Separators => SseIdError::MissingSeparator(id),
                IdFault::EmptySession => SseIdError::EmptySession(id),
                IdFault::Epoch(_) => SseIdError::BadEpoch(id),
                IdFault::Seq(_) => SseIdError::BadSeq(id),
            }
        })?;
        Ok(ResumePosition::new(session, epoch, seq))
    }

    /// The SSE `id:` value `{session}:{epoch}:{seq}` (AEP-0003 §3.3), refused for a
    /// session an `id:` line cannot carry or [`parse_sse_id`](Self::parse_sse_id)
    /// could not read back (empty, CR, LF, NUL).
    ///
    /// ```
    /// use aep_core::resume::ResumePosition;
    ///
    /// assert_eq!(ResumePosition::new("s", 1, 9).sse_id()?, "s:1:9");
    /// assert!(ResumePosition::new("a\nb", 0, 0).sse_id().is_err());
    /// # Ok::<(), aep_core::resume::SseIdError>(())
    /// ```
    pub fn sse_id(&self) -> Result<String, SseIdError> {
        SseId::new(&self.session, self.position()).map(|id| id.to_string())
    }

    /// The characters this position costs in the `from` parameter: its compact JSON
    /// object, percent-encoded as [`encode_from`] writes it.
    ///
    /// ```
    /// use aep_core::resume::ResumePosition;
    ///
    /// // {"session":"s","epoch":0,"seq":1}: 33 characters, 15 of them percent-encoded (+2 each)
    /// assert_eq!(ResumePosition::new("s", 0, 1).encoded_len(), 63);
    /// ```
    pub fn encoded_len(&self) -> usize {
        let mut counter = EncodedLen(0);
        // Writing to a counter cannot fail, and a struct of a string and two integers
        // always serializes.
        let _ = serde_json::to_writer(&mut counter, self);
        counter.0
    }
}

/// Whether `text` can sit inside one line of an event stream: no CR, LF or NUL. An
/// event stream has no escapes (AEP-0003 §3.3), so such a character in a session
/// written into an `id:` line would end it early and let the rest forge fields.
///
/// ```
/// use aep_core::resume::sse_line_safe;
/// assert!(sse_line_safe("s:1"));
/// assert!(!sse_line_safe("a\nid: x:9:9"));
/// ```
#[inline]
pub fn sse_line_safe(text: &str) -> bool {
    // bytes, not chars: the three are ASCII. A relay asks this of every event (twice:
    // checking it, then framing its id), so the whole text is folded without an early
    // exit, which the compiler turns into a few wide compares instead of a branch a byte
    !text
        .bytes()
        .fold(false, |found, b| found | matches!(b, b'\r' | b'\n' | 0))
}

impl fmt::Display for ResumePosition {
    /// The SSE `id:` form `{session}:{epoch}:{seq}`, unchecked (see
    /// [`ResumePosition::sse_id`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        SseId::unchecked(&self.session, self.position()).fmt(f)
    }
}

/// The SSE `id:` value `{session}:{epoch}:{seq}` of one event (AEP-0003 §3.3 rule 2),
/// borrowed: [`write_to`](Self::write_to) appends it to a buffer without allocating,
/// and [`len`](Self::len) says its size beforehand, so an endpoint framing every event
/// it sends sizes each frame exactly. [`ResumePosition::sse_id`] writes the same text.
///
/// ```
/// use aep_core::resume::{Position, ResumePosition, SseId};
///
/// let id = SseId::new("s:1", Position::new(2, 30))?;
/// let mut frame = b"id: ".to_vec();
/// id.write_to(&mut frame);
/// assert_eq!(frame, b"id: s:1:2:30");
/// assert_eq!(id.len(), "s:1:2:30".len());
/// assert_eq!(ResumePosition::parse_sse_id(&id.to_string())?, ResumePosition::new("s:1", 2, 30));
/// assert!(SseId::new("a\nb", Position::new(0, 0)).is_err());
/// # Ok::<(), aep_core::resume::SseIdError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseId<'a> {
    session: &'a str,
    position: Position,
}

impl<'a> SseId<'a> {
    /// The id of the event at `position` in `session`, refused for a session an `id:`
    /// line cannot carry or [`ResumePosition::parse_sse_id`] could not read back
    /// (empty, CR, LF, NUL).
    #[inline]
    pub fn new(session: &'a str, position: Position) -> Result<SseId<'a>, SseIdError> {
        if session.is_empty() || !sse_line_safe(session) {
            return Err(SseIdError::Unwritable(session.to_owned()));
        }
        Ok(SseId::unchecked(session, position))
    }

    const fn unchecked(session: &'a str, position: Position) -> SseId<'a> {
        SseId { session, position }
    }

    /// The session.
    pub fn session(&self) -> &'a str {
        self.session
    }

    /// The position.
    pub fn position(&self) -> Position {
        self.position
    }

    /// The length of the text in bytes.
    #[allow(clippy::len_without_is_empty)] // never empty: a session is required
    #[inline]
    pub fn len(&self) -> usize {
        self.session.len() + decimal_len(self.position.epoch) + decimal_len(self.position.seq) + 2
    }

    /// Appends the text to `out`.
    #[inline]
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.session.as_bytes());
        out.push(b':');
        push_decimal(out, self.position.epoch);
        out.push(b':');
        push_decimal(out, self.position.seq);
    }
}

impl fmt::Display for SseId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}",
            self.session, self.position.epoch, self.position.seq
        )
    }
}

/// Digits of `n` in decimal.
#[inline]
fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Appends `n` in decimal: `write!` through `fmt` costs more than the rest of an SSE
/// frame together, and a relay writes one per event.
#[inline]
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(at..).unwrap_or_default());
}

/// Where one session's replay starts (AEP-0003 §5, §7).
///
/// Closed: a resume token names the last position processed (§7), and the only other
/// start a `from` entry can ask for is the start of an epoch.
///
/// ```
/// use aep_core::resume::{Position, ReplayStart};
///
/// let after = ReplayStart::After(Position::new(0, 4));
/// assert!(!after.includes(Position::new(0, 4)) && after.includes(Position::new(0, 5)));
/// // the earliest held event is not the next one: the gap is declared
/// assert!(after.declares_gap(Position::new(0, 7)));
/// assert!(!after.declares_gap(Position::new(0, 5)));
/// // the start of an epoch names no processed position, so never a gap
/// assert!(ReplayStart::EARLIEST.includes(Position::new(0, 0)));
/// assert!(!ReplayStart::EARLIEST.declares_gap(Position::new(3, 9)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplayStart {
    /// Strictly after this position: the last one the consumer processed (§7).
    After(Position),
    /// From `(epoch, 0)` on, that position included: the reference relay's `seq: -1`
    /// (or an absent `seq`) in a `from` entry, "before the first event" of the epoch.
    /// Epoch 0 is the whole session, as replay-all asks (§5).
    EpochStart(u64),
}

impl ReplayStart {
    /// The whole session: every held event (replay-all, §5).
    pub const EARLIEST: ReplayStart = ReplayStart::EpochStart(0);

    /// Whether an event at `position` is replayed.
    pub fn includes(self, position: Position) -> bool {
        match self {
            ReplayStart::After(last) => position > last,
            ReplayStart::EpochStart(epoch) => position >= Position::new(epoch, 0),
        }
    }

    /// Whether a buffer whose earliest held event sits at `earliest` answers this start
    /// with `replay-exhausted` (§5): it does when the start names a processed position
    /// and the earliest held event is not the one right after it, so events in between
    /// may be gone. A start of an epoch names no position, so it never does.
    pub fn declares_gap(self, earliest: Position) -> bool {
        match self {
            ReplayStart::After(last) => {
                earliest > Position::new(last.epoch, last.seq.saturating_add(1))
            }
            ReplayStart::EpochStart(_) => false,
        }
    }

    /// Whether a store that no longer holds any of a session (evicted whole, `newest`
    /// the newest position it held) answers this start with `replay-exhausted` (§5:
    /// positions that ask for what is no longer held, eviction included), and where
    /// delivery goes on if so: right after `newest`. As with
    /// [`declares_gap`](ReplayStart::declares_gap), only a start that names a processed position asks
    /// for something in particular; the start of an epoch asks for what is held.
    ///
    /// ```
    /// use aep_core::resume::{Position, ReplayStart};
    ///
    /// // the consumer stopped at 0:4; the session was evicted holding up to 0:9
    /// let after = ReplayStart::After(Position::new(0, 4));
    /// assert_eq!(after.resumes_after_dropped(Position::new(0, 9)), Some(Position::new(0, 10)));
    /// // it had seen all of it: nothing lost
    /// assert_eq!(after.resumes_after_dropped(Position::new(0, 4)), None);
    /// assert_eq!(ReplayStart::EARLIEST.resumes_after_dropped(Position::new(2, 0)), None);
    /// ```
    pub fn resumes_after_dropped(self, newest: Position) -> Option<Position> {
        match self {
            ReplayStart::After(last) if newest > last => {
                Some(Position::new(newest.epoch, newest.seq.saturating_add(1)))
            }
            _ => None,
        }
    }
}

/// One session's entry of a `from` request: its name and where its replay starts.
///
/// ```
/// use aep_core::resume::{Position, ReplayStart, ResumeFrom, ResumePosition};
///
/// let from = ResumeFrom::parse_list(&serde_json::json!([
///     {"session": "a", "epoch": 1, "seq": 4},
///     {"session": "b", "seq": -1},
///     {"session": "c"},
/// ]))?;
/// assert_eq!(from[0], ResumeFrom::from(ResumePosition::new("a", 1, 4)));
/// assert_eq!(from[1].start(), ReplayStart::EARLIEST);
/// assert_eq!(from[2].start(), ReplayStart::EpochStart(0));
/// assert!(ResumeFrom::parse_list(&serde_json::json!([{"session": "a", "seq": -2}])).is_err());
/// # Ok::<(), aep_core::resume::FromError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResumeFrom {
    session: String,
    start: ReplayStart,
}

/// Why a `from` value is refused (AEP-0003 §3.3, fail closed: one bad entry refuses the
/// request).
///
/// ```
/// use aep_core::resume::{FromError, ResumeFrom};
/// assert_eq!(ResumeFrom::parse_list(&serde_json::json!({})), Err(FromError::NotAnArray));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FromError {
    /// Neither an array of positions nor (where the caller reads it) `"all"`.
    #[error("from must be an array of resume positions or the string \"all\"")]
    NotAnArray,
    /// Not JSON (and not `all`).
    #[error("from is neither JSON nor \"all\"")]
    NotJson,
    /// More entries than the reader takes; refused before any entry is read.
    #[error("from lists more than {max} resume positions")]
    TooMany {
        /// The most entries taken.
        max: usize,
    },
    /// An entry that is not `{session, epoch?, seq?}` with a string session, an epoch
    /// of 0 or more and a seq of -1 or more.
    #[error("bad resume position: {0}")]
    BadEntry(String),
}

impl ResumeFrom {
    /// `session` from `start`.
    pub fn new(session: impl Into<String>, start: ReplayStart) -> ResumeFrom {
        ResumeFrom {
            session: session.into(),
            start,
        }
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Where its replay starts.
    pub fn start(&self) -> ReplayStart {
        self.start
    }

    /// Reads the JSON array of a `from` parameter (AEP-0003 §3.3): each entry
    /// `{session, epoch, seq}`, an absent `epoch` read as 0 (AEP-0001 §7.2) and an
    /// absent `seq`, or `-1`, as the start of the epoch ([`ReplayStart::EpochStart`]),
    /// as the reference relay reads them.
    pub fn parse_list(value: &serde_json::Value) -> Result<Vec<ResumeFrom>, FromError> {
        let items = value.as_array().ok_or(FromError::NotAnArray)?;
        items.iter().map(ResumeFrom::parse_entry).collect()
    }

    fn parse_entry(item: &serde_json::Value) -> Result<ResumeFrom, FromError> {
        let bad = || FromError::BadEntry(item.to_string());
        let object = item.as_object().ok_or_else(bad)?;
        let session = object
            .get("session")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(bad)?;
        let epoch = match object.get("epoch") {
            None => 0,
            Some(v) => v.as_u64().ok_or_else(bad)?,
        };
        let start = match object.get("seq") {
            None => ReplayStart::EpochStart(epoch),
            Some(v) => match (v.as_u64(), v.as_i64()) {
                (Some(seq), _) => ReplayStart::After(Position::new(epoch, seq)),
                (None, Some(-1)) => ReplayStart::EpochStart(epoch),
                _ => return Err(bad()),
            },
        };
        Ok(ResumeFrom::new(session, start))
    }
}

/// What a `from` query parameter asks a relay to replay (AEP-0003 §3.3, §5).
///
/// ```
/// use aep_core::resume::{FromError, FromParam, ReplayStart, ResumeFrom};
///
/// assert_eq!(FromParam::parse("all", 10), Ok(FromParam::All));
/// let FromParam::Sessions(from) = FromParam::parse(r#"[{"session":"a","seq":-1}]"#, 10)? else {
///     panic!("a list of entries");
/// };
/// assert_eq!(from, [ResumeFrom::new("a", ReplayStart::EARLIEST)]);
/// assert_eq!(FromParam::parse(r#"[{},{}]"#, 1), Err(FromError::TooMany { max: 1 }));
/// assert_eq!(FromParam::parse("[nope", 1), Err(FromError::NotJson));
/// # Ok::<(), FromError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromParam {
    /// `all`: every held session from its earliest held event (replay-all, §5).
    All,
    /// Each listed session from where its entry says ([`ResumeFrom::parse_list`]).
    Sessions(Vec<ResumeFrom>),
}

impl FromParam {
    /// Reads a `from` value, percent-decoded: `all`, or a JSON array of at most `max`
    /// entries. A longer array is refused before its entries are read, so a hostile
    /// list costs its parse and no more.
    pub fn parse(text: &str, max: usize) -> Result<FromParam, FromError> {
        if text == "all" {
            return Ok(FromParam::All);
        }
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|_| FromError::NotJson)?;
        let items = value.as_array().ok_or(FromError::NotAnArray)?;
        if items.len() > max {
            return Err(FromError::TooMany { max });
        }
        ResumeFrom::parse_list(&value).map(FromParam::Sessions)
    }
}

impl From<ResumePosition> for ResumeFrom {
    /// Strictly after the position (AEP-0003 §7).
    fn from(p: ResumePosition) -> ResumeFrom {
        let start = ReplayStart::After(p.position());
        ResumeFrom::new(p.session, start)
    }
}

impl FromStr for ResumePosition {
    type Err = SseIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ResumePosition::parse_sse_id(s)
    }
}

/// Counts the percent-encoded length of what is written to it.
struct EncodedLen(usize);

impl io::Write for EncodedLen {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf
            .iter()
            .map(|&b| if percent::unreserved(b) { 1 } else { 3 })
            .sum::<usize>();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The `from` query value for `positions` (AEP-0003 §3.3): their JSON array,
/// percent-encoded (every byte outside RFC 3986 unreserved as `%XX`). Append it to the
/// query as is: `?from=` followed by this string.
///
/// For sessions of unreserved characters (ULIDs, `s-1`, ...) each entry measures what
/// [`ResumePosition::encoded_len`] says, as in the Python and TypeScript SDKs.
///
/// ```
/// use aep_core::resume::{encode_from, ResumePosition};
///
/// assert_eq!(
///     encode_from(&[ResumePosition::new("s", 0, 1)]),
///     "%5B%7B%22session%22%3A%22s%22%2C%22epoch%22%3A0%2C%22seq%22%3A1%7D%5D"
/// );
/// ```
pub fn encode_from(positions: &[ResumePosition]) -> String {
    // Serializing plain strings and integers into a Vec cannot fail.
    let json = serde_json::to_vec(positions).unwrap_or_default();
    // every byte outside RFC 3986 unreserved as `%XX`, so the value survives any query
    // parser
    percent::encode(&json, percent::unreserved)
}

/// The latest position per session, as a subscriber tracks it while events arrive;
/// persist it ([`to_json`](Self::to_json)) and hand it back on restart to resume.
///
/// Positions are keyed by session alone, as the `from` parameter names them
/// (AEP-0003 §3.3). A session's position never moves backwards: a late backfill or a
/// redelivery below the high-water mark (AEP-0003 §7) leaves it where it is. The
/// order of [`to_vec`](Self::to_vec) is by last advance, oldest first, so the tail is
/// the sessions that moved most recently: the ones [`FromBudget`] keeps on the live
/// request.
///
/// ```
/// use aep_core::{resume::{Position, Positions}, Event};
///
/// let mut p = Positions::new();
/// let e = |seq| Event::new(format!("{seq}"), "log.emitted", "t", "aep://h", "a").with_session("s").with_seq(seq);
/// assert!(p.observe(&e(5)));
/// assert!(!p.observe(&e(3))); // backfill: the position stays at 5
/// assert_eq!(p.get("s"), Some(Position::new(0, 5)));
///
/// let saved = p.to_json();
/// assert_eq!(saved, r#"[{"session":"s","epoch":0,"seq":5}]"#);
/// assert_eq!(Positions::from_json(&saved)?, p);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Positions {
    /// session -> (position, stamp of its last advance)
    map: HashMap<String, (Position, u64)>,
    clock: u64,
}

impl PartialEq for Positions {
    /// Same sessions at the same positions, in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.to_vec() == other.to_vec()
    }
}

impl Eq for Positions {}

impl Positions {
    /// No positions.
    pub fn new() -> Positions {
        Positions::default()
    }

    /// Records `position` for `session` when it is ahead of the one held (or none is);
    /// returns whether it advanced.
    ///
    /// ```
    /// use aep_core::resume::{Position, Positions};
    ///
    /// let mut p = Positions::new();
    /// assert!(p.advance("s", Position::new(0, 9)));
    /// assert!(p.advance("s", Position::new(1, 0))); // a new epoch is ahead
    /// assert!(!p.advance("s", Position::new(0, 10)));
    /// ```
    pub fn advance(&mut self, session: &str, position: Position) -> bool {
        self.clock += 1;
        let stamp = self.clock;
        match self.map.get_mut(session) {
            Some((held, _)) if *held >= position => false,
            Some(entry) => {
                *entry = (position, stamp);
                true
            }
            None => {
                self.map.insert(session.to_owned(), (position, stamp));
                true
            }
        }
    }

    /// Records the position of a session-scoped, sequenced event; returns whether it
    /// advanced (agent-scoped events and commands carry none).
    ///
    /// ```
    /// use aep_core::{resume::{Position, Positions}, Event};
    /// let mut p = Positions::new();
    /// let e = Event::new("1", "tool.requested", "t", "aep://h", "a").with_session("s").with_seq(4);
    /// assert!(p.observe(&e));
    /// assert_eq!(p.get("s"), Some(Position::new(0, 4)));
    /// ```
    pub fn observe(&mut self, event: &Event) -> bool {
        match (event.session(), Position::of(event)) {
            (Some(session), Some(position)) => self.advance(session, position),
            _ => false,
        }
    }

    /// Records a resume position (see [`advance`](Self::advance)).
    ///
    /// ```
    /// use aep_core::resume::{Position, Positions, ResumePosition};
    /// let mut p = Positions::new();
    /// assert!(p.insert(ResumePosition::new("s", 0, 9)));
    /// assert!(!p.insert(ResumePosition::new("s", 0, 3))); // never moves backwards
    /// assert_eq!(p.get("s"), Some(Position::new(0, 9)));
    /// ```
    pub fn insert(&mut self, position: ResumePosition) -> bool {
        self.advance(&position.session, position.position())
    }

    /// Takes every position of `other` that is ahead of the one held.
    ///
    /// ```
    /// use aep_core::resume::{Position, Positions, ResumePosition};
    ///
    /// let mut a: Positions = [ResumePosition::new("s", 0, 4), ResumePosition::new("t", 0, 1)].into_iter().collect();
    /// let b: Positions = [ResumePosition::new("s", 0, 2), ResumePosition::new("t", 0, 8)].into_iter().collect();
    /// a.merge(&b);
    /// assert_eq!(a.get("s"), Some(Position::new(0, 4)));
    /// assert_eq!(a.get("t"), Some(Position::new(0, 8)));
    /// ```
    pub fn merge(&mut self, other: &Positions) {
        for p in other.to_vec() {
            self.insert(p);
        }
    }

    /// The position held for `session`.
    pub fn get(&self, session: &str) -> Option<Position> {
        self.map.get(session).map(|(p, _)| *p)
    }

    /// Forgets `session`; returns its position.
    ///
    /// ```
    /// use aep_core::resume::{Position, Positions};
    /// let mut p = Positions::new();
    /// p.advance("s", Position::new(0, 1));
    /// assert_eq!(p.remove("s"), Some(Position::new(0, 1)));
    /// assert!(p.is_empty());
    /// ```
    pub fn remove(&mut self, session: &str) -> Option<Position> {
        self.map.remove(session).map(|(p, _)| p)
    }

    /// How many sessions have a position.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no session has a position.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every position, by last advance, oldest first.
    ///
    /// ```
    /// use aep_core::resume::{Position, Positions};
    /// let mut p = Positions::new();
    /// p.advance("a", Position::new(0, 1));
    /// p.advance("b", Position::new(0, 2));
    /// let sessions: Vec<String> = p.to_vec().iter().map(|r| r.session().to_owned()).collect();
    /// assert_eq!(sessions.len(), 2);
    /// ```
    pub fn to_vec(&self) -> Vec<ResumePosition> {
        let mut all: Vec<(&String, &(Position, u64))> = self.map.iter().collect();
        all.sort_unstable_by_key(|(_, (_, stamp))| *stamp);
        all.into_iter()
            .map(|(s, (p, _))| ResumePosition::new(s.clone(), p.epoch, p.seq))
            .collect()
    }

    /// The positions as a JSON array of `{session, epoch, seq}`, oldest first: the
    /// persisted form, and the shape of the `from` parameter.
    ///
    /// ```
    /// use aep_core::resume::{Position, Positions};
    /// let mut p = Positions::new();
    /// p.advance("s", Position::new(1, 2));
    /// let back = Positions::from_json(&p.to_json())?;
    /// assert_eq!(back.get("s"), Some(Position::new(1, 2)));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn to_json(&self) -> String {
        // A Vec of strings and integers always serializes.
        serde_json::to_string(&self.to_vec()).unwrap_or_else(|_| String::from("[]"))
    }

    /// Reads positions persisted by [`to_json`](Self::to_json) (or any JSON array of
    /// `{session, epoch, seq}`); a later entry for a session already read wins when
    /// it is ahead.
    ///
    /// ```
    /// use aep_core::resume::Positions;
    /// assert!(Positions::from_json("not json").is_err());
    /// ```
    pub fn from_json(json: &str) -> Result<Positions, serde_json::Error> {
        let all: Vec<ResumePosition> = serde_json::from_str(json)?;
        Ok(all.into_iter().collect())
    }
}

impl FromIterator<ResumePosition> for Positions {
    fn from_iter<I: IntoIterator<Item = ResumePosition>>(iter: I) -> Self {
        let mut p = Positions::new();
        p.extend(iter);
        p
    }
}

impl Extend<ResumePosition> for Positions {
    fn extend<I: IntoIterator<Item = ResumePosition>>(&mut self, iter: I) {
        for position in iter {
            self.insert(position);
        }
    }
}

impl Serialize for Positions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_vec().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Positions {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Vec::<ResumePosition>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}

/// How a resume set is spread over requests: the newest positions within `budget`
/// encoded characters ride the live request, older ones drain through at most
/// `max_chunks` replay-only (`live=0`) requests of the same budget, newest chunk
/// first; whatever is left is not requested.
///
/// The size of a list is counted as the Python and TypeScript SDKs count it: 2 for
/// the brackets, then each position's [`encoded_len`](ResumePosition::encoded_len)
/// plus 3 for its encoded comma. A position is taken while the total stays within the
/// budget; the first one is always taken, however large, so every request makes
/// progress. Defaults: budget 6000 characters, 20 chunks (the reference SDKs'), which
/// keeps the request line well under common 8 to 16 KiB header limits.
///
/// ```
/// use aep_core::resume::{FromBudget, ResumePosition};
///
/// let all: Vec<_> = (0..10).map(|i| ResumePosition::new(format!("s{i}"), 0, 1)).collect();
/// // each position costs 64 + 3 characters: three fit in 2 + 3 * 67 = 203
/// let plan = FromBudget::new(203, 2).plan(&all, None);
/// assert_eq!(plan.live(), &all[7..]);
/// assert_eq!(plan.chunks(), &[&all[4..7], &all[1..4]]);
/// assert_eq!(plan.unsent(), &all[..1]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FromBudget {
    budget: usize,
    max_chunks: usize,
}

impl Default for FromBudget {
    fn default() -> Self {
        FromBudget {
            budget: FromBudget::DEFAULT_BUDGET,
            max_chunks: FromBudget::DEFAULT_MAX_CHUNKS,
        }
    }
}

/// A resume set spread over requests by [`FromBudget::plan`].
///
/// ```
/// use aep_core::resume::{FromBudget, ResumePosition};
/// let positions: Vec<ResumePosition> = (0..3).map(|i| ResumePosition::new(format!("s{i}"), 0, 9)).collect();
/// let one = positions[0].encoded_len();
/// let plan = FromBudget::new(one + 2, 1).plan(&positions, None);
/// assert_eq!(plan.live().len(), 1);
/// assert_eq!(plan.chunks().len(), 1);
/// assert_eq!(plan.unsent().len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromPlan<'a> {
    live: &'a [ResumePosition],
    chunks: Vec<&'a [ResumePosition]>,
    unsent: &'a [ResumePosition],
}

impl<'a> FromPlan<'a> {
    /// The positions for the live request's `from`.
    pub fn live(&self) -> &'a [ResumePosition] {
        self.live
    }

    /// The replay-only requests to make before the live one, newest first.
    pub fn chunks(&self) -> &[&'a [ResumePosition]] {
        &self.chunks
    }

    /// The oldest positions no request carries (beyond `max_chunks`).
    pub fn unsent(&self) -> &'a [ResumePosition] {
        self.unsent
    }
}

impl FromBudget {
    /// The reference SDKs' budget, in encoded characters.
    pub const DEFAULT_BUDGET: usize = 6000;
    /// The reference SDKs' bound on replay-only drain requests per reconnect.
    pub const DEFAULT_MAX_CHUNKS: usize = 20;

    /// A budget of `budget` encoded characters per request and at most `max_chunks`
    /// drain requests.
    ///
    /// ```
    /// use aep_core::resume::FromBudget;
    /// let b = FromBudget::new(2000, 5);
    /// assert_eq!((b.budget(), b.max_chunks()), (2000, 5));
    /// ```
    pub fn new(budget: usize, max_chunks: usize) -> FromBudget {
        FromBudget { budget, max_chunks }
    }

    /// Encoded characters per request.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Drain requests per reconnect, at most.
    pub fn max_chunks(&self) -> usize {
        self.max_chunks
    }

    /// Splits `positions` (oldest first) into the newest tail that fits the budget,
    /// holding at most `cap` positions, and the older rest: `(head, rest)` with
    /// `rest ++ head == positions`.
    ///
    /// `cap` is for a relay that refused a request carrying `n` positions with a 4xx
    /// (it may cap `from`): retry with `Some(n / 2)`.
    ///
    /// ```
    /// use aep_core::resume::{FromBudget, ResumePosition};
    ///
    /// let all: Vec<_> = (0..4).map(|i| ResumePosition::new(format!("s{i}"), 0, 1)).collect();
    /// let (head, rest) = FromBudget::default().split(&all, Some(1));
    /// assert_eq!((head, rest), (&all[3..], &all[..3]));
    /// ```
    pub fn split<'a>(
        &self,
        positions: &'a [ResumePosition],
        cap: Option<usize>,
    ) -> (&'a [ResumePosition], &'a [ResumePosition]) {
        let mut size = 2usize;
        let mut start = positions.len();
        let cap = cap.unwrap_or(usize::MAX);
        while start > 0 && positions.len() - start < cap {
            let Some(p) = positions.get(start - 1) else {
                break;
            };
            let entry = p.encoded_len() + 3;
            if start < positions.len() && size + entry > self.budget {
                break;
            }
            size += entry;
            start -= 1;
        }
        let (rest, head) = positions.split_at(start);
        (head, rest)
    }

    /// The whole plan: the live request's positions (at most `cap`), then drain
    /// chunks of the rest, newest first, at most [`max_chunks`](Self::max_chunks).
    ///
    /// ```
    /// use aep_core::resume::{FromBudget, ResumePosition};
    /// let positions = vec![ResumePosition::new("s1", 0, 3), ResumePosition::new("s2", 0, 8)];
    /// let plan = FromBudget::default().plan(&positions, None);
    /// assert_eq!(plan.live(), &positions[..]); // small sets ride the live request whole
    /// assert!(plan.chunks().is_empty() && plan.unsent().is_empty());
    /// ```
    pub fn plan<'a>(&self, positions: &'a [ResumePosition], cap: Option<usize>) -> FromPlan<'a> {
        let (live, mut rest) = self.split(positions, cap);
        let mut chunks = Vec::new();
        while !rest.is_empty() && chunks.len() < self.max_chunks {
            let (chunk, older) = self.split(rest, None);
            chunks.push(chunk);
            rest = older;
        }
        FromPlan {
            live,
            chunks,
            unsent: rest,
        }
    }
}

/// The SSE comment a relay writes before a replay that starts past the requested
/// position: `: replay-exhausted {session} {epoch}:{seq}` followed by the blank line
/// that ends the SSE message (AEP-0003 §3.3.3). The position is the earliest one the
/// relay still holds. Written by the relay, read by consumers, through this one pair.
///
/// ```
/// use aep_core::resume::{parse_replay_exhausted_comment, replay_exhausted_comment, ResumePosition};
///
/// let at = ResumePosition::new("s:1", 2, 30);
/// let wire = replay_exhausted_comment(&at);
/// assert_eq!(wire, ": replay-exhausted s:1 2:30\n\n");
/// // A consumer sees the comment text after the colon and its space.
/// assert_eq!(parse_replay_exhausted_comment("replay-exhausted s:1 2:30"), Some(at));
/// assert_eq!(parse_replay_exhausted_comment("replay-complete"), None);
/// ```
pub fn replay_exhausted_comment(earliest: &ResumePosition) -> String {
    format!(
        ": replay-exhausted {} {}:{}\n\n",
        earliest.session(),
        earliest.epoch(),
        earliest.seq()
    )
}

/// The SSE comment a relay writes when a `live=0` history pass has sent everything it
/// holds (AEP-0003 §5), message end included.
///
/// ```
/// assert!(aep_core::resume::is_replay_complete_comment(
///     aep_core::resume::REPLAY_COMPLETE_COMMENT.trim_start_matches(": ")
/// ));
/// ```
pub const REPLAY_COMPLETE_COMMENT: &str = ": replay-complete\n\n";

/// Whether the text of an SSE comment (without its leading `:` and space) is the
/// `replay-complete` marker; text after the word is tolerated, as relays may add some.
///
/// ```
/// use aep_core::resume::is_replay_complete_comment;
/// assert!(is_replay_complete_comment("replay-complete"));
/// assert!(!is_replay_complete_comment("replay-exhausted s 0:3"));
/// ```
pub fn is_replay_complete_comment(comment: &str) -> bool {
    comment.starts_with("replay-complete")
}

/// Reads the text of a `replay-exhausted` SSE comment (without its leading `:` and
/// space); `None` for any other comment or a malformed one. The session is everything
/// before the last space, so a session containing spaces or colons reads back whole.
pub fn parse_replay_exhausted_comment(comment: &str) -> Option<ResumePosition> {
    let rest = comment.strip_prefix("replay-exhausted ")?;
    let (session, pos) = rest.trim_end().rsplit_once(' ')?;
    let (epoch, seq) = pos.split_once(':')?;
    if session.is_empty() {
        return None;
    }
    Some(ResumePosition::new(
        session,
        epoch.parse().ok()?,
        seq.parse().ok()?,
    ))
}
