//! Names on the NATS side of the cluster: the stream, the subjects a session's events go
//! to, and the message id JetStream dedupes on.
//!
//! Every relay of a cluster must compute the same names from the same inputs, whatever
//! its version: a subject or an id that changed between two relays would split a session
//! or let a retried event be stored twice. Each function here is therefore a fixed,
//! documented encoding, pinned by its tests.

use std::fmt;

use aep_core::redact::ContentDigest;

use crate::config::cluster::{check_stream_name, BadStreamName};

/// The longest session token written out; a longer encoding is replaced by a digest (see
/// [`session_token`]). Well under the server's 4 KiB control line, which holds the
/// subject, a reply subject and the sizes.
const MAX_TOKEN: usize = 200;

/// The subject token of a session.
///
/// A session name is any string (AEP-0001 §5.2); a subject token cannot hold `.`, `*`,
/// `>` or whitespace, and NATS recommends plain ASCII. The token keeps ASCII letters,
/// digits and `-`, and writes every other byte of the name's UTF-8 as `_` and two
/// lowercase hex digits (`_` itself is `_5f`), so the encoding is one-to-one and a
/// session stays readable in the server's tools (`s-1.a` is `s-1_2ea`). The empty name
/// is `_`, which no other name encodes to. An encoding longer than 200 bytes is `~`
/// followed by the 32 hex digits of the name's digest (SHA-256, AEP-0003 §9.3's
/// [`ContentDigest`]); `~` starts no other token.
pub(crate) fn session_token(session: &str) -> String {
    if session.is_empty() {
        return "_".to_owned();
    }
    let mut token = String::with_capacity(session.len());
    for &byte in session.as_bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' {
            token.push(char::from(byte));
        } else {
            token.push('_');
            token.push(hex_digit(byte >> 4));
            token.push(hex_digit(byte & 0xf));
        }
        if token.len() > MAX_TOKEN {
            return format!("~{}", ContentDigest::of_text(session).to_hex());
        }
    }
    token
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0xf)])
}

/// The `Nats-Msg-Id` of an event: the 32 hex digits of the [`ContentDigest`] (the first
/// 16 bytes of SHA-256 over RFC 8785 canonical JSON) of `[source, id]`.
///
/// `(source, id)` is what makes an event the same event (AEP-0001 §7.4). JetStream
/// stores a message whose id it saw within the stream's duplicate window once, so an
/// emitter's retry to any relay of the cluster is stored once. The id is a digest rather
/// than the pair itself because a message id is a header value of bounded use, while a
/// source is a URI of any length; canonical JSON makes the pair unambiguous (no
/// separator a source could contain) and SHA-256 keeps it stable across relay versions.
pub(crate) fn message_id(source: &str, id: &str) -> String {
    ContentDigest::of(&serde_json::json!([source, id])).to_hex()
}

/// A stream name (`--nats-stream`), which is also the first token of every subject the
/// cluster uses, so that several fleets (and test runs) share one server apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamName(String);

impl StreamName {
    /// `name`, if it can name a stream and head a subject (the configuration's rule,
    /// [`check_stream_name`]).
    pub(crate) fn parse(name: &str) -> Result<StreamName, BadStreamName> {
        check_stream_name(name).map(|()| StreamName(name.to_owned()))
    }

    /// The name.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The subject a session's stored events are published to: `{stream}.s.{token}`.
    pub(crate) fn session_subject(&self, session: &str) -> String {
        format!("{}.s.{}", self.0, session_token(session))
    }

    /// Where a duplicate of an event stored on `session_subject` is announced to the
    /// other relays: `{stream}.d.{token}` (never stored).
    pub(crate) fn duplicate_subject(&self, session_subject: &str) -> String {
        let token = session_subject
            .strip_prefix(&format!("{}.s.", self.0))
            .unwrap_or(session_subject);
        format!("{}.d.{token}", self.0)
    }

    /// Every duplicate announcement, `{stream}.d.>`.
    pub(crate) fn duplicates_wildcard(&self) -> String {
        format!("{}.d.>", self.0)
    }

    /// The subjects the stream holds: every session's, `{stream}.s.>`.
    pub(crate) fn sessions_wildcard(&self) -> String {
        format!("{}.s.>", self.0)
    }
}

impl fmt::Display for StreamName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Reads a token back, for the tests only (the cluster reads the session from the
    /// event itself).
    fn decode(token: &str) -> Option<String> {
        if token == "_" {
            return Some(String::new());
        }
        let mut bytes = Vec::new();
        let mut rest = token.as_bytes();
        while let Some((&b, tail)) = rest.split_first() {
            if b == b'_' {
                let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                rest = &tail[2..];
            } else {
                bytes.push(b);
                rest = tail;
            }
        }
        String::from_utf8(bytes).ok()
    }

    fn is_subject_token(token: &str) -> bool {
        !token.is_empty()
            && token
                .bytes()
                .all(|b| b.is_ascii_graphic() && !matches!(b, b'.' | b'*' | b'>'))
    }

    #[test]
    fn tokens_are_pinned() {
        // Every relay of a cluster, of any version, must write these exactly.
        assert_eq!(session_token("s1"), "s1");
        assert_eq!(session_token("s_k1"), "s_5fk1");
        assert_eq!(session_token("s-1.a"), "s-1_2ea");
        assert_eq!(session_token("a b*>"), "a_20b_2a_3e");
        assert_eq!(session_token("café"), "caf_c3_a9");
        assert_eq!(session_token(""), "_");
        let long = "x".repeat(201);
        assert_eq!(
            session_token(&long),
            format!("~{}", ContentDigest::of_text(&long).to_hex())
        );
        assert_eq!(session_token(&"x".repeat(200)), "x".repeat(200));
    }

    #[test]
    fn tokens_are_subject_tokens_and_one_to_one() {
        let names = [
            "",
            "_",
            "__",
            "_5f",
            "s.1",
            "s_2e1",
            "s 1",
            "s\t1",
            "*",
            ">",
            "..",
            "~",
            "é",
            "e\u{301}",
            "日本",
            "a/b",
            "$JS",
            "x\0y",
            "\u{1f600}",
        ];
        let mut seen = std::collections::HashMap::new();
        for name in names {
            let token = session_token(name);
            assert!(is_subject_token(&token), "{name:?} -> {token:?}");
            assert_eq!(decode(&token).as_deref(), Some(name), "{token}");
            if let Some(other) = seen.insert(token.clone(), name) {
                panic!("{name:?} and {other:?} both encode to {token}");
            }
        }
    }

    #[test]
    fn a_long_name_is_bounded_and_distinct() {
        let a = format!("{}a", "日".repeat(100));
        let b = format!("{}b", "日".repeat(100));
        let (ta, tb) = (session_token(&a), session_token(&b));
        assert!(ta.starts_with('~') && ta.len() == 33, "{ta}");
        assert_ne!(ta, tb);
        assert!(is_subject_token(&ta));
    }

    #[test]
    fn message_ids_are_pinned_and_unambiguous() {
        // the digest of the canonical JSON `["aep://h/agent/a","01J0"]`, as every relay
        // of any version writes it
        let id = message_id("aep://h/agent/a", "01J0");
        assert_eq!(
            id,
            ContentDigest::of(&serde_json::json!(["aep://h/agent/a", "01J0"])).to_hex()
        );
        assert_eq!(id, "0c0c04d0e6b185257bb4b6a4add63760");
        // the pair is not a concatenation
        assert_ne!(message_id("ab", "c"), message_id("a", "bc"));
        assert_ne!(message_id("a\",\"b", "c"), message_id("a", "b\",\"c"));
        assert_eq!(message_id("s", "1"), message_id("s", "1"));
    }

    #[test]
    fn stream_names_are_plain_tokens() {
        assert_eq!(
            StreamName::parse(crate::NatsCluster::DEFAULT_STREAM)
                .unwrap()
                .as_str(),
            "AEP"
        );
        assert_eq!(
            StreamName::parse("fleet-2_a").unwrap().as_str(),
            "fleet-2_a"
        );
        for bad in [
            "",
            "a.b",
            "a b",
            "a*",
            ">",
            "$JS",
            "a/b",
            "é",
            &"x".repeat(33),
        ] {
            let err = StreamName::parse(bad).unwrap_err();
            assert!(
                err.to_string().contains("cannot name the NATS stream"),
                "{err}"
            );
        }
        let fleet = StreamName::parse("F").unwrap();
        assert_eq!(fleet.session_subject("s.1"), "F.s.s_2e1");
        assert_eq!(fleet.sessions_wildcard(), "F.s.>");
        assert_eq!(fleet.duplicate_subject("F.s.s_2e1"), "F.d.s_2e1");
        assert_eq!(fleet.duplicates_wildcard(), "F.d.>");
    }
}
