//! The two ordered levels of the envelope: [`Severity`] (AEP-0001 §8.1) and
//! [`Capture`] (AEP-0001 §8.2).

use std::str::FromStr;

use crate::names::{self, display_as_str};

use serde::{Deserialize, Serialize};

/// The severities in order, as messages list what is expected.
pub(crate) const SEVERITY_NAMES: &str = "debug, info, notice, warning, error, critical";
/// The capture levels in order, as messages list what is expected.
pub(crate) const CAPTURE_NAMES: &str = "none, metadata, redacted, full";

/// Why a level string was refused: it names none of the registered levels.
///
/// ```
/// let err = "loud".parse::<aep_core::Severity>().unwrap_err();
/// assert_eq!(err.value(), "loud");
/// assert!(err.to_string().contains("debug, info, notice, warning, error, critical"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`: expected one of {expected}")]
pub struct UnknownLevel {
    what: &'static str,
    value: String,
    expected: &'static str,
}

impl UnknownLevel {
    /// The string that was refused.
    ///
    /// ```
    /// assert_eq!("max".parse::<aep_core::Capture>().unwrap_err().value(), "max");
    /// ```
    pub fn value(&self) -> &str {
        &self.value
    }
}

/// Event severity, totally ordered `debug < info < notice < warning < error < critical`
/// (AEP-0001 §8.1). Absent on the wire means [`Severity::Info`].
///
/// Exhaustive on purpose: §8.1 fixes the six levels and their order, and a relay's
/// backpressure rule (AEP-0003 §8.4) is written against exactly these.
///
/// ```
/// use aep_core::Severity;
/// assert!(Severity::Notice > Severity::Info);
/// assert_eq!("warning".parse::<Severity>().unwrap(), Severity::Warning);
/// assert_eq!(Severity::default(), Severity::Info);
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Diagnostic detail; droppable under backpressure (AEP-0003 §8.4).
    Debug,
    /// The default; droppable under backpressure (AEP-0003 §8.4).
    #[default]
    Info,
    /// Noteworthy; never dropped silently.
    Notice,
    /// Something may need attention.
    Warning,
    /// A fault.
    Error,
    /// A fault that stops the agent.
    Critical,
}

impl Severity {
    /// Every level, lowest first.
    ///
    /// ```
    /// use aep_core::Severity;
    /// assert!(Severity::ALL.windows(2).all(|w| w[0] < w[1]));
    /// assert_eq!(Severity::ALL[0], Severity::Debug);
    /// ```
    pub const ALL: [Severity; 6] = [
        Severity::Debug,
        Severity::Info,
        Severity::Notice,
        Severity::Warning,
        Severity::Error,
        Severity::Critical,
    ];

    /// The wire spelling.
    ///
    /// ```
    /// assert_eq!(aep_core::Severity::Critical.as_str(), "critical");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Debug => "debug",
            Severity::Info => "info",
            Severity::Notice => "notice",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }

    /// Whether an endpoint under backpressure may drop events of this level toward a
    /// slow consumer (AEP-0001 §8.1: only `debug` and `info`).
    ///
    /// ```
    /// assert!(aep_core::Severity::Info.is_droppable());
    /// assert!(!aep_core::Severity::Notice.is_droppable());
    /// ```
    pub const fn is_droppable(self) -> bool {
        matches!(self, Severity::Debug | Severity::Info)
    }
}

impl FromStr for Severity {
    type Err = UnknownLevel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        level(
            &Severity::ALL,
            Severity::as_str,
            "severity",
            SEVERITY_NAMES,
            s,
        )
    }
}

/// Content-capture level, ordered `none < metadata < redacted < full` (AEP-0001 §8.2).
/// Absent on the wire means [`Capture::Metadata`].
///
/// Exhaustive on purpose: §8.2 fixes the four levels, and every payload schema's
/// `x-aep-capture` annotation (AEP-0002 §5.1) is one of them.
///
/// ```
/// use aep_core::Capture;
/// assert!(Capture::Full > Capture::Redacted);
/// assert_eq!(Capture::default(), Capture::Metadata);
/// assert_eq!("none".parse::<Capture>().unwrap(), Capture::None);
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Capture {
    /// Envelope only; no payload content.
    None,
    /// Structural metadata: names, ids, counts, durations, statuses; no free text.
    #[default]
    Metadata,
    /// Free text present, passed through the redaction pipeline (AEP-0003 §9.4).
    Redacted,
    /// Verbatim content.
    Full,
}

impl Capture {
    /// Every level, lowest first.
    ///
    /// ```
    /// use aep_core::Capture;
    /// assert!(Capture::ALL.windows(2).all(|w| w[0] < w[1]));
    /// assert_eq!(Capture::ALL[3], Capture::Full);
    /// ```
    pub const ALL: [Capture; 4] = [
        Capture::None,
        Capture::Metadata,
        Capture::Redacted,
        Capture::Full,
    ];

    /// The wire spelling.
    ///
    /// ```
    /// assert_eq!(aep_core::Capture::Redacted.as_str(), "redacted");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Capture::None => "none",
            Capture::Metadata => "metadata",
            Capture::Redacted => "redacted",
            Capture::Full => "full",
        }
    }
}

impl FromStr for Capture {
    type Err = UnknownLevel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        level(
            &Capture::ALL,
            Capture::as_str,
            "capture level",
            CAPTURE_NAMES,
            s,
        )
    }
}

display_as_str!(Severity, Capture);

/// The level of `all` spelled `s`, or the error naming `what` and what is `expected`.
fn level<T: Copy>(
    all: &[T],
    as_str: fn(T) -> &'static str,
    what: &'static str,
    expected: &'static str,
    s: &str,
) -> Result<T, UnknownLevel> {
    names::find(all, as_str, s).ok_or_else(|| UnknownLevel {
        what,
        value: s.to_owned(),
        expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expected_lists_name_every_level_in_order() {
        let names = |all: &[&str]| all.join(", ");
        assert_eq!(SEVERITY_NAMES, names(&Severity::ALL.map(Severity::as_str)));
        assert_eq!(CAPTURE_NAMES, names(&Capture::ALL.map(Capture::as_str)));
    }

    #[test]
    fn order_and_round_trip() {
        for w in Severity::ALL.windows(2) {
            assert!(w[0] < w[1]);
        }
        for w in Capture::ALL.windows(2) {
            assert!(w[0] < w[1]);
        }
        for s in Severity::ALL {
            assert_eq!(s.as_str().parse::<Severity>().unwrap(), s);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        for c in Capture::ALL {
            assert_eq!(c.as_str().parse::<Capture>().unwrap(), c);
        }
        let err = "fatal".parse::<Severity>().unwrap_err();
        assert_eq!(err.value(), "fatal");
        assert!(err.to_string().contains("critical"));
        assert!(
            "Full".parse::<Capture>().is_err(),
            "levels are case-sensitive"
        );
    }
}
