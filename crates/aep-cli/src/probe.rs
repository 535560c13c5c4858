//! One look at a relay before a subcommand commits to work: is it there, and does it
//! take the token? (`GET /.well-known/aep`, AEP-0003 §3.4.)

use std::time::Duration;

use serde_json::Value;

use crate::args::RelayArgs;
use crate::exit::{describe, Failure};

/// The relay's discovery document; `None` from a relay that serves none (404) but
/// answered. Unreachable, or refusing the token, is exit 5.
pub async fn discovery(relay: &RelayArgs) -> Result<Option<Value>, Failure> {
    let url = format!("{}/.well-known/aep", relay.base());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| Failure::relay(format!("cannot build an HTTP client: {}", describe(&e))))?;
    let mut request = client.get(&url);
    if let Some(t) = relay.token() {
        request = request.bearer_auth(t);
    }
    let response = request.send().await.map_err(|e| {
        Failure::relay(format!(
            "cannot reach the relay at {}: {}",
            relay.base(),
            describe(&e.without_url())
        ))
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(refused(relay, status.as_u16()));
    }
    if status == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(Failure::relay(format!(
            "the relay at {} answered {status} to GET /.well-known/aep",
            relay.base()
        )));
    }
    let body = response.bytes().await.unwrap_or_default();
    Ok(serde_json::from_slice(&body).ok())
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
