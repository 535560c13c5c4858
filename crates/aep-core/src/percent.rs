//! Percent-encoding (RFC 3986 §2.1), the one codec behind every `%XX` the SDK writes:
//! the `from` query value (AEP-0003 §3.3), CloudEvents header values (AEP-0005), a
//! session's name as a file name. Each caller says which bytes stay as they are; every
//! other byte is written `%XX` in upper-case hex, and decoding takes any `%XX` back.

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// `bytes` with every byte `keep` refuses written `%XX`.
///
/// ```
/// use aep_core::percent::{encode, unreserved};
/// assert_eq!(encode(b"a b/c", unreserved), "a%20b%2Fc");
/// assert_eq!(encode("ü".as_bytes(), |b| b.is_ascii_alphanumeric()), "%C3%BC");
/// ```
pub fn encode(bytes: &[u8], keep: impl Fn(u8) -> bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
    out
}

/// RFC 3986 §2.3's unreserved bytes (`A-Z a-z 0-9 - . _ ~`): what survives any query
/// parser as it is.
///
/// ```
/// assert!(aep_core::percent::unreserved(b'~') && !aep_core::percent::unreserved(b'/'));
/// ```
pub fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// The text `encode` wrote: every `%` followed by two hex digits (either case) is the
/// byte they spell. `None` for a `%` without them, or bytes that are not UTF-8.
///
/// ```
/// use aep_core::percent::decode;
/// assert_eq!(decode("a%20b%2fc").as_deref(), Some("a b/c"));
/// assert_eq!(decode("100%"), None);
/// assert_eq!(decode("%zz"), None);
/// assert_eq!(decode("%FF"), None, "not UTF-8");
/// ```
pub fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let (hi, lo) = (bytes.get(i + 1)?, bytes.get(i + 2)?);
            out.push(hex(*hi)? << 4 | hex(*lo)?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips_whatever_is_kept() {
        let all: Vec<u8> = (0..=255).collect();
        let text = String::from_utf8_lossy(&all).into_owned();
        for keep in [
            unreserved as fn(u8) -> bool,
            |_| false,
            |b: u8| b.is_ascii_graphic() && b != b'%',
        ] {
            let encoded = encode(text.as_bytes(), keep);
            assert_eq!(decode(&encoded).as_deref(), Some(text.as_str()));
        }
        assert_eq!(decode("%+4"), None, "a sign is no hex digit");
        assert_eq!(decode("%4"), None);
    }

    /// A `%` not followed by two hex digits, wherever it stands, and escapes that spell
    /// bytes that are not UTF-8 are refused, not passed through or guessed at; what
    /// is not an escape (non-ASCII text included) is taken as it is.
    #[test]
    fn malformed_escapes_are_refused() {
        for bad in [
            "%",
            "a%",
            "%4",
            "a%4",
            "%4g",
            "%g4",
            "%-1",
            "% 4",
            "%%41",
            "%ü",
            "%4ü",
            // hex, but not UTF-8: a lone lead byte, a bad continuation, a surrogate
            "%C3",
            "%C3%28",
            "%ED%A0%80",
            "%80",
        ] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
        for (good, text) in [
            ("", ""),
            ("%c3%BC", "ü"),
            ("ü%20", "ü "),
            ("%25", "%"),
            ("%2541", "%41"),
        ] {
            assert_eq!(decode(good).as_deref(), Some(text), "{good:?}");
        }
    }
}
