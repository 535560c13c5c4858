//! `aep-conformance`: runs the protocol's fixture corpus through aep-core and
//! aep-bridge; a thin shell over the [`aep_conformance`] library (`cli::run`, which
//! `aep conformance` calls too).
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

use std::path::PathBuf;
use std::process::ExitCode;

use aep_conformance::cli::{self, Options};
use aep_conformance::Runner;

const USAGE: &str = "usage: aep-conformance [--fixtures DIR] [--json PATH|-] [--class NAME]...";

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut opts = Options::new(aep_conformance::workspace_fixtures());
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
    ExitCode::from(cli::run("aep-conformance", &opts).code())
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
