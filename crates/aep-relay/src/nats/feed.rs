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
        loop {
            tokio::select! {
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
