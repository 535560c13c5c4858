//! `source` URIs (AEP-0001 §5.2, attribute 6): the RECOMMENDED form
//! `aep://{host}/agent/{agent}[/session/{session}]` that emitters and command senders
//! write ([`SourceUri`]), and the reading of a URI's authority that a replay and the OCSF
//! bridge's `device.hostname` (AEP-0005 §4.3) need ([`authority`]).
//!
//! ```
//! use aep_core::SourceUri;
//!
//! let uri = SourceUri::new("host-a", "coder").with_session("s1");
//! assert_eq!(uri.as_str(), "aep://host-a/agent/coder/session/s1");
//! let back = SourceUri::parse(uri.as_str()).unwrap();
//! assert_eq!((back.host(), back.agent(), back.session()), ("host-a", "coder", Some("s1")));
//! ```

use std::fmt;

/// The scheme and separator every [`SourceUri`] starts with.
const PREFIX: &str = "aep://";
const AGENT: &str = "/agent/";
const SESSION: &str = "/session/";

/// A `source` in the RECOMMENDED form of AEP-0001 §5.2:
/// `aep://{host}/agent/{agent}`, with `/session/{session}` for a session's events.
///
/// The parts are written as given (no percent-encoding, as the Python and TypeScript
/// emitters write them); [`SourceUri::parse`] reads back what [`SourceUri::new`] and
/// [`SourceUri::with_session`] write.
///
/// ```
/// use aep_core::SourceUri;
/// let agent = SourceUri::new("h", "console");
/// assert_eq!(agent.to_string(), "aep://h/agent/console");
/// assert_eq!(agent.session(), None);
/// assert_eq!(SourceUri::parse("https://h/agent/a"), None);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SourceUri {
    text: String,
    /// Where the agent begins and ends in `text`.
    agent: (usize, usize),
    /// Where the session begins, if there is one (it runs to the end).
    session: Option<usize>,
}

impl SourceUri {
    /// `aep://{host}/agent/{agent}`: the source of an agent-scoped event, or of a
    /// command sender (AEP-0004 §2 rule 2).
    pub fn new(host: &str, agent: &str) -> SourceUri {
        let mut text = String::with_capacity(PREFIX.len() + host.len() + AGENT.len() + agent.len());
        text.push_str(PREFIX);
        text.push_str(host);
        text.push_str(AGENT);
        let start = text.len();
        text.push_str(agent);
        SourceUri {
            agent: (start, text.len()),
            text,
            session: None,
        }
    }

    /// The same agent's source for one of its sessions:
    /// `aep://{host}/agent/{agent}/session/{session}`. A session given already is
    /// replaced.
    ///
    /// ```
    /// let s = aep_core::SourceUri::new("h", "a").with_session("x").with_session("y");
    /// assert_eq!(s.as_str(), "aep://h/agent/a/session/y");
    /// ```
    pub fn with_session(mut self, session: &str) -> SourceUri {
        self.text.truncate(self.agent.1);
        self.text.push_str(SESSION);
        self.session = Some(self.text.len());
        self.text.push_str(session);
        self
    }

    /// Reads a URI in the RECOMMENDED form; `None` for any other URI (another scheme, no
    /// host, no `/agent/{agent}`, or an empty agent or session). A `source` in another
    /// form is still a valid `source` (AEP-0001 §5.2 only recommends this one).
    ///
    /// ```
    /// use aep_core::SourceUri;
    /// let uri = SourceUri::parse("aep://h/agent/a").unwrap();
    /// assert_eq!((uri.host(), uri.agent()), ("h", "a"));
    /// assert_eq!(SourceUri::parse("aep://h"), None);
    /// assert_eq!(SourceUri::parse("aep:///agent/a"), None);
    /// assert_eq!(SourceUri::parse("aep://h/agent/a/session/"), None);
    /// ```
    pub fn parse(uri: &str) -> Option<SourceUri> {
        let rest = uri.strip_prefix(PREFIX)?;
        let host_end = rest.find('/')?;
        if host_end == 0 {
            return None;
        }
        let after_host = rest.get(host_end..)?.strip_prefix(AGENT)?;
        let agent_start = PREFIX.len() + host_end + AGENT.len();
        let (agent_len, session) = match after_host.find(SESSION) {
            Some(at) => (at, Some(agent_start + at + SESSION.len())),
            None => (after_host.len(), None),
        };
        if agent_len == 0 || session.is_some_and(|s| s == uri.len()) {
            return None;
        }
        Some(SourceUri {
            text: uri.to_owned(),
            agent: (agent_start, agent_start + agent_len),
            session,
        })
    }

    /// The host part.
    pub fn host(&self) -> &str {
        self.text
            .get(PREFIX.len()..self.agent.0 - AGENT.len())
            .unwrap_or_default()
    }

    /// The agent part.
    pub fn agent(&self) -> &str {
        self.text
            .get(self.agent.0..self.agent.1)
            .unwrap_or_default()
    }

    /// The session part, for a session's source.
    pub fn session(&self) -> Option<&str> {
        self.session.and_then(|s| self.text.get(s..))
    }

    /// The URI as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The URI as an owned string.
    pub fn into_string(self) -> String {
        self.text
    }

    /// The host of an `aep://` URI, whatever follows it (`aep://h`, `aep://h/agent/a`);
    /// `None` for another scheme or an empty host.
    ///
    /// ```
    /// use aep_core::SourceUri;
    /// assert_eq!(SourceUri::host_of("aep://host-a/anything"), Some("host-a"));
    /// assert_eq!(SourceUri::host_of("https://host-a/x"), None);
    /// ```
    pub fn host_of(uri: &str) -> Option<&str> {
        uri.starts_with(PREFIX).then(|| authority(uri)).flatten()
    }
}

impl fmt::Debug for SourceUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SourceUri").field(&self.text).finish()
    }
}

impl fmt::Display for SourceUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl AsRef<str> for SourceUri {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl From<SourceUri> for String {
    fn from(uri: SourceUri) -> String {
        uri.text
    }
}

/// The authority of any `scheme://authority/...` URI (RFC 3986 §3.2): what follows
/// `//` up to the next `/`, `?` or `#`. `None` without a well-formed scheme or with an
/// empty authority. The OCSF bridge reads `device.hostname` from a `source` this way
/// (AEP-0005 §4.3), whatever its scheme.
///
/// ```
/// use aep_core::source::authority;
/// assert_eq!(authority("aep://host-a/agent/x"), Some("host-a"));
/// assert_eq!(authority("https://h:8443?x"), Some("h:8443"));
/// assert_eq!(authority("aep:///path"), None);
/// assert_eq!(authority("1x://h"), None);
/// ```
pub fn authority(uri: &str) -> Option<&str> {
    let (scheme, rest) = uri.split_once("://")?;
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'));
    if !scheme_ok {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    rest.get(..end).filter(|a| !a.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        for (host, agent, session) in [
            ("h", "a", None),
            ("host-a:1", "claude-code", Some("s_8f2c")),
            ("h", "a", Some("x/session/y")),
        ] {
            let mut uri = SourceUri::new(host, agent);
            if let Some(s) = session {
                uri = uri.with_session(s);
            }
            let back = SourceUri::parse(uri.as_str()).unwrap_or_else(|| panic!("{uri}"));
            assert_eq!(back.host(), host);
            assert_eq!(back.agent(), agent);
            assert_eq!(back.session(), session);
            assert_eq!(back, uri);
        }
    }

    #[test]
    fn other_forms_are_not_this_one() {
        for uri in [
            "",
            "aep://",
            "aep://h/",
            "aep://h/agent/",
            "aep://h/agents/a",
            "aep://h/agent/a/session/",
            "AEP://h/agent/a",
            "urn:x",
        ] {
            assert_eq!(SourceUri::parse(uri), None, "{uri}");
        }
    }

    #[test]
    fn the_authority_of_any_scheme() {
        assert_eq!(authority("aep://h?x"), Some("h"));
        assert_eq!(authority("x-y.z+w://a#f"), Some("a"));
        assert_eq!(authority("no-scheme"), None);
        assert_eq!(authority("https://u@h:8/p?q#f"), Some("u@h:8"));
        assert_eq!(authority("urn:aep:a"), None);
        assert_eq!(SourceUri::host_of("aep://h"), Some("h"));
        assert_eq!(SourceUri::host_of("aep://"), None);
    }
}
