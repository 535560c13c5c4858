//! The in-process hub: lifecycle, delivery modes, replay, cancel, expiry on tokio's
//! paused clock, and drop semantics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use aep_async::lifecycle::{Ended, Hub, HubConfig};
use aep_core::subscription::{
    DeliveryMode, Field, SubscriptionFilter, SubscriptionRequested, TOPIC_ATTR,
};
use futures::StreamExt;
use serde_json::json;

use aep_test_support::events::{event, session_event as seq};

/// A filter on the type patterns `patterns`.
fn types(patterns: &str) -> SubscriptionFilter {
    SubscriptionFilter::new().with_types(patterns).unwrap()
}

async fn next_id(sub: &mut aep_async::lifecycle::Subscriber) -> String {
    tokio::time::timeout(Duration::from_secs(5), sub.next())
        .await
        .expect("a delivery")
        .expect("stream open")
        .event()
        .id()
        .to_owned()
}

#[tokio::test]
async fn routes_by_type_pattern_with_the_effective_mode() {
    let hub = Hub::with_config(HubConfig::new().with_max_delivery(DeliveryMode::AtLeastOnce));
    let session = hub.session();
    let mut progress = session
        .subscribe(&types("tool.*.progress").with_delivery_mode(DeliveryMode::Replayable))
        .unwrap();
    let mut all = session.subscribe(&types("*")).unwrap();
    assert_eq!((progress.id(), all.id()), ("sub_0001", "sub_0002"));
    // downgraded to what the hub honors, never upgraded
    assert_eq!(progress.mode(), DeliveryMode::AtLeastOnce);
    assert_eq!(all.mode(), DeliveryMode::BestEffort);

    assert_eq!(hub.publish(event("1", "tool.call.started")).await, 1);
    assert_eq!(hub.publish(event("2", "tool.call.progress")).await, 2);
    assert_eq!(hub.publish(event("3", "tool.progress")).await, 1);

    let d = progress.next().await.unwrap();
    assert_eq!(
        (d.subscription_id(), d.mode(), d.event().id()),
        ("sub_0001", DeliveryMode::AtLeastOnce, "2")
    );
    assert_eq!(d.to_value()["delivery"]["mode"], "at_least_once");
    for want in ["1", "2", "3"] {
        assert_eq!(next_id(&mut all).await, want);
    }
}

#[tokio::test]
async fn extension_mapped_fields_route() {
    let hub = Hub::new();
    let session = hub.session();
    let mut sub = session
        .subscribe(
            &SubscriptionFilter::new()
                .with(Field::Topic, "tasks.task_01")
                .unwrap(),
        )
        .unwrap();
    let mut tagged = event("t", "task.progress");
    tagged
        .set_extension(TOPIC_ATTR, "tasks.task_01".into())
        .unwrap();
    assert_eq!(hub.publish(event("u", "task.progress")).await, 0);
    assert_eq!(hub.publish(tagged).await, 1);
    assert_eq!(next_id(&mut sub).await, "t");
}

#[tokio::test]
async fn malformed_requests_are_rejected_naming_the_field_and_others_carry_on() {
    let hub = Hub::new();
    let session = hub.session();
    let mut good = session.subscribe(&types("run.*")).unwrap();
    let cases = [
        (json!({}), "at least one filter criterion"),
        (json!({"types": []}), "types"),
        (json!({"types": 7}), "types"),
        (json!({"types": "a..b"}), "types"),
        (json!({"source": "s", "colour": "red"}), "colour"),
        (
            json!({"types": "a.*", "delivery_mode": "exactly_once"}),
            "delivery_mode",
        ),
        (
            json!({"types": "a.*", "from_cursor": "stream_01:42"}),
            "from_cursor",
        ),
        (json!("memory.*"), ""),
    ];
    for (payload, names) in cases {
        let rejected = session
            .request(&SubscriptionRequested::from_payload(payload.clone()))
            .unwrap_err();
        assert_eq!(rejected.code(), "subscription_rejected");
        assert!(
            rejected.message().contains(names),
            "{payload}: {}",
            rejected.message()
        );
    }
    assert_eq!(hub.len(), 1);
    hub.publish(event("r", "run.started")).await;
    assert_eq!(next_id(&mut good).await, "r");
}

#[tokio::test]
async fn replay_without_replay_support_is_refused() {
    let hub = Hub::with_config(HubConfig::new().with_max_delivery(DeliveryMode::AtLeastOnce));
    let rejected = hub
        .session()
        .subscribe(&types("a.*").with_from_cursor("s:0:1"))
        .unwrap_err();
    assert!(rejected.message().contains("replay not supported"));
}

#[tokio::test]
async fn from_cursor_replays_then_goes_live_exactly_once() {
    let hub = Hub::new();
    for n in 1..=5 {
        hub.publish(seq(&format!("e{n}"), "memory.fact.added", "s1", n))
            .await;
    }
    hub.publish(seq("other", "memory.fact.added", "s2", 9))
        .await;
    hub.publish(seq("skip", "context.set", "s1", 6)).await;
    let session = hub.session();
    let mut sub = session
        .subscribe(
            &types("memory.*")
                .with_from_cursor("s1:0:3")
                .with_delivery_mode(DeliveryMode::Replayable),
        )
        .unwrap();
    assert_eq!(sub.mode(), DeliveryMode::Replayable);
    hub.publish(seq("e7", "memory.fact.added", "s1", 7)).await;
    for want in ["e4", "e5", "e7"] {
        assert_eq!(next_id(&mut sub).await, want);
    }
}

#[tokio::test]
async fn best_effort_drops_when_full_and_counts_at_least_once_waits() {
    let hub = Hub::with_config(HubConfig::new().with_capacity(2));
    let session = hub.session();
    let filter = types("tick");
    let mut lossy = session.subscribe(&filter).unwrap();
    let mut durable = session
        .subscribe(&filter.clone().with_delivery_mode(DeliveryMode::AtLeastOnce))
        .unwrap();
    let producer = {
        let hub = hub.clone();
        tokio::spawn(async move {
            for n in 0..10 {
                hub.publish(event(&n.to_string(), "tick")).await;
            }
        })
    };
    // the durable subscriber reads everything; the producer waits on it
    for n in 0..10 {
        assert_eq!(next_id(&mut durable).await, n.to_string());
    }
    producer.await.unwrap();
    let mut got = 0;
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(10), lossy.next()).await {
        got += 1;
    }
    assert_eq!(got + lossy.dropped(), 10);
    assert!(lossy.dropped() >= 8, "dropped {}", lossy.dropped());
    assert_eq!(durable.dropped(), 0);
}

#[tokio::test]
async fn cancel_is_confirmed_and_ends_the_stream() {
    let hub = Hub::new();
    let session = hub.session();
    let mut sub = session.subscribe(&types("*")).unwrap();
    hub.publish(event("in-flight", "a.b")).await;
    let confirmed = sub.cancel().unwrap();
    assert_eq!(confirmed.subscription_id(), "sub_0001");
    assert!(
        sub.cancel().is_none(),
        "a second cancel has nothing to confirm"
    );
    assert_eq!(hub.publish(event("late", "a.b")).await, 0);
    // what was routed before the cancel may still arrive; then the stream ends
    assert_eq!(next_id(&mut sub).await, "in-flight");
    assert!(sub.next().await.is_none());
    assert_eq!(sub.ended(), Some(Ended::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn expiry_ends_the_stream_on_tokios_clock() {
    let hub = Hub::with_config(HubConfig::new().with_ttl(Duration::from_secs(30)));
    let session = hub.session();
    let mut sub = session.subscribe(&types("*")).unwrap();
    assert!(sub.created().expires_at().is_some());
    tokio::time::advance(Duration::from_secs(29)).await;
    assert_eq!(hub.publish(event("before", "a.b")).await, 1);
    assert_eq!(next_id(&mut sub).await, "before");
    // the stream's own timer notices the expiry: nobody needs to publish
    assert!(sub.next().await.is_none());
    assert_eq!(sub.ended(), Some(Ended::Expired));
    assert!(hub.is_empty());
    assert_eq!(hub.publish(event("after", "a.b")).await, 0);
}

#[tokio::test(start_paused = true)]
async fn publishing_after_the_expiry_routes_nowhere() {
    let hub = Hub::with_config(HubConfig::new().with_ttl(Duration::from_secs(5)));
    let session = hub.session();
    let sub = session.subscribe(&types("*")).unwrap();
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(hub.publish(event("x", "a.b")).await, 0);
    assert_eq!(sub.ended(), Some(Ended::Expired));
}

#[tokio::test]
async fn dropping_a_subscriber_or_its_session_cancels() {
    let hub = Hub::new();
    let session = hub.session();
    let filter = types("*");
    let dropped = session.subscribe(&filter).unwrap();
    let kept = session.subscribe(&filter).unwrap();
    assert_eq!(hub.len(), 2);
    drop(dropped);
    assert_eq!(hub.len(), 1);

    let other = hub.session();
    let mut theirs = other.subscribe(&filter).unwrap();
    assert_eq!(theirs.id(), "sub_0001", "ids are unique within a session");
    session.close();
    assert_eq!(kept.ended(), Some(Ended::SessionClosed));
    assert_eq!(hub.len(), 1);
    assert_eq!(hub.publish(event("x", "a.b")).await, 1);
    assert_eq!(next_id(&mut theirs).await, "x");
}
