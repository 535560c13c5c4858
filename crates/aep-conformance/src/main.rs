//! `aep-conformance`: runs the protocol's fixture corpus through aep-core.
//!
//! ```text
//! aep-conformance [--fixtures DIR] [--json PATH|-] [--class NAME]...
//! ```
//!
//! Prints one `PASS`/`FAIL` line per check, named like the checks of the protocol's own
//! runner (`spec/conformance/run.py`), and exits 1 when any check fails (2 on a usage
//! error). `--json PATH` also writes the `aep-conformance-report` (`tool` = `run-rs`);
//! `--json -` puts the report alone on stdout and the human lines on stderr.
//! `--fixtures` defaults to the workspace's `fixtures/` (the corpus is its
//! `conformance/`); `--class` runs only the named classes.

mod check;
mod fixtures;
mod report;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use check::Check;

/// Declares the fixture classes in report order. Each is a module exposing
/// `pub fn run(fixtures: &Path) -> Vec<Check>`, where `fixtures` is the workspace's
/// fixture root (holding `conformance/`, `schemas/`, `projection/`); adding a class is
/// one line here.
macro_rules! classes {
    ($($module:ident => $name:literal,)*) => {
        $(mod $module;)*
        /// Every class: its name on the command line, and its runner.
        const CLASSES: &[(&str, fn(&Path) -> Vec<Check>)] = &[$(($name, $module::run),)*];
    };
}

classes! {
    golden => "golden",
    invalid => "invalid",
    stream => "golden-stream",
    attr_match => "attr-match",
    downlevel => "downlevel",
    gating => "capture-gating",
    redaction => "redaction",
    projection => "projection",
}

/// The workspace's fixture directory, found from this crate's manifest at compile time.
const DEFAULT_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures");

const USAGE: &str = "usage: aep-conformance [--fixtures DIR] [--json PATH|-] [--class NAME]...";

#[derive(Debug)]
struct Options {
    fixtures: PathBuf,
    json: Option<String>,
    classes: Vec<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut opts = Options {
        fixtures: PathBuf::from(DEFAULT_FIXTURES),
        json: None,
        classes: Vec::new(),
    };
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--fixtures" => opts.fixtures = PathBuf::from(value("--fixtures")?),
            "--json" => opts.json = Some(value("--json")?),
            "--class" => {
                let name = value("--class")?;
                if !CLASSES.iter().any(|(n, _)| *n == name) {
                    let known: Vec<&str> = CLASSES.iter().map(|(n, _)| *n).collect();
                    return Err(format!(
                        "unknown class `{name}`; classes: {}",
                        known.join(", ")
                    ));
                }
                opts.classes.push(name);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(opts)
}

fn main() -> ExitCode {
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(opts) => opts,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("aep-conformance: {why}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let json_stdout = opts.json.as_deref() == Some("-");
    let mut human: Box<dyn Write> = if json_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };

    let started_at = report::now();
    let _ = writeln!(
        human,
        "aep-conformance ({}), fixtures {}",
        report::TOOL,
        opts.fixtures.display()
    );
    let mut checks = Vec::new();
    for (name, run) in CLASSES {
        if !opts.classes.is_empty() && !opts.classes.iter().any(|c| c == name) {
            continue;
        }
        for check in run(&opts.fixtures) {
            let _ = match (&check.detail, check.pass) {
                (Some(detail), false) => writeln!(human, "FAIL  {} — {detail}", check.name),
                (_, pass) => writeln!(
                    human,
                    "{}  {}",
                    if pass { "PASS" } else { "FAIL" },
                    check.name
                ),
            };
            checks.push(check);
        }
    }
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
                eprintln!("aep-conformance: cannot render the report: {e}");
                return ExitCode::from(2);
            }
        };
        let written = if json_stdout {
            std::io::stdout().write_all(text.as_bytes())
        } else {
            std::fs::write(target, text)
        };
        if let Err(e) = written {
            eprintln!("aep-conformance: cannot write the report to {target}: {e}");
            return ExitCode::from(2);
        }
    }
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Options, String> {
        parse_args(list.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn arguments() {
        let o = args(&["--json", "-", "--fixtures", "/x", "--class", "golden"]).unwrap();
        assert_eq!(o.json.as_deref(), Some("-"));
        assert_eq!(o.fixtures, PathBuf::from("/x"));
        assert_eq!(o.classes, ["golden"]);
        assert!(args(&["--json"]).is_err());
        assert!(args(&["--class", "nope"]).is_err());
        assert!(args(&["--frobnicate"]).is_err());
    }

    #[test]
    fn the_corpus_passes_every_class() {
        let fixtures = Path::new(DEFAULT_FIXTURES);
        for (name, run) in CLASSES {
            let checks = run(fixtures);
            assert!(!checks.is_empty(), "{name} ran no checks");
            let failed: Vec<&Check> = checks.iter().filter(|c| !c.pass).collect();
            assert!(failed.is_empty(), "{name}: {failed:#?}");
        }
    }

    #[test]
    fn a_missing_corpus_fails_instead_of_crashing() {
        for (_, run) in CLASSES {
            let checks = run(Path::new("/nonexistent/fixtures"));
            assert!(checks.iter().any(|c| !c.pass));
        }
    }
}
