//! Generated payload types against the golden corpus: every golden event of a registered
//! type decodes into its payload type and encodes back to the same JSON value.

use crate::common;

use aep_core::payload::{Payload, PAYLOAD_TYPES};
use aep_core::types::lookup;
use aep_core::Event;
use serde_json::Value;

fn golden() -> Vec<Event> {
    common::events(common::GOLDEN)
}

#[test]
fn golden_payloads_round_trip_through_their_types() {
    let events = golden();
    assert_eq!(events.len(), 64);
    let mut typed = 0;
    for (i, event) in events.iter().enumerate() {
        let ty = event.event_type();
        // Through the event's own typed accessor, which is what users call.
        let payload = event
            .typed_payload()
            .unwrap_or_else(|e| panic!("golden line {i} ({ty}) does not decode: {e}"));
        if lookup(ty).is_some() {
            typed += 1;
            assert_eq!(
                payload.event_type(),
                Some(ty),
                "golden line {i}: wrong variant"
            );
            assert!(!matches!(payload, Payload::Other(_)));
        } else {
            assert!(
                matches!(payload, Payload::Other(_)),
                "golden line {i} ({ty})"
            );
        }
        let written = serde_json::to_value(&payload).expect("payload encodes");
        match event.data() {
            Some(data) => assert_eq!(written, data, "golden line {i} ({ty}) did not round-trip"),
            None if lookup(ty).is_some() => {
                assert_eq!(
                    written,
                    Value::Object(Default::default()),
                    "golden line {i}"
                )
            }
            None => assert_eq!(written, Value::Null, "golden line {i}"),
        }
    }
    assert_eq!(typed, 63, "every golden line but the vendor one is typed");
}

#[test]
fn unregistered_and_vendor_types_keep_their_data_as_json() {
    for (ty, data) in [
        // An unregistered member of a registered category (AEP-0001 §10 tolerance).
        (
            "progress.some_future_member",
            Some(r#"{"pct":0.5510,"x":[1]}"#),
        ),
        ("x.acme.tool.synced", Some(r#"{"n":1}"#)),
        ("x.acme.tool.synced", None),
    ] {
        let data_attr = data.map_or(String::new(), |d| format!(r#","data":{d}"#));
        let line = format!(
            r#"{{"aep":"0.1","id":"1","type":"{ty}","time":"t","source":"s","agent":"a"{data_attr}}}"#
        );
        let event: Event = line.parse().expect("event");
        let payload = event.typed_payload().expect("any JSON data decodes");
        let want = data.map_or(Value::Null, |d| serde_json::from_str(d).expect("json"));
        assert_eq!(payload, Payload::Other(want), "{ty}");
        assert_eq!(payload.event_type(), None);
    }
}

#[test]
fn vendor_fields_are_kept() {
    let line = r#"{"aep":"0.1","id":"1","type":"tool.requested","time":"t","source":"s","agent":"a","data":{"tool":{"name":"Bash","xacme":{"k":[1,2]}},"args_digest":"d","x_acme_cost":0.5510}}"#;
    let event: Event = line.parse().expect("event");
    let Payload::ToolRequested(p) = Payload::from_event(&event).expect("decodes") else {
        panic!("wrong variant")
    };
    assert_eq!(
        p.tool.extra.get("xacme"),
        Some(&serde_json::json!({"k": [1, 2]}))
    );
    assert_eq!(
        serde_json::to_value(&p).expect("encodes"),
        event.data().expect("data")
    );
}

#[test]
fn a_payload_against_its_schema_is_an_error_naming_the_type() {
    let event: Event = r#"{"aep":"0.1","id":"1","type":"tool.failed","time":"t","source":"s","agent":"a","data":{"error":{}}}"#
        .parse()
        .expect("event");
    let err = Payload::from_event(&event).expect_err("`tool` is required");
    assert_eq!(err.event_type(), "tool.failed");
    assert!(err.to_string().contains("tool"), "{err}");
}

#[test]
fn payload_types_cover_the_registry() {
    assert_eq!(PAYLOAD_TYPES.len(), 46);
    assert_eq!(aep_core::types::REGISTRY.len(), 46);
    for t in aep_core::types::REGISTRY {
        assert!(
            PAYLOAD_TYPES.contains(&t.name),
            "{} has no payload type",
            t.name
        );
        // Every registered type decodes its minimal payload or names the missing field.
        let _ = Payload::from_raw(t.name, None);
    }
}

#[test]
fn reserved_types_keep_free_form_json() {
    let raw = serde_json::value::RawValue::from_string(r#"{"text":"hello","parts":[1]}"#.into())
        .expect("raw");
    let p = Payload::from_raw("message.user.submitted", Some(&raw)).expect("decodes");
    let Payload::MessageUserSubmitted(m) = &p else {
        panic!("wrong variant")
    };
    assert_eq!(m.0, serde_json::json!({"text": "hello", "parts": [1]}));
    assert_eq!(serde_json::to_string(&p).expect("encodes"), raw.get());
}

mod property {
    use super::common::{self, scalars, Shape};
    use aep_core::payload::Payload;
    use proptest::prelude::*;
    use serde_json::Value;

    fn json() -> impl Strategy<Value = Value> {
        // serde_json's default float parsing is not exact at extreme exponents, which is
        // serde_json's business, not the payload types'.
        let leaf = scalars(-1.0e6f64..1.0e6, "[a-z]{0,6}");
        let shape = Shape {
            depth: 4,
            size: 48,
            width: 5,
        };
        common::json(leaf, "[a-z_]{1,8}|tool|name|answer|kind", shape)
    }

    proptest! {
        #[test]
        fn decoding_never_panics_and_what_decodes_round_trips(
            ty in prop::sample::select(aep_core::types::REGISTRY.iter().map(|t| t.name).collect::<Vec<_>>()),
            data in json(),
        ) {
            let raw = serde_json::value::to_raw_value(&data).expect("raw");
            if let Ok(p) = Payload::from_raw(ty, Some(&raw)) {
                prop_assert_eq!(p.event_type(), Some(ty));
                let back = serde_json::to_value(&p).expect("encodes");
                // Decoding may only drop explicit nulls of optional members.
                let again = Payload::from_raw(ty, Some(&serde_json::value::to_raw_value(&back).expect("raw")));
                prop_assert_eq!(again.ok(), Some(p));
            }
        }
    }
}
