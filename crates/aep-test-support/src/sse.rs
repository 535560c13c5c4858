//! SSE as a test reads it by hand: messages cut at blank lines, with their comment
//! lines (where the protocol's markers travel, AEP-0003 §3.3) kept.

use serde_json::Value;

/// One SSE message as read off the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseMessage {
    /// `event:`
    pub event: Option<String>,
    /// `data:`
    pub data: Option<String>,
    /// `id:`
    pub id: Option<String>,
    /// Comment lines (`: ...`), trimmed.
    pub comments: Vec<String>,
}

impl SseMessage {
    /// The `data` as JSON (`null` without data); panics if it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.data.as_deref().unwrap_or("null")).expect("data is JSON")
    }
}

/// Cuts the complete messages off the front of `buf`, leaving an unfinished one there.
///
/// ```
/// use aep_test_support::sse::take_messages;
/// let mut buf = String::from(": replay-complete\n\ndata: {}\nid: s:0:1\n\ndata: x");
/// let msgs = take_messages(&mut buf);
/// assert_eq!(msgs[0].comments, ["replay-complete"]);
/// assert_eq!(msgs[1].id.as_deref(), Some("s:0:1"));
/// assert_eq!(buf, "data: x");
/// ```
pub fn take_messages(buf: &mut String) -> Vec<SseMessage> {
    let mut out = Vec::new();
    while let Some(at) = buf.find("\n\n") {
        let raw: String = buf.drain(..at + 2).collect();
        let mut msg = SseMessage::default();
        for line in raw.lines() {
            if let Some(c) = line.strip_prefix(':') {
                msg.comments.push(c.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("event:") {
                msg.event = Some(v.trim_start().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                msg.data = Some(v.trim_start().to_owned());
            } else if let Some(v) = line.strip_prefix("id:") {
                msg.id = Some(v.trim_start().to_owned());
            }
        }
        out.push(msg);
    }
    out
}
