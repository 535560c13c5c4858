//! The string formats of AEP-0001 §5.1: `time` (RFC 3339 date-time), `source` (URI) and
//! `traceparent` (W3C Trace Context).

/// A byte cursor that never indexes out of bounds.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = self.bytes.get(self.at).copied();
        self.at += 1;
        b
    }

    fn eat(&mut self, want: &[u8]) -> bool {
        matches!(self.byte(), Some(b) if want.contains(&b))
    }

    /// A fixed-width decimal field within `lo..=hi`.
    fn number(&mut self, width: usize, lo: u32, hi: u32) -> bool {
        let mut n = 0u32;
        for _ in 0..width {
            match self.byte() {
                Some(b) if b.is_ascii_digit() => n = n * 10 + u32::from(b - b'0'),
                _ => return false,
            }
        }
        (lo..=hi).contains(&n)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
}

/// Whether `s` is an RFC 3339 date-time (AEP-0001 §5.1 `time`).
///
/// Field ranges are enforced (month 01-12, day 01-31, hour 00-23, minute 00-59, second
/// 00-60 for a leap second), a fraction of any length is allowed, and the offset is `Z`,
/// `z` or `±HH:MM`. Days per month and leap years are not checked, the same approximation
/// the TypeScript SDK documents (so `2026-02-31T00:00:00Z` passes).
///
/// ```
/// use aep_core::validate::is_date_time;
/// assert!(is_date_time("2026-07-03T10:15:04.221Z"));
/// assert!(is_date_time("2026-07-03t10:15:60+05:30"));
/// assert!(!is_date_time("2026-07-03 10:15:04Z"));
/// assert!(!is_date_time("2026-13-03T10:15:04Z"));
/// assert!(!is_date_time("2026-07-03T10:15:04")); // no offset
/// ```
pub fn is_date_time(s: &str) -> bool {
    let mut c = Cursor {
        bytes: s.as_bytes(),
        at: 0,
    };
    let date = c.number(4, 0, 9999)
        && c.eat(b"-")
        && c.number(2, 1, 12)
        && c.eat(b"-")
        && c.number(2, 1, 31);
    let time = date
        && c.eat(b"Tt")
        && c.number(2, 0, 23)
        && c.eat(b":")
        && c.number(2, 0, 59)
        && c.eat(b":")
        && c.number(2, 0, 60);
    if !time {
        return false;
    }
    if c.peek() == Some(b'.') {
        c.at += 1;
        let start = c.at;
        while c.peek().is_some_and(|b| b.is_ascii_digit()) {
            c.at += 1;
        }
        if c.at == start {
            return false;
        }
    }
    let offset = match c.byte() {
        Some(b'Z' | b'z') => true,
        Some(b'+' | b'-') => c.number(2, 0, 23) && c.eat(b":") && c.number(2, 0, 59),
        _ => false,
    };
    offset && c.done()
}

/// Whether `s` is a URI as AEP-0001 §5.1 `source` needs one: an RFC 3986 scheme
/// (lowercase, as every AEP source is) followed by `:`, and no whitespace or control
/// characters anywhere. This tells schemed identifiers (`aep://…`, `https://…`,
/// `urn:…`) from bare names, the same approximation the TypeScript SDK documents.
///
/// ```
/// use aep_core::validate::is_uri;
/// assert!(is_uri("aep://host-a/agent/claude-code"));
/// assert!(is_uri("urn:aep:agent:a"));
/// assert!(!is_uri("adapter-a"));
/// assert!(!is_uri("aep://host a/agent"));
/// ```
pub fn is_uri(s: &str) -> bool {
    let Some(colon) = s.bytes().position(|b| b == b':') else {
        return false;
    };
    let scheme = &s.as_bytes()[..colon];
    let scheme_ok = scheme.first().is_some_and(|b| b.is_ascii_lowercase())
        && scheme.iter().all(|&b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'.' | b'-')
        });
    if !scheme_ok {
        return false;
    }
    // The relay runs this on every event's `source`: one branch-free pass over the
    // bytes settles ASCII text (where control and white space are exactly the bytes up
    // to 0x20, and 0x7F); only text with other characters needs the Unicode tables.
    let (bad, wide) = s.bytes().fold((false, false), |(bad, wide), b| {
        (bad | (b <= 0x20) | (b == 0x7f), wide | (b >= 0x80))
    });
    if !wide {
        return !bad;
    }
    // U+FEFF counts as whitespace for the ECMAScript `\s` the reference uses.
    !s.chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\u{feff}')
}

/// Whether `s` is a W3C Trace Context `traceparent` header value (AEP-0001 §5.1):
/// `vv-<32 hex>-<16 hex>-ff`, lowercase hex.
///
/// ```
/// use aep_core::validate::is_traceparent;
/// assert!(is_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
/// assert!(!is_traceparent("not-a-traceparent"));
/// ```
pub fn is_traceparent(s: &str) -> bool {
    let mut parts = s.split('-');
    let hex = |p: Option<&str>, len: usize| {
        p.is_some_and(|p| {
            p.len() == len
                && p.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
    };
    hex(parts.next(), 2)
        && hex(parts.next(), 32)
        && hex(parts.next(), 16)
        && hex(parts.next(), 2)
        && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_time_edges() {
        for ok in [
            "2026-07-03T10:00:00Z",
            "2026-07-03T23:59:60.123456789-12:00",
            "0000-01-01T00:00:00z",
            "2026-02-31T00:00:00Z",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "",
            "2026-07-03",
            "2026-07-03T24:00:00Z",
            "2026-07-03T10:60:00Z",
            "2026-07-03T10:00:61Z",
            "2026-00-03T10:00:00Z",
            "2026-07-00T10:00:00Z",
            "2026-07-32T10:00:00Z",
            "2026-07-03T10:00:00.Z",
            "2026-07-03T10:00:00+24:00",
            "2026-07-03T10:00:00+05:60",
            "2026-07-03T10:00:00+0530",
            "2026-07-03T10:00:00ZZ",
            "２026-07-03T10:00:00Z",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }

    #[test]
    fn uri_edges() {
        assert!(is_uri("a:"));
        assert!(is_uri("x+y.z-1:rest"));
        for bad in [
            "",
            ":x",
            "1a:x",
            "Aep://h",
            "aep://h\u{7f}",
            "aep://h\u{a0}",
            "aep://h\u{feff}",
            "aep://h\tx",
        ] {
            assert!(!is_uri(bad), "{bad:?}");
        }
    }

    #[test]
    fn uri_ascii_fast_path_agrees_with_the_unicode_rule() {
        let slow = |s: &str| {
            !s.chars()
                .any(|c| c.is_control() || c.is_whitespace() || c == '\u{feff}')
        };
        for b in 0u8..0x80 {
            let text = format!("aep://h/{}", char::from(b));
            assert_eq!(is_uri(&text), slow(&text), "{b:#x}");
        }
        for text in [
            "aep://hé/ü",
            "aep://h\u{85}",
            "aep://h\u{2028}",
            "aep://h\u{3000}x",
        ] {
            assert_eq!(is_uri(text), slow(text), "{text:?}");
        }
        assert!(is_uri("aep://hé/ü"));
    }

    #[test]
    fn traceparent_edges() {
        assert!(!is_traceparent(
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"
        ));
        assert!(!is_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-"
        ));
        assert!(!is_traceparent(""));
    }
}
