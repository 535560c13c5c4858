//! # aep-conformance: the protocol's fixture corpus, run through this SDK
//!
//! The runner behind the `aep-conformance` binary, as a library, so that a CLI (`aep
//! conformance`) or a test calls the same code. Every class of the protocol's own runner
//! (`spec/conformance/run.py`) is here with its check names: the golden corpus, the
//! invalid corpus, the stream invariants, attr-match, down-leveling, capture gating,
//! redaction, the AEP-0005 bridges (CloudEvents, OTLP, OCSF, through `aep-bridge`) and
//! the Annex A mapping pins; plus this SDK's own classes: `adapters` (its Annex A
//! mappings, `aep-adapters`, against every pin) and `projection`.
//!
//! ## Pointing it at a corpus
//!
//! A corpus directory is a *fixture root*: the directory holding `conformance/` (the
//! protocol's `conformance/fixtures/` tree: `golden/`, `invalid/`, `attr-match/`,
//! `ce-roundtrip/`, `otlp/`, `ocsf/`, `mappings/`, ...), `schemas/` (for the severity
//! registry) and `projection/`. This repository's `fixtures/` is one, byte-identical to
//! the protocol's corpus; [`workspace_fixtures`] names it for code built inside the
//! workspace. A caller passes its own root to [`Runner::new`]:
//!
//! ```
//! use aep_conformance::Runner;
//!
//! let runner = Runner::new(aep_conformance::workspace_fixtures()).class("golden-stream")?;
//! let checks = runner.run();
//! assert!(checks.iter().all(|c| c.pass), "{checks:#?}");
//! assert!(checks.iter().any(|c| c.name == "golden has no (source,id) collision"));
//! # Ok::<(), aep_conformance::UnknownClass>(())
//! ```
//!
//! A missing or unreadable corpus never panics: each class reports it as a failing
//! check. [`report::report`] turns the checks into the `aep-conformance-report`
//! document the protocol's tools share; [`cli::run`] is the whole command line (the
//! `aep-conformance` binary and `aep conformance` both call it). With the `embedded`
//! feature, [`embedded`] carries the corpus inside the binary, for a runner installed
//! without the repository.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod check;
pub mod cli;
#[cfg(feature = "embedded")]
#[cfg_attr(docsrs, doc(cfg(feature = "embedded")))]
pub mod embedded;
mod fixtures;
pub mod report;

use std::fmt;
use std::path::{Path, PathBuf};

pub use check::Check;

/// One fixture class: its name (as `--class` takes it) and its runner.
///
/// ```
/// let golden = aep_conformance::class("golden").unwrap();
/// assert_eq!(golden.name(), "golden");
/// ```
#[derive(Clone, Copy)]
pub struct Class {
    name: &'static str,
    run: fn(&Path) -> Vec<Check>,
}

impl Class {
    /// The class's name.
    ///
    /// ```
    /// assert_eq!(aep_conformance::classes()[0].name(), "golden");
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Runs the class over the fixture root `fixtures`.
    ///
    /// ```
    /// let checks = aep_conformance::class("invalid").unwrap().run(&aep_conformance::workspace_fixtures());
    /// assert!(checks.iter().all(|c| c.name.starts_with("invalid rejected: ") || c.name.starts_with("unknown-type")));
    /// ```
    pub fn run(&self, fixtures: &Path) -> Vec<Check> {
        (self.run)(fixtures)
    }
}

impl fmt::Debug for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Class").field(&self.name).finish()
    }
}

/// Declares the fixture classes in report order. Each is a module exposing
/// `pub fn run(fixtures: &Path) -> Vec<Check>`, where `fixtures` is the fixture root
/// (holding `conformance/`, `schemas/`, `projection/`); adding a class is one line here.
macro_rules! classes {
    ($($module:ident => $name:literal,)*) => {
        $(mod $module;)*
        const CLASSES: &[Class] = &[$(Class { name: $name, run: $module::run },)*];
    };
}

classes! {
    golden => "golden",
    invalid => "invalid",
    stream => "golden-stream",
    attr_match => "attr-match",
    ce => "ce-roundtrip",
    otlp => "otlp",
    ocsf => "ocsf",
    downlevel => "downlevel",
    gating => "capture-gating",
    redaction => "redaction",
    mappings => "mappings",
    adapters => "adapters",
    projection => "projection",
}

/// Every class, in report order.
///
/// ```
/// let names: Vec<&str> = aep_conformance::classes().iter().map(|c| c.name()).collect();
/// assert!(names.contains(&"attr-match") && names.contains(&"projection"));
/// ```
pub fn classes() -> &'static [Class] {
    CLASSES
}

/// The class named `name`.
///
/// ```
/// assert!(aep_conformance::class("nope").is_none());
/// ```
pub fn class(name: &str) -> Option<&'static Class> {
    CLASSES.iter().find(|c| c.name == name)
}

/// This workspace's fixture root (`fixtures/`), located at compile time: right for
/// code built and run inside the repository, and nowhere else. Anything installed
/// passes its own corpus directory to [`Runner::new`].
///
/// ```
/// assert!(aep_conformance::workspace_fixtures().join("conformance/golden/golden.jsonl").is_file());
/// ```
pub fn workspace_fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures"))
}

/// A class name that no class has.
///
/// ```
/// let err = aep_conformance::Runner::new("fixtures").class("nope").unwrap_err();
/// assert!(err.to_string().starts_with("unknown class `nope`; classes: golden, "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClass(String);

impl fmt::Display for UnknownClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = CLASSES.iter().map(|c| c.name).collect();
        write!(
            f,
            "unknown class `{}`; classes: {}",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownClass {}

/// Runs classes over one fixture root: every class, or the ones picked with
/// [`Runner::class`], in report order.
///
/// ```
/// let runner = aep_conformance::Runner::new(aep_conformance::workspace_fixtures())
///     .class("golden")?
///     .class("attr-match")?;
/// let mut seen = 0;
/// let checks = runner.run_each(|_| seen += 1);
/// assert_eq!(seen, checks.len());
/// # Ok::<(), aep_conformance::UnknownClass>(())
/// ```
#[derive(Debug, Clone)]
pub struct Runner {
    fixtures: PathBuf,
    only: Vec<&'static str>,
}

impl Runner {
    /// A runner over the fixture root `fixtures` (see the [crate docs](crate)).
    ///
    /// ```
    /// let r = aep_conformance::Runner::new("/srv/aep/fixtures");
    /// assert_eq!(r.fixtures(), std::path::Path::new("/srv/aep/fixtures"));
    /// ```
    pub fn new(fixtures: impl Into<PathBuf>) -> Self {
        Runner {
            fixtures: fixtures.into(),
            only: Vec::new(),
        }
    }

    /// Runs only the named classes (this one and the others picked).
    ///
    /// ```
    /// assert!(aep_conformance::Runner::new("fixtures").class("redaction").is_ok());
    /// ```
    pub fn class(mut self, name: &str) -> Result<Self, UnknownClass> {
        let class = class(name).ok_or_else(|| UnknownClass(name.to_owned()))?;
        if !self.only.contains(&class.name) {
            self.only.push(class.name);
        }
        Ok(self)
    }

    /// The fixture root.
    ///
    /// ```
    /// assert_eq!(aep_conformance::Runner::new("f").fixtures(), std::path::Path::new("f"));
    /// ```
    pub fn fixtures(&self) -> &Path {
        &self.fixtures
    }

    /// Runs the classes and returns every check.
    ///
    /// ```
    /// let checks = aep_conformance::Runner::new("/nonexistent").class("golden")?.run();
    /// assert!(checks.iter().any(|c| !c.pass)); // a missing corpus fails, never panics
    /// # Ok::<(), aep_conformance::UnknownClass>(())
    /// ```
    pub fn run(&self) -> Vec<Check> {
        self.run_each(|_| {})
    }

    /// Runs the classes, handing each check to `each` as soon as its class has run, and
    /// returns them all.
    ///
    /// ```
    /// let mut failed = 0;
    /// aep_conformance::Runner::new(aep_conformance::workspace_fixtures())
    ///     .class("downlevel")?
    ///     .run_each(|c| failed += usize::from(!c.pass));
    /// assert_eq!(failed, 0);
    /// # Ok::<(), aep_conformance::UnknownClass>(())
    /// ```
    pub fn run_each(&self, mut each: impl FnMut(&Check)) -> Vec<Check> {
        let mut all = Vec::new();
        for class in CLASSES {
            if !self.only.is_empty() && !self.only.contains(&class.name) {
                continue;
            }
            for check in class.run(&self.fixtures) {
                each(&check);
                all.push(check);
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_passes_every_class() {
        let fixtures = workspace_fixtures();
        for class in CLASSES {
            let checks = class.run(&fixtures);
            assert!(!checks.is_empty(), "{} ran no checks", class.name);
            let failed: Vec<&Check> = checks.iter().filter(|c| !c.pass).collect();
            assert!(failed.is_empty(), "{}: {failed:#?}", class.name);
        }
    }

    #[test]
    fn a_missing_corpus_fails_instead_of_crashing() {
        for class in CLASSES {
            let checks = class.run(Path::new("/nonexistent/fixtures"));
            assert!(checks.iter().any(|c| !c.pass), "{}", class.name);
        }
    }
}
