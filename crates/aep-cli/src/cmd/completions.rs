//! `aep completions SHELL`: the shell completion script, from the same clap definition.

use clap::CommandFactory;

use crate::exit::{Exit, Outcome};

/// Print a completion script for a shell.
///
/// Bash: `aep completions bash > ~/.local/share/bash-completion/completions/aep`;
/// zsh: `aep completions zsh > "${fpath[1]}/_aep"`; fish:
/// `aep completions fish > ~/.config/fish/completions/aep.fish`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Runs the subcommand.
pub fn run(args: Args) -> Outcome {
    let mut command = crate::Cli::command();
    clap_complete::generate(args.shell, &mut command, "aep", &mut std::io::stdout());
    Ok(Exit::Success)
}
