//! The live feed of a relay of the cluster: what the other relays ingest, for this
//! relay's live readers (AEP-0003 §5: a reader on relay B receives what relay A took).
//!
//! Two sources, merged:
//!
//! - the stored events, in stream order, from an ordered consumer on every session's
//!   subject that starts after a stream sequence (the relay's stamp when it started, so
//!   that what its replays serve and what its feed delivers meet without a gap or an
//!   overlap);
//! - the duplicates the other relays announce ([`Cluster::announce_duplicates`]), which
//!   JetStream never delivers to a consumer but a relay forwards all the same.
//!
//! A relay fans its own ingest out at once, so the feed skips what this relay published
//! (its [`RELAY_HEADER`]). Each item carries its stream sequence: the stored copy's for a
//! duplicate.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;

use async_nats::jetstream::consumer;

use super::cluster::{Cluster, ClusterError, RELAY_HEADER, SEQUENCE_HEADER};

/// One event another relay of the cluster ingested.
#[derive(Debug, Clone)]
pub(crate) struct Live {
    /// Its place in the stream (for a duplicate, the stored copy's).
    pub(crate) sequence: u64,
    /// The event as stored.
    pub(crate) payload: Bytes,
    /// An at-least-once redelivery of an event stored before.
    pub(crate) duplicate: bool,
}

/// What the other relays ingest from stream sequence `after + 1` on, as it comes.
pub(crate) async fn feed(
    cluster: &Cluster,
    after: u64,
) -> Result<BoxStream<'static, Result<Live, ClusterError>>, ClusterError> {
    let own = cluster.relay().to_owned();
    let api = |what: &'static str| {
        move |e: &dyn std::fmt::Display| ClusterError::Api {
            what,
            reason: e.to_string(),
        }
    };
    // Duplicates first: subscribed before the stored feed starts, none is missed while
    // the consumer is being created.
    let duplicates = cluster
        .client()
        .subscribe(cluster.name().duplicates_wildcard())
        .await
        .map_err(|e| api("subscribing to duplicates")(&e))?;
    let consumer = cluster
        .stream()
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: cluster.name().sessions_wildcard(),
            deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                start_sequence: after.saturating_add(1),
            },
            ..Default::default()
        })
        .await
        .map_err(|e| api("creating the live feed")(&e))?;
    let stored = consumer
        .messages()
        .await
        .map_err(|e| api("reading the live feed")(&e))?;

    let mine = {
        let own = own.clone();
        move |headers: Option<&async_nats::HeaderMap>| {
            headers
                .and_then(|h| h.get(RELAY_HEADER))
                .is_some_and(|relay| relay.as_str() == own)
        }
    };
    let mine_too = mine.clone();
    let stored = stored.filter_map(move |message| {
        let item = match message {
            Err(e) => Some(Err(ClusterError::Read {
                reason: e.to_string(),
            })),
            Ok(message) if mine(message.headers.as_ref()) => None,
            Ok(message) => Some(match message.info() {
                Ok(info) => Ok(Live {
                    sequence: info.stream_sequence,
                    payload: message.payload.clone(),
                    duplicate: false,
                }),
                Err(e) => Err(ClusterError::Read {
                    reason: e.to_string(),
                }),
            }),
        };
        futures::future::ready(item)
    });
    let duplicates = duplicates.filter_map(move |message| {
        let headers = message.headers.as_ref();
        let item = (!mine_too(headers)).then(|| Live {
            sequence: headers
                .and_then(|h| h.get(SEQUENCE_HEADER))
                .and_then(|s| s.as_str().parse().ok())
                .unwrap_or(0),
            payload: message.payload,
            duplicate: true,
        });
        futures::future::ready(item.map(Ok))
    });
    Ok(futures::stream::select(stored, duplicates).boxed())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;
    use crate::nats::cluster::{NatsOptions, Outgoing};
    use crate::nats::names::{message_id, StreamName};
    use aep_test_support::nats::NatsServer;

    fn options(url: &str) -> NatsOptions {
        NatsOptions {
            url: url.to_owned(),
            creds: None,
            tls_ca: None,
            stream: StreamName::parse("FEED").unwrap(),
            buffer: 100,
            dedupe_horizon: Duration::from_secs(120),
            timeout: Duration::from_secs(5),
        }
    }

    fn event(cluster: &Cluster, id: &str) -> Outgoing {
        Outgoing {
            subject: cluster.name().session_subject("s"),
            message_id: message_id("aep://t", id),
            payload: Bytes::from(id.to_owned()),
        }
    }

    async fn next(feed: &mut BoxStream<'static, Result<Live, ClusterError>>) -> Live {
        tokio::time::timeout(Duration::from_secs(10), feed.next())
            .await
            .expect("an item within 10 s")
            .unwrap()
            .unwrap()
    }

    #[tokio::test]
    async fn a_relay_feeds_on_what_the_others_store_and_redeliver_but_not_on_its_own() {
        let Some(server) = NatsServer::start_or_skip() else {
            return;
        };
        let a = Cluster::connect(&options(&server.url())).await.unwrap();
        let b = Cluster::connect(&options(&server.url())).await.unwrap();
        assert_ne!(a.relay(), b.relay());
        // stored before B's feed starts: not fed (B's replay serves it)
        a.publish(&[event(&a, "e0")]).await.unwrap();
        let after = b.last_sequence().await.unwrap();
        let mut b_feed = feed(&b, after).await.unwrap();
        let mut a_feed = feed(&a, after).await.unwrap();

        let batch = [event(&a, "e1"), event(&a, "e2")];
        a.publish(&batch).await.unwrap();
        let (e1, e2) = (next(&mut b_feed).await, next(&mut b_feed).await);
        assert_eq!(
            (e1.sequence, &e1.payload[..], e1.duplicate),
            (2, &b"e1"[..], false)
        );
        assert_eq!((e2.sequence, &e2.payload[..]), (3, &b"e2"[..]));

        // A retries e1: stored once, and the redelivery still reaches B
        let again = a.publish(&batch[..1]).await.unwrap();
        assert!(again[0].duplicate);
        a.announce_duplicates(&[(&batch[0], again[0].sequence)])
            .await
            .unwrap();
        let dup = next(&mut b_feed).await;
        assert_eq!(
            (dup.sequence, &dup.payload[..], dup.duplicate),
            (2, &b"e1"[..], true)
        );

        // A never feeds on its own; B's ingest reaches it
        b.publish(&[event(&b, "e3")]).await.unwrap();
        let from_b = next(&mut a_feed).await;
        assert_eq!((from_b.sequence, &from_b.payload[..]), (4, &b"e3"[..]));
        assert!(
            tokio::time::timeout(Duration::from_millis(300), b_feed.next())
                .await
                .is_err(),
            "B fed on its own e3"
        );
    }
}
