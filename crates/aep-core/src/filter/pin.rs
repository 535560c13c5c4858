//! What an attr-match filter pins (AEP-0003 §6.2): the attribute whose value an event
//! must carry for the filter to match it, and the values it may carry.
//!
//! A relay fanning out to many subscriptions files each one under what its filter pins
//! and offers an event only to the subscriptions filed under the event's own values
//! (plus those that pin nothing), so the cost of routing an event grows with the
//! subscriptions it can match rather than with all of them. The index is a
//! superset: every subscription it offers an event to is still decided by its whole
//! filter, and an event it does not offer to a subscription never matches it
//! ([`Filter::pin`]'s guarantee).
//!
//! ```
//! use aep_core::filter::{Filter, PinAttr};
//! use aep_core::Event;
//!
//! let filter = Filter::from_json(r#"{"session":["s1","s2"],"severity":{"gte":"notice"}}"#)?;
//! let pin = filter.pin().expect("a session inclusion pins the session");
//! assert_eq!(pin.attr(), PinAttr::Session);
//! assert_eq!(pin.keys(), ["s1", "s2"]);
//!
//! let event: Event = r#"{"aep":"0.1","id":"1","type":"tool.called","time":"t","source":"s","agent":"a","session":"s3","seq":1}"#.parse()?;
//! // filed under s1 and s2, the subscription is never offered an event of s3
//! assert_eq!(pin.attr().key_of(&event), Some("s3"));
//! assert!(!filter.matches(&event));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::event::{EnvelopeView, Event};

use super::{Attr, Filter, StrSet, Test};

/// An attribute a filter can pin, in the order [`Filter::pin`] prefers them: the
/// session first (most subscriptions follow one session), then the agent, then the
/// type's category.
///
/// ```
/// use aep_core::filter::PinAttr;
/// assert_eq!(PinAttr::ALL, [PinAttr::Session, PinAttr::Agent, PinAttr::Category]);
/// assert_eq!(PinAttr::Category.as_str(), "type");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PinAttr {
    /// `session`: an equality or inclusion on it.
    Session,
    /// `agent`: an equality or inclusion on it.
    Agent,
    /// `type`: the category ([`type_category`]) that every exact type and every
    /// `prefix.*` pattern of the filter lies in.
    Category,
}

impl PinAttr {
    /// Every pinnable attribute, in the order [`Filter::pin`] prefers them.
    pub const ALL: [PinAttr; 3] = [PinAttr::Session, PinAttr::Agent, PinAttr::Category];

    /// The filter key it reads (`session`, `agent`, `type`).
    ///
    /// ```
    /// assert_eq!(aep_core::filter::PinAttr::Agent.as_str(), "agent");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            PinAttr::Session => "session",
            PinAttr::Agent => "agent",
            PinAttr::Category => "type",
        }
    }

    /// The key `event` is filed under for this attribute: its session (none for an
    /// agent-scoped event, which no session predicate matches), its agent, or its
    /// type's category.
    ///
    /// ```
    /// use aep_core::{filter::PinAttr, Event};
    /// let e: Event = r#"{"aep":"0.1","id":"1","type":"attention.requested","time":"t","source":"s","agent":"a"}"#.parse()?;
    /// assert_eq!(PinAttr::Session.key_of(&e), None);
    /// assert_eq!(PinAttr::Agent.key_of(&e), Some("a"));
    /// assert_eq!(PinAttr::Category.key_of(&e), Some("attention"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key_of(self, event: &Event) -> Option<&str> {
        self.key_from(event.session(), event.agent(), event.event_type())
    }

    /// [`key_of`](Self::key_of) for an envelope read in place: the same key.
    ///
    /// ```
    /// use aep_core::{filter::PinAttr, EnvelopeView};
    /// let line = r#"{"aep":"0.1","id":"1","type":"tool.called","time":"t","source":"s","agent":"a","session":"s1","seq":0}"#;
    /// let view = EnvelopeView::read(line).unwrap();
    /// assert_eq!(PinAttr::Session.key_of_view(&view), Some("s1"));
    /// assert_eq!(PinAttr::Category.key_of_view(&view), Some("tool"));
    /// ```
    pub fn key_of_view<'a>(self, view: &EnvelopeView<'a>) -> Option<&'a str> {
        self.key_from(view.session(), view.agent(), view.event_type())
    }

    fn key_from<'a>(
        self,
        session: Option<&'a str>,
        agent: &'a str,
        ty: &'a str,
    ) -> Option<&'a str> {
        match self {
            PinAttr::Session => session,
            PinAttr::Agent => Some(agent),
            PinAttr::Category => Some(type_category(ty)),
        }
    }
}

/// The category of a type: its first dot-separated segment (AEP-0001 §6), the whole
/// type when it has no dot. Every type an exact `type` value or a `prefix.*` pattern
/// matches has the category of that value or pattern.
///
/// ```
/// use aep_core::filter::type_category;
/// assert_eq!(type_category("attention.requested"), "attention");
/// assert_eq!(type_category("x.acme.tool.synced"), "x");
/// assert_eq!(type_category("progress"), "progress");
/// ```
pub fn type_category(ty: &str) -> &str {
    ty.split_once('.').map_or(ty, |(category, _)| category)
}

/// What a filter pins: one attribute, and the keys an event must carry there for the
/// filter to match it (sorted, each once). See [`Filter::pin`].
///
/// ```
/// use aep_core::filter::{Filter, PinAttr};
/// let f = Filter::from_json(r#"{"type":["tool.*","attention.requested","tool.called"]}"#)?;
/// let pin = f.pin().unwrap();
/// assert_eq!((pin.attr(), pin.keys()), (PinAttr::Category, &["attention", "tool"][..]));
/// # Ok::<(), aep_core::FilterError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin<'f> {
    attr: PinAttr,
    keys: Vec<&'f str>,
}

impl<'f> Pin<'f> {
    /// The attribute pinned.
    ///
    /// ```
    /// let f = aep_core::filter::Filter::from_json(r#"{"agent":"a"}"#)?;
    /// assert_eq!(f.pin().unwrap().attr(), aep_core::filter::PinAttr::Agent);
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn attr(&self) -> PinAttr {
        self.attr
    }

    /// The keys a matching event carries there, sorted, each once (never empty: a
    /// filter refuses an empty inclusion, §6.1).
    ///
    /// ```
    /// let f = aep_core::filter::Filter::from_json(r#"{"agent":["b","a","b"]}"#)?;
    /// assert_eq!(f.pin().unwrap().keys(), ["a", "b"]);
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn keys(&self) -> &[&'f str] {
        &self.keys
    }

    /// Whether an event filed under `key` (its [`PinAttr::key_of`]) can match.
    ///
    /// ```
    /// let f = aep_core::filter::Filter::from_json(r#"{"session":"s1"}"#)?;
    /// let pin = f.pin().unwrap();
    /// assert!(pin.admits(Some("s1")));
    /// assert!(!pin.admits(Some("s2")));
    /// assert!(!pin.admits(None));
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn admits(&self, key: Option<&str>) -> bool {
        key.is_some_and(|k| self.keys.binary_search(&k).is_ok())
    }
}

impl Filter {
    /// What this filter pins, for an index of subscriptions: the first of
    /// [`PinAttr::ALL`] it constrains, with the keys an event must carry there; `None`
    /// when it pins none of them (`{}`, a severity alone, ...), and every event must be
    /// decided by it.
    ///
    /// The guarantee an index relies on: when [`matches`](Self::matches) holds for an
    /// event, the event's [`PinAttr::key_of`] is one of the keys. An index that offers an
    /// event only to the subscriptions filed under its keys loses nothing.
    ///
    /// ```
    /// use aep_core::filter::{Filter, PinAttr};
    /// let f = Filter::from_json(r#"{"agent":"a","session":"s1","type":"tool.*"}"#)?;
    /// let pin = f.pin().unwrap();
    /// assert_eq!((pin.attr(), pin.keys()), (PinAttr::Session, &["s1"][..]));
    /// assert_eq!(Filter::from_json(r#"{"severity":"error"}"#)?.pin(), None);
    /// assert_eq!(Filter::all().pin(), None);
    /// # Ok::<(), aep_core::FilterError>(())
    /// ```
    pub fn pin(&self) -> Option<Pin<'_>> {
        PinAttr::ALL.into_iter().find_map(|attr| self.pin_on(attr))
    }

    fn pin_on(&self, attr: PinAttr) -> Option<Pin<'_>> {
        let mut keys: Vec<&str> = Vec::new();
        for pred in &*self.preds {
            match (&pred.attr, &pred.test, attr) {
                (Attr::Session, Test::Strs(set), PinAttr::Session)
                | (Attr::Agent, Test::Strs(set), PinAttr::Agent) => {
                    // a second predicate on the key cannot be (duplicate keys are
                    // refused); should it ever be, the first alone is still a superset
                    keys.extend(strs(set));
                    break;
                }
                (Attr::Type, Test::Type { exact, prefixes }, PinAttr::Category) => {
                    keys.extend(strs(exact).map(type_category));
                    // a prefix is `p.`: its category is what stands before its first dot
                    keys.extend(prefixes.iter().map(|p| type_category(p)));
                    break;
                }
                _ => {}
            }
        }
        if keys.is_empty() {
            return None;
        }
        keys.sort_unstable();
        keys.dedup();
        Some(Pin { attr, keys })
    }
}

fn strs(set: &StrSet) -> Box<dyn Iterator<Item = &str> + '_> {
    match set {
        StrSet::Small(v) => Box::new(v.iter().map(|s| &**s)),
        StrSet::Large(set) => Box::new(set.iter().map(|s| &**s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefers_the_session_then_the_agent_then_the_category() {
        let pin = |text: &str| {
            Filter::from_json(text).unwrap().pin().map(|p| {
                (
                    p.attr(),
                    p.keys().iter().map(|k| k.to_string()).collect::<Vec<_>>(),
                )
            })
        };
        assert_eq!(
            pin(r#"{"type":"tool.called","agent":"a","session":"s"}"#),
            Some((PinAttr::Session, vec!["s".into()]))
        );
        assert_eq!(
            pin(r#"{"type":"tool.called","agent":["b","a"]}"#),
            Some((PinAttr::Agent, vec!["a".into(), "b".into()]))
        );
        assert_eq!(
            pin(r#"{"type":["x.acme.*","x.other.thing"],"severity":"error"}"#),
            Some((PinAttr::Category, vec!["x".into()]))
        );
        for none in ["{}", r#"{"severity":"error"}"#, r#"{"run":"r","acme":1}"#] {
            assert_eq!(pin(none), None, "{none}");
        }
        // a large inclusion set (hashed) is read whole
        let many: Vec<String> = (0..20).map(|i| format!("s{i:02}")).collect();
        let f = Filter::from_value(&serde_json::json!({ "session": many })).unwrap();
        assert_eq!(f.pin().unwrap().keys().len(), 20);
    }
}
