//! `aep-conformance`: runs the protocol's fixture corpus through aep-core and
//! aep-bridge; a thin shell over the [`aep_conformance`] library (`Runner`).
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

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use aep_conformance::{report, Runner};

const USAGE: &str = "usage: aep-conformance [--fixtures DIR] [--json PATH|-] [--class NAME]...";

#[derive(Debug)]
struct Options {
    fixtures: PathBuf,
    json: Option<String>,
    classes: Vec<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut opts = Options {
        fixtures: aep_conformance::workspace_fixtures(),
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
                Runner::new(PathBuf::new())
                    .class(&name)
                    .map_err(|e| e.to_string())?;
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
    let mut runner = Runner::new(&opts.fixtures);
    for name in &opts.classes {
        runner = match runner.class(name) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("aep-conformance: {e}\n{USAGE}");
                return ExitCode::from(2);
            }
        };
    }
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
}
