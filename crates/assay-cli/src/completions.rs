//! `assay completions SHELL`: the shell completion script for bash, zsh or fish, generated from
//! the same argument definitions the command line parses with (clap_complete), on stdout.

use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell as Generator;

use super::args::{Cli, Shell};
use super::exit;
use super::messages::Failure;

/// Prints the completion script for `shell`; a reader that went away is status 3 (the script
/// was not delivered), quietly on a broken pipe.
pub(crate) fn print(shell: Shell) -> Result<ExitCode, Failure> {
    let generator = match shell {
        Shell::Bash => Generator::Bash,
        Shell::Zsh => Generator::Zsh,
        Shell::Fish => Generator::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(generator, &mut Cli::command(), "assay", &mut script);
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, &script)
        .and_then(|()| std::io::Write::flush(&mut out))
        .map_err(Failure::output(exit::FAILURE))?;
    Ok(exit::code(exit::OK))
}
