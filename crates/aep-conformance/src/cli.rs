//! The runner as a command line runs it: one `PASS`/`FAIL` line per check, a summary,
//! the `aep-conformance-report` on request, and an exit code. The `aep-conformance`
//! binary and `aep conformance` both call [`run`], so the two print and exit alike.

use std::io::Write;
use std::path::PathBuf;

use crate::{report, Runner};

/// What a command-line run takes.
///
/// ```
/// let opts = aep_conformance::cli::Options::new(aep_conformance::workspace_fixtures());
/// assert!(opts.json.is_none() && opts.classes.is_empty());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// The fixture root (holding `conformance/`, `schemas/`, `projection/`).
    pub fixtures: PathBuf,
    /// Where the JSON report goes: a path, or `-` for stdout (the human lines then go
    /// to stderr).
    pub json: Option<String>,
    /// The classes to run (all when empty).
    pub classes: Vec<String>,
}

impl Options {
    /// Every class over `fixtures`, no JSON report.
    ///
    /// ```
    /// let opts = aep_conformance::cli::Options::new("fixtures");
    /// assert_eq!(opts.fixtures, std::path::PathBuf::from("fixtures"));
    /// ```
    pub fn new(fixtures: impl Into<PathBuf>) -> Options {
        Options {
            fixtures: fixtures.into(),
            json: None,
            classes: Vec::new(),
        }
    }

    aep_core::setters! {
        /// Writes the JSON report to `target` (`-`: stdout).
        ///
        /// ```
        /// let opts = aep_conformance::cli::Options::new("fixtures").json("-");
        /// assert_eq!(opts.json.as_deref(), Some("-"));
        /// ```
        pub fn json(target: impl Into<String>) => json = Some(target.into());
        /// Runs only `class` (and the others named).
        ///
        /// ```
        /// let opts = aep_conformance::cli::Options::new("fixtures").class("golden").class("otlp");
        /// assert_eq!(opts.classes, ["golden", "otlp"]);
        /// ```
        pub fn class(class: impl Into<String>) => self.classes.push(class.into());
    }
}

/// How a run ended.
///
/// ```
/// use aep_conformance::cli::Outcome;
/// assert_eq!(Outcome::Passed.code(), 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every check passed (exit 0).
    Passed,
    /// At least one check failed (exit 1).
    Failed,
    /// The run could not be done as asked: an unknown class, a report that cannot be
    /// written (exit 2).
    Usage,
}

impl Outcome {
    /// The exit code of the command line: 0, 1 or 2.
    ///
    /// ```
    /// assert_eq!(aep_conformance::cli::Outcome::Failed.code(), 1);
    /// ```
    pub fn code(self) -> u8 {
        match self {
            Outcome::Passed => 0,
            Outcome::Failed => 1,
            Outcome::Usage => 2,
        }
    }
}

/// Runs the corpus as the command line does, `tool` naming the program in the header.
/// Problems are reported on stderr prefixed with `tool`.
///
/// ```no_run
/// use aep_conformance::cli::{run, Options, Outcome};
/// let outcome = run("my-runner", &Options::new(aep_conformance::workspace_fixtures()).class("golden"));
/// assert_eq!(outcome, Outcome::Passed);
/// ```
pub fn run(tool: &str, opts: &Options) -> Outcome {
    let json_stdout = opts.json.as_deref() == Some("-");
    let mut human: Box<dyn Write> = if json_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let mut runner = Runner::new(&opts.fixtures);
    for name in &opts.classes {
        runner = match runner.class(name) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{tool}: {e}");
                return Outcome::Usage;
            }
        };
    }
    let started_at = report::now();
    let _ = writeln!(
        human,
        "{tool} ({}), fixtures {}",
        report::TOOL,
        opts.fixtures.display()
    );
    let checks = runner.run_each(|check| {
        let _ = match (&check.detail, check.pass) {
            (Some(detail), false) => writeln!(human, "FAIL  {} — {detail}", check.name),
            (_, pass) => writeln!(
                human,
                "{}  {}",
                if pass { "PASS" } else { "FAIL" },
                check.name
            ),
        };
    });
    let failures = checks.iter().filter(|c| !c.pass).count();
    let _ = writeln!(
        human,
        "\n{}: {failures} failure(s) of {} check(s)",
        if failures == 0 { "OK" } else { "FAILED" },
        checks.len()
    );
    if let Some(target) = &opts.json {
        let doc = report::report(&checks, &started_at, &report::now());
        let text = match serde_json::to_string_pretty(&doc) {
            Ok(t) => t + "\n",
            Err(e) => {
                eprintln!("{tool}: cannot render the report: {e}");
                return Outcome::Usage;
            }
        };
        let written = if json_stdout {
            std::io::stdout().write_all(text.as_bytes())
        } else {
            std::fs::write(target, text)
        };
        if let Err(e) = written {
            eprintln!("{tool}: cannot write the report to {target}: {e}");
            return Outcome::Usage;
        }
    }
    if failures == 0 {
        Outcome::Passed
    } else {
        Outcome::Failed
    }
}
