//! Content digests (AEP-0003 §9.3) over RFC 8785 canonical JSON.

use std::fmt;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// A `*_digest` value (AEP-0003 §9.3): the first 16 bytes of the SHA-256 of the
/// [canonical JSON](canonical_json) of the original content, written as 32 lowercase hex
/// digits. Compute it **before** redaction: two secrets redacted to the same marker must
/// still digest apart.
///
/// ```
/// use aep_core::redact::ContentDigest;
/// use serde_json::json;
///
/// // Pinned by the protocol's mapping fixtures (args_digest / result_digest).
/// assert_eq!(ContentDigest::of(&json!({"command": "npm test"})).to_string(), "9178ac939ad908d8fd89e97596cdc0e5");
/// assert_eq!(ContentDigest::of_text("ok 42 tests").to_hex(), "9623cdc86ee0e1f01e338bc35845417f");
/// // Key order does not matter.
/// assert_eq!(
///     ContentDigest::of(&json!({"output": "total 0", "exit_code": 0})),
///     ContentDigest::of(&json!({"exit_code": 0, "output": "total 0"})),
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentDigest([u8; 16]);

impl ContentDigest {
    /// The digest of a JSON value.
    ///
    /// ```
    /// let d = aep_core::redact::ContentDigest::of(&serde_json::json!([1, "two"]));
    /// assert_eq!(d.to_hex().len(), 32);
    /// ```
    pub fn of(value: &Value) -> ContentDigest {
        let mut canonical = String::new();
        write_canonical_json(value, &mut canonical);
        ContentDigest::of_canonical(&canonical)
    }

    /// The digest of a text, as the JSON string it is on the wire.
    ///
    /// ```
    /// use aep_core::redact::ContentDigest;
    /// assert_eq!(ContentDigest::of_text("fix the flaky test"), ContentDigest::of(&"fix the flaky test".into()));
    /// ```
    pub fn of_text(text: &str) -> ContentDigest {
        let mut canonical = String::with_capacity(text.len() + 2);
        write_json_string(text, &mut canonical);
        ContentDigest::of_canonical(&canonical)
    }

    fn of_canonical(canonical: &str) -> ContentDigest {
        let hash = Sha256::digest(canonical.as_bytes());
        let mut first = [0u8; 16];
        for (dst, src) in first.iter_mut().zip(hash.iter()) {
            *dst = *src;
        }
        ContentDigest(first)
    }

    /// The 16 digest bytes.
    ///
    /// ```
    /// let d = aep_core::redact::ContentDigest::of_text("x");
    /// assert_eq!(d.as_bytes().len(), 16);
    /// ```
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The wire form: 32 lowercase hex digits.
    ///
    /// ```
    /// let d = aep_core::redact::ContentDigest::of_text("late attach");
    /// assert_eq!(d.to_hex(), "b90489c1ed65d1349510f576a27c510a");
    /// ```
    pub fn to_hex(&self) -> String {
        String::from_utf8_lossy(&self.hex_digits()).into_owned()
    }

    /// The 32 lowercase hex digits, by table rather than formatted byte by byte: the
    /// relay cluster writes one per event (its `Nats-Msg-Id`).
    fn hex_digits(&self) -> [u8; 32] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 32];
        for (pair, byte) in out.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0xf)];
        }
        out
    }
}

impl fmt::Display for ContentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.hex_digits();
        // ASCII hex digits only: always UTF-8
        f.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)
    }
}

/// The canonical JSON of a value, the input of every `*_digest` (AEP-0003 §9.3).
///
/// The spec names canonical JSON without defining it; this is the JSON Canonicalization
/// Scheme (RFC 8785), which the protocol's mapping fixtures agree with: object members
/// sorted by key (UTF-16 code units), no whitespace, strings with only `"`, `\` and
/// control characters escaped (non-ASCII written as itself), numbers in their shortest
/// ECMAScript form (`1.0` is `1`, `1e21` is `1e+21`; integers beyond 2^53 go through a
/// double, as in JavaScript).
///
/// ```
/// use aep_core::redact::canonical_json;
/// use serde_json::json;
/// assert_eq!(
///     canonical_json(&json!({"b": [1.0, 0.5, 1e21], "a": "Done — \n", "c": null})),
///     "{\"a\":\"Done — \\n\",\"b\":[1,0.5,1e+21],\"c\":null}",
/// );
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical_json(value, &mut out);
    out
}

/// Appends the [canonical JSON](canonical_json) of `value` to `out`.
///
/// ```
/// let mut out = String::from("digest input: ");
/// aep_core::redact::write_canonical_json(&serde_json::json!({"z": 1, "a": 2}), &mut out);
/// assert_eq!(out, r#"digest input: {"a":2,"z":1}"#);
/// ```
pub fn write_canonical_json(value: &Value, out: &mut String) {
    enum Item<'v> {
        Value(&'v Value),
        Key(&'v str),
        Punct(char),
    }
    // An explicit stack: a value built in memory may nest deeper than the call stack.
    let mut stack = vec![Item::Value(value)];
    while let Some(item) = stack.pop() {
        match item {
            Item::Punct(c) => out.push(c),
            Item::Key(k) => {
                write_json_string(k, out);
                out.push(':');
            }
            Item::Value(Value::Null) => out.push_str("null"),
            Item::Value(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Item::Value(Value::Number(n)) => write_number(n, out),
            Item::Value(Value::String(s)) => write_json_string(s, out),
            Item::Value(Value::Array(items)) => {
                out.push('[');
                stack.push(Item::Punct(']'));
                for (i, v) in items.iter().enumerate().rev() {
                    stack.push(Item::Value(v));
                    if i > 0 {
                        stack.push(Item::Punct(','));
                    }
                }
            }
            Item::Value(Value::Object(members)) => {
                out.push('{');
                stack.push(Item::Punct('}'));
                let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
                sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
                for (i, (k, v)) in sorted.into_iter().enumerate().rev() {
                    stack.push(Item::Value(v));
                    stack.push(Item::Key(k));
                    if i > 0 {
                        stack.push(Item::Punct(','));
                    }
                }
            }
        }
    }
}

/// A JSON string literal as RFC 8785 writes it.
fn write_json_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Only ASCII is escaped, and no byte of a multi-byte character is ASCII: the runs
    // between escapes are copied whole, cut at ASCII bytes, so at character boundaries.
    let mut run = 0;
    for (at, byte) in s.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(s.get(run..at).unwrap_or_default());
        if escape.is_empty() {
            out.push_str(&format!("\\u{byte:04x}"));
        } else {
            out.push_str(escape);
        }
        run = at + 1;
    }
    out.push_str(s.get(run..).unwrap_or_default());
    out.push('"');
}

/// The largest integer a double holds exactly (2^53).
const MAX_SAFE_INTEGER: u64 = 1 << 53;

/// A JSON number as ECMAScript's `Number.prototype.toString` writes it (RFC 8785 §3.2.2.3).
fn write_number(n: &serde_json::Number, out: &mut String) {
    if let Some(u) = n.as_u64().filter(|u| *u <= MAX_SAFE_INTEGER) {
        out.push_str(&u.to_string());
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER) {
        out.push_str(&i.to_string());
    } else if let Some(f) = n.as_f64() {
        write_es_double(f, out);
    }
}

/// ECMAScript `Number::toString(x)` for a finite double.
fn write_es_double(x: f64, out: &mut String) {
    if x == 0.0 || !x.is_finite() {
        // JSON has no NaN or infinity; -0 prints as 0.
        out.push('0');
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    // `{:e}` gives the shortest round-tripping digits: `d[.ddd]e<exp>`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    // n: the position of the decimal point relative to the digits (value = 0.digits × 10^n).
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn es_numbers() {
        let cases: [(f64, &str); 12] = [
            (1.0, "1"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456.789, "123456.789"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (-0.0, "0"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (x, want) in cases {
            let mut out = String::new();
            write_es_double(x, &mut out);
            assert_eq!(out, want, "{x}");
        }
        assert_eq!(
            canonical_json(&json!(9007199254740993u64)),
            "9007199254740992"
        );
        assert_eq!(canonical_json(&json!(-42)), "-42");
    }

    #[test]
    fn every_escape_and_multibyte_text_around_them() {
        assert_eq!(
            canonical_json(&json!("é\"a\\b\u{8}\u{c}\n\r\t\u{1f}€\u{1f600}\u{0}z")),
            "\"é\\\"a\\\\b\\b\\f\\n\\r\\t\\u001f€\u{1f600}\\u0000z\""
        );
        assert_eq!(canonical_json(&json!("")), "\"\"");
        assert_eq!(canonical_json(&json!("\u{1f600}")), "\"\u{1f600}\"");
    }

    #[test]
    fn canonical_strings_and_keys() {
        assert_eq!(
            canonical_json(&json!({"\u{e000}": 1, "\u{1f600}": 2, "a\u{1}": "\u{7f}/"})),
            "{\"a\\u0001\":\"\u{7f}/\",\"\u{1f600}\":2,\"\u{e000}\":1}"
        );
    }
}
