//! One look at a relay before a subcommand commits to work: is it there, and does it
//! take the token? (`GET /.well-known/aep`, AEP-0003 §3.4.)

use std::time::Duration;

use aep::protocol::binding;
use aep::protocol::frame::Discovery;

use crate::args::RelayArgs;
use crate::exit::{describe, Failure};

/// Largest discovery document (or other relay answer) read: the reference relay's is a
/// few hundred bytes.
pub const MAX_DOCUMENT: usize = 64 << 10;

/// What to do about a relay that cannot be reached or answers as no relay would.
pub const CHECK_URL: &str =
    "check that the relay is running and that --url or AEP_URL is its address";

/// Whether an AEP relay answers at `relay` within 10 s: a discovery document
/// (AEP-0003 §3.4), or a 404 from a relay that serves none, says it does. Unreachable,
/// silent, refusing the token, any other status, or a success whose body is no
/// discovery document (a web server on the wrong port, which would take the events
/// and deliver them nowhere) is exit 5. No caller needs the document itself.
pub async fn discovery(relay: &RelayArgs) -> Result<(), Failure> {
    let url = binding::well_known_url(relay.base());
    let client = relay
        .http_builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| Failure::relay(format!("cannot build an HTTP client: {}", describe(&e))))?;
    let mut request = client.get(&url);
    if let Some(t) = relay.token() {
        request = request.bearer_auth(t);
    }
    let response = request.send().await.map_err(|e| {
        if let Some(text) = aep::tls::untrusted_certificate(&e) {
            return Failure::relay(format!(
                "cannot reach the relay at {}: {text}; if a private CA signed it, pass \
                 --tls-ca FILE (or set AEP_TLS_CA) with that CA's certificate",
                relay.base()
            ));
        }
        Failure::relay(format!(
            "cannot reach the relay at {}: {}; {CHECK_URL}",
            relay.base(),
            describe(&e.without_url())
        ))
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(refused(relay, status.as_u16()));
    }
    if status == reqwest::StatusCode::NOT_FOUND {
        return Ok(());
    }
    if !status.is_success() {
        return Err(Failure::relay(format!(
            "the relay at {} answered {status} to GET {}; {CHECK_URL}, and its log",
            relay.base(),
            binding::WELL_KNOWN_PATH
        )));
    }
    let not_a_relay = |why: String| {
        Failure::relay(format!(
            "{} answered GET {} with no AEP discovery document (AEP-0003 §3.4: {why}); {CHECK_URL}",
            relay.base(),
            binding::WELL_KNOWN_PATH
        ))
    };
    let body = read_at_most(response, MAX_DOCUMENT)
        .await
        .map_err(not_a_relay)?;
    serde_json::from_slice::<Discovery>(&body)
        .map(drop)
        .map_err(|e| not_a_relay(e.to_string()))
}

/// The body, refused past `limit` bytes rather than held whole.
pub async fn read_at_most(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| describe(&e.without_url()))?
    {
        if body.len() + chunk.len() > limit {
            return Err(format!("a body over {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The failure of a refused token.
pub fn refused(relay: &RelayArgs, status: u16) -> Failure {
    let hint = if relay.token().is_some() {
        "check --token or AEP_TOKEN"
    } else {
        "it requires a token: pass --token or set AEP_TOKEN"
    };
    Failure::relay(format!(
        "the relay at {} refused the request (HTTP {status}); {hint}",
        relay.base()
    ))
}
