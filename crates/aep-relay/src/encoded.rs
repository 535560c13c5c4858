//! One accepted event as the relay holds and sends it: framed once, for both bindings.
//!
//! The SSE message (`event:`, `data:`, and for a sequenced session event the `id:` line,
//! AEP-0003 §3.3) is one allocation; the WebSocket frame is the slice of it that holds
//! the event JSON as received ([`Encoded::frame`] picks one for a [`Binding`]). What
//! routing and storage read again without parsing (the session, the position, the
//! severity, the dedupe key) sits beside it.

use std::hash::BuildHasher;

use aep_core::resume::{Position, SseId};
use aep_core::{EnvelopeView, Event, Severity};
use bytes::Bytes;

/// Which binding a reader is on: SSE messages (AEP-0003 §3.3) or WebSocket text frames
/// (§3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    Sse,
    Ws,
}

/// One event, framed. Held by value: a clone shares the frame (a reference count), so
/// no separate allocation wraps it.
#[derive(Debug, Clone)]
pub(crate) struct Encoded {
    /// `event: {type}\ndata: {json}\n[id: {sse id}\n]\n`.
    sse: Bytes,
    /// The `(source, id)` digest admission dedupes on (AEP-0001 §7.4). Two halves rather
    /// than a `u128`: a `u128` field would align the struct to 16 bytes and pad it, and
    /// the replay store holds one per buffered event.
    key: (u64, u64),
    /// The event's `(epoch, seq)`; meaningful only with `positioned`.
    position: Position,
    data_at: u32,
    data_len: u32,
    /// The session's length in the `id:` line, which starts right after the `data:`
    /// line; meaningful only with `positioned`.
    session_len: u32,
    /// A sequenced session event: it has an `id:` line and a place in its session.
    positioned: bool,
    /// What backpressure may drop (AEP-0003 §8.4) without parsing the event again.
    severity: Severity,
}

/// Where the session starts after the end of the event JSON: `\nid: `.
const ID_PREFIX: &[u8] = b"\nid: ";

/// Digest of `(source, id)`: two 64-bit foldhash digests of the pair under independent
/// fixed seeds (fixed, so a restored journal keys its events as before). foldhash rather
/// than SipHash: this runs once per ingested event.
fn dedupe_key(source: &str, id: &str) -> (u64, u64) {
    let half = |seed: u64| foldhash::quality::FixedState::with_seed(seed).hash_one((source, id));
    (half(0x9e37_79b9_7f4a_7c15), half(0xc2b2_ae3d_27d4_eb4f))
}

/// The SSE id of an event with these attributes: a session-scoped, sequenced event
/// whose session an `id:` line can carry (ingest refuses any other, AEP-0003 §3.3).
fn sse_id(session: Option<&str>, epoch: u64, seq: Option<u64>) -> Option<SseId<'_>> {
    SseId::new(session?, Position::new(epoch, seq?)).ok()
}

/// Frames a parsed event whose JSON is `json` (one line).
pub(crate) fn encode(event: &Event, json: &[u8]) -> Encoded {
    let id = sse_id(event.session(), event.epoch(), event.seq());
    let (ty, source, event_id) = (event.event_type(), event.source(), event.id());
    Encoded::new(json, ty, id, source, event_id, event.severity())
}

/// [`encode`] for an envelope read in place.
pub(crate) fn encode_view(view: &EnvelopeView<'_>, json: &[u8]) -> Encoded {
    let id = sse_id(view.session(), view.epoch(), view.seq());
    let (ty, source, event_id) = (view.event_type(), view.source(), view.id());
    Encoded::new(json, ty, id, source, event_id, view.severity())
}

impl Encoded {
    /// Frames one event. `json` must be a single line (no `\n` or `\r`).
    pub(crate) fn new(
        json: &[u8],
        event_type: &str,
        id: Option<SseId<'_>>,
        source: &str,
        event_id: &str,
        severity: Severity,
    ) -> Encoded {
        // the exact size: a full buffer becomes `Bytes` without a separate shared header
        // until the first clone, and an event nobody reads never gets one
        let id_len = id.map_or(0, |id| id.len() + ID_PREFIX.len());
        let mut sse = Vec::with_capacity(json.len() + event_type.len() + 16 + id_len);
        sse.extend_from_slice(b"event: ");
        sse.extend_from_slice(event_type.as_bytes());
        sse.extend_from_slice(b"\ndata: ");
        let data_at = sse.len();
        sse.extend_from_slice(json);
        if let Some(id) = id {
            sse.extend_from_slice(ID_PREFIX);
            id.write_to(&mut sse);
        }
        sse.extend_from_slice(b"\n\n");
        debug_assert_eq!(
            sse.len(),
            sse.capacity(),
            "the frame size is computed exactly"
        );
        let narrow = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Encoded {
            sse: Bytes::from(sse),
            key: dedupe_key(source, event_id),
            position: id.map_or(Position::new(0, 0), |id| id.position()),
            data_at: narrow(data_at),
            data_len: narrow(json.len()),
            session_len: narrow(id.map_or(0, |id| id.session().len())),
            positioned: id.is_some(),
            severity,
        }
    }

    /// The SSE message.
    pub(crate) fn sse(&self) -> Bytes {
        self.sse.clone()
    }

    /// The event JSON, as received (the WebSocket frame text).
    pub(crate) fn json(&self) -> Bytes {
        let at = self.data_at as usize;
        self.sse.slice(at..at + self.data_len as usize)
    }

    /// [`Encoded::json`], borrowed: to read the event again without a handle of it.
    pub(crate) fn json_slice(&self) -> &[u8] {
        let at = self.data_at as usize;
        self.sse
            .get(at..at + self.data_len as usize)
            .unwrap_or_default()
    }

    /// The frame a reader on `binding` is sent, as the event was received.
    pub(crate) fn frame(&self, binding: Binding) -> Bytes {
        match binding {
            Binding::Sse => self.sse(),
            Binding::Ws => self.json(),
        }
    }

    /// The event's `type`, read back from the SSE `event:` line.
    pub(crate) fn event_type(&self) -> &str {
        const EVENT: usize = b"event: ".len();
        let end = (self.data_at as usize).saturating_sub(b"\ndata: ".len());
        self.sse
            .get(EVENT..end)
            .and_then(|t| std::str::from_utf8(t).ok())
            .unwrap_or_default()
    }

    /// The session of a sequenced session event, read back from its `id:` line.
    pub(crate) fn session(&self) -> Option<&str> {
        if !self.positioned {
            return None;
        }
        let at = self.data_at as usize + self.data_len as usize + ID_PREFIX.len();
        let bytes = self.sse.get(at..at + self.session_len as usize)?;
        std::str::from_utf8(bytes).ok()
    }

    /// The `(epoch, seq)` of a sequenced session event (AEP-0001 §7).
    pub(crate) fn position(&self) -> Option<Position> {
        self.positioned.then_some(self.position)
    }

    /// What backpressure may drop (AEP-0003 §8.4).
    pub(crate) fn severity(&self) -> Severity {
        self.severity
    }

    /// The `(source, id)` digest admission dedupes on (AEP-0001 §7.4).
    pub(crate) fn key(&self) -> (u64, u64) {
        self.key
    }

    /// The bytes of the frame.
    pub(crate) fn frame_len(&self) -> usize {
        self.sse.len()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A framed event of session `session` at `(epoch, seq)` whose JSON is `{"id":…}`.
    pub(crate) fn framed(session: &str, id: &str, epoch: u64, seq: u64) -> Encoded {
        Encoded::new(
            format!(r#"{{"id":"{id}"}}"#).as_bytes(),
            "progress.status",
            SseId::new(session, Position::new(epoch, seq)).ok(),
            "src",
            id,
            Severity::Info,
        )
    }

    #[test]
    fn both_frames_share_one_allocation() {
        let e = framed("s", "x", 1, 7);
        assert_eq!(&e.json()[..], br#"{"id":"x"}"#);
        assert_eq!(e.json_slice(), &e.json()[..]);
        assert_eq!(e.frame(Binding::Ws), e.json());
        assert_eq!(e.frame(Binding::Sse), e.sse());
        assert_eq!(
            &e.sse()[..],
            b"event: progress.status\ndata: {\"id\":\"x\"}\nid: s:1:7\n\n"
        );
        assert_eq!(e.session(), Some("s"));
        assert_eq!(e.event_type(), "progress.status");
        assert_eq!(e.position(), Some(Position::new(1, 7)));
        let unpositioned = Encoded::new(b"{}", "t.x", None, "src", "i", Severity::Info);
        assert_eq!(
            (unpositioned.session(), unpositioned.position()),
            (None, None)
        );
        assert_eq!(&unpositioned.sse()[..], b"event: t.x\ndata: {}\n\n");
        assert_eq!(unpositioned.event_type(), "t.x");
    }

    /// The framing of a parsed event and of the same event read in place agree.
    #[test]
    fn a_parsed_event_and_a_view_frame_alike() {
        let line = r#"{"aep":"0.1","id":"e1","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"s:1","seq":3,"epoch":2,"data":{}}"#;
        let event: Event = line.parse().unwrap();
        let view = EnvelopeView::read(line).unwrap();
        let (a, b) = (
            encode(&event, line.as_bytes()),
            encode_view(&view, line.as_bytes()),
        );
        assert_eq!(a.sse(), b.sse());
        assert_eq!(a.key(), b.key());
        assert_eq!(a.session(), Some("s:1"));
        assert_eq!(a.position(), Some(Position::new(2, 3)));
        assert!(a.sse().ends_with(b"\nid: s:1:2:3\n\n"));
    }
}
