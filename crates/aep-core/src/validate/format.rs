//! The string formats of AEP-0001 §5.1: `time` (RFC 3339 date-time), `source` (URI) and
//! `traceparent` (W3C Trace Context), and what the bridges read from them (the instant a
//! `time` names, the fields of a `traceparent`; AEP-0005 §3.2).

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
    fn number(&mut self, width: usize, lo: u32, hi: u32) -> Option<u32> {
        let mut n = 0u32;
        for _ in 0..width {
            match self.byte() {
                Some(b) if b.is_ascii_digit() => n = n * 10 + u32::from(b - b'0'),
                _ => return None,
            }
        }
        (lo..=hi).contains(&n).then_some(n)
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
    date_time(s).is_some()
}

/// The instant an RFC 3339 `time` names, in nanoseconds since the Unix epoch (negative
/// before 1970), for the bridges that carry it as a number (AEP-0005 §3.2
/// `time_unix_nano`, §4.3 epoch milliseconds). `None` where [`is_date_time`] is false.
///
/// The offset is applied; digits of the fraction past the ninth are dropped (truncated,
/// never rounded); a leap second `:60` counts as the first second of the next minute,
/// and a day past its month's end rolls into the next month (the grammar allows both,
/// see [`is_date_time`]).
///
/// ```
/// use aep_core::validate::unix_nanos;
/// assert_eq!(unix_nanos("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
/// assert_eq!(unix_nanos("2026-07-03T10:15:04.221Z"), Some(1_783_073_704_221_000_000));
/// assert_eq!(unix_nanos("2026-07-03T12:15:04.221+02:00"), unix_nanos("2026-07-03T10:15:04.221Z"));
/// assert_eq!(unix_nanos("1969-12-31T23:59:59Z"), Some(-1_000_000_000));
/// assert_eq!(unix_nanos("yesterday"), None);
/// ```
pub fn unix_nanos(s: &str) -> Option<i128> {
    let t = date_time(s)?;
    let days = days_from_civil(t.year, t.month, t.day);
    let local = days * 86_400 + i64::from(t.hour) * 3600 + i64::from(t.minute) * 60;
    let utc = local + i64::from(t.second) - i64::from(t.offset_minutes) * 60;
    Some(i128::from(utc) * 1_000_000_000 + i128::from(t.nanos))
}

/// The fields of an RFC 3339 date-time, as read.
struct DateTime {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    /// The fraction's first nine digits, as nanoseconds.
    nanos: u32,
    /// East of UTC, in minutes.
    offset_minutes: i32,
}

/// Reads an RFC 3339 date-time: the one grammar behind [`is_date_time`] and
/// [`unix_nanos`].
fn date_time(s: &str) -> Option<DateTime> {
    let mut c = Cursor {
        bytes: s.as_bytes(),
        at: 0,
    };
    let year = c.number(4, 0, 9999)?;
    c.eat(b"-").then_some(())?;
    let month = c.number(2, 1, 12)?;
    c.eat(b"-").then_some(())?;
    let day = c.number(2, 1, 31)?;
    c.eat(b"Tt").then_some(())?;
    let hour = c.number(2, 0, 23)?;
    c.eat(b":").then_some(())?;
    let minute = c.number(2, 0, 59)?;
    c.eat(b":").then_some(())?;
    let second = c.number(2, 0, 60)?;
    let mut nanos = 0u32;
    if c.peek() == Some(b'.') {
        c.at += 1;
        let start = c.at;
        while let Some(b) = c.peek().filter(u8::is_ascii_digit) {
            if c.at - start < 9 {
                nanos = nanos * 10 + u32::from(b - b'0');
            }
            c.at += 1;
        }
        let digits = c.at - start;
        if digits == 0 {
            return None;
        }
        for _ in digits..9 {
            nanos *= 10;
        }
    }
    let offset_minutes = match c.byte() {
        Some(b'Z' | b'z') => 0,
        Some(sign @ (b'+' | b'-')) => {
            let h = c.number(2, 0, 23)?;
            c.eat(b":").then_some(())?;
            let m = c.number(2, 0, 59)?;
            let minutes = i32::try_from(h * 60 + m).ok()?;
            if sign == b'-' {
                -minutes
            } else {
                minutes
            }
        }
        _ => return None,
    };
    c.done().then_some(DateTime {
        year: i64::from(year),
        month,
        day,
        hour,
        minute,
        second,
        nanos,
        offset_minutes,
    })
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`, eras of 400 years).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
    TraceParent::parse(s).is_some()
}

/// The fields of a `traceparent` (W3C Trace Context), for a bridge that lands events on
/// existing traces (AEP-0005 §3.2: `trace_id`, `span_id`, `flags`).
///
/// ```
/// use aep_core::validate::TraceParent;
/// let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
/// assert_eq!(tp.trace_id()[0], 0x4b);
/// assert_eq!(tp.span_id(), [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
/// assert_eq!(tp.flags(), 1);
/// assert_eq!(tp.to_string(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// assert!(TraceParent::parse("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    version: u8,
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// Reads `vv-<32 hex>-<16 hex>-ff` (lowercase hex); `None` where
    /// [`is_traceparent`] is false.
    ///
    /// ```
    /// use aep_core::validate::TraceParent;
    /// let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    /// assert_eq!(tp.map(|t| t.flags()), Some(1));
    /// assert_eq!(TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"), None);
    /// ```
    pub fn parse(s: &str) -> Option<TraceParent> {
        let mut parts = s.split('-');
        let version = hex::<1>(parts.next()?)?;
        let trace_id = hex::<16>(parts.next()?)?;
        let span_id = hex::<8>(parts.next()?)?;
        let flags = hex::<1>(parts.next()?)?;
        parts.next().is_none().then_some(TraceParent {
            version: version[0],
            trace_id,
            span_id,
            flags: flags[0],
        })
    }

    /// A `traceparent` of version `00` from its fields.
    ///
    /// ```
    /// use aep_core::validate::TraceParent;
    /// let tp = TraceParent::new([1; 16], [2; 8], 1);
    /// assert_eq!(TraceParent::parse(&tp.to_string()), Some(tp));
    /// ```
    pub fn new(trace_id: [u8; 16], span_id: [u8; 8], flags: u8) -> TraceParent {
        TraceParent {
            version: 0,
            trace_id,
            span_id,
            flags,
        }
    }

    /// The version byte (`00` today).
    ///
    /// ```
    /// # use aep_core::validate::TraceParent;
    /// assert_eq!(TraceParent::new([1; 16], [2; 8], 1).version(), 0);
    /// ```
    pub fn version(&self) -> u8 {
        self.version
    }

    /// The 16-byte trace id.
    ///
    /// ```
    /// # use aep_core::validate::TraceParent;
    /// assert_eq!(TraceParent::new([1; 16], [2; 8], 1).trace_id(), [1; 16]);
    /// ```
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The 8-byte id of the parent span.
    ///
    /// ```
    /// # use aep_core::validate::TraceParent;
    /// assert_eq!(TraceParent::new([1; 16], [2; 8], 1).span_id(), [2; 8]);
    /// ```
    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }

    /// The trace flags (`01`: sampled).
    ///
    /// ```
    /// # use aep_core::validate::TraceParent;
    /// assert_eq!(TraceParent::new([1; 16], [2; 8], 1).flags(), 1);
    /// ```
    pub fn flags(&self) -> u8 {
        self.flags
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x}-", self.version)?;
        for b in self.trace_id {
            write!(f, "{b:02x}")?;
        }
        f.write_str("-")?;
        for b in self.span_id {
            write!(f, "{b:02x}")?;
        }
        write!(f, "-{:02x}", self.flags)
    }
}

/// `N` bytes from exactly `2 * N` lowercase hex digits.
fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let nibble = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
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

    #[test]
    fn unix_nanos_agrees_with_the_calendar() {
        assert_eq!(unix_nanos("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_nanos("2000-02-29T00:00:00.000Z"),
            Some(951_782_400_000_000_000)
        );
        assert_eq!(
            unix_nanos("2026-07-03T10:15:13.310Z"),
            Some(1_783_073_713_310_000_000)
        );
        assert_eq!(
            unix_nanos("2026-07-03T10:15:13.1234567891Z"),
            Some(1_783_073_713_123_456_789)
        );
        assert_eq!(
            unix_nanos("2026-07-03T10:15:13-00:30"),
            unix_nanos("2026-07-03T10:45:13Z")
        );
        assert_eq!(
            unix_nanos("2026-07-03T23:59:60Z"),
            unix_nanos("2026-07-04T00:00:00Z")
        );
        assert_eq!(
            unix_nanos("0000-01-01T00:00:00Z"),
            Some(-62_167_219_200_000_000_000)
        );
        assert_eq!(unix_nanos("2026-07-03T10:00:00.Z"), None);
    }

    #[test]
    fn traceparent_fields() {
        let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert_eq!(tp.map(|t| t.trace_id()[15]), Some(0x36));
        assert!(
            TraceParent::parse("0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01").is_none()
        );
    }
}
