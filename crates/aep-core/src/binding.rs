//! The fixed facts of the HTTP, SSE and WebSocket bindings (AEP-0003 §3): the paths
//! under a relay's base URL, the version header and its gate, the ingest content types
//! and the SSE comment lines a relay writes. The relay serves them, the clients call
//! them and the CLI probes them, all from here.
//!
//! ```
//! use aep_core::binding;
//!
//! assert_eq!(binding::events_url("http://127.0.0.1:8787/"), "http://127.0.0.1:8787/events");
//! assert_eq!(binding::socket_url("https://relay.example/aep"), "wss://relay.example/aep/socket");
//! assert!(binding::is_supported_version(b"0.1"));
//! assert!(!binding::is_supported_version(b"1.0"));
//! ```

use crate::AEP_VERSION;

/// `POST` emits events (AEP-0003 §3.2 rule 1); `GET` returns the discovery document
/// (§3.4).
pub const EVENTS_PATH: &str = "/events";

/// `GET` opens an SSE subscription (AEP-0003 §3.3 rule 1).
pub const STREAM_PATH: &str = "/stream";

/// The WebSocket binding (AEP-0003 §3.5 rule 1).
pub const SOCKET_PATH: &str = "/socket";

/// Where an origin-root deployment also serves the discovery document (AEP-0003 §3.4).
pub const WELL_KNOWN_PATH: &str = "/.well-known/aep";

/// The request header an HTTP emitter sends its version in (AEP-0003 §3.2 rule 2).
pub const VERSION_HEADER: &str = "AEP-Version";

/// The versions this implementation speaks, in order of preference: what an endpoint
/// lists when it refuses another (`426` body, `version-unsupported` frame) and what a
/// `hello` offers (AEP-0003 §3.2 rule 2, §4 rule 1).
pub const VERSIONS: [&str; 1] = [AEP_VERSION];

/// The status an endpoint answers an unsupported version with: `426 Upgrade Required`
/// (AEP-0003 §3.2 rule 2), its body [`version_refusal_body`].
pub const VERSION_REFUSED_STATUS: u16 = 426;

/// `Content-Type` of an ingest request carrying one event (AEP-0003 §3.2 rule 1).
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// `Content-Type` of an ingest request carrying a batch, one event per line
/// (AEP-0003 §3.2 rule 1).
pub const NDJSON_CONTENT_TYPE: &str = "application/x-ndjson";

/// The `Accept` of an SSE request (AEP-0003 §3.3 rule 1).
pub const SSE_CONTENT_TYPE: &str = "text/event-stream";

/// Whether an `AEP-Version` header value names a version this implementation speaks
/// (AEP-0003 §3.2 rule 2: the gate an endpoint applies before reading the body).
///
/// ```
/// assert!(aep_core::binding::is_supported_version(aep_core::AEP_VERSION.as_bytes()));
/// assert!(!aep_core::binding::is_supported_version(b""));
/// ```
pub fn is_supported_version(value: &[u8]) -> bool {
    VERSIONS.iter().any(|v| v.as_bytes() == value)
}

/// The body of the `426` refusal: `{"versions":["0.1"]}` (AEP-0003 §3.2 rule 2).
///
/// ```
/// assert_eq!(aep_core::binding::version_refusal_body(), r#"{"versions":["0.1"]}"#);
/// ```
pub fn version_refusal_body() -> String {
    serde_json::json!({ "versions": VERSIONS }).to_string()
}

/// `{base}{path}`, the base's trailing slashes dropped: `base` is a relay's base URL as
/// a user writes it (`http://host:8787`, `http://host/aep/`).
///
/// ```
/// assert_eq!(aep_core::binding::url("http://h/", "/stream"), "http://h/stream");
/// ```
pub fn url(base: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    let mut url = String::with_capacity(base.len() + path.len());
    url.push_str(base);
    url.push_str(path);
    url
}

/// `{base}/events`: where events are posted and the discovery document read
/// (AEP-0003 §3.2, §3.4).
///
/// ```
/// assert_eq!(aep_core::binding::events_url("http://h:1"), "http://h:1/events");
/// ```
pub fn events_url(base: &str) -> String {
    url(base, EVENTS_PATH)
}

/// `{base}/stream`: the SSE subscription (AEP-0003 §3.3).
///
/// ```
/// assert_eq!(aep_core::binding::stream_url("http://h:1"), "http://h:1/stream");
/// ```
pub fn stream_url(base: &str) -> String {
    url(base, STREAM_PATH)
}

/// `{base}/.well-known/aep`: the discovery document at its well-known place
/// (AEP-0003 §3.4).
///
/// ```
/// assert_eq!(aep_core::binding::well_known_url("http://h:1"), "http://h:1/.well-known/aep");
/// ```
pub fn well_known_url(base: &str) -> String {
    url(base, WELL_KNOWN_PATH)
}

/// `{base}/socket` with `http(s)` turned into `ws(s)` (AEP-0003 §3.5 rule 1); a base
/// given as `ws://` or `wss://` keeps its scheme.
///
/// ```
/// use aep_core::binding::socket_url;
/// assert_eq!(socket_url("http://h:1/"), "ws://h:1/socket");
/// assert_eq!(socket_url("https://h/x"), "wss://h/x/socket");
/// assert_eq!(socket_url("ws://h"), "ws://h/socket");
/// ```
pub fn socket_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    match (base.strip_prefix("https://"), base.strip_prefix("http://")) {
        (Some(rest), _) => format!("wss://{rest}{SOCKET_PATH}"),
        (None, Some(rest)) => format!("ws://{rest}{SOCKET_PATH}"),
        (None, None) => url(base, SOCKET_PATH),
    }
}

/// The SSE comment lines a relay writes (AEP-0003 §3.3), each with the blank line that
/// ends its message. `replay-exhausted` carries a position and lives with positions
/// ([`crate::resume::replay_exhausted_comment`]).
pub mod sse {
    /// The heartbeat (AEP-0003 §3.3 rule 4: at least every 30 s).
    pub const HEARTBEAT: &str = ": ping\n\n";

    /// A `live=0` history pass has sent everything the relay holds (AEP-0003 §5).
    pub const REPLAY_COMPLETE: &str = crate::resume::REPLAY_COMPLETE_COMMENT;

    /// The relay is going away; the reader reconnects (elsewhere, given several relays).
    /// Not in AEP-0003: this implementation's word before it ends a stream in order.
    pub const SHUTTING_DOWN: &str = ": shutting-down\n\n";

    /// A replay could not be read to its end; the reader resumes from its positions.
    /// Not in AEP-0003: unlike `replay-complete`, it promises nothing was left out.
    pub const REPLAY_FAILED: &str = ": replay-failed\n\n";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_discovery_document_names_these_paths() {
        let e = crate::frame::Endpoints::standard();
        assert_eq!(e.events.as_deref(), Some(EVENTS_PATH));
        assert_eq!(e.stream.as_deref(), Some(STREAM_PATH));
        assert_eq!(e.socket.as_deref(), Some(SOCKET_PATH));
    }

    #[test]
    fn every_comment_is_one_sse_comment_message() {
        for c in [
            sse::HEARTBEAT,
            sse::REPLAY_COMPLETE,
            sse::SHUTTING_DOWN,
            sse::REPLAY_FAILED,
        ] {
            assert!(c.starts_with(": ") && c.ends_with("\n\n"), "{c:?}");
            assert_eq!(c.matches('\n').count(), 2, "{c:?}");
        }
    }

    #[test]
    fn urls_keep_a_base_path_and_drop_trailing_slashes() {
        assert_eq!(events_url("http://h/aep//"), "http://h/aep/events");
        assert_eq!(stream_url("https://h"), "https://h/stream");
        assert_eq!(socket_url("https://h/aep/"), "wss://h/aep/socket");
        assert_eq!(well_known_url("http://h"), "http://h/.well-known/aep");
    }
}
