//! The relay cluster on NATS JetStream (issue 20): several relays share one stream, so
//! any of them answers the whole protocol.
//!
//! One boundary: the server asks [`join`] for a relay's place in its cluster, a replay
//! store several relays share (the [`Storage`](crate::storage::Storage) with its feed)
//! and the [`Directory`] of the other relays' claims, and sees the cluster through
//! those two traits only. Its option, [`NatsCluster`], is plain
//! configuration (`config`). The feature `nats` is decided here and nowhere else: with
//! it, `cluster` (connect and check, publish a batch acknowledged, read back in stream
//! order), `names` (what every relay of a cluster must compute alike), `feed` (every
//! admission of every relay, in stream order, for live fan-out; parked while the relay
//! has no live subscription), `store` (the store and its feed on the stream) and
//! `control` (AEP-0004 control and the AEP-0003 §4.1 roster across the relays); without
//! it, a relay given a cluster refuses to start, saying how to build one that can.

#[cfg(feature = "nats")]
mod cluster;
#[cfg(feature = "nats")]
mod control;
#[cfg(feature = "nats")]
mod feed;
#[cfg(feature = "nats")]
mod names;
#[cfg(feature = "nats")]
mod store;

use std::io;
use std::sync::Arc;

use crate::config::{NatsCluster, RelayConfig};
use crate::directory::Directory;
use crate::storage::Backend;

/// A relay's place in `cluster`: the store the relays share, with its feed, and the
/// directory of the other relays' claims; or why it cannot join (refused before any
/// connection is tried when the configuration cannot work). Blocking: it connects on
/// the current tokio runtime from a thread of its own.
pub(crate) fn join(
    config: &RelayConfig,
    cluster: &NatsCluster,
) -> io::Result<(Backend, Arc<dyn Directory>)> {
    let refuse = |message: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, message));
    if cluster.url().is_empty() {
        return refuse(
            "--nats-creds, --nats-tls-ca, --nats-stream and --nats-dedupe-horizon need --nats URL (AEP_NATS_URL): name the cluster's NATS server, or drop them",
        );
    }
    if config.data_dir().is_some() {
        return refuse(
            "--nats and --data-dir cannot be used together: with --nats the events are stored in the JetStream stream (the NATS server's own store, nats-server -js -sd DIR); drop --data-dir",
        );
    }
    let default = RelayConfig::default();
    if (config.max_session_bytes(), config.max_store_bytes())
        != (default.max_session_bytes(), default.max_store_bytes())
    {
        // silently ignored, they would promise a bound nothing keeps
        return refuse(
            "--max-session-bytes and --max-store-bytes bound the relay's own store, which --nats replaces with the JetStream stream: bound the stream with the server's limits (its max_bytes, max_age) and drop them",
        );
    }
    cluster.stream_name_checked()?;
    #[cfg(feature = "nats")]
    {
        let options = cluster::NatsOptions::new(cluster, config.buffer())?;
        Ok((store::open(&options)?, control::open(&options)?))
    }
    #[cfg(not(feature = "nats"))]
    {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this aep-relay was built without the `nats` feature, which --nats needs: build it with `cargo install aep-relay --features nats` (in the repository, `cargo build --release -p aep-relay --features nats`; its NATS client needs rustc 1.89 or newer)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(config: RelayConfig) -> String {
        let cluster = config
            .nats()
            .cloned()
            .unwrap_or_else(|| NatsCluster::new(""));
        match join(&config, &cluster) {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        }
    }

    /// What cannot work is refused before anything connects, each saying what to do.
    #[test]
    fn a_cluster_that_cannot_work_is_refused_before_connecting() {
        let nats = NatsCluster::new("nats://127.0.0.1:1");
        let with_dir = RelayConfig::default()
            .with_data_dir("/nonexistent")
            .with_nats(nats.clone());
        assert!(refusal(with_dir).contains("drop --data-dir"));
        let mut flags_only = RelayConfig::default();
        flags_only.set("nats-stream", "FLEET").unwrap();
        assert!(refusal(flags_only).contains("need --nats URL"));
        let bad_stream = RelayConfig::default().with_nats(nats.clone().stream("a.b"));
        assert!(refusal(bad_stream).contains("cannot name the NATS stream"));
        for (flag, value) in [("max-store-bytes", "1024"), ("max-session-bytes", "1024")] {
            let mut bounded = RelayConfig::default().with_nats(nats.clone());
            bounded.set(flag, value).unwrap();
            assert!(refusal(bounded).contains("drop them"), "--{flag}");
        }
        #[cfg(not(feature = "nats"))]
        assert!(refusal(RelayConfig::default().with_nats(nats)).contains("--features nats"));
    }
}
