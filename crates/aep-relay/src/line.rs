//! The line reader: one event as received (an NDJSON line, a JSON body, a WebSocket
//! text message) read, checked and framed once (AEP-0003 §3.2, §3.5).
//!
//! Most events are read in place ([`EnvelopeView`]): a buffered event nobody needs
//! parsed keeps only its framed bytes, and a WebSocket event is routed and matched on
//! its reading. Anything the in-place reading does not take is parsed, which decides
//! every case the same (the tests below hold both paths to one outcome).

use aep_core::{EnvelopeView, Event};

use crate::encoded::{encode, encode_view, Encoded};
use crate::proto::{self, Disposition};

/// One accepted event, read once and framed once.
#[derive(Debug)]
pub(crate) struct Incoming<'t> {
    pub(crate) reading: Reading<'t>,
    pub(crate) encoded: Encoded,
    pub(crate) disposition: Disposition,
}

/// What is kept of an accepted event besides its bytes. Small, as a batch holds its
/// events in a list: a parsed event is boxed, and an in-place reading is borrowed from
/// where the WebSocket reader keeps it for the message (boxing it cost an allocation
/// per message, two per command round trip: the command's and its ack's).
#[derive(Debug)]
pub(crate) enum Reading<'t> {
    /// Parsed: a subscription needs the event (or the view did not take it).
    Parsed(Box<Event>),
    /// A WebSocket event read in place, borrowed from its message for the ingest:
    /// routing and attribute filters read it, so no `Event` is built for a command, an
    /// ack or a live event (a subscription with a capture ceiling parses one it matches).
    InPlace(&'t EnvelopeView<'t>),
    /// Its bytes only, not parsed: a buffered event ingested while no subscription
    /// needed it parsed (none, or all matching on the session alone: fan-out reads that
    /// from the frame, and parses again should another kind have come in meanwhile).
    BytesOnly,
}

/// What an ingest path keeps of an accepted event.
#[derive(Debug)]
pub(crate) enum Keep<'t> {
    /// Only the bytes of a buffered event (read in place, never parsed when the view
    /// takes it); a live event or a command is parsed.
    Bytes,
    /// The parsed event, always.
    Parsed,
    /// The in-place reading (a WebSocket message, alive for its ingest), put here.
    Reading(&'t mut Option<EnvelopeView<'t>>),
}

/// Why one line was refused.
#[derive(Debug)]
pub(crate) enum LineError {
    /// Not JSON at all.
    Json(String),
    /// JSON, but not an acceptable envelope.
    Invalid(String),
}

impl Incoming<'_> {
    /// The session an event is buffered under.
    pub(crate) fn session(&self) -> Option<&str> {
        match &self.reading {
            Reading::Parsed(event) => event.session(),
            Reading::InPlace(view) => view.session(),
            Reading::BytesOnly => self.encoded.session(),
        }
    }

    /// The event's `type`, `session` and `id`; `None` for bytes only (a buffered event,
    /// never routed).
    pub(crate) fn routing(&self) -> Option<(&str, Option<&str>, &str)> {
        match &self.reading {
            Reading::Parsed(e) => Some((e.event_type(), e.session(), e.id())),
            Reading::InPlace(v) => Some((v.event_type(), v.session(), v.id())),
            Reading::BytesOnly => None,
        }
    }

    /// An event the replay store holds, as its feed delivers it: its bytes only.
    pub(crate) fn stored(encoded: Encoded) -> Incoming<'static> {
        Incoming {
            reading: Reading::BytesOnly,
            encoded,
            disposition: Disposition::Buffered,
        }
    }

    /// This event without a borrowed reading (never taken by the paths that call it).
    fn detached(self) -> Incoming<'static> {
        debug_assert!(
            !matches!(self.reading, Reading::InPlace(_)),
            "an in-place reading detached: its routing would be lost"
        );
        Incoming {
            reading: match self.reading {
                Reading::Parsed(event) => Reading::Parsed(event),
                Reading::InPlace(_) | Reading::BytesOnly => Reading::BytesOnly,
            },
            encoded: self.encoded,
            disposition: self.disposition,
        }
    }
}

/// Checks one WebSocket event (a text message, UTF-8 already), keeping its in-place
/// reading, borrowed from `text`, in `slot` for routing and fan-out; one the reading
/// does not take (escapes, ...) is parsed, which decides every case the same.
pub(crate) fn read_event<'t>(
    text: &'t str,
    slot: &'t mut Option<EnvelopeView<'t>>,
) -> Result<Incoming<'t>, LineError> {
    read_text(text, Keep::Reading(slot))
}

/// Checks one event line or body; see [`read_text`]. Bytes that are not UTF-8 are not
/// JSON: serde_json's error says where the bad byte is.
pub(crate) fn parse_line(raw: &[u8], keep: bool) -> Result<Incoming<'static>, LineError> {
    let keep = if keep { Keep::Parsed } else { Keep::Bytes };
    match std::str::from_utf8(raw) {
        Ok(text) => read_text(text, keep).map(Incoming::detached),
        // serde_json finds the bad byte and says where, in the line as forwarded
        Err(_) => Err(LineError::Json(
            Event::from_slice(raw.get(json_ws_trimmed(raw)).unwrap_or_default())
                .err()
                .map_or_else(
                    || "invalid UTF-8".to_owned(), // cannot be: the bytes are not UTF-8
                    |e| e.to_string(),
                ),
        )),
    }
}

/// Where `b` is without JSON's insignificant whitespace (RFC 8259 §2) at either end, and
/// no more (a form feed is not JSON). Only ASCII is cut, so UTF-8 text stays UTF-8.
fn json_ws_trimmed(b: &[u8]) -> std::ops::Range<usize> {
    let is_ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let start = b.iter().position(|c| !is_ws(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !is_ws(c)).map_or(start, |i| i + 1);
    start..end
}

/// Reads and checks one event as received. Raw line breaks are whitespace between
/// tokens (strings cannot hold them, and text holding one there is refused as not JSON):
/// they are removed from the stored bytes only, so the event fits one SSE `data:` line;
/// every other byte is forwarded as received. With [`Keep::Bytes`], a buffered event is
/// read in place ([`EnvelopeView`]) and never parsed into an `Event` (one the view does
/// not take is parsed and dropped at once): when no subscription needs it only its bytes
/// are, and a large batch then never holds every parsed event at the same time.
fn read_text<'t>(text: &'t str, keep: Keep<'t>) -> Result<Incoming<'t>, LineError> {
    let bytes_only = matches!(keep, Keep::Bytes);
    let json = text
        .get(json_ws_trimmed(text.as_bytes()))
        .unwrap_or_default();
    let owned;
    let line: &[u8] = if memchr::memchr2(b'\n', b'\r', json.as_bytes()).is_some() {
        owned = json.replace(['\n', '\r'], "");
        owned.as_bytes()
    } else {
        json.as_bytes()
    };
    let mut checked = None;
    if !matches!(keep, Keep::Parsed) {
        // Most events are read in place: a buffered one is then never looked at again
        // until replay, which reads its bytes, and a WebSocket one is routed and matched
        // on the reading. Anything the view does not take goes the full way below,
        // which decides every case the same.
        if let Some(view) = EnvelopeView::read(json) {
            let disposition = proto::check_view(&view).map_err(LineError::Invalid)?;
            match keep {
                Keep::Reading(slot) => {
                    return Ok(Incoming {
                        encoded: encode_view(&view, line),
                        reading: Reading::InPlace(slot.insert(view)),
                        disposition,
                    })
                }
                _ if disposition == Disposition::Buffered => {
                    return Ok(Incoming {
                        encoded: encode_view(&view, line),
                        reading: Reading::BytesOnly,
                        disposition,
                    })
                }
                // checked already: the parse below reads the same attributes
                _ => checked = Some(disposition),
            }
        }
    }
    let event = json.parse::<Event>().map_err(|e| {
        if e.is_syntax() {
            LineError::Json(e.to_string())
        } else {
            LineError::Invalid(e.to_string())
        }
    })?;
    let disposition = match checked {
        Some(disposition) => disposition,
        None => proto::check_envelope(&event).map_err(LineError::Invalid)?,
    };
    let encoded = encode(&event, line);
    let reading = if bytes_only && disposition == Disposition::Buffered {
        Reading::BytesOnly
    } else {
        Reading::Parsed(Box::new(event))
    };
    Ok(Incoming {
        reading,
        encoded,
        disposition,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const LINE: &[u8] = br#"{"aep":"0.1","id":"01J0000000000000000000000A","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"s1","seq":3,"severity":"notice","data":{}}"#;

    /// The in-place reading (`keep == false`) accepts, refuses and frames every line as
    /// the full parse does: the same disposition, the same bytes to store, the same
    /// error. Lines on both sides of the view's reach: plain, escaped, live, command,
    /// invalid, not JSON.
    #[test]
    fn the_in_place_ingest_path_decides_as_the_full_parse() {
        let base = std::str::from_utf8(LINE).unwrap();
        let lines: Vec<String> = vec![
            base.to_owned(),
            base.replace(r#""data":{}"#, r#""data":{"t":"a\"b","n":[1.5e3,-0,null,true]}"#),
            base.replace(r#""agent":"a""#, r#""agent":"\u0061""#), // escaped: full path
            base.replace(r#""seq":3,"#, r#""seq":3,"epoch":2,"acme":"x","#),
            base.replace(r#""seq":3,"#, ""),                          // session, no seq
            base.replace(r#""session":"s1","seq":3,"#, ""),           // no session
            base.replace("progress.status", "agent.heartbeat"),       // agent-scoped, has seq
            base.replace("progress.status", "widget.spun"),           // unknown category
            base.replace("progress.status", "Tool.X"),                // not dotted lowercase
            base.replace(r#""seq":3,"#, r#""seq":-3,"#),
            base.replace(r#""data":{}"#, r#""data":[]"#),
            base.replace(r#""data":{}"#, r#""data":{"a":1,}"#),
            base.replace(r#""data":{}"#, r#""data":{"a":01}"#),
            base.replace(r#""session":"s1""#, r#""session":"s\n1""#),
            base.replace(r#""time":"2026-07-03T10:15:04.221Z""#, r#""time":"yesterday""#),
            base.replace("aep://t/agent/a", "not a uri"),
            base.replace(r#","data":{}"#, r#","traceparent":"x","data":{}"#),
            base.replace(r#""severity":"notice""#, r#""severity":"loud""#),
            r#"{"aep":"0.1","id":"c1","type":"control.pause","time":"2026-07-03T10:15:04.221Z","source":"aep://t/console","agent":"console","session":"s1"}"#.to_owned(),
            "not json".to_owned(),
            base.replace('}', "} trailing"),
        ];
        let mut in_place = 0;
        for line in &lines {
            in_place += usize::from(EnvelopeView::read(line).is_some());
            let fast = parse_line(line.as_bytes(), false);
            let full = parse_line(line.as_bytes(), true);
            if let Some((a, _)) = same_outcome(line, &fast, &full) {
                // a buffered event keeps its bytes only on the fast path; the others are parsed
                assert_eq!(
                    matches!(a.reading, Reading::Parsed(_)),
                    a.disposition != Disposition::Buffered,
                    "{line}"
                );
            }
        }
        // both sides of the view's reach are covered: all are read in place but eight,
        // the escaped agent and session, `seq` -3, severity `loud`, the trailing comma
        // and the `01` in `data`, and the two that are not one JSON object
        assert_eq!(in_place, lines.len() - 8);
    }

    /// Bytes that are not UTF-8 are refused as not JSON, with the position of the bad
    /// byte in the line as it would have been forwarded (line breaks dropped, trimmed);
    /// line breaks in valid text are dropped from what is stored, on both paths.
    #[test]
    fn bytes_that_are_not_utf8_are_refused_as_not_json_with_a_position() {
        let base = std::str::from_utf8(LINE).unwrap();
        let mut bad = b"\n  ".to_vec();
        bad.extend_from_slice(base.replace(r#""agent":"a""#, r#""agent":"aX""#).as_bytes());
        let at = bad.iter().position(|&b| b == b'X').unwrap();
        bad[at] = 0xff;
        for keep in [false, true] {
            match parse_line(&bad, keep) {
                Err(LineError::Json(detail)) => {
                    // column of the bad byte once the leading "\n  " is gone
                    let column = at - 3 + 1;
                    assert!(detail.contains(&format!("column {column}")), "{detail}");
                }
                other => panic!("{other:?}"),
            }
        }
        let broken = base.replacen(',', ",\r\n ", 3);
        // only the line breaks go; the space after them is forwarded as received
        let stored = base.replacen(',', ", ", 3);
        for keep in [false, true] {
            let incoming = parse_line(broken.as_bytes(), keep).unwrap();
            assert_eq!(&*incoming.encoded.json(), stored.as_bytes());
        }
        let mut slot = None;
        let incoming = read_event(&broken, &mut slot).unwrap();
        assert_eq!(&*incoming.encoded.json(), stored.as_bytes());
    }

    /// A line break is whitespace between tokens only: inside a string it is not JSON,
    /// and is refused, not removed (which would read `"s\n1"` as `"s1"`); a form feed
    /// is not JSON whitespace either.
    #[test]
    fn a_line_break_inside_a_string_is_refused_not_removed() {
        let base = std::str::from_utf8(LINE).unwrap();
        for bad in [
            base.replace(r#""session":"s1""#, "\"session\":\"s\n1\""),
            base.replace(r#""agent":"a""#, "\"agent\":\"a\r\""),
            format!("\u{c}{base}"),
        ] {
            for keep in [false, true] {
                assert!(
                    matches!(parse_line(bad.as_bytes(), keep), Err(LineError::Json(_))),
                    "{bad:?}"
                );
            }
            assert!(
                matches!(read_event(&bad, &mut None), Err(LineError::Json(_))),
                "{bad:?}"
            );
        }
    }

    /// A WebSocket event read in place is accepted, refused and framed as the parse
    /// does, and keeps its reading (no event built) wherever the reading takes it;
    /// routing reads the same `type`, `session` and `id` from either.
    #[test]
    fn a_websocket_event_read_in_place_decides_as_the_parse() {
        let base = std::str::from_utf8(LINE).unwrap();
        let command = r#"{"aep":"0.1","id":"c1","type":"control.pause","time":"2026-07-03T10:15:04.221Z","source":"aep://t/console","agent":"console","session":"s1"}"#;
        let lines = [
            base.to_owned(),
            command.to_owned(),
            base.replace("progress.status", "agent.heartbeat"), // agent-scoped with seq: refused
            base.replace("progress.status", "agent.heartbeat")
                .replace(r#""session":"s1","seq":3,"#, ""), // agent-scoped: live
            base.replace(r#""agent":"a""#, r#""agent":"\u0061""#), // escaped: parsed
            base.replacen(',', ",\n", 2),                       // line breaks: whitespace
            format!(" \t{base}\r\n"),                           // padded
            base.replace(r#""seq":3,"#, r#""seq":3,"acme":"x","#), // an extension attribute
            base.replace(r#""severity":"notice""#, r#""severity":"loud""#),
            "not json".to_owned(),
        ];
        let mut in_place = 0;
        for line in &lines {
            let parsed = read_text(line, Keep::Parsed);
            let mut slot = None;
            if let Some((a, b)) = same_outcome(line, &read_event(line, &mut slot), &parsed) {
                assert_eq!(a.routing(), b.routing(), "{line}");
                assert_eq!(a.session(), b.session(), "{line}");
                assert!(!matches!(a.reading, Reading::BytesOnly), "{line}");
                in_place += usize::from(matches!(a.reading, Reading::InPlace(_)));
            }
        }
        // all accepted but the escaped one
        assert_eq!(in_place, 6);
    }

    /// Asserts that two readings of `line` accept it alike (disposition, stored frame)
    /// or refuse it alike (error); returns both when accepted, for more checks.
    fn same_outcome<'x>(
        line: &str,
        a: &'x Result<Incoming<'x>, LineError>,
        b: &'x Result<Incoming<'x>, LineError>,
    ) -> Option<(&'x Incoming<'x>, &'x Incoming<'x>)> {
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.disposition, b.disposition, "{line}");
                assert_eq!(
                    format!("{:?}", a.encoded),
                    format!("{:?}", b.encoded),
                    "{line}"
                );
                Some((a, b))
            }
            (Err(a), Err(b)) => {
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{line}");
                None
            }
            _ => panic!("{line}: {a:?} against {b:?}"),
        }
    }
}
