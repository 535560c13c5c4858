//! What a relay exposes by the address it listens on (issue 31): on loopback, only this
//! machine reaches it; beyond, anyone who reaches the address reads every event
//! (prompts, tool output, at whatever capture the agents chose) and writes into any
//! session unless a token guards it (AEP-0003 §8.1). So a relay without a token listens
//! beyond loopback only when told so loudly (`--insecure-open-relay`), and says so at
//! every start; one with a token but without TLS is told that the token crosses the
//! network in clear.

use std::io;
use std::net::SocketAddr;

use crate::config::RelayConfig;

/// What a relay listening on an address exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exposure {
    /// Loopback: this machine only.
    Local,
    /// Beyond loopback, behind the token; `clear` without TLS.
    Guarded { clear: bool },
    /// Beyond loopback without a token, as the operator asked.
    Open,
}

/// Whether `addr` reaches only this machine (an IPv4-mapped loopback address too).
fn is_local(addr: SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// What of the configuration decides what a listener exposes: whether a token guards
/// it, whether it serves TLS, whether the operator asked for an open relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Posture {
    token: bool,
    tls: bool,
    open: bool,
}

impl Posture {
    /// The posture `config` describes.
    pub(crate) fn of(config: &RelayConfig) -> Posture {
        Posture {
            token: config.token().is_some(),
            tls: config.tls().is_some(),
            open: config.insecure_open_relay(),
        }
    }

    /// What listening on `addr` exposes, or the refusal to start: an address beyond
    /// loopback without a token, unless `--insecure-open-relay`.
    pub(crate) fn check(self, addr: SocketAddr) -> io::Result<Exposure> {
        if is_local(addr) {
            return Ok(Exposure::Local);
        }
        if self.token {
            return Ok(Exposure::Guarded { clear: !self.tls });
        }
        if self.open {
            return Ok(Exposure::Open);
        }
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing to listen on {addr} without a token: beyond loopback anyone who reaches it would read every event and write into any session. \
                 Set a token (--token TOKEN or AEP_TOKEN=TOKEN; RelayBuilder::token in a program) and give it to the clients (AEP_TOKEN), \
                 or listen on this machine only (--host 127.0.0.1), \
                 or, to run an open relay anyway, add --insecure-open-relay (AEP_INSECURE_OPEN_RELAY=true)"
            ),
        ))
    }
}

impl Exposure {
    /// Says at start what a relay beyond loopback exposes: an open relay at WARN, every
    /// start; a token in clear at WARN too.
    pub(crate) fn warn(self, addr: SocketAddr) {
        match self {
            Exposure::Local | Exposure::Guarded { clear: false } => {}
            Exposure::Guarded { clear: true } => tracing::warn!(
                %addr,
                "serving plain HTTP beyond loopback: the token and every event cross the network in clear; serve TLS (--tls-cert, --tls-key) or put a TLS proxy in front"
            ),
            Exposure::Open => tracing::warn!(
                %addr,
                "OPEN RELAY (--insecure-open-relay): no token, listening beyond loopback; anyone who reaches {addr} reads every event and writes into any session; control routing is off (AEP-0004 §4.1)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    /// Loopback is served as it is; beyond it a token or the loud flag is needed, and
    /// the refusal says how to set a token.
    #[test]
    fn beyond_loopback_a_relay_needs_a_token_or_the_loud_flag() {
        let open = RelayConfig::default();
        for local in [
            "127.0.0.1:0",
            "127.0.0.2:8787",
            "[::1]:0",
            "[::ffff:127.0.0.1]:0",
        ] {
            assert_eq!(
                Posture::of(&open).check(addr(local)).unwrap(),
                Exposure::Local,
                "{local}"
            );
        }
        for beyond in ["0.0.0.0:8787", "[::]:0", "192.0.2.7:8787"] {
            let e = Posture::of(&open).check(addr(beyond)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
            let said = e.to_string();
            assert!(
                said.contains("--token")
                    && said.contains("AEP_TOKEN")
                    && said.contains("--insecure-open-relay"),
                "{said}"
            );
            let token = RelayConfig::default().with_token("t");
            assert_eq!(
                Posture::of(&token).check(addr(beyond)).unwrap(),
                Exposure::Guarded { clear: true }
            );
            let tls = token.with_tls("c.pem", "k.pem");
            assert_eq!(
                Posture::of(&tls).check(addr(beyond)).unwrap(),
                Exposure::Guarded { clear: false }
            );
            let loud = RelayConfig::default().with_insecure_open_relay(true);
            assert_eq!(
                Posture::of(&loud).check(addr(beyond)).unwrap(),
                Exposure::Open
            );
        }
    }
}
