//! The WebSocket frame vocabulary (AEP-0003 §2) against the frames the reference relay
//! (`tests/fixtures/relay/server.cjs`), the reference SDKs and the live checker
//! (`conformance/live.js`) put on the wire, plus property tests of the decoder.

// Test helpers outside #[test] fns panic on purpose: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use aep_core::frame::{
    decode, decode_slice, Capabilities, Closing, CommandRefusal, ControlCapability, DecodeError,
    Delivered, Discovery, Endpoints, ErrorCode, ErrorFrame, Frame, Heartbeat, Hello, IdFrame,
    Identity, Message, ReplayCapability, ReplayExhausted, ReplayFrom, Role, RosterEntry,
    RosterReply, Subscribe, SubscribeRefusal,
};
use aep_core::resume::{Position, ResumePosition};
use aep_core::Capture;
use proptest::prelude::*;
use serde_json::{json, Value};

fn frame(text: &str) -> Frame {
    match decode(text) {
        Ok(Message::Frame(f)) => f,
        other => panic!("{text}: want a frame, got {other:?}"),
    }
}

fn frame_error(text: &str) -> aep_core::frame::FrameError {
    match decode(text) {
        Err(DecodeError::Frame(e)) => e,
        other => panic!("{text}: want a frame error, got {other:?}"),
    }
}

/// Decodes, re-encodes and checks the JSON is the same value (member order aside).
fn round_trips_as_value(text: &str) -> Frame {
    let f = frame(text);
    let want: Value = serde_json::from_str(text).unwrap();
    assert_eq!(f.to_value(), want, "{text}");
    assert_eq!(frame(&f.to_json()), f, "re-decoding {text}");
    f
}

/// Decodes, re-encodes and checks the bytes are the same.
fn round_trips_exactly(text: &str) -> Frame {
    let f = frame(text);
    assert_eq!(f.to_json(), text);
    f
}

// ---------------------------------------------------------------------------
// What the reference relay sends (server.cjs), byte for byte as JSON.stringify writes it
// ---------------------------------------------------------------------------

#[test]
fn relay_hello_reply() {
    let text = r#"{"type":"hello","versions":["0.1"],"role":"both","identity":{"agent":"aep-relay"},"capabilities":{"filters":["attr-match"],"replay":{"buffer":10000,"all":true},"capture":["none","metadata","redacted","full"],"control":{"accepts":[]},"roster":{},"experimental":{}}}"#;
    let Frame::Hello(h) = round_trips_as_value(text) else {
        panic!()
    };
    assert_eq!(h.versions, ["0.1"]);
    assert_eq!(h.role, Some(Role::Both));
    assert_eq!(
        h.identity.as_ref().and_then(|i| i.agent.as_deref()),
        Some("aep-relay")
    );
    let caps = h.capabilities();
    assert!(caps.supports_roster());
    assert_eq!(caps.replay.as_ref().and_then(|r| r.all), Some(true));
    assert_eq!(caps.capture.as_deref(), Some(&Capture::ALL[..]));
    assert_eq!(
        caps.filters.as_deref(),
        Some(&["attr-match".to_owned()][..])
    );
    assert!(!caps.accepts("control.cancel"));
    assert!(caps.extra.is_empty());
}

#[test]
fn relay_refusals_toward_the_sender() {
    // routeCommand: unauthorized, no-route, ambiguous, unsupported, all cause-correlated.
    for (text, code) in [
        (
            r#"{"type":"error","code":"unauthorized","cause":"01JCMD","detail":"control requires an authenticated binding (AEP-0004 §4.1); this relay runs without AEP_TOKEN"}"#,
            ErrorCode::Unauthorized,
        ),
        (
            r#"{"type":"error","code":"no-route","cause":"01JCMD","detail":"no connected emitter owns session s1"}"#,
            ErrorCode::NoRoute,
        ),
        (
            r#"{"type":"error","code":"ambiguous","cause":"01JCMD","detail":"2 connected emitters claim session s1"}"#,
            ErrorCode::Ambiguous,
        ),
        (
            r#"{"type":"error","code":"unsupported","cause":"01JCMD","detail":"target does not accept control.pause"}"#,
            ErrorCode::Unsupported,
        ),
    ] {
        let Frame::Error(e) = round_trips_exactly(text) else {
            panic!()
        };
        assert_eq!(e.code, code);
        assert!(e.code.is_command_code());
        assert_eq!(e.cause.as_deref(), Some("01JCMD"));
        assert_eq!(e.id, None);
    }
}

#[test]
fn relay_subscribe_and_roster_refusals_carry_the_id() {
    for (text, code) in [
        (
            r#"{"type":"error","id":"sub-1","code":"invalid-filter","detail":"filter must be a JSON object"}"#,
            ErrorCode::InvalidFilter,
        ),
        (
            r#"{"type":"error","id":"sub-1","code":"limit-exceeded","detail":"from exceeds AEP_MAX_FROM=500 resume positions"}"#,
            ErrorCode::LimitExceeded,
        ),
        (
            r#"{"type":"error","id":"r-1","code":"unauthorized","detail":"roster is answered on consumer/both connections"}"#,
            ErrorCode::Unauthorized,
        ),
    ] {
        let Frame::Error(e) = round_trips_exactly(text) else {
            panic!()
        };
        assert_eq!(e.code, code);
        assert!(e.code.is_subscribe_code());
        assert!(e.id.is_some());
    }
}

#[test]
fn relay_connection_errors() {
    let Frame::Error(e) = round_trips_exactly(r#"{"type":"error","code":"hello-required"}"#) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::HelloRequired);
    let Frame::Error(e) =
        round_trips_exactly(r#"{"type":"error","code":"version-unsupported","versions":["0.1"]}"#)
    else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::VersionUnsupported);
    assert_eq!(e.versions.as_deref(), Some(&["0.1".to_owned()][..]));
    // The relay's own codes outside the spec's closed sets stay strings.
    for code in ["bad-json", "binary-unsupported"] {
        let Frame::Error(e) =
            round_trips_exactly(&format!(r#"{{"type":"error","code":"{code}"}}"#))
        else {
            panic!()
        };
        assert_eq!(e.code, ErrorCode::Other(code.to_owned()));
        assert!(!e.code.is_subscribe_code() && !e.code.is_command_code());
    }
    // invalid-event puts detail before cause; the value survives, the order is ours.
    let Frame::Error(e) = round_trips_as_value(
        r#"{"type":"error","code":"invalid-event","detail":"seq required (integer >= 0)","cause":"01J"}"#,
    ) else {
        panic!()
    };
    assert_eq!(e.code, ErrorCode::Other("invalid-event".into()));
    assert_eq!(e.cause.as_deref(), Some("01J"));
}

#[test]
fn relay_subscription_frames() {
    let Frame::Subscribed(s) = round_trips_exactly(r#"{"type":"subscribed","id":"sub-1"}"#) else {
        panic!()
    };
    assert_eq!(s.id, "sub-1");
    assert!(matches!(
        round_trips_exactly(r#"{"type":"unsubscribed","id":"sub-1"}"#),
        Frame::Unsubscribed(_)
    ));
    let Frame::ReplayExhausted(r) = round_trips_exactly(
        r#"{"type":"replay-exhausted","sub":"sub-1","session":"s_8f2c","earliest":{"epoch":0,"seq":12}}"#,
    ) else {
        panic!()
    };
    assert_eq!((r.sub.as_str(), r.session.as_str()), ("sub-1", "s_8f2c"));
    assert_eq!(r.earliest, Position::new(0, 12));
}

#[test]
fn relay_roster_reply() {
    let text = r#"{"type":"roster","id":"ro-01J","entries":[{"session":"s_8f2c","agent":"claude-code","instance":"host-a/7c1f","control":{"accepts":["control.attention.respond"],"ack_window_ms":10000},"emits":["session","run","tool","attention"]},{"session":"s_8f2c","agent":"impostor"}]}"#;
    let Frame::Roster(r) = round_trips_exactly(text) else {
        panic!()
    };
    assert_eq!(r.id, "ro-01J");
    assert_eq!(
        r.entries.len(),
        2,
        "a repeated session is two claims, never merged"
    );
    let c = r.entries[0].control.as_ref().unwrap();
    assert!(c.accepts("control.attention.respond"));
    assert_eq!(c.ack_window().as_millis(), 10_000);
    let empty = round_trips_exactly(r#"{"type":"roster","id":"r-2","entries":[]}"#);
    assert!(matches!(empty, Frame::Roster(r) if r.entries.is_empty()));
}

#[test]
fn relay_liveness_and_closing() {
    let ping = round_trips_exactly(r#"{"type":"ping","t":1764460800000}"#);
    assert_eq!(
        ping.pong().unwrap().to_json(),
        r#"{"type":"pong","t":1764460800000}"#
    );
    assert!(matches!(
        round_trips_exactly(r#"{"type":"pong","t":1764460800000}"#),
        Frame::Pong(_)
    ));
    // The Python SDK answers `{"type":"pong","t":msg.get("t")}`: a missing t echoes null.
    assert!(matches!(frame(r#"{"type":"pong","t":null}"#), Frame::Pong(h) if h.t.is_none()));
    let Frame::Closing(c) =
        round_trips_exactly(r#"{"type":"closing","reason":"backpressure","delivered":[]}"#)
    else {
        panic!()
    };
    assert_eq!(c.reason.as_deref(), Some("backpressure"));
    let Frame::Closing(c) = round_trips_exactly(
        r#"{"type":"closing","reason":"shutdown","delivered":[{"sub":"sub-1","session":"s","epoch":1,"seq":9}]}"#,
    ) else {
        panic!()
    };
    assert_eq!(c.delivered, [Delivered::new("sub-1", "s", 1, 9)]);
}

// ---------------------------------------------------------------------------
// What clients send (the reference SDKs, the live checker), as the relay reads it
// ---------------------------------------------------------------------------

#[test]
fn client_hellos() {
    // Python ControlClient / aio consumer hello.
    let Frame::Hello(h) = round_trips_exactly(
        r#"{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"console","instance":"ops"},"capabilities":{}}"#,
    ) else {
        panic!()
    };
    assert_eq!(h.role, Some(Role::Consumer));
    assert!(h.role.as_ref().unwrap().watches());
    // TypeScript wsTransport emitter hello: JSON.stringify drops `control: undefined`.
    let Frame::Hello(h) = round_trips_as_value(
        r#"{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"a","instance":"h"},"capabilities":{"capture":["none","metadata","redacted","full"],"control":{"accepts":["control.pause"],"ack_window_ms":10000},"filters":[],"experimental":{}}}"#,
    ) else {
        panic!()
    };
    assert!(h.capabilities().accepts("control.pause"));
    assert!(h.role.as_ref().unwrap().emits());
    // live.js hello-ws: no identity, no capabilities, an unknown version.
    let Frame::Hello(h) =
        round_trips_exactly(r#"{"type":"hello","versions":["9.9"],"role":"consumer"}"#)
    else {
        panic!()
    };
    assert_eq!(h.select_version(&["0.1"]), None);
    assert_eq!(h.capabilities(), Capabilities::default());
}

#[test]
fn unknown_capability_keys_are_kept_and_ignored() {
    // live.js ignore-unknown (AEP-0003 §4 rule 4).
    let Frame::Hello(h) = round_trips_exactly(
        r#"{"type":"hello","versions":["0.1"],"role":"consumer","identity":{"agent":"aep-live-check","instance":"live-check"},"capabilities":{"futurecap":{"enabled":true}}}"#,
    ) else {
        panic!()
    };
    let caps = h.capabilities();
    assert_eq!(caps.extra["futurecap"], json!({"enabled": true}));
    // Known keys in a shape this crate cannot read are kept too, never an error.
    let Frame::Hello(h) = frame(
        r#"{"type":"hello","versions":["0.1"],"capabilities":{"filters":"attr-match","control":{"accepts":"all"},"replay":{"buffer":-1},"capture":["everything"],"roster":true}}"#,
    ) else {
        panic!()
    };
    let caps = h.capabilities();
    assert_eq!(caps.filters, None);
    assert_eq!(caps.control, None);
    assert_eq!(caps.replay, None);
    assert_eq!(caps.capture, None);
    assert!(!caps.supports_roster());
    assert_eq!(caps.extra.len(), 5);
    assert_eq!(caps.extra["filters"], json!("attr-match"));
}

#[test]
fn unknown_frame_types_are_a_variant_never_an_error() {
    // live.js ignore-unknown.
    let Frame::Unknown(u) = round_trips_exactly(
        r#"{"type":"zigzag","note":"unknown frame type — MUST be ignored (§2)"}"#,
    ) else {
        panic!()
    };
    assert_eq!(u.frame_type, "zigzag");
    assert_eq!(
        u.members["note"],
        json!("unknown frame type — MUST be ignored (§2)")
    );
    assert!(matches!(frame(r#"{"type":""}"#), Frame::Unknown(_)));
}

#[test]
fn client_subscribes() {
    // Python ControlClient: `filter: {session}`; TypeScript ControlClient: ack types.
    let Frame::Subscribe(s) =
        round_trips_exactly(r#"{"type":"subscribe","id":"s1","filter":{"session":"s1"}}"#)
    else {
        panic!()
    };
    assert_eq!(s.filter, Some(json!({"session": "s1"})));
    round_trips_exactly(
        r#"{"type":"subscribe","id":"ctl-acks","filter":{"type":["control.accepted","control.rejected"]}}"#,
    );
    // The spec's §6.5 example.
    let Frame::Subscribe(s) = round_trips_exactly(
        r#"{"type":"subscribe","id":"sub-1","filter":{"type":["attention.*"],"severity":{"gte":"notice"}},"from":[{"session":"s_8f2c","epoch":3,"seq":187}],"capture":"metadata"}"#,
    ) else {
        panic!()
    };
    assert_eq!(
        s.from,
        Some(ReplayFrom::Positions(vec![ResumePosition::new(
            "s_8f2c", 3, 187
        )]))
    );
    assert_eq!(s.capture, Some(Capture::Metadata));
    // Replay-all.
    let Frame::Subscribe(s) =
        round_trips_exactly(r#"{"type":"subscribe","id":"all","filter":{},"from":"all"}"#)
    else {
        panic!()
    };
    assert_eq!(s.from, Some(ReplayFrom::All));
    // The frame layer never judges a filter: a filter the filter module refuses still
    // reads, so the endpoint can answer `invalid-filter` with the id.
    let Frame::Subscribe(s) =
        frame(r#"{"type":"subscribe","id":"bad","filter":{"data":1,"seq":[true]}}"#)
    else {
        panic!()
    };
    assert_eq!(s.filter, Some(json!({"data": 1, "seq": [true]})));
    let Frame::Subscribe(s) = frame(r#"{"type":"subscribe","id":"nofilter"}"#) else {
        panic!()
    };
    assert_eq!(s.filter, None);
}

#[test]
fn malformed_from_is_a_frame_error_with_the_id() {
    // live.js subscribe-limits: `from: {}` must be refused in-band, so the id must survive.
    for (text, member) in [
        (
            r#"{"type":"subscribe","id":"sub-malformed","from":{}}"#,
            "from",
        ),
        (
            r#"{"type":"subscribe","id":"sub-malformed","from":"some"}"#,
            "from",
        ),
        (
            r#"{"type":"subscribe","id":"sub-malformed","from":[1]}"#,
            "from[0]",
        ),
        (
            r#"{"type":"subscribe","id":"sub-malformed","from":[{"session":"s","seq":1},{"session":"s"}]}"#,
            "from[1].seq",
        ),
        (
            r#"{"type":"subscribe","id":"sub-malformed","from":[{"session":"s","epoch":-1,"seq":1}]}"#,
            "from[0].epoch",
        ),
        (
            r#"{"type":"subscribe","id":"sub-malformed","capture":"everything"}"#,
            "capture",
        ),
    ] {
        let e = frame_error(text);
        assert_eq!(e.frame_type(), "subscribe");
        assert_eq!(e.id(), Some("sub-malformed"), "{text}");
        assert_eq!(e.member(), member, "{text}");
        assert!(e.to_string().contains(member), "{e}");
    }
    // A position without epoch reads as epoch 0 (documented tolerance).
    let Frame::Subscribe(s) =
        frame(r#"{"type":"subscribe","id":"x","from":[{"session":"s","seq":4}]}"#)
    else {
        panic!()
    };
    assert_eq!(
        s.from,
        Some(ReplayFrom::Positions(vec![ResumePosition::new("s", 0, 4)]))
    );
}

#[test]
fn missing_required_members_are_frame_errors() {
    for (text, ty, member) in [
        (r#"{"type":"subscribe"}"#, "subscribe", "id"),
        (r#"{"type":"subscribe","id":7}"#, "subscribe", "id"),
        (r#"{"type":"subscribed"}"#, "subscribed", "id"),
        (r#"{"type":"unsubscribe","id":null}"#, "unsubscribe", "id"),
        (r#"{"type":"unsubscribed"}"#, "unsubscribed", "id"),
        (r#"{"type":"roster"}"#, "roster", "id"),
        (
            r#"{"type":"roster","id":"r","entries":{}}"#,
            "roster",
            "entries",
        ),
        (
            r#"{"type":"roster","id":"r","entries":[{"agent":"a"}]}"#,
            "roster",
            "entries[0].session",
        ),
        (
            r#"{"type":"roster","id":"r","entries":[{"session":"s","control":{"accepts":3}}]}"#,
            "roster",
            "entries[0].control",
        ),
        (r#"{"type":"error","id":"x"}"#, "error", "code"),
        (r#"{"type":"error","code":5}"#, "error", "code"),
        (
            r#"{"type":"error","code":"no-route","cause":1}"#,
            "error",
            "cause",
        ),
        (r#"{"type":"hello","versions":"0.1"}"#, "hello", "versions"),
        (
            r#"{"type":"hello","versions":["0.1"],"role":1}"#,
            "hello",
            "role",
        ),
        (
            r#"{"type":"hello","versions":["0.1"],"identity":"me"}"#,
            "hello",
            "identity",
        ),
        (
            r#"{"type":"hello","versions":["0.1"],"identity":{"agent":1}}"#,
            "hello",
            "identity.agent",
        ),
        (
            r#"{"type":"hello","capabilities":[]}"#,
            "hello",
            "capabilities",
        ),
        (
            r#"{"type":"replay-exhausted","sub":"s","session":"x"}"#,
            "replay-exhausted",
            "earliest",
        ),
        (
            r#"{"type":"replay-exhausted","sub":"s","session":"x","earliest":{"epoch":0}}"#,
            "replay-exhausted",
            "earliest.seq",
        ),
        (
            r#"{"type":"replay-exhausted","session":"x","earliest":{"seq":0}}"#,
            "replay-exhausted",
            "sub",
        ),
        (
            r#"{"type":"closing","delivered":{}}"#,
            "closing",
            "delivered",
        ),
        (
            r#"{"type":"closing","delivered":[{"sub":"a","session":"s"}]}"#,
            "closing",
            "delivered[0].seq",
        ),
        (r#"{"type":"closing","reason":false}"#, "closing", "reason"),
    ] {
        let e = frame_error(text);
        assert_eq!((e.frame_type(), e.member()), (ty, member), "{text}: {e}");
    }
}

#[test]
fn documented_tolerance() {
    // Extra members are kept and written back after the known ones.
    let Frame::Subscribed(s) = frame(r#"{"type":"subscribed","id":"a","mode":"push","n":1}"#)
    else {
        panic!()
    };
    assert_eq!(s.extra["mode"], json!("push"));
    assert_eq!(
        Frame::Subscribed(s).to_json(),
        r#"{"type":"subscribed","id":"a","mode":"push","n":1}"#
    );
    // Null optional members read as absent.
    let Frame::Error(e) = frame(r#"{"type":"error","code":"no-route","cause":"c","detail":null}"#)
    else {
        panic!()
    };
    assert_eq!(e.detail, None);
    // A structured detail reads as its JSON text, so the refusal still settles.
    let Frame::Error(e) =
        frame(r#"{"type":"error","code":"invalid-filter","id":"s","detail":{"key":"data"}}"#)
    else {
        panic!()
    };
    assert_eq!(e.detail.as_deref(), Some(r#"{"key":"data"}"#));
    // A hello without versions offers none.
    let Frame::Hello(h) = frame(r#"{"type":"hello","role":"consumer"}"#) else {
        panic!()
    };
    assert!(h.versions.is_empty());
    assert_eq!(h.select_version(&["0.1"]), None);
    // `card: null` is kept as null, not dropped (the spec's own hello example).
    let Frame::Hello(h) = round_trips_exactly(
        r#"{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"claude-code","instance":"host-a/7c1f","card":null}}"#,
    ) else {
        panic!()
    };
    assert_eq!(h.identity.unwrap().card, Some(Value::Null));
    // An unknown role is kept.
    let Frame::Hello(h) = frame(r#"{"type":"hello","versions":["0.1"],"role":"observer"}"#) else {
        panic!()
    };
    assert_eq!(h.role, Some(Role::Other("observer".into())));
}

// ---------------------------------------------------------------------------
// Frame versus event (AEP-0003 §2)
// ---------------------------------------------------------------------------

#[test]
fn a_dot_in_type_makes_an_event() {
    let line = r#"{"aep":"0.1","id":"01J","type":"control.accepted","time":"2026-07-03T10:15:04.221Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":9,"cause":"01JCMD","data":{}}"#;
    let Ok(Message::Event(e)) = decode(line) else {
        panic!()
    };
    assert_eq!(e.to_json(), line, "events are read byte-preserving");
    assert_eq!(Message::Event(e).to_json(), line);
    // An event-typed object with a broken envelope is an event error, not a frame.
    assert!(matches!(
        decode(r#"{"type":"run.started","id":"x"}"#),
        Err(DecodeError::Event(_))
    ));
    // A frame-typed object never goes through the envelope reader.
    assert!(matches!(
        decode(r#"{"type":"hello","aep":"0.1","versions":["0.1"]}"#),
        Ok(Message::Frame(Frame::Hello(_)))
    ));
    // The last `type` wins, as in JSON.parse.
    assert!(matches!(
        decode(r#"{"type":"run.started","type":"ping"}"#),
        Ok(Message::Frame(Frame::Ping(_)))
    ));
    // Frame::from_str refuses events.
    assert!(line.parse::<Frame>().is_err());
    assert!(Frame::from_value(serde_json::from_str(line).unwrap()).is_err());
}

#[test]
fn not_a_message() {
    let err = |text| decode(text).unwrap_err();
    for text in ["", "{", r#"{"type":"ping"} x"#] {
        assert!(matches!(err(text), DecodeError::Json(_)), "{text}");
    }
    for text in ["null", r#""hello""#, r#"[{"type":"ping"}]"#] {
        assert!(matches!(err(text), DecodeError::NotAnObject), "{text}");
    }
    let no_type = [
        "{}",
        r#"{"type":1}"#,
        r#"{"type":null}"#,
        r#"{"type":{"a":[1]}}"#,
    ];
    for text in no_type {
        assert!(matches!(err(text), DecodeError::NoType), "{text}");
    }
    assert!(matches!(
        decode_slice(b"{\"type\":\"\xff\"}"),
        Err(DecodeError::Json(_))
    ));
    for e in [
        decode("{").unwrap_err(),
        decode("7").unwrap_err(),
        decode("{}").unwrap_err(),
    ] {
        assert!(e.to_string().contains("WebSocket message"), "{e}");
    }
}

// ---------------------------------------------------------------------------
// Building and encoding
// ---------------------------------------------------------------------------

#[test]
fn building_frames_writes_the_wire_json() {
    let mut caps = Capabilities::default();
    caps.control = Some(
        ControlCapability::accepting(["control.attention.respond"])
            .with_ack_window(std::time::Duration::from_secs(10)),
    );
    caps.replay = Some(ReplayCapability::new(10_000, true));
    caps.filters = Some(vec!["attr-match".into()]);
    let hello = Hello::new(Role::Emitter)
        .with_identity(Identity::new("claude-code").with_instance("host-a/7c1f"))
        .with_capabilities(caps);
    assert_eq!(
        Frame::from(hello).to_json(),
        r#"{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"claude-code","instance":"host-a/7c1f"},"capabilities":{"control":{"accepts":["control.attention.respond"],"ack_window_ms":10000},"replay":{"buffer":10000,"all":true},"filters":["attr-match"]}}"#
    );
    assert_eq!(
        Frame::RosterRequest(IdFrame::new("r-1")).to_json(),
        r#"{"type":"roster","id":"r-1"}"#
    );
    let mut entry = RosterEntry::new("s_8f2c");
    entry.agent = Some("claude-code".into());
    assert_eq!(
        Frame::Roster(RosterReply::new("r-1", vec![entry])).to_json(),
        r#"{"type":"roster","id":"r-1","entries":[{"session":"s_8f2c","agent":"claude-code"}]}"#
    );
    assert_eq!(
        Frame::Error(
            ErrorFrame::new(ErrorCode::InvalidFilter)
                .with_id("sub-1")
                .with_detail("d")
        )
        .to_json(),
        r#"{"type":"error","id":"sub-1","code":"invalid-filter","detail":"d"}"#
    );
    assert_eq!(
        Frame::Error(ErrorFrame::new(ErrorCode::VersionUnsupported).with_versions(["0.1"]))
            .to_json(),
        r#"{"type":"error","code":"version-unsupported","versions":["0.1"]}"#
    );
    assert_eq!(
        Frame::ReplayExhausted(ReplayExhausted::new("a", "s", 2, 0)).to_json(),
        r#"{"type":"replay-exhausted","sub":"a","session":"s","earliest":{"epoch":2,"seq":0}}"#
    );
    assert_eq!(
        Frame::Closing(Closing::new("bye")).to_json(),
        r#"{"type":"closing","reason":"bye","delivered":[]}"#
    );
    assert_eq!(
        Frame::Ping(Heartbeat::new(Some(json!("x")))).to_json(),
        r#"{"type":"ping","t":"x"}"#
    );
    assert_eq!(
        Frame::Subscribe(Subscribe::new("a", json!({})).with_from(ReplayFrom::All)).to_json(),
        r#"{"type":"subscribe","id":"a","filter":{},"from":"all"}"#
    );
    // Through serde too.
    let f: Frame = serde_json::from_value(json!({"type": "unsubscribe", "id": "a"})).unwrap();
    assert_eq!(
        serde_json::to_value(&f).unwrap(),
        json!({"type": "unsubscribe", "id": "a"})
    );
    assert!(serde_json::from_value::<Frame>(json!({"type": "unsubscribe"})).is_err());
}

#[test]
fn error_codes_parse_to_their_variant() {
    for code in [
        ErrorCode::HelloRequired,
        ErrorCode::VersionUnsupported,
        ErrorCode::InvalidFilter,
        ErrorCode::UnknownDialect,
        ErrorCode::Unauthorized,
        ErrorCode::LimitExceeded,
        ErrorCode::Unsupported,
        ErrorCode::Ambiguous,
        ErrorCode::NoRoute,
    ] {
        assert_eq!(ErrorCode::from(code.as_str()), code);
        assert_eq!(ErrorCode::from(code.as_str().to_owned()), code);
        assert_eq!(serde_json::to_value(&code).unwrap(), json!(code.as_str()));
    }
    // The two closed sets of the spec.
    let subscribe: Vec<_> = [
        "invalid-filter",
        "unknown-dialect",
        "unauthorized",
        "limit-exceeded",
    ]
    .map(ErrorCode::from)
    .into();
    assert!(subscribe.iter().all(ErrorCode::is_subscribe_code));
    let command: Vec<_> = ["unauthorized", "unsupported", "ambiguous", "no-route"]
        .map(ErrorCode::from)
        .into();
    assert!(command.iter().all(ErrorCode::is_command_code));
    for r in SubscribeRefusal::ALL {
        assert_eq!(ErrorCode::from(r).subscribe_refusal(), Some(r));
        let f = ErrorFrame::subscribe_refusal("s", r);
        assert_eq!(f.id.as_deref(), Some("s"));
    }
    for &r in CommandRefusal::ALL {
        assert_eq!(ErrorCode::from(r).command_refusal(), Some(r));
        assert_eq!(
            ErrorFrame::command_refusal("c", r).cause.as_deref(),
            Some("c")
        );
    }
    assert_eq!(ErrorCode::from("bad-json").subscribe_refusal(), None);
    assert_eq!(ErrorCode::InvalidFilter.command_refusal(), None);
}

// ---------------------------------------------------------------------------
// The discovery document (AEP-0003 §3.4)
// ---------------------------------------------------------------------------

#[test]
fn discovery_document() {
    // As the reference relay serves it (JSON.stringify(DISCOVERY, null, 2)).
    let text = r#"{
  "aep": ["0.1"],
  "role": "collector",
  "endpoints": { "events": "/events", "stream": "/stream", "socket": "/socket" },
  "capabilities": {
    "filters": ["attr-match"],
    "replay": { "buffer": 10000, "all": true },
    "capture": ["none", "metadata", "redacted", "full"],
    "control": { "accepts": [] },
    "roster": {},
    "experimental": {}
  },
  "vendor": { "x": 1 }
}"#;
    let d: Discovery = serde_json::from_str(text).unwrap();
    assert_eq!(d.aep, ["0.1"]);
    assert_eq!(d.role, Some(Role::Collector));
    assert_eq!(d.endpoints, Endpoints::standard());
    assert!(d.capabilities().supports_roster());
    assert_eq!(d.capabilities().replay.unwrap().buffer, Some(10_000));
    assert_eq!(d.extra["vendor"], json!({"x": 1}), "unknown members kept");
    let back: Value = serde_json::to_value(&d).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
    // Only aep and endpoints are required.
    let d: Discovery =
        serde_json::from_str(r#"{"aep":["0.1"],"endpoints":{"events":"/events"}}"#).unwrap();
    assert_eq!(d.endpoints.socket, None);
    assert_eq!(d.capabilities(), Capabilities::default());
    for bad in [
        r#"{"endpoints":{}}"#,
        r#"{"aep":"0.1","endpoints":{}}"#,
        r#"{"aep":["0.1"]}"#,
        r#"{"aep":["0.1"],"endpoints":{"socket":5}}"#,
        r#"{"aep":["0.1"],"endpoints":{},"capabilities":[]}"#,
        r#"[]"#,
    ] {
        assert!(serde_json::from_str::<Discovery>(bad).is_err(), "{bad}");
    }
    let built = Discovery::new(Endpoints::standard());
    assert_eq!(
        serde_json::from_value::<Discovery>(serde_json::to_value(&built).unwrap()).unwrap(),
        built
    );
}

// ---------------------------------------------------------------------------
// Property tests: the decoder never panics, and what it reads it writes back
// ---------------------------------------------------------------------------

const FRAME_TYPES: &[&str] = &[
    "hello",
    "subscribe",
    "subscribed",
    "unsubscribe",
    "unsubscribed",
    "roster",
    "error",
    "replay-exhausted",
    "closing",
    "ping",
    "pong",
    "zigzag",
    "",
];

const MEMBERS: &[&str] = &[
    "id",
    "type",
    "filter",
    "from",
    "capture",
    "versions",
    "role",
    "identity",
    "capabilities",
    "entries",
    "code",
    "cause",
    "detail",
    "sub",
    "session",
    "earliest",
    "epoch",
    "seq",
    "reason",
    "delivered",
    "t",
    "agent",
    "instance",
    "card",
    "control",
    "accepts",
    "ack_window_ms",
    "replay",
    "buffer",
    "all",
    "emits",
    "filters",
    "roster",
    "experimental",
];

fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(MEMBERS).prop_map(str::to_owned),
        1 => "[a-z.]{0,6}",
    ]
}

fn arb_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        Just(json!(0.5)),
        proptest::sample::select(
            &[
                "0.1",
                "all",
                "metadata",
                "full",
                "both",
                "no-route",
                "busy",
                "attr-match",
                "control.pause",
                "s1",
                "",
            ][..]
        )
        .prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::from),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    arb_scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((arb_key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// An object whose `type` is a frame type (or not), with members drawn from the
/// vocabulary: most inputs reach the member readers.
fn arb_frame_object() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            4 => proptest::sample::select(FRAME_TYPES).prop_map(Value::from),
            1 => arb_scalar(),
        ],
        proptest::collection::vec((arb_key(), arb_json()), 0..6),
    )
        .prop_map(|(ty, members)| {
            let mut m: serde_json::Map<String, Value> = members.into_iter().collect();
            m.insert("type".into(), ty);
            Value::Object(m)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn never_panics_on_arbitrary_text(s in "\\PC{0,64}") {
        let _ = decode(&s);
    }

    #[test]
    fn never_panics_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode_slice(&b);
    }

    #[test]
    fn never_panics_on_truncated_json(v in arb_frame_object(), cut in any::<prop::sample::Index>()) {
        let text = v.to_string();
        let at = cut.index(text.len() + 1);
        if let Some(prefix) = text.get(..at) {
            let _ = decode(prefix);
        }
    }

    #[test]
    fn what_reads_writes_back(v in arb_frame_object()) {
        let text = v.to_string();
        match decode(&text) {
            Ok(Message::Frame(f)) => {
                // Re-encoding and reading again gives the same frame.
                let again = decode(&f.to_json());
                prop_assert!(matches!(&again, Ok(Message::Frame(g)) if *g == f), "{text} -> {} -> {again:?}", f.to_json());
                prop_assert!(!f.frame_type().contains('.'));
                // Every member of the input survives except nulls, which read as absent.
                let out = f.to_value();
                for (k, val) in v.as_object().unwrap() {
                    if !val.is_null() && matches!(f, Frame::Unknown(_) | Frame::Subscribed(_) | Frame::Unsubscribe(_) | Frame::Unsubscribed(_) | Frame::RosterRequest(_)) {
                        prop_assert_eq!(out.get(k), Some(val), "member {} of {}", k, text);
                    }
                }
            }
            Ok(Message::Event(_)) => prop_assert!(false, "no event has a dotless type: {text}"),
            Err(DecodeError::Frame(e)) => {
                prop_assert!(!e.member().is_empty());
                prop_assert_eq!(e.id(), v.get("id").and_then(Value::as_str));
            }
            Err(DecodeError::NoType) => prop_assert!(!v["type"].is_string()),
            Err(DecodeError::Event(_)) => prop_assert!(v["type"].as_str().is_some_and(|t| t.contains('.'))),
            Err(other) => prop_assert!(false, "{text}: {other}"),
        }
    }

    #[test]
    fn event_shaped_objects_read_as_events_or_event_errors(v in arb_json(), ty in "[a-z]{1,6}\\.[a-z]{1,6}") {
        let mut m = match v { Value::Object(m) => m, _ => serde_json::Map::new() };
        m.insert("type".into(), Value::from(ty));
        match decode(&Value::Object(m).to_string()) {
            Ok(Message::Event(_)) | Err(DecodeError::Event(_)) => {}
            other => prop_assert!(false, "{other:?}"),
        }
    }

    #[test]
    fn capabilities_never_fail(v in proptest::collection::vec((arb_key(), arb_json()), 0..8)) {
        let map: serde_json::Map<String, Value> = v.into_iter().collect();
        let caps: Capabilities = serde_json::from_value(Value::Object(map.clone())).unwrap();
        // Nothing is lost: every input key is either read or kept in extra.
        let out = serde_json::to_value(&caps).unwrap();
        for k in map.keys() {
            prop_assert!(out.get(k).is_some(), "capability {} lost", k);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [200, 100_000] {
        let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        for text in [
            format!(r#"{{"type":"ping","t":{deep}}}"#),
            format!(r#"{{"t":{deep},"type":"ping"}}"#),
            format!(r#"{{"type":"zigzag","x":{deep}}}"#),
            format!(
                r#"{{"aep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a","data":{deep}}}"#
            ),
            deep.clone(),
        ] {
            let _ = decode(&text);
        }
    }
    // Within serde_json's nesting limit a deep value is kept.
    let t = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let Frame::Ping(p) = frame(&format!(r#"{{"type":"ping","t":{t}}}"#)) else {
        panic!()
    };
    assert!(p.t.is_some());
}

#[test]
fn classification_does_not_depend_on_member_spelling() {
    // An escaped `aep` member name is still an event.
    let line =
        r#"{"\u0061ep":"0.1","id":"1","type":"agent.idle","time":"t","source":"s","agent":"a"}"#;
    assert!(matches!(decode(line), Ok(Message::Event(_))));
    // An envelope-shaped object with a dotless type is a frame (AEP-0003 §2).
    let hello = r#"{"aep":"0.1","id":"1","type":"hello","time":"t","source":"s","agent":"a"}"#;
    let Ok(Message::Frame(Frame::Hello(h))) = decode(hello) else {
        panic!()
    };
    assert!(h.extra.contains_key("aep"));
    // A frame mentioning "aep" anywhere is still a frame.
    assert!(matches!(
        decode(r#"{"type":"subscribe","id":"aep","filter":{"aep":"x"}}"#),
        Ok(Message::Frame(Frame::Subscribe(_)))
    ));
    assert!(matches!(decode(r#"{"aep":1}"#), Err(DecodeError::NoType)));
    assert!(matches!(
        decode(r#"["aep"]"#),
        Err(DecodeError::NotAnObject)
    ));
    assert!(matches!(
        decode(r#"{"aep":"0.1","type":"run.started"}"#),
        Err(DecodeError::Event(_))
    ));
}

/// A roster entry carries exactly the four members AEP-0003 §4.1 rule 4 names, as the
/// claimant declared them, and nothing it did not declare.
#[test]
fn a_roster_entry_relays_the_claimants_declarations() {
    let Frame::Hello(hello) = frame(
        r#"{"type":"hello","versions":["0.1"],"role":"emitter","identity":{"agent":"a","instance":"i-1","card":null,"x":1},"capabilities":{"control":{"ack_window_ms":500,"accepts":["control.pause"],"y":2},"emits":["tool"],"replay":{"buffer":8},"z":{}}}"#,
    ) else {
        panic!("a hello");
    };
    let entry = aep_core::frame::RosterEntry::claimed("s1", &hello);
    let json: Value = serde_json::to_value(&entry).unwrap();
    assert_eq!(
        json,
        json!({"session": "s1", "agent": "a", "instance": "i-1",
               "control": {"accepts": ["control.pause"], "ack_window_ms": 500, "y": 2},
               "emits": ["tool"]})
    );
    let bare = aep_core::frame::RosterEntry::claimed(
        "s2",
        &aep_core::frame::Hello::new(aep_core::frame::Role::Both),
    );
    assert_eq!(serde_json::to_string(&bare).unwrap(), r#"{"session":"s2"}"#);
}

/// `accepts` has one meaning: listed, not listed, or no list at all (AEP-0004 §4.2).
#[test]
fn acceptance_tells_an_undeclared_target_from_a_refusing_one() {
    use aep_core::frame::Acceptance;
    let caps = |control: Value| {
        let Frame::Hello(h) = frame(
            &json!({"type": "hello", "versions": ["0.1"], "capabilities": {"control": control}})
                .to_string(),
        ) else {
            panic!("a hello");
        };
        h.capabilities()
    };
    let listed = caps(json!({"accepts": ["control.pause"]}));
    assert_eq!(listed.acceptance("control.pause"), Acceptance::Accepted);
    assert_eq!(listed.acceptance("control.cancel"), Acceptance::Refused);
    assert_eq!(
        caps(json!({"accepts": []})).acceptance("control.pause"),
        Acceptance::Refused
    );
    let undeclared = caps(json!({"ack_window_ms": 100}));
    assert_eq!(
        undeclared.acceptance("control.pause"),
        Acceptance::Undeclared
    );
    assert!(
        !undeclared.accepts("control.pause"),
        "a target accepts nothing undeclared"
    );
    // an unreadable declaration is no declaration
    assert_eq!(
        caps(json!({"accepts": "control.pause"})).acceptance("control.pause"),
        Acceptance::Undeclared
    );
}

/// A malformed `subscribe` is refused in-band with `invalid-filter`, its `id` echoed
/// when readable and the fault named (AEP-0003 §6.5); any other malformed frame is
/// ignored, so it owes no answer (§2).
#[test]
fn only_a_malformed_subscribe_is_answered() {
    let frame_error = |text: &str| match decode(text) {
        Err(DecodeError::Frame(e)) => e,
        other => panic!("want a frame error for {text}, got {other:?}"),
    };
    // (frame, the id echoed, the member the detail names)
    let cases = [
        (
            r#"{"type":"subscribe","id":"s1","from":{}}"#,
            Some("s1"),
            "`from`",
        ),
        (r#"{"type":"subscribe","from":[]}"#, None, "`id`"),
        (r#"{"type":"subscribe","id":7,"from":[]}"#, None, "`id`"),
    ];
    for (text, id, member) in cases {
        let refusal = frame_error(text)
            .refusal()
            .expect("a subscribe is answered");
        assert_eq!(refusal.code, ErrorCode::InvalidFilter, "{text}");
        assert_eq!(refusal.id.as_deref(), id, "{text}");
        let detail = refusal.detail.as_deref().unwrap_or_default();
        assert!(detail.contains(member), "{text}: {detail}");
    }
    for text in [
        r#"{"type":"hello","versions":"0.1"}"#,
        r#"{"type":"roster","sessions":{}}"#,
    ] {
        assert_eq!(frame_error(text).refusal(), None, "{text}");
    }
}
