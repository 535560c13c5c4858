//! One named check of the conformance report.

/// The outcome of one check, named like the checks of the protocol's own runner
/// (`spec/conformance/run.py`), e.g. `golden[3] tool.completed envelope-valid`.
///
/// ```
/// use aep_conformance::Check;
/// let c = Check::new("golden[0] session.started envelope-valid", true, "unused".to_owned());
/// assert!(c.pass && c.detail.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Stable check name, as `run.py` spells it where `run.py` has the check.
    pub name: String,
    /// Whether it passed.
    pub pass: bool,
    /// Why it failed; `None` when there is nothing to say.
    pub detail: Option<String>,
}

impl Check {
    /// A check from a condition and the detail to report when it fails (dropped when it
    /// passes, as the report format asks).
    ///
    /// ```
    /// let c = aep_conformance::Check::new("x", false, "why".to_owned());
    /// assert_eq!(c.detail.as_deref(), Some("why"));
    /// ```
    pub fn new(name: impl Into<String>, pass: bool, detail: impl Into<Option<String>>) -> Check {
        Check {
            name: name.into(),
            pass,
            detail: if pass { None } else { detail.into() },
        }
    }

    /// A passing check.
    ///
    /// ```
    /// assert!(aep_conformance::Check::pass("x").pass);
    /// ```
    pub fn pass(name: impl Into<String>) -> Check {
        Check::new(name, true, None)
    }

    /// A failing check.
    ///
    /// ```
    /// assert!(!aep_conformance::Check::fail("x", "why").pass);
    /// ```
    pub fn fail(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check::new(name, false, Some(detail.into()))
    }
}
