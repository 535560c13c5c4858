//! A direct reader for the plain envelope: an object whose keys have no escapes, whose
//! string attributes have no escapes or control characters, and whose `seq` and `epoch`
//! are plain integers. It gives up (`None`) on anything else, and the caller hands the
//! line to serde_json, so it never decides differently: where it reads, it finds what
//! [`EventVisitor`](super::wire::EventVisitor) finds, with the same wire order. Per event this
//! skips serde's per-token plumbing, which dominates the parse of an object this small
//! (AEP-0003 §3.2: every event a relay ingests is parsed).
//!
//! The reading borrows from the line ([`Plain`]); `data` and extension values are read by
//! a [`RawRead`]: serde_json's `RawValue` for an [`Event`], which owns them, or this
//! module's own grammar check for an [`EnvelopeView`](super::EnvelopeView), which only
//! needs to know the value is JSON.

use serde::Deserialize;

use super::*;

/// How a reading takes one JSON value (`data`, an extension value) from the line.
pub(crate) trait RawRead<'a>: Sized {
    /// Whether the reading records the wire order (an [`Event`] writes it back; a view
    /// only reads).
    const KEEPS_ORDER: bool;
    /// Reads the value at the reader's position (leading whitespace skipped), or gives up.
    fn read(r: &mut Reader<'a>) -> Option<Self>;
}

/// serde_json's reading: validated and borrowed, what an [`Event`] keeps (owned).
impl<'a> RawRead<'a> for &'a RawValue {
    const KEEPS_ORDER: bool = true;
    fn read(r: &mut Reader<'a>) -> Option<Self> {
        let rest = r.text.get(r.at..)?;
        let mut de = serde_json::Deserializer::from_str(rest);
        let raw = <&RawValue>::deserialize(&mut de).ok()?;
        let offset = (raw.get().as_ptr() as usize).checked_sub(rest.as_ptr() as usize)?;
        r.at += offset + raw.get().len();
        Some(raw)
    }
}

/// A JSON value's text, checked against the RFC 8259 grammar by [`skip_value`] and
/// kept as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Json<'a>(pub(crate) &'a str);

impl<'a> RawRead<'a> for Json<'a> {
    const KEEPS_ORDER: bool = false;
    fn read(r: &mut Reader<'a>) -> Option<Self> {
        let start = r.at;
        skip_value(r, 0)?;
        r.text.get(start..r.at).map(Json)
    }
}

/// The attributes of a plain envelope, borrowed from its line.
#[derive(Debug, Clone)]
pub(crate) struct Plain<'a, R> {
    pub(crate) aep: &'a str,
    pub(crate) id: &'a str,
    pub(crate) ty: &'a str,
    pub(crate) subject: Option<&'a str>,
    pub(crate) time: &'a str,
    pub(crate) source: &'a str,
    pub(crate) agent: &'a str,
    pub(crate) session: Option<&'a str>,
    pub(crate) run: Option<&'a str>,
    pub(crate) step: Option<&'a str>,
    pub(crate) seq: Option<u64>,
    pub(crate) epoch: Option<u64>,
    pub(crate) cause: Option<&'a str>,
    pub(crate) traceparent: Option<&'a str>,
    pub(crate) severity: Option<Severity>,
    pub(crate) capture: Option<Capture>,
    pub(crate) data: Option<R>,
    pub(crate) extensions: Vec<(&'a str, R)>,
    pub(super) order: WireOrder,
}

/// Reads `text` as a plain envelope, or gives up.
pub(crate) fn read<'a, R: RawRead<'a>>(text: &'a str) -> Option<Plain<'a, R>> {
    let mut r = Reader {
        b: text.as_bytes(),
        text,
        at: 0,
    };
    r.ws();
    r.byte(b'{')?;
    let (mut aep, mut id, mut ty, mut time, mut source, mut agent) =
        (None, None, None, None, None, None);
    let (mut subject, mut session, mut run, mut step, mut cause, mut traceparent) =
        (None, None, None, None, None, None);
    let (mut seq, mut epoch, mut severity, mut capture, mut data) = (None, None, None, None, None);
    let mut extensions: Vec<(&'a str, R)> = Vec::new();
    let mut order = WireOrder::new();
    r.ws();
    if r.peek()? == b'}' {
        return None; // required attributes missing: serde's error
    }
    loop {
        r.ws();
        let key = r.string()?;
        r.ws();
        r.byte(b':')?;
        r.ws();
        match core_slot(key) {
            Some(slot) => {
                let fresh = if R::KEEPS_ORDER {
                    order.push(slot)
                } else {
                    order.see(slot)
                };
                if !fresh {
                    return None; // duplicate: serde's error
                }
                match slot {
                    slot::AEP => aep = Some(r.string()?),
                    slot::ID => id = Some(r.string()?),
                    slot::TYPE => ty = Some(r.string()?),
                    slot::SUBJECT => subject = Some(r.string()?),
                    slot::TIME => time = Some(r.string()?),
                    slot::SOURCE => source = Some(r.string()?),
                    slot::AGENT => agent = Some(r.string()?),
                    slot::SESSION => session = Some(r.string()?),
                    slot::RUN => run = Some(r.string()?),
                    slot::STEP => step = Some(r.string()?),
                    slot::SEQ => seq = Some(r.integer()?),
                    slot::EPOCH => epoch = Some(r.integer()?),
                    slot::CAUSE => cause = Some(r.string()?),
                    slot::TRACEPARENT => traceparent = Some(r.string()?),
                    slot::SEVERITY => severity = Some(r.string()?.parse().ok()?),
                    slot::CAPTURE => capture = Some(r.string()?.parse().ok()?),
                    DATA => data = Some(R::read(&mut r)?),
                    _ => return None, // not a core slot: core_slot gives none other
                }
            }
            None => {
                if extensions.iter().any(|(k, _)| *k == key) {
                    return None;
                }
                if R::KEEPS_ORDER {
                    order.push(EXT);
                }
                let value = R::read(&mut r)?;
                extensions.push((key, value));
            }
        }
        r.ws();
        match r.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    r.ws();
    if r.at != r.b.len() {
        return None;
    }
    Some(Plain {
        aep: aep?,
        id: id?,
        ty: ty?,
        subject,
        time: time?,
        source: source?,
        agent: agent?,
        session,
        run,
        step,
        seq,
        epoch,
        cause,
        traceparent,
        severity,
        capture,
        data,
        extensions,
        order,
    })
}

/// Reads `text` as a plain envelope into an [`Event`], or gives up.
pub(super) fn envelope(text: &str) -> Option<Event> {
    let p = read::<&RawValue>(text)?;
    let strings = [
        (slot::AEP, Some(p.aep)),
        (slot::ID, Some(p.id)),
        (slot::TYPE, Some(p.ty)),
        (slot::SUBJECT, p.subject),
        (slot::TIME, Some(p.time)),
        (slot::SOURCE, Some(p.source)),
        (slot::AGENT, Some(p.agent)),
        (slot::SESSION, p.session),
        (slot::RUN, p.run),
        (slot::STEP, p.step),
        (slot::CAUSE, p.cause),
        (slot::TRACEPARENT, p.traceparent),
    ];
    let len = strings.iter().filter_map(|(_, v)| *v).map(str::len).sum();
    let mut event = Event::with_capacity(len);
    for (at, value) in strings {
        if let Some(value) = value {
            event.append(at, value);
        }
    }
    event.seq = p.seq;
    event.epoch = p.epoch;
    event.severity = p.severity;
    event.capture = p.capture;
    event.data = p.data.map(ToOwned::to_owned);
    event.extensions = p
        .extensions
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    event.order = p.order.finish();
    Some(event)
}

pub(crate) struct Reader<'a> {
    b: &'a [u8],
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn byte(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// A string with no escapes and no control characters, borrowed.
    fn string(&mut self) -> Option<&'a str> {
        self.byte(b'"')?;
        let start = self.at;
        let end = start + plain_run(self.b.get(start..)?)?;
        self.at = end + 1;
        // `end` is at an ASCII quote, so both ends are on character boundaries
        self.text.get(start..end)
    }

    /// A `u64` written as plain digits (no sign, fraction, exponent or leading zero).
    fn integer(&mut self) -> Option<u64> {
        let start = self.at;
        self.digits();
        let digits = self.b.get(start..self.at)?;
        if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        digits.iter().try_fold(0u64, |n, d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    /// At least one digit, then any more.
    fn digits1(&mut self) -> Option<()> {
        if !self.next()?.is_ascii_digit() {
            return None;
        }
        self.digits();
        Some(())
    }

    /// Any JSON string, escapes included (RFC 8259 §7: the escapes serde_json takes;
    /// a `\u` escape's code point is not judged, as serde_json does not judge it when
    /// it only checks a value).
    fn skip_string(&mut self) -> Option<()> {
        self.byte(b'"')?;
        loop {
            self.at += special(self.b.get(self.at..)?)?;
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            if !self.next()?.is_ascii_hexdigit() {
                                return None;
                            }
                        }
                    }
                    _ => return None,
                },
                _ => return None, // a raw control character
            }
        }
    }

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, range not
    /// judged (a value keeps its spelling).
    fn skip_number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits1()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.digits1()?;
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.b.get(self.at..end)? == word).then(|| self.at = end)
    }
}

/// Nesting deeper than this gives up, and the line goes to [`Event::from_slice`]; serde_json
/// reads a raw value at any depth, so this only narrows what the in-place reading takes
/// and keeps its recursion bounded.
const MAX_DEPTH: u32 = 64;

/// Checks and passes over one JSON value. Anything outside the grammar gives up, and so
/// does nesting past [`MAX_DEPTH`] levels, so that where this accepts, serde_json accepts
/// too.
fn skip_value(r: &mut Reader<'_>, depth: u32) -> Option<()> {
    match r.peek()? {
        b'"' => r.skip_string(),
        open @ (b'{' | b'[') => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let (object, close) = (open == b'{', if open == b'{' { b'}' } else { b']' });
            r.at += 1;
            r.ws();
            if r.peek()? == close {
                r.at += 1;
                return Some(());
            }
            loop {
                if object {
                    r.skip_string()?;
                    r.ws();
                    r.byte(b':')?;
                    r.ws();
                }
                skip_value(r, depth + 1)?;
                r.ws();
                match r.next()? {
                    b',' => r.ws(),
                    c if c == close => return Some(()),
                    _ => return None,
                }
            }
        }
        b't' => r.literal(b"true"),
        b'f' => r.literal(b"false"),
        b'n' => r.literal(b"null"),
        b'-' | b'0'..=b'9' => r.skip_number(),
        _ => None,
    }
}

/// The length of the run before a closing quote, or `None` if a backslash or a control
/// character (which JSON forbids raw in strings) comes first.
fn plain_run(b: &[u8]) -> Option<usize> {
    special(b).filter(|&i| b.get(i) == Some(&b'"'))
}

/// The index of the first quote, backslash or control character. Eight bytes at a time:
/// in each word, the lowest byte flagged by the borrow trick is a true match (a false
/// flag needs a borrow from a lower, truly matching byte).
fn special(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let mut at = 0;
    while let Some(word) = b.get(at..at + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let x = u64::from_le_bytes(bytes);
        let ctrl = x.wrapping_sub(ONES * 0x20) & !x;
        let q = x ^ (ONES * u64::from(b'"'));
        let quote = q.wrapping_sub(ONES) & !q;
        let s = x ^ (ONES * u64::from(b'\\'));
        let slash = s.wrapping_sub(ONES) & !s;
        let hits = (ctrl | quote | slash) & HIGH;
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    for &c in b.get(at..)? {
        if matches!(c, b'"' | b'\\' | 0..=0x1f) {
            return Some(at);
        }
        at += 1;
    }
    None
}
