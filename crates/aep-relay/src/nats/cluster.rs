//! The NATS side of a relay cluster: the connection, the stream every relay shares, and
//! the two operations the storage backend builds on, publishing a batch of events
//! (stored once each, acknowledged) and reading stored events back in stream order.
//!
//! What the stream is, so that every relay of a fleet agrees on it:
//!
//! - one file-backed stream named by `--nats-stream` (default `AEP`), holding the
//!   subjects `{stream}.s.>`, one subject per session ([`names`](super::names));
//! - `max_messages_per_subject` is the per-session replay depth (`--buffer`): JetStream
//!   keeps the newest events of each session, dropping its oldest, as AEP-0003 §5 asks;
//! - `duplicate_window` is the dedupe horizon: a message whose `Nats-Msg-Id` (the digest
//!   of `(source, id)`) was stored within it is not stored again (AEP-0001 §7.4);
//! - a relay whose buffer or horizon disagrees with an existing stream's is refused at
//!   start, saying which value the stream holds: the first relay of a fleet decides, and
//!   the stream keeps deciding until an operator changes it (ADR-34's advice: check the
//!   configuration the server returns, never assume it).
//!
//! The server must be 2.10 or newer (2.9 ignores a consumer's `filter_subjects`
//! silently), checked from the version it announces.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream::{self, consumer, message::PublishMessage, stream};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;

use super::names::StreamName;
use crate::config::cluster::{NatsUrl, UrlCredentials};
use crate::config::NatsCluster;

/// The oldest server version the cluster runs on.
const MIN_SERVER: (u64, u64) = (2, 10);

/// How a relay reaches its cluster's NATS: the cluster as configured, its stream name
/// checked, and the relay's per-session depth the stream must agree with.
#[derive(Debug, Clone)]
pub(crate) struct NatsOptions {
    /// The URL(s), credentials, roots, dedupe horizon and timeout, as given
    /// ([`NatsCluster`]'s `Debug` never shows a password of the URL).
    pub(crate) cluster: NatsCluster,
    /// The stream, and the first token of every subject.
    pub(crate) stream: StreamName,
    /// Events kept per session (the relay's `--buffer`).
    pub(crate) buffer: usize,
}

impl NatsOptions {
    /// What a relay with per-session depth `buffer` connects with to `cluster`.
    pub(crate) fn new(cluster: &NatsCluster, buffer: usize) -> std::io::Result<NatsOptions> {
        Ok(NatsOptions {
            cluster: cluster.clone(),
            stream: StreamName::parse(cluster.stream_name())
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?,
            buffer,
        })
    }
}

/// Runs `connect` (whatever connects to NATS) to its end on the current tokio runtime,
/// from a thread of its own, so that a caller on one of the runtime's threads may wait
/// for it: a relay is opened from synchronous code (`Hub::new`), possibly inside the
/// runtime. Its error is said as the `io::Error` a relay's start fails with.
pub(crate) fn block_on_runtime<T: Send>(
    connect: impl std::future::Future<Output = Result<T, ClusterError>> + Send,
) -> std::io::Result<T> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
        std::io::Error::other("a relay on NATS must be started inside a tokio runtime")
    })?;
    let connected = std::thread::scope(|scope| scope.spawn(|| runtime.block_on(connect)).join());
    match connected {
        Ok(Ok(connected)) => Ok(connected),
        Ok(Err(e)) => Err(std::io::Error::other(e.to_string())),
        Err(_) => Err(std::io::Error::other("connecting to NATS panicked")),
    }
}

/// What went wrong between a relay and its NATS, said so an operator can act on it.
#[derive(Debug)]
pub(crate) enum ClusterError {
    /// The server could not be reached or refused the connection.
    Connect { url: NatsUrl, reason: String },
    /// A credentials file that could not be read.
    Creds { path: PathBuf, reason: String },
    /// The server is older than the cluster needs.
    TooOld { version: String },
    /// The server runs without JetStream.
    NoJetStream,
    /// The stream exists with a value this relay was not started with.
    Disagrees {
        stream: String,
        what: &'static str,
        stream_has: String,
        relay_has: String,
        flag: &'static str,
    },
    /// A JetStream API request failed.
    Api { what: &'static str, reason: String },
    /// The connection is down right now (the client reconnects by itself).
    Unreachable,
    /// An event larger than the server takes.
    TooLarge { bytes: usize, max: usize },
    /// A publish was not acknowledged.
    Publish { reason: String },
    /// A stored event could not be read back.
    Read { reason: String },
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Connect { url, reason } => write!(
                f,
                "cannot reach NATS at {url}: {reason} (is nats-server running with -js, and are --nats-creds / --nats-tls-ca right?)"
            ),
            ClusterError::Creds { path, reason } => write!(
                f,
                "cannot read the NATS credentials file {}: {reason}",
                path.display()
            ),
            ClusterError::TooOld { version } => write!(
                f,
                "nats-server {version} is older than {}.{}, which the relay cluster needs (2.9 ignores a consumer's filter_subjects); upgrade the server",
                MIN_SERVER.0, MIN_SERVER.1
            ),
            ClusterError::NoJetStream => f.write_str(
                "the NATS server runs without JetStream: start it with -js (and -sd DIR for its store)",
            ),
            ClusterError::Disagrees {
                stream,
                what,
                stream_has,
                relay_has,
                flag,
            } => write!(
                f,
                "the NATS stream {stream} keeps {what} {stream_has}, this relay was started with {relay_has}: start it with {flag} {stream_has} as the other relays of the fleet, or use another --nats-stream"
            ),
            ClusterError::Api { what, reason } => write!(f, "NATS JetStream {what}: {reason}"),
            ClusterError::Unreachable => f.write_str(
                "NATS is unreachable right now; the relay reconnects by itself, send again shortly",
            ),
            ClusterError::TooLarge { bytes, max } => write!(
                f,
                "an event of {bytes} bytes is larger than the NATS server takes ({max} bytes, its max_payload)"
            ),
            ClusterError::Publish { reason } => {
                write!(f, "NATS did not acknowledge the events: {reason}")
            }
            ClusterError::Read { reason } => write!(f, "reading from NATS JetStream: {reason}"),
        }
    }
}

impl std::error::Error for ClusterError {}

/// One event to publish: its session's subject, its `Nats-Msg-Id`, its bytes.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    /// Shared by the events of a session in a batch (a clone is a reference count).
    pub(crate) subject: async_nats::Subject,
    pub(crate) message_id: String,
    pub(crate) payload: Bytes,
}

impl Outgoing {
    /// What the server counts against its `max_payload`: the payload and, roughly, the
    /// headers (the message id, the relay's name, their framing).
    pub(crate) fn size(&self) -> usize {
        self.payload.len() + self.message_id.len() + 96
    }
}

/// A publish that failed: the connection went down meanwhile, or no acknowledgement
/// came in time.
fn publish_error(e: jetstream::context::PublishError) -> ClusterError {
    ClusterError::Publish {
        reason: e.to_string(),
    }
}

/// Publishes of one batch sent ahead of their acknowledgements at most: half the
/// context's `max_ack_inflight`, so that the next batch can be sent while one is being
/// acknowledged.
const SEND_AHEAD: usize = 4096;

/// The acknowledgement of one publish.
async fn acknowledged(
    ack: jetstream::context::PublishAckFuture,
) -> Result<Published, ClusterError> {
    let ack = ack.await.map_err(publish_error)?;
    Ok(Published {
        sequence: ack.sequence,
        duplicate: ack.duplicate,
    })
}

/// What JetStream did with one published event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Published {
    /// Its place in the stream; for a duplicate, the place of the copy stored first.
    pub(crate) sequence: u64,
    /// Within the dedupe horizon of a stored copy: not stored again.
    pub(crate) duplicate: bool,
}

/// One stored event read back.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// Its stream sequence (the tests check the order).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) sequence: u64,
    /// The subject it was stored on (its session's, if a relay stored it).
    pub(crate) subject: async_nats::Subject,
    pub(crate) payload: Bytes,
}

/// The header naming the relay that published a message (fresh at each start), so an
/// operator can tell in the server's tools which relay took an event.
pub(crate) const RELAY_HEADER: &str = "Aep-Relay";

/// The header of a duplicate's announcement: the stream sequence of the stored copy.
pub(crate) const SEQUENCE_HEADER: &str = "Aep-Seq";

/// A relay's connection to its cluster's NATS and stream.
#[derive(Debug, Clone)]
pub(crate) struct Cluster {
    client: async_nats::Client,
    js: jetstream::Context,
    stream: stream::Stream,
    name: StreamName,
    timeout: Duration,
    /// This relay's name within the cluster, in every message it publishes.
    relay: String,
}

impl Cluster {
    /// Connects, checks the server (2.10 or newer, JetStream on), and creates the stream
    /// or checks that the existing one agrees with `options` (module documentation).
    pub(crate) async fn connect(options: &NatsOptions) -> Result<Cluster, ClusterError> {
        let cluster = &options.cluster;
        // the credentials of the URL go to the client apart, never in a URL it logs
        let (urls, credentials) =
            cluster
                .split_credentials()
                .map_err(|reason| ClusterError::Connect {
                    url: cluster.url.clone(),
                    reason,
                })?;
        let mut connect = async_nats::ConnectOptions::new()
            .name(format!("aep-relay {}", env!("CARGO_PKG_VERSION")))
            .connection_timeout(cluster.timeout)
            .request_timeout(Some(cluster.timeout))
            // a relay never gives its cluster up: it answers 503 meanwhile
            .max_reconnects(None);
        if let Some(path) = &cluster.creds {
            connect = connect
                .credentials_file(path)
                .await
                .map_err(|e| ClusterError::Creds {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
        }
        if let Some(ca) = &cluster.tls_roots {
            connect = connect.add_root_certificates(ca.clone()).require_tls(true);
        }
        connect = match credentials {
            Some(UrlCredentials::User { user, password }) => {
                connect.user_and_password(user, password)
            }
            Some(UrlCredentials::Token(token)) => connect.token(token),
            None => connect,
        };
        let client = connect
            .connect(urls.as_str())
            .await
            .map_err(|e| ClusterError::Connect {
                url: cluster.url.clone(),
                reason: e.to_string(),
            })?;
        let info = client.server_info();
        if !server_is_new_enough(&info.version) {
            return Err(ClusterError::TooOld {
                version: info.version,
            });
        }
        let js = jetstream::ContextBuilder::new()
            .timeout(cluster.timeout)
            .max_ack_inflight(8192)
            .backpressure_on_inflight(true)
            .build(client.clone());
        let wanted = stream_config(options);
        let mut stream = js.get_or_create_stream(wanted.clone()).await.map_err(|e| {
            if e.to_string().contains("not enabled") {
                ClusterError::NoJetStream
            } else {
                ClusterError::Api {
                    what: "creating the stream",
                    reason: e.to_string(),
                }
            }
        })?;
        let held = stream
            .info()
            .await
            .map_err(|e| ClusterError::Api {
                what: "reading the stream's configuration",
                reason: e.to_string(),
            })?
            .config
            .clone();
        agrees(&held, &wanted)?;
        Ok(Cluster {
            client,
            js,
            stream,
            name: options.stream.clone(),
            timeout: cluster.timeout,
            relay: ulid::Ulid::new().to_string(),
        })
    }

    /// How long a request or a publish acknowledgement may take.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The client, for the live feed.
    pub(crate) fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// The stream, for the live feed.
    pub(crate) fn stream(&self) -> &stream::Stream {
        &self.stream
    }

    /// The stream's name (the subjects' first token).
    pub(crate) fn name(&self) -> &StreamName {
        &self.name
    }

    /// The largest message the server takes.
    pub(crate) fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }

    /// Whether the connection is up now.
    pub(crate) fn is_connected(&self) -> bool {
        self.client.connection_state() == State::Connected
    }

    #[cfg(test)]
    /// Publishes `batch` in order and waits for every acknowledgement: `Ok` only when
    /// JetStream has stored each event (or holds a copy), so that a relay answers `202`
    /// for what is stored and nothing else (AEP-0003 §3.2). Fails at once, publishing
    /// nothing, while the connection is down or when an event is larger than the server
    /// takes; a publish that goes unacknowledged fails the batch (some of it may be
    /// stored: a retry with the same ids stores the rest once).
    pub(crate) async fn publish(&self, batch: &[Outgoing]) -> Result<Vec<Published>, ClusterError> {
        self.send(batch).await?.await
    }

    /// The first half of a publish (the tests' `publish` awaits both halves): sends
    /// `batch` in order (so batches sent one after another are stored in that order) and
    /// returns the wait for its acknowledgements, so that the next batch can be sent
    /// meanwhile.
    pub(crate) async fn send(
        &self,
        batch: &[Outgoing],
    ) -> Result<
        impl std::future::Future<Output = Result<Vec<Published>, ClusterError>> + use<>,
        ClusterError,
    > {
        if !self.is_connected() {
            return Err(ClusterError::Unreachable);
        }
        let max = self.max_payload();
        if let Some(big) = batch.iter().find(|m| m.size() > max) {
            return Err(ClusterError::TooLarge {
                bytes: big.size(),
                max,
            });
        }
        // Each unacknowledged publish holds one of the context's permits
        // (`max_ack_inflight`) until its acknowledgement is awaited: a batch larger than
        // the permits would wait for itself. So at most SEND_AHEAD of a batch are
        // awaited later; past that the oldest is awaited before the next goes.
        let mut published = Vec::with_capacity(batch.len());
        let mut acks = std::collections::VecDeque::with_capacity(batch.len().min(SEND_AHEAD));
        for m in batch {
            if acks.len() >= SEND_AHEAD {
                if let Some(ack) = acks.pop_front() {
                    published.push(acknowledged(ack).await?);
                }
            }
            let message = PublishMessage::build()
                .payload(m.payload.clone())
                .message_id(m.message_id.as_str())
                .header(RELAY_HEADER, self.relay.as_str());
            let ack = self
                .js
                .send_publish(m.subject.clone(), message)
                .await
                .map_err(publish_error)?;
            acks.push_back(ack);
        }
        Ok(async move {
            for ack in acks {
                published.push(acknowledged(ack).await?);
            }
            Ok(published)
        })
    }

    /// Tells the other relays' live readers of events that JetStream answered as
    /// duplicates: a JetStream consumer never delivers those, while AEP-0003 §5 has a
    /// redelivery traverse every fan-out hop (a retried command must reach its target
    /// again). A plain NATS publish on `{stream}.d.{token}`, at most once, as the live
    /// fan-out of a single relay is; `sequences` are the stored copies'.
    pub(crate) async fn announce_duplicates(
        &self,
        duplicates: &[(&Outgoing, u64)],
    ) -> Result<(), ClusterError> {
        for (m, sequence) in duplicates {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(RELAY_HEADER, self.relay.as_str());
            headers.insert(SEQUENCE_HEADER, sequence.to_string().as_str());
            let subject = self.name.duplicate_subject(&m.subject);
            self.client
                .publish_with_headers(subject, headers, m.payload.clone())
                .await
                .map_err(|e| ClusterError::Publish {
                    reason: e.to_string(),
                })?;
        }
        Ok(())
    }

    /// The stream's last sequence now (0 for an empty stream).
    pub(crate) async fn last_sequence(&self) -> Result<u64, ClusterError> {
        let mut stream = self.stream.clone();
        let info = stream.info().await.map_err(|e| ClusterError::Api {
            what: "reading the stream's state",
            reason: e.to_string(),
        })?;
        Ok(info.state.last_sequence)
    }

    /// The stored events of the subjects `filter` matches (a session's subject, or
    /// every session's), from stream sequence `from` through `upto`, in stream order, as
    /// the reader takes them; what was dropped (a session past its depth) is skipped.
    /// Read by an ordered consumer: ephemeral, unacknowledged, recreated by the client
    /// across a gap or a reconnect.
    pub(crate) async fn read(
        &self,
        filter: &str,
        from: u64,
        upto: u64,
    ) -> Result<BoxStream<'static, Result<Stored, ClusterError>>, ClusterError> {
        let from = from.max(1);
        if upto < from {
            return Ok(futures::stream::empty().boxed());
        }
        // The last event there is to read: the stream tells the last of a subject, and an
        // ordered consumer only says it has caught up through `pending`.
        let last = match self.last_of(filter).await? {
            Some(last) => last.min(upto),
            None => return Ok(futures::stream::empty().boxed()),
        };
        if last < from {
            return Ok(futures::stream::empty().boxed());
        }
        let consumer = self
            .stream
            .create_consumer(consumer::pull::OrderedConfig {
                filter_subject: filter.to_owned(),
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: from,
                },
                ..Default::default()
            })
            .await
            .map_err(|e| ClusterError::Api {
                what: "creating a reader",
                reason: e.to_string(),
            })?;
        let messages = consumer.messages().await.map_err(|e| ClusterError::Api {
            what: "reading",
            reason: e.to_string(),
        })?;
        let idle = self.timeout;
        let read = futures::stream::unfold(Some(messages), move |state| async move {
            let mut messages = state?;
            let next = match tokio::time::timeout(idle, messages.next()).await {
                Ok(Some(Ok(message))) => message,
                Ok(Some(Err(e))) => {
                    let error = ClusterError::Read {
                        reason: e.to_string(),
                    };
                    return Some((Err(error), None));
                }
                Ok(None) => return None,
                Err(_) => {
                    let error = ClusterError::Read {
                        reason: format!("nothing arrived for {} ms", idle.as_millis()),
                    };
                    return Some((Err(error), None));
                }
            };
            let (sequence, pending) = match next.info() {
                Ok(info) => (info.stream_sequence, info.pending),
                Err(e) => {
                    let error = ClusterError::Read {
                        reason: e.to_string(),
                    };
                    return Some((Err(error), None));
                }
            };
            if sequence > upto {
                return None;
            }
            let stored = Stored {
                sequence,
                subject: next.subject.clone(),
                payload: next.payload.clone(),
            };
            // the last one asked for, or the last one there is
            let more = sequence < last && pending > 0;
            Some((Ok(stored), more.then_some(messages)))
        });
        Ok(read.boxed())
    }

    /// The sequence of the last stored event whose subject `filter` matches, if any.
    async fn last_of(&self, filter: &str) -> Result<Option<u64>, ClusterError> {
        if !filter.contains(['*', '>']) {
            return match self.stream.get_last_raw_message_by_subject(filter).await {
                Ok(message) => Ok(Some(message.sequence)),
                Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
                Err(e) => Err(ClusterError::Api {
                    what: "reading a session's last event",
                    reason: e.to_string(),
                }),
            };
        }
        let last = self.last_sequence().await?;
        Ok((last > 0).then_some(last))
    }

    #[cfg(test)]
    /// Removes a session's stored events (its eviction).
    pub(crate) async fn purge(&self, subject: &str) -> Result<u64, ClusterError> {
        self.stream
            .purge()
            .filter(subject)
            .await
            .map(|r| r.purged)
            .map_err(|e| ClusterError::Api {
                what: "purging a session",
                reason: e.to_string(),
            })
    }
}

/// The stream `options` ask for.
fn stream_config(options: &NatsOptions) -> stream::Config {
    stream::Config {
        name: options.stream.as_str().to_owned(),
        subjects: vec![options.stream.sessions_wildcard()],
        max_messages_per_subject: i64::try_from(options.buffer.max(1)).unwrap_or(i64::MAX),
        duplicate_window: options.cluster.dedupe_horizon,
        discard: stream::DiscardPolicy::Old,
        storage: stream::StorageType::File,
        allow_direct: true,
        ..Default::default()
    }
}

/// Refuses a stream whose depth or dedupe horizon is not what this relay was started
/// with (module documentation).
fn agrees(held: &stream::Config, wanted: &stream::Config) -> Result<(), ClusterError> {
    let disagrees = |what, stream_has: String, relay_has: String, flag| ClusterError::Disagrees {
        stream: held.name.clone(),
        what,
        stream_has,
        relay_has,
        flag,
    };
    if held.max_messages_per_subject != wanted.max_messages_per_subject {
        return Err(disagrees(
            "events per session",
            held.max_messages_per_subject.to_string(),
            wanted.max_messages_per_subject.to_string(),
            "--buffer",
        ));
    }
    if held.duplicate_window != wanted.duplicate_window {
        return Err(disagrees(
            "a dedupe horizon (seconds) of",
            held.duplicate_window.as_secs().to_string(),
            wanted.duplicate_window.as_secs().to_string(),
            "--nats-dedupe-horizon",
        ));
    }
    if held.subjects != wanted.subjects {
        return Err(disagrees(
            "the subjects",
            held.subjects.join(","),
            wanted.subjects.join(","),
            "--nats-stream",
        ));
    }
    Ok(())
}

/// Whether `version` (`2.15.1`, `v2.10.0-beta`) is [`MIN_SERVER`] or newer.
fn server_is_new_enough(version: &str) -> bool {
    let mut parts = version.trim_start_matches('v').split(['.', '-']);
    let mut number = || parts.next().and_then(|p| p.parse::<u64>().ok());
    match (number(), number()) {
        (Some(major), Some(minor)) => (major, minor) >= MIN_SERVER,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::nats::names::message_id;
    use aep_test_support::nats::NatsServer;

    #[test]
    fn versions_and_urls() {
        assert!(server_is_new_enough("2.10.0"));
        assert!(server_is_new_enough("2.15.1"));
        assert!(server_is_new_enough("v3.0.0-beta.1"));
        assert!(!server_is_new_enough("2.9.10"));
        assert!(!server_is_new_enough("garbage"));
    }

    fn options(url: &str, stream: &str, buffer: usize) -> NatsOptions {
        NatsOptions::new(&NatsCluster::new(url).stream(stream), buffer).unwrap()
    }

    fn event(name: &StreamName, session: &str, id: &str) -> Outgoing {
        let json = format!(r#"{{"id":"{id}","session":"{session}"}}"#);
        Outgoing {
            subject: name.session_subject(session).into(),
            message_id: message_id("aep://t", id),
            payload: Bytes::from(json),
        }
    }

    async fn all(cluster: &Cluster, filter: &str, from: u64, upto: u64) -> Vec<(u64, String)> {
        cluster
            .read(filter, from, upto)
            .await
            .unwrap()
            .map(|s| {
                let s = s.unwrap();
                (s.sequence, String::from_utf8(s.payload.to_vec()).unwrap())
            })
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_batch_is_stored_once_per_id_kept_per_session_and_read_back_in_order() {
        let Some(server) = NatsServer::start_or_skip() else {
            return;
        };
        let cluster = Cluster::connect(&options(&server.url(), "T1", 3))
            .await
            .unwrap();
        let name = cluster.name().clone();
        let batch: Vec<_> = ["a1", "a2", "b1"]
            .iter()
            .map(|id| event(&name, if id.starts_with('a') { "s.a" } else { "s b" }, id))
            .collect();
        let first = cluster.publish(&batch).await.unwrap();
        assert_eq!(
            first
                .iter()
                .map(|p| (p.sequence, p.duplicate))
                .collect::<Vec<_>>(),
            [(1, false), (2, false), (3, false)]
        );
        // the same batch again (an emitter's retry, to any relay): stored once
        let again = cluster.publish(&batch).await.unwrap();
        assert!(again.iter().all(|p| p.duplicate), "{again:?}");
        assert_eq!(again[2].sequence, 3, "a duplicate names the stored copy");
        assert_eq!(cluster.last_sequence().await.unwrap(), 3);

        // a session keeps its newest `buffer` events
        let more: Vec<_> = ["a3", "a4"]
            .iter()
            .map(|id| event(&name, "s.a", id))
            .collect();
        cluster.publish(&more).await.unwrap();
        let a = all(&cluster, &name.session_subject("s.a"), 1, u64::MAX).await;
        assert_eq!(
            a.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
            [2, 4, 5],
            "{a:?}"
        );
        // bounded by a stamp, and from a place
        let upto = all(&cluster, &name.session_subject("s.a"), 1, 4).await;
        assert_eq!(upto.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [2, 4]);
        let from = all(&cluster, &name.sessions_wildcard(), 4, u64::MAX).await;
        assert_eq!(from.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [4, 5]);
        let everything = all(&cluster, &name.sessions_wildcard(), 1, u64::MAX).await;
        assert_eq!(
            everything.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            [2, 3, 4, 5]
        );
        assert!(all(&cluster, &name.session_subject("nobody"), 1, 10)
            .await
            .is_empty());

        assert_eq!(
            cluster.purge(&name.session_subject("s b")).await.unwrap(),
            1
        );
        assert!(all(&cluster, &name.session_subject("s b"), 1, 10)
            .await
            .is_empty());
    }

    #[tokio::test]
    async fn a_relay_whose_buffer_disagrees_with_the_stream_is_refused() {
        let Some(server) = NatsServer::start_or_skip() else {
            return;
        };
        Cluster::connect(&options(&server.url(), "T2", 8))
            .await
            .unwrap();
        Cluster::connect(&options(&server.url(), "T2", 8))
            .await
            .unwrap();
        let err = Cluster::connect(&options(&server.url(), "T2", 10_000))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("keeps events per session 8"), "{text}");
        assert!(text.contains("--buffer 8"), "{text}");
        // another stream on the same server is another fleet
        Cluster::connect(&options(&server.url(), "T3", 10_000))
            .await
            .unwrap();
        let mut other = options(&server.url(), "T2", 8);
        other.cluster.dedupe_horizon = Duration::from_secs(30);
        let err = Cluster::connect(&other).await.unwrap_err();
        assert!(
            err.to_string().contains("--nats-dedupe-horizon 120"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn nats_down_is_unreachable_at_once_and_an_oversized_event_is_too_large() {
        let Some(mut server) = NatsServer::start_or_skip() else {
            return;
        };
        let cluster = Cluster::connect(&options(&server.url(), "T4", 8))
            .await
            .unwrap();
        let name = cluster.name().clone();
        let mut big = event(&name, "s", "big");
        big.payload = Bytes::from(vec![b'x'; cluster.max_payload() + 1]);
        let err = cluster.publish(&[big]).await.unwrap_err();
        assert!(matches!(err, ClusterError::TooLarge { .. }), "{err}");

        server.kill();
        crate::nats::cluster::tests::wait_for(|| !cluster.is_connected()).await;
        let err = cluster
            .publish(&[event(&name, "s", "e1")])
            .await
            .unwrap_err();
        assert!(matches!(err, ClusterError::Unreachable), "{err}");
        assert!(err.to_string().contains("reconnects by itself"));

        // back on the same port with the same store: the client reconnects by itself
        server.restart().unwrap();
        wait_for(|| cluster.is_connected()).await;
        let stored = cluster.publish(&[event(&name, "s", "e1")]).await.unwrap();
        assert!(!stored[0].duplicate);

        let refused = Cluster::connect(&options("nats://127.0.0.1:1", "T4", 8)).await;
        assert!(matches!(refused, Err(ClusterError::Connect { .. })));
    }

    /// Opening waits for the connection from synchronous code on the runtime; with no
    /// runtime it says what is missing, and a failure comes back as the relay's error.
    #[test]
    fn opening_blocks_on_the_current_runtime_and_says_when_there_is_none() {
        let outside = block_on_runtime(async { Ok::<_, ClusterError>(1) }).unwrap_err();
        assert!(
            outside.to_string().contains("inside a tokio runtime"),
            "{outside}"
        );
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let _inside = runtime.enter();
        assert_eq!(
            block_on_runtime(async { Ok::<_, ClusterError>(1) }).unwrap(),
            1
        );
        let failed = block_on_runtime(async { Err::<(), _>(ClusterError::NoJetStream) });
        assert!(failed.unwrap_err().to_string().contains("-js"));
    }

    /// A credentials file that cannot be read is refused before anything connects,
    /// naming the file (`--nats-creds`).
    #[tokio::test]
    async fn an_unreadable_creds_file_is_refused_naming_it() {
        let mut unreadable = options("nats://127.0.0.1:1", "T5", 8);
        unreadable.cluster.creds = Some(PathBuf::from("no-such-dir/relay.creds"));
        let err = Cluster::connect(&unreadable).await.unwrap_err();
        assert!(matches!(err, ClusterError::Creds { .. }), "{err}");
        assert!(err.to_string().contains("no-such-dir/relay.creds"), "{err}");
    }

    async fn wait_for(mut done: impl FnMut() -> bool) {
        for _ in 0..2000 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("waited 20 s");
    }
}
