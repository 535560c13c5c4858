//! [`Relays`]: where a client connects, one relay or several of one cluster to fail over
//! between.

use std::borrow::Cow;
use std::fmt;

use aep_core::redact::redact_urls;
use std::sync::Arc;

/// The base URL of a relay (`http://127.0.0.1:8787`), or of several relays of one
/// cluster, in order of preference.
///
/// A [`Client`](crate::Client) is made from one, and every connection opened on it (a
/// subscription, a `WsConnection`, the `HttpSink`, the `WsSink`, the `ControlClient`, a
/// `Duplex`, a `LifecycleConnection`) fails over between them. With several, it talks
/// to one at a time, starting with the first, and stays on the one that works. When an attempt fails (the relay is unreachable, answers `5xx`, or drops
/// the connection) the next attempt goes to the next relay at once; only once every relay
/// has failed since the last success does it wait its reconnect backoff before going
/// round again. What the client carries over is the same as on a reconnect to the same
/// relay: a subscription resumes from its positions (its dedupe drops what it saw
/// already), a sink sends again what was not acknowledged with the same ids, and the
/// control client re-subscribes and retransmits its pending commands unchanged; the
/// relays of a cluster share one store, so nothing is missed and nothing is stored
/// twice (AEP-0001 §7.4).
///
/// A `Duplex` and a `LifecycleConnection` never reconnect: they are opened on the
/// first relay that answers, and when one ends, the next is opened the same way.
///
/// A `&str` or a `String` is one relay; an array, a slice or a `Vec` of them is a list.
///
/// ```
/// use aep_async::Relays;
///
/// let one = Relays::from("http://127.0.0.1:8787");
/// assert_eq!(one.len(), 1);
/// let cluster = Relays::from(["http://10.0.0.1:8787", "http://10.0.0.2:8787"]);
/// assert_eq!(cluster.first(), Some("http://10.0.0.1:8787"));
/// assert_eq!(cluster.iter().count(), 2);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Relays(Arc<[String]>);

impl Relays {
    /// The relays of `urls`, in order.
    ///
    /// ```
    /// let relays = aep_async::Relays::new(vec!["http://a:8787".to_owned()]);
    /// assert!(!relays.is_empty());
    /// ```
    pub fn new<I, S>(urls: I) -> Relays
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Relays(urls.into_iter().map(Into::into).collect())
    }

    /// How many relays.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none (a client given none fails at once, saying so).
    ///
    /// ```
    /// assert!(aep_async::Relays::new(Vec::<String>::new()).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The first, the one a client tries first.
    pub fn first(&self) -> Option<&str> {
        self.0.first().map(String::as_str)
    }

    /// The relay at `index`, counting round (`index` modulo [`Relays::len`]).
    #[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
    pub(crate) fn at(&self, index: usize) -> Option<&str> {
        match self.0.len() {
            0 => None,
            n => self.0.get(index % n).map(String::as_str),
        }
    }

    /// The URLs, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.iter().map(String::as_str)
    }
}

impl fmt::Debug for Relays {
    /// The URLs, redacted as `Display` writes them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|u| redact_urls(u)))
            .finish()
    }
}

impl fmt::Display for Relays {
    /// The URLs separated by `, `, each without its userinfo or credential-named query
    /// values ([`aep_core::redact::redact_urls`]): what a log line or an error may show.
    ///
    /// ```
    /// let relays = aep_async::Relays::from(["http://u:pw@a:1", "http://b:2/?token=t"]);
    /// assert_eq!(
    ///     relays.to_string(),
    ///     "http://[REDACTED:secret]@a:1, http://b:2/?token=[REDACTED:secret]"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, url) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(&redact_urls(url))?;
        }
        Ok(())
    }
}

impl From<&str> for Relays {
    fn from(url: &str) -> Self {
        Relays::new([url])
    }
}

impl From<String> for Relays {
    fn from(url: String) -> Self {
        Relays::new([url])
    }
}

impl From<&String> for Relays {
    fn from(url: &String) -> Self {
        Relays::new([url.as_str()])
    }
}

impl From<Cow<'_, str>> for Relays {
    fn from(url: Cow<'_, str>) -> Self {
        Relays::new([url.into_owned()])
    }
}

impl<S: Into<String>> From<Vec<S>> for Relays {
    fn from(urls: Vec<S>) -> Self {
        Relays::new(urls)
    }
}

impl<S: Into<String>, const N: usize> From<[S; N]> for Relays {
    fn from(urls: [S; N]) -> Self {
        Relays::new(urls)
    }
}

impl<S: AsRef<str>> From<&[S]> for Relays {
    fn from(urls: &[S]) -> Self {
        Relays::new(urls.iter().map(|u| u.as_ref().to_owned()))
    }
}

impl From<&Relays> for Relays {
    fn from(relays: &Relays) -> Self {
        relays.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_url_list_converts() {
        let owned = String::from("http://a");
        let list = vec![owned.clone(), "http://b".to_owned()];
        assert_eq!(Relays::from(owned.as_str()), Relays::from(&owned));
        assert_eq!(Relays::from(owned.clone()).len(), 1);
        assert_eq!(
            Relays::from(Cow::Borrowed("http://a")).first(),
            Some("http://a")
        );
        assert_eq!(Relays::from(list.as_slice()), Relays::from(list.clone()));
        assert_eq!(Relays::from(["http://a", "http://b"]), Relays::from(list));
        let r = Relays::from(["x", "y", "z"]);
        assert_eq!(Relays::from(&r), r);
        assert_eq!(r.to_string(), "x, y, z");
        assert_eq!(format!("{r:?}"), r#"["x", "y", "z"]"#);
    }

    #[cfg(any(feature = "http", feature = "sse", feature = "ws"))]
    #[test]
    fn at_counts_round_the_list() {
        assert_eq!(Relays::from(["x", "y", "z"]).at(4), Some("y"));
        assert_eq!(Relays::new(Vec::<String>::new()).at(0), None);
    }
}
