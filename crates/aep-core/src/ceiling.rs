//! The emitter capture ceiling (AEP-0003 §9.1): the most content an adapter lets any
//! event carry, with per-category and per-type overrides.
//!
//! An adapter MUST expose a ceiling (default `metadata`) and SHOULD support per-category
//! overrides, the RECOMMENDED default being `attention.*: redacted` so prompts stay
//! readable. [`CaptureCeiling`] answers one question, "which ceiling applies to this event
//! type?"; enforcing the answer (pruning fields, rewriting `capture`) is the down-leveler's
//! job in [`capture`](crate::capture), and running free text kept at `redacted` through
//! the pipeline is [`redact`](crate::redact)'s.
//!
//! ```
//! use aep_core::{ceiling::CaptureCeiling, Capture};
//!
//! let ceiling: CaptureCeiling = "metadata,attention.*=redacted,tool.*=full,tool.failed=redacted".parse()?;
//! assert_eq!(ceiling.for_type_str("attention.requested"), Capture::Redacted);
//! assert_eq!(ceiling.for_type_str("tool.completed"), Capture::Full);
//! assert_eq!(ceiling.for_type_str("tool.failed"), Capture::Redacted);
//! assert_eq!(ceiling.for_type_str("run.started"), Capture::Metadata);
//! # Ok::<(), aep_core::ceiling::CeilingError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::level::UnknownLevel;
use crate::types::{EventType, CATEGORIES};
use crate::{Capture, Event};

/// What an override applies to, most specific last.
///
/// ```
/// use aep_core::{ceiling::Selector, CaptureCeiling, Capture};
/// let ceiling = CaptureCeiling::new(Capture::Redacted).with(Selector::Category("attention".into()), Capture::Metadata);
/// assert_eq!(ceiling.for_type_str("attention.requested"), Capture::Metadata);
/// assert_eq!(ceiling.for_type_str("tool.completed"), Capture::Redacted);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Selector {
    /// Every core type of a category: `attention.*`. Vendor types (`x.acme.attention.…`)
    /// are not included; select them with [`Selector::Vendor`] or [`Selector::Type`].
    Category(String),
    /// Every type of a vendor: `x.acme.*`.
    Vendor(String),
    /// One type: `tool.completed`, `x.acme.tool.synced`.
    Type(String),
}

impl Selector {
    /// Reads the pattern notation of AEP-0003 §9.1: `{category}.*`, `x.{vendor}.*`, or
    /// a whole event type.
    ///
    /// ```
    /// use aep_core::ceiling::Selector;
    /// assert_eq!(Selector::parse("attention.*")?, Selector::Category("attention".into()));
    /// assert_eq!(Selector::parse("x.acme.*")?, Selector::Vendor("acme".into()));
    /// assert_eq!(Selector::parse("tool.completed")?, Selector::Type("tool.completed".into()));
    /// assert!(Selector::parse("atention.*").is_err());
    /// # Ok::<(), aep_core::ceiling::CeilingError>(())
    /// ```
    pub fn parse(pattern: &str) -> Result<Selector, CeilingError> {
        let bad = || CeilingError::Pattern(pattern.to_owned());
        if let Some(prefix) = pattern.strip_suffix(".*") {
            if let Some(vendor) = prefix.strip_prefix("x.") {
                let ok = !vendor.is_empty()
                    && vendor.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                    });
                return if ok {
                    Ok(Selector::Vendor(vendor.to_owned()))
                } else {
                    Err(bad())
                };
            }
            return if CATEGORIES.contains(&prefix) {
                Ok(Selector::Category(prefix.to_owned()))
            } else {
                Err(bad())
            };
        }
        EventType::parse(pattern)
            .map(|t| Selector::Type(t.as_str().to_owned()))
            .map_err(|_| bad())
    }

    /// Whether this selector covers `event_type`.
    ///
    /// ```
    /// use aep_core::{ceiling::Selector, types::EventType};
    /// let t = EventType::parse("x.acme.tool.synced")?;
    /// assert!(Selector::Vendor("acme".into()).matches(&t));
    /// assert!(!Selector::Category("tool".into()).matches(&t));
    /// # Ok::<(), aep_core::types::TypeSyntaxError>(())
    /// ```
    pub fn matches(&self, event_type: &EventType<'_>) -> bool {
        match self {
            Selector::Category(c) => !event_type.is_vendor() && event_type.category() == c,
            Selector::Vendor(v) => event_type.vendor() == Some(v.as_str()),
            Selector::Type(t) => event_type.as_str() == t,
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Category(c) => write!(f, "{c}.*"),
            Selector::Vendor(v) => write!(f, "x.{v}.*"),
            Selector::Type(t) => f.write_str(t),
        }
    }
}

/// Why a ceiling could not be built.
///
/// ```
/// use aep_core::ceiling::{CaptureCeiling, CeilingError};
/// assert!(matches!("metadata,atention.*=none".parse::<CaptureCeiling>(), Err(CeilingError::Pattern(_))));
/// assert!(matches!("metadata,tool.*".parse::<CaptureCeiling>(), Err(CeilingError::Clause(_))));
/// assert!(matches!("secret".parse::<CaptureCeiling>(), Err(CeilingError::Level(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CeilingError {
    /// An override pattern is none of the accepted forms.
    #[error("capture ceiling pattern `{0}` is not `{{category}}.*` (a registered AEP-0002 §3 category), `x.{{vendor}}.*`, or an event type")]
    Pattern(String),
    /// A level is not a capture level.
    #[error(transparent)]
    Level(#[from] UnknownLevel),
    /// A clause of the text form is not `pattern=level`.
    #[error("capture ceiling clause `{0}` is not `pattern=level` (e.g. `attention.*=redacted`); only the first clause may be a bare level, the default")]
    Clause(String),
}

/// The capture ceiling of an emitter (AEP-0003 §9.1): a default level and overrides.
///
/// The most specific override wins: a [type](Selector::Type), then a
/// [vendor](Selector::Vendor), then a [category](Selector::Category), then the default.
/// An override may lower or raise the ceiling relative to the default.
///
/// [`Default`] is the spec's recommendation: `metadata`, with `attention.*` at `redacted`.
/// The text form (`FromStr`, `Display`) is `default[,pattern=level]*`.
///
/// ```
/// use aep_core::{ceiling::CaptureCeiling, Capture};
///
/// let ceiling = CaptureCeiling::new(Capture::Metadata)
///     .with_override("tool.*", Capture::Full)?
///     .with_override("attention.*", Capture::Redacted)?;
/// assert_eq!(ceiling.for_type_str("tool.requested"), Capture::Full);
/// assert_eq!(ceiling.to_string(), "metadata,tool.*=full,attention.*=redacted");
/// assert_eq!(CaptureCeiling::default().to_string(), "metadata,attention.*=redacted");
/// # Ok::<(), aep_core::ceiling::CeilingError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureCeiling {
    default: Capture,
    /// In insertion order; a later override of the same selector replaces the earlier.
    overrides: Vec<(Selector, Capture)>,
}

impl Default for CaptureCeiling {
    fn default() -> Self {
        CaptureCeiling::new(Capture::Metadata).with(
            Selector::Category("attention".to_owned()),
            Capture::Redacted,
        )
    }
}

impl CaptureCeiling {
    /// A ceiling of `default` for every type, without overrides.
    ///
    /// ```
    /// use aep_core::{ceiling::CaptureCeiling, Capture};
    /// assert_eq!(CaptureCeiling::new(Capture::None).for_type_str("attention.requested"), Capture::None);
    /// ```
    pub fn new(default: Capture) -> CaptureCeiling {
        CaptureCeiling {
            default,
            overrides: Vec::new(),
        }
    }

    /// Adds (or replaces) the override for `selector`.
    ///
    /// ```
    /// use aep_core::{ceiling::{CaptureCeiling, Selector}, Capture};
    /// let c = CaptureCeiling::default().with(Selector::Category("attention".into()), Capture::Metadata);
    /// assert_eq!(c.for_type_str("attention.requested"), Capture::Metadata);
    /// ```
    #[must_use]
    pub fn with(mut self, selector: Selector, level: Capture) -> CaptureCeiling {
        match self.overrides.iter_mut().find(|(s, _)| *s == selector) {
            Some(slot) => slot.1 = level,
            None => self.overrides.push((selector, level)),
        }
        self
    }

    /// Adds (or replaces) the override for a pattern in the notation of
    /// [`Selector::parse`].
    ///
    /// ```
    /// use aep_core::{ceiling::CaptureCeiling, Capture};
    /// let c = CaptureCeiling::default().with_override("x.acme.*", Capture::None)?;
    /// assert_eq!(c.for_type_str("x.acme.tool.synced"), Capture::None);
    /// assert!(CaptureCeiling::default().with_override("tools.*", Capture::Full).is_err());
    /// # Ok::<(), aep_core::ceiling::CeilingError>(())
    /// ```
    pub fn with_override(
        self,
        pattern: &str,
        level: Capture,
    ) -> Result<CaptureCeiling, CeilingError> {
        Ok(self.with(Selector::parse(pattern)?, level))
    }

    /// The level for types no override covers.
    ///
    /// ```
    /// use aep_core::{ceiling::CaptureCeiling, Capture};
    /// assert_eq!(CaptureCeiling::default().default_level(), Capture::Metadata);
    /// ```
    pub fn default_level(&self) -> Capture {
        self.default
    }

    /// The overrides, in the order they were added.
    ///
    /// ```
    /// use aep_core::{ceiling::{CaptureCeiling, Selector}, Capture};
    /// let c = CaptureCeiling::default();
    /// assert_eq!(c.overrides(), [(Selector::Category("attention".into()), Capture::Redacted)]);
    /// ```
    pub fn overrides(&self) -> &[(Selector, Capture)] {
        &self.overrides
    }

    /// The ceiling for events of `event_type`.
    ///
    /// ```
    /// use aep_core::{ceiling::CaptureCeiling, types::EventType, Capture};
    /// let t = EventType::parse("attention.answered")?;
    /// assert_eq!(CaptureCeiling::default().for_type(&t), Capture::Redacted);
    /// # Ok::<(), aep_core::types::TypeSyntaxError>(())
    /// ```
    pub fn for_type(&self, event_type: &EventType<'_>) -> Capture {
        self.overrides
            .iter()
            .filter(|(s, _)| s.matches(event_type))
            .max_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)))
            .map_or(self.default, |(_, level)| *level)
    }

    /// The ceiling for a `type` string. A string outside the AEP-0001 §6 grammar gets
    /// the lower of the default and every override: no override can be trusted to apply.
    ///
    /// ```
    /// use aep_core::{ceiling::CaptureCeiling, Capture};
    /// let c = CaptureCeiling::new(Capture::Full).with_override("attention.*", Capture::Redacted)?;
    /// assert_eq!(c.for_type_str("tool.completed"), Capture::Full);
    /// assert_eq!(c.for_type_str("Not A Type"), Capture::Redacted);
    /// # Ok::<(), aep_core::ceiling::CeilingError>(())
    /// ```
    pub fn for_type_str(&self, event_type: &str) -> Capture {
        match EventType::parse(event_type) {
            Ok(t) => self.for_type(&t),
            Err(_) => self
                .overrides
                .iter()
                .map(|(_, level)| *level)
                .fold(self.default, Capture::min),
        }
    }

    /// The ceiling for `event`'s type.
    ///
    /// ```
    /// use aep_core::{ceiling::CaptureCeiling, Capture, Event};
    /// let e = Event::new("01J", "attention.requested", "2026-07-03T10:00:00.000Z", "aep://h/agent/a/session/s", "a");
    /// assert_eq!(CaptureCeiling::default().for_event(&e), Capture::Redacted);
    /// ```
    pub fn for_event(&self, event: &Event) -> Capture {
        self.for_type_str(event.event_type())
    }
}

/// How specific a selector is.
fn rank(selector: &Selector) -> u8 {
    match selector {
        Selector::Category(_) => 0,
        Selector::Vendor(_) => 1,
        Selector::Type(_) => 2,
    }
}

impl fmt::Display for CaptureCeiling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.default.as_str())?;
        for (selector, level) in &self.overrides {
            write!(f, ",{selector}={level}")?;
        }
        Ok(())
    }
}

impl FromStr for CaptureCeiling {
    type Err = CeilingError;

    /// `default[,pattern=level]*`, whitespace around parts ignored; an empty string or a
    /// leading override keeps the `metadata` default of §9.1 (no recommended overrides are
    /// added: the text says everything).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut ceiling = CaptureCeiling::new(Capture::Metadata);
        for (i, clause) in s.split(',').map(str::trim).enumerate() {
            if clause.is_empty() && s.trim().is_empty() {
                continue;
            }
            match clause.split_once('=') {
                Some((pattern, level)) => {
                    ceiling = ceiling.with_override(pattern.trim(), level.trim().parse()?)?;
                }
                None if i == 0 => ceiling.default = clause.parse()?,
                None => return Err(CeilingError::Clause(clause.to_owned())),
            }
        }
        Ok(ceiling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_specific_override_wins_whatever_the_order() {
        let c: CaptureCeiling = "none,tool.completed=full,x.acme.*=redacted,tool.*=metadata"
            .parse()
            .unwrap();
        assert_eq!(c.for_type_str("tool.completed"), Capture::Full);
        assert_eq!(c.for_type_str("tool.failed"), Capture::Metadata);
        assert_eq!(c.for_type_str("x.acme.tool.completed"), Capture::Redacted);
        assert_eq!(c.for_type_str("run.started"), Capture::None);
    }

    #[test]
    fn text_form_round_trips_and_refuses_garbage() {
        for text in [
            "metadata",
            "full,attention.*=redacted",
            "none,x.a-b.*=full,tool.completed=none",
        ] {
            assert_eq!(text.parse::<CaptureCeiling>().unwrap().to_string(), text);
        }
        assert_eq!(
            "".parse::<CaptureCeiling>().unwrap(),
            CaptureCeiling::new(Capture::Metadata)
        );
        let err = |text: &str| text.parse::<CaptureCeiling>().unwrap_err();
        assert!(matches!(err("metadata,full"), CeilingError::Clause(_)));
        assert!(matches!(
            err("metadata,tool.*=most"),
            CeilingError::Level(_)
        ));
        assert!(matches!(
            err("metadata,tool=full"),
            CeilingError::Pattern(_)
        ));
        assert!(matches!(err("metadata,,"), CeilingError::Clause(_)));
    }

    #[test]
    fn replacing_an_override_keeps_one() {
        let c = CaptureCeiling::default()
            .with_override("attention.*", Capture::Full)
            .unwrap();
        assert_eq!(c.overrides().len(), 1);
        assert_eq!(c.for_type_str("attention.requested"), Capture::Full);
    }
}
