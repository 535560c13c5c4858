//! The live feed of a relay of the cluster: every event any relay of the fleet admits,
//! this relay's own included, for live fan-out (AEP-0003 §5: a reader on relay B
//! receives what relay A took), as the storage contract's `Feed` asks (`storage`).
//!
//! Two sources, merged in one task:
//!
//! - the stored events, in stream order, from an ordered consumer on every session's
//!   subject that starts after a stream sequence (the store's stamp when it opened, so
//!   that what its replays serve and what its feed delivers meet without a gap or an
//!   overlap). Whatever ends or breaks the consumer (a reconnect, a server restart), the
//!   task creates it again from the sequence after the last one it delivered, and
//!   skips anything at or before it: no gap, no repeat;
//! - the redeliveries the relays announce ([`Cluster::announce_duplicates`]), which
//!   JetStream never delivers to a consumer but fan-out forwards all the same. Each is
//!   stamped with the last sequence fed, so it never moves the bound a new
//!   subscription's replay takes from the feed past what the consumer has delivered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer;
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};

use super::cluster::Cluster;
use crate::encoded::Encoded;
use crate::storage::{Admitted, Feed};

/// Stored events read ahead of fan-out per run.
const RUN: usize = 256;

/// How long the feed waits before creating its consumer again after a failure.
const RETRY: Duration = Duration::from_millis(250);

/// How often the feed looks at the connection, to resume as soon as it is back.
const WATCH: Duration = Duration::from_millis(100);

/// The feed of `cluster` from stream sequence `after + 1` on; `stamp` is raised to each
/// sequence delivered. It runs until its receiver is dropped.
pub(crate) fn feed(cluster: Cluster, after: u64, stamp: Arc<AtomicU64>) -> Feed {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(run(cluster, after, stamp, tx));
    Box::pin(rx)
}

/// An event as the stream holds it (its JSON), framed again; `None` for a message that
/// is no event (nothing a relay of the fleet writes).
pub(crate) fn decode(payload: &[u8]) -> Option<Encoded> {
    match crate::line::parse_line(payload, false) {
        Ok(incoming) => Some(incoming.encoded),
        Err(_) => {
            tracing::warn!("a message of the NATS stream is not an AEP event: skipped");
            None
        }
    }
}

async fn run(cluster: Cluster, after: u64, stamp: Arc<AtomicU64>, mut tx: mpsc::Sender<Admitted>) {
    let mut delivered = after;
    // subscribed before the consumer starts: no redelivery is missed meanwhile
    let mut duplicates = loop {
        match cluster
            .client()
            .subscribe(cluster.name().duplicates_wildcard())
            .await
        {
            Ok(subscription) => break subscription,
            Err(e) => {
                tracing::warn!(error = %e, "subscribing to the cluster's redeliveries; retrying");
                tokio::time::sleep(RETRY).await;
            }
        }
    };
    loop {
        let created = cluster
            .stream()
            .create_consumer(consumer::pull::OrderedConfig {
                filter_subject: cluster.name().sessions_wildcard(),
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: delivered.saturating_add(1),
                },
                ..Default::default()
            })
            .await;
        let messages = match created {
            Ok(consumer) => consumer.messages().await,
            Err(e) => {
                tracing::warn!(error = %e, from = delivered + 1, "creating the live feed's consumer; retrying");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let mut messages = match messages {
            Ok(messages) => messages.ready_chunks(RUN),
            Err(e) => {
                tracing::warn!(error = %e, "reading the live feed; retrying");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        // A server restart loses the consumer's pull without ending its stream until
        // heartbeats are missed: once the connection is back, start over at once.
        let mut watch = tokio::time::interval(WATCH);
        let mut was_down = false;
        loop {
            tokio::select! {
                _ = watch.tick() => {
                    if tx.is_closed() {
                        // the relay has stopped: its connection goes with this task
                        return;
                    }
                    if !cluster.is_connected() {
                        was_down = true;
                    } else if was_down {
                        tracing::info!(after = delivered, "NATS is back: the live feed resumes");
                        break;
                    }
                }
                run = messages.next() => {
                    let Some(run) = run else { break };
                    let mut events = Vec::with_capacity(run.len());
                    let mut last = delivered;
                    let mut broken = false;
                    for message in run {
                        let message = match message {
                            Ok(message) => message,
                            Err(e) => {
                                tracing::warn!(error = %e, after = last, "the live feed broke; resuming");
                                broken = true;
                                break;
                            }
                        };
                        let Ok(info) = message.info() else { continue };
                        let sequence = info.stream_sequence;
                        // a consumer created again may repeat what was delivered
                        if sequence <= last {
                            continue;
                        }
                        last = sequence;
                        events.extend(decode(&message.payload));
                    }
                    if last > delivered {
                        delivered = last;
                        stamp.fetch_max(last, Ordering::AcqRel);
                        if !events.is_empty()
                            && tx.send(Admitted { events, stamp: last }).await.is_err()
                        {
                            return;
                        }
                    }
                    if broken {
                        break;
                    }
                }
                announced = duplicates.next() => {
                    let Some(message) = announced else {
                        // the client is gone: nothing more will come
                        tracing::warn!("the cluster's redeliveries are no longer received");
                        return;
                    };
                    if let Some(event) = decode(&message.payload) {
                        let again = Admitted { events: vec![event], stamp: delivered };
                        if tx.send(again).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use bytes::Bytes;

    use super::*;
    use crate::nats::cluster::{NatsOptions, Outgoing};
    use crate::nats::names::message_id;
    use aep_test_support::nats::NatsServer;

    fn options(url: &str) -> NatsOptions {
        NatsOptions::new(&crate::NatsCluster::new(url).stream("FEED"), 100).unwrap()
    }

    fn event(cluster: &Cluster, id: &str, seq: u64) -> Outgoing {
        let json = format!(
            r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:15:04.221Z","source":"aep://t/agent/a","agent":"a","session":"s","seq":{seq},"data":{{}}}}"#
        );
        Outgoing {
            subject: cluster.name().session_subject("s"),
            message_id: message_id("aep://t/agent/a", id),
            payload: Bytes::from(json),
        }
    }

    async fn next(feed: &mut Feed) -> Admitted {
        tokio::time::timeout(Duration::from_secs(10), feed.next())
            .await
            .expect("an item within 10 s")
            .unwrap()
    }

    fn ids(admitted: &Admitted) -> Vec<String> {
        admitted
            .events
            .iter()
            .map(|e| {
                let json: serde_json::Value = serde_json::from_slice(&e.json()).unwrap();
                json["id"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    /// Every relay's feed carries every admission, its own included, once, from after
    /// the sequence it was opened at; a redelivery is forwarded at the sequence already
    /// fed, never past it.
    #[tokio::test]
    async fn every_relay_feeds_on_every_admission_its_own_included() {
        let Some(server) = NatsServer::start_or_skip() else {
            return;
        };
        let a = Cluster::connect(&options(&server.url())).await.unwrap();
        let b = Cluster::connect(&options(&server.url())).await.unwrap();
        // stored before the feeds start: not fed (replay serves it)
        a.publish(&[event(&a, "e0", 0)]).await.unwrap();
        let after = b.last_sequence().await.unwrap();
        let stamp = Arc::new(AtomicU64::new(after));
        let mut a_feed = feed(a.clone(), after, stamp.clone());
        let mut b_feed = feed(b.clone(), after, Arc::new(AtomicU64::new(after)));
        tokio::time::sleep(Duration::from_millis(200)).await;

        let batch = [event(&a, "e1", 1), event(&a, "e2", 2)];
        a.publish(&batch).await.unwrap();
        for fed in [&mut a_feed, &mut b_feed] {
            let mut got = Vec::new();
            let mut last = 0;
            while got.len() < 2 {
                let admitted = next(fed).await;
                last = admitted.stamp;
                got.extend(ids(&admitted));
            }
            assert_eq!(got, ["e1", "e2"]);
            assert_eq!(last, 3);
        }
        assert_eq!(stamp.load(Ordering::Acquire), 3);

        // A's retry of e1: stored once, its announcement fed to both at stamp 3
        let again = a.publish(&batch[..1]).await.unwrap();
        assert!(again[0].duplicate);
        a.announce_duplicates(&[(&batch[0], again[0].sequence)])
            .await
            .unwrap();
        for fed in [&mut a_feed, &mut b_feed] {
            let dup = next(fed).await;
            assert_eq!((ids(&dup), dup.stamp), (vec!["e1".to_owned()], 3));
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(300), b_feed.next())
                .await
                .is_err(),
            "fed twice"
        );
    }
}
