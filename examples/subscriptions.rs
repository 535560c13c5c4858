//! The subscription lifecycle model (`aep::protocol::subscription`, `aep::lifecycle`): a typed
//! filter, its lifecycle, and the same filter served by any AEP-0003 relay.
//!
//! ```text
//! cargo run --example subscriptions                  # starts an embedded relay
//! cargo run --example subscriptions -- --url http://127.0.0.1:8787 [--token T]
//! ```
//!
//! 1. **Lifecycle, no network.** A consumer asks for a filter
//!    (`subscription.requested`); a producer-side `SubscriptionRegistry` confirms it
//!    (`subscription.created`), refuses a malformed one (`subscription.rejected`, naming
//!    the field), routes events to the live ones, expires one past its TTL
//!    (`subscription.expired`) and confirms a cancel (`subscription.cancelled`).
//! 2. **On the wire.** The filter is lowered to an attr-match filter (AEP-0003 §6) plus
//!    a residual checked locally, so the embedded relay (or any other) serves it: only
//!    the events the typed filter matches reach the consumer.

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aep::protocol::subscription::{
    Field, LifecycleMessage, SubscriptionCancelled, SubscriptionFilter, SubscriptionRegistry,
    SubscriptionRegistryConfig, SubscriptionRequested, TARGET_ATTR,
};
use aep::{Client, EmitOptions, Emitter, HttpSinkOptions, Notice, SubscribeOptions};
use futures::StreamExt;
use serde_json::json;
use tokio::sync::Notify;

mod common;
pub use common::Args;

type BoxError = Box<dyn Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    subscriptions(common::parse_args("subscriptions")?).await
}

/// The researcher's filter: memory additions of any kind (`*` inside a pattern, which
/// attr-match cannot say) addressed to it. The types are a vendor's (`x.acme.*`,
/// AEP-0002 §3): `memory.*` is not a registered AEP category.
fn researcher_filter() -> Result<SubscriptionFilter, BoxError> {
    Ok(SubscriptionFilter::new()
        .with_types(["x.acme.memory.*.added"])?
        .with(Field::Target, "agent:researcher")?)
}

/// The whole example; `tests/it/examples.rs` runs it too.
pub async fn subscriptions(args: Args) -> Result<(), BoxError> {
    lifecycle()?;
    let (url, relay) = match args.url {
        Some(url) => (url, None),
        None => {
            let relay = aep::relay::Relay::builder().start().await?;
            (relay.url().to_owned(), Some(relay))
        }
    };
    println!("\nrelay     {url}");
    let outcome =
        tokio::time::timeout(Duration::from_secs(30), on_the_wire(&url, args.token)).await;
    if let Some(relay) = relay {
        relay.shutdown().await?;
    }
    outcome.map_err(|_| "the relay did not deliver within 30 s")?
}

/// Step 1, the lifecycle between a consumer session and a producer's registry.
fn lifecycle() -> Result<(), BoxError> {
    let start = SystemTime::now();
    let mut registry = SubscriptionRegistry::new(
        SubscriptionRegistryConfig::new().with_ttl(Duration::from_secs(60)),
    );
    let show = |who: &str, message: &LifecycleMessage| println!("{who:<9} {}", message.to_json());

    let request = LifecycleMessage::Requested(SubscriptionRequested::new(&researcher_filter()?));
    show("consumer", &request);
    let created = registry
        .handle_message("consumer-1", &request, start)
        .ok_or("the registry did not answer")?;
    show("producer", &created);
    let LifecycleMessage::Created(created) = created else {
        return Err("the filter was refused".into());
    };

    // A filter needs a primary criterion (types, source, target or topic): fail closed.
    let bad = LifecycleMessage::Requested(SubscriptionRequested::from_payload(
        json!({"session_id": "s1"}),
    ));
    show("consumer", &bad);
    if let Some(answer) = registry.handle_message("consumer-1", &bad, start) {
        show("producer", &answer);
    }

    // Routing: the registry names the subscriptions an event goes to.
    let mut event = aep::protocol::Event::new(
        "01JEV",
        "x.acme.memory.fact.added",
        "2026-07-09T10:00:00.000Z",
        "memory:main",
        "memory",
    );
    event.set_extension(TARGET_ATTR, json!("agent:researcher"))?;
    let routed: Vec<String> = registry
        .route(&event)
        .map(|r| format!("{}/{}", r.session, r.subscription_id))
        .collect();
    println!("producer  routes {} to {routed:?}", event.event_type());

    // The consumer cancels; a second subscription outlives its TTL.
    let cancel = LifecycleMessage::Cancelled(SubscriptionCancelled::new(created.subscription_id()));
    show("consumer", &cancel);
    if let Some(confirmed) = registry.handle_message("consumer-1", &cancel, start) {
        show("producer", &confirmed);
    }
    let short = LifecycleMessage::Requested(SubscriptionRequested::new(
        &SubscriptionFilter::new().with_types("x.acme.context.*")?,
    ));
    show("consumer", &short);
    if let Some(reply) = registry.handle_message("consumer-2", &short, start) {
        show("producer", &reply);
    }
    for (session, expired) in registry.handle_timeout(start + Duration::from_secs(61)) {
        show(&format!("> {session}"), &expired.into());
    }
    println!("producer  {} live subscriptions", registry.len());
    Ok(())
}

/// Step 2, the same filter against a relay: attr-match on the wire, the residual here.
async fn on_the_wire(url: &str, token: Option<String>) -> Result<(), BoxError> {
    let filter = researcher_filter()?;
    let lowered = filter.lower();
    println!("wire      {}", lowered.wire().to_json());
    println!(
        "residual  checked locally: {}",
        !lowered.residual().is_trivial()
    );

    let connected = Arc::new(Notify::new());
    let options = SubscribeOptions::new()
        .subscription_filter(&filter)?
        .on_notice({
            let connected = connected.clone();
            move |n| {
                if matches!(n, Notice::Connected { .. }) {
                    connected.notify_one();
                }
            }
        });
    let relay = match token {
        Some(t) => Client::new(url).token(t),
        None => Client::new(url),
    };
    let mut feed = relay.subscribe(options);
    connected.notified().await;

    let emitter = Emitter::new(
        "memory",
        "localhost",
        relay.http_sink(HttpSinkOptions::new())?,
    );
    let session = emitter.session("memory-main");
    let to = |target: &str| EmitOptions::new().extension(TARGET_ATTR, target);
    let script = [
        ("x.acme.memory.fact.added", "agent:researcher", true),
        ("x.acme.memory.fact.removed", "agent:researcher", false), // the residual drops it
        ("x.acme.memory.fact.added", "agent:writer", false),       // the relay drops it
        ("x.acme.context.window.compacted", "agent:researcher", false),
        ("x.acme.memory.note.added", "agent:researcher", true),
    ];
    for (ty, target, _) in script {
        session.emit_with(ty, json!({}), to(target))?;
    }
    emitter.close().await;

    let expected = script.iter().filter(|(_, _, wanted)| *wanted).count();
    for _ in 0..expected {
        let event = feed.next().await.ok_or("the subscription ended early")?;
        let target = event
            .extension(TARGET_ATTR)
            .map(|v| v.to_string())
            .unwrap_or_default();
        println!(
            "consumer  #{} {} for {target}",
            event.seq().unwrap_or_default(),
            event.event_type()
        );
        if !filter.matches(&event) {
            return Err(format!("{} does not match the filter", event.event_type()).into());
        }
    }
    feed.close();
    Ok(())
}
