//! A relay's ingest as a plain HTTP producer reaches it (AEP-0003 §3.2).

use serde_json::Value;

/// Posts `events` as one NDJSON body to `{base}/events` with a bearer `token`; returns
/// the response, whatever its status.
pub async fn post_ndjson(base: &str, token: &str, events: &[Value]) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}/events"))
        .bearer_auth(token)
        .header("aep-version", "0.1")
        .header("content-type", "application/x-ndjson")
        .body(crate::events::ndjson(events))
        .send()
        .await
        .expect("the relay is reachable")
}
