//! A relay's ingest as a plain HTTP producer reaches it (AEP-0003 §3.2).

use serde_json::Value;

/// Posts `events` as one NDJSON body to `{base}/events` with a bearer `token`; returns
/// the response, whatever its status.
pub async fn post_ndjson(base: &str, token: &str, events: &[Value]) -> reqwest::Response {
    reqwest::Client::new()
        .post(aep_core::binding::events_url(base))
        .bearer_auth(token)
        .header(aep_core::binding::VERSION_HEADER, aep_core::AEP_VERSION)
        .header("content-type", aep_core::binding::NDJSON_CONTENT_TYPE)
        .body(crate::events::ndjson(events))
        .send()
        .await
        .expect("the relay is reachable")
}
