//! `aep conformance`: the protocol's corpus through this SDK, by the same code as the
//! `aep-conformance` binary (`aep_conformance::cli::run`).

use std::path::PathBuf;

use aep_conformance::cli::{self, Options, Outcome as Run};

use crate::exit::{Exit, Failure, Outcome};

/// Run the AEP conformance corpus through this SDK (the same runner as
/// `aep-conformance`): one PASS/FAIL line per check, exit 1 if any fails.
///
/// The corpus this `aep` was built with is inside the binary (the protocol's
/// `conformance/fixtures`, schemas and the projection corpus, about 0.7 MB), so an
/// installed `aep` needs no repository; `--fixtures DIR` runs another one.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A fixture root holding `conformance/`, `schemas/` and `projection/` [default: the
    /// corpus built into aep].
    #[arg(long, value_name = "DIR")]
    fixtures: Option<PathBuf>,
    /// Also write the aep-conformance-report JSON: to a file, or `-` for stdout (the
    /// PASS/FAIL lines then go to stderr).
    #[arg(long, value_name = "PATH|-")]
    json: Option<String>,
    /// Run only this class (repeatable): golden, invalid, golden-stream, attr-match, ...
    #[arg(long = "class", value_name = "NAME", value_parser = class)]
    classes: Vec<String>,
}

fn class(name: &str) -> Result<String, String> {
    aep_conformance::class(name)
        .map(|c| c.name().to_owned())
        .ok_or_else(|| {
            let known: Vec<&str> = aep_conformance::classes()
                .iter()
                .map(|c| c.name())
                .collect();
            format!("unknown class; the classes are {}", known.join(", "))
        })
}

/// Runs the subcommand.
pub fn run(args: Args) -> Outcome {
    // the embedded corpus is laid out in a directory that lives as long as the run
    let scratch;
    let fixtures = match args.fixtures {
        Some(dir) => dir,
        None => {
            scratch = tempfile::Builder::new()
                .prefix("aep-conformance-")
                .tempdir()
                .map_err(|e| {
                    Failure::input(format!("cannot make a directory for the corpus: {e}"))
                })?;
            aep_conformance::embedded::write_to(scratch.path()).map_err(|e| {
                Failure::input(format!(
                    "cannot write the corpus to {}: {e}",
                    scratch.path().display()
                ))
            })?;
            scratch.path().to_owned()
        }
    };
    let mut opts = Options::new(fixtures);
    opts.json = args.json;
    opts.classes = args.classes;
    Ok(match cli::run("aep conformance", &opts) {
        Run::Passed => Exit::Success,
        Run::Failed => Exit::Findings,
        Run::Usage => Exit::Usage,
    })
}
