//! The subscription lifecycle model (the draft AEP Subscription Model): filters, patterns,
//! lifecycle messages, the producer registry, delivery modes, cursors, lowering.
#![allow(clippy::unwrap_used)] // test code: a broken expectation should fail loudly

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aep_core::filter::Filter;
use aep_core::subscription::{
    Cursor, DeliveredEvent, DeliveryMode, Field, LifecycleMessage, SubscriptionError,
    SubscriptionFilter, SubscriptionRegistry, SubscriptionRegistryConfig, SubscriptionRequested,
    CONVERSATION_ATTR, TARGET_ATTR, TASK_ATTR, TOPIC_ATTR,
};
use aep_core::Event;
use proptest::prelude::*;
use serde_json::{json, Value};

fn event(ty: &str) -> Event {
    Event::new(
        "01J",
        ty,
        "2026-07-09T10:00:00.000Z",
        "memory:main",
        "memory",
    )
}

fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_783_591_200) // 2026-07-09T10:00:00Z
}

fn request(payload: Value) -> SubscriptionRequested {
    SubscriptionRequested::from_payload(payload)
}

// ------------------------------------------------------------------ the document's JSON

#[test]
fn document_examples_round_trip_as_json_values() {
    let filter = json!({
        "types": ["memory.*", "context.*"],
        "source": ["memory:main"],
        "target": "agent:researcher",
        "topic": "tasks.task_01",
        "session_id": "sess_01",
        "conversation_id": "conv_01",
        "task_id": "task_01",
        "from_cursor": "stream_01:42",
        "delivery_mode": "at_least_once"
    });
    let parsed = SubscriptionFilter::from_value(&filter).unwrap();
    assert_eq!(parsed.to_value(), filter);
    assert_eq!(
        parsed.to_value().to_string(),
        filter.to_string(),
        "document field order"
    );

    for message in [
        json!({"type": "subscription.created", "payload": {
            "subscription_id": "sub_0001",
            "filter": { "types": ["memory.*"], "target": "agent:researcher" },
            "created_at": "2026-07-09T10:00:00Z",
            "expires_at": null }}),
        json!({"type": "subscription.rejected", "payload": {
            "subscription_id": "sub_0001",
            "filter": {},
            "error": { "code": "subscription_rejected",
                       "message": "subscription must include at least one filter criterion",
                       "retryable": false }}}),
        json!({"type": "subscription.cancelled", "payload": { "subscription_id": "sub_0001" }}),
        json!({"type": "subscription.expired", "payload": { "subscription_id": "sub_0001" }}),
        json!({"type": "subscription.requested", "payload": { "types": ["memory.*"] }}),
    ] {
        let parsed = LifecycleMessage::from_value(&message).unwrap();
        assert_eq!(parsed.to_value(), message);
        assert_eq!(parsed.to_json(), message.to_string());
    }
}

#[test]
fn string_or_array_shapes_are_kept() {
    let f = SubscriptionFilter::from_value(&json!({"types": "tool.*", "source": ["a"]})).unwrap();
    assert_eq!(f.to_value(), json!({"types": "tool.*", "source": ["a"]}));
    assert!(f.get(Field::Source).unwrap().is_array());
}

#[test]
fn lifecycle_parse_errors_name_the_field() {
    for (msg, needle) in [
        (json!({"payload": {}}), "`type`"),
        (
            json!({"type": "subscription.created", "payload": {"filter": {}}}),
            "payload.subscription_id",
        ),
        (
            json!({"type": "subscription.created", "payload": {"subscription_id": "s"}}),
            "payload.filter",
        ),
        (
            json!({"type": "subscription.cancelled", "payload": {"subscription_id": 1}}),
            "payload.subscription_id",
        ),
        (
            json!({"type": "subscription.rejected", "payload": {"error": {"code": "x"}}}),
            "payload.error.message",
        ),
        (
            json!({"type": "subscription.renamed", "payload": {}}),
            "subscription.renamed",
        ),
        (json!({"type": "subscription.expired"}), "payload"),
    ] {
        let err = LifecycleMessage::from_value(&msg).unwrap_err();
        assert!(err.to_string().contains(needle), "{msg} -> {err}");
    }
}

// ------------------------------------------------------------------ combined filtering

#[test]
fn every_specified_field_must_match() {
    let filter = SubscriptionFilter::from_value(&json!({
        "types": ["memory.*"], "source": ["memory:main", "memory:aux"], "target": "agent:researcher",
        "topic": "tasks.task_01", "session_id": "sess_01", "conversation_id": "conv_01", "task_id": "task_01"
    }))
    .unwrap();
    let mut e = event("memory.fact.added").with_session("sess_01");
    for (attr, v) in [
        (TARGET_ATTR, "agent:researcher"),
        (TOPIC_ATTR, "tasks.task_01"),
        (CONVERSATION_ATTR, "conv_01"),
        (TASK_ATTR, "task_01"),
    ] {
        assert!(!filter.matches(&e), "{attr} still missing");
        e.set_extension(attr, v.into()).unwrap();
    }
    assert!(filter.matches(&e));
    let mut other = e.clone();
    other.set_session(Some("sess_02".into()));
    assert!(!filter.matches(&other));
    let mut other = e.clone();
    other.set_source("memory:other");
    assert!(!filter.matches(&other));
    let mut other = e.clone();
    other
        .set_extension(TOPIC_ATTR, "tasks.task_02".into())
        .unwrap();
    assert!(!filter.matches(&other));
    let mut other = e.clone();
    other.set_extension(TASK_ATTR, 1.into()).unwrap();
    assert!(!filter.matches(&other), "a non-string value never equals");
    let mut escaped: Event = e
        .to_json()
        .replace("\"conv_01\"", "\"conv\\u005f01\"")
        .parse()
        .unwrap();
    assert!(filter.matches(&escaped), "escaped strings compare by value");
    escaped
        .set_extension(CONVERSATION_ATTR, "conv_02".into())
        .unwrap();
    assert!(!filter.matches(&escaped));
}

#[test]
fn empty_filter_matches_nothing_and_needs_a_primary_criterion() {
    let any = event("memory.fact.added").with_session("sess_01");
    assert!(!SubscriptionFilter::new().matches(&any));
    let cursor_only = SubscriptionFilter::new().with_delivery_mode(DeliveryMode::Replayable);
    assert!(!cursor_only.matches(&any));
    assert_eq!(cursor_only.validate(), Err(SubscriptionError::NoCriterion));
    let session_only = SubscriptionFilter::new()
        .with(Field::SessionId, "sess_01")
        .unwrap();
    assert!(
        session_only.matches(&any),
        "matching semantics hold for what is specified"
    );
    assert_eq!(
        session_only.validate(),
        Err(SubscriptionError::NoPrimaryCriterion)
    );
    for field in [Field::Source, Field::Target, Field::Topic] {
        assert!(
            SubscriptionFilter::new()
                .with(field, "x")
                .unwrap()
                .validate()
                .is_ok(),
            "{field}"
        );
    }
    assert!(SubscriptionFilter::new()
        .with_types("*")
        .unwrap()
        .validate()
        .is_ok());
    assert!(SubscriptionFilter::new()
        .with_types("*")
        .unwrap()
        .matches(&any));
}

// ------------------------------------------------------------------ the registry

fn registry(max: DeliveryMode) -> SubscriptionRegistry {
    SubscriptionRegistry::new(SubscriptionRegistryConfig::new().with_max_delivery(max))
}

#[test]
fn every_malformed_request_is_rejected_naming_the_field() {
    let mut reg = registry(DeliveryMode::Replayable);
    let ok = reg
        .handle_request("c1", &request(json!({"types": "memory.*"})), t0())
        .unwrap();
    for (payload, field) in [
        (json!({"types": 5}), "types"),
        (json!({"types": []}), "types"),
        (json!({"types": [""]}), "types"),
        (json!({"types": ["a..b"]}), "types"),
        (json!({"types": ["tool.**"]}), "types"),
        (json!({"types": ["memory."]}), "types"),
        (json!({"source": [1]}), "source"),
        (json!({"source": []}), "source"),
        (json!({"target": {}}), "target"),
        (json!({"topic": null}), "topic"),
        (json!({"source": "s", "session_id": ""}), "session_id"),
        (
            json!({"source": "s", "conversation_id": false}),
            "conversation_id",
        ),
        (json!({"source": "s", "task_id": [[]]}), "task_id"),
        (json!({"source": "s", "priority": 1}), "priority"),
        (
            json!({"source": "s", "delivery_mode": "exactly_once"}),
            "delivery_mode",
        ),
        (json!({"source": "s", "delivery_mode": 2}), "delivery_mode"),
        (json!({"source": "s", "from_cursor": 42}), "from_cursor"),
        (
            json!({"source": "s", "from_cursor": "stream_01:42"}),
            "from_cursor",
        ),
        (
            json!({"source": "s", "from_cursor": "s1:x:42"}),
            "from_cursor",
        ),
    ] {
        let rejected = reg
            .handle_request("c1", &request(payload.clone()), t0())
            .unwrap_err();
        assert!(
            rejected.message().contains(&format!("`{field}`")),
            "{payload} -> {}",
            rejected.message()
        );
        assert_eq!(rejected.code(), "subscription_rejected");
        assert!(!rejected.retryable());
        assert_eq!(
            rejected.filter(),
            &payload,
            "the rejection echoes the request"
        );
    }
    for payload in [json!("types"), json!([]), json!(null)] {
        let rejected = reg
            .handle_request("c1", &request(payload), t0())
            .unwrap_err();
        assert_eq!(
            rejected.message(),
            "`payload` must be a JSON object: the subscription filter"
        );
    }
    let rejected = reg
        .handle_request("c1", &request(json!({})), t0())
        .unwrap_err();
    assert_eq!(
        rejected.message(),
        "subscription must include at least one filter criterion"
    );
    let rejected = reg
        .handle_request("c1", &request(json!({"session_id": "s"})), t0())
        .unwrap_err();
    assert!(rejected
        .message()
        .starts_with("subscription must include at least one filter criterion"));
    // The session's good subscription carries on.
    assert_eq!(reg.len(), 1);
    assert!(reg.get("c1", ok.subscription_id()).is_some());
    assert_eq!(reg.route(&event("memory.fact.added")).count(), 1);
}

#[test]
fn replay_and_cursors() {
    let from = |cursor: &str| request(json!({"types": "a.*", "from_cursor": cursor}));
    let mut no_replay = registry(DeliveryMode::AtLeastOnce);
    let rejected = no_replay
        .handle_request("c1", &from("s1:0:42"), t0())
        .unwrap_err();
    assert_eq!(rejected.message(), "replay not supported");
    assert_eq!(rejected.code(), "subscription_rejected");

    let mut replay = registry(DeliveryMode::Replayable);
    let created = replay.handle_request("c1", &from("s1:2:42"), t0()).unwrap();
    let sub = replay.get("c1", created.subscription_id()).unwrap();
    assert_eq!(sub.from_cursor(), Some(&Cursor::new("s1", 2, 42)));
    let bad = replay
        .handle_request("c1", &from("s1:2"), t0())
        .unwrap_err();
    assert!(
        bad.message().contains("{session}:{epoch}:{seq}"),
        "{}",
        bad.message()
    );
}

#[test]
fn ids_are_unique_per_session_and_assigned_to_rejections_too() {
    let mut reg = registry(DeliveryMode::BestEffort);
    let a1 = reg
        .handle_request("a", &request(json!({"types": "x.*"})), t0())
        .unwrap();
    let a2 = reg
        .handle_request("a", &request(json!({})), t0())
        .unwrap_err();
    let a3 = reg
        .handle_request("a", &request(json!({"source": "s"})), t0())
        .unwrap();
    let b1 = reg
        .handle_request("b", &request(json!({"types": "x.*"})), t0())
        .unwrap();
    assert_eq!(
        [
            a1.subscription_id(),
            a2.subscription_id().unwrap(),
            a3.subscription_id(),
            b1.subscription_id()
        ],
        ["sub_0001", "sub_0002", "sub_0003", "sub_0001"]
    );
    assert_eq!(a1.created_at(), Some("2026-07-09T10:00:00.000Z"));
    assert_eq!(a1.expires_at(), None);
}

#[test]
fn delivery_modes_downgrade_never_upgrade() {
    for (max, requested, effective) in [
        (
            DeliveryMode::AtLeastOnce,
            Some("replayable"),
            DeliveryMode::AtLeastOnce,
        ),
        (
            DeliveryMode::AtLeastOnce,
            Some("best_effort"),
            DeliveryMode::BestEffort,
        ),
        (
            DeliveryMode::Replayable,
            Some("at_least_once"),
            DeliveryMode::AtLeastOnce,
        ),
        (DeliveryMode::Replayable, None, DeliveryMode::BestEffort),
        (
            DeliveryMode::BestEffort,
            Some("replayable"),
            DeliveryMode::BestEffort,
        ),
    ] {
        let mut reg = registry(max);
        let mut payload = json!({"types": "tool.*"});
        if let Some(m) = requested {
            payload["delivery_mode"] = m.into();
        }
        let created = reg.handle_request("c", &request(payload), t0()).unwrap();
        assert_eq!(
            created.filter().delivery_mode().map(|m| m.as_str()),
            requested,
            "filter echoed as requested"
        );
        let e = event("tool.completed");
        let routes: Vec<_> = reg.route(&e).collect();
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].mode, effective, "{max} / {requested:?}");
        let delivery = routes[0].deliver(e.clone());
        let wire: Value = serde_json::from_str(&delivery.to_json()).unwrap();
        assert_eq!(wire["delivery"]["mode"], effective.as_str());
        assert_eq!(
            wire["event"],
            e.to_value(),
            "the envelope is carried unchanged"
        );
        assert_eq!(
            DeliveredEvent::from_json(&delivery.to_json()).unwrap(),
            delivery
        );
    }
}

#[test]
fn cancel_close_and_expiry() {
    let mut reg = SubscriptionRegistry::new(
        SubscriptionRegistryConfig::new().with_ttl(Duration::from_secs(60)),
    );
    let a = reg
        .handle_request("a", &request(json!({"types": "tool.*"})), t0())
        .unwrap();
    assert_eq!(a.expires_at(), Some("2026-07-09T10:01:00.000Z"));
    let a2 = reg
        .handle_request(
            "a",
            &request(json!({"source": "memory:main"})),
            t0() + Duration::from_secs(30),
        )
        .unwrap();
    let b = reg
        .handle_request("b", &request(json!({"types": "*"})), t0())
        .unwrap();
    assert_eq!(reg.len(), 3);
    assert_eq!(reg.poll_timeout(), Some(t0() + Duration::from_secs(60)));

    // Cancel through the message surface: confirmed once, then unknown.
    let cancel = LifecycleMessage::from_value(&json!({"type": "subscription.cancelled", "payload": {"subscription_id": b.subscription_id()}})).unwrap();
    assert_eq!(reg.handle_message("b", &cancel, t0()), Some(cancel.clone()));
    assert_eq!(reg.handle_message("b", &cancel, t0()), None);
    assert!(
        reg.cancel("b", a.subscription_id()).is_none(),
        "ids are per session: b holds no sub_0001 now"
    );
    assert_eq!(reg.len(), 2);

    // Expiry at 60 s takes the first, not the second (expires at 90 s).
    assert!(reg
        .handle_timeout(t0() + Duration::from_secs(59))
        .is_empty());
    let expired = reg.handle_timeout(t0() + Duration::from_secs(60));
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].0, "a");
    assert_eq!(expired[0].1.subscription_id(), a.subscription_id());
    let tool = event("tool.completed");
    let routed: Vec<_> = reg.route(&tool).map(|r| r.subscription_id).collect();
    assert_eq!(
        routed,
        [a2.subscription_id()],
        "only the source subscription is left"
    );
    assert_eq!(reg.route(&event("memory.fact.added")).count(), 1);

    // Closing the session cancels the rest; its pending expiry never fires.
    assert_eq!(
        reg.close_session("a"),
        vec![a2.subscription_id().to_owned()]
    );
    assert!(reg.is_empty());
    assert_eq!(reg.poll_timeout(), None);
    assert!(reg
        .handle_timeout(t0() + Duration::from_secs(3600))
        .is_empty());
    assert!(reg.close_session("a").is_empty());
}

#[test]
fn routing_visits_index_and_wildcards() {
    let mut reg = registry(DeliveryMode::Replayable);
    let payloads = [
        json!({"types": ["tool.*.progress"]}),
        json!({"types": ["tool.call.*", "run.*"]}),
        json!({"types": ["*.completed"]}),
        json!({"types": "*"}),
        json!({"source": "memory:main"}),
        json!({"types": "memory.*", "delivery_mode": "replayable"}),
    ];
    for p in payloads {
        reg.handle_request("c", &request(p), t0()).unwrap();
    }
    let ids = |ty: &str| -> Vec<String> {
        let e = Event::new("1", ty, "t", "elsewhere", "a");
        let mut v: Vec<String> = reg
            .route(&e)
            .map(|r| r.subscription_id.to_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        ids("tool.call.progress"),
        ["sub_0001", "sub_0002", "sub_0004"]
    );
    assert_eq!(ids("tool.completed"), ["sub_0003", "sub_0004"]);
    assert_eq!(ids("run.started"), ["sub_0002", "sub_0004"]);
    assert_eq!(ids("memory.fact.added"), ["sub_0004", "sub_0006"]);
    assert_eq!(ids("unrelated"), ["sub_0004"]);
    let from_memory = event("x.other.thing");
    assert_eq!(
        reg.route(&from_memory).count(),
        2,
        "`*` and the source subscription"
    );
}

#[test]
fn requests_from_lifecycle_messages() {
    let mut reg = registry(DeliveryMode::BestEffort);
    let msg = LifecycleMessage::from_json(r#"{"type":"subscription.requested","payload":{"types":["memory.*"],"target":"agent:researcher"}}"#).unwrap();
    let answer = reg.handle_message("c", &msg, t0()).unwrap();
    assert_eq!(
        answer.to_value(),
        json!({"type": "subscription.created", "payload": {
            "subscription_id": "sub_0001",
            "filter": {"types": ["memory.*"], "target": "agent:researcher"},
            "created_at": "2026-07-09T10:00:00.000Z",
            "expires_at": null}})
    );
    let bad =
        LifecycleMessage::from_json(r#"{"type":"subscription.requested","payload":{}}"#).unwrap();
    assert_eq!(
        reg.handle_message("c", &bad, t0()).unwrap().to_value(),
        json!({"type": "subscription.rejected", "payload": {
            "subscription_id": "sub_0002",
            "filter": {},
            "error": {"code": "subscription_rejected",
                      "message": "subscription must include at least one filter criterion",
                      "retryable": false}}})
    );
    let no_payload = LifecycleMessage::from_json(r#"{"type":"subscription.requested"}"#).unwrap();
    let LifecycleMessage::Rejected(r) = reg.handle_message("c", &no_payload, t0()).unwrap() else {
        panic!("a request without payload is rejected");
    };
    assert!(r.message().contains("`payload`"), "{}", r.message());
    let ignored = LifecycleMessage::from_json(
        r#"{"type":"subscription.expired","payload":{"subscription_id":"sub_0001"}}"#,
    )
    .unwrap();
    assert_eq!(reg.handle_message("c", &ignored, t0()), None);
}

// ------------------------------------------------------------------ lowering

/// The lifecycle model's pattern rules as a regular expression, written independently of
/// `TypePattern`: the oracle for the property tests.
fn pattern_regex(p: &str) -> regex::Regex {
    let body = if p == "*" {
        ".*".to_owned()
    } else {
        let segs: Vec<&str> = p.split('.').collect();
        let (last, init) = segs.split_last().unwrap();
        let mut re: Vec<String> = init
            .iter()
            .map(|s| {
                if *s == "*" {
                    "[^.]*".to_owned()
                } else {
                    regex::escape(s)
                }
            })
            .collect();
        if *last == "*" {
            let prefix = re.join(r"\.");
            return regex::Regex::new(&format!(r"^{prefix}\..*$")).unwrap();
        }
        re.push(regex::escape(last));
        re.join(r"\.")
    };
    regex::Regex::new(&format!("^{body}$")).unwrap()
}

fn oracle(filter: &Value, e: &Event) -> bool {
    let obj = filter.as_object().unwrap();
    let mut any = false;
    for (k, v) in obj {
        let vals: Vec<&str> = match v {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().map(|x| x.as_str().unwrap()).collect(),
            _ => continue,
        };
        let got: Option<String> = match k.as_str() {
            "types" => {
                any = true;
                if !vals
                    .iter()
                    .any(|p| pattern_regex(p).is_match(e.event_type()))
                {
                    return false;
                }
                continue;
            }
            "source" => Some(e.source().to_owned()),
            "session_id" => e.session().map(str::to_owned),
            "target" => e.extension_str(TARGET_ATTR).map(str::to_owned),
            "topic" => e.extension_str(TOPIC_ATTR).map(str::to_owned),
            "conversation_id" => e.extension_str(CONVERSATION_ATTR).map(str::to_owned),
            "task_id" => e.extension_str(TASK_ATTR).map(str::to_owned),
            _ => continue,
        };
        any = true;
        if !got.is_some_and(|g| vals.contains(&g.as_str())) {
            return false;
        }
    }
    any
}

fn segment() -> BoxedStrategy<String> {
    prop_oneof![
        Just("tool".to_owned()),
        Just("call".to_owned()),
        Just("progress".to_owned()),
        Just("Tool".to_owned()),
    ]
    .boxed()
}

fn pattern() -> BoxedStrategy<String> {
    prop_oneof![
        1 => Just("*".to_owned()),
        6 => prop::collection::vec(prop_oneof![3 => segment(), 1 => Just("*".to_owned())], 1..4)
            .prop_map(|s| s.join(".")),
    ]
    .boxed()
}

fn one_or_many(s: impl Strategy<Value = String> + Clone) -> impl Strategy<Value = Value> {
    prop_oneof![
        s.clone().prop_map(Value::String),
        prop::collection::vec(s, 1..3)
            .prop_map(|v| Value::Array(v.into_iter().map(Value::String).collect())),
    ]
}

fn value_str() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        Just("v1".to_owned()),
        Just("v2".to_owned()),
        Just("v*".to_owned())
    ]
}

fn filter_json() -> impl Strategy<Value = Value> {
    (
        prop::option::weighted(0.8, one_or_many(pattern())),
        prop::option::weighted(0.25, one_or_many(value_str())),
        prop::option::weighted(0.25, one_or_many(value_str())),
        prop::option::weighted(0.25, one_or_many(value_str())),
        prop::option::weighted(0.25, one_or_many(value_str())),
        prop::option::weighted(0.25, one_or_many(value_str())),
        prop::option::weighted(0.25, one_or_many(value_str())),
    )
        .prop_map(|(types, source, target, topic, session, conv, task)| {
            let mut m = serde_json::Map::new();
            for (k, v) in [
                ("types", types),
                ("source", source),
                ("target", target),
                ("topic", topic),
                ("session_id", session),
                ("conversation_id", conv),
                ("task_id", task),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            Value::Object(m)
        })
}

fn event_strategy() -> impl Strategy<Value = Event> {
    (
        prop::collection::vec(segment(), 1..5),
        value_str(),
        prop::option::of(value_str()),
        prop::collection::vec(prop::option::of(value_str()), 4),
    )
        .prop_map(|(segs, source, session, exts)| {
            let mut e = Event::new("1", segs.join("."), "t", source, "a");
            e.set_session(session);
            for (attr, v) in [TARGET_ATTR, TOPIC_ATTR, CONVERSATION_ATTR, TASK_ATTR]
                .into_iter()
                .zip(exts)
            {
                if let Some(v) = v {
                    e.set_extension(attr, v.into()).unwrap();
                }
            }
            e
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// wire filter + residual == the filter's own matching == the independent oracle.
    #[test]
    fn lowering_preserves_semantics(filter in filter_json(), events in prop::collection::vec(event_strategy(), 8)) {
        let parsed = SubscriptionFilter::from_value(&filter).unwrap();
        let lowered = parsed.lower();
        // The wire half is a valid attr-match filter as any relay would read it.
        let reread = Filter::from_json(&lowered.wire().to_json()).unwrap();
        for e in &events {
            let want = oracle(&filter, e);
            prop_assert_eq!(parsed.matches(e), want, "filter {} event {}", filter, e);
            prop_assert_eq!(reread.matches(e) && lowered.residual().matches(e), want, "lowered {:?} event {}", lowered, e);
        }
    }

    /// Routing through the registry agrees with matching each filter on its own.
    #[test]
    fn routing_agrees_with_matching(filters in prop::collection::vec(filter_json(), 1..12), e in event_strategy()) {
        let mut reg = registry(DeliveryMode::BestEffort);
        let mut want = Vec::new();
        for f in &filters {
            if let Ok(created) = reg.handle_request("c", &request(f.clone()), t0()) {
                if created.filter().matches(&e) {
                    want.push(created.subscription_id().to_owned());
                }
            }
        }
        let mut got: Vec<String> = reg.route(&e).map(|r| r.subscription_id.to_owned()).collect();
        got.sort();
        want.sort();
        prop_assert_eq!(got, want);
    }
}

proptest! {
    /// Any JSON payload gets an answer (created or rejected), never a panic, and the
    /// registry keeps routing for the subscriptions it created.
    #[test]
    fn every_payload_is_answered(
        payload in prop_oneof![
            filter_json(),
            any::<i64>().prop_map(Value::from),
            "[a-z_*.:]{0,12}".prop_map(Value::String),
            prop::collection::vec(("[a-z_]{1,16}", prop_oneof![
                Just(Value::Null), Just(json!([])), Just(json!({})), Just(json!(1)),
                "[a-z_*.:0-9]{0,12}".prop_map(Value::String),
            ]), 0..4).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ],
    ) {
        let mut reg = registry(DeliveryMode::Replayable);
        let keep = reg.handle_request("c", &request(json!({"types": "*"})), t0()).unwrap();
        match reg.handle_request("c", &request(payload.clone()), t0()) {
            Ok(created) => prop_assert!(created.filter().validate().is_ok()),
            Err(rejected) => {
                prop_assert_eq!(rejected.filter(), &payload);
                prop_assert!(!rejected.message().is_empty());
            }
        }
        prop_assert!(reg.route(&event("tool.completed")).any(|r| r.subscription_id == keep.subscription_id()));
    }
}
