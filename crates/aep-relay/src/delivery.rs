//! What one reader is sent of one event (AEP-0003 §5-6, AEP-0001 §8.2): the one place
//! that decides whether a reader takes an event (its attr-match filter), lowers it to
//! the reader's capture ceiling, and frames it for the reader's binding.
//!
//! Live fan-out (`fanout`) and the replay a reader's writer runs (`outbox`) both ask
//! [`Delivering::frame_for`]; a command is framed by the same [`Encoded::frame`], with
//! no filter or ceiling (it is routed to one target, AEP-0004 §4.4). An event comes read
//! one of three ways ([`Reading`]), and whatever more a reader needs is made once per
//! event, for the first reader that needs it: the session read back from the frame, the
//! JSON read in place again, a parse. The order is the cheapest that decides: the
//! session alone where the filter asks nothing more and no ceiling applies, then the
//! in-place reading, and a parse only to lower the event or where the reading does not
//! take it (escapes, ...). Each decides every filter as the parse would (`proto`).

use aep_core::filter::{type_category, PinAttr};
use aep_core::{Capture, EnvelopeView, Event, Severity};
use bytes::Bytes;

use crate::encoded::{encode, Binding, Encoded};
use crate::line::{Incoming, Reading};
use crate::proto::{self, Filter};

/// Whom events are delivered to: a subscription's filter, capture ceiling and binding.
#[derive(Debug)]
pub(crate) struct Reader {
    pub(crate) filter: Filter,
    /// The ceiling events are lowered to (AEP-0003 §6.4); none: sent as received.
    pub(crate) capture: Option<Capture>,
    pub(crate) binding: Binding,
}

impl Reader {
    /// Whether deciding for this reader needs more than an event's session (a filter on
    /// other attributes, or a ceiling): ingest then keeps events parsed.
    pub(crate) fn needs_parsed(&self) -> bool {
        self.capture.is_some() || self.filter.session_only().is_none()
    }

    /// A matched event framed for this reader: lowered to its ceiling when that lowers
    /// it, as received otherwise.
    fn render(&self, encoded: &Encoded, event: &Event) -> Bytes {
        match self.capture.and_then(|c| proto::downlevel(event, c)) {
            Some(lowered) => encode(&lowered, lowered.to_json().as_bytes()).frame(self.binding),
            None => encoded.frame(self.binding),
        }
    }
}

/// One event on its way to its readers: what the relay holds of it, and each further
/// reading, made once, for the first reader that needs it.
pub(crate) struct Delivering<'e> {
    encoded: &'e Encoded,
    held: Held<'e>,
    /// The JSON read in place again (an event held as bytes only); `None` inside when
    /// the reading does not take it.
    view: Option<Option<EnvelopeView<'e>>>,
    /// The event parsed (again): to lower it, or where no reading in place takes it;
    /// `None` inside when it does not parse.
    parsed: Option<Option<Event>>,
}

/// What an event comes with.
enum Held<'e> {
    Parsed(&'e Event),
    InPlace(&'e EnvelopeView<'e>),
    /// Its bytes only, and its session once read back from the frame (or known from
    /// the replay's run).
    Bytes {
        session: Option<Option<&'e str>>,
    },
}

impl std::fmt::Debug for Delivering<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = match self.held {
            Held::Parsed(_) => "parsed",
            Held::InPlace(_) => "in place",
            Held::Bytes { .. } => "bytes",
        };
        f.debug_struct("Delivering")
            .field("encoded", self.encoded)
            .field("held", &held)
            .finish_non_exhaustive()
    }
}

impl<'e> Delivering<'e> {
    /// An event as ingest (or a shared store's feed) hands it on.
    pub(crate) fn new(incoming: &'e Incoming<'_>) -> Delivering<'e> {
        let held = match &incoming.reading {
            Reading::Parsed(event) => Held::Parsed(event),
            Reading::InPlace(view) => Held::InPlace(view),
            Reading::BytesOnly => Held::Bytes { session: None },
        };
        Delivering::holding(&incoming.encoded, held)
    }

    /// A replayed event of `session`, as the store holds it: its bytes only.
    pub(crate) fn stored(encoded: &'e Encoded, session: &'e str) -> Delivering<'e> {
        let held = Held::Bytes {
            session: Some(Some(session)),
        };
        Delivering::holding(encoded, held)
    }

    fn holding(encoded: &'e Encoded, held: Held<'e>) -> Delivering<'e> {
        Delivering {
            encoded,
            held,
            view: None,
            parsed: None,
        }
    }

    /// What backpressure may drop (AEP-0003 §8.4).
    pub(crate) fn severity(&self) -> Severity {
        self.encoded.severity()
    }

    /// The key this event is filed under for `attr` (its session, agent or type
    /// category, `aep_core::filter::PinAttr::key_of`), as fan-out's index looks it up:
    /// read from what is held, the frame where it says (session, type), the reading in
    /// place or a parse otherwise, each made once. `None`: no session, or an event that
    /// does not parse, which no filter takes.
    pub(crate) fn pin_key(&mut self, attr: PinAttr) -> Option<&str> {
        let Delivering {
            encoded,
            held,
            view,
            parsed,
        } = self;
        let encoded: &'e Encoded = encoded;
        match held {
            Held::Parsed(event) => attr.key_of(event),
            Held::InPlace(view) => attr.key_of_view(view),
            Held::Bytes { session } => match attr {
                PinAttr::Session => *session.get_or_insert_with(|| encoded.session()),
                PinAttr::Category => Some(type_category(encoded.event_type())),
                PinAttr::Agent => {
                    let view = view.get_or_insert_with(|| {
                        std::str::from_utf8(encoded.json_slice())
                            .ok()
                            .and_then(EnvelopeView::read)
                    });
                    if let Some(view) = view {
                        return Some(view.agent());
                    }
                    // not read in place (escapes, ...): the parse reads it
                    let parse = || Event::from_slice(encoded.json_slice()).ok();
                    parsed.get_or_insert_with(parse).as_ref().map(Event::agent)
                }
            },
        }
    }

    /// What `reader` is sent of this event: nothing when its filter does not take it,
    /// else the frame for its binding, lowered to its ceiling.
    pub(crate) fn frame_for(&mut self, reader: &Reader) -> Option<Bytes> {
        let Delivering {
            encoded,
            held,
            view,
            parsed,
        } = self;
        let encoded: &'e Encoded = encoded;
        let in_place = match held {
            Held::Parsed(event) => {
                let event: &Event = event;
                return reader
                    .filter
                    .matches(event)
                    .then(|| reader.render(encoded, event));
            }
            Held::InPlace(view) => Some(&**view),
            Held::Bytes { session } => {
                if reader.capture.is_none() {
                    // decided on the frame alone: the session is in its id line
                    let session = *session.get_or_insert_with(|| encoded.session());
                    if let Some(hit) = reader.filter.decide_session(session) {
                        return hit.then(|| encoded.frame(reader.binding));
                    }
                }
                view.get_or_insert_with(|| {
                    std::str::from_utf8(encoded.json_slice())
                        .ok()
                        .and_then(EnvelopeView::read)
                })
                .as_ref()
            }
        };
        let parse = || Event::from_slice(encoded.json_slice()).ok();
        if let Some(view) = in_place {
            if !reader.filter.matches_view(view) {
                return None;
            }
            if !proto::lowers(view.capture(), reader.capture) {
                return Some(encoded.frame(reader.binding));
            }
            // matched on the reading; lowered from the parse
            let event = parsed.get_or_insert_with(parse).as_ref()?;
            return Some(reader.render(encoded, event));
        }
        // not read in place (escapes, ...): the parse decides
        let event = parsed.get_or_insert_with(parse).as_ref()?;
        reader
            .filter
            .matches(event)
            .then(|| reader.render(encoded, event))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::line::{parse_line, read_event, tests::LINE};

    fn reader(filter: Value, capture: Option<Capture>, binding: Binding) -> Reader {
        Reader {
            filter: proto::parse_filter(&filter).unwrap(),
            capture,
            binding,
        }
    }

    /// Every reading of one event gives each reader the same frame: a parse, the
    /// reading in place, the bytes alone (as ingest keeps them, or as a replay reads
    /// them with its session known), and an event the reading in place does not take.
    #[test]
    fn every_reading_frames_alike_for_every_reader() {
        let base = std::str::from_utf8(LINE).unwrap().replace(
            r#""data":{}"#,
            r#""capture":"full","acme":"x","data":{"status":"reading"}"#,
        );
        // escaped: the reading in place does not take it, the parse decides
        let escaped = base.replace(r#""agent":"a""#, r#""agent":"\u0061""#);
        let readers = [
            reader(json!({}), None, Binding::Sse),
            reader(json!({ "session": "s1" }), None, Binding::Ws),
            reader(json!({ "session": "s2" }), None, Binding::Sse),
            reader(
                json!({ "type": "progress.*", "agent": "a" }),
                None,
                Binding::Ws,
            ),
            reader(json!({ "type": "tool.started" }), None, Binding::Sse),
            reader(json!({ "acme": "x" }), None, Binding::Sse),
            reader(json!({}), Some(Capture::Metadata), Binding::Ws),
            reader(
                json!({ "session": "s1" }),
                Some(Capture::Full),
                Binding::Sse,
            ),
            reader(
                json!({ "session": "s2" }),
                Some(Capture::Metadata),
                Binding::Ws,
            ),
        ];
        let mut taken = Vec::new();
        let mut first = Vec::new();
        for line in [&base, &escaped] {
            let parsed = parse_line(line.as_bytes(), true).unwrap();
            let bytes = parse_line(line.as_bytes(), false).unwrap();
            let mut slot = None;
            let in_place = read_event(line, &mut slot).unwrap();
            let mut readings = [
                Delivering::new(&parsed),
                Delivering::new(&bytes),
                Delivering::new(&in_place),
                Delivering::stored(&bytes.encoded, "s1"),
            ];
            let frames: Vec<Vec<Option<Bytes>>> = readings
                .iter_mut()
                .map(|delivering| readers.iter().map(|r| delivering.frame_for(r)).collect())
                .collect();
            for got in &frames {
                assert_eq!(got, &frames[0], "{line}");
            }
            taken.push(frames[0].iter().map(Option::is_some).collect::<Vec<_>>());
            first.push(frames[0].clone());
        }
        assert_eq!(taken[0], taken[1]);
        assert_eq!(
            taken[0],
            [true, true, false, true, false, true, true, true, false]
        );
        let frames = &first[0];
        // a ceiling at or above the event's level sends it as received; below, lowered
        let as_received = parse_line(base.as_bytes(), false).unwrap().encoded;
        assert_eq!(frames[7], Some(as_received.sse()));
        let lowered: Value = serde_json::from_slice(frames[6].as_ref().unwrap()).unwrap();
        assert_eq!(lowered["capture"], "metadata");
    }
}
