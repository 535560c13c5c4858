//! The first occurrence of every `(source, id)`, kept so that a redelivery is told from a
//! collision (AEP-0001 §7.4).

use crate::Event;

/// The size of a record chunk, in bytes.
const CHUNK: usize = 32 * 1024;

/// The first occurrence of every `(source, id)`, kept exactly so that a later event
/// under the same key is told apart as a redelivery or a collision (AEP-0001 §7.4).
///
/// Each record is the event minus its key, appended to a chunk (no allocation per
/// event): the attributes with length prefixes, then `data` and the extension
/// attributes as their raw JSON text. Equal bytes are equal events. Bytes that differ
/// may still be one event written twice (members reordered, whitespace, escapes), so
/// `data` and the extensions are then compared as JSON values, the reading of the
/// reference SDKs' sorted-keys JSON: member order ignored, `1` and `1.0` distinct.
#[derive(Debug, Default)]
pub(super) struct Witnesses {
    /// Records in chunks of about [`CHUNK`] bytes: no reallocation copies a growing
    /// buffer, and freed chunks are reused by the allocator.
    chunks: Vec<Vec<u8>>,
    scratch: Vec<u8>,
}

/// A length, or absence: `0` absent, `n + 1` for length `n`, in one byte below 255,
/// else `255` and four bytes.
fn put_len(out: &mut Vec<u8>, n: Option<usize>) {
    let n = n.map_or(0, |n| n + 1);
    match u8::try_from(n) {
        Ok(b) if b < 0xff => out.push(b),
        _ => {
            out.push(0xff);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: Option<&str>) {
    put_len(out, s.map(str::len));
    if let Some(s) = s {
        out.extend_from_slice(s.as_bytes());
    }
}

/// The string attributes a record holds, in record order (`source` and `id` are the
/// key), and `data`.
fn record_parts(event: &Event) -> ([Option<&str>; 10], Option<&str>) {
    let strings = [
        Some(event.aep()),
        Some(event.event_type()),
        event.subject(),
        Some(event.time()),
        Some(event.agent()),
        event.session(),
        event.run(),
        event.step(),
        event.cause(),
        event.traceparent(),
    ];
    (strings, event.data_raw().map(|r| r.get()))
}

/// Writes `event` (less `source` and `id`, the key) as a record: the fixed part with
/// its length first, then `data`, then the extensions.
fn put_record(out: &mut Vec<u8>, event: &Event) {
    let (strings, data) = record_parts(event);
    let mark = out.len();
    let short = strings
        .iter()
        .chain([&data])
        .all(|s| s.is_none_or(|s| s.len() < 0xfe));
    if short && event.extensions().len() == 0 {
        // The common case in one pass over a buffer sized once: every length fits a
        // byte, no extension attributes.
        let fixed: usize = strings
            .iter()
            .map(|s| s.map_or(1, |s| s.len() + 1))
            .sum::<usize>()
            + 20;
        let total = 4 + fixed + data.map_or(1, |d| d.len() + 1) + 1;
        out.resize(mark + total, 0);
        let Some(buf) = out.get_mut(mark..) else {
            return;
        };
        // The buffer is zeroed: an absent attribute (0) needs no write.
        let mut w = Writer { buf, at: 0 };
        w.word32(fixed as u32);
        for s in strings {
            w.short_str(s);
        }
        for v in [event.seq(), event.epoch_attr()] {
            w.byte(u8::from(v.is_some()));
            w.word64(v.unwrap_or(0));
        }
        w.byte(event.severity_attr().map_or(0xff, |s| s as u8));
        w.byte(event.capture_attr().map_or(0xff, |c| c as u8));
        w.short_str(data);
        w.byte(1); // no extension attributes
        let at = w.at;
        debug_assert_eq!(at, total);
        return;
    }
    put_record_any(out, event);
}

/// Writes into a zeroed buffer of the right size (out-of-range writes are dropped,
/// never a panic).
struct Writer<'b> {
    buf: &'b mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn byte(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.at) {
            *slot = b;
        }
        self.at += 1;
    }

    fn word32(&mut self, v: u32) {
        if let Some(slot) = self.buf.get_mut(self.at..self.at + 4) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
        self.at += 4;
    }

    fn word64(&mut self, v: u64) {
        if let Some(slot) = self.buf.get_mut(self.at..self.at + 8) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
        self.at += 8;
    }

    /// A string shorter than 254 bytes as [`put_str`] writes it.
    fn short_str(&mut self, s: Option<&str>) {
        match s {
            None => self.at += 1,
            Some(s) => {
                self.byte(s.len() as u8 + 1);
                if let Some(slot) = self.buf.get_mut(self.at..self.at + s.len()) {
                    slot.copy_from_slice(s.as_bytes());
                }
                self.at += s.len();
            }
        }
    }
}

/// [`put_record`] for any event: long attributes, extension attributes.
fn put_record_any(out: &mut Vec<u8>, event: &Event) {
    let (strings, data) = record_parts(event);
    let mark = out.len();
    out.extend_from_slice(&[0; 4]);
    for s in strings {
        put_str(out, s);
    }
    for v in [event.seq(), event.epoch_attr()] {
        out.push(u8::from(v.is_some()));
        out.extend_from_slice(&v.unwrap_or(0).to_le_bytes());
    }
    out.push(event.severity_attr().map_or(0xff, |s| s as u8));
    out.push(event.capture_attr().map_or(0xff, |c| c as u8));
    let fixed = (out.len() - mark - 4) as u32;
    if let Some(len) = out.get_mut(mark..mark + 4) {
        len.copy_from_slice(&fixed.to_le_bytes());
    }
    put_str(out, data);
    put_len(out, Some(event.extensions().len()));
    for (name, value) in event.extensions() {
        put_str(out, Some(name));
        put_str(out, Some(value.get()));
    }
}

/// A record read back: the fixed part, `data` and the extensions.
struct Record<'a> {
    fixed: &'a [u8],
    data: Option<&'a [u8]>,
    extensions: Vec<(&'a [u8], &'a [u8])>,
}

/// Reads what [`put_len`] wrote: `Some(None)` for absence.
fn take_len(bytes: &mut &[u8]) -> Option<Option<usize>> {
    let (&b, rest) = bytes.split_first()?;
    *bytes = rest;
    let n = if b < 0xff {
        usize::from(b)
    } else {
        let (n, rest) = bytes.split_first_chunk::<4>()?;
        *bytes = rest;
        u32::from_le_bytes(*n) as usize
    };
    Some(n.checked_sub(1))
}

fn take_str<'a>(bytes: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    match take_len(bytes)? {
        None => Some(None),
        Some(n) => {
            let (s, rest) = bytes.split_at_checked(n)?;
            *bytes = rest;
            Some(Some(s))
        }
    }
}

impl<'a> Record<'a> {
    fn read(mut bytes: &'a [u8]) -> Option<Record<'a>> {
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let (fixed, rest) = rest.split_at_checked(u32::from_le_bytes(*len) as usize)?;
        bytes = rest;
        let data = take_str(&mut bytes)?;
        let count = take_len(&mut bytes)??;
        let mut extensions = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            extensions.push((take_str(&mut bytes)??, take_str(&mut bytes)??));
        }
        Some(Record {
            fixed,
            data,
            extensions,
        })
    }
}

/// Whether two JSON texts hold the same value (object member order ignored).
fn same_json(a: &[u8], b: &[u8]) -> bool {
    a == b
        || matches!(
            (
                serde_json::from_slice::<serde_json::Value>(a),
                serde_json::from_slice::<serde_json::Value>(b),
            ),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Whether two records hold the same event.
fn same_record(first: &[u8], second: &[u8]) -> bool {
    if first == second {
        return true;
    }
    let (Some(a), Some(b)) = (Record::read(first), Record::read(second)) else {
        return false;
    };
    a.fixed == b.fixed
        && match (a.data, b.data) {
            (Some(x), Some(y)) => same_json(x, y),
            (None, None) => true,
            _ => false,
        }
        && a.extensions.len() == b.extensions.len()
        && a.extensions.iter().all(|(name, x)| {
            b.extensions
                .iter()
                .any(|(other, y)| name == other && same_json(x, y))
        })
}

impl Witnesses {
    /// Records `event`; returns where its record lies: chunk and offset packed as
    /// `chunk << 32 | offset`, and the length.
    pub(super) fn record(&mut self, event: &Event) -> (u64, u32) {
        let full = self.chunks.last().is_none_or(|c| c.len() >= CHUNK);
        if full {
            self.chunks.push(Vec::with_capacity(CHUNK + 1024));
        }
        let at = self.chunks.len() - 1;
        let Some(chunk) = self.chunks.last_mut() else {
            return (0, 0);
        };
        let start = chunk.len();
        put_record(chunk, event);
        (
            ((at as u64) << 32) | start as u64,
            (chunk.len() - start) as u32,
        )
    }

    /// Whether `event` is the one recorded at `at` with length `len`, as [`record`]
    /// returned them.
    ///
    /// [`record`]: Witnesses::record
    pub(super) fn same(&mut self, at: u64, len: u32, event: &Event) -> bool {
        self.scratch.clear();
        put_record(&mut self.scratch, event);
        let offset = (at & 0xffff_ffff) as usize;
        let first = self
            .chunks
            .get((at >> 32) as usize)
            .and_then(|c| c.get(offset..offset + len as usize));
        first.is_some_and(|first| same_record(first, &self.scratch))
    }

    /// Whether two events are the same, by their records.
    pub(super) fn same_events(&mut self, first: &Event, event: &Event) -> bool {
        self.scratch.clear();
        put_record(&mut self.scratch, first);
        let mark = self.scratch.len();
        put_record(&mut self.scratch, event);
        let (a, b) = self.scratch.split_at(mark);
        same_record(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_json_ignores_member_order_whitespace_and_escapes() {
        let same = |a: &str, b: &str| same_json(a.as_bytes(), b.as_bytes());
        assert!(same(
            r#"{"a":1,"b":[1,"x"]}"#,
            r#"{ "b" : [1, "\u0078"], "a":1 }"#
        ));
        assert!(!same(r#"{"a":1}"#, r#"{"a":1.0}"#));
        assert!(!same(r#"[1,2]"#, r#"[2,1]"#));
        assert!(!same(r#"{"a":"b"}"#, r#"{"b":"a"}"#));
        assert!(!same(r#"{"a":{}}"#, r#"{"a":[]}"#));
        assert!(!same("null", "false"));
    }

    #[test]
    fn the_one_pass_record_is_the_general_record() {
        let e: Event = r#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","session":"x","seq":3,"severity":"notice","data":{"kind":"form"}}"#.parse().unwrap();
        let (mut fast, mut general) = (vec![7u8], vec![7u8]);
        put_record(&mut fast, &e);
        put_record_any(&mut general, &e);
        assert_eq!(fast, general);
        let r = Record::read(&fast[1..]).unwrap();
        assert_eq!(r.data, Some(&br#"{"kind":"form"}"#[..]));
        assert!(r.extensions.is_empty());
    }

    #[test]
    fn records_read_back() {
        let e: Event = r#"{"aep":"0.1","id":"1","type":"a.b","time":"t","source":"s","agent":"a","xa":{"k":[1]},"xb":"v","data":{"z":1}}"#.parse().unwrap();
        let mut out = Vec::new();
        put_record(&mut out, &e);
        let r = Record::read(&out).unwrap();
        assert_eq!(r.data, Some(&br#"{"z":1}"#[..]));
        assert_eq!(
            r.extensions,
            [
                (&b"xa"[..], &br#"{"k":[1]}"#[..]),
                (&b"xb"[..], &br#""v""#[..])
            ]
        );
        for n in [None, Some(0), Some(253), Some(254), Some(300)] {
            let mut buf = Vec::new();
            put_len(&mut buf, n);
            assert_eq!(take_len(&mut &buf[..]), Some(n));
        }
        assert!(Record::read(&out[..out.len() - 1]).is_none());
    }
}
