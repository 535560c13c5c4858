//! One named check of the conformance report.

/// The outcome of one check, named like the checks of the protocol's own runner
/// (`spec/conformance/run.py`), e.g. `golden:envelope-valid:3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Stable check name: `{class}:{what}:{case}`.
    pub name: String,
    /// Whether it passed.
    pub pass: bool,
    /// Why it failed (or a note when it passed).
    pub detail: Option<String>,
}

impl Check {
    /// A check from a condition and a failure detail.
    pub fn new(name: impl Into<String>, pass: bool, detail: impl Into<Option<String>>) -> Check {
        Check {
            name: name.into(),
            pass,
            detail: detail.into(),
        }
    }
}
